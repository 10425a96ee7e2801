//! Fixed point: a decimal as a whole number of `10^-dp`, and back. The one place where the engine and the
//! stores turn exact decimals into integers (the allocation's hot loop sums integers of 10^-15, the stores keep
//! sample figures and derived sums as scaled integers).
//!
//! Two kinds of conversion: exact ones ([`to_fixed`], [`from_fixed`]) that refuse to lose a digit (`None`), for
//! what is stored; and the allocation's total ones ([`to_fixed_rounded`], [`from_fixed_lossy`]), for sums of
//! inputs bounded so that they never round (see `eai_engine::wire`'s bounds), which must not fail in a hot loop.

use rust_decimal::Decimal;

/// `10^0 ..= 10^38`: every power of ten an `i128` holds.
const POW10: [i128; 39] = {
    let mut t = [1i128; 39];
    let mut i = 1;
    while i < 39 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// `10^n`, if an `i128` holds it.
#[inline]
pub fn pow10(n: u32) -> Option<i128> {
    POW10.get(n as usize).copied()
}

/// `d x 10^dp` exactly, or `None` when `d` has more than `dp` places (trailing zeros aside) or the integer would
/// overflow.
#[inline]
pub fn to_fixed(d: Decimal, dp: u32) -> Option<i128> {
    let d = if d.scale() > dp { d.normalize() } else { d };
    if d.scale() > dp {
        return None;
    }
    d.mantissa().checked_mul(pow10(dp - d.scale())?)
}

/// The inverse of [`to_fixed`]: `v x 10^-dp` at scale `dp` (not normalized), or `None` when a decimal cannot
/// hold it (more than 28 digits, or `dp` above 28).
#[inline]
pub fn from_fixed(v: i128, dp: u32) -> Option<Decimal> {
    Decimal::try_from_i128_with_scale(v, dp).ok()
}

/// `d` rounded to `dp` places (half to even), times `10^dp`; saturates instead of overflowing. Exact for
/// decimals of at most `dp` places that fit, as the allocation's quantities are.
#[inline]
pub fn to_fixed_rounded(d: Decimal, dp: u32) -> i128 {
    let d = if d.scale() > dp { d.round_dp(dp) } else { d };
    match pow10(dp - d.scale()) {
        Some(f) => d.mantissa().saturating_mul(f),
        None if d.is_zero() => 0,
        None if d.is_sign_negative() => i128::MIN,
        None => i128::MAX,
    }
}

/// `v x 10^-dp` as a decimal; beyond a decimal's 28 digits (never for a real fleet's sums) the least
/// significant places are dropped, and beyond its range it is `Decimal::MAX` (or `MIN`).
#[inline]
pub fn from_fixed_lossy(mut v: i128, dp: u32) -> Decimal {
    let mut scale = dp;
    loop {
        if let Ok(d) = Decimal::try_from_i128_with_scale(v, scale) {
            return d;
        }
        if scale == 0 {
            return if v < 0 { Decimal::MIN } else { Decimal::MAX };
        }
        v /= 10;
        scale -= 1;
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use rust_decimal::Decimal;

    use super::{from_fixed, from_fixed_lossy, to_fixed, to_fixed_rounded};

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).expect("decimal")
    }

    #[test]
    fn exact_conversions_round_trip_and_refuse_a_lost_digit() {
        for (s, dp, v) in [
            ("0.82", 6, 820_000),
            ("61.2", 10, 612_000_000_000),
            ("0", 6, 0),
            ("1.000000", 6, 1_000_000),
            ("-2.5", 15, -2_500_000_000_000_000),
            ("12.3400", 2, 1234),
        ] {
            assert_eq!(to_fixed(d(s), dp), Some(v), "{s}");
            assert_eq!(
                from_fixed(v, dp).map(|x| x.normalize()),
                Some(d(s).normalize())
            );
        }
        assert_eq!(to_fixed(d("0.1234567"), 6), None);
        assert_eq!(to_fixed(Decimal::MAX, 15), None, "overflow");
        assert_eq!(from_fixed(i128::MAX, 15), None);
        assert_eq!(from_fixed(1, 29), None);
    }

    #[test]
    fn the_allocations_conversions_are_total() {
        assert_eq!(to_fixed_rounded(d("1.5"), 15), 1_500_000_000_000_000);
        assert_eq!(
            to_fixed_rounded(d("0.0000000000000005"), 15),
            0,
            "half to even"
        );
        assert_eq!(to_fixed_rounded(d("0.0000000000000015"), 15), 2);
        assert_eq!(to_fixed_rounded(Decimal::MAX, 15), i128::MAX, "saturates");
        assert_eq!(from_fixed_lossy(1_500_000_000_000_000, 15), d("1.5"));
        // 30 digits, one more than a decimal holds: the least significant place goes.
        assert_eq!(
            from_fixed_lossy(123_456_789_012_345_678_901_234_567_890, 15),
            d("123456789012345.67890123456789")
        );
        assert_eq!(
            from_fixed_lossy(i128::MAX, 15),
            d("170141183460469231731687.30371")
        );
        // No place left to drop: the largest decimal, of the sign of the sum.
        assert_eq!(from_fixed_lossy(i128::MAX, 0), Decimal::MAX);
        assert_eq!(from_fixed_lossy(i128::MIN, 0), Decimal::MIN);
    }
}
