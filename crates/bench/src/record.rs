//! The JSON record of one (engine, variant, workload, round) result, one
//! object per line.

use std::io::{BufRead, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Percentiles stored for the latency CDF.
pub const CDF_PERCENTILES: &[f64] = &[
    0.0, 1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 75.0, 80.0, 85.0, 90.0, 95.0, 97.0,
    98.0, 99.0, 99.5, 99.9, 99.95, 99.99, 100.0,
];

/// One result.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Record {
    /// `strata`, `rocksdb` or `fjall`.
    pub engine: String,
    /// `default`, or the memtable kind when `--memtable` was given.
    pub variant: String,
    /// The workload's db_bench or YCSB name.
    pub workload: String,
    /// Operations done (for readwhilewriting: by the readers).
    pub ops: u64,
    /// Wall-clock seconds of the workload.
    pub seconds: f64,
    pub ops_per_sec: f64,
    /// Key and value bytes written or read per second, in MB (10^6 bytes).
    pub mb_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub mean_us: f64,
    pub max_us: f64,
    /// (percentile, latency in µs) points of the latency distribution.
    pub latency_cdf_us: Vec<(f64, f64)>,
    /// Bytes written by flushes and compactions per user key and value byte
    /// written, since the database was opened; null where the engine does
    /// not report it.
    pub write_amp: Option<f64>,
    /// Bytes this process wrote to storage during the workload
    /// (`/proc/self/io`); covers every engine, including its log.
    pub io_write_bytes: Option<u64>,
    /// Bytes on disk (allocated blocks, as `du`) of every file in the
    /// engine's directory after the workload.
    pub disk_bytes: u64,
    /// Peak resident memory of the process during this engine's run
    /// (`VmHWM`, reset when the engine is opened).
    pub peak_rss_bytes: Option<u64>,
    /// Every option of the run.
    pub settings: serde_json::Value,
    /// Settings an engine could not express, and other caveats.
    pub notes: Vec<String>,
    /// Round, from 1.
    pub round: u32,
    /// Rounds of the run (`--repeat`).
    pub rounds: u32,
    /// True for the record that stands for its group: the median round by
    /// ops/s (the only round when `--repeat 1`).
    pub median: bool,
    /// The suite, when run as one.
    pub suite: Option<String>,
    /// Identifies the invocation (its start time and process id).
    pub run_id: String,
    /// When the workload finished (ISO 8601, UTC).
    pub timestamp: String,
    /// Workload- and engine-specific figures.
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// Memtable bytes per entry held (the `memtable` suite: the engine's
    /// memtable bytes divided by the entries in them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_entry: Option<f64>,
    /// Memtable flushes since the database was opened (the `memtable`
    /// suite).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flushes: Option<u64>,
}

/// Appends `records` to `path`, one JSON object per line.
pub fn append(path: &Path, records: &[Record]) -> Result<()> {
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let mut buf = Vec::new();
    for r in records {
        serde_json::to_writer(&mut buf, r)?;
        buf.push(b'\n');
    }
    f.write_all(&buf)?;
    Ok(())
}

/// Reads every record of `path`; lines that are not records are skipped
/// and counted.
pub fn read_all(path: &Path) -> Result<(Vec<Record>, usize)> {
    let f = std::fs::File::open(path)
        .map_err(|e| Error(format!("cannot read {}: {e}", path.display())))?;
    let mut out = Vec::new();
    let mut skipped = 0;
    for line in std::io::BufReader::new(f).lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(&line) {
            Ok(r) => out.push(r),
            Err(_) => skipped += 1,
        }
    }
    Ok((out, skipped))
}

/// The records charts and reports stand on: for each (engine, variant,
/// workload), the newest median record.
pub fn latest_medians(records: &[Record]) -> Vec<Record> {
    let mut out: Vec<Record> = Vec::new();
    for r in records.iter().filter(|r| r.median) {
        match out
            .iter_mut()
            .find(|o| o.engine == r.engine && o.variant == r.variant && o.workload == r.workload)
        {
            Some(o) => {
                if r.timestamp >= o.timestamp {
                    *o = r.clone();
                }
            }
            None => out.push(r.clone()),
        }
    }
    out
}

/// The median of `rounds` by ops/s (the lower one of an even count).
pub fn median_of(rounds: &[Record]) -> Option<Record> {
    let mut v: Vec<&Record> = rounds.iter().collect();
    v.sort_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
    v.get(v.len().saturating_sub(1) / 2).map(|r| {
        let mut m = (*r).clone();
        m.median = true;
        m
    })
}
