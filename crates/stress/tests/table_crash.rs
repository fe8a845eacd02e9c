//! The table mode in the normal test suite: SIGKILL rounds and in-process
//! power cuts of the table workload (upserts, partial updates, deletes,
//! multi-row writes; 2 tables of 1000 rows, small trees, layouts `column`
//! and `groups:2`), and a check that verification reports a lost partial
//! update, a lost delete and a lost row, naming the table, row and column.
//!
//! Set STRATA_STRESS_SEED to replay a run; the seed is printed.

use strata_stress::table_model::{NCOLS, RowState, TableState, cell};

mod common;
use common::{SERIAL, last_line, run, seed, total};

const SMALL: &[&str] = &[
    "--tables=2",
    "--table-rows=1000",
    "--table-layouts=column,groups:2",
    "--threads=4",
    "--round-min-ms=300",
    "--round-max-ms=600",
];

#[test]
fn table_sigkill_rounds_lose_no_acknowledged_write() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = seed();
    eprintln!("STRATA_STRESS_SEED={seed}");
    let db_arg = format!("--db={}", dir.path().join("db").display());
    let seed_arg = format!("--seed={seed}");
    let mut args = vec!["crash", "--iterations=8", &db_arg, &seed_arg];
    args.extend_from_slice(SMALL);
    let out = run(&args);
    assert_eq!(
        last_line(&out),
        "rounds: 8, verification failures: 0, panics: 0"
    );
    assert!(out.status.success());
    assert!(total(&out, "updates=") > 0, "no partial update ran");
    assert!(total(&out, "flushes=") > 0, "no flush ran in any round");
    assert!(total(&out, "compactions=") > 0, "no compaction ran");
    // Rows reached the column-group levels of the `column` table.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("7g/"), "no level held the column groups");
}

#[test]
fn table_power_cut_rounds_lose_no_synced_write() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let seed = seed();
    eprintln!("STRATA_STRESS_SEED={seed}");
    let seed_arg = format!("--seed={seed}");
    let mut args = vec!["crash", "--power-cut", "--iterations=5", &seed_arg];
    args.extend_from_slice(SMALL);
    let out = run(&args);
    assert_eq!(
        last_line(&out),
        "rounds: 5, verification failures: 0, panics: 0"
    );
    assert!(out.status.success());
    assert!(total(&out, "synced_writes=") > 0);
    assert!(total(&out, "updates=") > 0, "no partial update ran");
}

#[test]
fn table_verification_reports_a_lost_partial_update_delete_and_row() {
    let _s = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let db = format!("--db={}", dir.path().join("db").display());
    let exp_path = dir.path().join("expected");
    let exp = format!("--expected-state={}", exp_path.display());
    let shape = ["--tables=1", "--table-rows=300", "--table-layouts=column"];
    let mut args = vec!["run", &db, &exp, "--threads=2", "--ops=4000", "--seed=7"];
    args.extend_from_slice(&shape);
    assert!(run(&args).status.success(), "the run itself failed");
    let mut verify = vec!["verify", &db, &exp];
    verify.extend_from_slice(&shape);
    assert_eq!(
        run(&verify).status.code(),
        Some(0),
        "a sound state fails verification"
    );

    // Claim a partial update of column c2 the database never saw, a delete
    // of a present row, and a row where there is none.
    let state = TableState::open(&exp_path).expect("open expected state");
    let present: Vec<u32> = (0..300)
        .filter(|&k| state.committed(0, k).present)
        .collect();
    let absent = (0..300)
        .find(|&k| !state.committed(0, k).present)
        .expect("some row is absent");
    // A row whose c2 reads differently at its next generation (a cell may
    // be null at both).
    let updated = *present
        .iter()
        .find(|&&k| {
            let g = state.committed(0, k).gens[2];
            cell(0, k, 2, g) != cell(0, k, 2, state.max_gen(0, k) + 1)
        })
        .expect("a row to update");
    let deleted = *present.iter().find(|&&k| k != updated).expect("a row");
    let mut st = state.committed(0, updated);
    st.gens[2] = state.max_gen(0, updated) + 1;
    state.force_committed(0, updated, st);
    let mut gone = state.committed(0, deleted);
    gone.present = false;
    state.force_committed(0, deleted, gone);
    let phantom = RowState {
        present: true,
        gens: [state.max_gen(0, absent) + 1; NCOLS],
    };
    state.force_committed(0, absent, phantom);
    drop(state);

    let out = run(&verify);
    assert_eq!(out.status.code(), Some(2), "verification did not fail");
    let err = String::from_utf8_lossy(&out.stderr);
    let failures: Vec<&str> = err.lines().filter(|l| l.starts_with("FAILURE:")).collect();
    assert_eq!(failures.len(), 3, "{err}");
    assert!(
        err.contains(&format!("stress_t0 row {updated} ")) && err.contains("column c2 holds"),
        "{err}"
    );
    assert!(
        err.contains(&format!("stress_t0 row {deleted} ")) && err.contains("expected absent"),
        "{err}"
    );
    assert!(
        err.contains(&format!("stress_t0 row {absent} "))
            && err.contains("absent: lost acknowledged write"),
        "{err}"
    );
}
