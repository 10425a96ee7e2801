package ai.enterprise.eai.model;

import java.time.Instant;
import java.util.List;

/**
 * A monthly budget of one tenant. Never edited in place: a change closes it ({@code effectiveTo}) and opens its
 * successor. {@link #toString()} never shows the webhook secret.
 *
 * @param id {@code bud_<n>}
 * @param tenantId the tenant it limits
 * @param name a label for people
 * @param period {@code month} (calendar months, UTC)
 * @param limit the monthly limit (its currency is the budget's)
 * @param tokensLimit a monthly limit on tokens, or {@code null}
 * @param thresholdsPct percentages of the limit that alert once a month each
 * @param enforce whether reservations that would pass the limit are refused ({@code false}: alert only)
 * @param webhookUrl where threshold crossings are POSTed, or {@code null}
 * @param effectiveFrom start (inclusive)
 * @param effectiveTo end (exclusive), {@code null} when open-ended
 * @param status {@code active}, {@code scheduled} or {@code closed}
 * @param current the month's standing of a budget in force, else {@code null}
 * @param webhookSecret the secret signing its webhooks: in the answer to its creation only (when it has a
 *     webhook), {@code null} elsewhere
 */
public record Budget(
        String id,
        String tenantId,
        String name,
        String period,
        Money limit,
        Long tokensLimit,
        List<Integer> thresholdsPct,
        boolean enforce,
        String webhookUrl,
        Instant effectiveFrom,
        Instant effectiveTo,
        String status,
        BudgetCurrent current,
        String webhookSecret) {

    /** Never shows the webhook secret. */
    @Override
    public String toString() {
        return "Budget[id=" + id + ", tenantId=" + tenantId + ", name=" + name + ", period=" + period
                + ", limit=" + limit + ", tokensLimit=" + tokensLimit + ", thresholdsPct=" + thresholdsPct
                + ", enforce=" + enforce + ", webhookUrl=" + webhookUrl + ", effectiveFrom=" + effectiveFrom
                + ", effectiveTo=" + effectiveTo + ", status=" + status + ", current=" + current
                + ", webhookSecret=" + (webhookSecret == null ? "null" : "<redacted>") + "]";
    }
}
