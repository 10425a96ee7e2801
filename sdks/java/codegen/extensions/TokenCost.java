import java.math.BigDecimal;
import java.util.List;

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
