package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.model.Provider;
import ai.enterprise.eai.model.ProviderPricing;
import ai.enterprise.eai.model.Tenant;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import ai.enterprise.eai.testing.Fixtures;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.YearMonth;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Local inference providers against a real server (the case of crates/api/tests/http/token_costs.rs): registered
 * unconfirmed ({@code config}), confirmed by a model list ({@code api}, from a tiny stand-in for a vLLM pod),
 * refused when nothing answers, seen in samples only ({@code samples}), and priced by the last closed month.
 */
@ExtendWith(EaiServers.class)
class ProvidersTest {

    private static EaiServer server;
    private static EnterpriseAIClient admin;
    private static HttpServer vllm;
    private static String vllmUrl;

    @BeforeAll
    static void setUp() throws IOException {
        server = EaiServers.shared();
        admin = server.admin();
        // An OpenAI-compatible model list, as a vLLM pod answers GET /v1/models (the inference engine, not our
        // server).
        vllm = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        vllm.createContext("/v1/models", exchange -> {
            byte[] body = "{\"object\":\"list\",\"data\":[{\"id\":\"m\",\"object\":\"model\"}]}"
                    .getBytes(StandardCharsets.UTF_8);
            boolean found = exchange.getRequestMethod().equals("GET") && exchange.getRequestURI().getPath().equals("/v1/models");
            exchange.getResponseHeaders().set("Content-Type", "application/json");
            exchange.sendResponseHeaders(found ? 200 : 404, found ? body.length : -1);
            if (found) {
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(body);
                }
            }
            exchange.close();
        });
        vllm.start();
        vllmUrl = "http://127.0.0.1:" + vllm.getAddress().getPort() + "/v1";
    }

    @AfterAll
    static void tearDown() {
        admin.close();
        vllm.stop(0);
    }

    private static Provider entry(EnterpriseAIClient client, String deployment) {
        List<Provider> mine = client.providers().catalog().items().stream()
                .filter(p -> p.deploymentId().equals(deployment)).toList();
        assertEquals(1, mine.size(), () -> "entries of " + deployment + ": " + mine);
        assertEquals(mine.get(0), client.providers().catalog().deployment(deployment).orElseThrow());
        return mine.get(0);
    }

    @Test
    void registeringWithoutVerifyingIsConfig() {
        String deployment = "vllm-mistral-" + Fixtures.uniq();
        String baseUrl = "http://" + deployment + ".ai:8000/v1";
        Provider p = admin.providers().register(deployment, baseUrl, "Mistral 7B", null, false);
        assertEquals(Provider.DISCOVERY_CONFIG, p.discovery());
        assertEquals(List.of(deployment, baseUrl, "Mistral 7B", "vllm"), List.of(p.deploymentId(), p.baseUrl(), p.label(), p.id()));
        assertTrue(p.enabled() && p.local());
        assertEquals(List.of(), p.models());
        assertNull(p.model());
        assertNull(p.pricing());

        Provider listed = entry(admin, deployment);
        assertEquals(List.of("config", baseUrl, p.providerId()), List.of(listed.discovery(), listed.baseUrl(), listed.providerId()));

        // A new registration of the deployment replaces the previous one (a map body works too).
        Provider again = admin.providers().register(Map.of("deployment_id", deployment, "base_url", baseUrl,
                "enabled", false, "verify", false));
        assertFalse(again.enabled());
        assertFalse(entry(admin, deployment).enabled());
    }

    @Test
    void verifyRefusesAUrlThatListsNoModel() {
        String deployment = "vllm-nowhere-" + Fixtures.uniq();
        ValidationException e = assertThrows(ValidationException.class,
                () -> admin.providers().register(deployment, "http://127.0.0.1:9/v1"));
        assertEquals(422, e.getStatus());
        assertEquals(List.of("base_url"), e.fields());
        assertTrue(admin.providers().catalog().deployment(deployment).isEmpty(), "nothing registered");
    }

    @Test
    void verifyConfirmsByTheModelList() {
        String deployment = "vllm-llama-" + Fixtures.uniq();
        Provider p = admin.providers().register(deployment, vllmUrl + "/", "Llama", null, null);
        assertEquals(Provider.DISCOVERY_API, p.discovery());
        assertEquals(vllmUrl, p.baseUrl(), "the trailing slash dropped");
        assertEquals(List.of("m"), p.models());
        assertEquals("m", p.model());
        Provider listed = entry(admin, deployment);
        assertEquals(List.of("api", vllmUrl, "Llama"), List.of(listed.discovery(), listed.baseUrl(), listed.label()));
        assertEquals(List.of("m"), listed.models());
    }

    @Test
    void onlyAPlatformAdminRegisters() {
        Tenant t = admin.tenants().create("prov-" + Fixtures.uniq(), "Prov");
        String key = admin.auth().createApiKey("finops", t.id(), "finops").key();
        try (EnterpriseAIClient finops = server.builder().apiKey(key).build()) {
            assertThrows(PermissionDeniedException.class,
                    () -> finops.providers().register("x-" + Fixtures.uniq(), "http://x:8000/v1", null, null, false));
        }
    }

    @Test
    void aDeploymentSeenOnlyInSamples() {
        String deployment = "vllm-sampled-" + Fixtures.uniq();
        assertEquals(240, admin.finops().gpuSamples(
                Fixtures.hourOfSamples("GPU-" + deployment, deployment, Fixtures.recentHour(), 400)).accepted());
        Provider p = entry(admin, deployment);
        assertEquals(Provider.DISCOVERY_SAMPLES, p.discovery());
        assertEquals("http://" + deployment + ":8000/v1", p.baseUrl());
        assertEquals(List.of(), p.models());
        assertTrue(p.local() && p.enabled());
    }

    @Test
    void theCatalogPricesByTheLastClosedMonth() {
        // A server of its own: the catalog caches its prices for 10 minutes from its first call.
        try (EaiServer own = EaiServer.start("pricing", EaiServer.randomKey(), EaiServer.noRateLimits());
                EnterpriseAIClient c = own.admin()) {
            String deployment = "vllm-priced-" + Fixtures.uniq();
            YearMonth last = YearMonth.now(ZoneOffset.UTC).minusMonths(1);
            Instant hour = last.atDay(11).atStartOfDay(ZoneOffset.UTC).toInstant();
            c.finops().createAllocationPolicy(Map.of("name", "flat", "deployment_pattern", deployment,
                    "currency", "USD", "gpu_hourly_cost", 10, "effective_from", "2020-01-01"));
            List<Map<String, Object>> samples = new ArrayList<>(Fixtures.hourOfSamples("GPU-p", deployment, hour, 400));
            samples.addAll(Fixtures.hourOfSamples("GPU-p", deployment, hour.plus(Duration.ofHours(1)), 400));
            assertEquals(480, c.finops().gpuSamples(samples).accepted());
            Tenant t = c.tenants().create("priced", "Priced");
            assertEquals(1, c.usage().events(List.of(Fixtures.usageEvent(t.id(), deployment,
                    hour.plusSeconds(60), Map.of("tokens_in", 1600, "tokens_out", 400)))).accepted());

            Provider p = entry(c, deployment);
            assertEquals(Provider.DISCOVERY_SAMPLES, p.discovery());
            ProviderPricing pricing = p.pricingIfAny().orElseThrow();
            assertEquals(List.of("10000.0000", "7693.7500", "19225.0000"), List.of(pricing.perMtok().toPlainString(),
                    pricing.inputPerMtok().toPlainString(), pricing.outputPerMtok().toPlainString()));
            assertEquals(new ProviderPricing(new BigDecimal("10000.0000"), new BigDecimal("7693.7500"),
                    new BigDecimal("19225.0000"), "USD", last.toString(), "allocation", "weight"), pricing);

            // A provider that served no token has no price.
            Provider idle = c.providers().register("vllm-idle", "http://idle:8000/v1", null, null, false);
            assertNull(idle.pricing());
            assertTrue(entry(c, "vllm-idle").pricingIfAny().isEmpty());
        }
    }
}
