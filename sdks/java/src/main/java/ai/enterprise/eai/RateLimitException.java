package ai.enterprise.eai;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * 429 {@code rate_limited}: too many requests for this key (or address); {@link #getRetryAfter()} says how long
 * to wait. Retried by the SDK (honouring {@code Retry-After}) up to {@code maxRetries}.
 */
public class RateLimitException extends EnterpriseAIException {

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
    public RateLimitException(
            int status,
            String code,
            String message,
            Map<String, String> messageI18n,
            List<FieldError> details,
            String requestId,
            Duration retryAfter) {
        super(status, code, message, messageI18n, details, requestId, retryAfter, null);
    }

    /**
     * How long the server asked to wait ({@code Retry-After}, in seconds on the wire).
     *
     * @return the wait, or {@code null} when the header was missing
     */
    @Override
    public Duration getRetryAfter() {
        return super.getRetryAfter();
    }
}
