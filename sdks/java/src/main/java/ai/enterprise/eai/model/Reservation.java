package ai.enterprise.eai.model;

import java.math.BigDecimal;
import java.time.Instant;

/**
 * A hold against a tenant's enforcing budgets: {@code held} until committed, released or expired.
 *
 * @param id {@code res_<32 hex>}
 * @param tenantId the tenant it holds for
 * @param action what it is for (the usage type of the event its commit records), e.g. {@code llm.invoke}
 * @param deploymentId the deployment, or {@code null}
 * @param status {@code held}, {@code committed}, {@code released} or {@code expired}
 * @param estimate what was held
 * @param actual what was committed, or {@code null}
 * @param createdAt when it was granted
 * @param expiresAt when the hold frees itself
 * @param closedAt when it was committed or released, or {@code null}
 * @param usageEventId the usage event its commit recorded, or {@code null}
 */
public record Reservation(
        String id,
        String tenantId,
        String action,
        String deploymentId,
        String status,
        Amounts estimate,
        Amounts actual,
        Instant createdAt,
        Instant expiresAt,
        Instant closedAt,
        String usageEventId) {

    /**
     * A cost and tokens in the reservation's currency, as the server answers them.
     *
     * @param cost the cost, exact
     * @param tokens the tokens (0 when not given)
     * @param currency ISO 4217 code
     */
    public record Amounts(BigDecimal cost, BigDecimal tokens, String currency) {}

    /**
     * What a piece of work actually cost: the body of a commit.
     *
     * @param cost the actual cost (in the reservation's currency)
     * @param tokens the actual tokens, or {@code null} to leave them out
     */
    public record Actual(BigDecimal cost, Long tokens) {}
}
