import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * Lists never null.
 *
 * @param from start
 * @param to end
 * @param step the step
 * @param totals totals per currency
 * @param tokensIn input tokens
 * @param tokensOut output tokens
 * @param tokens all tokens
 * @param steps the steps
 */
public AllocationSeries {
    totals = totals == null ? List.of() : List.copyOf(totals);
    steps = steps == null ? List.of() : List.copyOf(steps);
}

/**
 * The period's total in a currency.
 *
 * @param currency ISO 4217 code
 * @return the total, if any
 */
public Optional<SeriesTotal> total(String currency) {
    return totals.stream().filter(t -> currency.equals(t.currency())).findFirst();
}
