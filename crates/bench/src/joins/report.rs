//! The joins suite's results: tables per part, the issue's figures as
//! ratios, and charts.

use std::fmt::Write as _;
use std::path::Path;

use strata::join::JoinMethod;

use super::COLUMNS_SUFFIX;
use crate::cli::SuiteArgs;
use crate::plot::plot_grouped_bars;
use crate::report::{human_bytes, write_report};
use crate::{Error, Result, sysinfo};

/// One Strata join.
#[derive(Clone, Debug)]
pub struct JoinRow {
    pub method: String,
    pub secs: f64,
    pub rows: u64,
    pub checksum: u64,
    pub peak_memory: u64,
    pub spilled: u64,
    /// The method that ran (for `auto`, the planner's choice).
    pub ran: String,
}

/// One peer's join.
#[derive(Clone, Debug)]
pub struct PeerRow {
    pub name: String,
    pub secs: f64,
    pub rows: u64,
    pub load_secs: f64,
    pub index_secs: Option<f64>,
}

impl PeerRow {
    pub fn new(
        name: &str,
        secs: f64,
        rows: u64,
        load_secs: f64,
        index_secs: Option<f64>,
    ) -> PeerRow {
        PeerRow {
            name: name.to_string(),
            secs,
            rows,
            load_secs,
            index_secs,
        }
    }
}

struct DatasetResult {
    name: String,
    load_secs: f64,
    joins: Vec<JoinRow>,
    builds: Vec<(String, f64)>,
    chosen: (JoinMethod, JoinMethod),
    peers: Vec<PeerRow>,
}

struct FreqResult {
    dataset: String,
    frequency: usize,
    label: String,
    load_secs: f64,
    join_secs: f64,
    last: Option<JoinRow>,
    /// Why a join of the series refused its memory budget (the series
    /// stopped there).
    refused: Option<String>,
}

/// Everything the suite measured.
pub struct Report {
    n: u64,
    /// Threads each Strata join could use.
    threads: usize,
    /// Each Strata join's memory budget.
    memory: usize,
    peers: Vec<String>,
    datasets: Vec<DatasetResult>,
    entries: Vec<(usize, Vec<JoinRow>, JoinMethod, Vec<PeerRow>)>,
    freq: Vec<FreqResult>,
    skews: Vec<(String, Vec<JoinRow>)>,
    /// Disagreements between methods (rows or checksums), reported first.
    problems: Vec<String>,
}

/// The primary-key joins' methods (the P group).
const P_GROUP: [&str; 4] = ["INLJ-P", "SJ-P", "HJ-P", "HH-P"];

fn check_agreement(what: &str, joins: &[JoinRow], problems: &mut Vec<String>) {
    if let Some(first) = joins.first() {
        for j in joins {
            if (j.rows, j.checksum) != (first.rows, first.checksum) {
                problems.push(format!(
                    "{what}: {} returned {} rows (checksum {:016x}); {} returned {} ({:016x})",
                    j.method, j.rows, j.checksum, first.method, first.rows, first.checksum
                ));
            }
        }
    }
}

/// One configuration the planner is judged on ([`Report::planner_checks`]).
struct PlannerCheck {
    what: String,
    chose: String,
    secs: f64,
    best: f64,
    best_method: String,
    own: Option<f64>,
}

fn by<'a>(joins: &'a [JoinRow], m: &str) -> Option<&'a JoinRow> {
    joins.iter().find(|j| j.method == m)
}

fn best<'a>(joins: &'a [JoinRow], names: &[&str]) -> Option<&'a JoinRow> {
    joins
        .iter()
        .filter(|j| names.contains(&j.method.as_str()))
        .min_by(|a, b| a.secs.total_cmp(&b.secs))
}

impl Report {
    pub fn new(n: u64, peers: &[&str], threads: usize, memory: usize) -> Report {
        Report {
            n,
            threads,
            memory,
            peers: peers.iter().map(|s| s.to_string()).collect(),
            datasets: Vec::new(),
            entries: Vec::new(),
            freq: Vec::new(),
            skews: Vec::new(),
            problems: Vec::new(),
        }
    }

    pub fn dataset(
        &mut self,
        name: &str,
        load_secs: f64,
        joins: Vec<JoinRow>,
        builds: Vec<(String, f64)>,
        chosen: (JoinMethod, JoinMethod),
        peers: Vec<PeerRow>,
    ) {
        let (p, n): (Vec<JoinRow>, Vec<JoinRow>) = joins
            .iter()
            .cloned()
            .partition(|j| P_GROUP.contains(&j.method.as_str()) || j.method == "auto-P");
        check_agreement(&format!("{name} P"), &p, &mut self.problems);
        check_agreement(&format!("{name} N"), &n, &mut self.problems);
        for peer in &peers {
            let group = if peer.name.ends_with('P') { &p } else { &n };
            if let Some(f) = group.first()
                && f.rows != peer.rows
            {
                self.problems.push(format!(
                    "{name}: {} counted {} rows; Strata {}",
                    peer.name, peer.rows, f.rows
                ));
            }
        }
        self.datasets.push(DatasetResult {
            name: name.to_string(),
            load_secs,
            joins,
            builds,
            chosen,
            peers,
        });
    }

    pub fn entry(
        &mut self,
        entry: usize,
        joins: Vec<JoinRow>,
        chosen: JoinMethod,
        peers: Vec<PeerRow>,
    ) {
        check_agreement(&format!("entry {entry}"), &joins, &mut self.problems);
        self.entries.push((entry, joins, chosen, peers));
    }

    pub fn frequency(
        &mut self,
        dataset: &str,
        frequency: usize,
        label: &str,
        (load_secs, join_secs): (f64, f64),
        last: Option<JoinRow>,
        refused: Option<String>,
    ) {
        self.freq.push(FreqResult {
            dataset: dataset.to_string(),
            frequency,
            label: label.to_string(),
            load_secs,
            join_secs,
            last,
            refused,
        });
    }

    pub fn skew(&mut self, theta: &str, joins: Vec<JoinRow>) {
        check_agreement(&format!("zipf {theta}"), &joins, &mut self.problems);
        self.skews.push((theta.to_string(), joins));
    }

    /// Every Strata join run.
    fn all_joins(&self) -> impl Iterator<Item = &JoinRow> {
        self.datasets
            .iter()
            .flat_map(|d| d.joins.iter())
            .chain(self.entries.iter().flat_map(|e| e.1.iter()))
            .chain(self.skews.iter().flat_map(|s| s.1.iter()))
            .chain(self.freq.iter().filter_map(|f| f.last.as_ref()))
    }

    /// The planner's configurations: what, the method `auto` ran, its
    /// time, the best measured time and method, and the time of the chosen
    /// method's own row where one row is that method (hash joins and the
    /// sort-merge join; a method that reads an index may have chosen
    /// another index than the rows'), to tell a wrong choice from the
    /// spread of two runs of one method.
    fn planner_checks(&self) -> Vec<PlannerCheck> {
        let mut out = Vec::new();
        let mut push = |what: String, joins: &[JoinRow], auto: &str, group: &[&str]| {
            if let (Some(a), Some(b)) = (by(joins, auto), best(joins, group)) {
                let suffix = if auto == "auto-P" { "P" } else { "N" };
                let own = match a.ran.as_str() {
                    "grace-hash" => Some(format!("HJ-{suffix}")),
                    "hybrid-hash" => Some(format!("HH-{suffix}")),
                    "sort-merge" => Some(format!("SJ-{suffix}")),
                    _ => None,
                }
                .and_then(|label| by(joins, &label))
                .map(|j| j.secs);
                out.push(PlannerCheck {
                    what,
                    chose: a.ran.clone(),
                    secs: a.secs,
                    best: b.secs,
                    best_method: b.method.clone(),
                    own,
                });
            }
        };
        for d in &self.datasets {
            push(format!("{} P", d.name), &d.joins, "auto-P", &P_GROUP);
            let n_group: Vec<&str> = d
                .joins
                .iter()
                .map(|j| j.method.as_str())
                .filter(|m| !P_GROUP.contains(m) && !m.starts_with("auto"))
                .collect();
            push(format!("{} N", d.name), &d.joins, "auto-N", &n_group);
        }
        for (entry, joins, _, _) in &self.entries {
            push(format!("unif {entry} B P"), joins, "auto-P", &P_GROUP);
        }
        out
    }

    pub fn finish(&self, s: &SuiteArgs) -> Result<()> {
        let mut charts = Vec::new();
        if let Some(dir) = &s.args.plot {
            charts = self.plot(dir)?;
        }
        let text = self.render(&charts);
        println!("{text}");
        if let Some(path) = &s.report {
            write_report(path, &text)?;
        }
        if !self.problems.is_empty() {
            return Err(Error(format!(
                "methods disagree: {}",
                self.problems.join("; ")
            )));
        }
        Ok(())
    }

    fn render(&self, charts: &[String]) -> String {
        let m = sysinfo::machine();
        let mut o = String::new();
        let _ = writeln!(
            o,
            "### joins suite, {}\n",
            sysinfo::iso8601(sysinfo::unix_seconds())
        );
        let _ = writeln!(o, "```sh\n{}\n```\n", sysinfo::command_line());
        let _ = writeln!(
            o,
            "Machine: {} CPUs ({}), {} RAM, Linux {}. {} rows per table (the frequency part {}); \
             4 KiB blocks, 16 MiB write buffers, size ratio 5, no compression, {} of join \
             memory, {} thread(s) per Strata join; peers: {}. Times are seconds of one join \
             counting its rows (Strata's the median of 3 to 15 runs, as many as fit 0.6 s, the \
             peers' one run); every \
             method's row count and checksum agree (the suite fails otherwise).\n",
            m.cpus,
            m.cpu_model,
            human_bytes(m.memory_bytes),
            m.kernel,
            self.n,
            self.n / 2,
            human_bytes(self.memory as u64),
            self.threads,
            if self.peers.is_empty() {
                "none".to_string()
            } else {
                self.peers.join(", ")
            },
        );
        self.render_figures(&mut o);
        self.render_datasets(&mut o);
        self.render_entries(&mut o);
        self.render_frequency(&mut o);
        self.render_skew(&mut o);
        for c in charts {
            let _ = writeln!(o, "![{c}]({c})\n");
        }
        o
    }

    fn render_figures(&self, o: &mut String) {
        let _ = writeln!(o, "**The issue's figures**\n");
        let peak = self.all_joins().map(|j| j.peak_memory).max().unwrap_or(0);
        let _ = writeln!(
            o,
            "- Memory: the largest peak of any join was {} against a budget of {}.",
            human_bytes(peak),
            human_bytes(self.memory as u64)
        );
        if let Some((_, joins, _, _)) = self.entries.iter().find(|e| e.0 == 4096)
            && let (Some(i), Some(b)) =
                (by(joins, "INLJ-P"), best(joins, &["SJ-P", "HJ-P", "HH-P"]))
        {
            let _ = writeln!(
                o,
                "- At 4 KiB entries INLJ-P took {:.3} s, the best of sort-merge and hash ({}) {:.3} s: \
                 {:.2}× (the study: INLJ ahead by about 70 %).",
                i.secs,
                b.method,
                b.secs,
                b.secs / i.secs
            );
        }
        if let Some((_, joins, _, peers)) = self.entries.iter().find(|e| e.0 == 4096) {
            let apart: Vec<&str> = joins
                .iter()
                .map(|j| j.method.as_str())
                .filter(|m| m.ends_with(COLUMNS_SUFFIX))
                .collect();
            if let (Some(a), Some(w)) = (best(joins, &apart), best(joins, &P_GROUP)) {
                let sqlite = peers
                    .iter()
                    .find(|p| p.name == "SQLite-P")
                    .map(|p| {
                        format!(
                            "; SQLite-P {:.3} s, {:.2}× the time of the columns-apart best",
                            p.secs,
                            p.secs / a.secs
                        )
                    })
                    .unwrap_or_default();
                let _ = writeln!(
                    o,
                    "- At 4 KiB entries with the tables' columns apart below level 0, the best \
                     method ({}) took {:.3} s; on whole rows the best ({}) {:.3} s{sqlite}.",
                    a.method, a.secs, w.method, w.secs
                );
            }
        }
        for ds in ["user", "wiki"] {
            let total = |f: usize, l: &str| {
                self.freq
                    .iter()
                    .find(|r| r.dataset == ds && r.frequency == f && r.label == l)
                    .filter(|r| r.refused.is_none())
                    .map(|r| r.load_secs + r.join_secs)
            };
            let fmax = self
                .freq
                .iter()
                .filter(|r| r.dataset == ds)
                .map(|r| r.frequency)
                .max();
            if let Some(fm) = fmax
                && let (Some(sj1), Some(hj1), Some(sjm), Some(hjm)) = (
                    total(1, "SJ-PS Comp/S"),
                    total(1, "HJ-P"),
                    total(fm, "SJ-PS Comp/S"),
                    total(fm, "HJ-P"),
                )
            {
                let _ = writeln!(
                    o,
                    "- {ds}: SJ-PS against HJ-P, load and joins: {:.2}× HJ-P's time at frequency 1, \
                     {:.2}× at {fm} (the study: about 5× at 1, about half at 32).",
                    sj1 / hj1,
                    sjm / hjm
                );
            }
            if let Some(fm) = fmax {
                let mut v: Vec<(String, f64)> = self
                    .freq
                    .iter()
                    .filter(|r| {
                        r.dataset == ds
                            && r.frequency == fm
                            && r.label.starts_with("INLJ-NS")
                            && r.refused.is_none()
                    })
                    .map(|r| (r.label.clone(), r.load_secs + r.join_secs))
                    .collect();
                v.sort_by(|a, b| a.1.total_cmp(&b.1));
                if !v.is_empty() {
                    let list: Vec<String> =
                        v.iter().map(|(l, t)| format!("{l} {t:.2} s")).collect();
                    let _ = writeln!(
                        o,
                        "- {ds} at frequency {fm}, index nested loops by total time: {} (the study: \
                         Eager/S ahead for frequent joins).",
                        list.join(", ")
                    );
                }
            }
        }
        let ratios: Vec<String> = self
            .skews
            .iter()
            .filter_map(|(t, j)| {
                let s = by(j, "INLJ-NS Eager/S")?;
                let v = by(j, "INLJ-NS Eager/V")?;
                Some(format!("θ {t}: {:.2}×", v.secs / s.secs))
            })
            .collect();
        if !ratios.is_empty() {
            let _ = writeln!(
                o,
                "- Validation against synchronous (Eager, INLJ-NS), time ratio by skew: {} (the \
                 study: validation degrades with skew).",
                ratios.join(", ")
            );
        }
        let checks = self.planner_checks();
        if !checks.is_empty() {
            let ok = checks.iter().filter(|c| c.secs <= c.best * 1.1).count();
            let _ = writeln!(
                o,
                "- Planner: its choice ran within 10 % of the best measured method in {ok} of {} \
                 configurations ({:.0} %; the bar is 90 %), `auto` timed in turns with the \
                 methods.",
                checks.len(),
                100.0 * ok as f64 / checks.len() as f64
            );
            for c in &checks {
                let own = c.own.map_or(String::new(), |t| {
                    format!(" (that method's own row {t:.3} s)")
                });
                let _ = writeln!(
                    o,
                    "  - {}: chose {} {:.3} s{own}; best {} {:.3} s ({:.2}×)",
                    c.what,
                    c.chose,
                    c.secs,
                    c.best_method,
                    c.best,
                    c.secs / c.best
                );
            }
        }
        for d in &self.datasets {
            let best_p = best(&d.joins, &P_GROUP);
            let n_names: Vec<&str> = d
                .joins
                .iter()
                .map(|j| j.method.as_str())
                .filter(|m| !P_GROUP.contains(m) && !m.starts_with("auto"))
                .collect();
            let best_n = best(&d.joins, &n_names);
            let peer = |name: &str| d.peers.iter().find(|p| p.name.contains(name));
            let mut parts = Vec::new();
            if let (Some(b), Some(p)) = (best_p, peer("SQLite-P")) {
                parts.push(format!("P: {:.2}× SQLite's", p.secs / b.secs));
            }
            if let (Some(b), Some(p)) = (best_n, peer("SQLite-N (index)")) {
                parts.push(format!("N: {:.2}× SQLite's indexed", p.secs / b.secs));
            }
            if let (Some(b), Some(p)) = (
                best_p,
                d.peers
                    .iter()
                    .find(|p| p.name.starts_with("DuckDB") && p.name.ends_with('P')),
            ) {
                parts.push(format!("P: {:.2}× DuckDB's time", b.secs / p.secs));
            }
            if let (Some(b), Some(p)) = (
                best_n,
                d.peers
                    .iter()
                    .find(|p| p.name.starts_with("DuckDB") && p.name.ends_with('N')),
            ) {
                parts.push(format!("N: {:.2}× DuckDB's time", b.secs / p.secs));
            }
            if !parts.is_empty() {
                let _ = writeln!(
                    o,
                    "- {}: Strata's best method is faster than the peer by (peer time / ours) or \
                     takes (ours / peer): {}.",
                    d.name,
                    parts.join("; ")
                );
            }
        }
        let _ = writeln!(o);
    }

    fn render_datasets(&self, o: &mut String) {
        if self.datasets.is_empty() {
            return;
        }
        let _ = writeln!(o, "**Datasets** (64-byte entries; seconds per join)\n");
        let mut methods: Vec<String> = Vec::new();
        for d in &self.datasets {
            for j in &d.joins {
                if !methods.contains(&j.method) {
                    methods.push(j.method.clone());
                }
            }
            for p in &d.peers {
                if !methods.contains(&p.name) {
                    methods.push(p.name.clone());
                }
            }
        }
        let _ = write!(o, "| method |");
        for d in &self.datasets {
            let _ = write!(o, " {} |", d.name);
        }
        let _ = writeln!(o);
        let _ = writeln!(o, "|---|{}", "---|".repeat(self.datasets.len()));
        for m in &methods {
            let _ = write!(o, "| {m} |");
            for d in &self.datasets {
                let cell = match (by(&d.joins, m), d.peers.iter().find(|p| &p.name == m)) {
                    (Some(j), _) if m.starts_with("auto") => format!("{:.3} ({})", j.secs, j.ran),
                    (Some(j), _) => format!("{:.3}", j.secs),
                    (None, Some(p)) => format!("{:.3}", p.secs),
                    _ => "—".into(),
                };
                let _ = write!(o, " {cell} |");
            }
            let _ = writeln!(o);
        }
        let _ = write!(o, "| rows (P / N) |");
        for d in &self.datasets {
            let p = by(&d.joins, "INLJ-P").map_or(0, |j| j.rows);
            let n = by(&d.joins, "HJ-N").map_or(0, |j| j.rows);
            let _ = write!(o, " {p} / {n} |");
        }
        let _ = writeln!(o);
        let _ = write!(o, "| Strata load (s) |");
        for d in &self.datasets {
            let _ = write!(o, " {:.2} |", d.load_secs);
        }
        let _ = writeln!(o);
        let _ = write!(o, "| peer loads (s) |");
        for d in &self.datasets {
            let loads: Vec<String> = d
                .peers
                .iter()
                .filter(|p| p.name.ends_with('P'))
                .map(|p| {
                    format!(
                        "{} {:.2}",
                        p.name.split(' ').next().unwrap_or(""),
                        p.load_secs
                    )
                })
                .collect();
            let _ = write!(o, " {} |", loads.join(", "));
        }
        let _ = writeln!(o);
        let _ = write!(o, "| HJ-N spilled |");
        for d in &self.datasets {
            let v = by(&d.joins, "HJ-N").map_or("—".into(), |j| human_bytes(j.spilled));
            let _ = write!(o, " {v} |");
        }
        let _ = writeln!(o, "\n");
        let _ = writeln!(o, "Index builds over the loaded tables (seconds):\n");
        let _ = write!(o, "| index |");
        for d in &self.datasets {
            let _ = write!(o, " {} |", d.name);
        }
        let _ = writeln!(o);
        let _ = writeln!(o, "|---|{}", "---|".repeat(self.datasets.len()));
        if let Some(first) = self.datasets.first() {
            for (name, _) in &first.builds {
                let _ = write!(o, "| {name} |");
                for d in &self.datasets {
                    let v = d
                        .builds
                        .iter()
                        .find(|b| &b.0 == name)
                        .map_or("—".into(), |b| format!("{:.2}", b.1));
                    let _ = write!(o, " {v} |");
                }
                let _ = writeln!(o);
            }
        }
        let _ = write!(o, "| SQLite CREATE INDEX on s.b |");
        for d in &self.datasets {
            let v = d
                .peers
                .iter()
                .find_map(|p| p.index_secs)
                .map_or("—".into(), |x| format!("{x:.2}"));
            let _ = write!(o, " {v} |");
        }
        let _ = writeln!(o, "\n");
        let chosen: Vec<String> = self
            .datasets
            .iter()
            .map(|d| format!("{}: {} / {}", d.name, d.chosen.0.name(), d.chosen.1.name()))
            .collect();
        let _ = writeln!(o, "Planner's choices (P / N): {}.\n", chosen.join("; "));
    }

    fn render_entries(&self, o: &mut String) {
        if self.entries.is_empty() {
            return;
        }
        let _ = writeln!(o, "**Entry size** (Unif, primary-key join; seconds)\n");
        let mut names: Vec<String> = Vec::new();
        for (_, j, _, p) in &self.entries {
            for x in j {
                if !names.contains(&x.method) {
                    names.push(x.method.clone());
                }
            }
            for x in p.iter().filter(|x| x.name.ends_with('P')) {
                if !names.contains(&x.name) {
                    names.push(x.name.clone());
                }
            }
        }
        let _ = write!(o, "| entry |");
        for n in &names {
            let _ = write!(o, " {n} |");
        }
        let _ = writeln!(o, " planner |");
        let _ = writeln!(o, "|---|{}---|", "---|".repeat(names.len()));
        for (e, j, c, p) in &self.entries {
            let _ = write!(o, "| {e} B |");
            for n in &names {
                let v = by(j, n)
                    .map(|x| x.secs)
                    .or_else(|| p.iter().find(|x| &x.name == n).map(|x| x.secs));
                let _ = write!(o, " {} |", v.map_or("—".into(), |v| format!("{v:.3}")));
            }
            let _ = writeln!(o, " {} |", c.name());
        }
        let _ = writeln!(o);
    }

    fn render_frequency(&self, o: &mut String) {
        if self.freq.is_empty() {
            return;
        }
        let _ = writeln!(
            o,
            "**Join frequency** (the load split into F parts, a join after each; load with index \
             maintenance + joins, seconds)\n"
        );
        let mut freqs: Vec<usize> = self.freq.iter().map(|f| f.frequency).collect();
        freqs.sort_unstable();
        freqs.dedup();
        let mut sets: Vec<(String, String)> = Vec::new();
        for f in &self.freq {
            let k = (f.dataset.clone(), f.label.clone());
            if !sets.contains(&k) {
                sets.push(k);
            }
        }
        let _ = write!(o, "| dataset | method |");
        for f in &freqs {
            let _ = write!(o, " F={f} |");
        }
        let _ = writeln!(o);
        let _ = writeln!(o, "|---|---|{}", "---|".repeat(freqs.len()));
        for (ds, label) in &sets {
            let _ = write!(o, "| {ds} | {label} |");
            for f in &freqs {
                let v = self
                    .freq
                    .iter()
                    .find(|r| &r.dataset == ds && &r.label == label && r.frequency == *f)
                    .map_or("—".into(), |r| match r.refused {
                        Some(_) => "refused (memory)".into(),
                        None => format!(
                            "{:.2} ({:.2} + {:.2})",
                            r.load_secs + r.join_secs,
                            r.load_secs,
                            r.join_secs
                        ),
                    });
                let _ = write!(o, " {v} |");
            }
            let _ = writeln!(o);
        }
        let _ = writeln!(o);
        // Each reason once, with the series it stopped.
        let mut reasons: Vec<(&str, Vec<String>)> = Vec::new();
        for r in &self.freq {
            if let Some(why) = &r.refused {
                let series = format!("{} {} at F={}", r.dataset, r.label, r.frequency);
                match reasons.iter_mut().find(|(w, _)| w == why) {
                    Some((_, v)) => v.push(series),
                    None => reasons.push((why, vec![series])),
                }
            }
        }
        for (why, series) in &reasons {
            let _ = writeln!(o, "- Refused: {}: {why}.", series.join(", "));
        }
        if !reasons.is_empty() {
            let _ = writeln!(o);
        }
    }

    fn render_skew(&self, o: &mut String) {
        if self.skews.is_empty() {
            return;
        }
        let _ = writeln!(o, "**Skew** (Zipf, secondary join; seconds)\n");
        let names: Vec<String> = self.skews[0].1.iter().map(|j| j.method.clone()).collect();
        let _ = write!(o, "| θ |");
        for n in &names {
            let _ = write!(o, " {n} |");
        }
        let _ = writeln!(o, " rows |");
        let _ = writeln!(o, "|---|{}---|", "---|".repeat(names.len()));
        for (t, j) in &self.skews {
            let _ = write!(o, "| {t} |");
            for n in &names {
                let _ = write!(
                    o,
                    " {} |",
                    by(j, n).map_or("—".into(), |x| format!("{:.3}", x.secs))
                );
            }
            let _ = writeln!(o, " {} |", j.first().map_or(0, |x| x.rows));
        }
        let _ = writeln!(o);
    }

    fn plot(&self, dir: &Path) -> Result<Vec<String>> {
        std::fs::create_dir_all(dir).map_err(|e| Error(format!("{}: {e}", dir.display())))?;
        let mut out = Vec::new();
        let mut draw = |file: &str,
                        caption: &str,
                        groups: Vec<String>,
                        series: Vec<String>,
                        value: &dyn Fn(&str, &str) -> Option<f64>|
         -> Result<()> {
            if groups.is_empty() || series.is_empty() {
                return Ok(());
            }
            let path = dir.join(file);
            plot_grouped_bars(&path, caption, "seconds", &groups, &series, true, value)?;
            out.push(path.display().to_string());
            Ok(())
        };
        if !self.entries.is_empty() {
            let groups: Vec<String> = self.entries.iter().map(|e| format!("{} B", e.0)).collect();
            let mut series: Vec<String> = P_GROUP.iter().map(|s| s.to_string()).collect();
            for p in self.entries[0].3.iter().filter(|p| p.name.ends_with('P')) {
                series.push(p.name.clone());
            }
            draw(
                "entry.svg",
                "Unif: join time by entry size",
                groups,
                series,
                &|g, s| {
                    let e = self.entries.iter().find(|e| format!("{} B", e.0) == g)?;
                    by(&e.1, s)
                        .map(|j| j.secs)
                        .or_else(|| e.3.iter().find(|p| p.name == s).map(|p| p.secs))
                },
            )?;
        }
        for ds in ["user", "wiki"] {
            let rows: Vec<&FreqResult> = self.freq.iter().filter(|f| f.dataset == ds).collect();
            if rows.is_empty() {
                continue;
            }
            let mut groups: Vec<String> =
                rows.iter().map(|f| format!("F={}", f.frequency)).collect();
            groups.dedup();
            let mut series: Vec<String> = Vec::new();
            for r in &rows {
                if !series.contains(&r.label) {
                    series.push(r.label.clone());
                }
            }
            draw(
                &format!("frequency-{ds}.svg"),
                &format!("{ds}: load and joins by join frequency"),
                groups,
                series,
                &|g, s| {
                    rows.iter()
                        .find(|r| format!("F={}", r.frequency) == g && r.label == s)
                        .filter(|r| r.refused.is_none())
                        .map(|r| r.load_secs + r.join_secs)
                },
            )?;
        }
        if !self.skews.is_empty() {
            let groups: Vec<String> = self.skews.iter().map(|s| format!("θ {}", s.0)).collect();
            let series: Vec<String> = self.skews[0].1.iter().map(|j| j.method.clone()).collect();
            draw(
                "skew.svg",
                "Zipf: secondary join by skew",
                groups,
                series,
                &|g, s| {
                    let x = self.skews.iter().find(|x| format!("θ {}", x.0) == g)?;
                    by(&x.1, s).map(|j| j.secs)
                },
            )?;
        }
        if !self.datasets.is_empty() {
            let groups: Vec<String> = self.datasets.iter().map(|d| d.name.clone()).collect();
            let mut series: Vec<String> = vec![
                "INLJ-P".into(),
                "HJ-P".into(),
                "INLJ-NS Eager/S".into(),
                "INLJ-NS Comp/V".into(),
                "SJ-N".into(),
                "HJ-N".into(),
            ];
            for p in &self.datasets[0].peers {
                series.push(p.name.clone());
            }
            draw(
                "datasets.svg",
                "Join time by dataset",
                groups,
                series,
                &|g, s| {
                    let d = self.datasets.iter().find(|d| d.name == g)?;
                    by(&d.joins, s)
                        .map(|j| j.secs)
                        .or_else(|| d.peers.iter().find(|p| p.name == s).map(|p| p.secs))
                },
            )?;
        }
        Ok(out)
    }
}
