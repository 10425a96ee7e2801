package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The SDK against the contract the server serves ({@code GET /openapi.json}). */
@ExtendWith(EaiServers.class)
class ContractTest {

    /** Every operation this SDK calls: its registry, {@link ApiOperation}. */
    static final Set<String> SDK_OPERATIONS = java.util.Arrays.stream(ApiOperation.values())
            .map(op -> op.method() + " " + op.pathTemplate())
            .collect(java.util.stream.Collectors.toSet());

    @Test
    void everyOperationOfTheSdkIsInTheServedContractV1() throws Exception {
        EaiServer server = EaiServers.shared();
        HttpResponse<String> r = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create(server.baseUrl() + "/openapi.json")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode());
        JsonNode doc = new ObjectMapper().readTree(r.body());
        assertTrue(doc.path("openapi").asText().startsWith("3."), "OpenAPI 3");
        assertTrue(doc.path("info").path("version").asText().startsWith("1."), "API v1");
        Set<String> served = new TreeSet<>();
        for (Iterator<Map.Entry<String, JsonNode>> paths = doc.path("paths").fields(); paths.hasNext(); ) {
            Map.Entry<String, JsonNode> p = paths.next();
            for (Iterator<String> methods = p.getValue().fieldNames(); methods.hasNext(); ) {
                String m = methods.next();
                if (Set.of("get", "post", "put", "patch", "delete").contains(m)) {
                    served.add(m.toUpperCase() + " " + p.getKey());
                }
            }
        }
        Set<String> missing = new TreeSet<>(SDK_OPERATIONS);
        missing.removeAll(served);
        assertTrue(missing.isEmpty(), "the SDK calls operations the server does not serve: " + missing);
    }

    @Test
    void theSdkVersionIsThePomVersion() throws Exception {
        String pom = Files.readString(Path.of("pom.xml"));
        assertTrue(pom.contains("<artifactId>eai-sdk</artifactId>\n  <version>" + EnterpriseAIClient.VERSION
                + "</version>"), "EnterpriseAIClient.VERSION must match the pom's version");
    }

    @Test
    void everyErrorCodeOfTheServedContractHasItsOwnException() throws Exception {
        EaiServer server = EaiServers.shared();
        HttpResponse<String> r = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create(server.baseUrl() + "/openapi.json")).build(),
                HttpResponse.BodyHandlers.ofString());
        JsonNode codes = new ObjectMapper().readTree(r.body()).path("components").path("schemas")
                .path("ErrorCode").path("enum");
        assertTrue(codes.isArray() && codes.size() > 0, "ErrorCode enum");
        Set<String> seen = new TreeSet<>();
        for (JsonNode c : codes) {
            String code = c.asText();
            seen.add(code);
            // status 400 has no class of its own: the class must come from the code
            EnterpriseAIException e = Errors.make(400, code, "m", Map.of(), java.util.List.of(), null, null);
            assertTrue(e.getClass() != EnterpriseAIException.class, "no exception class for " + code);
            assertEquals(code, e.getCode());
        }
        assertTrue(seen.contains("budget_exceeded"));
        assertEquals(BudgetExceededException.class,
                Errors.make(402, "budget_exceeded", "m", Map.of(), java.util.List.of(), null, null).getClass());
        assertEquals("budget_exceeded", Errors.defaultCode(402));
    }
}
