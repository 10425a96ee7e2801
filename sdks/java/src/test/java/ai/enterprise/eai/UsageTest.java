package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.model.Allocation;
import ai.enterprise.eai.model.AllocationDeployment;
import ai.enterprise.eai.model.AllocationExplanation;
import ai.enterprise.eai.model.ApiKeyCreated;
import ai.enterprise.eai.model.GpuSample;
import ai.enterprise.eai.model.GpuUsageBreakdown;
import ai.enterprise.eai.model.GpuUsageRow;
import ai.enterprise.eai.model.Money;
import ai.enterprise.eai.model.Tenant;
import ai.enterprise.eai.model.UsageDimension;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import ai.enterprise.eai.testing.Fixtures;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * GPU time and cost per pod, node, GPU... ({@code finops().gpuUsage}) against a real server: the worked example's
 * pricing on a shared deployment with two GPUs in two pods (one for half the hour) and a tenant's dedicated
 * deployment. The rows sum to the allocation's deployment cost to the cent; a filter keeps the cents; the
 * reader's scope; a bad query is a {@link ValidationException}. Each row's share of its GPU and how it was
 * obtained, on a GPU shared by two pods.
 */
@ExtendWith(EaiServers.class)
class UsageTest {

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

    private static BigDecimal costOf(Allocation a, String deployment) {
        AllocationDeployment d = Fixtures.deployment(a, deployment).orElseThrow();
        assertEquals("EUR", d.currency());
        return d.cost();
    }

    private static BigDecimal sum(List<GpuUsageRow> rows, java.util.function.Function<GpuUsageRow, BigDecimal> f) {
        return rows.stream().map(f).reduce(BigDecimal.ZERO, BigDecimal::add);
    }

    @Test
    void usageIsBrokenDownByPodNodeAndGpuToTheCentOfTheAllocationAndScopedToItsReader() {
        String u = Fixtures.uniq();
        String shared = "usage-" + u + "-shared";
        String dedicated = "usage-" + u + "-ded";
        String podA = shared + "-a";
        String podB = shared + "-b";
        String nodeB = "gpu-node-" + u;
        Instant from = Instant.now().truncatedTo(ChronoUnit.HOURS).minus(Duration.ofHours(11));
        Instant to = from.plus(Duration.ofHours(1));
        admin.finops().createAllocationPolicy(Fixtures.workedExamplePolicy("usage-" + u, "usage-" + u + "-*"));
        Tenant t = admin.tenants().create("usage-t-" + u, "Usage T");

        // GPU A in pod a the whole hour; GPU B in pod b, on another node, the first half only.
        List<Map<String, Object>> samples = new ArrayList<>();
        for (Map<String, Object> s : Fixtures.hourOfSamples("GPU-A-" + u, shared, from, 400)) {
            s.put("pod", podA);
            samples.add(s);
        }
        List<Map<String, Object>> b = Fixtures.hourOfSamples("GPU-B-" + u, shared, from, 400);
        for (Map<String, Object> s : b.subList(0, 120)) {
            s.put("pod", podB);
            s.put("node", nodeB);
            samples.add(s);
        }
        // The tenant's dedicated deployment.
        for (Map<String, Object> s : Fixtures.hourOfSamples("GPU-C-" + u, dedicated, from, 300)) {
            s.put("tenant_id", t.id());
            samples.add(s);
        }
        assertEquals(600, admin.finops().gpuSamples(samples).accepted());
        Allocation alloc = admin.finops().gpuAllocation(from, to);
        BigDecimal sharedCost = costOf(alloc, shared);
        BigDecimal dedicatedCost = costOf(alloc, dedicated);

        // By pod, within the shared deployment: 3600 and 1800 GPU-seconds, the cost to the cent.
        Map<UsageDimension, List<String>> onlyShared = Map.of(UsageDimension.DEPLOYMENT, List.of(shared));
        GpuUsageBreakdown byPod = admin.finops().gpuUsage(from, to, List.of(UsageDimension.POD), onlyShared);
        assertEquals(from, byPod.from());
        assertEquals(to, byPod.to());
        assertEquals(List.of(UsageDimension.POD), byPod.groupBy());
        List<GpuUsageRow> rows = byPod.rows();
        assertEquals(List.of(podA, podB), rows.stream().map(r -> r.value(UsageDimension.POD)).toList());
        assertEquals(List.of(240L, 120L), rows.stream().map(GpuUsageRow::samples).toList());
        assertEquals(0, new BigDecimal("3600").compareTo(rows.get(0).gpuSeconds()));
        assertEquals(0, new BigDecimal("1800").compareTo(rows.get(1).gpuSeconds()));
        assertEquals(0, new BigDecimal("5400").compareTo(sum(rows, GpuUsageRow::gpuSeconds)));
        for (GpuUsageRow r : rows) {
            assertEquals(1, r.cost().size());
            Money m = r.cost().get(0);
            assertEquals("EUR", m.currency());
            assertEquals(2, m.amount().scale(), "a decimal string with its cents: " + m);
        }
        assertEquals(sharedCost, byPod.total("EUR"));
        assertEquals(BigDecimal.ZERO, byPod.total("USD"));

        // A filter keeps the same cents: one pod, then both pods (any of a dimension's values).
        GpuUsageBreakdown onePod = admin.finops().gpuUsage(from, to, List.of(UsageDimension.POD),
                Map.of(UsageDimension.POD, List.of(podB)));
        assertEquals(1, onePod.rows().size());
        assertEquals(rows.get(1).cost(), onePod.rows().get(0).cost());
        assertEquals(rows.get(1).gpuSeconds(), onePod.rows().get(0).gpuSeconds());
        GpuUsageBreakdown bothPods = admin.finops().gpuUsage(from, to, List.of(UsageDimension.POD),
                Map.of(UsageDimension.POD, List.of(podA, podB)));
        assertEquals(rows, bothPods.rows());

        // By node and GPU, within both deployments: each deployment's rows sum to its cost.
        GpuUsageBreakdown byGpu = admin.finops().gpuUsage(from, to,
                List.of(UsageDimension.NODE, UsageDimension.GPU),
                Map.of(UsageDimension.DEPLOYMENT, List.of(shared, dedicated)));
        assertEquals(List.of(UsageDimension.NODE, UsageDimension.GPU), byGpu.groupBy());
        assertEquals(3, byGpu.rows().size(), byGpu.toString());
        for (GpuUsageRow r : byGpu.rows()) {
            assertEquals(java.util.Set.of("node", "gpu"), r.group().keySet());
        }
        GpuUsageRow gpuB = byGpu.rows().stream().filter(r -> nodeB.equals(r.value(UsageDimension.NODE)))
                .findFirst().orElseThrow();
        assertEquals("GPU-B-" + u, gpuB.value(UsageDimension.GPU));
        assertEquals(rows.get(1).cost(), gpuB.cost());
        assertEquals(sharedCost.add(dedicatedCost), byGpu.total("EUR"));

        // The default grouping is the deployment; a shared deployment's tenant is null.
        GpuUsageBreakdown byDeployment = admin.finops().gpuUsage(Map.of("from", from, "to", to,
                "filter", "deployment:" + shared + ",deployment:" + dedicated));
        assertEquals(List.of(UsageDimension.DEPLOYMENT), byDeployment.groupBy());
        for (GpuUsageRow r : byDeployment.rows()) {
            assertEquals(costOf(alloc, r.value(UsageDimension.DEPLOYMENT)), r.total("EUR"));
        }
        GpuUsageBreakdown byTenant = admin.finops().gpuUsage(from, to,
                List.of(UsageDimension.DEPLOYMENT, UsageDimension.TENANT), onlyShared);
        GpuUsageRow sharedRow = byTenant.rows().get(0);
        assertTrue(sharedRow.group().containsKey("tenant"));
        assertNull(sharedRow.value(UsageDimension.TENANT));

        // Whole UTC days: the day holding the hour, the same cents (the deployment ran only in that hour).
        LocalDate day = LocalDate.ofInstant(from, ZoneOffset.UTC);
        GpuUsageBreakdown daily = admin.finops().gpuUsage(day, day, List.of(UsageDimension.POD), onlyShared);
        assertEquals(rows, daily.rows());

        // A tenant's reader: the rows of its dedicated deployment only, never the shared one's pods.
        ApiKeyCreated key = admin.auth().createApiKey("viewer", t.id(), "usage-t");
        try (EnterpriseAIClient reader = server.builder().apiKey(key.key()).build()) {
            GpuUsageBreakdown mine = reader.finops().gpuUsage(from, to,
                    List.of(UsageDimension.DEPLOYMENT, UsageDimension.POD, UsageDimension.TENANT), null);
            assertEquals(1, mine.rows().size(), mine.toString());
            assertEquals(Map.of("deployment", dedicated, "pod", dedicated + "-0", "tenant", t.id()),
                    mine.rows().get(0).group());
            assertEquals(dedicatedCost, mine.total("EUR"));
            assertEquals(List.of(), reader.finops().gpuUsage(from, to, List.of(UsageDimension.POD),
                    onlyShared).rows());
        }

        // A bad query: the typed exception naming every bad parameter.
        ValidationException bad = assertThrows(ValidationException.class, () -> admin.finops().gpuUsage(
                Map.of("from", from, "to", to, "group_by", "pod,rack")));
        assertEquals(422, bad.getStatus());
        assertEquals("validation_error", bad.getCode());
        assertEquals(List.of("group_by"), bad.fields());
        ValidationException both = assertThrows(ValidationException.class, () -> admin.finops().gpuUsage(
                Map.of("from", from, "to", to, "group_by", "rack", "filter", "pod")));
        assertEquals(List.of("group_by", "filter"), both.fields());
        ValidationException twice = assertThrows(ValidationException.class, () -> admin.finops().gpuUsage(
                from, to, List.of(UsageDimension.POD, UsageDimension.POD), null));
        assertEquals(List.of("group_by"), twice.fields());
        // A value the wire cannot carry is refused before sending.
        assertThrows(IllegalArgumentException.class, () -> admin.finops().gpuUsage(from, to, null,
                Map.of(UsageDimension.POD, List.of("a,b"))));
        assertThrows(IllegalArgumentException.class, () -> admin.finops().gpuUsage(from, to, null,
                Map.of(UsageDimension.POD, List.of())));
    }

    /**
     * A GPU of a tenant's own and a GPU shared by two pods of another deployment, each pod's share measured (0.75
     * on the GPU itself, 0.25 on its share slice): grouped by GPU, each row's share of its GPU; grouped by share,
     * how it was obtained; the shared GPU is one GPU; the explanation's pods are those rows; a tenant's key is not
     * told a GPU's shares.
     */
    @Test
    void eachRowGroupedByGpuHasItsShareOfTheGpuAndHowItWasObtained() {
        String u = Fixtures.uniq();
        String own = "shares-" + u + "-own";
        String shared = "shares-" + u + "-shared";
        String podOwn = own + "-0";
        String podA = shared + "-a";
        String podB = shared + "-b";
        String gpuOwn = "GPU-" + own;
        String gpuShared = "GPU-" + shared;
        Instant from = Instant.now().truncatedTo(ChronoUnit.HOURS).minus(Duration.ofHours(13));
        Instant to = from.plus(Duration.ofHours(1));
        admin.finops().createAllocationPolicy(Fixtures.workedExamplePolicy("shares-" + u, "shares-" + u + "-*"));
        Tenant t = admin.tenants().create("shares-t-" + u, "Shares T");
        List<Map<String, Object>> samples = new ArrayList<>();
        for (Map<String, Object> s : Fixtures.hourOfSamples(gpuOwn, own, from, 400)) {
            s.put("tenant_id", t.id());
            samples.add(s);
        }
        for (String[] part : new String[][] {
            {gpuShared, podA, "0.75"}, {gpuShared + "/shared/eai-inference/" + podB, podB, "0.25"}}) {
            for (Map<String, Object> s : Fixtures.hourOfSamples(part[0], shared, from, 400)) {
                s.put("pod", part[1]);
                s.put("gpu_fraction", new BigDecimal(part[2]));
                s.put("share_method", GpuSample.SHARE_METHOD_MEASURED);
                samples.add(s);
            }
        }
        assertEquals(720, admin.finops().gpuSamples(samples).accepted());
        List<UsageDimension> podGpuShare = List.of(UsageDimension.POD, UsageDimension.GPU, UsageDimension.SHARE);

        // A GPU of its own: all of it, exclusive.
        GpuUsageBreakdown mineAll = admin.finops().gpuUsage(from, to, podGpuShare,
                Map.of(UsageDimension.DEPLOYMENT, List.of(own)));
        assertEquals(podGpuShare, mineAll.groupBy());
        assertEquals(1, mineAll.rows().size(), mineAll.toString());
        GpuUsageRow ownRow = mineAll.rows().get(0);
        assertEquals(Map.of("pod", podOwn, "gpu", gpuOwn, "share", GpuSample.SHARE_METHOD_EXCLUSIVE), ownRow.group());
        assertEquals(GpuSample.SHARE_METHOD_EXCLUSIVE, ownRow.value(UsageDimension.SHARE));
        assertEquals(0, BigDecimal.ONE.compareTo(ownRow.gpuShare()), ownRow.toString());

        // The shared GPU: one GPU (the device), each pod's measured share of it.
        GpuUsageBreakdown sharedRows = admin.finops().gpuUsage(from, to, podGpuShare,
                Map.of(UsageDimension.DEPLOYMENT, List.of(shared)));
        assertEquals(List.of(
                        Map.of("pod", podA, "gpu", gpuShared, "share", GpuSample.SHARE_METHOD_MEASURED),
                        Map.of("pod", podB, "gpu", gpuShared, "share", GpuSample.SHARE_METHOD_MEASURED)),
                sharedRows.rows().stream().map(GpuUsageRow::group).toList());
        assertEquals(List.of(new BigDecimal("0.75"), new BigDecimal("0.25")),
                sharedRows.rows().stream().map(GpuUsageRow::gpuShare).toList());
        assertEquals(0, new BigDecimal("2700").compareTo(sharedRows.rows().get(0).gpuSeconds()));
        assertEquals(0, new BigDecimal("900").compareTo(sharedRows.rows().get(1).gpuSeconds()));
        assertEquals(costOf(admin.finops().gpuAllocation(from, to), shared), sharedRows.total("EUR"));
        GpuUsageBreakdown byGpu = admin.finops().gpuUsage(from, to, List.of(UsageDimension.GPU),
                Map.of(UsageDimension.DEPLOYMENT, List.of(shared)));
        assertEquals(List.of(Map.of("gpu", gpuShared)), byGpu.rows().stream().map(GpuUsageRow::group).toList());
        assertEquals(0, BigDecimal.ONE.compareTo(byGpu.rows().get(0).gpuShare()));
        // Not grouped by GPU: no share of one.
        GpuUsageBreakdown byShare = admin.finops().gpuUsage(from, to, List.of(UsageDimension.SHARE),
                Map.of(UsageDimension.DEPLOYMENT, List.of(own, shared)));
        assertEquals(List.of(GpuSample.SHARE_METHOD_EXCLUSIVE, GpuSample.SHARE_METHOD_MEASURED),
                byShare.rows().stream().map(r -> r.value(UsageDimension.SHARE)).toList());
        for (GpuUsageRow r : byShare.rows()) {
            assertNull(r.gpuShare(), r.toString());
        }

        // The explanation says where each deployment's time ran: the rows by namespace, pod, GPU and share.
        AllocationExplanation e = admin.finops().gpuAllocationExplain(shared, from, to);
        assertEquals(List.of(
                        Map.of("namespace", "eai-inference", "pod", podA, "gpu", gpuShared, "share", "measured"),
                        Map.of("namespace", "eai-inference", "pod", podB, "gpu", gpuShared, "share", "measured")),
                e.pods().stream().map(GpuUsageRow::group).toList());
        assertEquals(List.of(new BigDecimal("0.75"), new BigDecimal("0.25")),
                e.pods().stream().map(GpuUsageRow::gpuShare).toList());
        assertEquals(sharedRows.rows().stream().map(GpuUsageRow::cost).toList(),
                e.pods().stream().map(GpuUsageRow::cost).toList());

        // The owner's key: its pod on its GPU, and no share of the GPU (it is not told what the others used).
        ApiKeyCreated key = admin.auth().createApiKey("viewer", t.id(), "shares-t");
        try (EnterpriseAIClient reader = server.builder().apiKey(key.key()).build()) {
            GpuUsageBreakdown mine = reader.finops().gpuUsage(from, to, podGpuShare, null);
            assertEquals(List.of(ownRow.group()), mine.rows().stream().map(GpuUsageRow::group).toList());
            assertNull(mine.rows().get(0).gpuShare());
            AllocationExplanation mineExplained = reader.finops().gpuAllocationExplain(own, from, to);
            assertEquals(1, mineExplained.pods().size());
            assertNull(mineExplained.pods().get(0).gpuShare());
            assertEquals(podOwn, mineExplained.pods().get(0).value(UsageDimension.POD));
        }
    }

    @Test
    void aRowOrAnExplanationBuiltWithoutTheNewMembersHasNone() {
        GpuUsageRow row = new GpuUsageRow(Map.of("pod", "p"), 1, 0, BigDecimal.ONE, BigDecimal.ONE,
                BigDecimal.ZERO, BigDecimal.ZERO, BigDecimal.ZERO, BigDecimal.ZERO, List.of());
        assertNull(row.gpuShare());
        AllocationExplanation e = new AllocationExplanation("d", Instant.EPOCH, Instant.EPOCH, 3600, null, null,
                null, null);
        assertEquals(List.of(), e.pods());
    }

    @Test
    void eachDimensionGoesByItsWireName() {
        for (UsageDimension d : UsageDimension.values()) {
            assertEquals(d, UsageDimension.fromWireName(d.wireName()));
            assertEquals(d.name().toLowerCase(java.util.Locale.ROOT), d.wireName());
        }
        assertThrows(IllegalArgumentException.class, () -> UsageDimension.fromWireName("rack"));
    }
}
