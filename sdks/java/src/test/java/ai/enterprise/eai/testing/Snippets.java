package ai.enterprise.eai.testing;

import ai.enterprise.eai.EnterpriseAIClient;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import java.io.IOException;
import java.io.StringWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

/**
 * Runs documentation snippets exactly as written: their lines are read from the document they appear in (the
 * seed's copy {@code sdks/seed/sdk-examples.txt}, the SDK's {@code README.md}), copied byte for byte into a
 * generated Java source (only {@code <control-plane-url>} replaced by the test server's URL, and the undefined
 * {@code samples} declared on the line before them), compiled with {@code javax.tools} against the SDK's classes
 * and run.
 *
 * <p>The generated source is:
 *
 * <pre>
 * &lt;imports the caller supplies (the seed has none)&gt;
 * &lt;the snippet's own import lines, if it starts with some (the README's does)&gt;
 *
 * public final class &lt;Name&gt; {
 *     public static ai.enterprise.eai.EnterpriseAIClient run(java.util.List&lt;java.util.Map&lt;String, Object&gt;&gt; given) {
 * java.util.List&lt;java.util.Map&lt;String, Object&gt;&gt; samples = given;
 * &lt;the snippet's other lines, unchanged&gt;
 * return client;
 *     }
 * }
 * </pre>
 *
 * The wrapper names every type it needs in full, so it adds no import that a snippet forgot; it returns the
 * snippet's {@code client} so that the test can close it. The source and the classes are left under
 * {@code target/snippets/<Name>/} to be read when a snippet fails.
 */
public final class Snippets {

    private Snippets() {}

    /** The Maven project directory (the pom's {@code eai.test.basedir}, else the working directory). */
    public static Path basedir() {
        String configured = System.getProperty("eai.test.basedir");
        Path dir = configured == null || configured.isBlank() ? Paths.get("") : Paths.get(configured);
        return dir.toAbsolutePath().normalize();
    }

    /**
     * The seed's snippets, as kept in the repository: {@code sdks/seed/sdk-examples.txt}, i.e.
     * {@code ../seed/sdk-examples.txt} from the Maven project directory (never a path outside the repository).
     */
    public static Path seedExamples() {
        return basedir().resolve("../seed/sdk-examples.txt").normalize();
    }

    /**
     * The lines of a file split on {@code \n} only (a {@code \r} stays in its line), so that they are its bytes
     * exactly.
     */
    public static List<String> lines(Path file) {
        try {
            String text = new String(Files.readAllBytes(file), StandardCharsets.UTF_8);
            List<String> out = new ArrayList<>(List.of(text.split("\n", -1)));
            if (!out.isEmpty() && out.get(out.size() - 1).isEmpty()) {
                out.remove(out.size() - 1); // the final newline ends the last line, it opens no new one
            }
            return out;
        } catch (IOException e) {
            throw new AssertionError("cannot read " + file + ": " + e, e);
        }
    }

    /**
     * One language's snippet of the seed: the lines strictly between the heading line {@code language} and the
     * next heading line {@code nextHeading}, without the blank lines that separate them from the headings. Each
     * heading must be there exactly once, in that order.
     */
    public static List<String> seedSection(List<String> seed, String language, String nextHeading) {
        int start = onlyIndex(seed, language);
        int end = onlyIndex(seed, nextHeading);
        if (end <= start) {
            throw new AssertionError("the heading " + nextHeading + " must come after " + language);
        }
        return trimBlank(seed.subList(start + 1, end));
    }

    /**
     * The first {@code ```java} block of a Markdown document (the lines between its fence and the closing
     * {@code ```}), and the last {@code #} heading before it.
     */
    public static CodeBlock firstJavaBlock(List<String> markdown) {
        String heading = null;
        for (int i = 0; i < markdown.size(); i++) {
            String line = markdown.get(i);
            if (line.startsWith("#")) {
                heading = line;
            }
            if (line.equals("```java")) {
                for (int j = i + 1; j < markdown.size(); j++) {
                    if (markdown.get(j).equals("```")) {
                        return new CodeBlock(heading, List.copyOf(markdown.subList(i + 1, j)));
                    }
                }
                throw new AssertionError("the ```java block at line " + (i + 1) + " is never closed");
            }
        }
        throw new AssertionError("no ```java block");
    }

    /** A Markdown code block and the heading it is under. */
    public record CodeBlock(String heading, List<String> lines) {}

    /**
     * The generated source: {@code extraImports}, then the snippet's leading {@code import} lines, then a class
     * {@code className} whose method {@code run} declares {@code samples} and holds the rest of the snippet's
     * lines, with {@code <control-plane-url>} replaced by {@code baseUrl}.
     */
    public static String source(String className, List<String> extraImports, List<String> snippet, String baseUrl) {
        int body = 0;
        while (body < snippet.size() && (snippet.get(body).startsWith("import ") || snippet.get(body).isBlank())) {
            body++;
        }
        StringBuilder src = new StringBuilder();
        src.append("// Generated by the SDK's tests (ai.enterprise.eai.testing.Snippets): do not edit.\n");
        for (String imp : extraImports) {
            src.append("import ").append(imp).append(";\n");
        }
        for (String line : snippet.subList(0, body)) {
            src.append(line).append('\n');
        }
        src.append('\n');
        src.append("public final class ").append(className).append(" {\n");
        src.append("    public static ai.enterprise.eai.EnterpriseAIClient run(")
                .append("java.util.List<java.util.Map<String, Object>> given) {\n");
        src.append("java.util.List<java.util.Map<String, Object>> samples = given;\n");
        for (String line : snippet.subList(body, snippet.size())) {
            src.append(line.replace("<control-plane-url>", baseUrl)).append('\n');
        }
        src.append("return client;\n");
        src.append("    }\n");
        src.append("}\n");
        return src.toString();
    }

    /**
     * Compiles {@code source} (the class {@code className}) against the SDK's classes and calls its {@code run}
     * with {@code samples}: returns the snippet's client; an exception the snippet throws is rethrown as is. A
     * compilation error is an {@link AssertionError} with javac's diagnostics and the source.
     */
    public static EnterpriseAIClient compileAndRun(String className, String source,
            List<Map<String, Object>> samples) throws Throwable {
        Path dir = basedir().resolve("target/snippets").resolve(className);
        Path classes = dir.resolve("classes");
        Files.createDirectories(classes);
        Path file = dir.resolve(className + ".java");
        Files.writeString(file, source, StandardCharsets.UTF_8);

        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        if (javac == null) {
            throw new AssertionError("no Java compiler in this JVM (a JDK is needed): " + System.getProperty("java.home"));
        }
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        StringWriter out = new StringWriter();
        boolean ok;
        try (StandardJavaFileManager files = javac.getStandardFileManager(diagnostics, null, StandardCharsets.UTF_8)) {
            List<String> options = List.of("--release", "17", "-encoding", "UTF-8", "-proc:none",
                    "-classpath", sdkClassPath(), "-d", classes.toString());
            ok = javac.getTask(out, files, diagnostics, options, null, files.getJavaFileObjects(file.toFile())).call();
        }
        if (!ok) {
            StringBuilder msg = new StringBuilder("the snippet does not compile (" + file + "):\n");
            diagnostics.getDiagnostics().forEach(d -> msg.append(d).append('\n'));
            msg.append(out).append("---- source ----\n").append(source);
            throw new AssertionError(msg.toString());
        }
        try (URLClassLoader loader = new URLClassLoader(new URL[] {classes.toUri().toURL()},
                Snippets.class.getClassLoader())) {
            Method run = loader.loadClass(className).getMethod("run", List.class);
            return (EnterpriseAIClient) run.invoke(null, samples);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** The SDK's classes and its runtime dependencies (Jackson), where this JVM loaded them from. */
    static String sdkClassPath() {
        Set<String> entries = new LinkedHashSet<>();
        for (Class<?> c : List.of(EnterpriseAIClient.class, ObjectMapper.class, JsonParser.class,
                JsonProperty.class, JavaTimeModule.class)) {
            try {
                entries.add(Paths.get(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString());
            } catch (URISyntaxException | NullPointerException e) {
                throw new AssertionError("cannot locate the classes of " + c.getName(), e);
            }
        }
        return String.join(java.io.File.pathSeparator, entries);
    }

    private static int onlyIndex(List<String> lines, String heading) {
        int found = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).equals(heading)) {
                if (found >= 0) {
                    throw new AssertionError("the heading line " + heading + " appears twice: lines "
                            + (found + 1) + " and " + (i + 1));
                }
                found = i;
            }
        }
        if (found < 0) {
            throw new AssertionError("no heading line " + heading);
        }
        return found;
    }

    private static List<String> trimBlank(List<String> lines) {
        int from = 0;
        int to = lines.size();
        while (from < to && lines.get(from).isBlank()) {
            from++;
        }
        while (to > from && lines.get(to - 1).isBlank()) {
            to--;
        }
        return List.copyOf(lines.subList(from, to));
    }

    /**
     * The shared test server, set up as the snippets expect it: {@code EAI_API_KEY} (which they read) is its
     * bootstrap key, and the tenant {@code acme} they name is registered.
     */
    public static EaiServer serverForSnippets() {
        EaiServer server = EaiServers.shared();
        if (!server.adminKey().equals(System.getenv("EAI_API_KEY"))) {
            throw new AssertionError(
                    "EAI_API_KEY must be the shared server's bootstrap key: run the tests with mvn (see test.sh)");
        }
        try (EnterpriseAIClient admin = server.admin()) {
            Fixtures.ensureTenant(admin, "acme", "Acme Corp");
        }
        return server;
    }
}
