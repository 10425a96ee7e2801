package ai.enterprise.eai;

import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * 422 {@code validation_error}: the request is malformed; {@link #getDetails()} names every bad field of every
 * record (a batch is atomic: nothing of it was stored).
 */
public class ValidationException extends EnterpriseAIException {

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
    public ValidationException(
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
     * The names of the rejected fields, each once, in the order of {@link #getDetails()}.
     *
     * @return e.g. {@code [utilization, timestamp]}
     */
    public List<String> fields() {
        Set<String> names = new LinkedHashSet<>();
        for (FieldError d : getDetails()) {
            names.add(d.field());
        }
        return List.copyOf(names);
    }
}
