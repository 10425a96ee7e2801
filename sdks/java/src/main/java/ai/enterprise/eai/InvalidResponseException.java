package ai.enterprise.eai;

import java.util.List;
import java.util.Map;

/** The server answered, but not with JSON the contract describes (a proxy's HTML page, a truncated body, ...). */
public class InvalidResponseException extends EnterpriseAIException {

    /**
     * Makes the error.
     *
     * @param status the HTTP status of the answer
     * @param message what did not match
     * @param requestId the {@code X-Request-Id} header, or {@code null}
     * @param cause the parser's exception, or {@code null}
     */
    public InvalidResponseException(int status, String message, String requestId, Throwable cause) {
        super(status, "invalid_response", message, Map.of(), List.of(), requestId, null, cause);
    }
}
