//! A table's files damaged one byte at a time: a database holding a table
//! split into column groups below level 0, a dictionary-encoded text
//! column and an index of each kind is closed, one byte of one of its
//! files is flipped, and the copy is opened and read whole (scans, gets,
//! every index, a join, verification). Each read must either give exactly
//! the rows the undamaged database gives or fail with an error; a panic or
//! a wrong row fails the case. Every file kind is hit at its first and last
//! bytes and in its middle (`TABLE_DAMAGE_FULL=1`: at fifteen points spread
//! through it, where headers, footers, properties, dictionaries, indexes
//! and data blocks lie; the suite runs three per file to stay quick).

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use arrow_array::{Array, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::index::{Consistency, IndexKind, IndexQuery, IndexSpec};
use strata::table::{Column, ColumnType, ScanOptions, Schema, TableOptions, Value};
use strata::{Db, Options};

const ROWS: i64 = 1500;

fn schema() -> Schema {
    Schema::new(
        vec![
            Column::new("id", ColumnType::Int64),
            Column::nullable("city", ColumnType::Utf8),
            Column::nullable("age", ColumnType::Int32),
            Column::nullable("note", ColumnType::Utf8),
            Column::nullable("score", ColumnType::Float64),
        ],
        &["id"],
    )
    .expect("schema")
}

fn options() -> TableOptions {
    TableOptions {
        layout: "row-then-column:1".into(),
        num_levels: 4,
        size_ratio: 2,
        level1_max_bytes: 16 << 10,
        write_buffer_size: 16 << 10,
        target_file_size: 8 << 10,
        block_size: 1024,
        level0_compaction_trigger: 2,
        ..Default::default()
    }
}

/// What a read of the whole database gave, or the first error's text.
type Outcome = Result<Reads, String>;

#[derive(Debug, PartialEq)]
struct Reads {
    scan: Vec<String>,
    gets: Vec<String>,
    lookups: Vec<Vec<String>>,
    join_rows: usize,
}

fn rows_of(b: &RecordBatch, out: &mut Vec<String>) {
    for r in 0..b.num_rows() {
        let mut line = String::new();
        for c in 0..b.num_columns() {
            let a = b.column(c);
            if a.is_null(r) {
                line.push_str("null,");
                continue;
            }
            let any = a.as_any();
            let cell = if let Some(x) = any.downcast_ref::<Int64Array>() {
                x.value(r).to_string()
            } else if let Some(x) = any.downcast_ref::<Int32Array>() {
                x.value(r).to_string()
            } else if let Some(x) = any.downcast_ref::<Float64Array>() {
                format!("{:?}", x.value(r).to_bits())
            } else if let Some(x) = any.downcast_ref::<StringArray>() {
                x.value(r).to_string()
            } else {
                panic!("column type {}", a.data_type())
            };
            line.push_str(&cell);
            line.push(',');
        }
        out.push(line);
    }
}

fn specs() -> Vec<IndexSpec> {
    vec![
        IndexSpec::new("eager_city", "city")
            .kind(IndexKind::Eager)
            .consistency(Consistency::Synchronous)
            .covering(&["age"]),
        IndexSpec::new("lazy_age", "age")
            .kind(IndexKind::Lazy)
            .consistency(Consistency::Validation),
        IndexSpec::new("comp_city", "city")
            .kind(IndexKind::Composite)
            .consistency(Consistency::Validation)
            .covering(&["score"]),
    ]
}

/// The fixture: inserts, partial updates and deletes over several flushes
/// and compactions, the indexes built part way, and a join side table.
fn build(dir: &Path) {
    let db = Db::open(dir, Options::default()).expect("open");
    let t = db.create_table("t", schema(), options()).expect("create");
    let side = db
        .create_table(
            "side",
            Schema::new(
                vec![
                    Column::new("k", ColumnType::Int32),
                    Column::nullable("w", ColumnType::Int32),
                ],
                &["k"],
            )
            .expect("side schema"),
            TableOptions::default(),
        )
        .expect("create side");
    for k in 0..60 {
        side.upsert_row(&[Value::Int32(k), Value::Int32(k * 7)])
            .expect("side row");
    }
    let mut rng = StdRng::seed_from_u64(20261201);
    for round in 0..3 {
        if round == 1 {
            for s in specs() {
                t.create_index(s).expect("index");
            }
        }
        for id in 0..ROWS {
            if round > 0 && !rng.random_bool(0.3) {
                continue;
            }
            if round > 0 && rng.random_bool(0.1) {
                t.delete_row(&[Value::Int64(id)]).expect("delete");
                continue;
            }
            if round > 0 && rng.random_bool(0.5) {
                t.update_row(
                    &[Value::Int64(id)],
                    &[("age", Value::Int32(rng.random_range(0..60)))],
                )
                .expect("update");
                continue;
            }
            let city = if rng.random_bool(0.05) {
                Value::Null
            } else {
                Value::Utf8(format!("city-{:02}", rng.random_range(0..20)))
            };
            t.upsert_row(&[
                Value::Int64(id),
                city,
                Value::Int32(rng.random_range(0..60)),
                Value::Utf8(format!("note {id} {round} {}", rng.random::<u32>())),
                Value::Float64(rng.random::<f64>() - 0.5),
            ])
            .expect("upsert");
        }
        t.flush().expect("flush");
        if round < 2 {
            t.compact().expect("compact");
        }
    }
    // Writes left in the log for the next open to replay.
    for id in 0..40 {
        t.update_row(&[Value::Int64(id * 31)], &[("age", Value::Int32(61))])
            .expect("tail update");
    }
    db.close().expect("close");
}

fn read_all(dir: &Path) -> Outcome {
    let e = |e: strata::Error| e.to_string();
    let db = Db::open(dir, Options::default()).map_err(e)?;
    let t = db.table("t").map_err(e)?;
    let mut scan = Vec::new();
    for b in t.scan(ScanOptions::default()).map_err(e)? {
        rows_of(&b.map_err(e)?, &mut scan);
    }
    let mut gets = Vec::new();
    for id in (0..ROWS).step_by(7) {
        let row = t
            .get(&[Value::Int64(id)], Some(&["note", "age"]))
            .map_err(e)?;
        gets.push(format!("{row:?}"));
    }
    let mut lookups = Vec::new();
    for (name, q) in [
        ("eager_city", IndexQuery::eq("city-03")),
        ("comp_city", IndexQuery::eq("city-11")),
        ("lazy_age", IndexQuery::eq(Value::Int32(61))),
        ("lazy_age", IndexQuery::eq(Value::Int32(17))),
    ] {
        let b = t.lookup(name, q, None).map_err(e)?;
        let mut out = Vec::new();
        rows_of(&b, &mut out);
        lookups.push(out);
    }
    let side = db.table("side").map_err(e)?;
    let mut join_rows = 0;
    for b in strata::join::Join::new(&t, "age", &side, "k")
        .run()
        .map_err(e)?
    {
        join_rows += b.map_err(e)?.num_rows();
    }
    let damaged = db.verify();
    if let Some((path, err)) = damaged.first() {
        return Err(format!("verify: {}: {err}", path.display()));
    }
    drop((t, side));
    db.close().map_err(e)?;
    Ok(Reads {
        scan,
        gets,
        lookups,
        join_rows,
    })
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for e in fs::read_dir(from).expect("read dir") {
        let e = e.expect("entry");
        let dest = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            fs::copy(e.path(), dest).expect("copy");
        }
    }
}

#[test]
fn one_flipped_byte_in_any_file_of_a_table_is_an_error_or_changes_nothing() {
    let root = tempfile::tempdir().expect("dir");
    let clean = root.path().join("clean");
    build(&clean);
    let pristine = root.path().join("pristine");
    copy_dir(&clean, &pristine);
    let want = read_all(&clean).expect("the undamaged database reads");
    // Reading the clean copy may have compacted; damage the pristine one.
    let mut files: Vec<_> = fs::read_dir(&pristine)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "LOCK"))
        .collect();
    files.sort();
    let full = std::env::var_os("TABLE_DAMAGE_FULL").is_some();
    let mut failures = Vec::new();
    let mut cases = 0;
    let mut errors = 0;
    for (n, file) in files.iter().enumerate() {
        let bytes = fs::read(file).expect("read");
        let len = bytes.len();
        if len == 0 {
            continue;
        }
        let spread = if full { 12 } else { 2 };
        let mut points: Vec<usize> = (0..spread).map(|i| i * len / spread).collect();
        let tail: &[usize] = if full { &[1, 4, 8] } else { &[1] };
        points.extend(tail.iter().filter(|&&b| b <= len).map(|b| len - b));
        points.sort_unstable();
        points.dedup();
        for &at in &points {
            cases += 1;
            let case = root.path().join(format!("case-{n}-{at}"));
            copy_dir(&pristine, &case);
            let target = case.join(file.file_name().expect("name"));
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x5a;
            fs::write(&target, &damaged).expect("write");
            let what = format!("{} byte {at} of {len}", target.display());
            match catch_unwind(AssertUnwindSafe(|| read_all(&case))) {
                Err(_) => failures.push(format!("{what}: panicked")),
                Ok(Err(_)) => errors += 1,
                Ok(Ok(got)) if got != want => failures.push(format!("{what}: wrong reads")),
                Ok(Ok(_)) => {}
            }
            let _ = fs::remove_dir_all(&case);
        }
    }
    assert!(files.len() > 10, "only {} files", files.len());
    assert!(errors > 0, "no damage was noticed in {cases} cases");
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
