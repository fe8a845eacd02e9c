//! The suite's report: phase tables, ratios between kinds and against
//! RocksDB, the verification line, the markdown report and the charts.

use super::*;

pub(super) fn find<'a>(
    records: &'a [Record],
    engine: &str,
    variant: &str,
    workload: &str,
) -> Option<&'a Record> {
    records
        .iter()
        .rev()
        .find(|r| r.engine == engine && r.variant == variant && r.workload == workload)
}

pub(super) fn truncated(r: &Record) -> bool {
    r.extra.get("truncated").and_then(|v| v.as_bool()) == Some(true)
}

fn planned(r: &Record) -> u64 {
    r.extra
        .get("planned_ops")
        .and_then(|v| v.as_u64())
        .unwrap_or(r.ops)
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

fn ops(r: &Record) -> String {
    let p = planned(r);
    if r.ops < p {
        format!("{} of {} ⏱", r.ops, p)
    } else {
        r.ops.to_string()
    }
}

fn bpe(r: &Record) -> String {
    match r.bytes_per_entry {
        Some(b) => {
            let exact = r
                .extra
                .get("bytes_per_entry_exact")
                .and_then(|v| v.as_bool())
                .unwrap_or(true);
            format!("{b:.1}{}", if exact { "" } else { "~" })
        }
        None => "n/a".into(),
    }
}

fn workloads(records: &[Record]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut want: Vec<String> = PHASES.iter().map(|p| p.to_string()).collect();
    want.extend(PHASES.iter().map(|p| interleaved(p)));
    want.extend(MIXES.iter().map(|m| m.name.to_string()));
    for w in want {
        if records.iter().any(|r| r.workload == w) {
            out.push(w);
        }
    }
    out
}

/// One markdown table per phase.
pub fn phase_tables(records: &[Record]) -> String {
    let mut s = String::new();
    for w in workloads(records) {
        let rows: Vec<&Record> = records.iter().filter(|r| r.workload == w).collect();
        let is_mix = w.starts_with("mix-");
        let _ = writeln!(s, "#### {w}\n");
        let desc = MIXES
            .iter()
            .find(|m| m.name == w)
            .map(|m| m.describe)
            .unwrap_or_else(|| describe_phase(&w));
        let _ = writeln!(s, "{desc}.\n");
        if is_mix {
            let _ = writeln!(
                s,
                "| engine | kind | ops/s | p50 µs | p99 µs | bytes/entry | flushes | switches | representations | ops |"
            );
            let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|---|---:|");
        } else {
            let _ = writeln!(
                s,
                "| engine | kind | ops/s | p50 µs | p99 µs | bytes/entry | flushes | ops |"
            );
            let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|");
        }
        for r in rows {
            let mut cells = vec![
                r.engine.clone(),
                r.variant.clone(),
                report::thousands(r.ops_per_sec),
                lat(r.p50_us),
                lat(r.p99_us),
                bpe(r),
                r.flushes.map_or("n/a".into(), |f| f.to_string()),
            ];
            if is_mix {
                cells.push(
                    r.extra
                        .get("memtable_switches")
                        .and_then(|v| v.as_u64())
                        .map_or("n/a".into(), |v| v.to_string()),
                );
                cells.push(reps_summary(r));
            }
            cells.push(ops(r));
            let _ = writeln!(s, "| {} |", cells.join(" | "));
        }
        let _ = writeln!(s);
    }
    s
}

/// `skiplist → vector ×8` for the representations a run went through.
pub(super) fn reps_summary(r: &Record) -> String {
    let reps: Vec<String> = r
        .extra
        .get("memtable_reps")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut runs: Vec<(String, usize)> = Vec::new();
    for x in reps {
        match runs.last_mut() {
            Some((k, n)) if *k == x => *n += 1,
            _ => runs.push((x, 1)),
        }
    }
    runs.iter()
        .map(|(k, n)| {
            if *n > 1 {
                format!("{k} ×{n}")
            } else {
                k.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" → ")
}

fn ratio_row(
    s: &mut String,
    check: &str,
    num: Option<&Record>,
    den: Option<&Record>,
    target: f64,
    target_text: &str,
) {
    match (num, den) {
        (Some(a), Some(b)) if b.ops_per_sec > 0.0 && a.ops > 0 => {
            let x = a.ops_per_sec / b.ops_per_sec;
            let caveat = if truncated(a) || truncated(b) {
                " (a run stopped at the budget)"
            } else {
                ""
            };
            let _ = writeln!(
                s,
                "| {check} | {} vs {} ops/s | **{x:.2}×**{caveat} | {target_text} | {} |",
                report::thousands(a.ops_per_sec),
                report::thousands(b.ops_per_sec),
                if x >= target { "yes" } else { "**no**" }
            );
        }
        _ => {
            let _ = writeln!(s, "| {check} | n/a | n/a | {target_text} | n/a |");
        }
    }
}

/// The ratios the issue asks about.
pub fn ratios(records: &[Record]) -> String {
    let mut s = String::new();
    let st = |v: &str, w: &str| find(records, "strata", v, w);
    let _ = writeln!(s, "| check | throughput | ratio | target | met |");
    let _ = writeln!(s, "|---|---|---:|---|---|");
    for w in ["mem-insert", "mem-insert-interleaved", "mix-insert-only"] {
        ratio_row(
            &mut s,
            &format!("vector / skiplist, inserts (`{w}`)"),
            st("vector", w),
            st("skiplist", w),
            5.0,
            "≥ 5×",
        );
    }
    for hash in ["hash-skiplist", "hash-linklist"] {
        for w in [
            "mem-get-hit",
            "mem-get-miss",
            "mem-get-hit-interleaved",
            "mem-get-miss-interleaved",
        ] {
            ratio_row(
                &mut s,
                &format!("{hash} / skiplist, point reads (`{w}`)"),
                st(hash, w),
                st("skiplist", w),
                2.0,
                "≥ 2×",
            );
        }
    }
    for w in ["mem-range", "mem-range-interleaved"] {
        let rows: Vec<&Record> = records
            .iter()
            .filter(|r| r.engine == "strata" && r.workload == w && r.ops > 0)
            .collect();
        if let Some(best) = rows
            .iter()
            .max_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec))
        {
            let skip = rows.iter().find(|r| r.variant == "skiplist");
            let _ = writeln!(
                s,
                "| fastest Strata kind for range queries (`{w}`) | {} ops/s{} | {} | skiplist | {} |",
                report::thousands(best.ops_per_sec),
                skip.map_or(String::new(), |k| format!(
                    " (skiplist {})",
                    report::thousands(k.ops_per_sec)
                )),
                best.variant,
                if best.variant == "skiplist" {
                    "yes"
                } else {
                    "**no**"
                }
            );
        }
    }
    for m in &MIXES {
        let Some(ad) = st("adaptive", m.name) else {
            continue;
        };
        let best = records
            .iter()
            .filter(|r| {
                r.engine == "strata" && r.workload == m.name && r.variant != "adaptive" && r.ops > 0
            })
            .max_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
        let per_round = best
            .map(|b| paired_ratios(&round_figures(ad), &round_figures(b)))
            .filter(|r| r.len() > 1)
            .map_or(String::new(), |r| {
                let lo = r.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = r.iter().copied().fold(0.0, f64::max);
                format!(
                    "; per round {lo:.2}-{hi:.2}×, median {:.2}×",
                    median_f64(&r)
                )
            });
        ratio_row(
            &mut s,
            &format!(
                "adaptive / best fixed kind ({}) on `{}`; adaptive chose {}{per_round}",
                best.map_or("n/a", |b| b.variant.as_str()),
                m.name,
                reps_summary(ad)
            ),
            Some(ad),
            best,
            0.9,
            "≥ 0.90× (within 10 %)",
        );
    }
    s
}

/// The per-round ops/s a median record of the mixes carries.
fn round_figures(r: &Record) -> Vec<f64> {
    r.extra
        .get("rounds_ops_per_sec")
        .and_then(|v| v.as_array())
        .map(|v| v.iter().filter_map(|x| x.as_f64()).collect())
        .unwrap_or_default()
}

/// Per-round throughput ratios `a[i] / b[i]`, rounds paired by number (both
/// kinds ran in every round, in alternating order); empty when the round
/// counts differ. On a noisy host the median of these is steadier than the
/// ratio of two medians.
pub(super) fn paired_ratios(a: &[f64], b: &[f64]) -> Vec<f64> {
    if a.len() != b.len() {
        return Vec::new();
    }
    a.iter()
        .zip(b)
        .filter(|(_, y)| **y > 0.0)
        .map(|(x, y)| x / y)
        .collect()
}

pub(super) fn median_f64(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Each Strata kind against its RocksDB counterpart on the workload the
/// study favours it for.
pub fn versus_rocksdb(records: &[Record]) -> Option<String> {
    if !records.iter().any(|r| r.engine == "rocksdb") {
        return None;
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| kind | favoured workload | Strata ops/s | RocksDB ops/s | Strata / RocksDB | Strata p50 / p99 µs | RocksDB p50 / p99 µs | bytes/entry Strata / RocksDB |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---|---|---|");
    let pairs = [
        ("skiplist", "mem-range"),
        ("skiplist", "mem-range-interleaved"),
        ("vector", "mem-insert"),
        ("hash-skiplist", "mem-get-hit"),
        ("hash-skiplist", "mem-get-miss"),
        ("hash-linklist", "mem-get-hit"),
        ("hash-linklist", "mem-get-miss"),
    ];
    for (kind, w) in pairs {
        let (Some(a), Some(b)) = (
            find(records, "strata", kind, w),
            find(records, "rocksdb", kind, w),
        ) else {
            continue;
        };
        let ratio = if b.ops_per_sec > 0.0 {
            format!("{:.2}×", a.ops_per_sec / b.ops_per_sec)
        } else {
            "n/a".into()
        };
        let _ = writeln!(
            s,
            "| {kind} | `{w}` | {}{} | {}{} | {ratio} | {} / {} | {} / {} | {} / {} |",
            report::thousands(a.ops_per_sec),
            if truncated(a) { " ⏱" } else { "" },
            report::thousands(b.ops_per_sec),
            if truncated(b) { " ⏱" } else { "" },
            lat(a.p50_us),
            lat(a.p99_us),
            lat(b.p50_us),
            lat(b.p99_us),
            bpe(a),
            bpe(b),
        );
    }
    Some(s)
}

/// Which runs kept every insert in one memtable.
pub fn verification(records: &[Record]) -> String {
    let mut held = Vec::new();
    let mut spilled = Vec::new();
    for r in records.iter().filter(|r| r.workload.starts_with("mem-")) {
        let name = format!("{}/{}", r.engine, r.variant);
        let switches = r
            .extra
            .get("memtable_switches")
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        let imm = r
            .extra
            .get("immutable_memtables")
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        let bad = r.flushes.unwrap_or(0) > 0 || switches > 0 || imm > 0;
        if bad {
            let what = format!(
                "{name} `{}` ({} flushes, {switches} switches)",
                r.workload,
                r.flushes.unwrap_or(0)
            );
            if !spilled
                .iter()
                .any(|x: &String| x.starts_with(&format!("{name} ")))
            {
                spilled.push(what);
            }
        } else if !held.contains(&name) {
            held.push(name);
        }
    }
    held.retain(|h| !spilled.iter().any(|x| x.starts_with(&format!("{h} "))));
    let mut s = String::new();
    if spilled.is_empty() {
        let _ = writeln!(
            s,
            "**One memtable:** every run of the experiment kept all its inserts in one memtable \
             (0 flushes, no memtable switch): {}.\n",
            held.join(", ")
        );
    } else {
        let _ = writeln!(
            s,
            "**One memtable: not everywhere.** Held everything: {}. \
             **Switched or flushed**: {}; their later phases also read flushed tables.\n",
            if held.is_empty() {
                "none".into()
            } else {
                held.join(", ")
            },
            spilled.join("; ")
        );
    }
    s
}

/// The markdown section of the suite.
pub fn markdown(records: &[Record], info: &ReportInfo<'_, MemSuite>) -> String {
    let mut s = String::new();
    let su = info.suite;
    let m = info.machine;
    let _ = writeln!(s, "### `memtable` suite, {}\n", info.timestamp);
    let _ = writeln!(
        s,
        "Machine: {} CPUs (`nproc`), {}, {} RAM, Linux {}. Load average (1/5/15 min) at the start: {}; \
         at the end: {} (the machine is shared: absolute numbers move with the load).\n",
        m.cpus,
        m.cpu_model,
        report::human_bytes(m.memory_bytes),
        m.kernel,
        info.load_start,
        info.load_end
    );
    let _ = writeln!(s, "Command:\n\n```sh\n{}\n```\n", info.command);
    let st = &su.settings;
    let _ = writeln!(
        s,
        "The memory-buffer study's in-memory experiment: {} inserts of {} B entries ({} B keys, uniformly random; \
         {} B values), a {} write buffer, {} empty and {} non-empty point queries, {} range queries of \
         selectivity {}% (each covers 0.1% of the key domain, so about {:.0} entries), sequentially and interleaved \
         after a {}% warm-up (one random order, seed {}, for every kind). Hash memtables: fixed {}-byte prefix, \
         {} buckets{}. {}. WAL {}. Single-threaded. Per-operation latency from `Instant` around each call. \
         {} Sequential ops/s are per phase wall time; interleaved ops/s are operations over the time spent in \
         operations of that type. bytes/entry is memtable bytes (Strata: `KeyspaceStats::memtable_bytes`; RocksDB: \
         `rocksdb.cur-size-all-mem-tables`) over memtable entries (`~`: estimated within one probe interval \
         after a memtable switch). ⏱: the phase stopped at its budget ({} s a phase, `--max-phase-secs`; \
         {} s an interleaved stream, `--max-stream-secs`); its figures cover the operations done.\n",
        report::thousands(su.inserts as f64),
        st.entry_bytes(),
        st.key_size,
        st.value_size,
        report::human_bytes(su.buffer),
        report::thousands(su.point_queries as f64),
        report::thousands(su.point_queries as f64),
        report::thousands(su.range_queries as f64),
        STUDY_SELECTIVITY * 100.0,
        su.inserts as f64 * STUDY_SELECTIVITY,
        STUDY_WARMUP * 100.0,
        st.seed,
        st.prefix_len.unwrap_or(crate::settings::DEFAULT_PREFIX_LEN),
        report::thousands(su.buckets as f64),
        st.linklist_threshold
            .map_or(String::new(), |t| format!(", linklist threshold {t}")),
        match st.memtable_filter {
            Some(r) if r > 0.0 => format!(
                "Memtables (both engines) carry a whole-key Bloom filter of {r} of the write buffer"
            ),
            Some(_) =>
                "No memtable whole-key filter in either engine (`--memtable-filter` adds one)"
                    .to_string(),
            None => "Memtables carry each engine's default whole-key filter".to_string(),
        },
        if st.disable_wal { "off" } else { "on" },
        if su.buffer == SUITE_BUFFER {
            "The buffer is 192 MiB, not the study's 128 MB, so that every kind of both engines holds all \
             744K entries in one memtable: the hash kinds charge 165-220 B per 128-byte entry (Strata and \
             RocksDB), and 744K entries of 181 B or more overflow 128 MiB."
        } else {
            ""
        },
        su.budget.as_secs_f64(),
        su.stream_budget.as_secs_f64(),
    );
    if su.mixes {
        let _ = writeln!(
            s,
            "Adaptive mixes: {} inserts per mix on a {} buffer (several memtable switches), every Strata kind, \
             keys uniformly random, reads and scans from the most recent half buffer of keys; ops/s over the \
             mix's wall time, median of {} round(s) (kinds in alternating order; a run stopped at the budget is \
             not repeated).\n",
            report::thousands(su.mix_inserts as f64),
            report::human_bytes(su.mix_buffer),
            su.mix_rounds
        );
    }
    s.push_str(&verification(records));
    let _ = writeln!(s, "#### Targets of the issue\n");
    s.push_str(&ratios(records));
    let _ = writeln!(s);
    if let Some(t) = versus_rocksdb(records) {
        let _ = writeln!(
            s,
            "#### Strata against RocksDB, each kind on its favoured workload\n"
        );
        s.push_str(&t);
        let _ = writeln!(s);
    }
    s.push_str(&phase_tables(records));
    let mut notes: Vec<String> = records
        .iter()
        .flat_map(|r| r.notes.iter().cloned())
        .collect();
    notes.sort();
    notes.dedup();
    let stopped: Vec<String> = records
        .iter()
        .filter(|r| truncated(r))
        .map(|r| {
            format!(
                "{}/{} `{}`: {} of {} operations within the budget",
                r.engine,
                r.variant,
                r.workload,
                r.ops,
                planned(r)
            )
        })
        .collect();
    notes.extend(stopped);
    report::notes_section(&mut s, &notes);
    report::charts_section(&mut s, &info.charts, report::ChartLinks::Embedded);
    s
}

/// Draws the suite's charts into `dir`: ops/s bars per phase and kind
/// (sequential, interleaved, mixes) and bytes per entry per kind.
pub fn charts(records: &[Record], dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let series = |rs: &[&Record]| -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for r in rs {
            let n = format!("{}/{}", r.engine, r.variant);
            if !v.contains(&n) {
                v.push(n);
            }
        }
        v
    };
    let mut out = Vec::new();
    let groups: [(&str, Vec<String>); 3] = [
        ("sequential", PHASES.iter().map(|p| p.to_string()).collect()),
        (
            "interleaved",
            PHASES.iter().map(|p| interleaved(p)).collect(),
        ),
        ("mixes", MIXES.iter().map(|m| m.name.to_string()).collect()),
    ];
    for (name, ws) in groups {
        let rs: Vec<&Record> = records
            .iter()
            .filter(|r| ws.contains(&r.workload))
            .collect();
        if rs.is_empty() {
            continue;
        }
        let ws: Vec<String> = ws
            .into_iter()
            .filter(|w| rs.iter().any(|r| &r.workload == w))
            .collect();
        let ser = series(&rs);
        let path = dir.join(format!("memtable_{name}_ops.svg"));
        plot::plot_grouped_bars(
            &path,
            &format!("memtable suite, {name}: ops/s (log scale)"),
            "ops/s",
            &ws,
            &ser,
            true,
            |w, sname| {
                rs.iter()
                    .find(|r| r.workload == w && format!("{}/{}", r.engine, r.variant) == sname)
                    .map(|r| r.ops_per_sec)
                    .filter(|v| *v > 0.0)
            },
        )?;
        out.push(path);
    }
    let ins: Vec<&Record> = records
        .iter()
        .filter(|r| r.workload == "mem-insert" && r.bytes_per_entry.is_some())
        .collect();
    if !ins.is_empty() {
        let path = dir.join("memtable_bytes_per_entry.svg");
        let ser = series(&ins);
        plot::plot_grouped_bars(
            &path,
            "memtable bytes per 128-byte entry after the inserts",
            "bytes/entry",
            &["mem-insert".to_string()],
            &ser,
            false,
            |_, sname| {
                ins.iter()
                    .find(|r| format!("{}/{}", r.engine, r.variant) == sname)
                    .and_then(|r| r.bytes_per_entry)
            },
        )?;
        out.push(path);
    }
    Ok(out)
}
