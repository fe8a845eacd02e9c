//! `strata-stress`: see the library documentation and docs/RELIABILITY.md.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{Args, Parser, Subcommand};
use strata::MemTableKind;
use strata::sst::Compression;
use strata_stress::check::Failures;
use strata_stress::config::{DbConfig, open_db};
use strata_stress::crash::{
    CrashConfig, power_cut_rounds, shape_line, sigkill_rounds, verify_on_disk,
};
use strata_stress::expected::{ExpectedState, Layout};
use strata_stress::table_db::TableConfig;
use strata_stress::table_model::TableState;
use strata_stress::values::MIN_VALUE_SIZE;
use strata_stress::verify::verify_db;
use strata_stress::workload::{RunStats, Workload, WorkloadConfig, with_progress};
use strata_stress::{fuzz_targets, seeds, table_verify, tables};

#[derive(Parser)]
#[command(
    name = "strata-stress",
    about = "Randomized, self-verifying stress, crash and power-cut testing of Strata"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the workload threads on a database, checking every read against
    /// the expected-state file (which it keeps up to date).
    Run(RunArgs),
    /// Check every key of a database against its expected-state file.
    Verify(VerifyArgs),
    /// Repeatedly run and SIGKILL (or, with --power-cut, power-cut in
    /// process) the workload, verifying the database after each crash.
    Crash(CrashArgs),
    /// Write the fuzz seed corpora (fuzz/seeds/<target>/).
    FuzzSeeds {
        #[arg(long, default_value = "fuzz/seeds")]
        out: PathBuf,
    },
    /// Run files through a fuzz target's check (to replay a crash input).
    FuzzReplay {
        /// One of: sst_table, sst_table_repaired, sst_block, wal_reader,
        /// manifest, shell_parser, dict_file, dict_file_repaired, dictionary.
        target: String,
        /// Files or directories of inputs.
        paths: Vec<PathBuf>,
    },
}

/// Database and workload shape, shared by the subcommands.
#[derive(Args, Clone, Debug)]
struct StressArgs {
    /// Worker threads.
    #[arg(long, default_value_t = 4)]
    threads: usize,
    /// Value keys (default keyspace).
    #[arg(long, default_value_t = 10_000)]
    keys: u32,
    /// Counter keys (`counters` keyspace, merged with U64AddOperator);
    /// default: keys / 8.
    #[arg(long)]
    counter_keys: Option<u32>,
    #[arg(long, default_value_t = 16)]
    value_size_min: u32,
    #[arg(long, default_value_t = 256)]
    value_size_max: u32,
    /// Memtable representation.
    #[arg(long, default_value = "skiplist")]
    memtable: String,
    #[arg(long, default_value_t = 256 << 10)]
    write_buffer_size: usize,
    /// Level-0 files that trigger a compaction.
    #[arg(long, default_value_t = 4)]
    level0_trigger: usize,
    #[arg(long, default_value_t = 256 << 10)]
    target_file_size: u64,
    #[arg(long, default_value_t = 1 << 20)]
    level1_max_bytes: u64,
    /// none, lz4 or zstd.
    #[arg(long, default_value = "none")]
    compression: String,
    #[arg(long, default_value_t = 4096)]
    block_size: usize,
    #[arg(long, default_value_t = 8 << 20)]
    block_cache_bytes: u64,
    /// Fixed key-prefix length for the memtable's prefix extractor (0: none,
    /// or 6 for the hashed memtable kinds, which need one).
    #[arg(long, default_value_t = 0)]
    prefix_len: usize,
    /// With --memtable adaptive: range reads never call for a skiplist, so
    /// the first buffer after every open changes representation in place
    /// (to a hash kind) under the running workload.
    #[arg(long)]
    adaptive_churn: bool,
    /// Memtable retention: flushed memtables serve their level-0 files' reads,
    /// with a budget of two write buffers so that some are released early.
    #[arg(long)]
    retain_memtables: bool,
    /// Random seed (default: from the clock; printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Fraction of writes made with sync=true (default 0.05; 1.0 with
    /// --power-cut).
    #[arg(long)]
    sync_ratio: Option<f64>,
    /// Table mode: run the table workload on this many tables instead of
    /// the key-value workload (0: key-value mode).
    #[arg(long, default_value_t = 0)]
    tables: u32,
    /// Table mode: rows per table.
    #[arg(long, default_value_t = 2000)]
    table_rows: u32,
    /// Table mode: layout presets, comma-separated, given to the tables in
    /// turn (layout changes move a table to the next one).
    #[arg(long, default_value = "column,groups:2,row-then-column:2")]
    table_layouts: String,
    /// Table mode: memtable size of each table.
    #[arg(long, default_value_t = 32 << 10)]
    table_write_buffer_size: usize,
    /// Table mode: byte budget of level 1 of each table (4 levels, size
    /// ratio 4, files of a quarter of it).
    #[arg(long, default_value_t = 64 << 10)]
    table_level1_max_bytes: u64,
    /// Table mode: change tables' layouts (to the next preset) while the
    /// workload runs (off by default: see engine bug 4 in
    /// docs/RELIABILITY.md).
    #[arg(long)]
    table_layout_changes: bool,
}

impl StressArgs {
    fn layout(&self) -> Result<Layout, String> {
        if self.keys == 0 {
            return Err("--keys must be at least 1".into());
        }
        let min = self.value_size_min.max(MIN_VALUE_SIZE as u32);
        if self.value_size_max < min {
            return Err(format!("--value-size-max must be at least {min}"));
        }
        Ok(Layout {
            value_keys: self.keys,
            counter_keys: self.counter_keys.unwrap_or(self.keys / 8).max(1),
            value_min: min,
            value_max: self.value_size_max,
        })
    }

    fn db_config(&self) -> Result<DbConfig, String> {
        let memtable: MemTableKind = self
            .memtable
            .parse()
            .map_err(|e| format!("--memtable: {e}"))?;
        if self.adaptive_churn && memtable != MemTableKind::Adaptive {
            return Err("--adaptive-churn needs --memtable adaptive".into());
        }
        let compression: Compression = self
            .compression
            .parse()
            .map_err(|e| format!("--compression: {e}"))?;
        Ok(DbConfig {
            write_buffer_size: self.write_buffer_size,
            level0_trigger: self.level0_trigger,
            target_file_size: self.target_file_size,
            level1_max_bytes: self.level1_max_bytes,
            memtable,
            compression,
            block_size: self.block_size,
            block_cache_bytes: self.block_cache_bytes,
            prefix_len: self.prefix_len,
            adaptive_churn: self.adaptive_churn,
            retain_memtables: self.retain_memtables,
        })
    }

    /// The table mode's settings, `None` in key-value mode.
    fn table_config(&self) -> Result<Option<TableConfig>, String> {
        if self.tables == 0 {
            return Ok(None);
        }
        let c = TableConfig {
            tables: self.tables,
            rows: self.table_rows,
            layouts: self
                .table_layouts
                .split(',')
                .map(|l| l.trim().to_string())
                .filter(|l| !l.is_empty())
                .collect(),
            write_buffer_size: self.table_write_buffer_size,
            level1_max_bytes: self.table_level1_max_bytes,
            layout_changes: self.table_layout_changes,
        };
        c.validate()?;
        Ok(Some(c))
    }

    fn seed(&self) -> u64 {
        self.seed.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
    }

    /// The flags for a child `run` (everything but seed and paths).
    fn to_args(&self, sync_ratio: f64) -> Vec<String> {
        let mut v = vec![
            format!("--threads={}", self.threads),
            format!("--keys={}", self.keys),
            format!("--value-size-min={}", self.value_size_min),
            format!("--value-size-max={}", self.value_size_max),
            format!("--memtable={}", self.memtable),
            format!("--write-buffer-size={}", self.write_buffer_size),
            format!("--level0-trigger={}", self.level0_trigger),
            format!("--target-file-size={}", self.target_file_size),
            format!("--level1-max-bytes={}", self.level1_max_bytes),
            format!("--compression={}", self.compression),
            format!("--block-size={}", self.block_size),
            format!("--block-cache-bytes={}", self.block_cache_bytes),
            format!("--prefix-len={}", self.prefix_len),
            format!("--sync-ratio={sync_ratio}"),
        ];
        if let Some(c) = self.counter_keys {
            v.push(format!("--counter-keys={c}"));
        }
        if self.adaptive_churn {
            v.push("--adaptive-churn".into());
        }
        if self.retain_memtables {
            v.push("--retain-memtables".into());
        }
        if self.tables > 0 {
            v.extend([
                format!("--tables={}", self.tables),
                format!("--table-rows={}", self.table_rows),
                format!("--table-layouts={}", self.table_layouts),
                format!("--table-write-buffer-size={}", self.table_write_buffer_size),
                format!("--table-level1-max-bytes={}", self.table_level1_max_bytes),
            ]);
            if self.table_layout_changes {
                v.push("--table-layout-changes".into());
            }
        }
        v
    }
}

#[derive(Args)]
struct RunArgs {
    /// Database directory.
    #[arg(long)]
    db: PathBuf,
    /// Expected-state file (default: <db>.expected).
    #[arg(long)]
    expected_state: Option<PathBuf>,
    #[command(flatten)]
    stress: StressArgs,
    /// Total operations (default 100000 unless --duration-secs is given).
    #[arg(long)]
    ops: Option<u64>,
    /// Run for this long.
    #[arg(long)]
    duration_secs: Option<f64>,
    /// Print a PROGRESS line to stderr this often.
    #[arg(long, default_value_t = 5000)]
    progress_ms: u64,
}

#[derive(Args)]
struct VerifyArgs {
    #[arg(long)]
    db: PathBuf,
    #[arg(long)]
    expected_state: Option<PathBuf>,
    /// Also rewrite the expected state to what the database holds (clears
    /// pending keys), as the crash driver does.
    #[arg(long)]
    resolve: bool,
    #[command(flatten)]
    stress: StressArgs,
}

#[derive(Args)]
struct CrashArgs {
    /// Rounds (kills or power cuts).
    #[arg(long, default_value_t = 10)]
    iterations: u64,
    /// Database directory (SIGKILL mode).
    #[arg(long, default_value = "/tmp/strata-stress-db")]
    db: PathBuf,
    #[arg(long)]
    expected_state: Option<PathBuf>,
    /// Remove the database and expected state first.
    #[arg(long)]
    fresh: bool,
    /// Power cuts in process over an in-memory file system instead of
    /// SIGKILLed child processes.
    #[arg(long)]
    power_cut: bool,
    /// Shortest round before the kill or cut.
    #[arg(long, default_value_t = 500)]
    round_min_ms: u64,
    /// Longest round before the kill or cut.
    #[arg(long, default_value_t = 3000)]
    round_max_ms: u64,
    #[command(flatten)]
    stress: StressArgs,
}

fn expected_path(db: &Path, given: &Option<PathBuf>) -> PathBuf {
    given
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.expected", db.display())))
}

fn dir_has_entries(p: &Path) -> bool {
    std::fs::read_dir(p)
        .map(|mut d| d.next().is_some())
        .unwrap_or(false)
}

fn cmd_run(a: RunArgs) -> Result<u8, String> {
    std::panic::set_hook(Box::new(|info| {
        eprintln!("PANIC: {info}");
        std::process::exit(101);
    }));
    let layout = a.stress.layout()?;
    let db_cfg = a.stress.db_config()?;
    let db_retains = db_cfg.retain_memtables;
    let exp = expected_path(&a.db, &a.expected_state);
    if !exp.exists() && dir_has_entries(&a.db) {
        return Err(format!(
            "{} holds a database but there is no expected state at {}",
            a.db.display(),
            exp.display()
        ));
    }
    let seed = a.stress.seed();
    let ops = match (a.ops, a.duration_secs) {
        (None, None) => Some(100_000),
        (o, _) => o,
    };
    let wl = WorkloadConfig {
        threads: a.stress.threads,
        ops,
        duration: a.duration_secs.map(Duration::from_secs_f64),
        seed,
        sync_ratio: a.stress.sync_ratio.unwrap_or(0.05),
    };
    if let Some(tcfg) = a.stress.table_config()? {
        return tables::run(&a.db, &exp, &db_cfg, &tcfg, &wl, a.progress_ms);
    }
    let state = ExpectedState::open_or_create(&exp, layout).map_err(|e| e.to_string())?;
    let h = open_db(&a.db, &db_cfg, None).map_err(|e| format!("open {}: {e}", a.db.display()))?;
    let failures = Failures::new();
    let rep = verify_db(&h, &state, true, &failures);
    eprintln!("initial verification: {}", rep.line());
    eprintln!("seed {seed}; {layout:?}; {db_cfg:?}; {wl:?}");
    let stats = RunStats::default();
    let stop = AtomicBool::new(false);
    let no_errors = AtomicBool::new(false);
    let t0 = Instant::now();
    let progress = || {
        let st = h.db.stats();
        format!(
            "ops={} flushes={} compactions={} failures={}",
            stats.ops.load(Ordering::Relaxed),
            st.flushes,
            st.compactions,
            failures.count()
        )
    };
    let w = Workload::new(&h, &state, &wl, &failures, &stats, &stop, &no_errors);
    with_progress(a.progress_ms, progress, || w.run());
    let st = h.db.stats();
    // The representation of the default keyspace's buffer, and for an
    // adaptive one why it was chosen.
    let memtable = st
        .keyspaces
        .iter()
        .find(|k| k.id == strata::KeyspaceId::DEFAULT)
        .map(|k| match &k.memtable_decision {
            Some(d) => format!("{} ({d})", k.memtable_rep),
            None => k.memtable_rep.clone(),
        })
        .unwrap_or_default();
    let retained: usize = st.keyspaces.iter().map(|k| k.retained_memtables).sum();
    let memtable = if db_retains {
        format!("{memtable}, {retained} retained")
    } else {
        memtable
    };
    println!(
        "{} in {:.1} s; flushes {}, compactions {}, tree {}, memtable {memtable}; failures: {}",
        stats.line(),
        t0.elapsed().as_secs_f64(),
        st.flushes,
        st.compactions,
        shape_line(&h.db),
        failures.count()
    );
    drop(h);
    state.sync().map_err(|e| e.to_string())?;
    Ok(if failures.count() > 0 { 2 } else { 0 })
}

fn cmd_verify(a: VerifyArgs) -> Result<u8, String> {
    let db_cfg = a.stress.db_config()?;
    let exp = expected_path(&a.db, &a.expected_state);
    let failures = Failures::new();
    let line = match a.stress.table_config()? {
        Some(tcfg) => table_verify::verify_on_disk(
            &a.db,
            &exp,
            &db_cfg,
            &tcfg,
            a.resolve,
            &failures,
            a.stress.seed(),
        )?,
        None => verify_on_disk(&a.db, &exp, &db_cfg, a.resolve, &failures)?,
    };
    println!("{line}");
    Ok(if failures.count() > 0 { 2 } else { 0 })
}

fn cmd_crash(a: CrashArgs) -> Result<u8, String> {
    let layout = a.stress.layout()?;
    let db_cfg = a.stress.db_config()?;
    let tcfg = a.stress.table_config()?;
    if a.round_min_ms > a.round_max_ms {
        return Err("--round-min-ms must not exceed --round-max-ms".into());
    }
    let exp = expected_path(&a.db, &a.expected_state);
    let seed = a.stress.seed();
    let sync_ratio = a
        .stress
        .sync_ratio
        .unwrap_or(if a.power_cut { 1.0 } else { 0.05 });
    if !a.power_cut {
        if a.fresh {
            if a.db.exists() {
                if dir_has_entries(&a.db) && !a.db.join("CURRENT").exists() {
                    return Err(format!(
                        "refusing to remove {}: it does not look like a Strata database",
                        a.db.display()
                    ));
                }
                std::fs::remove_dir_all(&a.db).map_err(|e| e.to_string())?;
            }
            if exp.exists() {
                std::fs::remove_file(&exp).map_err(|e| e.to_string())?;
            }
        }
        if !exp.exists() {
            if dir_has_entries(&a.db) {
                return Err(format!(
                    "{} holds a database but there is no expected state at {} (use --fresh)",
                    a.db.display(),
                    exp.display()
                ));
            }
            match &tcfg {
                Some(t) => TableState::create(&exp, t.space()).map(drop),
                None => ExpectedState::create(&exp, layout).map(drop),
            }
            .map_err(|e| e.to_string())?;
        }
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let cfg = CrashConfig {
        iterations: a.iterations,
        db: a.db.clone(),
        expected_state: exp.clone(),
        round_min: Duration::from_millis(a.round_min_ms),
        round_max: Duration::from_millis(a.round_max_ms),
        seed,
        layout,
        db_cfg: db_cfg.clone(),
        workload: WorkloadConfig {
            threads: a.stress.threads,
            ops: None,
            duration: None,
            seed,
            sync_ratio,
        },
        exe,
        run_args: a.stress.to_args(sync_ratio),
    };
    println!(
        "crash driver: {} {} rounds of {}-{} ms, seed {seed}, {} threads, sync ratio {sync_ratio}, \
         {}, {db_cfg:?}{}",
        a.iterations,
        if a.power_cut { "power-cut" } else { "SIGKILL" },
        a.round_min_ms,
        a.round_max_ms,
        a.stress.threads,
        match &tcfg {
            Some(t) => format!("{t:?}"),
            None => format!("{layout:?}"),
        },
        if a.power_cut {
            String::new()
        } else {
            format!(", db {}, expected state {}", a.db.display(), exp.display())
        }
    );
    let sum = match (&tcfg, a.power_cut) {
        (Some(t), true) => table_verify::power_cut_rounds(&cfg, t),
        (Some(t), false) => table_verify::sigkill_rounds(&cfg, t),
        (None, true) => power_cut_rounds(&cfg),
        (None, false) => sigkill_rounds(&cfg),
    };
    println!(
        "elapsed: {:.1} s, workload ops: {}, rounds with problems: {:?}",
        sum.elapsed.as_secs_f64(),
        sum.ops,
        sum.bad_rounds
    );
    println!("{}", sum.failures_line());
    println!("{}", sum.line());
    Ok(if sum.failures > 0 || sum.panics > 0 {
        1
    } else {
        0
    })
}

fn cmd_fuzz_replay(target: &str, paths: &[PathBuf]) -> Result<u8, String> {
    let f = fuzz_targets::by_name(target).ok_or_else(|| {
        format!(
            "unknown target {target:?}; targets: {}",
            fuzz_targets::TARGETS.join(", ")
        )
    })?;
    let mut n = 0;
    for p in paths {
        let files: Vec<PathBuf> = if p.is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| e.to_string())?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            v.sort();
            v
        } else {
            vec![p.clone()]
        };
        for file in files {
            let data = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            eprintln!("{}", file.display());
            f(&data);
            n += 1;
        }
    }
    println!("{n} inputs ran through {target} without a panic");
    Ok(0)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Run(a) => cmd_run(a),
        Cmd::Verify(a) => cmd_verify(a),
        Cmd::Crash(a) => cmd_crash(a),
        Cmd::FuzzSeeds { out } => seeds::write_all(&out)
            .map(|n| {
                println!("wrote {n} seed files under {}", out.display());
                0
            })
            .map_err(|e| e.to_string()),
        Cmd::FuzzReplay { target, paths } => cmd_fuzz_replay(&target, &paths),
    };
    match r {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("strata-stress: {e}");
            ExitCode::from(1)
        }
    }
}
