//! Instants as integer milliseconds since the Unix epoch (UTC): exact, cheap to compare and to cut into buckets;
//! the [`Period`] of an allocation or a report, cut to whole buckets.

use std::fmt;

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::error::FieldError;

/// An instant, in milliseconds since 1970-01-01T00:00:00Z.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub const fn from_millis(ms: i64) -> Self {
        Timestamp(ms)
    }

    pub const fn from_secs(s: i64) -> Self {
        Timestamp(s * 1000)
    }

    pub const fn millis(self) -> i64 {
        self.0
    }

    /// Parses RFC 3339 (`2026-10-01T00:00:15Z`, any offset); sub-millisecond digits are rejected rather than lost.
    pub fn parse_rfc3339(s: &str) -> Result<Self, FieldError> {
        Self::rfc3339(
            s,
            "must be an RFC 3339 date-time, e.g. 2026-10-01T00:00:15Z",
        )
    }

    /// [`Timestamp::parse_rfc3339`], saying `not_a_datetime` when `s` is not one.
    fn rfc3339(s: &str, not_a_datetime: &str) -> Result<Self, FieldError> {
        let dt = OffsetDateTime::parse(s, &Rfc3339)
            .map_err(|_| FieldError::new("timestamp", not_a_datetime))?;
        let nanos = dt.unix_timestamp_nanos();
        if nanos % 1_000_000 != 0 {
            return Err(FieldError::new(
                "timestamp",
                "has more precision than a millisecond",
            ));
        }
        let ms = i64::try_from(nanos / 1_000_000)
            .map_err(|_| FieldError::new("timestamp", "is out of range"))?;
        Ok(Timestamp(ms))
    }

    /// Parses a calendar date (`2026-10-01`) as its midnight UTC.
    pub fn parse_date(s: &str) -> Result<Self, FieldError> {
        let fmt = time::macros::format_description!("[year]-[month]-[day]");
        let d = time::Date::parse(s, &fmt).map_err(|_| {
            FieldError::new("date", "must be a date YYYY-MM-DD or an RFC 3339 date-time")
        })?;
        Ok(Timestamp(d.midnight().assume_utc().unix_timestamp() * 1000))
    }

    /// A date (`2026-10-01`, midnight UTC) or an RFC 3339 date-time.
    pub fn parse_date_or_datetime(s: &str) -> Result<Self, FieldError> {
        const EITHER: &str = "must be a date YYYY-MM-DD or an RFC 3339 date-time, e.g. 2026-10-01 or 2026-10-01T00:00:15Z";
        if s.len() == 10 {
            Self::parse_date(s).map_err(|e| FieldError::new(&e.field, EITHER))
        } else {
            Self::rfc3339(s, EITHER)
        }
    }

    /// The start of the bucket of `bucket_ms` that holds this instant (buckets aligned to the epoch, so to UTC).
    pub fn floor_to(self, bucket_ms: i64) -> Self {
        Timestamp(self.0.div_euclid(bucket_ms) * bucket_ms)
    }

    pub fn ceil_to(self, bucket_ms: i64) -> Self {
        let f = self.floor_to(bucket_ms);
        if f == self {
            f
        } else {
            Timestamp(f.0 + bucket_ms)
        }
    }

    /// `YYYY-MM-DD` of the UTC day holding this instant.
    pub fn date_string(self) -> String {
        let s = self.to_string();
        s[..10].to_string()
    }
}

impl fmt::Display for Timestamp {
    /// RFC 3339 in UTC, with milliseconds only when there are some.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.0.div_euclid(1000);
        let ms = self.0.rem_euclid(1000);
        match OffsetDateTime::from_unix_timestamp(secs) {
            Ok(dt) => {
                let (y, mo, d) = (dt.year(), dt.month() as u8, dt.day());
                let (h, mi, s) = (dt.hour(), dt.minute(), dt.second());
                if ms == 0 {
                    write!(f, "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
                } else {
                    write!(f, "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z")
                }
            }
            Err(_) => write!(f, "@{}ms", self.0),
        }
    }
}

/// The period of an allocation, widened to whole buckets: `[from, to)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    pub from: Timestamp,
    pub to: Timestamp,
}

impl Period {
    pub fn new(from: Timestamp, to: Timestamp, bucket_ms: i64) -> Result<Self, FieldError> {
        if from >= to {
            return Err(FieldError::new("to", "must be after `from`"));
        }
        Ok(Period {
            from: from.floor_to(bucket_ms),
            to: to.ceil_to(bucket_ms),
        })
    }

    pub fn contains(&self, t: Timestamp) -> bool {
        self.from <= t && t < self.to
    }
}

#[cfg(test)]
mod tests {
    use super::Timestamp;

    #[test]
    fn parses_and_prints_rfc3339() {
        let t = Timestamp::parse_rfc3339("2026-10-01T02:00:15+02:00").unwrap();
        assert_eq!(t.to_string(), "2026-10-01T00:00:15Z");
        let t = Timestamp::parse_rfc3339("2026-10-01T00:00:15.250Z").unwrap();
        assert_eq!(t.to_string(), "2026-10-01T00:00:15.250Z");
        assert!(Timestamp::parse_rfc3339("2026-10-01 00:00:15").is_err());
        assert!(Timestamp::parse_rfc3339("2026-10-01T00:00:15.0001Z").is_err());
        assert_eq!(
            Timestamp::parse_date("2026-10-01").unwrap().to_string(),
            "2026-10-01T00:00:00Z"
        );
    }

    #[test]
    fn buckets_align_to_utc() {
        let t = Timestamp::parse_rfc3339("2026-10-01T10:20:00Z").unwrap();
        assert_eq!(t.floor_to(3_600_000).to_string(), "2026-10-01T10:00:00Z");
        assert_eq!(t.ceil_to(3_600_000).to_string(), "2026-10-01T11:00:00Z");
    }
}
