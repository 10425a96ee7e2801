package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.model.Allocation;
import ai.enterprise.eai.model.IngestResult;
import ai.enterprise.eai.model.Tenant;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import ai.enterprise.eai.testing.FaultProxy;
import ai.enterprise.eai.testing.Fixtures;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Retries through a fault proxy in front of the real server: attempts counted, ingests counted once. */
@ExtendWith(EaiServers.class)
class RetryTest {

    private static final String SAMPLES = "/v1/finops/gpu/samples";

    private static EaiServer server;
    private static Tenant acme;
    private FaultProxy proxy;
    private EnterpriseAIClient client;

    @BeforeAll
    static void setUpServer() {
        server = EaiServers.shared();
        try (EnterpriseAIClient admin = server.admin()) {
            acme = Fixtures.ensureTenant(admin, "acme", "Acme Corp");
        }
    }

    @BeforeEach
    void setUp() {
        proxy = new FaultProxy(server.baseUrl());
        client = EnterpriseAIClient.builder().baseUrl(proxy.url()).apiKey(server.adminKey()).maxRetries(3)
                .retryBackoff(Duration.ofMillis(10), Duration.ofMillis(50)).build();
    }

    @AfterEach
    void tearDown() {
        client.close();
        proxy.close();
    }

    @Test
    void unavailable503IsRetriedUntilItSucceeds() {
        proxy.failNext(2, "/v1/auth/whoami", 503, "unavailable", Map.of());
        assertEquals("platform_admin", client.auth().whoAmI().role());
        assertEquals(3, proxy.seen("GET", "/v1/auth/whoami").size(), "two 503s, then the answer");
        assertEquals(List.of(503, 503, 200), proxy.seen().stream().map(FaultProxy.Seen::status).toList());
    }

    @Test
    void retriesStopAtMaxRetries() {
        proxy.failNext(5, "/v1/auth/whoami", 503, "unavailable", Map.of());
        ServiceUnavailableException e = assertThrows(ServiceUnavailableException.class, () -> client.auth().whoAmI());
        assertEquals(503, e.getStatus());
        assertEquals(4, proxy.seen().size(), "1 attempt + maxRetries (3)");
        try (EnterpriseAIClient noRetry = EnterpriseAIClient.builder().baseUrl(proxy.url())
                .apiKey(server.adminKey()).maxRetries(0).build()) {
            proxy.reset();
            proxy.failNext(1, "/", 503, "unavailable", Map.of());
            assertThrows(ServiceUnavailableException.class, () -> noRetry.auth().whoAmI());
            assertEquals(1, proxy.seen().size());
        }
    }

    @Test
    void rateLimited429HonoursRetryAfter() {
        proxy.failNext(1, "/v1/tenants", 429, "rate_limited", Map.of("Retry-After", "1"));
        long t0 = System.nanoTime();
        List<Tenant> tenants = client.tenants().list();
        long elapsedMs = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(tenants.contains(acme));
        assertTrue(elapsedMs >= 900, "waited Retry-After: 1 s, not the 10 ms backoff (" + elapsedMs + " ms)");
        assertEquals(2, proxy.seen().size());
    }

    @Test
    void aRetryAfterAboveTheCapIsNotWaitedFor() {
        try (EnterpriseAIClient capped = EnterpriseAIClient.builder().baseUrl(proxy.url())
                .apiKey(server.adminKey()).maxRetryAfter(Duration.ofMillis(100)).build()) {
            proxy.failNext(2, "/", 429, "rate_limited", Map.of("Retry-After", "3600"));
            long t0 = System.nanoTime();
            RateLimitException e = assertThrows(RateLimitException.class, () -> capped.auth().whoAmI());
            assertEquals(Duration.ofHours(1), e.getRetryAfter());
            assertTrue((System.nanoTime() - t0) / 1_000_000 < 5_000, "raised at once");
            assertEquals(1, proxy.seen().size());
        }
    }

    @Test
    void otherClientErrorsAreNeverRetried() {
        proxy.failNext(1, "/", 404, "not_found", Map.of());
        assertThrows(NotFoundException.class, () -> client.auth().whoAmI());
        proxy.failNext(1, "/", 422, "validation_error", Map.of());
        assertThrows(ValidationException.class, () -> client.auth().whoAmI());
        assertEquals(2, proxy.seen().size());
    }

    @Test
    void aLostAnswerOfSamplesIsRetriedWithTheSameStampAndCountedOnce() {
        String deployment = "retry-lost-" + Fixtures.uniq();
        List<Map<String, Object>> samples = new ArrayList<>();
        for (int g = 0; g < 3; g++) {
            samples.add(Fixtures.sample("GPU-" + deployment + "-" + g, deployment, null, 300)); // no timestamp
        }
        List<Map<String, Object>> before = new ArrayList<>();
        for (Map<String, Object> s : samples) {
            before.add(new HashMap<>(s));
        }
        Instant t0 = Instant.now();
        // The server stores the batch, the caller gets a 503 (the answer was lost): the SDK sends it again.
        proxy.loseAnswerOfNext(1, SAMPLES, 503, "unavailable");
        IngestResult r = client.finops().gpuSamples(samples);
        assertEquals(new IngestResult(3, 3, 1), r, "the retry was recognised as a duplicate of what was stored");

        List<FaultProxy.Seen> posts = proxy.seen("POST", SAMPLES);
        assertEquals(2, posts.size(), "one lost answer, one retry");
        assertTrue(posts.get(0).forwarded());
        assertEquals(posts.get(0).timestamps(), posts.get(1).timestamps(), "stamped once, before the first attempt");
        assertEquals(3, posts.get(0).timestamps().size());
        assertTrue(posts.get(0).timestamps().get(0).matches("\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z"),
                posts.get(0).timestamps().get(0));
        assertEquals(before, samples, "the caller's maps were not stamped");

        try (EnterpriseAIClient admin = server.admin()) {
            Allocation a = admin.finops().gpuAllocation(t0.minusSeconds(60), Instant.now().plusSeconds(1));
            assertEquals(3, Fixtures.deployment(a, deployment).orElseThrow().samples(), "counted once");
        }
    }

    @Test
    void aLostAnswerOfUsageEventsIsRetriedWithTheSameIds() {
        String deployment = "retry-events-" + Fixtures.uniq();
        List<Map<String, Object>> events = List.of(
                Fixtures.usageEvent(acme.id(), deployment, Instant.now().minusSeconds(5), Map.of("tokens_in", 1)),
                Fixtures.usageEvent(acme.id(), deployment, Instant.now().minusSeconds(5), Map.of("tokens_in", 2)));
        proxy.loseAnswerOfNext(1, "/v1/usage/events", 500, "internal");
        assertEquals(new IngestResult(2, 0, 1), client.usage().events(events));
        List<FaultProxy.Seen> posts = proxy.seen("POST", "/v1/usage/events");
        assertEquals(2, posts.size());
        assertEquals(2, posts.get(0).eventIds().size());
        assertEquals(posts.get(0).eventIds(), posts.get(1).eventIds(), "ids given once, before the first attempt");
        assertFalse(events.get(0).containsKey("event_id"), "the caller's maps are not modified");
    }

    @Test
    void aCreateIsRetriedOnEveryRetryableFailureItsIdempotencyKeyMakingItSafe() {
        // every POST carries an Idempotency-Key, so a create is retried like a read (behaviour.json `idempotency`)
        proxy.failNext(1, "/v1/tenants", 500, "internal", Map.of());
        proxy.failNext(1, "/v1/tenants", 503, "unavailable", Map.of());
        proxy.failNext(1, "/v1/tenants", 429, "rate_limited", Map.of("Retry-After", "0"));
        String slug = "retry-" + Fixtures.uniq();
        Tenant t = client.tenants().create(slug, "Retry");
        assertEquals(slug, t.slug());
        assertEquals(4, proxy.seen("POST", "/v1/tenants").size());
        // a 4xx other than 408/429 (and 409 idempotency_key_in_flight) is not
        proxy.failNext(1, "/v1/tenants", 409, "conflict", Map.of());
        assertThrows(ConflictException.class, () -> client.tenants().create("retry-" + Fixtures.uniq(), "Retry"));
        assertEquals(5, proxy.seen("POST", "/v1/tenants").size());
    }
}
