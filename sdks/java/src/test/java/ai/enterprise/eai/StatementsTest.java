package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.model.Allocation;
import ai.enterprise.eai.model.AllocationItem;
import ai.enterprise.eai.model.Money;
import ai.enterprise.eai.model.Statement;
import ai.enterprise.eai.model.StatementIssued;
import ai.enterprise.eai.model.StatementLine;
import ai.enterprise.eai.model.StatementList;
import ai.enterprise.eai.model.StatementSummary;
import ai.enterprise.eai.model.Tenant;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.Fixtures;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.YearMonth;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Statements ({@code finops().issueGpuStatements}, {@code gpuStatements}, {@code gpuStatement},
 * {@code gpuStatementCsv}) and the FOCUS export's version and granularity, against a real server of its own (the
 * month's statements hold only this class's data).
 *
 * <p>The data lies in the last hour of the previous month (over, well within the raw retention), under a flat
 * 10 USD per GPU-hour (no energy price): a shared deployment, one GPU for the hour, 10.00 USD; tenant A 500 tokens
 * in + 200 out, tenant B 300 in: A 10.00 x 700 / 1000 = 7.00 (0.7 of the GPU-hour), B 3.00. An idle deployment,
 * one GPU for the hour nobody used: 10.00 USD unallocated, the platform's statement (the nil uuid).
 */
class StatementsTest {

    private static final String NIL_UUID = "00000000-0000-0000-0000-000000000000";
    private static final String SHARED = "st-shared";
    private static final String IDLE = "st-idle";
    private static final String CSV_HEADER = "kind,deployment_id,policy_id,gpu_hours,energy_kwh,amount,currency";

    private static EaiServer server;
    private static EnterpriseAIClient admin;
    private static Instant hour;
    private static YearMonth month;
    private static Tenant a;
    private static Tenant b;
    private static String idemKey;
    private static StatementIssued first;

    @BeforeAll
    static void setUp() {
        server = EaiServer.start("statements", EaiServer.randomKey(), EaiServer.noRateLimits());
        admin = server.builder().maxRetries(0).build();
        YearMonth now = YearMonth.now(ZoneOffset.UTC);
        hour = now.atDay(1).atStartOfDay(ZoneOffset.UTC).toInstant().minus(Duration.ofHours(1));
        month = now.minusMonths(1);
        admin.finops().createAllocationPolicy(Map.of("name", "flat", "deployment_pattern", "st-*",
                "currency", "USD", "gpu_hourly_cost", 10, "effective_from", "2020-01-01"));
        List<Map<String, Object>> samples = new ArrayList<>(Fixtures.hourOfSamples("GPU-st-1", SHARED, hour, 400));
        samples.addAll(Fixtures.hourOfSamples("GPU-st-2", IDLE, hour, 400));
        assertEquals(480, admin.finops().gpuSamples(samples).accepted());
        a = admin.tenants().create("st-a-" + Fixtures.uniq(), "Statements A");
        b = admin.tenants().create("st-b-" + Fixtures.uniq(), "Statements B");
        Instant at = hour.plus(Duration.ofMinutes(10));
        List<Map<String, Object>> events = List.of(
                Fixtures.usageEvent(a.id(), SHARED, at, Map.of("tokens_in", 500, "tokens_out", 200)),
                Fixtures.usageEvent(b.id(), SHARED, at, Map.of("tokens_in", 300)));
        assertEquals(2, admin.usage().events(events).accepted());
        idemKey = "statements-" + Fixtures.uniq();
        first = admin.finops().issueGpuStatements(month, RequestOptions.builder().idempotencyKey(idemKey).build());
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

    private static String numberOf(String tenantId) {
        List<String> mine = first.issued().stream().filter(s -> s.tenantId().equals(tenantId))
                .map(StatementSummary::number).toList();
        assertEquals(1, mine.size(), first.toString());
        return mine.get(0);
    }

    private static List<String> numbers(List<StatementSummary> list) {
        return list.stream().map(StatementSummary::number).sorted().toList();
    }

    /** One amount in USD, compared as a number, and written with its 2 places. */
    private static void assertUsd(String want, List<Money> got, String what) {
        assertEquals(1, got.size(), what + ": " + got);
        assertEquals(0, new BigDecimal(want).compareTo(got.get(0).amount()), what + ": " + got);
        assertEquals(want, got.get(0).amount().toPlainString(), what);
        assertEquals("USD", got.get(0).currency(), what);
    }

    @Test
    void issueNumbersEachTenantWithCostAndTheUnallocatedCapacity() {
        assertTrue(first.alreadyIssued().isEmpty(), first.toString());
        Map<String, StatementSummary> byTenant = first.issued().stream()
                .collect(Collectors.toMap(StatementSummary::tenantId, s -> s));
        assertEquals(Set.of(a.id(), b.id(), NIL_UUID), byTenant.keySet());
        assertUsd("7.00", byTenant.get(a.id()).totals(), "A");
        assertUsd("3.00", byTenant.get(b.id()).totals(), "B");
        assertUsd("10.00", byTenant.get(NIL_UUID).totals(), "unallocated");
        assertEquals("Statements A", byTenant.get(a.id()).tenantName());
        assertEquals(List.of("ST-" + month + "-0001", "ST-" + month + "-0002", "ST-" + month + "-0003"),
                numbers(first.issued()));
        for (StatementSummary s : first.issued()) {
            assertEquals(month.toString(), s.period());
        }
    }

    @Test
    void issuedOnceTheSameKeyAnswersTheFirstAnswer() {
        StatementIssued retried = admin.finops().issueGpuStatements(month,
                RequestOptions.builder().idempotencyKey(idemKey).build());
        assertEquals(numbers(first.issued()), numbers(retried.issued()));
        StatementIssued again = admin.finops().issueGpuStatements(Map.of("period", month.toString()));
        assertTrue(again.issued().isEmpty(), again.toString());
        assertEquals(numbers(first.issued()), numbers(again.alreadyIssued()));
        StatementIssued one = admin.finops().issueGpuStatements(month, b.id());
        assertTrue(one.issued().isEmpty(), one.toString());
        assertEquals(List.of(numberOf(b.id())), numbers(one.alreadyIssued()));
        ValidationException e = assertThrows(ValidationException.class,
                () -> admin.finops().issueGpuStatements(YearMonth.now(ZoneOffset.UTC)));
        assertEquals(List.of("period"), e.fields());
    }

    @Test
    void listByNumberFilteredByMonthAndTenant() {
        StatementList all = admin.finops().gpuStatements();
        assertEquals(numbers(first.issued()), all.statements().stream().map(StatementSummary::number).toList());
        assertEquals(all.statements(), admin.finops().gpuStatements(month, null).statements());
        assertEquals(List.of(numberOf(a.id())), numbers(admin.finops().gpuStatements(null, a.id()).statements()));
        assertTrue(admin.finops().gpuStatements(YearMonth.of(2020, 1), null).statements().isEmpty());
        ValidationException e = assertThrows(ValidationException.class,
                () -> admin.finops().gpuStatements(Map.of("period", "2026-13")));
        assertEquals(List.of("period"), e.fields());
    }

    @Test
    void getTheLinesAndTotalsMatchTheMonthsAllocation() {
        Statement st = admin.finops().gpuStatement(numberOf(a.id()));
        assertEquals(a.id(), st.tenantId());
        assertEquals(month.toString(), st.period());
        assertEquals(hour.plus(Duration.ofHours(1)), st.to());
        assertFalse(st.issuedBy().isEmpty());
        assertEquals(1, st.lines().size(), st.lines().toString());
        StatementLine line = st.lines().get(0);
        assertEquals("charge", line.kind());
        assertEquals(SHARED, line.deploymentId());
        assertEquals(0, new BigDecimal("0.7").compareTo(line.gpuHours()), "A's 0.7 of the GPU-hour: " + line);
        assertUsd("7.00", List.of(line.amount()), "line");
        assertUsd("7.00", st.totals(), "totals");
        assertTrue(st.adjustments().isEmpty(), st.adjustments().toString());
        assertUsd("7.00", st.adjustedTotals(), "adjusted totals");

        Allocation alloc = admin.finops().gpuAllocation(st.from(), st.to());
        BigDecimal allocated = alloc.items().stream().filter(i -> a.id().equals(i.tenantId()))
                .map(AllocationItem::allocated).map(Money::amount).reduce(BigDecimal.ZERO, BigDecimal::add);
        assertEquals(0, allocated.compareTo(st.totals().get(0).amount()), "A's allocation " + allocated);

        Statement platform = admin.finops().gpuStatement(numberOf(NIL_UUID));
        assertUsd("10.00", platform.totals(), "unallocated");
        assertEquals(List.of(IDLE), platform.lines().stream().filter(l -> l.amount().amount().signum() != 0)
                .map(StatementLine::deploymentId).toList());
        assertThrows(NotFoundException.class, () -> admin.finops().gpuStatement("ST-" + month + "-9999"));
    }

    @Test
    void csvHasTheHeaderTheChargeTheTotalAndTheAdjustedTotal() {
        String csv = admin.finops().gpuStatementCsv(numberOf(b.id()));
        List<String> lines = Arrays.stream(csv.split("\r?\n")).filter(l -> !l.isEmpty()).toList();
        assertEquals(CSV_HEADER, lines.get(0));
        assertEquals(List.of("charge", "total", "adjusted_total"),
                lines.subList(1, lines.size()).stream().map(l -> l.split(",", -1)[0]).toList(), csv);
        for (String l : lines.subList(1, lines.size())) {
            String[] cells = l.split(",", -1);
            assertEquals(List.of("3.00", "USD"), List.of(cells[5], cells[6]), l);
        }
        assertEquals(SHARED, lines.get(1).split(",", -1)[1]);
    }

    @Test
    void aTenantsKeySeesItsOwnOnly() {
        String key = admin.auth().createApiKey("viewer", a.id(), "statements A").key();
        try (EnterpriseAIClient viewer = server.builder().apiKey(key).maxRetries(0).build()) {
            String mine = numberOf(a.id());
            assertEquals(List.of(mine), numbers(viewer.finops().gpuStatements().statements()));
            assertUsd("7.00", viewer.finops().gpuStatement(mine).totals(), "A's own");
            for (String other : List.of(numberOf(b.id()), numberOf(NIL_UUID))) {
                assertThrows(NotFoundException.class, () -> viewer.finops().gpuStatement(other));
                assertThrows(NotFoundException.class, () -> viewer.finops().gpuStatementCsv(other));
            }
            assertThrows(PermissionDeniedException.class, () -> viewer.finops().issueGpuStatements(month));
        }
    }

    /**
     * On a server of its own, a dedicated deployment of one tenant, one GPU for the last hour of the previous month
     * at a flat 10 USD per GPU-hour: issued at 10.00. A second GPU's hour arrives after: the allocation now is 2
     * GPU-hours, 20.00; the statement keeps its line and totals (10.00) and shows one adjustment of +1 GPU-hour and
     * +10.00 USD, adjusted totals 20.00.
     */
    @Test
    void dataArrivingAfterIssueIsAnAdjustment() {
        try (EaiServer own = EaiServer.start("adjustments", EaiServer.randomKey(), EaiServer.noRateLimits());
                EnterpriseAIClient c = own.builder().maxRetries(0).build()) {
            Tenant t = c.tenants().create("adj-" + Fixtures.uniq(), "Adjusted");
            c.finops().createAllocationPolicy(Map.of("name", "flat", "deployment_pattern", "adj-*",
                    "currency", "USD", "gpu_hourly_cost", 10, "effective_from", "2020-01-01"));
            List<Map<String, Object>> gpu1 = Fixtures.hourOfSamples("GPU-adj-1", "adj-dedicated", hour, 400);
            gpu1.forEach(x -> x.put("tenant_id", t.id()));
            c.finops().gpuSamples(gpu1);
            StatementIssued out = c.finops().issueGpuStatements(month);
            assertEquals(1, out.issued().size(), out.toString());
            assertUsd("10.00", out.issued().get(0).totals(), "issued");

            List<Map<String, Object>> gpu2 = Fixtures.hourOfSamples("GPU-adj-2", "adj-dedicated", hour, 400);
            gpu2.forEach(x -> x.put("tenant_id", t.id()));
            c.finops().gpuSamples(gpu2);
            Statement st = c.finops().gpuStatement(out.issued().get(0).number());
            assertEquals(1, st.lines().size(), st.lines().toString());
            assertEquals("charge", st.lines().get(0).kind());
            assertEquals(0, BigDecimal.ONE.compareTo(st.lines().get(0).gpuHours()));
            assertUsd("10.00", st.totals(), "totals");
            assertEquals(1, st.adjustments().size(), st.adjustments().toString());
            StatementLine adj = st.adjustments().get(0);
            assertEquals(List.of("adjustment", "adj-dedicated", st.lines().get(0).policyId()),
                    List.of(adj.kind(), adj.deploymentId(), adj.policyId()));
            assertEquals(0, BigDecimal.ONE.compareTo(adj.gpuHours()), adj.toString());
            assertUsd("10.00", List.of(adj.amount()), "adjustment");
            assertUsd("20.00", st.adjustedTotals(), "adjusted totals");
            String csv = c.finops().gpuStatementCsv(st.number());
            assertEquals(List.of("charge", "total", "adjustment", "adjusted_total"),
                    Arrays.stream(csv.split("\r?\n")).skip(1).filter(l -> !l.isEmpty())
                            .map(l -> l.split(",", -1)[0]).toList(), csv);
        }
    }

    private static List<String> header(byte[] csv) {
        String text = new String(csv, java.nio.charset.StandardCharsets.UTF_8);
        return List.of(text.substring(0, text.indexOf("\r\n")).split(","));
    }

    @Test
    void focusIs13ByDefaultWithAllocatedMethodIdAnd12Without() {
        Instant to = hour.plus(Duration.ofHours(1));
        List<String> dflt = header(admin.finops().gpuAllocationFocus(hour, to, null));
        List<String> v13 = header(admin.finops().gpuAllocationFocus(hour, to, null, "1.3", null));
        List<String> v12 = header(admin.finops().gpuAllocationFocus(hour, to, null, "1.2", null));
        assertEquals(dflt, v13);
        assertTrue(v13.contains("AllocatedMethodId"), v13.toString());
        assertFalse(v12.contains("AllocatedMethodId"), v12.toString());
        assertTrue(v12.contains("BilledCost"), v12.toString());
        ValidationException e = assertThrows(ValidationException.class,
                () -> admin.finops().gpuAllocationFocus(hour, to, null, "1.1", null));
        assertEquals(List.of("version"), e.fields());
    }

    @Test
    void focusHourlyRowsAreChargedForTheirHour() {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("from", hour.minus(Duration.ofHours(1)));
        p.put("to", hour.plus(Duration.ofHours(1)));
        p.put("granularity", "hour");
        List<Map<String, String>> rows = FocusTest.rows(admin.finops().gpuAllocationFocus(p));
        assertFalse(rows.isEmpty());
        // Only the one hour had samples: every row's charge period starts at it.
        String want = hour.truncatedTo(ChronoUnit.HOURS).toString().substring(0, 13);
        for (Map<String, String> r : rows) {
            assertEquals(want, r.get("ChargePeriodStart").replace(' ', 'T').substring(0, 13), r.toString());
        }
    }
}
