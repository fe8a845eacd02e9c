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
use crate::runner::{RunPlan, run};
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
    let mut results: Vec<(String, Vec<Record>)> = Vec::new();
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
        let medians = run(&plan)?;
        println!("{}", crate::report::terminal_tables(&medians));
        results.push((case.label, medians));
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
    results: &[(String, Vec<Record>)],
    engines: &[String],
    started: u64,
    chart: Option<&Path>,
) -> String {
    let m = crate::sysinfo::machine();
    let mut t = format!(
        "### production suite, {}\n\n```sh\n{}\n```\n\nMachine: {} CPUs ({}), {}. ops/s, one round per configuration unless `--repeat` (then medians).\n\n| configuration | workload | {} | Strata / best peer |\n|---|---|{}---|\n",
        crate::sysinfo::iso8601(started),
        crate::sysinfo::command_line(),
        m.cpus,
        m.cpu_model,
        crate::report::human_bytes(m.memory_bytes),
        engines.join(" | "),
        "---|".repeat(engines.len()),
    );
    for (label, recs) in results {
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
            t.push_str(&format!(
                "| {label} | {w} | {} | {ratio} |\n",
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

fn ratio_chart(results: &[(String, Vec<Record>)], dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| Error(format!("{}: {e}", dir.display())))?;
    let path = dir.join("production-ratio.svg");
    let mut groups = Vec::new();
    let mut values = Vec::new();
    for (label, recs) in results {
        for w in ["fillrandom", "readrandom", "seekrandom"] {
            if let Some((x, _)) = ratio(recs, w) {
                groups.push(format!("{label}: {w}"));
                values.push(x);
            }
        }
    }
    let series = vec!["Strata / best peer".to_string()];
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
}
