package ai.enterprise.eai;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * 402 {@code budget_exceeded}: a reservation would pass an enforcing budget of the tenant; nothing was held. The
 * message names the budget, its limit and what is left; {@link #getDetails()} names the estimate field ({@code
 * estimate.cost} or {@code estimate.tokens}). Never retried.
 */
public class BudgetExceededException extends EnterpriseAIException {

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
    public BudgetExceededException(
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
