//! `strata sql`: statements from -c and from standard input.

mod common;

use common::{strata, strata_in};

#[test]
fn statements_from_c_and_stdin() {
    let dir = tempfile::tempdir().expect("dir");
    let run = strata(
        dir.path(),
        &[
            "sql",
            "-c",
            "CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT); \
             INSERT INTO t VALUES (1, 'ada'), (2, 'grace'); \
             SELECT name FROM t WHERE id = 2;",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("CREATE TABLE"), "{}", run.stdout);
    assert!(run.stdout.contains("INSERT 0 2"), "{}", run.stdout);
    assert!(run.stdout.contains("| grace |"), "{}", run.stdout);
    assert!(run.stdout.contains("(1 row)"), "{}", run.stdout);

    // A script on standard input, with \timing; the rows persist.
    let run = strata_in(
        dir.path(),
        &["sql"],
        "\\timing\nUPDATE t SET name = 'Ada'\n  WHERE id = 1;\nSELECT count(*) AS n FROM t;\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("UPDATE 1"), "{}", run.stdout);
    assert!(run.stdout.contains("Time: "), "{}", run.stdout);
    assert!(run.stdout.contains("| 2 |"), "{}", run.stdout);
}

#[test]
fn a_failing_statement_exits_1_with_the_engines_message() {
    let dir = tempfile::tempdir().expect("dir");
    let run = strata(
        dir.path(),
        &[
            "sql",
            "-c",
            "CREATE TABLE t (id INT PRIMARY KEY, v INT); INSERT INTO t VALUES (1, 1); \
             INSERT INTO t VALUES (1, 2);",
        ],
    );
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("already"), "{}", run.stderr);
    let run = strata(dir.path(), &["sql", "-c", "SELECT * FROM missing"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("missing"), "{}", run.stderr);
    let run = strata(dir.path(), &["sql", "-c", "CREATE TABLE x (a INT)"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("PRIMARY KEY"), "{}", run.stderr);
}

/// Meta-commands in a script run where they stand: `\q` ends it (what
/// follows does not run), `\d NAME` describes, and an unknown one fails.
#[test]
fn meta_commands_in_a_script_run_in_order() {
    let dir = tempfile::tempdir().expect("dir");
    let run = strata_in(
        dir.path(),
        &["sql"],
        "CREATE TABLE t (id BIGINT PRIMARY KEY, v INT);\n\\d t\n\\q\nDROP TABLE t;\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("Table t"), "{}", run.stdout);
    let run = strata(dir.path(), &["sql", "-c", "\\d"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("t  (about"),
        "the table is still there: {}",
        run.stdout
    );
    let run = strata(dir.path(), &["sql", "-c", "\\d nothing"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("nothing"), "{}", run.stderr);
    let run = strata_in(dir.path(), &["sql"], "\\nope\nDROP TABLE t;\n");
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("unknown command"), "{}", run.stderr);
    let run = strata(dir.path(), &["sql", "-c", "\\d"]);
    assert!(run.stdout.contains("t  (about"), "{}", run.stdout);
}

/// Text cells are printed with their control characters escaped (a newline
/// or a terminal escape sequence in a value broke the table or reached the
/// terminal), and an output that cannot be written fails the run with exit
/// code 1 instead of a panic (`\d`) or a silent exit 0 (`SELECT`).
#[test]
fn control_characters_are_escaped_and_output_errors_fail_the_run() {
    let dir = tempfile::tempdir().expect("dir");
    let run = strata(
        dir.path(),
        &[
            "sql",
            "-c",
            "CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT); \
             INSERT INTO t VALUES (1, concat('two', chr(10), 'lines', chr(27), '[2J'));
             SELECT name FROM t;",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains('\u{1b}'), "{:?}", run.stdout);
    assert!(
        run.stdout.contains("two\\nlines\\u{1b}[2J"),
        "{:?}",
        run.stdout
    );
    if !std::path::Path::new("/dev/full").exists() {
        return;
    }
    for script in ["\\d", "SELECT name FROM t;"] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let out = std::process::Command::new(common::BIN)
            .arg("--db")
            .arg(dir.path())
            .args(["sql", "-c", script])
            .stdout(full)
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{script}: {stderr}");
        assert!(stderr.contains("writing the output"), "{script}: {stderr}");
        assert!(!stderr.contains("panicked"), "{script}: {stderr}");
    }
}
