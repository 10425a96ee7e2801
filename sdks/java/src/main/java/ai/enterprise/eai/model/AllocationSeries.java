package ai.enterprise.eai.model;

import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * Cost over time ({@code GET /v1/finops/gpu/allocation/series}): the period cut into steps; every column of the
 * steps sums to {@code totals} (and to the allocation of the period) to the cent.
 *
 * @param from start of the period (inclusive)
 * @param to end of the period (exclusive)
 * @param step {@code hour}, {@code day}, {@code week} or {@code month} (UTC)
 * @param totals the period's amounts per currency
 * @param tokensIn input tokens of the period
 * @param tokensOut output tokens of the period
 * @param tokens all tokens of the period
 * @param steps the steps, in order
 */
public record AllocationSeries(
        Instant from,
        Instant to,
        String step,
        List<SeriesTotal> totals,
        BigDecimal tokensIn,
        BigDecimal tokensOut,
        BigDecimal tokens,
        List<SeriesStep> steps) {

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
}
