package ai.enterprise.eai;

import ai.enterprise.eai.model.IngestResult;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One configured connection to the API: builds requests, retries, parses answers, sends batched ingests. Shared
 * by a client and its resources; immutable and thread-safe.
 */
final class Transport {

    private static final System.Logger LOG = System.getLogger("ai.enterprise.eai");

    static final String USER_AGENT = "eai-sdk-java/" + EnterpriseAIClient.VERSION + " (Java "
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
            HttpClient http) {
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
    }

    Transport withTenant(String newTenant) {
        return new Transport(baseUrl, apiKey, newTenant, language, timeout, maxRetries, retryBaseDelay,
                retryMaxDelay, maxRetryAfter, maxBatchSize, splitOnPayloadTooLarge, http);
    }

    Transport withLanguage(String newLanguage) {
        return new Transport(baseUrl, apiKey, tenant, newLanguage, timeout, maxRetries, retryBaseDelay,
                retryMaxDelay, maxRetryAfter, maxBatchSize, splitOnPayloadTooLarge, http);
    }

    // ------------------------------------------------------------------------------------------ one call

    /** A path segment, percent-encoded. */
    static String segment(String value) {
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("an id must be a non-empty string");
        }
        return URLEncoder.encode(value, StandardCharsets.UTF_8).replace("+", "%20");
    }

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

    /** Sends a call (with its retries) and parses the answer into {@code type}. */
    <T> T call(String method, String path, Map<String, ?> params, Object body, boolean idempotent, Class<T> type) {
        JsonNode node = call(method, path, params, body, idempotent);
        return convert(node, Json.MAPPER.constructType(type), method, path);
    }

    /** Sends a call and parses {@code items} of the answer into a list of {@code type}. */
    <T> List<T> callItems(String method, String path, Map<String, ?> params, Class<T> type) {
        JsonNode node = call(method, path, params, null, true);
        JsonNode items = node == null ? null : node.get("items");
        if (items == null || !items.isArray()) {
            throw new InvalidResponseException(200, method + " " + path + ": the answer has no `items` list", null,
                    null);
        }
        JavaType listType = Json.MAPPER.getTypeFactory().constructCollectionType(List.class, type);
        return List.copyOf(convert(items, listType, method, path));
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

    /**
     * Sends one call, retrying per the policy, and returns the answer's JSON ({@code null} for an empty body).
     *
     * <p>Retried: connection failures and timeouts, 429 and 5xx, at most {@code maxRetries} more attempts,
     * waiting {@code Retry-After} (capped) or an exponential backoff with full jitter. A call that is not
     * idempotent (creating a policy, a tenant, a key, a budget or a reservation, superseding, disabling,
     * rotating) is retried only when the server surely did not act on it: the connection could not be opened, 429 or 503. Other 4xx: never.
     */
    JsonNode call(String method, String path, Map<String, ?> params, Object body, boolean idempotent) {
        return parse(exchange(method, path, params, body, idempotent, JSON), method, path);
    }

    /**
     * Sends a call whose answer is a file (a FOCUS export), with the retries of {@link #call}, and returns its
     * bytes as they came; an error answer is still the JSON envelope, raised as its typed exception.
     */
    byte[] download(String path, Map<String, ?> params, String accept) {
        byte[] body = exchange("GET", path, params, null, true, accept).body();
        return body == null ? new byte[0] : body;
    }

    private static final String JSON = "application/json";

    /** One call with its retries: the 2xx answer, or the exception of the final failure. */
    private HttpResponse<byte[]> exchange(String method, String path, Map<String, ?> params, Object body,
            boolean idempotent, String accept) {
        byte[] content = body == null ? null : (body instanceof byte[] b ? b : Json.encode(body));
        URI uri = URI.create(baseUrl + path + query(params));
        int attempt = 0;
        while (true) {
            HttpRequest request = request(method, uri, content, accept);
            EnterpriseAIException error;
            boolean retryable;
            try {
                HttpResponse<byte[]> response = http.send(request, HttpResponse.BodyHandlers.ofByteArray());
                int status = response.statusCode();
                if (status >= 200 && status < 300) {
                    return response;
                }
                error = Errors.fromResponse(status, response.headers(), response.body());
                retryable = status == 429 || status == 503 || (status >= 500 && idempotent);
            } catch (HttpConnectTimeoutException e) {
                error = new ApiTimeoutException(method + " " + path + ": could not connect within the timeout", e);
                retryable = true; // never sent
            } catch (HttpTimeoutException e) {
                error = new ApiTimeoutException(method + " " + path + ": no answer within " + timeout, e);
                retryable = idempotent;
            } catch (ConnectException e) {
                error = new ApiConnectionException(
                        method + " " + path + ": connection failed (" + describe(e) + ")", e);
                retryable = true; // never sent
            } catch (IOException e) {
                error = new ApiConnectionException(
                        method + " " + path + ": connection failed (" + describe(e) + ")", e);
                retryable = idempotent;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ApiConnectionException(method + " " + path + ": interrupted", e);
            }
            if (!retryable || attempt >= maxRetries) {
                throw error;
            }
            Duration wait = delay(attempt, error);
            attempt++;
            LOG.log(System.Logger.Level.WARNING, "eai-sdk: {0} {1} failed ({2}); retry {3} of {4} in {5} ms",
                    method, path, error.getCode(), attempt, maxRetries, String.valueOf(wait.toMillis()));
            try {
                Thread.sleep(wait.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw error;
            }
        }
    }

    private static String describe(Throwable e) {
        String m = e.getMessage();
        return e.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }

    /** The wait after failed attempt number {@code attempt} (0 for the first). */
    Duration delay(int attempt, EnterpriseAIException error) {
        Duration retryAfter = error.getRetryAfter();
        if (retryAfter != null && (error.getStatus() == 429 || error.getStatus() == 503)) {
            return retryAfter.compareTo(maxRetryAfter) > 0 ? maxRetryAfter : retryAfter;
        }
        long base = retryBaseDelay.toMillis();
        long cap = Math.min(retryMaxDelay.toMillis(), base * (1L << Math.min(attempt, 20)));
        return Duration.ofMillis(cap <= 0 ? 0 : ThreadLocalRandom.current().nextLong(cap + 1));
    }

    private HttpRequest request(String method, URI uri, byte[] content, String accept) {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri)
                .timeout(timeout)
                .header("Authorization", "Bearer " + apiKey)
                .header("Accept", accept)
                .header("User-Agent", USER_AGENT);
        if (language != null) {
            b.header("Accept-Language", language);
        }
        if (tenant != null) {
            b.header("X-EAI-Tenant", tenant);
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
    IngestResult ingest(String path, String key, List<ObjectNode> records, Map<String, Object> extra,
            IngestOptions options) {
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
                answer = call("POST", path, null, body, true);
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
