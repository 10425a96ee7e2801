package ai.enterprise.eai.model;

import java.math.BigDecimal;

/**
 * What a tenant is charged for a deployment under one policy.
 *
 * @param tenantId the tenant (uuid)
 * @param deploymentId the deployment
 * @param gpuSeconds GPU-seconds attributed to the tenant (exact)
 * @param gpuMemoryGbSeconds GiB-seconds of GPU memory attributed (exact)
 * @param energyWh energy attributed, in Wh (exact)
 * @param allocated the charge
 * @param policyId the allocation policy that priced it ({@code alp_1})
 */
public record AllocationItem(
        String tenantId,
        String deploymentId,
        BigDecimal gpuSeconds,
        BigDecimal gpuMemoryGbSeconds,
        BigDecimal energyWh,
        Money allocated,
        String policyId) {}
