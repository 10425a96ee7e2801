import com.fasterxml.jackson.annotation.JsonCreator;
import java.math.BigDecimal;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Collections never null; {@code group} keeps its null values (unmodifiable).
 *
 * @param group the group
 * @param samples samples
 * @param estimatedSamples estimated samples
 * @param gpuSeconds GPU-seconds
 * @param busyGpuSeconds busy GPU-seconds
 * @param estimatedGpuSeconds estimated GPU-seconds
 * @param gpuMemoryGbSeconds memory GB-seconds
 * @param energyWh energy
 * @param unpricedGpuSeconds unpriced GPU-seconds
 * @param cost the cost per currency
 * @param gpuShare the row's share of its GPU's time, or null
 */
@JsonCreator
public GpuUsageRow {
    group = group == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(group));
    cost = cost == null ? List.of() : List.copyOf(cost);
}

/**
 * A row without {@code gpuShare}: the canonical constructor of SDK versions before {@code gpu_share}, kept for
 * source compatibility.
 *
 * @param group the group
 * @param samples samples
 * @param estimatedSamples estimated samples
 * @param gpuSeconds GPU-seconds
 * @param busyGpuSeconds busy GPU-seconds
 * @param estimatedGpuSeconds estimated GPU-seconds
 * @param gpuMemoryGbSeconds memory GB-seconds
 * @param energyWh energy
 * @param unpricedGpuSeconds unpriced GPU-seconds
 * @param cost the cost per currency
 */
public GpuUsageRow(
        Map<String, String> group,
        long samples,
        long estimatedSamples,
        BigDecimal gpuSeconds,
        BigDecimal busyGpuSeconds,
        BigDecimal estimatedGpuSeconds,
        BigDecimal gpuMemoryGbSeconds,
        BigDecimal energyWh,
        BigDecimal unpricedGpuSeconds,
        List<Money> cost) {
    this(group, samples, estimatedSamples, gpuSeconds, busyGpuSeconds, estimatedGpuSeconds, gpuMemoryGbSeconds,
            energyWh, unpricedGpuSeconds, cost, null);
}

/**
 * The row's value of a dimension.
 *
 * @param dimension one of the breakdown's {@code groupBy}
 * @return its value, or {@code null} (no value, or not a dimension of the grouping)
 */
public String value(UsageDimension dimension) {
    return group.get(dimension.wireName());
}

/**
 * The row's cost in a currency.
 *
 * @param currency ISO 4217 code
 * @return the amount (zero when none of the row was priced in that currency)
 */
public BigDecimal total(String currency) {
    return cost.stream()
            .filter(m -> currency.equals(m.currency()))
            .map(Money::amount)
            .reduce(BigDecimal.ZERO, BigDecimal::add);
}
