//! Recovery through the `strata` binary: each loss found by hand (issue 18)
//! reproduced as a user would, on a fresh directory.

use std::fs;
use std::path::{Path, PathBuf};

mod common;
use common::{Run, strata, strata_in};

fn ok(r: &Run, what: &str) {
    assert_eq!(
        r.code, 0,
        "{what}: exit {}\nstdout:\n{}\nstderr:\n{}",
        r.code, r.stdout, r.stderr
    );
}

fn failed(r: &Run, what: &str) {
    assert_ne!(
        r.code, 0,
        "{what} must fail\nstdout:\n{}\nstderr:\n{}",
        r.stdout, r.stderr
    );
}

/// Every file under `dir` (recursively) with its bytes, LOCK aside.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).expect("read dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n != "LOCK") {
                out.push((p.clone(), fs::read(&p).expect("read")));
            }
        }
    }
    out.sort();
    out
}

fn with_suffix(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .expect("read dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

fn fresh() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().expect("tempdir");
    let db = t.path().join("db");
    (t, db)
}

#[test]
fn a_missing_current_is_refused_and_salvage_rebuilds_it() {
    let (_t, db) = fresh();
    ok(&strata(&db, &["put", "a", "1"]), "put");
    ok(&strata(&db, &["flush"]), "flush");
    fs::remove_file(db.join("CURRENT")).expect("rm CURRENT");
    let before = files(&db);
    let r = strata(&db, &["get", "a"]);
    failed(&r, "get without CURRENT");
    assert!(r.stderr.contains("CURRENT is missing"), "{}", r.stderr);
    let r = strata(&db, &["put", "b", "2"]);
    failed(&r, "put without CURRENT");
    let r = strata(&db, &["check"]);
    failed(&r, "check without CURRENT");
    assert!(!r.stdout.contains("all 0 table files OK"), "{}", r.stdout);
    assert_eq!(files(&db), before, "nothing may change");

    let r = strata(&db, &["--salvage", "check"]);
    assert_eq!(r.code, 1, "salvage changed something: exit 1\n{}", r.stdout);
    assert!(r.stdout.contains("rebuilt"), "{}", r.stdout);
    let r = strata(&db, &["get", "a"]);
    ok(&r, "get after salvage");
    assert_eq!(r.stdout, "1\n");
}

#[test]
fn a_damaged_record_in_the_middle_of_the_log_is_refused_and_check_fails() {
    let (_t, db) = fresh();
    let mut input = String::new();
    for i in 0..200 {
        input.push_str(&format!("k{i:04}\tv{i}\n"));
    }
    // One write per line, so the log holds many records.
    let mut shell = String::new();
    for i in 0..200 {
        shell.push_str(&format!("put k{i:04} v{i}\n"));
    }
    ok(&strata_in(&db, &["shell"], &shell), "shell");
    let log = with_suffix(&db, ".log").pop().expect("a log");
    let mut bytes = fs::read(&log).expect("read");
    let at = bytes.len() / 4;
    bytes[at] ^= 0x20;
    fs::write(&log, bytes).expect("write");
    let before = files(&db);

    let r = strata(&db, &["check"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("valid records follow"), "{}", r.stdout);
    let r = strata(&db, &["put", "x", "1"]);
    failed(&r, "a writable open of a damaged log");
    assert!(r.stderr.contains("--wal-recovery"), "{}", r.stderr);
    assert_eq!(files(&db), before, "nothing may change");

    // The operator chooses to recover past it.
    let r = strata(&db, &["--wal-recovery", "skip-damaged", "put", "x", "1"]);
    ok(&r, "skip-damaged");
    assert!(
        db.join("lost")
            .join(log.file_name().expect("name"))
            .exists()
    );
    let r = strata(&db, &["scan"]);
    ok(&r, "scan");
    assert_eq!(r.stdout.lines().count(), 200, "one put lost, x added");
    let r = strata(&db, &["check"]);
    ok(&r, "check after recovery");
}

#[test]
fn foreign_files_are_neither_deleted_nor_replayed() {
    let (t, db) = fresh();
    let other = t.path().join("other");
    ok(&strata(&other, &["put", "evil", "1"]), "other database");
    let other_log = with_suffix(&other, ".log").pop().expect("a log");

    // A directory holding only files that look like the engine's is not
    // a new database.
    fs::create_dir_all(&db).expect("mkdir");
    fs::write(db.join("000009.sst"), b"mine, not strata's").expect("write");
    let r = strata(&db, &["put", "a", "1"]);
    failed(&r, "open of a directory of foreign files");
    assert_eq!(
        fs::read(db.join("000009.sst")).expect("kept"),
        b"mine, not strata's"
    );
    fs::remove_file(db.join("000009.sst")).expect("rm");

    ok(&strata(&db, &["put", "a", "1"]), "put");
    let planted = [
        (db.join("000001.log"), fs::read(&other_log).expect("read")),
        (db.join("987654.log"), fs::read(&other_log).expect("read")),
        (db.join("987655.sst"), b"not a table".to_vec()),
        (db.join("MANIFEST-987656"), b"not a manifest".to_vec()),
        (db.join("backup.tmp"), b"a user's file".to_vec()),
    ];
    for (p, b) in &planted {
        fs::write(p, b).expect("plant");
    }
    ok(&strata(&db, &["put", "b", "2"]), "put beside foreign files");
    ok(&strata(&db, &["flush"]), "flush");
    let r = strata(&db, &["get", "evil"]);
    assert_eq!(r.code, 1, "a foreign log was replayed: {}", r.stdout);
    let r = strata(&db, &["check"]);
    ok(&r, "check");
    assert!(
        r.stdout.contains("987655.sst is not the database's"),
        "{}",
        r.stdout
    );
    for (p, b) in &planted {
        assert_eq!(
            &fs::read(p).expect("planted file kept"),
            b,
            "{}",
            p.display()
        );
    }
}

#[test]
fn a_manifest_cut_in_its_last_record_is_refused() {
    let (_t, db) = fresh();
    // One process: the manifest holds the open's snapshot, then the
    // flush's edit, after which the flushed log was deleted.
    ok(&strata_in(&db, &["shell"], "put a 1\nflush\n"), "shell");
    let name = fs::read_to_string(db.join("CURRENT")).expect("CURRENT");
    let m = db.join(name.trim_end());
    let len = fs::metadata(&m).expect("stat").len();
    fs::OpenOptions::new()
        .write(true)
        .open(&m)
        .expect("open")
        .set_len(len - 2)
        .expect("truncate");
    let before = files(&db);
    let r = strata(&db, &["check"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("not a crash"), "{}", r.stdout);
    failed(&strata(&db, &["get", "a"]), "get");
    failed(&strata(&db, &["put", "b", "2"]), "put");
    assert_eq!(files(&db), before, "nothing may change");
}

#[test]
fn an_impossible_write_buffer_is_refused_with_an_error_not_an_abort() {
    let (_t, db) = fresh();
    let r = strata(
        &db,
        &[
            "--memtable",
            "vector-static",
            "--write-buffer-size",
            "1T",
            "put",
            "a",
            "1",
        ],
    );
    assert_eq!(r.code, 2, "usage error\n{}", r.stderr);
    assert!(r.stderr.contains("--write-buffer-size"), "{}", r.stderr);
    let r = strata(
        &db,
        &["--write-buffer-size", "99999999999999999999", "stats"],
    );
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("too large"), "{}", r.stderr);
    let r = strata(&db, &["--memtable", "hash-skiplist", "put", "a", "1"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--prefix-len"), "{}", r.stderr);
}

#[test]
fn a_link_planted_at_current_tmp_is_not_followed() {
    let (t, db) = fresh();
    ok(&strata(&db, &["put", "a", "1"]), "put");
    let target = t.path().join("precious");
    fs::write(&target, b"precious").expect("write");
    std::os::unix::fs::symlink(&target, db.join("CURRENT.tmp")).expect("symlink");
    for n in 1..=30u32 {
        std::os::unix::fs::symlink(&target, db.join(format!("CURRENT.{n:06}.tmp")))
            .expect("symlink");
    }
    let _ = strata(&db, &["put", "b", "2"]);
    let _ = strata(&db, &["flush"]);
    assert_eq!(fs::read(&target).expect("read"), b"precious");
}

#[test]
fn read_commands_change_nothing() {
    let (_t, db) = fresh();
    let mut shell = String::new();
    for i in 0..50 {
        shell.push_str(&format!("put k{i:03} v\n"));
    }
    shell.push_str("flush\nput late v\n");
    ok(&strata_in(&db, &["shell"], &shell), "shell");
    let before = files(&db);
    ok(&strata(&db, &["get", "late"]), "get");
    ok(&strata(&db, &["scan"]), "scan");
    ok(&strata(&db, &["stats"]), "stats");
    ok(&strata(&db, &["check"]), "check");
    ok(
        &strata(&db, &["--read-only", "get", "k001"]),
        "--read-only get",
    );
    assert_eq!(files(&db), before, "a read command changed files");
    let r = strata(&db, &["--read-only", "put", "x", "1"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("read-only"), "{}", r.stderr);
}

#[test]
fn load_that_fails_says_where_to_resume() {
    let (_t, db) = fresh();
    let mut input = String::new();
    for i in 0..2500 {
        input.push_str(&format!("k{i:05}\tv\n"));
    }
    // A key longer than the engine accepts fails the third batch.
    input.push_str(&format!("{}\tv\n", "x".repeat(70_000)));
    let r = strata_in(&db, &["load"], &input);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("2000 entries were written"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("line 2001"), "{}", r.stderr);
}
