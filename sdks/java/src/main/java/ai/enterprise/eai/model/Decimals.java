package ai.enterprise.eai.model;

import java.math.BigDecimal;

/** Doubles given to the builders, as exact decimals: their shortest form ({@code 2.10} is 2.1, 15.0 is 15). */
final class Decimals {

    private Decimals() {}

    static BigDecimal of(double d) {
        if (Double.isNaN(d) || Double.isInfinite(d)) {
            throw new IllegalArgumentException("not a finite number: " + d);
        }
        BigDecimal s = BigDecimal.valueOf(d).stripTrailingZeros();
        return s.scale() < 0 ? s.setScale(0) : s;
    }
}
