/**
 * What a piece of work actually cost: the body of a commit.
 *
 * @param cost the actual cost (in the reservation's currency)
 * @param tokens the actual tokens, or {@code null} to leave them out
 */
public record Actual(BigDecimal cost, Long tokens) {}
