package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ai.enterprise.eai.model.Allocation;
import ai.enterprise.eai.model.AllocationExplanation;
import ai.enterprise.eai.model.AllocationItem;
import ai.enterprise.eai.model.ApiKeyCreated;
import ai.enterprise.eai.model.GpuUsageRow;
import ai.enterprise.eai.model.Tenant;
import ai.enterprise.eai.model.UsageDimension;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import ai.enterprise.eai.testing.Fixtures;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Why a deployment costs what it does ({@code finops().gpuAllocationExplain}) against a real server: a shared
 * deployment at 10 USD per GPU-hour for an hour, tenants 70/30 in tokens. The claims and split, the rounded lines
 * equal to the allocation's items, where its time ran (its pods), and the reader's scope.
 */
@ExtendWith(EaiServers.class)
class ExplainTest {

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

    @Test
    void theExplanationSplitsEachBucketAndRoundsToTheAllocation() {
        String deployment = "explain-" + Fixtures.uniq();
        Instant from = Instant.now().truncatedTo(ChronoUnit.HOURS).minus(Duration.ofHours(7));
        Instant to = from.plus(Duration.ofHours(1));
        admin.finops().createAllocationPolicy(Map.of("name", "flat", "deployment_pattern", deployment,
                "currency", "USD", "gpu_hourly_cost", 10, "effective_from", "2020-01-01"));
        assertEquals(240, admin.finops().gpuSamples(Fixtures.hourOfSamples("GPU-" + deployment, deployment, from, 400))
                .accepted());
        Tenant a = admin.tenants().create("explain-a-" + Fixtures.uniq(), "Explain A");
        Tenant b = admin.tenants().create("explain-b-" + Fixtures.uniq(), "Explain B");
        Tenant c = admin.tenants().create("explain-c-" + Fixtures.uniq(), "Explain C");
        Instant at = from.plus(Duration.ofMinutes(10));
        admin.usage().events(List.of(
                Fixtures.usageEvent(a.id(), deployment, at, Map.of("tokens_in", 700)),
                Fixtures.usageEvent(b.id(), deployment, at, Map.of("tokens_in", 300))));

        AllocationExplanation e = admin.finops().gpuAllocationExplain(deployment, from, to);
        assertEquals(deployment, e.deploymentId());
        assertEquals(3600, e.bucketSeconds());
        AllocationExplanation.Bucket bucket = e.buckets().get(0);
        assertEquals(0, new BigDecimal("3600").compareTo(bucket.gpuSeconds()));
        Map<String, BigDecimal> shares = bucket.claims().stream()
                .collect(Collectors.toMap(x -> x.party().tenantId(), AllocationExplanation.Claim::share));
        assertEquals(0, new BigDecimal("0.7").compareTo(shares.get(a.id())));
        assertEquals(0, new BigDecimal("0.3").compareTo(shares.get(b.id())));
        assertEquals(new BigDecimal("10"), bucket.priced().get(0).cost());
        AllocationExplanation.Rounding r = e.rounding().get(0);
        assertEquals(new BigDecimal("10.00"), r.cost());
        Allocation alloc = admin.finops().gpuAllocation(Map.of("from", from.toString(), "to", to.toString()));
        for (AllocationItem item : alloc.items()) {
            if (item.deploymentId().equals(deployment)) {
                assertEquals(item.allocated().amount(), e.amount(item.tenantId(), "USD"), item.tenantId());
            }
        }

        // Where its time ran: its one pod on its one GPU, all of it (exclusive), as the breakdown answers it.
        assertEquals(1, e.pods().size(), e.toString());
        GpuUsageRow pod = e.pods().get(0);
        assertEquals(Map.of("namespace", "eai-inference", "pod", deployment + "-0", "gpu", "GPU-" + deployment,
                "share", "exclusive"), pod.group());
        assertEquals(0, BigDecimal.ONE.compareTo(pod.gpuShare()), pod.toString());
        assertEquals(0, new BigDecimal("3600").compareTo(pod.gpuSeconds()));
        assertEquals(new BigDecimal("10.00"), pod.total("USD"));
        assertEquals(admin.finops().gpuUsage(from, to,
                List.of(UsageDimension.NAMESPACE, UsageDimension.POD, UsageDimension.GPU, UsageDimension.SHARE),
                Map.of(UsageDimension.DEPLOYMENT, List.of(deployment))).rows(), e.pods());

        // Tenant A's reader: its own line and the other tenants summed; never B's view; C finds nothing.
        ApiKeyCreated keyA = admin.auth().createApiKey("viewer", a.id(), "explain-a");
        try (EnterpriseAIClient ra = server.builder().apiKey(keyA.key()).build()) {
            AllocationExplanation mine = ra.finops().gpuAllocationExplain(deployment, from, to);
            List<String> kinds = mine.buckets().get(0).claims().stream()
                    .map(x -> x.party().kind() + ":" + x.party().tenantId()).toList();
            assertEquals(List.of("tenant:" + a.id(), "other_tenants:null"), kinds);
            assertFalse(mine.toString().contains(b.id()));
            assertEquals(List.of(), mine.pods()); // a shared deployment's pods are not a tenant's to see
            assertThrows(PermissionDeniedException.class, () -> ra.finops().gpuAllocationExplain(Map.of(
                    "deployment_id", deployment, "from", from.toString(), "to", to.toString(), "tenant_id", b.id())));
        }
        ApiKeyCreated keyC = admin.auth().createApiKey("viewer", c.id(), "explain-c");
        try (EnterpriseAIClient rc = server.builder().apiKey(keyC.key()).build()) {
            assertThrows(NotFoundException.class, () -> rc.finops().gpuAllocationExplain(deployment, from, to));
        }
    }
}
