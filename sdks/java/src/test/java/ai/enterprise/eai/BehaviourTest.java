package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import ai.enterprise.eai.model.IngestResult;
import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import ai.enterprise.eai.usage.UsageEmitter;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The one behaviour of the four SDKs, {@code contracts/v1/sdk/behaviour.json} (read from the repository, never a
 * copy): one real {@code eai-gpu serve} and one {@code scripts/sdk/fault_proxy.py} for the suite, one test per case
 * named after it; plus the defaults, the error kinds and the operation registry against
 * {@code contracts/v1/openapi.json}, both ways.
 */
@ExtendWith(EaiServers.class)
class BehaviourTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    /** behaviour.json's kinds, each to this SDK's class: the one table. */
    static final Map<String, Class<? extends EnterpriseAIException>> KINDS = Map.ofEntries(
            Map.entry("authentication", AuthenticationException.class),
            Map.entry("permission_denied", PermissionDeniedException.class),
            Map.entry("tenant_required", TenantRequiredException.class),
            Map.entry("not_found", NotFoundException.class),
            Map.entry("method_not_allowed", MethodNotAllowedException.class),
            Map.entry("payload_too_large", PayloadTooLargeException.class),
            Map.entry("conflict", ConflictException.class),
            Map.entry("idempotency_key_reused", IdempotencyKeyReusedException.class),
            Map.entry("validation", ValidationException.class),
            Map.entry("rate_limit", RateLimitException.class),
            Map.entry("internal_server", InternalServerException.class),
            Map.entry("service_unavailable", ServiceUnavailableException.class),
            Map.entry("budget_exceeded", BudgetExceededException.class),
            Map.entry("api_error", EnterpriseAIException.class),
            Map.entry("timeout", ApiTimeoutException.class),
            Map.entry("connection", ApiConnectionException.class));

    private static Process proxy;
    private static String proxyUrl;
    private static String tenantId;
    /** A tenant_admin key of `{tenant}`: usage events need a tenant (a platform key would have to name one). */
    private static String tenantKey;

    static Path repo() {
        return Path.of(System.getProperty("eai.test.basedir", ".")).toAbsolutePath().resolve("../..").normalize();
    }

    static JsonNode behaviour() throws Exception {
        return JSON.readTree(Files.readString(repo().resolve("contracts/v1/sdk/behaviour.json")));
    }

    @BeforeAll
    static void startProxy() throws Exception {
        EaiServer server = EaiServers.shared();
        proxy = new ProcessBuilder("python3", repo().resolve("scripts/sdk/fault_proxy.py").toString(),
                "--upstream", server.baseUrl(), "--port", "0")
                .redirectErrorStream(true)
                .start();
        BufferedReader out = new BufferedReader(new InputStreamReader(proxy.getInputStream(), StandardCharsets.UTF_8));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        String line;
        while ((line = out.readLine()) != null) {
            int at = line.indexOf("listening on ");
            if (at >= 0) {
                proxyUrl = line.substring(at + "listening on ".length()).strip();
                break;
            }
            if (System.nanoTime() > deadline) {
                break;
            }
        }
        assertNotNull(proxyUrl, "fault_proxy.py did not say where it listens");
        Thread drain = new Thread(() -> {
            try {
                while (out.readLine() != null) {
                    // the proxy's own log: not needed
                }
            } catch (java.io.IOException ignored) {
                // the proxy stopped
            }
        }, "fault-proxy-drain");
        drain.setDaemon(true);
        drain.start();
        // `{tenant}` of the calls: registered directly at the server
        tenantId = server.admin().tenants().create("sdk-cases-" + unique(), "SDK cases").id();
        tenantKey = server.admin().auth().createApiKey("tenant_admin", tenantId, "sdk-cases").key();
    }

    @AfterAll
    static void stopProxy() throws Exception {
        if (proxy != null) {
            proxy.destroy();
            if (!proxy.waitFor(5, TimeUnit.SECONDS)) {
                proxy.destroyForcibly();
            }
        }
    }

    static String unique() {
        byte[] b = new byte[6];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    static JsonNode control(String method, String path, Object body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(proxyUrl + path));
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        HttpResponse<String> r = HTTP.send(b.method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body))).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), path + ": " + r.body());
        return JSON.readTree(r.body());
    }

    // ------------------------------------------------------------------------------------------ the cases

    @TestFactory
    Stream<DynamicTest> everyCaseOfBehaviourJson() throws Exception {
        JsonNode doc = behaviour();
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode c : doc.get("cases")) {
            tests.add(DynamicTest.dynamicTest(c.get("name").asText(), () -> runCase(doc, c)));
        }
        assertFalse(tests.isEmpty(), "behaviour.json has cases");
        return tests.stream();
    }

    /** A `calls` template with `{unique}`, `{tenant}`, `{i}`, `{uuid}`, `{now}` filled in. */
    static Object fill(JsonNode template, String unique, int i) throws Exception {
        String text = JSON.writeValueAsString(template)
                .replace("{unique}", unique)
                .replace("{tenant}", tenantId)
                .replace("{i}", String.valueOf(i))
                .replace("{now}", Instant.now().truncatedTo(java.time.temporal.ChronoUnit.MILLIS).toString());
        while (text.contains("{uuid}")) {
            text = text.replaceFirst("\\{uuid\\}", UUID.randomUUID().toString());
        }
        return JSON.readValue(text, Object.class);
    }

    @SuppressWarnings("unchecked")
    static void runCase(JsonNode doc, JsonNode c) throws Exception {
        EaiServer server = EaiServers.shared();
        EnterpriseAIClient direct = server.admin();
        String call = c.get("call").asText();
        JsonNode spec = doc.get("calls").get(call);
        assertNotNull(spec, "behaviour.json `calls` has " + call);
        String unique = unique();

        EnterpriseAIClient.Builder builder = EnterpriseAIClient.builder().baseUrl(proxyUrl)
                .apiKey(call.equals("ingestUsageEvents") ? tenantKey : server.adminKey());
        JsonNode cl = c.path("client");
        if (cl.has("timeout_seconds")) {
            builder.timeout(Duration.ofMillis(Math.round(cl.get("timeout_seconds").asDouble() * 1000)));
        }
        if (cl.has("max_retries")) {
            builder.maxRetries(cl.get("max_retries").asInt());
        }
        if (cl.has("max_retry_after_seconds")) {
            builder.maxRetryAfter(Duration.ofMillis(Math.round(cl.get("max_retry_after_seconds").asDouble() * 1000)));
        }
        if (cl.has("max_batch_size")) {
            builder.maxBatchSize(cl.get("max_batch_size").asInt());
        }
        for (Iterator<String> names = cl.fieldNames(); names.hasNext(); ) {
            String n = names.next();
            assertTrue(Set.of("timeout_seconds", "max_retries", "max_retry_after_seconds", "max_batch_size").contains(n),
                    "client option this suite does not apply yet: " + n);
        }
        RequestOptions.Builder ob = RequestOptions.builder();
        JsonNode rq = c.path("request");
        if (rq.has("traceparent")) {
            ob.traceparent(rq.get("traceparent").asText());
        }
        if (rq.has("idempotency_key")) {
            ob.idempotencyKey(rq.get("idempotency_key").asText());
        }
        RequestOptions options = ob.build();

        // what the call sends
        int records = spec.has("record")
                ? rq.path(call.equals("ingestGpuSamples") ? "samples" : "events").asInt(spec.path("default_count").asInt(1))
                : 0;
        List<Object> list = new ArrayList<>();
        for (int i = 0; i < records; i++) {
            list.add(fill(spec.get("record"), unique, i));
        }
        Map<String, Object> body = spec.path("body").isObject() ? (Map<String, Object>) fill(spec.get("body"), unique, 0)
                : null;
        String countWith = spec.path("count_with").asText(null);
        Function<EnterpriseAIClient, Integer> counter = countWith == null ? null : countOf(countWith);
        int before = counter == null ? 0 : counter.apply(direct);

        try (EnterpriseAIClient client = builder.build()) {
            control("POST", "/__proxy/faults", Map.of("faults", JSON.treeToValue(c.get("faults"), List.class)));
            Object result = null;
            ApiResponse<Object> raw = null;
            EnterpriseAIException error = null;
            try {
                raw = client.withRawResponse(x -> invoke(x, call, body, list, options));
                result = raw.data();
            } catch (EnterpriseAIException e) {
                error = e;
            }
            JsonNode log = control("GET", "/__proxy/log", null).get("requests");
            JsonNode expect = c.get("expect");
            String where = c.get("name").asText() + " (proxy log: " + log + ")";

            if (expect.get("outcome").asText().equals("ok")) {
                if (error != null) {
                    fail(where + ": expected success, got " + error, error);
                }
            } else {
                assertNotNull(error, where + ": expected an error");
                Class<? extends EnterpriseAIException> kind = KINDS.get(expect.get("kind").asText());
                assertNotNull(kind, "a class for kind " + expect.get("kind"));
                assertEquals(kind, error.getClass(), where + ": " + error);
                if (expect.has("status")) {
                    assertEquals(expect.get("status").asInt(), error.getStatus(), where);
                }
                if (expect.has("code")) {
                    assertEquals(expect.get("code").asText(), error.getCode(), where);
                }
                if (error.getStatus() != 0) {
                    assertNotNull(error.getBody(), where + ": the raw body is kept");
                    assertFalse(error.getBody().isEmpty(), where + ": the raw body is kept");
                    assertNotNull(error.getMessage(), where);
                }
                if (kind == EnterpriseAIException.class && expect.has("code")) {
                    assertTrue(error.getBody().contains(expect.get("code").asText()), where + ": body " + error.getBody());
                    assertNotNull(error.getRequestId(), where + ": the request id of an unknown code is kept");
                }
            }
            assertEquals(expect.get("attempts").asInt(), log.size(), where + ": attempts");
            for (JsonNode r : log) {
                assertTrue(r.path("headers").path("user-agent").asText().startsWith(
                        doc.get("headers").get("user_agent_prefix").asText()), where + ": User-Agent");
            }
            if (expect.has("min_gap_seconds")) {
                JsonNode gaps = expect.get("min_gap_seconds");
                for (int i = 0; i < gaps.size(); i++) {
                    double gap = log.get(i + 1).get("at").asDouble() - log.get(i).get("at").asDouble();
                    assertTrue(gap >= gaps.get(i).asDouble(), where + ": gap " + i + " is " + gap + " s");
                }
            }
            List<String> keys = new ArrayList<>();
            for (JsonNode r : log) {
                keys.add(r.path("headers").path("idempotency-key").asText(null));
            }
            if (expect.path("same_idempotency_key").asBoolean(false)) {
                assertNotNull(keys.get(0), where + ": an Idempotency-Key is sent");
                assertEquals(1, new HashSet<>(keys).size(), where + ": the same key on each retry: " + keys);
            }
            if (expect.has("distinct_idempotency_keys")) {
                assertFalse(keys.contains(null), where + ": every part has a key: " + keys);
                assertEquals(expect.get("distinct_idempotency_keys").asInt(), new HashSet<>(keys).size(), where);
            }
            if (expect.has("header")) {
                for (Iterator<Map.Entry<String, JsonNode>> h = expect.get("header").fields(); h.hasNext(); ) {
                    Map.Entry<String, JsonNode> e = h.next();
                    for (JsonNode r : log) {
                        assertEquals(e.getValue().asText(), r.path("headers").path(e.getKey().toLowerCase()).asText(null),
                                where + ": header " + e.getKey());
                    }
                }
            }
            if (expect.has("batch_sizes")) {
                List<Integer> sizes = new ArrayList<>();
                for (JsonNode r : log) {
                    sizes.add(r.get("records").asInt());
                }
                assertEquals(JSON.treeToValue(expect.get("batch_sizes"), List.class), sizes, where);
            }
            if (expect.has("accepted")) {
                assertEquals(expect.get("accepted").asLong(), ((IngestResult) result).accepted(), where);
            }
            if (expect.has("resources_created")) {
                int n = expect.get("resources_created").asInt();
                if (counter != null) {
                    assertEquals(n, counter.apply(direct) - before, where + ": resources made, counted at the server");
                } else {
                    assertNotNull(result, where);
                    assertEquals((long) records * n, ((IngestResult) result).accepted(),
                            where + ": every record accepted once (a retry not replayed answers duplicates)");
                }
            }
            if (expect.path("request_id_on_result").asBoolean(false)) {
                assertNotNull(raw, where);
                assertNotNull(raw.requestId(), where + ": X-Request-Id on the result");
                assertFalse(raw.requestId().isBlank(), where);
                assertEquals(200, raw.status(), where);
            }
        }
    }

    static Object invoke(EnterpriseAIClient c, String call, Map<String, Object> body, List<Object> records,
            RequestOptions o) {
        switch (call) {
            case "listTenants":
                return c.tenants().list(o);
            case "createTenant":
                return c.tenants().create(body, o);
            case "createAllocationPolicy":
                return c.finops().createAllocationPolicy(body, o);
            case "createBudget":
                return c.finops().createBudget(body, o);
            case "createApiKey":
                return c.auth().createApiKey(body, o);
            case "ingestGpuSamples":
                return c.finops().gpuSamples(records, o);
            case "ingestUsageEvents":
                return c.usage().events(records, o);
            default:
                throw new AssertionError("behaviour.json calls " + call + ", which this suite does not make yet");
        }
    }

    static Function<EnterpriseAIClient, Integer> countOf(String operationId) {
        switch (operationId) {
            case "listTenants":
                return c -> c.tenants().list().size();
            case "listAllocationPolicies":
                return c -> c.finops().listAllocationPolicies().size();
            case "listBudgets":
                return c -> c.finops().listBudgets().size();
            case "listApiKeys":
                return c -> c.auth().listApiKeys().size();
            default:
                throw new AssertionError("behaviour.json counts with " + operationId + ", unknown to this suite");
        }
    }

    // ------------------------------------------------------------------------------------------ hooks

    @Test
    void theListenerSeesEveryAttemptWithoutSecrets() throws Exception {
        EaiServer server = EaiServers.shared();
        List<RequestListener.Attempt> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (EnterpriseAIClient c = EnterpriseAIClient.builder().baseUrl(proxyUrl).apiKey(server.adminKey())
                .listener(seen::add).build()) {
            control("POST", "/__proxy/faults", Map.of("faults", List.of(Map.of("status", 500, "code", "internal"))));
            c.tenants().list(RequestOptions.builder().header("X-Sdk-Case", "listener").build());
            JsonNode log = control("GET", "/__proxy/log", null).get("requests");
            assertEquals(2, log.size());
            assertEquals("listener", log.get(1).path("headers").path("x-sdk-case").asText(), "extra header sent");
        }
        assertEquals(2, seen.size(), seen.toString());
        RequestListener.Attempt first = seen.get(0);
        assertEquals("GET", first.method());
        assertEquals("/v1/tenants", first.path());
        assertEquals(1, first.attempt());
        assertEquals(500, first.status());
        assertEquals("internal", first.errorCode());
        assertNotNull(first.retryIn(), "the wait before the retry");
        RequestListener.Attempt second = seen.get(1);
        assertEquals(2, second.attempt());
        assertEquals(200, second.status());
        assertNull(second.errorCode());
        assertNull(second.retryIn());
        assertNotNull(second.requestId());
        assertFalse(seen.toString().contains(server.adminKey()), "no secret in what is logged");
    }

    @Test
    void unsentUsageEventsAreFlushedAtProcessExit() throws Exception {
        control("POST", "/__proxy/faults", Map.of("faults", List.of()));
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                "ai.enterprise.eai.usage.ExitFlushMain", proxyUrl, tenantKey, "exit-" + unique(), "3")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), out);
        assertEquals(0, p.exitValue(), out);
        JsonNode log = control("GET", "/__proxy/log", null).get("requests");
        int delivered = 0;
        for (JsonNode r : log) {
            if (r.get("path").asText().equals("/v1/usage/events") && r.path("status").asInt() == 200) {
                delivered += r.get("records").asInt();
            }
        }
        assertEquals(3, delivered, "the shutdown hook delivered the queued events: " + log + "\n" + out);
    }

    // ------------------------------------------------------------------------------------------ defaults

    @Test
    void theClientsDefaultsAreBehaviourJsons() throws Exception {
        JsonNode d = behaviour().get("defaults");
        EaiServer server = EaiServers.shared();
        try (EnterpriseAIClient c = EnterpriseAIClient.builder().baseUrl(server.baseUrl()).apiKey(server.adminKey())
                .build()) {
            assertEquals(seconds(d, "timeout_seconds"), c.timeout());
            assertEquals(d.get("max_retries").asInt(), c.maxRetries());
            assertEquals(seconds(d, "backoff_base_seconds"), c.retryBaseDelay());
            assertEquals(seconds(d, "backoff_max_seconds"), c.retryMaxDelay());
            assertEquals(seconds(d, "max_retry_after_seconds"), c.maxRetryAfter());
            assertEquals(d.get("max_batch_size").asInt(), c.maxBatchSize());
            try (UsageEmitter e = UsageEmitter.builder(c).build()) {
                assertEquals(seconds(d, "flush_interval_seconds"), e.flushInterval());
                assertEquals(d.get("usage_max_queue").asInt(), e.maxQueueSize());
            }
        }
    }

    static Duration seconds(JsonNode d, String name) {
        return Duration.ofMillis(Math.round(d.get(name).asDouble() * 1000));
    }

    @Test
    void theBackoffIsHalfPlusJitterUpToTheMax() throws Exception {
        JsonNode d = behaviour().get("defaults");
        EaiServer server = EaiServers.shared();
        try (EnterpriseAIClient c = EnterpriseAIClient.builder().baseUrl(server.baseUrl()).apiKey(server.adminKey())
                .build()) {
            Transport t = c.transport();
            long base = seconds(d, "backoff_base_seconds").toMillis();
            long max = seconds(d, "backoff_max_seconds").toMillis();
            for (int n = 1; n <= 8; n++) {
                long cap = Math.min(base * (1L << (n - 1)), max);
                for (int k = 0; k < 200; k++) {
                    long w = t.backoff(n).toMillis();
                    assertTrue(w >= cap / 2 && w <= cap, "retry " + n + ": " + w + " ms outside [d/2, d], d = " + cap);
                }
            }
        }
    }

    // ------------------------------------------------------------------------------------------ error kinds

    @Test
    void everyErrorCodeIsItsKindsClass() throws Exception {
        JsonNode doc = behaviour();
        for (Iterator<Map.Entry<String, JsonNode>> it = doc.get("error_kinds").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            Class<? extends EnterpriseAIException> kind = KINDS.get(e.getValue().asText());
            assertNotNull(kind, "a class for kind " + e.getValue());
            EnterpriseAIException made = Errors.make(400, e.getKey(), "m", Map.of(), List.of(), "req-1", null);
            assertEquals(kind, made.getClass(), e.getKey());
            assertEquals(e.getKey(), made.getCode());
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = doc.get("error_kind_parents").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            assertTrue(KINDS.get(e.getValue().asText()).isAssignableFrom(KINDS.get(e.getKey())),
                    e.getKey() + " is also " + e.getValue());
        }
        EnterpriseAIException unknown = Errors.make(409, "never_heard_of_it", "m", Map.of(), List.of(), "r", null);
        assertEquals(EnterpriseAIException.class, unknown.getClass());
        assertInstanceOf(EnterpriseAIException.class, unknown);
        assertNull(unknown.getRetryAfter());
    }

    // ------------------------------------------------------------------------------------------ operations

    /** method + " " + path of each operationId of contracts/v1/openapi.json. */
    static Map<String, String> contractOperations() throws Exception {
        JsonNode doc = JSON.readTree(Files.readString(repo().resolve("contracts/v1/openapi.json")));
        Map<String, String> ops = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> paths = doc.get("paths").fields(); paths.hasNext(); ) {
            Map.Entry<String, JsonNode> p = paths.next();
            for (Iterator<Map.Entry<String, JsonNode>> ms = p.getValue().fields(); ms.hasNext(); ) {
                Map.Entry<String, JsonNode> m = ms.next();
                if (m.getValue().has("operationId")) {
                    ops.put(m.getValue().get("operationId").asText(), m.getKey().toUpperCase() + " " + p.getKey());
                }
            }
        }
        return ops;
    }

    @Test
    void everyOperationOfTheContractIsWrapped() throws Exception {
        Map<String, String> wrapped = new LinkedHashMap<>();
        for (ApiOperation op : ApiOperation.values()) {
            wrapped.put(op.operationId(), op.method() + " " + op.pathTemplate());
        }
        Set<String> missing = new TreeSet<>(contractOperations().keySet());
        missing.removeAll(wrapped.keySet());
        assertTrue(missing.isEmpty(), "operations of contracts/v1/openapi.json the SDK does not wrap: " + missing);
    }

    @Test
    void everyWrappedOperationIsInTheContractWithItsMethodAndPath() throws Exception {
        Map<String, String> contract = contractOperations();
        for (ApiOperation op : ApiOperation.values()) {
            assertEquals(contract.get(op.operationId()), op.method() + " " + op.pathTemplate(),
                    op + " (" + op.operationId() + ") against contracts/v1/openapi.json");
        }
    }

    @Test
    void everyResourceMethodHasARequestOptionsOverload() {
        List<String> missing = new ArrayList<>();
        int checked = 0;
        for (Class<?> r : List.of(FinopsResource.class, ProvidersResource.class, UsageResource.class,
                TenantsResource.class, AuthResource.class, AuditResource.class)) {
            for (java.lang.reflect.Method m : r.getDeclaredMethods()) {
                int mod = m.getModifiers();
                List<Class<?>> params = List.of(m.getParameterTypes());
                if (!java.lang.reflect.Modifier.isPublic(mod) || java.lang.reflect.Modifier.isStatic(mod)
                        || params.contains(RequestOptions.class) || m.getName().equals("toString")) {
                    continue;
                }
                List<Class<?>> with = new ArrayList<>(params);
                with.add(RequestOptions.class);
                try {
                    assertEquals(m.getReturnType(), r.getMethod(m.getName(), with.toArray(new Class<?>[0])).getReturnType());
                    checked++;
                } catch (NoSuchMethodException e) {
                    missing.add(r.getSimpleName() + "." + m.getName() + params);
                }
            }
        }
        assertTrue(missing.isEmpty(), "resource methods without a RequestOptions overload: " + missing);
        assertTrue(checked > 50, "checked " + checked);
    }

    @Test
    void getAllocationPolicyReadsOnePolicy() {
        EnterpriseAIClient admin = EaiServers.shared().admin();
        String name = "sdk-get-" + unique();
        ObjectNode p = JSON.createObjectNode().put("name", name).put("deployment_pattern", name + "-*")
                .put("currency", "EUR").put("gpu_hourly_cost", "2.10");
        String id = admin.finops().createAllocationPolicy(JSON.convertValue(p, Map.class)).id();
        assertEquals(name, admin.finops().getAllocationPolicy(id).name());
        assertEquals(new java.math.BigDecimal("2.10"), admin.finops().getAllocationPolicy(id).gpuHourlyCost());
        assertInstanceOf(NotFoundException.class, org.junit.jupiter.api.Assertions.assertThrows(
                EnterpriseAIException.class, () -> admin.finops().getAllocationPolicy("alp_999999")));
    }
}
