//! `strata join LEFT.col RIGHT.col`: an inner equi-join of two tables,
//! printed as a table, counted, or explained.

use std::io::Write;

use clap::Args;
use strata::Db;
use strata::join::{Join, JoinMethod};
use strata::table::array_to_values;

use crate::app::Failure;
use crate::cells::message;
use crate::tabular::{Align, TextTable};

/// The `join` command's arguments.
#[derive(Debug, Args)]
pub struct JoinArgs {
    /// The left side as TABLE.COLUMN.
    pub left: String,
    /// The right side as TABLE.COLUMN.
    pub right: String,
    /// auto (the planner's choice, the default), inlj-pk, inlj-pk-left,
    /// inlj-index, inlj-index-left, sort-merge, sort-merge-index,
    /// grace-hash or hybrid-hash.
    #[arg(long, value_name = "METHOD", default_value = "auto")]
    pub method: String,
    /// Print every candidate method with its predicted cost, and the
    /// choice, instead of running the join.
    #[arg(long)]
    pub explain: bool,
    /// The join's memory budget (default 16MiB; sort runs and hash
    /// partitions beyond it go to spill files in the database directory).
    #[arg(long, value_name = "BYTES", default_value = "16MiB", value_parser = crate::app::parse_size_arg)]
    pub memory: u64,
    /// Output columns, comma-separated, as left.c, right.c, TABLE.c or a
    /// name in one table only (default: every column of both).
    #[arg(long, value_name = "COLS")]
    pub columns: Option<String>,
    /// Print only the row count, an order-independent checksum, the
    /// method, peak memory and bytes spilled.
    #[arg(long)]
    pub count: bool,
    /// Print at most N rows (default 100).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub limit: usize,
    #[command(flatten)]
    pub cells: crate::cells::CellArgs,
    /// Threads the join may use: nested loop lookups, scans in parts, hash
    /// partitions joined at once.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub threads: usize,
}

fn usage(m: impl Into<String>) -> Failure {
    Failure::Usage(m.into())
}

fn split(side: &str) -> Result<(&str, &str), Failure> {
    side.rsplit_once('.')
        .filter(|(t, c)| !t.is_empty() && !c.is_empty())
        .ok_or_else(|| usage(format!("{side:?}: write a join side as TABLE.COLUMN")))
}

pub(crate) fn run(db: &Db, a: &JoinArgs, out: &mut impl Write) -> Result<i32, Failure> {
    let (lt, lc) = split(&a.left)?;
    let (rt, rc) = split(&a.right)?;
    let method = JoinMethod::parse(&a.method).map_err(|e| usage(message(&e)))?;
    let (l, r) = (db.table(lt)?, db.table(rt)?);
    let mut join = Join::new(&l, lc, &r, rc)
        .method(method)
        .memory(usize::try_from(a.memory).unwrap_or(usize::MAX))
        .threads(a.threads);
    if let Some(cols) = &a.columns {
        let names: Vec<&str> = cols.split(',').map(str::trim).collect();
        join = join.columns(&names);
    }
    let refused = |e: strata::Error| match e {
        strata::Error::InvalidArgument(m) => usage(m),
        e @ strata::Error::MemoryBudget { .. } => usage(e.to_string()),
        e => Failure::Db(e),
    };
    if a.explain {
        let plan = join.explain().map_err(refused)?;
        writeln!(out, "{plan}")?;
        return Ok(0);
    }
    if a.count {
        let s = join.count().map_err(refused)?;
        writeln!(out, "rows\t{}", s.rows)?;
        writeln!(out, "checksum\t{:016x}", s.checksum)?;
        writeln!(out, "method\t{}", s.method.name())?;
        for (side, index) in [("left", &s.indexes.0), ("right", &s.indexes.1)] {
            if let Some(i) = index {
                writeln!(out, "{side}_index\t{i}")?;
            }
        }
        writeln!(out, "peak_memory_bytes\t{}", s.peak_memory_bytes)?;
        writeln!(out, "spilled_bytes\t{}", s.spilled_bytes)?;
        return Ok(0);
    }
    let stream = join.run().map_err(refused)?;
    let schema = stream.schema();
    let headers: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let nulls = a.cells.nulls();
    let types: Vec<_> = schema
        .fields()
        .iter()
        .map(|f| strata::table::ColumnType::from_arrow(f.data_type()))
        .collect();
    let align = types
        .iter()
        .map(|t| t.map_or(Align::Left, crate::cells::align_of))
        .collect();
    let mut text = TextTable::new(headers, align);
    let mut left = a.limit;
    for batch in stream {
        if left == 0 {
            break;
        }
        let batch = batch.map_err(refused)?;
        let n = batch.num_rows().min(left);
        let cols = batch
            .columns()
            .iter()
            .zip(&types)
            .map(|(c, t)| {
                let t = t.ok_or_else(|| Failure::Other("a join column of unknown type".into()))?;
                Ok(array_to_values(c.as_ref(), t)?)
            })
            .collect::<Result<Vec<_>, Failure>>()?;
        for i in 0..n {
            text.push(cols.iter().map(|c| nulls.show(&c[i])).collect());
        }
        left -= n;
    }
    text.write(out)?;
    Ok(0)
}
