package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.model.Allocation;
import ai.enterprise.eai.model.AllocationPolicy;
import ai.enterprise.eai.model.AllocationPolicyChange;
import ai.enterprise.eai.model.AllocationPolicyCreated;
import ai.enterprise.eai.model.ApiKey;
import ai.enterprise.eai.model.ApiKeyCreated;
import ai.enterprise.eai.model.AuditEvent;
import ai.enterprise.eai.model.AuditHead;
import ai.enterprise.eai.model.Catalog;
import ai.enterprise.eai.model.GpuSample;
import ai.enterprise.eai.model.IngestResult;
import ai.enterprise.eai.model.Provider;
import ai.enterprise.eai.model.Tenant;
import ai.enterprise.eai.model.UsageEvent;
import ai.enterprise.eai.model.WhoAmI;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import ai.enterprise.eai.testing.Fixtures;
import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Every call of every resource against a real server. */
@ExtendWith(EaiServers.class)
class ResourcesTest {

    private static EaiServer server;
    private static EnterpriseAIClient admin;
    private static Tenant acme;

    @BeforeAll
    static void setUp() {
        server = EaiServers.shared();
        admin = server.admin();
        acme = Fixtures.ensureTenant(admin, "acme", "Acme Corp");
    }

    @AfterAll
    static void tearDown() {
        admin.close();
    }

    @Test
    void whoAmIDescribesTheKeyAndTheTenantItIsSignedInTo() {
        WhoAmI me = admin.auth().whoAmI();
        assertEquals("platform_admin", me.role());
        assertTrue(me.keyId().matches("key_[0-9]+"), me.keyId());
        assertNull(me.tenantId());
        assertNull(me.tenant());
        assertNull(me.actingTenant());

        WhoAmI asAcme = admin.withTenant("acme").auth().whoAmI();
        assertEquals(acme, asAcme.actingTenant());
        assertNull(asAcme.tenant());
    }

    @Test
    void tenantsAreCreatedListedAndFetchedBySlugOrId() {
        String slug = "res-" + Fixtures.uniq();
        String id = UUID.randomUUID().toString();
        Tenant t = admin.tenants().create(slug, "Resources Test", id);
        assertEquals(new Tenant(id, slug, "Resources Test"), t);
        assertEquals(t, admin.tenants().get(slug));
        assertEquals(t, admin.tenants().get(id));
        assertTrue(admin.tenants().list().contains(t));

        Tenant generated = admin.tenants().create(Map.of("slug", slug + "-b", "name", "B"));
        assertNotNull(UUID.fromString(generated.id()));
        // signed in to a tenant, a platform key lists that one only
        assertEquals(List.of(t), admin.withTenant(slug).tenants().list());
    }

    @Test
    void apiKeysAreCreatedListedRotatedAndRevoked() {
        ApiKeyCreated created = admin.auth().createApiKey("viewer", acme.id(), "res-viewer");
        assertTrue(created.key().startsWith("eai_live_"));
        assertEquals("viewer", created.role());
        assertEquals(acme.id(), created.tenantId());
        assertEquals("active", created.status());
        assertFalse(created.toString().contains(created.key()), "toString never shows the secret");
        assertTrue(created.toString().contains("<redacted>"));

        ApiKey listed = admin.auth().listApiKeys().stream().filter(k -> k.id().equals(created.id()))
                .findFirst().orElseThrow();
        assertEquals(created.withoutSecret(), listed);

        try (EnterpriseAIClient viewer = server.builder().apiKey(created.key()).build()) {
            assertEquals("viewer", viewer.auth().whoAmI().role());
            assertEquals("acme", viewer.auth().whoAmI().tenant().slug());
            assertFalse(viewer.toString().contains(created.key()), "the client's toString never shows the key");
        }

        // Rotation with a grace period: both secrets work for now.
        ApiKeyCreated rotated = admin.auth().rotateApiKey(created.id(), Duration.ofMinutes(10));
        assertNotEquals(created.key(), rotated.key());
        assertNotNull(rotated.rotatedAt());
        assertNotNull(rotated.previousSecretValidUntil());
        try (EnterpriseAIClient old = server.builder().apiKey(created.key()).build();
                EnterpriseAIClient fresh = server.builder().apiKey(rotated.key()).build()) {
            assertEquals(created.id(), old.auth().whoAmI().keyId());
            assertEquals(created.id(), fresh.auth().whoAmI().keyId());
        }
        // Without grace the previous secret stops at once.
        ApiKeyCreated again = admin.auth().rotateApiKey(created.id());
        try (EnterpriseAIClient previous = server.builder().apiKey(rotated.key()).build()) {
            assertThrows(AuthenticationException.class, () -> previous.auth().whoAmI());
        }

        ApiKey revoked = admin.auth().revokeApiKey(created.id());
        assertEquals("revoked", revoked.status());
        assertNotNull(revoked.revokedAt());
        assertEquals(revoked.status(), admin.auth().revokeApiKey(created.id()).status(), "idempotent");
        try (EnterpriseAIClient gone = server.builder().apiKey(again.key()).build()) {
            assertThrows(AuthenticationException.class, () -> gone.auth().whoAmI());
        }
        ConflictException conflict =
                assertThrows(ConflictException.class, () -> admin.auth().rotateApiKey(created.id()));
        assertEquals(409, conflict.getStatus());

        // A sampler key bound to nodes, from a request body.
        ApiKeyCreated sampler = admin.auth().createApiKey(
                Map.of("role", "sampler", "name", "res-sampler", "nodes", List.of("gpu-node-3")));
        assertEquals(List.of("gpu-node-3"), sampler.nodes());
        assertNull(sampler.tenantId());
    }

    @Test
    void policiesAreCreatedListedSupersededAndDisabledWithExactMoney() {
        String pattern = "res-policy-" + Fixtures.uniq();
        Map<String, Object> body = new LinkedHashMap<>(Fixtures.workedExamplePolicy("res " + pattern, pattern));
        body.put("gpu_hourly_cost", new BigDecimal("2.10"));
        body.put("storage_gb_month_price", 0.02); // a double: sent as 0.02
        body.put("effective_from", LocalDate.of(2020, 1, 1));
        AllocationPolicyCreated created = admin.finops().createAllocationPolicy(body);
        assertTrue(created.id().matches("alp_[0-9]+"));
        assertEquals("active", created.status());

        AllocationPolicy p = admin.finops().listAllocationPolicies().stream()
                .filter(x -> x.id().equals(created.id())).findFirst().orElseThrow();
        assertEquals(new BigDecimal("2.10"), p.gpuHourlyCost(), "the money's scale is kept");
        assertEquals("2.10", p.gpuHourlyCost().toPlainString());
        assertEquals(0, new BigDecimal("0.02").compareTo(p.storageGbMonthPrice()));
        assertEquals(0, new BigDecimal("18").compareTo(p.overheadPct()));
        assertEquals(0, new BigDecimal("1.4").compareTo(p.pue()));
        assertEquals("EUR", p.currency());
        assertEquals(pattern, p.deploymentPattern());
        assertEquals(LocalDate.of(2020, 1, 1).atStartOfDay().toInstant(ZoneOffset.UTC), p.effectiveFrom());
        assertNull(p.effectiveTo());
        assertTrue(p.enabled());

        AllocationPolicyChange superseded = admin.finops().supersedeAllocationPolicy(
                created.id(), Map.of("gpu_hourly_cost", "2.30"));
        assertEquals(created.id(), superseded.closed().id());
        assertEquals("closed", superseded.closed().status());
        assertNotNull(superseded.closed().effectiveTo());
        assertEquals(new BigDecimal("2.30"), superseded.opened().gpuHourlyCost());
        assertEquals(superseded.closed().effectiveTo(), superseded.opened().effectiveFrom());

        AllocationPolicyChange disabled = admin.finops().disableAllocationPolicy(superseded.opened().id());
        assertEquals("disabled", disabled.opened().status());
        assertFalse(disabled.opened().enabled());

        // A closed policy cannot be disabled again: 409, the stored state's conflict, on effective_at.
        ConflictException closed = assertThrows(ConflictException.class,
                () -> admin.finops().disableAllocationPolicy(created.id()));
        assertEquals("effective_at", closed.getDetails().get(0).field());

        // disable at an instant, in the future: scheduled then
        AllocationPolicyCreated other = admin.finops().createAllocationPolicy(
                Map.of("name", "res-future", "deployment_pattern", pattern + "-x", "gpu_hourly_cost", 1));
        Instant at = Instant.now().plus(Duration.ofDays(1)).truncatedTo(ChronoUnit.SECONDS);
        AllocationPolicyChange later = admin.finops().disableAllocationPolicy(other.id(), at);
        assertEquals(at, later.closed().effectiveTo());
        assertEquals(at, later.opened().effectiveFrom());
    }

    @Test
    void typedSamplesAndTheCatalog() {
        String deployment = "res-catalog-" + Fixtures.uniq();
        Instant end = Instant.now().minusSeconds(120).truncatedTo(ChronoUnit.SECONDS).plusNanos(123_456_789);
        GpuSample s = GpuSample.builder()
                .node("gpu-node-9").gpuUuid("GPU-res-" + deployment).model("H100-80GB").namespace("eai-inference")
                .pod(deployment + "-0").deploymentId(deployment)
                .windowSeconds(15).utilization(0.82).memoryUsedGb(61.2).powerW(new BigDecimal("512.5"))
                .timestamp(end).gpuFraction(0.5)
                .build();
        GpuSample second = s.toBuilder().timestamp(end.plusSeconds(15)).build();
        IngestResult r = admin.finops().gpuSamples(List.of(s, second));
        assertEquals(new IngestResult(2, 0, 1), r);
        // the same typed samples again: counted once (timestamps truncated to the same milliseconds)
        assertEquals(new IngestResult(2, 2, 1), admin.finops().gpuSamples(List.of(s, second)));

        Catalog catalog = admin.providers().catalog();
        Provider p = catalog.items().stream().filter(x -> x.baseUrl().equals("http://" + deployment + ":8000/v1"))
                .findFirst().orElseThrow();
        assertEquals("vllm", p.id());
        assertTrue(p.local());
        assertEquals(Provider.DISCOVERY_SAMPLES, p.discovery());
        assertEquals(deployment, p.deploymentId());
        assertEquals(List.of(), p.models());
        assertNotNull(UUID.fromString(p.providerId()));

        Allocation a = admin.finops().gpuAllocation(end.minusSeconds(60), end.plusSeconds(60));
        assertEquals(2, Fixtures.deployment(a, deployment).orElseThrow().samples());
        assertEquals(1, Fixtures.deployment(a, deployment).orElseThrow().gpus());
        assertEquals(new BigDecimal("0.0042"), Fixtures.deployment(a, deployment).orElseThrow().gpuHours(),
                "2 x 15 s of half a GPU: 15 GPU-seconds, 0.0042 GPU-hours to 4 places, read exactly");
    }

    @Test
    void equalSharesOfASharedGpu() {
        // Two pods on one GPU without per-pod data: half each, share_method "equal", reported by the allocation.
        String deployment = "res-equal-" + Fixtures.uniq();
        String gpu = "GPU-eq-" + Fixtures.uniq();
        Instant hour = Fixtures.recentHour();
        GpuSample own = GpuSample.builder()
                .node("gpu-node-3").gpuUuid(gpu).model("H100-80GB").namespace("eai-inference")
                .pod(deployment + "-a").deploymentId(deployment)
                .windowSeconds(15).utilization(0.5).memoryUsedGb(20).powerW(400)
                .timestamp(hour.plusSeconds(15)).gpuFraction(0.5).shareMethod(GpuSample.SHARE_METHOD_EQUAL)
                .build();
        GpuSample shared = own.toBuilder()
                .gpuUuid(gpu + "/shared/eai-inference/" + deployment + "-b").pod(deployment + "-b").build();
        assertEquals("equal", shared.shareMethod());
        assertEquals(new IngestResult(2, 0, 1), admin.finops().gpuSamples(List.of(shared, own)));

        Allocation a = admin.finops().gpuAllocation(hour, hour.plus(Duration.ofHours(1)));
        assertEquals(1, a.findings().stream()
                .filter(f -> f.code().equals("equal_gpu_shares") && f.message().contains(deployment)).count(),
                () -> "findings: " + a.findings());

        // The old canonical constructor still compiles: no share_method (exclusive).
        GpuSample legacy = new GpuSample("gpu-node-3", gpu + "-legacy", "H100-80GB", "eai-inference",
                deployment + "-c", deployment, null, BigDecimal.valueOf(15), new BigDecimal("0.5"),
                BigDecimal.valueOf(20), BigDecimal.valueOf(400), hour.plusSeconds(15), null, null);
        assertNull(legacy.shareMethod());

        ValidationException bad = assertThrows(ValidationException.class,
                () -> admin.finops().gpuSamples(List.of(legacy.toBuilder().shareMethod("half").build())));
        assertEquals(List.of("share_method"), bad.fields());
    }

    @Test
    void allocationByDatesInstantsAndParameters() {
        LocalDate today = LocalDate.now(ZoneOffset.UTC);
        Allocation byDates = admin.finops().gpuAllocation(today, today);
        assertEquals(today.atStartOfDay().toInstant(ZoneOffset.UTC), byDates.from());
        assertEquals(today.plusDays(1).atStartOfDay().toInstant(ZoneOffset.UTC), byDates.to(),
                "a date `to` includes that whole day");
        Instant from = Instant.parse("2026-10-01T00:00:00Z");
        Allocation byInstants = admin.finops().gpuAllocation(from, from.plus(Duration.ofHours(6)));
        assertEquals(from, byInstants.from());
        assertEquals(from.plus(Duration.ofHours(6)), byInstants.to());
        Allocation october = admin.finops().gpuAllocation(Map.of("from", LocalDate.of(2026, 10, 1),
                "to", LocalDate.of(2026, 10, 31)));
        assertEquals("2026-10", october.period());
        Allocation lastThirtyDays = admin.finops().gpuAllocation();
        assertTrue(Duration.between(lastThirtyDays.from(), lastThirtyDays.to()).toDays() >= 29);
    }

    @Test
    void usageEventsTypedAndAsMapsGetIdsOnceAndTheCallersMapsStayUntouched() {
        String deployment = "res-usage-" + Fixtures.uniq();
        UsageEvent typed = UsageEvent.builder()
                .tenantId(acme.id()).usageType("llm_tokens").source("gateway").deploymentId(deployment)
                .occurredAt(Instant.now().minusSeconds(30)).model("local", "llama-70b-local")
                .unit("tokens_in", 7000).unit("tokens_out", 1200.5)
                .project("support-bot").agentId("triage-agent").runId("run-1")
                .build();
        Map<String, Object> plain = new HashMap<>(Fixtures.usageEvent(acme.id(), deployment,
                Instant.now().minusSeconds(20), Map.of("tokens_in", 10)));
        plain.remove("occurred_at");
        Map<String, Object> snapshot = new HashMap<>(plain);
        IngestResult r = admin.usage().events(List.of(typed, plain));
        assertEquals(new IngestResult(2, 0, 1), r);
        assertEquals(snapshot, plain, "the caller's map is not modified (no event_id added)");

        // From a body, with explicit ids: re-sending replaces.
        Map<String, Object> withId = new LinkedHashMap<>(plain);
        withId.put("event_id", UUID.randomUUID().toString());
        assertEquals(1, admin.usage().events(Map.of("events", List.of(withId))).accepted());
        assertEquals(1, admin.usage().events(Map.of("events", List.of(withId))).accepted());

        // A tenant developer may omit tenant_id.
        ApiKeyCreated dev = admin.auth().createApiKey("developer", acme.id(), "res-dev");
        try (EnterpriseAIClient developer = server.builder().apiKey(dev.key()).build()) {
            assertEquals(1, developer.usage().events(List.of(Map.of("usage_type", "llm_tokens",
                    "source", "worker", "units", Map.of("tokens_in", 3)))).accepted());
        }
        // Nothing to send: no request.
        assertEquals(new IngestResult(0, 0, 0), admin.usage().events(List.of()));
    }

    @Test
    void theAuditChainAndItsHead() {
        List<AuditEvent> first = admin.audit().events(0, 5);
        assertFalse(first.isEmpty());
        AuditEvent bootstrap = first.get(0);
        assertEquals(1, bootstrap.seq());
        assertEquals("0".repeat(64), bootstrap.prevHash());
        assertEquals("api_key.bootstrap", bootstrap.action());
        assertEquals("allow", bootstrap.decision());
        for (int i = 1; i < first.size(); i++) {
            assertEquals(first.get(i - 1).hash(), first.get(i).prevHash(), "a chain");
            assertEquals(first.get(i - 1).seq() + 1, first.get(i).seq());
        }
        AuditHead head = admin.audit().head();
        assertTrue(head.seq() >= first.get(first.size() - 1).seq());
        assertTrue(head.hash().matches("[0-9a-f]{64}"));
        List<AuditEvent> page = admin.audit().events(1, 2);
        assertEquals(2, page.get(0).seq());
        assertTrue(admin.audit().events().size() >= first.size());
    }

    @Test
    void theRawRequestEscapeHatch() {
        JsonNode me = admin.request("GET", "/v1/auth/whoami", null, null);
        assertEquals("platform_admin", me.get("role").asText());
        JsonNode q = admin.request("get", "/v1/audit/events", Map.of("limit", 1), null);
        assertEquals(1, q.get("items").size());
    }

    @Test
    void aClosedClientRefusesCalls() {
        EnterpriseAIClient c = server.admin();
        EnterpriseAIClient derived = c.withTenant("acme");
        derived.close(); // does nothing
        assertEquals("platform_admin", c.auth().whoAmI().role());
        c.close();
        c.close();
        assertThrows(IllegalStateException.class, () -> c.auth().whoAmI());
        assertThrows(IllegalStateException.class, () -> derived.tenants().list());
    }
}
