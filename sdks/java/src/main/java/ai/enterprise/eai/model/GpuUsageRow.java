package ai.enterprise.eai.model;

import com.fasterxml.jackson.annotation.JsonCreator;
import java.math.BigDecimal;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One row of a GPU usage breakdown: its group's value of each dimension asked, what was measured, its cost per
 * currency, and, grouped by {@link UsageDimension#GPU}, its share of the GPU's time. The rows of a deployment sum
 * to its cost in the allocation of the same period, to the cent.
 *
 * @param group each dimension of {@code group_by} (by its wire name, {@link UsageDimension#wireName()}) and the
 *     row's value of it; a value is null for a shared deployment's {@code tenant}, or the placement ({@code pod},
 *     {@code namespace}, {@code node}, {@code share}) of time stored before placements were kept
 * @param samples samples received (each counted once, in the hour of its window start)
 * @param estimatedSamples windows estimated by interpolation over short gaps
 * @param gpuSeconds GPU-seconds (estimated ones included), exact
 * @param busyGpuSeconds GPU-seconds weighted by utilization, exact
 * @param estimatedGpuSeconds GPU-seconds of interpolated windows, exact
 * @param gpuMemoryGbSeconds GB-seconds of GPU memory, exact
 * @param energyWh energy in Wh, exact
 * @param unpricedGpuSeconds GPU-seconds no enabled policy priced, exact
 * @param cost the row's cost per currency (one, unless a policy of another currency priced part of it); empty
 *     when none of it was priced
 * @param gpuShare grouped by {@link UsageDimension#GPU} and read with a platform key: the row's GPU-seconds over
 *     all the GPU-seconds of its GPU in the period (every pod's share and the idle share of a shared GPU, rows
 *     filtered out included), exact to 6 places, {@code 1} for a pod that had its GPU to itself; {@code null}
 *     otherwise (a tenant's key is not told how much of a GPU the others used)
 */
public record GpuUsageRow(
        Map<String, String> group,
        long samples,
        long estimatedSamples,
        BigDecimal gpuSeconds,
        BigDecimal busyGpuSeconds,
        BigDecimal estimatedGpuSeconds,
        BigDecimal gpuMemoryGbSeconds,
        BigDecimal energyWh,
        BigDecimal unpricedGpuSeconds,
        List<Money> cost,
        BigDecimal gpuShare) {

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
}
