import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * Lists never null.
 *
 * @param from start
 * @param to end
 * @param idleBelow the idle threshold
 * @param allocatedGpuSeconds allocated GPU-seconds
 * @param measuredGpuSeconds measured GPU-seconds
 * @param idleCost the idle jobs' cost
 * @param jobs the jobs
 */
public SlurmReconciliation {
    idleCost = idleCost == null ? List.of() : List.copyOf(idleCost);
    jobs = jobs == null ? List.of() : List.copyOf(jobs);
}

/**
 * The line of a job.
 *
 * @param jobId Slurm's job id ({@code "42"})
 * @return its line, or empty
 */
public Optional<SlurmJobLine> job(String jobId) {
    return jobs.stream().filter(j -> j.jobId().equals(jobId)).findFirst();
}

/**
 * The jobs of one status.
 *
 * @param status {@link SlurmJobLine#STATUS_OK}, {@link SlurmJobLine#STATUS_IDLE},
 *     {@link SlurmJobLine#STATUS_NOT_MEASURED} or {@link SlurmJobLine#STATUS_NOT_IN_SLURM}
 * @return those jobs, in job id order
 */
public List<SlurmJobLine> withStatus(String status) {
    return jobs.stream().filter(j -> status.equals(j.status())).toList();
}

/**
 * The idle jobs' cost in a currency.
 *
 * @param currency ISO 4217 code
 * @return the amount (zero when no idle job was priced in that currency)
 */
public BigDecimal idleTotal(String currency) {
    return idleCost.stream()
            .filter(m -> currency.equals(m.currency()))
            .map(Money::amount)
            .reduce(BigDecimal.ZERO, BigDecimal::add);
}
