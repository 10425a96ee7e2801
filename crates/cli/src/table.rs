//! Plain-text tables for the terminal: left-aligned text, right-aligned numbers.

/// A table whose columns are sized to their widest cell.
#[derive(Debug, Default)]
pub struct Table {
    headers: Vec<(String, bool)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// Columns as (title, right-aligned).
    pub fn new(headers: &[(&str, bool)]) -> Self {
        Table {
            headers: headers.iter().map(|(h, r)| (h.to_string(), *r)).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let n = self.headers.len();
        let mut widths: Vec<usize> = self
            .headers
            .iter()
            .map(|(h, _)| h.chars().count())
            .collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(n) {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let line = |cells: Vec<&str>| {
            let parts: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    if self.headers[i].1 {
                        format!("{c:>w$}", w = widths[i])
                    } else {
                        format!("{c:<w$}", w = widths[i])
                    }
                })
                .collect();
            parts.join("  ").trim_end().to_string()
        };
        let mut out = String::new();
        out.push_str(&line(
            self.headers.iter().map(|(h, _)| h.as_str()).collect(),
        ));
        out.push('\n');
        out.push_str(
            &widths
                .iter()
                .map(|w| "-".repeat(*w))
                .collect::<Vec<_>>()
                .join("  "),
        );
        out.push('\n');
        for r in &self.rows {
            out.push_str(&line(r.iter().map(String::as_str).collect()));
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_align_right() {
        let mut t = Table::new(&[("Deployment", false), ("Cost", true)]);
        t.row(vec!["vllm-a".into(), "5.19".into()]);
        t.row(vec!["b".into(), "103.82".into()]);
        assert_eq!(
            t.render(),
            "Deployment    Cost\n----------  ------\nvllm-a        5.19\nb           103.82\n"
        );
    }
}
