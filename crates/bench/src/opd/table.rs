//! The opd suite's table phase: dictionary-encoded string columns of
//! tables (seed 002's second user in Strata).
//!
//! One table of `--opd-table-rows` rows: key `id` (i64), `city` (the
//! dataset's string values, `--value-size` bytes, `--distinct` of them
//! distinct) and `n` (i32), loaded in random key order in batches of
//! 10,000 rows. Strata stores it in the `column` layout (every level below
//! 0 one file per column), with dictionaries (the default threshold) and
//! without (`max_distinct_ratio` 0), and compacts it fully; SQLite (feature
//! `sqlite`, a rowid table) and DuckDB (its Python package, from
//! `scripts/opd_duckdb.py`) load the same rows. Each engine then counts the
//! rows whose `city` lies in a range of 1 % of the distinct values, the
//! same ranges as the key-value filters, with no index: a scan of the
//! column with the predicate pushed down.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::{Deserialize, Serialize};
use strata::arrow_array::{ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use strata::table::{
    CmpOp, Column, ColumnType, Predicate, ScanOptions, Schema, TableOptions, Value,
};
use strata::{Db, Options};

use super::measure::Dataset;
#[cfg(feature = "sqlite")]
use crate::engine::dir_usage;
use crate::keys::permutation;
use crate::{Error, Result};

/// Rows per insert batch.
const BATCH: usize = 10_000;

/// What one engine did with the table.
#[derive(Clone, Debug, Default)]
pub struct TableResult {
    pub label: String,
    pub load_secs: f64,
    /// Seconds of the full compaction (Strata only).
    pub compact_secs: Option<f64>,
    pub disk_bytes: u64,
    /// Median seconds of one filter.
    pub filter_secs: f64,
    /// Rows each filter counted.
    pub matches: Vec<u64>,
    /// Blocks the filters skipped and read (Strata only).
    pub blocks: Option<(u64, u64)>,
}

/// The rows: row `i` of the load has key `order[i]`, a `city` drawn from
/// the dataset and `n = key % 1000`.
struct Rows {
    order: Vec<u64>,
    cities: Vec<u32>,
}

impl Rows {
    fn new(d: &Dataset, rows: u64, seed: u64) -> Rows {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x7ab1e);
        Rows {
            order: permutation(rows, seed ^ 0x7ab1e),
            cities: (0..rows).map(|_| d.draw(&mut rng) as u32).collect(),
        }
    }

    fn batch(&self, d: &Dataset, range: std::ops::Range<usize>) -> Result<RecordBatch> {
        let ids: Vec<i64> = self.order[range.clone()]
            .iter()
            .map(|&k| k as i64)
            .collect();
        let cities: Vec<&str> = self.cities[range]
            .iter()
            .map(|&c| std::str::from_utf8(&d.values[c as usize]).unwrap_or(""))
            .collect();
        let n: Vec<i32> = ids.iter().map(|&k| (k % 1000) as i32).collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(StringArray::from(cities)),
            Arc::new(Int32Array::from(n)),
        ];
        RecordBatch::try_new(schema().arrow_schema(), columns).map_err(|e| Error(e.to_string()))
    }
}

fn schema() -> Schema {
    Schema::new(
        vec![
            Column::new("id", ColumnType::Int64),
            Column::new("city", ColumnType::Utf8),
            Column::new("n", ColumnType::Int32),
        ],
        &["id"],
    )
    .unwrap_or_else(|e| panic!("opd table schema: {e}"))
}

fn serr(e: strata::Error) -> Error {
    Error(format!("strata: {e}"))
}

/// The filters' ranges `[lo, hi)`, as the key-value phase draws them.
fn ranges(d: &Dataset, n: usize, seed: u64) -> Vec<(String, String)> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0xf11e);
    (0..n.max(1))
        .map(|_| {
            let (lo, hi) = d.filter_range(0.01, &mut rng);
            (
                String::from_utf8_lossy(lo).into_owned(),
                String::from_utf8_lossy(hi).into_owned(),
            )
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Strata with dictionaries under `ratio` (0: none).
fn strata_run(
    label: &str,
    ratio: f64,
    d: &Dataset,
    rows: &Rows,
    filters: &[(String, String)],
    dir: &Path,
    cache_bytes: u64,
) -> Result<TableResult> {
    let _ = std::fs::remove_dir_all(dir);
    let db = Db::open(
        dir,
        Options {
            block_cache_bytes: cache_bytes,
            ..Default::default()
        },
    )
    .map_err(serr)?;
    let opts = TableOptions {
        layout: "column".into(),
        max_distinct_ratio: ratio,
        ..Default::default()
    };
    let t = db.create_table("t", schema(), opts).map_err(serr)?;
    let start = Instant::now();
    let n = rows.order.len();
    for lo in (0..n).step_by(BATCH) {
        t.upsert(&rows.batch(d, lo..(lo + BATCH).min(n))?)
            .map_err(serr)?;
    }
    t.flush().map_err(serr)?;
    db.wait_for_background_work().map_err(serr)?;
    let load_secs = start.elapsed().as_secs_f64();
    let start = Instant::now();
    t.compact().map_err(serr)?;
    let compact_secs = start.elapsed().as_secs_f64();
    // The table's files (the log, preallocated, is not the table's).
    let disk_bytes = t
        .describe()
        .map_err(serr)?
        .levels
        .iter()
        .flat_map(|l| &l.groups)
        .map(|g| g.bytes)
        .sum();
    let before = t.statistics();
    let mut secs = Vec::new();
    let mut matches = Vec::new();
    for (lo, hi) in filters {
        let p = Predicate::cmp("city", CmpOp::Ge, Value::Utf8(lo.clone())).and(Predicate::cmp(
            "city",
            CmpOp::Lt,
            Value::Utf8(hi.clone()),
        ));
        let start = Instant::now();
        let mut count = 0u64;
        for b in t
            .scan(ScanOptions::default().columns(&["id"]).filter(p))
            .map_err(serr)?
        {
            count += b.map_err(serr)?.num_rows() as u64;
        }
        secs.push(start.elapsed().as_secs_f64());
        matches.push(count);
    }
    let after = t.statistics();
    drop(t);
    db.close().map_err(serr)?;
    let _ = std::fs::remove_dir_all(dir);
    Ok(TableResult {
        label: label.into(),
        load_secs,
        compact_secs: Some(compact_secs),
        disk_bytes,
        filter_secs: median(secs),
        matches,
        blocks: Some((
            after.scan_blocks_skipped - before.scan_blocks_skipped,
            after.scan_blocks_read - before.scan_blocks_read,
        )),
    })
}

#[cfg(feature = "sqlite")]
fn sqlite_run(
    d: &Dataset,
    rows: &Rows,
    filters: &[(String, String)],
    dir: &Path,
) -> Result<TableResult> {
    let e = |e: rusqlite::Error| Error(format!("sqlite: {e}"));
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|x| Error(format!("{}: {x}", dir.display())))?;
    let mut con = rusqlite::Connection::open(dir.join("t.db")).map_err(e)?;
    con.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; \
         CREATE TABLE t (id INTEGER PRIMARY KEY, city TEXT NOT NULL, n INTEGER NOT NULL);",
    )
    .map_err(e)?;
    let start = Instant::now();
    let n = rows.order.len();
    for lo in (0..n).step_by(BATCH) {
        let tx = con.transaction().map_err(e)?;
        {
            let mut st = tx
                .prepare_cached("INSERT OR REPLACE INTO t (id, city, n) VALUES (?1, ?2, ?3)")
                .map_err(e)?;
            for i in lo..(lo + BATCH).min(n) {
                let k = rows.order[i] as i64;
                let city = std::str::from_utf8(&d.values[rows.cities[i] as usize]).unwrap_or("");
                st.execute(rusqlite::params![k, city, k % 1000])
                    .map_err(e)?;
            }
        }
        tx.commit().map_err(e)?;
    }
    con.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .map_err(e)?;
    let load_secs = start.elapsed().as_secs_f64();
    let disk_bytes = dir_usage(dir).allocated;
    let mut secs = Vec::new();
    let mut matches = Vec::new();
    for (lo, hi) in filters {
        let start = Instant::now();
        let c: i64 = con
            .query_row(
                "SELECT count(*) FROM t WHERE city >= ?1 AND city < ?2",
                rusqlite::params![lo, hi],
                |r| r.get(0),
            )
            .map_err(e)?;
        secs.push(start.elapsed().as_secs_f64());
        matches.push(c as u64);
    }
    drop(con);
    let _ = std::fs::remove_dir_all(dir);
    Ok(TableResult {
        label: format!("SQLite {}", rusqlite::version()),
        load_secs,
        compact_secs: None,
        disk_bytes,
        filter_secs: median(secs),
        matches,
        blocks: None,
    })
}

/// What `scripts/opd_duckdb.py` is asked to run and prints.
#[derive(Serialize)]
struct DuckQueries<'a> {
    ranges: &'a [(String, String)],
}

#[derive(Deserialize)]
struct DuckResult {
    version: String,
    load_secs: f64,
    disk_bytes: u64,
    filter_us: Vec<f64>,
    matches: Vec<u64>,
}

/// The script, relative to the repository root.
const SCRIPT: &str = "scripts/opd_duckdb.py";

fn duckdb_run(
    d: &Dataset,
    rows: &Rows,
    filters: &[(String, String)],
    dir: &Path,
) -> Result<Option<TableResult>> {
    let io = |x: std::io::Error| Error(format!("{}: {x}", dir.display()));
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(io)?;
    let csv = dir.join("rows.csv");
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&csv).map_err(io)?);
        for (i, &k) in rows.order.iter().enumerate() {
            // Values are printable ASCII: quote them, doubling quotes.
            let city =
                String::from_utf8_lossy(&d.values[rows.cities[i] as usize]).replace('"', "\"\"");
            writeln!(w, "{k},\"{city}\",{}", k % 1000).map_err(io)?;
        }
        w.flush().map_err(io)?;
    }
    let q = dir.join("queries.json");
    std::fs::write(
        &q,
        serde_json::to_vec(&DuckQueries { ranges: filters }).map_err(|e| Error(e.to_string()))?,
    )
    .map_err(io)?;
    let r: Option<DuckResult> =
        crate::htap::duckdb::run_script("opd", SCRIPT, &csv, &q, &dir.join("duck.db"))?;
    let Some(r) = r else {
        return Ok(None);
    };
    let _ = std::fs::remove_dir_all(dir);
    Ok(Some(TableResult {
        label: format!("DuckDB {}", r.version),
        load_secs: r.load_secs,
        compact_secs: None,
        disk_bytes: r.disk_bytes,
        filter_secs: median(r.filter_us.iter().map(|u| u / 1e6).collect()),
        matches: r.matches,
        blocks: None,
    }))
}

/// Runs the table phase over `rows` rows of `d`.
pub fn run(
    d: &Dataset,
    rows: u64,
    filters: usize,
    seed: u64,
    db: &Path,
    cache_bytes: u64,
) -> Result<Vec<TableResult>> {
    let r = Rows::new(d, rows, seed);
    let f = ranges(d, filters, seed);
    let mut out = Vec::new();
    for (label, ratio) in [
        ("strata-dict", TableOptions::default().max_distinct_ratio),
        ("strata-plain", 0.0),
    ] {
        let x = strata_run(
            label,
            ratio,
            d,
            &r,
            &f,
            &db.join(format!("table-{label}")),
            cache_bytes,
        )?;
        println!(
            "opd table: {label}: load {:.1} s, compaction {:.1} s, {} on disk, filter {:.1} ms",
            x.load_secs,
            x.compact_secs.unwrap_or(0.0),
            crate::report::human_bytes(x.disk_bytes),
            x.filter_secs * 1e3
        );
        out.push(x);
    }
    #[cfg(feature = "sqlite")]
    out.push(sqlite_run(d, &r, &f, &db.join("table-sqlite"))?);
    if let Some(x) = duckdb_run(d, &r, &f, &db.join("table-duckdb"))? {
        out.push(x);
    }
    for x in &out[1..] {
        if x.matches != out[0].matches {
            return Err(Error(format!(
                "opd table: {} counted {:?} rows, {} {:?}: the engines disagree",
                x.label, x.matches, out[0].label, out[0].matches
            )));
        }
    }
    Ok(out)
}

/// The table phase's section of the report.
pub fn report(results: &[TableResult], rows: u64, filters: usize) -> String {
    use crate::report::{human_bytes, thousands};
    let mut t = format!(
        "Tables: {rows} rows (`id` i64 key, `city` the values above, `n` i32), `column` layout; filters count the rows whose `city` lies in 1 % of the distinct values (the median of {filters}); on disk is the table's files (Strata) or the database file (SQLite, DuckDB).\n\n\
         | engine | load rows/s | full compaction | on disk | filter | rows filtered/s | blocks skipped / read |\n|---|---|---|---|---|---|---|\n"
    );
    for r in results {
        t.push_str(&format!(
            "| {} | {} | {} | {} | {:.1} ms | {} | {} |\n",
            r.label,
            thousands(rows as f64 / r.load_secs.max(1e-9)),
            r.compact_secs.map_or("—".into(), |s| format!("{s:.2} s")),
            human_bytes(r.disk_bytes),
            r.filter_secs * 1e3,
            thousands(rows as f64 / r.filter_secs.max(1e-9)),
            r.blocks.map_or("—".into(), |(s, rd)| format!("{s} / {rd}")),
        ));
    }
    let by = |l: &str| results.iter().find(|r| r.label.starts_with(l));
    if let (Some(dict), Some(plain)) = (by("strata-dict"), by("strata-plain")) {
        t.push_str(&format!(
            "\nStrata with dictionaries against without: filter {:.2}× faster, {:.2}× the bytes on disk, load {:.2}×, compaction {:.2}×",
            plain.filter_secs / dict.filter_secs.max(1e-9),
            dict.disk_bytes as f64 / plain.disk_bytes.max(1) as f64,
            plain.load_secs / dict.load_secs.max(1e-9),
            plain.compact_secs.unwrap_or(0.0) / dict.compact_secs.unwrap_or(1.0).max(1e-9),
        ));
        for peer in ["SQLite", "DuckDB"] {
            if let Some(p) = by(peer) {
                t.push_str(&format!(
                    "; filter {:.2}× {}'s speed",
                    p.filter_secs / dict.filter_secs.max(1e-9),
                    peer
                ));
            }
        }
        t.push_str(".\n");
    }
    t
}
