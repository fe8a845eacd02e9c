//! Strata through SQL: the HTAP mix as SQL statements to
//! `strata_sql::SqlEngine` (DataFusion over the same kind of table), to
//! show what the SQL layer costs next to Strata's direct API. The load
//! uses the direct API (as SQLite's and DuckDB's loads use their bulk
//! paths). Every measured query is SQL: either prepared once per shape and
//! run with parameters (as the SQLite peer's `prepare_cached` statements
//! are), or sent as text with literals, parsed and planned each time.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use strata_sql::Prepared;
use strata_sql::datafusion::common::ScalarValue;

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
    /// Prepared statements by text; `None`: statements are sent as text.
    prepared: Option<Mutex<HashMap<String, Arc<Prepared>>>>,
}

fn col(i: usize) -> String {
    format!("a{}", i + 1)
}

impl SqlStrataEngine {
    /// Creates the table in a new database at `dir`; `prepared` runs
    /// statements prepared once with parameters, else as text.
    pub fn create(
        dir: &Path,
        columns: usize,
        opts: TableOptions,
        cache_bytes: u64,
        prepared: bool,
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
            prepared: prepared.then(|| Mutex::new(HashMap::new())),
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
            "SELECT {} FROM htap WHERE k >= $1 AND k < $2",
            exprs.join(", ")
        );
        let batches = self.run(&q, &[lo.into(), hi.into()])?;
        let row = batches.iter().find(|b| b.num_rows() > 0);
        Ok((0..cols.len())
            .map(|i| row.and_then(|b| ints(b, i)))
            .collect())
    }

    /// Runs `q`, whose parameters are `$1`, `$2`, ...: prepared (once per
    /// text) and run with `params`, or with the parameters written into
    /// the text as literals.
    fn run(&self, q: &str, params: &[ScalarValue]) -> Result<Vec<RecordBatch>> {
        let err = |e| Error(format!("sql: {q}: {e}"));
        let Some(cache) = &self.prepared else {
            let mut text = q.to_string();
            // Highest first, so that $1 does not match the start of $10.
            for (i, p) in params.iter().enumerate().rev() {
                text = text.replace(&format!("${}", i + 1), &p.to_string());
            }
            return self.rt.block_on(self.sql.query(&text)).map_err(err);
        };
        let cached = cache.lock().get(q).cloned();
        let p = match cached {
            Some(p) => p,
            None => {
                let p = Arc::new(self.rt.block_on(self.sql.prepare(q)).map_err(err)?);
                cache.lock().insert(q.to_string(), Arc::clone(&p));
                p
            }
        };
        let out = self
            .rt
            .block_on(self.sql.run_prepared(&p, params))
            .map_err(err)?;
        Ok(out.batches)
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
        let marks: Vec<String> = (2..=values.len() + 1).map(|i| format!("${i}")).collect();
        let params: Vec<ScalarValue> = std::iter::once(key.into())
            .chain(values.iter().map(|&v| v.into()))
            .collect();
        self.run(
            &format!(
                "INSERT OR REPLACE INTO htap VALUES ($1, {})",
                marks.join(", ")
            ),
            &params,
        )?;
        Ok(())
    }

    fn point(&self, key: i64, cols: Range<usize>) -> Result<u64> {
        let q = format!(
            "SELECT {} FROM htap WHERE k = $1",
            self.names[cols].join(", ")
        );
        let batches = self.run(&q, &[key.into()])?;
        let Some(b) = batches.iter().find(|b| b.num_rows() > 0) else {
            return Ok(0);
        };
        // The direct engine's checksum: 1 plus every value.
        Ok((0..b.num_columns())
            .filter_map(|i| ints(b, i))
            .fold(1u64, |a, v| a.wrapping_add(v as u64)))
    }

    fn update(&self, key: i64, col: usize, value: i32) -> Result<()> {
        self.run(
            &format!("UPDATE htap SET {} = $1 WHERE k = $2", self.names[col]),
            &[value.into(), key.into()],
        )?;
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

    fn load_side(&self, rows: &[(i64, i32)]) -> Result<()> {
        self.direct.load_side(rows)
    }

    fn join(&self) -> Result<u64> {
        let batches = self.run(&super::engines::join_sql("htap"), &[])?;
        let Some(b) = batches.iter().find(|b| b.num_rows() > 0) else {
            return Ok(0);
        };
        Ok((0..3)
            .filter_map(|i| ints(b, i))
            .fold(0u64, |a, v| a.wrapping_add(v as u64)))
    }

    fn describe(&self) -> String {
        let how = if self.prepared.is_some() {
            "prepared statements"
        } else {
            "statements as text"
        };
        format!("{} (through SQL, {how})", self.direct.describe())
    }

    fn disk_bytes(&self) -> u64 {
        self.direct.disk_bytes()
    }
}
