package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.model.Allocation;
import ai.enterprise.eai.model.AllocationDeployment;
import ai.enterprise.eai.model.AllocationItem;
import ai.enterprise.eai.model.Tenant;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import ai.enterprise.eai.testing.Fixtures;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
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
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The FOCUS 1.2 export against a real server: a shared deployment of its own at a flat 10 USD per GPU-hour for
 * two hours (20.00), tenant A 500 tokens in + 200 out per hour, tenant B 300 in (70/30): the CSV's columns, its
 * BilledCost summing exactly to the allocation of the same period, Parquet, and the typed validation error.
 */
@ExtendWith(EaiServers.class)
class FocusTest {

    private static EaiServer server;
    private static EnterpriseAIClient admin;
    private static String deployment;
    private static Tenant a;
    private static Tenant b;
    private static Instant from;
    private static Instant to;

    @BeforeAll
    static void setUp() {
        server = EaiServers.shared();
        admin = server.admin();
        deployment = "focus-" + Fixtures.uniq();
        from = Instant.now().truncatedTo(ChronoUnit.HOURS).minus(Duration.ofHours(30));
        to = from.plus(Duration.ofHours(2));
        admin.finops().createAllocationPolicy(Map.of("name", "flat", "deployment_pattern", deployment,
                "currency", "USD", "gpu_hourly_cost", 10, "effective_from", "2020-01-01"));
        List<Map<String, Object>> samples = new ArrayList<>(Fixtures.hourOfSamples("GPU-" + deployment, deployment, from, 400));
        samples.addAll(Fixtures.hourOfSamples("GPU-" + deployment, deployment, from.plus(Duration.ofHours(1)), 400));
        assertEquals(480, admin.finops().gpuSamples(samples).accepted());
        a = admin.tenants().create("focus-a-" + Fixtures.uniq(), "Focus A");
        b = admin.tenants().create("focus-b-" + Fixtures.uniq(), "Focus B");
        List<Map<String, Object>> events = new ArrayList<>();
        for (int h = 0; h < 2; h++) {
            Instant at = from.plus(Duration.ofHours(h)).plus(Duration.ofMinutes(10));
            events.add(Fixtures.usageEvent(a.id(), deployment, at, Map.of("tokens_in", 500, "tokens_out", 200)));
            events.add(Fixtures.usageEvent(b.id(), deployment, at, Map.of("tokens_in", 300)));
        }
        assertEquals(4, admin.usage().events(events).accepted());
    }

    @AfterAll
    static void tearDown() {
        admin.close();
    }

    /** An RFC 4180 file as rows of column -> value (the first line is the header). */
    static List<Map<String, String>> rows(byte[] csv) {
        List<List<String>> records = new ArrayList<>();
        List<String> record = new ArrayList<>();
        StringBuilder field = new StringBuilder();
        String text = new String(csv, StandardCharsets.UTF_8);
        boolean quoted = false;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (quoted) {
                if (c == '"' && i + 1 < text.length() && text.charAt(i + 1) == '"') {
                    field.append('"');
                    i++;
                } else if (c == '"') {
                    quoted = false;
                } else {
                    field.append(c);
                }
            } else if (c == '"') {
                quoted = true;
            } else if (c == ',') {
                record.add(field.toString());
                field.setLength(0);
            } else if (c == '\r' && i + 1 < text.length() && text.charAt(i + 1) == '\n') {
                record.add(field.toString());
                field.setLength(0);
                records.add(record);
                record = new ArrayList<>();
                i++;
            } else {
                field.append(c);
            }
        }
        assertTrue(record.isEmpty() && field.length() == 0, "the file ends with CRLF");
        assertFalse(records.isEmpty(), "a header line");
        List<String> header = records.get(0);
        List<Map<String, String>> out = new ArrayList<>();
        for (List<String> r : records.subList(1, records.size())) {
            assertEquals(header.size(), r.size(), "row " + r);
            Map<String, String> row = new LinkedHashMap<>();
            for (int i = 0; i < header.size(); i++) {
                row.put(header.get(i), r.get(i));
            }
            out.add(row);
        }
        return out;
    }

    static BigDecimal billed(List<Map<String, String>> rows) {
        return rows.stream().map(r -> new BigDecimal(r.get("BilledCost"))).reduce(BigDecimal.ZERO, BigDecimal::add);
    }

    @Test
    void theCsvSumsExactlyToTheAllocation() {
        Allocation allocation = admin.finops().gpuAllocation(from, to);
        byte[] csv = admin.finops().gpuAllocationFocus(from, to, null);
        String headerLine = new String(csv, StandardCharsets.UTF_8).split("\r\n", 2)[0];
        List<String> columns = Arrays.asList(headerLine.split(","));
        for (String col : List.of("BilledCost", "ChargePeriodStart", "SubAccountId", "x_AllocationPolicyId")) {
            assertTrue(columns.contains(col), headerLine);
        }
        List<Map<String, String>> rows = rows(csv);
        List<Map<String, String>> allocated = rows.stream().filter(r -> r.get("x_Unallocated").equals("false")).toList();
        BigDecimal wantAllocated = allocation.deployments().stream().map(AllocationDeployment::allocated)
                .reduce(BigDecimal.ZERO, BigDecimal::add);
        BigDecimal wantCost = allocation.deployments().stream().map(AllocationDeployment::cost)
                .reduce(BigDecimal.ZERO, BigDecimal::add);
        assertTrue(wantAllocated.signum() > 0);
        assertEquals(0, billed(allocated).compareTo(wantAllocated), billed(allocated) + " vs " + wantAllocated);
        assertEquals(0, billed(rows).compareTo(wantCost), billed(rows) + " vs " + wantCost);

        // The test's deployment: 20.00 split 14.00 / 6.00, each item's days summing to it.
        List<Map<String, String>> mine = rows.stream().filter(r -> r.get("ResourceId").equals(deployment)).toList();
        assertEquals(0, billed(mine).compareTo(new BigDecimal("20.00")), "" + billed(mine));
        for (AllocationItem item : allocation.items()) {
            if (!item.deploymentId().equals(deployment)) {
                continue;
            }
            List<Map<String, String>> its = mine.stream().filter(r -> r.get("SubAccountId").equals(item.tenantId())
                    && r.get("x_AllocationPolicyId").equals(item.policyId())).toList();
            assertFalse(its.isEmpty(), "rows of " + item);
            assertEquals(0, billed(its).compareTo(item.allocated().amount()), item.toString());
            for (Map<String, String> r : its) {
                assertEquals("USD", r.get("BillingCurrency"));
                assertEquals(r.get("BilledCost"), r.get("EffectiveCost"));
            }
        }
        assertEquals(Set.of(a.id(), b.id()), mine.stream().map(r -> r.get("SubAccountId")).collect(Collectors.toSet()));

        // A tenant's view: its rows only, summing to its allocation (14.00).
        EnterpriseAIClient asA = admin.withTenant(a.id());
        Allocation scoped = asA.finops().gpuAllocation(from, to);
        List<Map<String, String>> scopedRows = rows(asA.finops().gpuAllocationFocus(from, to, "csv"));
        BigDecimal wantA = scoped.items().stream().map(i -> i.allocated().amount()).reduce(BigDecimal.ZERO, BigDecimal::add);
        assertEquals(0, wantA.compareTo(new BigDecimal("14.00")), "" + wantA);
        assertEquals(0, billed(scopedRows).compareTo(wantA));
        assertEquals(Set.of(a.id()), scopedRows.stream().map(r -> r.get("SubAccountId")).collect(Collectors.toSet()));
    }

    @Test
    void parquetIsAParquetFile(@TempDir Path dir) throws Exception {
        byte[] parquet = admin.finops().gpuAllocationFocus(from, to, "parquet");
        assertTrue(parquet.length > 8);
        byte[] magic = "PAR1".getBytes(StandardCharsets.US_ASCII);
        assertArrayEquals(magic, Arrays.copyOfRange(parquet, 0, 4));
        assertArrayEquals(magic, Arrays.copyOfRange(parquet, parquet.length - 4, parquet.length));

        Map<String, Object> params = new LinkedHashMap<>();
        params.put("from", from);
        params.put("to", to);
        params.put("format", "parquet");
        Path file = admin.finops().gpuAllocationFocusToFile(dir.resolve("focus.parquet"), params);
        assertArrayEquals(magic, Arrays.copyOfRange(Files.readAllBytes(file), 0, 4));
    }

    @Test
    void aBadFormatIsAValidationErrorNamingFormat(@TempDir Path dir) {
        ValidationException e = assertThrows(ValidationException.class,
                () -> admin.finops().gpuAllocationFocus(from, to, "xml"));
        assertEquals(422, e.getStatus());
        assertEquals(List.of("format"), e.fields());
        Path bad = dir.resolve("bad.csv");
        assertThrows(ValidationException.class, () -> admin.finops().gpuAllocationFocusToFile(bad,
                Map.of("from", from, "to", to, "format", "xml")));
        assertFalse(Files.exists(bad), "nothing written on an error");
    }
}
