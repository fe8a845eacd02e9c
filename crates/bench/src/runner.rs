//! Runs workloads over engines, variants and rounds, and turns outcomes
//! into records.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use serde_json::json;

use crate::engine::{Engine, EngineKind, dir_usage, open_engine};
use crate::record::{CDF_PERCENTILES, Record, append, median_of};
use crate::settings::BenchSettings;
use crate::sysinfo;
use crate::workload::{Outcome, RunState, Workload, planned_ops, run_workload};
use crate::{Error, Result};

/// Everything one invocation runs.
#[derive(Clone, Debug)]
pub struct RunPlan {
    pub engines: Vec<EngineKind>,
    /// Strata memtable kinds to run as variants (empty: the default only).
    pub memtables: Vec<String>,
    pub workloads: Vec<Workload>,
    pub settings: BenchSettings,
    /// Each engine (and variant) gets its own subdirectory.
    pub db_root: PathBuf,
    pub use_existing: bool,
    pub repeat: u32,
    pub json: Option<PathBuf>,
    pub progress: bool,
    pub suite: Option<String>,
    /// Waits for each engine's flushes and compactions to finish before a
    /// workload that only reads, when the workload before it wrote (db_bench's
    /// `waitforcompaction`): reads then measure data at rest, not the
    /// compaction debt each engine carries from its load.
    pub settle_reads: bool,
}

/// One engine and variant to run.
#[derive(Clone, Debug)]
pub struct Target {
    pub engine: EngineKind,
    /// The memtable kind for Strata variants.
    pub memtable: Option<String>,
}

impl Target {
    /// `default`, or the memtable kind.
    pub fn variant(&self) -> String {
        self.memtable.clone().unwrap_or_else(|| "default".into())
    }

    /// The subdirectory of the database root.
    pub fn dir_name(&self) -> String {
        match &self.memtable {
            Some(m) => format!("{}-{m}", self.engine),
            None => self.engine.name().to_string(),
        }
    }
}

impl RunPlan {
    /// The engines and variants, in the order of the first round.
    pub fn targets(&self) -> Vec<Target> {
        let mut out = Vec::new();
        for &e in &self.engines {
            if e == EngineKind::Strata && !self.memtables.is_empty() {
                for m in &self.memtables {
                    out.push(Target {
                        engine: e,
                        memtable: Some(m.clone()),
                    });
                }
            } else {
                out.push(Target {
                    engine: e,
                    memtable: None,
                });
            }
        }
        out
    }
}

fn bar(enabled: bool, len: u64, prefix: String) -> Option<ProgressBar> {
    if !enabled {
        return None;
    }
    let pb = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix:>28} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} ({rate}, eta {eta})",
    ) {
        pb.set_style(
            style.with_key("rate", |st: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{} ops/s", crate::report::thousands(st.per_sec()));
            }),
        );
    }
    pb.set_prefix(prefix);
    Some(pb)
}

/// Builds the record of one outcome.
#[allow(clippy::too_many_arguments)]
pub fn make_record(
    target: &Target,
    w: Workload,
    o: &Outcome,
    engine: &dyn Engine,
    settings: &BenchSettings,
    state: &RunState,
    io_before: Option<u64>,
    notes: &[String],
    round: u32,
    rounds: u32,
    suite: Option<&str>,
    run_id: &str,
) -> Record {
    make_named_record(
        target,
        w.name(),
        w.describe(),
        o,
        engine,
        settings,
        state,
        io_before,
        notes,
        round,
        rounds,
        suite,
        run_id,
    )
}

/// Builds the record of one outcome of a workload named `workload`
/// (described by `description`), for workloads outside [`Workload`] (the
/// `memtable` suite's phases).
#[allow(clippy::too_many_arguments)]
pub fn make_named_record(
    target: &Target,
    workload: &str,
    description: &str,
    o: &Outcome,
    engine: &dyn Engine,
    settings: &BenchSettings,
    state: &RunState,
    io_before: Option<u64>,
    notes: &[String],
    round: u32,
    rounds: u32,
    suite: Option<&str>,
    run_id: &str,
) -> Record {
    let secs = o.elapsed.as_secs_f64().max(1e-9);
    let q = |p: f64| o.hist.value_at_quantile(p) as f64 / 1000.0;
    let stats = engine.stats();
    let user = state.user_bytes_written.load(Ordering::Relaxed);
    let write_amp = match stats.background_write_bytes {
        Some(b) if user > 0 => Some(b as f64 / user as f64),
        _ => stats.write_amp,
    };
    let io_write_bytes = match (io_before, sysinfo::io_write_bytes()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    let mut extra = o.extra.clone();
    if !o.by_kind.is_empty() {
        let kinds: serde_json::Map<String, serde_json::Value> = o
            .by_kind
            .iter()
            .map(|(k, h)| {
                (
                    k.to_string(),
                    json!({
                        "ops": h.len(),
                        "p50_us": h.value_at_quantile(0.5) as f64 / 1000.0,
                        "p99_us": h.value_at_quantile(0.99) as f64 / 1000.0,
                        "p999_us": h.value_at_quantile(0.999) as f64 / 1000.0,
                    }),
                )
            })
            .collect();
        extra.insert("by_op".into(), serde_json::Value::Object(kinds));
    }
    extra.insert("engine_write_amp".into(), json!(stats.write_amp));
    extra.insert("engine_disk_bytes".into(), json!(stats.reported_disk_bytes));
    let usage = dir_usage(engine.data_dir());
    extra.insert("disk_apparent_bytes".into(), json!(usage.apparent));
    extra.insert("user_bytes_written_since_open".into(), json!(user));
    extra.insert("rss_bytes".into(), json!(sysinfo::rss_bytes()));
    extra.insert("engine".into(), serde_json::Value::Object(stats.extra));
    let mut settings_json = serde_json::to_value(settings).unwrap_or(serde_json::Value::Null);
    if let Some(obj) = settings_json.as_object_mut() {
        obj.insert("engine".into(), json!(target.engine.name()));
        obj.insert("workload_description".into(), json!(description));
    }
    Record {
        engine: target.engine.name().into(),
        variant: target.variant(),
        workload: workload.into(),
        ops: o.ops,
        seconds: secs,
        ops_per_sec: o.ops as f64 / secs,
        mb_per_sec: o.bytes as f64 / secs / 1e6,
        p50_us: q(0.5),
        p99_us: q(0.99),
        p999_us: q(0.999),
        mean_us: o.hist.mean() / 1000.0,
        max_us: o.hist.max() as f64 / 1000.0,
        latency_cdf_us: CDF_PERCENTILES
            .iter()
            .map(|&p| (p, o.hist.value_at_percentile(p) as f64 / 1000.0))
            .collect(),
        write_amp,
        io_write_bytes,
        disk_bytes: usage.allocated,
        peak_rss_bytes: sysinfo::peak_rss_bytes(),
        settings: settings_json,
        notes: notes.to_vec(),
        round,
        rounds,
        median: rounds <= 1,
        suite: suite.map(str::to_string),
        run_id: run_id.into(),
        timestamp: sysinfo::iso8601(sysinfo::unix_seconds()),
        extra,
        bytes_per_entry: None,
        flushes: None,
    }
}

/// A one-line summary of a record, printed as each workload ends.
pub fn summary_line(r: &Record) -> String {
    format!(
        "{:<8} {:<10} {:<17} {:>12.0} ops/s {:>8.1} MB/s  p50 {:>8.2} µs  p99 {:>9.2} µs  p99.9 {:>9.2} µs  ({} ops in {:.2} s)",
        r.engine,
        r.variant,
        r.workload,
        r.ops_per_sec,
        r.mb_per_sec,
        r.p50_us,
        r.p99_us,
        r.p999_us,
        r.ops,
        r.seconds
    )
}

/// Runs the plan; prints a line per result, appends every record to the
/// JSON file, and returns the median records (one per engine, variant and
/// workload).
pub fn run(plan: &RunPlan) -> Result<Vec<Record>> {
    Ok(run_rounds(plan)?.0)
}

/// [`run`], returning every round's records as well as the medians.
pub fn run_rounds(plan: &RunPlan) -> Result<(Vec<Record>, Vec<Record>)> {
    plan.settings.validate()?;
    if plan.repeat == 0 {
        return Err(Error::msg("--repeat must be at least 1"));
    }
    let run_id = format!("{}-{}", sysinfo::unix_seconds(), std::process::id());
    let targets = plan.targets();
    let mut all: Vec<Record> = Vec::new();
    for round in 1..=plan.repeat {
        let mut order = targets.clone();
        if round % 2 == 0 {
            order.reverse();
        }
        if plan.repeat > 1 {
            println!(
                "round {round}/{}: {}",
                plan.repeat,
                order
                    .iter()
                    .map(|t| format!("{}/{}", t.engine, t.variant()))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        for target in &order {
            let recs = run_target(plan, target, round, &run_id)?;
            all.extend(recs);
        }
    }
    let groups: Vec<(&str, String, String)> = targets
        .iter()
        .flat_map(|t| {
            unique(&plan.workloads)
                .into_iter()
                .map(move |w| (t.engine.name(), t.variant(), w.name().to_string()))
        })
        .collect();
    let medians = medians(&all, &groups, plan.repeat, plan.json.as_deref())?;
    Ok((medians, all))
}

/// Workloads in first-seen order without repeats (a repeated workload's
/// median is over all its runs).
fn unique(ws: &[Workload]) -> Vec<Workload> {
    let mut out: Vec<Workload> = Vec::new();
    for w in ws {
        if !out.contains(w) {
            out.push(*w);
        }
    }
    out
}

/// Makes `dir` an empty directory (wiping it first unless `keep`).
pub fn fresh_dir(dir: &Path, keep: bool) -> Result<()> {
    if !keep && dir.exists() {
        std::fs::remove_dir_all(dir)
            .map_err(|e| Error(format!("cannot wipe {}: {e}", dir.display())))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| Error(format!("cannot create {}: {e}", dir.display())))
}

/// Resets the peak-RSS counter before an engine opens; the note to store
/// with its records when that is not possible.
pub fn reset_peak_rss_note() -> Option<String> {
    (!sysinfo::reset_peak_rss())
        .then(|| "peak RSS could not be reset per engine: it covers the whole process".into())
}

/// The median record of each (engine, variant, workload) in `groups`, in
/// that order; with several rounds they are appended to `json` as well.
pub fn medians(
    all: &[Record],
    groups: &[(&str, String, String)],
    rounds: u32,
    json: Option<&Path>,
) -> Result<Vec<Record>> {
    let mut out = Vec::new();
    for (engine, variant, workload) in groups {
        let group: Vec<Record> = all
            .iter()
            .filter(|r| r.engine == *engine && &r.variant == variant && &r.workload == workload)
            .cloned()
            .collect();
        if let Some(m) = median_of(&group) {
            out.push(m);
        }
    }
    if rounds > 1
        && let Some(path) = json
    {
        append(path, &out)?;
    }
    Ok(out)
}

fn run_target(plan: &RunPlan, target: &Target, round: u32, run_id: &str) -> Result<Vec<Record>> {
    let mut settings = plan.settings.clone();
    settings.memtable = target.memtable.clone();
    let dir = plan.db_root.join(target.dir_name());
    fresh_dir(&dir, plan.use_existing)?;
    let mut notes: Vec<String> = reset_peak_rss_note().into_iter().collect();
    let io_open = sysinfo::io_write_bytes();
    let engine: Arc<dyn Engine> = open_engine(target.engine, &settings, &dir)?;
    notes.extend(engine.notes());
    if round == 1 {
        for n in &notes {
            println!("note: {n}");
        }
    }
    let state = RunState::new(settings.num);
    let mut out = Vec::new();
    let mut io_before = io_open;
    let mut wrote = false;
    for &w in &plan.workloads {
        if plan.settle_reads && wrote && !w.writes() {
            engine
                .wait_for_background()
                .map_err(|e| Error(format!("{} settling before {w}: {e}", target.engine)))?;
        }
        wrote = w.writes();
        let pb = bar(
            plan.progress,
            planned_ops(w, &settings),
            format!("{}/{} {}", target.engine, target.variant(), w),
        );
        let outcome = run_workload(w, &engine, &settings, &state, pb.clone());
        if let Some(pb) = pb {
            pb.finish_and_clear();
        }
        let outcome = outcome.map_err(|e| Error(format!("{} {w}: {e}", target.engine)))?;
        let rec = make_record(
            target,
            w,
            &outcome,
            engine.as_ref(),
            &settings,
            &state,
            io_before,
            &notes,
            round,
            plan.repeat,
            plan.suite.as_deref(),
            run_id,
        );
        io_before = sysinfo::io_write_bytes();
        println!("{}", summary_line(&rec));
        if let Some(path) = &plan.json {
            append(path, std::slice::from_ref(&rec))?;
        }
        out.push(rec);
    }
    engine.close()?;
    drop(engine);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_produce_medians_and_json() {
        let d = tempfile::tempdir().unwrap();
        let json = d.path().join("out.json");
        let plan = RunPlan {
            engines: vec![EngineKind::Strata],
            memtables: vec![],
            workloads: vec![Workload::FillSeq, Workload::ReadRandom],
            settings: BenchSettings {
                num: 500,
                reads: 500,
                writes: 500,
                ..BenchSettings::default()
            },
            db_root: d.path().join("db"),
            use_existing: false,
            repeat: 3,
            json: Some(json.clone()),
            progress: false,
            suite: None,
            settle_reads: true,
        };
        let medians = run(&plan).unwrap();
        assert_eq!(medians.len(), 2);
        assert!(medians.iter().all(|r| r.median && r.rounds == 3));
        let (recs, skipped) = crate::record::read_all(&json).unwrap();
        assert_eq!(skipped, 0);
        assert_eq!(recs.len(), 3 * 2 + 2);
        assert_eq!(recs.iter().filter(|r| !r.median).count(), 6);
    }
}
