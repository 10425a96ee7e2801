package ai.enterprise.eai.model;

import java.math.BigDecimal;
import java.util.List;

/**
 * What a token costs ({@code GET /v1/finops/gpu/token-costs}): a deployment, a tenant's share of one, or a total
 * (a tenant's, a model's) with its rows per deployment in {@code deployments}. Amounts are exact, rounded to the
 * currency's minor unit ({@code inputCost} once, {@code outputCost = cost - inputCost}); rates are per million
 * tokens with 4 decimal places. Token counts are exact.
 *
 * @param deploymentId the deployment; {@code null} on a tenant's or a model's total
 * @param tenantId the tenant whose share this is; {@code null} on a deployment's or a model's row
 * @param model the model served (vLLM's {@code model_name}, else the usage events' {@code model.name});
 *     {@code null} when not known
 * @param currency ISO 4217 code
 * @param cost the allocated cost (basis {@code allocation}) or its busy part (basis {@code usage})
 * @param inputCost the cost borne by input tokens; {@code null} when the row has no tokens
 * @param outputCost the cost borne by output tokens; {@code null} when the row has no tokens
 * @param tokensIn input tokens
 * @param tokensOut output tokens
 * @param cachedTokensIn input tokens served from vLLM's prefix cache
 * @param effectiveTokensIn input tokens that needed compute (the input rate's denominator)
 * @param tokens all tokens
 * @param tokenSource {@code vllm} (the vLLM server's counters), {@code usage_events} or {@code mixed}
 * @param allocationMethod how input and output were split: {@code compute_time} (measured prefill/decode time,
 *     prefix cache left out), {@code compute_time_uncorrected} (no cache figures), {@code weight} (the policy's
 *     output_token_weight) or {@code mixed} (a total over rows split differently)
 * @param outputTokenWeight what an output token weighed against an effective input token; {@code null} if none
 * @param costPerMtok cost per million tokens; {@code null} without tokens
 * @param inputCostPerMtok input cost per million effective input tokens; {@code null} without them
 * @param outputCostPerMtok output cost per million output tokens; {@code null} without them
 * @param deployments a total's rows per deployment (empty on a deployment's row)
 */
public record TokenCost(
        String deploymentId,
        String tenantId,
        String model,
        String currency,
        BigDecimal cost,
        BigDecimal inputCost,
        BigDecimal outputCost,
        BigDecimal tokensIn,
        BigDecimal tokensOut,
        BigDecimal cachedTokensIn,
        BigDecimal effectiveTokensIn,
        BigDecimal tokens,
        String tokenSource,
        String allocationMethod,
        BigDecimal outputTokenWeight,
        BigDecimal costPerMtok,
        BigDecimal inputCostPerMtok,
        BigDecimal outputCostPerMtok,
        List<TokenCost> deployments) {

    /**
     * Lists never null.
     *
     * @param deploymentId the deployment
     * @param tenantId the tenant
     * @param model the model
     * @param currency the currency
     * @param cost the cost
     * @param inputCost the input tokens' part
     * @param outputCost the output tokens' part
     * @param tokensIn input tokens
     * @param tokensOut output tokens
     * @param cachedTokensIn cached input tokens
     * @param effectiveTokensIn input tokens that needed compute
     * @param tokens all tokens
     * @param tokenSource where the tokens come from
     * @param allocationMethod how the cost was split
     * @param outputTokenWeight the output token's weight
     * @param costPerMtok blended rate
     * @param inputCostPerMtok input rate
     * @param outputCostPerMtok output rate
     * @param deployments rows per deployment
     */
    public TokenCost {
        deployments = deployments == null ? List.of() : List.copyOf(deployments);
    }

    /**
     * The cost as money.
     *
     * @return {@code cost} in {@code currency}
     */
    public Money costMoney() {
        return new Money(cost, currency);
    }
}
