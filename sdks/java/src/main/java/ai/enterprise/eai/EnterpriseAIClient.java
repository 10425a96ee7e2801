package ai.enterprise.eai;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The eai-gpu API client: GPU chargeback on your own GPUs.
 *
 * <pre>{@code
 * EnterpriseAIClient client = EnterpriseAIClient.builder()
 *     .baseUrl("https://eai.example.internal")      // default: env EAI_BASE_URL
 *     .apiKey(System.getenv("EAI_API_KEY"))         // default: env EAI_API_KEY
 *     .tenant("acme")                               // X-EAI-Tenant (optional)
 *     .locale(Locale.ENGLISH)                       // Accept-Language of error messages
 *     .build();
 * Allocation october = client.finops().gpuAllocation(LocalDate.of(2026, 10, 1), LocalDate.of(2026, 10, 31));
 * }</pre>
 *
 * <p>The API is grouped in resources: {@link #finops()}, {@link #providers()}, {@link #usage()},
 * {@link #tenants()}, {@link #auth()}, {@link #audit()}. A client is immutable and thread-safe: share one per
 * process. Every call throws an {@link EnterpriseAIException} subclass on failure, after the retries the
 * builder allows. {@link #toString()} never shows the API key.
 */
public final class EnterpriseAIClient implements AutoCloseable {

    /** This SDK's version. */
    public static final String VERSION = "0.1.0";

    /** Records per ingest request by default: half the server's default {@code EAI_MAX_BATCH} (10,000). */
    public static final int DEFAULT_MAX_BATCH_SIZE = 5000;

    /** Retries after a failed attempt by default. */
    public static final int DEFAULT_MAX_RETRIES = 3;

    private final Transport transport;
    private final ExecutorService ownedExecutor;
    private final AtomicBoolean closed;
    private final boolean owner;
    private final Locale locale;
    private final FinopsResource finops;
    private final ProvidersResource providers;
    private final UsageResource usage;
    private final TenantsResource tenants;
    private final AuthResource auth;
    private final AuditResource audit;

    private EnterpriseAIClient(Transport transport, Locale locale, ExecutorService ownedExecutor,
            AtomicBoolean closed, boolean owner) {
        this.transport = transport;
        this.locale = locale;
        this.ownedExecutor = ownedExecutor;
        this.closed = closed;
        this.owner = owner;
        this.finops = new FinopsResource(this, transport);
        this.providers = new ProvidersResource(this, transport);
        this.usage = new UsageResource(this, transport);
        this.tenants = new TenantsResource(this, transport);
        this.auth = new AuthResource(this, transport);
        this.audit = new AuditResource(this, transport);
    }

    /**
     * A builder; {@code baseUrl} and {@code apiKey} default to the environment variables {@code EAI_BASE_URL}
     * and {@code EAI_API_KEY}.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * GPU samples, the allocation, allocation policies ({@code /v1/finops}).
     *
     * @return the resource
     */
    public FinopsResource finops() {
        return finops;
    }

    /**
     * The local inference providers ({@code /v1/providers}).
     *
     * @return the resource
     */
    public ProvidersResource providers() {
        return providers;
    }

    /**
     * Usage events ({@code /v1/usage}); see also {@link ai.enterprise.eai.usage.UsageEmitter}.
     *
     * @return the resource
     */
    public UsageResource usage() {
        return usage;
    }

    /**
     * Tenants ({@code /v1/tenants}).
     *
     * @return the resource
     */
    public TenantsResource tenants() {
        return tenants;
    }

    /**
     * The caller's identity and API keys ({@code /v1/auth}).
     *
     * @return the resource
     */
    public AuthResource auth() {
        return auth;
    }

    /**
     * The audit chain ({@code /v1/audit}).
     *
     * @return the resource
     */
    public AuditResource audit() {
        return audit;
    }

    /**
     * A client like this one signed in to another tenant ({@code X-EAI-Tenant}), sharing its connections.
     * Closing it does nothing; closing the original closes it too.
     *
     * @param tenant a slug or a tenant id, or {@code null} for none
     * @return the other client
     */
    public EnterpriseAIClient withTenant(String tenant) {
        return new EnterpriseAIClient(transport.withTenant(blankToNull(tenant)), locale, null, closed, false);
    }

    /**
     * A client like this one with error messages in another language, sharing its connections (closed with the
     * original).
     *
     * @param locale the language ({@code Locale.FRENCH}, {@code Locale.ENGLISH})
     * @return the other client
     */
    public EnterpriseAIClient withLocale(Locale locale) {
        Objects.requireNonNull(locale, "locale");
        return new EnterpriseAIClient(transport.withLanguage(locale.toLanguageTag()), locale, null, closed, false);
    }

    /**
     * The API's base URL.
     *
     * @return e.g. {@code https://eai.example.internal} (no trailing slash)
     */
    public String baseUrl() {
        return transport.baseUrl;
    }

    /**
     * The tenant the client is signed in to.
     *
     * @return the {@code X-EAI-Tenant} value, or {@code null}
     */
    public String tenant() {
        return transport.tenant;
    }

    /**
     * The language of error messages.
     *
     * @return the locale sent as {@code Accept-Language}
     */
    public Locale locale() {
        return locale;
    }

    /**
     * Sends any request to the API and returns its JSON answer: for endpoints newer than this SDK. The call has
     * the client's headers, retries ({@code Idempotency-Key} on a POST or DELETE included) and error handling.
     *
     * @param method {@code GET}, {@code POST}, {@code DELETE}, ...
     * @param path the path from the base URL, e.g. {@code /v1/auth/whoami}
     * @param query query parameters (values as for {@code gpuAllocation}), or {@code null}
     * @param body a JSON body (a Map, a record, a JsonNode), or {@code null} for none
     * @return the answer's JSON, or {@code null} for an empty answer
     * @throws EnterpriseAIException on an error answer or a transport failure
     */
    public JsonNode request(String method, String path, Map<String, ?> query, Object body) {
        return request(method, path, query, body, RequestOptions.none());
    }

    /**
     * Sends any request to the API with per-request options ({@link #request(String, String, Map, Object)}).
     *
     * @param method {@code GET}, {@code POST}, {@code DELETE}, ...
     * @param path the path from the base URL, e.g. {@code /v1/auth/whoami}
     * @param query query parameters, or {@code null}
     * @param body a JSON body, or {@code null} for none
     * @param options timeout, retries, idempotency key, traceparent, headers
     * @return the answer's JSON, or {@code null} for an empty answer
     * @throws EnterpriseAIException on an error answer or a transport failure
     */
    public JsonNode request(String method, String path, Map<String, ?> query, Object body, RequestOptions options) {
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(path, "path");
        if (!path.startsWith("/")) {
            throw new IllegalArgumentException("path must start with /");
        }
        ensureOpen();
        return transport.call(method.toUpperCase(Locale.ROOT), path, query, body, options);
    }

    /**
     * {@code GET /healthz}: whether the server process is up.
     *
     * @return the answer's JSON
     * @throws EnterpriseAIException on an error answer or a transport failure
     */
    public JsonNode healthz() {
        ensureOpen();
        return transport.call(ApiOperation.HEALTHZ, Resource.NO_ARGS, null, null);
    }

    /**
     * {@code GET /readyz}: whether the server can serve (its database reachable).
     *
     * @return the answer's JSON
     * @throws EnterpriseAIException on an error answer (503 when not ready) or a transport failure
     */
    public JsonNode readyz() {
        ensureOpen();
        return transport.call(ApiOperation.READYZ, Resource.NO_ARGS, null, null);
    }

    /**
     * {@code GET /metrics}: the server's Prometheus metrics, as text.
     *
     * @return the exposition text
     * @throws EnterpriseAIException on an error answer or a transport failure
     */
    public String metrics() {
        ensureOpen();
        return new String(transport.download(ApiOperation.METRICS, null, "text/plain"),
                java.nio.charset.StandardCharsets.UTF_8);
    }

    /**
     * {@code GET /openapi.json}: the contract the server serves.
     *
     * @return the OpenAPI document
     * @throws EnterpriseAIException on an error answer or a transport failure
     */
    public JsonNode openapi() {
        ensureOpen();
        return transport.call(ApiOperation.OPENAPI, Resource.NO_ARGS, null, null);
    }

    /**
     * A client like this one whose every call uses {@code options} (over this client's own), sharing its
     * connections (closed with the original).
     *
     * @param options timeout, retries, idempotency key, traceparent, headers
     * @return the other client
     */
    public EnterpriseAIClient withOptions(RequestOptions options) {
        Objects.requireNonNull(options, "options");
        return new EnterpriseAIClient(transport.withOptions(options), locale, null, closed, false);
    }

    /**
     * Runs calls of this client and returns their result with the HTTP answer it came from: its
     * {@code X-Request-Id}, status and headers (of the last answer, for a call that sent several requests).
     *
     * <pre>{@code
     * ApiResponse<List<Tenant>> r = client.withRawResponse(c -> c.tenants().list());
     * String requestId = r.requestId();
     * }</pre>
     *
     * @param call what to run, with this client
     * @param <T> the result's type
     * @return the result and its answer
     * @throws EnterpriseAIException as the call does
     */
    public <T> ApiResponse<T> withRawResponse(java.util.function.Function<EnterpriseAIClient, T> call) {
        Objects.requireNonNull(call, "call");
        Transport.Capture outer = Transport.CAPTURE.get();
        Transport.Capture capture = new Transport.Capture();
        Transport.CAPTURE.set(capture);
        T data;
        try {
            data = call.apply(this);
        } finally {
            if (outer == null) {
                Transport.CAPTURE.remove();
            } else {
                Transport.CAPTURE.set(outer);
                outer.last = capture.last != null ? capture.last : outer.last;
                outer.requests += capture.requests;
            }
        }
        if (capture.last == null) {
            return new ApiResponse<>(data, null, 0, null, 0);
        }
        return new ApiResponse<>(data, capture.last.headers().firstValue("x-request-id").orElse(null),
                capture.last.statusCode(), capture.last.headers(), capture.requests);
    }

    /**
     * The timeout of each attempt.
     *
     * @return the duration (default 30 s)
     */
    public Duration timeout() {
        return transport.timeout;
    }

    /**
     * The retries after a failed attempt.
     *
     * @return the count (default 3)
     */
    public int maxRetries() {
        return transport.maxRetries;
    }

    /**
     * The base of the backoff between attempts.
     *
     * @return the duration (default 0.5 s)
     */
    public Duration retryBaseDelay() {
        return transport.retryBaseDelay;
    }

    /**
     * The largest backoff between attempts.
     *
     * @return the duration (default 8 s)
     */
    public Duration retryMaxDelay() {
        return transport.retryMaxDelay;
    }

    /**
     * The longest {@code Retry-After} waited for: a longer one raises the error at once.
     *
     * @return the duration (default 60 s)
     */
    public Duration maxRetryAfter() {
        return transport.maxRetryAfter;
    }

    /**
     * Records per ingest request at most.
     *
     * @return the count (default 5,000)
     */
    public int maxBatchSize() {
        return transport.maxBatchSize;
    }

    Transport transport() {
        return transport;
    }

    void ensureOpen() {
        if (closed.get()) {
            throw new IllegalStateException("this EnterpriseAIClient is closed");
        }
    }

    /**
     * Closes the client: later calls (of this client and of those made by {@link #withTenant} and
     * {@link #withLocale}) throw {@link IllegalStateException}. Releases the threads of the HTTP client the
     * builder made (not those of a client given to {@link Builder#httpClient}). Idempotent; does nothing on a
     * client made by {@code withTenant} or {@code withLocale}.
     */
    @Override
    public void close() {
        if (owner && closed.compareAndSet(false, true) && ownedExecutor != null) {
            ownedExecutor.shutdown();
        }
    }

    /** Never shows the API key. */
    @Override
    public String toString() {
        return "EnterpriseAIClient{baseUrl=" + transport.baseUrl + ", tenant=" + transport.tenant + ", locale="
                + transport.language + ", apiKey=" + redact(transport.apiKey) + ", timeout=" + transport.timeout
                + ", maxRetries=" + transport.maxRetries + ", maxBatchSize=" + transport.maxBatchSize + "}";
    }

    static String redact(String key) {
        return key == null ? "null" : "eai_live_***";
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s.strip();
    }

    /** Configures an {@link EnterpriseAIClient}. Not thread-safe; {@link #toString()} never shows the key. */
    public static final class Builder {
        private String baseUrl;
        private String apiKey;
        private String tenant;
        private Locale locale = Locale.ENGLISH;
        private Duration timeout = Duration.ofSeconds(30);
        private int maxRetries = DEFAULT_MAX_RETRIES;
        private RequestListener listener;
        private Duration retryBaseDelay = Duration.ofMillis(500);
        private Duration retryMaxDelay = Duration.ofSeconds(8);
        private Duration maxRetryAfter = Duration.ofSeconds(60);
        private int maxBatchSize = DEFAULT_MAX_BATCH_SIZE;
        private boolean splitOnPayloadTooLarge = true;
        private HttpClient httpClient;

        private Builder() {}

        /**
         * The API's base URL, e.g. {@code https://eai.example.internal}. Default: env {@code EAI_BASE_URL}.
         *
         * @param baseUrl an http or https URL
         * @return this builder
         */
        public Builder baseUrl(String baseUrl) {
            this.baseUrl = baseUrl;
            return this;
        }

        /**
         * The API key ({@code eai_live_...}), sent as {@code Authorization: Bearer}. Default: env
         * {@code EAI_API_KEY}.
         *
         * @param apiKey the key
         * @return this builder
         */
        public Builder apiKey(String apiKey) {
            this.apiKey = apiKey;
            return this;
        }

        /**
         * Signs every call in to a tenant ({@code X-EAI-Tenant}): a platform_admin's reads become that tenant's; a
         * tenant key may only name its own tenant.
         *
         * @param tenant a slug ({@code acme}) or a tenant id; {@code null} for none
         * @return this builder
         */
        public Builder tenant(String tenant) {
            this.tenant = tenant;
            return this;
        }

        /**
         * The language of error messages ({@code Accept-Language}); default English. {@code message_i18n} of an
         * error always holds English and French.
         *
         * @param locale e.g. {@code Locale.FRENCH}
         * @return this builder
         */
        public Builder locale(Locale locale) {
            this.locale = Objects.requireNonNull(locale, "locale");
            return this;
        }

        /**
         * How long one attempt may take until the answer's headers (default 30 s).
         *
         * @param timeout a positive duration
         * @return this builder
         */
        public Builder timeout(Duration timeout) {
            Objects.requireNonNull(timeout, "timeout");
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("timeout must be positive");
            }
            this.timeout = timeout;
            return this;
        }

        /**
         * Retries after a failed attempt, at most (default 3; 0 disables retries). Retried: connection failures,
         * timeouts, 408, 429, 500, 502, 503, 504 and 409 {@code idempotency_key_in_flight}; never another 4xx.
         *
         * @param maxRetries 0 or more
         * @return this builder
         */
        public Builder maxRetries(int maxRetries) {
            if (maxRetries < 0) {
                throw new IllegalArgumentException("maxRetries must be >= 0");
            }
            this.maxRetries = maxRetries;
            return this;
        }

        /**
         * The backoff before retry n: {@code d = min(max, base * 2^(n-1))}, waiting {@code d/2 + random(0, d/2)}
         * (defaults 0.5 s and 8 s). A {@code Retry-After} of the server is honoured instead, exactly.
         *
         * @param base the first cap
         * @param max the largest cap
         * @return this builder
         */
        public Builder retryBackoff(Duration base, Duration max) {
            Objects.requireNonNull(base, "base");
            Objects.requireNonNull(max, "max");
            if (base.isNegative() || max.isNegative()) {
                throw new IllegalArgumentException("retry delays must be >= 0");
            }
            this.retryBaseDelay = base;
            this.retryMaxDelay = max;
            return this;
        }

        /**
         * The longest {@code Retry-After} waited for (default 60 s): an answer asking for longer is raised at once.
         *
         * @param max the cap
         * @return this builder
         */
        public Builder maxRetryAfter(Duration max) {
            Objects.requireNonNull(max, "max");
            if (max.isNegative()) {
                throw new IllegalArgumentException("maxRetryAfter must be >= 0");
            }
            this.maxRetryAfter = max;
            return this;
        }

        /**
         * Records per ingest request at most (default 5,000; the server's default limit is 10,000).
         *
         * @param maxBatchSize 1 or more
         * @return this builder
         */
        public Builder maxBatchSize(int maxBatchSize) {
            if (maxBatchSize < 1) {
                throw new IllegalArgumentException("maxBatchSize must be >= 1");
            }
            this.maxBatchSize = maxBatchSize;
            return this;
        }

        /**
         * Whether a batch answered {@code 413 payload_too_large} is halved and re-sent (default true). When false
         * the {@link PayloadTooLargeException} is thrown.
         *
         * @param split the behaviour
         * @return this builder
         */
        public Builder splitOnPayloadTooLarge(boolean split) {
            this.splitOnPayloadTooLarge = split;
            return this;
        }

        /**
         * A listener told about every attempt of every call (method, path, attempt, status, error code, request
         * id, duration, the wait before the next one), for logging and metrics; never the API key. Each attempt
         * is also logged through {@code System.Logger} {@code ai.enterprise.eai} (DEBUG; retries at WARNING).
         *
         * @param listener the listener, or {@code null} for none
         * @return this builder
         */
        public Builder listener(RequestListener listener) {
            this.listener = listener;
            return this;
        }

        /**
         * The HTTP client to use (proxy, TLS, executor...). Default: one made by the builder (HTTP/1.1, connect
         * timeout from {@link #timeout}, daemon threads released by {@link EnterpriseAIClient#close()}).
         *
         * @param httpClient the client; not closed by the SDK
         * @return this builder
         */
        public Builder httpClient(HttpClient httpClient) {
            this.httpClient = httpClient;
            return this;
        }

        /**
         * Builds the client.
         *
         * @return the client
         * @throws IllegalStateException when no base URL or no API key is given nor in the environment
         * @throws IllegalArgumentException when the base URL is not an http(s) URL
         */
        public EnterpriseAIClient build() {
            String url = blankToNull(baseUrl != null ? baseUrl : System.getenv("EAI_BASE_URL"));
            if (url == null) {
                throw new IllegalStateException(
                        "no base URL: call EnterpriseAIClient.builder().baseUrl(...) or set EAI_BASE_URL");
            }
            while (url.endsWith("/")) {
                url = url.substring(0, url.length() - 1);
            }
            URI uri;
            try {
                uri = URI.create(url);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("invalid base URL: " + url, e);
            }
            if (uri.getScheme() == null || !(uri.getScheme().equalsIgnoreCase("http")
                    || uri.getScheme().equalsIgnoreCase("https")) || uri.getHost() == null) {
                throw new IllegalArgumentException("the base URL must be an http(s) URL, not " + url);
            }
            if (uri.getQuery() != null || uri.getFragment() != null) {
                throw new IllegalArgumentException("the base URL must have no query nor fragment: " + url);
            }
            String key = blankToNull(apiKey != null ? apiKey : System.getenv("EAI_API_KEY"));
            if (key == null) {
                throw new IllegalStateException(
                        "no API key: call EnterpriseAIClient.builder().apiKey(...) or set EAI_API_KEY");
            }
            ExecutorService owned = null;
            HttpClient http = httpClient;
            if (http == null) {
                AtomicInteger n = new AtomicInteger();
                owned = Executors.newCachedThreadPool(r -> {
                    Thread t = new Thread(r, "eai-sdk-http-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
                Duration connect = timeout.compareTo(Duration.ofSeconds(10)) < 0 ? timeout : Duration.ofSeconds(10);
                http = HttpClient.newBuilder()
                        .version(HttpClient.Version.HTTP_1_1)
                        .connectTimeout(connect)
                        .followRedirects(HttpClient.Redirect.NEVER)
                        .executor(owned)
                        .build();
            }
            Transport t = new Transport(url, key, blankToNull(tenant), locale.toLanguageTag(), timeout, maxRetries,
                    retryBaseDelay, retryMaxDelay, maxRetryAfter, maxBatchSize, splitOnPayloadTooLarge, http,
                    listener, RequestOptions.none());
            return new EnterpriseAIClient(t, locale, owned, new AtomicBoolean(false), true);
        }

        /** Never shows the API key. */
        @Override
        public String toString() {
            return "EnterpriseAIClient.Builder{baseUrl=" + baseUrl + ", tenant=" + tenant + ", locale=" + locale
                    + ", apiKey=" + (apiKey == null ? "null" : redact(apiKey)) + "}";
        }
    }
}
