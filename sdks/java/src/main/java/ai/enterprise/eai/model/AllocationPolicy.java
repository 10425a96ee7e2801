package ai.enterprise.eai.model;

import java.math.BigDecimal;
import java.time.Instant;

/**
 * A stored allocation policy. Never edited in place: a change closes it ({@code effectiveTo}) and opens another.
 *
 * @param id {@code alp_<n>}
 * @param status {@code active}, {@code scheduled}, {@code closed} or {@code disabled}
 * @param name name shown in the policies table
 * @param deploymentPattern glob on {@code deployment_id}
 * @param gpuModel the GPU model it prices (prefix or equal, case-insensitive); {@code null}: any
 * @param currency ISO 4217 code
 * @param gpuHourlyCost price of one GPU-hour
 * @param overheadPct percent added to the GPU cost
 * @param energyKwhPrice price of one kWh
 * @param pue power usage effectiveness
 * @param storageGbMonthPrice price of one GiB held for 30 days
 * @param idleCapacity {@code unallocated} or {@code proportional}
 * @param outputTokenWeight what an output token weighs against an input token when cost per token is split
 *     without measured prefill and decode time (default 2.5); {@code null} from a server that predates it
 * @param enabled false for a disabled policy
 * @param effectiveFrom start (inclusive)
 * @param effectiveTo end (exclusive), {@code null} when open-ended
 * @param createdAt when it was created, when the server says
 * @param createdBy key id of its creator, when the server says
 */
public record AllocationPolicy(
        String id,
        String status,
        String name,
        String deploymentPattern,
        String gpuModel,
        String currency,
        BigDecimal gpuHourlyCost,
        BigDecimal overheadPct,
        BigDecimal energyKwhPrice,
        BigDecimal pue,
        BigDecimal storageGbMonthPrice,
        String idleCapacity,
        BigDecimal outputTokenWeight,
        boolean enabled,
        Instant effectiveFrom,
        Instant effectiveTo,
        Instant createdAt,
        String createdBy) {}
