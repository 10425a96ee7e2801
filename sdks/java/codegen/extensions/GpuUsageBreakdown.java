import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;

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
