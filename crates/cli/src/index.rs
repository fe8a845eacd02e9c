//! `strata index ...`: create, drop and describe secondary indexes, and
//! look rows up through them.

use std::io::Write;
use std::ops::Bound;

use clap::Subcommand;
use strata::Db;
use strata::index::{Consistency, IndexKind, IndexQuery, IndexSpec};
use strata::table::{Table, Value};

use crate::app::Failure;
use crate::cells::{Nulls, align_of, message, parse_cell};
use crate::tabular::{Align, TextTable};

/// The `index` subcommands.
#[derive(Debug, Subcommand)]
pub enum IndexCommand {
    /// Create index NAME on TABLE's column and build it over the rows the
    /// table holds (writes go on meanwhile); shows progress on a terminal.
    Create {
        table: String,
        name: String,
        /// The indexed column.
        #[arg(long, value_name = "COL")]
        column: String,
        /// eager (posting lists rewritten per write, the default), lazy
        /// (merge operands) or composite (value and key in the index key).
        #[arg(long, value_name = "KIND", default_value = "eager")]
        kind: String,
        /// synchronous (writes remove stale entries, the default) or
        /// validation (writes are blind; lookups check the table).
        #[arg(long, value_name = "STRATEGY", default_value = "synchronous")]
        consistency: String,
        /// Columns the index entries carry, comma-separated.
        #[arg(long, value_name = "COLS")]
        covering: Option<String>,
    },
    /// Drop index NAME of TABLE.
    Drop { table: String, name: String },
    /// Show TABLE's indexes (or NAME's) with entry counts and size.
    Describe { table: String, name: Option<String> },
    /// Print the rows of TABLE whose indexed column equals --eq, or lies in
    /// [--from, --to], found through index NAME.
    Lookup {
        table: String,
        name: String,
        #[arg(long, value_name = "VALUE", allow_hyphen_values = true)]
        eq: Option<String>,
        #[arg(long, value_name = "VALUE", allow_hyphen_values = true)]
        from: Option<String>,
        #[arg(long, value_name = "VALUE", allow_hyphen_values = true)]
        to: Option<String>,
    },
}

impl IndexCommand {
    pub(crate) fn is_read(&self) -> bool {
        matches!(
            self,
            IndexCommand::Describe { .. } | IndexCommand::Lookup { .. }
        )
    }
}

fn usage(m: impl Into<String>) -> Failure {
    Failure::Usage(m.into())
}

pub(crate) fn run(
    db: &Db,
    cmd: &IndexCommand,
    nulls: &Nulls,
    out: &mut impl Write,
) -> Result<i32, Failure> {
    match cmd {
        IndexCommand::Create {
            table,
            name,
            column,
            kind,
            consistency,
            covering,
        } => {
            let t = db.table(table)?;
            let kind = IndexKind::parse(kind).map_err(|e| usage(message(&e)))?;
            let consistency = Consistency::parse(consistency).map_err(|e| usage(message(&e)))?;
            let covering: Vec<String> = covering
                .as_deref()
                .map(|c| c.split(',').map(|s| s.trim().to_string()).collect())
                .unwrap_or_default();
            let spec = IndexSpec {
                name: name.clone(),
                column: column.clone(),
                kind,
                consistency,
                covering,
            };
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} building {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            let result = t.create_index_with_progress(spec, &mut |n| {
                bar.set_message(format!("{name}: {n} rows indexed"));
                bar.tick();
            });
            bar.finish_and_clear();
            let d = result.map_err(|e| match e {
                strata::Error::InvalidArgument(m) => usage(m),
                e => Failure::Db(e),
            })?;
            writeln!(out, "OK: {} values, {} entries", d.values, d.entries)?;
        }
        IndexCommand::Drop { table, name } => {
            db.table(table)?.drop_index(name)?;
            writeln!(out, "OK")?;
        }
        IndexCommand::Describe { table, name } => {
            describe(&db.table(table)?, name.as_deref(), out)?
        }
        IndexCommand::Lookup {
            table,
            name,
            eq,
            from,
            to,
        } => lookup(&db.table(table)?, name, eq, from, to, nulls, out)?,
    }
    Ok(0)
}

fn describe(t: &Table, name: Option<&str>, out: &mut impl Write) -> Result<(), Failure> {
    let mut text = TextTable::new(
        [
            "index",
            "column",
            "kind",
            "consistency",
            "covering",
            "state",
            "values",
            "entries",
            "bytes",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        vec![
            Align::Left,
            Align::Left,
            Align::Left,
            Align::Left,
            Align::Left,
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
        ],
    );
    let specs = t.indexes();
    if let Some(n) = name
        && !specs.iter().any(|s| s.name == n)
    {
        return Err(usage(format!(
            "table {:?} has no index named {n:?}",
            t.name()
        )));
    }
    for s in specs.iter().filter(|s| name.is_none_or(|n| n == s.name)) {
        let d = t.describe_index(&s.name)?;
        text.push(vec![
            s.name.clone(),
            s.column.clone(),
            s.kind.to_string(),
            s.consistency.to_string(),
            s.covering.join(","),
            if d.building { "building" } else { "ready" }.to_string(),
            d.values.to_string(),
            d.entries.to_string(),
            d.bytes.to_string(),
        ]);
    }
    text.write(out)?;
    Ok(())
}

fn lookup(
    t: &Table,
    name: &str,
    eq: &Option<String>,
    from: &Option<String>,
    to: &Option<String>,
    nulls: &Nulls,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let spec = t
        .indexes()
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| usage(format!("table {:?} has no index named {name:?}", t.name())))?;
    let schema = t.schema();
    let col = &schema.columns()[schema.index_of(&spec.column)?];
    let parse = |s: &str| -> Result<Value, Failure> {
        parse_cell(s, col, nulls).map_err(|e| usage(format!("{}: {e}", spec.column)))
    };
    let query = match (eq, from, to) {
        (Some(v), None, None) => IndexQuery::eq(parse(v)?),
        (None, f, t) if f.is_some() || t.is_some() => IndexQuery::range(
            f.as_deref()
                .map(parse)
                .transpose()?
                .map_or(Bound::Unbounded, Bound::Included),
            t.as_deref()
                .map(parse)
                .transpose()?
                .map_or(Bound::Unbounded, Bound::Included),
        ),
        _ => return Err(usage("give --eq VALUE, or --from and/or --to")),
    };
    let rows = t.lookup_rows(name, &query, None)?;
    let headers = schema.columns().iter().map(|c| c.name.clone()).collect();
    let align = schema.columns().iter().map(|c| align_of(c.ty)).collect();
    let mut text = TextTable::new(headers, align);
    for r in rows {
        text.push(r.iter().map(|v| nulls.show(v)).collect());
    }
    text.write(out)?;
    Ok(())
}
