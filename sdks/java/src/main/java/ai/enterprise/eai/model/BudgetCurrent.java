package ai.enterprise.eai.model;

import java.math.BigDecimal;
import java.util.List;

/**
 * The month's standing of a budget in force. {@code left = limit - spent - held}, never below zero.
 *
 * @param month {@code YYYY-MM} (UTC)
 * @param spent committed this month (usage recorded by commits)
 * @param held held by open reservations
 * @param left what is left
 * @param spentTokens tokens committed this month
 * @param heldTokens tokens held by open reservations
 * @param tokensLeft tokens left, or {@code null} without a tokens limit
 * @param crossedPct the thresholds reached this month
 */
public record BudgetCurrent(
        String month,
        Money spent,
        Money held,
        Money left,
        BigDecimal spentTokens,
        BigDecimal heldTokens,
        BigDecimal tokensLeft,
        List<Integer> crossedPct) {}
