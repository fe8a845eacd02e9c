//! End-to-end tests of `strata index ...` and `strata join ...`.

mod common;
use common::{Run, assert_ok, db_dir, strata, strata_in, tempdir};

fn setup(db: &std::path::Path) {
    for (args, stdin) in [
        (
            vec![
                "table",
                "create",
                "users",
                "--columns",
                "id:i64, city:utf8?, age:i32?",
                "--key",
                "id",
            ],
            "",
        ),
        (
            vec!["table", "import", "users", "-"],
            "id,city,age\n1,paris,30\n2,rome,40\n3,paris,50\n4,,60\n",
        ),
        (
            vec![
                "table",
                "create",
                "orders",
                "--columns",
                "oid:i64, uid:i64?, amount:f64?",
                "--key",
                "oid",
            ],
            "",
        ),
        (
            vec!["table", "import", "orders", "-"],
            "oid,uid,amount\n10,1,5.5\n11,1,7\n12,3,1\n13,9,2\n14,,3\n",
        ),
    ] {
        let r = strata_in(db, &args, stdin);
        assert_ok(&r, &args.join(" "));
    }
}

fn fails(r: &Run, needle: &str) {
    assert_eq!(r.code, 2, "stdout {} stderr {}", r.stdout, r.stderr);
    assert!(r.stderr.contains(needle), "{:?} lacks {needle:?}", r.stderr);
    assert!(!r.stderr.contains("panicked"));
}

#[test]
fn indexes_are_created_described_looked_up_and_dropped() {
    let t = tempdir();
    let db = db_dir(&t);
    setup(&db);
    let r = strata(
        &db,
        &[
            "index",
            "create",
            "users",
            "by_city",
            "--column",
            "city",
            "--covering",
            "age",
        ],
    );
    assert_ok(&r, "create");
    assert!(r.stdout.contains("2 values, 3 entries"), "{}", r.stdout);
    let r = strata(&db, &["index", "describe", "users"]);
    assert_ok(&r, "describe");
    assert!(
        r.stdout.contains("by_city") && r.stdout.contains("ready"),
        "{}",
        r.stdout
    );
    let r = strata(&db, &["table", "describe", "users"]);
    assert!(
        r.stdout
            .contains("index by_city on city: eager, synchronous, covering age"),
        "{}",
        r.stdout
    );
    let r = strata(
        &db,
        &["index", "lookup", "users", "by_city", "--eq", "paris"],
    );
    assert_ok(&r, "lookup");
    let ids: Vec<&str> = r.lines()[2..]
        .iter()
        .map(|l| l.split('|').next().unwrap_or("").trim())
        .collect();
    assert_eq!(ids, ["1", "3"]);
    fails(
        &strata(&db, &["index", "create", "users", "x", "--column", "nope"]),
        "nope",
    );
    fails(
        &strata(
            &db,
            &[
                "index", "create", "users", "x", "--column", "city", "--kind", "btree",
            ],
        ),
        "btree",
    );
    fails(
        &strata(&db, &["index", "lookup", "users", "by_city"]),
        "--eq",
    );
    assert_ok(&strata(&db, &["index", "drop", "users", "by_city"]), "drop");
    let r = strata(&db, &["index", "describe", "users"]);
    assert!(!r.stdout.contains("by_city"), "{}", r.stdout);
}

#[test]
fn joins_run_by_every_method_agree_and_explain_lists_them() {
    let t = tempdir();
    let db = db_dir(&t);
    setup(&db);
    assert_ok(
        &strata(
            &db,
            &[
                "index",
                "create",
                "orders",
                "by_uid",
                "--column",
                "uid",
                "--kind",
                "lazy",
                "--consistency",
                "validation",
            ],
        ),
        "index",
    );
    let mut checksums = Vec::new();
    for method in [
        "auto",
        "inlj-pk",
        "inlj-index-left",
        "sort-merge",
        "sort-merge-index",
        "grace-hash",
        "hybrid-hash",
    ] {
        let r = strata(
            &db,
            &[
                "join",
                "orders.uid",
                "users.id",
                "--method",
                method,
                "--count",
            ],
        );
        assert_ok(&r, method);
        assert!(r.stdout.starts_with("rows\t3\n"), "{method}: {}", r.stdout);
        // The index a method read is named; one read without says none.
        assert_eq!(
            r.stdout.contains("left_index\tby_uid\n"),
            ["inlj-index-left", "sort-merge-index"].contains(&method),
            "{method}: {}",
            r.stdout
        );
        checksums.push(r.lines()[1].to_string());
    }
    assert!(checksums.windows(2).all(|w| w[0] == w[1]), "{checksums:?}");
    let r = strata(&db, &["join", "orders.uid", "users.id", "--explain"]);
    assert_ok(&r, "explain");
    assert!(
        r.stdout.contains("chosen:") && r.stdout.contains("grace-hash"),
        "{}",
        r.stdout
    );
    let r = strata(
        &db,
        &["join", "orders.uid", "users.id", "--columns", "oid,city"],
    );
    assert_ok(&r, "rows");
    assert_eq!(
        r.lines()[0].split('|').map(str::trim).collect::<Vec<_>>(),
        ["orders.oid", "users.city"]
    );
    assert_eq!(r.lines().len(), 5);
    fails(
        &strata(&db, &["join", "orders", "users.id"]),
        "TABLE.COLUMN",
    );
    fails(
        &strata(
            &db,
            &["join", "orders.uid", "users.id", "--method", "inlj-pk-left"],
        ),
        "primary key",
    );
    fails(
        &strata(&db, &["join", "orders.uid", "users.city"]),
        "different types",
    );
    fails(
        &strata(&db, &["join", "orders.uid", "users.id", "--memory", "1K"]),
        "at least",
    );
}

#[test]
fn a_join_whose_budget_cannot_hold_one_values_rows_is_refused() {
    let t = tempdir();
    let db = db_dir(&t);
    let create = |name: &str, cols: &str| {
        let args = ["table", "create", name, "--columns", cols, "--key", "id"];
        assert_ok(&strata(&db, &args), name);
    };
    create("big", "id:i64, k:i64?, pad:utf8?");
    create("small", "id:i64, k:i64?");
    // One value on 3,000 rows of 200 bytes: more than the least budget,
    // 256 KiB, holds at once.
    let pad = "x".repeat(200);
    let mut csv = String::from("id,k,pad\n");
    for id in 0..3000 {
        csv.push_str(&format!("{id},1,{pad}\n"));
    }
    assert_ok(
        &strata_in(&db, &["table", "import", "big", "-"], &csv),
        "import",
    );
    assert_ok(
        &strata_in(&db, &["table", "import", "small", "-"], "id,k\n1,1\n"),
        "import",
    );
    assert_ok(
        &strata(&db, &["index", "create", "big", "by_k", "--column", "k"]),
        "index",
    );
    let join = |memory: &str, count: bool| {
        let mut args = vec![
            "join",
            "small.k",
            "big.k",
            "--method",
            "inlj-index",
            "--memory",
            memory,
        ];
        if count {
            args.push("--count");
        }
        strata(&db, &args)
    };
    let refusal = "cannot hold the inner rows of one value";
    fails(&join("256KiB", true), refusal);
    // Streamed to a table of rows, the refusal arrives with the batches.
    fails(&join("256KiB", false), refusal);
    let r = join("64MiB", true);
    assert_ok(&r, "a budget that holds the value");
    assert!(r.stdout.contains("rows\t3000"), "{}", r.stdout);
}
