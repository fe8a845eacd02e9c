//! The htap suite's report: per design, each query class's latency and
//! throughput, the total time, and the issue's figures as ratios.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::duckdb::DuckResult;
use super::engines::HtapEngine;
use super::workload::Scale;
use super::{CLASSES, ClassStats};
use crate::cli::SuiteArgs;
use crate::plot::plot_grouped_bars;
use crate::report::human_bytes;
use crate::{Result, sysinfo};

/// One query class of one design.
#[derive(Clone, Debug, Default)]
pub struct ClassFigures {
    pub count: u64,
    pub mean_us: f64,
    pub p99_us: f64,
    /// Operations per second of time spent in them.
    pub ops_per_sec: f64,
    pub busy_secs: f64,
}

/// One design's (or peer's) run.
#[derive(Clone, Debug)]
pub struct DesignResult {
    pub name: String,
    pub load_secs: f64,
    pub settle_secs: f64,
    pub load_rows_per_sec: f64,
    pub classes: Vec<ClassFigures>,
    pub total_secs: f64,
    pub wall_secs: f64,
    pub checksum: u64,
    pub layout: String,
    pub disk_bytes: u64,
    pub note: String,
}

impl DesignResult {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: &str,
        load_secs: f64,
        settle_secs: f64,
        rows: usize,
        classes: Vec<ClassStats>,
        wall: Duration,
        checksum: u64,
        engine: &dyn HtapEngine,
    ) -> DesignResult {
        let figs: Vec<ClassFigures> = classes
            .iter()
            .map(|c| {
                let busy = c.busy.as_secs_f64();
                let count = c.hist.len();
                ClassFigures {
                    count,
                    mean_us: if count > 0 {
                        busy * 1e6 / count as f64
                    } else {
                        0.0
                    },
                    p99_us: c.hist.value_at_quantile(0.99) as f64,
                    ops_per_sec: if busy > 0.0 { count as f64 / busy } else { 0.0 },
                    busy_secs: busy,
                }
            })
            .collect();
        DesignResult {
            name: name.to_string(),
            load_secs,
            settle_secs,
            load_rows_per_sec: rows as f64 / load_secs.max(1e-9),
            total_secs: figs.iter().map(|c| c.busy_secs).sum(),
            classes: figs,
            wall_secs: wall.as_secs_f64(),
            checksum,
            layout: engine.describe(),
            disk_bytes: engine.disk_bytes(),
            note: String::new(),
        }
    }

    fn class(&self, name: &str) -> &ClassFigures {
        let i = CLASSES.iter().position(|c| *c == name).unwrap_or(0);
        &self.classes[i]
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn fmt_us(us: f64) -> String {
    if us >= 10_000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{us:.1} µs")
    }
}

fn find<'a>(rs: &'a [DesignResult], name: &str) -> Option<&'a DesignResult> {
    rs.iter().find(|r| r.name == name)
}

/// The figures the issue names, each with the ratio measured.
fn targets(rs: &[DesignResult], duck: Option<&DuckResult>) -> Vec<String> {
    let mut out = Vec::new();
    let met = |ok: bool| if ok { "met" } else { "**not met**" };
    let (Some(row), Some(adv)) = (find(rs, "strata/row"), find(rs, "strata/advisor")) else {
        out.push("targets need the row and advisor designs".into());
        return out;
    };
    let strata: Vec<&DesignResult> = rs
        .iter()
        .filter(|r| r.name.starts_with("strata/"))
        .collect();
    let best = strata
        .iter()
        .min_by(|a, b| a.total_secs.total_cmp(&b.total_secs))
        .map_or("?", |r| r.name.as_str());
    out.push(format!(
        "advisor's design has the lowest total of the Strata designs: lowest is {best} — {}",
        met(best == "strata/advisor")
    ));
    if let Some(auto) = find(rs, "strata/auto") {
        let r = auto.total_secs / adv.total_secs;
        out.push(format!(
            "auto within 10 % of the advisor: {r:.2}× — {}",
            met(r <= 1.10)
        ));
    }
    let r = adv.total_secs / row.total_secs;
    out.push(format!(
        "total time at most 0.5× pure row: {r:.2}× — {}",
        met(r <= 0.5)
    ));
    let r = adv.class("Q2a").mean_us / row.class("Q2a").mean_us;
    out.push(format!(
        "Q2a within 1.1× of pure row: {r:.2}× — {}",
        met(r <= 1.1)
    ));
    let r = adv.load_rows_per_sec / row.load_rows_per_sec;
    out.push(format!(
        "inserts within 10 % of pure row (load rows/s): {r:.2}× — {}",
        met(r >= 0.9)
    ));
    let r = adv.class("Q1").mean_us / row.class("Q1").mean_us;
    out.push(format!(
        "  (Q1 insert latency in the mix: {r:.2}× pure row's)"
    ));
    for q in ["Q4", "Q5"] {
        let r = row.class(q).mean_us / adv.class(q).mean_us;
        out.push(format!(
            "{q} at least 5× faster than pure row: {r:.1}× — {}",
            met(r >= 5.0)
        ));
    }
    match duck {
        Some(d) => {
            let r = adv.class("Q5").mean_us / mean(&d.q5_us);
            out.push(format!(
                "Q5 within 2× of DuckDB: {r:.2}× DuckDB's time — {}",
                met(r <= 2.0)
            ));
            let r = mean(&d.q2a_us) / adv.class("Q2a").mean_us;
            out.push(format!(
                "Q2a at least 10× DuckDB's: {r:.1}× — {}",
                met(r >= 10.0)
            ));
        }
        None => out.push("DuckDB figures: not run".into()),
    }
    match find(rs, "sqlite") {
        Some(sq) => {
            let r = sq.total_secs / adv.total_secs;
            out.push(format!(
                "whole mix faster than SQLite: {r:.2}× — {}",
                met(r > 1.0)
            ));
        }
        None => out.push("SQLite figures: not run".into()),
    }
    out
}

/// The markdown section for docs/BENCHMARKS.md.
pub fn render(
    s: &SuiteArgs,
    scale: &Scale,
    rate: f64,
    rs: &[DesignResult],
    duck: Option<&DuckResult>,
) -> String {
    let m = sysinfo::machine();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "### htap suite, {}\n",
        sysinfo::iso8601(sysinfo::unix_seconds())
    );
    let _ = writeln!(o, "```sh\n{}\n```\n", sysinfo::command_line());
    let _ = writeln!(
        o,
        "Machine: {} CPUs ({}), {} RAM, Linux {}. Scale: {} columns, {} rows loaded, {} inserts at \
         {rate:.0}/s with an update every 100, {} point reads (half Q2a, half Q2b), {} Q4, {} Q5 and {} J; \
         T = 2, 8 levels, {} memtables, {} block cache{}; Strata scans on {} thread(s).{}\n",
        m.cpus,
        m.cpu_model,
        human_bytes(m.memory_bytes),
        m.kernel,
        scale.columns,
        scale.load_rows,
        scale.inserts,
        scale.points,
        scale.q4,
        scale.q5,
        scale.joins,
        human_bytes(s.args.write_buffer_size),
        human_bytes(s.args.cache_size),
        if s.wide { " (wide table)" } else { "" },
        s.scan_threads,
        if s.args.repeat > 1 {
            format!(
                " {} rounds; each design's round with the median total is shown.",
                s.args.repeat
            )
        } else {
            String::new()
        }
    );
    // A class no engine ran (J in the htap suite) gets no column.
    let shown = shown_classes(rs);
    let names: Vec<&str> = shown.iter().map(|&i| CLASSES[i]).collect();
    let _ = writeln!(
        o,
        "| design | load rows/s | {} | total (s) | mix wall (s) | disk |",
        names.join(" | ")
    );
    let _ = writeln!(o, "|---|---|{}---|---|---|", "---|".repeat(shown.len()));
    for r in rs {
        let _ = write!(o, "| {} | {:.0} |", r.name, r.load_rows_per_sec);
        for &i in &shown {
            let _ = write!(o, " {} |", fmt_us(r.classes[i].mean_us));
        }
        let _ = writeln!(
            o,
            " {:.2} | {:.1} | {} |",
            r.total_secs,
            r.wall_secs,
            human_bytes(r.disk_bytes)
        );
    }
    if let Some(d) = duck {
        let _ = write!(
            o,
            "| duckdb {} (final rows; load {:.1} s) | — |",
            d.version, d.load_secs
        );
        for name in &names {
            let _ = write!(o, " {} |", duck_class(d, name).map_or("—".into(), fmt_us));
        }
        let _ = writeln!(o, " — | — | — |");
    }
    let _ = writeln!(
        o,
        "\nMean latency per query; total = time the clients spent in queries (Σ latency).\n"
    );
    let _ = writeln!(
        o,
        "Throughput (operations per second of time spent in them) and p99 latency:\n"
    );
    let _ = writeln!(o, "| design | {} |", names.join(" | "));
    let _ = writeln!(o, "|---|{}", "---|".repeat(shown.len()));
    for r in rs {
        let _ = write!(o, "| {} |", r.name);
        for &i in &shown {
            let c = &r.classes[i];
            let _ = write!(o, " {:.0}/s (p99 {}) |", c.ops_per_sec, fmt_us(c.p99_us));
        }
        let _ = writeln!(o);
    }
    let _ = writeln!(
        o,
        "\nFigures (advisor's design against the others, this run):\n"
    );
    for t in targets(rs, duck) {
        let _ = writeln!(o, "- {t}");
    }
    let _ = writeln!(o, "\nLayouts at the end of the run:\n");
    for r in rs {
        let _ = writeln!(
            o,
            "- {}: `{}`{}",
            r.name,
            r.layout,
            if r.note.is_empty() {
                String::new()
            } else {
                format!(" — {}", r.note)
            }
        );
    }
    if let Some(d) = duck {
        let sums_agree = d.q4_sums.len() == scale.q4;
        let _ = writeln!(
            o,
            "\nDuckDB answered {} Q4 and {} Q5 queries{}.",
            d.q4_us.len(),
            d.q5_us.len(),
            if sums_agree {
                ""
            } else {
                " (fewer than asked)"
            }
        );
    }
    o
}

/// Indices of the classes some engine ran.
fn shown_classes(rs: &[DesignResult]) -> Vec<usize> {
    (0..CLASSES.len())
        .filter(|&i| {
            rs.iter()
                .any(|r| r.classes.get(i).is_some_and(|c| c.count > 0))
        })
        .collect()
}

/// DuckDB's mean latency of class `name`, if it ran it.
fn duck_class(d: &DuckResult, name: &str) -> Option<f64> {
    let us = match name {
        "Q2a" => &d.q2a_us,
        "Q4" => &d.q4_us,
        "Q5" => &d.q5_us,
        "J" => &d.join_us,
        _ => return None,
    };
    (!us.is_empty()).then(|| mean(us))
}

/// Charts: total time per design; mean latency per query class.
pub fn charts(dir: &Path, rs: &[DesignResult], duck: Option<&DuckResult>) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| crate::Error(format!("{}: {e}", dir.display())))?;
    let names: Vec<String> = rs.iter().map(|r| r.name.clone()).collect();
    let total = dir.join("htap-total.svg");
    plot_grouped_bars(
        &total,
        "HTAP mix: total time in queries per design (lower is better)",
        "seconds",
        &["total".to_string()],
        &names,
        false,
        |_, s| find(rs, s).map(|r| r.total_secs),
    )?;
    let mut series = names.clone();
    if duck.is_some() {
        series.push("duckdb".into());
    }
    let classes: Vec<String> = shown_classes(rs)
        .iter()
        .map(|&i| CLASSES[i].to_string())
        .collect();
    let lat = dir.join("htap-latency.svg");
    plot_grouped_bars(
        &lat,
        "HTAP mix: mean latency per query (µs, log scale; lower is better)",
        "µs",
        &classes,
        &series,
        true,
        |g, s| {
            if s == "duckdb" {
                let d = duck?;
                return duck_class(d, g);
            }
            find(rs, s).map(|r| r.class(g).mean_us)
        },
    )?;
    Ok(vec![total, lat])
}
