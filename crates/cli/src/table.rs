//! Plain-text tables: columns aligned by character count, two spaces apart, no trailing blanks.

use crate::render::clean;
use std::io::{self, Write};

#[derive(Debug, Clone)]
pub struct Table {
    headers: Vec<String>,
    /// Whether the first line is the header (key/value lists have none).
    show_header: bool,
    rows: Vec<Vec<String>>,
    right_aligned: Vec<bool>,
}

impl Table {
    pub fn new(headers: &[&str]) -> Self {
        Table {
            headers: headers.iter().map(|h| (*h).to_owned()).collect(),
            show_header: true,
            rows: Vec::new(),
            right_aligned: vec![false; headers.len()],
        }
    }

    /// A table of `columns` columns without a header line.
    pub fn headless(columns: usize) -> Self {
        Table { show_header: false, ..Table::new(&vec![""; columns]) }
    }

    /// Aligns a column to the right (numbers).
    pub fn right(mut self, column: usize) -> Self {
        if let Some(r) = self.right_aligned.get_mut(column) {
            *r = true;
        }
        self
    }

    /// Adds a row; cells are cleaned of control characters, missing cells are blank.
    pub fn push(&mut self, cells: Vec<String>) {
        let mut row: Vec<String> = cells.iter().map(|c| clean(c)).collect();
        row.resize(self.headers.len(), String::new());
        self.rows.push(row);
    }

    /// Writes the header and the rows, each line starting with `indent`.
    pub fn write(&self, out: &mut dyn Write, indent: &str) -> io::Result<()> {
        let header = self.show_header.then_some(&self.headers);
        let mut widths: Vec<usize> = header
            .map(|h| h.iter().map(|c| c.chars().count()).collect())
            .unwrap_or(vec![0; self.headers.len()]);
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut line = String::new();
        for row in header.into_iter().chain(&self.rows) {
            line.clear();
            line.push_str(indent);
            for (i, cell) in row.iter().enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                let pad = widths[i].saturating_sub(cell.chars().count());
                if self.right_aligned[i] {
                    line.extend(std::iter::repeat_n(' ', pad));
                    line.push_str(cell);
                } else {
                    line.push_str(cell);
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Table;

    #[test]
    fn aligns_columns_and_trims() {
        let mut t = Table::new(&["NAME", "N", "NOTE"]).right(1);
        t.push(vec!["alpha".into(), "7".into(), "x".into()]);
        t.push(vec!["b".into(), "1234".into(), "line\nbreak".into()]);
        let mut out = Vec::new();
        t.write(&mut out, "  ").unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, "  NAME      N  NOTE\n  alpha     7  x\n  b      1234  line\\nbreak\n");
    }
}
