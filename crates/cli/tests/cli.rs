//! End-to-end tests of the `strata` binary.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata_cli::encoding::{encode_bytes, encode_hex};

mod common;
use common::{BIN, assert_ok, db_dir, finish, spawn_shell, strata, strata_in, tempdir};

#[test]
fn put_get_delete_scan_one_shot() {
    let t = tempdir();
    let db = db_dir(&t);
    for (k, v) in [("b", "2"), ("a", "1"), ("c", "3"), ("d", "4")] {
        let r = strata(&db, &["put", k, v]);
        assert_ok(&r, "put");
        assert_eq!(r.stdout, "OK\n");
    }
    let r = strata(&db, &["get", "b"]);
    assert_ok(&r, "get");
    assert_eq!(r.stdout, "2\n");

    let r = strata(&db, &["delete", "b"]);
    assert_ok(&r, "delete");
    let r = strata(&db, &["get", "b"]);
    assert_eq!(r.code, 1, "get of a deleted key exits 1");
    assert_eq!(r.stdout, "(not found)\n");

    let r = strata(&db, &["scan"]);
    assert_ok(&r, "scan");
    assert_eq!(r.lines(), ["a\t1", "c\t3", "d\t4"]);
    // Half-open: `to` is excluded.
    let r = strata(&db, &["scan", "--from", "a", "--to", "d"]);
    assert_eq!(r.lines(), ["a\t1", "c\t3"]);
    let r = strata(&db, &["scan", "--from", "b", "--limit", "1"]);
    assert_eq!(r.lines(), ["c\t3"]);
    let r = strata(&db, &["scan", "--limit", "0"]);
    assert_ok(&r, "scan --limit 0");
    assert_eq!(r.stdout, "");
    // Global flags may come after the command too.
    let r = Command::new(BIN)
        .args(["get", "a", "--db"])
        .arg(&db)
        .output()
        .expect("run");
    let r = finish(r);
    assert_ok(&r, "flags after command");
    assert_eq!(r.stdout, "1\n");
}

#[test]
fn hex_and_unprintable_keys_and_values() {
    let t = tempdir();
    let db = db_dir(&t);
    assert_ok(&strata(&db, &["put", "0x00ff", "0x"]), "put hex");
    assert_ok(&strata(&db, &["put", "0x6869", "with space"]), "put");
    assert_ok(&strata(&db, &["put", "-dash", "-1"]), "put hyphen");
    assert_ok(
        &strata(&db, &["put", "0x3078", "0X1"]),
        "put literal 0x key",
    );

    assert_eq!(
        strata(&db, &["get", "hi"]).stdout,
        "0x77697468207370616365\n"
    );
    assert_eq!(strata(&db, &["get", "0x00FF"]).stdout, "0x\n");
    assert_eq!(strata(&db, &["get", "-dash"]).stdout, "-1\n");
    // The key "0x" (two characters) prints as hex so it reads back.
    assert_eq!(strata(&db, &["get", "0x3078"]).stdout, "0X1\n");

    let r = strata(&db, &["scan"]);
    assert_eq!(
        r.lines(),
        [
            "0x00ff\t0x",
            "-dash\t-1",
            "0x3078\t0X1",
            "hi\t0x77697468207370616365"
        ]
    );
}

#[test]
fn bad_flag_and_argument_values_exit_2() {
    let t = tempdir();
    let db = db_dir(&t);
    let cases: &[(&[&str], &str)] = &[
        (&["--compression", "brotli", "stats"], "brotli"),
        (&["--memtable", "btree-of-doom", "stats"], "memtable"),
        (&["--write-buffer-size", "lots", "stats"], "byte count"),
        (
            &["--write-buffer-size", "100", "stats"],
            "--write-buffer-size",
        ),
        (&["--block-cache-size", "-5", "stats"], "-5"),
        (&["--block-cache-size", "5X", "stats"], "block-cache-size"),
        (&["get", "0xabc"], "invalid hex"),
        (&["put", "k", "0xzz"], "invalid hex"),
        (&["scan", "--limit", "many"], "limit"),
        (&["frobnicate"], "frobnicate"),
        (&["put", "k"], "VALUE"),
    ];
    for (args, needle) in cases {
        let r = strata(&db, args);
        assert_eq!(
            r.code, 2,
            "{args:?}: stdout {} stderr {}",
            r.stdout, r.stderr
        );
        assert!(
            r.stderr.contains("error") && r.stderr.contains(needle),
            "{args:?}: stderr {:?} lacks {needle:?}",
            r.stderr
        );
    }
    // Good values are accepted (the first creates the database `stats`
    // reads: a read command never creates one).
    for args in [
        &["--sync", "--write-buffer-size", "1MiB", "put", "a", "b"][..],
        &["--compression", "zstd", "--memtable", "skiplist", "stats"],
        &[
            "--compression",
            "LZ4",
            "--write-buffer-size",
            "64K",
            "--block-cache-size",
            "0",
            "stats",
        ],
    ] {
        assert_ok(&strata(&db, args), &format!("{args:?}"));
    }
}

#[test]
fn load_from_stdin_then_scan() {
    let t = tempdir();
    let db = db_dir(&t);
    let n = 4321;
    let mut input = String::new();
    for i in 0..n {
        if i % 3 == 0 {
            // Hex key and a value with a space (taken raw: everything after
            // the first tab).
            input.push_str(&format!(
                "0x{}\tv {i}\r\n",
                encode_hex(format!("key{i:05}").as_bytes())
            ));
        } else {
            input.push_str(&format!("key{i:05}\tval{i}\n"));
        }
        if i % 1000 == 0 {
            input.push('\n');
        }
    }
    let r = strata_in(&db, &["--write-buffer-size", "64K", "load"], &input);
    assert_ok(&r, "load");
    assert_eq!(r.stdout, format!("loaded {n} entries\n"));

    let r = strata(&db, &["scan"]);
    assert_ok(&r, "scan");
    let lines = r.lines();
    assert_eq!(lines.len(), n);
    assert_eq!(lines[0], format!("key00000\t{}", encode_bytes(b"v 0")));
    assert_eq!(lines[1], "key00001\tval1");
    assert_eq!(
        strata(&db, &["scan", "--from", "key01000", "--to", "key02000"])
            .lines()
            .len(),
        1000
    );
    assert_eq!(
        strata(&db, &["scan", "--from", "key04000", "--limit", "7"])
            .lines()
            .len(),
        7
    );

    // A bad line stops the load with its line number; every line before
    // it is written (the batch it interrupted too), none after it.
    let mut bad = String::new();
    for i in 0..2500 {
        bad.push_str(&format!("more{i:05}\tx\n"));
    }
    bad.push_str("no tab here\n");
    let r = strata_in(&db, &["load"], &bad);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("line 2501"), "{}", r.stderr);
    assert!(r.stderr.contains("2500 entries written"), "{}", r.stderr);
    assert_eq!(
        strata(&db, &["scan", "--from", "more", "--to", "mp"])
            .lines()
            .len(),
        2500
    );

    let r = strata_in(&db, &["load"], "k\t0xq\n");
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("line 1") && r.stderr.contains("invalid hex"),
        "{}",
        r.stderr
    );
}

/// One shell command with the answer the model expects.
struct Step {
    line: String,
    expect: Vec<String>,
}

fn key_token(rng: &mut StdRng, key: &[u8]) -> String {
    // Either the printed form or always-hex: both must read back the same.
    if rng.random_bool(0.3) {
        format!("0x{}", encode_hex(key))
    } else {
        encode_bytes(key)
    }
}

#[test]
fn shell_matches_a_model_over_thousands_of_operations() {
    let t = tempdir();
    let db = db_dir(&t);
    let mut rng = StdRng::seed_from_u64(0xc0ffee);
    let keys: Vec<Vec<u8>> = (0..400)
        .map(|i| match i % 8 {
            0 => vec![0, (i % 256) as u8, 0xff],
            1 => format!("sp {i}").into_bytes(),
            2 => format!("0x{i}").into_bytes(),
            3 => format!("ключ{i}").into_bytes(),
            _ => format!("k{i:04}").into_bytes(),
        })
        .collect();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut steps: Vec<Step> = Vec::new();
    let n = 4000;
    let (mut gets, mut found, mut scans) = (0, 0, 0);
    for i in 0..n {
        let special = match i {
            700 | 2600 => Some("flush"),
            1300 | 3400 => Some("compact"),
            1000 | 2000 | 3000 | 3900 => Some("reopen"),
            _ => None,
        };
        if let Some(cmd) = special {
            steps.push(Step {
                line: cmd.to_string(),
                expect: vec!["OK".into()],
            });
            continue;
        }
        let key = keys[rng.random_range(0..keys.len())].clone();
        let p = rng.random_range(0..100);
        if p < 45 {
            let len = rng.random_range(0..30);
            let value: Vec<u8> = if rng.random_bool(0.2) {
                (0..len).map(|_| rng.random()).collect()
            } else {
                (0..len).map(|_| rng.random_range(b'!'..=b'~')).collect()
            };
            let vt = if rng.random_bool(0.2) {
                format!("0x{}", encode_hex(&value))
            } else {
                encode_bytes(&value)
            };
            steps.push(Step {
                line: format!("put {} {vt}", key_token(&mut rng, &key)),
                expect: vec!["OK".into()],
            });
            model.insert(key, value);
        } else if p < 75 {
            gets += 1;
            let expect = match model.get(&key) {
                Some(v) => {
                    found += 1;
                    encode_bytes(v)
                }
                None => "(not found)".into(),
            };
            steps.push(Step {
                line: format!("get {}", key_token(&mut rng, &key)),
                expect: vec![expect],
            });
        } else if p < 88 {
            steps.push(Step {
                line: format!("delete {}", key_token(&mut rng, &key)),
                expect: vec!["OK".into()],
            });
            model.remove(&key);
        } else {
            scans += 1;
            let bound = |rng: &mut StdRng| -> (Option<Vec<u8>>, String) {
                if rng.random_bool(0.25) {
                    (None, "-".into())
                } else {
                    let k = keys[rng.random_range(0..keys.len())].clone();
                    let tok = key_token(rng, &k);
                    (Some(k), tok)
                }
            };
            let (from, ft) = bound(&mut rng);
            let (to, tt) = bound(&mut rng);
            let limit = if rng.random_bool(0.8) {
                Some(rng.random_range(0..25usize))
            } else {
                None
            };
            let mut line = format!("scan {ft} {tt}");
            if let Some(l) = limit {
                line.push_str(&format!(" {l}"));
            }
            let entries: Vec<String> = model
                .iter()
                .filter(|(k, _)| from.as_ref().is_none_or(|f| *k >= f))
                .filter(|(k, _)| to.as_ref().is_none_or(|t| *k < t))
                .take(limit.unwrap_or(usize::MAX))
                .map(|(k, v)| format!("{}\t{}", encode_bytes(k), encode_bytes(v)))
                .collect();
            let mut expect = entries;
            expect.push(format!("({} entries)", expect.len()));
            steps.push(Step { line, expect });
        }
    }
    // A last full scan checks the whole state.
    let mut expect: Vec<String> = model
        .iter()
        .map(|(k, v)| format!("{}\t{}", encode_bytes(k), encode_bytes(v)))
        .collect();
    expect.push(format!("({} entries)", model.len()));
    steps.push(Step {
        line: "scan".into(),
        expect,
    });
    assert!(
        gets > 500 && found > 200 && scans > 200,
        "{gets} {found} {scans}"
    );

    let mut script: String = steps.iter().map(|s| format!("{}\n", s.line)).collect();
    script.push_str("quit\nput after quit\n");
    let r = strata_in(&db, &["--write-buffer-size", "16K", "shell"], &script);
    assert_ok(&r, "shell");
    let mut lines = r.stdout.lines();
    for (i, step) in steps.iter().enumerate() {
        for (j, want) in step.expect.iter().enumerate() {
            let got = lines.next();
            assert_eq!(
                got,
                Some(want.as_str()),
                "step {i} `{}`, answer line {j}",
                step.line
            );
        }
    }
    assert_eq!(lines.next(), None, "nothing after quit");

    // The data is on disk: a one-shot scan agrees with the model.
    let r = strata(&db, &["scan"]);
    assert_eq!(r.lines().len(), model.len());
}

#[test]
fn shell_answers_invalid_lines_with_error_and_continues() {
    let t = tempdir();
    let db = db_dir(&t);
    let script = "\
put a 1

   # a comment
bogus
put a
put a 1 2
get 0xabc
get 0xzz
scan a
scan a b c
scan 0x1 -
merge a 1
flush now
get a
\u{1}\u{2}\u{7f}
put \u{0} \u{0}
get \u{0}
scan - - 5
";
    let mut input = script.as_bytes().to_vec();
    input.extend_from_slice(b"get \xff\xfe\n");
    input.extend_from_slice(b"get a");
    // Drive it with raw bytes (one line is not UTF-8; the last has no newline).
    let mut child = Command::new(BIN)
        .arg("--db")
        .arg(&db)
        .arg("shell")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&input)
        .expect("write");
    let r = finish(child.wait_with_output().expect("wait"));
    // The bad lines are answered and the shell goes on, then exits 1.
    assert_eq!(r.code, 1, "shell: {}", r.stderr);
    let lines = r.lines();
    let expect_prefix = [
        "OK",
        "error:",
        "error:",
        "error:",
        "error:",
        "error:",
        "error:",
        "error:",
        "error:",
        "error:",
        "error:",
        "1",
        "error:",
        "OK",
        "0x00",
        "0x00\t0x00",
        "a\t1",
        "(2 entries)",
        "error:",
        "1",
    ];
    assert_eq!(lines.len(), expect_prefix.len(), "{}", r.stdout);
    for (i, (got, want)) in lines.iter().zip(expect_prefix).enumerate() {
        assert!(
            got.starts_with(want),
            "line {i}: {got:?} does not start with {want:?}"
        );
    }
    assert!(lines[1].contains("unknown command"));
    assert!(lines[2].contains("takes 2 arguments"));
    assert!(lines[5].contains("invalid hex"));
    assert!(lines[9].contains("merge operator"));
    assert!(lines[18].contains("UTF-8"));
}

#[test]
fn help_and_stats_in_shell() {
    let t = tempdir();
    let db = db_dir(&t);
    let r = strata_in(&db, &["shell"], "put a 1\nstats\nhelp\ncheck\n");
    assert_ok(&r, "shell");
    // One failed command makes the whole script fail, after the rest ran.
    let failing = strata_in(&db, &["shell"], "put 0xzz 1\nput b 2\n");
    assert_eq!(failing.code, 1, "{}", failing.stdout);
    assert_eq!(failing.lines()[1], "OK");
    assert!(r.stdout.contains("keyspace default"));
    assert!(r.stdout.contains("reopen"));
    assert!(r.stdout.contains("table files OK"));
    let r = strata(&db, &["stats"]);
    assert_ok(&r, "stats");
    assert!(r.stdout.contains("keyspace default") && r.stdout.contains("L0"));
}

fn sst_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    v.sort();
    v
}

fn flip_byte(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).expect("read");
    bytes[at] ^= 0x5a;
    std::fs::write(path, bytes).expect("write");
}

#[test]
fn check_passes_then_finds_a_flipped_byte() {
    let t = tempdir();
    let db = db_dir(&t);
    let mut input = String::new();
    for i in 0..3000 {
        input.push_str(&format!("key{i:06}\tvalue-{i}-{}\n", "x".repeat(40)));
    }
    assert_ok(&strata_in(&db, &["load"], &input), "load");
    assert_ok(&strata(&db, &["flush"]), "flush");

    let r = strata(&db, &["check"]);
    assert_ok(&r, "check healthy");
    let files = sst_files(&db);
    assert!(!files.is_empty());
    assert!(
        r.stdout
            .contains(&format!("all {} table files OK", files.len())),
        "{}",
        r.stdout
    );

    let victim = files
        .iter()
        .max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .expect("a table file");
    let len = std::fs::metadata(victim).expect("metadata").len() as usize;
    assert!(
        len > 10_000,
        "table file too small to hit a data block: {len}"
    );
    flip_byte(victim, len / 2);

    let r = strata(&db, &["check"]);
    assert_eq!(
        r.code, 1,
        "check after corruption\n{}\n{}",
        r.stdout, r.stderr
    );
    let name = victim
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let line = r
        .lines()
        .into_iter()
        .find(|l| l.starts_with("corrupt:"))
        .unwrap_or_else(|| panic!("no corrupt line in {:?}", r.stdout))
        .to_string();
    assert!(line.contains(&name), "{line}");
    assert!(line.contains("offset"), "{line}");

    // Reads of the damaged block answer `error:`; the shell goes on.
    let r = strata_in(&db, &["shell"], "scan\nput z 1\nget z\ncheck\n");
    assert_eq!(r.code, 1, "shell on a corrupt db: {}", r.stderr);
    let lines = r.lines();
    assert!(lines[0].starts_with("error: corruption"), "{}", r.stdout);
    assert_eq!(&lines[1..3], ["OK", "1"]);
    assert!(lines[3].starts_with("corrupt:"), "{}", r.stdout);
}

#[test]
fn salvage_moves_a_corrupt_table_aside_and_reports_its_keys() {
    let t = tempdir();
    let db = db_dir(&t);
    // Two tables with disjoint key ranges: "a..." then "b...".
    for prefix in ["a", "b"] {
        let mut input = String::new();
        for i in 0..2000 {
            input.push_str(&format!("{prefix}{i:06}\tvalue-{i}-{}\n", "x".repeat(40)));
        }
        assert_ok(&strata_in(&db, &["load"], &input), "load");
        assert_ok(&strata(&db, &["flush"]), "flush");
    }
    let files = sst_files(&db);
    assert_eq!(files.len(), 2, "{files:?}");
    // The table holding the "a" keys was written first (lower number).
    let victim = &files[0];
    let len = std::fs::metadata(victim).expect("metadata").len() as usize;
    flip_byte(victim, len / 3);
    let name = victim
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();

    // Without --salvage the damage is an error at read time.
    let r = strata(&db, &["check"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);

    let r = strata(&db, &["--salvage", "get", "b000007"]);
    assert_ok(&r, "get with --salvage");
    assert!(r.stdout.starts_with("value-7-"), "{}", r.stdout);
    let line = r
        .stderr
        .lines()
        .find(|l| l.starts_with("salvage:"))
        .unwrap_or_else(|| panic!("no salvage line in {:?}", r.stderr))
        .to_string();
    assert!(line.contains(&name), "{line}");
    assert!(line.contains("[a000000, a001999]"), "{line}");
    assert!(db.join("lost").join(&name).exists());
    assert!(!victim.exists());

    // What is left is healthy, readable and writable; the lost keys are gone.
    let r = strata(&db, &["check"]);
    assert_ok(&r, "check after salvage");
    assert!(r.stdout.contains("all 1 table files OK"), "{}", r.stdout);
    let r = strata(&db, &["get", "a000007"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert_ok(&strata(&db, &["put", "a000007", "again"]), "put");
    assert_eq!(strata(&db, &["get", "a000007"]).stdout.trim(), "again");
    // A second salvage open finds nothing more to report.
    let r = strata(&db, &["--salvage", "check"]);
    assert_ok(&r, "second salvage");
    assert!(!r.stderr.contains("salvage:"), "{}", r.stderr);
}

#[test]
fn check_reports_a_database_that_does_not_open() {
    let t = tempdir();
    let db = db_dir(&t);
    assert_ok(&strata(&db, &["put", "a", "1"]), "put");
    assert_ok(&strata(&db, &["flush"]), "flush");
    let manifest = std::fs::read_dir(&db)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("MANIFEST"))
        })
        .expect("manifest");
    let len = std::fs::metadata(&manifest).expect("metadata").len() as usize;
    flip_byte(&manifest, len / 2);
    let r = strata(&db, &["check"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("cannot open database"), "{}", r.stdout);
    assert!(r.stdout.contains("corruption"), "{}", r.stdout);

    // And a missing database is reported, not created.
    let missing = t.path().join("missing");
    let r = strata(&missing, &["check"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("no database at"), "{}", r.stderr);
    assert!(!missing.exists());
}

#[test]
fn no_create_on_a_missing_path_fails_clearly() {
    let t = tempdir();
    let missing = t.path().join("nothing-here");
    let r = strata(&missing, &["--no-create", "get", "a"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("no database at") && r.stderr.contains("--no-create"),
        "{}",
        r.stderr
    );
    assert!(
        !missing.exists(),
        "--no-create must not create the directory"
    );
    // Without the flag the database is created.
    assert_ok(&strata(&missing, &["put", "a", "1"]), "put");
    assert_ok(&strata(&missing, &["--no-create", "get", "a"]), "get");
}

fn read_line(r: &mut impl BufRead) -> String {
    let mut s = String::new();
    r.read_line(&mut s).expect("read_line");
    s.trim_end().to_string()
}

#[test]
fn a_second_process_gets_a_locked_error() {
    let t = tempdir();
    let db = db_dir(&t);
    let mut shell = spawn_shell(&db);
    let mut stdin = shell.0.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(shell.0.stdout.take().expect("stdout"));
    writeln!(stdin, "put a 1").expect("write");
    stdin.flush().expect("flush");
    assert_eq!(read_line(&mut stdout), "OK");

    for args in [&["put", "b", "2"][..], &["shell"], &["flush"]] {
        let r = strata(&db, args);
        assert_eq!(r.code, 1, "{args:?}");
        assert!(r.stderr.contains("locked"), "{args:?}: {}", r.stderr);
    }
    // Commands that only read open read-only, beside the writer.
    let r = strata(&db, &["get", "a"]);
    assert_ok(&r, "get beside a writer");
    assert_eq!(r.stdout, "1\n");
    assert_ok(&strata(&db, &["check"]), "check beside a writer");

    // The shell is unaffected and lets go of the lock when it ends.
    writeln!(stdin, "get a").expect("write");
    stdin.flush().expect("flush");
    assert_eq!(read_line(&mut stdout), "1");
    drop(stdin);
    let status = shell.0.wait().expect("wait");
    assert!(status.success());
    assert_eq!(strata(&db, &["get", "a"]).stdout, "1\n");
}
