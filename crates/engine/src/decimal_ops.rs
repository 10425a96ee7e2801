//! Decimal products and sums for the allocation's hot loop: exactly what `rust_decimal`'s `*`, `+` and `-`
//! give (value and scale, every bit), faster where they must round.
//!
//! Splitting a shared bucket multiplies its cost and quantities by 28-digit fractions and adds the parts up
//! over the period, so nearly every product and sum there has more digits than a [`Decimal`] holds and is
//! rounded back into 96 bits. `rust_decimal` (1.43, `Buf24::rescale`) rounds by dividing the wide result by a
//! power of ten one 32-bit word at a time, the power only known at run time (a hardware division per word), and
//! often divides twice (its first guess of the digits to drop can fall one short). [`rescale`] keeps the same
//! digits and rounds them the same way, but settles how many to drop first and divides once, each power of ten
//! a constant, which compiles to multiplications. Whatever needs no rounding, and whatever overflows, is left
//! to `rust_decimal` itself.
//!
//! The tests below hold [`mul`], [`add`] and [`sub`] to `rust_decimal`'s operators, bit for bit, on random and
//! edge-case operands: they are what keeps this module honest across `rust_decimal` updates.

use rust_decimal::Decimal;

/// A non-negative integer of up to 192 bits, least significant 32-bit word first (`rust_decimal`'s `Buf24`).
type Wide = [u32; 6];

const MAX_SCALE: u32 = 28;

/// `a * b`, as `rust_decimal` computes it.
pub(crate) fn mul(a: Decimal, b: Decimal) -> Decimal {
    let (ma, mb) = (magnitude(a), magnitude(b));
    // Zero, and two 32-bit mantissas (a path of its own in `rust_decimal`), are cheap there.
    if ma == 0 || mb == 0 || (ma >> 32 == 0 && mb >> 32 == 0) {
        return a * b;
    }
    let scale = a.scale() + b.scale();
    let w = mul_wide(ma, mb);
    let upper = upper_word(&w);
    if upper <= 2 && scale <= MAX_SCALE {
        return a * b; // exact: nothing to round
    }
    let negative = a.is_sign_negative() != b.is_sign_negative();
    rounded(w, upper, scale, negative).unwrap_or_else(|| a * b)
}

/// `a + b`, as `rust_decimal` computes it.
pub(crate) fn add(a: Decimal, b: Decimal) -> Decimal {
    add_rounded(a, b, false).unwrap_or_else(|| a + b)
}

/// `a - b`, as `rust_decimal` computes it.
pub(crate) fn sub(a: Decimal, b: Decimal) -> Decimal {
    add_rounded(a, b, true).unwrap_or_else(|| a - b)
}

/// `a + b` (`a - b` when `subtract`) when the operands have different scales and the exact result, at the
/// larger scale, does not fit in 96 bits; `None` otherwise (exact, or aligned: `rust_decimal`'s cheap paths).
///
/// `rust_decimal` scales the operand of smaller scale up, adds exactly in 192 bits and rescales the sum (its
/// 96-bit shortcut, when the sum overflows by a bit, divides by ten and rounds half-even: the same thing).
fn add_rounded(a: Decimal, b: Decimal, subtract: bool) -> Option<Decimal> {
    let (sa, sb) = (a.scale(), b.scale());
    let (ma, mb) = (magnitude(a), magnitude(b));
    if sa == sb || ma == 0 || mb == 0 {
        return None;
    }
    let scale = sa.max(sb);
    let (na, nb) = (a.is_sign_negative(), b.is_sign_negative() != subtract);
    let (w, negative) = if sa.abs_diff(sb) <= 8 {
        // Nearly always: both below 2^96 x 10^8, so the sum fits in a `u128`.
        let (x, y) = (
            ma * u128::from(POW10[(scale - sa) as usize]),
            mb * u128::from(POW10[(scale - sb) as usize]),
        );
        if na == nb {
            (wide(x + y), na)
        } else if x >= y {
            (wide(x - y), na)
        } else {
            (wide(y - x), nb)
        }
    } else {
        // At most 96 bits times 10^28 (94 bits): a sum of two fits in 192 bits.
        let (x, y) = (scaled_up(ma, scale - sa), scaled_up(mb, scale - sb));
        if na == nb {
            (wide_add(&x, &y), na)
        } else if wide_ge(&x, &y) {
            (wide_sub(&x, &y), na)
        } else {
            (wide_sub(&y, &x), nb)
        }
    };
    let upper = upper_word(&w);
    if upper <= 2 {
        return None;
    }
    rounded(w, upper, scale, negative)
}

/// The decimal of the wide mantissa `w` at `scale`, rounded into 96 bits as `rust_decimal` rounds it; `None`
/// when it overflows or rounds to zero (left to `rust_decimal`, which panics or signs the zero its own way).
fn rounded(mut w: Wide, upper: usize, scale: u32, negative: bool) -> Option<Decimal> {
    let scale = rescale(&mut w, upper, scale)?;
    if w[0] | w[1] | w[2] == 0 {
        return None;
    }
    Some(Decimal::from_parts(w[0], w[1], w[2], negative, scale))
}

fn magnitude(d: Decimal) -> u128 {
    d.mantissa().unsigned_abs()
}

fn wide(v: u128) -> Wide {
    [
        v as u32,
        (v >> 32) as u32,
        (v >> 64) as u32,
        (v >> 96) as u32,
        0,
        0,
    ]
}

/// The full product of two mantissas below 2^96.
fn mul_wide(a: u128, b: u128) -> Wide {
    let (a0, a1) = (a as u64 as u128, a >> 64);
    let (b0, b1) = (b as u64 as u128, b >> 64);
    let low = a0 * b0;
    let cross = a0 * b1 + a1 * b0; // below 2^97
    let (low, carry) = low.overflowing_add(cross << 64);
    let high = a1 * b1 + (cross >> 64) + u128::from(carry);
    let mut w = wide(low);
    w[4] = high as u32;
    w[5] = (high >> 32) as u32;
    w
}

/// `m` (below 2^96) times `10^e` (`e` at most 28).
fn scaled_up(m: u128, mut e: u32) -> Wide {
    let mut w = wide(m);
    while e > 0 {
        let step = e.min(9);
        let p = u64::from(POW10[step as usize]);
        let mut carry = 0u64;
        for x in w.iter_mut() {
            let v = u64::from(*x) * p + carry;
            *x = v as u32;
            carry = v >> 32;
        }
        e -= step;
    }
    w
}

fn wide_add(a: &Wide, b: &Wide) -> Wide {
    let mut out = [0u32; 6];
    let mut carry = 0u64;
    for i in 0..6 {
        let v = u64::from(a[i]) + u64::from(b[i]) + carry;
        out[i] = v as u32;
        carry = v >> 32;
    }
    out
}

/// `a - b`, for `a >= b`.
fn wide_sub(a: &Wide, b: &Wide) -> Wide {
    let mut out = [0u32; 6];
    let mut borrow = 0i64;
    for i in 0..6 {
        let v = i64::from(a[i]) - i64::from(b[i]) - borrow;
        out[i] = v as u32;
        borrow = i64::from(v < 0);
    }
    out
}

fn wide_ge(a: &Wide, b: &Wide) -> bool {
    for i in (0..6).rev() {
        if a[i] != b[i] {
            return a[i] > b[i];
        }
    }
    true
}

/// Index of the most significant non-zero word (0 for zero).
fn upper_word(w: &Wide) -> usize {
    w.iter().rposition(|x| *x != 0).unwrap_or(0)
}

const POW10: [u32; 10] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// `2^96 x 10^k` for `k` below 29 (from 29 on it exceeds 192 bits): a mantissa `w` needs more than 96 bits
/// after dropping `k` digits exactly when `w >= LIMITS[k]`.
const LIMITS: [Wide; 29] = {
    let mut t = [[0u32; 6]; 29];
    t[0][3] = 1;
    let mut k = 1;
    while k < 29 {
        let mut carry = 0u64;
        let mut i = 0;
        while i < 6 {
            let v = t[k - 1][i] as u64 * 10 + carry;
            t[k][i] = v as u32;
            carry = v >> 32;
            i += 1;
        }
        k += 1;
    }
    t
};

/// What `rust_decimal`'s `Buf24::rescale` makes of `w` (at `scale`, most significant word `upper`): the
/// mantissa brought into 96 bits and the scale to at most 28. Returns the new scale, or `None` on overflow.
///
/// `rust_decimal` estimates the digits to drop from the bit length, at least as many as the scale demands,
/// divides, then drops one digit at a time while the quotient is still wider than 96 bits, and rounds the last
/// digits dropped half to even (the earlier ones only break ties): that is the least `k` from its estimate on
/// for which the quotient fits, and `w / 10^k` rounded half to even. Here `k` is found first, by comparing with
/// [`LIMITS`], so that `w` is divided once. A round up to 2^96 drops one digit more, rounded again, as
/// `rust_decimal` does.
fn rescale(w: &mut Wide, upper: usize, scale: u32) -> Option<u32> {
    let scale = scale as i32;
    let mut k = 0i32;
    if upper > 2 {
        let bits_over = upper as i32 * 32 - 64 - 1 - w[upper].leading_zeros() as i32;
        k = ((bits_over * 77) >> 8) + 1;
        if k > scale {
            return None;
        }
    }
    k = k.max(scale - MAX_SCALE as i32);
    if k <= 0 {
        return Some(scale as u32);
    }
    while (k as usize) < LIMITS.len() && wide_ge(w, &LIMITS[k as usize]) {
        k += 1;
    }
    if k > scale {
        return None;
    }
    drop_digits(w, upper, k as u32);
    if w[3] != 0 {
        // Rounded up to 2^96.
        if k == scale {
            return None;
        }
        k += 1;
        drop_digits(w, 3, 1);
    }
    Some((scale - k) as u32)
}

/// `w / 10^k` rounded half to even, in place; `upper`: the most significant non-zero word of `w`.
fn drop_digits(w: &mut Wide, mut upper: usize, mut k: u32) {
    let mut sticky = false;
    loop {
        let step = k.min(9);
        let power = POW10[step as usize];
        let remainder = div_words(w, upper, power);
        while upper > 0 && w[upper] == 0 {
            upper -= 1;
        }
        k -= step;
        if k > 0 {
            sticky |= remainder != 0;
            continue;
        }
        let half = power / 2;
        if remainder > half || (remainder == half && (sticky || w[0] & 1 == 1)) {
            for x in w.iter_mut() {
                *x = x.wrapping_add(1);
                if *x != 0 {
                    break;
                }
            }
        }
        return;
    }
}

/// Divides the words of `w` up to `upper` by `power` (a power of ten up to 10^9); returns the remainder. Each
/// power is a constant in its own arm, so that the divisions compile to multiplications.
fn div_words(w: &mut Wide, upper: usize, power: u32) -> u32 {
    fn by<const P: u64>(w: &mut Wide, upper: usize) -> u32 {
        let mut rem = 0u64;
        for x in w[..=upper].iter_mut().rev() {
            let num = (rem << 32) | u64::from(*x);
            let q = num / P;
            rem = num - q * P;
            *x = q as u32;
        }
        rem as u32
    }
    match power {
        1 => 0,
        10 => by::<10>(w, upper),
        100 => by::<100>(w, upper),
        1_000 => by::<1_000>(w, upper),
        10_000 => by::<10_000>(w, upper),
        100_000 => by::<100_000>(w, upper),
        1_000_000 => by::<1_000_000>(w, upper),
        10_000_000 => by::<10_000_000>(w, upper),
        100_000_000 => by::<100_000_000>(w, upper),
        _ => by::<1_000_000_000>(w, upper),
    }
}

#[cfg(test)]
mod tests {
    use rust_decimal::Decimal;

    use super::{add, mul, sub};

    /// xorshift: reproducible operands without a dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        /// A decimal of any scale and sign, its mantissa of any bit length, often near the edges: all ones,
        /// powers of ten and one less, one bit set, long runs of nines.
        fn decimal(&mut self) -> Decimal {
            let bits = self.below(97) as u32;
            let random =
                ((u128::from(self.next()) << 64) | u128::from(self.next())) >> (128 - bits.max(1));
            let m: u128 = match self.below(10) {
                0 => (1u128 << 96) - 1 - u128::from(self.below(4)),
                1 => 10u128.pow(self.below(29) as u32) - u128::from(self.below(2)),
                2 => 1u128 << self.below(96),
                3 => 10u128.pow(1 + self.below(28) as u32) / 9 * 9,
                4 => u128::from(self.next() >> self.below(64)),
                5 if bits == 0 => 0,
                _ => random,
            };
            let scale = match self.below(4) {
                0 => 28,
                1 => 0,
                _ => self.below(29) as u32,
            };
            Decimal::from_parts(
                m as u32,
                (m >> 32) as u32,
                (m >> 64) as u32,
                self.below(4) == 0,
                scale,
            )
        }
    }

    fn same(x: Decimal, y: Decimal) -> bool {
        x.serialize() == y.serialize()
    }

    fn check(a: Decimal, b: Decimal) {
        if let Some(p) = a.checked_mul(b) {
            assert!(
                same(mul(a, b), p),
                "{a:?} * {b:?}: {:?} != {p:?}",
                mul(a, b)
            );
        }
        if let Some(s) = a.checked_add(b) {
            assert!(
                same(add(a, b), s),
                "{a:?} + {b:?}: {:?} != {s:?}",
                add(a, b)
            );
        }
        if let Some(d) = a.checked_sub(b) {
            assert!(
                same(sub(a, b), d),
                "{a:?} - {b:?}: {:?} != {d:?}",
                sub(a, b)
            );
        }
    }

    #[test]
    fn random_operands_give_rust_decimals_bits() {
        let mut r = Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..400_000 {
            let (a, b) = (r.decimal(), r.decimal());
            check(a, b);
        }
    }

    #[test]
    fn what_the_settlement_multiplies_and_adds_gives_rust_decimals_bits() {
        // Costs and quantities (up to 15 places) times fractions of 28 places; running sums of such parts.
        let mut r = Rng(12345);
        for _ in 0..20_000 {
            let whole = Decimal::from_i128_with_scale(i128::from(r.next() >> r.below(40)), 15);
            let cost = Decimal::from_i128_with_scale(i128::from(r.next()), 0)
                / Decimal::from(64_800_000 + r.below(1000));
            let f = Decimal::from(1 + r.below(100_000)) / Decimal::from(1 + r.below(10_000_000));
            let mut sum = Decimal::ZERO;
            for x in [whole, cost] {
                let part = x * f;
                check(x, f);
                check(sum, part);
                check(x, part);
                check(part, x);
                sum += part;
            }
        }
    }

    #[test]
    fn edge_cases_give_rust_decimals_bits() {
        let max = Decimal::MAX;
        let ones = Decimal::from_i128_with_scale((1i128 << 96) - 1, 28);
        let tenth = Decimal::new(1, 1);
        let big = [
            max,
            -max,
            ones,
            -ones,
            Decimal::ONE,
            Decimal::ZERO,
            Decimal::new(0, 28),
            -Decimal::new(0, 5),
            Decimal::new(5, 28),
            Decimal::new(1, 28),
            tenth,
            Decimal::from_i128_with_scale(10i128.pow(28), 28),
            Decimal::from_i128_with_scale(10i128.pow(28) - 1, 0),
            Decimal::from_i128_with_scale(79_228_162_514_264_337_593_543_950_335 / 10, 27),
            // 2^96 - 1 at scale 1: times 0.1-ish rounds up to 2^96 and must drop one digit more.
            Decimal::from_i128_with_scale((1i128 << 96) - 5, 1),
            Decimal::from_i128_with_scale(1i128 << 95, 14),
        ];
        for a in big {
            for b in big {
                check(a, b);
            }
        }
    }
}
