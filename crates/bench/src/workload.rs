//! The workloads: db_bench's (fillseq, fillrandom, overwrite, readrandom,
//! readseq, seekrandom, readwhilewriting, deleterandom) and YCSB's core
//! workloads A to F.
//!
//! Each workload splits its operations across `threads` client threads;
//! every thread times each operation into its own histogram (nanoseconds),
//! and the histograms are merged at the end.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use indicatif::ProgressBar;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::engine::Engine;
use crate::generators::{KeyChooser, ScrambledZipfian, SkewedLatest};
use crate::keys::{ValueGen, encode_key, permutation};
use crate::settings::{BenchSettings, Distribution};
use crate::{Error, Result};

/// YCSB core workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ycsb {
    A,
    B,
    C,
    D,
    E,
    F,
}

/// A workload, named as in db_bench and YCSB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Workload {
    FillSeq,
    FillRandom,
    Overwrite,
    ReadRandom,
    ReadSeq,
    SeekRandom,
    ReadWhileWriting,
    DeleteRandom,
    Ycsb(Ycsb),
}

impl Workload {
    /// Every workload.
    pub const ALL: &'static [Workload] = &[
        Workload::FillSeq,
        Workload::FillRandom,
        Workload::Overwrite,
        Workload::ReadRandom,
        Workload::ReadSeq,
        Workload::SeekRandom,
        Workload::ReadWhileWriting,
        Workload::DeleteRandom,
        Workload::Ycsb(Ycsb::A),
        Workload::Ycsb(Ycsb::B),
        Workload::Ycsb(Ycsb::C),
        Workload::Ycsb(Ycsb::D),
        Workload::Ycsb(Ycsb::E),
        Workload::Ycsb(Ycsb::F),
    ];

    /// The name used in flags and results.
    pub fn name(self) -> &'static str {
        match self {
            Workload::FillSeq => "fillseq",
            Workload::FillRandom => "fillrandom",
            Workload::Overwrite => "overwrite",
            Workload::ReadRandom => "readrandom",
            Workload::ReadSeq => "readseq",
            Workload::SeekRandom => "seekrandom",
            Workload::ReadWhileWriting => "readwhilewriting",
            Workload::DeleteRandom => "deleterandom",
            Workload::Ycsb(Ycsb::A) => "ycsb-a",
            Workload::Ycsb(Ycsb::B) => "ycsb-b",
            Workload::Ycsb(Ycsb::C) => "ycsb-c",
            Workload::Ycsb(Ycsb::D) => "ycsb-d",
            Workload::Ycsb(Ycsb::E) => "ycsb-e",
            Workload::Ycsb(Ycsb::F) => "ycsb-f",
        }
    }

    /// One line on what it does.
    pub fn describe(self) -> &'static str {
        match self {
            Workload::FillSeq => "puts of --num keys in key order",
            Workload::FillRandom => "puts of --num keys in a random order (each key once)",
            Workload::Overwrite => "--writes puts of random existing keys",
            Workload::ReadRandom => "--reads gets of random keys (--miss-ratio of them absent)",
            Workload::ReadSeq => "--reads entries read in key order with an iterator",
            Workload::SeekRandom => {
                "--reads seeks to random keys, each followed by --scan-length nexts"
            }
            Workload::ReadWhileWriting => {
                "threads-1 readers (at least 1) do --reads gets while 1 writer overwrites"
            }
            Workload::DeleteRandom => "--writes deletes of random keys",
            Workload::Ycsb(Ycsb::A) => "YCSB A: 50% read, 50% update",
            Workload::Ycsb(Ycsb::B) => "YCSB B: 95% read, 5% update",
            Workload::Ycsb(Ycsb::C) => "YCSB C: 100% read",
            Workload::Ycsb(Ycsb::D) => "YCSB D: 95% read latest, 5% insert",
            Workload::Ycsb(Ycsb::E) => "YCSB E: 95% scan (1..100 entries), 5% insert",
            Workload::Ycsb(Ycsb::F) => "YCSB F: 50% read, 50% read-modify-write",
        }
    }

    /// True for workloads that write.
    pub fn writes(self) -> bool {
        !matches!(
            self,
            Workload::ReadRandom
                | Workload::ReadSeq
                | Workload::SeekRandom
                | Workload::Ycsb(Ycsb::C)
        )
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Workload {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim().to_ascii_lowercase().replace('_', "-");
        let t = match t.as_str() {
            "ycsba" | "ycsb-a" | "a" => "ycsb-a".to_string(),
            "ycsbb" | "b" => "ycsb-b".to_string(),
            "ycsbc" | "c" => "ycsb-c".to_string(),
            "ycsbd" | "d" => "ycsb-d".to_string(),
            "ycsbe" | "e" => "ycsb-e".to_string(),
            "ycsbf" | "f" => "ycsb-f".to_string(),
            _ => t,
        };
        Workload::ALL
            .iter()
            .copied()
            .find(|w| w.name() == t)
            .ok_or_else(|| {
                Error(format!(
                    "unknown workload {s:?} (known: {})",
                    Workload::ALL
                        .iter()
                        .map(|w| w.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }
}

/// Parses `--workloads`: a comma-separated list (repeats allowed, run in
/// order).
pub fn parse_workloads(list: &str) -> Result<Vec<Workload>> {
    let v: Vec<Workload> = list
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::parse)
        .collect::<Result<_>>()?;
    if v.is_empty() {
        return Err(Error("--workloads names no workload".into()));
    }
    Ok(v)
}

/// The shared state of one engine's run across its workloads.
pub struct RunState {
    /// Keys that exist or were claimed by an insert (grows with YCSB D/E).
    pub key_count: AtomicU64,
    /// User key and value bytes written since the engine was opened.
    pub user_bytes_written: AtomicU64,
}

impl RunState {
    /// For a database of `num` keys.
    pub fn new(num: u64) -> RunState {
        RunState {
            key_count: AtomicU64::new(num),
            user_bytes_written: AtomicU64::new(0),
        }
    }
}

/// What a workload measured.
pub struct Outcome {
    pub hist: Histogram<u64>,
    pub ops: u64,
    pub bytes: u64,
    pub elapsed: Duration,
    /// Latency per operation kind (YCSB), merged over threads.
    pub by_kind: BTreeMap<&'static str, Histogram<u64>>,
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// Largest latency recorded (larger ones saturate): one hour in ns.
const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

/// A fresh latency histogram (ns, 3 significant digits).
pub fn new_hist() -> Histogram<u64> {
    // The bounds are constants that hdrhistogram accepts.
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).unwrap_or_else(|_| unreachable_hist())
}

#[cold]
fn unreachable_hist() -> Histogram<u64> {
    panic!("hdrhistogram rejected constant bounds")
}

/// One client thread's tallies.
pub struct Tally {
    pub hist: Histogram<u64>,
    pub ops: u64,
    pub bytes: u64,
    pub written: u64,
    pub by_kind: BTreeMap<&'static str, Histogram<u64>>,
    pub counters: BTreeMap<&'static str, u64>,
    pending_progress: u64,
    progress: Option<ProgressBar>,
}

impl Tally {
    fn new(progress: Option<ProgressBar>) -> Tally {
        Tally {
            hist: new_hist(),
            ops: 0,
            bytes: 0,
            written: 0,
            by_kind: BTreeMap::new(),
            counters: BTreeMap::new(),
            pending_progress: 0,
            progress,
        }
    }

    /// Records one operation of `d` that moved `bytes`.
    #[inline]
    pub fn op(&mut self, d: Duration, bytes: u64) {
        self.hist
            .saturating_record(d.as_nanos().min(u128::from(MAX_LATENCY_NS)) as u64);
        self.ops += 1;
        self.bytes += bytes;
        self.pending_progress += 1;
        if self.pending_progress >= 1024 {
            if let Some(p) = &self.progress {
                p.inc(self.pending_progress);
            }
            self.pending_progress = 0;
        }
    }

    /// Records one operation of kind `kind` as well.
    #[inline]
    pub fn kind_op(&mut self, kind: &'static str, d: Duration, bytes: u64) {
        self.by_kind
            .entry(kind)
            .or_insert_with(new_hist)
            .saturating_record(d.as_nanos().min(u128::from(MAX_LATENCY_NS)) as u64);
        self.op(d, bytes);
    }

    /// Adds to a named counter.
    pub fn count(&mut self, name: &'static str, n: u64) {
        *self.counters.entry(name).or_insert(0) += n;
    }

    fn finish(&mut self) {
        if let Some(p) = &self.progress {
            p.inc(self.pending_progress);
        }
        self.pending_progress = 0;
    }
}

/// Runs `threads` client threads of `body` (given the thread index and its
/// tally) and merges what they measured. The clock runs from the moment all
/// threads are ready to the moment the last one ends.
pub fn run_threads<F>(threads: usize, progress: Option<ProgressBar>, body: F) -> Result<Outcome>
where
    F: Fn(usize, &mut Tally) -> Result<()> + Sync,
{
    let barrier = Barrier::new(threads + 1);
    let (tallies, elapsed) = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let barrier = &barrier;
                let body = &body;
                let progress = progress.clone();
                sc.spawn(move || {
                    let mut tally = Tally::new(progress);
                    barrier.wait();
                    let r = body(t, &mut tally);
                    tally.finish();
                    r.map(|()| tally)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let results: Vec<Result<Tally>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::msg("a client thread panicked")))
            })
            .collect();
        (results, start.elapsed())
    });
    let mut out = Outcome {
        hist: new_hist(),
        ops: 0,
        bytes: 0,
        elapsed,
        by_kind: BTreeMap::new(),
        extra: serde_json::Map::new(),
    };
    let mut counters: BTreeMap<&'static str, u64> = BTreeMap::new();
    for t in tallies {
        let t = t?;
        out.hist
            .add(&t.hist)
            .map_err(|e| Error(format!("merging histograms: {e}")))?;
        out.ops += t.ops;
        out.bytes += t.bytes;
        for (k, h) in t.by_kind {
            out.by_kind
                .entry(k)
                .or_insert_with(new_hist)
                .add(&h)
                .map_err(|e| Error(format!("merging histograms: {e}")))?;
        }
        for (k, v) in t.counters {
            *counters.entry(k).or_insert(0) += v;
        }
        if t.written > 0 {
            *counters.entry("user_bytes_written").or_insert(0) += t.written;
        }
    }
    for (k, v) in counters {
        out.extra.insert(k.to_string(), json!(v));
    }
    Ok(out)
}

/// `[lo, hi)` of `total` items for thread `t` of `n`.
pub fn share(total: u64, t: usize, n: usize) -> (u64, u64) {
    let n = n as u64;
    let t = t as u64;
    (total * t / n, total * (t + 1) / n)
}

fn thread_rng(s: &BenchSettings, salt: u64, t: usize) -> StdRng {
    StdRng::seed_from_u64(
        s.seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(salt.wrapping_mul(1_000_003))
            .wrapping_add(t as u64),
    )
}

/// Operations the workload will do (the length of its progress bar).
pub fn planned_ops(w: Workload, s: &BenchSettings) -> u64 {
    match w {
        Workload::FillSeq | Workload::FillRandom => s.num,
        Workload::Overwrite | Workload::DeleteRandom => s.writes,
        _ => s.reads,
    }
}

/// Runs `w` against `engine`.
pub fn run_workload(
    w: Workload,
    engine: &Arc<dyn Engine>,
    s: &BenchSettings,
    state: &RunState,
    progress: Option<ProgressBar>,
) -> Result<Outcome> {
    let salt = Workload::ALL.iter().position(|x| *x == w).unwrap_or(0) as u64 + 1;
    let threads = s.threads;
    let e: &dyn Engine = engine.as_ref();
    let mut out = match w {
        Workload::FillSeq => run_threads(threads, progress, |t, tally| {
            let (lo, hi) = share(s.num, t, threads);
            let mut values =
                ValueGen::new(s.value_size, s.value_random_fraction, s.seed + t as u64);
            let mut key = Vec::with_capacity(s.key_size);
            for i in lo..hi {
                encode_key(i, s.key_size, &mut key);
                let v = values.next_value();
                let t0 = Instant::now();
                e.put(&key, v)?;
                tally.op(t0.elapsed(), (key.len() + v.len()) as u64);
                tally.written += (key.len() + v.len()) as u64;
            }
            Ok(())
        })?,
        Workload::FillRandom => {
            let order = permutation(s.num, s.seed);
            run_threads(threads, progress, |t, tally| {
                let (lo, hi) = share(s.num, t, threads);
                let mut values =
                    ValueGen::new(s.value_size, s.value_random_fraction, s.seed + t as u64);
                let mut key = Vec::with_capacity(s.key_size);
                for &i in &order[lo as usize..hi as usize] {
                    encode_key(i, s.key_size, &mut key);
                    let v = values.next_value();
                    let t0 = Instant::now();
                    e.put(&key, v)?;
                    tally.op(t0.elapsed(), (key.len() + v.len()) as u64);
                    tally.written += (key.len() + v.len()) as u64;
                }
                Ok(())
            })?
        }
        Workload::Overwrite => run_threads(threads, progress, |t, tally| {
            let (lo, hi) = share(s.writes, t, threads);
            let mut rng = thread_rng(s, salt, t);
            let mut values = ValueGen::new(
                s.value_size,
                s.value_random_fraction,
                s.seed + 77 + t as u64,
            );
            let mut key = Vec::with_capacity(s.key_size);
            for _ in lo..hi {
                encode_key(rng.random_range(0..s.num), s.key_size, &mut key);
                let v = values.next_value();
                let t0 = Instant::now();
                e.put(&key, v)?;
                tally.op(t0.elapsed(), (key.len() + v.len()) as u64);
                tally.written += (key.len() + v.len()) as u64;
            }
            Ok(())
        })?,
        Workload::DeleteRandom => run_threads(threads, progress, |t, tally| {
            let (lo, hi) = share(s.writes, t, threads);
            let mut rng = thread_rng(s, salt, t);
            let mut key = Vec::with_capacity(s.key_size);
            for _ in lo..hi {
                encode_key(rng.random_range(0..s.num), s.key_size, &mut key);
                let t0 = Instant::now();
                e.delete(&key)?;
                tally.op(t0.elapsed(), key.len() as u64);
                tally.written += key.len() as u64;
            }
            Ok(())
        })?,
        Workload::ReadRandom => {
            let beyond = state.key_count.load(Ordering::Relaxed).max(s.num);
            run_threads(threads, progress, |t, tally| {
                let (lo, hi) = share(s.reads, t, threads);
                let mut rng = thread_rng(s, salt, t);
                read_random(e, s, &mut rng, hi - lo, beyond, tally, None)
            })?
        }
        Workload::SeekRandom => run_threads(threads, progress, |t, tally| {
            let (lo, hi) = share(s.reads, t, threads);
            let mut rng = thread_rng(s, salt, t);
            let mut key = Vec::with_capacity(s.key_size);
            for _ in lo..hi {
                encode_key(rng.random_range(0..s.num), s.key_size, &mut key);
                let t0 = Instant::now();
                // db_bench: Seek, then --seek_nexts Next calls (N + 1 entries).
                let (n, bytes) = e.scan(&key, s.scan_length + 1)?;
                tally.op(t0.elapsed(), bytes);
                tally.count("entries", n);
            }
            Ok(())
        })?,
        Workload::ReadSeq => run_threads(threads, progress, |t, tally| {
            // Thread t reads its share of entries from its share of the key
            // space onwards.
            let (lo, hi) = share(s.reads, t, threads);
            let want = hi - lo;
            if want == 0 {
                return Ok(());
            }
            let (start_idx, _) = share(s.num, t, threads);
            let mut start = Vec::with_capacity(s.key_size);
            encode_key(start_idx, s.key_size, &mut start);
            let mut seen = 0u64;
            let mut last = Instant::now();
            e.iterate(&start, &mut |k, v| {
                let now = Instant::now();
                tally.op(now - last, (k.len() + v.len()) as u64);
                last = now;
                seen += 1;
                seen < want
            })?;
            Ok(())
        })?,
        Workload::ReadWhileWriting => {
            let readers = threads.saturating_sub(1).max(1);
            let done = AtomicBool::new(false);
            let writer_ops = AtomicU64::new(0);
            let writer_bytes = AtomicU64::new(0);
            let writer_err: parking_lot::Mutex<Option<Error>> = parking_lot::Mutex::new(None);
            let beyond = state.key_count.load(Ordering::Relaxed).max(s.num);
            let remaining = AtomicU64::new(readers as u64);
            let writer_start = Instant::now();
            let out = run_threads(readers + 1, progress, |t, tally| {
                if t == readers {
                    // The writer: overwrites random keys until the readers end.
                    let mut rng = thread_rng(s, salt + 1000, t);
                    let mut values =
                        ValueGen::new(s.value_size, s.value_random_fraction, s.seed + 99);
                    let mut key = Vec::with_capacity(s.key_size);
                    let mut n = 0u64;
                    let mut b = 0u64;
                    while !done.load(Ordering::Relaxed) {
                        encode_key(rng.random_range(0..s.num), s.key_size, &mut key);
                        let v = values.next_value();
                        if let Err(err) = e.put(&key, v) {
                            *writer_err.lock() = Some(err);
                            break;
                        }
                        n += 1;
                        b += (key.len() + v.len()) as u64;
                    }
                    writer_ops.store(n, Ordering::Relaxed);
                    writer_bytes.store(b, Ordering::Relaxed);
                    return Ok(());
                }
                let (lo, hi) = share(s.reads, t, readers);
                let mut rng = thread_rng(s, salt, t);
                let r = read_random(e, s, &mut rng, hi - lo, beyond, tally, Some(&done));
                if remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                    done.store(true, Ordering::Relaxed);
                }
                if r.is_err() {
                    done.store(true, Ordering::Relaxed);
                }
                r
            });
            done.store(true, Ordering::Relaxed);
            let mut out = out?;
            if let Some(err) = writer_err.lock().take() {
                return Err(err);
            }
            let secs = writer_start.elapsed().as_secs_f64().max(1e-9);
            let wn = writer_ops.load(Ordering::Relaxed);
            let wb = writer_bytes.load(Ordering::Relaxed);
            out.extra.insert("readers".into(), json!(readers));
            out.extra.insert("writer_ops".into(), json!(wn));
            out.extra
                .insert("writer_ops_per_sec".into(), json!(wn as f64 / secs));
            out.extra.insert("user_bytes_written".into(), json!(wb));
            out
        }
        Workload::Ycsb(kind) => run_ycsb(kind, e, s, state, salt, progress)?,
    };
    let written = out
        .extra
        .get("user_bytes_written")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    state
        .user_bytes_written
        .fetch_add(written, Ordering::Relaxed);
    out.extra.insert("threads".into(), json!(threads));
    Ok(out)
}

/// `n` point reads of keys below `s.num`, `s.miss_ratio` of them of absent
/// keys (at or past `beyond`). Stops early when `stop` is set.
fn read_random(
    e: &dyn Engine,
    s: &BenchSettings,
    rng: &mut StdRng,
    n: u64,
    beyond: u64,
    tally: &mut Tally,
    stop: Option<&AtomicBool>,
) -> Result<()> {
    let mut key = Vec::with_capacity(s.key_size);
    let mut found = 0u64;
    for i in 0..n {
        if i.is_multiple_of(1024) && stop.is_some_and(|f| f.load(Ordering::Relaxed)) {
            break;
        }
        let miss = s.miss_ratio > 0.0 && rng.random_bool(s.miss_ratio);
        let idx = if miss {
            beyond + rng.random_range(0..s.num)
        } else {
            rng.random_range(0..s.num)
        };
        encode_key(idx, s.key_size, &mut key);
        let t0 = Instant::now();
        let got = e.get(&key)?;
        let d = t0.elapsed();
        let bytes = match got {
            Some(len) => {
                found += 1;
                (key.len() + len) as u64
            }
            None => 0,
        };
        tally.op(d, bytes);
    }
    tally.count("found", found);
    Ok(())
}

/// Proportions of one YCSB workload: (read, update, insert, scan, rmw).
fn ycsb_mix(kind: Ycsb) -> [f64; 5] {
    match kind {
        Ycsb::A => [0.5, 0.5, 0.0, 0.0, 0.0],
        Ycsb::B => [0.95, 0.05, 0.0, 0.0, 0.0],
        Ycsb::C => [1.0, 0.0, 0.0, 0.0, 0.0],
        Ycsb::D => [0.95, 0.0, 0.05, 0.0, 0.0],
        Ycsb::E => [0.0, 0.0, 0.05, 0.95, 0.0],
        Ycsb::F => [0.5, 0.0, 0.0, 0.0, 0.5],
    }
}

/// YCSB's longest scan (`maxscanlength`, lengths uniform in 1..=100).
pub const YCSB_MAX_SCAN: usize = 100;

fn run_ycsb(
    kind: Ycsb,
    e: &dyn Engine,
    s: &BenchSettings,
    state: &RunState,
    salt: u64,
    progress: Option<ProgressBar>,
) -> Result<Outcome> {
    let mix = ycsb_mix(kind);
    let threads = s.threads;
    let count0 = state.key_count.load(Ordering::Relaxed).max(1);
    // Room for the inserts this run may add, as YCSB sizes its chooser.
    let expected_inserts = (mix[2] * s.reads as f64 * 2.0) as u64;
    let chooser_for = |_: usize| -> KeyChooser {
        if kind == Ycsb::D {
            return KeyChooser::Latest(SkewedLatest::new(count0));
        }
        match s.distribution {
            Distribution::Uniform => KeyChooser::Uniform,
            Distribution::Zipfian => {
                KeyChooser::Zipfian(ScrambledZipfian::new(0, count0 + expected_inserts - 1))
            }
        }
    };
    // Building the latest chooser computes zeta over every key; do it once.
    let template = chooser_for(0);
    let mut out = run_threads(threads, progress, |t, tally| {
        let (lo, hi) = share(s.reads, t, threads);
        let mut rng = thread_rng(s, salt, t);
        let mut chooser = template.clone();
        let mut values = ValueGen::new(
            s.value_size,
            s.value_random_fraction,
            s.seed + 1000 + t as u64,
        );
        let mut key = Vec::with_capacity(s.key_size);
        for _ in lo..hi {
            let r: f64 = rng.random();
            let count = state.key_count.load(Ordering::Relaxed);
            if r < mix[0] {
                encode_key(chooser.next(&mut rng, count), s.key_size, &mut key);
                let t0 = Instant::now();
                let got = e.get(&key)?;
                let d = t0.elapsed();
                let bytes = got.map_or(0, |l| (key.len() + l) as u64);
                if got.is_some() {
                    tally.count("found", 1);
                }
                tally.kind_op("read", d, bytes);
            } else if r < mix[0] + mix[1] {
                encode_key(chooser.next(&mut rng, count), s.key_size, &mut key);
                let v = values.next_value();
                let t0 = Instant::now();
                e.put(&key, v)?;
                let d = t0.elapsed();
                let b = (key.len() + v.len()) as u64;
                tally.written += b;
                tally.kind_op("update", d, b);
            } else if r < mix[0] + mix[1] + mix[2] {
                let idx = state.key_count.fetch_add(1, Ordering::Relaxed);
                encode_key(idx, s.key_size, &mut key);
                let v = values.next_value();
                let t0 = Instant::now();
                e.put(&key, v)?;
                let d = t0.elapsed();
                let b = (key.len() + v.len()) as u64;
                tally.written += b;
                tally.kind_op("insert", d, b);
            } else if r < mix[0] + mix[1] + mix[2] + mix[3] {
                encode_key(chooser.next(&mut rng, count), s.key_size, &mut key);
                let len = rng.random_range(1..=YCSB_MAX_SCAN);
                let t0 = Instant::now();
                let (n, bytes) = e.scan(&key, len)?;
                let d = t0.elapsed();
                tally.count("entries", n);
                tally.kind_op("scan", d, bytes);
            } else {
                encode_key(chooser.next(&mut rng, count), s.key_size, &mut key);
                let v = values.next_value();
                let t0 = Instant::now();
                let got = e.get(&key)?;
                e.put(&key, v)?;
                let d = t0.elapsed();
                let b = got.map_or(0, |l| (key.len() + l) as u64) + (key.len() + v.len()) as u64;
                tally.written += (key.len() + v.len()) as u64;
                tally.kind_op("rmw", d, b);
            }
        }
        Ok(())
    })?;
    out.extra.insert(
        "request_distribution".into(),
        json!(if kind == Ycsb::D {
            "latest".to_string()
        } else {
            s.distribution.to_string()
        }),
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_parse_and_reject_unknown_names() {
        assert_eq!(
            parse_workloads("fillrandom, readrandom,ycsb-a").unwrap(),
            vec![
                Workload::FillRandom,
                Workload::ReadRandom,
                Workload::Ycsb(Ycsb::A)
            ]
        );
        assert_eq!(
            parse_workloads("ycsb_b").unwrap(),
            vec![Workload::Ycsb(Ycsb::B)]
        );
        let e = parse_workloads("fillrandom,readrandomx").unwrap_err();
        assert!(e.0.contains("unknown workload"), "{e}");
        assert!(e.0.contains("readrandomx"), "{e}");
        assert!(parse_workloads(" , ").is_err());
        for w in Workload::ALL {
            assert_eq!(w.name().parse::<Workload>().unwrap(), *w);
        }
    }

    #[test]
    fn shares_cover_the_range() {
        for total in [0u64, 1, 7, 1000, 1001] {
            for n in 1..5 {
                let mut next = 0;
                for t in 0..n {
                    let (lo, hi) = share(total, t, n);
                    assert_eq!(lo, next);
                    next = hi;
                }
                assert_eq!(next, total);
            }
        }
    }

    #[test]
    fn every_workload_runs_on_strata() {
        let d = tempfile::tempdir().unwrap();
        let s = BenchSettings {
            num: 2000,
            reads: 2000,
            writes: 500,
            threads: 2,
            write_buffer_size: 64 << 10,
            ..BenchSettings::default()
        };
        let engine: Arc<dyn Engine> =
            Arc::new(crate::engines::strata::StrataEngine::open(&s, d.path()).unwrap());
        let state = RunState::new(s.num);
        let fill = run_workload(Workload::FillRandom, &engine, &s, &state, None).unwrap();
        assert_eq!(fill.ops, 2000);
        let read = run_workload(Workload::ReadRandom, &engine, &s, &state, None).unwrap();
        assert_eq!(read.extra.get("found").and_then(|v| v.as_u64()), Some(2000));
        let seq = run_workload(Workload::ReadSeq, &engine, &s, &state, None).unwrap();
        assert_eq!(seq.ops, 2000);
        let seek = run_workload(Workload::SeekRandom, &engine, &s, &state, None).unwrap();
        assert_eq!(seek.ops, 2000);
        for w in Workload::ALL {
            let o = run_workload(*w, &engine, &s, &state, None).unwrap();
            assert!(o.ops > 0, "{w} did no operation");
            assert!(o.hist.value_at_quantile(0.99) >= o.hist.value_at_quantile(0.5));
        }
        // D and E inserted past the original keys.
        assert!(state.key_count.load(Ordering::Relaxed) > 2000);
        engine.close().unwrap();
    }
}
