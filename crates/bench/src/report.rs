//! Terminal tables and the markdown report of a suite.

use std::fmt::Write;
use std::path::Path;

use crate::record::Record;
use crate::sysinfo::Machine;

/// What a suite's markdown section says besides its records: how it was
/// run, where, and the charts drawn (paths relative to the report).
pub struct ReportInfo<'a, S> {
    pub command: &'a str,
    pub machine: &'a Machine,
    pub timestamp: &'a str,
    pub load_start: &'a str,
    pub load_end: &'a str,
    pub charts: Vec<String>,
    pub suite: &'a S,
}

/// Writes a report to `path`, creating its directory.
pub fn write_report(path: &Path, text: &str) -> crate::Result<()> {
    let fail = |e: std::io::Error| crate::Error(format!("{}: {e}", path.display()));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    std::fs::write(path, text).map_err(fail)
}

/// `1234567.8` as `1,234,568`.
pub fn thousands(x: f64) -> String {
    let n = x.round() as u64;
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes in binary units.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
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

/// Workloads in first-seen order.
pub fn workloads_in_order(records: &[Record]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in records {
        if !out.contains(&r.workload) {
            out.push(r.workload.clone());
        }
    }
    out
}

/// The Strata record a peer is compared with: the default variant, or the
/// first one.
fn strata_of<'a>(rows: &[&'a Record]) -> Option<&'a Record> {
    rows.iter()
        .find(|r| r.engine == "strata" && r.variant == "default")
        .or_else(|| rows.iter().find(|r| r.engine == "strata"))
        .copied()
}

struct Row {
    cells: Vec<String>,
}

fn rows_for(records: &[Record], workload: &str) -> (Vec<&'static str>, Vec<Row>) {
    let rows: Vec<&Record> = records.iter().filter(|r| r.workload == workload).collect();
    let engines: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r.engine.as_str()).collect();
    let with_ratio = engines.len() > 1;
    let strata = strata_of(&rows);
    let mut header = vec![
        "engine",
        "variant",
        "ops/s",
        "MB/s",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "write amp",
        "disk",
        "peak RSS",
    ];
    if with_ratio {
        header.push("Strata/peer ops/s");
    }
    let mut out = Vec::new();
    for r in rows {
        let mut cells = vec![
            r.engine.clone(),
            r.variant.clone(),
            thousands(r.ops_per_sec),
            format!("{:.1}", r.mb_per_sec),
            lat(r.p50_us),
            lat(r.p99_us),
            lat(r.p999_us),
            r.write_amp
                .map_or_else(|| "n/a".to_string(), |w| format!("{w:.2}")),
            human_bytes(r.disk_bytes),
            r.peak_rss_bytes
                .map_or_else(|| "n/a".to_string(), human_bytes),
        ];
        if with_ratio {
            cells.push(match strata {
                Some(s) if r.engine != "strata" && r.ops_per_sec > 0.0 => {
                    format!("{:.2}x", s.ops_per_sec / r.ops_per_sec)
                }
                _ => String::new(),
            });
        }
        out.push(Row { cells });
    }
    (header, out)
}

/// Plain-text tables, one per workload.
pub fn terminal_tables(records: &[Record]) -> String {
    let mut s = String::new();
    for w in workloads_in_order(records) {
        let (header, rows) = rows_for(records, &w);
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for r in &rows {
            for (i, c) in r.cells.iter().enumerate() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let _ = writeln!(s, "\n== {w} ==");
        let line = |cells: Vec<String>| -> String {
            cells
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let pad = widths[i].saturating_sub(c.chars().count());
                    if i < 2 {
                        format!("{c}{}", " ".repeat(pad))
                    } else {
                        format!("{}{c}", " ".repeat(pad))
                    }
                })
                .collect::<Vec<_>>()
                .join("  ")
        };
        let _ = writeln!(
            s,
            "{}",
            line(header.iter().map(|h| h.to_string()).collect())
        );
        let _ = writeln!(
            s,
            "{}",
            widths
                .iter()
                .map(|w| "-".repeat(*w))
                .collect::<Vec<_>>()
                .join("  ")
        );
        for r in rows {
            let _ = writeln!(s, "{}", line(r.cells));
        }
    }
    s
}

/// Markdown tables, one per workload.
pub fn markdown_tables(records: &[Record]) -> String {
    let mut s = String::new();
    for w in workloads_in_order(records) {
        let (header, rows) = rows_for(records, &w);
        let _ = writeln!(s, "#### {w}\n");
        let _ = writeln!(s, "| {} |", header.join(" | "));
        let sep: Vec<&str> = (0..header.len())
            .map(|i| if i < 2 { "---" } else { "---:" })
            .collect();
        let _ = writeln!(s, "| {} |", sep.join(" | "));
        for r in rows {
            let _ = writeln!(s, "| {} |", r.cells.join(" | "));
        }
        let _ = writeln!(s);
    }
    s
}

/// The ratio table: Strata ops/s divided by each peer's, per workload.
pub fn ratio_table(records: &[Record]) -> Option<String> {
    let mut peers: Vec<String> = records
        .iter()
        .filter(|r| r.engine != "strata")
        .map(|r| r.engine.clone())
        .collect();
    peers.sort();
    peers.dedup();
    if peers.is_empty() || !records.iter().any(|r| r.engine == "strata") {
        return None;
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| workload | {} |",
        peers
            .iter()
            .map(|p| format!("Strata / {p}"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(s, "| --- |{}", " ---: |".repeat(peers.len()));
    for w in workloads_in_order(records) {
        let rows: Vec<&Record> = records.iter().filter(|r| r.workload == w).collect();
        let Some(st) = strata_of(&rows) else { continue };
        let cells: Vec<String> = peers
            .iter()
            .map(|p| {
                rows.iter()
                    .find(|r| &r.engine == p)
                    .filter(|r| r.ops_per_sec > 0.0)
                    .map_or_else(
                        || "n/a".into(),
                        |r| format!("{:.2}x", st.ops_per_sec / r.ops_per_sec),
                    )
            })
            .collect();
        let _ = writeln!(s, "| {w} | {} |", cells.join(" | "));
    }
    Some(s)
}

/// Inputs of the markdown report beyond the records.
pub struct ReportContext<'a> {
    pub suite: &'a str,
    pub command: &'a str,
    pub machine: &'a Machine,
    /// Chart files, relative to the report's directory.
    pub charts: Vec<String>,
    pub timestamp: &'a str,
}

/// The markdown section a person pastes into docs/BENCHMARKS.md.
pub fn markdown_report(records: &[Record], ctx: &ReportContext<'_>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "### `{}` suite, {}\n", ctx.suite, ctx.timestamp);
    let m = ctx.machine;
    let _ = writeln!(
        s,
        "Machine: {} CPUs (`nproc`), {}, {} RAM, Linux {}.\n",
        m.cpus,
        m.cpu_model,
        human_bytes(m.memory_bytes),
        m.kernel
    );
    let _ = writeln!(s, "Command:\n\n```sh\n{}\n```\n", ctx.command);
    if let Some(r) = records.first()
        && let Some(obj) = r.settings.as_object()
    {
        let keys = [
            "num",
            "reads",
            "key_size",
            "value_size",
            "value_random_fraction",
            "threads",
            "write_buffer_size",
            "size_ratio",
            "bloom_bits",
            "block_size",
            "cache_size",
            "compression",
            "disable_wal",
            "sync",
            "scan_length",
            "distribution",
            "seed",
        ];
        let parts: Vec<String> = keys
            .iter()
            .filter_map(|k| obj.get(*k).map(|v| format!("{k}={v}")))
            .collect();
        let rounds = r.rounds;
        let _ = writeln!(
            s,
            "Settings: {}; median of {rounds} round(s) by ops/s.\n",
            parts.join(", ").replace('"', "")
        );
    }
    let engines: Vec<String> = {
        let mut v: Vec<String> = records.iter().map(|r| r.engine.clone()).collect();
        v.dedup();
        v.sort();
        v.dedup();
        v
    };
    let _ = writeln!(s, "Engines: {}.\n", engines.join(", "));
    let _ = writeln!(
        s,
        "Latencies are per operation in µs; write amp is flush + compaction bytes per user byte since the \
         database was opened (n/a where the engine does not count them); disk is every file in the engine's \
         directory after the workload; peak RSS is the process's VmHWM during that engine's run.\n"
    );
    s.push_str(&markdown_tables(records));
    if let Some(t) = ratio_table(records) {
        let _ = writeln!(s, "#### Strata / peer (ops/s)\n\n{t}");
    }
    let mut notes: Vec<String> = records
        .iter()
        .flat_map(|r| r.notes.iter().cloned())
        .collect();
    notes.sort();
    notes.dedup();
    notes_section(&mut s, &notes);
    charts_section(&mut s, &ctx.charts, ChartLinks::List);
    s
}

/// Appends a "Notes" section listing `notes` (nothing when there are none).
pub fn notes_section<N: std::fmt::Display>(s: &mut String, notes: &[N]) {
    if notes.is_empty() {
        return;
    }
    let _ = writeln!(s, "#### Notes\n");
    for n in notes {
        let _ = writeln!(s, "- {n}");
    }
    let _ = writeln!(s);
}

/// How a report shows its charts.
#[derive(Clone, Copy)]
pub enum ChartLinks {
    /// A list of links.
    List,
    /// Images embedded in the page.
    Embedded,
}

/// Appends a "Charts" section for the chart files `charts` (nothing when
/// there are none), each named by its file stem.
pub fn charts_section(s: &mut String, charts: &[String], links: ChartLinks) {
    if charts.is_empty() {
        return;
    }
    let _ = writeln!(s, "#### Charts\n");
    for c in charts {
        let name = Path::new(c)
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or(c);
        let _ = match links {
            ChartLinks::List => writeln!(s, "- [{name}]({c})"),
            ChartLinks::Embedded => writeln!(s, "![{name}]({c})"),
        };
    }
    let _ = writeln!(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_format() {
        assert_eq!(thousands(1_234_567.6), "1,234,568");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 << 20), "3.0 MiB");
    }
}
