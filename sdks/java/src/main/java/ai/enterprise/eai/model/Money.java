package ai.enterprise.eai.model;

import java.math.BigDecimal;

/**
 * An amount in a currency, exact: {@code {"amount": "412.70", "currency": "EUR"}} on the wire.
 *
 * @param amount the amount, with the digits the server wrote (rounded to the currency's minor unit)
 * @param currency ISO 4217 code, three capital letters
 */
public record Money(BigDecimal amount, String currency) {

    @Override
    public String toString() {
        return (amount == null ? "null" : amount.toPlainString()) + " " + currency;
    }
}
