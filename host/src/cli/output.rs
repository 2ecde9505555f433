//! How the CLI prints: aligned tables for people, JSON for scripts (`--json`). The JSON
//! is always a view of `sluice_wire` (the objects the HTTP API answers with), never a
//! store row. Formatting only; it never decides what to print.

use serde::Serialize;

#[derive(Clone, Copy, Debug)]
pub struct Printer {
    json: bool,
}

impl Printer {
    pub fn new(json: bool) -> Self {
        Self { json }
    }

    pub fn is_json(&self) -> bool {
        self.json
    }

    /// A one-line confirmation (`{"message": …}` with `--json`).
    pub fn message(&self, text: &str) {
        if self.json {
            println!("{}", serde_json::json!({ "message": text }));
        } else {
            println!("{text}");
        }
    }

    /// One value: JSON as is, or `key: value` lines from `fields`.
    pub fn value<T: Serialize>(&self, value: &T, fields: &[(&str, String)]) {
        if self.json {
            println!("{}", serde_json::to_string(value).expect("serialisable"));
        } else {
            let width = fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
            for (key, val) in fields {
                println!("{key:width$}  {val}");
            }
        }
    }

    /// Rows: a JSON array of their views (`view`), or an aligned table with `headers`
    /// and `cells` of each row.
    pub fn table<T, V: Serialize>(
        &self,
        rows: Vec<T>,
        headers: &[&str],
        cells: impl Fn(&T) -> Vec<String>,
        view: impl FnMut(T) -> V,
    ) {
        if self.json {
            let views: Vec<V> = rows.into_iter().map(view).collect();
            println!("{}", serde_json::to_string(&views).expect("serialisable"));
            return;
        }
        let rows: Vec<Vec<String>> = rows.iter().map(cells).collect();
        print!("{}", render_table(headers, &rows));
    }
}

/// Render rows under headers with columns padded to their widest cell.
pub fn render_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut out = line(headers.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// Shorten text for a table cell, marking the cut.
pub fn clip(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', " ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}
