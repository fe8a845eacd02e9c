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

use crate::cli::BenchArgs;
use crate::engine::{Engine, EngineKind, MemProbe, open_engine, parse_engines};
use crate::keys::{ValueGen, decode_key, encode_key};
use crate::record::{Record, append, median_of};
use crate::report::ReportInfo;
use crate::runner::{Target, make_named_record, summary_line};
use crate::settings::{BenchSettings, CompressionKind, Distribution};
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
    let kinds: Vec<String> = match a.memtable.as_deref() {
        None | Some("all") => strata::MemTableKind::ALL
            .iter()
            .map(|k| k.name().to_string())
            .collect(),
        Some(list) => {
            let mut v = Vec::new();
            for m in list.split(',').map(str::trim).filter(|m| !m.is_empty()) {
                let k: strata::MemTableKind = m.parse()?;
                if !v.contains(&k.name().to_string()) {
                    v.push(k.name().to_string());
                }
            }
            if v.is_empty() {
                return Err(Error::msg("--memtable names no memtable kind"));
            }
            v
        }
    };
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
        num: a.num,
        reads: a
            .reads
            .unwrap_or_else(|| scaled(STUDY_POINT_QUERIES, a.num, 1)),
        writes: a.num,
        key_size: a.key_size,
        value_size: a.value_size,
        value_random_fraction: a.value_random_fraction,
        write_buffer_size: a.write_buffer_size,
        size_ratio: a.size_ratio,
        bloom_bits: a.bloom_bits,
        block_size: usize::try_from(a.block_size)
            .map_err(|_| Error::msg("--block-size is too large"))?,
        cache_size: a.cache_size,
        compression: a.compression.parse::<CompressionKind>()?,
        disable_wal: a.disable_wal,
        sync: a.sync,
        threads: 1,
        seed: a.seed,
        memtable: None,
        scan_length: a.scan_length,
        miss_ratio: 0.0,
        distribution: a.distribution.parse::<Distribution>()?,
        prefix_len: a.prefix_len,
        hash_buckets: a.hash_buckets,
        linklist_threshold: a.linklist_threshold,
        retain_memtables: false,
        // The study measures the memtable alone: no short-scan mechanism
        // (its range queries are 0.1 % of the keys, where reduction idles
        // anyway).
        iterator_reduction: false,
        level_filter_bytes: None,
        reduction_gates: true,
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

/// The keys and the order shared by every kind and engine.
struct Data {
    /// Distinct uniformly random keys, in insert order.
    keys: Vec<u64>,
    /// Keys never inserted.
    misses: Vec<u64>,
    /// The interleaved stream after the warm-up: one tag per operation.
    stream: Vec<OpTag>,
    warmup: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OpTag {
    Insert = 0,
    Miss = 1,
    Hit = 2,
    Range = 3,
}

impl Data {
    fn new(s: &MemSuite) -> Data {
        let mut rng = StdRng::seed_from_u64(s.settings.seed ^ 0x03e3_7ab1);
        let n = s.inserts as usize;
        let mut set: HashSet<u64> = HashSet::with_capacity(n);
        let mut keys = Vec::with_capacity(n);
        while keys.len() < n {
            let k: u64 = rng.random();
            if set.insert(k) {
                keys.push(k);
            }
        }
        let mut misses = Vec::with_capacity(s.point_queries as usize);
        while misses.len() < s.point_queries as usize {
            let k: u64 = rng.random();
            if !set.contains(&k) {
                misses.push(k);
            }
        }
        let warmup = ((n as f64 * STUDY_WARMUP).round() as usize).min(n);
        let mut stream: Vec<OpTag> = Vec::new();
        stream.extend(std::iter::repeat_n(OpTag::Insert, n - warmup));
        stream.extend(std::iter::repeat_n(OpTag::Miss, s.point_queries as usize));
        stream.extend(std::iter::repeat_n(OpTag::Hit, s.point_queries as usize));
        stream.extend(std::iter::repeat_n(OpTag::Range, s.range_queries as usize));
        stream.shuffle(&mut rng);
        Data {
            keys,
            misses,
            stream,
            warmup,
        }
    }
}

/// What one phase (or one operation type of a stream) measured.
struct Phase {
    hist: Histogram<u64>,
    ops: u64,
    bytes: u64,
    /// Sum of the operations' latencies.
    busy: Duration,
    /// Wall time of the phase, less memtable probes.
    wall: Duration,
    planned: u64,
    truncated: bool,
    found: u64,
    entries: u64,
}

impl Phase {
    fn new(planned: u64) -> Phase {
        Phase {
            hist: new_hist(),
            ops: 0,
            bytes: 0,
            busy: Duration::ZERO,
            wall: Duration::ZERO,
            planned,
            truncated: false,
            found: 0,
            entries: 0,
        }
    }

    #[inline]
    fn record(&mut self, d: Duration, bytes: u64) {
        self.hist.saturating_record(d.as_nanos().max(1) as u64);
        self.ops += 1;
        self.bytes += bytes;
        self.busy += d;
    }

    /// Whether the phase has used up `budget` since `start` (marking it
    /// truncated if so), `last` being the operation just recorded. The clock
    /// is read only every 64 operations, or after a slow one: a clock read
    /// is a visible part of a sub-microsecond operation, and a phase may
    /// overrun by at most 63 fast ones.
    #[inline]
    fn out_of_time(&mut self, start: Instant, budget: Duration, last: Duration) -> bool {
        if !self.ops.is_multiple_of(64) && last < Duration::from_micros(20) {
            return false;
        }
        if start.elapsed() <= budget {
            return false;
        }
        self.truncated = self.ops < self.planned;
        true
    }
}

/// Follows the memtables through periodic probes.
struct Tracker {
    every: u64,
    since: u64,
    in_current: u64,
    last_bytes: u64,
    switches: u64,
    probe_time: Duration,
    last: Option<MemProbe>,
    /// Bytes per entry of the last memtable seen before a switch (at the
    /// probe before it).
    full: Option<f64>,
    /// The representation of each memtable seen, in order.
    reps: Vec<String>,
}

impl Tracker {
    fn new(engine: &dyn Engine, buffer: u64, entry_bytes: u64) -> Tracker {
        // At least 16 probes per memtable, so a switch shows as a drop.
        let per_buffer = buffer / (entry_bytes + 64).max(1);
        let mut t = Tracker {
            every: (per_buffer / 16).clamp(8, 1024),
            since: 0,
            in_current: 0,
            last_bytes: 0,
            switches: 0,
            probe_time: Duration::ZERO,
            last: None,
            full: None,
            reps: Vec::new(),
        };
        t.probe(engine);
        if let Some(r) = t.last.as_ref().and_then(|p| p.rep.clone()) {
            t.reps.push(r);
        }
        t
    }

    #[inline]
    fn inserted(&mut self, engine: &dyn Engine) {
        self.since += 1;
        if self.since >= self.every {
            self.probe(engine);
        }
    }

    fn probe(&mut self, engine: &dyn Engine) {
        let t0 = Instant::now();
        if let Some(p) = engine.memtable_probe() {
            if p.bytes < self.last_bytes {
                // A switch: the new memtable holds at most the inserts since
                // the last probe.
                self.switches += 1;
                if self.in_current > 0 {
                    self.full = Some(self.last_bytes as f64 / self.in_current as f64);
                }
                self.in_current = self.since;
                if let Some(r) = &p.rep {
                    self.reps.push(r.clone());
                }
            } else {
                self.in_current += self.since;
            }
            self.last_bytes = p.bytes;
            self.last = Some(p);
        } else {
            self.in_current += self.since;
        }
        self.since = 0;
        self.probe_time += t0.elapsed();
    }

    fn take_probe_time(&mut self) -> Duration {
        std::mem::take(&mut self.probe_time)
    }

    fn entries(&self) -> Option<u64> {
        match &self.last {
            Some(MemProbe {
                entries: Some(n), ..
            }) => Some(*n),
            _ => Some(self.in_current),
        }
    }

    /// Memtable bytes per entry: of the current memtable(s) when the
    /// engine counts entries or no switch happened; else of the last full
    /// memtable before a switch (the current one may be nearly empty, its
    /// fixed costs spread over few entries).
    fn bytes_per_entry(&self) -> Option<f64> {
        let p = self.last.as_ref()?;
        if p.entries.is_none()
            && let Some(f) = self.full
        {
            return Some(f);
        }
        let n = self.entries()?;
        (n > 0 && p.bytes > 0).then(|| p.bytes as f64 / n as f64)
    }

    fn exact(&self) -> bool {
        self.switches == 0 || self.last.as_ref().is_some_and(|p| p.entries.is_some())
    }

    fn extra(&self, extra: &mut serde_json::Map<String, serde_json::Value>) {
        if let Some(p) = &self.last {
            extra.insert("memtable_bytes".into(), json!(p.bytes));
            extra.insert("immutable_memtables".into(), json!(p.immutable));
            if let Some(r) = &p.rep {
                extra.insert("memtable_rep".into(), json!(r));
            }
            if let Some(d) = &p.decision {
                extra.insert("memtable_decision".into(), json!(d));
            }
        }
        extra.insert("memtable_entries".into(), json!(self.entries()));
        extra.insert("memtable_switches".into(), json!(self.switches));
        extra.insert("bytes_per_entry_exact".into(), json!(self.exact()));
        if !self.reps.is_empty() {
            extra.insert("memtable_reps".into(), json!(self.reps));
        }
    }
}

/// One run (engine, kind, order) in progress.
struct Run<'a> {
    suite: &'a MemSuite,
    target: Target,
    settings: BenchSettings,
    engine: Arc<dyn Engine>,
    dir: PathBuf,
    notes: Vec<String>,
    state: RunState,
    tracker: Tracker,
    values: ValueGen,
    key: Vec<u8>,
    run_id: &'a str,
}

impl<'a> Run<'a> {
    fn open(
        suite: &'a MemSuite,
        target: Target,
        settings: BenchSettings,
        label: &str,
        buffer: u64,
        run_id: &'a str,
    ) -> Result<Run<'a>> {
        let dir = suite
            .db_root
            .join(format!("memtable-{}-{label}", target.dir_name()));
        crate::runner::fresh_dir(&dir, false)?;
        sysinfo::reset_peak_rss();
        let engine = open_engine(target.engine, &settings, &dir)
            .map_err(|e| Error(format!("{}/{}: {e}", target.engine, target.variant())))?;
        let notes = engine.notes();
        let tracker = Tracker::new(engine.as_ref(), buffer, settings.entry_bytes());
        let values = ValueGen::new(
            settings.value_size,
            settings.value_random_fraction,
            settings.seed,
        );
        Ok(Run {
            suite,
            target,
            state: RunState::new(settings.num),
            key: Vec::with_capacity(settings.key_size),
            settings,
            engine,
            dir,
            notes,
            tracker,
            values,
            run_id,
        })
    }

    #[inline]
    fn put(&mut self, k: u64) -> Result<Duration> {
        encode_key(k, self.settings.key_size, &mut self.key);
        let v = self.values.next_value();
        let t0 = Instant::now();
        self.engine.put(&self.key, v)?;
        let d = t0.elapsed();
        self.state
            .user_bytes_written
            .fetch_add((self.key.len() + v.len()) as u64, Ordering::Relaxed);
        self.tracker.inserted(self.engine.as_ref());
        Ok(d)
    }

    #[inline]
    fn get(&mut self, k: u64) -> Result<(Duration, Option<usize>)> {
        encode_key(k, self.settings.key_size, &mut self.key);
        let t0 = Instant::now();
        let got = self.engine.get(&self.key)?;
        Ok((t0.elapsed(), got))
    }

    /// A range query over `[start, start + width)` of the key domain.
    #[inline]
    fn range(&mut self, start: u64, width: u64) -> Result<(Duration, u64, u64)> {
        let end = start.saturating_add(width);
        encode_key(start, self.settings.key_size, &mut self.key);
        let mut n = 0u64;
        let mut bytes = 0u64;
        let t0 = Instant::now();
        self.engine.iterate(&self.key, &mut |k, v| {
            if decode_key(k).is_none_or(|i| i >= end) {
                return false;
            }
            n += 1;
            bytes += (k.len() + v.len()) as u64;
            true
        })?;
        Ok((t0.elapsed(), n, bytes))
    }

    /// A scan of `n` entries from `start`.
    #[inline]
    fn scan(&mut self, start: u64, n: usize) -> Result<(Duration, u64)> {
        encode_key(start, self.settings.key_size, &mut self.key);
        let t0 = Instant::now();
        let (_, bytes) = self.engine.scan(&self.key, n)?;
        Ok((t0.elapsed(), bytes))
    }

    fn record(
        &mut self,
        workload: &str,
        description: &str,
        ph: &Phase,
        elapsed: Duration,
        mut extra: serde_json::Map<String, serde_json::Value>,
        by_kind: BTreeMap<&'static str, Histogram<u64>>,
    ) -> Record {
        self.tracker.probe(self.engine.as_ref());
        self.tracker.take_probe_time();
        extra.insert("planned_ops".into(), json!(ph.planned));
        extra.insert("truncated".into(), json!(ph.truncated));
        extra.insert("budget_secs".into(), json!(self.suite.budget.as_secs_f64()));
        extra.insert("busy_seconds".into(), json!(ph.busy.as_secs_f64()));
        if ph.found > 0 || workload.contains("get") {
            extra.insert("found".into(), json!(ph.found));
        }
        if ph.entries > 0 || workload.contains("range") {
            extra.insert("entries_scanned".into(), json!(ph.entries));
            extra.insert(
                "entries_per_range".into(),
                json!(ph.entries as f64 / ph.ops.max(1) as f64),
            );
        }
        self.tracker.extra(&mut extra);
        let o = Outcome {
            hist: ph.hist.clone(),
            ops: ph.ops,
            bytes: ph.bytes,
            elapsed,
            by_kind,
            extra,
        };
        let mut r = make_named_record(
            &self.target,
            workload,
            description,
            &o,
            self.engine.as_ref(),
            &self.settings,
            &self.state,
            None,
            &self.notes,
            1,
            1,
            Some("memtable"),
            self.run_id,
        );
        if ph.ops == 0 {
            r.ops_per_sec = 0.0;
        }
        r.bytes_per_entry = self.tracker.bytes_per_entry();
        r.flushes = self.tracker.last.as_ref().map(|p| p.flushes);
        r
    }

    fn close(self) -> Result<()> {
        self.engine.close()?;
        drop(self.engine);
        // Scratch databases: keep the disk free for the next run.
        let _ = std::fs::remove_dir_all(&self.dir);
        Ok(())
    }
}

/// The settings of one run.
fn run_settings(
    suite: &MemSuite,
    kind: &str,
    buffer: u64,
    buckets: Option<usize>,
) -> BenchSettings {
    BenchSettings {
        memtable: Some(kind.to_string()),
        write_buffer_size: buffer,
        hash_buckets: buckets,
        ..suite.settings.clone()
    }
}

fn range_width() -> u64 {
    (u64::MAX as f64 * STUDY_SELECTIVITY) as u64
}

fn sequential(suite: &MemSuite, data: &Data, target: &Target, run_id: &str) -> Result<Vec<Record>> {
    let kind = target.variant();
    let settings = run_settings(suite, &kind, suite.buffer, Some(suite.buckets));
    let mut run = Run::open(suite, target.clone(), settings, "seq", suite.buffer, run_id)?;
    let budget = suite.budget;
    let mut out = Vec::new();

    // Inserts.
    let mut ph = Phase::new(data.keys.len() as u64);
    let entry = run.settings.entry_bytes();
    let start = Instant::now();
    for &k in &data.keys {
        let d = run.put(k)?;
        ph.record(d, entry);
        if ph.out_of_time(start, budget, d) {
            break;
        }
    }
    ph.wall = start
        .elapsed()
        .saturating_sub(run.tracker.take_probe_time());
    let inserted = ph.ops as usize;
    let wall = ph.wall;
    out.push(run.record(
        "mem-insert",
        describe_phase("mem-insert"),
        &ph,
        wall,
        order_extra("sequential"),
        BTreeMap::new(),
    ));

    // Empty point queries.
    let mut ph = Phase::new(data.misses.len() as u64);
    let start = Instant::now();
    for &k in &data.misses {
        let (d, got) = run.get(k)?;
        ph.record(d, 0);
        ph.found += u64::from(got.is_some());
        if ph.out_of_time(start, budget, d) {
            break;
        }
    }
    ph.wall = start.elapsed();
    let wall = ph.wall;
    out.push(run.record(
        "mem-get-miss",
        describe_phase("mem-get-miss"),
        &ph,
        wall,
        order_extra("sequential"),
        BTreeMap::new(),
    ));

    // Non-empty point queries, uniform among the inserted keys.
    let mut rng = StdRng::seed_from_u64(suite.settings.seed ^ 0x417);
    let mut ph = Phase::new(suite.point_queries);
    let start = Instant::now();
    for _ in 0..suite.point_queries {
        let k = data.keys[rng.random_range(0..inserted.max(1))];
        let (d, got) = run.get(k)?;
        ph.record(d, got.map_or(0, |l| (run.settings.key_size + l) as u64));
        ph.found += u64::from(got.is_some());
        if ph.out_of_time(start, budget, d) {
            break;
        }
    }
    ph.wall = start.elapsed();
    let wall = ph.wall;
    out.push(run.record(
        "mem-get-hit",
        describe_phase("mem-get-hit"),
        &ph,
        wall,
        order_extra("sequential"),
        BTreeMap::new(),
    ));

    // Range queries.
    let mut rng = StdRng::seed_from_u64(suite.settings.seed ^ 0x4a7e);
    let width = range_width();
    let mut ph = Phase::new(suite.range_queries);
    let start = Instant::now();
    for _ in 0..suite.range_queries {
        let s: u64 = rng.random_range(0..u64::MAX - width);
        let (d, n, bytes) = run.range(s, width)?;
        ph.record(d, bytes);
        ph.entries += n;
        if ph.out_of_time(start, budget, d) {
            break;
        }
    }
    ph.wall = start.elapsed();
    let wall = ph.wall;
    out.push(run.record(
        "mem-range",
        describe_phase("mem-range"),
        &ph,
        wall,
        order_extra("sequential"),
        BTreeMap::new(),
    ));
    run.close()?;
    Ok(out)
}

fn order_extra(order: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("order".into(), json!(order));
    m.insert(
        "throughput_basis".into(),
        json!(if order == "sequential" {
            "wall time of the phase"
        } else {
            "sum of the latencies of this operation type"
        }),
    );
    m
}

fn interleaved_run(
    suite: &MemSuite,
    data: &Data,
    target: &Target,
    run_id: &str,
) -> Result<Vec<Record>> {
    let kind = target.variant();
    let settings = run_settings(suite, &kind, suite.buffer, Some(suite.buckets));
    let mut run = Run::open(suite, target.clone(), settings, "int", suite.buffer, run_id)?;
    let budget = suite.stream_budget;
    // Warm-up: not measured.
    for &k in &data.keys[..data.warmup] {
        run.put(k)?;
    }
    let mut inserted = data.warmup;
    let mut misses = 0usize;
    let mut hit_rng = StdRng::seed_from_u64(suite.settings.seed ^ 0x4171);
    let mut range_rng = StdRng::seed_from_u64(suite.settings.seed ^ 0x4a7e1);
    let width = range_width();
    let planned = |t: OpTag| data.stream.iter().filter(|x| **x == t).count() as u64;
    let mut phases = [
        Phase::new(planned(OpTag::Insert)),
        Phase::new(planned(OpTag::Miss)),
        Phase::new(planned(OpTag::Hit)),
        Phase::new(planned(OpTag::Range)),
    ];
    let entry = run.settings.entry_bytes();
    let key_size = run.settings.key_size as u64;
    let start = Instant::now();
    let mut draining = false;
    for &op in &data.stream {
        let ph = &mut phases[op as usize];
        match op {
            OpTag::Insert => {
                let d = run.put(data.keys[inserted])?;
                inserted += 1;
                ph.record(d, entry);
            }
            OpTag::Miss => {
                let (d, got) = run.get(data.misses[misses])?;
                misses += 1;
                ph.record(d, 0);
                ph.found += u64::from(got.is_some());
            }
            OpTag::Hit => {
                let k = data.keys[hit_rng.random_range(0..inserted.max(1))];
                let (d, got) = run.get(k)?;
                ph.record(d, got.map_or(0, |l| key_size + l as u64));
                ph.found += u64::from(got.is_some());
            }
            OpTag::Range => {
                let s: u64 = range_rng.random_range(0..u64::MAX - width);
                let (d, n, bytes) = run.range(s, width)?;
                ph.record(d, bytes);
                ph.entries += n;
            }
        }
        let now = start.elapsed();
        if !draining && now > budget {
            draining = true;
        }
        if draining
            && (now > budget + budget / 4
                || phases
                    .iter()
                    .all(|p| p.ops >= p.planned.min(MIN_DRAIN_SAMPLES)))
        {
            break;
        }
    }
    let wall = start
        .elapsed()
        .saturating_sub(run.tracker.take_probe_time());
    let mut out = Vec::new();
    for (i, ph) in phases.iter_mut().enumerate() {
        ph.truncated = ph.ops < ph.planned;
        ph.wall = wall;
        let name = interleaved(PHASES[i]);
        let mut extra = order_extra("interleaved");
        extra.insert("warmup_inserts".into(), json!(data.warmup));
        extra.insert("stream_wall_seconds".into(), json!(wall.as_secs_f64()));
        let busy = ph.busy;
        out.push(run.record(
            &name,
            describe_phase(&name),
            ph,
            busy.max(Duration::from_nanos(1)),
            extra,
            BTreeMap::new(),
        ));
    }
    run.close()?;
    Ok(out)
}

/// Buckets for a mix buffer: the given count when its array fits half the
/// buffer, else automatic (noted).
fn mix_buckets(suite: &MemSuite) -> (Option<usize>, Option<String>) {
    match suite.settings.hash_buckets {
        Some(b) if (b as u64) * 8 > suite.mix_buffer / 2 => (
            None,
            Some(format!(
                "mixes: --hash-buckets {b} does not fit the {} mix buffer; automatic bucket count used",
                report::human_bytes(suite.mix_buffer)
            )),
        ),
        b => (b, None),
    }
}

fn mix_run(suite: &MemSuite, mix: &Mix, kind: &str, run_id: &str) -> Result<Record> {
    let target = Target {
        engine: EngineKind::Strata,
        memtable: Some(kind.to_string()),
    };
    let (buckets, note) = mix_buckets(suite);
    let settings = run_settings(suite, kind, suite.mix_buffer, buckets);
    let label = mix.name.trim_start_matches("mix-").to_string();
    let mut run = Run::open(suite, target, settings, &label, suite.mix_buffer, run_id)?;
    if let Some(n) = note {
        run.notes.push(n);
    }
    let total = (suite.mix_inserts as f64 / mix.insert).round() as u64;
    let per_buffer = suite.mix_buffer / (run.settings.entry_bytes() + 64);
    let window = (per_buffer / 2).max(64) as usize;
    let mut rng = StdRng::seed_from_u64(suite.settings.seed ^ 0x31c5 ^ (mix.name.len() as u64));
    let mut inserted: Vec<u64> = Vec::with_capacity(suite.mix_inserts as usize + 16);
    let mut ph = Phase::new(total);
    let mut by_kind: BTreeMap<&'static str, Histogram<u64>> = BTreeMap::new();
    let mut counts: BTreeMap<&'static str, u64> = BTreeMap::new();
    let entry = run.settings.entry_bytes();
    let budget = suite.budget;
    let start = Instant::now();
    for _ in 0..total {
        let r: f64 = rng.random();
        let recent = |rng: &mut StdRng, v: &[u64]| {
            let w = window.min(v.len());
            v[v.len() - 1 - rng.random_range(0..w)]
        };
        let (what, d, bytes) = if r < mix.insert || inserted.is_empty() {
            let k: u64 = rng.random();
            let d = run.put(k)?;
            inserted.push(k);
            ("insert", d, entry)
        } else if r < mix.insert + mix.point {
            let k = recent(&mut rng, &inserted);
            let (d, got) = run.get(k)?;
            ph.found += u64::from(got.is_some());
            (
                "get",
                d,
                got.map_or(0, |l| (run.settings.key_size + l) as u64),
            )
        } else {
            let k = recent(&mut rng, &inserted);
            let (d, bytes) = run.scan(k, MIX_SCAN_ENTRIES)?;
            ("scan", d, bytes)
        };
        ph.record(d, bytes);
        by_kind
            .entry(what)
            .or_insert_with(new_hist)
            .saturating_record(d.as_nanos().max(1) as u64);
        *counts.entry(what).or_insert(0) += 1;
        if ph.out_of_time(start, budget, d) {
            break;
        }
    }
    ph.wall = start
        .elapsed()
        .saturating_sub(run.tracker.take_probe_time());
    let mut extra = serde_json::Map::new();
    extra.insert("order".into(), json!("mix"));
    extra.insert("mix".into(), json!(mix.describe));
    extra.insert(
        "shares".into(),
        json!({"insert": mix.insert, "point": mix.point, "range": mix.range}),
    );
    extra.insert("op_counts".into(), json!(counts));
    extra.insert("mix_buffer_bytes".into(), json!(suite.mix_buffer));
    extra.insert("recent_window".into(), json!(window));
    extra.insert("throughput_basis".into(), json!("wall time of the mix"));
    let wall = ph.wall;
    let r = run.record(mix.name, mix.describe, &ph, wall, extra, by_kind);
    run.close()?;
    Ok(r)
}

fn emit(json: Option<&Path>, r: &Record) -> Result<()> {
    let mut line = summary_line(r);
    if let Some(b) = r.bytes_per_entry {
        let _ = write!(line, "  {b:.1} B/entry");
    }
    if let Some(f) = r.flushes {
        let _ = write!(line, "  {f} flushes");
    }
    if r.extra.get("truncated").and_then(|v| v.as_bool()) == Some(true) {
        line.push_str("  (stopped at the time budget)");
    }
    println!("{line}");
    if let Some(p) = json {
        append(p, std::slice::from_ref(r))?;
    }
    Ok(())
}

/// Runs the suite; prints a line per record, appends them to the JSON file
/// and returns them.
pub fn run(suite: &MemSuite) -> Result<Vec<Record>> {
    let run_id = format!("{}-{}", sysinfo::unix_seconds(), std::process::id());
    let data = Data::new(suite);
    let mut targets: Vec<Target> = suite
        .kinds
        .iter()
        .map(|k| Target {
            engine: EngineKind::Strata,
            memtable: Some(k.clone()),
        })
        .collect();
    targets.extend(suite.rocksdb_kinds.iter().map(|k| Target {
        engine: EngineKind::RocksDb,
        memtable: Some(k.clone()),
    }));
    let json = suite.json.as_deref();
    let mut out = Vec::new();
    for t in targets.iter().filter(|_| suite.experiment) {
        for r in sequential(suite, &data, t, &run_id)? {
            emit(json, &r)?;
            out.push(r);
        }
        for r in interleaved_run(suite, &data, t, &run_id)? {
            emit(json, &r)?;
            out.push(r);
        }
    }
    if suite.mixes {
        for mix in &MIXES {
            out.extend(mix_rounds(suite, mix, &run_id)?);
        }
    }
    Ok(out)
}

/// Runs `mix` over every kind for `mix_rounds` rounds (the kinds in
/// alternating order) and returns the median record of each kind by ops/s.
/// A kind whose first round stopped at the budget is not run again.
fn mix_rounds(suite: &MemSuite, mix: &Mix, run_id: &str) -> Result<Vec<Record>> {
    let json = suite.json.as_deref();
    let rounds = suite.mix_rounds.max(1);
    let mut per_kind: Vec<Vec<Record>> = vec![Vec::new(); suite.kinds.len()];
    for round in 0..rounds {
        let mut order: Vec<usize> = (0..suite.kinds.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            if per_kind[i].first().is_some_and(truncated) {
                continue;
            }
            let mut r = mix_run(suite, mix, &suite.kinds[i], run_id)?;
            r.round = round + 1;
            r.rounds = rounds;
            r.median = rounds == 1;
            emit(json, &r)?;
            per_kind[i].push(r);
        }
    }
    let mut out = Vec::new();
    for recs in per_kind {
        let Some(mut m) = median_of(&recs) else {
            continue;
        };
        m.rounds = recs.len() as u32;
        let all: Vec<f64> = recs.iter().map(|r| r.ops_per_sec).collect();
        m.extra.insert("rounds_ops_per_sec".into(), json!(all));
        if rounds > 1
            && let Some(p) = json
        {
            append(p, std::slice::from_ref(&m))?;
        }
        out.push(m);
    }
    Ok(out)
}

// ---------------------------------------------------------------------
// Report

fn find<'a>(
    records: &'a [Record],
    engine: &str,
    variant: &str,
    workload: &str,
) -> Option<&'a Record> {
    records
        .iter()
        .rev()
        .find(|r| r.engine == engine && r.variant == variant && r.workload == workload)
}

fn truncated(r: &Record) -> bool {
    r.extra.get("truncated").and_then(|v| v.as_bool()) == Some(true)
}

fn planned(r: &Record) -> u64 {
    r.extra
        .get("planned_ops")
        .and_then(|v| v.as_u64())
        .unwrap_or(r.ops)
}

fn lat(us: f64) -> String {
    if us < 10.0 {
        format!("{us:.2}")
    } else if us < 1000.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.0}")
    }
}

fn ops(r: &Record) -> String {
    let p = planned(r);
    if r.ops < p {
        format!("{} of {} ⏱", r.ops, p)
    } else {
        r.ops.to_string()
    }
}

fn bpe(r: &Record) -> String {
    match r.bytes_per_entry {
        Some(b) => {
            let exact = r
                .extra
                .get("bytes_per_entry_exact")
                .and_then(|v| v.as_bool())
                .unwrap_or(true);
            format!("{b:.1}{}", if exact { "" } else { "~" })
        }
        None => "n/a".into(),
    }
}

fn workloads(records: &[Record]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut want: Vec<String> = PHASES.iter().map(|p| p.to_string()).collect();
    want.extend(PHASES.iter().map(|p| interleaved(p)));
    want.extend(MIXES.iter().map(|m| m.name.to_string()));
    for w in want {
        if records.iter().any(|r| r.workload == w) {
            out.push(w);
        }
    }
    out
}

/// One markdown table per phase.
pub fn phase_tables(records: &[Record]) -> String {
    let mut s = String::new();
    for w in workloads(records) {
        let rows: Vec<&Record> = records.iter().filter(|r| r.workload == w).collect();
        let is_mix = w.starts_with("mix-");
        let _ = writeln!(s, "#### {w}\n");
        let desc = MIXES
            .iter()
            .find(|m| m.name == w)
            .map(|m| m.describe)
            .unwrap_or_else(|| describe_phase(&w));
        let _ = writeln!(s, "{desc}.\n");
        if is_mix {
            let _ = writeln!(
                s,
                "| engine | kind | ops/s | p50 µs | p99 µs | bytes/entry | flushes | switches | representations | ops |"
            );
            let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|---|---:|");
        } else {
            let _ = writeln!(
                s,
                "| engine | kind | ops/s | p50 µs | p99 µs | bytes/entry | flushes | ops |"
            );
            let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|");
        }
        for r in rows {
            let mut cells = vec![
                r.engine.clone(),
                r.variant.clone(),
                report::thousands(r.ops_per_sec),
                lat(r.p50_us),
                lat(r.p99_us),
                bpe(r),
                r.flushes.map_or("n/a".into(), |f| f.to_string()),
            ];
            if is_mix {
                cells.push(
                    r.extra
                        .get("memtable_switches")
                        .and_then(|v| v.as_u64())
                        .map_or("n/a".into(), |v| v.to_string()),
                );
                cells.push(reps_summary(r));
            }
            cells.push(ops(r));
            let _ = writeln!(s, "| {} |", cells.join(" | "));
        }
        let _ = writeln!(s);
    }
    s
}

/// `skiplist → vector ×8` for the representations a run went through.
fn reps_summary(r: &Record) -> String {
    let reps: Vec<String> = r
        .extra
        .get("memtable_reps")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut runs: Vec<(String, usize)> = Vec::new();
    for x in reps {
        match runs.last_mut() {
            Some((k, n)) if *k == x => *n += 1,
            _ => runs.push((x, 1)),
        }
    }
    runs.iter()
        .map(|(k, n)| {
            if *n > 1 {
                format!("{k} ×{n}")
            } else {
                k.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" → ")
}

fn ratio_row(
    s: &mut String,
    check: &str,
    num: Option<&Record>,
    den: Option<&Record>,
    target: f64,
    target_text: &str,
) {
    match (num, den) {
        (Some(a), Some(b)) if b.ops_per_sec > 0.0 && a.ops > 0 => {
            let x = a.ops_per_sec / b.ops_per_sec;
            let caveat = if truncated(a) || truncated(b) {
                " (a run stopped at the budget)"
            } else {
                ""
            };
            let _ = writeln!(
                s,
                "| {check} | {} vs {} ops/s | **{x:.2}×**{caveat} | {target_text} | {} |",
                report::thousands(a.ops_per_sec),
                report::thousands(b.ops_per_sec),
                if x >= target { "yes" } else { "**no**" }
            );
        }
        _ => {
            let _ = writeln!(s, "| {check} | n/a | n/a | {target_text} | n/a |");
        }
    }
}

/// The ratios the issue asks about.
pub fn ratios(records: &[Record]) -> String {
    let mut s = String::new();
    let st = |v: &str, w: &str| find(records, "strata", v, w);
    let _ = writeln!(s, "| check | throughput | ratio | target | met |");
    let _ = writeln!(s, "|---|---|---:|---|---|");
    for w in ["mem-insert", "mem-insert-interleaved", "mix-insert-only"] {
        ratio_row(
            &mut s,
            &format!("vector / skiplist, inserts (`{w}`)"),
            st("vector", w),
            st("skiplist", w),
            5.0,
            "≥ 5×",
        );
    }
    for hash in ["hash-skiplist", "hash-linklist"] {
        for w in [
            "mem-get-hit",
            "mem-get-miss",
            "mem-get-hit-interleaved",
            "mem-get-miss-interleaved",
        ] {
            ratio_row(
                &mut s,
                &format!("{hash} / skiplist, point reads (`{w}`)"),
                st(hash, w),
                st("skiplist", w),
                2.0,
                "≥ 2×",
            );
        }
    }
    for w in ["mem-range", "mem-range-interleaved"] {
        let rows: Vec<&Record> = records
            .iter()
            .filter(|r| r.engine == "strata" && r.workload == w && r.ops > 0)
            .collect();
        if let Some(best) = rows
            .iter()
            .max_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec))
        {
            let skip = rows.iter().find(|r| r.variant == "skiplist");
            let _ = writeln!(
                s,
                "| fastest Strata kind for range queries (`{w}`) | {} ops/s{} | {} | skiplist | {} |",
                report::thousands(best.ops_per_sec),
                skip.map_or(String::new(), |k| format!(
                    " (skiplist {})",
                    report::thousands(k.ops_per_sec)
                )),
                best.variant,
                if best.variant == "skiplist" {
                    "yes"
                } else {
                    "**no**"
                }
            );
        }
    }
    for m in &MIXES {
        let Some(ad) = st("adaptive", m.name) else {
            continue;
        };
        let best = records
            .iter()
            .filter(|r| {
                r.engine == "strata" && r.workload == m.name && r.variant != "adaptive" && r.ops > 0
            })
            .max_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
        let per_round = best
            .map(|b| paired_ratios(&round_figures(ad), &round_figures(b)))
            .filter(|r| r.len() > 1)
            .map_or(String::new(), |r| {
                let lo = r.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = r.iter().copied().fold(0.0, f64::max);
                format!(
                    "; per round {lo:.2}-{hi:.2}×, median {:.2}×",
                    median_f64(&r)
                )
            });
        ratio_row(
            &mut s,
            &format!(
                "adaptive / best fixed kind ({}) on `{}`; adaptive chose {}{per_round}",
                best.map_or("n/a", |b| b.variant.as_str()),
                m.name,
                reps_summary(ad)
            ),
            Some(ad),
            best,
            0.9,
            "≥ 0.90× (within 10 %)",
        );
    }
    s
}

/// The per-round ops/s a median record of the mixes carries.
fn round_figures(r: &Record) -> Vec<f64> {
    r.extra
        .get("rounds_ops_per_sec")
        .and_then(|v| v.as_array())
        .map(|v| v.iter().filter_map(|x| x.as_f64()).collect())
        .unwrap_or_default()
}

/// Per-round throughput ratios `a[i] / b[i]`, rounds paired by number (both
/// kinds ran in every round, in alternating order); empty when the round
/// counts differ. On a noisy host the median of these is steadier than the
/// ratio of two medians.
fn paired_ratios(a: &[f64], b: &[f64]) -> Vec<f64> {
    if a.len() != b.len() {
        return Vec::new();
    }
    a.iter()
        .zip(b)
        .filter(|(_, y)| **y > 0.0)
        .map(|(x, y)| x / y)
        .collect()
}

fn median_f64(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Each Strata kind against its RocksDB counterpart on the workload the
/// study favours it for.
pub fn versus_rocksdb(records: &[Record]) -> Option<String> {
    if !records.iter().any(|r| r.engine == "rocksdb") {
        return None;
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| kind | favoured workload | Strata ops/s | RocksDB ops/s | Strata / RocksDB | Strata p50 / p99 µs | RocksDB p50 / p99 µs | bytes/entry Strata / RocksDB |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---|---|---|");
    let pairs = [
        ("skiplist", "mem-range"),
        ("skiplist", "mem-range-interleaved"),
        ("vector", "mem-insert"),
        ("hash-skiplist", "mem-get-hit"),
        ("hash-skiplist", "mem-get-miss"),
        ("hash-linklist", "mem-get-hit"),
        ("hash-linklist", "mem-get-miss"),
    ];
    for (kind, w) in pairs {
        let (Some(a), Some(b)) = (
            find(records, "strata", kind, w),
            find(records, "rocksdb", kind, w),
        ) else {
            continue;
        };
        let ratio = if b.ops_per_sec > 0.0 {
            format!("{:.2}×", a.ops_per_sec / b.ops_per_sec)
        } else {
            "n/a".into()
        };
        let _ = writeln!(
            s,
            "| {kind} | `{w}` | {}{} | {}{} | {ratio} | {} / {} | {} / {} | {} / {} |",
            report::thousands(a.ops_per_sec),
            if truncated(a) { " ⏱" } else { "" },
            report::thousands(b.ops_per_sec),
            if truncated(b) { " ⏱" } else { "" },
            lat(a.p50_us),
            lat(a.p99_us),
            lat(b.p50_us),
            lat(b.p99_us),
            bpe(a),
            bpe(b),
        );
    }
    Some(s)
}

/// Which runs kept every insert in one memtable.
pub fn verification(records: &[Record]) -> String {
    let mut held = Vec::new();
    let mut spilled = Vec::new();
    for r in records.iter().filter(|r| r.workload.starts_with("mem-")) {
        let name = format!("{}/{}", r.engine, r.variant);
        let switches = r
            .extra
            .get("memtable_switches")
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        let imm = r
            .extra
            .get("immutable_memtables")
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        let bad = r.flushes.unwrap_or(0) > 0 || switches > 0 || imm > 0;
        if bad {
            let what = format!(
                "{name} `{}` ({} flushes, {switches} switches)",
                r.workload,
                r.flushes.unwrap_or(0)
            );
            if !spilled
                .iter()
                .any(|x: &String| x.starts_with(&format!("{name} ")))
            {
                spilled.push(what);
            }
        } else if !held.contains(&name) {
            held.push(name);
        }
    }
    held.retain(|h| !spilled.iter().any(|x| x.starts_with(&format!("{h} "))));
    let mut s = String::new();
    if spilled.is_empty() {
        let _ = writeln!(
            s,
            "**One memtable:** every run of the experiment kept all its inserts in one memtable \
             (0 flushes, no memtable switch): {}.\n",
            held.join(", ")
        );
    } else {
        let _ = writeln!(
            s,
            "**One memtable: not everywhere.** Held everything: {}. \
             **Switched or flushed**: {}; their later phases also read flushed tables.\n",
            if held.is_empty() {
                "none".into()
            } else {
                held.join(", ")
            },
            spilled.join("; ")
        );
    }
    s
}

/// The markdown section of the suite.
pub fn markdown(records: &[Record], info: &ReportInfo<'_, MemSuite>) -> String {
    let mut s = String::new();
    let su = info.suite;
    let m = info.machine;
    let _ = writeln!(s, "### `memtable` suite, {}\n", info.timestamp);
    let _ = writeln!(
        s,
        "Machine: {} CPUs (`nproc`), {}, {} RAM, Linux {}. Load average (1/5/15 min) at the start: {}; \
         at the end: {} (the machine is shared: absolute numbers move with the load).\n",
        m.cpus,
        m.cpu_model,
        report::human_bytes(m.memory_bytes),
        m.kernel,
        info.load_start,
        info.load_end
    );
    let _ = writeln!(s, "Command:\n\n```sh\n{}\n```\n", info.command);
    let st = &su.settings;
    let _ = writeln!(
        s,
        "The memory-buffer study's in-memory experiment: {} inserts of {} B entries ({} B keys, uniformly random; \
         {} B values), a {} write buffer, {} empty and {} non-empty point queries, {} range queries of \
         selectivity {}% (each covers 0.1% of the key domain, so about {:.0} entries), sequentially and interleaved \
         after a {}% warm-up (one random order, seed {}, for every kind). Hash memtables: fixed {}-byte prefix, \
         {} buckets{}. WAL {}. Single-threaded. Per-operation latency from `Instant` around each call. \
         {} Sequential ops/s are per phase wall time; interleaved ops/s are operations over the time spent in \
         operations of that type. bytes/entry is memtable bytes (Strata: `KeyspaceStats::memtable_bytes`; RocksDB: \
         `rocksdb.cur-size-all-mem-tables`) over memtable entries (`~`: estimated within one probe interval \
         after a memtable switch). ⏱: the phase stopped at its budget ({} s a phase, `--max-phase-secs`; \
         {} s an interleaved stream, `--max-stream-secs`); its figures cover the operations done.\n",
        report::thousands(su.inserts as f64),
        st.entry_bytes(),
        st.key_size,
        st.value_size,
        report::human_bytes(su.buffer),
        report::thousands(su.point_queries as f64),
        report::thousands(su.point_queries as f64),
        report::thousands(su.range_queries as f64),
        STUDY_SELECTIVITY * 100.0,
        su.inserts as f64 * STUDY_SELECTIVITY,
        STUDY_WARMUP * 100.0,
        st.seed,
        st.prefix_len.unwrap_or(crate::settings::DEFAULT_PREFIX_LEN),
        report::thousands(su.buckets as f64),
        st.linklist_threshold
            .map_or(String::new(), |t| format!(", linklist threshold {t}")),
        if st.disable_wal { "off" } else { "on" },
        if su.buffer == SUITE_BUFFER {
            "The buffer is 192 MiB, not the study's 128 MB, so that every kind of both engines holds all \
             744K entries in one memtable: the hash kinds charge 165-220 B per 128-byte entry (Strata and \
             RocksDB), and 744K entries of 181 B or more overflow 128 MiB."
        } else {
            ""
        },
        su.budget.as_secs_f64(),
        su.stream_budget.as_secs_f64(),
    );
    if su.mixes {
        let _ = writeln!(
            s,
            "Adaptive mixes: {} inserts per mix on a {} buffer (several memtable switches), every Strata kind, \
             keys uniformly random, reads and scans from the most recent half buffer of keys; ops/s over the \
             mix's wall time, median of {} round(s) (kinds in alternating order; a run stopped at the budget is \
             not repeated).\n",
            report::thousands(su.mix_inserts as f64),
            report::human_bytes(su.mix_buffer),
            su.mix_rounds
        );
    }
    s.push_str(&verification(records));
    let _ = writeln!(s, "#### Targets of the issue\n");
    s.push_str(&ratios(records));
    let _ = writeln!(s);
    if let Some(t) = versus_rocksdb(records) {
        let _ = writeln!(
            s,
            "#### Strata against RocksDB, each kind on its favoured workload\n"
        );
        s.push_str(&t);
        let _ = writeln!(s);
    }
    s.push_str(&phase_tables(records));
    let mut notes: Vec<String> = records
        .iter()
        .flat_map(|r| r.notes.iter().cloned())
        .collect();
    notes.sort();
    notes.dedup();
    let stopped: Vec<String> = records
        .iter()
        .filter(|r| truncated(r))
        .map(|r| {
            format!(
                "{}/{} `{}`: {} of {} operations within the budget",
                r.engine,
                r.variant,
                r.workload,
                r.ops,
                planned(r)
            )
        })
        .collect();
    if !notes.is_empty() || !stopped.is_empty() {
        let _ = writeln!(s, "#### Notes\n");
        for n in notes.iter().chain(&stopped) {
            let _ = writeln!(s, "- {n}");
        }
        let _ = writeln!(s);
    }
    if !info.charts.is_empty() {
        let _ = writeln!(s, "#### Charts\n");
        for c in &info.charts {
            let name = Path::new(c)
                .file_stem()
                .and_then(|n| n.to_str())
                .unwrap_or(c);
            let _ = writeln!(s, "![{name}]({c})");
        }
        let _ = writeln!(s);
    }
    s
}

/// Draws the suite's charts into `dir`: ops/s bars per phase and kind
/// (sequential, interleaved, mixes) and bytes per entry per kind.
pub fn charts(records: &[Record], dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let series = |rs: &[&Record]| -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for r in rs {
            let n = format!("{}/{}", r.engine, r.variant);
            if !v.contains(&n) {
                v.push(n);
            }
        }
        v
    };
    let mut out = Vec::new();
    let groups: [(&str, Vec<String>); 3] = [
        ("sequential", PHASES.iter().map(|p| p.to_string()).collect()),
        (
            "interleaved",
            PHASES.iter().map(|p| interleaved(p)).collect(),
        ),
        ("mixes", MIXES.iter().map(|m| m.name.to_string()).collect()),
    ];
    for (name, ws) in groups {
        let rs: Vec<&Record> = records
            .iter()
            .filter(|r| ws.contains(&r.workload))
            .collect();
        if rs.is_empty() {
            continue;
        }
        let ws: Vec<String> = ws
            .into_iter()
            .filter(|w| rs.iter().any(|r| &r.workload == w))
            .collect();
        let ser = series(&rs);
        let path = dir.join(format!("memtable_{name}_ops.svg"));
        plot::plot_grouped_bars(
            &path,
            &format!("memtable suite, {name}: ops/s (log scale)"),
            "ops/s",
            &ws,
            &ser,
            true,
            |w, sname| {
                rs.iter()
                    .find(|r| r.workload == w && format!("{}/{}", r.engine, r.variant) == sname)
                    .map(|r| r.ops_per_sec)
                    .filter(|v| *v > 0.0)
            },
        )?;
        out.push(path);
    }
    let ins: Vec<&Record> = records
        .iter()
        .filter(|r| r.workload == "mem-insert" && r.bytes_per_entry.is_some())
        .collect();
    if !ins.is_empty() {
        let path = dir.join("memtable_bytes_per_entry.svg");
        let ser = series(&ins);
        plot::plot_grouped_bars(
            &path,
            "memtable bytes per 128-byte entry after the inserts",
            "bytes/entry",
            &["mem-insert".to_string()],
            &ser,
            false,
            |_, sname| {
                ins.iter()
                    .find(|r| format!("{}/{}", r.engine, r.variant) == sname)
                    .and_then(|r| r.bytes_per_entry)
            },
        )?;
        out.push(path);
    }
    Ok(out)
}

/// `/proc/loadavg`'s three load averages.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny(dir: &Path) -> MemSuite {
        let settings = BenchSettings {
            num: 3000,
            reads: 200,
            key_size: 8,
            value_size: 120,
            disable_wal: true,
            distribution: Distribution::Uniform,
            ..BenchSettings::default()
        };
        MemSuite {
            engines: vec![EngineKind::Strata],
            kinds: vec!["skiplist".into(), "vector".into(), "adaptive".into()],
            rocksdb_kinds: vec![],
            settings,
            inserts: 3000,
            point_queries: 200,
            range_queries: 10,
            buckets: 1000,
            buffer: 8 << 20,
            mix_buffer: 256 << 10,
            mix_inserts: 6000,
            mix_rounds: 1,
            experiment: true,
            mixes: true,
            budget: Duration::from_secs(60),
            stream_budget: Duration::from_secs(60),
            db_root: dir.to_path_buf(),
            json: None,
        }
    }

    #[test]
    fn rounds_pair_by_number() {
        let r = paired_ratios(&[90.0, 120.0, 100.0], &[100.0, 100.0, 50.0]);
        assert_eq!(r, vec![0.9, 1.2, 2.0]);
        assert_eq!(median_f64(&r), 1.2);
        assert_eq!(median_f64(&[1.0, 3.0]), 2.0);
        // A kind that stopped at the budget ran one round: no pairs.
        assert!(paired_ratios(&[90.0], &[100.0, 100.0]).is_empty());
        assert!(paired_ratios(&[1.0], &[0.0]).is_empty());
    }

    #[test]
    fn data_is_shared_and_complete() {
        let d = tempfile::tempdir().unwrap();
        let s = tiny(d.path());
        let a = Data::new(&s);
        let b = Data::new(&s);
        assert_eq!(a.keys, b.keys);
        assert_eq!(a.stream, b.stream);
        let set: HashSet<u64> = a.keys.iter().copied().collect();
        assert_eq!(set.len(), 3000);
        assert!(a.misses.iter().all(|m| !set.contains(m)));
        assert_eq!(a.warmup, 300);
        assert_eq!(a.stream.len(), 2700 + 200 + 200 + 10);
    }

    #[test]
    fn runs_measure_every_phase_and_the_memtable() {
        let d = tempfile::tempdir().unwrap();
        let s = tiny(d.path());
        let recs = run(&s).unwrap();
        for k in &s.kinds {
            for p in PHASES {
                for w in [p.to_string(), interleaved(p)] {
                    let r = find(&recs, "strata", k, &w).unwrap_or_else(|| panic!("{k} {w}"));
                    assert!(r.ops > 0 && r.ops_per_sec > 0.0, "{k} {w}");
                    assert!(r.bytes_per_entry.unwrap_or(0.0) > 128.0, "{k} {w}");
                    assert_eq!(r.flushes, Some(0), "{k} {w}");
                    assert!(!truncated(r));
                }
            }
            let hit = find(&recs, "strata", k, "mem-get-hit").unwrap();
            assert_eq!(hit.extra["found"], json!(200));
            let miss = find(&recs, "strata", k, "mem-get-miss").unwrap();
            assert_eq!(miss.extra["found"], json!(0));
            let range = find(&recs, "strata", k, "mem-range").unwrap();
            let per = range.extra["entries_per_range"].as_f64().unwrap();
            assert!(per > 0.5 && per < 12.0, "{per}");
        }
        // The insert-only mix switches memtables and the adaptive kind moves
        // to a vector.
        let ad = find(&recs, "strata", "adaptive", "mix-insert-only").unwrap();
        assert!(
            ad.extra["memtable_switches"].as_u64().unwrap() >= 2,
            "{:?}",
            ad.extra
        );
        assert!(reps_summary(ad).contains("vector"), "{}", reps_summary(ad));
        let md = ratios(&recs);
        assert!(md.contains("vector / skiplist"), "{md}");
        assert!(md.contains("adaptive / best fixed"), "{md}");
        let v = verification(&recs);
        assert!(v.contains("every run"), "{v}");
        let files = charts(&recs, &d.path().join("charts")).unwrap();
        assert_eq!(files.len(), 4);
    }
}
