package ai.enterprise.eai;

import ai.enterprise.eai.model.IngestResult;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One configured connection to the API: builds requests, retries, parses answers, sends batched ingests. Shared
 * by a client and its resources; immutable and thread-safe.
 */
final class Transport {

    private static final System.Logger LOG = System.getLogger("ai.enterprise.eai");

    static final String USER_AGENT = "eai-gpu-sdk-java/" + EnterpriseAIClient.VERSION + " (Java "
            + System.getProperty("java.version") + ")";

    final String baseUrl;
    final String apiKey;
    final String tenant;
    final String language;
    final Duration timeout;
    final int maxRetries;
    final Duration retryBaseDelay;
    final Duration retryMaxDelay;
    final Duration maxRetryAfter;
    final int maxBatchSize;
    final boolean splitOnPayloadTooLarge;
    final HttpClient http;
    final RequestListener listener;
    /** The options of every call of this view ({@link EnterpriseAIClient#withOptions}). */
    final RequestOptions options;

    Transport(
            String baseUrl,
            String apiKey,
            String tenant,
            String language,
            Duration timeout,
            int maxRetries,
            Duration retryBaseDelay,
            Duration retryMaxDelay,
            Duration maxRetryAfter,
            int maxBatchSize,
            boolean splitOnPayloadTooLarge,
            HttpClient http,
            RequestListener listener,
            RequestOptions options) {
        this.baseUrl = baseUrl;
        this.apiKey = apiKey;
        this.tenant = tenant;
        this.language = language;
        this.timeout = timeout;
        this.maxRetries = maxRetries;
        this.retryBaseDelay = retryBaseDelay;
        this.retryMaxDelay = retryMaxDelay;
        this.maxRetryAfter = maxRetryAfter;
        this.maxBatchSize = maxBatchSize;
        this.splitOnPayloadTooLarge = splitOnPayloadTooLarge;
        this.http = http;
        this.listener = listener;
        this.options = options == null ? RequestOptions.none() : options;
    }

    Transport withTenant(String newTenant) {
        return new Transport(baseUrl, apiKey, newTenant, language, timeout, maxRetries, retryBaseDelay,
                retryMaxDelay, maxRetryAfter, maxBatchSize, splitOnPayloadTooLarge, http, listener, options);
    }

    Transport withLanguage(String newLanguage) {
        return new Transport(baseUrl, apiKey, tenant, newLanguage, timeout, maxRetries, retryBaseDelay,
                retryMaxDelay, maxRetryAfter, maxBatchSize, splitOnPayloadTooLarge, http, listener, options);
    }

    Transport withOptions(RequestOptions more) {
        if (more == null || more == RequestOptions.none()) {
            return this;
        }
        return new Transport(baseUrl, apiKey, tenant, language, timeout, maxRetries, retryBaseDelay,
                retryMaxDelay, maxRetryAfter, maxBatchSize, splitOnPayloadTooLarge, http, listener,
                more.over(options));
    }

    // ------------------------------------------------------------------------------------------ raw answers

    /** What {@link EnterpriseAIClient#withRawResponse} collects on its thread: the last 2xx answer. */
    static final class Capture {
        HttpResponse<byte[]> last;
        int requests;
    }

    static final ThreadLocal<Capture> CAPTURE = new ThreadLocal<>();

    // ------------------------------------------------------------------------------------------ one call

    /** The query string of non-null parameters, or "". */
    static String query(Map<String, ?> params) {
        if (params == null || params.isEmpty()) {
            return "";
        }
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<String, ?> e : params.entrySet()) {
            if (e.getValue() == null) {
                continue;
            }
            sb.append(sb.length() == 0 ? '?' : '&')
                    .append(URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8))
                    .append('=')
                    .append(URLEncoder.encode(Json.formatParam(e.getKey(), e.getValue()), StandardCharsets.UTF_8));
        }
        return sb.toString();
    }

    /** Sends an operation (with its retries) and parses the answer into {@code type}. */
    <T> T call(ApiOperation op, String[] args, Map<String, ?> params, Object body, Class<T> type) {
        JsonNode node = call(op, args, params, body);
        return convert(node, Json.MAPPER.constructType(type), op.method(), op.pathTemplate());
    }

    /** Sends an operation and parses {@code items} of the answer into a list of {@code type}. */
    <T> List<T> callItems(ApiOperation op, String[] args, Map<String, ?> params, Class<T> type) {
        JsonNode node = call(op, args, params, null);
        JsonNode items = node == null ? null : node.get("items");
        if (items == null || !items.isArray()) {
            throw new InvalidResponseException(200, op.method() + " " + op.pathTemplate()
                    + ": the answer has no `items` list", null, null);
        }
        JavaType listType = Json.MAPPER.getTypeFactory().constructCollectionType(List.class, type);
        return List.copyOf(convert(items, listType, op.method(), op.pathTemplate()));
    }

    private static <T> T convert(JsonNode node, JavaType type, String method, String path) {
        try {
            return Json.MAPPER.readerFor(type).readValue(node);
        } catch (IOException | IllegalArgumentException e) {
            throw new InvalidResponseException(200,
                    method + " " + path + ": the answer does not match the contract (" + e.getMessage() + ")", null,
                    e);
        }
    }

    /** Sends an operation, retrying per the policy, and returns the answer's JSON ({@code null} for none). */
    JsonNode call(ApiOperation op, String[] args, Map<String, ?> params, Object body) {
        return call(op.method(), op.path(args == null ? new String[0] : args), params, body, RequestOptions.none());
    }

    /**
     * Sends one call, retrying per {@code contracts/v1/sdk/behaviour.json}, and returns the answer's JSON
     * ({@code null} for an empty body).
     */
    JsonNode call(String method, String path, Map<String, ?> params, Object body, RequestOptions more) {
        return parse(exchange(method, path, params, body, JSON, more), method, path);
    }

    /**
     * Sends a call whose answer is a file (a FOCUS export), with the retries of {@link #call}, and returns its
     * bytes as they came; an error answer is still the JSON envelope, raised as its typed exception.
     */
    byte[] download(ApiOperation op, Map<String, ?> params, String accept) {
        return download(op, new String[0], params, accept);
    }

    /** {@link #download(ApiOperation, Map, String)} of an operation with path parameters. */
    byte[] download(ApiOperation op, String[] args, Map<String, ?> params, String accept) {
        byte[] body = exchange(op.method(), op.path(args), params, null, accept, RequestOptions.none()).body();
        return body == null ? new byte[0] : body;
    }

    /** Answers that are retried (behaviour.json {@code retried.statuses}). */
    static final Set<Integer> RETRIED_STATUSES = Set.of(408, 429, 500, 502, 503, 504);
    /** Codes of a 409 that are retried (behaviour.json {@code retried.codes_on_409}). */
    static final Set<String> RETRIED_CODES_ON_409 = Set.of("idempotency_key_in_flight");

    private static final String JSON = "application/json";

    /**
     * One call with its retries: the 2xx answer, or the exception of the final failure. Every POST and DELETE
     * carries an {@code Idempotency-Key} (the caller's, else a fresh UUID v4), the same on each retry, so every
     * call is retried: on connection failures and timeouts, on {@link #RETRIED_STATUSES} and on a 409
     * {@code idempotency_key_in_flight}. The wait is the answer's {@code Retry-After} (exactly; one longer than
     * {@code maxRetryAfter} is not waited for: the error is raised at once), else the backoff.
     */
    private HttpResponse<byte[]> exchange(String method, String path, Map<String, ?> params, Object body,
            String accept, RequestOptions more) {
        RequestOptions o = more == null ? options : more.over(options);
        int retries = o.maxRetries() != null ? o.maxRetries() : maxRetries;
        Duration attemptTimeout = o.timeout() != null ? o.timeout() : timeout;
        String key = ApiOperation.carriesKey(method)
                ? (o.idempotencyKey() != null ? o.idempotencyKey() : UUID.randomUUID().toString())
                : null;
        byte[] content = body == null ? null : (body instanceof byte[] b ? b : Json.encode(body));
        URI uri = URI.create(baseUrl + path + query(params));
        int attempt = 0;
        while (true) {
            HttpRequest request = request(method, uri, content, accept, attemptTimeout, key, o);
            EnterpriseAIException error;
            boolean retryable;
            int status = 0;
            String requestId = null;
            long started = System.nanoTime();
            try {
                HttpResponse<byte[]> response = http.send(request, HttpResponse.BodyHandlers.ofByteArray());
                status = response.statusCode();
                requestId = response.headers().firstValue("x-request-id").orElse(null);
                if (status >= 200 && status < 300) {
                    notify(method, path, attempt, status, null, requestId, started, null);
                    Capture c = CAPTURE.get();
                    if (c != null) {
                        c.last = response;
                        c.requests++;
                    }
                    return response;
                }
                error = Errors.fromResponse(status, response.headers(), response.body());
                retryable = RETRIED_STATUSES.contains(status)
                        || (status == 409 && RETRIED_CODES_ON_409.contains(error.getCode()));
            } catch (HttpTimeoutException e) {
                error = new ApiTimeoutException(method + " " + path + ": no answer within " + attemptTimeout, e);
                retryable = true;
            } catch (IOException e) {
                error = new ApiConnectionException(
                        method + " " + path + ": connection failed (" + describe(e) + ")", e);
                retryable = true;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ApiConnectionException(method + " " + path + ": interrupted", e);
            }
            Duration retryAfter = error.getRetryAfter();
            if (!retryable || attempt >= retries
                    || (retryAfter != null && retryAfter.compareTo(maxRetryAfter) > 0)) {
                notify(method, path, attempt, status, error.getCode(), requestId, started, null);
                throw error;
            }
            attempt++;
            Duration wait = retryAfter != null ? retryAfter : backoff(attempt);
            notify(method, path, attempt - 1, status, error.getCode(), requestId, started, wait);
            LOG.log(System.Logger.Level.WARNING, "eai-sdk: {0} {1} failed ({2}); retry {3} of {4} in {5} ms",
                    method, path, error.getCode(), attempt, retries, String.valueOf(wait.toMillis()));
            try {
                Thread.sleep(wait.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw error;
            }
        }
    }

    /** Tells the listener and the logger about an attempt ({@code attempt} counted from 0). */
    private void notify(String method, String path, int attempt, int status, String code, String requestId,
            long startedNanos, Duration retryIn) {
        Duration elapsed = Duration.ofNanos(System.nanoTime() - startedNanos);
        LOG.log(System.Logger.Level.DEBUG, "eai-sdk: {0} {1} attempt {2}: status {3} {4} in {5} ms{6}", method,
                path, String.valueOf(attempt + 1), String.valueOf(status), code == null ? "" : code,
                String.valueOf(elapsed.toMillis()), retryIn == null ? "" : "; retry in " + retryIn.toMillis() + " ms");
        if (listener != null) {
            try {
                listener.onAttempt(new RequestListener.Attempt(method, path, attempt + 1, status, code, requestId,
                        elapsed, retryIn));
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "eai-sdk: the request listener threw", e);
            }
        }
    }

    private static String describe(Throwable e) {
        String m = e.getMessage();
        return e.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }

    /**
     * The wait before retry {@code n} (1, 2, ...) when the answer gives no {@code Retry-After}:
     * {@code d = min(base * 2^(n-1), max)}, then {@code d/2 + uniform(0, d/2)}.
     */
    Duration backoff(int n) {
        long base = retryBaseDelay.toMillis();
        long d = Math.min(retryMaxDelay.toMillis(), base * (1L << Math.min(n - 1, 20)));
        if (d <= 0) {
            return Duration.ZERO;
        }
        return Duration.ofMillis(d / 2 + ThreadLocalRandom.current().nextLong(d - d / 2 + 1));
    }

    private HttpRequest request(String method, URI uri, byte[] content, String accept, Duration attemptTimeout,
            String idempotencyKey, RequestOptions o) {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri)
                .timeout(attemptTimeout)
                .header("Authorization", "Bearer " + apiKey)
                .header("Accept", accept)
                .header("User-Agent", USER_AGENT);
        if (language != null) {
            b.header("Accept-Language", language);
        }
        if (tenant != null) {
            b.header("X-EAI-Tenant", tenant);
        }
        if (idempotencyKey != null) {
            b.header("Idempotency-Key", idempotencyKey);
        }
        if (o.traceparent() != null) {
            b.header("traceparent", o.traceparent());
        }
        for (Map.Entry<String, String> h : o.headers().entrySet()) {
            b.setHeader(h.getKey(), h.getValue());
        }
        if (content != null) {
            b.header("Content-Type", "application/json");
            b.method(method, HttpRequest.BodyPublishers.ofByteArray(content));
        } else {
            b.method(method, HttpRequest.BodyPublishers.noBody());
        }
        return b.build();
    }

    private static JsonNode parse(HttpResponse<byte[]> response, String method, String path) {
        byte[] body = response.body();
        if (body == null || body.length == 0) {
            return null;
        }
        try {
            return Json.MAPPER.readTree(body);
        } catch (IOException e) {
            throw new InvalidResponseException(response.statusCode(),
                    method + " " + path + ": the answer is not JSON (" + e.getMessage() + ")",
                    response.headers().firstValue("x-request-id").orElse(null), e);
        }
    }

    // ------------------------------------------------------------------------------------------ ingests

    /** The records of an ingest as JSON objects (copies: the caller's objects are never modified). */
    static List<ObjectNode> records(List<?> items, String what) {
        if (items == null) {
            throw new NullPointerException(what);
        }
        List<ObjectNode> out = new ArrayList<>(items.size());
        int i = 0;
        for (Object item : items) {
            if (item == null) {
                throw new IllegalArgumentException(what + "[" + i + "] is null");
            }
            JsonNode node = item instanceof JsonNode j ? j.deepCopy() : Json.toTree(item);
            if (!(node instanceof ObjectNode obj)) {
                throw new IllegalArgumentException(
                        what + "[" + i + "] must be an object (a Map or a record), not " + item.getClass().getName());
            }
            out.add(obj);
            i++;
        }
        return out;
    }

    /** The members of a batch body other than its list ({@code {"samples": [...], ...}}), and the list. */
    static Map.Entry<List<?>, Map<String, Object>> splitBody(Map<String, ?> body, String key) {
        if (body == null) {
            throw new NullPointerException("body");
        }
        Object list = body.get(key);
        if (!(list instanceof List<?> l)) {
            throw new IllegalArgumentException(
                    "the body must hold `" + key + "`: a List of " + key + (list == null ? "" : ", not " + list.getClass().getName()));
        }
        Map<String, Object> extra = new LinkedHashMap<>();
        for (Map.Entry<String, ?> e : body.entrySet()) {
            if (!e.getKey().equals(key)) {
                extra.put(e.getKey(), e.getValue());
            }
        }
        return Map.entry(l, extra);
    }

    /**
     * Sends prepared records in batches of at most {@code batchSize}. A batch answered 413 stored nothing: when
     * it holds more than one record it is halved and re-sent, and the rest goes on with the smaller size.
     * Counts are summed. On an error, detail indexes are shifted to positions in {@code records} and the
     * exception carries what the stored batches added up to.
     */
    IngestResult ingest(ApiOperation op, String key, List<ObjectNode> records, Map<String, Object> extra,
            IngestOptions options) {
        String path = op.path();
        String givenKey = this.options.idempotencyKey();
        int part = 0;
        IngestOptions o = options == null ? IngestOptions.defaults() : options;
        int size = o.batchSize() != null ? o.batchSize() : maxBatchSize;
        boolean split = o.splitOnPayloadTooLarge() != null ? o.splitOnPayloadTooLarge() : splitOnPayloadTooLarge;
        IngestResult total = new IngestResult(0, 0, 0);
        int pos = 0;
        while (pos < records.size()) {
            List<ObjectNode> chunk = records.subList(pos, Math.min(records.size(), pos + size));
            ObjectNode body = Json.MAPPER.createObjectNode();
            if (extra != null) {
                for (Map.Entry<String, Object> e : extra.entrySet()) {
                    body.set(e.getKey(), Json.toTree(e.getValue()));
                }
            }
            ArrayNode array = body.putArray(key);
            array.addAll(chunk);
            JsonNode answer;
            try {
                // each part its own request with its own key: the caller's key as given on the first part,
                // then key-2, key-3... (part n is key-n); a fresh UUID v4 each without one
                RequestOptions partOptions = givenKey == null ? RequestOptions.none()
                        : this.options.withIdempotencyKey(part == 0 ? givenKey : givenKey + "-" + (part + 1));
                part++;
                answer = call(op.method(), path, null, body, partOptions);
            } catch (PayloadTooLargeException e) {
                if (split && chunk.size() > 1) {
                    int smaller = Math.max(1, chunk.size() / 2);
                    LOG.log(System.Logger.Level.INFO,
                            "eai-sdk: {0}: a batch of {1} was too large ({2}); sending batches of {3}", path,
                            String.valueOf(chunk.size()), e.getMessage(), String.valueOf(smaller));
                    size = smaller;
                    continue;
                }
                e.annotateBatch(pos, total);
                throw e;
            } catch (EnterpriseAIException e) {
                e.annotateBatch(pos, total);
                throw e;
            }
            total = total.plus(new IngestResult(count(answer, "accepted"), count(answer, "duplicates"), 1));
            pos += chunk.size();
        }
        return total;
    }

    private static long count(JsonNode answer, String field) {
        JsonNode n = answer == null ? null : answer.get(field);
        return n != null && n.canConvertToLong() ? n.asLong() : 0L;
    }

    /** Whether an object lacks a member (absent or null). */
    static boolean lacks(ObjectNode node, String field) {
        JsonNode v = node.get(field);
        return v == null || v.isNull();
    }
}
