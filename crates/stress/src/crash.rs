//! The crash drivers.
//!
//! - [`sigkill_rounds`]: per round, start `strata-stress run` as a child
//!   process on the database and expected-state file, let it run a random
//!   time, SIGKILL it, then open the database in this process and verify it
//!   (resolving pending keys), and go on with the next round on the same
//!   database and expected state.
//! - [`power_cut_rounds`]: in process, over one [`MemVfs`]: open the
//!   database, verify it, run the workload threads, cut the power after a
//!   random time (unsynced bytes and directory entries are lost, every open
//!   handle fails), stop the threads, drop the database, and go on.

use std::io::{BufRead, BufReader};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::vfs::Vfs;
use strata::vfs_mem::MemVfs;

use crate::check::Failures;
use crate::config::{DbConfig, open_db};
use crate::expected::{ExpectedState, Layout};
use crate::verify::verify_db;
use crate::workload::{RunStats, Workload, WorkloadConfig};

/// Settings of a crash campaign.
#[derive(Clone, Debug)]
pub struct CrashConfig {
    pub iterations: u64,
    pub db: PathBuf,
    pub expected_state: PathBuf,
    /// A round lasts a random time in this range before the kill / cut.
    pub round_min: Duration,
    pub round_max: Duration,
    pub seed: u64,
    pub layout: Layout,
    pub db_cfg: DbConfig,
    pub workload: WorkloadConfig,
    /// The `strata-stress` executable (for SIGKILL rounds).
    pub exe: PathBuf,
    /// Flags passed to `strata-stress run` (database and workload flags).
    pub run_args: Vec<String>,
}

impl CrashConfig {
    /// The workload of power-cut round `round`: a seed of its own, and no
    /// end of its own (the cut ends it).
    pub fn round_workload(&self, round: u64) -> WorkloadConfig {
        WorkloadConfig {
            seed: self.seed.wrapping_add(round + 1),
            ops: None,
            duration: None,
            ..self.workload.clone()
        }
    }
}

/// The outcome of a campaign.
#[derive(Clone, Debug, Default)]
pub struct CrashSummary {
    pub rounds: u64,
    pub failures: u64,
    /// Of `failures`, those reported by the workload runs (wrong reads,
    /// failed operations; for SIGKILL rounds, also the check a child makes
    /// when it opens the database) rather than by the driver's
    /// verification after a crash.
    pub run_failures: u64,
    pub panics: u64,
    pub elapsed: Duration,
    /// Operations the workload completed, over all rounds (for SIGKILL
    /// rounds, as last reported by each child before it was killed).
    pub ops: u64,
    /// Rounds whose verification or run reported a failure or panic.
    pub bad_rounds: Vec<u64>,
}

impl CrashSummary {
    /// Where the failures were found (printed before the summary line).
    pub fn failures_line(&self) -> String {
        format!(
            "failures in the workload runs (their reads, operations and opening checks): {}, \
             in the verifications after the crashes: {}",
            self.run_failures,
            self.failures - self.run_failures
        )
    }

    /// The summary line.
    pub fn line(&self) -> String {
        format!(
            "rounds: {}, verification failures: {}, panics: {}",
            self.rounds, self.failures, self.panics
        )
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}

/// Opens the database in this process, verifies it against the expected
/// state file (resolving pending keys), and closes it. Returns the report
/// line, or `Err` when the database could not be opened.
pub fn verify_on_disk(
    db: &Path,
    expected: &Path,
    db_cfg: &DbConfig,
    resolve: bool,
    failures: &Failures,
) -> Result<String, String> {
    let state = ExpectedState::open(expected)
        .map_err(|e| format!("cannot open the expected state {}: {e}", expected.display()))?;
    let h = open_db(db, db_cfg, None).map_err(|e| format!("cannot open the database: {e}"))?;
    let rep = verify_db(&h, &state, resolve, failures);
    state
        .sync()
        .map_err(|e| format!("fsync of the expected state: {e}"))?;
    let shape = shape_line(&h.db);
    drop(h);
    Ok(format!("{}; tree: {shape}", rep.line()))
}

/// Files per level of the values keyspace, e.g. `L0=2 L1=3 L2=9`, with
/// flush and compaction counts.
pub fn shape_line(db: &strata::Db) -> String {
    let s = db.stats();
    let levels = s
        .keyspaces
        .iter()
        .find(|k| k.id == strata::KeyspaceId::DEFAULT)
        .map(|k| {
            k.levels
                .iter()
                .enumerate()
                .filter(|(_, (n, _))| *n > 0)
                .map(|(l, (n, _))| format!("L{l}={n}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    format!("[{levels}]")
}

/// SIGKILL rounds; see the module documentation.
pub fn sigkill_rounds(cfg: &CrashConfig) -> CrashSummary {
    sigkill_rounds_with(cfg, |failures, _round| {
        verify_on_disk(&cfg.db, &cfg.expected_state, &cfg.db_cfg, true, failures)
    })
}

/// SIGKILL rounds of `strata-stress run` children started with
/// `cfg.run_args`, each followed by `verify(failures, round)` (which opens
/// the database, verifies and resolves it, and returns its report line).
pub fn sigkill_rounds_with(
    cfg: &CrashConfig,
    verify: impl Fn(&Failures, u64) -> Result<String, String>,
) -> CrashSummary {
    let start = Instant::now();
    let mut sum = CrashSummary::default();
    let mut rng = StdRng::seed_from_u64(cfg.seed);
    for round in 0..cfg.iterations {
        let failures = Failures::new();
        let mut panics = 0u64;
        let mut args: Vec<String> = vec!["run".into()];
        args.extend(cfg.run_args.iter().cloned());
        args.extend([
            "--db".into(),
            cfg.db.display().to_string(),
            "--expected-state".into(),
            cfg.expected_state.display().to_string(),
            "--duration-secs".into(),
            "100000".into(),
            "--seed".into(),
            cfg.seed.wrapping_add(round + 1).to_string(),
            "--progress-ms".into(),
            "100".into(),
        ]);
        let child = Command::new(&cfg.exe)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => {
                failures.report(format!(
                    "round {round}: cannot start {}: {e}",
                    cfg.exe.display()
                ));
                sum.failures += failures.count();
                sum.bad_rounds.push(round);
                sum.rounds += 1;
                continue;
            }
        };
        let reader = child.stderr.take().map(|err| {
            std::thread::spawn(move || {
                let mut lines = Vec::new();
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    let routine = ["PROGRESS", "initial verification", "seed "];
                    if !routine.iter().any(|p| line.starts_with(p)) {
                        eprintln!("  [child] {line}");
                    }
                    lines.push(line);
                }
                lines
            })
        });
        let run_for = Duration::from_millis(
            rng.random_range(cfg.round_min.as_millis() as u64..=cfg.round_max.as_millis() as u64),
        );
        let t0 = Instant::now();
        let mut exited = None;
        while t0.elapsed() < run_for {
            if let Ok(Some(st)) = child.try_wait() {
                exited = Some(st);
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let ran_ms = t0.elapsed().as_millis();
        if exited.is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let lines = reader.and_then(|r| r.join().ok()).unwrap_or_default();
        let mut child_failures = 0u64;
        let mut last_progress = None;
        for l in &lines {
            if l.starts_with("FAILURE:") {
                child_failures += 1;
            } else if l.starts_with("PANIC:") {
                panics += 1;
            } else if let Some(p) = l.strip_prefix("PROGRESS ") {
                last_progress = Some(p.to_string());
            }
        }
        if let Some(st) = exited
            && !st.success()
            && child_failures == 0
            && panics == 0
        {
            failures.report(format!(
                "round {round}: the run exited by itself with {st} (see its output above)"
            ));
        }
        let ops = last_progress
            .as_deref()
            .and_then(|p| p.split_whitespace().find_map(|w| w.strip_prefix("ops=")))
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
        sum.ops += ops;
        let verified = catch_unwind(AssertUnwindSafe(|| verify(&failures, round)));
        let verdict = match verified {
            Ok(Ok(line)) => line,
            Ok(Err(e)) => {
                failures.report(format!("round {round}: {e}"));
                e
            }
            Err(p) => {
                panics += 1;
                let m = panic_message(p.as_ref());
                eprintln!("PANIC: round {round}: verification panicked: {m}");
                m
            }
        };
        let f = failures.count() + child_failures;
        println!(
            "round {round}: {} after {} ms, {}; verify: {verdict}",
            match exited {
                Some(st) => format!("run exited ({st})"),
                None => "killed".to_string(),
            },
            ran_ms,
            last_progress.unwrap_or_else(|| "no progress reported".into()),
        );
        sum.rounds += 1;
        sum.failures += f;
        sum.run_failures += child_failures;
        sum.panics += panics;
        if f > 0 || panics > 0 {
            sum.bad_rounds.push(round);
        }
    }
    sum.elapsed = start.elapsed();
    sum
}

/// Where the power-cut rounds keep the database inside the [`MemVfs`].
const MEM_DB: &str = "/strata-stress/db";

/// Counters of one power-cut round's workload, for the driver's lines.
pub trait RoundStats: Default {
    /// Operations completed.
    fn ops(&self) -> u64;
    /// Operations that failed after the cut (expected).
    fn expected_errors(&self) -> u64;
    /// A one-line summary.
    fn line(&self) -> String;
}

impl RoundStats for RunStats {
    fn ops(&self) -> u64 {
        self.ops.load(Ordering::Relaxed)
    }

    fn expected_errors(&self) -> u64 {
        self.expected_errors.load(Ordering::Relaxed)
    }

    fn line(&self) -> String {
        RunStats::line(self)
    }
}

/// One power-cut round, as the driver hands it to the round's body.
pub struct CutRound<'a> {
    pub round: u64,
    /// The last open: verify only, no workload, no cut.
    pub last: bool,
    /// How long the workload runs before the cut.
    pub run_for: Duration,
    pub vfs: &'a MemVfs,
    /// The database's directory inside `vfs`.
    pub path: &'a Path,
    /// For the verification.
    pub failures: &'a Failures,
    /// For the workload.
    pub run_failures: &'a Failures,
}

/// Runs `work` on a thread, cuts the power after `run_for` (raising
/// `expect_errors` first, then `stop`), and waits for the thread; returns
/// when the cut came.
pub fn run_then_cut(
    vfs: &MemVfs,
    run_for: Duration,
    stop: &AtomicBool,
    expect_errors: &AtomicBool,
    work: impl FnOnce() + Send,
) -> Duration {
    std::thread::scope(|s| {
        let t = s.spawn(work);
        let t1 = Instant::now();
        while t1.elapsed() < run_for && !t.is_finished() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let cut_after = t1.elapsed();
        expect_errors.store(true, Ordering::SeqCst);
        vfs.power_cut();
        stop.store(true, Ordering::SeqCst);
        if let Err(p) = t.join() {
            std::panic::resume_unwind(p);
        }
        cut_after
    })
}

/// Power-cut rounds; see the module documentation. `cfg.db` and
/// `cfg.expected_state` are not used (everything is in memory).
pub fn power_cut_rounds(cfg: &CrashConfig) -> CrashSummary {
    let state = ExpectedState::in_memory(cfg.layout, true);
    power_cut_rounds_with::<RunStats>(cfg, |r, stats, cut_after| {
        let dynvfs: Arc<dyn Vfs> = Arc::new(r.vfs.clone());
        let h = open_db(r.path, &cfg.db_cfg, Some(dynvfs))
            .map_err(|e| format!("open after power cut {} failed: {e}", r.round))?;
        let rep = verify_db(&h, &state, true, r.failures);
        if r.last {
            return Ok(rep.line());
        }
        let stop = AtomicBool::new(false);
        let expect_errors = AtomicBool::new(false);
        let wl = cfg.round_workload(r.round);
        let w = Workload::new(
            &h,
            &state,
            &wl,
            r.run_failures,
            stats,
            &stop,
            &expect_errors,
        );
        *cut_after = run_then_cut(r.vfs, r.run_for, &stop, &expect_errors, move || w.run());
        let shape = shape_line(&h.db);
        drop(h);
        Ok(format!("{}; tree before the cut: {shape}", rep.line()))
    })
}

/// The power-cut driver: per round, over one [`MemVfs`], `body` opens the
/// database, verifies it and (unless it is the last open) runs a workload
/// and cuts the power ([`run_then_cut`]), returning the verification line.
pub fn power_cut_rounds_with<S: RoundStats>(
    cfg: &CrashConfig,
    mut body: impl FnMut(&CutRound<'_>, &S, &mut Duration) -> Result<String, String>,
) -> CrashSummary {
    let start = Instant::now();
    let mut sum = CrashSummary::default();
    let mut rng = StdRng::seed_from_u64(cfg.seed);
    let vfs = MemVfs::new();
    let path = PathBuf::from(MEM_DB);
    // One more open than cuts: the last one only verifies.
    for round in 0..=cfg.iterations {
        let failures = Failures::new();
        let run_failures = Failures::new();
        let stats = S::default();
        let last = round == cfg.iterations;
        let t0 = Instant::now();
        let mut cut_after = Duration::ZERO;
        let run_for =
            if last {
                Duration::ZERO
            } else {
                Duration::from_millis(rng.random_range(
                    cfg.round_min.as_millis() as u64..=cfg.round_max.as_millis() as u64,
                ))
            };
        let r = CutRound {
            round,
            last,
            run_for,
            vfs: &vfs,
            path: &path,
            failures: &failures,
            run_failures: &run_failures,
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| body(&r, &stats, &mut cut_after)));
        let mut panics = 0;
        let verdict = match outcome {
            Ok(Ok(line)) => line,
            Ok(Err(e)) => {
                failures.report(e.clone());
                e
            }
            Err(p) => {
                panics += 1;
                let m = panic_message(p.as_ref());
                eprintln!("PANIC: power-cut round {round}: {m}");
                m
            }
        };
        sum.ops += stats.ops();
        if round == 0 {
            println!("open: verify: {verdict}");
        } else {
            println!("after power cut {round}: verify: {verdict}");
        }
        if !last {
            println!(
                "round {}: power cut after {} ms, {} ({} errors after the cut); {} ms in all",
                round + 1,
                cut_after.as_millis(),
                stats.line(),
                stats.expected_errors(),
                t0.elapsed().as_millis()
            );
            sum.rounds += 1;
        }
        let f = failures.count() + run_failures.count();
        sum.failures += f;
        sum.run_failures += run_failures.count();
        sum.panics += panics;
        if f > 0 || panics > 0 {
            sum.bad_rounds.push(round);
        }
    }
    sum.elapsed = start.elapsed();
    sum
}
