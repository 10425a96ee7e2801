package ai.enterprise.eai;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Options of one call, over the client's: timeout, retries, {@code Idempotency-Key}, {@code traceparent} and extra
 * headers. Immutable; every resource method takes one as its last argument (an overload), and
 * {@link EnterpriseAIClient#withOptions(RequestOptions)} gives a client whose every call uses them.
 *
 * <pre>{@code
 * RequestOptions o = RequestOptions.builder()
 *     .timeout(Duration.ofSeconds(5)).maxRetries(1)
 *     .idempotencyKey("create-acme-2026-10")          // default: a fresh UUID v4 per call, kept on its retries
 *     .traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
 *     .header("X-Debug", "1")
 *     .build();
 * client.tenants().create("acme", "Acme Corp", null, o);
 * }</pre>
 */
public final class RequestOptions {

    private static final RequestOptions NONE = new RequestOptions(null, null, null, null, Map.of());

    /** Headers the SDK owns: not settable through {@link Builder#header}. */
    private static final Set<String> RESERVED = Set.of("authorization", "content-type", "content-length", "host",
            "idempotency-key", "traceparent", "connection");

    private final Duration timeout;
    private final Integer maxRetries;
    private final String idempotencyKey;
    private final String traceparent;
    private final Map<String, String> headers;

    private RequestOptions(Duration timeout, Integer maxRetries, String idempotencyKey, String traceparent,
            Map<String, String> headers) {
        this.timeout = timeout;
        this.maxRetries = maxRetries;
        this.idempotencyKey = idempotencyKey;
        this.traceparent = traceparent;
        this.headers = headers;
    }

    /**
     * No option: the client's settings.
     *
     * @return the empty options
     */
    public static RequestOptions none() {
        return NONE;
    }

    /**
     * A builder.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * The timeout of each attempt, or {@code null} for the client's.
     *
     * @return the timeout
     */
    public Duration timeout() {
        return timeout;
    }

    /**
     * The retries after a failed attempt, or {@code null} for the client's.
     *
     * @return the count
     */
    public Integer maxRetries() {
        return maxRetries;
    }

    /**
     * The {@code Idempotency-Key} of a POST or DELETE, or {@code null} for a fresh UUID v4 per call.
     *
     * @return the key
     */
    public String idempotencyKey() {
        return idempotencyKey;
    }

    /**
     * The W3C {@code traceparent} header, or {@code null}.
     *
     * @return the header's value
     */
    public String traceparent() {
        return traceparent;
    }

    /**
     * Extra headers, by name.
     *
     * @return an unmodifiable map
     */
    public Map<String, String> headers() {
        return headers;
    }

    /** These options over {@code base}: what is set here wins. */
    RequestOptions over(RequestOptions base) {
        if (base == null || base == NONE) {
            return this;
        }
        if (this == NONE) {
            return base;
        }
        Map<String, String> h = new LinkedHashMap<>(base.headers);
        h.putAll(headers);
        return new RequestOptions(timeout != null ? timeout : base.timeout,
                maxRetries != null ? maxRetries : base.maxRetries,
                idempotencyKey != null ? idempotencyKey : base.idempotencyKey,
                traceparent != null ? traceparent : base.traceparent, Collections.unmodifiableMap(h));
    }

    /** The same options with another idempotency key (the parts of a batched ingest). */
    RequestOptions withIdempotencyKey(String key) {
        return new RequestOptions(timeout, maxRetries, key, traceparent, headers);
    }

    @Override
    public String toString() {
        return "RequestOptions{timeout=" + timeout + ", maxRetries=" + maxRetries + ", idempotencyKey="
                + idempotencyKey + ", traceparent=" + traceparent + ", headers=" + headers.keySet() + "}";
    }

    /** Builds {@link RequestOptions}. */
    public static final class Builder {
        private Duration timeout;
        private Integer maxRetries;
        private String idempotencyKey;
        private String traceparent;
        private final Map<String, String> headers = new LinkedHashMap<>();

        private Builder() {}

        /**
         * The timeout of each attempt of this call.
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
         * The retries after a failed attempt of this call.
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
         * The {@code Idempotency-Key} of this POST or DELETE (ignored on a GET). A batched ingest sent in several
         * parts sends the key as given with its first part and {@code key-1}, {@code key-2}... with the others.
         *
         * @param key 1 to 255 visible characters
         * @return this builder
         */
        public Builder idempotencyKey(String key) {
            Objects.requireNonNull(key, "key");
            if (key.isBlank()) {
                throw new IllegalArgumentException("idempotencyKey must not be blank");
            }
            this.idempotencyKey = key;
            return this;
        }

        /**
         * The W3C trace context to forward ({@code traceparent}).
         *
         * @param traceparent e.g. {@code 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01}
         * @return this builder
         */
        public Builder traceparent(String traceparent) {
            this.traceparent = Objects.requireNonNull(traceparent, "traceparent");
            return this;
        }

        /**
         * An extra header of this call (not {@code Authorization}, {@code Content-Type},
         * {@code Idempotency-Key} nor {@code traceparent}: they have their own options).
         *
         * @param name the header's name
         * @param value its value
         * @return this builder
         */
        public Builder header(String name, String value) {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(value, "value");
            if (RESERVED.contains(name.toLowerCase(Locale.ROOT))) {
                throw new IllegalArgumentException("the SDK sets " + name + " itself");
            }
            headers.put(name, value);
            return this;
        }

        /**
         * Builds the options.
         *
         * @return the options
         */
        public RequestOptions build() {
            return new RequestOptions(timeout, maxRetries, idempotencyKey, traceparent,
                    Collections.unmodifiableMap(new LinkedHashMap<>(headers)));
        }
    }
}
