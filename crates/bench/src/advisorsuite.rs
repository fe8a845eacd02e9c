//! `strata-bench suite --suite advisor`: how long the layout advisor
//! (seed 001's design search) takes, for the narrow and the wide HTAP table
//! over 8 levels.
//!
//! Each case builds the workload a run of the HTAP mix records (the
//! projections of Q2a, Q2b, Q3, Q4 and Q5 at the levels that serve them,
//! their counts scaled by the level sizes of a size ratio of 2) and, in
//! the `noisy` cases, adds random column ranges at every level, so that
//! each parent group splits into many fragments and the search must fall
//! back from enumerating partitions to merging them greedily. The figure
//! is the wall time of `advise`, the best and the median of `--rounds`.

use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::table::advisor::advise;
use strata::table::cost::{ModelParams, OpStat, Workload};

use crate::Result;
use crate::cli::{BenchArgs, Given, SuiteArgs};
use crate::htap::workload::Projections;

/// The suite's defaults.
pub fn apply_defaults(a: &mut BenchArgs, given: Given<'_>) {
    if !given("num") {
        // Rows in the modelled tree: sets the scans' entries per level.
        a.num = 10_000_000;
    }
    if !given("repeat") {
        a.repeat = 5;
    }
}

const LEVELS: usize = 8;

fn range(r: std::ops::Range<usize>) -> Vec<u32> {
    r.map(|c| c as u32).collect()
}

/// The HTAP mix's workload on `columns` columns, with `noise` random
/// column ranges per level.
pub fn workload(columns: usize, rows: u64, noise: usize, seed: u64) -> Workload {
    let p = Projections::for_columns(columns);
    let mut rng = StdRng::seed_from_u64(seed);
    // Level l holds a share 2^l / (2^L - 1) of the rows (size ratio 2).
    let total: f64 = (1..LEVELS).map(|l| 2f64.powi(l as i32)).sum();
    let mut levels = vec![Vec::new(); LEVELS];
    for (l, ops) in levels.iter_mut().enumerate() {
        let share = if l == 0 {
            0.0
        } else {
            2f64.powi(l as i32) / total
        };
        let entries = rows as f64 * share;
        // Recent rows are read whole near the top, older ones in part.
        if l <= 2 {
            ops.push(OpStat::point(range(p.q2a.clone()), 5_000.0));
        }
        if (2..=5).contains(&l) {
            ops.push(OpStat::point(range(p.q2b.clone()), 5_000.0));
        }
        ops.push(OpStat::scan(range(p.q4.clone()), 12.0, entries * 0.05));
        ops.push(OpStat::scan(range(p.q5.clone()), 12.0, entries * 0.5));
        for c in 0..columns {
            ops.push(OpStat::update(vec![c as u32], 1.0));
        }
        for _ in 0..noise {
            let a = rng.random_range(0..columns);
            let b = rng.random_range(a + 1..=columns.min(a + columns / 3).max(a + 1));
            ops.push(OpStat::scan(range(a..b), 2.0, entries * 0.01));
        }
    }
    Workload {
        inserts: 100_000.0,
        levels,
    }
}

/// One case's timing.
pub struct Timing {
    pub name: String,
    pub best: Duration,
    pub median: Duration,
    pub groups_at_last_level: usize,
}

/// Times the advisor on one case.
pub fn time_case(name: &str, columns: usize, rows: u64, noise: usize, rounds: usize) -> Timing {
    let params = ModelParams::uniform(columns, 2.0, 4096.0 / (4.0 * (columns as f64 + 2.0)), 4.0);
    let w = workload(columns, rows, noise, 42);
    let mut times = Vec::with_capacity(rounds);
    let mut groups = 0;
    for _ in 0..rounds.max(1) {
        let t = Instant::now();
        let advice = advise(&params, &w, LEVELS);
        times.push(t.elapsed());
        groups = advice.layout.last().map_or(0, Vec::len);
    }
    times.sort();
    Timing {
        name: name.to_string(),
        best: times[0],
        median: times[times.len() / 2],
        groups_at_last_level: groups,
    }
}

/// Runs the suite.
pub fn run(s: &SuiteArgs) -> Result<()> {
    let rounds = s.args.repeat.max(1) as usize;
    let cases = [
        ("30 columns, HTAP mix", 30, 0),
        ("30 columns, mix + 10 random ranges per level", 30, 10),
        ("100 columns, HTAP mix", 100, 0),
        ("100 columns, mix + 10 random ranges per level", 100, 10),
        ("100 columns, mix + 40 random ranges per level", 100, 40),
    ];
    let mut out = String::new();
    let m = crate::sysinfo::machine();
    out.push_str(&format!(
        "### advisor suite, {}\n\n```sh\n{}\n```\n\nMachine: {} CPUs ({}). {LEVELS} levels, size ratio 2, {} rows modelled; best and median of {rounds} runs (`--repeat`).\n\n",
        crate::sysinfo::iso8601(crate::sysinfo::unix_seconds()),
        crate::sysinfo::command_line(),
        m.cpus,
        m.cpu_model,
        s.args.num
    ));
    out.push_str("| case | best | median | groups at the last level |\n|---|---|---|---|\n");
    for (name, columns, noise) in cases {
        let t = time_case(name, columns, s.args.num, noise, rounds);
        println!(
            "advisor: {}: best {:.1} ms, median {:.1} ms",
            t.name,
            t.best.as_secs_f64() * 1e3,
            t.median.as_secs_f64() * 1e3
        );
        out.push_str(&format!(
            "| {} | {:.1} ms | {:.1} ms | {} |\n",
            t.name,
            t.best.as_secs_f64() * 1e3,
            t.median.as_secs_f64() * 1e3,
            t.groups_at_last_level
        ));
    }
    println!("{out}");
    if let Some(path) = &s.report {
        crate::report::write_report(path, &out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata::table::advisor::check_containment;

    #[test]
    fn the_wide_noisy_case_yields_a_valid_layout_that_separates_the_scanned_columns() {
        let w = workload(100, 1_000_000, 10, 7);
        assert_eq!(w.levels.len(), LEVELS);
        let p = ModelParams::uniform(100, 2.0, 10.0, 4.0);
        let a = advise(&p, &w, LEVELS);
        assert_eq!(check_containment(&a.layout, 100), Ok(()));
        // Q5's columns are scanned at every level; the last level does not
        // keep them in one group with the whole row.
        let last = a.layout.last().unwrap();
        assert!(last.len() > 1, "{last:?}");
    }
}
