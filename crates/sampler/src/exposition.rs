//! A small, tolerant parser of the Prometheus text exposition format, as DCGM exporters really write it:
//! with or without `# HELP`/`# TYPE`, families split or ungrouped, `{a="b", c="d"}` with spaces after commas,
//! escaped quotes, integers, `%f` floats, `NaN`/`+Inf`, optional timestamps, CRLF line ends. A line it cannot
//! read is skipped and counted, never fatal and never read as zero. It borrows from the text: no allocation
//! per line unless a label value holds an escape.

use std::borrow::Cow;

/// What a parse saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Non-empty lines, comments included.
    pub lines: u64,
    /// Sample lines read.
    pub samples: u64,
    /// Lines that are neither a comment nor a readable sample: skipped.
    pub malformed: u64,
}

/// One sample line.
#[derive(Debug)]
pub struct Line<'a, 'b> {
    pub name: &'a str,
    pub labels: &'b [(&'a str, Cow<'a, str>)],
    /// The value as written (`8.969000`), for exact decimal conversion.
    pub value_text: &'a str,
    /// The value as a float (`NaN` and infinities included).
    pub value: f64,
}

impl Line<'_, '_> {
    /// The first label of that name.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_ref())
    }
}

/// Parses `text`, calling `visit` for each sample line; returns what it saw.
pub fn parse<'a>(text: &'a str, mut visit: impl FnMut(&Line<'a, '_>)) -> Stats {
    let mut stats = Stats::default();
    let mut labels: Vec<(&'a str, Cow<'a, str>)> = Vec::with_capacity(16);
    for raw in text.split('\n') {
        let line = raw.trim_matches(|c: char| c == ' ' || c == '\t' || c == '\r');
        if line.is_empty() {
            continue;
        }
        stats.lines += 1;
        if line.starts_with('#') {
            continue;
        }
        labels.clear();
        match parse_line(line, &mut labels) {
            Some((name, value_text, value)) => {
                stats.samples += 1;
                visit(&Line {
                    name,
                    labels: &labels,
                    value_text,
                    value,
                });
            }
            None => stats.malformed += 1,
        }
    }
    stats
}

/// Parses a value as Prometheus writes it: a float, an integer, `NaN`, `+Inf`, `-Inf`.
pub fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" | "+inf" | "inf" => return Some(f64::INFINITY),
        "-Inf" | "-inf" => return Some(f64::NEG_INFINITY),
        "NaN" | "nan" => return Some(f64::NAN),
        _ => {}
    }
    // Only digits, signs, dots and exponents: refuse the words Rust would also accept ("infinity").
    if s.is_empty()
        || !s
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'))
    {
        return None;
    }
    s.parse::<f64>().ok()
}

fn parse_line<'a>(
    line: &'a str,
    labels: &mut Vec<(&'a str, Cow<'a, str>)>,
) -> Option<(&'a str, &'a str, f64)> {
    let b = line.as_bytes();
    let mut i = 0;
    // Metric name.
    if !b.first().is_some_and(|c| is_name_start(*c) || *c == b':') {
        return None;
    }
    while i < b.len() && (is_name_char(b[i]) || b[i] == b':') {
        i += 1;
    }
    let name = &line[..i];
    let name_end = i;
    i = skip_ws(b, i);
    let had_labels = i < b.len() && b[i] == b'{';
    if had_labels {
        i = parse_labels(line, i + 1, labels)?;
    } else {
        i = name_end;
    }
    // At least one blank between a bare name and the value (after `}` a blank is optional).
    let after = skip_ws(b, i);
    if (after == i && !had_labels) || after >= b.len() {
        return None;
    }
    let mut j = after;
    while j < b.len() && !is_ws(b[j]) {
        j += 1;
    }
    let value_text = &line[after..j];
    let value = parse_value(value_text)?;
    // An optional timestamp (integer milliseconds), then nothing.
    let k = skip_ws(b, j);
    if k < b.len() {
        let mut m = k;
        while m < b.len() && !is_ws(b[m]) {
            m += 1;
        }
        let ts = &line[k..m];
        if ts.parse::<i64>().is_err() || skip_ws(b, m) < b.len() {
            return None;
        }
    }
    Some((name, value_text, value))
}

/// Parses `a="b", c="d"}` from just after the `{`; returns the index after the `}`.
fn parse_labels<'a>(
    line: &'a str,
    mut i: usize,
    labels: &mut Vec<(&'a str, Cow<'a, str>)>,
) -> Option<usize> {
    let b = line.as_bytes();
    loop {
        i = skip_ws(b, i);
        match b.get(i)? {
            b'}' => return Some(i + 1),
            c if is_name_start(*c) => {}
            _ => return None,
        }
        let start = i;
        while i < b.len() && is_name_char(b[i]) {
            i += 1;
        }
        let key = &line[start..i];
        i = skip_ws(b, i);
        if b.get(i)? != &b'=' {
            return None;
        }
        i = skip_ws(b, i + 1);
        if b.get(i)? != &b'"' {
            return None;
        }
        i += 1;
        let vstart = i;
        let mut escaped = false;
        loop {
            match b.get(i)? {
                b'\\' => {
                    escaped = true;
                    i += 2;
                }
                b'"' => break,
                _ => i += 1,
            }
        }
        let raw = line.get(vstart..i)?;
        let value = if escaped {
            Cow::Owned(unescape(raw))
        } else {
            Cow::Borrowed(raw)
        };
        labels.push((key, value));
        i = skip_ws(b, i + 1);
        match b.get(i)? {
            b',' => i += 1,
            b'}' => return Some(i + 1),
            _ => return None,
        }
    }
}

fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('\\') => out.push('\\'),
            Some('"') => out.push('"'),
            // Unknown escapes are kept as written (tolerant, like the Prometheus parser).
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

fn is_ws(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_ws(b[i]) {
        i += 1;
    }
    i
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::{parse, parse_value, Stats};

    type Seen = (String, Vec<(String, String)>, String);

    fn lines(text: &str) -> (Vec<Seen>, Stats) {
        let mut out = Vec::new();
        let stats = parse(text, |l| {
            out.push((
                l.name.to_string(),
                l.labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                l.value_text.to_string(),
            ))
        });
        (out, stats)
    }

    #[test]
    fn reads_help_type_and_bare_samples() {
        let (l, s) = lines(
            "# HELP x Power (in W).\n# TYPE x gauge\nx{gpu=\"0\",UUID=\"GPU-1\"} 8.969000\nup 1\n\n",
        );
        assert_eq!(
            s,
            Stats {
                lines: 4,
                samples: 2,
                malformed: 0
            }
        );
        assert_eq!(l[0].0, "x");
        assert_eq!(
            l[0].1,
            vec![("gpu".into(), "0".into()), ("UUID".into(), "GPU-1".into())]
        );
        assert_eq!(l[0].2, "8.969000");
        assert_eq!(l[1], ("up".into(), vec![], "1".into()));
    }

    #[test]
    fn tolerates_spaces_escapes_trailing_commas_timestamps_and_crlf() {
        let (l, s) = lines(
            "m{gpu=\"0\", UUID = \"GPU-1\" , pod=\"a\\\"b\\\\c\\nd\",} 12 1700000000000\r\nn {a=\"}\"} -3.5e2\r\n",
        );
        assert_eq!(s.malformed, 0);
        assert_eq!(l[0].1[1], ("UUID".into(), "GPU-1".into()));
        assert_eq!(l[0].1[2], ("pod".into(), "a\"b\\c\nd".into()));
        assert_eq!(l[0].2, "12");
        assert_eq!(l[1].1[0], ("a".into(), "}".into()));
        assert_eq!(l[1].2, "-3.5e2");
    }

    #[test]
    fn special_values() {
        assert!(parse_value("NaN").unwrap().is_nan());
        assert_eq!(parse_value("+Inf"), Some(f64::INFINITY));
        assert_eq!(parse_value("-Inf"), Some(f64::NEG_INFINITY));
        assert_eq!(
            parse_value("9223372036854775794"),
            Some(9223372036854775794.0)
        );
        assert_eq!(parse_value("infinity"), None);
        assert_eq!(parse_value("12abc"), None);
        assert_eq!(parse_value(""), None);
    }

    #[test]
    fn malformed_lines_are_counted_never_fatal_never_zero() {
        let text = "ok{a=\"1\"} 1\n\
                    {a=\"1\"} 2\n\
                    bad{a=\"1\" 3\n\
                    bad{a=1} 4\n\
                    bad{a=\"unterminated} 5\n\
                    novalue{a=\"1\"}\n\
                    bad{a=\"1\"} abc\n\
                    bad{a=\"1\"} 1 2 3\n\
                    bad{a=\"1\"} 1 notatime\n\
                    bad{1a=\"x\"} 1\n\
                    glued{a=\"1\"}7\n\
                    ok2 2\n";
        let (l, s) = lines(text);
        let names: Vec<&str> = l.iter().map(|x| x.0.as_str()).collect();
        // `glued{..}7` has no blank before its value: Prometheus accepts it, and so do we.
        assert_eq!(names, vec!["ok", "glued", "ok2"]);
        assert_eq!(s.malformed, 9);
        assert_eq!(s.samples, 3);
    }

    #[test]
    fn never_panics_on_garbage() {
        let garbage = [
            "{",
            "}",
            "a{",
            "a{b",
            "a{b=",
            "a{b=\"",
            "a{b=\"\\",
            "a{b=\"\\\"",
            "\u{0}",
            "é 1",
            "a 1 ",
            "a{}",
        ];
        for g in garbage {
            let _ = lines(g);
        }
        let (l, s) = lines("a{} 1");
        assert_eq!((l.len(), s.malformed), (1, 0));
    }
}
