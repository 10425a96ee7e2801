package ai.enterprise.eai.model;

import java.math.BigDecimal;

/**
 * A deployment in one step of a series (a tenant's readers: their share). The amounts and the currency are
 * {@code null} when the deployment had tokens but cost nothing in the step.
 *
 * @param deploymentId the deployment
 * @param currency ISO 4217 code, or {@code null}
 * @param cost the cost in the step
 * @param allocated the part charged to tenants
 * @param unallocated the part no tenant is charged
 * @param tokensIn input tokens in the step
 * @param tokensOut output tokens in the step
 * @param tokens all tokens in the step
 * @param costPerMtok the cost per million tokens in the step, 4 places ({@code 10000.0000}); {@code null} without
 *     tokens or cost
 */
public record SeriesDeployment(
        String deploymentId,
        String currency,
        BigDecimal cost,
        BigDecimal allocated,
        BigDecimal unallocated,
        BigDecimal tokensIn,
        BigDecimal tokensOut,
        BigDecimal tokens,
        BigDecimal costPerMtok) {}
