//! The command line: `strata-bench [FLAGS]` runs `--workloads`;
//! `strata-bench suite --suite NAME [FLAGS]` runs a named suite;
//! `strata-bench plot --json FILE --plot DIR` redraws charts.

mod args;

pub use self::args::{BenchArgs, Cli, Command, PlotArgs, SuiteArgs};

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches};

use crate::engine::{EngineKind, parse_engines};
use crate::record::{latest_medians, read_all};
use crate::runner::{RunPlan, run};
use crate::settings::BenchSettings;
use crate::workload::parse_workloads;
use crate::{
    Error, Result, advisorsuite, htap, joins, memsuite, opd, plot, prodsuite, report, shortsuite,
    sysinfo,
};

/// Tells whether a flag (by clap id, e.g. `write_buffer_size`) was given.
pub type Given<'a> = &'a dyn Fn(&str) -> bool;

/// A named suite's settings; flags given on the command line win.
pub struct Suite {
    pub name: &'static str,
    pub apply: fn(&mut BenchArgs, Given<'_>),
}

/// The suites.
pub const SUITES: &[Suite] = &[
    Suite {
        name: "quick",
        apply: |a, given| {
            if !given("num") {
                a.num = 50_000;
            }
            if !given("workloads") {
                a.workloads = "fillrandom,readrandom,seekrandom,readseq,ycsb-a".into();
            }
            // Small memtables so the run goes through flushes, table files
            // and a compaction, not only the memtable.
            if !given("write_buffer_size") {
                a.write_buffer_size = 1 << 20;
            }
        },
    },
    Suite {
        name: "memtable",
        apply: memsuite::apply_defaults,
    },
    Suite {
        name: "shortrange",
        apply: shortsuite::apply_defaults,
    },
    Suite {
        name: "htap",
        apply: htap::apply_defaults,
    },
    Suite {
        name: "sql",
        apply: htap::apply_defaults,
    },
    Suite {
        name: "advisor",
        apply: advisorsuite::apply_defaults,
    },
    Suite {
        name: "opd",
        apply: opd::apply_defaults,
    },
    Suite {
        name: "production",
        apply: prodsuite::apply_defaults,
    },
    Suite {
        name: "joins",
        apply: joins::apply_defaults,
    },
    Suite {
        name: "kv",
        apply: apply_kv_defaults,
    },
];

/// The `kv` suite's defaults (issue 3's settings), which the `production`
/// suite starts from.
pub fn apply_kv_defaults(a: &mut BenchArgs, given: Given<'_>) {
    if !given("num") {
        a.num = 5_000_000;
    }
    if !given("workloads") {
        a.workloads = "fillrandom,readrandom,seekrandom,ycsb-a,ycsb-b".into();
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
    if !given("key_size") {
        a.key_size = 16;
    }
    if !given("value_size") {
        a.value_size = 100;
    }
    if !given("write_buffer_size") {
        a.write_buffer_size = 64 << 20;
    }
    if !given("size_ratio") {
        a.size_ratio = 10;
    }
    if !given("bloom_bits") {
        a.bloom_bits = 10;
    }
    if !given("block_size") {
        a.block_size = 4096;
    }
    if !given("cache_size") {
        a.cache_size = 64 << 20;
    }
    if !given("scan_length") {
        a.scan_length = 10;
    }
    if !given("distribution") {
        a.distribution = "zipfian".into();
    }
}

/// Finds a suite by name.
pub fn find_suite(name: &str) -> Result<&'static Suite> {
    SUITES.iter().find(|s| s.name == name).ok_or_else(|| {
        Error(format!(
            "unknown suite {name:?} (known: {})",
            SUITES.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
        ))
    })
}

/// The settings a run takes from the flags, unvalidated (a suite may
/// change some before it validates them).
pub fn settings_from_args(a: &BenchArgs) -> Result<BenchSettings> {
    Ok(BenchSettings {
        num: a.num,
        reads: a.reads.unwrap_or(a.num),
        writes: a.writes.unwrap_or(a.num),
        key_size: a.key_size,
        value_size: a.value_size,
        value_random_fraction: a.value_random_fraction,
        write_buffer_size: a.write_buffer_size,
        size_ratio: a.size_ratio,
        bloom_bits: a.bloom_bits,
        block_size: usize::try_from(a.block_size)
            .map_err(|_| Error::msg("--block-size is too large"))?,
        cache_size: a.cache_size,
        compression: a.compression.parse()?,
        disable_wal: a.disable_wal,
        sync: a.sync,
        threads: a.threads,
        seed: a.seed,
        memtable: None,
        scan_length: a.scan_length,
        miss_ratio: a.miss_ratio,
        distribution: a.distribution.parse()?,
        prefix_len: a.prefix_len,
        hash_buckets: a.hash_buckets,
        linklist_threshold: a.linklist_threshold,
        memtable_filter: a.memtable_filter,
        mmap_reads: a.mmap_reads,
        zstd_dict_bytes: a.zstd_dict_bytes,
        rocksdb_zstd_dict: a.rocksdb_zstd_dict,
        retain_memtables: a.retain_memtables,
        iterator_reduction: a.iterator_reduction,
        level_filter_bytes: a.level_filter_bytes,
        reduction_gates: a.reduction_gates,
    })
}

/// The memtable kinds `--memtable` names: `all`, or a comma-separated list
/// (each kind once when `dedup`). An error names an unknown kind or an
/// empty list.
pub fn memtable_names(list: &str, dedup: bool) -> Result<Vec<String>> {
    if list == "all" {
        return Ok(strata::MemTableKind::ALL
            .iter()
            .map(|k| k.name().to_string())
            .collect());
    }
    let mut v: Vec<String> = Vec::new();
    for m in list.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        let name = m.parse::<strata::MemTableKind>()?.name().to_string();
        if !(dedup && v.contains(&name)) {
            v.push(name);
        }
    }
    if v.is_empty() {
        return Err(Error::msg("--memtable names no memtable kind"));
    }
    Ok(v)
}

/// Turns flags into a run plan, validating every name and value.
pub fn plan_from_args(a: &BenchArgs, suite: Option<&str>) -> Result<RunPlan> {
    let workloads = parse_workloads(&a.workloads)?;
    let engines = parse_engines(&a.engines)?;
    let settings = settings_from_args(a)?;
    let memtables = match a.memtable.as_deref() {
        None => Vec::new(),
        Some(list) => memtable_names(list, false)?,
    };
    if !memtables.is_empty() && !engines.contains(&EngineKind::Strata) {
        return Err(Error::msg(
            "--memtable applies to Strata only; add strata to --engines",
        ));
    }
    settings.validate()?;
    if a.repeat == 0 {
        return Err(Error::msg("--repeat must be at least 1"));
    }
    let json = match (&a.json, suite) {
        (Some(j), _) => Some(j.clone()),
        (None, Some(s)) => Some(a.db.join(format!("{s}.json"))),
        (None, None) => None,
    };
    Ok(RunPlan {
        engines,
        memtables,
        workloads,
        settings,
        db_root: a.db.clone(),
        use_existing: a.use_existing,
        repeat: a.repeat,
        json,
        progress: !a.no_progress && std::io::stdout().is_terminal(),
        suite: suite.map(str::to_string),
        settle_reads: a.settle_reads,
    })
}

fn given_in(m: &ArgMatches) -> impl Fn(&str) -> bool + '_ {
    move |id: &str| {
        matches!(
            m.value_source(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        )
    }
}

/// Parses the command line and runs it; returns the process exit code.
pub fn main_with_args(args: Vec<String>) -> i32 {
    let matches = match Cli::command().try_get_matches_from(&args) {
        Ok(m) => m,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return 2;
        }
    };
    let result = match cli.command {
        None => run_plain(&cli.args),
        Some(Command::Suite(mut s)) => {
            let sub = matches.subcommand_matches("suite");
            match find_suite(&s.suite) {
                Ok(suite) => {
                    let given = |id: &str| sub.is_some_and(|m| given_in(m)(id));
                    (suite.apply)(&mut s.args, &given);
                    if suite.name == "memtable" {
                        run_memtable_suite(&s)
                    } else if suite.name == "htap" {
                        htap::run(&s)
                    } else if suite.name == "sql" {
                        // The HTAP mix through Strata's direct API and
                        // through SQL on the same layout, SQLite and DuckDB.
                        let given = |id: &str| sub.is_some_and(|m| given_in(m)(id));
                        if !given("designs") {
                            s.designs = "row-then-column:6".into();
                        }
                        if !given("htap_peers") {
                            s.htap_peers = "strata-sql,strata-sql-text,sqlite,duckdb".into();
                        }
                        if !given("joins") {
                            s.joins = 6;
                        }
                        htap::run(&s)
                    } else if suite.name == "advisor" {
                        advisorsuite::run(&s)
                    } else if suite.name == "opd" {
                        opd::run(&s)
                    } else if suite.name == "joins" {
                        joins::run(&s)
                    } else if suite.name == "production" {
                        prodsuite::run_suite(&s, |a| plan_from_args(a, Some("production")))
                    } else if suite.name == "shortrange" {
                        let phase_given = sub.is_some_and(|m| given_in(m)("max_phase_secs"));
                        if !phase_given {
                            s.max_phase_secs = shortsuite::DEFAULT_PHASE_SECS;
                        }
                        run_shortrange_suite(&s)
                    } else {
                        run_suite(suite.name, &s.args, s.report.as_deref())
                    }
                }
                Err(e) => Err(e),
            }
        }
        Some(Command::Plot(p)) => plot_from_json(&p.json, &p.plot).map(|_| ()),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("strata-bench: error: {e}");
            1
        }
    }
}

fn print_header(plan: &RunPlan) {
    let s = &plan.settings;
    println!(
        "strata-bench: engines {} | workloads {} | num {} reads {} | key {} B value {} B | threads {} | \
         wbuf {} T {} bloom {} block {} cache {} | compression {} | wal {} sync {} | db {}",
        plan.engines
            .iter()
            .map(|e| e.name())
            .collect::<Vec<_>>()
            .join(","),
        plan.workloads
            .iter()
            .map(|w| w.name())
            .collect::<Vec<_>>()
            .join(","),
        s.num,
        s.reads,
        s.key_size,
        s.value_size,
        s.threads,
        report::human_bytes(s.write_buffer_size),
        s.size_ratio,
        s.bloom_bits,
        s.block_size,
        report::human_bytes(s.cache_size),
        s.compression,
        if s.disable_wal { "off" } else { "on" },
        s.sync,
        plan.db_root.display()
    );
}

fn run_plain(a: &BenchArgs) -> Result<()> {
    let plan = plan_from_args(a, None)?;
    print_header(&plan);
    let medians = run(&plan)?;
    println!("{}", report::terminal_tables(&medians));
    if let Some(dir) = &a.plot {
        let files = match &plan.json {
            Some(j) => plot_from_json(j, dir)?,
            None => plot::plot_all(&medians, dir)?,
        };
        for f in files {
            println!("chart: {}", f.display());
        }
    }
    Ok(())
}

fn run_suite(name: &str, a: &BenchArgs, report_path: Option<&Path>) -> Result<()> {
    let plan = plan_from_args(a, Some(name))?;
    print_header(&plan);
    let started = sysinfo::unix_seconds();
    let medians = run(&plan)?;
    println!("{}", report::terminal_tables(&medians));
    if let Some(j) = &plan.json {
        println!("results: {}", j.display());
    }
    let context = |charts: Vec<String>| {
        report::markdown_report(
            &medians,
            &report::ReportContext {
                suite: name,
                command: &sysinfo::command_line(),
                machine: &sysinfo::machine(),
                charts,
                timestamp: &sysinfo::iso8601(started),
            },
        )
    };
    charts_and_report(
        name,
        a.plot.as_deref(),
        report_path,
        |dir| plot::plot_all(&medians, dir),
        context,
    )
}

fn run_memtable_suite(s: &SuiteArgs) -> Result<()> {
    let a = &s.args;
    let suite = memsuite::plan(
        a,
        s.max_phase_secs,
        s.max_stream_secs,
        &s.parts,
        s.mix_rounds,
    )?;
    println!(
        "strata-bench memtable suite: strata kinds {} | rocksdb {} | {} inserts of {}+{} B | buffer {} | \
         {} + {} point queries, {} range queries | experiment {} | mixes {} (buffer {}) | budget {} s/phase, {} s/stream | db {}",
        if suite.kinds.is_empty() {
            "-".into()
        } else {
            suite.kinds.join(",")
        },
        if suite.rocksdb_kinds.is_empty() {
            "-".into()
        } else {
            suite.rocksdb_kinds.join(",")
        },
        suite.inserts,
        suite.settings.key_size,
        suite.settings.value_size,
        report::human_bytes(suite.buffer),
        suite.point_queries,
        suite.point_queries,
        suite.range_queries,
        if suite.experiment { "on" } else { "off" },
        if suite.mixes { "on" } else { "off" },
        report::human_bytes(suite.mix_buffer),
        suite.budget.as_secs_f64(),
        suite.stream_budget.as_secs_f64(),
        a.db.display()
    );
    let started = sysinfo::unix_seconds();
    let load_start = memsuite::load_average();
    let records = memsuite::run(&suite)?;
    let load_end = memsuite::load_average();
    println!("\n{}", memsuite::verification(&records));
    println!("{}", memsuite::ratios(&records));
    if let Some(t) = memsuite::versus_rocksdb(&records) {
        println!("{t}");
    }
    println!("{}", memsuite::phase_tables(&records));
    if let Some(j) = &suite.json {
        println!("results: {}", j.display());
    }
    write_suite_report(
        "memtable",
        s,
        &suite,
        &records,
        (started, &load_start, &load_end),
        |dir| memsuite::charts(&records, dir),
        memsuite::markdown,
    )
}

fn run_shortrange_suite(s: &SuiteArgs) -> Result<()> {
    let a = &s.args;
    let progress = !a.no_progress && std::io::stdout().is_terminal();
    let suite = shortsuite::plan(a, &s.variants, &s.scan_lengths, s.max_phase_secs, progress)?;
    print_header(&crate::runner::RunPlan {
        engines: suite.engines.clone(),
        memtables: Vec::new(),
        workloads: vec![crate::workload::Workload::FillRandom],
        settings: suite.settings.clone(),
        db_root: suite.db_root.clone(),
        use_existing: false,
        repeat: suite.repeat,
        json: suite.json.clone(),
        progress,
        suite: Some("shortrange".into()),
        settle_reads: false,
    });
    println!(
        "shortrange suite: strata variants {} | workloads {} | at most {} s or {} ops each | {} round(s)",
        suite.variants.join(","),
        suite
            .workloads
            .iter()
            .map(|w| w.name())
            .collect::<Vec<_>>()
            .join(","),
        suite.budget.as_secs_f64(),
        suite.ops,
        suite.repeat
    );
    let started = sysinfo::unix_seconds();
    let load_start = memsuite::load_average();
    let records = shortsuite::run(&suite)?;
    let load_end = memsuite::load_average();
    println!("\n{}", shortsuite::tables(&records));
    println!("{}", shortsuite::ratios(&records));
    println!("{}", shortsuite::iterator_table(&records));
    println!("{}", shortsuite::verdicts(&records));
    if let Some(j) = &suite.json {
        println!("results: {}", j.display());
    }
    write_suite_report(
        "shortrange",
        s,
        &suite,
        &records,
        (started, &load_start, &load_end),
        |dir| shortsuite::charts(&records, dir),
        shortsuite::markdown,
    )
}

/// Draws a suite's charts and writes its markdown section (see
/// [`charts_and_report`]); `run` is the start time and the load averages at
/// the start and the end.
fn write_suite_report<S>(
    name: &str,
    s: &SuiteArgs,
    suite: &S,
    records: &[crate::record::Record],
    run: (u64, &str, &str),
    draw: impl FnOnce(&Path) -> Result<Vec<PathBuf>>,
    markdown: fn(&[crate::record::Record], &report::ReportInfo<'_, S>) -> String,
) -> Result<()> {
    let (started, load_start, load_end) = run;
    charts_and_report(
        name,
        s.args.plot.as_deref(),
        s.report.as_deref(),
        draw,
        |charts| {
            markdown(
                records,
                &report::ReportInfo {
                    command: &sysinfo::command_line(),
                    machine: &sysinfo::machine(),
                    timestamp: &sysinfo::iso8601(started),
                    load_start,
                    load_end,
                    charts,
                    suite,
                },
            )
        },
    )
}

/// Draws a suite's charts into `plot`, or else into `NAME-charts` next to
/// the report, and writes the report: `markdown` gets the charts' paths
/// relative to the report's directory. Without either, does nothing.
fn charts_and_report(
    name: &str,
    plot: Option<&Path>,
    report_path: Option<&Path>,
    draw: impl FnOnce(&Path) -> Result<Vec<PathBuf>>,
    markdown: impl FnOnce(Vec<String>) -> String,
) -> Result<()> {
    let base = report_path.map(|r| {
        r.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf()
    });
    let chart_dir = match (plot, &base) {
        (Some(d), _) => Some(d.to_path_buf()),
        (None, Some(b)) => Some(b.join(format!("{name}-charts"))),
        (None, None) => None,
    };
    let mut charts = Vec::new();
    if let Some(dir) = &chart_dir {
        charts = draw(dir)?;
        for f in &charts {
            println!("chart: {}", f.display());
        }
    }
    if let (Some(r), Some(base)) = (report_path, &base) {
        let md = markdown(charts.iter().map(|c| relative(c, base)).collect());
        std::fs::create_dir_all(base)?;
        std::fs::write(r, md)?;
        println!("report: {}", r.display());
    }
    Ok(())
}

/// `path` relative to `base` when it lies under it (else as given).
fn relative(path: &Path, base: &Path) -> String {
    let abs = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (p, b) = (abs(path), abs(base));
    p.strip_prefix(&b)
        .map(|r| r.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

/// Draws charts from the newest median records of a JSON file.
pub fn plot_from_json(json: &Path, dir: &Path) -> Result<Vec<PathBuf>> {
    let (records, skipped) = read_all(json)?;
    if skipped > 0 {
        eprintln!(
            "strata-bench: skipped {skipped} line(s) of {} that are not records",
            json.display()
        );
    }
    let latest = latest_medians(&records);
    let files = plot::plot_all(&latest, dir)?;
    Ok(files)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::settings::{CompressionKind, Distribution};
    use crate::workload::Workload;

    fn parse(args: &[&str]) -> Cli {
        let v: Vec<String> = std::iter::once("strata-bench")
            .chain(args.iter().copied())
            .map(String::from)
            .collect();
        Cli::try_parse_from(v).unwrap()
    }

    #[test]
    fn flags_parse_into_a_plan() {
        let cli = parse(&[
            "--workloads",
            "fillseq,ycsb-e",
            "--num",
            "200k",
            "--write-buffer-size",
            "8MiB",
            "--compression",
            "lz4",
            "--distribution",
            "uniform",
            "--threads",
            "3",
        ]);
        let plan = plan_from_args(&cli.args, None).unwrap();
        assert_eq!(
            plan.workloads,
            vec![Workload::FillSeq, Workload::Ycsb(crate::workload::Ycsb::E)]
        );
        assert_eq!(plan.settings.num, 200_000);
        assert_eq!(plan.settings.reads, 200_000);
        assert_eq!(plan.settings.write_buffer_size, 8 << 20);
        assert_eq!(plan.settings.compression, CompressionKind::Lz4);
        assert_eq!(plan.settings.distribution, Distribution::Uniform);
        assert_eq!(plan.settings.threads, 3);
        assert_eq!(plan.engines, vec![EngineKind::Strata]);
    }

    #[test]
    fn bad_flags_are_rejected_with_clear_messages() {
        let cli = parse(&["--workloads", "fillrandom,nosuch"]);
        let e = plan_from_args(&cli.args, None).unwrap_err();
        assert!(e.0.contains("unknown workload \"nosuch\""), "{e}");
        let cli = parse(&["--engines", "strata,leveldb"]);
        let e = plan_from_args(&cli.args, None).unwrap_err();
        assert!(e.0.contains("unknown engine \"leveldb\""), "{e}");
        let cli = parse(&["--compression", "snappy"]);
        assert!(plan_from_args(&cli.args, None).is_err());
        let cli = parse(&["--distribution", "pareto"]);
        assert!(plan_from_args(&cli.args, None).is_err());
        let cli = parse(&["--memtable", "nosuchkind"]);
        assert!(plan_from_args(&cli.args, None).is_err());
        let cli = parse(&["--miss-ratio", "1.5"]);
        assert!(plan_from_args(&cli.args, None).is_err());
        assert!(find_suite("nosuch").is_err());
    }

    #[test]
    fn suites_yield_to_given_flags() {
        let argv: Vec<String> = ["strata-bench", "suite", "--suite", "quick", "--num", "1000"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let m = Cli::command().try_get_matches_from(&argv).unwrap();
        let cli = Cli::from_arg_matches(&m).unwrap();
        let Some(Command::Suite(mut s)) = cli.command else {
            panic!("not a suite")
        };
        let sub = m.subcommand_matches("suite").unwrap();
        let given = |id: &str| given_in(sub)(id);
        (find_suite("quick").unwrap().apply)(&mut s.args, &given);
        assert_eq!(s.args.num, 1000);
        assert_eq!(
            s.args.workloads,
            "fillrandom,readrandom,seekrandom,readseq,ycsb-a"
        );
        let plan = plan_from_args(&s.args, Some("quick")).unwrap();
        assert_eq!(plan.json, Some(PathBuf::from("./data/bench/quick.json")));
    }

    fn suite_args(args: &[&str]) -> SuiteArgs {
        let argv: Vec<String> = ["strata-bench", "suite"]
            .iter()
            .chain(args)
            .map(|s| s.to_string())
            .collect();
        let m = Cli::command().try_get_matches_from(&argv).unwrap();
        let cli = Cli::from_arg_matches(&m).unwrap();
        let Some(Command::Suite(mut s)) = cli.command else {
            panic!("not a suite")
        };
        let sub = m.subcommand_matches("suite").unwrap();
        let given = |id: &str| given_in(sub)(id);
        (find_suite(&s.suite).unwrap().apply)(&mut s.args, &given);
        s
    }

    #[test]
    fn memtable_suite_is_the_studys_experiment() {
        let s = suite_args(&["--suite", "memtable"]);
        let m = memsuite::plan(&s.args, 20.0, 120.0, &s.parts, s.mix_rounds).unwrap();
        assert_eq!(m.inserts, 744_000);
        assert_eq!((m.settings.key_size, m.settings.value_size), (8, 120));
        assert_eq!(m.buffer, 192 << 20);
        assert!(m.settings.disable_wal);
        assert_eq!((m.point_queries, m.range_queries), (50_000, 1_000));
        assert_eq!(m.buckets, 100_000);
        assert_eq!(
            m.settings.hash_buckets, None,
            "mixes size their own buckets"
        );
        assert_eq!(m.kinds.len(), 8);
        assert!(m.rocksdb_kinds.is_empty());
        assert_eq!(
            (m.mix_buffer, m.mix_inserts, m.mix_rounds),
            (8 << 20, 372_000, 3)
        );
        assert!(m.experiment && m.mixes);
        // --num scales the queries and the mix buffer; flags given win.
        let s = suite_args(&[
            "--suite",
            "memtable",
            "--num",
            "20000",
            "--memtable",
            "skiplist,hash-linklist",
            "--prefix-len",
            "4",
            "--hash-buckets",
            "5000",
            "--write-buffer-size",
            "128MiB",
            "--parts",
            "mixes",
        ]);
        let m = memsuite::plan(&s.args, 5.0, 10.0, &s.parts, 1).unwrap();
        assert_eq!((m.point_queries, m.range_queries), (1_344, 27));
        assert_eq!(m.buffer, 128 << 20);
        assert_eq!(m.kinds, vec!["skiplist", "hash-linklist"]);
        assert_eq!((m.settings.prefix_len, m.buckets), (Some(4), 5000));
        assert_eq!(m.mix_buffer, 512 << 10);
        assert!(!m.experiment && m.mixes);
        let s = suite_args(&["--suite", "memtable", "--threads", "2"]);
        assert!(memsuite::plan(&s.args, 20.0, 120.0, &s.parts, 3).is_err());
    }

    #[test]
    fn memtable_parameter_flags_reach_the_settings() {
        let cli = parse(&[
            "--memtable",
            "hash-linklist",
            "--prefix-len",
            "4",
            "--hash-buckets",
            "1000",
            "--linklist-threshold",
            "32",
        ]);
        let plan = plan_from_args(&cli.args, None).unwrap();
        let s = &plan.settings;
        assert_eq!(
            (s.prefix_len, s.hash_buckets, s.linklist_threshold),
            (Some(4), Some(1000), Some(32))
        );
        let cli = parse(&["--prefix-len", "0"]);
        assert!(plan_from_args(&cli.args, None).is_err());
    }

    #[test]
    fn kv_suite_is_the_standard_comparison() {
        let argv: Vec<String> = ["strata-bench", "suite", "--suite", "kv"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let m = Cli::command().try_get_matches_from(&argv).unwrap();
        let cli = Cli::from_arg_matches(&m).unwrap();
        let Some(Command::Suite(mut s)) = cli.command else {
            panic!("not a suite")
        };
        let sub = m.subcommand_matches("suite").unwrap();
        let given = |id: &str| given_in(sub)(id);
        (find_suite("kv").unwrap().apply)(&mut s.args, &given);
        let plan = plan_from_args(&s.args, Some("kv")).unwrap();
        assert_eq!(plan.settings.num, 5_000_000);
        assert_eq!(plan.settings.threads, 2);
        assert_eq!(plan.settings.key_size, 16);
        assert_eq!(plan.settings.value_size, 100);
        assert_eq!(plan.engines, EngineKind::compiled_in());
        assert_eq!(plan.repeat, 1);
        assert!(!plan.settings.disable_wal && !plan.settings.sync);
    }
}
