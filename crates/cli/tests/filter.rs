//! `strata filter` and `--value-dictionary` end to end: filters give the
//! same matches on dictionary-encoded and plain databases, before and after
//! a flush, and refuse what they cannot run.

mod common;
use common::{assert_ok, db_dir, strata, strata_in, tempdir};

fn load(db: &std::path::Path, flags: &[&str]) {
    let input: String = (0..60)
        .map(|i| format!("k{i:03}\tshade-{}\n", i % 4))
        .collect();
    let mut args = flags.to_vec();
    args.push("load");
    assert_ok(&strata_in(db, &args, &input), "load");
}

#[test]
fn filters_match_alike_with_and_without_dictionaries() {
    let t = tempdir();
    let (encoded, plain) = (db_dir(&t).join("encoded"), db_dir(&t).join("plain"));
    load(&encoded, &["--value-dictionary"]);
    load(&plain, &[]);
    let queries: [&[&str]; 5] = [
        &["filter", "--eq", "shade-1"],
        &[
            "filter", "--range", "shade-1", "shade-3", "--from", "k010", "--to", "k030",
        ],
        &["filter", "--prefix", "shade-"],
        &["filter", "--in", "shade-0", "--in", "shade-3", "--count"],
        &["filter", "--eq", "nothing"],
    ];
    let run_all = |db: &std::path::Path| -> Vec<String> {
        queries
            .iter()
            .map(|q| {
                let r = strata(db, q);
                assert_ok(&r, &q.join(" "));
                r.stdout
            })
            .collect()
    };
    let before = run_all(&encoded);
    assert_eq!(before, run_all(&plain));
    assert_eq!(before[0].lines().count(), 15);
    assert!(before[0].lines().all(|l| l.ends_with("\tshade-1")));
    assert_eq!(before[1].lines().count(), 10, "{}", before[1]);
    assert_eq!(before[3], "30\n");
    assert_eq!(before[4], "");
    // After a flush the encoded database's file has a dictionary: same
    // answers, now computed on codes.
    assert_ok(&strata(&encoded, &["--value-dictionary", "flush"]), "flush");
    assert_eq!(run_all(&encoded), before);
    let stats = strata(&encoded, &["stats"]);
    assert!(
        stats
            .stdout
            .contains("values dictionary-encoded in 1 files"),
        "{}",
        stats.stdout
    );
}

#[test]
fn filter_errors_are_clear() {
    let t = tempdir();
    let db = db_dir(&t);
    load(&db, &[]);
    let r = strata(&db, &["filter"]);
    assert_eq!(r.code, 2, "no predicate is a usage error");
    assert!(
        r.stderr.contains("--eq, --range, --prefix or --in"),
        "{}",
        r.stderr
    );
    let r = strata(&db, &["filter", "--eq", "a", "--prefix", "b"]);
    assert_eq!(r.code, 2, "two predicates");
    let r = strata(&db, &["filter", "--keyspace", "nope", "--eq", "a"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("no keyspace \"nope\""), "{}", r.stderr);
    let r = strata(
        &db,
        &["--value-dictionary", "--max-distinct-ratio", "2", "stats"],
    );
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("between 0 and 1"), "{}", r.stderr);
}
