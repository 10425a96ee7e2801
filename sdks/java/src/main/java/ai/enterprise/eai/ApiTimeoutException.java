package ai.enterprise.eai;

/** No answer within the client's {@code timeout} (or the connection could not be opened in time). */
public class ApiTimeoutException extends ApiConnectionException {

    /**
     * Makes the error.
     *
     * @param message what timed out
     * @param cause the transport's exception
     */
    public ApiTimeoutException(String message, Throwable cause) {
        super("timeout", message, cause);
    }
}
