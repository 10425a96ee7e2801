package ai.enterprise.eai.model;

import java.math.BigDecimal;

/**
 * One row per (deployment, currency). For every row, to the cent: {@code allocated + unallocated == cost}.
 *
 * @param deploymentId the deployment
 * @param dedicated its samples carry an owner tenant: all of it goes to the owner
 * @param samples samples received in the period
 * @param estimatedSamples windows filled by interpolation (short gaps)
 * @param gpus distinct GPUs (or MIG slices) seen
 * @param gpuHours GPU-hours (exact)
 * @param busyGpuHours GPU-hours weighted by utilization (exact)
 * @param estimatedGpuSeconds GPU-seconds of interpolated windows (exact)
 * @param gpuMemoryGbSeconds GiB-seconds of GPU memory (exact)
 * @param energyKwh energy in kWh (exact)
 * @param cost cost of the deployment in the period, in {@code currency}
 * @param allocated the part of the cost charged to tenants
 * @param unallocated the part no tenant is charged (idle capacity)
 * @param unpricedSamples samples no enabled policy prices (counted, never priced at zero)
 * @param currency ISO 4217 code; {@code null} when nothing of the deployment was priced
 */
public record AllocationDeployment(
        String deploymentId,
        boolean dedicated,
        long samples,
        long estimatedSamples,
        long gpus,
        BigDecimal gpuHours,
        BigDecimal busyGpuHours,
        BigDecimal estimatedGpuSeconds,
        BigDecimal gpuMemoryGbSeconds,
        BigDecimal energyKwh,
        BigDecimal cost,
        BigDecimal allocated,
        BigDecimal unallocated,
        long unpricedSamples,
        String currency) {

    /**
     * The cost as money.
     *
     * @return {@code cost} in {@code currency} ({@code currency} may be null when nothing was priced)
     */
    public Money costMoney() {
        return new Money(cost, currency);
    }
}
