package ai.enterprise.eai;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.enterprise.eai.testing.EaiServer;
import ai.enterprise.eai.testing.EaiServers;
import ai.enterprise.eai.testing.Fixtures;
import ai.enterprise.eai.testing.Snippets;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The README's first Java code block (Quick start), as pasted, run against a real server.
 *
 * <p>The block is read from {@code sdks/java/README.md} and copied byte for byte into a generated class (see
 * {@link Snippets}): its {@code import} lines at the top of the file, its other lines in a method. Only the
 * placeholders the README names are supplied: {@code <control-plane-url>} (the server's URL) and {@code samples}
 * ("a {@code List} of samples"). No import is added: an import the README forgets is a compilation error here.
 * {@code System.getenv("EAI_API_KEY")} is the shared server's bootstrap key (exported by the pom).
 */
@ExtendWith(EaiServers.class)
class ReadmeQuickStartTest {

    private static EaiServer server;

    @BeforeAll
    static void setUp() {
        server = Snippets.serverForSnippets();
    }

    static Snippets.CodeBlock quickStart() {
        Path readme = Snippets.basedir().resolve("README.md");
        assertTrue(readme.toFile().isFile(), "no README.md in " + Snippets.basedir());
        return Snippets.firstJavaBlock(Snippets.lines(readme));
    }

    @Test
    void theFirstJavaBlockIsTheQuickStart() {
        Snippets.CodeBlock block = quickStart();
        assertEquals("## Quick start", block.heading(), "the README's first Java block is under Quick start");
        assertTrue(block.lines().stream().anyMatch(l -> l.contains("<control-plane-url>")),
                "it names <control-plane-url>: " + block.lines());
        assertTrue(block.lines().stream().anyMatch(l -> l.startsWith("import ")), "it writes its imports");
    }

    @Test
    void theQuickStartIsTheSeedSnippetWithItsImports() {
        List<String> block = quickStart().lines();
        int body = 0;
        while (body < block.size() && (block.get(body).startsWith("import ") || block.get(body).isBlank())) {
            body++;
        }
        assertEquals(SeedSnippetTest.seedJavaLines(), block.subList(body, block.size()),
                "after its imports, the Quick start is the seed's Java snippet, line for line (as the README says)");
    }

    @Test
    void theQuickStartRunsAsPasted() throws Throwable {
        List<String> block = quickStart().lines();
        String source = Snippets.source("ReadmeQuickStart", List.of(), block, server.baseUrl());

        // Every line of the block is in the compiled source, in order, byte for byte (but for the URL).
        List<String> generated = List.of(source.split("\n", -1)).stream()
                .map(l -> l.replace(server.baseUrl(), "<control-plane-url>")).collect(Collectors.toList());
        int at = 0;
        for (String line : block) {
            if (line.isBlank()) {
                continue;
            }
            int found = generated.subList(at, generated.size()).indexOf(line);
            assertTrue(found >= 0, "the README's line is compiled as written: " + line + "\n" + source);
            at += found + 1;
        }
        // Besides the block, the source holds only the generated frame: no added import.
        assertEquals(block.stream().filter(l -> l.startsWith("import ")).collect(Collectors.toList()),
                generated.stream().filter(l -> l.startsWith("import ")).collect(Collectors.toList()),
                "no import besides the README's own");

        SeedSnippetTest.runAndCheck(server, "ReadmeQuickStart", source, "readme-vllm-mistral-7b-" + Fixtures.uniq());
    }
}
