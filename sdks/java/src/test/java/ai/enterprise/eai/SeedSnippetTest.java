package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import ai.enterprise.eai.model.Allocation;
import ai.enterprise.eai.model.AllocationPolicy;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import ai.enterprise.eai.testing.Fixtures;
import ai.enterprise.eai.testing.Snippets;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The seed's Java snippet, exactly as the seed writes it, run against a real server.
 *
 * <p>The lines are read from the repository's copy of the seed's snippets, {@code sdks/seed/sdk-examples.txt}
 * (the lines between the heading lines {@code Java} and {@code Go}), and copied byte for byte into a generated
 * class (see {@link Snippets}): the only things supplied are what the seed leaves to the reader, namely
 * {@code <control-plane-url>} (replaced by the server's URL inside its string), the undefined {@code samples}
 * (declared on the line before the snippet), and the imports of the types it names ({@code EnterpriseAIClient},
 * {@code Locale}, {@code Map}), which the seed does not write. {@code System.getenv("EAI_API_KEY")} works
 * unchanged: the pom exports the shared server's bootstrap key as {@code EAI_API_KEY}. The tenant {@code acme} is
 * registered first.
 *
 * <p>What the server answers: every call succeeds, {@code createAllocationPolicy} with {@code "gpu_hourly_cost",
 * 2.10} (a {@code Double}) and {@code "gpu_model", "L40S"} included (201: the SDK sends 2.10 as the decimal
 * {@code 2.1}, and the policy is stored with {@code gpu_hourly_cost} 2.10, the default currency USD and pattern
 * {@code *}). The test asserts that outcome and the effects of each call.
 */
@ExtendWith(EaiServers.class)
class SeedSnippetTest {

    /** What the seed leaves to the reader: the imports of the types its Java snippet names. */
    static final List<String> SEED_IMPORTS = List.of(
            "ai.enterprise.eai.EnterpriseAIClient", "java.util.Locale", "java.util.Map");

    private static EaiServer server;

    @BeforeAll
    static void setUp() {
        server = Snippets.serverForSnippets();
    }

    /** The seed's Java section, from the repository's copy. */
    static List<String> seedJavaLines() {
        Path seed = Snippets.seedExamples();
        assertTrue(seed.toFile().isFile(), "the repository's copy of the seed's snippets is missing: " + seed);
        return Snippets.seedSection(Snippets.lines(seed), "Java", "Go");
    }

    @Test
    void theSeedSectionIsAJavaSnippetWithItsPlaceholders() {
        List<String> lines = seedJavaLines();
        assertFalse(lines.isEmpty(), "the seed's Java section is empty");
        assertEquals(1, lines.stream().filter(l -> l.contains("<control-plane-url>")).count(),
                "the seed's Java snippet names <control-plane-url> once: " + lines);
        assertTrue(lines.stream().anyMatch(l -> l.contains("samples")), "the seed's Java snippet uses samples");
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("EnterpriseAIClient client = ")),
                "the seed's Java snippet declares `client` (the generated class returns it to be closed)");
    }

    @Test
    void theSeedSnippetRunsAsWritten() throws Throwable {
        List<String> seed = seedJavaLines();
        String source = Snippets.source("SeedJavaSnippet", SEED_IMPORTS, seed, server.baseUrl());

        // The lines the test compiles are the seed's, byte for byte: between the declaration of `samples` and
        // the `return client;` of the generated method, with the server's URL turned back into the placeholder.
        List<String> generated = List.of(source.split("\n", -1));
        int first = generated.indexOf("java.util.List<java.util.Map<String, Object>> samples = given;") + 1;
        int end = generated.lastIndexOf("return client;");
        assertTrue(first > 0 && end >= first, "the generated source has its frame:\n" + source);
        List<String> compiled = generated.subList(first, end).stream()
                .map(l -> l.replace(server.baseUrl(), "<control-plane-url>")).collect(Collectors.toList());
        assertEquals(seed, compiled, "the compiled lines are the seed's, byte for byte");
        assertTrue(source.contains(".baseUrl(\"" + server.baseUrl() + "\")"),
                "<control-plane-url> became the server's URL inside its string literal:\n" + source);

        runAndCheck(server, "SeedJavaSnippet", source, "seed-vllm-mistral-7b-" + Fixtures.uniq());
    }

    /**
     * Runs a generated snippet class against {@code server} with two samples of {@code deployment} and checks what the seed's calls
     * did: both samples stored, one new policy {@code local-gpu-default} (L40S, 2.10 exactly, USD, pattern
     * {@code *}, active), the catalog lists the deployment, and October 2026's allocation answers.
     */
    static void runAndCheck(EaiServer server, String className, String source, String deployment) throws Throwable {
        Instant before = Instant.now().truncatedTo(ChronoUnit.MILLIS);
        List<Map<String, Object>> samples = List.of(
                Map.of("node", "gpu-node-1", "gpu_uuid", "GPU-" + deployment + "/mig-13", "model", "L40S",
                        "namespace", "eai-inference", "pod", deployment + "-0",
                        "deployment_id", deployment, "window_seconds", 15, "utilization", 0.5,
                        "memory_used_gb", 20.25, "power_w", 180.5),
                Map.of("node", "gpu-node-1", "gpu_uuid", "GPU-" + deployment + "-b", "model", "L40S",
                        "namespace", "eai-inference", "pod", deployment + "-1",
                        "deployment_id", deployment, "window_seconds", 15, "utilization", 0.82,
                        "memory_used_gb", 40.5, "power_w", 300));

        try (EnterpriseAIClient admin = server.admin()) {
            Set<String> policiesBefore = admin.finops().listAllocationPolicies().stream()
                    .map(AllocationPolicy::id).collect(Collectors.toSet());

            EnterpriseAIClient client;
            try {
                client = Snippets.compileAndRun(className, source, samples);
            } catch (EnterpriseAIException e) {
                // The real answer, named: which call the server refused and why.
                throw new AssertionError("the snippet's call was refused: " + e.getStatus() + " " + e.getCode()
                        + " " + e.getMessage() + " " + e.getDetails(), e);
            }
            assertNotNull(client, "the snippet's client");

            try (client) {
                // Samples: both stored, stamped with the current instant by the SDK.
                Allocation a = admin.finops().gpuAllocation(before.minusSeconds(60), Instant.now().plusSeconds(1));
                assertEquals(2, Fixtures.deployment(a, deployment).orElseThrow(
                        () -> new AssertionError("no row for " + deployment + " in " + a.deployments())).samples(),
                        "both samples stored");

                // The policy: accepted (201) and stored as sent, 2.10 as the exact decimal 2.1.
                List<AllocationPolicy> created = admin.finops().listAllocationPolicies().stream()
                        .filter(p -> !policiesBefore.contains(p.id())).collect(Collectors.toList());
                assertEquals(1, created.size(), "the snippet created exactly one policy: " + created);
                AllocationPolicy policy = created.get(0);
                assertEquals("local-gpu-default", policy.name());
                assertEquals("L40S", policy.gpuModel());
                assertEquals(new BigDecimal("2.10"), policy.gpuHourlyCost(), "2.10 arrived as the exact decimal 2.1");
                assertEquals("USD", policy.currency(), "the server's default currency");
                assertEquals("*", policy.deploymentPattern(), "the default pattern");
                assertTrue(policy.enabled(), "enabled");
                assertEquals("active", policy.status());
                assertTrue(Duration.between(before, policy.effectiveFrom()).abs().compareTo(Duration.ofMinutes(1)) < 0,
                        "effective from its creation: " + policy.effectiveFrom());

                // The catalog lists the deployment (discovered from its samples).
                assertTrue(client.providers().catalog().deployment(deployment).isPresent(),
                        "the catalog lists " + deployment);

                // October 2026's allocation, as the snippet asked it.
                Allocation october = client.finops().gpuAllocation(Map.of("from", "2026-10-01", "to", "2026-10-31"));
                assertEquals("2026-10", october.period());
            }
        } catch (AssertionError e) {
            fail(e.getMessage() + "\n---- generated source ----\n" + source, e);
        }
    }
}
