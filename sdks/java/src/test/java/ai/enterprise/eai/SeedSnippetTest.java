package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.model.Allocation;
import ai.enterprise.eai.model.AllocationPolicy;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import ai.enterprise.eai.testing.Fixtures;
import java.math.BigDecimal;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The README's seed snippet, run as written against a real server.
 *
 * <p>The ONLY change to the snippet: Java is compiled, so {@code "<control-plane-url>"} is the static field
 * {@link #CONTROL_PLANE_URL}, set to the test server's URL before the test. {@code System.getenv("EAI_API_KEY")}
 * works unchanged: the pom (surefire {@code environmentVariables}) exports the fixed bootstrap key of the shared
 * server as {@code EAI_API_KEY}. The tenant {@code acme} is registered first.
 */
@ExtendWith(EaiServers.class)
class SeedSnippetTest {

    /** Stands for {@code "<control-plane-url>"} in the snippet. */
    static String CONTROL_PLANE_URL;

    private static EaiServer server;

    @BeforeAll
    static void setUp() {
        server = EaiServers.shared();
        CONTROL_PLANE_URL = server.baseUrl();
        assertEquals(server.adminKey(), System.getenv("EAI_API_KEY"),
                "EAI_API_KEY must be the shared server's bootstrap key: run the tests with mvn (see test.sh)");
        try (EnterpriseAIClient admin = server.admin()) {
            Fixtures.ensureTenant(admin, "acme", "Acme Corp");
        }
    }

    @Test
    void theSeedSnippetRunsAsWritten() {
        Instant before = Instant.now().truncatedTo(ChronoUnit.MILLIS);
        List<Map<String, Object>> samples = List.of(
                Map.of("node", "gpu-node-1", "gpu_uuid", "GPU-seed-0a1b/mig-13", "model", "L40S",
                        "namespace", "eai-inference", "pod", "seed-vllm-mistral-7b-0",
                        "deployment_id", "seed-vllm-mistral-7b", "window_seconds", 15, "utilization", 0.5,
                        "memory_used_gb", 20.25, "power_w", 180.5),
                Map.of("node", "gpu-node-1", "gpu_uuid", "GPU-seed-0a1c", "model", "L40S",
                        "namespace", "eai-inference", "pod", "seed-vllm-mistral-7b-1",
                        "deployment_id", "seed-vllm-mistral-7b", "window_seconds", 15, "utilization", 0.82,
                        "memory_used_gb", 40.5, "power_w", 300));

        // ---- the seed snippet, unchanged but for CONTROL_PLANE_URL ----
        EnterpriseAIClient client = EnterpriseAIClient.builder()
            .baseUrl(CONTROL_PLANE_URL)
            .apiKey(System.getenv("EAI_API_KEY"))
            .tenant("acme")
            .locale(Locale.ENGLISH)
            .build();
        client.finops().gpuSamples(Map.of("samples", samples));
        client.finops().gpuAllocation(Map.of("from", "2026-10-01", "to", "2026-10-31"));
        client.finops().createAllocationPolicy(Map.of("name", "local-gpu-default", "gpu_model", "L40S", "gpu_hourly_cost", 2.10));
        client.providers().catalog();
        // ---- end of the snippet ----

        // Every call succeeded (none threw). What they did:
        try (EnterpriseAIClient admin = server.admin()) {
            Allocation a = admin.finops().gpuAllocation(before.minusSeconds(60), Instant.now().plusSeconds(1));
            assertEquals(2, Fixtures.deployment(a, "seed-vllm-mistral-7b").orElseThrow().samples(),
                    "both samples stored (stamped with the current instant by the SDK)");
            AllocationPolicy policy = admin.finops().listAllocationPolicies().stream()
                    .filter(p -> p.name().equals("local-gpu-default")).reduce((x, y) -> y).orElseThrow();
            assertEquals(new BigDecimal("2.10"), policy.gpuHourlyCost(), "2.10 arrived as the exact decimal 2.1");
            assertEquals("L40S", policy.gpuModel());
            assertEquals("USD", policy.currency(), "the server's default currency");
            assertTrue(client.providers().catalog().items().stream()
                    .anyMatch(p -> p.baseUrl().contains("seed-vllm-mistral-7b")), "the catalog lists the deployment");
            Allocation october = client.finops().gpuAllocation(Map.of("from", "2026-10-01", "to", "2026-10-31"));
            assertEquals("2026-10", october.period());
        }
        client.close();
    }
}
