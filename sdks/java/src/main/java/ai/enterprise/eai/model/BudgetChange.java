package ai.enterprise.eai.model;

/**
 * The answer to superseding or disabling a budget (same transaction).
 *
 * @param closed the budget, now closed at the change's instant
 * @param opened its successor, or {@code null} for a disable
 */
public record BudgetChange(Budget closed, Budget opened) {}
