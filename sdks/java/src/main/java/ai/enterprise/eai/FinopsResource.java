package ai.enterprise.eai;

import ai.enterprise.eai.model.Allocation;
import ai.enterprise.eai.model.AllocationPolicy;
import ai.enterprise.eai.model.AllocationPolicyChange;
import ai.enterprise.eai.model.AllocationPolicyCreated;
import ai.enterprise.eai.model.IngestResult;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Instant;
import java.time.LocalDate;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * GPU samples, the allocation and allocation policies ({@code /v1/finops}). Get it from
 * {@link EnterpriseAIClient#finops()}.
 */
public final class FinopsResource extends Resource {

    private static final String SAMPLES = "/v1/finops/gpu/samples";
    private static final String POLICIES = "/v1/finops/allocation-policies";

    FinopsResource(EnterpriseAIClient client, Transport transport) {
        super(client, transport);
    }

    // ------------------------------------------------------------------------------------------- samples

    /**
     * Ingests GPU samples given as the request body {@code {"samples": [...]}} ({@code POST
     * /v1/finops/gpu/samples}; platform_admin or sampler). Same behaviour as {@link #gpuSamples(List)}; other
     * members of the body are sent with every batch.
     *
     * @param body a Map holding {@code "samples"}: a List of samples (Maps, {@code GpuSample}s or records)
     * @return what was stored, summed over the batches
     * @throws ValidationException when a sample is invalid (indexes are positions in your list)
     * @throws EnterpriseAIException on any other error
     */
    public IngestResult gpuSamples(Map<String, ?> body) {
        Map.Entry<List<?>, Map<String, Object>> parts = Transport.splitBody(body, "samples");
        return ingestSamples(parts.getKey(), parts.getValue(), null);
    }

    /**
     * Ingests GPU samples ({@code POST /v1/finops/gpu/samples}; platform_admin or sampler).
     *
     * <p>Idempotent per {@code (gpu_uuid, timestamp)}: a re-sent sample is counted once. Samples without a
     * {@code timestamp} are stamped with the current instant (UTC, milliseconds) once, before the first attempt,
     * so that a retry is recognised as a duplicate; your list and maps are never modified. The list goes in
     * batches of at most {@code maxBatchSize} (5,000 by default); a batch answered 413 is halved and re-sent
     * (each batch is atomic: a refused one stored nothing). A Double or Float value is sent as its shortest
     * decimal ({@code 0.82}, never {@code 0.819999...}).
     *
     * @param samples {@link ai.enterprise.eai.model.GpuSample}s, {@code Map<String, ?>}s or other records, in
     *     any mix
     * @return what was stored, summed over the batches
     * @throws ValidationException when a sample is invalid (indexes are positions in your list; the exception's
     *     {@code getPartialResult()} says what earlier batches stored)
     * @throws EnterpriseAIException on any other error
     */
    public IngestResult gpuSamples(List<?> samples) {
        return gpuSamples(samples, null);
    }

    /**
     * Ingests GPU samples with per-call batching options; see {@link #gpuSamples(List)}.
     *
     * @param samples {@link ai.enterprise.eai.model.GpuSample}s, {@code Map<String, ?>}s or other records
     * @param options batch size and 413 behaviour, or {@code null} for the client's
     * @return what was stored, summed over the batches
     * @throws EnterpriseAIException on an error
     */
    public IngestResult gpuSamples(List<?> samples, IngestOptions options) {
        return ingestSamples(samples, null, options);
    }

    private IngestResult ingestSamples(List<?> samples, Map<String, Object> extra, IngestOptions options) {
        Transport tr = t();
        List<ObjectNode> records = Transport.records(samples, "samples");
        String stamp = null;
        for (ObjectNode r : records) {
            if (Transport.lacks(r, "timestamp")) {
                if (stamp == null) {
                    stamp = Json.now();
                }
                r.put("timestamp", stamp);
            }
        }
        return tr.ingest(SAMPLES, "samples", records, extra, options);
    }

    // -------------------------------------------------------------------------------------------- allocation

    /**
     * The allocation of the last 30 days until now ({@code GET /v1/finops/gpu/allocation}).
     *
     * @return the allocation (a tenant-scoped caller sees only its own part)
     * @throws EnterpriseAIException on an error
     */
    public Allocation gpuAllocation() {
        return gpuAllocation(Map.of());
    }

    /**
     * The allocation of a period given as query parameters ({@code GET /v1/finops/gpu/allocation}).
     *
     * @param params {@code from} (inclusive) and {@code to}: a {@code "2026-10-01"} string, a {@code LocalDate}
     *     (a date {@code to} includes that whole UTC day), an RFC 3339 string, an {@code Instant} or an
     *     {@code OffsetDateTime} (exclusive); absent ones take the server's defaults
     * @return the allocation (a tenant-scoped caller sees only its own part)
     * @throws EnterpriseAIException on an error
     */
    public Allocation gpuAllocation(Map<String, ?> params) {
        return t().call("GET", "/v1/finops/gpu/allocation", params, null, true, Allocation.class);
    }

    /**
     * The allocation of whole UTC days: {@code from} at midnight until the end of {@code to}.
     *
     * @param from first day
     * @param to last day (included)
     * @return the allocation
     * @throws EnterpriseAIException on an error
     */
    public Allocation gpuAllocation(LocalDate from, LocalDate to) {
        return gpuAllocation(period(from, to));
    }

    /**
     * The allocation of {@code [from, to)}.
     *
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @return the allocation
     * @throws EnterpriseAIException on an error
     */
    public Allocation gpuAllocation(Instant from, Instant to) {
        return gpuAllocation(period(from, to));
    }

    private static Map<String, Object> period(Object from, Object to) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("from", from);
        p.put("to", to);
        return p;
    }

    // -------------------------------------------------------------------------------------------- policies

    /**
     * Creates an allocation policy ({@code POST /v1/finops/allocation-policies}; platform_admin).
     *
     * <p>Members: {@code name}, {@code gpu_hourly_cost} (required), {@code deployment_pattern},
     * {@code gpu_model}, {@code currency} (default USD), {@code overhead_pct}, {@code energy_kwh_price},
     * {@code pue}, {@code storage_gb_month_price}, {@code idle_capacity}, {@code enabled},
     * {@code effective_from}, {@code effective_to}. Money as a {@code BigDecimal}, a decimal string or a number
     * ({@code 2.10} is sent as {@code 2.1}). Not retried after the request may have reached the server (only on
     * connection failures, 429 and 503).
     *
     * @param policy the policy
     * @return its id and status
     * @throws ValidationException field by field
     * @throws EnterpriseAIException on any other error
     */
    public AllocationPolicyCreated createAllocationPolicy(Map<String, ?> policy) {
        Objects.requireNonNull(policy, "policy");
        return t().call("POST", POLICIES, null, policy, false, AllocationPolicyCreated.class);
    }

    /**
     * Every allocation policy, closed and disabled ones included, oldest first
     * ({@code GET /v1/finops/allocation-policies}).
     *
     * @return the policies
     * @throws EnterpriseAIException on an error
     */
    public List<AllocationPolicy> listAllocationPolicies() {
        return t().callItems("GET", POLICIES, null, AllocationPolicy.class);
    }

    /**
     * Closes a policy at {@code effective_at} (default now) and opens its replacement: the closed policy's fields
     * overridden by {@code changes} ({@code POST /v1/finops/allocation-policies/{id}/supersede};
     * platform_admin). Pricing is never edited in place.
     *
     * @param id the policy ({@code alp_1})
     * @param changes the fields to change (a field given as null takes its default) and {@code effective_at}
     * @return the policy as closed and its replacement
     * @throws NotFoundException when there is no such policy
     * @throws ValidationException when it is closed already, or a field is invalid
     * @throws EnterpriseAIException on any other error
     */
    public AllocationPolicyChange supersedeAllocationPolicy(String id, Map<String, ?> changes) {
        return t().call("POST", POLICIES + "/" + Transport.segment(id) + "/supersede", null,
                changes == null ? Map.of() : changes, false, AllocationPolicyChange.class);
    }

    /**
     * Disables a policy from now on ({@code POST /v1/finops/allocation-policies/{id}/disable}; platform_admin).
     *
     * @param id the policy ({@code alp_1})
     * @return the policy as closed and its disabled copy
     * @throws NotFoundException when there is no such policy
     * @throws ValidationException when it is closed already
     * @throws EnterpriseAIException on any other error
     */
    public AllocationPolicyChange disableAllocationPolicy(String id) {
        return disableAllocationPolicy(id, Map.of());
    }

    /**
     * Disables a policy from an instant on: closes it then and opens a disabled copy.
     *
     * @param id the policy ({@code alp_1})
     * @param effectiveAt when (inside the policy's effective range)
     * @return the policy as closed and its disabled copy
     * @throws EnterpriseAIException on an error
     */
    public AllocationPolicyChange disableAllocationPolicy(String id, Instant effectiveAt) {
        return disableAllocationPolicy(id, Map.of("effective_at", Objects.requireNonNull(effectiveAt)));
    }

    /**
     * Disables a policy with the body given ({@code {"effective_at": ...}}).
     *
     * @param id the policy ({@code alp_1})
     * @param body the request body
     * @return the policy as closed and its disabled copy
     * @throws EnterpriseAIException on an error
     */
    public AllocationPolicyChange disableAllocationPolicy(String id, Map<String, ?> body) {
        return t().call("POST", POLICIES + "/" + Transport.segment(id) + "/disable", null,
                body == null ? Map.of() : body, false, AllocationPolicyChange.class);
    }
}
