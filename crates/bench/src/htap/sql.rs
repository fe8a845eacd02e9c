//! Strata through SQL: the HTAP mix as SQL statements to
//! `strata_sql::SqlEngine` (DataFusion over the same kind of table), to
//! show what the SQL layer costs next to Strata's direct API. The load
//! uses the direct API (as SQLite's and DuckDB's loads use their bulk
//! paths); every measured query is SQL text, parsed, planned and run.

use std::ops::Range;
use std::path::Path;

use strata::arrow_array::{Array, Int32Array, Int64Array};
use strata::table::TableOptions;
use strata_sql::SqlEngine;
use strata_sql::datafusion::arrow::array::RecordBatch;

use super::engines::{HtapEngine, StrataEngine};
use crate::{Error, Result};

/// The table, written and read through SQL.
pub struct SqlStrataEngine {
    direct: StrataEngine,
    sql: SqlEngine,
    rt: tokio::runtime::Runtime,
    names: Vec<String>,
}

fn col(i: usize) -> String {
    format!("a{}", i + 1)
}

impl SqlStrataEngine {
    /// Creates the table in a new database at `dir`.
    pub fn create(
        dir: &Path,
        columns: usize,
        opts: TableOptions,
        cache_bytes: u64,
    ) -> Result<SqlStrataEngine> {
        let direct = StrataEngine::create(dir, columns, opts, cache_bytes)?;
        let sql = SqlEngine::new(direct.db().clone()).map_err(|e| Error(format!("sql: {e}")))?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| Error(format!("runtime: {e}")))?;
        Ok(SqlStrataEngine {
            direct,
            sql,
            rt,
            names: (0..columns).map(col).collect(),
        })
    }

    /// `SELECT f(c), ... FROM htap` over keys in `[lo, hi)`: one value per
    /// column of `cols` (`None` for an empty range).
    fn aggregate(&self, f: &str, lo: i64, hi: i64, cols: Range<usize>) -> Result<Vec<Option<i64>>> {
        let exprs: Vec<String> = self.names[cols.clone()]
            .iter()
            .map(|c| format!("{f}({c})"))
            .collect();
        let q = format!(
            "SELECT {} FROM htap WHERE k >= {lo} AND k < {hi}",
            exprs.join(", ")
        );
        let batches = self.run(&q)?;
        let row = batches.iter().find(|b| b.num_rows() > 0);
        Ok((0..cols.len())
            .map(|i| row.and_then(|b| ints(b, i)))
            .collect())
    }

    fn run(&self, q: &str) -> Result<Vec<RecordBatch>> {
        self.rt
            .block_on(self.sql.query(q))
            .map_err(|e| Error(format!("sql: {q}: {e}")))
    }
}

fn ints(b: &RecordBatch, i: usize) -> Option<i64> {
    let c = b.column(i);
    if c.is_null(0) {
        return None;
    }
    if let Some(a) = c.as_any().downcast_ref::<Int64Array>() {
        return Some(a.value(0));
    }
    c.as_any()
        .downcast_ref::<Int32Array>()
        .map(|a| i64::from(a.value(0)))
}

impl HtapEngine for SqlStrataEngine {
    fn load(&self, seed: u64, rows: Range<usize>) -> Result<()> {
        self.direct.load(seed, rows)
    }

    fn settle(&self) -> Result<()> {
        self.direct.settle()
    }

    fn insert(&self, key: i64, values: &[i32]) -> Result<()> {
        let vals: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        self.run(&format!(
            "INSERT OR REPLACE INTO htap VALUES ({key}, {})",
            vals.join(", ")
        ))?;
        Ok(())
    }

    fn point(&self, key: i64, cols: Range<usize>) -> Result<u64> {
        let q = format!(
            "SELECT {} FROM htap WHERE k = {key}",
            self.names[cols].join(", ")
        );
        let batches = self.run(&q)?;
        let Some(b) = batches.iter().find(|b| b.num_rows() > 0) else {
            return Ok(0);
        };
        // The direct engine's checksum: 1 plus every value.
        Ok((0..b.num_columns())
            .filter_map(|i| ints(b, i))
            .fold(1u64, |a, v| a.wrapping_add(v as u64)))
    }

    fn update(&self, key: i64, col: usize, value: i32) -> Result<()> {
        self.run(&format!(
            "UPDATE htap SET {} = {value} WHERE k = {key}",
            self.names[col]
        ))?;
        Ok(())
    }

    fn sum(&self, lo: i64, hi: i64, cols: Range<usize>) -> Result<i64> {
        Ok(self
            .aggregate("sum", lo, hi, cols)?
            .into_iter()
            .flatten()
            .sum())
    }

    fn max(&self, lo: i64, hi: i64, cols: Range<usize>) -> Result<Vec<i32>> {
        Ok(self
            .aggregate("max", lo, hi, cols)?
            .into_iter()
            .map(|v| v.map_or(i32::MIN, |m| m as i32))
            .collect())
    }

    fn describe(&self) -> String {
        format!("{} (through SQL)", self.direct.describe())
    }

    fn disk_bytes(&self) -> u64 {
        self.direct.disk_bytes()
    }
}
