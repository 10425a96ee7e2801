package ai.enterprise.eai;

import java.util.List;
import java.util.Map;

/**
 * No answer came: the connection could not be opened, broke, or the request was interrupted
 * ({@link #getStatus()} is 0). Retried by the SDK up to {@code maxRetries} when it is safe.
 */
public class ApiConnectionException extends EnterpriseAIException {

    /**
     * Makes the error.
     *
     * @param message what failed
     * @param cause the transport's exception
     */
    public ApiConnectionException(String message, Throwable cause) {
        this("connection_error", message, cause);
    }

    /**
     * Makes the error with a code of its own.
     *
     * @param code the SDK's code for it
     * @param message what failed
     * @param cause the transport's exception
     */
    protected ApiConnectionException(String code, String message, Throwable cause) {
        super(0, code, message, Map.of(), List.of(), null, null, cause);
    }
}
