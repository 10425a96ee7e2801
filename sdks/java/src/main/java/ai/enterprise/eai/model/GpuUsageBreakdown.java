package ai.enterprise.eai.model;

import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;

/**
 * A period's GPU time and cost per pod, node, GPU, namespace, deployment, tenant, model or share method
 * ({@code GET /v1/finops/gpu/usage}). Each deployment's cost (the allocation's figure for the same period) is
 * apportioned over its rows with the largest-remainder method, so the rows of a deployment sum to it to the cent;
 * a filter keeps the same cents as the unfiltered answer. Grouped by {@link UsageDimension#GPU} (the device), each
 * row has its share of the GPU's time ({@link GpuUsageRow#gpuShare()}, platform keys).
 *
 * @param from start of the period (inclusive)
 * @param to end of the period (exclusive)
 * @param groupBy the dimensions of a row, in the order asked
 * @param rows the rows, sorted by their group's values
 */
public record GpuUsageBreakdown(Instant from, Instant to, List<UsageDimension> groupBy, List<GpuUsageRow> rows) {

    /**
     * Lists never null.
     *
     * @param from start
     * @param to end
     * @param groupBy the dimensions
     * @param rows the rows
     */
    public GpuUsageBreakdown {
        groupBy = groupBy == null ? List.of() : List.copyOf(groupBy);
        rows = rows == null ? List.of() : List.copyOf(rows);
    }

    /**
     * The rows' cost in a currency, summed.
     *
     * @param currency ISO 4217 code
     * @return the amount (zero when no row was priced in that currency)
     */
    public BigDecimal total(String currency) {
        return rows.stream().map(r -> r.total(currency)).reduce(BigDecimal.ZERO, BigDecimal::add);
    }
}
