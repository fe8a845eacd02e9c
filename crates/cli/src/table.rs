//! `strata table ...`: create tables, import CSV into them, read, update
//! and delete rows, and look at and change their layout.
//!
//! Arguments that do not fit the table (an unknown column, a value that is
//! not of its column's type, a predicate or layout that does not read) are
//! usage errors (exit 2); what the database refuses (no such table, a
//! table that exists already) and bad lines of a CSV file exit 1.

use std::io::{self, Write};
use std::ops::Bound;
use std::path::PathBuf;

use clap::{Subcommand, ValueEnum};
use strata::table::{
    Column, ColumnType, Predicate, ScanOptions, Schema, Table, TableLayout, TableOptions, Value,
    array_to_values,
};
use strata::{Db, Error};

use crate::app::{EXIT_FAILURE, Failure};
use crate::cells::{Nulls, align_of, message, parse_cell};
use crate::encoding::decode_token;
use crate::import;
use crate::tabular::{TextTable, write_record};

/// Rows per batch written by `table import` unless `--batch-rows` says.
pub const IMPORT_BATCH_ROWS: usize = 1000;

/// How `table scan` prints rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// An aligned text table (NULL, or the --null text, for nulls).
    Table,
    /// CSV with a header line (empty fields, or the --null text, for
    /// nulls), as `import` reads it under the same --null (without it,
    /// text that is empty or spells NULL imports as null).
    Csv,
}

/// The `table` subcommands.
#[derive(Debug, Subcommand)]
pub enum TableCommand {
    /// Create table NAME.
    Create {
        name: String,
        /// The columns as NAME:TYPE, comma-separated; a trailing ? makes a
        /// column nullable. Types: i32, i64, f64, bool, utf8, binary,
        /// timestamp (microseconds). Example: "id:i64, name:utf8?, score:f64".
        #[arg(long, value_name = "SPEC")]
        columns: String,
        /// The primary key's columns, comma-separated, in key order.
        #[arg(long, value_name = "COLS")]
        key: String,
        /// The layout: row (the default), column, groups:N,
        /// row-then-column:L, or groups per level from level 1 such as
        /// "a,b | c ; a | b | c".
        #[arg(long, value_name = "LAYOUT")]
        layout: Option<String>,
        /// Levels of the table's tree (default 7).
        #[arg(long, value_name = "N")]
        levels: Option<usize>,
        /// Switch to the advisor's layout automatically when it predicts a
        /// cost saving above this fraction (between 0 and 1, e.g. 0.2).
        #[arg(long, value_name = "THRESHOLD")]
        auto: Option<f64>,
        /// String columns of column-group files get a dictionary of each
        /// file's distinct values, and store codes, when at most this share
        /// of a file's values are distinct (default 0.25; 0 never).
        #[arg(long, value_name = "RATIO")]
        dictionary_ratio: Option<f64>,
    },
    /// Import the rows of a CSV file (- for standard input) into NAME.
    ///
    /// Fields parse as their columns' types; an empty field or NULL is
    /// null (with --null TEXT, that text alone). Rows are upserted (a row
    /// with an existing key replaces it) in batches. The first bad line
    /// stops the import with exit code 1; the rows before it stay imported,
    /// none from it on.
    Import {
        name: String,
        file: PathBuf,
        /// The first line names the columns, in any order; nullable
        /// columns may be left out (the default).
        #[arg(long, overrides_with = "no_header")]
        header: bool,
        /// There is no header: every line gives every column, in the
        /// table's order.
        #[arg(long, overrides_with = "header")]
        no_header: bool,
        /// Rows per write.
        #[arg(long, value_name = "N", default_value_t = IMPORT_BATCH_ROWS,
              value_parser = parse_batch_rows)]
        batch_rows: usize,
    },
    /// Print the row with key KEY (the key columns' values, comma-separated)
    /// as `column | value` lines; prints (not found) and exits 1 when absent.
    Get {
        name: String,
        #[arg(allow_hyphen_values = true)]
        key: String,
        /// Print only these columns (comma-separated).
        #[arg(long, value_name = "COLS")]
        columns: Option<String>,
    },
    /// Print the rows with keys in [FROM, TO) that match every --where.
    Scan {
        name: String,
        /// Print only these columns (comma-separated).
        #[arg(long, value_name = "COLS")]
        columns: Option<String>,
        /// A condition, column<op>value (op: = != < <= > >=) or
        /// "column IS NULL" or "column IS NOT NULL"; repeat it to require several.
        #[arg(long = "where", value_name = "CONDITION", allow_hyphen_values = true)]
        conditions: Vec<String>,
        /// Inclusive lower bound: values of the first key columns.
        #[arg(long, value_name = "KEY", allow_hyphen_values = true)]
        from: Option<String>,
        /// Exclusive upper bound: values of the first key columns.
        #[arg(long, value_name = "KEY", allow_hyphen_values = true)]
        to: Option<String>,
        /// Print at most N rows.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Set columns of the row with key KEY (a partial update); prints
    /// (not found) and exits 1 when there is no such row.
    Update {
        name: String,
        #[arg(allow_hyphen_values = true)]
        key: String,
        /// COLUMN=VALUE; repeat for more columns. NULL (or the --null text)
        /// sets a nullable column to null.
        #[arg(
            long = "set",
            value_name = "COLUMN=VALUE",
            required = true,
            allow_hyphen_values = true
        )]
        set: Vec<String>,
    },
    /// Delete the row with key KEY (nothing if there is none).
    Delete {
        name: String,
        #[arg(allow_hyphen_values = true)]
        key: String,
    },
    /// Print the table's schema, layout, what each level stores and its
    /// counters.
    Describe { name: String },
    /// Print the names of the tables.
    List,
    /// Print the current layout and the advisor's proposal with their
    /// predicted costs (changes nothing). The advisor uses the workload
    /// saved by the processes that opened the database for writing (the
    /// read-only `get` and `scan` save none).
    Advise { name: String },
    /// Change the layout (see `create --layout`); compaction rewrites the
    /// levels into it over time.
    SetLayout { name: String, layout: String },
    /// Drop the table and its rows.
    Drop { name: String },
}

impl TableCommand {
    /// Whether the command only reads (and so opens the database
    /// read-only).
    pub fn is_read(&self) -> bool {
        matches!(
            self,
            TableCommand::Get { .. }
                | TableCommand::Scan { .. }
                | TableCommand::Describe { .. }
                | TableCommand::List
                | TableCommand::Advise { .. }
        )
    }
}

fn parse_batch_rows(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{s:?} is not a positive number of rows")),
    }
}

fn usage(m: impl Into<String>) -> Failure {
    Failure::Usage(m.into())
}

/// Opens table `name`, saying which tables there are when it is missing.
fn open_table(db: &Db, name: &str) -> Result<Table, Failure> {
    match db.table(name) {
        Ok(t) => Ok(t),
        Err(Error::TableNotFound(_)) => {
            let names = db.table_names();
            let known = if names.is_empty() {
                "the database has no tables".to_string()
            } else {
                format!("the tables are {}", names.join(", "))
            };
            Err(Failure::Other(format!("no table named {name:?} ({known})")))
        }
        Err(e) => Err(Failure::Db(e)),
    }
}

fn column_names(schema: &Schema) -> String {
    schema
        .columns()
        .iter()
        .map(|c| c.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The column named `name`, or a usage error listing the columns.
fn column<'a>(schema: &'a Schema, name: &str, what: &str) -> Result<&'a Column, Failure> {
    match schema.index_of(name) {
        Ok(i) => Ok(&schema.columns()[i]),
        Err(_) => Err(usage(format!(
            "{what}: no column named {name:?} (the columns are {})",
            column_names(schema)
        ))),
    }
}

/// `--columns a,b`: the names, each checked.
fn projection(schema: &Schema, list: Option<&str>) -> Result<Option<Vec<String>>, Failure> {
    let Some(list) = list else { return Ok(None) };
    let names: Vec<String> = list.split(',').map(|s| s.trim().to_string()).collect();
    if names.iter().any(String::is_empty) {
        return Err(usage(format!(
            "--columns {list:?}: give column names separated by commas"
        )));
    }
    for n in &names {
        column(schema, n, "--columns")?;
    }
    Ok(Some(names))
}

/// A key given on the command line: the key columns' values separated by
/// commas (with one key column the whole text is its value). With
/// `prefix`, the first key columns are enough.
fn parse_key(schema: &Schema, text: &str, prefix: bool, what: &str) -> Result<Vec<Value>, Failure> {
    let key = schema.key_indices();
    let parts: Vec<&str> = if key.len() == 1 {
        vec![text]
    } else {
        text.split(',').collect()
    };
    let names: Vec<&str> = key
        .iter()
        .map(|&k| schema.columns()[k].name.as_str())
        .collect();
    let fits = if prefix {
        parts.len() <= key.len()
    } else {
        parts.len() == key.len()
    };
    if !fits {
        return Err(usage(format!(
            "{what} {text:?} gives {} value{}; the key is ({}): give {}{} separated by commas",
            parts.len(),
            if parts.len() == 1 { "" } else { "s" },
            names.join(", "),
            if prefix { "at most " } else { "" },
            key.len()
        )));
    }
    parts
        .iter()
        .zip(key)
        .map(|(p, &k)| {
            let c = &schema.columns()[k];
            // A key column is never null: its text is its value.
            parse_cell(p, c, &Nulls::Never)
                .map_err(|m| usage(format!("{what} {text:?}: key column {:?}: {m}", c.name)))
        })
        .collect()
}

/// `--columns "id:i64, name:utf8?"`.
fn parse_columns(spec: &str) -> Result<Vec<Column>, Failure> {
    let mut cols = Vec::new();
    for part in spec.split(',').map(str::trim) {
        let bad = |why: &str| usage(format!("--columns: {part:?} {why}"));
        let Some((name, ty)) = part.split_once(':') else {
            return Err(bad("is not NAME:TYPE (example: \"id:i64, name:utf8?\")"));
        };
        let (name, ty) = (name.trim(), ty.trim());
        let (ty, nullable) = match ty.strip_suffix('?') {
            Some(t) => (t.trim(), true),
            None => (ty, false),
        };
        if name.is_empty() {
            return Err(bad("has no column name"));
        }
        let ty = ColumnType::parse(ty).map_err(|e| usage(format!("--columns: {}", message(&e))))?;
        cols.push(Column {
            name: name.to_string(),
            ty,
            nullable,
        });
    }
    Ok(cols)
}

/// `--where` conditions, checked against the schema and ANDed.
fn parse_conditions(schema: &Schema, conditions: &[String]) -> Result<Option<Predicate>, Failure> {
    let mut all = Vec::new();
    for text in conditions {
        let bad = |m: String| usage(format!("--where {text:?}: {m}"));
        let mut p = Predicate::parse_simple(text).map_err(|e| bad(message(&e)))?;
        let col = match &p {
            Predicate::Cmp { column, .. }
            | Predicate::In { column, .. }
            | Predicate::StartsWith { column, .. }
            | Predicate::IsNull(column)
            | Predicate::IsNotNull(column) => column.clone(),
            _ => String::new(),
        };
        let c = column(schema, &col, &format!("--where {text:?}"))?;
        // Binary constants may be hex, as everywhere else in the tool.
        let constants: Vec<&mut Value> = match &mut p {
            Predicate::Cmp { value, .. } => vec![value],
            Predicate::In { values, .. } => values.iter_mut().collect(),
            Predicate::StartsWith { prefix, .. } => vec![prefix],
            _ => Vec::new(),
        };
        for value in constants {
            if c.ty == ColumnType::Binary
                && let Value::Utf8(s) = value
                && s.starts_with("0x")
            {
                *value = Value::Binary(decode_token(s).map_err(bad)?);
            }
        }
        p.bind(schema).map_err(|e| bad(message(&e)))?;
        all.push(p);
    }
    Ok(match all.len() {
        0 => None,
        1 => all.pop(),
        _ => Some(Predicate::And(all)),
    })
}

/// Runs a table command on an open database; returns the exit code.
pub(crate) fn run(
    db: &Db,
    cmd: &TableCommand,
    nulls: &Nulls,
    sync: bool,
    out: &mut impl Write,
) -> Result<i32, Failure> {
    match cmd {
        TableCommand::Create {
            name,
            columns,
            key,
            layout,
            levels,
            auto,
            dictionary_ratio,
        } => {
            let options = CreateOptions {
                layout: layout.as_deref(),
                levels: *levels,
                auto: *auto,
                dictionary_ratio: *dictionary_ratio,
            };
            create(db, name, columns, key, &options)?;
            writeln!(out, "OK")?;
        }
        TableCommand::Import {
            name,
            file,
            header: _,
            no_header,
            batch_rows,
        } => {
            let t = open_table(db, name)?;
            let n = import::import(&t, file, !no_header, *batch_rows, nulls, sync)?;
            writeln!(out, "imported {n} row{}", if n == 1 { "" } else { "s" })?;
        }
        TableCommand::Get { name, key, columns } => {
            let t = open_table(db, name)?;
            let schema = t.schema();
            let key = parse_key(schema, key, false, "KEY")?;
            let cols = projection(schema, columns.as_deref())?;
            let names: Vec<String> = match cols {
                Some(c) => c,
                None => schema.columns().iter().map(|c| c.name.clone()).collect(),
            };
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            match t.get(&key, Some(&refs))? {
                Some(row) => {
                    let fields: Vec<(String, String)> = names
                        .into_iter()
                        .zip(row)
                        .map(|(n, v)| (n, nulls.show(&v)))
                        .collect();
                    write_record(out, &fields)?;
                }
                None => {
                    writeln!(out, "(not found)")?;
                    return Ok(EXIT_FAILURE);
                }
            }
        }
        TableCommand::Scan {
            name,
            columns,
            conditions,
            from,
            to,
            limit,
            format,
        } => {
            let t = open_table(db, name)?;
            let schema = t.schema();
            let mut opts = ScanOptions {
                columns: projection(schema, columns.as_deref())?,
                predicate: parse_conditions(schema, conditions)?,
                ..ScanOptions::default()
            };
            if let Some(f) = from {
                opts.lower = Bound::Included(parse_key(schema, f, true, "--from")?);
            }
            if let Some(to) = to {
                opts.upper = Bound::Excluded(parse_key(schema, to, true, "--to")?);
            }
            if let Some(l) = limit {
                opts.batch_rows = (*l).clamp(1, opts.batch_rows);
            }
            scan(&t, opts, limit.unwrap_or(usize::MAX), *format, nulls, out)?;
        }
        TableCommand::Update { name, key, set } => {
            let t = open_table(db, name)?;
            let schema = t.schema();
            let key = parse_key(schema, key, false, "KEY")?;
            let mut changes: Vec<(&str, Value)> = Vec::new();
            for s in set {
                let bad = |m: String| usage(format!("--set {s:?}: {m}"));
                let Some((col, text)) = s.split_once('=') else {
                    return Err(bad("write COLUMN=VALUE".into()));
                };
                let c = column(schema, col.trim(), &format!("--set {s:?}"))?;
                if schema.key_indices().contains(&schema.index_of(&c.name)?) {
                    return Err(bad(format!(
                        "{:?} is a key column; delete the row and write it under the new key",
                        c.name
                    )));
                }
                if changes.iter().any(|(n, _)| *n == c.name) {
                    return Err(bad(format!("column {:?} is set twice", c.name)));
                }
                changes.push((c.name.as_str(), parse_cell(text, c, nulls).map_err(bad)?));
            }
            // The library treats an update of a missing row as no row;
            // the tool says so instead of writing it.
            let first_key = &schema.columns()[schema.key_indices()[0]].name;
            if t.get(&key, Some(&[first_key.as_str()]))?.is_none() {
                writeln!(out, "(not found)")?;
                return Ok(EXIT_FAILURE);
            }
            t.update_row(&key, &changes)?;
            writeln!(out, "OK")?;
        }
        TableCommand::Delete { name, key } => {
            let t = open_table(db, name)?;
            let key = parse_key(t.schema(), key, false, "KEY")?;
            t.delete_row(&key)?;
            writeln!(out, "OK")?;
        }
        TableCommand::Describe { name } => {
            let t = open_table(db, name)?;
            write!(out, "{}", t.describe()?)?;
        }
        TableCommand::List => {
            let mut names = db.table_names();
            names.sort();
            for n in names {
                writeln!(out, "{n}")?;
            }
        }
        TableCommand::Advise { name } => {
            let t = open_table(db, name)?;
            advise(&t, out)?;
        }
        TableCommand::SetLayout { name, layout } => {
            let t = open_table(db, name)?;
            let schema = t.schema();
            let l = TableLayout::parse(layout, schema, t.layout().num_levels())
                .map_err(|e| usage(format!("LAYOUT {layout:?}: {}", message(&e))))?;
            t.set_layout(l)?;
            writeln!(out, "OK")?;
        }
        TableCommand::Drop { name } => {
            open_table(db, name)?;
            db.drop_table(name)?;
            writeln!(out, "OK")?;
        }
    }
    Ok(0)
}

/// The options of `table create` beyond the schema.
#[derive(Default)]
pub struct CreateOptions<'a> {
    /// `--layout`.
    pub layout: Option<&'a str>,
    /// `--levels`.
    pub levels: Option<usize>,
    /// `--auto`.
    pub auto: Option<f64>,
    /// `--dictionary-ratio`.
    pub dictionary_ratio: Option<f64>,
}

fn create(
    db: &Db,
    name: &str,
    columns: &str,
    key: &str,
    o: &CreateOptions<'_>,
) -> Result<Table, Failure> {
    let cols = parse_columns(columns)?;
    let key: Vec<&str> = key.split(',').map(str::trim).collect();
    let schema = Schema::new(cols, &key).map_err(|e| usage(message(&e)))?;
    let mut opts = TableOptions::default();
    if let Some(l) = o.layout {
        opts.layout = l.to_string();
    }
    if let Some(n) = o.levels {
        opts.num_levels = n;
    }
    if let Some(r) = o.dictionary_ratio {
        opts.max_distinct_ratio = r;
    }
    opts.auto_layout_threshold = o.auto;
    opts.validate().map_err(|e| {
        let m = message(&e)
            .replace("auto_layout_threshold", "--auto")
            .replace("max_distinct_ratio", "--dictionary-ratio")
            .replace("num_levels", "--levels");
        usage(format!("invalid option value: {m}"))
    })?;
    TableLayout::parse(&opts.layout, &schema, opts.num_levels)
        .map_err(|e| usage(format!("--layout {:?}: {}", opts.layout, message(&e))))?;
    match db.create_table(name, schema, opts) {
        Ok(t) => Ok(t),
        Err(Error::InvalidArgument(m)) => Err(usage(m)),
        Err(e) => Err(Failure::Db(e)),
    }
}

/// Prints the rows of a scan, at most `limit`.
fn scan(
    t: &Table,
    opts: ScanOptions,
    limit: usize,
    format: Format,
    nulls: &Nulls,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let schema = t.schema();
    let indices: Vec<usize> = match &opts.columns {
        Some(names) => names
            .iter()
            .map(|n| schema.index_of(n))
            .collect::<Result<_, _>>()?,
        None => (0..schema.columns().len()).collect(),
    };
    let cols: Vec<&Column> = indices.iter().map(|&i| &schema.columns()[i]).collect();
    let headers: Vec<String> = cols.iter().map(|c| c.name.clone()).collect();
    match format {
        Format::Csv => {
            let mut w = csv::Writer::from_writer(out);
            w.write_record(&headers).map_err(io::Error::from)?;
            for_each_row(t, opts, &cols, limit, |row| {
                let fields = row.iter().map(|v| nulls.show_csv(v));
                w.write_record(fields).map_err(io::Error::from)
            })?;
            w.flush()?;
        }
        Format::Table => {
            let align = cols.iter().map(|c| align_of(c.ty)).collect();
            let mut text = TextTable::new(headers, align);
            for_each_row(t, opts, &cols, limit, |row| {
                text.push(row.iter().map(|v| nulls.show(v)).collect());
                Ok(())
            })?;
            text.write(out)?;
        }
    }
    Ok(())
}

/// Runs a scan of the columns `cols` and hands each row (at most `limit`)
/// to `f`.
fn for_each_row(
    t: &Table,
    opts: ScanOptions,
    cols: &[&Column],
    limit: usize,
    mut f: impl FnMut(&[Value]) -> io::Result<()>,
) -> Result<(), Failure> {
    let mut left = limit;
    if left == 0 {
        return Ok(());
    }
    let mut row = Vec::with_capacity(cols.len());
    for batch in t.scan(opts)? {
        let batch = batch?;
        let n = batch.num_rows().min(left);
        let mut values: Vec<std::vec::IntoIter<Value>> = batch
            .columns()
            .iter()
            .zip(cols)
            .map(|(a, c)| array_to_values(a.as_ref(), c.ty).map(Vec::into_iter))
            .collect::<Result<_, _>>()?;
        for _ in 0..n {
            row.clear();
            row.extend(values.iter_mut().map(|v| v.next().unwrap_or(Value::Null)));
            f(&row)?;
        }
        left -= n;
        if left == 0 {
            break;
        }
    }
    Ok(())
}

fn advise(t: &Table, out: &mut impl Write) -> Result<(), Failure> {
    let a = t.advise()?;
    let schema = t.schema();
    let cost = |c: &strata::table::cost::CostBreakdown| {
        format!(
            "{:.1} (insert {:.1}, point {:.1}, scan {:.1}, update {:.1})",
            c.total, c.insert, c.point, c.scan, c.update
        )
    };
    writeln!(
        out,
        "current layout, predicted cost {}:",
        cost(&a.current_cost)
    )?;
    for line in a.current.describe(schema).lines() {
        writeln!(out, "  {line}")?;
    }
    writeln!(
        out,
        "proposed layout, predicted cost {}:",
        cost(&a.proposed_cost)
    )?;
    for line in a.proposed.describe(schema).lines() {
        writeln!(out, "  {line}")?;
    }
    writeln!(out, "predicted gain: {:.1}%", a.gain() * 100.0)?;
    if a.current_cost.total <= 0.0 {
        writeln!(
            out,
            "note: no workload recorded yet: the advisor costs the reads, scans and updates \
             the table has served (saved when the database closes), and there were none"
        )?;
    } else if a.proposed != a.current {
        writeln!(
            out,
            "apply it with: strata table set-layout {} '{}'",
            t.name(),
            a.proposed.to_text(schema)
        )?;
    }
    Ok(())
}
