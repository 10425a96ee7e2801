package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.model.AllocationPolicy;
import ai.enterprise.eai.model.AllocationPolicyChange;
import ai.enterprise.eai.model.AllocationPolicyCreated;
import ai.enterprise.eai.model.AllocationSeries;
import ai.enterprise.eai.model.SeriesDeployment;
import ai.enterprise.eai.model.SeriesStep;
import ai.enterprise.eai.model.SeriesTotal;
import ai.enterprise.eai.model.Tenant;
import ai.enterprise.eai.model.TokenCost;
import ai.enterprise.eai.model.TokenCostList;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import ai.enterprise.eai.testing.Fixtures;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Cost per token and cost over time against a real server: the case of crates/api/tests/http/token_costs.rs, a
 * shared deployment at a flat 10 USD per GPU-hour for two hours (20.00), tenant A 500 tokens in + 200 out per
 * hour, tenant B 300 in per hour (70/30 in tokens). Each test has a deployment and two tenants of its own.
 */
@ExtendWith(EaiServers.class)
class TokenCostsTest {

    private static final String LLAMA = "meta-llama/Llama-3.1-8B-Instruct";
    private static EaiServer server;
    private static EnterpriseAIClient admin;

    @BeforeAll
    static void setUp() {
        server = EaiServers.shared();
        admin = server.admin();
    }

    @AfterAll
    static void tearDown() {
        admin.close();
    }

    private record Shared(String deployment, Tenant a, Tenant b, Instant from, Instant to) {}

    private static Shared sharedOfTwoTenants(String name, int hoursAgo) {
        String deployment = name + "-" + Fixtures.uniq();
        Instant from = Instant.now().truncatedTo(ChronoUnit.HOURS).minus(Duration.ofHours(hoursAgo));
        Instant to = from.plus(Duration.ofHours(2));
        AllocationPolicyCreated p = admin.finops().createAllocationPolicy(Map.of("name", "flat",
                "deployment_pattern", deployment, "currency", "USD", "gpu_hourly_cost", 10,
                "effective_from", "2020-01-01"));
        AllocationPolicy stored = admin.finops().listAllocationPolicies().stream()
                .filter(x -> x.id().equals(p.id())).findFirst().orElseThrow();
        assertEquals(0, new BigDecimal("2.5").compareTo(stored.outputTokenWeight()), "the default weight");
        List<Map<String, Object>> samples = new ArrayList<>(Fixtures.hourOfSamples("GPU-" + deployment, deployment, from, 400));
        samples.addAll(Fixtures.hourOfSamples("GPU-" + deployment, deployment, from.plus(Duration.ofHours(1)), 400));
        assertEquals(480, admin.finops().gpuSamples(samples).accepted());
        Tenant a = admin.tenants().create(name + "-a-" + Fixtures.uniq(), "Tokens A");
        Tenant b = admin.tenants().create(name + "-b-" + Fixtures.uniq(), "Tokens B");
        List<Map<String, Object>> events = new ArrayList<>();
        for (int h = 0; h < 2; h++) {
            Instant at = from.plus(Duration.ofHours(h)).plus(Duration.ofMinutes(10));
            events.add(Fixtures.usageEvent(a.id(), deployment, at, Map.of("tokens_in", 500, "tokens_out", 200)));
            events.add(Fixtures.usageEvent(b.id(), deployment, at, Map.of("tokens_in", 300)));
        }
        assertEquals(4, admin.usage().events(events).accepted());
        return new Shared(deployment, a, b, from, to);
    }

    private static void assertAmount(String expected, BigDecimal actual) {
        assertEquals(expected, actual == null ? null : actual.toPlainString());
    }

    @Test
    void tokenCostsSplitTheAllocationByThePolicysWeight() {
        Shared s = sharedOfTwoTenants("tok-weight", 5);

        // 20.00 over 1,600 in and 400 out, no measured time: an output token weighs 2.5 input tokens,
        // input 20 x 1600 / 2600 = 12.307.. -> 12.31, output the rest.
        TokenCostList costs = admin.finops().gpuTokenCosts(s.from(), s.to(), null, null);
        assertEquals("allocation", costs.basis());
        assertEquals("deployment", costs.aggregate());
        assertEquals(s.from(), costs.from());
        TokenCost d = costs.deployment(s.deployment()).orElseThrow(() -> new AssertionError(costs));
        assertAmount("20.00", d.cost());
        assertEquals("USD", d.currency());
        assertEquals("weight", d.allocationMethod());
        assertEquals("usage_events", d.tokenSource());
        assertEquals(List.of(1600L, 400L, 2000L),
                List.of(d.tokensIn().longValueExact(), d.tokensOut().longValueExact(), d.tokens().longValueExact()));
        assertAmount("2.5", d.outputTokenWeight());
        assertAmount("12.31", d.inputCost());
        assertAmount("7.69", d.outputCost());
        assertEquals(d.cost(), d.inputCost().add(d.outputCost()));
        assertAmount("10000.0000", d.costPerMtok());
        assertAmount("7693.7500", d.inputCostPerMtok());
        assertAmount("19225.0000", d.outputCostPerMtok());
        assertNull(d.tenantId());

        // Per tenant: each one's share over its own tokens, with its deployments.
        TokenCostList byTenant = admin.finops().gpuTokenCosts(s.from(), s.to(), "allocation", "tenant");
        TokenCost a = byTenant.tenant(s.a().id()).orElseThrow(() -> new AssertionError(byTenant));
        TokenCost b = byTenant.tenant(s.b().id()).orElseThrow(() -> new AssertionError(byTenant));
        assertAmount("14.00", a.cost());
        assertAmount("6.00", b.cost());
        assertAmount("7.00", a.inputCost());
        assertAmount("7.00", a.outputCost());
        assertAmount("6.00", b.inputCost());
        assertAmount("0.00", b.outputCost());
        assertAmount("10000.0000", a.costPerMtok());
        assertAmount("10000.0000", b.costPerMtok());
        assertNull(b.outputCostPerMtok(), "no output token: no rate");
        assertEquals(1, a.deployments().size());
        assertEquals(s.deployment(), a.deployments().get(0).deploymentId());
        assertAmount("14.00", a.deployments().get(0).cost());

        // The usage basis keeps the busy GPU-seconds only: 82 % of 20.00.
        Map<String, Object> usage = new LinkedHashMap<>();
        usage.put("from", s.from());
        usage.put("to", s.to());
        usage.put("basis", "usage");
        TokenCostList busy = admin.finops().gpuTokenCosts(usage);
        assertEquals("usage", busy.basis());
        assertAmount("16.40", busy.deployment(s.deployment()).orElseThrow().cost());

        // A tenant's view: its share only.
        TokenCostList mine = admin.withTenant(s.b().id()).finops().gpuTokenCosts(s.from(), s.to(), null, null);
        assertEquals(1, mine.items().size());
        assertAmount("6.00", mine.items().get(0).cost());

        ValidationException e = assertThrows(ValidationException.class,
                () -> admin.finops().gpuTokenCosts(s.from(), s.to(), "list", "pod"));
        assertEquals(List.of("basis", "aggregate"), e.fields());
    }

    @Test
    void theStepsOfASeriesSumToThePeriod() {
        Shared s = sharedOfTwoTenants("tok-series", 8);
        AllocationSeries series = admin.finops().gpuAllocationSeries(s.from(), s.to(), "hour");
        assertEquals("hour", series.step());
        assertEquals(2, series.steps().size());
        assertEquals(s.from(), series.steps().get(0).from());
        assertEquals(s.to(), series.steps().get(1).to());
        BigDecimal sum = BigDecimal.ZERO;
        for (SeriesStep step : series.steps()) {
            SeriesDeployment d = step.deployment(s.deployment()).orElseThrow(() -> new AssertionError(step));
            assertAmount("10.00", d.cost());
            assertEquals("USD", d.currency());
            assertEquals(1000L, d.tokens().longValueExact());
            assertAmount("10000.0000", d.costPerMtok()); // 10.00 over 1,000 tokens, per million
            sum = sum.add(d.cost());
        }
        assertAmount("20.00", sum);
        // Every column of the steps sums to the period's totals.
        SeriesTotal total = series.total("USD").orElseThrow();
        for (Function<SeriesTotal, BigDecimal> col : List.<Function<SeriesTotal, BigDecimal>>of(
                SeriesTotal::cost, SeriesTotal::allocated, SeriesTotal::unallocated)) {
            BigDecimal steps = series.steps().stream().map(st -> st.total("USD").map(col).orElse(BigDecimal.ZERO))
                    .reduce(BigDecimal.ZERO, BigDecimal::add);
            assertEquals(0, steps.compareTo(col.apply(total)), steps + " vs " + col.apply(total));
        }

        // A tenant's view: A's share in each step (7.00), its own tokens; the default step is a day.
        EnterpriseAIClient asA = admin.withTenant(s.a().id());
        AllocationSeries mine = asA.finops().gpuAllocationSeries(s.from(), s.to(), "hour");
        assertEquals(List.of("7.00", "7.00"), mine.steps().stream()
                .map(st -> st.total("USD").orElseThrow().cost().toPlainString()).toList());
        assertAmount("14.00", mine.total("USD").orElseThrow().cost());
        assertEquals(List.of("10000.0000", "10000.0000"), mine.steps().stream()
                .map(st -> st.deployment(s.deployment()).orElseThrow().costPerMtok().toPlainString()).toList());
        assertEquals(1400L, mine.tokens().longValueExact());
        AllocationSeries daily = asA.finops().gpuAllocationSeries(s.from(), s.to(), null);
        assertEquals("day", daily.step());
        assertAmount("14.00", daily.steps().stream().map(st -> st.total("USD").orElseThrow().cost())
                .reduce(BigDecimal.ZERO, BigDecimal::add));

        ValidationException e = assertThrows(ValidationException.class,
                () -> admin.finops().gpuAllocationSeries(s.from(), s.to(), "minute"));
        assertEquals(List.of("step"), e.fields());
    }

    @Test
    void aSamplerPostsVllmCountersWithoutATenant() {
        Shared s = sharedOfTwoTenants("tok-vllm", 11);
        String key = admin.auth().createApiKey("sampler", null, "vllm sampler").key();
        try (EnterpriseAIClient sampler = server.builder().apiKey(key).build()) {
            Map<String, Object> counters = new LinkedHashMap<>();
            counters.put("usage_type", "llm_tokens");
            counters.put("source", "vllm");
            counters.put("occurred_at", s.from().plus(Duration.ofMinutes(30)));
            counters.put("deployment_id", s.deployment());
            counters.put("model", Map.of("provider", "vllm", "name", LLAMA));
            counters.put("units", Map.of("tokens_in", 10000, "tokens_out", 2000, "cached_tokens_in", 4000,
                    "prefill_seconds", 30, "decode_seconds", 90, "requests", 40));
            assertEquals(1, sampler.usage().events(List.of(counters)).accepted());

            // They measure the split (input 20 x 30 / 120 = 5.00) and never weigh the tenants (still 70/30).
            TokenCost d = admin.finops().gpuTokenCosts(s.from(), s.to(), null, null).deployment(s.deployment())
                    .orElseThrow();
            assertEquals(List.of("vllm", "compute_time", LLAMA), List.of(d.tokenSource(), d.allocationMethod(), d.model()));
            assertEquals(12000L, d.tokens().longValueExact());
            assertEquals(6000L, d.effectiveTokensIn().longValueExact());
            assertAmount("5.00", d.inputCost());
            assertAmount("15.00", d.outputCost());
            assertAmount("1666.6667", d.costPerMtok());
            assertAmount("9", d.outputTokenWeight());
            TokenCost a = admin.finops().gpuTokenCosts(s.from(), s.to(), null, "tenant").tenant(s.a().id())
                    .orElseThrow();
            assertAmount("14.00", a.cost());
            assertAmount("2.00", a.inputCost());
            assertAmount("12.00", a.outputCost());

            // A sampler posts nothing that names a tenant.
            assertThrows(PermissionDeniedException.class, () -> sampler.usage().events(List.of(
                    Fixtures.usageEvent(s.a().id(), s.deployment(), s.from(), Map.of("tokens_in", 1)))));
        }
    }

    @Test
    void outputTokenWeightIsAPolicyField() {
        String pattern = "otw-" + Fixtures.uniq() + "-*";
        AllocationPolicyCreated created = admin.finops().createAllocationPolicy(Map.of("name", "weighted",
                "deployment_pattern", pattern, "gpu_hourly_cost", "1", "output_token_weight", new BigDecimal("4.25")));
        AllocationPolicyChange change = admin.finops().supersedeAllocationPolicy(created.id(),
                Map.of("output_token_weight", "3"));
        assertAmount("4.25", change.closed().outputTokenWeight());
        assertAmount("3", change.opened().outputTokenWeight());
        ValidationException e = assertThrows(ValidationException.class, () -> admin.finops().createAllocationPolicy(
                Map.of("name", "too light", "deployment_pattern", pattern, "gpu_hourly_cost", "1",
                        "output_token_weight", "0.05")));
        assertEquals(List.of("output_token_weight"), e.fields());
        assertTrue(e.getMessage().contains("output_token_weight"), e.getMessage());
    }
}
