//! Short crash campaigns in the normal test suite: 20 SIGKILL rounds of a
//! `strata-stress run` child and 10 in-process power cuts, 4 threads, 2000
//! keys, 64 KiB write buffers (so flushes and compactions run during the
//! rounds), rounds of 0.3-0.6 s; and 40 rounds of 2-150 ms, whose kills
//! often land in the child's open. Plus a check that verification does fail
//! when the expected state is deliberately wrong.
//!
//! Set STRATA_STRESS_SEED to replay a run; the seed is printed.

use std::path::Path;
use std::process::Output;

use strata_stress::expected::{DEL, ExpectedState, vstate_absent};

mod common;
use common::{SERIAL, last_line, run, seed, total};

const SMALL: &[&str] = &[
    "--threads=4",
    "--keys=2000",
    "--write-buffer-size=65536",
    "--target-file-size=65536",
    "--level1-max-bytes=262144",
];

#[test]
fn sigkill_rounds_lose_no_acknowledged_write() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let seed = seed();
    eprintln!("STRATA_STRESS_SEED={seed}");
    let db_arg = format!("--db={}", db.display());
    let seed_arg = format!("--seed={seed}");
    let mut args = vec![
        "crash",
        "--iterations=20",
        &db_arg,
        "--round-min-ms=300",
        "--round-max-ms=600",
        &seed_arg,
    ];
    args.extend_from_slice(SMALL);
    let out = run(&args);
    assert_eq!(
        last_line(&out),
        "rounds: 20, verification failures: 0, panics: 0"
    );
    assert!(out.status.success());
    assert!(total(&out, "flushes=") > 0, "no flush ran in any round");
    assert!(
        total(&out, "compactions=") > 0,
        "no compaction ran in any round"
    );
}

/// Rounds of 2 to 150 ms: many kills land while the child opens the
/// database (recovery, its flush of what it replayed, the new log and
/// manifest), after others that tore a record. An open cut short must
/// leave a database the next open accepts.
#[test]
fn sigkill_rounds_during_open_lose_no_acknowledged_write() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let db_arg = format!("--db={}", dir.path().join("db").display());
    let seed = seed();
    eprintln!("STRATA_STRESS_SEED={seed}");
    let seed_arg = format!("--seed={seed}");
    let mut args = vec![
        "crash",
        "--iterations=40",
        &db_arg,
        "--round-min-ms=2",
        "--round-max-ms=150",
        &seed_arg,
    ];
    args.extend_from_slice(SMALL);
    let out = run(&args);
    assert_eq!(
        last_line(&out),
        "rounds: 40, verification failures: 0, panics: 0"
    );
    assert!(out.status.success());
}

#[test]
fn power_cut_rounds_lose_no_synced_write() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let seed = seed();
    eprintln!("STRATA_STRESS_SEED={seed}");
    let seed_arg = format!("--seed={seed}");
    let mut args = vec![
        "crash",
        "--power-cut",
        "--iterations=10",
        "--round-min-ms=300",
        "--round-max-ms=600",
        &seed_arg,
    ];
    args.extend_from_slice(SMALL);
    let out = run(&args);
    assert_eq!(
        last_line(&out),
        "rounds: 10, verification failures: 0, panics: 0"
    );
    assert!(out.status.success());
    assert!(total(&out, "synced_writes=") > 0);
}

/// With most writes unsynced, power cuts expose the engine bug reproduced in
/// `engine_regressions.rs` (a synced write does not make earlier writes in an older
/// log durable): counters come back with sums no prefix of the writes
/// produces.
#[test]
fn power_cut_rounds_with_unsynced_writes() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let seed_arg = format!("--seed={}", seed());
    let mut args = vec![
        "crash",
        "--power-cut",
        "--iterations=10",
        "--round-min-ms=300",
        "--round-max-ms=600",
        "--sync-ratio=0.2",
        &seed_arg,
    ];
    args.extend_from_slice(SMALL);
    let out = run(&args);
    assert_eq!(
        last_line(&out),
        "rounds: 10, verification failures: 0, panics: 0"
    );
}

fn verify(db: &Path, exp: &Path) -> Output {
    run(&[
        "verify",
        &format!("--db={}", db.display()),
        &format!("--expected-state={}", exp.display()),
    ])
}

#[test]
fn verification_catches_a_corrupted_expected_state() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let exp = dir.path().join("expected");
    let out = run(&[
        "run",
        &format!("--db={}", db.display()),
        &format!("--expected-state={}", exp.display()),
        "--keys=500",
        "--threads=2",
        "--ops=3000",
        "--seed=7",
        "--write-buffer-size=16384",
    ]);
    assert!(out.status.success(), "the run itself failed");
    assert_eq!(
        verify(&db, &exp).status.code(),
        Some(0),
        "a sound state fails verification"
    );

    // Claim a generation that was never written for a present key, claim a
    // value for an absent key, and shift a counter.
    let state = ExpectedState::open(&exp).expect("open expected state");
    let present = (0..500)
        .find(|&i| !vstate_absent(state.value_committed(i)))
        .expect("some key holds a value");
    let absent = (0..500)
        .find(|&i| vstate_absent(state.value_committed(i)))
        .expect("some key is absent");
    let c = (0..state.layout().counter_keys)
        .find(|&c| state.counter_committed(c).is_some())
        .expect("some counter is set");
    state.force_value_committed(present, state.value_committed(present) + 1000);
    state.force_value_committed(absent, (state.value_view(absent).max_gen + 1) & !DEL);
    state.resolve_counter(c, state.counter_committed(c).map(|v| v + 1));
    drop(state);

    let out = verify(&db, &exp);
    assert_eq!(out.status.code(), Some(2), "verification did not fail");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("value key {present}: holds generation")),
        "{err}"
    );
    assert!(
        err.contains(&format!("value key {absent}: absent, expected")),
        "{err}"
    );
    assert!(err.contains(&format!("counter {c}: holds")), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.starts_with("FAILURE:")).count(),
        3,
        "{err}"
    );
}
