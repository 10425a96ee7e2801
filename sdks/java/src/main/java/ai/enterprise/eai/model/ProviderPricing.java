package ai.enterprise.eai.model;

import java.math.BigDecimal;

/**
 * What a provider's tokens cost over the last closed UTC month: the deployment's whole allocated cost, idle
 * included ({@code basis} {@code allocation}), per million tokens. A rate is {@code null} when there was no such
 * token.
 *
 * @param perMtok cost per million tokens, input and output together ({@code 10000.0000}), or {@code null}
 * @param inputPerMtok per million input tokens that needed compute, or {@code null}
 * @param outputPerMtok per million output tokens, or {@code null}
 * @param currency ISO 4217 code
 * @param period the month priced, {@code YYYY-MM}
 * @param basis {@code allocation}
 * @param allocationMethod how the cost was split between input and output tokens: {@code compute_time},
 *     {@code compute_time_uncorrected}, {@code weight} or {@code mixed}
 */
public record ProviderPricing(
        BigDecimal perMtok,
        BigDecimal inputPerMtok,
        BigDecimal outputPerMtok,
        String currency,
        String period,
        String basis,
        String allocationMethod) {}
