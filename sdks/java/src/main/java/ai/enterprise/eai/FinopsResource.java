package ai.enterprise.eai;

import ai.enterprise.eai.model.Allocation;
import ai.enterprise.eai.model.AllocationExplanation;
import ai.enterprise.eai.model.AllocationPolicy;
import ai.enterprise.eai.model.AllocationPolicyChange;
import ai.enterprise.eai.model.AllocationPolicyCreated;
import ai.enterprise.eai.model.AllocationSeries;
import ai.enterprise.eai.model.AnomalyList;
import ai.enterprise.eai.model.Budget;
import ai.enterprise.eai.model.BudgetChange;
import ai.enterprise.eai.model.Forecast;
import ai.enterprise.eai.model.GpuUsageBreakdown;
import ai.enterprise.eai.model.IngestResult;
import ai.enterprise.eai.model.RecommendationList;
import ai.enterprise.eai.model.Reservation;
import ai.enterprise.eai.model.SlurmReconciliation;
import ai.enterprise.eai.model.Statement;
import ai.enterprise.eai.model.StatementIssued;
import ai.enterprise.eai.model.StatementList;
import ai.enterprise.eai.model.TokenCostList;
import ai.enterprise.eai.model.UsageDimension;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.time.YearMonth;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.StringJoiner;
import java.util.function.Function;

/**
 * GPU samples, the allocation, allocation policies, budgets and reservations ({@code /v1/finops}). Get it from
 * {@link EnterpriseAIClient#finops()}.
 */
public final class FinopsResource extends Resource {

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
        return gpuSamples(samples, (IngestOptions) null);
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
        return tr.ingest(ApiOperation.INGEST_GPU_SAMPLES, "samples", records, extra, options);
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
        return t().call(ApiOperation.GET_GPU_ALLOCATION, NO_ARGS, params, null, Allocation.class);
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

    // ------------------------------------------------------------------------------------------ FOCUS export

    /** What a FOCUS export may answer: the file (CSV or Parquet), or an error in the JSON envelope. */
    private static final String FOCUS_ACCEPT = "text/csv, application/vnd.apache.parquet, application/json";

    /**
     * The allocation of a period as a FOCUS file, its bytes ({@code GET /v1/finops/gpu/allocation/focus}; the
     * allocation's readers, a tenant's: its rows only). FOCUS 1.3's columns by default (with the split-cost ones,
     * {@code AllocatedMethodId}, ..., and {@code InvoiceId}, the statement a row belongs to once issued), or
     * 1.2's. One row per tenant x deployment x policy x UTC day (or hour); {@code BilledCost} sums exactly to the
     * allocation's {@code allocated} for the same period (a platform caller also gets the {@code x_Unallocated}
     * rows, and then the cost).
     *
     * <pre>{@code
     * byte[] csv = client.finops().gpuAllocationFocus(Map.of("from", "2026-10-01", "to", "2026-10-31"));
     * byte[] v12 = client.finops().gpuAllocationFocus(Map.of("from", "2026-10-01", "to", "2026-10-31",
     *         "version", "1.2", "granularity", "hour"));
     * }</pre>
     *
     * @param params {@code from} and {@code to} as for {@link #gpuAllocation(Map)}; {@code format}: {@code "csv"}
     *     (default: RFC 4180, a header line) or {@code "parquet"}; {@code version}: {@code "1.3"} (default) or
     *     {@code "1.2"}; {@code granularity}: {@code "day"} (default) or {@code "hour"}
     * @return the file's bytes (CSV in UTF-8, or Parquet)
     * @throws ValidationException when a parameter is invalid (another {@code format}, {@code version} or
     *     {@code granularity}: that field)
     * @throws EnterpriseAIException on any other error
     */
    public byte[] gpuAllocationFocus(Map<String, ?> params) {
        return t().download(ApiOperation.GET_GPU_ALLOCATION_FOCUS, params, FOCUS_ACCEPT);
    }

    /**
     * The FOCUS export of {@code [from, to)}; see {@link #gpuAllocationFocus(Map)}.
     *
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @param format {@code "csv"}, {@code "parquet"}, or {@code null} for the default ({@code csv})
     * @return the file's bytes
     * @throws EnterpriseAIException on an error
     */
    public byte[] gpuAllocationFocus(Instant from, Instant to, String format) {
        Map<String, Object> p = period(from, to);
        p.put("format", format);
        return gpuAllocationFocus(p);
    }

    /**
     * The FOCUS export of whole UTC days, {@code from} at midnight until the end of {@code to}; see
     * {@link #gpuAllocationFocus(Map)}.
     *
     * @param from first day
     * @param to last day (included)
     * @param format {@code "csv"}, {@code "parquet"}, or {@code null} for the default ({@code csv})
     * @return the file's bytes
     * @throws EnterpriseAIException on an error
     */
    public byte[] gpuAllocationFocus(LocalDate from, LocalDate to, String format) {
        Map<String, Object> p = period(from, to);
        p.put("format", format);
        return gpuAllocationFocus(p);
    }

    /**
     * The FOCUS export of {@code [from, to)} in a FOCUS version and granularity; see
     * {@link #gpuAllocationFocus(Map)}.
     *
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @param format {@code "csv"}, {@code "parquet"}, or {@code null} for the default ({@code csv})
     * @param version {@code "1.3"}, {@code "1.2"}, or {@code null} for the default ({@code 1.3})
     * @param granularity {@code "day"}, {@code "hour"}, or {@code null} for the default ({@code day})
     * @return the file's bytes
     * @throws EnterpriseAIException on an error
     */
    public byte[] gpuAllocationFocus(Instant from, Instant to, String format, String version, String granularity) {
        return gpuAllocationFocus(focus(period(from, to), format, version, granularity));
    }

    /**
     * The FOCUS export of whole UTC days in a FOCUS version and granularity; see {@link #gpuAllocationFocus(Map)}.
     *
     * @param from first day
     * @param to last day (included)
     * @param format {@code "csv"}, {@code "parquet"}, or {@code null} for the default ({@code csv})
     * @param version {@code "1.3"}, {@code "1.2"}, or {@code null} for the default ({@code 1.3})
     * @param granularity {@code "day"}, {@code "hour"}, or {@code null} for the default ({@code day})
     * @return the file's bytes
     * @throws EnterpriseAIException on an error
     */
    public byte[] gpuAllocationFocus(LocalDate from, LocalDate to, String format, String version,
            String granularity) {
        return gpuAllocationFocus(focus(period(from, to), format, version, granularity));
    }

    private static Map<String, Object> focus(Map<String, Object> p, String format, String version,
            String granularity) {
        p.put("format", format);
        p.put("version", version);
        p.put("granularity", granularity);
        return p;
    }

    /**
     * Writes {@link #gpuAllocationFocus(Map)}'s file to {@code target} (created or replaced); on an error nothing
     * is written.
     *
     * <pre>{@code
     * client.finops().gpuAllocationFocusToFile(Path.of("october.parquet"),
     *         Map.of("from", "2026-10-01", "to", "2026-10-31", "format", "parquet"));
     * }</pre>
     *
     * @param target the file to write
     * @param params as for {@link #gpuAllocationFocus(Map)}
     * @return {@code target}
     * @throws UncheckedIOException when the file cannot be written
     * @throws EnterpriseAIException on an error of the call
     */
    public Path gpuAllocationFocusToFile(Path target, Map<String, ?> params) {
        Objects.requireNonNull(target, "target");
        byte[] data = gpuAllocationFocus(params);
        try {
            return Files.write(target, data);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + target + ": " + e.getMessage(), e);
        }
    }

    // ---------------------------------------------------------------------------------------- cost per token

    /**
     * Cost per million tokens of a period, blended, input and output ({@code GET /v1/finops/gpu/token-costs};
     * the allocation's readers, a tenant's: its share only).
     *
     * <p>The input/output split uses vLLM's measured prefill and decode time where a sampler posts its counters
     * ({@code allocationMethod} {@code compute_time}), else the policy's {@code output_token_weight}
     * ({@code weight}).
     *
     * @param params {@code from} and {@code to} as for {@link #gpuAllocation(Map)}; {@code basis}:
     *     {@code "allocation"} (default: the allocated cost, idle included) or {@code "usage"} (busy GPU-seconds
     *     only); {@code aggregate}: {@code "deployment"} (default), {@code "tenant"} or {@code "model"}
     * @return the rows
     * @throws ValidationException when a parameter is invalid
     * @throws EnterpriseAIException on any other error
     */
    public TokenCostList gpuTokenCosts(Map<String, ?> params) {
        return t().call(ApiOperation.GET_GPU_TOKEN_COSTS, NO_ARGS, params, null, TokenCostList.class);
    }

    /**
     * Cost per million tokens of {@code [from, to)}; see {@link #gpuTokenCosts(Map)}.
     *
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @param basis {@code "allocation"}, {@code "usage"}, or {@code null} for the default ({@code allocation})
     * @param aggregate {@code "deployment"}, {@code "tenant"}, {@code "model"}, or {@code null} for the default
     *     ({@code deployment})
     * @return the rows
     * @throws EnterpriseAIException on an error
     */
    public TokenCostList gpuTokenCosts(Instant from, Instant to, String basis, String aggregate) {
        Map<String, Object> p = period(from, to);
        p.put("basis", basis);
        p.put("aggregate", aggregate);
        return gpuTokenCosts(p);
    }

    /**
     * Cost per million tokens of whole UTC days, {@code from} at midnight until the end of {@code to}; see
     * {@link #gpuTokenCosts(Map)}.
     *
     * @param from first day
     * @param to last day (included)
     * @param basis {@code "allocation"}, {@code "usage"}, or {@code null} for the default
     * @param aggregate {@code "deployment"}, {@code "tenant"}, {@code "model"}, or {@code null} for the default
     * @return the rows
     * @throws EnterpriseAIException on an error
     */
    public TokenCostList gpuTokenCosts(LocalDate from, LocalDate to, String basis, String aggregate) {
        Map<String, Object> p = period(from, to);
        p.put("basis", basis);
        p.put("aggregate", aggregate);
        return gpuTokenCosts(p);
    }

    // --------------------------------------------------------------------------------------------- explain

    /**
     * Why a deployment costs what it does over a period, bucket by bucket
     * ({@code GET /v1/finops/gpu/allocation/explain}): per bucket the measured and estimated GPU-seconds, each
     * tenant's claim and share, the policy's rates, the exact cost and its split; then the idle spread and the one
     * rounding with its largest-remainder step; and where its time ran ({@link AllocationExplanation#pods()}: by
     * namespace, pod, GPU and share method). A tenant's key sees a deployment only when charged on it, every other
     * tenant summed into one {@code other_tenants} party (otherwise {@link NotFoundException}).
     *
     * @param params {@code deployment_id} (required), {@code from} and {@code to} as for
     *     {@link #gpuAllocation(Map)}, and {@code tenant_id} to see it as that tenant does (a tenant's key: its
     *     own only, another is a {@link PermissionDeniedException})
     * @return the explanation
     * @throws EnterpriseAIException on an error
     */
    public AllocationExplanation gpuAllocationExplain(Map<String, ?> params) {
        return t().call(ApiOperation.EXPLAIN_GPU_ALLOCATION, NO_ARGS, params, null, AllocationExplanation.class);
    }

    /**
     * Why {@code deploymentId} costs what it does over whole UTC days, {@code from} at midnight until the end of
     * {@code to}; see {@link #gpuAllocationExplain(Map)}.
     *
     * @param deploymentId the deployment
     * @param from first day
     * @param to last day (included)
     * @return the explanation
     * @throws EnterpriseAIException on an error
     */
    public AllocationExplanation gpuAllocationExplain(String deploymentId, LocalDate from, LocalDate to) {
        Map<String, Object> p = period(from, to);
        p.put("deployment_id", deploymentId);
        return gpuAllocationExplain(p);
    }

    /**
     * Why {@code deploymentId} costs what it does over {@code [from, to)}; see {@link #gpuAllocationExplain(Map)}.
     *
     * @param deploymentId the deployment
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @return the explanation
     * @throws EnterpriseAIException on an error
     */
    public AllocationExplanation gpuAllocationExplain(String deploymentId, Instant from, Instant to) {
        Map<String, Object> p = period(from, to);
        p.put("deployment_id", deploymentId);
        return gpuAllocationExplain(p);
    }

    // ----------------------------------------------------------------------------------------- usage breakdown

    /**
     * A period's GPU time and cost per pod, node, GPU, namespace, deployment, tenant, model or share method
     * ({@code GET /v1/finops/gpu/usage}; the allocation's readers, but a tenant's key sees the rows of its dedicated
     * deployments only: a shared deployment is split between tenants by usage, not by pod). Each deployment's cost
     * (the allocation's figure for the same period) is apportioned over its rows, so that they sum to it to the
     * cent; a filter keeps the same cents as the unfiltered answer. Grouped by {@link UsageDimension#GPU} (the
     * device: a GPU shared by several pods is one value), each row has its share of the GPU's time
     * ({@link ai.enterprise.eai.model.GpuUsageRow#gpuShare()}, platform keys); {@link UsageDimension#SHARE} is how
     * it was obtained.
     *
     * <pre>{@code
     * GpuUsageBreakdown b = client.finops().gpuUsage(Map.of("from", "2026-10-01", "to", "2026-10-31",
     *         "group_by", "namespace,pod", "filter", "deployment:vllm-llama-70b"));
     * }</pre>
     *
     * @param params {@code from} and {@code to} as for {@link #gpuAllocation(Map)}; {@code group_by}: the
     *     dimensions of a row, comma-separated, each once (default {@code deployment}; see {@link UsageDimension});
     *     {@code filter}: {@code dimension:value} pairs, comma-separated (values of one dimension: any of them;
     *     several dimensions: all of them)
     * @return the breakdown
     * @throws ValidationException when a parameter is invalid ({@code fields()} names {@code group_by},
     *     {@code filter}, {@code from} or {@code to})
     * @throws EnterpriseAIException on any other error
     */
    public GpuUsageBreakdown gpuUsage(Map<String, ?> params) {
        return t().call(ApiOperation.GET_GPU_USAGE_BREAKDOWN, NO_ARGS, params, null, GpuUsageBreakdown.class);
    }

    /**
     * GPU time and cost of whole UTC days, {@code from} at midnight until the end of {@code to}, grouped and
     * filtered; see {@link #gpuUsage(Map)}.
     *
     * <pre>{@code
     * client.finops().gpuUsage(LocalDate.of(2026, 10, 1), LocalDate.of(2026, 10, 31),
     *         List.of(UsageDimension.NODE, UsageDimension.GPU),
     *         Map.of(UsageDimension.DEPLOYMENT, List.of("vllm-llama-70b")));
     * }</pre>
     *
     * @param from first day
     * @param to last day (included)
     * @param groupBy the dimensions of a row, each once, or {@code null} (or empty) for the default
     *     ({@link UsageDimension#DEPLOYMENT})
     * @param filter the values kept per dimension (any of a dimension's values; every dimension), or {@code null}
     *     for every row
     * @return the breakdown
     * @throws IllegalArgumentException when a filter value is empty or holds a comma, or a dimension has no value
     * @throws EnterpriseAIException on an error
     */
    public GpuUsageBreakdown gpuUsage(LocalDate from, LocalDate to, List<UsageDimension> groupBy,
            Map<UsageDimension, ? extends Collection<String>> filter) {
        return gpuUsage(usageParams(period(from, to), groupBy, filter));
    }

    /**
     * GPU time and cost of {@code [from, to)}, grouped and filtered; see {@link #gpuUsage(Map)}.
     *
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @param groupBy the dimensions of a row, each once, or {@code null} (or empty) for the default
     *     ({@link UsageDimension#DEPLOYMENT})
     * @param filter the values kept per dimension (any of a dimension's values; every dimension), or {@code null}
     *     for every row
     * @return the breakdown
     * @throws IllegalArgumentException when a filter value is empty or holds a comma, or a dimension has no value
     * @throws EnterpriseAIException on an error
     */
    public GpuUsageBreakdown gpuUsage(Instant from, Instant to, List<UsageDimension> groupBy,
            Map<UsageDimension, ? extends Collection<String>> filter) {
        return gpuUsage(usageParams(period(from, to), groupBy, filter));
    }

    /** {@code group_by} and {@code filter} as the server reads them, added to {@code p}. */
    private static Map<String, Object> usageParams(Map<String, Object> p, List<UsageDimension> groupBy,
            Map<UsageDimension, ? extends Collection<String>> filter) {
        if (groupBy != null && !groupBy.isEmpty()) {
            StringJoiner dims = new StringJoiner(",");
            for (UsageDimension d : groupBy) {
                dims.add(Objects.requireNonNull(d, "groupBy holds null").wireName());
            }
            p.put("group_by", dims.toString());
        }
        if (filter != null && !filter.isEmpty()) {
            StringJoiner pairs = new StringJoiner(",");
            for (Map.Entry<UsageDimension, ? extends Collection<String>> e : filter.entrySet()) {
                UsageDimension d = e.getKey();
                if (d == null) {
                    throw new IllegalArgumentException("filter: a dimension is null");
                }
                if (e.getValue() == null || e.getValue().isEmpty()) {
                    throw new IllegalArgumentException("filter: no value for " + d.wireName());
                }
                for (String v : e.getValue()) {
                    if (v == null || v.isBlank() || v.indexOf(',') >= 0) {
                        throw new IllegalArgumentException("filter: a value of " + d.wireName()
                                + " must be non-empty and hold no comma, not " + (v == null ? "null" : "`" + v + "`"));
                    }
                    pairs.add(d.wireName() + ":" + v);
                }
            }
            p.put("filter", pairs.toString());
        }
        return p;
    }

    // ---------------------------------------------------------------------------------------- cost over time

    /**
     * Cost over time ({@code GET /v1/finops/gpu/allocation/series}; the allocation's readers, a tenant's: its
     * share and its tokens). Each step's cost, allocated and unallocated are the period's apportioned, so every
     * column of the steps sums to the period's totals (and to {@link #gpuAllocation(Map)}) to the cent.
     *
     * @param params {@code from} and {@code to} as for {@link #gpuAllocation(Map)}; {@code step}: {@code "hour"},
     *     {@code "day"} (default), {@code "week"} (ISO, from Monday) or {@code "month"}, UTC, at most 1000 steps
     * @return the series
     * @throws ValidationException when a parameter is invalid
     * @throws EnterpriseAIException on any other error
     */
    public AllocationSeries gpuAllocationSeries(Map<String, ?> params) {
        return t().call(ApiOperation.GET_GPU_ALLOCATION_SERIES, NO_ARGS, params, null, AllocationSeries.class);
    }

    /**
     * Cost over time of {@code [from, to)}; see {@link #gpuAllocationSeries(Map)}.
     *
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @param step {@code "hour"}, {@code "day"}, {@code "week"}, {@code "month"}, or {@code null} for the default
     *     ({@code day})
     * @return the series
     * @throws EnterpriseAIException on an error
     */
    public AllocationSeries gpuAllocationSeries(Instant from, Instant to, String step) {
        Map<String, Object> p = period(from, to);
        p.put("step", step);
        return gpuAllocationSeries(p);
    }

    /**
     * Cost over time of whole UTC days, {@code from} at midnight until the end of {@code to}; see
     * {@link #gpuAllocationSeries(Map)}.
     *
     * @param from first day
     * @param to last day (included)
     * @param step {@code "hour"}, {@code "day"}, {@code "week"}, {@code "month"}, or {@code null} for the default
     * @return the series
     * @throws EnterpriseAIException on an error
     */
    public AllocationSeries gpuAllocationSeries(LocalDate from, LocalDate to, String step) {
        Map<String, Object> p = period(from, to);
        p.put("step", step);
        return gpuAllocationSeries(p);
    }

    // ------------------------------------------------------------------------------------------------- slurm

    /**
     * Slurm's accounting of its GPU jobs over a period beside what was measured of them
     * ({@code POST /v1/finops/gpu/slurm/reconciliation}; the allocation's readers, a tenant's key: the jobs of its
     * dedicated deployments only). Per job with GPUs in the period: the GPU-seconds Slurm allocated, those the
     * samplers measured (pod {@code job-<id>}, namespace its account), how busy, its cost, and a status:
     * {@code ok}; {@code idle} (busy under {@code idle_below} of the allocated time); {@code not_measured}
     * (allocated, nothing measured); {@code not_in_slurm} (measured, not in the document). Nothing is stored: the
     * call is retried like a read.
     *
     * <pre>{@code
     * Process p = new ProcessBuilder("sacct", "--json", "-a", "-X", "-S", "2026-10-01", "-E", "2026-10-31").start();
     * SlurmReconciliation r = client.finops().gpuSlurmReconciliation(p.getInputStream().readAllBytes(),
     *         Map.of("from", "2026-10-01", "to", "2026-10-31", "idle_below", new BigDecimal("0.1")));
     * }</pre>
     *
     * @param sacct the output of {@code sacct --json -a -X -S <from> -E <to>}: its text (a {@code String} or
     *     {@code byte[]}, sent as it is), the file holding it (a {@link Path}), or its parsed JSON (a
     *     {@link JsonNode} or a {@code Map}); only its {@code jobs} are read
     * @param params {@code from} and {@code to} as for {@link #gpuAllocation(Map)}; {@code idle_below}: a decimal
     *     from 0 to 1 (a {@code BigDecimal} or a decimal string; default {@code 0.1})
     * @return the jobs and the totals
     * @throws IllegalArgumentException when {@code sacct} is none of the types above
     * @throws UncheckedIOException when the {@link Path} cannot be read
     * @throws ValidationException when the document has no {@code jobs} or a parameter is invalid
     *     ({@code fields()} names {@code body}, {@code idle_below}, {@code from} or {@code to})
     * @throws EnterpriseAIException on any other error
     */
    public SlurmReconciliation gpuSlurmReconciliation(Object sacct, Map<String, ?> params) {
        return t().call(ApiOperation.RECONCILE_SLURM_JOBS, NO_ARGS, params, sacctBody(sacct),
                SlurmReconciliation.class);
    }

    /**
     * Slurm's GPU jobs of {@code [from, to)} beside what was measured; see
     * {@link #gpuSlurmReconciliation(Object, Map)}.
     *
     * @param sacct the {@code sacct --json} document, as for {@link #gpuSlurmReconciliation(Object, Map)}
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @param idleBelow the idle threshold (0 to 1), or {@code null} for the default ({@code 0.1})
     * @return the jobs and the totals
     * @throws EnterpriseAIException on an error
     */
    public SlurmReconciliation gpuSlurmReconciliation(Object sacct, Instant from, Instant to, BigDecimal idleBelow) {
        Map<String, Object> p = period(from, to);
        p.put("idle_below", idleBelow);
        return gpuSlurmReconciliation(sacct, p);
    }

    /**
     * Slurm's GPU jobs of whole UTC days, {@code from} at midnight until the end of {@code to}, beside what was
     * measured; see {@link #gpuSlurmReconciliation(Object, Map)}.
     *
     * @param sacct the {@code sacct --json} document, as for {@link #gpuSlurmReconciliation(Object, Map)}
     * @param from first day
     * @param to last day (included)
     * @param idleBelow the idle threshold (0 to 1), or {@code null} for the default ({@code 0.1})
     * @return the jobs and the totals
     * @throws EnterpriseAIException on an error
     */
    public SlurmReconciliation gpuSlurmReconciliation(Object sacct, LocalDate from, LocalDate to,
            BigDecimal idleBelow) {
        Map<String, Object> p = period(from, to);
        p.put("idle_below", idleBelow);
        return gpuSlurmReconciliation(sacct, p);
    }

    /** The request body of a sacct document: its text as it is, or its JSON encoded. */
    private static Object sacctBody(Object sacct) {
        if (sacct instanceof String s) {
            return s.getBytes(StandardCharsets.UTF_8);
        }
        if (sacct instanceof byte[] b) {
            return b;
        }
        if (sacct instanceof Path path) {
            try {
                return Files.readAllBytes(path);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + path + ": " + e.getMessage(), e);
            }
        }
        if (sacct instanceof JsonNode || sacct instanceof Map) {
            return sacct;
        }
        throw new IllegalArgumentException("sacct must be the sacct --json document: a String, a byte[], a Path, a "
                + "JsonNode or a Map, not " + (sacct == null ? "null" : sacct.getClass().getName()));
    }

    private static Map<String, Object> period(Object from, Object to) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("from", from);
        p.put("to", to);
        return p;
    }

    // ---------------------------------------------------------------------------------------------- advice

    /**
     * What to do about the period's idle and oversized GPUs, with the savings ({@code GET
     * /v1/finops/gpu/recommendations}; the allocation's readers, a tenant's key: its dedicated deployments only),
     * largest monthly savings first. Per deployment a {@code kind}: {@code idle_gpus} (GPUs busy at most
     * {@code idle_utilization} of an hour for at least {@code idle_share} of the hours they ran:
     * {@code remove_gpus}), {@code low_utilization} (the others, busy under {@code low_utilization} of their
     * GPU-hours: {@code fewer_gpus}, {@code mig_profile} or {@code share_gpu}) or {@code unpriced} (GPU time no
     * policy prices: {@code add_policy}, no savings). The evidence's quantities are {@code BigDecimal}s; cost,
     * savings (the period's) and monthly savings are {@code Money}, null where unpriced.
     *
     * <pre>{@code
     * RecommendationList recs = client.finops().gpuRecommendations(Map.of("from", "2026-10-01", "to", "2026-10-31",
     *         "idle_utilization", new BigDecimal("0.05")));
     * }</pre>
     *
     * @param params {@code from} and {@code to} as for {@link #gpuAllocation(Map)}; {@code idle_utilization},
     *     {@code idle_share}, {@code low_utilization}: decimals from 0 to 1 (a {@code BigDecimal} or a decimal
     *     string; default the server's, 0.05, 0.5 and 0.3); the answer's {@code thresholds} are those applied
     * @return the recommendations
     * @throws ValidationException when a threshold is out of range or the period is invalid ({@code fields()}
     *     names it)
     * @throws EnterpriseAIException on any other error
     */
    public RecommendationList gpuRecommendations(Map<String, ?> params) {
        return t().call(ApiOperation.GET_GPU_RECOMMENDATIONS, NO_ARGS, params, null, RecommendationList.class);
    }

    /**
     * The recommendations of {@code [from, to)}; see {@link #gpuRecommendations(Map)}.
     *
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @param idleUtilization a GPU-hour busy at most this share is idle (0 to 1), or {@code null} for the default
     * @param idleShare a GPU idle for at least this share of its hours could go (0 to 1), or {@code null}
     * @param lowUtilization a deployment busy under this share is oversized (0 to 1), or {@code null}
     * @return the recommendations
     * @throws EnterpriseAIException on an error
     */
    public RecommendationList gpuRecommendations(Instant from, Instant to, BigDecimal idleUtilization,
            BigDecimal idleShare, BigDecimal lowUtilization) {
        return gpuRecommendations(thresholds(period(from, to), idleUtilization, idleShare, lowUtilization));
    }

    /**
     * The recommendations of whole UTC days, {@code from} at midnight until the end of {@code to}; see
     * {@link #gpuRecommendations(Map)}.
     *
     * @param from first day
     * @param to last day (included)
     * @param idleUtilization a GPU-hour busy at most this share is idle (0 to 1), or {@code null} for the default
     * @param idleShare a GPU idle for at least this share of its hours could go (0 to 1), or {@code null}
     * @param lowUtilization a deployment busy under this share is oversized (0 to 1), or {@code null}
     * @return the recommendations
     * @throws EnterpriseAIException on an error
     */
    public RecommendationList gpuRecommendations(LocalDate from, LocalDate to, BigDecimal idleUtilization,
            BigDecimal idleShare, BigDecimal lowUtilization) {
        return gpuRecommendations(thresholds(period(from, to), idleUtilization, idleShare, lowUtilization));
    }

    private static Map<String, Object> thresholds(Map<String, Object> p, BigDecimal idleUtilization,
            BigDecimal idleShare, BigDecimal lowUtilization) {
        p.put("idle_utilization", idleUtilization);
        p.put("idle_share", idleShare);
        p.put("low_utilization", lowUtilization);
        return p;
    }

    /**
     * A month's expected spend per tenant and deployment, and when the budgets run out ({@code GET
     * /v1/finops/gpu/forecast}; the allocation's readers, a tenant's key: its own lines and budgets). Spend is
     * counted up to {@code asOf} (a midnight UTC); the days left are a straight line fitted to the daily costs
     * since {@code historyFrom} (28 days before the month), times a factor per weekday. Each line (tenant x
     * deployment x currency) and each tenant's total has spent, expected and the band low/high ({@code Money});
     * each budget in force the day its limit is expected to be reached ({@code exhaustedOn}, null: not this
     * month) and the earliest ({@code exhaustedOnHigh}). A month over has its figures, the band equal to them.
     *
     * <pre>{@code
     * Forecast f = client.finops().gpuForecast(YearMonth.of(2026, 11));
     * }</pre>
     *
     * @param params {@code period}: the month, {@code "YYYY-MM"} or a {@link YearMonth} (default: the current
     *     month, UTC)
     * @return the forecast
     * @throws ValidationException when the period is invalid ({@code fields()} names {@code period})
     * @throws EnterpriseAIException on any other error
     */
    public Forecast gpuForecast(Map<String, ?> params) {
        return t().call(ApiOperation.GET_GPU_FORECAST, NO_ARGS, params, null, Forecast.class);
    }

    /**
     * The forecast of a month; see {@link #gpuForecast(Map)}.
     *
     * @param period the month, or {@code null} for the current month (UTC)
     * @return the forecast
     * @throws EnterpriseAIException on an error
     */
    public Forecast gpuForecast(YearMonth period) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("period", period);
        return gpuForecast(p);
    }

    /**
     * The forecast of the current month (UTC); see {@link #gpuForecast(Map)}.
     *
     * @return the forecast
     * @throws EnterpriseAIException on an error
     */
    public Forecast gpuForecast() {
        return gpuForecast((YearMonth) null);
    }

    /**
     * The period's hours whose cost or GPU time was far from their deployment's baseline ({@code GET
     * /v1/finops/gpu/anomalies}; the allocation's readers, a tenant's key: its dedicated deployments' only), newest
     * first. Each: the deployment and hour, the metric ({@code cost} in its currency, or {@code gpu_seconds}),
     * the hour's value, the baseline's median and MAD, the deviation in scaled MADs (null when the MAD is 0) and
     * the direction ({@code above} or {@code below}). The server checks each closed hour once it is settled.
     *
     * <pre>{@code
     * AnomalyList list = client.finops().gpuAnomalies(LocalDate.of(2026, 11, 1), LocalDate.of(2026, 11, 7));
     * }</pre>
     *
     * @param params {@code from} and {@code to} as for {@link #gpuAllocation(Map)}
     * @return the anomalies, newest hour first
     * @throws ValidationException when the period is invalid
     * @throws EnterpriseAIException on any other error
     */
    public AnomalyList gpuAnomalies(Map<String, ?> params) {
        return t().call(ApiOperation.LIST_GPU_ANOMALIES, NO_ARGS, params, null, AnomalyList.class);
    }

    /**
     * The anomalies of {@code [from, to)}; see {@link #gpuAnomalies(Map)}.
     *
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @return the anomalies, newest hour first
     * @throws EnterpriseAIException on an error
     */
    public AnomalyList gpuAnomalies(Instant from, Instant to) {
        return gpuAnomalies(period(from, to));
    }

    /**
     * The anomalies of whole UTC days, {@code from} at midnight until the end of {@code to}; see
     * {@link #gpuAnomalies(Map)}.
     *
     * @param from first day
     * @param to last day (included)
     * @return the anomalies, newest hour first
     * @throws EnterpriseAIException on an error
     */
    public AnomalyList gpuAnomalies(LocalDate from, LocalDate to) {
        return gpuAnomalies(period(from, to));
    }

    // ------------------------------------------------------------------------------------------ statements

    /**
     * The issued statements, without their lines ({@code GET /v1/finops/gpu/statements}; the allocation's readers,
     * a tenant's key: its own), newest period first, then by number.
     *
     * <pre>{@code
     * StatementList list = client.finops().gpuStatements(YearMonth.of(2026, 10), null);
     * }</pre>
     *
     * @param params {@code period}: only this month, {@code "YYYY-MM"} or a {@link YearMonth}; {@code tenant_id}:
     *     only this tenant's (platform callers)
     * @return the statements
     * @throws ValidationException when the period is invalid ({@code fields()} names {@code period})
     * @throws EnterpriseAIException on any other error
     */
    public StatementList gpuStatements(Map<String, ?> params) {
        return t().call(ApiOperation.LIST_GPU_STATEMENTS, NO_ARGS, params, null, StatementList.class);
    }

    /**
     * Every issued statement the caller may read; see {@link #gpuStatements(Map)}.
     *
     * @return the statements
     * @throws EnterpriseAIException on an error
     */
    public StatementList gpuStatements() {
        return gpuStatements((Map<String, ?>) null);
    }

    /**
     * The issued statements of a month, or of a tenant; see {@link #gpuStatements(Map)}.
     *
     * @param period only this month, or {@code null} for every month
     * @param tenantId only this tenant's (platform callers), or {@code null} for every tenant the caller may read
     * @return the statements
     * @throws EnterpriseAIException on an error
     */
    public StatementList gpuStatements(YearMonth period, String tenantId) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("period", period);
        p.put("tenant_id", tenantId);
        return gpuStatements(p);
    }

    /**
     * Issues the statements of a month that is over ({@code POST /v1/finops/gpu/statements}; platform_admin).
     * Each tenant with cost in the month gets a numbered statement ({@code ST-YYYY-MM-NNNN}) of its allocated
     * cost, to the cent; with no {@code tenant_id} the platform also gets the statement of unallocated capacity
     * (tenant the nil uuid). A statement is issued once and never changes: one issued before comes back under
     * {@code alreadyIssued}. Retried with its {@code Idempotency-Key}.
     *
     * <pre>{@code
     * StatementIssued out = client.finops().issueGpuStatements(YearMonth.of(2026, 10));
     * }</pre>
     *
     * @param body {@code period} ({@code "YYYY-MM"}, required) and {@code tenant_id} (one tenant's only)
     * @return the statements issued by this call and those issued before
     * @throws ValidationException when the month is not over ({@code fields()} names {@code period})
     * @throws PermissionDeniedException when the caller is not platform_admin
     * @throws EnterpriseAIException on any other error
     */
    public StatementIssued issueGpuStatements(Map<String, ?> body) {
        Objects.requireNonNull(body, "body");
        return t().call(ApiOperation.ISSUE_GPU_STATEMENTS, NO_ARGS, null, body, StatementIssued.class);
    }

    /**
     * Issues every statement of a month that is over; see {@link #issueGpuStatements(Map)}.
     *
     * @param period the month
     * @return the statements issued by this call and those issued before
     * @throws EnterpriseAIException on an error
     */
    public StatementIssued issueGpuStatements(YearMonth period) {
        return issueGpuStatements(period, (String) null);
    }

    /**
     * Issues one tenant's statement of a month that is over (every one with {@code null}); see
     * {@link #issueGpuStatements(Map)}.
     *
     * @param period the month
     * @param tenantId the tenant, or {@code null} for every tenant and the unallocated capacity
     * @return the statements issued by this call and those issued before
     * @throws EnterpriseAIException on an error
     */
    public StatementIssued issueGpuStatements(YearMonth period, String tenantId) {
        Objects.requireNonNull(period, "period");
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("period", period.toString());
        if (tenantId != null) {
            body.put("tenant_id", tenantId);
        }
        return issueGpuStatements(body);
    }

    /**
     * One issued statement ({@code GET /v1/finops/gpu/statements/{number}}; the allocation's readers, a tenant's
     * key: its own): its lines and totals as issued, the adjustments data that arrived since made to it (computed
     * at {@code asOf}) and {@code adjustedTotals} (totals + adjustments). Amounts are {@code Money}, quantities
     * {@code BigDecimal}: exact.
     *
     * <pre>{@code
     * Statement st = client.finops().gpuStatement("ST-2026-10-0001");
     * }</pre>
     *
     * @param number the statement's number ({@code ST-2026-10-0001})
     * @return the statement
     * @throws NotFoundException when there is no such statement, or it is another tenant's
     * @throws EnterpriseAIException on any other error
     */
    public Statement gpuStatement(String number) {
        return t().call(ApiOperation.GET_GPU_STATEMENT, new String[] {number}, null, null, Statement.class);
    }

    /** What a statement's CSV may answer: the file, or an error in the JSON envelope. */
    private static final String STATEMENT_CSV_ACCEPT = "text/csv, application/json";

    /**
     * One issued statement as CSV ({@code format=csv}): a header
     * {@code kind,deployment_id,policy_id,gpu_hours,energy_kwh,amount,currency}, the charge lines, a {@code total}
     * line per currency, the adjustment lines and an {@code adjusted_total} line per currency; see
     * {@link #gpuStatement(String)}.
     *
     * @param number the statement's number ({@code ST-2026-10-0001})
     * @return the CSV text
     * @throws NotFoundException when there is no such statement, or it is another tenant's
     * @throws EnterpriseAIException on any other error
     */
    public String gpuStatementCsv(String number) {
        byte[] data = t().download(ApiOperation.GET_GPU_STATEMENT, new String[] {number}, Map.of("format", "csv"),
                STATEMENT_CSV_ACCEPT);
        return new String(data, StandardCharsets.UTF_8);
    }

    // -------------------------------------------------------------------------------------------- policies

    /**
     * Creates an allocation policy ({@code POST /v1/finops/allocation-policies}; platform_admin).
     *
     * <p>Members: {@code name}, {@code gpu_hourly_cost} (required), {@code deployment_pattern},
     * {@code gpu_model}, {@code currency} (default USD), {@code overhead_pct}, {@code energy_kwh_price},
     * {@code pue}, {@code storage_gb_month_price}, {@code idle_capacity}, {@code output_token_weight},
     * {@code enabled}, {@code effective_from}, {@code effective_to}. Money as a {@code BigDecimal}, a decimal string or a number
     * ({@code 2.10} is sent as {@code 2.1}). Retried like any call: its
     * {@code Idempotency-Key} makes a retry answer the first creation.
     *
     * @param policy the policy
     * @return its id and status
     * @throws ValidationException field by field
     * @throws EnterpriseAIException on any other error
     */
    public AllocationPolicyCreated createAllocationPolicy(Map<String, ?> policy) {
        Objects.requireNonNull(policy, "policy");
        return t().call(ApiOperation.CREATE_ALLOCATION_POLICY, NO_ARGS, null, policy, AllocationPolicyCreated.class);
    }

    /**
     * Every allocation policy, closed and disabled ones included, oldest first
     * ({@code GET /v1/finops/allocation-policies}).
     *
     * @return the policies
     * @throws EnterpriseAIException on an error
     */
    public List<AllocationPolicy> listAllocationPolicies() {
        return t().callItems(ApiOperation.LIST_ALLOCATION_POLICIES, NO_ARGS, null, AllocationPolicy.class);
    }

    /**
     * One allocation policy, by id ({@code GET /v1/finops/allocation-policies/{id}}).
     *
     * @param id the policy ({@code alp_1})
     * @return the policy
     * @throws NotFoundException when there is no such policy
     * @throws EnterpriseAIException on any other error
     */
    public AllocationPolicy getAllocationPolicy(String id) {
        return t().call(ApiOperation.GET_ALLOCATION_POLICY, new String[] {id}, null, null, AllocationPolicy.class);
    }

    /**
     * One allocation policy, by id, with per-request options.
     *
     * @param id the policy ({@code alp_1})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the policy
     * @throws EnterpriseAIException on an error
     */
    public AllocationPolicy getAllocationPolicy(String id, RequestOptions options) {
        return client.withOptions(options).finops().getAllocationPolicy(id);
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
        return t().call(ApiOperation.SUPERSEDE_ALLOCATION_POLICY, new String[] {id}, null,
                changes == null ? Map.of() : changes, AllocationPolicyChange.class);
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
        return t().call(ApiOperation.DISABLE_ALLOCATION_POLICY, new String[] {id}, null,
                body == null ? Map.of() : body, AllocationPolicyChange.class);
    }

    // --------------------------------------------------------------------------------------------- budgets

    /**
     * Creates a monthly budget ({@code POST /v1/finops/budgets}; platform_admin for any tenant, finops for its
     * own).
     *
     * <p>Members: {@code name} and {@code limit} (required; {@code {"amount": "1000.00", "currency": "EUR"}}
     * or a {@link ai.enterprise.eai.model.Money}), {@code tenant_id} (platform_admin: else the client's tenant,
     * see {@link EnterpriseAIClient#withTenant(String)}), {@code tokens_limit}, {@code thresholds_pct} (default
     * {@code [50, 80, 100]}), {@code enforce} (default false: alert only), {@code webhook_url},
     * {@code effective_from}, {@code effective_to}. Retried with its {@code Idempotency-Key}.
     *
     * @param budget the budget
     * @return the budget with its {@code current} standing and, when it has a webhook, its
     *     {@code webhookSecret} (shown this once: store it now)
     * @throws ValidationException field by field
     * @throws EnterpriseAIException on any other error
     */
    public Budget createBudget(Map<String, ?> budget) {
        Objects.requireNonNull(budget, "budget");
        return t().call(ApiOperation.CREATE_BUDGET, NO_ARGS, null, budget, Budget.class);
    }

    /**
     * Every budget the caller may read, closed ones included, oldest first ({@code GET /v1/finops/budgets}).
     *
     * @return the budgets (with the month's standing of those in force)
     * @throws EnterpriseAIException on an error
     */
    public List<Budget> listBudgets() {
        return t().callItems(ApiOperation.LIST_BUDGETS, NO_ARGS, null, Budget.class);
    }

    /**
     * One budget ({@code GET /v1/finops/budgets/{id}}).
     *
     * @param id the budget ({@code bud_1})
     * @return the budget with its {@code current} standing when in force
     * @throws NotFoundException when there is no such budget, or it is another tenant's
     * @throws EnterpriseAIException on any other error
     */
    public Budget getBudget(String id) {
        return t().call(ApiOperation.GET_BUDGET, new String[] {id}, null, null, Budget.class);
    }

    /**
     * Closes a budget at {@code effective_at} (default now) and opens its successor with the fields given, the
     * others (and the webhook secret) carried over ({@code POST /v1/finops/budgets/{id}/supersede};
     * platform_admin, finops). Retried with its {@code Idempotency-Key}.
     *
     * @param id the budget ({@code bud_1})
     * @param changes the fields that change ({@code name}, {@code limit}, {@code tokens_limit},
     *     {@code thresholds_pct}, {@code enforce}, {@code webhook_url}, {@code effective_to}) and
     *     {@code effective_at}; {@code null} for none
     * @return the budget as closed and its successor
     * @throws NotFoundException when there is no such budget, or it is another tenant's
     * @throws EnterpriseAIException on any other error
     */
    public BudgetChange supersedeBudget(String id, Map<String, ?> changes) {
        return t().call(ApiOperation.SUPERSEDE_BUDGET, new String[] {id}, null,
                changes == null ? Map.of() : changes, BudgetChange.class);
    }

    /**
     * Disables a budget now ({@code POST /v1/finops/budgets/{id}/disable}); nothing opens in its place.
     *
     * @param id the budget ({@code bud_1})
     * @return the budget as closed ({@code opened} is {@code null})
     * @throws EnterpriseAIException on an error
     */
    public BudgetChange disableBudget(String id) {
        return disableBudget(id, (String) null);
    }

    /**
     * Disables a budget from {@code effectiveAt} on ({@code POST /v1/finops/budgets/{id}/disable}; platform_admin,
     * finops). Retried with its {@code Idempotency-Key}.
     *
     * @param id the budget ({@code bud_1})
     * @param effectiveAt a date ({@code 2026-12-01}) or an RFC 3339 date-time, or {@code null} for now
     * @return the budget as closed ({@code opened} is {@code null})
     * @throws NotFoundException when there is no such budget, or it is another tenant's
     * @throws EnterpriseAIException on any other error
     */
    public BudgetChange disableBudget(String id, String effectiveAt) {
        Map<String, Object> body = new LinkedHashMap<>();
        if (effectiveAt != null) {
            body.put("effective_at", effectiveAt);
        }
        return t().call(ApiOperation.DISABLE_BUDGET, new String[] {id}, null, body,
                BudgetChange.class);
    }

    // ---------------------------------------------------------------------------------------- reservations

    /**
     * Reserves against the tenant's enforcing budgets ({@code POST /v1/finops/reservations}; usage_reporter,
     * tenant_admin, developer, platform_admin).
     *
     * <p>Members: {@code action} (e.g. {@code llm.invoke}) and {@code estimate}
     * ({@code {"cost": "0.50", "tokens": 4000, "currency": "EUR"}}; only {@code cost} required), optional
     * {@code deployment_id}, {@code ttl_seconds} (default 300) and {@code tenant_id} (a usage_reporter or a
     * platform_admin names the tenant, or uses {@link EnterpriseAIClient#withTenant(String)}). Granted when
     * every enforcing budget stays within its limit, decided atomically. A create: retried with its
     * {@code Idempotency-Key}, so a hold is never taken twice.
     *
     * @param request the reservation
     * @return the reservation, {@code held} until {@code expiresAt}
     * @throws BudgetExceededException when it would pass an enforcing budget (nothing is held)
     * @throws ValidationException field by field
     * @throws EnterpriseAIException on any other error
     */
    public Reservation reserve(Map<String, ?> request) {
        Objects.requireNonNull(request, "request");
        return t().call(ApiOperation.CREATE_RESERVATION, NO_ARGS, null, request, Reservation.class);
    }

    /**
     * Reserves an estimated cost for an action; see {@link #reserve(Map)}.
     *
     * @param action what it is for, e.g. {@code llm.invoke}
     * @param estimatedCost the estimated cost (in the currency of the tenant's budgets)
     * @param estimatedTokens the estimated tokens, or {@code null}
     * @param deploymentId the deployment, or {@code null}
     * @return the reservation, {@code held}
     * @throws BudgetExceededException when it would pass an enforcing budget (nothing is held)
     * @throws EnterpriseAIException on any other error
     */
    public Reservation reserve(String action, BigDecimal estimatedCost, Long estimatedTokens, String deploymentId) {
        return reserve(reservationRequest(action, estimatedCost, estimatedTokens, deploymentId));
    }

    /**
     * The request body of {@link #reserve(Map)}, to add members to ({@code ttl_seconds}, {@code tenant_id},
     * {@code estimate.currency}) before passing it on.
     *
     * @param action what it is for, e.g. {@code llm.invoke}
     * @param estimatedCost the estimated cost
     * @param estimatedTokens the estimated tokens, or {@code null}
     * @param deploymentId the deployment, or {@code null}
     * @return a new, modifiable map
     */
    public static Map<String, Object> reservationRequest(String action, BigDecimal estimatedCost,
            Long estimatedTokens, String deploymentId) {
        Map<String, Object> estimate = new LinkedHashMap<>();
        estimate.put("cost", Objects.requireNonNull(estimatedCost, "estimatedCost"));
        if (estimatedTokens != null) {
            estimate.put("tokens", estimatedTokens);
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("action", Objects.requireNonNull(action, "action"));
        body.put("estimate", estimate);
        if (deploymentId != null) {
            body.put("deployment_id", deploymentId);
        }
        return body;
    }

    /**
     * One reservation ({@code GET /v1/finops/reservations/{id}}); a hold past its expiry reads {@code expired}.
     *
     * @param id the reservation ({@code res_...})
     * @return the reservation
     * @throws NotFoundException when there is no such reservation, or it is another tenant's
     * @throws EnterpriseAIException on any other error
     */
    public Reservation getReservation(String id) {
        return t().call(ApiOperation.GET_RESERVATION, new String[] {id}, null, null, Reservation.class);
    }

    /**
     * Commits a reservation: records one usage event (source {@code reservation}, usage type the action) and frees
     * the hold ({@code POST /v1/finops/reservations/{id}/commit}). Idempotent, so retried: a committed
     * reservation is answered as it is (the first commit's actual kept). An expired hold may still be committed.
     *
     * @param id the reservation ({@code res_...})
     * @param cost the actual cost (in the reservation's currency)
     * @param tokens the actual tokens, or {@code null}
     * @return the reservation, {@code committed}
     * @throws ConflictException when it was released
     * @throws NotFoundException when there is no such reservation
     * @throws EnterpriseAIException on any other error
     */
    public Reservation commitReservation(String id, BigDecimal cost, Long tokens) {
        Map<String, Object> actual = new LinkedHashMap<>();
        actual.put("cost", Objects.requireNonNull(cost, "cost"));
        if (tokens != null) {
            actual.put("tokens", tokens);
        }
        return t().call(ApiOperation.COMMIT_RESERVATION, new String[] {id}, null,
                Map.of("actual", actual), Reservation.class);
    }

    /**
     * Releases a reservation: frees the hold ({@code POST /v1/finops/reservations/{id}/release}). Idempotent, so
     * retried: a released or expired one is answered as it is.
     *
     * @param id the reservation ({@code res_...})
     * @return the reservation, {@code released} (or {@code expired})
     * @throws ConflictException when it was committed
     * @throws NotFoundException when there is no such reservation
     * @throws EnterpriseAIException on any other error
     */
    public Reservation releaseReservation(String id) {
        return t().call(ApiOperation.RELEASE_RESERVATION, new String[] {id}, null, null,
                Reservation.class);
    }

    /**
     * Reserves, runs the work, then commits what it returns; releases the hold when the work throws.
     *
     * <p>The work gets the granted reservation and returns the actual cost, or {@code null} to commit the
     * estimate. When it throws, the hold is released and the exception rethrown (a failed release is added to
     * it as suppressed). When the reservation is refused, the work does not run: the
     * {@link BudgetExceededException} is thrown.
     *
     * @param request the reservation, as for {@link #reserve(Map)}
     * @param work what the reservation is for
     * @return the reservation, {@code committed}
     * @throws BudgetExceededException when the reservation is refused (the work did not run)
     * @throws EnterpriseAIException when reserving or committing fails
     */
    public Reservation withReservation(Map<String, ?> request, Function<Reservation, Reservation.Actual> work) {
        Objects.requireNonNull(work, "work");
        Reservation held = reserve(request);
        Reservation.Actual actual;
        try {
            actual = work.apply(held);
        } catch (RuntimeException | Error e) {
            try {
                releaseReservation(held.id());
            } catch (RuntimeException releaseFailed) {
                e.addSuppressed(releaseFailed);
            }
            throw e;
        }
        if (actual == null) {
            BigDecimal tokens = held.estimate().tokens();
            return commitReservation(held.id(), held.estimate().cost(),
                    tokens == null ? null : tokens.longValueExact());
        }
        return commitReservation(held.id(), Objects.requireNonNull(actual.cost(), "actual.cost"), actual.tokens());
    }

    // ------------------------------------------------------------------ the same, with per-request options

    /**
     * Ingests GPU samples given as the request body {@code {"samples": [...]}} ({@code POST
     * /v1/finops/gpu/samples}; platform_admin or sampler). Same behaviour as {@link #gpuSamples(List)}; other
     * members of the body are sent with every batch.
     *
     * @param body a Map holding {@code "samples"}: a List of samples (Maps, {@code GpuSample}s or records)
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return what was stored, summed over the batches
     * @throws ValidationException when a sample is invalid (indexes are positions in your list)
     * @throws EnterpriseAIException on any other error
     */
    public IngestResult gpuSamples(Map<String, ?> body, RequestOptions options) {
        return client.withOptions(options).finops().gpuSamples(body);
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
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return what was stored, summed over the batches
     * @throws ValidationException when a sample is invalid (indexes are positions in your list; the exception's
     *     {@code getPartialResult()} says what earlier batches stored)
     * @throws EnterpriseAIException on any other error
     */
    public IngestResult gpuSamples(List<?> samples, RequestOptions options) {
        return client.withOptions(options).finops().gpuSamples(samples);
    }

    /**
     * Ingests GPU samples with per-call batching options; see {@link #gpuSamples(List)}.
     *
     * @param samples {@link ai.enterprise.eai.model.GpuSample}s, {@code Map<String, ?>}s or other records
     * @param options batch size and 413 behaviour, or {@code null} for the client's
     * @param requestOptions per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return what was stored, summed over the batches
     * @throws EnterpriseAIException on an error
     */
    public IngestResult gpuSamples(List<?> samples, IngestOptions options, RequestOptions requestOptions) {
        return client.withOptions(requestOptions).finops().gpuSamples(samples, options);
    }

    /**
     * The allocation of the last 30 days until now ({@code GET /v1/finops/gpu/allocation}).
     *
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the allocation (a tenant-scoped caller sees only its own part)
     * @throws EnterpriseAIException on an error
     */
    public Allocation gpuAllocation(RequestOptions options) {
        return client.withOptions(options).finops().gpuAllocation();
    }

    /**
     * The allocation of a period given as query parameters ({@code GET /v1/finops/gpu/allocation}).
     *
     * @param params {@code from} (inclusive) and {@code to}: a {@code "2026-10-01"} string, a {@code LocalDate}
     *     (a date {@code to} includes that whole UTC day), an RFC 3339 string, an {@code Instant} or an
     *     {@code OffsetDateTime} (exclusive); absent ones take the server's defaults
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the allocation (a tenant-scoped caller sees only its own part)
     * @throws EnterpriseAIException on an error
     */
    public Allocation gpuAllocation(Map<String, ?> params, RequestOptions options) {
        return client.withOptions(options).finops().gpuAllocation(params);
    }

    /**
     * The allocation of whole UTC days: {@code from} at midnight until the end of {@code to}.
     *
     * @param from first day
     * @param to last day (included)
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the allocation
     * @throws EnterpriseAIException on an error
     */
    public Allocation gpuAllocation(LocalDate from, LocalDate to, RequestOptions options) {
        return client.withOptions(options).finops().gpuAllocation(from, to);
    }

    /**
     * The allocation of {@code [from, to)}.
     *
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the allocation
     * @throws EnterpriseAIException on an error
     */
    public Allocation gpuAllocation(Instant from, Instant to, RequestOptions options) {
        return client.withOptions(options).finops().gpuAllocation(from, to);
    }

    /**
     * The allocation of a period as a FOCUS file, its bytes ({@code GET /v1/finops/gpu/allocation/focus}; the
     * allocation's readers, a tenant's: its rows only). FOCUS 1.3's columns by default (with the split-cost ones,
     * {@code AllocatedMethodId}, ..., and {@code InvoiceId}, the statement a row belongs to once issued), or
     * 1.2's. One row per tenant x deployment x policy x UTC day (or hour); {@code BilledCost} sums exactly to the
     * allocation's {@code allocated} for the same period (a platform caller also gets the {@code x_Unallocated}
     * rows, and then the cost).
     *
     * <pre>{@code
     * byte[] csv = client.finops().gpuAllocationFocus(Map.of("from", "2026-10-01", "to", "2026-10-31"));
     * byte[] v12 = client.finops().gpuAllocationFocus(Map.of("from", "2026-10-01", "to", "2026-10-31",
     *         "version", "1.2", "granularity", "hour"));
     * }</pre>
     *
     * @param params {@code from} and {@code to} as for {@link #gpuAllocation(Map)}; {@code format}: {@code "csv"}
     *     (default: RFC 4180, a header line) or {@code "parquet"}; {@code version}: {@code "1.3"} (default) or
     *     {@code "1.2"}; {@code granularity}: {@code "day"} (default) or {@code "hour"}
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the file's bytes (CSV in UTF-8, or Parquet)
     * @throws ValidationException when a parameter is invalid (another {@code format}, {@code version} or
     *     {@code granularity}: that field)
     * @throws EnterpriseAIException on any other error
     */
    public byte[] gpuAllocationFocus(Map<String, ?> params, RequestOptions options) {
        return client.withOptions(options).finops().gpuAllocationFocus(params);
    }

    /**
     * The FOCUS export of {@code [from, to)}; see {@link #gpuAllocationFocus(Map)}.
     *
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @param format {@code "csv"}, {@code "parquet"}, or {@code null} for the default ({@code csv})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the file's bytes
     * @throws EnterpriseAIException on an error
     */
    public byte[] gpuAllocationFocus(Instant from, Instant to, String format, RequestOptions options) {
        return client.withOptions(options).finops().gpuAllocationFocus(from, to, format);
    }

    /**
     * The FOCUS export of whole UTC days, {@code from} at midnight until the end of {@code to}; see
     * {@link #gpuAllocationFocus(Map)}.
     *
     * @param from first day
     * @param to last day (included)
     * @param format {@code "csv"}, {@code "parquet"}, or {@code null} for the default ({@code csv})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the file's bytes
     * @throws EnterpriseAIException on an error
     */
    public byte[] gpuAllocationFocus(LocalDate from, LocalDate to, String format, RequestOptions options) {
        return client.withOptions(options).finops().gpuAllocationFocus(from, to, format);
    }

    /**
     * The FOCUS export of {@code [from, to)} in a FOCUS version and granularity; see
     * {@link #gpuAllocationFocus(Map)}.
     *
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @param format {@code "csv"}, {@code "parquet"}, or {@code null} for the default ({@code csv})
     * @param version {@code "1.3"}, {@code "1.2"}, or {@code null} for the default ({@code 1.3})
     * @param granularity {@code "day"}, {@code "hour"}, or {@code null} for the default ({@code day})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the file's bytes
     * @throws EnterpriseAIException on an error
     */
    public byte[] gpuAllocationFocus(Instant from, Instant to, String format, String version, String granularity,
            RequestOptions options) {
        return client.withOptions(options).finops().gpuAllocationFocus(from, to, format, version, granularity);
    }

    /**
     * The FOCUS export of whole UTC days in a FOCUS version and granularity; see {@link #gpuAllocationFocus(Map)}.
     *
     * @param from first day
     * @param to last day (included)
     * @param format {@code "csv"}, {@code "parquet"}, or {@code null} for the default ({@code csv})
     * @param version {@code "1.3"}, {@code "1.2"}, or {@code null} for the default ({@code 1.3})
     * @param granularity {@code "day"}, {@code "hour"}, or {@code null} for the default ({@code day})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the file's bytes
     * @throws EnterpriseAIException on an error
     */
    public byte[] gpuAllocationFocus(LocalDate from, LocalDate to, String format, String version,
            String granularity, RequestOptions options) {
        return client.withOptions(options).finops().gpuAllocationFocus(from, to, format, version, granularity);
    }

    /**
     * Writes {@link #gpuAllocationFocus(Map)}'s file to {@code target} (created or replaced); on an error nothing
     * is written.
     *
     * <pre>{@code
     * client.finops().gpuAllocationFocusToFile(Path.of("october.parquet"),
     *         Map.of("from", "2026-10-01", "to", "2026-10-31", "format", "parquet"));
     * }</pre>
     *
     * @param target the file to write
     * @param params as for {@link #gpuAllocationFocus(Map)}
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return {@code target}
     * @throws UncheckedIOException when the file cannot be written
     * @throws EnterpriseAIException on an error of the call
     */
    public Path gpuAllocationFocusToFile(Path target, Map<String, ?> params, RequestOptions options) {
        return client.withOptions(options).finops().gpuAllocationFocusToFile(target, params);
    }

    /**
     * Cost per million tokens of a period, blended, input and output ({@code GET /v1/finops/gpu/token-costs};
     * the allocation's readers, a tenant's: its share only).
     *
     * <p>The input/output split uses vLLM's measured prefill and decode time where a sampler posts its counters
     * ({@code allocationMethod} {@code compute_time}), else the policy's {@code output_token_weight}
     * ({@code weight}).
     *
     * @param params {@code from} and {@code to} as for {@link #gpuAllocation(Map)}; {@code basis}:
     *     {@code "allocation"} (default: the allocated cost, idle included) or {@code "usage"} (busy GPU-seconds
     *     only); {@code aggregate}: {@code "deployment"} (default), {@code "tenant"} or {@code "model"}
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the rows
     * @throws ValidationException when a parameter is invalid
     * @throws EnterpriseAIException on any other error
     */
    public TokenCostList gpuTokenCosts(Map<String, ?> params, RequestOptions options) {
        return client.withOptions(options).finops().gpuTokenCosts(params);
    }

    /**
     * Cost per million tokens of {@code [from, to)}; see {@link #gpuTokenCosts(Map)}.
     *
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @param basis {@code "allocation"}, {@code "usage"}, or {@code null} for the default ({@code allocation})
     * @param aggregate {@code "deployment"}, {@code "tenant"}, {@code "model"}, or {@code null} for the default
     *     ({@code deployment})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the rows
     * @throws EnterpriseAIException on an error
     */
    public TokenCostList gpuTokenCosts(Instant from, Instant to, String basis, String aggregate, RequestOptions options) {
        return client.withOptions(options).finops().gpuTokenCosts(from, to, basis, aggregate);
    }

    /**
     * Cost per million tokens of whole UTC days, {@code from} at midnight until the end of {@code to}; see
     * {@link #gpuTokenCosts(Map)}.
     *
     * @param from first day
     * @param to last day (included)
     * @param basis {@code "allocation"}, {@code "usage"}, or {@code null} for the default
     * @param aggregate {@code "deployment"}, {@code "tenant"}, {@code "model"}, or {@code null} for the default
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the rows
     * @throws EnterpriseAIException on an error
     */
    public TokenCostList gpuTokenCosts(LocalDate from, LocalDate to, String basis, String aggregate, RequestOptions options) {
        return client.withOptions(options).finops().gpuTokenCosts(from, to, basis, aggregate);
    }

    /**
     * Why a deployment costs what it does over a period, bucket by bucket
     * ({@code GET /v1/finops/gpu/allocation/explain}): per bucket the measured and estimated GPU-seconds, each
     * tenant's claim and share, the policy's rates, the exact cost and its split; then the idle spread and the one
     * rounding with its largest-remainder step; and where its time ran ({@link AllocationExplanation#pods()}: by
     * namespace, pod, GPU and share method). A tenant's key sees a deployment only when charged on it, every other
     * tenant summed into one {@code other_tenants} party (otherwise {@link NotFoundException}).
     *
     * @param params {@code deployment_id} (required), {@code from} and {@code to} as for
     *     {@link #gpuAllocation(Map)}, and {@code tenant_id} to see it as that tenant does (a tenant's key: its
     *     own only, another is a {@link PermissionDeniedException})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the explanation
     * @throws EnterpriseAIException on an error
     */
    public AllocationExplanation gpuAllocationExplain(Map<String, ?> params, RequestOptions options) {
        return client.withOptions(options).finops().gpuAllocationExplain(params);
    }

    /**
     * Why {@code deploymentId} costs what it does over whole UTC days, {@code from} at midnight until the end of
     * {@code to}; see {@link #gpuAllocationExplain(Map)}.
     *
     * @param deploymentId the deployment
     * @param from first day
     * @param to last day (included)
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the explanation
     * @throws EnterpriseAIException on an error
     */
    public AllocationExplanation gpuAllocationExplain(String deploymentId, LocalDate from, LocalDate to, RequestOptions options) {
        return client.withOptions(options).finops().gpuAllocationExplain(deploymentId, from, to);
    }

    /**
     * Why {@code deploymentId} costs what it does over {@code [from, to)}; see {@link #gpuAllocationExplain(Map)}.
     *
     * @param deploymentId the deployment
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the explanation
     * @throws EnterpriseAIException on an error
     */
    public AllocationExplanation gpuAllocationExplain(String deploymentId, Instant from, Instant to, RequestOptions options) {
        return client.withOptions(options).finops().gpuAllocationExplain(deploymentId, from, to);
    }

    /**
     * A period's GPU time and cost per pod, node, GPU, namespace, deployment, tenant, model or share method
     * ({@code GET /v1/finops/gpu/usage}; the allocation's readers, but a tenant's key sees the rows of its dedicated
     * deployments only: a shared deployment is split between tenants by usage, not by pod). Each deployment's cost
     * (the allocation's figure for the same period) is apportioned over its rows, so that they sum to it to the
     * cent; a filter keeps the same cents as the unfiltered answer. Grouped by {@link UsageDimension#GPU} (the
     * device: a GPU shared by several pods is one value), each row has its share of the GPU's time
     * ({@link ai.enterprise.eai.model.GpuUsageRow#gpuShare()}, platform keys); {@link UsageDimension#SHARE} is how
     * it was obtained.
     *
     * <pre>{@code
     * GpuUsageBreakdown b = client.finops().gpuUsage(Map.of("from", "2026-10-01", "to", "2026-10-31",
     *         "group_by", "namespace,pod", "filter", "deployment:vllm-llama-70b"));
     * }</pre>
     *
     * @param params {@code from} and {@code to} as for {@link #gpuAllocation(Map)}; {@code group_by}: the
     *     dimensions of a row, comma-separated, each once (default {@code deployment}; see {@link UsageDimension});
     *     {@code filter}: {@code dimension:value} pairs, comma-separated (values of one dimension: any of them;
     *     several dimensions: all of them)
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the breakdown
     * @throws ValidationException when a parameter is invalid ({@code fields()} names {@code group_by},
     *     {@code filter}, {@code from} or {@code to})
     * @throws EnterpriseAIException on any other error
     */
    public GpuUsageBreakdown gpuUsage(Map<String, ?> params, RequestOptions options) {
        return client.withOptions(options).finops().gpuUsage(params);
    }

    /**
     * GPU time and cost of whole UTC days, {@code from} at midnight until the end of {@code to}, grouped and
     * filtered; see {@link #gpuUsage(Map)}.
     *
     * <pre>{@code
     * client.finops().gpuUsage(LocalDate.of(2026, 10, 1), LocalDate.of(2026, 10, 31),
     *         List.of(UsageDimension.NODE, UsageDimension.GPU),
     *         Map.of(UsageDimension.DEPLOYMENT, List.of("vllm-llama-70b")));
     * }</pre>
     *
     * @param from first day
     * @param to last day (included)
     * @param groupBy the dimensions of a row, each once, or {@code null} (or empty) for the default
     *     ({@link UsageDimension#DEPLOYMENT})
     * @param filter the values kept per dimension (any of a dimension's values; every dimension), or {@code null}
     *     for every row
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the breakdown
     * @throws IllegalArgumentException when a filter value is empty or holds a comma, or a dimension has no value
     * @throws EnterpriseAIException on an error
     */
    public GpuUsageBreakdown gpuUsage(LocalDate from, LocalDate to, List<UsageDimension> groupBy, Map<UsageDimension, ? extends Collection<String>> filter, RequestOptions options) {
        return client.withOptions(options).finops().gpuUsage(from, to, groupBy, filter);
    }

    /**
     * GPU time and cost of {@code [from, to)}, grouped and filtered; see {@link #gpuUsage(Map)}.
     *
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @param groupBy the dimensions of a row, each once, or {@code null} (or empty) for the default
     *     ({@link UsageDimension#DEPLOYMENT})
     * @param filter the values kept per dimension (any of a dimension's values; every dimension), or {@code null}
     *     for every row
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the breakdown
     * @throws IllegalArgumentException when a filter value is empty or holds a comma, or a dimension has no value
     * @throws EnterpriseAIException on an error
     */
    public GpuUsageBreakdown gpuUsage(Instant from, Instant to, List<UsageDimension> groupBy, Map<UsageDimension, ? extends Collection<String>> filter, RequestOptions options) {
        return client.withOptions(options).finops().gpuUsage(from, to, groupBy, filter);
    }

    /**
     * Cost over time ({@code GET /v1/finops/gpu/allocation/series}; the allocation's readers, a tenant's: its
     * share and its tokens). Each step's cost, allocated and unallocated are the period's apportioned, so every
     * column of the steps sums to the period's totals (and to {@link #gpuAllocation(Map)}) to the cent.
     *
     * @param params {@code from} and {@code to} as for {@link #gpuAllocation(Map)}; {@code step}: {@code "hour"},
     *     {@code "day"} (default), {@code "week"} (ISO, from Monday) or {@code "month"}, UTC, at most 1000 steps
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the series
     * @throws ValidationException when a parameter is invalid
     * @throws EnterpriseAIException on any other error
     */
    public AllocationSeries gpuAllocationSeries(Map<String, ?> params, RequestOptions options) {
        return client.withOptions(options).finops().gpuAllocationSeries(params);
    }

    /**
     * Cost over time of {@code [from, to)}; see {@link #gpuAllocationSeries(Map)}.
     *
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @param step {@code "hour"}, {@code "day"}, {@code "week"}, {@code "month"}, or {@code null} for the default
     *     ({@code day})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the series
     * @throws EnterpriseAIException on an error
     */
    public AllocationSeries gpuAllocationSeries(Instant from, Instant to, String step, RequestOptions options) {
        return client.withOptions(options).finops().gpuAllocationSeries(from, to, step);
    }

    /**
     * Cost over time of whole UTC days, {@code from} at midnight until the end of {@code to}; see
     * {@link #gpuAllocationSeries(Map)}.
     *
     * @param from first day
     * @param to last day (included)
     * @param step {@code "hour"}, {@code "day"}, {@code "week"}, {@code "month"}, or {@code null} for the default
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the series
     * @throws EnterpriseAIException on an error
     */
    public AllocationSeries gpuAllocationSeries(LocalDate from, LocalDate to, String step, RequestOptions options) {
        return client.withOptions(options).finops().gpuAllocationSeries(from, to, step);
    }

    /**
     * Slurm's accounting of its GPU jobs over a period beside what was measured of them
     * ({@code POST /v1/finops/gpu/slurm/reconciliation}; the allocation's readers, a tenant's key: the jobs of its
     * dedicated deployments only). Per job with GPUs in the period: the GPU-seconds Slurm allocated, those the
     * samplers measured (pod {@code job-<id>}, namespace its account), how busy, its cost, and a status:
     * {@code ok}; {@code idle} (busy under {@code idle_below} of the allocated time); {@code not_measured}
     * (allocated, nothing measured); {@code not_in_slurm} (measured, not in the document). Nothing is stored: the
     * call is retried like a read.
     *
     * <pre>{@code
     * Process p = new ProcessBuilder("sacct", "--json", "-a", "-X", "-S", "2026-10-01", "-E", "2026-10-31").start();
     * SlurmReconciliation r = client.finops().gpuSlurmReconciliation(p.getInputStream().readAllBytes(),
     *         Map.of("from", "2026-10-01", "to", "2026-10-31", "idle_below", new BigDecimal("0.1")));
     * }</pre>
     *
     * @param sacct the output of {@code sacct --json -a -X -S <from> -E <to>}: its text (a {@code String} or
     *     {@code byte[]}, sent as it is), the file holding it (a {@link Path}), or its parsed JSON (a
     *     {@link JsonNode} or a {@code Map}); only its {@code jobs} are read
     * @param params {@code from} and {@code to} as for {@link #gpuAllocation(Map)}; {@code idle_below}: a decimal
     *     from 0 to 1 (a {@code BigDecimal} or a decimal string; default {@code 0.1})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the jobs and the totals
     * @throws IllegalArgumentException when {@code sacct} is none of the types above
     * @throws UncheckedIOException when the {@link Path} cannot be read
     * @throws ValidationException when the document has no {@code jobs} or a parameter is invalid
     *     ({@code fields()} names {@code body}, {@code idle_below}, {@code from} or {@code to})
     * @throws EnterpriseAIException on any other error
     */
    public SlurmReconciliation gpuSlurmReconciliation(Object sacct, Map<String, ?> params, RequestOptions options) {
        return client.withOptions(options).finops().gpuSlurmReconciliation(sacct, params);
    }

    /**
     * Slurm's GPU jobs of {@code [from, to)} beside what was measured; see
     * {@link #gpuSlurmReconciliation(Object, Map)}.
     *
     * @param sacct the {@code sacct --json} document, as for {@link #gpuSlurmReconciliation(Object, Map)}
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @param idleBelow the idle threshold (0 to 1), or {@code null} for the default ({@code 0.1})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the jobs and the totals
     * @throws EnterpriseAIException on an error
     */
    public SlurmReconciliation gpuSlurmReconciliation(Object sacct, Instant from, Instant to, BigDecimal idleBelow, RequestOptions options) {
        return client.withOptions(options).finops().gpuSlurmReconciliation(sacct, from, to, idleBelow);
    }

    /**
     * Slurm's GPU jobs of whole UTC days, {@code from} at midnight until the end of {@code to}, beside what was
     * measured; see {@link #gpuSlurmReconciliation(Object, Map)}.
     *
     * @param sacct the {@code sacct --json} document, as for {@link #gpuSlurmReconciliation(Object, Map)}
     * @param from first day
     * @param to last day (included)
     * @param idleBelow the idle threshold (0 to 1), or {@code null} for the default ({@code 0.1})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the jobs and the totals
     * @throws EnterpriseAIException on an error
     */
    public SlurmReconciliation gpuSlurmReconciliation(Object sacct, LocalDate from, LocalDate to, BigDecimal idleBelow, RequestOptions options) {
        return client.withOptions(options).finops().gpuSlurmReconciliation(sacct, from, to, idleBelow);
    }

    /**
     * What to do about the period's idle and oversized GPUs, with the savings ({@code GET
     * /v1/finops/gpu/recommendations}; the allocation's readers, a tenant's key: its dedicated deployments only),
     * largest monthly savings first. Per deployment a {@code kind}: {@code idle_gpus} (GPUs busy at most
     * {@code idle_utilization} of an hour for at least {@code idle_share} of the hours they ran:
     * {@code remove_gpus}), {@code low_utilization} (the others, busy under {@code low_utilization} of their
     * GPU-hours: {@code fewer_gpus}, {@code mig_profile} or {@code share_gpu}) or {@code unpriced} (GPU time no
     * policy prices: {@code add_policy}, no savings). The evidence's quantities are {@code BigDecimal}s; cost,
     * savings (the period's) and monthly savings are {@code Money}, null where unpriced.
     *
     * <pre>{@code
     * RecommendationList recs = client.finops().gpuRecommendations(Map.of("from", "2026-10-01", "to", "2026-10-31",
     *         "idle_utilization", new BigDecimal("0.05")));
     * }</pre>
     *
     * @param params {@code from} and {@code to} as for {@link #gpuAllocation(Map)}; {@code idle_utilization},
     *     {@code idle_share}, {@code low_utilization}: decimals from 0 to 1 (a {@code BigDecimal} or a decimal
     *     string; default the server's, 0.05, 0.5 and 0.3); the answer's {@code thresholds} are those applied
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the recommendations
     * @throws ValidationException when a threshold is out of range or the period is invalid ({@code fields()}
     *     names it)
     * @throws EnterpriseAIException on any other error
     */
    public RecommendationList gpuRecommendations(Map<String, ?> params, RequestOptions options) {
        return client.withOptions(options).finops().gpuRecommendations(params);
    }

    /**
     * The recommendations of {@code [from, to)}; see {@link #gpuRecommendations(Map)}.
     *
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @param idleUtilization a GPU-hour busy at most this share is idle (0 to 1), or {@code null} for the default
     * @param idleShare a GPU idle for at least this share of its hours could go (0 to 1), or {@code null}
     * @param lowUtilization a deployment busy under this share is oversized (0 to 1), or {@code null}
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the recommendations
     * @throws EnterpriseAIException on an error
     */
    public RecommendationList gpuRecommendations(Instant from, Instant to, BigDecimal idleUtilization,
            BigDecimal idleShare, BigDecimal lowUtilization, RequestOptions options) {
        return client.withOptions(options).finops()
                .gpuRecommendations(from, to, idleUtilization, idleShare, lowUtilization);
    }

    /**
     * The recommendations of whole UTC days, {@code from} at midnight until the end of {@code to}; see
     * {@link #gpuRecommendations(Map)}.
     *
     * @param from first day
     * @param to last day (included)
     * @param idleUtilization a GPU-hour busy at most this share is idle (0 to 1), or {@code null} for the default
     * @param idleShare a GPU idle for at least this share of its hours could go (0 to 1), or {@code null}
     * @param lowUtilization a deployment busy under this share is oversized (0 to 1), or {@code null}
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the recommendations
     * @throws EnterpriseAIException on an error
     */
    public RecommendationList gpuRecommendations(LocalDate from, LocalDate to, BigDecimal idleUtilization,
            BigDecimal idleShare, BigDecimal lowUtilization, RequestOptions options) {
        return client.withOptions(options).finops()
                .gpuRecommendations(from, to, idleUtilization, idleShare, lowUtilization);
    }

    /**
     * A month's expected spend per tenant and deployment, and when the budgets run out ({@code GET
     * /v1/finops/gpu/forecast}; the allocation's readers, a tenant's key: its own lines and budgets). Spend is
     * counted up to {@code asOf} (a midnight UTC); the days left are a straight line fitted to the daily costs
     * since {@code historyFrom} (28 days before the month), times a factor per weekday. Each line (tenant x
     * deployment x currency) and each tenant's total has spent, expected and the band low/high ({@code Money});
     * each budget in force the day its limit is expected to be reached ({@code exhaustedOn}, null: not this
     * month) and the earliest ({@code exhaustedOnHigh}). A month over has its figures, the band equal to them.
     *
     * <pre>{@code
     * Forecast f = client.finops().gpuForecast(YearMonth.of(2026, 11));
     * }</pre>
     *
     * @param params {@code period}: the month, {@code "YYYY-MM"} or a {@link YearMonth} (default: the current
     *     month, UTC)
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the forecast
     * @throws ValidationException when the period is invalid ({@code fields()} names {@code period})
     * @throws EnterpriseAIException on any other error
     */
    public Forecast gpuForecast(Map<String, ?> params, RequestOptions options) {
        return client.withOptions(options).finops().gpuForecast(params);
    }

    /**
     * The forecast of a month; see {@link #gpuForecast(Map)}.
     *
     * @param period the month, or {@code null} for the current month (UTC)
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the forecast
     * @throws EnterpriseAIException on an error
     */
    public Forecast gpuForecast(YearMonth period, RequestOptions options) {
        return client.withOptions(options).finops().gpuForecast(period);
    }

    /**
     * The forecast of the current month (UTC); see {@link #gpuForecast(Map)}.
     *
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the forecast
     * @throws EnterpriseAIException on an error
     */
    public Forecast gpuForecast(RequestOptions options) {
        return client.withOptions(options).finops().gpuForecast();
    }

    /**
     * The period's hours whose cost or GPU time was far from their deployment's baseline ({@code GET
     * /v1/finops/gpu/anomalies}; the allocation's readers, a tenant's key: its dedicated deployments' only), newest
     * first. Each: the deployment and hour, the metric ({@code cost} in its currency, or {@code gpu_seconds}),
     * the hour's value, the baseline's median and MAD, the deviation in scaled MADs (null when the MAD is 0) and
     * the direction ({@code above} or {@code below}). The server checks each closed hour once it is settled.
     *
     * <pre>{@code
     * AnomalyList list = client.finops().gpuAnomalies(LocalDate.of(2026, 11, 1), LocalDate.of(2026, 11, 7));
     * }</pre>
     *
     * @param params {@code from} and {@code to} as for {@link #gpuAllocation(Map)}
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the anomalies, newest hour first
     * @throws ValidationException when the period is invalid
     * @throws EnterpriseAIException on any other error
     */
    public AnomalyList gpuAnomalies(Map<String, ?> params, RequestOptions options) {
        return client.withOptions(options).finops().gpuAnomalies(params);
    }

    /**
     * The anomalies of {@code [from, to)}; see {@link #gpuAnomalies(Map)}.
     *
     * @param from start (inclusive)
     * @param to end (exclusive)
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the anomalies, newest hour first
     * @throws EnterpriseAIException on an error
     */
    public AnomalyList gpuAnomalies(Instant from, Instant to, RequestOptions options) {
        return client.withOptions(options).finops().gpuAnomalies(from, to);
    }

    /**
     * The anomalies of whole UTC days, {@code from} at midnight until the end of {@code to}; see
     * {@link #gpuAnomalies(Map)}.
     *
     * @param from first day
     * @param to last day (included)
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the anomalies, newest hour first
     * @throws EnterpriseAIException on an error
     */
    public AnomalyList gpuAnomalies(LocalDate from, LocalDate to, RequestOptions options) {
        return client.withOptions(options).finops().gpuAnomalies(from, to);
    }

    /**
     * The issued statements, without their lines ({@code GET /v1/finops/gpu/statements}); see
     * {@link #gpuStatements(Map)}.
     *
     * @param params {@code period} ({@code "YYYY-MM"} or a {@link YearMonth}) and {@code tenant_id}
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the statements
     * @throws EnterpriseAIException on an error
     */
    public StatementList gpuStatements(Map<String, ?> params, RequestOptions options) {
        return client.withOptions(options).finops().gpuStatements(params);
    }

    /**
     * Every issued statement the caller may read; see {@link #gpuStatements(Map)}.
     *
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the statements
     * @throws EnterpriseAIException on an error
     */
    public StatementList gpuStatements(RequestOptions options) {
        return client.withOptions(options).finops().gpuStatements();
    }

    /**
     * The issued statements of a month, or of a tenant; see {@link #gpuStatements(Map)}.
     *
     * @param period only this month, or {@code null} for every month
     * @param tenantId only this tenant's (platform callers), or {@code null}
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the statements
     * @throws EnterpriseAIException on an error
     */
    public StatementList gpuStatements(YearMonth period, String tenantId, RequestOptions options) {
        return client.withOptions(options).finops().gpuStatements(period, tenantId);
    }

    /**
     * Issues the statements of a month that is over; see {@link #issueGpuStatements(Map)}. The options' idempotency
     * key, if any, is the call's {@code Idempotency-Key}.
     *
     * @param body {@code period} ({@code "YYYY-MM"}) and {@code tenant_id}
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the statements issued by this call and those issued before
     * @throws EnterpriseAIException on an error
     */
    public StatementIssued issueGpuStatements(Map<String, ?> body, RequestOptions options) {
        return client.withOptions(options).finops().issueGpuStatements(body);
    }

    /**
     * Issues every statement of a month that is over; see {@link #issueGpuStatements(Map)}.
     *
     * @param period the month
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the statements issued by this call and those issued before
     * @throws EnterpriseAIException on an error
     */
    public StatementIssued issueGpuStatements(YearMonth period, RequestOptions options) {
        return client.withOptions(options).finops().issueGpuStatements(period);
    }

    /**
     * Issues one tenant's statement of a month that is over; see {@link #issueGpuStatements(Map)}.
     *
     * @param period the month
     * @param tenantId the tenant, or {@code null} for every tenant and the unallocated capacity
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the statements issued by this call and those issued before
     * @throws EnterpriseAIException on an error
     */
    public StatementIssued issueGpuStatements(YearMonth period, String tenantId, RequestOptions options) {
        return client.withOptions(options).finops().issueGpuStatements(period, tenantId);
    }

    /**
     * One issued statement; see {@link #gpuStatement(String)}.
     *
     * @param number the statement's number ({@code ST-2026-10-0001})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the statement
     * @throws EnterpriseAIException on an error
     */
    public Statement gpuStatement(String number, RequestOptions options) {
        return client.withOptions(options).finops().gpuStatement(number);
    }

    /**
     * One issued statement as CSV; see {@link #gpuStatementCsv(String)}.
     *
     * @param number the statement's number ({@code ST-2026-10-0001})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the CSV text
     * @throws EnterpriseAIException on an error
     */
    public String gpuStatementCsv(String number, RequestOptions options) {
        return client.withOptions(options).finops().gpuStatementCsv(number);
    }

    /**
     * Creates an allocation policy ({@code POST /v1/finops/allocation-policies}; platform_admin).
     *
     * <p>Members: {@code name}, {@code gpu_hourly_cost} (required), {@code deployment_pattern},
     * {@code gpu_model}, {@code currency} (default USD), {@code overhead_pct}, {@code energy_kwh_price},
     * {@code pue}, {@code storage_gb_month_price}, {@code idle_capacity}, {@code output_token_weight},
     * {@code enabled}, {@code effective_from}, {@code effective_to}. Money as a {@code BigDecimal}, a decimal string or a number
     * ({@code 2.10} is sent as {@code 2.1}). Retried like any call: its
     * {@code Idempotency-Key} makes a retry answer the first creation.
     *
     * @param policy the policy
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return its id and status
     * @throws ValidationException field by field
     * @throws EnterpriseAIException on any other error
     */
    public AllocationPolicyCreated createAllocationPolicy(Map<String, ?> policy, RequestOptions options) {
        return client.withOptions(options).finops().createAllocationPolicy(policy);
    }

    /**
     * Every allocation policy, closed and disabled ones included, oldest first
     * ({@code GET /v1/finops/allocation-policies}).
     *
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the policies
     * @throws EnterpriseAIException on an error
     */
    public List<AllocationPolicy> listAllocationPolicies(RequestOptions options) {
        return client.withOptions(options).finops().listAllocationPolicies();
    }

    /**
     * Closes a policy at {@code effective_at} (default now) and opens its replacement: the closed policy's fields
     * overridden by {@code changes} ({@code POST /v1/finops/allocation-policies/{id}/supersede};
     * platform_admin). Pricing is never edited in place.
     *
     * @param id the policy ({@code alp_1})
     * @param changes the fields to change (a field given as null takes its default) and {@code effective_at}
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the policy as closed and its replacement
     * @throws NotFoundException when there is no such policy
     * @throws ValidationException when it is closed already, or a field is invalid
     * @throws EnterpriseAIException on any other error
     */
    public AllocationPolicyChange supersedeAllocationPolicy(String id, Map<String, ?> changes, RequestOptions options) {
        return client.withOptions(options).finops().supersedeAllocationPolicy(id, changes);
    }

    /**
     * Disables a policy from now on ({@code POST /v1/finops/allocation-policies/{id}/disable}; platform_admin).
     *
     * @param id the policy ({@code alp_1})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the policy as closed and its disabled copy
     * @throws NotFoundException when there is no such policy
     * @throws ValidationException when it is closed already
     * @throws EnterpriseAIException on any other error
     */
    public AllocationPolicyChange disableAllocationPolicy(String id, RequestOptions options) {
        return client.withOptions(options).finops().disableAllocationPolicy(id);
    }

    /**
     * Disables a policy from an instant on: closes it then and opens a disabled copy.
     *
     * @param id the policy ({@code alp_1})
     * @param effectiveAt when (inside the policy's effective range)
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the policy as closed and its disabled copy
     * @throws EnterpriseAIException on an error
     */
    public AllocationPolicyChange disableAllocationPolicy(String id, Instant effectiveAt, RequestOptions options) {
        return client.withOptions(options).finops().disableAllocationPolicy(id, effectiveAt);
    }

    /**
     * Disables a policy with the body given ({@code {"effective_at": ...}}).
     *
     * @param id the policy ({@code alp_1})
     * @param body the request body
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the policy as closed and its disabled copy
     * @throws EnterpriseAIException on an error
     */
    public AllocationPolicyChange disableAllocationPolicy(String id, Map<String, ?> body, RequestOptions options) {
        return client.withOptions(options).finops().disableAllocationPolicy(id, body);
    }

    /**
     * Creates a monthly budget ({@code POST /v1/finops/budgets}; platform_admin for any tenant, finops for its
     * own).
     *
     * <p>Members: {@code name} and {@code limit} (required; {@code {"amount": "1000.00", "currency": "EUR"}}
     * or a {@link ai.enterprise.eai.model.Money}), {@code tenant_id} (platform_admin: else the client's tenant,
     * see {@link EnterpriseAIClient#withTenant(String)}), {@code tokens_limit}, {@code thresholds_pct} (default
     * {@code [50, 80, 100]}), {@code enforce} (default false: alert only), {@code webhook_url},
     * {@code effective_from}, {@code effective_to}. Retried with its {@code Idempotency-Key}.
     *
     * @param budget the budget
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the budget with its {@code current} standing and, when it has a webhook, its
     *     {@code webhookSecret} (shown this once: store it now)
     * @throws ValidationException field by field
     * @throws EnterpriseAIException on any other error
     */
    public Budget createBudget(Map<String, ?> budget, RequestOptions options) {
        return client.withOptions(options).finops().createBudget(budget);
    }

    /**
     * Every budget the caller may read, closed ones included, oldest first ({@code GET /v1/finops/budgets}).
     *
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the budgets (with the month's standing of those in force)
     * @throws EnterpriseAIException on an error
     */
    public List<Budget> listBudgets(RequestOptions options) {
        return client.withOptions(options).finops().listBudgets();
    }

    /**
     * One budget ({@code GET /v1/finops/budgets/{id}}).
     *
     * @param id the budget ({@code bud_1})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the budget with its {@code current} standing when in force
     * @throws NotFoundException when there is no such budget, or it is another tenant's
     * @throws EnterpriseAIException on any other error
     */
    public Budget getBudget(String id, RequestOptions options) {
        return client.withOptions(options).finops().getBudget(id);
    }

    /**
     * Closes a budget at {@code effective_at} (default now) and opens its successor with the fields given, the
     * others (and the webhook secret) carried over ({@code POST /v1/finops/budgets/{id}/supersede};
     * platform_admin, finops). Retried with its {@code Idempotency-Key}.
     *
     * @param id the budget ({@code bud_1})
     * @param changes the fields that change ({@code name}, {@code limit}, {@code tokens_limit},
     *     {@code thresholds_pct}, {@code enforce}, {@code webhook_url}, {@code effective_to}) and
     *     {@code effective_at}; {@code null} for none
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the budget as closed and its successor
     * @throws NotFoundException when there is no such budget, or it is another tenant's
     * @throws EnterpriseAIException on any other error
     */
    public BudgetChange supersedeBudget(String id, Map<String, ?> changes, RequestOptions options) {
        return client.withOptions(options).finops().supersedeBudget(id, changes);
    }

    /**
     * Disables a budget now ({@code POST /v1/finops/budgets/{id}/disable}); nothing opens in its place.
     *
     * @param id the budget ({@code bud_1})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the budget as closed ({@code opened} is {@code null})
     * @throws EnterpriseAIException on an error
     */
    public BudgetChange disableBudget(String id, RequestOptions options) {
        return client.withOptions(options).finops().disableBudget(id);
    }

    /**
     * Disables a budget from {@code effectiveAt} on ({@code POST /v1/finops/budgets/{id}/disable}; platform_admin,
     * finops). Retried with its {@code Idempotency-Key}.
     *
     * @param id the budget ({@code bud_1})
     * @param effectiveAt a date ({@code 2026-12-01}) or an RFC 3339 date-time, or {@code null} for now
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the budget as closed ({@code opened} is {@code null})
     * @throws NotFoundException when there is no such budget, or it is another tenant's
     * @throws EnterpriseAIException on any other error
     */
    public BudgetChange disableBudget(String id, String effectiveAt, RequestOptions options) {
        return client.withOptions(options).finops().disableBudget(id, effectiveAt);
    }

    /**
     * Reserves against the tenant's enforcing budgets ({@code POST /v1/finops/reservations}; usage_reporter,
     * tenant_admin, developer, platform_admin).
     *
     * <p>Members: {@code action} (e.g. {@code llm.invoke}) and {@code estimate}
     * ({@code {"cost": "0.50", "tokens": 4000, "currency": "EUR"}}; only {@code cost} required), optional
     * {@code deployment_id}, {@code ttl_seconds} (default 300) and {@code tenant_id} (a usage_reporter or a
     * platform_admin names the tenant, or uses {@link EnterpriseAIClient#withTenant(String)}). Granted when
     * every enforcing budget stays within its limit, decided atomically. A create: retried with its
     * {@code Idempotency-Key}, so a hold is never taken twice.
     *
     * @param request the reservation
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the reservation, {@code held} until {@code expiresAt}
     * @throws BudgetExceededException when it would pass an enforcing budget (nothing is held)
     * @throws ValidationException field by field
     * @throws EnterpriseAIException on any other error
     */
    public Reservation reserve(Map<String, ?> request, RequestOptions options) {
        return client.withOptions(options).finops().reserve(request);
    }

    /**
     * Reserves an estimated cost for an action; see {@link #reserve(Map)}.
     *
     * @param action what it is for, e.g. {@code llm.invoke}
     * @param estimatedCost the estimated cost (in the currency of the tenant's budgets)
     * @param estimatedTokens the estimated tokens, or {@code null}
     * @param deploymentId the deployment, or {@code null}
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the reservation, {@code held}
     * @throws BudgetExceededException when it would pass an enforcing budget (nothing is held)
     * @throws EnterpriseAIException on any other error
     */
    public Reservation reserve(String action, BigDecimal estimatedCost, Long estimatedTokens, String deploymentId, RequestOptions options) {
        return client.withOptions(options).finops().reserve(action, estimatedCost, estimatedTokens, deploymentId);
    }

    /**
     * One reservation ({@code GET /v1/finops/reservations/{id}}); a hold past its expiry reads {@code expired}.
     *
     * @param id the reservation ({@code res_...})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the reservation
     * @throws NotFoundException when there is no such reservation, or it is another tenant's
     * @throws EnterpriseAIException on any other error
     */
    public Reservation getReservation(String id, RequestOptions options) {
        return client.withOptions(options).finops().getReservation(id);
    }

    /**
     * Commits a reservation: records one usage event (source {@code reservation}, usage type the action) and frees
     * the hold ({@code POST /v1/finops/reservations/{id}/commit}). Idempotent, so retried: a committed
     * reservation is answered as it is (the first commit's actual kept). An expired hold may still be committed.
     *
     * @param id the reservation ({@code res_...})
     * @param cost the actual cost (in the reservation's currency)
     * @param tokens the actual tokens, or {@code null}
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the reservation, {@code committed}
     * @throws ConflictException when it was released
     * @throws NotFoundException when there is no such reservation
     * @throws EnterpriseAIException on any other error
     */
    public Reservation commitReservation(String id, BigDecimal cost, Long tokens, RequestOptions options) {
        return client.withOptions(options).finops().commitReservation(id, cost, tokens);
    }

    /**
     * Releases a reservation: frees the hold ({@code POST /v1/finops/reservations/{id}/release}). Idempotent, so
     * retried: a released or expired one is answered as it is.
     *
     * @param id the reservation ({@code res_...})
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the reservation, {@code released} (or {@code expired})
     * @throws ConflictException when it was committed
     * @throws NotFoundException when there is no such reservation
     * @throws EnterpriseAIException on any other error
     */
    public Reservation releaseReservation(String id, RequestOptions options) {
        return client.withOptions(options).finops().releaseReservation(id);
    }

    /**
     * Reserves, runs the work, then commits what it returns; releases the hold when the work throws.
     *
     * <p>The work gets the granted reservation and returns the actual cost, or {@code null} to commit the
     * estimate. When it throws, the hold is released and the exception rethrown (a failed release is added to
     * it as suppressed). When the reservation is refused, the work does not run: the
     * {@link BudgetExceededException} is thrown.
     *
     * @param request the reservation, as for {@link #reserve(Map)}
     * @param work what the reservation is for
     * @param options per-request options (timeout, retries, idempotency key, traceparent, headers)
     * @return the reservation, {@code committed}
     * @throws BudgetExceededException when the reservation is refused (the work did not run)
     * @throws EnterpriseAIException when reserving or committing fails
     */
    public Reservation withReservation(Map<String, ?> request, Function<Reservation, Reservation.Actual> work, RequestOptions options) {
        return client.withOptions(options).finops().withReservation(request, work);
    }
}
