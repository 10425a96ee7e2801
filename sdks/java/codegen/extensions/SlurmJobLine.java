import java.math.BigDecimal;
import java.util.List;

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
