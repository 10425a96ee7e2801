package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.model.Allocation;
import ai.enterprise.eai.model.ApiKeyCreated;
import ai.enterprise.eai.model.IngestResult;
import ai.enterprise.eai.model.Tenant;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import ai.enterprise.eai.testing.FaultProxy;
import ai.enterprise.eai.testing.Fixtures;
import java.net.ServerSocket;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Each exception class from a real server's answer (or a fault proxy's, for what a server cannot be made to say). */
@ExtendWith(EaiServers.class)
class ErrorsTest {

    private static EaiServer server;
    private static EnterpriseAIClient admin;
    private static Tenant acme;
    private static Tenant globex;

    @BeforeAll
    static void setUp() {
        server = EaiServers.shared();
        admin = server.admin();
        acme = Fixtures.ensureTenant(admin, "acme", "Acme Corp");
        globex = Fixtures.ensureTenant(admin, "globex", "Globex Corporation");
    }

    @AfterAll
    static void tearDown() {
        admin.close();
    }

    /** The envelope's members, on every error answer. */
    private static void assertEnvelope(EnterpriseAIException e, int status, String code) {
        assertEquals(status, e.getStatus(), e.toString());
        assertEquals(code, e.getCode(), e.toString());
        assertNotNull(e.getMessage());
        assertFalse(e.getMessage().isEmpty());
        assertNotNull(e.getMessageI18n().get("en"), e.toString());
        assertNotNull(e.getMessageI18n().get("fr"), e.toString());
        assertNotNull(e.getRequestId(), e.toString());
        assertTrue(e.toString().contains(e.getRequestId()));
    }

    private EnterpriseAIClient keyClient(String role, String tenantId) {
        ApiKeyCreated k = admin.auth().createApiKey(role, tenantId, "errors-" + role);
        return server.builder().apiKey(k.key()).build();
    }

    @Test
    void unauthorized401() {
        try (EnterpriseAIClient bad = server.builder().apiKey("eai_live_not_a_key_of_this_server_0000").build()) {
            AuthenticationException e = assertThrows(AuthenticationException.class, () -> bad.auth().whoAmI());
            assertEnvelope(e, 401, "unauthorized");
            assertFalse(e.toString().contains("not_a_key_of_this_server"), "the key never appears");
        }
    }

    @Test
    void forbidden403ForTheWrongRole() {
        try (EnterpriseAIClient viewer = keyClient("viewer", acme.id())) {
            PermissionDeniedException e = assertThrows(PermissionDeniedException.class,
                    () -> viewer.finops().createAllocationPolicy(Map.of("name", "nope", "gpu_hourly_cost", 1)));
            assertEnvelope(e, 403, "forbidden");
            assertTrue(e.getDetails().isEmpty());
        }
    }

    @Test
    void forbidden403ForATenantKeyNamingAnotherTenant() {
        try (EnterpriseAIClient dev = keyClient("developer", acme.id())) {
            assertEquals("acme", dev.withTenant("acme").auth().whoAmI().tenant().slug(), "its own: fine");
            PermissionDeniedException e = assertThrows(PermissionDeniedException.class,
                    () -> dev.withTenant("globex").finops().gpuAllocation());
            assertEnvelope(e, 403, "forbidden");
            assertThrows(PermissionDeniedException.class, () -> dev.withTenant(globex.id()).tenants().list());
        }
    }

    @Test
    void notFound404ForAnUnknownSlugPolicyKeyOrTenant() {
        NotFoundException slug = assertThrows(NotFoundException.class,
                () -> admin.withTenant("no-such-tenant").tenants().list());
        assertEnvelope(slug, 404, "not_found");
        assertTrue(slug.getMessage().contains("no-such-tenant"), slug.getMessage());
        assertEnvelope(assertThrows(NotFoundException.class,
                () -> admin.finops().disableAllocationPolicy("alp_999999")), 404, "not_found");
        assertEnvelope(assertThrows(NotFoundException.class,
                () -> admin.finops().supersedeAllocationPolicy("alp_999999", Map.of())), 404, "not_found");
        assertEnvelope(assertThrows(NotFoundException.class,
                () -> admin.auth().revokeApiKey("key_999999")), 404, "not_found");
        assertEnvelope(assertThrows(NotFoundException.class,
                () -> admin.tenants().get("no-such-tenant")), 404, "not_found");
    }

    @Test
    void methodNotAllowed405() {
        MethodNotAllowedException e = assertThrows(MethodNotAllowedException.class,
                () -> admin.request("DELETE", "/v1/tenants", null, null));
        assertEnvelope(e, 405, "method_not_allowed");
    }

    @Test
    void conflict409ForADuplicateSlug() {
        ConflictException e = assertThrows(ConflictException.class,
                () -> admin.tenants().create("acme", "Acme again"));
        assertEnvelope(e, 409, "conflict");
        assertTrue(e.getMessage().contains("acme"), e.getMessage());
    }

    @Test
    void payloadTooLarge413WithSplittingDisabledStoresNothing() {
        EaiServer small = EaiServers.smallBatch();
        String deployment = "err-413-" + Fixtures.uniq();
        Instant end = Instant.now().minusSeconds(60).truncatedTo(ChronoUnit.SECONDS);
        List<Map<String, Object>> samples = Fixtures.series("GPU-" + deployment, deployment, end, 3001);
        try (EnterpriseAIClient c = small.builder().splitOnPayloadTooLarge(false).build()) {
            PayloadTooLargeException e = assertThrows(PayloadTooLargeException.class,
                    () -> c.finops().gpuSamples(samples));
            assertEnvelope(e, 413, "payload_too_large");
            assertEquals(new IngestResult(0, 0, 0), e.getPartialResult());
            Allocation a = c.finops().gpuAllocation(end.minus(Duration.ofDays(1)), end.plusSeconds(1));
            assertTrue(Fixtures.deployment(a, deployment).isEmpty(), "a 413 batch stored nothing");
            // per call, too
            assertThrows(PayloadTooLargeException.class, () -> small.admin().finops().gpuSamples(samples,
                    IngestOptions.defaults().withSplitOnPayloadTooLarge(false)));
        }
    }

    @Test
    void validation422WithDetailsIndexedInTheCallersList() {
        String deployment = "err-422-" + Fixtures.uniq();
        Instant end = Instant.now().minusSeconds(60).truncatedTo(ChronoUnit.SECONDS);
        List<Map<String, Object>> samples = new ArrayList<>(Fixtures.series("GPU-" + deployment, deployment, end, 5));
        Map<String, Object> bad = new LinkedHashMap<>(samples.get(3));
        bad.put("utilization", 2);
        bad.remove("power_w");
        samples.set(3, bad);

        ValidationException single = assertThrows(ValidationException.class,
                () -> admin.finops().gpuSamples(samples));
        assertEnvelope(single, 422, "validation_error");
        assertTrue(single.fields().containsAll(List.of("utilization", "power_w")), single.fields().toString());
        assertTrue(single.getDetails().stream().allMatch(d -> d.index() == 3), single.getDetails().toString());

        // In batches of 2: the third batch fails; its index 1 is the caller's index 3, the first batch is stored.
        ValidationException batched = assertThrows(ValidationException.class,
                () -> admin.finops().gpuSamples(samples, IngestOptions.defaults().withBatchSize(2)));
        assertTrue(batched.getDetails().stream().allMatch(d -> d.index() == 3), batched.getDetails().toString());
        assertEquals(new IngestResult(2, 0, 1), batched.getPartialResult());

        // A policy: field by field, no index.
        ValidationException policy = assertThrows(ValidationException.class,
                () -> admin.finops().createAllocationPolicy(Map.of("name", "bad", "gpu_hourly_cost", "-1",
                        "currency", "euro")));
        assertTrue(policy.fields().containsAll(List.of("gpu_hourly_cost", "currency")), policy.fields().toString());
        assertTrue(policy.getDetails().stream().allMatch(d -> d.index() == null));
        // A role needing a tenant.
        ValidationException key = assertThrows(ValidationException.class,
                () -> admin.auth().createApiKey("finops", null, null));
        assertEquals(List.of("tenant_id"), key.fields());
    }

    @Test
    void rateLimited429FromARateLimitedServerWithRetriesOff() throws Exception {
        EaiServer limited = EaiServers.rateLimited();
        try (EnterpriseAIClient noRetry = limited.builder().maxRetries(0).build()) {
            RateLimitException e = null;
            for (int i = 0; i < 20 && e == null; i++) {
                try {
                    noRetry.auth().whoAmI();
                } catch (RateLimitException x) {
                    e = x;
                }
            }
            assertNotNull(e, "20 calls at once on a 1/s key must be limited");
            assertEnvelope(e, 429, "rate_limited");
            assertNotNull(e.getRetryAfter(), "429 carries Retry-After");
            assertTrue(e.getRetryAfter().compareTo(Duration.ZERO) > 0);
            assertTrue(e.getRetryAfter().compareTo(Duration.ofSeconds(60)) <= 0);
        }
        // With retries, the SDK waits Retry-After and every call succeeds.
        try (EnterpriseAIClient retrying = limited.builder().maxRetries(5).build()) {
            for (int i = 0; i < 3; i++) {
                assertEquals("platform_admin", retrying.auth().whoAmI().role());
            }
        }
    }

    @Test
    void frenchMessages() {
        try (EnterpriseAIClient fr = server.builder().locale(Locale.FRENCH).build()) {
            NotFoundException e = assertThrows(NotFoundException.class,
                    () -> fr.withTenant("tenant-inexistant").tenants().list());
            assertEquals(e.getMessageI18n().get("fr"), e.getMessage());
            assertNotEquals(e.getMessageI18n().get("en"), e.getMessage());
            assertTrue(e.getMessage().contains("n'existe pas"), e.getMessage());
            ConflictException c = assertThrows(ConflictException.class, () -> fr.tenants().create("acme", "A"));
            assertTrue(c.getMessage().startsWith("Conflit"), c.getMessage());
        }
        NotFoundException en = assertThrows(NotFoundException.class,
                () -> admin.withTenant("tenant-inexistant").tenants().list());
        assertEquals(en.getMessageI18n().get("en"), en.getMessage());
        NotFoundException viaWith = assertThrows(NotFoundException.class,
                () -> admin.withLocale(Locale.FRENCH).withTenant("tenant-inexistant").tenants().list());
        assertEquals(viaWith.getMessageI18n().get("fr"), viaWith.getMessage());
    }

    @Test
    void transportFailuresAreApiConnectionExceptions() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        try (EnterpriseAIClient nowhere = EnterpriseAIClient.builder().baseUrl("http://127.0.0.1:" + port)
                .apiKey(server.adminKey()).maxRetries(2).retryBackoff(Duration.ofMillis(1), Duration.ofMillis(5))
                .build()) {
            ApiConnectionException e = assertThrows(ApiConnectionException.class, () -> nowhere.auth().whoAmI());
            assertEquals(0, e.getStatus());
            assertEquals("connection_error", e.getCode());
            assertNull(e.getRequestId());
        }
        try (FaultProxy proxy = new FaultProxy(server.baseUrl());
                EnterpriseAIClient slow = EnterpriseAIClient.builder().baseUrl(proxy.url())
                        .apiKey(server.adminKey()).timeout(Duration.ofMillis(300)).maxRetries(0).build()) {
            proxy.delayNext(1, "/v1/auth/whoami", Duration.ofSeconds(2));
            ApiTimeoutException t = assertThrows(ApiTimeoutException.class, () -> slow.auth().whoAmI());
            assertEquals("timeout", t.getCode());
            assertInstanceOf(ApiConnectionException.class, t);
        }
    }

    @Test
    void codesAServerCannotBeMadeToAnswerMapToTheirClassesToo() {
        // tenant_required needs a tenant-role key bound to no tenant: the API and the CLI refuse to make one, so
        // the envelope comes from the proxy; internal / unavailable / an unknown code / a non-JSON answer too.
        try (FaultProxy proxy = new FaultProxy(server.baseUrl());
                EnterpriseAIClient c = EnterpriseAIClient.builder().baseUrl(proxy.url()).apiKey(server.adminKey())
                        .maxRetries(0).build()) {
            proxy.failNext(1, "/", 403, "tenant_required", Map.of());
            assertEnvelope(assertThrows(TenantRequiredException.class, () -> c.auth().whoAmI()), 403,
                    "tenant_required");
            proxy.failNext(1, "/", 500, "internal", Map.of());
            assertEnvelope(assertThrows(InternalServerException.class, () -> c.auth().whoAmI()), 500, "internal");
            proxy.failNext(1, "/", 503, "unavailable", Map.of("Retry-After", "2"));
            ServiceUnavailableException u = assertThrows(ServiceUnavailableException.class, () -> c.auth().whoAmI());
            assertEnvelope(u, 503, "unavailable");
            assertEquals(Duration.ofSeconds(2), u.getRetryAfter());
            proxy.failNext(1, "/", 409, "brand_new_code", Map.of());
            EnterpriseAIException unknown = assertThrows(EnterpriseAIException.class, () -> c.auth().whoAmI());
            assertEquals(EnterpriseAIException.class, unknown.getClass(), "an unknown code is the base class");
            assertEquals("brand_new_code", unknown.getCode(), "an unknown code keeps its name");
            assertEquals(409, unknown.getStatus());
            assertTrue(unknown.getBody().contains("brand_new_code"), unknown.getBody());
            proxy.failNext(1, "/", 418, "teapot", Map.of());
            EnterpriseAIException teapot = assertThrows(EnterpriseAIException.class, () -> c.auth().whoAmI());
            assertEquals(EnterpriseAIException.class, teapot.getClass());
            proxy.rawNext("/", 502, "<html>Bad gateway</html>");
            EnterpriseAIException html = assertThrows(EnterpriseAIException.class, () -> c.auth().whoAmI());
            assertEquals(EnterpriseAIException.class, html.getClass(), "no envelope: the base class");
            assertNull(html.getCode(), "no envelope, no code");
            assertEquals(502, html.getStatus());
            assertEquals("<html>Bad gateway</html>", html.getBody());
            assertTrue(html.getMessage().contains("502"), html.getMessage());
            assertTrue(c.auth().whoAmI().role().equals("platform_admin"), "then the real answer");
        }
    }

    @Test
    void builderErrors() {
        assertThrows(IllegalStateException.class,
                () -> EnterpriseAIClient.builder().baseUrl(server.baseUrl()).apiKey("  ").build());
        assertThrows(IllegalArgumentException.class,
                () -> EnterpriseAIClient.builder().baseUrl("ftp://x").apiKey("eai_live_x").build());
        assertThrows(IllegalArgumentException.class, () -> EnterpriseAIClient.builder().maxRetries(-1));
        assertThrows(IllegalArgumentException.class, () -> EnterpriseAIClient.builder().maxBatchSize(0));
        assertThrows(IllegalArgumentException.class, () -> EnterpriseAIClient.builder().timeout(Duration.ZERO));
    }
}
