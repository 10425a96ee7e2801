package ai.enterprise.eai.testing;

import ai.enterprise.eai.EnterpriseAIClient;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real {@code eai-gpu serve} on a free port with a fresh SQLite data dir: started by the tests, destroyed at the
 * end of the run (see {@link EaiServers}).
 */
public final class EaiServer implements AutoCloseable {

    private static final SecureRandom RANDOM = new SecureRandom();

    private final String name;
    private final String baseUrl;
    private final String adminKey;
    private final Process process;
    private final Path dataDir;
    private final Path log;

    private EaiServer(String name, String baseUrl, String adminKey, Process process, Path dataDir, Path log) {
        this.name = name;
        this.baseUrl = baseUrl;
        this.adminKey = adminKey;
        this.process = process;
        this.dataDir = dataDir;
        this.log = log;
    }

    /** The server binary: -DEAI_GPU_BIN, env EAI_GPU_BIN, {@code <repo>/target/debug/eai-gpu}, then PATH. */
    public static Path binary() {
        String configured = System.getProperty("EAI_GPU_BIN");
        if (configured == null || configured.isBlank()) {
            configured = System.getenv("EAI_GPU_BIN");
        }
        if (configured != null && !configured.isBlank()) {
            Path p = Paths.get(configured.strip());
            if (!Files.isExecutable(p)) {
                throw new IllegalStateException("EAI_GPU_BIN=" + configured + " is not an executable file");
            }
            return p;
        }
        for (Path dir = Paths.get("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.exists(dir.resolve("Cargo.toml")) && Files.isDirectory(dir.resolve("contracts"))) {
                Path p = dir.resolve("target/debug/eai-gpu");
                if (Files.isExecutable(p)) {
                    return p;
                }
                break;
            }
        }
        String path = System.getenv("PATH");
        if (path != null) {
            for (String d : path.split(java.io.File.pathSeparator)) {
                Path p = Paths.get(d, "eai-gpu");
                if (Files.isExecutable(p)) {
                    return p;
                }
            }
        }
        throw new IllegalStateException("no eai-gpu server binary: set EAI_GPU_BIN (or -DEAI_GPU_BIN=...), build "
                + "<repo>/target/debug/eai-gpu, or put eai-gpu on PATH. The SDK's tests need a real server.");
    }

    /** A random key of the server's format. */
    public static String randomKey() {
        String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        StringBuilder sb = new StringBuilder("eai_live_");
        for (int i = 0; i < 40; i++) {
            sb.append(alphabet.charAt(RANDOM.nextInt(alphabet.length())));
        }
        return sb.toString();
    }

    /** Starts a server and waits until {@code GET /readyz} answers 200. */
    public static EaiServer start(String name, String adminKey, Map<String, String> env) {
        Path bin = binary();
        IllegalStateException last = null;
        for (int attempt = 0; attempt < 3; attempt++) {
            try {
                return startOnce(name, bin, adminKey, env);
            } catch (IllegalStateException e) {
                last = e; // e.g. the port was taken between choosing and binding: try another
            }
        }
        throw last;
    }

    private static EaiServer startOnce(String name, Path bin, String adminKey, Map<String, String> env) {
        Path dataDir;
        int port;
        try {
            dataDir = Files.createTempDirectory("eai-java-sdk-" + name + "-");
            try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
                port = s.getLocalPort();
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        Path log = dataDir.resolve("server.log");
        ProcessBuilder pb = new ProcessBuilder(bin.toString(), "serve", "--listen", "127.0.0.1:" + port);
        Map<String, String> e = pb.environment();
        e.keySet().removeIf(k -> k.startsWith("EAI_"));
        e.put("EAI_BOOTSTRAP_ADMIN_KEY", adminKey);
        e.put("EAI_DATA_DIR", dataDir.toString());
        e.putAll(env);
        pb.redirectErrorStream(true);
        pb.redirectOutput(log.toFile());
        Process process;
        try {
            process = pb.start();
        } catch (IOException ex) {
            throw new IllegalStateException("cannot start " + bin + ": " + ex.getMessage(), ex);
        }
        String baseUrl = "http://127.0.0.1:" + port;
        EaiServer server = new EaiServer(name, baseUrl, adminKey, process, dataDir, log);
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(1)).build();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                String tail = server.logTail();
                server.close();
                throw new IllegalStateException("eai-gpu serve (" + name + ") exited with "
                        + process.exitValue() + " before it was ready:\n" + tail);
            }
            try {
                HttpResponse<String> r = http.send(
                        HttpRequest.newBuilder(URI.create(baseUrl + "/readyz")).timeout(Duration.ofSeconds(2)).build(),
                        HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    return server;
                }
            } catch (IOException ignored) {
                // not listening yet
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                server.close();
                throw new IllegalStateException("interrupted");
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
            }
        }
        String tail = server.logTail();
        server.close();
        throw new IllegalStateException("eai-gpu serve (" + name + ") not ready after 60 s:\n" + tail);
    }

    /** The last lines of the server's log. */
    public String logTail() {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    public String name() {
        return name;
    }

    public String baseUrl() {
        return baseUrl;
    }

    public String adminKey() {
        return adminKey;
    }

    /** A platform_admin client of this server (fast retries). */
    public EnterpriseAIClient admin() {
        return builder().build();
    }

    /** A builder with this server's URL and admin key, and fast retries. */
    public EnterpriseAIClient.Builder builder() {
        return EnterpriseAIClient.builder()
                .baseUrl(baseUrl)
                .apiKey(adminKey)
                .retryBackoff(Duration.ofMillis(20), Duration.ofMillis(200));
    }

    /** Environment of a server without rate limits (the suite's calls come fast). */
    public static Map<String, String> noRateLimits() {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("EAI_RATE_LIMIT_PER_KEY", "0");
        env.put("EAI_RATE_LIMIT_PER_ADDRESS", "0");
        return env;
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroy();
            try {
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    process.waitFor(10, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
        try (Stream<Path> files = Files.walk(dataDir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // best effort
        }
    }

    @Override
    public String toString() {
        return "EaiServer{" + name + " at " + baseUrl + "}";
    }
}
