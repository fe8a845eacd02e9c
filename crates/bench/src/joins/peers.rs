//! The peers of the joins suite, on the same rows: SQLite (feature
//! `sqlite`, bundled; rowid tables, the join column indexed or not) and
//! DuckDB (its Python package, driven by `scripts/joins_duckdb.py`).
//!
//! Each counts the rows of the primary-key join (R.a = SP.id) and of the
//! secondary join (R.a = S.b); SQLite's secondary join runs once without
//! an index on S.b (SQLite may build a transient one itself) and once
//! after `CREATE INDEX` (whose time is reported apart).

use std::io::Write;
use std::path::Path;

use serde::Deserialize;

use super::Rows;
use super::report::PeerRow;
use crate::htap::duckdb::run_script;
use crate::{Error, Result};

/// The DuckDB script, relative to the repository root.
pub const SCRIPT: &str = "scripts/joins_duckdb.py";

/// Runs the named peers (`sqlite`, `duckdb`) on `rows`.
pub fn run(peers: &[&str], dir: &Path, rows: &Rows, n: u64, entry: usize) -> Result<Vec<PeerRow>> {
    let mut out = Vec::new();
    if peers.is_empty() {
        return Ok(out);
    }
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| Error(format!("{}: {e}", dir.display())))?;
    for p in peers {
        match *p {
            "sqlite" => out.extend(sqlite(dir, rows, n, entry)?),
            "duckdb" => out.extend(duckdb(dir, rows, n, entry)?),
            other => {
                return Err(Error(format!(
                    "unknown joins peer {other:?}: sqlite, duckdb"
                )));
            }
        }
    }
    let _ = std::fs::remove_dir_all(dir);
    Ok(out)
}

#[cfg(not(feature = "sqlite"))]
fn sqlite(_: &Path, _: &Rows, _: u64, _: usize) -> Result<Vec<PeerRow>> {
    eprintln!("joins: SQLite needs --features sqlite (or peers); skipped");
    Ok(Vec::new())
}

#[cfg(feature = "sqlite")]
fn sqlite(dir: &Path, rows: &Rows, n: u64, entry: usize) -> Result<Vec<PeerRow>> {
    use rusqlite::{Connection, params};
    use std::time::Instant;
    let q = |e: rusqlite::Error| Error(format!("sqlite: {e}"));
    let c = Connection::open(dir.join("joins.sqlite")).map_err(q)?;
    c.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536;
         CREATE TABLE r (id INTEGER PRIMARY KEY, a INTEGER NOT NULL, pad BLOB NOT NULL);
         CREATE TABLE s (id INTEGER PRIMARY KEY, b INTEGER NOT NULL, pad BLOB NOT NULL);
         CREATE TABLE sp (id INTEGER PRIMARY KEY, pad BLOB NOT NULL);",
    )
    .map_err(q)?;
    let t = Instant::now();
    {
        let tx = c.unchecked_transaction().map_err(q)?;
        {
            let mut ir = tx.prepare("INSERT INTO r VALUES (?1, ?2, ?3)").map_err(q)?;
            let mut is = tx.prepare("INSERT INTO s VALUES (?1, ?2, ?3)").map_err(q)?;
            let mut isp = tx
                .prepare("INSERT OR REPLACE INTO sp VALUES (?1, ?2)")
                .map_err(q)?;
            for i in 0..n as usize {
                let pad = super::pad(entry, i as u64);
                ir.execute(params![i as i64, rows.r[i], pad]).map_err(q)?;
                is.execute(params![i as i64, rows.s[i], pad]).map_err(q)?;
                isp.execute(params![rows.s[i], super::pad(entry, rows.s[i] as u64)])
                    .map_err(q)?;
            }
        }
        tx.commit().map_err(q)?;
    }
    let load = t.elapsed().as_secs_f64();
    let count = |sql: &str| -> Result<(f64, u64)> {
        let t = Instant::now();
        let v: i64 = c.query_row(sql, [], |r| r.get(0)).map_err(q)?;
        Ok((t.elapsed().as_secs_f64(), v as u64))
    };
    let mut out = Vec::new();
    let (secs, rows_p) = count("SELECT count(*) FROM r JOIN sp ON r.a = sp.id")?;
    out.push(PeerRow::new("SQLite-P", secs, rows_p, load, None));
    let (secs, rows_n) = count("SELECT count(*) FROM r JOIN s ON r.a = s.b")?;
    out.push(PeerRow::new(
        "SQLite-N (no index)",
        secs,
        rows_n,
        load,
        None,
    ));
    let t = Instant::now();
    c.execute_batch("CREATE INDEX s_b ON s(b); ANALYZE;")
        .map_err(q)?;
    let build = t.elapsed().as_secs_f64();
    let (secs, rows_n) = count("SELECT count(*) FROM r JOIN s ON r.a = s.b")?;
    out.push(PeerRow::new(
        "SQLite-N (index)",
        secs,
        rows_n,
        load,
        Some(build),
    ));
    Ok(out)
}

/// What the DuckDB script measured.
#[derive(Deserialize)]
struct DuckJoins {
    version: String,
    load_secs: f64,
    p_secs: f64,
    p_rows: u64,
    n_secs: f64,
    n_rows: u64,
}

fn duckdb(dir: &Path, rows: &Rows, n: u64, entry: usize) -> Result<Vec<PeerRow>> {
    let csv = dir.join("rows.csv");
    {
        let f =
            std::fs::File::create(&csv).map_err(|e| Error(format!("{}: {e}", csv.display())))?;
        let mut w = std::io::BufWriter::new(f);
        for i in 0..n as usize {
            writeln!(w, "{i},{},{}", rows.r[i], rows.s[i])
                .map_err(|e| Error(format!("{}: {e}", csv.display())))?;
        }
        w.flush()
            .map_err(|e| Error(format!("{}: {e}", csv.display())))?;
    }
    let queries = dir.join("queries.json");
    std::fs::write(&queries, format!("{{\"entry\": {entry}}}"))
        .map_err(|e| Error(format!("{}: {e}", queries.display())))?;
    let Some(d): Option<DuckJoins> =
        run_script("joins", SCRIPT, &csv, &queries, &dir.join("duck.db"))?
    else {
        return Ok(Vec::new());
    };
    let label = |s: &str| format!("DuckDB {} {s}", d.version);
    Ok(vec![
        PeerRow::new(&label("P"), d.p_secs, d.p_rows, d.load_secs, None),
        PeerRow::new(&label("N"), d.n_secs, d.n_rows, d.load_secs, None),
    ])
}
