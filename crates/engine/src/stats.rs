//! Small statistics on exact decimals, shared by recommendations, forecasts and anomalies (SPEC §13): order
//! statistics by nearest rank, the median, the median absolute deviation, and a least-squares line. No floats:
//! every figure is a [`Decimal`], the divisions rounded by `rust_decimal` at its 28 digits.

use rust_decimal::Decimal;

/// The scale factor that makes the MAD of normally distributed values estimate their standard deviation.
pub const MAD_SCALE: Decimal = Decimal::from_parts(14_826, 0, 0, false, 4);

/// The `p`-quantile (0 <= p <= 1) of `sorted` (ascending) by nearest rank: the value of rank `ceil(p x n)`,
/// at least the first. `None` for no values.
pub fn nearest_rank(sorted: &[Decimal], p: Decimal) -> Option<Decimal> {
    rank_index(sorted.len(), p).map(|i| sorted[i])
}

/// Where the `p`-quantile by nearest rank lies in `n` sorted values: the index of rank `ceil(p x n)`, at least
/// the first. `None` for no values. (For values sorted by a key that is costly to compute: compute it there only.)
pub fn rank_index(n: usize, p: Decimal) -> Option<usize> {
    if n == 0 {
        return None;
    }
    let rank = (p.clamp(Decimal::ZERO, Decimal::ONE) * Decimal::from(n)).ceil();
    let rank = usize::try_from(rank.mantissa() / 10i128.pow(rank.scale())).unwrap_or(n);
    Some(rank.clamp(1, n) - 1)
}

/// The median of `values` (any order): the middle value, or the mean of the two middle ones. `None` for none.
pub fn median(values: &[Decimal]) -> Option<Decimal> {
    let mut v = values.to_vec();
    v.sort_unstable();
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / Decimal::TWO),
    }
}

/// The median absolute deviation of `values` from `center` (usually their [`median`]). `None` for none.
pub fn mad(values: &[Decimal], center: Decimal) -> Option<Decimal> {
    let deviations: Vec<Decimal> = values.iter().map(|v| (*v - center).abs()).collect();
    median(&deviations)
}

/// The least-squares line through `points` `(x, y)`: `(intercept, slope)`. With fewer than two distinct `x`,
/// the slope is 0 and the intercept the mean of `y`. `None` for no points.
pub fn least_squares(points: &[(Decimal, Decimal)]) -> Option<(Decimal, Decimal)> {
    if points.is_empty() {
        return None;
    }
    let n = Decimal::from(points.len());
    let mean_x = points.iter().map(|p| p.0).sum::<Decimal>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<Decimal>() / n;
    let sxx: Decimal = points.iter().map(|p| (p.0 - mean_x) * (p.0 - mean_x)).sum();
    if sxx.is_zero() {
        return Some((mean_y, Decimal::ZERO));
    }
    let sxy: Decimal = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let slope = sxy / sxx;
    Some((mean_y - slope * mean_x, slope))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use rust_decimal::Decimal;

    use super::{least_squares, mad, median, nearest_rank, MAD_SCALE};

    fn dec(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    fn d(v: &[i64]) -> Vec<Decimal> {
        v.iter().map(|x| Decimal::from(*x)).collect()
    }

    #[test]
    fn nearest_rank_follows_its_definition() {
        let v = d(&[15, 20, 35, 40, 50]);
        // The textbook example: 30th percentile rank ceil(1.5) = 2, 40th rank 2, 50th rank 3, 100th rank 5.
        assert_eq!(nearest_rank(&v, dec("0.30")), Some(dec("20")));
        assert_eq!(nearest_rank(&v, dec("0.40")), Some(dec("20")));
        assert_eq!(nearest_rank(&v, dec("0.50")), Some(dec("35")));
        assert_eq!(nearest_rank(&v, Decimal::ONE), Some(dec("50")));
        assert_eq!(nearest_rank(&v, Decimal::ZERO), Some(dec("15")));
        assert_eq!(nearest_rank(&[], dec("0.5")), None);
    }

    #[test]
    fn median_and_mad_of_odd_and_even_counts() {
        assert_eq!(median(&d(&[3, 1, 2])), Some(dec("2")));
        assert_eq!(median(&d(&[4, 1, 3, 2])), Some(dec("2.5")));
        assert_eq!(median(&[]), None);
        // 1 1 2 2 4 6 9: median 2, deviations 1 1 0 0 2 4 7, their median 1.
        let v = d(&[1, 1, 2, 2, 4, 6, 9]);
        assert_eq!(mad(&v, median(&v).unwrap()), Some(dec("1")));
        assert_eq!(MAD_SCALE, dec("1.4826"));
    }

    #[test]
    fn least_squares_finds_an_exact_line_and_a_flat_one() {
        let pts: Vec<(Decimal, Decimal)> = (0..5)
            .map(|x| (Decimal::from(x), Decimal::from(3 + 2 * x)))
            .collect();
        assert_eq!(least_squares(&pts), Some((dec("3"), dec("2"))));
        assert_eq!(
            least_squares(&[(dec("1"), dec("4")), (dec("1"), dec("6"))]),
            Some((dec("5"), dec("0")))
        );
        assert_eq!(least_squares(&[]), None);
    }
}
