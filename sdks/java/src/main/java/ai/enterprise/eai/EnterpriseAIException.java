package ai.enterprise.eai;

import ai.enterprise.eai.model.IngestResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * Base class of every error the SDK throws for a call.
 *
 * <p>An error answer of the server carries the contract's envelope
 * {@code {"error": {"code", "message", "message_i18n": {"en", "fr"}, "details", "request_id"}}} and becomes the
 * subclass of its {@code code} (see the table in the README): catch the subclass
 * ({@code NotFoundException}, {@code ValidationException}, ...) or switch on {@link #getCode()}. A code this SDK
 * does not know yet maps to the class of the HTTP status, or to this class, so a newer server never breaks an
 * older SDK. Errors without an answer are {@link ApiConnectionException}s.
 */
public class EnterpriseAIException extends RuntimeException {

    /** The HTTP status, 0 without an answer. */
    private final int status;
    /** The error code. */
    private final String code;
    /** The message by language tag. */
    private final Map<String, String> messageI18n;
    /** The rejected fields (not serialized). */
    private transient volatile List<FieldError> details;
    /** The server's request id. */
    private final String requestId;
    /** The server's Retry-After. */
    private final Duration retryAfter;
    /** The answer's body as it came (not serialized). */
    private transient volatile String body;
    /** What a batched ingest stored before failing (not serialized). */
    private transient volatile IngestResult partialResult;

    /**
     * Makes an error.
     *
     * @param status the HTTP status, 0 when no answer came
     * @param code the contract's error code ({@code not_found}, ...) or the SDK's own ({@code connection_error})
     * @param message human-readable text, in the client's locale when the server wrote it
     * @param messageI18n the message in every language the server gave ({@code en}, {@code fr}); may be empty
     * @param details the rejected fields; may be empty
     * @param requestId the server's request id ({@code X-Request-Id}), or {@code null}
     * @param retryAfter the wait the server asked for ({@code Retry-After}), or {@code null}
     * @param cause the underlying exception, or {@code null}
     */
    public EnterpriseAIException(
            int status,
            String code,
            String message,
            Map<String, String> messageI18n,
            List<FieldError> details,
            String requestId,
            Duration retryAfter,
            Throwable cause) {
        super(message, cause);
        this.status = status;
        this.code = code;
        this.messageI18n = messageI18n == null ? Map.of() : Collections.unmodifiableMap(messageI18n);
        this.details = details == null ? List.of() : List.copyOf(details);
        this.requestId = requestId;
        this.retryAfter = retryAfter;
    }

    /**
     * The HTTP status of the answer.
     *
     * @return the status, or 0 when no answer came (a transport failure)
     */
    public int getStatus() {
        return status;
    }

    /**
     * The contract's error code.
     *
     * @return {@code unauthorized}, {@code forbidden}, {@code tenant_required}, {@code not_found},
     *     {@code method_not_allowed}, {@code payload_too_large}, {@code conflict}, {@code validation_error},
     *     {@code rate_limited}, {@code internal}, {@code unavailable}, {@code idempotency_key_reused},
     *     {@code idempotency_key_in_flight}, {@code budget_exceeded}, a newer server's code (this base class), or
     *     one of the SDK's own: {@code connection_error}, {@code timeout}, {@code invalid_response}; {@code null}
     *     for an answer without the error envelope (a proxy's HTML page: see {@link #getBody()})
     */
    public String getCode() {
        return code;
    }

    /**
     * The message in every language the server gave.
     *
     * @return language tag ({@code en}, {@code fr}) to message; empty when the server sent none
     */
    public Map<String, String> getMessageI18n() {
        return messageI18n;
    }

    /**
     * The rejected fields of a {@code validation_error}.
     *
     * @return the details, empty for other errors; indexes are positions in the list you passed
     */
    public List<FieldError> getDetails() {
        List<FieldError> d = details;
        return d == null ? List.of() : d;
    }

    /**
     * The server's id of the failed request: quote it to the operator.
     *
     * @return the {@code request_id} of the envelope (same as {@code X-Request-Id}), or {@code null}
     */
    public String getRequestId() {
        return requestId;
    }

    /**
     * How long the server asked to wait before retrying ({@code Retry-After}).
     *
     * @return the wait, or {@code null} when the server did not say
     */
    public Duration getRetryAfter() {
        return retryAfter;
    }

    /**
     * For a batched ingest that failed part-way: what the batches stored before the failing one added up to.
     * Sending the whole list again is always safe (ingests are idempotent).
     *
     * @return the merged result of the stored batches, or {@code null} when nothing was sent in batches
     */
    public IngestResult getPartialResult() {
        return partialResult;
    }

    /**
     * The error answer's whole body as the server (or a proxy in front of it) sent it: the JSON envelope, or an
     * HTML page of a load balancer.
     *
     * @return the body, or {@code null} when no answer came
     */
    public String getBody() {
        return body;
    }

    void attachBody(String raw) {
        body = raw;
    }

    /** Shifts detail indexes by {@code offset} and records the partial result (batched ingests). */
    void annotateBatch(int offset, IngestResult partial) {
        List<FieldError> current = getDetails();
        if (offset != 0 && !current.isEmpty()) {
            List<FieldError> shifted = new ArrayList<>(current.size());
            for (FieldError d : current) {
                shifted.add(d.index() == null ? d : new FieldError(d.index() + offset, d.field(), d.reason()));
            }
            details = List.copyOf(shifted);
        }
        partialResult = partial;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder(getClass().getName()).append(": [");
        if (status != 0) {
            sb.append(status).append(' ');
        }
        sb.append(code).append("] ").append(getMessage());
        if (requestId != null) {
            sb.append(" (request_id ").append(requestId).append(')');
        }
        return sb.toString();
    }
}
