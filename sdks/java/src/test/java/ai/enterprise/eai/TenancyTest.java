package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.model.Allocation;
import ai.enterprise.eai.model.AllocationDeployment;
import ai.enterprise.eai.model.AllocationItem;
import ai.enterprise.eai.model.AllocationTenant;
import ai.enterprise.eai.model.ApiKeyCreated;
import ai.enterprise.eai.model.IngestResult;
import ai.enterprise.eai.model.Money;
import ai.enterprise.eai.model.Tenant;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import ai.enterprise.eai.testing.Fixtures;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Tenant scoping through {@code X-EAI-Tenant}, and exact money: two tenants share a deployment, a platform key
 * signed in to acme sees only acme.
 */
@ExtendWith(EaiServers.class)
class TenancyTest {

    private static EaiServer server;
    private static EnterpriseAIClient admin;
    private static Tenant acme;
    private static Tenant globex;
    private static String deployment;
    private static String policyId;
    private static Instant hour;

    @BeforeAll
    static void setUp() {
        server = EaiServers.shared();
        admin = server.admin();
        acme = Fixtures.ensureTenant(admin, "acme", "Acme Corp");
        globex = Fixtures.ensureTenant(admin, "globex", "Globex Corporation");

        deployment = "tenancy-shared-" + Fixtures.uniq();
        policyId = admin.finops().createAllocationPolicy(
                Fixtures.workedExamplePolicy("tenancy " + deployment, deployment)).id();
        hour = Fixtures.recentHour();
        // One GPU at 400 W, two whole hours of 15 s samples (a shared deployment: no tenant_id).
        List<Map<String, Object>> samples = new ArrayList<>(
                Fixtures.hourOfSamples("GPU-" + deployment, deployment, hour, 400));
        samples.addAll(Fixtures.hourOfSamples("GPU-" + deployment, deployment, hour.plus(Duration.ofHours(1)), 400));
        assertEquals(new IngestResult(480, 0, 1), admin.finops().gpuSamples(samples));
        // Usage in the first hour only: 7,000 tokens for acme, 3,000 for globex; the second hour stays idle.
        Instant mid = hour.plus(Duration.ofMinutes(30));
        admin.usage().events(List.of(
                Fixtures.usageEvent(acme.id(), deployment, mid, Map.of("tokens_in", 7000)),
                Fixtures.usageEvent(globex.id(), deployment, mid, Map.of("tokens_in", 1000, "tokens_out", 2000))));
    }

    @AfterAll
    static void tearDown() {
        admin.close();
    }

    private static Allocation allocation(EnterpriseAIClient c) {
        return c.finops().gpuAllocation(hour, hour.plus(Duration.ofHours(2)));
    }

    private static List<AllocationItem> items(Allocation a) {
        return a.items().stream().filter(i -> i.deploymentId().equals(deployment)).toList();
    }

    @Test
    void withoutATenantThePlatformSeesBothTenants() {
        Allocation a = allocation(admin);
        List<AllocationItem> mine = items(a);
        assertEquals(Set.of(acme.id(), globex.id()),
                mine.stream().map(AllocationItem::tenantId).collect(Collectors.toSet()), a.toString());
        assertTrue(mine.stream().allMatch(i -> i.policyId().equals(policyId)));
        Set<String> tenantRows = a.tenants().stream().map(AllocationTenant::tenantId).collect(Collectors.toSet());
        assertTrue(tenantRows.containsAll(Set.of(acme.id(), globex.id())), tenantRows.toString());
    }

    @Test
    void aPlatformKeySignedInToAcmeSeesOnlyAcme() {
        try (EnterpriseAIClient asAcme = server.builder().tenant("acme").build()) {
            assertEquals("acme", asAcme.auth().whoAmI().actingTenant().slug());
            Allocation a = allocation(asAcme);
            assertFalse(a.items().isEmpty());
            assertTrue(a.items().stream().allMatch(i -> i.tenantId().equals(acme.id())), a.items().toString());
            assertTrue(a.tenants().stream().allMatch(t -> t.tenantId().equals(acme.id())), a.tenants().toString());
            assertEquals(1, a.tenants().stream().filter(t -> t.cost().currency().equals("EUR")).count());
            assertFalse(a.toString().contains(globex.id()), "nothing of globex, not even its id");
            assertEquals(1, items(a).size());

            // by id too, and a tenant key of acme sees the same
            Allocation byId = allocation(admin.withTenant(acme.id()));
            assertEquals(a.items(), byId.items());
            ApiKeyCreated finops = admin.auth().createApiKey("finops", acme.id(), "tenancy-finops");
            try (EnterpriseAIClient acmeFinops = server.builder().apiKey(finops.key()).build()) {
                assertEquals(a.items(), allocation(acmeFinops).items());
                assertEquals(a.tenants(), allocation(acmeFinops).tenants());
            }
        }
    }

    @Test
    void moneyIsExactAndAllocatedPlusUnallocatedIsTheCostOfEveryDeployment() {
        Allocation a = allocation(admin);
        for (AllocationDeployment d : a.deployments()) {
            if (d.currency() == null) {
                continue;
            }
            assertEquals(d.cost(), d.allocated().add(d.unallocated()),
                    "allocated + unallocated == cost, exactly, for " + d);
        }
        AllocationDeployment d = Fixtures.deployment(a, deployment).orElseThrow();
        assertEquals("EUR", d.currency());
        assertEquals(480, d.samples());
        assertEquals(new BigDecimal("2"), d.gpuHours());
        assertEquals(new BigDecimal("0.8"), d.energyKwh());
        // 2 GPU-hours x 2.10 x 1.18 + 0.8 kWh x 1.4 x 0.21 = 4.956 + 0.2352 = 5.1912
        assertEquals(new BigDecimal("5.19"), d.cost(), d.toString());
        assertEquals(new Money(new BigDecimal("5.19"), "EUR"), d.costMoney());
        assertEquals(2, d.cost().scale(), "cents, as written by the server");

        List<AllocationItem> mine = items(a);
        BigDecimal itemsTotal = mine.stream().map(i -> i.allocated().amount()).reduce(BigDecimal.ZERO, BigDecimal::add);
        assertEquals(d.allocated(), itemsTotal, "the items add up to the deployment's allocated amount");
        AllocationItem acmeItem = mine.stream().filter(i -> i.tenantId().equals(acme.id())).findFirst().orElseThrow();
        AllocationItem globexItem =
                mine.stream().filter(i -> i.tenantId().equals(globex.id())).findFirst().orElseThrow();
        assertEquals("EUR", acmeItem.allocated().currency());
        // the first hour (2.5956) is split 70/30 in tokens; the second hour is idle: unallocated
        assertEquals(0, acmeItem.gpuSeconds().compareTo(new BigDecimal("2520")), acmeItem.toString());
        assertEquals(0, globexItem.gpuSeconds().compareTo(new BigDecimal("1080")), globexItem.toString());
        assertTrue(d.unallocated().signum() > 0, d.toString());
        assertNotNull(acmeItem.energyWh());
    }
}
