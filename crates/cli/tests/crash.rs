//! Crash test: `strata shell` is killed with SIGKILL while writing; every
//! acknowledged write must survive, and nothing that was never sent may
//! appear.
//!
//! Each round spawns `strata --db DIR [--sync] shell` on the same directory,
//! feeds it `put` lines from a writer thread (values carry a per-key counter
//! that only grows), counts the `OK` answers, and kills the child after a
//! random number of them. Then the database is opened with the library and,
//! for every key, the stored counter must be at least the last acknowledged
//! (or previously recovered) one and at most the last one handed to the pipe.
//!
//! Set STRATA_CRASH_SEED to replay a run; the seed is printed.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::{Db, Options};

const BIN: &str = env!("CARGO_BIN_EXE_strata");
const KEYS: usize = 64;
const ROUNDS: usize = 6;

/// The two variants run one after the other: while this process has a
/// database open for checking, a child spawned by another test thread would
/// briefly inherit the LOCK file between fork and exec, and the next shell
/// could then find the database locked.
static SERIAL: Mutex<()> = Mutex::new(());

fn key(k: usize) -> String {
    format!("key{k:03}")
}

fn value(k: usize, c: u64) -> String {
    // Lengths vary so records straddle log blocks differently.
    format!("{k:03}:{c:010}:{}", "p".repeat((c % 7) as usize * 9))
}

/// Parses a stored value back into its counter, checking it is one we
/// could have written for key `k`.
fn counter_of(k: usize, stored: &[u8]) -> u64 {
    let s = std::str::from_utf8(stored)
        .unwrap_or_else(|_| panic!("key {k}: stored value is not UTF-8: {stored:?}"));
    let c: u64 = s
        .split(':')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("key {k}: malformed stored value {s:?}"));
    assert_eq!(s, value(k, c), "key {k}: stored value is not the one sent");
    c
}

fn seed() -> u64 {
    match std::env::var("STRATA_CRASH_SEED") {
        Ok(s) => s.parse().expect("STRATA_CRASH_SEED must be a u64"),
        Err(_) => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1),
    }
}

/// Per key: the smallest counter the database may hold (0: the key may be
/// absent) and the largest one ever sent.
struct Bounds {
    floor: Vec<u64>,
    ceil: Vec<u64>,
}

fn run_rounds(sync: bool, acks: std::ops::Range<usize>, name: &str) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let seed = seed();
    eprintln!("{name}: STRATA_CRASH_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed ^ u64::from(sync));
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let mut b = Bounds {
        floor: vec![0; KEYS],
        ceil: vec![0; KEYS],
    };
    let start = Instant::now();
    for round in 0..ROUNDS {
        let target = rng.random_range(acks.clone());
        // Far more operations than will be acknowledged, so the writer is
        // still going when the child dies.
        let total = target + 50_000;
        let mut next = b.ceil.clone();
        let ops: Vec<(usize, u64)> = (0..total)
            .map(|_| {
                let k = rng.random_range(0..KEYS);
                next[k] += 1;
                (k, next[k])
            })
            .collect();

        let mut cmd = Command::new(BIN);
        cmd.arg("--db")
            .arg(&db)
            .args(["--write-buffer-size", "64K"]);
        if sync {
            cmd.arg("--sync");
        }
        let mut child = cmd
            .arg("shell")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn strata shell");
        let mut stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut stderr = child.stderr.take().expect("stderr");
        let stderr_reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });

        let writer_ops = ops.clone();
        let writer = std::thread::spawn(move || {
            // Returns how many lines were handed to the pipe (counting a
            // chunk before it is written, so this bounds what was sent).
            let mut attempted = 0usize;
            for chunk in writer_ops.chunks(32) {
                let mut buf = String::new();
                for &(k, c) in chunk {
                    buf.push_str(&format!("put {} {}\n", key(k), value(k, c)));
                }
                attempted += chunk.len();
                if stdin.write_all(buf.as_bytes()).is_err() {
                    break;
                }
            }
            attempted
        });

        let mut acked = 0usize;
        let mut line = String::new();
        while acked < target {
            line.clear();
            let n = stdout.read_line(&mut line).expect("read answer");
            if n == 0 {
                let _ = child.wait();
                let err = stderr_reader.join().unwrap_or_default();
                panic!("round {round}: shell exited after {acked} answers; stderr: {err}");
            }
            assert_eq!(line, "OK\n", "round {round}: answer {acked}");
            acked += 1;
        }
        child.kill().expect("SIGKILL the shell");
        child.wait().expect("reap the shell");
        let attempted = writer.join().expect("writer thread");
        let err = stderr_reader.join().unwrap_or_default();
        assert!(
            err.is_empty(),
            "round {round}: shell wrote to stderr: {err}"
        );
        assert!(
            attempted < ops.len(),
            "round {round}: the writer ran out of operations before the kill"
        );
        assert!(attempted >= acked);

        for &(k, c) in &ops[..acked] {
            b.floor[k] = b.floor[k].max(c);
        }
        for &(k, c) in &ops[..attempted] {
            b.ceil[k] = b.ceil[k].max(c);
        }
        check(&db, &mut b, round, acked, attempted);
    }
    eprintln!(
        "{name}: {ROUNDS} rounds in {:.1} s",
        start.elapsed().as_secs_f64()
    );
}

/// Opens the database with the library and checks every key against its
/// bounds; the recovered counters become the new floors.
fn check(dir: &Path, b: &mut Bounds, round: usize, acked: usize, attempted: usize) {
    let db = match Db::open(dir, Options::default()) {
        Ok(db) => db,
        Err(e) => panic!("round {round}: reopening after SIGKILL failed: {e}"),
    };
    for k in 0..KEYS {
        let got = match db.get(key(k).as_bytes()) {
            Ok(v) => v,
            Err(e) => panic!("round {round}: get {} failed: {e}", key(k)),
        };
        let c = got.as_deref().map_or(0, |v| counter_of(k, v));
        assert!(
            c >= b.floor[k],
            "round {round} ({acked} acknowledged, {attempted} sent): {} holds counter {c}, \
             but counter {} was acknowledged (or recovered before): acknowledged write lost",
            key(k),
            b.floor[k]
        );
        assert!(
            c <= b.ceil[k],
            "round {round}: {} holds counter {c}, but only up to {} was ever sent",
            key(k),
            b.ceil[k]
        );
        b.floor[k] = c;
    }
    // The scan agrees with the point reads.
    let ks = db.default_keyspace();
    let all = ks.scan(None, None, usize::MAX).expect("scan");
    let present = b.floor.iter().filter(|&&c| c > 0).count();
    assert_eq!(all.len(), present, "round {round}: scan count");
    if let Err(e) = db.close() {
        panic!("round {round}: close failed: {e}");
    }
}

#[test]
fn sigkill_with_sync_loses_no_acknowledged_write() {
    run_rounds(true, 100..500, "sync");
}

#[test]
fn sigkill_without_sync_loses_no_acknowledged_write() {
    // Without --sync the log still reaches the operating system before the
    // acknowledgement, so a process crash (unlike a power cut) loses nothing.
    run_rounds(false, 1000..20_000, "no-sync");
}
