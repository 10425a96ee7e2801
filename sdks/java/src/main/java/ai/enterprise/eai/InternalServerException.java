package ai.enterprise.eai;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * 500 {@code internal} (and any other 5xx without a class of its own): the server failed.
 */
public class InternalServerException extends EnterpriseAIException {

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
    public InternalServerException(
            int status,
            String code,
            String message,
            Map<String, String> messageI18n,
            List<FieldError> details,
            String requestId,
            Duration retryAfter) {
        super(status, code, message, messageI18n, details, requestId, retryAfter, null);
    }
}
