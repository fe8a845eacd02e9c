//! `strata-bench suite --suite htap`: seed 001's HTAP workload (LASER,
//! section 7.2) over Strata's table layouts, SQLite and DuckDB.
//!
//! Each design loads the same rows into a fresh database, waits for
//! compaction, runs the mix once unmeasured (so that `auto` can learn the
//! workload and switch, and caches warm), waits for compaction again, then
//! runs the measured mix ([`workload`]): a writer thread inserts at
//! a steady rate (Q1) with an update every 100 inserts (Q3), while a reader
//! thread runs the point reads (Q2a, Q2b) and then the analytical queries
//! (Q4, Q5). Each query class reports its latency and throughput; a
//! design's *total time* is the time its clients spent in queries (the sum
//! of every operation's latency), which is what the workload costs whatever
//! the rate of arrival. The Strata designs are pure row, pure column, fixed
//! groups, row on top and columnar at the bottom, the advisor's design (the
//! advice taken from the pure-row run's recorded workload) and `auto`
//! (pure row with the automatic layout on). SQLite runs the whole mix;
//! DuckDB runs Q2a, Q4 and Q5 on the final rows.

pub(crate) mod duckdb;
mod engines;
mod report;
mod sql;
pub mod workload;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use self::engines::{HtapEngine, StrataEngine, table_options};
use self::workload::{Op, Projections, Scale, key, plan, row, side};
use crate::cli::{BenchArgs, Given, SuiteArgs};
use crate::{Error, Result};

pub use self::report::DesignResult;

/// The query classes, in report order.
pub const CLASSES: [&str; 7] = ["Q1", "Q2a", "Q2b", "Q3", "Q4", "Q5", "J"];

/// The suite's defaults (a run of about three minutes on the 2-core host).
pub fn apply_defaults(a: &mut BenchArgs, given: Given<'_>) {
    if !given("num") {
        a.num = 1_000_000;
    }
    if !given("reads") {
        a.reads = Some(20_000);
    }
    if !given("write_buffer_size") {
        a.write_buffer_size = 4 << 20;
    }
}

/// One class's measurements.
#[derive(Clone, Debug)]
pub struct ClassStats {
    pub hist: Histogram<u64>,
    pub busy: Duration,
}

impl Default for ClassStats {
    fn default() -> Self {
        ClassStats {
            hist: Histogram::new(3).unwrap_or_else(|_| unreachable!("3 significant digits")),
            busy: Duration::ZERO,
        }
    }
}

impl ClassStats {
    fn record(&mut self, d: Duration) {
        self.busy += d;
        let _ = self.hist.record((d.as_micros() as u64).max(1));
    }
}

fn class_of(op: &Op) -> usize {
    match op {
        Op::Insert(_) => 0,
        Op::Point { wide: true, .. } => 1,
        Op::Point { wide: false, .. } => 2,
        Op::Update { .. } => 3,
        Op::Sum { .. } => 4,
        Op::Max { .. } => 5,
        Op::Join => 6,
    }
}

/// Runs the mix on a loaded engine.
fn run_mix(
    engine: &dyn HtapEngine,
    s: &Scale,
    rate: f64,
    writer: &[Op],
    reader: &[Op],
) -> Result<(Vec<ClassStats>, Duration, u64)> {
    let p = Projections::for_columns(s.columns);
    let inserted = AtomicUsize::new(s.load_rows);
    let key_at = |pos: f64| {
        let n = inserted.load(Ordering::Acquire);
        key(
            s.seed,
            ((pos * (n - 1) as f64) as usize).min(n - 1),
            s.columns,
        )
    };
    let start = Instant::now();
    let mut checksum = 0u64;
    let (wstats, rstats) =
        std::thread::scope(|scope| -> Result<(Vec<ClassStats>, Vec<ClassStats>)> {
            let w = scope.spawn(|| -> Result<Vec<ClassStats>> {
                let mut stats = vec![ClassStats::default(); CLASSES.len()];
                let mut values = Vec::with_capacity(s.columns);
                for op in writer {
                    if let Op::Insert(i) = op {
                        let due = start + Duration::from_secs_f64(*i as f64 / rate);
                        if let Some(wait) = due.checked_duration_since(Instant::now()) {
                            std::thread::sleep(wait);
                        }
                    }
                    // The key (and an insert's row) is made before the
                    // clock starts: generating it is the benchmark's cost,
                    // not the engine's.
                    let k = match op {
                        Op::Insert(i) => row(s.seed, s.load_rows + i, s.columns, &mut values),
                        Op::Update { pos, .. } => key_at(*pos),
                        _ => 0,
                    };
                    let t = Instant::now();
                    match op {
                        Op::Insert(_) => {
                            engine.insert(k, &values)?;
                            inserted.fetch_add(1, Ordering::Release);
                        }
                        Op::Update { col, value, .. } => engine.update(k, *col, *value)?,
                        _ => {}
                    }
                    stats[class_of(op)].record(t.elapsed());
                }
                Ok(stats)
            });
            let mut stats = vec![ClassStats::default(); CLASSES.len()];
            for op in reader {
                let k = match op {
                    Op::Point { pos, .. } => key_at(*pos),
                    _ => 0,
                };
                let t = Instant::now();
                let sum = match op {
                    Op::Point { wide, .. } => {
                        let cols = if *wide { p.q2a.clone() } else { p.q2b.clone() };
                        engine.point(k, cols)?
                    }
                    Op::Sum { lo, hi } => engine.sum(*lo, *hi, p.q4.clone())? as u64,
                    Op::Max { lo, hi } => engine
                        .max(*lo, *hi, p.q5.clone())?
                        .iter()
                        .fold(0u64, |a, &m| a.wrapping_add(m as u64)),
                    Op::Join => engine.join()?,
                    _ => 0,
                };
                checksum = checksum.wrapping_add(sum);
                stats[class_of(op)].record(t.elapsed());
            }
            let wstats = w
                .join()
                .map_err(|_| Error("the writer thread panicked".into()))??;
            Ok((wstats, stats))
        })?;
    let merged = wstats
        .into_iter()
        .zip(rstats)
        .map(|(mut a, b)| {
            let _ = a.hist.add(&b.hist);
            a.busy += b.busy;
            a
        })
        .collect();
    Ok((merged, start.elapsed(), checksum))
}

/// The suite's own flags, from `suite` args.
struct HtapFlags {
    designs: Vec<String>,
    peers: Vec<String>,
    scale: Scale,
    rate: f64,
    write_buffer: usize,
    cache_bytes: u64,
    root: PathBuf,
    scan_threads: usize,
}

fn flags(s: &SuiteArgs) -> Result<HtapFlags> {
    let a = &s.args;
    let columns = if s.wide { 100 } else { 30 };
    let inserts = s.mix_inserts.unwrap_or(a.num / 20);
    Ok(HtapFlags {
        designs: s
            .designs
            .split(',')
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty())
            .collect(),
        peers: s
            .htap_peers
            .split(',')
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty())
            .collect(),
        scale: Scale {
            columns,
            load_rows: a.num as usize,
            inserts: inserts as usize,
            points: a.reads.unwrap_or(20_000) as usize,
            q4: s.q4,
            q5: s.q5,
            joins: s.joins,
            seed: a.seed,
        },
        rate: s.insert_rate,
        write_buffer: a.write_buffer_size as usize,
        cache_bytes: a.cache_size,
        root: a.db.join("htap"),
        scan_threads: s.scan_threads.max(1),
    })
}

/// The layout a design starts with.
fn design_layout(design: &str, advised: Option<&str>) -> Result<(String, Option<f64>)> {
    Ok(match design {
        "advisor" => (
            advised
                .ok_or_else(|| {
                    Error("the advisor design needs the row design to run first".into())
                })?
                .to_string(),
            None,
        ),
        "auto" => ("row".into(), Some(0.2)),
        d => (d.to_string(), None),
    })
}

fn fresh_dir(root: &Path, name: &str) -> Result<PathBuf> {
    let dir = root.join(name.replace([':', ',', ' ', '|', ';'], "_"));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| Error(format!("{}: {e}", dir.display())))?;
    }
    Ok(dir)
}

fn run_engine(
    name: &str,
    engine: &dyn HtapEngine,
    f: &HtapFlags,
    writer: &[Op],
    reader: &[Op],
) -> Result<DesignResult> {
    println!("htap: {name}: loading {} rows", f.scale.load_rows);
    let t = Instant::now();
    engine.load(f.scale.seed, 0..f.scale.load_rows)?;
    let load_secs = t.elapsed().as_secs_f64();
    let t = Instant::now();
    engine.settle()?;
    let settle_secs = t.elapsed().as_secs_f64();
    if f.scale.joins > 0 {
        engine.load_side(&side(&f.scale))?;
    }
    println!(
        "htap: {name}: loaded in {load_secs:.1} s (+{settle_secs:.1} s compaction); a first round of the mix"
    );
    // A first, unmeasured round: `auto` sees the workload and switches,
    // caches warm, every design alike. Its inserts and updates are the
    // measured round's, so both end on the same rows.
    run_mix(engine, &f.scale, f.rate, writer, reader)?;
    let t = Instant::now();
    engine.settle()?;
    println!(
        "htap: {name}: settled in {:.1} s; the measured round",
        t.elapsed().as_secs_f64()
    );
    let (classes, wall, checksum) = run_mix(engine, &f.scale, f.rate, writer, reader)?;
    let r = DesignResult::new(
        name,
        load_secs,
        settle_secs,
        f.scale.load_rows,
        classes,
        wall,
        checksum,
        engine,
    );
    println!(
        "htap: {name}: total {:.2} s of queries, mix {:.1} s",
        r.total_secs, r.wall_secs
    );
    Ok(r)
}

/// Runs the suite: `--repeat` rounds of every Strata design and of the
/// peers that run the mix, each design's median round reported (single
/// rounds on this host spread by up to a third); DuckDB once.
pub fn run(s: &SuiteArgs) -> Result<()> {
    let f = flags(s)?;
    let (writer, reader) = plan(&f.scale);
    std::fs::create_dir_all(&f.root).map_err(|e| Error(format!("{}: {e}", f.root.display())))?;
    let rounds = s.args.repeat.max(1) as usize;
    let mut per_design: Vec<Vec<DesignResult>> = Vec::new();
    for round in 0..rounds {
        if rounds > 1 {
            println!("htap: round {} of {rounds}", round + 1);
        }
        let results = run_round(&f, &writer, &reader)?;
        if per_design.is_empty() {
            per_design = results.into_iter().map(|r| vec![r]).collect();
        } else {
            for (all, r) in per_design.iter_mut().zip(results) {
                all.push(r);
            }
        }
    }
    let results: Vec<DesignResult> = per_design.into_iter().map(median_round).collect();
    let mut duck = None;
    if f.peers.iter().any(|p| p == "duckdb") {
        duck = run_duckdb(&f, &reader)?;
    }
    let text = report::render(s, &f.scale, f.rate, &results, duck.as_ref());
    println!("{text}");
    if let Some(path) = &s.report {
        crate::report::write_report(path, &text)?;
    }
    if let Some(dir) = &s.args.plot {
        for chart in report::charts(dir, &results, duck.as_ref())? {
            println!("chart: {}", chart.display());
        }
    }
    Ok(())
}

/// One round: every Strata design, then the peers that run the whole mix
/// (SQLite, Strata through SQL), in the same order every round.
fn run_round(f: &HtapFlags, writer: &[Op], reader: &[Op]) -> Result<Vec<DesignResult>> {
    let mut results: Vec<DesignResult> = Vec::new();
    let mut advised: Option<String> = None;
    for design in &f.designs {
        let (layout, auto) = design_layout(design, advised.as_deref())?;
        let dir = fresh_dir(&f.root, design)?;
        let engine = StrataEngine::create(
            &dir,
            f.scale.columns,
            table_options(&layout, f.write_buffer, auto),
            f.cache_bytes,
        )?
        .with_scan_threads(f.scan_threads);
        let mut r = run_engine(&format!("strata/{design}"), &engine, f, writer, reader)?;
        if design == "row" {
            let advice = engine
                .table()
                .advise()
                .map_err(|e| Error(format!("advise: {e}")))?;
            let text = advice.proposed.to_text(engine.table().schema());
            println!(
                "htap: advisor (from the row run): predicted cost {:.0} -> {:.0}: {text}",
                advice.current_cost.total, advice.proposed_cost.total
            );
            r.note = format!(
                "advice: {} (predicted {:.0} → {:.0})",
                advice.proposed.summary(engine.table().schema()),
                advice.current_cost.total,
                advice.proposed_cost.total
            );
            advised = Some(text);
        }
        if design == "auto" {
            let st = engine.table().statistics();
            r.note = format!("{} automatic layout switches", st.auto_switches);
        }
        drop(engine);
        let _ = std::fs::remove_dir_all(&dir);
        results.push(r);
    }
    for peer in &f.peers {
        match peer.as_str() {
            "sqlite" => results.push(run_sqlite(f, writer, reader)?),
            "strata-sql" => results.push(run_sql(f, writer, reader, true)?),
            "strata-sql-text" => results.push(run_sql(f, writer, reader, false)?),
            "duckdb" => {}
            other => {
                return Err(Error(format!(
                    "unknown htap peer {other:?} (strata-sql, strata-sql-text, sqlite, duckdb)"
                )));
            }
        }
    }
    Ok(results)
}

/// A design's round with the median total (the lower of the two middle
/// ones for an even count), its note saying the rounds' spread.
fn median_round(mut rounds: Vec<DesignResult>) -> DesignResult {
    rounds.sort_by(|a, b| a.total_secs.total_cmp(&b.total_secs));
    let n = rounds.len();
    let (lo, hi) = (
        rounds.first().map_or(0.0, |r| r.total_secs),
        rounds.last().map_or(0.0, |r| r.total_secs),
    );
    let mut r = rounds.swap_remove((n.max(1) - 1) / 2);
    if n > 1 {
        let spread = format!("median of {n} rounds by total (totals {lo:.2}-{hi:.2} s)");
        r.note = if r.note.is_empty() {
            spread
        } else {
            format!("{}; {spread}", r.note)
        };
    }
    r
}

/// Strata through SQL, on the first design's layout: prepared statements,
/// or statements as text.
fn run_sql(f: &HtapFlags, writer: &[Op], reader: &[Op], prepared: bool) -> Result<DesignResult> {
    let design = f.designs.first().map_or("row", String::as_str);
    let (layout, auto) = design_layout(design, None)?;
    let dir = fresh_dir(&f.root, "strata-sql")?;
    let engine = sql::SqlStrataEngine::create(
        &dir,
        f.scale.columns,
        table_options(&layout, f.write_buffer, auto),
        f.cache_bytes,
        prepared,
    )?;
    let name = if prepared {
        "strata-sql"
    } else {
        "strata-sql-text"
    };
    let r = run_engine(&format!("{name}/{design}"), &engine, f, writer, reader);
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
    r
}

#[cfg(feature = "sqlite")]
fn run_sqlite(f: &HtapFlags, writer: &[Op], reader: &[Op]) -> Result<DesignResult> {
    let dir = fresh_dir(&f.root, "sqlite")?;
    let engine = engines::SqliteEngine::create(&dir, f.scale.columns, f.cache_bytes)?;
    let r = run_engine("sqlite", &engine, f, writer, reader);
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
    r
}

#[cfg(not(feature = "sqlite"))]
fn run_sqlite(_: &HtapFlags, _: &[Op], _: &[Op]) -> Result<DesignResult> {
    Err(Error(
        "the sqlite peer is not compiled in (build strata-bench with --features sqlite)".into(),
    ))
}

/// DuckDB on the final rows (load and inserts): Q2a, Q4, Q5 and J.
fn run_duckdb(f: &HtapFlags, reader: &[Op]) -> Result<Option<duckdb::DuckResult>> {
    let dir = fresh_dir(&f.root, "duckdb")?;
    std::fs::create_dir_all(&dir).map_err(|e| Error(format!("{}: {e}", dir.display())))?;
    let rows = f.scale.load_rows + f.scale.inserts;
    let csv = dir.join("rows.csv");
    println!("htap: duckdb: writing {rows} rows as CSV");
    duckdb::write_csv(&csv, f.scale.seed, rows, f.scale.columns)?;
    let p = Projections::for_columns(f.scale.columns);
    let mut q = duckdb::DuckQueries {
        columns: f.scale.columns,
        points: Vec::new(),
        point_cols: (p.q2a.start, p.q2a.end),
        sums: Vec::new(),
        sum_cols: (p.q4.start, p.q4.end),
        maxes: Vec::new(),
        max_cols: (p.q5.start, p.q5.end),
        side: if f.scale.joins > 0 {
            side(&f.scale)
        } else {
            Vec::new()
        },
        joins: f.scale.joins,
    };
    for op in reader {
        match op {
            Op::Point { pos, wide: true } => {
                let i = ((pos * (rows - 1) as f64) as usize).min(rows - 1);
                q.points.push(key(f.scale.seed, i, f.scale.columns));
            }
            Op::Sum { lo, hi } => q.sums.push((*lo, *hi)),
            Op::Max { lo, hi } => q.maxes.push((*lo, *hi)),
            _ => {}
        }
    }
    println!("htap: duckdb: loading and running Q2a, Q4, Q5, J");
    let r = duckdb::run(&dir, &csv, &q)?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(total: f64, note: &str) -> DesignResult {
        DesignResult {
            name: "strata/row".into(),
            load_secs: 0.0,
            settle_secs: 0.0,
            load_rows_per_sec: 0.0,
            classes: Vec::new(),
            total_secs: total,
            wall_secs: 0.0,
            checksum: 0,
            layout: String::new(),
            disk_bytes: 0,
            note: note.into(),
        }
    }

    #[test]
    fn the_median_round_is_reported_with_the_spread() {
        let r = median_round(vec![round(1.4, "a"), round(1.1, "b"), round(1.3, "c")]);
        assert_eq!(r.total_secs, 1.3);
        assert_eq!(
            r.note,
            "c; median of 3 rounds by total (totals 1.10-1.40 s)"
        );
        // Of an even count, the lower middle; one round stays as it is.
        let r = median_round(vec![
            round(2.0, ""),
            round(1.0, ""),
            round(3.0, ""),
            round(4.0, ""),
        ]);
        assert_eq!(r.total_secs, 2.0);
        assert_eq!(r.note, "median of 4 rounds by total (totals 1.00-4.00 s)");
        let r = median_round(vec![round(5.0, "only")]);
        assert_eq!((r.total_secs, r.note.as_str()), (5.0, "only"));
    }
}
