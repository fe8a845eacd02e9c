//! The `memtable` suite: the memory-buffer study's in-memory experiment
//! (seed 003, "Anatomy of LSM Memory Buffer") over every Strata memtable
//! kind and, with the `rocksdb` feature, RocksDB's four representations,
//! plus three workload mixes for the adaptive kind.
//!
//! **The experiment** (one fresh database per engine, kind and order):
//!
//! - entries of 128 bytes: 8-byte keys (the big-endian image of a uniformly
//!   random u64) and 120-byte values; the write-ahead
//!   log off in both engines, so an insert costs the write path and the
//!   memtable, not a log write;
//! - a 192 MiB write buffer by default rather than the study's 128 MB: the
//!   study's RocksDB buffers held its 744K entries in 128 MB (arena
//!   accounting, about 160 B an entry), but Strata charges 199 to 250 B per
//!   128-byte entry (skiplist node or slot, allocation header and rounding,
//!   bucket array; see `strata::memtable`), so at 128 MiB every kind switches
//!   memtables before the last insert (the skiplist at about 630K) and the
//!   queries would read a table being flushed. 192 MiB holds all 744K
//!   entries for every kind; `--write-buffer-size 128MiB` runs the study's
//!   buffer, and the report's verification line then shows the switch;
//! - 744,000 inserts of distinct keys (`--num`), meant to stay in the one
//!   memtable: every record carries the flushes and memtable switches seen,
//!   and the report says which kinds held everything;
//! - 50,000 empty point queries (keys never inserted), 50,000 non-empty
//!   ones (uniform among the keys inserted so far) (`--reads`, by default
//!   scaled with `--num`), and 1,000 range queries (scaled with `--num`,
//!   at least 10) of selectivity 0.1 %: each covers 1/1000 of the key
//!   domain from a uniformly random start, so it visits 0.1 % of the entries
//!   (about 744);
//! - two orders: **sequential** (all inserts, then the misses, the hits and
//!   the ranges, each a phase) and **interleaved** (10 % of the inserts as an
//!   untimed warm-up, then the remaining inserts and every query in one
//!   random order, the same for every kind and engine).
//!
//! Every operation is timed on its own ([`Instant`] around it) into a
//! latency histogram. Sequential phases report operations per second of
//! the phase's wall time (less the memtable probes below); interleaved
//! records report, per operation type, the operations divided by the time
//! spent in them (the sum of their latencies), since their wall time is
//! shared.
//!
//! **Footprint**: `bytes_per_entry` is the engine's memtable bytes over the
//! entries in the memtable: Strata's `KeyspaceStats::memtable_bytes` (its
//! accounting of entries, nodes, slots, buckets and allocator overhead) over
//! the inserts since the last memtable switch (after a switch: of the last
//! full memtable, at the probe before the switch); RocksDB's
//! `rocksdb.cur-size-all-mem-tables` over `rocksdb.num-entries-active-mem-table`
//! plus `-imm-mem-tables`. The memtables are probed every few hundred inserts
//! (outside the timed operations) to notice switches; when one happened, the
//! entry count of the current memtable is known to within one probe interval
//! (`bytes_per_entry_exact` false).
//!
//! **Budget**: some kind/order pairs are quadratic by design (a mutable
//! `vector` copies and sorts itself for a read that follows an insert, as
//! RocksDB's `VectorRep` does on every read; `vector-sorted` shifts on each
//! insert; a hash memtable copies every bucket for a total-order scan). A
//! phase stops after `--max-phase-secs` (default 20 s), the interleaved
//! stream after `--max-stream-secs` (default 120 s); the record keeps what
//! was done (`truncated`, `planned_ops` in `extra`), so a stopped stream's
//! figures describe a smaller memtable than a complete one's. A stream that
//! runs out of time goes on until every operation type has a few samples or
//! a quarter more time has passed.
//!
//! **Adaptive mixes**: each Strata kind runs three mixes on an 8 MiB buffer
//! (scaled down with `--num` below 744,000) so that there are several
//! memtable switches: `mix-insert-only` (inserts only), `mix-point-heavy`
//! (20 % inserts, 80 % point reads of recently inserted keys) and
//! `mix-range-heavy` (70 % inserts, 10 % point reads, 20 % scans of 100
//! entries from a recent key); 372,000 inserts each (`--num` / 2), the
//! median of `--mix-rounds` (default 3) rounds by ops/s, kinds in
//! alternating order (a run that stops at the budget is not repeated). The
//! report sets the adaptive kind's throughput next to the best fixed kind's,
//! with the per-round ratios of the two (rounds paired by number) and their
//! median, and lists the representations the adaptive one chose (from
//! `KeyspaceStats::memtable_rep` / `memtable_decision`).

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::json;

mod render;
mod run;

pub use render::{charts, markdown, phase_tables, ratios, verification, versus_rocksdb};
pub use run::run;

use crate::cli::BenchArgs;
use crate::engine::{Engine, EngineKind, MemProbe, open_engine, parse_engines};
use crate::keys::{ValueGen, decode_key, encode_key};
use crate::record::{Record, append, median_of};
use crate::report::ReportInfo;
use crate::runner::{Target, make_named_record, summary_line};
use crate::settings::BenchSettings;
use crate::sysinfo;
use crate::workload::{Outcome, RunState, new_hist};
use crate::{Error, Result, plot, report};

/// Inserts of the study's in-memory experiment.
pub const STUDY_INSERTS: u64 = 744_000;
/// Empty and non-empty point queries, each.
pub const STUDY_POINT_QUERIES: u64 = 50_000;
/// Range queries.
pub const STUDY_RANGE_QUERIES: u64 = 1_000;
/// Fraction of the key domain (and so of the entries) a range query covers.
pub const STUDY_SELECTIVITY: f64 = 0.001;
/// Fraction of the inserts done before the interleaved stream.
pub const STUDY_WARMUP: f64 = 0.1;
/// The study's write buffer.
pub const STUDY_BUFFER: u64 = 128 << 20;
/// The suite's default write buffer: the study's 744K entries fit it for
/// every Strata kind (see the module documentation).
pub const SUITE_BUFFER: u64 = 192 << 20;
/// Buckets of the hash memtables in the experiment (both engines).
pub const STUDY_BUCKETS: usize = 100_000;
/// Key bytes.
pub const STUDY_KEY_BYTES: usize = 8;
/// Value bytes.
pub const STUDY_VALUE_BYTES: usize = 120;
/// The write buffer of the adaptive mixes (at full scale).
pub const MIX_BUFFER: u64 = 8 << 20;
/// Entries read by a scan of the mixes.
pub const MIX_SCAN_ENTRIES: usize = 100;
/// Default `--max-phase-secs`.
pub const DEFAULT_BUDGET_SECS: f64 = 20.0;
/// Default `--max-stream-secs`.
pub const DEFAULT_STREAM_BUDGET_SECS: f64 = 120.0;
/// Samples an interleaved stream past its budget still waits for per type.
const MIN_DRAIN_SAMPLES: u64 = 5;

/// RocksDB's memtable representations, by their Strata names.
pub const ROCKSDB_KINDS: [&str; 4] = ["skiplist", "vector", "hash-skiplist", "hash-linklist"];

/// The phases (record workloads) of the sequential order; the interleaved
/// order appends `-interleaved`.
pub const PHASES: [&str; 4] = ["mem-insert", "mem-get-miss", "mem-get-hit", "mem-range"];

/// The record workload of `phase` in the interleaved order.
pub fn interleaved(phase: &str) -> String {
    format!("{phase}-interleaved")
}

/// One workload mix of the adaptive comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mix {
    /// The record workload.
    pub name: &'static str,
    /// Share of inserts.
    pub insert: f64,
    /// Share of point reads (of recently inserted keys).
    pub point: f64,
    /// Share of scans (of [`MIX_SCAN_ENTRIES`] entries from a recent key).
    pub range: f64,
    pub describe: &'static str,
}

/// The adaptive mixes.
pub const MIXES: [Mix; 3] = [
    Mix {
        name: "mix-insert-only",
        insert: 1.0,
        point: 0.0,
        range: 0.0,
        describe: "inserts only",
    },
    Mix {
        name: "mix-point-heavy",
        insert: 0.2,
        point: 0.8,
        range: 0.0,
        describe: "20% inserts, 80% point reads of recently inserted keys",
    },
    Mix {
        name: "mix-range-heavy",
        insert: 0.7,
        point: 0.1,
        range: 0.2,
        describe: "70% inserts, 10% point reads, 20% scans of 100 entries from a recent key",
    },
];

fn describe_phase(workload: &str) -> &'static str {
    match workload {
        "mem-insert" => "inserts of distinct uniformly random 8-byte keys (sequential order)",
        "mem-get-miss" => "point queries of keys never inserted (sequential order)",
        "mem-get-hit" => "point queries of inserted keys (sequential order)",
        "mem-range" => "range queries of selectivity 0.1% (sequential order)",
        "mem-insert-interleaved" => "inserts, interleaved with the queries after a 10% warm-up",
        "mem-get-miss-interleaved" => "empty point queries, interleaved",
        "mem-get-hit-interleaved" => "non-empty point queries, interleaved",
        "mem-range-interleaved" => "range queries of selectivity 0.1%, interleaved",
        _ => "",
    }
}

/// Everything the suite runs.
#[derive(Clone, Debug)]
pub struct MemSuite {
    pub engines: Vec<EngineKind>,
    /// Strata kinds.
    pub kinds: Vec<String>,
    /// RocksDB representations (when RocksDB is among the engines).
    pub rocksdb_kinds: Vec<String>,
    /// Key and value sizes, seed, WAL, compression, prefix, buckets and
    /// threshold as given (`hash_buckets` `None` when not given).
    pub settings: BenchSettings,
    pub inserts: u64,
    pub point_queries: u64,
    pub range_queries: u64,
    /// Buckets of the hash memtables in the experiment.
    pub buckets: usize,
    pub buffer: u64,
    pub mix_buffer: u64,
    pub mix_inserts: u64,
    /// Rounds of each mix and kind; the median by ops/s is reported.
    pub mix_rounds: u32,
    /// Run the study's experiment.
    pub experiment: bool,
    /// Run the adaptive mixes.
    pub mixes: bool,
    /// Budget of a sequential phase and of a mix run.
    pub budget: Duration,
    /// Budget of an interleaved stream.
    pub stream_budget: Duration,
    pub db_root: PathBuf,
    pub json: Option<PathBuf>,
}

/// The suite's defaults on top of the flags (those given win): the study's
/// entry size, buffer, scale, and the WAL off.
pub fn apply_defaults(a: &mut BenchArgs, given: &dyn Fn(&str) -> bool) {
    if !given("num") {
        a.num = STUDY_INSERTS;
    }
    if !given("key_size") {
        a.key_size = STUDY_KEY_BYTES;
    }
    if !given("value_size") {
        a.value_size = STUDY_VALUE_BYTES;
    }
    if !given("write_buffer_size") {
        a.write_buffer_size = SUITE_BUFFER;
    }
    if !given("disable_wal") {
        a.disable_wal = true;
    }
    if !given("distribution") {
        a.distribution = "uniform".into();
    }
}

fn scaled(study: u64, num: u64, min: u64) -> u64 {
    ((study as f64 * num as f64 / STUDY_INSERTS as f64).round() as u64).max(min)
}

/// Builds the suite from the flags (after [`apply_defaults`]).
pub fn plan(
    a: &BenchArgs,
    budget_secs: f64,
    stream_secs: f64,
    parts: &str,
    mix_rounds: u32,
) -> Result<MemSuite> {
    if mix_rounds == 0 {
        return Err(Error::msg("--mix-rounds must be at least 1"));
    }
    let (mut experiment, mut mixes) = (false, false);
    for p in parts.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match p {
            "experiment" => experiment = true,
            "mixes" => mixes = true,
            other => {
                return Err(Error(format!(
                    "unknown part {other:?} in --parts (known: experiment, mixes)"
                )));
            }
        }
    }
    if !experiment && !mixes {
        return Err(Error::msg("--parts names no part (experiment, mixes)"));
    }
    let engines = parse_engines(&a.engines)?;
    if let Some(e) = engines
        .iter()
        .find(|e| !matches!(e, EngineKind::Strata | EngineKind::RocksDb))
    {
        return Err(Error(format!(
            "the memtable suite runs strata and rocksdb only, not {e}"
        )));
    }
    if a.repeat != 1 {
        return Err(Error::msg("the memtable suite runs one round (--repeat 1)"));
    }
    if a.threads != 1 {
        return Err(Error::msg(
            "the memtable suite is single-threaded, as the study (--threads 1)",
        ));
    }
    if !(budget_secs > 0.0 && budget_secs.is_finite()) {
        return Err(Error::msg(
            "--max-phase-secs must be a positive number of seconds",
        ));
    }
    // The study runs every kind unless told otherwise, each once.
    let kinds = crate::cli::memtable_names(a.memtable.as_deref().unwrap_or("all"), true)?;
    let rocksdb_kinds: Vec<String> = if engines.contains(&EngineKind::RocksDb) {
        ROCKSDB_KINDS
            .iter()
            .filter(|k| a.memtable.is_none() || kinds.iter().any(|m| m == *k))
            .map(|k| k.to_string())
            .collect()
    } else {
        Vec::new()
    };
    let strata_kinds = if engines.contains(&EngineKind::Strata) {
        kinds
    } else {
        Vec::new()
    };
    let settings = BenchSettings {
        reads: a
            .reads
            .unwrap_or_else(|| scaled(STUDY_POINT_QUERIES, a.num, 1)),
        writes: a.num,
        threads: 1,
        miss_ratio: 0.0,
        retain_memtables: false,
        // The study measures the memtable alone: no short-scan mechanism
        // (its range queries are 0.1 % of the keys, where reduction idles
        // anyway).
        iterator_reduction: false,
        level_filter_bytes: None,
        reduction_gates: true,
        // The study compares the buffers' own searches: a whole-key filter
        // in front of every kind would answer most misses for all alike.
        memtable_filter: Some(a.memtable_filter.unwrap_or(0.0)),
        ..crate::cli::settings_from_args(a)?
    };
    settings.validate()?;
    let mix_buffer = if a.num >= STUDY_INSERTS {
        MIX_BUFFER
    } else {
        // At least 512 KiB: a buffer must see the adaptive policy's 1,000
        // operations (`AdaptivePolicy::min_ops`) before it may switch.
        ((MIX_BUFFER as f64 * a.num as f64 / STUDY_INSERTS as f64) as u64).max(512 << 10)
    };
    Ok(MemSuite {
        engines,
        kinds: strata_kinds,
        rocksdb_kinds,
        inserts: a.num,
        point_queries: settings.reads,
        range_queries: scaled(STUDY_RANGE_QUERIES, a.num, 10),
        buckets: a.hash_buckets.unwrap_or(STUDY_BUCKETS),
        buffer: a.write_buffer_size,
        mix_buffer,
        mix_inserts: (a.num / 2).max(1),
        mix_rounds,
        experiment,
        mixes,
        budget: Duration::from_secs_f64(budget_secs),
        stream_budget: Duration::from_secs_f64(stream_secs),
        db_root: a.db.clone(),
        json: Some(a.json.clone().unwrap_or_else(|| a.db.join("memtable.json"))),
        settings,
    })
}

/// `/proc/loadavg`'s three load averages.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests;
