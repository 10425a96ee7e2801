package ai.enterprise.eai.model;

import java.math.BigDecimal;
import java.util.List;

/**
 * One Slurm job of a {@link SlurmReconciliation}: Slurm's allocation beside what was measured.
 *
 * @param jobId Slurm's job id ({@code "42"})
 * @param account the job's Slurm account (the namespace of its samplers' workloads)
 * @param user the job's user as Slurm reported it, or {@code null}
 * @param partition the job's partition, or {@code null}
 * @param state the job's state ({@code COMPLETED}, {@code RUNNING}, ...), or {@code null}
 * @param tenantId the tenant its GPUs were charged to (a {@code [[slurm_account]]} rule of the sampler);
 *     {@code null}: shared (no rule), or not measured
 * @param deploymentId {@code slurm/<partition>} unless a rule names another; {@code null} when not measured
 * @param gpus GPUs Slurm allocated; {@code null}: not in Slurm's accounting
 * @param allocatedGpuSeconds {@code gpus} times the job's run time inside the period, exact; {@code null}: not in
 *     Slurm's accounting
 * @param measuredGpuSeconds GPU-seconds measured of the job's workloads (pod {@code job-<id>}), exact
 * @param busyGpuSeconds the measured GPU-seconds weighted by utilization, exact
 * @param busyShare busy over allocated (or, not in Slurm's accounting, over measured) GPU-seconds, 4 places;
 *     {@code null} when there is nothing to divide by
 * @param cost the job's part of the allocation, per currency; empty when none of it was priced
 * @param status {@link #STATUS_OK}, {@link #STATUS_IDLE}, {@link #STATUS_NOT_MEASURED} or
 *     {@link #STATUS_NOT_IN_SLURM}
 */
public record SlurmJobLine(
        String jobId,
        String account,
        String user,
        String partition,
        String state,
        String tenantId,
        String deploymentId,
        Integer gpus,
        BigDecimal allocatedGpuSeconds,
        BigDecimal measuredGpuSeconds,
        BigDecimal busyGpuSeconds,
        BigDecimal busyShare,
        List<Money> cost,
        String status) {

    /** {@code ok}: measured, and busy at least the idle threshold of the time Slurm allocated. */
    public static final String STATUS_OK = "ok";
    /** {@code idle}: its GPUs busy less than the idle threshold of the time Slurm allocated them. */
    public static final String STATUS_IDLE = "idle";
    /** {@code not_measured}: allocated by Slurm, nothing measured (no sampler on its nodes). */
    public static final String STATUS_NOT_MEASURED = "not_measured";
    /** {@code not_in_slurm}: measured (pod {@code job-<id>}), but not in the sacct document. */
    public static final String STATUS_NOT_IN_SLURM = "not_in_slurm";

    /**
     * {@code cost} never null.
     *
     * @param jobId the job id
     * @param account the account
     * @param user the user, or null
     * @param partition the partition, or null
     * @param state the state, or null
     * @param tenantId the tenant charged, or null
     * @param deploymentId the deployment, or null
     * @param gpus the GPUs allocated, or null
     * @param allocatedGpuSeconds the allocated GPU-seconds, or null
     * @param measuredGpuSeconds the measured GPU-seconds
     * @param busyGpuSeconds the busy GPU-seconds
     * @param busyShare the busy share, or null
     * @param cost the cost per currency
     * @param status the status
     */
    public SlurmJobLine {
        cost = cost == null ? List.of() : List.copyOf(cost);
    }

    /**
     * The job's cost in a currency.
     *
     * @param currency ISO 4217 code
     * @return the amount (zero when none of the job was priced in that currency)
     */
    public BigDecimal total(String currency) {
        return cost.stream()
                .filter(m -> currency.equals(m.currency()))
                .map(Money::amount)
                .reduce(BigDecimal.ZERO, BigDecimal::add);
    }
}
