import java.math.BigDecimal;

@Override
public String toString() {
    return (amount == null ? "null" : amount.toPlainString()) + " " + currency;
}
