//! `strata-bench suite --suite production`: the key-value core in the
//! configurations production users run (issue 24), every compiled-in
//! engine in the same invocation.
//!
//! - Compressed data larger than the cache: for LZ4 and Zstd, and a block
//!   cache of 1 %, 10 % and 100 % of the data's raw bytes, `fillrandom`
//!   then `readrandom` and `seekrandom` (uniform keys, so that the cache
//!   sees the whole key space).
//! - Synced writes: `fillrandom --sync` at 1, 2, 4 and 8 threads, 10,000
//!   keys per thread.
//!
//! The other settings are the `kv` suite's (16-byte keys, 100-byte values,
//! 64 MiB write buffers, size ratio 10, 10 Bloom bits, 4 KiB blocks), with
//! 2M keys and `--reads` of a quarter of them unless given. The report
//! gives each configuration's ops/s per engine and Strata's ratio to the
//! best peer, with a chart of that ratio.

use std::path::{Path, PathBuf};

use crate::cli::{BenchArgs, Given, SuiteArgs};
use crate::record::Record;
use crate::report::thousands;
use crate::runner::{RunPlan, run_rounds};
use crate::settings::{BenchSettings, CompressionKind, Distribution};
use crate::workload::Workload;
use crate::{Error, Result};

/// The suite's defaults: the `kv` suite's, with 2M keys, reads of a
/// quarter of them and uniformly drawn keys.
pub fn apply_defaults(a: &mut BenchArgs, given: Given<'_>) {
    crate::cli::apply_kv_defaults(a, given);
    if !given("num") {
        a.num = 2_000_000;
    }
    if !given("reads") {
        a.reads = Some(a.num / 4);
    }
    if !given("distribution") {
        a.distribution = "uniform".into();
    }
}

/// One configuration of the suite.
struct Case {
    label: String,
    settings: BenchSettings,
    workloads: Vec<Workload>,
}

/// The block cache for `fraction` of `s`'s data (raw key and value bytes),
/// at least 1 MiB.
fn cache_for(s: &BenchSettings, fraction: f64) -> u64 {
    let data = s.num as f64 * (s.key_size + s.value_size) as f64;
    ((data * fraction) as u64).max(1 << 20)
}

fn cases(base: &BenchSettings) -> Vec<Case> {
    let mut out = Vec::new();
    for compression in [CompressionKind::Lz4, CompressionKind::Zstd] {
        for fraction in [0.01, 0.1, 1.0] {
            let mut s = base.clone();
            s.compression = compression;
            s.cache_size = cache_for(base, fraction);
            s.sync = false;
            out.push(Case {
                label: format!("{compression}, cache {} % of the data", fraction * 100.0),
                settings: s,
                workloads: vec![
                    Workload::FillRandom,
                    Workload::ReadRandom,
                    Workload::SeekRandom,
                ],
            });
        }
    }
    for threads in [1usize, 2, 4, 8] {
        let mut s = base.clone();
        s.sync = true;
        s.threads = threads;
        s.num = 10_000 * threads as u64;
        s.compression = CompressionKind::None;
        out.push(Case {
            label: format!("sync, {threads} threads"),
            settings: s,
            workloads: vec![Workload::FillRandom],
        });
    }
    out
}

/// Runs the suite.
pub fn run_suite(sa: &SuiteArgs, plan_of: impl Fn(&BenchArgs) -> Result<RunPlan>) -> Result<()> {
    let base_plan = plan_of(&sa.args)?;
    if base_plan.settings.distribution != Distribution::Uniform {
        eprintln!(
            "production: reads are drawn {}",
            base_plan.settings.distribution
        );
    }
    let started = crate::sysinfo::unix_seconds();
    let mut results: Vec<CaseResult> = Vec::new();
    for case in cases(&base_plan.settings) {
        println!("production: {}", case.label);
        let plan = RunPlan {
            workloads: case.workloads,
            settings: case.settings,
            db_root: base_plan.db_root.join("production"),
            json: None,
            settle_reads: true,
            ..base_plan.clone()
        };
        let (medians, rounds) = run_rounds(&plan)?;
        println!("{}", crate::report::terminal_tables(&medians));
        results.push(CaseResult {
            label: case.label,
            medians,
            rounds,
        });
    }
    let engines: Vec<String> = base_plan
        .engines
        .iter()
        .map(|e| e.name().to_string())
        .collect();
    let chart = match &sa.args.plot {
        Some(dir) => Some(ratio_chart(&results, dir)?),
        None => None,
    };
    let text = report(&results, &engines, started, chart.as_deref());
    println!("{text}");
    if let Some(path) = &sa.report {
        crate::report::write_report(path, &text)?;
    }
    Ok(())
}

/// One configuration's records: the median round of each engine and
/// workload, and every round.
struct CaseResult {
    label: String,
    medians: Vec<Record>,
    rounds: Vec<Record>,
}

/// Strata's ops/s over `peer`'s (the best peer's when `None`) for
/// `workload`, round by round in round order. The host's speed drifts
/// between rounds by more than engines differ, and every engine runs once
/// per round, so a round's ratio is steadier than the ratio of medians
/// taken per engine over different rounds.
fn round_ratios(all: &[Record], workload: &str, peer: Option<&str>) -> Vec<f64> {
    let mut rounds: Vec<u32> = all.iter().map(|r| r.round).collect();
    rounds.sort_unstable();
    rounds.dedup();
    rounds
        .into_iter()
        .filter_map(|n| {
            let ops: Vec<(&str, f64)> = all
                .iter()
                .filter(|r| r.round == n && r.workload == workload)
                .map(|r| (r.engine.as_str(), r.ops_per_sec))
                .collect();
            match peer {
                None => best_ratio(&ops).map(|(x, _)| x),
                Some(p) => {
                    let of = |e: &str| ops.iter().find(|(n, _)| *n == e).map(|x| x.1);
                    Some(of("strata")? / of(p)?.max(1e-9))
                }
            }
        })
        .collect()
}

/// The middle value (the lower middle of an even count, as
/// [`crate::record::median_of`] takes).
fn median(mut xs: Vec<f64>) -> Option<f64> {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len().checked_sub(1)? / 2).copied()
}

/// A report cell of per-round ratios: each round's, then their median.
fn rounds_cell(xs: Vec<f64>) -> String {
    let each: Vec<String> = xs.iter().map(|x| format!("{x:.2}")).collect();
    match median(xs) {
        Some(m) => format!("{} → {m:.2}×", each.join(" / ")),
        None => "—".into(),
    }
}

/// Strata's ops/s over the best peer's in `recs` for `workload`, and
/// that peer's name.
fn ratio(recs: &[Record], workload: &str) -> Option<(f64, String)> {
    let ops: Vec<(&str, f64)> = recs
        .iter()
        .filter(|r| r.workload == workload)
        .map(|r| (r.engine.as_str(), r.ops_per_sec))
        .collect();
    best_ratio(&ops)
}

/// Of (engine, ops/s) pairs: Strata's over the fastest other's, and its
/// name.
fn best_ratio(ops: &[(&str, f64)]) -> Option<(f64, String)> {
    let strata = ops.iter().find(|(e, _)| *e == "strata")?.1;
    let (peer, best) = ops
        .iter()
        .filter(|(e, _)| *e != "strata")
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some((strata / best.max(1e-9), peer.to_string()))
}

fn report(
    results: &[CaseResult],
    engines: &[String],
    started: u64,
    chart: Option<&Path>,
) -> String {
    let m = crate::sysinfo::machine();
    let mut t = format!(
        "### production suite, {}\n\n```sh\n{}\n```\n\nMachine: {} CPUs ({}), {}. ops/s, one round per configuration unless `--repeat` (then each engine's median round). The last two columns give Strata's ratio within each round, then the median of those.\n\n| configuration | workload | {} | Strata / best peer | Strata / rocksdb, per round | Strata / best peer, per round |\n|---|---|{}---|---|---|\n",
        crate::sysinfo::iso8601(started),
        crate::sysinfo::command_line(),
        m.cpus,
        m.cpu_model,
        crate::report::human_bytes(m.memory_bytes),
        engines.join(" | "),
        "---|".repeat(engines.len()),
    );
    for CaseResult {
        label,
        medians: recs,
        rounds,
    } in results
    {
        let mut workloads: Vec<&str> = Vec::new();
        for r in recs {
            if !workloads.contains(&r.workload.as_str()) {
                workloads.push(&r.workload);
            }
        }
        for w in workloads {
            let cells: Vec<String> = engines
                .iter()
                .map(|e| {
                    recs.iter()
                        .find(|r| &r.engine == e && r.workload == w)
                        .map_or("—".into(), |r| thousands(r.ops_per_sec))
                })
                .collect();
            let ratio =
                ratio(recs, w).map_or("—".into(), |(x, peer)| format!("{x:.2}× ({peer})"));
            let vs_rocksdb = rounds_cell(round_ratios(rounds, w, Some("rocksdb")));
            let vs_best = rounds_cell(round_ratios(rounds, w, None));
            t.push_str(&format!(
                "| {label} | {w} | {} | {ratio} | {vs_rocksdb} | {vs_best} |\n",
                cells.join(" | ")
            ));
        }
    }
    if let Some(c) = chart {
        t.push_str(&format!(
            "\n![Strata against the best peer per configuration]({})\n",
            c.display()
        ));
    }
    t
}

fn ratio_chart(results: &[CaseResult], dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| Error(format!("{}: {e}", dir.display())))?;
    let path = dir.join("production-ratio.svg");
    let mut groups = Vec::new();
    let mut values = Vec::new();
    for c in results {
        for w in ["fillrandom", "readrandom", "seekrandom"] {
            if let Some(x) = median(round_ratios(&c.rounds, w, None)) {
                groups.push(format!("{}: {w}", c.label));
                values.push(x);
            }
        }
    }
    let series = vec!["Strata / best peer (median of per-round ratios)".to_string()];
    crate::plot::plot_grouped_bars(
        &path,
        "Strata's throughput over the best peer's, per configuration",
        "ratio",
        &groups,
        &series,
        false,
        |g, _| groups.iter().position(|x| x == g).map(|i| values[i]),
    )?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caches_are_fractions_of_the_data_and_sync_cases_scale_their_keys() {
        let base = BenchSettings {
            num: 1_000_000,
            key_size: 16,
            value_size: 100,
            ..BenchSettings::default()
        };
        // (Defaults differ in what the tests do not look at.)
        let cs = cases(&base);
        assert_eq!(cs.len(), 10);
        assert_eq!(cs[0].settings.cache_size, 1_160_000);
        assert_eq!(cs[2].settings.cache_size, 116_000_000);
        assert_eq!(cs[3].settings.compression, CompressionKind::Zstd);
        let sync: Vec<(usize, u64)> = cs[6..]
            .iter()
            .map(|c| (c.settings.threads, c.settings.num))
            .collect();
        assert_eq!(sync, [(1, 10_000), (2, 20_000), (4, 40_000), (8, 80_000)]);
        assert!(cs[6..].iter().all(|c| c.settings.sync));
        // At least 1 MiB of cache, however small the data.
        let tiny = BenchSettings { num: 10, ..base };
        assert_eq!(cache_for(&tiny, 0.01), 1 << 20);
    }

    #[test]
    fn the_ratio_is_against_the_fastest_peer() {
        let ops = [("strata", 300.0), ("rocksdb", 200.0), ("fjall", 250.0)];
        let (x, peer) = best_ratio(&ops).expect("ratio");
        assert!((x - 1.2).abs() < 1e-9);
        assert_eq!(peer, "fjall");
        assert!(best_ratio(&ops[..1]).is_none());
        assert!(best_ratio(&ops[1..]).is_none());
    }

    fn rec(engine: &str, workload: &str, round: u32, ops: f64) -> Record {
        Record {
            engine: engine.into(),
            variant: "default".into(),
            workload: workload.into(),
            ops: 0,
            seconds: 0.0,
            ops_per_sec: ops,
            mb_per_sec: 0.0,
            p50_us: 0.0,
            p99_us: 0.0,
            p999_us: 0.0,
            mean_us: 0.0,
            max_us: 0.0,
            latency_cdf_us: Vec::new(),
            write_amp: None,
            io_write_bytes: None,
            disk_bytes: 0,
            peak_rss_bytes: None,
            settings: serde_json::Value::Null,
            notes: Vec::new(),
            round,
            rounds: 3,
            median: false,
            suite: None,
            run_id: String::new(),
            timestamp: String::new(),
            extra: serde_json::Map::new(),
            bytes_per_entry: None,
            flushes: None,
        }
    }

    #[test]
    fn ratios_are_taken_within_each_round_then_their_median() {
        // The host halves its speed in round 2 for every engine: per-engine
        // medians would pair Strata's round 3 with RocksDB's round 1.
        let all = vec![
            rec("strata", "readrandom", 1, 300.0),
            rec("rocksdb", "readrandom", 1, 200.0),
            rec("fjall", "readrandom", 1, 250.0),
            rec("strata", "readrandom", 2, 150.0),
            rec("rocksdb", "readrandom", 2, 110.0),
            rec("fjall", "readrandom", 2, 100.0),
            rec("strata", "readrandom", 3, 280.0),
            rec("rocksdb", "readrandom", 3, 140.0),
            rec("fjall", "readrandom", 3, 290.0),
            rec("strata", "seekrandom", 1, 1.0),
        ];
        let vs_rocksdb = round_ratios(&all, "readrandom", Some("rocksdb"));
        assert_eq!(vs_rocksdb.len(), 3);
        for (got, want) in vs_rocksdb.iter().zip([1.5, 150.0 / 110.0, 2.0]) {
            assert!((got - want).abs() < 1e-9, "{got} against {want}");
        }
        let vs_best = round_ratios(&all, "readrandom", None);
        for (got, want) in vs_best.iter().zip([1.2, 150.0 / 110.0, 280.0 / 290.0]) {
            assert!((got - want).abs() < 1e-9, "{got} against {want}");
        }
        assert_eq!(median(vs_best.clone()), Some(1.2));
        assert_eq!(median(vec![2.0, 1.0]), Some(1.0));
        assert_eq!(median(Vec::new()), None);
        // A round without a peer gives no ratio.
        assert!(round_ratios(&all, "seekrandom", None).is_empty());
        assert_eq!(
            rounds_cell(vec![1.5, 1.25]),
            "1.50 / 1.25 → 1.25×".to_string()
        );
        assert_eq!(rounds_cell(Vec::new()), "—");
    }
}
