package ai.enterprise.eai.model;

import com.fasterxml.jackson.annotation.JsonCreator;
import java.math.BigDecimal;
import java.time.Instant;
import java.util.List;

/**
 * Why a deployment costs what it does ({@code GET /v1/finops/gpu/allocation/explain}), bucket by bucket. Amounts
 * before rounding are exact; the {@code amount} of the rounding lines are the allocation's items and unallocated
 * figures for the same period, to the cent.
 *
 * @param deploymentId the deployment
 * @param from start of the period (inclusive)
 * @param to end of the period (exclusive)
 * @param bucketSeconds the length of an allocation bucket
 * @param policies the policies that priced a bucket, with their rates
 * @param buckets every bucket with GPU time or a claim, in time order
 * @param idleSpread idle capacity a {@code proportional} policy gave the tenants
 * @param rounding each (deployment, currency) row rounded once, then apportioned
 * @param pods where the deployment's time ran: its usage breakdown grouped by {@code namespace}, {@code pod},
 *     {@code gpu} and {@code share} (as {@code GET /v1/finops/gpu/usage} answers it filtered on the deployment);
 *     a pod on a GPU shared with others has its share of the GPU's time ({@link GpuUsageRow#gpuShare()}, platform
 *     keys) and how it was obtained ({@link UsageDimension#SHARE}). A tenant's key sees the pods of its dedicated
 *     deployments only (none of a shared one)
 */
public record AllocationExplanation(
        String deploymentId,
        Instant from,
        Instant to,
        long bucketSeconds,
        List<Policy> policies,
        List<Bucket> buckets,
        List<IdleSpread> idleSpread,
        List<Rounding> rounding,
        List<GpuUsageRow> pods) {

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

    /**
     * Who a line is about.
     *
     * @param kind {@code tenant} ({@code tenantId} set), {@code other_tenants} (every tenant but the reader,
     *     summed) or, in the rounding, {@code unallocated} (idle capacity)
     * @param tenantId the tenant, for kind {@code tenant}
     */
    public record Party(String kind, String tenantId) {}

    /**
     * A policy that priced a bucket, with its rates.
     *
     * @param policyId the policy
     * @param name its name
     * @param currency ISO 4217 code
     * @param gpuHourlyCost price of a GPU-hour
     * @param overheadPct overhead added to GPU time, in percent
     * @param energyKwhPrice price of a kWh
     * @param pue power usage effectiveness
     * @param storageGbMonthPrice price of a GB-month of storage
     * @param idleCapacity {@code unallocated} or {@code proportional}
     */
    public record Policy(
            String policyId,
            String name,
            String currency,
            BigDecimal gpuHourlyCost,
            BigDecimal overheadPct,
            BigDecimal energyKwhPrice,
            BigDecimal pue,
            BigDecimal storageGbMonthPrice,
            String idleCapacity) {}

    /**
     * One allocation bucket: what was measured, who claimed it, and its price per policy.
     *
     * @param start start of the bucket
     * @param owner the owner of a dedicated deployment's time, or null for shared time
     * @param gpuSeconds GPU-seconds measured (estimated ones included)
     * @param estimatedGpuSeconds GPU-seconds estimated over short gaps
     * @param overAttribution true when the claims' GPU-seconds exceeded what was measured (scaled down)
     * @param claims each tenant's claim and the share of the bucket it gave
     * @param priced the bucket priced, per policy
     */
    public record Bucket(
            Instant start,
            Party owner,
            BigDecimal gpuSeconds,
            BigDecimal estimatedGpuSeconds,
            boolean overAttribution,
            List<Claim> claims,
            List<Price> priced) {

        /**
         * Lists never null.
         *
         * @param start start
         * @param owner owner or null
         * @param gpuSeconds GPU-seconds
         * @param estimatedGpuSeconds estimated GPU-seconds
         * @param overAttribution over-attribution
         * @param claims the claims
         * @param priced the prices
         */
        public Bucket {
            claims = claims == null ? List.of() : List.copyOf(claims);
            priced = priced == null ? List.of() : List.copyOf(priced);
        }
    }

    /**
     * A tenant's claim on a shared bucket.
     *
     * @param party the tenant (or the other tenants)
     * @param gpuSeconds GPU-seconds its usage events claimed
     * @param tokens tokens its usage events counted
     * @param share the fraction of the bucket the claims gave it
     */
    public record Claim(Party party, BigDecimal gpuSeconds, BigDecimal tokens, BigDecimal share) {}

    /**
     * A bucket's time under one policy.
     *
     * @param policyId the policy
     * @param currency ISO 4217 code
     * @param gpuSeconds GPU-seconds priced
     * @param energyWh energy, in Wh
     * @param gpuTimeCost GPU time's exact cost (overhead included)
     * @param energyCost energy's exact cost (PUE included)
     * @param storageCost storage's exact cost
     * @param cost the bucket's exact cost under the policy
     * @param parties each party's exact part of {@code cost}
     * @param idle the exact cost no claim accounted for
     */
    public record Price(
            String policyId,
            String currency,
            BigDecimal gpuSeconds,
            BigDecimal energyWh,
            BigDecimal gpuTimeCost,
            BigDecimal energyCost,
            BigDecimal storageCost,
            BigDecimal cost,
            List<PartyCost> parties,
            BigDecimal idle) {

        /**
         * Lists never null.
         *
         * @param policyId policy
         * @param currency currency
         * @param gpuSeconds GPU-seconds
         * @param energyWh energy
         * @param gpuTimeCost GPU time cost
         * @param energyCost energy cost
         * @param storageCost storage cost
         * @param cost cost
         * @param parties parts
         * @param idle idle
         */
        public Price {
            parties = parties == null ? List.of() : List.copyOf(parties);
        }
    }

    /**
     * A party's exact part of a bucket's cost.
     *
     * @param party the party
     * @param cost its exact part
     */
    public record PartyCost(Party party, BigDecimal cost) {}

    /**
     * A {@code proportional} policy's idle cost given to the tenants by their allocated cost.
     *
     * @param policyId the policy
     * @param idle the idle cost spread, exact
     * @param parties each tenant's weight and what it was given
     */
    public record IdleSpread(String policyId, BigDecimal idle, List<IdleShare> parties) {

        /**
         * Lists never null.
         *
         * @param policyId policy
         * @param idle idle cost
         * @param parties shares
         */
        public IdleSpread {
            parties = parties == null ? List.of() : List.copyOf(parties);
        }
    }

    /**
     * A tenant's share of the idle spread.
     *
     * @param party the tenant
     * @param weight its exact allocated cost on the deployment
     * @param cost what it was given
     */
    public record IdleShare(Party party, BigDecimal weight, BigDecimal cost) {}

    /**
     * A (deployment, currency) row: {@code exact} rounded once to {@code cost}, then apportioned over the lines.
     *
     * @param currency ISO 4217 code
     * @param exact the sum of the lines' exact amounts
     * @param cost the deployment's cost, rounded once
     * @param lines each tenant's item and each policy's unallocated cost
     */
    public record Rounding(String currency, BigDecimal exact, BigDecimal cost, List<RoundingLine> lines) {

        /**
         * Lists never null.
         *
         * @param currency currency
         * @param exact exact sum
         * @param cost rounded cost
         * @param lines lines
         */
        public Rounding {
            lines = lines == null ? List.of() : List.copyOf(lines);
        }
    }

    /**
     * One line of the rounding.
     *
     * @param party the tenant, the other tenants, or {@code unallocated}
     * @param policyId the policy
     * @param exact the line's exact amount
     * @param scaled {@code exact} scaled to the rounded cost
     * @param floor {@code scaled} floored to the minor unit
     * @param remainderUnit the unit the largest remainders earned, or zero
     * @param amount {@code floor + remainderUnit}: the allocation's figure
     */
    public record RoundingLine(
            Party party,
            String policyId,
            BigDecimal exact,
            BigDecimal scaled,
            BigDecimal floor,
            BigDecimal remainderUnit,
            BigDecimal amount) {}
}
