//! The `shortrange` suite: short range scans over a loaded database, for
//! Strata's two short-scan mechanisms (memtable retention and iterator
//! reduction, from the RIOKV paper) and the peers.
//!
//! Each (engine, variant) gets a fresh database, loads `--num` keys in a
//! random order (`fillrandom`, recorded), waits for its pending flushes and
//! compactions (`Engine::wait_for_background`; the memtable and level 0
//! keep the newest keys), and then runs, in this order and each for
//! `--reads` operations (default 250,000) unless `--max-phase-secs`
//! (default 60) ends it first:
//!
//! - `scan-N` for every N of `--scan-lengths`: seek to a uniformly chosen
//!   existing key and read N entries;
//! - `scan-N-zipf`: the same with YCSB's scrambled zipfian start keys;
//! - `scan-N-mixed`: half such uniform scans, half overwrites of uniformly
//!   chosen keys (last, since they change the database).
//!
//! Phases end by operation count, not time, so that every variant does the
//! same work: the mixes then write the same keys in every variant, and each
//! mix starts on a tree of the same shape. (Time-bound mixes let a faster
//! variant write more before the next mix, which then ran on a different
//! tree: 3 children per scan for one variant, 4 for another.) A phase that
//! stops at the time budget is marked ⏱ in the report.
//!
//! Strata runs as four variants: `none`, `retention`, `reduction`, `both`;
//! peers as `default`. For Strata, each record carries the iterators built,
//! the child iterators they merged and the seeks issued to children, per
//! scan (`extra.iterators_per_scan`, `children_per_scan`, `seeks_per_scan`),
//! and the levels >= 1 that held no entry in a scan's range
//! (`unused_levels_per_scan`: what a perfect per-file range filter would
//! spare).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::cli::{BenchArgs, Given};
use crate::engine::{Engine, EngineKind, EngineStats, open_engine};
use crate::generators::{KeyChooser, ScrambledZipfian};
use crate::keys::{ValueGen, encode_key};
use crate::record::{Record, append};
use crate::report::ReportInfo;
use crate::report::{human_bytes, thousands};
use crate::runner::{
    Target, fresh_dir, make_named_record, make_record, medians, reset_peak_rss_note, summary_line,
};
use crate::settings::BenchSettings;
use crate::sysinfo;
use crate::workload::{Outcome, RunState, Tally, Workload, run_threads, run_workload, share};
use crate::{Error, Result};

/// Strata's variants: which of the two mechanisms are on.
pub const VARIANTS: [&str; 4] = ["none", "retention", "reduction", "both"];

/// The scan lengths of the RIOKV evaluation.
pub const DEFAULT_LENGTHS: [usize; 4] = [1, 10, 50, 100];

/// The longest a workload runs by default: a safety cap, above what the
/// default operation count takes on the machine of docs/BENCHMARKS.md.
pub const DEFAULT_PHASE_SECS: f64 = 60.0;

/// Operations each workload does by default.
pub const DEFAULT_OPS_CAP: u64 = 250_000;

/// (retention, reduction) of a variant name.
pub fn variant_flags(name: &str) -> Result<(bool, bool)> {
    match name {
        "none" => Ok((false, false)),
        "retention" => Ok((true, false)),
        "reduction" => Ok((false, true)),
        "both" => Ok((true, true)),
        _ => Err(Error(format!(
            "unknown shortrange variant {name:?} (known: {})",
            VARIANTS.join(", ")
        ))),
    }
}

/// One workload of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShortWorkload {
    /// Entries each scan reads.
    pub len: usize,
    /// Zipfian start keys (else uniform).
    pub zipf: bool,
    /// Half the operations are overwrites.
    pub mixed: bool,
}

impl ShortWorkload {
    /// `scan-N`, `scan-N-zipf`, `scan-N-mixed`.
    pub fn name(&self) -> String {
        format!(
            "scan-{}{}{}",
            self.len,
            if self.zipf { "-zipf" } else { "" },
            if self.mixed { "-mixed" } else { "" }
        )
    }

    fn describe(&self) -> &'static str {
        match (self.zipf, self.mixed) {
            (false, false) => "seek to a uniformly chosen key, read N entries",
            (true, false) => "seek to a scrambled-zipfian chosen key, read N entries",
            (false, true) => "50% uniform scans of N entries, 50% overwrites of uniform keys",
            (true, true) => "50% zipfian scans of N entries, 50% overwrites of zipfian keys",
        }
    }
}

/// The suite's workloads for `lengths`: uniform scans, zipfian scans, then
/// the mixes.
pub fn workloads(lengths: &[usize]) -> Vec<ShortWorkload> {
    let mut out = Vec::new();
    for (zipf, mixed) in [(false, false), (true, false), (false, true)] {
        for &len in lengths {
            out.push(ShortWorkload { len, zipf, mixed });
        }
    }
    out
}

/// Everything one invocation runs.
#[derive(Clone, Debug)]
pub struct ShortSuite {
    pub engines: Vec<EngineKind>,
    /// Strata variants, from [`VARIANTS`].
    pub variants: Vec<String>,
    pub workloads: Vec<ShortWorkload>,
    pub settings: BenchSettings,
    /// Operations cap per workload.
    pub ops: u64,
    pub budget: Duration,
    pub db_root: PathBuf,
    pub repeat: u32,
    pub json: Option<PathBuf>,
    pub progress: bool,
}

/// The suite's settings (those of the `kv` suite: the issue's machine
/// settings); flags given on the command line win.
pub fn apply_defaults(a: &mut BenchArgs, given: Given<'_>) {
    if !given("num") {
        a.num = 5_000_000;
    }
    if !given("engines") {
        a.engines = EngineKind::compiled_in()
            .iter()
            .map(|e| e.name())
            .collect::<Vec<_>>()
            .join(",");
    }
    if !given("threads") {
        a.threads = 2;
    }
    if !given("reads") {
        a.reads = Some(DEFAULT_OPS_CAP);
    }
    // The rest are BenchArgs' defaults already (16 + 100 bytes, 64 MiB
    // buffers, T 10, 10 bits per key, 4 KiB blocks, 64 MiB cache, WAL on
    // without sync); the kv suite sets the same.
}

/// Builds the suite from flags (after [`apply_defaults`]).
pub fn plan(
    a: &BenchArgs,
    variants: &str,
    lengths: &str,
    max_phase_secs: f64,
    progress: bool,
) -> Result<ShortSuite> {
    let base = crate::cli::plan_from_args(a, Some("shortrange"))?;
    if !base.memtables.is_empty() {
        return Err(Error::msg(
            "--memtable is not a variant of the shortrange suite (its variants are the \
             short-scan mechanisms); the default skiplist is used",
        ));
    }
    let mut vs = Vec::new();
    for v in variants.split(',').map(str::trim).filter(|v| !v.is_empty()) {
        variant_flags(v)?;
        if !vs.iter().any(|x: &String| x == v) {
            vs.push(v.to_string());
        }
    }
    if vs.is_empty() && base.engines.contains(&EngineKind::Strata) {
        return Err(Error::msg("--variants names no variant"));
    }
    let mut ls = Vec::new();
    for l in lengths.split(',').map(str::trim).filter(|l| !l.is_empty()) {
        let n: usize = l
            .parse()
            .map_err(|_| Error(format!("--scan-lengths: {l:?} is not a number")))?;
        if n == 0 || n > 100_000 {
            return Err(Error(format!(
                "--scan-lengths: {n} must be between 1 and 100000"
            )));
        }
        ls.push(n);
    }
    if ls.is_empty() {
        return Err(Error::msg("--scan-lengths names no length"));
    }
    if !(max_phase_secs > 0.0 && max_phase_secs.is_finite()) {
        return Err(Error::msg("--max-phase-secs must be positive"));
    }
    Ok(ShortSuite {
        engines: base.engines,
        variants: vs,
        workloads: workloads(&ls),
        ops: base.settings.reads,
        settings: base.settings,
        budget: Duration::from_secs_f64(max_phase_secs),
        db_root: base.db_root,
        repeat: base.repeat,
        json: base.json,
        progress,
    })
}

/// One engine (and Strata variant) of the suite.
#[derive(Clone, Debug)]
struct Run {
    engine: EngineKind,
    variant: String,
}

fn runs(suite: &ShortSuite) -> Vec<Run> {
    let mut out = Vec::new();
    for &e in &suite.engines {
        if e == EngineKind::Strata {
            for v in &suite.variants {
                out.push(Run {
                    engine: e,
                    variant: v.clone(),
                });
            }
        } else {
            out.push(Run {
                engine: e,
                variant: "default".into(),
            });
        }
    }
    out
}

/// Runs the suite; prints a line per result, appends every record to the
/// JSON file and returns the median records.
pub fn run(suite: &ShortSuite) -> Result<Vec<Record>> {
    let run_id = format!("{}-{}", sysinfo::unix_seconds(), std::process::id());
    let all_runs = runs(suite);
    let mut all = Vec::new();
    for round in 1..=suite.repeat {
        let mut order = all_runs.clone();
        if round % 2 == 0 {
            order.reverse();
        }
        for r in &order {
            all.extend(run_one(suite, r, round, &run_id)?);
        }
    }
    let mut names = vec![Workload::FillRandom.name().to_string()];
    names.extend(suite.workloads.iter().map(ShortWorkload::name));
    let groups: Vec<(&str, String, String)> = all_runs
        .iter()
        .flat_map(|r| {
            names
                .iter()
                .map(move |w| (r.engine.name(), r.variant.clone(), w.clone()))
        })
        .collect();
    medians(&all, &groups, suite.repeat, suite.json.as_deref())
}

fn bar(suite: &ShortSuite, len: u64, prefix: String) -> Option<ProgressBar> {
    suite.progress.then(|| {
        let pb = ProgressBar::new(len);
        pb.set_prefix(prefix);
        pb
    })
}

/// Counters of the engine that describe its scans (Strata only).
fn scan_counters(st: &EngineStats) -> Option<[u64; 4]> {
    let g = |k: &str| st.extra.get(k).and_then(serde_json::Value::as_u64);
    Some([
        g("iterators_created")?,
        g("iterator_children")?,
        g("iterator_child_seeks")?,
        g("scan_levels_unused")?,
    ])
}

fn run_one(suite: &ShortSuite, r: &Run, round: u32, run_id: &str) -> Result<Vec<Record>> {
    let mut settings = suite.settings.clone();
    if r.engine == EngineKind::Strata {
        let (retain, reduce) = variant_flags(&r.variant)?;
        settings.retain_memtables = retain;
        settings.iterator_reduction = reduce;
    }
    let dir = suite
        .db_root
        .join(format!("shortrange-{}-{}", r.engine, r.variant));
    fresh_dir(&dir, false)?;
    let mut notes: Vec<String> = reset_peak_rss_note().into_iter().collect();
    let engine: Arc<dyn Engine> = open_engine(r.engine, &settings, &dir)?;
    notes.extend(engine.notes());
    let target = Target {
        engine: r.engine,
        memtable: None,
    };
    let state = RunState::new(settings.num);
    let mut out = Vec::new();
    let finish = |mut rec: Record, out: &mut Vec<Record>| -> Result<()> {
        rec.variant = r.variant.clone();
        rec.suite = Some("shortrange".into());
        println!("{}", summary_line(&rec));
        if let Some(p) = &suite.json {
            append(p, std::slice::from_ref(&rec))?;
        }
        out.push(rec);
        Ok(())
    };

    let io = sysinfo::io_write_bytes();
    let pb = bar(
        suite,
        settings.num,
        format!("{}/{} load", r.engine, r.variant),
    );
    let load = run_workload(Workload::FillRandom, &engine, &settings, &state, pb.clone());
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    let mut load = load.map_err(|e| Error(format!("{} load: {e}", r.engine)))?;
    // Every engine starts the scans from a settled tree (its memtable and
    // level 0 still hold the newest keys), so that no variant's figures
    // depend on how much compaction debt the load happened to leave.
    let t0 = Instant::now();
    let settled = engine.wait_for_background()?;
    load.extra
        .insert("settle_secs".into(), json!(t0.elapsed().as_secs_f64()));
    load.extra.insert("settled".into(), json!(settled));
    let rec = make_record(
        &target,
        Workload::FillRandom,
        &load,
        engine.as_ref(),
        &settings,
        &state,
        io,
        &notes,
        round,
        suite.repeat,
        Some("shortrange"),
        run_id,
    );
    finish(rec, &mut out)?;

    for (i, w) in suite.workloads.iter().enumerate() {
        let io = sysinfo::io_write_bytes();
        let before = scan_counters(&engine.stats());
        let pb = bar(
            suite,
            suite.ops,
            format!("{}/{} {}", r.engine, r.variant, w.name()),
        );
        let o = run_short(
            engine.as_ref(),
            &settings,
            *w,
            suite.ops,
            suite.budget,
            i as u64 + 1,
            pb.clone(),
        );
        if let Some(pb) = pb {
            pb.finish_and_clear();
        }
        let mut o = o.map_err(|e| Error(format!("{} {}: {e}", r.engine, w.name())))?;
        let written = o
            .extra
            .get("user_bytes_written")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        state
            .user_bytes_written
            .fetch_add(written, std::sync::atomic::Ordering::Relaxed);
        let scans = o.by_kind.get("scan").map_or(0, |h| h.len());
        if let (Some(b), Some(a)) = (before, scan_counters(&engine.stats()))
            && scans > 0
        {
            let per = |k: usize| a[k].saturating_sub(b[k]) as f64 / scans as f64;
            o.extra.insert("iterators_per_scan".into(), json!(per(0)));
            o.extra.insert("children_per_scan".into(), json!(per(1)));
            o.extra.insert("seeks_per_scan".into(), json!(per(2)));
            o.extra
                .insert("unused_levels_per_scan".into(), json!(per(3)));
        }
        o.extra.insert("scan_length".into(), json!(w.len));
        o.extra.insert("threads".into(), json!(settings.threads));
        let rec = make_named_record(
            &target,
            &w.name(),
            w.describe(),
            &o,
            engine.as_ref(),
            &settings,
            &state,
            io,
            &notes,
            round,
            suite.repeat,
            Some("shortrange"),
            run_id,
        );
        finish(rec, &mut out)?;
    }
    engine.close()?;
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(out)
}

/// Runs one workload for at most `ops` operations or `budget`, whichever
/// ends first.
pub fn run_short(
    e: &dyn Engine,
    s: &BenchSettings,
    w: ShortWorkload,
    ops: u64,
    budget: Duration,
    salt: u64,
    progress: Option<ProgressBar>,
) -> Result<Outcome> {
    let threads = s.threads;
    let template = if w.zipf {
        KeyChooser::Zipfian(ScrambledZipfian::new(0, s.num.max(1) - 1))
    } else {
        KeyChooser::Uniform
    };
    let deadline = Instant::now() + budget;
    run_threads(threads, progress, |t, tally: &mut Tally| {
        let (lo, hi) = share(ops, t, threads);
        let mut rng = StdRng::seed_from_u64(
            s.seed
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(salt.wrapping_mul(7_919))
                .wrapping_add(t as u64),
        );
        let mut chooser = template.clone();
        let mut values = ValueGen::new(
            s.value_size,
            s.value_random_fraction,
            s.seed + 500 + t as u64,
        );
        let mut key = Vec::with_capacity(s.key_size);
        let mut entries = 0u64;
        for i in lo..hi {
            if i % 64 == 0 && Instant::now() >= deadline {
                break;
            }
            encode_key(chooser.next(&mut rng, s.num), s.key_size, &mut key);
            if w.mixed && rng.random_bool(0.5) {
                let v = values.next_value();
                let t0 = Instant::now();
                e.put(&key, v)?;
                let b = (key.len() + v.len()) as u64;
                tally.written += b;
                tally.kind_op("write", t0.elapsed(), b);
            } else {
                let t0 = Instant::now();
                let (n, bytes) = e.scan(&key, w.len)?;
                tally.kind_op("scan", t0.elapsed(), bytes);
                entries += n;
            }
        }
        tally.count("entries", entries);
        Ok(())
    })
}

fn find<'a>(rs: &'a [Record], engine: &str, variant: &str, w: &str) -> Option<&'a Record> {
    rs.iter()
        .find(|r| r.engine == engine && r.variant == variant && r.workload == w)
}

fn scan_workloads(records: &[Record]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in records {
        if r.workload.starts_with("scan-") && !out.contains(&r.workload) {
            out.push(r.workload.clone());
        }
    }
    out
}

fn ratio(a: Option<&Record>, b: Option<&Record>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b.ops_per_sec > 0.0 => Some(a.ops_per_sec / b.ops_per_sec),
        _ => None,
    }
}

fn fmt_ratio(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |v| format!("{v:.2}×"))
}

fn extra_f(r: Option<&Record>, k: &str) -> Option<f64> {
    r.and_then(|r| r.extra.get(k))
        .and_then(serde_json::Value::as_f64)
}

/// The series of the report: Strata's variants, then the peers.
fn series(records: &[Record]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for v in VARIANTS {
        if records
            .iter()
            .any(|r| r.engine == "strata" && r.variant == v)
        {
            out.push(("strata".into(), v.into()));
        }
    }
    for r in records.iter().filter(|r| r.engine != "strata") {
        let k = (r.engine.clone(), r.variant.clone());
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

fn label(engine: &str, variant: &str) -> String {
    if engine == "strata" {
        format!("strata/{variant}")
    } else {
        engine.to_string()
    }
}

/// Markdown tables: throughput and p99 per workload and series; Strata's
/// ratios; iterators and seeks per scan.
pub fn tables(records: &[Record]) -> String {
    let ser = series(records);
    let mut names = vec!["fillrandom".to_string()];
    names.extend(scan_workloads(records));
    let mut s = String::new();
    s.push_str("| workload |");
    for (e, v) in &ser {
        s.push_str(&format!(" {} ops/s (p99 µs) |", label(e, v)));
    }
    s.push('\n');
    s.push_str(&"|---".repeat(ser.len() + 1));
    s.push_str("|\n");
    for w in &names {
        s.push_str(&format!("| {w} |"));
        for (e, v) in &ser {
            match find(records, e, v, w) {
                Some(r) => s.push_str(&format!(
                    " {}{} ({:.1}) |",
                    thousands(r.ops_per_sec),
                    if timed_out(r) { " ⏱" } else { "" },
                    r.p99_us
                )),
                None => s.push_str(" - |"),
            }
        }
        s.push('\n');
    }
    s
}

/// Whether `r`, a scan workload, stopped at its time budget: it did fewer
/// than the operations its settings asked for (`reads`).
fn timed_out(r: &Record) -> bool {
    r.workload != "fillrandom"
        && r.settings
            .get("reads")
            .and_then(serde_json::Value::as_u64)
            .is_some_and(|n| r.ops < n)
}

/// The ratios the issue sets bars on, per workload: each variant over
/// `none`, `both` over each peer, and the worst variant.
pub fn ratios(records: &[Record]) -> String {
    let peers: Vec<String> = series(records)
        .into_iter()
        .filter(|(e, _)| e != "strata")
        .map(|(e, _)| e)
        .collect();
    let mut names = vec!["fillrandom".to_string()];
    names.extend(scan_workloads(records));
    let mut s = String::from("| workload | retention/none | reduction/none | both/none |");
    for p in &peers {
        s.push_str(&format!(" both/{p} |"));
    }
    s.push_str(" worst variant/none |\n");
    s.push_str(&"|---".repeat(5 + peers.len()));
    s.push_str("|\n");
    for w in &names {
        let none = find(records, "strata", "none", w);
        let rs: Vec<Option<f64>> = ["retention", "reduction", "both"]
            .iter()
            .map(|v| ratio(find(records, "strata", v, w), none))
            .collect();
        s.push_str(&format!(
            "| {w} | {} | {} | {} |",
            fmt_ratio(rs[0]),
            fmt_ratio(rs[1]),
            fmt_ratio(rs[2])
        ));
        for p in &peers {
            s.push_str(&format!(
                " {} |",
                fmt_ratio(ratio(
                    find(records, "strata", "both", w),
                    find(records, p, "default", w)
                ))
            ));
        }
        let worst = rs.iter().flatten().copied().fold(f64::INFINITY, f64::min);
        s.push_str(&format!(
            " {} |\n",
            fmt_ratio(worst.is_finite().then_some(worst))
        ));
    }
    s
}

/// Children merged, child seeks and levels holding nothing in the scanned
/// range, per scan, per variant.
pub fn iterator_table(records: &[Record]) -> String {
    let vs: Vec<&str> = VARIANTS
        .iter()
        .copied()
        .filter(|v| {
            records
                .iter()
                .any(|r| r.engine == "strata" && r.variant == *v)
        })
        .collect();
    let mut s = String::from("| workload |");
    for v in &vs {
        s.push_str(&format!(
            " {v}: children / seeks / unused levels per scan |"
        ));
    }
    s.push('\n');
    s.push_str(&"|---".repeat(vs.len() + 1));
    s.push_str("|\n");
    for w in scan_workloads(records) {
        s.push_str(&format!("| {w} |"));
        for v in &vs {
            let r = find(records, "strata", v, &w);
            match (
                extra_f(r, "children_per_scan"),
                extra_f(r, "seeks_per_scan"),
            ) {
                (Some(c), Some(k)) => {
                    // Records older than the counter have no unused levels.
                    let u = extra_f(r, "unused_levels_per_scan")
                        .map_or_else(|| "-".to_string(), |u| format!("{u:.2}"));
                    s.push_str(&format!(" {c:.2} / {k:.2} / {u} |"))
                }
                _ => s.push_str(" - |"),
            }
        }
        s.push('\n');
    }
    s
}

/// The issue's bars, each met or not.
pub fn verdicts(records: &[Record]) -> String {
    let mut s = String::new();
    let names = scan_workloads(records);
    let short: Vec<&String> = names
        .iter()
        .filter(|w| {
            find(records, "strata", "none", w)
                .and_then(|r| r.extra.get("scan_length"))
                .and_then(serde_json::Value::as_u64)
                .is_some_and(|n| n <= 10)
        })
        .collect();
    let mut line = |ok: Option<bool>, what: String| {
        let mark = match ok {
            Some(true) => "met",
            Some(false) => "NOT met",
            None => "not measured",
        };
        s.push_str(&format!("- {what}: **{mark}**\n"));
    };
    let all_at_least = |ws: &[&String], f: &dyn Fn(&str) -> Option<f64>, bar: f64| {
        let v: Vec<Option<f64>> = ws.iter().map(|w| f(w)).collect();
        if v.is_empty() || v.iter().any(Option::is_none) {
            None
        } else {
            Some(v.iter().flatten().all(|x| *x >= bar))
        }
    };
    let both_none = |w: &str| {
        ratio(
            find(records, "strata", "both", w),
            find(records, "strata", "none", w),
        )
    };
    let both_rocks = |w: &str| {
        ratio(
            find(records, "strata", "both", w),
            find(records, "rocksdb", "default", w),
        )
    };
    let list = |ws: &[&String], f: &dyn Fn(&str) -> Option<f64>| {
        ws.iter()
            .map(|w| format!("{w} {}", fmt_ratio(f(w))))
            .collect::<Vec<_>>()
            .join(", ")
    };
    line(
        all_at_least(&short, &both_none, 1.2),
        format!(
            "both ≥ 1.2× none on scans of length ≤ 10 ({})",
            list(&short, &both_none)
        ),
    );
    line(
        all_at_least(&short, &both_rocks, 1.1),
        format!(
            "both ≥ 1.1× RocksDB on the same runs ({})",
            list(&short, &both_rocks)
        ),
    );
    let mut all: Vec<&String> = names.iter().collect();
    let fill = "fillrandom".to_string();
    all.push(&fill);
    for v in ["retention", "reduction", "both"] {
        let f = |w: &str| {
            ratio(
                find(records, "strata", v, w),
                find(records, "strata", "none", w),
            )
        };
        let worst = all
            .iter()
            .filter_map(|w| f(w).map(|x| (x, w.as_str())))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        line(
            all_at_least(&all, &f, 0.97),
            format!(
                "{v}: no workload more than 3% slower than none (worst: {})",
                worst.map_or_else(|| "-".into(), |(x, w)| format!("{w} {x:.2}×"))
            ),
        );
    }
    s
}

/// The markdown section for docs/BENCHMARKS.md.
pub fn markdown(records: &[Record], info: &ReportInfo<'_, ShortSuite>) -> String {
    let s = &info.suite.settings;
    let m = info.machine;
    let mut md = String::new();
    md.push_str(&format!(
        "### shortrange suite ({})\n\n```sh\n{}\n```\n\n",
        info.timestamp, info.command
    ));
    md.push_str(&format!(
        "Machine: {} ({} CPUs), {} RAM, Linux {}. Load average {} at the start, {} at the end.\n\n",
        m.cpu_model,
        m.cpus,
        human_bytes(m.memory_bytes),
        m.kernel,
        info.load_start,
        info.load_end
    ));
    md.push_str(&format!(
        "Settings: {} keys of {} B, values {} B, {} client threads, write buffer {}, T {}, \
         {} bloom bits/key, {} B blocks, block cache {}, compression {}, WAL {}{}; each \
         workload at most {} s or {} operations (⏱: stopped by time; the others did the same \
         operations in every run); {} round(s), medians by ops/s. Each (engine, variant) loads \
         a fresh database with fillrandom, then runs the workloads in the order of the \
         table.\n\n",
        thousands(s.num as f64),
        s.key_size,
        s.value_size,
        s.threads,
        human_bytes(s.write_buffer_size),
        s.size_ratio,
        s.bloom_bits,
        s.block_size,
        human_bytes(s.cache_size),
        s.compression,
        if s.disable_wal { "off" } else { "on" },
        if s.sync { ", sync" } else { "" },
        info.suite.budget.as_secs_f64(),
        thousands(info.suite.ops as f64),
        info.suite.repeat,
    ));
    md.push_str("Throughput (ops/s; mixes count scans and writes) and p99 latency (µs):\n\n");
    md.push_str(&tables(records));
    md.push_str("\nRatios:\n\n");
    md.push_str(&ratios(records));
    md.push_str(
        "\nStrata's child iterators merged, child seeks issued, and levels ≥ 1 that held no \
         entry in the scanned range (the seeks a perfect per-file range filter would spare), \
         per scan:\n\n",
    );
    md.push_str(&iterator_table(records));
    md.push_str("\nBars of issue 5:\n\n");
    md.push_str(&verdicts(records));
    let notes: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for r in records {
            for n in &r.notes {
                // Adapters' notes already name their engine.
                if !v.contains(n) {
                    v.push(n.clone());
                }
            }
        }
        v
    };
    if !notes.is_empty() {
        md.push_str("\nNotes:\n\n");
        for n in notes {
            md.push_str(&format!("- {n}\n"));
        }
    }
    if !info.charts.is_empty() {
        md.push('\n');
        for c in &info.charts {
            md.push_str(&format!("![{c}]({c})\n"));
        }
    }
    md
}

/// A throughput bar chart (log axis) over the scan workloads.
pub fn charts(records: &[Record], dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let groups = scan_workloads(records);
    let ser = series(records);
    let names: Vec<String> = ser.iter().map(|(e, v)| label(e, v)).collect();
    let path = dir.join("shortrange_ops_per_sec.svg");
    crate::plot::plot_grouped_bars(
        &path,
        "shortrange suite: throughput",
        "ops/s",
        &groups,
        &names,
        true,
        |g, n| {
            let (e, v) = ser.iter().find(|(e, v)| label(e, v) == n)?;
            find(records, e, v, g).map(|r| r.ops_per_sec)
        },
    )?;
    Ok(vec![path])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_names_follow_the_issue() {
        let ws = workloads(&[1, 10]);
        let names: Vec<String> = ws.iter().map(ShortWorkload::name).collect();
        assert_eq!(
            names,
            [
                "scan-1",
                "scan-10",
                "scan-1-zipf",
                "scan-10-zipf",
                "scan-1-mixed",
                "scan-10-mixed"
            ]
        );
        assert_eq!(variant_flags("both").unwrap(), (true, true));
        assert_eq!(variant_flags("retention").unwrap(), (true, false));
        assert!(variant_flags("all").is_err());
    }

    #[test]
    fn scans_read_their_length_and_mixes_write_half() {
        let d = tempfile::tempdir().unwrap();
        let s = BenchSettings {
            num: 3000,
            threads: 2,
            write_buffer_size: 64 << 10,
            iterator_reduction: true,
            retain_memtables: true,
            ..BenchSettings::default()
        };
        let engine: Arc<dyn Engine> =
            Arc::new(crate::engines::strata::StrataEngine::open(&s, d.path()).unwrap());
        let state = RunState::new(s.num);
        run_workload(Workload::FillRandom, &engine, &s, &state, None).unwrap();
        let w = ShortWorkload {
            len: 10,
            zipf: true,
            mixed: false,
        };
        let o = run_short(
            engine.as_ref(),
            &s,
            w,
            2000,
            Duration::from_secs(60),
            1,
            None,
        )
        .unwrap();
        assert_eq!(o.ops, 2000);
        // Scans near the end of the key space read fewer than 10 entries.
        let entries = o.extra["entries"].as_u64().unwrap();
        assert!(entries > 2000 * 8 && entries <= 2000 * 10, "{entries}");
        let w = ShortWorkload {
            len: 1,
            zipf: false,
            mixed: true,
        };
        let o = run_short(
            engine.as_ref(),
            &s,
            w,
            4000,
            Duration::from_secs(60),
            2,
            None,
        )
        .unwrap();
        let writes = o.by_kind["write"].len();
        let scans = o.by_kind["scan"].len();
        assert_eq!(writes + scans, 4000);
        assert!((1600..2400).contains(&writes), "{writes} writes");
        assert!(o.extra["user_bytes_written"].as_u64().unwrap() >= writes * 116);
        engine.close().unwrap();
    }

    #[test]
    fn a_small_suite_runs_every_variant_and_reports_the_bars() {
        let d = tempfile::tempdir().unwrap();
        let json = d.path().join("sr.json");
        let mut s = BenchSettings {
            num: 4000,
            threads: 2,
            write_buffer_size: 64 << 10,
            ..BenchSettings::default()
        };
        s.reads = 3000;
        let suite = ShortSuite {
            engines: vec![EngineKind::Strata],
            variants: VARIANTS.iter().map(|v| v.to_string()).collect(),
            workloads: workloads(&[1, 10]),
            ops: 3000,
            settings: s,
            budget: Duration::from_secs(60),
            db_root: d.path().join("db"),
            repeat: 1,
            json: Some(json.clone()),
            progress: false,
        };
        let recs = run(&suite).unwrap();
        // fillrandom + 6 workloads, 4 variants.
        assert_eq!(recs.len(), 4 * 7);
        for v in VARIANTS {
            let r = find(&recs, "strata", v, "scan-10").unwrap();
            assert!(r.ops_per_sec > 0.0);
            let children = r.extra["children_per_scan"].as_f64().unwrap();
            assert!(children >= 1.0, "{v}: {children}");
            assert_eq!(
                r.settings["iterator_reduction"].as_bool(),
                Some(v == "reduction" || v == "both")
            );
            assert_eq!(
                r.settings["retain_memtables"].as_bool(),
                Some(v == "retention" || v == "both")
            );
        }
        let (on_disk, skipped) = crate::record::read_all(&json).unwrap();
        assert_eq!((on_disk.len(), skipped), (28, 0));
        let v = verdicts(&recs);
        assert!(v.contains("both ≥ 1.2× none"), "{v}");
        assert!(
            v.contains("RocksDB on the same runs") && v.contains("not measured"),
            "{v}"
        );
        let t = ratios(&recs);
        assert!(t.contains("| scan-1-zipf |"), "{t}");
        assert!(iterator_table(&recs).contains("| scan-10-mixed |"));
        // Every phase did its 3,000 operations: none is marked as stopped
        // by time, until one did fewer.
        assert!(
            recs.iter()
                .all(|r| r.workload == "fillrandom" || r.ops == 3000)
        );
        assert!(!tables(&recs).contains('⏱'));
        let mut short = recs.clone();
        let r = short
            .iter_mut()
            .find(|r| r.variant == "both" && r.workload == "scan-10")
            .unwrap();
        r.ops = 2999;
        assert_eq!(tables(&short).matches('⏱').count(), 1);
    }
}
