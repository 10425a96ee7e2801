package ai.enterprise.eai.model;

import java.math.BigDecimal;

/**
 * One row per (tenant, currency).
 *
 * @param tenantId the tenant (uuid)
 * @param gpuSeconds GPU-seconds attributed to the tenant (exact)
 * @param share the tenant's cost over the cost of every deployment in the view, in that currency (0..1, 4
 *     places)
 * @param cost what the tenant is charged
 */
public record AllocationTenant(String tenantId, BigDecimal gpuSeconds, BigDecimal share, Money cost) {}
