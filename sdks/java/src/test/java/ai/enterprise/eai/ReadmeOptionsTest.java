package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import ai.enterprise.eai.testing.Snippets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The README's "Per-request options and the request id" block, as pasted, run against a real server: only a
 * {@code client} line and the imports are supplied (the README's blocks after the Quick start leave them out).
 */
@ExtendWith(EaiServers.class)
class ReadmeOptionsTest {

    static List<String> block(String heading) {
        List<String> md = Snippets.lines(Snippets.basedir().resolve("README.md"));
        int at = md.indexOf(heading);
        assertTrue(at >= 0, "the README has " + heading);
        return Snippets.firstJavaBlock(md.subList(at, md.size())).lines();
    }

    @Test
    void thePerRequestOptionsBlockRunsAsPasted() throws Throwable {
        EaiServer server = EaiServers.shared();
        List<String> lines = new ArrayList<>();
        lines.add("EnterpriseAIClient client = EnterpriseAIClient.builder().baseUrl(\"<control-plane-url>\")"
                + ".apiKey(System.getenv(\"EAI_API_KEY\")).build();");
        lines.addAll(block("### Per-request options and the request id"));
        String source = Snippets.source("ReadmeOptions", List.of("ai.enterprise.eai.*", "ai.enterprise.eai.model.*",
                "java.time.Duration", "java.util.List", "java.util.Map"), lines, server.baseUrl());
        Snippets.compileAndRun("ReadmeOptions", source, List.<Map<String, Object>>of());
        assertEquals("Initech", server.admin().tenants().get("initech").name(), "the tenant was created");
    }
}
