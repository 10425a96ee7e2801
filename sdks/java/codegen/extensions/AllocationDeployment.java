import java.math.BigDecimal;

/**
 * The cost as money.
 *
 * @return {@code cost} in {@code currency} ({@code currency} may be null when nothing was priced)
 */
public Money costMoney() {
    return new Money(cost, currency);
}
