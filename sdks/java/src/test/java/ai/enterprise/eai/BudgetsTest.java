package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.model.Budget;
import ai.enterprise.eai.model.BudgetChange;
import ai.enterprise.eai.model.Money;
import ai.enterprise.eai.model.Reservation;
import ai.enterprise.eai.model.Tenant;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import ai.enterprise.eai.testing.Fixtures;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Budgets and reservations against a real server; every test on a tenant of its own. */
@ExtendWith(EaiServers.class)
class BudgetsTest {

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

    private static Tenant freshTenant() {
        String slug = "bud-" + Fixtures.uniq();
        return Fixtures.ensureTenant(admin, slug, "Budgets " + slug);
    }

    private static EnterpriseAIClient keyOf(String role, Tenant t) {
        return server.builder().apiKey(admin.auth().createApiKey(role, t.id(), "bud-" + role).key()).build();
    }

    private static Map<String, Object> budget(String name, String limit, boolean enforce) {
        Map<String, Object> b = new LinkedHashMap<>();
        b.put("name", name);
        b.put("limit", Map.of("amount", limit, "currency", "EUR"));
        b.put("enforce", enforce);
        return b;
    }

    private static void assertAmount(String expected, Money actual) {
        assertEquals("EUR", actual.currency());
        assertEquals(0, new BigDecimal(expected).compareTo(actual.amount()), expected + " != " + actual);
    }

    private static void assertDecimal(String expected, BigDecimal actual) {
        assertEquals(0, new BigDecimal(expected).compareTo(actual), expected + " != " + actual);
    }

    private static Map<String, Object> oneEuro() {
        return FinopsResource.reservationRequest("llm.invoke", new BigDecimal("1.00"), 100L, "bud-vllm");
    }

    @Test
    void aBudgetIsCreatedAndReadWithItsStanding() {
        Tenant t = freshTenant();
        Tenant other = freshTenant();
        try (EnterpriseAIClient finops = keyOf("finops", t); EnterpriseAIClient otherFinops = keyOf("finops", other)) {
            Map<String, Object> body = budget("monthly", "100.00", true);
            body.put("webhook_url", "https://hooks.example.com/eai");
            Budget created = finops.finops().createBudget(body);
            assertTrue(created.id().matches("bud_[0-9]+"), created.id());
            assertEquals(t.id(), created.tenantId());
            assertEquals("monthly", created.name());
            assertEquals("month", created.period());
            assertAmount("100.00", created.limit());
            assertTrue(created.enforce());
            assertEquals("active", created.status());
            assertNull(created.effectiveTo());
            assertNotNull(created.effectiveFrom());
            assertTrue(created.webhookSecret().matches("whsec_[0-9a-f]{64}"));
            assertFalse(created.toString().contains(created.webhookSecret()), "toString never shows the secret");
            assertNotNull(created.current());
            assertAmount("0", created.current().spent());
            assertAmount("0", created.current().held());
            assertAmount("100.00", created.current().left());
            assertTrue(created.current().month().matches("[0-9]{4}-[0-9]{2}"));

            Budget read = finops.finops().getBudget(created.id());
            assertNull(read.webhookSecret(), "the secret is shown once");
            assertEquals(created.limit(), read.limit());
            assertNotNull(read.current());
            assertTrue(finops.finops().listBudgets().stream().anyMatch(b -> b.id().equals(created.id())));

            // Another tenant's key does not see it.
            assertThrows(NotFoundException.class, () -> otherFinops.finops().getBudget(created.id()));
            assertFalse(otherFinops.finops().listBudgets().stream().anyMatch(b -> b.id().equals(created.id())));
            assertThrows(NotFoundException.class,
                    () -> otherFinops.finops().supersedeBudget(created.id(), Map.of("name", "stolen")));

            // platform_admin: any tenant, by the body's tenant_id or the client's tenant.
            Map<String, Object> byBody = budget("by admin", "50.00", false);
            byBody.put("tenant_id", other.id());
            Budget b1 = admin.finops().createBudget(byBody);
            assertEquals(other.id(), b1.tenantId());
            assertNull(b1.webhookSecret());
            Budget b2 = admin.withTenant(other.id()).finops().createBudget(budget("by header", "60.00", false));
            assertEquals(other.id(), b2.tenantId());
            assertEquals(b2.id(), otherFinops.finops().getBudget(b2.id()).id());
        }
    }

    @Test
    void anEnforcingBudgetThatFitsFiveGrantsExactlyFiveOfEight() throws Exception {
        Tenant t = freshTenant();
        try (EnterpriseAIClient finops = keyOf("finops", t); EnterpriseAIClient dev = keyOf("developer", t)) {
            Budget b = finops.finops().createBudget(budget("fits five", "5.00", true));
            ExecutorService pool = Executors.newFixedThreadPool(8);
            List<Future<Reservation>> futures = new ArrayList<>();
            try {
                for (int i = 0; i < 8; i++) {
                    Callable<Reservation> c = () -> dev.finops().reserve(oneEuro());
                    futures.add(pool.submit(c));
                }
                List<Reservation> granted = new ArrayList<>();
                List<BudgetExceededException> refused = new ArrayList<>();
                for (Future<Reservation> f : futures) {
                    try {
                        granted.add(f.get());
                    } catch (java.util.concurrent.ExecutionException e) {
                        if (e.getCause() instanceof BudgetExceededException x) {
                            refused.add(x);
                        } else {
                            throw e;
                        }
                    }
                }
                assertEquals(5, granted.size());
                assertEquals(3, refused.size());
                for (BudgetExceededException x : refused) {
                    assertEquals(402, x.getStatus());
                    assertEquals("budget_exceeded", x.getCode());
                    assertEquals("estimate.cost", x.getDetails().get(0).field());
                    assertTrue(x.getMessage().contains(b.id()), x.getMessage());
                    assertNotNull(x.getRequestId());
                }
                for (Reservation r : granted) {
                    assertEquals("held", r.status());
                    assertTrue(r.id().matches("res_[0-9a-f]{32}"), r.id());
                    assertEquals(t.id(), r.tenantId());
                    assertEquals("llm.invoke", r.action());
                    assertEquals("bud-vllm", r.deploymentId());
                    assertDecimal("1.00", r.estimate().cost());
                    assertDecimal("100", r.estimate().tokens());
                    assertEquals("EUR", r.estimate().currency());
                    assertNull(r.actual());
                    assertNotNull(r.expiresAt());
                }
                Budget full = finops.finops().getBudget(b.id());
                assertAmount("5.00", full.current().held());
                assertAmount("0", full.current().left());

                // Commit is idempotent: a re-commit answers the stored reservation unchanged.
                Reservation first = granted.get(0);
                Reservation committed = dev.finops().commitReservation(first.id(), new BigDecimal("0.40"), 80L);
                assertEquals("committed", committed.status());
                assertDecimal("0.40", committed.actual().cost());
                assertDecimal("80", committed.actual().tokens());
                assertNotNull(committed.usageEventId());
                assertNotNull(committed.closedAt());
                Reservation again = dev.finops().commitReservation(first.id(), new BigDecimal("0.90"), null);
                assertEquals(committed, again);
                assertEquals(committed, dev.finops().getReservation(first.id()));
                Budget afterCommit = finops.finops().getBudget(b.id());
                assertAmount("0.40", afterCommit.current().spent());
                assertAmount("4.00", afterCommit.current().held());
                assertAmount("0.60", afterCommit.current().left());
                assertDecimal("80", afterCommit.current().spentTokens());

                // Release frees the hold; idempotent; a committed one cannot be released, a released one not committed.
                Reservation second = granted.get(1);
                Reservation released = dev.finops().releaseReservation(second.id());
                assertEquals("released", released.status());
                assertNull(released.actual());
                assertEquals("released", dev.finops().releaseReservation(second.id()).status());
                assertThrows(ConflictException.class, () -> dev.finops().releaseReservation(first.id()));
                assertThrows(ConflictException.class,
                        () -> dev.finops().commitReservation(second.id(), BigDecimal.ONE, null));
                Budget afterRelease = finops.finops().getBudget(b.id());
                assertAmount("3.00", afterRelease.current().held());
                assertAmount("1.60", afterRelease.current().left());

                // Another tenant does not see the reservation.
                try (EnterpriseAIClient stranger = keyOf("developer", freshTenant())) {
                    assertThrows(NotFoundException.class, () -> stranger.finops().getReservation(first.id()));
                    assertThrows(NotFoundException.class, () -> stranger.finops().releaseReservation(second.id()));
                }
                for (Reservation r : granted.subList(2, 5)) {
                    dev.finops().releaseReservation(r.id());
                }
            } finally {
                pool.shutdownNow();
            }
        }
    }

    @Test
    void withReservationCommitsWhatTheWorkReturnsAndReleasesWhenItThrows() {
        Tenant t = freshTenant();
        try (EnterpriseAIClient finops = keyOf("finops", t); EnterpriseAIClient dev = keyOf("tenant_admin", t)) {
            Budget b = finops.finops().createBudget(budget("helper", "10.00", true));

            Reservation actual = dev.finops().withReservation(oneEuro(), r -> {
                assertEquals("held", r.status());
                return new Reservation.Actual(new BigDecimal("0.30"), 42L);
            });
            assertEquals("committed", actual.status());
            assertDecimal("0.30", actual.actual().cost());
            assertDecimal("42", actual.actual().tokens());

            Reservation estimate = dev.finops().withReservation(oneEuro(), r -> null);
            assertEquals("committed", estimate.status());
            assertDecimal("1.00", estimate.actual().cost());
            assertDecimal("100", estimate.actual().tokens());

            AtomicReference<Reservation> seen = new AtomicReference<>();
            IllegalStateException boom = new IllegalStateException("model down");
            IllegalStateException thrown = assertThrows(IllegalStateException.class,
                    () -> dev.finops().withReservation(oneEuro(), r -> {
                        seen.set(r);
                        throw boom;
                    }));
            assertSame(boom, thrown);
            assertEquals("released", dev.finops().getReservation(seen.get().id()).status());

            Budget after = finops.finops().getBudget(b.id());
            assertAmount("1.30", after.current().spent());
            assertAmount("0", after.current().held());

            // Refused: the work never runs.
            Map<String, Object> tooMuch = FinopsResource.reservationRequest("llm.invoke", new BigDecimal("9.00"), null,
                    null);
            assertThrows(BudgetExceededException.class, () -> dev.finops().withReservation(tooMuch, r -> {
                throw new AssertionError("must not run");
            }));
        }
    }

    @Test
    void aBudgetIsSupersededThenDisabled() {
        Tenant t = freshTenant();
        try (EnterpriseAIClient finops = keyOf("finops", t); EnterpriseAIClient dev = keyOf("developer", t)) {
            Map<String, Object> body = budget("to change", "1.00", true);
            body.put("webhook_url", "https://hooks.example.com/eai");
            Budget b = finops.finops().createBudget(body);
            assertThrows(BudgetExceededException.class, () -> dev.finops().reserve("llm.invoke",
                    new BigDecimal("2.00"), null, null));

            BudgetChange ch = finops.finops().supersedeBudget(b.id(),
                    Map.of("limit", Map.of("amount", "10.00", "currency", "EUR")));
            assertEquals(b.id(), ch.closed().id());
            assertEquals("closed", ch.closed().status());
            assertNotNull(ch.closed().effectiveTo());
            Budget opened = ch.opened();
            assertNotNull(opened);
            assertAmount("10.00", opened.limit());
            assertEquals("to change", opened.name());
            assertTrue(opened.enforce());
            assertEquals("https://hooks.example.com/eai", opened.webhookUrl());
            assertNull(opened.webhookSecret());
            assertEquals("closed", finops.finops().getBudget(b.id()).status());

            Reservation r = dev.finops().reserve("llm.invoke", new BigDecimal("2.00"), null, null);
            assertEquals("held", r.status());
            dev.finops().releaseReservation(r.id());

            BudgetChange off = finops.finops().disableBudget(opened.id(), (String) null);
            assertEquals(opened.id(), off.closed().id());
            assertEquals("closed", off.closed().status());
            assertNull(off.opened());
            // Nothing enforces any more.
            Reservation free = dev.finops().reserve("llm.invoke", new BigDecimal("50.00"), null, null);
            assertEquals("held", free.status());
            dev.finops().releaseReservation(free.id());

            // A platform_admin disables at a given instant.
            Budget later = admin.withTenant(t.id()).finops().createBudget(budget("later", "3.00", false));
            BudgetChange at = admin.finops().disableBudget(later.id(), "2999-01-01");
            assertNull(at.opened());
            assertEquals("2999-01-01T00:00:00Z", at.closed().effectiveTo().toString());
        }
    }
}
