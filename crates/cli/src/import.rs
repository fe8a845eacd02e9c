//! `strata table import`: CSV rows into a table.
//!
//! The header (unless `--no-header`) names the columns, in any order;
//! nullable columns may be left out. Without a header every line gives
//! every column in the table's order. Fields parse as their columns' types
//! ([`crate::cells::parse_cell`]: the empty field and `NULL` are null,
//! or with `--null TEXT` that text alone).
//! Rows are upserted in batches of `--batch-rows`. The first bad line
//! stops the import: the rows before it are written, none from it on, and
//! the error names the line, the column and the rows imported.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use arrow_array::RecordBatch;
use strata::table::{Column, ColumnType, Table, Value, values_to_array};

use crate::app::Failure;
use crate::cells::{Nulls, parse_cell};

fn rows(n: u64) -> String {
    format!("{n} row{}", if n == 1 { "" } else { "s" })
}

/// Rows written so far and the batch being built (one value list per
/// schema column).
struct Import<'a> {
    table: &'a Table,
    sync: bool,
    imported: u64,
    columns: Vec<Vec<Value>>,
    rows: usize,
    first_line: u64,
}

impl Import<'_> {
    /// A bad line: the rows before it are written (`write` was called),
    /// none from it on.
    fn bad_line(&self, line: u64, m: impl std::fmt::Display) -> Failure {
        Failure::Other(format!(
            "line {line}: {m} ({} imported before it, none from line {line} on)",
            rows(self.imported)
        ))
    }

    /// Writes the pending rows as one batch.
    fn write(&mut self) -> Result<(), Failure> {
        if self.rows == 0 {
            return Ok(());
        }
        let schema = self.table.schema();
        let arrays = schema
            .columns()
            .iter()
            .zip(&mut self.columns)
            .map(|(c, v)| {
                let a = values_to_array(c.ty, v);
                v.clear();
                a
            })
            .collect::<strata::Result<Vec<_>>>();
        let failed = |m: String| {
            Failure::Other(format!(
                "{m}; {} imported, none from line {} on: import again from that line",
                rows(self.imported),
                self.first_line
            ))
        };
        let arrays = arrays.map_err(|e| failed(e.to_string()))?;
        let batch = RecordBatch::try_new(schema.arrow_schema(), arrays)
            .map_err(|e| failed(e.to_string()))?;
        self.table
            .upsert_opt(&batch, self.sync)
            .map_err(|e| failed(e.to_string()))?;
        self.imported += self.rows as u64;
        self.rows = 0;
        Ok(())
    }
}

fn field_text<'a>(bytes: &'a [u8], c: &Column) -> Result<&'a str, String> {
    std::str::from_utf8(bytes).map_err(|_| format!("column {:?}: not valid UTF-8", c.name))
}

/// Parses one field of column `c`.
fn parse_field(bytes: &[u8], c: &Column, nulls: &Nulls) -> Result<Value, String> {
    if c.ty == ColumnType::Binary && std::str::from_utf8(bytes).is_err() {
        // Raw bytes are a binary value as they stand.
        return Ok(Value::Binary(bytes.to_vec()));
    }
    parse_cell(field_text(bytes, c)?, c, nulls).map_err(|m| format!("column {:?}: {m}", c.name))
}

/// Where each column's field is: `field_of[c]` (None: the column is null),
/// from the header line.
fn read_header(
    t: &Table,
    record: &csv::ByteRecord,
    header_line: u64,
) -> Result<Vec<Option<usize>>, Failure> {
    let schema = t.schema();
    let cols = schema.columns();
    let bad = |m: String| Failure::Other(format!("line {header_line} (the header): {m}"));
    let mut field_of = vec![None; cols.len()];
    for (f, name) in record.iter().enumerate() {
        let name = String::from_utf8_lossy(name);
        let name = name.trim().trim_start_matches('\u{feff}');
        let Some(c) = cols.iter().position(|c| c.name == name) else {
            let names: Vec<&str> = cols.iter().map(|c| c.name.as_str()).collect();
            return Err(bad(format!(
                "{name:?} is not a column of table {:?} (its columns are {}; use --no-header \
                 if the file has no header)",
                t.name(),
                names.join(", ")
            )));
        };
        if field_of[c].replace(f).is_some() {
            return Err(bad(format!("{name:?} is named twice")));
        }
    }
    if let Some((c, _)) = cols
        .iter()
        .zip(&field_of)
        .find(|(c, f)| f.is_none() && !c.nullable)
    {
        return Err(bad(format!(
            "column {:?} is missing, and it is not nullable",
            c.name
        )));
    }
    Ok(field_of)
}

/// Reads CSV rows from `path` (`-`: standard input) and upserts them in
/// batches of `batch_rows`; returns the number of rows imported.
pub(crate) fn import(
    t: &Table,
    path: &Path,
    header: bool,
    batch_rows: usize,
    nulls: &Nulls,
    sync: bool,
) -> Result<u64, Failure> {
    let input: Box<dyn Read> = if path.as_os_str() == "-" {
        Box::new(io::stdin().lock())
    } else {
        let f = File::open(path)
            .map_err(|e| Failure::Other(format!("cannot open {}: {e}", path.display())))?;
        Box::new(BufReader::new(f))
    };
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(input);
    let cols = t.schema().columns();
    let mut record = csv::ByteRecord::new();
    let line_of = |r: &csv::ByteRecord| r.position().map_or(0, |p| p.line());
    let csv_line = |e: &csv::Error| e.position().map_or(0, |p| p.line());
    let mut field_of: Vec<Option<usize>> = (0..cols.len()).map(Some).collect();
    let mut fields = cols.len();
    if header {
        match rdr.read_byte_record(&mut record) {
            Ok(true) => {}
            Ok(false) => return Ok(0),
            Err(e) => return Err(Failure::Other(format!("line {}: {e}", csv_line(&e)))),
        }
        field_of = read_header(t, &record, line_of(&record))?;
        fields = record.len();
    }
    let mut im = Import {
        table: t,
        sync,
        imported: 0,
        columns: vec![Vec::with_capacity(batch_rows.min(1 << 16)); cols.len()],
        rows: 0,
        first_line: 0,
    };
    loop {
        match rdr.read_byte_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                im.write()?;
                return Err(im.bad_line(csv_line(&e), e));
            }
        }
        let line = line_of(&record);
        let parsed = if record.len() == fields {
            cols.iter()
                .zip(&field_of)
                .map(|(c, f)| match f.and_then(|f| record.get(f)) {
                    Some(bytes) => parse_field(bytes, c, nulls),
                    None => Ok(Value::Null),
                })
                .collect::<Result<Vec<Value>, String>>()
        } else {
            Err(format!("{} fields, expected {fields}", record.len()))
        };
        match parsed {
            Ok(row) => {
                for (col, v) in im.columns.iter_mut().zip(row) {
                    col.push(v);
                }
            }
            Err(m) => {
                im.write()?;
                return Err(im.bad_line(line, m));
            }
        }
        if im.rows == 0 {
            im.first_line = line;
        }
        im.rows += 1;
        if im.rows >= batch_rows {
            im.write()?;
        }
    }
    im.write()?;
    Ok(im.imported)
}
