package ai.enterprise.eai.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An HTTP proxy in front of a real server that records every request and can answer scripted faults first: an
 * error without forwarding, an error after forwarding (a lost answer: the server acted), a delay, or a hold.
 */
public final class FaultProxy implements AutoCloseable {

    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** One request seen by the proxy. */
    public record Seen(String method, String path, int status, int records, List<String> eventIds,
            List<String> timestamps, boolean forwarded) {}

    private record Fault(String pathPrefix, int status, String code, Map<String, String> headers, boolean forward,
            Duration delay, String rawBody) {}

    private final String target;
    private final HttpServer server;
    private final ExecutorService executor;
    private final HttpClient http;
    private final Deque<Fault> faults = new ArrayDeque<>();
    private final List<Seen> seen = new ArrayList<>();
    private final AtomicInteger counter = new AtomicInteger();
    private volatile CountDownLatch hold;

    public FaultProxy(String targetBaseUrl) {
        this.target = targetBaseUrl;
        this.executor = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "fault-proxy");
            t.setDaemon(true);
            return t;
        });
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5)).build();
        try {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        server.createContext("/", this::handle);
        server.setExecutor(executor);
        server.start();
    }

    public String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /** The next {@code n} requests under {@code pathPrefix} get {@code status} without reaching the server. */
    public synchronized FaultProxy failNext(int n, String pathPrefix, int status, String code,
            Map<String, String> headers) {
        for (int i = 0; i < n; i++) {
            faults.addLast(new Fault(pathPrefix, status, code, headers, false, null, null));
        }
        return this;
    }

    /** The next {@code n} requests under {@code pathPrefix} reach the server, but the caller gets {@code status}. */
    public synchronized FaultProxy loseAnswerOfNext(int n, String pathPrefix, int status, String code) {
        for (int i = 0; i < n; i++) {
            faults.addLast(new Fault(pathPrefix, status, code, Map.of(), true, null, null));
        }
        return this;
    }

    /** The next request under {@code pathPrefix} gets a raw (non-JSON) body. */
    public synchronized FaultProxy rawNext(String pathPrefix, int status, String body) {
        faults.addLast(new Fault(pathPrefix, status, null, Map.of(), false, null, body));
        return this;
    }

    /** The next {@code n} requests under {@code pathPrefix} wait {@code delay} before being forwarded. */
    public synchronized FaultProxy delayNext(int n, String pathPrefix, Duration delay) {
        for (int i = 0; i < n; i++) {
            faults.addLast(new Fault(pathPrefix, 0, null, Map.of(), true, delay, null));
        }
        return this;
    }

    /** From now on, requests wait until {@link #release()}. */
    public void hold() {
        hold = new CountDownLatch(1);
    }

    /** Lets held requests (and later ones) through. */
    public void release() {
        CountDownLatch h = hold;
        hold = null;
        if (h != null) {
            h.countDown();
        }
    }

    public synchronized List<Seen> seen() {
        return List.copyOf(seen);
    }

    public synchronized List<Seen> seen(String method, String pathPrefix) {
        return seen.stream().filter(s -> s.method.equals(method) && s.path.startsWith(pathPrefix)).toList();
    }

    public synchronized void reset() {
        seen.clear();
        faults.clear();
    }

    /** Requests received so far (held ones included). */
    public int received() {
        return counter.get();
    }

    private synchronized Fault nextFault(String path) {
        Fault f = faults.peekFirst();
        if (f != null && path.startsWith(f.pathPrefix)) {
            return faults.pollFirst();
        }
        return null;
    }

    private synchronized void record(Seen s) {
        seen.add(s);
    }

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            counter.incrementAndGet();
            String method = ex.getRequestMethod();
            String pathAndQuery = ex.getRequestURI().getRawPath()
                    + (ex.getRequestURI().getRawQuery() == null ? "" : "?" + ex.getRequestURI().getRawQuery());
            byte[] body;
            try (InputStream in = ex.getRequestBody()) {
                body = in.readAllBytes();
            }
            int records = 0;
            List<String> ids = new ArrayList<>();
            List<String> stamps = new ArrayList<>();
            if (body.length > 0) {
                try {
                    JsonNode root = MAPPER.readTree(body);
                    for (String key : List.of("samples", "events")) {
                        JsonNode list = root.get(key);
                        if (list != null && list.isArray()) {
                            records = list.size();
                            for (JsonNode r : list) {
                                if (r.hasNonNull("event_id")) {
                                    ids.add(r.get("event_id").asText());
                                }
                                if (r.hasNonNull("timestamp")) {
                                    stamps.add(r.get("timestamp").asText());
                                }
                            }
                        }
                    }
                } catch (IOException ignored) {
                    // not JSON: forwarded as is
                }
            }
            CountDownLatch h = hold;
            if (h != null) {
                try {
                    h.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            Fault fault = nextFault(ex.getRequestURI().getRawPath());
            if (fault != null && fault.delay != null) {
                try {
                    Thread.sleep(fault.delay.toMillis());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            HttpResponse<byte[]> upstream = null;
            if (fault == null || fault.forward) {
                HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(target + pathAndQuery))
                        .timeout(Duration.ofSeconds(60))
                        .method(method, body.length == 0 ? HttpRequest.BodyPublishers.noBody()
                                : HttpRequest.BodyPublishers.ofByteArray(body));
                for (String name : List.of("Authorization", "X-EAI-Tenant", "Accept-Language", "Content-Type",
                        "Accept", "X-Request-Id")) {
                    String v = ex.getRequestHeaders().getFirst(name);
                    if (v != null) {
                        b.header(name, v);
                    }
                }
                try {
                    upstream = http.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException(e);
                }
            }
            int status;
            byte[] out;
            if (fault != null && (fault.status != 0)) {
                status = fault.status;
                if (fault.rawBody != null) {
                    out = fault.rawBody.getBytes(StandardCharsets.UTF_8);
                    ex.getResponseHeaders().add("Content-Type", "text/html");
                } else {
                    String rid = "proxy-" + counter.get();
                    String json = "{\"error\":{\"code\":\"" + fault.code + "\",\"message\":\"injected " + fault.code
                            + "\",\"message_i18n\":{\"en\":\"injected " + fault.code + "\",\"fr\":\"injecté "
                            + fault.code + "\"},\"details\":null,\"request_id\":\"" + rid + "\"}}";
                    out = json.getBytes(StandardCharsets.UTF_8);
                    ex.getResponseHeaders().add("Content-Type", "application/json");
                    ex.getResponseHeaders().add("X-Request-Id", rid);
                }
                for (Map.Entry<String, String> e : fault.headers.entrySet()) {
                    ex.getResponseHeaders().add(e.getKey(), e.getValue());
                }
            } else {
                status = upstream.statusCode();
                out = upstream.body();
                for (String name : List.of("content-type", "x-request-id", "retry-after", "allow")) {
                    upstream.headers().firstValue(name).ifPresent(v -> ex.getResponseHeaders().add(name, v));
                }
            }
            record(new Seen(method, ex.getRequestURI().getRawPath(), status, records, List.copyOf(ids),
                    List.copyOf(stamps), upstream != null));
            ex.sendResponseHeaders(status, out.length == 0 ? -1 : out.length);
            if (out.length > 0) {
                try (OutputStream os = ex.getResponseBody()) {
                    os.write(out);
                }
            }
        }
    }

    @Override
    public void close() {
        release();
        server.stop(0);
        executor.shutdownNow();
    }
}
