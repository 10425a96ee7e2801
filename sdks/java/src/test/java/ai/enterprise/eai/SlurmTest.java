package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.model.Money;
import ai.enterprise.eai.model.SlurmJobLine;
import ai.enterprise.eai.model.SlurmReconciliation;
import ai.enterprise.eai.model.Tenant;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.Fixtures;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Slurm's accounting beside what was measured ({@code finops().gpuSlurmReconciliation}) against a real server of
 * its own, with a real {@code sacct --json} capture ({@code src/test/resources/fixtures/sacct.json}, Slurm
 * 22.05): job 1 (account physics) held 2 GPUs and job 2 (account bio) 1 GPU, both for the 20 s from
 * {@code time.start} to {@code time.end}. The samplers' pods {@code job-1} and {@code job-2} measured them busy
 * 90 % and 2 %: job 1 is {@code ok}, job 2 {@code idle}, and the idle cost is job 2's.
 */
class SlurmTest {

    private static EaiServer server;
    private static EnterpriseAIClient admin;
    private static byte[] sacctBytes;
    private static JsonNode sacct;
    private static Instant from;
    private static Instant to;

    @BeforeAll
    static void setUp() throws IOException {
        try (InputStream in = SlurmTest.class.getResourceAsStream("/fixtures/sacct.json")) {
            sacctBytes = in.readAllBytes();
        }
        sacct = new ObjectMapper().readTree(sacctBytes);
        Instant started = Instant.ofEpochSecond(sacct.path("jobs").path(0).path("time").path("start").asLong());
        from = started.truncatedTo(ChronoUnit.HOURS);
        to = from.plus(Duration.ofHours(1));
        server = EaiServer.start("slurm", EaiServer.randomKey(), EaiServer.noRateLimits());
        admin = server.builder().maxRetries(0).build();
        admin.finops().createAllocationPolicy(Fixtures.workedExamplePolicy("slurm", "slurm/*"));
        // 5 s windows ending 5, 10, 15 and 20 s after the jobs started.
        List<Map<String, Object>> samples = new ArrayList<>();
        for (int k = 1; k <= 4; k++) {
            Instant end = started.plusSeconds(5L * k);
            samples.add(sample("GPU-0", "job-1", "physics", "0.9", end));
            samples.add(sample("GPU-1", "job-1", "physics", "0.9", end));
            samples.add(sample("GPU-2", "job-2", "bio", "0.02", end));
        }
        assertEquals(12, admin.finops().gpuSamples(samples).accepted());
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

    private static Map<String, Object> sample(String gpu, String pod, String account, String utilization,
            Instant end) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("node", "slurm-node-1");
        s.put("gpu_uuid", gpu);
        s.put("model", "H100-80GB");
        s.put("namespace", account);
        s.put("pod", pod);
        s.put("deployment_id", "slurm/gpu");
        s.put("window_seconds", 5);
        s.put("utilization", new BigDecimal(utilization));
        s.put("memory_used_gb", 10);
        s.put("power_w", 300);
        s.put("timestamp", end);
        return s;
    }

    private static void check(SlurmReconciliation r) {
        assertEquals(from, r.from());
        assertEquals(to, r.to());
        assertEquals(0, new BigDecimal("0.1").compareTo(r.idleBelow()));
        assertEquals(0, BigDecimal.valueOf(60).compareTo(r.allocatedGpuSeconds()));
        assertEquals(0, BigDecimal.valueOf(60).compareTo(r.measuredGpuSeconds()));
        assertEquals(List.of("1", "2"), r.jobs().stream().map(SlurmJobLine::jobId).toList());
        SlurmJobLine one = r.job("1").orElseThrow();
        SlurmJobLine two = r.job("2").orElseThrow();
        assertTrue(r.job("3").isEmpty());
        assertEquals(List.of("physics", "root", "gpu", "COMPLETED", "slurm/gpu", SlurmJobLine.STATUS_OK),
                List.of(one.account(), one.user(), one.partition(), one.state(), one.deploymentId(), one.status()));
        assertEquals(2, one.gpus());
        assertNull(one.tenantId(), "no [[slurm_account]] rule: shared");
        assertEquals(List.of("40", "40", "36", "0.9"), List.of(one.allocatedGpuSeconds().toPlainString(),
                one.measuredGpuSeconds().toPlainString(), one.busyGpuSeconds().toPlainString(),
                one.busyShare().toPlainString()));
        assertEquals(List.of("bio", SlurmJobLine.STATUS_IDLE), List.of(two.account(), two.status()));
        assertEquals(1, two.gpus());
        assertEquals(List.of("20", "20", "0.02"), List.of(two.allocatedGpuSeconds().toPlainString(),
                two.measuredGpuSeconds().toPlainString(), two.busyShare().toPlainString()));
        // Both priced; the idle cost is the idle job's.
        for (SlurmJobLine j : r.jobs()) {
            assertEquals(1, j.cost().size());
            assertEquals("EUR", j.cost().get(0).currency());
            assertEquals(2, j.cost().get(0).amount().scale(), "the cents as the server wrote them");
        }
        assertEquals(two.cost(), r.idleCost());
        assertEquals(two.total("EUR"), r.idleTotal("EUR"));
        assertEquals(BigDecimal.ZERO, r.idleTotal("USD"));
        assertEquals(List.of(two), r.withStatus(SlurmJobLine.STATUS_IDLE));
    }

    @Test
    void aBusyJobIsOkAndAnIdleOneIdleWhateverFormTheDocumentComesIn(@TempDir Path dir) throws IOException {
        SlurmReconciliation r = admin.finops().gpuSlurmReconciliation(sacct, from, to, null);
        check(r);
        check(admin.finops().gpuSlurmReconciliation(sacctBytes, Map.of("from", from, "to", to)));
        check(admin.finops().gpuSlurmReconciliation(new String(sacctBytes, StandardCharsets.UTF_8),
                Map.of("from", from, "to", to)));
        Map<?, ?> asMap = new ObjectMapper().readValue(sacctBytes, Map.class);
        check(admin.finops().gpuSlurmReconciliation(asMap, Map.of("from", from, "to", to)));
        Path file = Files.write(dir.resolve("sacct.json"), sacctBytes);
        assertEquals(r, admin.finops().gpuSlurmReconciliation(file, Map.of("from", from, "to", to)));
        assertThrows(IllegalArgumentException.class,
                () -> admin.finops().gpuSlurmReconciliation(42, Map.of("from", from, "to", to)));
    }

    @Test
    void idleBelowMovesTheThreshold() {
        SlurmReconciliation low = admin.finops().gpuSlurmReconciliation(sacct, from, to, new BigDecimal("0.01"));
        assertEquals("0.01", low.idleBelow().toPlainString());
        assertEquals(List.of("ok", "ok"), low.jobs().stream().map(SlurmJobLine::status).toList());
        assertEquals(List.of(), low.idleCost());
        SlurmReconciliation high = admin.finops().gpuSlurmReconciliation(sacct,
                Map.of("from", from, "to", to, "idle_below", "0.95"));
        assertEquals(List.of("idle", "idle"), high.jobs().stream().map(SlurmJobLine::status).toList());
        BigDecimal both = high.jobs().stream().map(j -> j.total("EUR")).reduce(BigDecimal.ZERO, BigDecimal::add);
        assertEquals(both, high.idleTotal("EUR"));
        assertEquals(List.of(new Money(both, "EUR")), high.idleCost());
    }

    @Test
    void anIdleBelowOutOfRangeOrADocumentWithoutJobsIsAValidationError() {
        ValidationException e = assertThrows(ValidationException.class,
                () -> admin.finops().gpuSlurmReconciliation(sacct, from, to, new BigDecimal("2")));
        assertEquals(422, e.getStatus());
        assertEquals(List.of("idle_below"), e.fields());
        ValidationException body = assertThrows(ValidationException.class,
                () -> admin.finops().gpuSlurmReconciliation(Map.of("meta", Map.of()), from, to, null));
        assertEquals(List.of("body"), body.fields());
    }

    @Test
    void aJobOutsideThePeriodIsLeftOut() {
        SlurmReconciliation r = admin.finops().gpuSlurmReconciliation(sacct, from.minus(Duration.ofHours(1)), from,
                null);
        assertEquals(List.of(), r.jobs());
        assertEquals(0, BigDecimal.ZERO.compareTo(r.allocatedGpuSeconds()));
    }

    @Test
    void aTenantSeesTheJobsOfItsDedicatedDeploymentsOnlyAndASamplerNone() {
        Tenant acme = admin.tenants().create("slurm-acme", "Acme");
        try (EnterpriseAIClient viewer = server.builder()
                .apiKey(admin.auth().createApiKey("viewer", acme.id(), "slurm viewer").key()).build()) {
            SlurmReconciliation mine = viewer.finops().gpuSlurmReconciliation(sacct, from, to, null);
            assertEquals(List.of(), mine.jobs(), "both jobs ran on shared GPUs");
            assertEquals(List.of(), mine.idleCost());
        }
        try (EnterpriseAIClient sampler = server.builder().maxRetries(0)
                .apiKey(admin.auth().createApiKey("sampler", null, "slurm sampler").key()).build()) {
            assertThrows(PermissionDeniedException.class,
                    () -> sampler.finops().gpuSlurmReconciliation(sacct, from, to, null));
        }
    }
}
