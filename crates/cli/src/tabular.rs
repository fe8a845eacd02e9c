//! Aligned text output of `strata table`: tables with a header and a
//! separator line (`scan`), and `name | value` records (`get`).
//!
//! ```text
//! id | name | score
//! ---+------+------
//!  1 | ada  |  36.5
//!  2 | NULL |     7
//! ```
//!
//! Widths count characters; control characters in cells are escaped
//! (`\n`, `\t`, ...) so every row stays on one line.

use std::borrow::Cow;
use std::io::{self, Write};

/// How a column's cells line up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A text table collected in memory (widths need every row).
#[derive(Debug)]
pub struct TextTable {
    headers: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

/// `text` with control characters escaped.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut s = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            s.extend(c.escape_default());
        } else {
            s.push(c);
        }
    }
    Cow::Owned(s)
}

fn width(s: &str) -> usize {
    s.chars().count()
}

fn pad(out: &mut impl Write, text: &str, w: usize, align: Align, last: bool) -> io::Result<()> {
    let fill = w.saturating_sub(width(text));
    match align {
        Align::Right => write!(out, "{:fill$}{text}", ""),
        // No trailing blanks at the end of a line.
        Align::Left if last => write!(out, "{text}"),
        Align::Left => write!(out, "{text}{:fill$}", ""),
    }
}

impl TextTable {
    /// A table with these column headers and alignments.
    pub fn new(headers: Vec<String>, align: Vec<Align>) -> TextTable {
        TextTable {
            headers: headers.iter().map(|h| escape(h).into_owned()).collect(),
            align,
            rows: Vec::new(),
        }
    }

    /// Adds a row (one cell per header).
    pub fn push(&mut self, row: Vec<String>) {
        self.rows
            .push(row.iter().map(|c| escape(c).into_owned()).collect());
    }

    /// Rows added so far.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no row was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Writes the header, the separator and the rows.
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        let mut widths: Vec<usize> = self.headers.iter().map(|h| width(h)).collect();
        for r in &self.rows {
            for (w, c) in widths.iter_mut().zip(r) {
                *w = (*w).max(width(c));
            }
        }
        self.write_line(out, &widths, &self.headers)?;
        let sep: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        writeln!(out, "{}", sep.join("-+-"))?;
        for r in &self.rows {
            self.write_line(out, &widths, r)?;
        }
        Ok(())
    }

    fn write_line(
        &self,
        out: &mut impl Write,
        widths: &[usize],
        cells: &[String],
    ) -> io::Result<()> {
        let n = widths.len();
        for (i, (c, &w)) in cells.iter().zip(widths).enumerate() {
            if i > 0 {
                write!(out, " | ")?;
            }
            let align = self.align.get(i).copied().unwrap_or(Align::Left);
            pad(out, c, w, align, i + 1 == n)?;
        }
        writeln!(out)
    }
}

/// Writes `name | value` lines, the names padded to one width.
pub fn write_record(out: &mut impl Write, fields: &[(String, String)]) -> io::Result<()> {
    let w = fields.iter().map(|(n, _)| width(n)).max().unwrap_or(0);
    for (name, value) in fields {
        pad(out, &escape(name), w, Align::Left, false)?;
        writeln!(out, " | {}", escape(value))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(t: &TextTable) -> String {
        let mut v = Vec::new();
        t.write(&mut v).expect("write");
        String::from_utf8(v).expect("utf8")
    }

    #[test]
    fn columns_align_with_numbers_on_the_right() {
        let mut t = TextTable::new(
            vec!["id".into(), "name".into(), "score".into()],
            vec![Align::Right, Align::Left, Align::Right],
        );
        t.push(vec!["1".into(), "ada".into(), "36.5".into()]);
        t.push(vec!["20".into(), "NULL".into(), "7".into()]);
        assert_eq!(
            render(&t),
            [
                "id | name | score\n",
                "---+------+------\n",
                " 1 | ada  |  36.5\n",
                "20 | NULL |     7\n",
            ]
            .concat()
        );
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn last_left_column_has_no_trailing_blanks_and_controls_are_escaped() {
        let mut t = TextTable::new(vec!["k".into(), "v".into()], vec![Align::Left; 2]);
        t.push(vec!["a".into(), "x\ny".into()]);
        t.push(vec!["bb".into(), "z".into()]);
        assert_eq!(render(&t), "k  | v\n---+-----\na  | x\\ny\nbb | z\n");
        let mut v = Vec::new();
        write_record(
            &mut v,
            &[("id".into(), "1".into()), ("score".into(), "2".into())],
        )
        .expect("write");
        assert_eq!(String::from_utf8_lossy(&v), "id    | 1\nscore | 2\n");
    }
}
