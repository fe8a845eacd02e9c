//! DuckDB through its Python package: the suite writes the table's final
//! rows as CSV and the Q2a, Q4, Q5 and J queries as JSON, and runs
//! `scripts/htap_duckdb.py`, which loads the rows into DuckDB (with the key
//! as primary key) and prints each query's latencies as JSON.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use super::workload::row;
use crate::{Error, Result};

/// What the script is asked to run.
#[derive(Serialize)]
pub struct DuckQueries {
    pub columns: usize,
    /// Q2a: keys to read, with every column.
    pub points: Vec<i64>,
    pub point_cols: (usize, usize),
    /// Q4: key ranges; columns `sum_cols` summed.
    pub sums: Vec<(i64, i64)>,
    pub sum_cols: (usize, usize),
    /// Q5: key ranges; the max of each of `max_cols`.
    pub maxes: Vec<(i64, i64)>,
    pub max_cols: (usize, usize),
    /// J: the side table's rows (key, weight), and how many joins to run.
    pub side: Vec<(i64, i32)>,
    pub joins: usize,
}

/// What the script measured, in microseconds per query.
#[derive(Deserialize, Debug, Default)]
pub struct DuckResult {
    pub version: String,
    pub load_secs: f64,
    pub q2a_us: Vec<f64>,
    pub q4_us: Vec<f64>,
    pub q5_us: Vec<f64>,
    /// Q4's sums (to compare with the other engines).
    pub q4_sums: Vec<i64>,
    /// J's latencies (none when no join was asked).
    #[serde(default)]
    pub join_us: Vec<f64>,
}

/// The script, relative to the repository root.
pub const SCRIPT: &str = "scripts/htap_duckdb.py";

/// Writes rows `0..rows` of the seed's stream as CSV.
pub fn write_csv(path: &Path, seed: u64, rows: usize, columns: usize) -> Result<()> {
    let f = std::fs::File::create(path).map_err(|e| Error(format!("{}: {e}", path.display())))?;
    let mut w = std::io::BufWriter::new(f);
    let mut values = Vec::with_capacity(columns);
    let mut line = String::new();
    for i in 0..rows {
        let k = row(seed, i, columns, &mut values);
        line.clear();
        line.push_str(&k.to_string());
        for v in &values {
            line.push(',');
            line.push_str(&v.to_string());
        }
        line.push('\n');
        w.write_all(line.as_bytes())
            .map_err(|e| Error(format!("{}: {e}", path.display())))?;
    }
    w.flush()
        .map_err(|e| Error(format!("{}: {e}", path.display())))
}

/// Runs the script; `Ok(None)` with a message when Python or DuckDB is
/// missing.
pub fn run(dir: &Path, csv: &Path, q: &DuckQueries) -> Result<Option<DuckResult>> {
    let qpath: PathBuf = dir.join("duck_queries.json");
    std::fs::write(
        &qpath,
        serde_json::to_vec(q).map_err(|e| Error(e.to_string()))?,
    )
    .map_err(|e| Error(format!("{}: {e}", qpath.display())))?;
    run_script("htap", SCRIPT, csv, &qpath, &dir.join("duck.db"))
}

/// Runs a suite's DuckDB script (`python3 SCRIPT --csv CSV --queries
/// QUERIES --db DB`) and parses the JSON it prints; `Ok(None)`, with a
/// message naming `suite`, when the script, Python or DuckDB is missing.
pub fn run_script<T: serde::de::DeserializeOwned>(
    suite: &str,
    script: &str,
    csv: &Path,
    queries: &Path,
    db: &Path,
) -> Result<Option<T>> {
    if !Path::new(script).exists() {
        eprintln!("{suite}: {script} not found (run from the repository root); DuckDB skipped");
        return Ok(None);
    }
    let out = Command::new("python3")
        .arg(script)
        .arg("--csv")
        .arg(csv)
        .arg("--queries")
        .arg(queries)
        .arg("--db")
        .arg(db)
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{suite}: cannot run python3 ({e}); DuckDB skipped");
            return Ok(None);
        }
    };
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("No module named 'duckdb'") {
            eprintln!(
                "{suite}: the duckdb Python package is missing (bash scripts/install-peer-deps.sh \
                 installs it); DuckDB skipped"
            );
            return Ok(None);
        }
        return Err(Error(format!("{script} failed: {err}")));
    }
    serde_json::from_slice(&out.stdout).map(Some).map_err(|e| {
        Error(format!(
            "{script} printed something that is not its JSON: {e}"
        ))
    })
}
