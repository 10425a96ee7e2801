package ai.enterprise.eai;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * 409 {@code idempotency_key_reused}: an {@code Idempotency-Key} sent again with another body (a {@link ConflictException}).
 */
public class IdempotencyKeyReusedException extends ConflictException {

    /**
     * Makes the error (the SDK does, from the server's answer).
     *
     * @param status the HTTP status
     * @param code the error code
     * @param message the message, in the client's locale
     * @param messageI18n the message in English and French
     * @param details the rejected fields
     * @param requestId the server's request id
     * @param retryAfter the wait the server asked for, or {@code null}
     */
    public IdempotencyKeyReusedException(
            int status,
            String code,
            String message,
            Map<String, String> messageI18n,
            List<FieldError> details,
            String requestId,
            Duration retryAfter) {
        super(status, code, message, messageI18n, details, requestId, retryAfter);
    }
}
