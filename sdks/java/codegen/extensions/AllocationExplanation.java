import com.fasterxml.jackson.annotation.JsonCreator;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;

/**
 * Lists never null.
 *
 * @param deploymentId the deployment
 * @param from start
 * @param to end
 * @param bucketSeconds bucket length
 * @param policies the policies
 * @param buckets the buckets
 * @param idleSpread the idle spread
 * @param rounding the rounding
 * @param pods the pods where its time ran
 */
@JsonCreator
public AllocationExplanation {
    policies = policies == null ? List.of() : List.copyOf(policies);
    buckets = buckets == null ? List.of() : List.copyOf(buckets);
    idleSpread = idleSpread == null ? List.of() : List.copyOf(idleSpread);
    rounding = rounding == null ? List.of() : List.copyOf(rounding);
    pods = pods == null ? List.of() : List.copyOf(pods);
}

/**
 * An explanation without {@code pods}: the canonical constructor of SDK versions before {@code pods}, kept for
 * source compatibility.
 *
 * @param deploymentId the deployment
 * @param from start
 * @param to end
 * @param bucketSeconds bucket length
 * @param policies the policies
 * @param buckets the buckets
 * @param idleSpread the idle spread
 * @param rounding the rounding
 */
public AllocationExplanation(
        String deploymentId,
        Instant from,
        Instant to,
        long bucketSeconds,
        List<Policy> policies,
        List<Bucket> buckets,
        List<IdleSpread> idleSpread,
        List<Rounding> rounding) {
    this(deploymentId, from, to, bucketSeconds, policies, buckets, idleSpread, rounding, null);
}

/**
 * What a tenant is charged on the deployment in a currency: the sum of its rounding lines (the allocation's
 * items).
 *
 * @param tenantId the tenant
 * @param currency ISO 4217 code
 * @return the amount (zero when the tenant has no line)
 */
public BigDecimal amount(String tenantId, String currency) {
    return rounding.stream()
            .filter(r -> currency.equals(r.currency()))
            .flatMap(r -> r.lines().stream())
            .filter(l -> tenantId.equals(l.party().tenantId()))
            .map(RoundingLine::amount)
            .reduce(BigDecimal.ZERO, BigDecimal::add);
}
