package ai.enterprise.eai.usage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.EnterpriseAIClient;
import ai.enterprise.eai.ValidationException;
import ai.enterprise.eai.model.Allocation;
import ai.enterprise.eai.model.AllocationItem;
import ai.enterprise.eai.model.Tenant;
import ai.enterprise.eai.model.UsageEvent;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import ai.enterprise.eai.testing.FaultProxy;
import ai.enterprise.eai.testing.Fixtures;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The background usage emitter against a real server, through a fault proxy. */
@ExtendWith(EaiServers.class)
class UsageEmitterTest {

    private static final String EVENTS = "/v1/usage/events";

    private static EaiServer server;
    private static Tenant acme;
    private static Tenant globex;

    @BeforeAll
    static void setUp() {
        server = EaiServers.shared();
        try (EnterpriseAIClient admin = server.admin()) {
            acme = Fixtures.ensureTenant(admin, "acme", "Acme Corp");
            globex = Fixtures.ensureTenant(admin, "globex", "Globex Corporation");
        }
    }

    private static void await(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "timed out");
            Thread.sleep(10);
        }
    }

    @Test
    void eventsFromSeveralThreadsAreAllStoredOnceAndCloseFlushes() throws Exception {
        String deployment = "emitter-shared-" + Fixtures.uniq();
        Instant hour = Fixtures.recentHour();
        Instant at = hour.plus(Duration.ofMinutes(10));
        try (EnterpriseAIClient admin = server.admin()) {
            admin.finops().createAllocationPolicy(Fixtures.workedExamplePolicy("emitter " + deployment, deployment));
            admin.finops().gpuSamples(Fixtures.hourOfSamples("GPU-" + deployment, deployment, hour, 400));
        }
        try (FaultProxy proxy = new FaultProxy(server.baseUrl());
                // retries off in the client: the emitter's own re-delivery is what is tested
                EnterpriseAIClient client = EnterpriseAIClient.builder().baseUrl(proxy.url())
                        .apiKey(server.adminKey()).maxRetries(0).build()) {
            // The second request's answer is lost (the server stored the batch): it is sent again, same ids.
            proxy.delayNext(1, EVENTS, Duration.ZERO).loseAnswerOfNext(1, EVENTS, 503, "unavailable");
            UsageEmitter emitter = UsageEmitter.builder(client)
                    .batchSize(100)
                    .flushInterval(Duration.ofMillis(50))
                    .retryBackoff(Duration.ofMillis(10), Duration.ofMillis(50))
                    .defaults(Map.of("usage_type", "llm_tokens", "source", "worker", "deployment_id", deployment,
                            "occurred_at", at))
                    .build();
            ExecutorService pool = Executors.newFixedThreadPool(4);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                done.add(pool.submit(() -> {
                    for (int i = 0; i < 250; i++) {
                        assertTrue(emitter.emit(Map.of("tenant_id", acme.id(), "units", Map.of("tokens_in", 1))));
                    }
                }));
            }
            // one typed event for globex, worth as much as acme's thousand
            assertTrue(emitter.emit(UsageEvent.builder().tenantId(globex.id()).usageType("llm_tokens")
                    .source("worker").deploymentId(deployment).occurredAt(at).unit("tokens_in", 1000).build()));
            for (Future<?> f : done) {
                f.get();
            }
            pool.shutdown();
            emitter.close();

            UsageEmitter.Stats stats = emitter.stats();
            assertEquals(1001, stats.emitted());
            assertEquals(1001, stats.delivered());
            assertEquals(0, stats.failed());
            assertEquals(0, stats.pending());
            assertEquals(0, stats.rejected());
            assertTrue(stats.retries() >= 1, stats.toString());
            assertTrue(emitter.pendingEvents().isEmpty());

            List<FaultProxy.Seen> posts = proxy.seen("POST", EVENTS);
            List<String> sent = new ArrayList<>();
            posts.forEach(p -> sent.addAll(p.eventIds()));
            Set<String> distinct = new HashSet<>(sent);
            assertEquals(1001, distinct.size(), "every event has one id");
            assertTrue(sent.size() > 1001, "the lost batch was sent again");
            assertEquals(1, posts.stream().filter(p -> p.status() == 503).count());
            assertTrue(posts.stream().allMatch(p -> p.records() <= 100), "batches of 100 at most");
            FaultProxy.Seen lost = posts.stream().filter(p -> p.status() == 503).findFirst().orElseThrow();
            assertTrue(posts.stream().anyMatch(p -> p != lost && p.status() == 200
                    && p.eventIds().equals(lost.eventIds())), "re-sent with the same ids");

            assertThrows(IllegalStateException.class,
                    () -> emitter.emit(Map.of("tenant_id", acme.id(), "units", Map.of("tokens_in", 1))));
        }

        // Stored once: acme's 1,000 events of 1 token weigh exactly globex's single 1,000-token event.
        try (EnterpriseAIClient admin = server.admin()) {
            Allocation a = admin.finops().gpuAllocation(hour, hour.plus(Duration.ofHours(1)));
            List<AllocationItem> items = a.items().stream().filter(i -> i.deploymentId().equals(deployment)).toList();
            AllocationItem acmeItem = items.stream().filter(i -> i.tenantId().equals(acme.id())).findFirst()
                    .orElseThrow();
            AllocationItem globexItem = items.stream().filter(i -> i.tenantId().equals(globex.id())).findFirst()
                    .orElseThrow();
            assertEquals(0, acmeItem.gpuSeconds().compareTo(globexItem.gpuSeconds()), items.toString());
            assertEquals(0, acmeItem.gpuSeconds().compareTo(java.math.BigDecimal.valueOf(1800)), items.toString());
            assertEquals(acmeItem.allocated(), globexItem.allocated());
        }
    }

    @Test
    void aFullQueueIsNeverDroppedSilently() throws Exception {
        try (FaultProxy proxy = new FaultProxy(server.baseUrl());
                EnterpriseAIClient client = EnterpriseAIClient.builder().baseUrl(proxy.url())
                        .apiKey(server.adminKey()).build()) {
            Map<String, Object> event = Map.of("tenant_id", acme.id(), "usage_type", "llm_tokens", "source",
                    "worker", "units", Map.of("tokens_in", 1));
            for (UsageEmitter.OnFull policy : UsageEmitter.OnFull.values()) {
                proxy.reset();
                proxy.hold(); // the server "hangs": the first batch stays in flight
                UsageEmitter emitter = UsageEmitter.builder(client).batchSize(5).maxQueueSize(10)
                        .flushInterval(Duration.ofMillis(10)).onFull(policy).blockTimeout(Duration.ofMillis(500))
                        .build();
                for (int i = 0; i < 10; i++) {
                    assertTrue(emitter.emit(event), policy + ": room for 10");
                }
                await(() -> proxy.received() >= 1);
                assertEquals(10, emitter.stats().pending(), "the batch in flight counts");
                long t0 = System.nanoTime();
                switch (policy) {
                    case RETURN_FALSE -> assertFalse(emitter.emit(event));
                    case THROW -> assertThrows(UsageEmitter.QueueFullException.class, () -> emitter.emit(event));
                    case BLOCK -> {
                        assertThrows(UsageEmitter.QueueFullException.class, () -> emitter.emit(event));
                        assertTrue(System.nanoTime() - t0 >= TimeUnit.MILLISECONDS.toNanos(490), "blocked first");
                    }
                    default -> throw new AssertionError(policy);
                }
                assertEquals(1, emitter.stats().rejected(), policy.toString());
                assertEquals(10, emitter.stats().emitted());

                // BLOCK waits for room: freed by the server's answers, it gets in.
                if (policy == UsageEmitter.OnFull.BLOCK) {
                    Thread releaser = new Thread(() -> {
                        try {
                            Thread.sleep(50);
                        } catch (InterruptedException ignored) {
                            // fine
                        }
                        proxy.release();
                    });
                    releaser.start();
                    assertTrue(emitter.emit(event), "room came within blockTimeout");
                    releaser.join();
                } else {
                    proxy.release();
                }
                assertTrue(emitter.close(Duration.ofSeconds(10)));
                UsageEmitter.Stats s = emitter.stats();
                assertEquals(s.emitted(), s.delivered(), s.toString());
                assertEquals(0, s.pending());
            }
        }
    }

    @Test
    void refusedEventsAreReportedAndTheOthersDelivered() throws Exception {
        List<Map<String, Object>> refused = new CopyOnWriteArrayList<>();
        List<RuntimeException> errors = Collections.synchronizedList(new ArrayList<>());
        try (EnterpriseAIClient client = server.admin();
                UsageEmitter emitter = UsageEmitter.builder(client).batchSize(10).flushInterval(Duration.ofMillis(20))
                        .defaults(Map.of("tenant_id", acme.id(), "usage_type", "llm_tokens", "source", "worker"))
                        .onError((e, events) -> {
                            errors.add(e);
                            refused.addAll(events);
                        })
                        .build()) {
            emitter.emit(Map.of("units", Map.of("tokens_in", 1)));
            emitter.emit(Map.of("units", Map.of("Not-A-Unit", 1)));
            emitter.emit(Map.of("units", Map.of("tokens_in", 2)));
            assertTrue(emitter.flush(Duration.ofSeconds(10)));
            UsageEmitter.Stats s = emitter.stats();
            assertEquals(2, s.delivered(), s.toString());
            assertEquals(1, s.failed(), s.toString());
            assertEquals(1, refused.size());
            assertEquals(Map.of("Not-A-Unit", 1), refused.get(0).get("units"));
            assertTrue(errors.get(0) instanceof ValidationException);

            assertThrows(IllegalArgumentException.class, () -> emitter.emit(Map.of("tenant_id", acme.id(),
                    "usage_type", "x", "source", "y", "units", Map.of()).entrySet().stream()
                    .filter(e -> !e.getKey().equals("units")).collect(
                            java.util.stream.Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue))),
                    "units is required");
        }
    }
}
