//! The engines of the HTAP suite: Strata tables (one per design) and
//! SQLite (feature `sqlite`, the `rusqlite` crate with its bundled
//! SQLite). DuckDB runs from a Python script (`duckdb.rs`).

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use strata::arrow_array::{Array, ArrayRef, Int32Array, Int64Array, RecordBatch};
use strata::table::{Column, ColumnType, ScanOptions, Schema, Table, TableOptions, Value};
use strata::{Db, Options};

use super::workload::row;
use crate::engine::dir_usage;
use crate::{Error, Result};

/// What the suite asks of an engine. Shared by the writer and the reader
/// thread.
pub trait HtapEngine: Send + Sync {
    /// Loads rows `rows` of the seed's row stream.
    fn load(&self, seed: u64, rows: Range<usize>) -> Result<()>;
    /// Waits for background work (compaction) after the load.
    fn settle(&self) -> Result<()>;
    /// Q1: inserts one row.
    fn insert(&self, key: i64, values: &[i32]) -> Result<()>;
    /// Q2: reads columns `cols` of `key`; a checksum of what it read.
    fn point(&self, key: i64, cols: Range<usize>) -> Result<u64>;
    /// Q3: sets column `col` of `key`.
    fn update(&self, key: i64, col: usize, value: i32) -> Result<()>;
    /// Q4: the sum of columns `cols` over keys in `[lo, hi)`.
    fn sum(&self, lo: i64, hi: i64, cols: Range<usize>) -> Result<i64>;
    /// Q5: the maximum of each column of `cols` over keys in `[lo, hi)`.
    fn max(&self, lo: i64, hi: i64, cols: Range<usize>) -> Result<Vec<i32>>;
    /// J's setup: creates the side table of `rows` (key, weight), after
    /// the load.
    fn load_side(&self, rows: &[(i64, i32)]) -> Result<()>;
    /// J: the table joined with the side table on the key; the count of
    /// matches plus the sums of `a1` and of the weight over them.
    fn join(&self) -> Result<u64>;
    /// A description of how the data is stored now (the layout).
    fn describe(&self) -> String;
    /// Bytes on disk: the lengths of the files under its directory.
    fn disk_bytes(&self) -> u64;
}

fn col_name(i: usize) -> String {
    format!("a{}", i + 1)
}

fn serr(e: strata::Error) -> Error {
    Error(format!("strata: {e}"))
}

/// The table's schema: `k` i64 and `a1..aN` i32, none nullable.
pub fn schema(columns: usize) -> Schema {
    let mut cols = vec![Column::new("k", ColumnType::Int64)];
    cols.extend((0..columns).map(|i| Column::new(col_name(i), ColumnType::Int32)));
    // A fixed, valid schema.
    Schema::new(cols, &["k"]).unwrap_or_else(|e| panic!("htap schema: {e}"))
}

/// The SQL of J, over the table named `table`.
pub fn join_sql(table: &str) -> String {
    format!("SELECT count(*), sum(h.a1), sum(s.w) FROM {table} h JOIN side s ON h.k = s.k")
}

/// The side table's schema: `k` i64 and `w` i32.
fn side_schema() -> Schema {
    let cols = vec![
        Column::new("k", ColumnType::Int64),
        Column::new("w", ColumnType::Int32),
    ];
    // A fixed, valid schema.
    Schema::new(cols, &["k"]).unwrap_or_else(|e| panic!("side schema: {e}"))
}

/// The tree every Strata design uses: size ratio 2, 8 levels (the paper's
/// T = 2 and L = 8), memtables of `write_buffer` bytes.
pub fn table_options(layout: &str, write_buffer: usize, auto: Option<f64>) -> TableOptions {
    TableOptions {
        layout: layout.into(),
        num_levels: 8,
        size_ratio: 2,
        level1_max_bytes: 2 * write_buffer as u64,
        write_buffer_size: write_buffer,
        target_file_size: (write_buffer as u64).max(1 << 20),
        auto_layout_threshold: auto,
        auto_layout_interval_ms: 1000,
        ..Default::default()
    }
}

/// Strata: one table per design.
pub struct StrataEngine {
    db: Db,
    table: Table,
    names: Vec<String>,
    columns: usize,
    dir: std::path::PathBuf,
    /// Threads each Q4/Q5 scan reads on.
    scan_threads: usize,
}

impl StrataEngine {
    /// Creates the table in a new database at `dir`.
    pub fn create(
        dir: &Path,
        columns: usize,
        opts: TableOptions,
        cache_bytes: u64,
    ) -> Result<StrataEngine> {
        let db = Db::open(
            dir,
            Options {
                block_cache_bytes: cache_bytes,
                error_if_exists: true,
                ..Default::default()
            },
        )
        .map_err(serr)?;
        let table = db
            .create_table("htap", schema(columns), opts)
            .map_err(serr)?;
        Ok(StrataEngine {
            db,
            table,
            names: (0..columns).map(col_name).collect(),
            columns,
            dir: dir.to_path_buf(),
            scan_threads: 1,
        })
    }

    /// Reads Q4's and Q5's ranges on `n` threads.
    pub fn with_scan_threads(mut self, n: usize) -> StrataEngine {
        self.scan_threads = n.max(1);
        self
    }

    /// The database.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// The table (for the advisor).
    pub fn table(&self) -> &Table {
        &self.table
    }

    fn names(&self, cols: &Range<usize>) -> Vec<&str> {
        self.names[cols.clone()]
            .iter()
            .map(String::as_str)
            .collect()
    }

    fn scan_range(
        &self,
        lo: i64,
        hi: i64,
        cols: &Range<usize>,
    ) -> Result<strata::table::TableScan> {
        self.table
            .scan(
                ScanOptions::default()
                    .columns(&self.names(cols))
                    .range(vec![Value::Int64(lo)], vec![Value::Int64(hi)])
                    .threads(self.scan_threads),
            )
            .map_err(serr)
    }
}

fn int32s(b: &RecordBatch, i: usize) -> Result<&Int32Array> {
    b.column(i)
        .as_any()
        .downcast_ref::<Int32Array>()
        .ok_or_else(|| Error("scan returned a non-i32 column".into()))
}

impl HtapEngine for StrataEngine {
    fn load(&self, seed: u64, rows: Range<usize>) -> Result<()> {
        let arrow = self.table.schema().arrow_schema();
        let mut values = Vec::with_capacity(self.columns);
        let mut start = rows.start;
        while start < rows.end {
            let end = (start + 4096).min(rows.end);
            let mut keys = Vec::with_capacity(end - start);
            let mut cols: Vec<Vec<i32>> = vec![Vec::with_capacity(end - start); self.columns];
            for i in start..end {
                keys.push(row(seed, i, self.columns, &mut values));
                for (c, v) in cols.iter_mut().zip(&values) {
                    c.push(*v);
                }
            }
            let mut arrays: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(keys))];
            arrays.extend(
                cols.into_iter()
                    .map(|c| Arc::new(Int32Array::from(c)) as ArrayRef),
            );
            let batch = RecordBatch::try_new(Arc::clone(&arrow), arrays)
                .map_err(|e| Error(format!("building a batch: {e}")))?;
            self.table.upsert(&batch).map_err(serr)?;
            start = end;
        }
        Ok(())
    }

    fn settle(&self) -> Result<()> {
        self.db.wait_for_background_work().map_err(serr)
    }

    fn insert(&self, key: i64, values: &[i32]) -> Result<()> {
        let mut row = Vec::with_capacity(values.len() + 1);
        row.push(Value::Int64(key));
        row.extend(values.iter().map(|&v| Value::Int32(v)));
        self.table.upsert_row(&row).map_err(serr)
    }

    fn point(&self, key: i64, cols: Range<usize>) -> Result<u64> {
        let got = self
            .table
            .get(&[Value::Int64(key)], Some(&self.names(&cols)))
            .map_err(serr)?;
        Ok(got.map_or(0, |vals| {
            vals.iter()
                .map(|v| match v {
                    Value::Int32(x) => *x as u64,
                    _ => 0,
                })
                .fold(1, u64::wrapping_add)
        }))
    }

    fn update(&self, key: i64, col: usize, value: i32) -> Result<()> {
        self.table
            .update_row(
                &[Value::Int64(key)],
                &[(&self.names[col], Value::Int32(value))],
            )
            .map_err(serr)
    }

    fn sum(&self, lo: i64, hi: i64, cols: Range<usize>) -> Result<i64> {
        let mut total = 0i64;
        for b in self.scan_range(lo, hi, &cols)? {
            let b = b.map_err(serr)?;
            for i in 0..b.num_columns() {
                let a = int32s(&b, i)?;
                total += a.values().iter().map(|&v| i64::from(v)).sum::<i64>();
            }
        }
        Ok(total)
    }

    fn max(&self, lo: i64, hi: i64, cols: Range<usize>) -> Result<Vec<i32>> {
        let mut best = vec![i32::MIN; cols.len()];
        for b in self.scan_range(lo, hi, &cols)? {
            let b = b.map_err(serr)?;
            for (i, m) in best.iter_mut().enumerate() {
                let a = int32s(&b, i)?;
                if let Some(x) = a.values().iter().max() {
                    *m = (*m).max(*x);
                }
            }
        }
        Ok(best)
    }

    fn load_side(&self, rows: &[(i64, i32)]) -> Result<()> {
        let side = self
            .db
            .create_table("side", side_schema(), TableOptions::default())
            .map_err(serr)?;
        let keys: ArrayRef = Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0)));
        let weights: ArrayRef = Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.1)));
        let batch = RecordBatch::try_new(side.schema().arrow_schema(), vec![keys, weights])
            .map_err(|e| Error(format!("side batch: {e}")))?;
        side.insert(&batch).map_err(serr)?;
        side.flush().map_err(serr)
    }

    fn join(&self) -> Result<u64> {
        // Strata's join operator; its planner picks the method.
        let side = self.db.table("side").map_err(serr)?;
        let join =
            strata::join::Join::new(&self.table, "k", &side, "k").columns(&["htap.a1", "side.w"]);
        let mut sum = 0u64;
        for b in join.run().map_err(serr)? {
            let b = b.map_err(serr)?;
            sum = sum.wrapping_add(b.num_rows() as u64);
            for i in 0..2 {
                let a = int32s(&b, i)?;
                sum = a
                    .values()
                    .iter()
                    .fold(sum, |s, &v| s.wrapping_add(v as u64));
            }
        }
        Ok(sum)
    }

    fn describe(&self) -> String {
        self.table.layout().summary(self.table.schema())
    }

    fn disk_bytes(&self) -> u64 {
        dir_usage(&self.dir).apparent
    }
}

#[cfg(feature = "sqlite")]
pub use sqlite::SqliteEngine;

#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;
    use parking_lot::Mutex;
    use rusqlite::{Connection, params_from_iter};

    /// SQLite in WAL mode without fsync per commit (as Strata's writes are
    /// not synced), a 64 MiB page cache, the key as the rowid; a writer
    /// and a reader connection.
    pub struct SqliteEngine {
        writer: Mutex<Connection>,
        reader: Mutex<Connection>,
        columns: usize,
        path: std::path::PathBuf,
        /// The upsert statement (the load and every Q1 run it).
        insert_sql: String,
    }

    fn qerr(e: rusqlite::Error) -> Error {
        Error(format!("sqlite: {e}"))
    }

    fn connect(path: &Path, cache_bytes: u64) -> Result<Connection> {
        let c = Connection::open(path).map_err(qerr)?;
        c.execute_batch(&format!(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; PRAGMA cache_size=-{};",
            cache_bytes / 1024
        ))
        .map_err(qerr)?;
        Ok(c)
    }

    impl SqliteEngine {
        /// Creates the table in a new database file under `dir`.
        pub fn create(dir: &Path, columns: usize, cache_bytes: u64) -> Result<SqliteEngine> {
            std::fs::create_dir_all(dir).map_err(|e| Error(format!("{}: {e}", dir.display())))?;
            let path = dir.join("htap.sqlite");
            let writer = connect(&path, cache_bytes)?;
            let cols: Vec<String> = (0..columns)
                .map(|i| format!("{} INTEGER NOT NULL", col_name(i)))
                .collect();
            writer
                .execute_batch(&format!(
                    "CREATE TABLE t (k INTEGER PRIMARY KEY, {});",
                    cols.join(", ")
                ))
                .map_err(qerr)?;
            let reader = connect(&path, cache_bytes)?;
            let names: Vec<String> = (0..columns).map(col_name).collect();
            let marks = vec!["?"; columns + 1].join(",");
            Ok(SqliteEngine {
                writer: Mutex::new(writer),
                reader: Mutex::new(reader),
                columns,
                path,
                insert_sql: format!(
                    "INSERT OR REPLACE INTO t (k, {}) VALUES ({marks})",
                    names.join(",")
                ),
            })
        }
    }

    impl HtapEngine for SqliteEngine {
        fn load(&self, seed: u64, rows: Range<usize>) -> Result<()> {
            let mut c = self.writer.lock();
            let tx = c.transaction().map_err(qerr)?;
            {
                let mut st = tx.prepare(&self.insert_sql).map_err(qerr)?;
                let mut values = Vec::with_capacity(self.columns);
                for i in rows {
                    let k = row(seed, i, self.columns, &mut values);
                    let params = std::iter::once(k).chain(values.iter().map(|&v| i64::from(v)));
                    st.execute(params_from_iter(params)).map_err(qerr)?;
                }
            }
            tx.commit().map_err(qerr)
        }

        fn settle(&self) -> Result<()> {
            self.writer
                .lock()
                .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
                .map_err(qerr)
        }

        fn insert(&self, key: i64, values: &[i32]) -> Result<()> {
            let c = self.writer.lock();
            let mut st = c.prepare_cached(&self.insert_sql).map_err(qerr)?;
            let params = std::iter::once(key).chain(values.iter().map(|&v| i64::from(v)));
            st.execute(params_from_iter(params))
                .map(|_| ())
                .map_err(qerr)
        }

        fn point(&self, key: i64, cols: Range<usize>) -> Result<u64> {
            let names: Vec<String> = cols.clone().map(col_name).collect();
            let c = self.reader.lock();
            let mut st = c
                .prepare_cached(&format!("SELECT {} FROM t WHERE k = ?", names.join(",")))
                .map_err(qerr)?;
            let mut rows = st.query([key]).map_err(qerr)?;
            let Some(r) = rows.next().map_err(qerr)? else {
                return Ok(0);
            };
            let mut sum = 1u64;
            for i in 0..cols.len() {
                sum = sum.wrapping_add(r.get::<_, i64>(i).map_err(qerr)? as u64);
            }
            Ok(sum)
        }

        fn update(&self, key: i64, col: usize, value: i32) -> Result<()> {
            let c = self.writer.lock();
            let mut st = c
                .prepare_cached(&format!("UPDATE t SET {} = ? WHERE k = ?", col_name(col)))
                .map_err(qerr)?;
            st.execute([i64::from(value), key])
                .map(|_| ())
                .map_err(qerr)
        }

        fn sum(&self, lo: i64, hi: i64, cols: Range<usize>) -> Result<i64> {
            let expr: Vec<String> = cols.map(col_name).collect();
            let c = self.reader.lock();
            let mut st = c
                .prepare_cached(&format!(
                    "SELECT COALESCE(SUM({}), 0) FROM t WHERE k >= ? AND k < ?",
                    expr.join("+")
                ))
                .map_err(qerr)?;
            st.query_row([lo, hi], |r| r.get(0)).map_err(qerr)
        }

        fn max(&self, lo: i64, hi: i64, cols: Range<usize>) -> Result<Vec<i32>> {
            let expr: Vec<String> = cols
                .clone()
                .map(|i| format!("MAX({})", col_name(i)))
                .collect();
            let c = self.reader.lock();
            let mut st = c
                .prepare_cached(&format!(
                    "SELECT {} FROM t WHERE k >= ? AND k < ?",
                    expr.join(",")
                ))
                .map_err(qerr)?;
            st.query_row([lo, hi], |r| {
                (0..cols.len())
                    .map(|i| r.get::<_, Option<i64>>(i).map(|v| v.unwrap_or(0) as i32))
                    .collect()
            })
            .map_err(qerr)
        }

        fn load_side(&self, rows: &[(i64, i32)]) -> Result<()> {
            let mut c = self.writer.lock();
            let tx = c.transaction().map_err(qerr)?;
            tx.execute_batch("CREATE TABLE side (k INTEGER PRIMARY KEY, w INTEGER NOT NULL);")
                .map_err(qerr)?;
            {
                let mut st = tx.prepare("INSERT INTO side VALUES (?, ?)").map_err(qerr)?;
                for &(k, w) in rows {
                    st.execute([k, i64::from(w)]).map_err(qerr)?;
                }
            }
            tx.commit().map_err(qerr)
        }

        fn join(&self) -> Result<u64> {
            let c = self.reader.lock();
            let mut st = c.prepare_cached(&super::join_sql("t")).map_err(qerr)?;
            st.query_row([], |r| {
                let mut sum = 0u64;
                for i in 0..3 {
                    sum = sum.wrapping_add(r.get::<_, Option<i64>>(i)?.unwrap_or(0) as u64);
                }
                Ok(sum)
            })
            .map_err(qerr)
        }

        fn describe(&self) -> String {
            "rowid table (B-tree), WAL, synchronous=OFF".into()
        }

        fn disk_bytes(&self) -> u64 {
            self.path.parent().map_or(0, |d| dir_usage(d).apparent)
        }
    }
}
