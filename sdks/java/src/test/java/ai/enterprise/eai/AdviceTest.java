package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.model.Anomaly;
import ai.enterprise.eai.model.AnomalyList;
import ai.enterprise.eai.model.BudgetForecast;
import ai.enterprise.eai.model.Forecast;
import ai.enterprise.eai.model.ForecastLine;
import ai.enterprise.eai.model.ForecastTotal;
import ai.enterprise.eai.model.IdleGpu;
import ai.enterprise.eai.model.Money;
import ai.enterprise.eai.model.Recommendation;
import ai.enterprise.eai.model.RecommendationEvidence;
import ai.enterprise.eai.model.RecommendationList;
import ai.enterprise.eai.model.RecommendationThresholds;
import ai.enterprise.eai.model.Tenant;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.Fixtures;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.YearMonth;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * SPEC §13's advice against a real server of its own: recommendations ({@code finops().gpuRecommendations}),
 * the month's forecast ({@code finops().gpuForecast}) and the anomalies ({@code finops().gpuAnomalies}).
 *
 * <p>The recommendations' case: a deployment on one GPU for two whole hours, 1 % busy, at a flat 10 USD per
 * GPU-hour. Each hour is idle (0.01 &lt;= 0.05) and the GPU was idle in 2 of the 2 hours it ran (1 &gt;= 0.5):
 * one {@code idle_gpus} recommendation, the GPU could go.
 */
class AdviceTest {

    private static final String DEPLOYMENT = "idle-llm";
    private static final String GPU = "GPU-idle-0";

    private static EaiServer server;
    private static EnterpriseAIClient admin;
    private static Instant from;
    private static Instant to;

    @BeforeAll
    static void setUp() {
        server = EaiServer.start("advice", EaiServer.randomKey(), EaiServer.noRateLimits());
        admin = server.builder().maxRetries(0).build();
        from = Instant.now().truncatedTo(ChronoUnit.HOURS).minus(Duration.ofHours(4));
        to = from.plus(Duration.ofHours(2));
        Map<String, Object> policy = new LinkedHashMap<>();
        policy.put("name", "flat");
        policy.put("deployment_pattern", DEPLOYMENT);
        policy.put("currency", "USD");
        policy.put("gpu_hourly_cost", new BigDecimal("10"));
        policy.put("effective_from", "2020-01-01");
        admin.finops().createAllocationPolicy(policy);
        List<Map<String, Object>> samples = new ArrayList<>(Fixtures.hourOfSamples(GPU, DEPLOYMENT, from, 400));
        samples.addAll(Fixtures.hourOfSamples(GPU, DEPLOYMENT, from.plus(Duration.ofHours(1)), 400));
        samples.forEach(s -> s.put("utilization", new BigDecimal("0.01")));
        assertEquals(480, admin.finops().gpuSamples(samples).accepted());
    }

    @AfterAll
    static void tearDown() {
        if (admin != null) {
            admin.close();
        }
        if (server != null) {
            server.close();
        }
    }

    private static void assertSameNumber(String want, BigDecimal got, String what) {
        assertNotNull(got, what);
        assertEquals(0, new BigDecimal(want).compareTo(got), what + ": " + got);
    }

    @Test
    void theIdleGpuIsFoundAndItsIdleHoursPriced() {
        RecommendationList recs = admin.finops().gpuRecommendations(from, to, new BigDecimal("0.05"),
                new BigDecimal("0.5"), new BigDecimal("0.3"));
        assertEquals(from, recs.from());
        assertEquals(to, recs.to());
        RecommendationThresholds t = recs.thresholds();
        assertSameNumber("0.05", t.idleUtilization(), "idle_utilization");
        assertSameNumber("0.5", t.idleShare(), "idle_share");
        assertSameNumber("0.3", t.lowUtilization(), "low_utilization");
        List<Recommendation> mine = recs.items().stream().filter(r -> r.deploymentId().equals(DEPLOYMENT)).toList();
        assertEquals(1, mine.size(), recs.toString());
        Recommendation r = mine.get(0);
        assertEquals(List.of("idle_gpus", "remove_gpus", "H100-80GB"), List.of(r.kind(), r.action(), r.model()));
        assertEquals(1, r.currentGpus());
        assertEquals(1, r.gpus());
        assertNull(r.migProfile());
        assertNull(r.gpuFraction());
        assertTrue(!r.message().isEmpty());
        // 2 GPU-hours 1 % busy: 0.02 busy GPU-hours; the busiest hour 0.01 GPU busy; 61.2 GB of memory throughout.
        RecommendationEvidence e = r.evidence();
        assertEquals(2, e.hours());
        assertSameNumber("2", e.gpuHours(), "gpu_hours");
        assertSameNumber("0.02", e.busyGpuHours(), "busy_gpu_hours");
        assertSameNumber("0.01", e.utilization(), "utilization");
        assertSameNumber("0.01", e.utilizationP50(), "utilization_p50");
        assertSameNumber("0.01", e.utilizationP95(), "utilization_p95");
        assertSameNumber("0.01", e.peakBusyGpus(), "peak_busy_gpus");
        assertSameNumber("61.2", e.memoryPeakGb(), "memory_peak_gb");
        assertNull(e.profileMemoryGb());
        assertSameNumber("0", e.unpricedGpuHours(), "unpriced_gpu_hours");
        assertEquals(List.of(new IdleGpu(GPU, 2, 2)), e.idleGpus());
        // Its 2 idle hours at 10 USD: 20.00 saved over the period; the period is 2 hours, not a calendar month, so
        // a month's is 20.00 x (30 x 24 h) / 2 h = 7200.00.
        assertEquals(new Money(new BigDecimal("20.00"), "USD"), r.savings());
        assertEquals(new Money(new BigDecimal("7200.00"), "USD"), r.monthlySavings());
        assertEquals("USD", r.cost().currency());
        // Largest monthly savings first (compared within a currency; the unpriced have none).
        Map<String, BigDecimal> last = new LinkedHashMap<>();
        for (Recommendation x : recs.items()) {
            Money m = x.monthlySavings();
            if (m != null) {
                BigDecimal before = last.put(m.currency(), m.amount());
                assertTrue(before == null || m.amount().compareTo(before) <= 0, recs.items().toString());
            }
        }
    }

    @Test
    void aTenantsViewHasNoneOfASharedDeployments() {
        Tenant tenant = admin.tenants().create("rec-" + Fixtures.uniq(), "Recommendations");
        RecommendationList scoped = admin.withTenant(tenant.id()).finops()
                .gpuRecommendations(Map.of("from", from, "to", to));
        assertEquals(List.of(),
                scoped.items().stream().filter(r -> r.deploymentId().equals(DEPLOYMENT)).toList());
    }

    @Test
    void aThresholdOutOfRangeIsAValidationErrorNamingIt() {
        ValidationException e = assertThrows(ValidationException.class,
                () -> admin.finops().gpuRecommendations(from, to, new BigDecimal("1.5"), null, null));
        assertEquals(422, e.getStatus());
        assertEquals(List.of("idle_utilization"), e.fields());
        ValidationException low = assertThrows(ValidationException.class, () -> admin.finops()
                .gpuRecommendations(Map.of("from", from, "to", to, "low_utilization", "-0.1")));
        assertEquals(List.of("low_utilization"), low.fields());
    }

    @Test
    void thisMonthsForecastCountsSpendToAMidnightAndItsLinesSumToTheTenantsTotals() {
        Instant now = Instant.now();
        YearMonth month = YearMonth.now(ZoneOffset.UTC);
        Instant first = month.atDay(1).atStartOfDay().toInstant(ZoneOffset.UTC);
        Instant next = month.plusMonths(1).atDay(1).atStartOfDay().toInstant(ZoneOffset.UTC);
        Forecast f = admin.finops().gpuForecast(month);
        assertEquals(month.toString(), f.period());
        assertEquals(List.of(first, next, first.minus(Duration.ofDays(28))), List.of(f.from(), f.to(), f.historyFrom()));
        assertEquals(f.asOf(), f.asOf().truncatedTo(ChronoUnit.DAYS), "a midnight UTC");
        assertTrue(!f.asOf().isBefore(first) && !f.asOf().isAfter(now), f.asOf().toString());
        assertEquals(Duration.between(f.asOf(), next).toDays(), f.daysLeft());
        for (ForecastLine l : f.lines()) {
            assertTrue(l.spent().amount().compareTo(l.expected().amount()) <= 0, l.toString());
            assertTrue(l.spent().amount().compareTo(l.low().amount()) <= 0, l.toString());
            assertTrue(l.low().amount().compareTo(l.high().amount()) <= 0, l.toString());
        }
        List<Function<ForecastLine, Money>> lineParts = List.of(ForecastLine::spent, ForecastLine::expected,
                ForecastLine::low, ForecastLine::high);
        List<Function<ForecastTotal, Money>> totalParts = List.of(ForecastTotal::spent, ForecastTotal::expected,
                ForecastTotal::low, ForecastTotal::high);
        for (ForecastTotal total : f.tenants()) {
            for (int k = 0; k < 4; k++) {
                Function<ForecastLine, Money> part = lineParts.get(k);
                BigDecimal sum = f.lines().stream()
                        .filter(l -> Objects.equals(l.tenantId(), total.tenantId())
                                && l.spent().currency().equals(total.spent().currency()))
                        .map(l -> part.apply(l).amount()).reduce(BigDecimal.ZERO, BigDecimal::add);
                assertEquals(0, sum.compareTo(totalParts.get(k).apply(total).amount()), total.toString());
            }
        }
        for (BudgetForecast b : f.budgets()) {
            assertTrue(b.budgetId().startsWith("bud_"), b.budgetId());
            for (LocalDate day : Arrays.asList(b.exhaustedOn(), b.exhaustedOnHigh())) {
                assertTrue(day == null || YearMonth.from(day).equals(month), b.toString());
            }
        }
        // The period as a string names the same month.
        Forecast same = admin.finops().gpuForecast(Map.of("period", month.toString()));
        assertEquals(List.of(f.period(), f.from(), f.to()), List.of(same.period(), same.from(), same.to()));
    }

    @Test
    void aMonthOverHasItsFiguresAndABandEqualToThem() {
        YearMonth last = YearMonth.now(ZoneOffset.UTC).minusMonths(1);
        Instant first = last.atDay(1).atStartOfDay().toInstant(ZoneOffset.UTC);
        Instant next = last.plusMonths(1).atDay(1).atStartOfDay().toInstant(ZoneOffset.UTC);
        Forecast past = admin.finops().gpuForecast(last);
        assertEquals(List.of(first, next, next), List.of(past.from(), past.to(), past.asOf()));
        assertEquals(0, past.daysLeft());
        for (ForecastLine l : past.lines()) {
            assertEquals(List.of(l.spent(), l.spent(), l.spent()), List.of(l.expected(), l.low(), l.high()));
        }
        for (ForecastTotal t : past.tenants()) {
            assertEquals(List.of(t.spent(), t.spent(), t.spent()), List.of(t.expected(), t.low(), t.high()));
        }
    }

    @Test
    void anotherPeriodIsAValidationErrorNamingPeriod() {
        ValidationException e = assertThrows(ValidationException.class,
                () -> admin.finops().gpuForecast(Map.of("period", "2026-13")));
        assertEquals(List.of("period"), e.fields());
    }

    @Test
    void aWeeksAnomaliesNewestFirstEachWellFormed() {
        Instant end = Instant.now().truncatedTo(ChronoUnit.HOURS).plus(Duration.ofHours(1));
        Instant start = end.minus(Duration.ofDays(7));
        AnomalyList list = admin.finops().gpuAnomalies(start, end);
        assertEquals(List.of(start, end), List.of(list.from(), list.to()));
        Instant previous = null;
        for (Anomaly a : list.items()) {
            assertTrue(previous == null || !a.hour().isAfter(previous), "newest first");
            previous = a.hour();
            assertTrue(a.id().startsWith("anm_") && !a.hour().isBefore(start) && a.hour().isBefore(end), a.toString());
            assertTrue(List.of("cost", "gpu_seconds").contains(a.metric()), a.toString());
            assertTrue(List.of("above", "below").contains(a.direction()), a.toString());
            assertEquals(a.metric().equals("cost"), a.currency() != null, a.toString());
            assertTrue(a.baselineHours() >= 24 && !a.message().isEmpty(), a.toString());
            if (a.deviationMads() == null) {
                assertEquals(0, BigDecimal.ZERO.compareTo(a.baselineMad()), a.toString());
            }
        }
        ValidationException e = assertThrows(ValidationException.class,
                () -> admin.finops().gpuAnomalies(end, start));
        assertEquals(List.of("to"), e.fields());
    }

    @Test
    void aMonthIsSentAsYyyyMm() {
        assertEquals("2026-11", Json.formatParam("period", YearMonth.of(2026, 11)));
        assertEquals("?period=2027-02", Transport.query(Map.of("period", YearMonth.of(2027, 2))));
    }
}
