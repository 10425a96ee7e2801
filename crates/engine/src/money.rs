//! Money: ISO 4217 currencies, rounding to the minor unit, and largest-remainder apportionment.

use std::fmt;
use std::str::FromStr;

use rust_decimal::{Decimal, RoundingStrategy};

use crate::error::FieldError;

/// An ISO 4217 currency code: exactly three capital ASCII letters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Currency([u8; 3]);

impl Currency {
    pub const USD: Currency = Currency(*b"USD");
    pub const EUR: Currency = Currency(*b"EUR");

    pub fn as_str(&self) -> &str {
        // The constructor only admits ASCII capitals, so this cannot fail.
        std::str::from_utf8(&self.0).unwrap_or("XXX")
    }

    /// Digits after the decimal point of the currency's minor unit (ISO 4217 table, the common exceptions).
    pub fn minor_unit_digits(&self) -> u32 {
        match &self.0 {
            b"BIF" | b"CLP" | b"DJF" | b"GNF" | b"ISK" | b"JPY" | b"KMF" | b"KRW" | b"PYG"
            | b"RWF" | b"UGX" | b"UYI" | b"VND" | b"VUV" | b"XAF" | b"XOF" | b"XPF" => 0,
            b"BHD" | b"IQD" | b"JOD" | b"KWD" | b"LYD" | b"OMR" | b"TND" => 3,
            b"CLF" | b"UYW" => 4,
            _ => 2,
        }
    }

    /// The smallest amount the currency can express (0.01 for EUR).
    pub fn minor_unit(&self) -> Decimal {
        Decimal::new(1, self.minor_unit_digits())
    }

    /// An exact amount as text with at least the minor unit's digits (`12.50`, not `12.5`; `2.125` stays), never
    /// rounded: how prices and budget figures are shown.
    pub fn amount_text(&self, amount: Decimal) -> String {
        let mut d = amount.normalize();
        if d.scale() < self.minor_unit_digits() {
            d.rescale(self.minor_unit_digits());
        }
        d.to_string()
    }

    /// Rounds an exact amount once to the minor unit, half away from zero (commercial rounding).
    pub fn round(&self, amount: Decimal) -> Decimal {
        let mut r = amount.round_dp_with_strategy(
            self.minor_unit_digits(),
            RoundingStrategy::MidpointAwayFromZero,
        );
        r.rescale(self.minor_unit_digits());
        r
    }
}

impl FromStr for Currency {
    type Err = FieldError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let b = s.as_bytes();
        if b.len() == 3 && b.iter().all(u8::is_ascii_uppercase) {
            Ok(Currency([b[0], b[1], b[2]]))
        } else {
            Err(FieldError::new(
                "currency",
                "must be three capital letters (ISO 4217), e.g. EUR",
            ))
        }
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An amount in a currency, rounded to its minor unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Money {
    pub amount: Decimal,
    pub currency: Currency,
}

impl Money {
    pub fn zero(currency: Currency) -> Self {
        Money {
            amount: currency.round(Decimal::ZERO),
            currency,
        }
    }
}

impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.amount, self.currency)
    }
}

/// Adds `amount` of `currency` to a per-currency sum (a row's cost in each currency it was priced in).
pub fn add_to(sums: &mut Vec<(Currency, Decimal)>, currency: Currency, amount: Decimal) {
    match sums.iter_mut().find(|(c, _)| *c == currency) {
        Some((_, a)) => *a += amount,
        None => sums.push((currency, amount)),
    }
}

/// Splits `total` (already rounded to `unit`) between parties in proportion to their exact `quotas`
/// with the largest-remainder method: each party gets its quota floored to the unit, and the units
/// left over go one each to the largest remainders (ties to the lower index, so the result is
/// deterministic). The parts always sum to `total` exactly.
///
/// Preconditions: quotas are >= 0 and `total` is a multiple of `unit`. When the quotas sum to zero,
/// everything goes to the first party (there is nothing to weigh by).
pub fn apportion(total: Decimal, quotas: &[Decimal], unit: Decimal) -> Vec<Decimal> {
    apportion_steps(total, quotas, unit)
        .into_iter()
        .map(|a| a.amount)
        .collect()
}

/// One party's way through [`apportion`]: its quota scaled to the rounded total, floored to the unit, and the
/// unit its remainder earned (or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Apportioned {
    /// The quota scaled so that the quotas add up to the total (the quota itself when they already do).
    pub scaled: Decimal,
    /// `scaled` floored to the unit.
    pub floor: Decimal,
    /// One unit when the remainder `scaled - floor` was among the largest, else zero.
    pub extra: Decimal,
    /// `floor + extra`.
    pub amount: Decimal,
}

/// [`apportion`], step by step (the allocation's explanation shows them).
pub fn apportion_steps(total: Decimal, quotas: &[Decimal], unit: Decimal) -> Vec<Apportioned> {
    if quotas.is_empty() {
        return Vec::new();
    }
    let zero = Apportioned {
        scaled: Decimal::ZERO,
        floor: Decimal::ZERO,
        extra: Decimal::ZERO,
        amount: Decimal::ZERO,
    };
    let sum: Decimal = quotas.iter().copied().sum();
    let mut parts = vec![zero; quotas.len()];
    if sum <= Decimal::ZERO {
        parts[0] = Apportioned {
            scaled: total,
            floor: total,
            extra: Decimal::ZERO,
            amount: total,
        };
        return parts;
    }
    // Scale the quotas so that they add up to the rounded total.
    let mut remainders: Vec<(Decimal, usize)> = Vec::with_capacity(quotas.len());
    let mut floored_sum = Decimal::ZERO;
    for (i, q) in quotas.iter().enumerate() {
        let scaled = if sum == total { *q } else { *q * total / sum };
        let units = (scaled / unit).floor();
        let part = units * unit;
        parts[i].scaled = scaled;
        parts[i].floor = part;
        floored_sum += part;
        remainders.push((scaled - part, i));
    }
    let mut left = ((total - floored_sum) / unit).round();
    remainders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut k = 0;
    while left > Decimal::ZERO && !remainders.is_empty() {
        parts[remainders[k % remainders.len()].1].extra += unit;
        left -= Decimal::ONE;
        k += 1;
    }
    for p in &mut parts {
        p.amount = p.floor + p.extra;
        for d in [&mut p.floor, &mut p.extra, &mut p.amount] {
            d.rescale(unit.scale());
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use rust_decimal::Decimal;

    use super::{apportion, Currency};

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    #[test]
    fn currency_is_three_capital_letters() {
        assert!("EUR".parse::<Currency>().is_ok());
        for bad in ["eur", "EU", "EURO", "E1R", ""] {
            assert!(bad.parse::<Currency>().is_err(), "{bad}");
        }
    }

    #[test]
    fn rounding_is_once_and_half_away_from_zero() {
        let eur = Currency::EUR;
        assert_eq!(eur.round(d("5.1912")).to_string(), "5.19");
        assert_eq!(eur.round(d("0.005")).to_string(), "0.01");
        assert_eq!(eur.round(d("2")).to_string(), "2.00");
        let jpy: Currency = "JPY".parse().unwrap();
        assert_eq!(jpy.round(d("10.5")).to_string(), "11");
    }

    #[test]
    fn largest_remainder_gives_the_worked_example() {
        // 5.1912 exact, 70/30: 3.63384 and 1.55736 -> 3.63 and 1.56.
        let parts = apportion(d("5.19"), &[d("3.63384"), d("1.55736")], d("0.01"));
        assert_eq!(parts, vec![d("3.63"), d("1.56")]);
    }

    #[test]
    fn apportion_sums_to_total_when_rounding_up() {
        let parts = apportion(d("0.02"), &[d("0.005"), d("0.005"), d("0.005")], d("0.01"));
        assert_eq!(parts.iter().copied().sum::<Decimal>(), d("0.02"));
        assert_eq!(parts, vec![d("0.01"), d("0.01"), d("0.00")]);
    }
}
