//! Tables (issue 20): schemas, writes, projected gets and scans, layouts
//! changing as data moves down, partial updates, snapshots, restarts.
//!
//! The model test runs the same random operations on a table under each
//! layout and on a `BTreeMap` of rows, with flushes, compactions and
//! reopens between them, and compares every projected get and scan: a
//! layout must change nothing a reader sees.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, Int32Array, Int64Array, RecordBatch, StringArray};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::table::{
    CmpOp, Column, ColumnType, Predicate, ScanOptions, Schema, TableLayout, TableOptions, Value,
};
use strata::{Db, Error, Options};

const COLS: usize = 6;

fn schema() -> Schema {
    let mut cols = vec![Column::new("id", ColumnType::Int64)];
    for c in 0..COLS - 1 {
        cols.push(Column::nullable(format!("c{c}"), ColumnType::Int32));
    }
    cols.push(Column::nullable("s", ColumnType::Utf8));
    Schema::new(cols, &["id"]).expect("schema")
}

/// A row of the model: the value columns (c0..c4 as i32, s as text).
type Row = Vec<Value>;

fn small(layout: &str) -> TableOptions {
    TableOptions {
        layout: layout.into(),
        num_levels: 5,
        size_ratio: 2,
        level1_max_bytes: 16 << 10,
        write_buffer_size: 16 << 10,
        target_file_size: 8 << 10,
        block_size: 1024,
        level0_compaction_trigger: 2,
        ..Default::default()
    }
}

fn opts() -> Options {
    Options::default()
}

/// A database in `dir` with a table "t" of [`schema`] under [`small`]
/// options with `layout`.
fn table_in(dir: &Path, layout: &str) -> (Db, strata::table::Table) {
    let db = Db::open(dir, opts()).expect("open");
    let t = db
        .create_table("t", schema(), small(layout))
        .expect("create");
    (db, t)
}

/// Column `i` of `b` as an array of type `T`; `what` names it in the
/// failure.
fn column_as<'a, T: 'static>(b: &'a RecordBatch, i: usize, what: &str) -> &'a T {
    b.column(i)
        .as_any()
        .downcast_ref::<T>()
        .unwrap_or_else(|| panic!("{what}: column {i} has another type"))
}

fn random_row(rng: &mut StdRng) -> Row {
    let mut r: Row = (0..COLS - 1)
        .map(|_| {
            if rng.random_bool(0.1) {
                Value::Null
            } else {
                Value::Int32(rng.random_range(-1000..1000))
            }
        })
        .collect();
    let len = rng.random_range(0..24);
    r.push(if rng.random_bool(0.1) {
        Value::Null
    } else {
        Value::Utf8(
            (0..len)
                .map(|_| rng.random_range(b'a'..=b'z') as char)
                .collect(),
        )
    });
    r
}

fn full(key: i64, row: &Row) -> Vec<Value> {
    let mut v = vec![Value::Int64(key)];
    v.extend(row.iter().cloned());
    v
}

struct Harness {
    model: BTreeMap<i64, Row>,
    rng: StdRng,
}

impl Harness {
    fn step(&mut self, t: &strata::table::Table) {
        let key = self.rng.random_range(0..400i64);
        match self.rng.random_range(0..10) {
            0..=4 => {
                let row = random_row(&mut self.rng);
                t.upsert_row(&full(key, &row)).expect("upsert");
                self.model.insert(key, row);
            }
            5..=7 => {
                // A partial update of one or two columns.
                let c = self.rng.random_range(0..COLS - 1);
                let v = Value::Int32(self.rng.random_range(-5..5));
                t.update_row(&[Value::Int64(key)], &[(&format!("c{c}"), v.clone())])
                    .expect("update");
                if let Some(r) = self.model.get_mut(&key) {
                    r[c] = v;
                }
                if self.rng.random_bool(0.3) {
                    let s = Value::Utf8(format!("u{key}"));
                    t.update_row(&[Value::Int64(key)], &[("s", s.clone())])
                        .expect("update s");
                    if let Some(r) = self.model.get_mut(&key) {
                        r[COLS - 1] = s;
                    }
                }
            }
            _ => {
                t.delete_row(&[Value::Int64(key)]).expect("delete");
                self.model.remove(&key);
            }
        }
    }
}

/// Every projected get and a few scans agree with the model.
fn check(t: &strata::table::Table, model: &BTreeMap<i64, Row>, rng: &mut StdRng) {
    let names = ["c0", "c1", "c2", "c3", "c4", "s"];
    for key in 0..400i64 {
        let mut pick: Vec<usize> = (0..COLS).filter(|_| rng.random_bool(0.4)).collect();
        if pick.is_empty() {
            pick.push(rng.random_range(0..COLS));
        }
        let cols: Vec<&str> = pick.iter().map(|&i| names[i]).collect();
        let got = t.get(&[Value::Int64(key)], Some(&cols)).expect("get");
        let want = model
            .get(&key)
            .map(|r| pick.iter().map(|&i| r[i].clone()).collect::<Vec<_>>());
        assert_eq!(got, want, "key {key}, columns {cols:?}");
    }
    // A whole scan, projected.
    let opts = ScanOptions::default().columns(&["id", "c2", "s"]);
    let want: Vec<(i64, Row)> = model
        .iter()
        .map(|(k, r)| (*k, vec![r[2].clone(), r[COLS - 1].clone()]))
        .collect();
    assert_eq!(scan_values(t, opts.clone()), want, "whole scan");
    // The same scan in parts on threads: the same rows, each part's in key
    // order (so sorting the concatenation restores the whole order).
    let mut got = scan_values(t, opts.threads(3));
    got.sort_by_key(|r| r.0);
    assert_eq!(got, want, "whole scan in parts");
    // A range scan with a predicate.
    let pred = Predicate::cmp("c1", CmpOp::Gt, 100).and(Predicate::IsNotNull("s".into()));
    let count: usize = t
        .scan(
            ScanOptions::default()
                .range(vec![Value::Int64(50)], vec![Value::Int64(300)])
                .filter(pred),
        )
        .expect("scan")
        .map(|b| b.expect("batch").num_rows())
        .sum();
    let want = model
        .range(50..300)
        .filter(|(_, r)| matches!(r[1], Value::Int32(x) if x > 100) && !r[COLS - 1].is_null())
        .count();
    assert_eq!(count, want, "filtered range scan");
    let parts: usize = t
        .scan(
            ScanOptions::default()
                .range(vec![Value::Int64(50)], vec![Value::Int64(300)])
                .filter(Predicate::cmp("c1", CmpOp::Gt, 100).and(Predicate::IsNotNull("s".into())))
                .threads(2),
        )
        .expect("scan")
        .map(|b| b.expect("batch").num_rows())
        .sum();
    assert_eq!(parts, want, "filtered range scan in parts");
    // Random predicates (AND, OR, NOT, IS NULL, comparisons of key, integer
    // and text columns) against the model's three-valued evaluation.
    for _ in 0..12 {
        let p = random_predicate(rng, 3);
        let mut got = Vec::new();
        for b in t
            .scan(ScanOptions::default().columns(&["id"]).filter(p.clone()))
            .expect("scan")
        {
            let b = b.expect("batch");
            let ids = column_as::<Int64Array>(&b, 0, "ids");
            got.extend(ids.values().iter().copied());
        }
        let want: Vec<i64> = model
            .iter()
            .filter(|(k, r)| model_eval(&p, **k, r) == Some(true))
            .map(|(k, _)| *k)
            .collect();
        assert_eq!(got, want, "predicate {p}");
    }
}

fn random_predicate(rng: &mut StdRng, depth: u32) -> Predicate {
    const OPS: [CmpOp; 6] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ];
    let leaf = |rng: &mut StdRng| -> Predicate {
        let op = OPS[rng.random_range(0..OPS.len())];
        match rng.random_range(0..8) {
            0 => Predicate::cmp("id", op, Value::Int64(rng.random_range(0..400))),
            1 => Predicate::cmp(
                "s",
                op,
                Value::Utf8(["", "m", "u2", "zz"][rng.random_range(0..4)].into()),
            ),
            2 => Predicate::IsNull(["c3", "s"][rng.random_range(0..2)].into()),
            3 => Predicate::IsNotNull(["c0", "s"][rng.random_range(0..2)].into()),
            4 => Predicate::StartsWith {
                column: "s".into(),
                prefix: Value::Utf8(["", "m", "u2", "z"][rng.random_range(0..4)].into()),
            },
            5 => Predicate::In {
                column: format!("c{}", rng.random_range(0..COLS - 1)),
                values: (0..rng.random_range(1..4))
                    .map(|_| Value::Int32(rng.random_range(-600..600)))
                    .collect(),
            },
            _ => Predicate::cmp(
                format!("c{}", rng.random_range(0..COLS - 1)),
                op,
                Value::Int32(rng.random_range(-600..600)),
            ),
        }
    };
    if depth == 0 || rng.random_bool(0.4) {
        return leaf(rng);
    }
    match rng.random_range(0..3) {
        0 => Predicate::And((0..2).map(|_| random_predicate(rng, depth - 1)).collect()),
        1 => Predicate::Or((0..2).map(|_| random_predicate(rng, depth - 1)).collect()),
        _ => Predicate::Not(Box::new(random_predicate(rng, depth - 1))),
    }
}

/// SQL's three-valued answer of `p` on a model row (`None`: unknown).
fn model_eval(p: &Predicate, key: i64, row: &Row) -> Option<bool> {
    let column = |name: &str| -> Value {
        match name {
            "id" => Value::Int64(key),
            "s" => row[COLS - 1].clone(),
            c => row[c[1..].parse::<usize>().expect("column")].clone(),
        }
    };
    match p {
        Predicate::Cmp {
            column: c,
            op,
            value,
        } => {
            let o = match (column(c), value) {
                (Value::Null, _) => return None,
                (Value::Int64(a), Value::Int64(b)) => a.cmp(b),
                (Value::Int32(a), Value::Int32(b)) => a.cmp(b),
                (Value::Utf8(a), Value::Utf8(b)) => a.as_bytes().cmp(b.as_bytes()),
                (a, b) => panic!("comparing {a:?} with {b:?}"),
            };
            Some(match op {
                CmpOp::Eq => o.is_eq(),
                CmpOp::Ne => o.is_ne(),
                CmpOp::Lt => o.is_lt(),
                CmpOp::Le => o.is_le(),
                CmpOp::Gt => o.is_gt(),
                CmpOp::Ge => o.is_ge(),
            })
        }
        Predicate::In { column: c, values } => {
            let v = column(c);
            (!v.is_null()).then(|| values.contains(&v))
        }
        Predicate::StartsWith { column: c, prefix } => match (column(c), prefix) {
            (Value::Utf8(v), Value::Utf8(p)) => Some(v.starts_with(p.as_str())),
            (Value::Null, _) => None,
            (a, b) => panic!("prefix {b:?} of {a:?}"),
        },
        Predicate::IsNull(c) => Some(column(c).is_null()),
        Predicate::IsNotNull(c) => Some(!column(c).is_null()),
        Predicate::And(ps) => {
            let vs: Vec<Option<bool>> = ps.iter().map(|p| model_eval(p, key, row)).collect();
            if vs.contains(&Some(false)) {
                Some(false)
            } else if vs.contains(&None) {
                None
            } else {
                Some(true)
            }
        }
        Predicate::Or(ps) => {
            let vs: Vec<Option<bool>> = ps.iter().map(|p| model_eval(p, key, row)).collect();
            if vs.contains(&Some(true)) {
                Some(true)
            } else if vs.contains(&None) {
                None
            } else {
                Some(false)
            }
        }
        Predicate::Not(p) => model_eval(p, key, row).map(|b| !b),
    }
}

fn run_layout(dir: &Path, layout: &str, seed: u64) {
    let mut h = Harness {
        model: BTreeMap::new(),
        rng: StdRng::seed_from_u64(seed),
    };
    let mut check_rng = StdRng::seed_from_u64(seed ^ 0xabc);
    let mut db = Db::open(dir, opts()).expect("open");
    db.create_table("t", schema(), small(layout))
        .expect("create");
    for round in 0..6 {
        let t = db.table("t").expect("table");
        for _ in 0..700 {
            h.step(&t);
        }
        match round % 3 {
            0 => t.flush().expect("flush"),
            1 => t.compact().expect("compact"),
            _ => {
                // Single runs moved down: groups of one row at different
                // depths, as concurrent background compactions leave them.
                for _ in 0..8 {
                    let level = h.rng.random_range(0..4);
                    let c = h.rng.random_range(0..COLS);
                    let col = if c == COLS - 1 {
                        "s".to_string()
                    } else {
                        format!("c{c}")
                    };
                    t.compact_column_run(level, &col).expect("compact run");
                }
            }
        }
        db.wait_for_background_work().expect("background");
        check(&t, &h.model, &mut check_rng);
        if round % 2 == 1 {
            drop(t);
            db.close().expect("close");
            db = Db::open(dir, opts()).expect("reopen");
            check(&db.table("t").expect("table"), &h.model, &mut check_rng);
        }
    }
    // Data reached column groups below level 0.
    let t = db.table("t").expect("table");
    let d = t.describe().expect("describe");
    assert!(d.levels.iter().any(|l| l.level > 0), "{d}");
    // And the parallel scans above ran in parts.
    let scan = t
        .scan(ScanOptions::default().threads(4))
        .expect("parallel scan");
    assert!(scan.parts() > 1, "a scan of {d} ran in one part");
}

#[test]
fn every_layout_reads_like_the_model_through_flushes_compactions_and_reopens() {
    for (i, layout) in [
        "row",
        "column",
        "groups:2",
        "row-then-column:2",
        "c0,c1,c2,c3,c4,s ; c0,c1 | c2,c3,c4,s ; c0 | c1 | c2,c3 | c4,s",
    ]
    .iter()
    .enumerate()
    {
        let dir = tempfile::tempdir().expect("dir");
        run_layout(dir.path(), layout, 7 + i as u64);
    }
}

#[test]
fn a_layout_change_takes_effect_through_compaction_and_reads_stay_right() {
    let dir = tempfile::tempdir().expect("dir");
    let (db, t) = table_in(dir.path(), "column");
    let mut h = Harness {
        model: BTreeMap::new(),
        rng: StdRng::seed_from_u64(3),
    };
    let mut rng = StdRng::seed_from_u64(4);
    for _ in 0..2000 {
        h.step(&t);
    }
    t.compact().expect("compact");
    check(&t, &h.model, &mut rng);
    for layout in ["groups:3", "row", "row-then-column:3", "column"] {
        let l = TableLayout::parse(layout, t.schema(), 5).expect("layout");
        t.set_layout(l.clone()).expect("set layout");
        // Reads are right before compaction moves anything.
        check(&t, &h.model, &mut rng);
        for _ in 0..500 {
            h.step(&t);
        }
        check(&t, &h.model, &mut rng);
        t.compact().expect("compact");
        db.wait_for_background_work().expect("background");
        check(&t, &h.model, &mut rng);
        // After a full compaction every level is in the new layout.
        let d = t.describe().expect("describe");
        for level in &d.levels {
            for cols in level.groups.iter().map(|g| &g.columns) {
                let want: Vec<Vec<String>> = l
                    .groups(level.level)
                    .iter()
                    .map(|g| {
                        g.iter()
                            .map(|&v| t.schema().value_column(v).name.clone())
                            .collect()
                    })
                    .collect();
                assert!(
                    want.contains(cols),
                    "layout {layout}: level {} holds {cols:?}\n{d}",
                    level.level
                );
            }
        }
    }
    drop(t);
    db.close().expect("close");
    let db = Db::open(dir.path(), opts()).expect("reopen");
    let t = db.table("t").expect("table");
    assert_eq!(
        t.layout(),
        TableLayout::parse("column", t.schema(), 5).expect("layout")
    );
    check(&t, &h.model, &mut rng);
}

#[test]
fn arrow_batches_go_in_and_come_out_with_the_projection() {
    let dir = tempfile::tempdir().expect("dir");
    let (_db, t) = table_in(dir.path(), "row-then-column:1");
    let arrow = t.schema().arrow_schema();
    let n = 1000;
    let mut cols: Vec<Arc<dyn Array>> = vec![Arc::new(Int64Array::from_iter_values(0..n))];
    for c in 0..COLS - 1 {
        cols.push(Arc::new(Int32Array::from_iter(
            (0..n).map(|i| (i % 7 != 0).then_some(i as i32 * 10 + c as i32)),
        )));
    }
    cols.push(Arc::new(StringArray::from_iter_values(
        (0..n).map(|i| format!("row{i}")),
    )));
    let batch = RecordBatch::try_new(arrow, cols).expect("batch");
    t.insert(&batch).expect("insert");
    // Inserting the same keys again fails and writes nothing.
    let err = t.insert(&batch).expect_err("duplicate keys");
    assert!(err.to_string().contains("already"), "{err}");
    t.compact().expect("compact");
    let got: Vec<RecordBatch> = t
        .scan(ScanOptions {
            columns: Some(vec!["s".into(), "c3".into()]),
            batch_rows: 128,
            ..Default::default()
        })
        .expect("scan")
        .collect::<Result<_, _>>()
        .expect("batches");
    assert!(got.iter().all(|b| b.num_rows() <= 128));
    assert_eq!(
        got.iter().map(RecordBatch::num_rows).sum::<usize>(),
        n as usize
    );
    assert_eq!(got[0].schema().field(0).name(), "s");
    let c3 = column_as::<Int32Array>(&got[0], 1, "c3");
    assert!(c3.is_null(0));
    assert_eq!(c3.value(1), 13);
    // A batch missing a column, or with a wrong type, is refused.
    let bad = RecordBatch::try_new(
        Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            "id",
            arrow_schema::DataType::Int32,
            false,
        )])),
        vec![Arc::new(Int32Array::from(vec![1]))],
    )
    .expect("batch");
    assert!(t.upsert(&bad).is_err());
    // Predicates skip blocks by their statistics.
    let before = t.statistics();
    let rows: usize = t
        .scan(
            ScanOptions::default()
                .columns(&["id"])
                .filter(Predicate::cmp("c0", CmpOp::Ge, 9_000)),
        )
        .expect("scan")
        .map(|b| b.expect("batch").num_rows())
        .sum();
    assert_eq!(rows, (900..1000).filter(|i| i % 7 != 0).count());
    let after = t.statistics();
    assert!(
        after.scan_blocks_skipped > before.scan_blocks_skipped,
        "{after:?}"
    );
}

#[test]
fn snapshots_see_tables_as_they_were() {
    let dir = tempfile::tempdir().expect("dir");
    let (db, t) = table_in(dir.path(), "column");
    let row = |x: i32| -> Vec<Value> {
        let mut r = vec![Value::Int64(1)];
        r.extend((0..COLS - 1).map(|_| Value::Int32(x)));
        r.push(Value::Utf8(format!("v{x}")));
        r
    };
    t.upsert_row(&row(1)).expect("insert");
    t.compact().expect("compact");
    let snap = db.snapshot();
    t.update_row(&[Value::Int64(1)], &[("c2", Value::Int32(99))])
        .expect("update");
    t.compact().expect("compact");
    let at = t
        .get_at(&[Value::Int64(1)], Some(&["c2"]), &snap)
        .expect("get");
    assert_eq!(at, Some(vec![Value::Int32(1)]));
    assert_eq!(
        t.get(&[Value::Int64(1)], Some(&["c2"])).expect("get"),
        Some(vec![Value::Int32(99)])
    );
    t.delete_row(&[Value::Int64(1)]).expect("delete");
    t.compact().expect("compact");
    assert_eq!(t.get(&[Value::Int64(1)], None).expect("get"), None);
    assert_eq!(
        t.get_at(&[Value::Int64(1)], Some(&["s"]), &snap)
            .expect("get"),
        Some(vec!["v1".into()])
    );
    let rows: usize = t
        .scan(ScanOptions::default().at(&snap))
        .expect("scan")
        .map(|b| b.expect("batch").num_rows())
        .sum();
    assert_eq!(rows, 1);
}

#[test]
fn bad_schemas_rows_and_names_are_clear_errors_that_write_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    let db = Db::open(dir.path(), opts()).expect("open");
    let t = db
        .create_table("t", schema(), TableOptions::default())
        .expect("create");
    assert!(matches!(
        db.create_table("t", schema(), TableOptions::default()),
        Err(Error::TableExists(_))
    ));
    assert!(matches!(db.table("nope"), Err(Error::TableNotFound(_))));
    assert!(
        db.create_table("", schema(), TableOptions::default())
            .is_err()
    );
    assert!(
        db.create_table("x", schema(), TableOptions::with_layout("diagonal"))
            .is_err()
    );
    assert!(db.keyspace("__table/1", Default::default()).is_err());
    // Wrong arity, wrong type, null in a non-null column.
    assert!(t.insert_row(&[Value::Int64(1)]).is_err());
    let mut row = vec![Value::Int64(1), Value::Utf8("x".into())];
    row.extend((0..COLS - 2).map(|_| Value::Null));
    assert!(t.insert_row(&row).is_err());
    assert!(
        t.update_row(&[Value::Int64(1)], &[("id", Value::Int64(2))])
            .is_err()
    );
    assert!(
        t.update_row(&[Value::Int64(1)], &[("nope", Value::Int32(2))])
            .is_err()
    );
    assert!(t.get(&[Value::Utf8("x".into())], None).is_err());
    assert_eq!(t.scan(ScanOptions::default()).expect("scan").count(), 0);
    assert_eq!(t.statistics().rows_written, 0);
    // A row too large for a column-group block is refused whole.
    let mut big = vec![Value::Int64(1)];
    big.extend((0..COLS - 1).map(|_| Value::Int32(0)));
    big.push(Value::Utf8("x".repeat(17 << 20)));
    let e = t.insert_row(&big).expect_err("too large");
    assert!(e.to_string().contains("row limit"), "{e}");
    assert_eq!(t.get(&[Value::Int64(1)], None).expect("get"), None);
}

#[test]
fn tables_without_bloom_filters_read_their_column_group_files() {
    let dir = tempfile::tempdir().expect("dir");
    let db = Db::open(dir.path(), opts()).expect("open");
    let mut o = small("column");
    o.bloom_bits_per_key = 0;
    let t = db.create_table("t", schema(), o).expect("create");
    let mut rng = StdRng::seed_from_u64(3);
    let mut model = BTreeMap::new();
    for k in 0..500i64 {
        let r = random_row(&mut rng);
        t.upsert_row(&full(k, &r)).expect("upsert");
        model.insert(k, r);
    }
    t.compact().expect("compact");
    let d = t.describe().expect("describe");
    assert!(d.levels.iter().any(|l| l.level > 0), "{d}");
    check(&t, &model, &mut rng);
}

#[test]
fn tables_survive_restarts_and_drops_free_their_name() {
    let dir = tempfile::tempdir().expect("dir");
    {
        let db = Db::open(dir.path(), opts()).expect("open");
        let t = db
            .create_table("a", schema(), small("groups:3"))
            .expect("create");
        db.create_table("b", schema(), TableOptions::default())
            .expect("create");
        let mut r = vec![Value::Int64(5)];
        r.extend((0..COLS - 1).map(|c| Value::Int32(c as i32)));
        r.push(Value::Utf8("five".into()));
        t.insert_row(&r).expect("insert");
        db.put(b"kv", b"still here").expect("put");
        for _ in 0..50 {
            let scan = ScanOptions {
                columns: Some(vec!["s".into()]),
                ..ScanOptions::default()
            };
            assert_eq!(t.scan(scan).expect("scan").count(), 1);
        }
        db.close().expect("close");
    }
    let db = Db::open(dir.path(), opts()).expect("reopen");
    assert_eq!(db.table_names(), vec!["a".to_string(), "b".to_string()]);
    let t = db.table("a").expect("a");
    // The workload recorded before the restart still informs the advisor.
    assert!(t.advise().expect("advise").current_cost.total > 0.0);
    assert_eq!(
        db.table("b")
            .expect("b")
            .advise()
            .expect("advise")
            .current_cost
            .total,
        0.0
    );
    assert_eq!(t.schema(), &schema());
    assert_eq!(
        t.get(&[Value::Int64(5)], Some(&["s"])).expect("get"),
        Some(vec!["five".into()])
    );
    assert_eq!(db.get(b"kv").expect("get"), Some(b"still here".to_vec()));
    db.drop_table("a").expect("drop");
    assert!(matches!(
        t.get(&[Value::Int64(5)], None),
        Err(Error::TableNotFound(_))
    ));
    let t = db
        .create_table("a", schema(), TableOptions::default())
        .expect("recreate");
    // A new table of an old name starts with no workload.
    assert_eq!(t.advise().expect("advise").current_cost.total, 0.0);
    assert_eq!(t.get(&[Value::Int64(5)], None).expect("get"), None);
    db.close().expect("close");
    let db = Db::open(dir.path(), opts()).expect("reopen");
    assert_eq!(db.table_names().len(), 2);
    assert_eq!(
        db.table("a")
            .expect("a")
            .get(&[Value::Int64(5)], None)
            .expect("get"),
        None
    );
    // Only the live tables' keyspaces remain.
    let table_keyspaces = db
        .keyspace_names()
        .iter()
        .filter(|n| n.starts_with("__table/"))
        .count();
    assert_eq!(table_keyspaces, 2);
}

/// A null for a column that is not nullable is `Error::NotNull` naming the
/// column, from a row, an update and a batch alike, and writes nothing.
#[test]
fn nulls_in_not_null_columns_are_refused_by_name() {
    let dir = tempfile::tempdir().expect("dir");
    let db = Db::open(dir.path(), opts()).expect("open");
    let schema = Schema::new(
        vec![
            Column::new("id", ColumnType::Int64),
            Column::new("v", ColumnType::Int32),
            Column::nullable("w", ColumnType::Int32),
        ],
        &["id"],
    )
    .expect("schema");
    let t = db
        .create_table("nn", schema, TableOptions::default())
        .expect("create");
    let not_null = |r: strata::Result<()>| match r {
        Err(Error::NotNull { column, .. }) => column,
        other => panic!("expected a NOT NULL refusal, got {other:?}"),
    };
    assert_eq!(
        not_null(t.insert_row(&[Value::Int64(1), Value::Null, Value::Int32(1)])),
        "v"
    );
    t.insert_row(&[Value::Int64(2), Value::Int32(2), Value::Null])
        .expect("a null where one is allowed");
    assert_eq!(
        not_null(t.update_row(&[Value::Int64(2)], &[("v", Value::Null)])),
        "v"
    );
    // (Arrow itself refuses a batch whose schema says NOT NULL with nulls
    // in it; one of the same fields, all nullable, reaches the table.)
    let fields: Vec<_> = t
        .schema()
        .arrow_schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    let batch = RecordBatch::try_new(
        Arc::new(arrow_schema::Schema::new(fields)),
        vec![
            Arc::new(Int64Array::from(vec![3, 4])),
            Arc::new(Int32Array::from(vec![Some(3), None])),
            Arc::new(Int32Array::from(vec![Some(3), Some(4)])),
        ],
    )
    .expect("batch");
    assert_eq!(not_null(t.insert(&batch)), "v");
    let rows = t.scan(ScanOptions::default()).expect("scan");
    let n: usize = rows.map(|b| b.expect("batch").num_rows()).sum();
    assert_eq!(n, 1, "only the row without a forbidden null was written");
    assert_eq!(
        t.get(&[Value::Int64(2)], None).expect("get"),
        Some(vec![Value::Int64(2), Value::Int32(2), Value::Null])
    );
}

/// A table's id is never given to another table: not after its table is
/// dropped, and not after a reopen either, when the dropped table had the
/// highest id (the next id was the highest recorded plus one until then).
#[test]
fn a_dropped_table_s_id_is_not_given_again_after_a_reopen() {
    let dir = tempfile::tempdir().expect("dir");
    let (a, b) = {
        let db = Db::open(dir.path(), opts()).expect("open");
        let a = db.create_table("a", schema(), TableOptions::default());
        let b = db.create_table("b", schema(), TableOptions::default());
        let (a, b) = (a.expect("a").id(), b.expect("b").id());
        assert_ne!(a, b);
        db.drop_table("b").expect("drop");
        db.close().expect("close");
        (a, b)
    };
    let db = Db::open(dir.path(), opts()).expect("reopen");
    assert_eq!(db.table("a").expect("a").id(), a, "an id lasts");
    let c = db
        .create_table("b", schema(), TableOptions::default())
        .expect("recreate")
        .id();
    assert!(c != a && c != b, "ids {a}, {b} given again: {c}");
    db.close().expect("close");
    let db = Db::open(dir.path(), opts()).expect("reopen");
    assert_eq!(db.table("b").expect("b").id(), c);
}

/// The application's write batches cannot reach the engine's keyspaces (a
/// batch names keyspaces by id, and an id from another database or a guess
/// wrote raw bytes into a table's rows; found in review, 2026-12-01).
#[test]
fn application_batches_cannot_write_into_a_table_s_keyspace() {
    let dir = tempfile::tempdir().expect("dir");
    let (db, t) = table_in(dir.path(), "row");
    t.upsert_row(&full(1, &random_row(&mut StdRng::seed_from_u64(1))))
        .expect("upsert");
    let user = db
        .keyspace("mine", Default::default())
        .expect("keyspace")
        .id();
    let mut refused = 0;
    for id in 0..16u32 {
        let mut b = strata::WriteBatch::new();
        b.put_in(strata::KeyspaceId(id), b"junk", b"\xff");
        match db.write(Default::default(), b) {
            Ok(()) => assert!(id == 0 || strata::KeyspaceId(id) == user, "id {id}"),
            Err(Error::InvalidArgument(m)) if m.contains("belongs to the engine") => refused += 1,
            Err(Error::InvalidArgument(m)) if m.contains("no keyspace") => {}
            Err(e) => panic!("id {id}: {e}"),
        }
    }
    assert!(
        refused >= 2,
        "the catalog's and the table's keyspaces: {refused}"
    );
    assert_eq!(scan_rows(&t, ScanOptions::default()).len(), 1);
}

/// A scan or index lookup given a snapshot's bare number holds a snapshot
/// at it until it has pinned what it reads, and refuses a number no live
/// snapshot holds: with the snapshot dropped, compaction of one column's
/// run dropped the version the read needed while another run kept it, and
/// the row came back torn, its columns from different versions (found in
/// review, 2026-12-01).
#[test]
fn a_read_at_a_dropped_snapshot_is_refused_rather_than_torn() {
    let dir = tempfile::tempdir().expect("dir");
    let (db, t) = table_in(dir.path(), "column");
    let row = |v: i32| {
        let mut r = vec![Value::Int64(1)];
        r.extend((0..COLS - 1).map(|_| Value::Int32(v)));
        r.push(Value::Utf8(format!("v{v}")));
        r
    };
    t.upsert_row(&row(1)).expect("first");
    t.flush().expect("flush");
    t.compact_column_run(0, "c0").expect("level 0");
    t.compact_column_run(1, "c0").expect("c0 down");
    t.compact_column_run(1, "c1").expect("c1 down");
    let snap = db.snapshot();
    t.upsert_row(&row(2)).expect("second");
    t.flush().expect("flush");
    t.compact_column_run(0, "c0").expect("level 0");
    let opts = ScanOptions::default()
        .columns(&["id", "c0", "c1"])
        .at(&snap);
    // While the snapshot lives, the scan reads the first version whole.
    let rows = scan_values(&t, opts.clone());
    assert_eq!(rows, vec![(1, vec![Value::Int32(1), Value::Int32(1)])]);
    drop(snap);
    t.compact_column_run(1, "c0").expect("c0 again");
    match t.scan(opts) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("snapshot"), "{m}"),
        Err(e) => panic!("{e}"),
        Ok(s) => {
            let got: Vec<RecordBatch> = s.collect::<Result<_, _>>().expect("batches");
            panic!("a read at a dropped snapshot gave {got:?}")
        }
    }
    // The latest state needs no snapshot.
    assert_eq!(
        scan_values(&t, ScanOptions::default().columns(&["id", "c0", "c1"])),
        vec![(1, vec![Value::Int32(2), Value::Int32(2)])]
    );
}

/// A batch size is a bound: a scan asked for batches of more rows than
/// memory could hold returns the table's rows in one batch (it overflowed
/// or aborted making room for them; found in review, 2026-12-01).
#[test]
fn a_huge_batch_size_returns_the_rows_without_making_room_for_it() {
    let dir = tempfile::tempdir().expect("dir");
    let (_db, t) = table_in(dir.path(), "groups:2");
    let mut rng = StdRng::seed_from_u64(12);
    for k in 0..500 {
        t.upsert_row(&full(k, &random_row(&mut rng)))
            .expect("upsert");
    }
    t.flush().expect("flush");
    for threads in [1, 2] {
        let batches: Vec<usize> = t
            .scan(ScanOptions {
                batch_rows: usize::MAX / 2,
                ..ScanOptions::default().threads(threads)
            })
            .expect("scan")
            .map(|b| b.expect("batch").num_rows())
            .collect();
        assert_eq!(batches.iter().sum::<usize>(), 500, "{threads} threads");
        if threads == 1 {
            assert_eq!(batches.len(), 1);
        }
    }
}

/// A table dropped while another thread changes its layout stays dropped
/// after a reopen: a layout change that had passed its liveness check
/// wrote the table's record back after the drop deleted it, and the table
/// came back (found in review, 2026-12-01).
#[test]
fn a_drop_racing_layout_changes_stays_dropped_after_a_reopen() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().expect("dir");
    for round in 0..25 {
        let db = Db::open(dir.path(), opts()).expect("open");
        let t = db
            .create_table("t", schema(), small("row"))
            .expect("create");
        let layouts: Vec<TableLayout> = ["column", "row", "groups:2"]
            .iter()
            .map(|l| TableLayout::parse(l, t.schema(), 5).expect("layout"))
            .collect();
        let started = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                for l in layouts.iter().cycle() {
                    started.store(true, Ordering::Release);
                    match t.set_layout(l.clone()) {
                        Ok(()) => {}
                        Err(Error::TableNotFound(_)) => break,
                        Err(e) => panic!("round {round}: set_layout: {e}"),
                    }
                }
            });
            while !started.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            // Let a few changes through, then drop in the middle of one.
            std::thread::sleep(std::time::Duration::from_micros(200 * (round % 5)));
            db.drop_table("t").expect("drop");
        });
        drop(t);
        db.close().expect("close");
        let db = Db::open(dir.path(), opts()).expect("reopen");
        assert!(
            matches!(db.table("t"), Err(Error::TableNotFound(_))),
            "round {round}: the dropped table came back"
        );
        db.close().expect("close");
    }
}

/// Scans merge their sources in windows that end where a block ends; a
/// key whose versions (kept for snapshots) span blocks, files and levels
/// must still be read as one row at every snapshot.
#[test]
fn scans_at_snapshots_see_keys_whose_versions_span_blocks() {
    for layout in ["row", "column", "groups:2"] {
        let dir = tempfile::tempdir().expect("dir");
        let db = Db::open(dir.path(), opts()).expect("open");
        let mut o = small(layout);
        o.block_size = 128;
        let t = db.create_table("t", schema(), o).expect("create");
        let row = |k: i64, x: i32| -> Vec<Value> {
            let mut r = vec![Value::Int64(k)];
            r.extend((0..COLS - 1).map(|c| Value::Int32(x + c as i32)));
            r.push(Value::Utf8(format!("v{x}")));
            r
        };
        // Per snapshot, the expected (key, c0, c3) of every live row.
        let mut model: BTreeMap<i64, (i32, i32)> = BTreeMap::new();
        let mut snaps = Vec::new();
        for round in 0..12i32 {
            for k in 0..40i64 {
                let x = round * 100 + k as i32;
                match (k + i64::from(round)) % 5 {
                    0 => {
                        t.delete_row(&[Value::Int64(k)]).expect("delete");
                        model.remove(&k);
                    }
                    1 if model.contains_key(&k) => {
                        t.update_row(&[Value::Int64(k)], &[("c3", Value::Int32(-x))])
                            .expect("update");
                        model.get_mut(&k).expect("row").1 = -x;
                    }
                    _ => {
                        t.upsert_row(&row(k, x)).expect("upsert");
                        model.insert(k, (x, x + 3));
                    }
                }
            }
            snaps.push((db.snapshot(), model.clone()));
            match round % 3 {
                0 => t.flush().expect("flush"),
                1 => t.compact().expect("compact"),
                _ => {}
            }
        }
        db.wait_for_background_work().expect("background");
        for (snap, want) in &snaps {
            let opts = ScanOptions {
                columns: Some(vec!["id".into(), "c0".into(), "c3".into()]),
                ..ScanOptions::default()
            }
            .at(snap);
            let mut got = BTreeMap::new();
            for b in t.scan(opts).expect("scan") {
                let b = b.expect("batch");
                let id = column_as::<Int64Array>(&b, 0, "id");
                let c0 = column_as::<Int32Array>(&b, 1, "c0");
                let c3 = column_as::<Int32Array>(&b, 2, "c3");
                for i in 0..b.num_rows() {
                    got.insert(id.value(i), (c0.value(i), c3.value(i)));
                }
            }
            assert_eq!(&got, want, "layout {layout}");
        }
    }
}

/// A projected get finds the row's newest insert even when each wanted
/// column's group holds it at a different depth, and both wanted columns
/// resolve (from newer partial updates) before it: the insert must be
/// looked for down every wanted column's lineage, not in whichever group
/// happens to exist on the deeper levels (a bug the stress test found).
#[test]
fn projected_gets_find_the_insert_whatever_depth_each_group_holds_it_at() {
    for (first, second) in [("c0", "c1"), ("c1", "c0")] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (_db, t) = table_in(dir.path(), "column");
        let mut row = vec![Value::Int32(1); COLS - 1];
        row.push(Value::Utf8("x".into()));
        let down = |level: usize, col: &str| t.compact_column_run(level, col).expect("compact run");
        // Row 100 sits on level 3 in both groups' lineages.
        t.upsert_row(&full(100, &row)).expect("upsert");
        t.flush().expect("flush");
        down(0, first);
        for l in 1..3 {
            down(l, first);
            down(l, second);
        }
        // Row 1: its insert on level 1 in `first`'s group, on level 3 in
        // `second`'s.
        t.upsert_row(&full(1, &row)).expect("upsert");
        t.flush().expect("flush");
        down(0, first);
        down(1, second);
        down(2, second);
        // An update of `second`, on level 2 in its group.
        t.update_row(&[Value::Int64(1)], &[(second, Value::Int32(2))])
            .expect("update");
        t.flush().expect("flush");
        down(0, first);
        down(1, second);
        // Row 200 on level 1 in every group, so that `second`'s group is
        // probed there (for its column) and `first`'s is not.
        t.upsert_row(&full(200, &row)).expect("upsert");
        t.flush().expect("flush");
        down(0, first);
        // An update of `first`, in the memtable.
        t.update_row(&[Value::Int64(1)], &[(first, Value::Int32(3))])
            .expect("update");
        let got = t
            .get(&[Value::Int64(1)], Some(&[first, second]))
            .expect("get");
        assert_eq!(
            got,
            Some(vec![Value::Int32(3), Value::Int32(2)]),
            "get of ({first}, {second}); stored versions:\n{}",
            t.debug_versions(&[Value::Int64(1)]).expect("versions")
        );
    }
}

/// Every row a scan returns, in the order it returns them: the id (the
/// scan's first column) and the other columns' values.
fn scan_values(t: &strata::table::Table, opts: ScanOptions) -> Vec<(i64, Row)> {
    let mut got = Vec::new();
    for b in t.scan(opts).expect("scan") {
        let b = b.expect("batch");
        let schema = t.schema();
        let cols: Vec<Vec<Value>> = b
            .columns()
            .iter()
            .zip(b.schema().fields())
            .map(|(c, f)| {
                let ty = schema.columns()[schema.index_of(f.name()).expect("column")].ty;
                strata::table::array_to_values(c.as_ref(), ty).expect("values")
            })
            .collect();
        for i in 0..b.num_rows() {
            let Value::Int64(id) = cols[0][i] else {
                panic!("id column is not i64")
            };
            got.push((id, cols[1..].iter().map(|c| c[i].clone()).collect()));
        }
    }
    got
}

/// Every row and column a scan returns, keyed by id.
fn scan_rows(t: &strata::table::Table, opts: ScanOptions) -> BTreeMap<i64, Row> {
    scan_values(t, opts).into_iter().collect()
}

/// A scan gathers a column's values straight from the blocks while they
/// have no nulls, a few hundred at a time, and falls back to the general
/// gather partway through a batch: here the first 600 keys sit in a
/// compacted run without nulls and the rest, with a null, in the
/// memtable, so one window's gather reads two whole chunks in place
/// before it meets the null.
#[test]
fn a_null_partway_through_a_batch_comes_out_with_its_neighbours() {
    for layout in ["row", "column"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (_db, t) = table_in(dir.path(), layout);
        let mut model: BTreeMap<i64, Row> = BTreeMap::new();
        let mut write = |keys: std::ops::Range<i64>| {
            for k in keys {
                let mut row: Row = (0..COLS - 1)
                    .map(|c| Value::Int32((k * 7 + c as i64) as i32))
                    .collect();
                row.push(Value::Utf8(format!("s{k}")));
                if k == 800 {
                    row[0] = Value::Null;
                }
                t.upsert_row(&full(k, &row)).expect("upsert");
                model.insert(k, row);
            }
        };
        write(0..600);
        t.compact().expect("compact");
        write(600..1000);
        let got = scan_rows(&t, ScanOptions::default());
        assert_eq!(got, model, "layout {layout}");
    }
}

/// A scan stitches each row from the groups its insert was split into,
/// whatever partition of the columns those groups make: here rows of one
/// key range are split `{c0..c2} {c3,c4,s}` (across levels 1 and 2),
/// `{c0} {c1,c2} {c3,c4,s}` (across levels 2 and 3), or whole (level 1's
/// blocks, beside partial updates that lack columns, and the memtable),
/// some with partial updates or deleted, and every projection reads what
/// the model holds.
#[test]
fn scans_stitch_rows_whatever_partition_their_groups_make() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), opts()).expect("open");
    // Level 1 (level 0 holds whole rows); the last entry stands for the
    // levels below.
    let layout = "c0,c1,c2 | c3,c4,s ; c0 | c1,c2 | c3,c4,s";
    let t = db
        .create_table("t", schema(), small(layout))
        .expect("create");
    let down = |level: usize, col: &str| t.compact_column_run(level, col).expect("compact run");
    let mut model: BTreeMap<i64, Row> = BTreeMap::new();
    let write = |residue: i64, model: &mut BTreeMap<i64, Row>| {
        for k in (0..600i64).filter(|k| k % 3 == residue) {
            let mut row: Row = (0..COLS - 1)
                .map(|c| Value::Int32((k * 10 + c as i64) as i32))
                .collect();
            row.push(Value::Utf8(format!("s{k}")));
            t.upsert_row(&full(k, &row)).expect("upsert");
            model.insert(k, row);
        }
    };
    // Keys 0 mod 3: `{c0}` on level 2, `{c1,c2}` on level 3, `{c3,c4,s}` on
    // level 1 until the next step moves that run down too.
    write(0, &mut model);
    t.flush().expect("flush");
    down(0, "c0");
    down(1, "c0");
    down(2, "c1");
    // Keys 1 mod 3: `{c0,c1,c2}` on level 1, `{c3,c4,s}` (with the 0 mod 3
    // keys' run) moved to level 2.
    write(1, &mut model);
    t.flush().expect("flush");
    down(0, "c0");
    down(1, "c3");
    // Keys 2 mod 3: whole rows in the memtable.
    write(2, &mut model);
    // Partial updates, some moved to level 1 (where they are rows lacking
    // columns beside whole ones), some left in the memtable, and deletes.
    let update = |step: i64, tag: &str, model: &mut BTreeMap<i64, Row>| {
        for k in (0..600i64).step_by(step as usize) {
            let col = ["c1", "c4", "s"][(k % 3) as usize];
            let v = if col == "s" {
                Value::Utf8(format!("{tag}{k}"))
            } else {
                Value::Int32(-(k as i32) - step as i32)
            };
            t.update_row(&[Value::Int64(k)], &[(col, v.clone())])
                .expect("update");
            let idx = t.schema().index_of(col).expect("column") - 1;
            if let Some(row) = model.get_mut(&k) {
                row[idx] = v;
            }
        }
    };
    update(7, "u", &mut model);
    t.flush().expect("flush");
    down(0, "c0");
    update(13, "v", &mut model);
    for k in (5..600i64).step_by(11) {
        t.delete_row(&[Value::Int64(k)]).expect("delete");
        model.remove(&k);
    }
    let names = ["c0", "c1", "c2", "c3", "c4", "s"];
    for wanted in [&names[..], &["c1", "s"][..], &["c0", "c4"][..], &["c2"][..]] {
        let mut cols = vec!["id"];
        cols.extend_from_slice(wanted);
        let got = scan_values(&t, ScanOptions::default().columns(&cols));
        let want: Vec<(i64, Row)> = model
            .iter()
            .map(|(&k, row)| {
                let picked = wanted
                    .iter()
                    .map(|c| row[t.schema().index_of(c).expect("column") - 1].clone())
                    .collect();
                (k, picked)
            })
            .collect();
        assert_eq!(got, want, "columns {wanted:?}");
    }
}

/// A scan wanting more than 64 columns (past the window's slot bitmaps)
/// still reads every column of a level's aligned groups.
#[test]
fn scans_of_more_than_64_columns_read_every_group() {
    const WIDE: usize = 70;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), opts()).expect("open");
    let mut cols = vec![Column::new("id", ColumnType::Int64)];
    cols.extend((0..WIDE).map(|c| Column::new(format!("c{c}"), ColumnType::Int32)));
    let schema = Schema::new(cols, &["id"]).expect("schema");
    let t = db
        .create_table("wide", schema, small("groups:35"))
        .expect("create");
    let value = |k: i64, c: usize| (k * 100 + c as i64) as i32;
    for k in 0..300i64 {
        let mut row = vec![Value::Int64(k)];
        row.extend((0..WIDE).map(|c| Value::Int32(value(k, c))));
        t.upsert_row(&row).expect("upsert");
    }
    t.compact().expect("compact");
    let mut seen = 0;
    for b in t.scan(ScanOptions::default()).expect("scan") {
        let b = b.expect("batch");
        let ids = column_as::<Int64Array>(&b, 0, "ids");
        for c in 0..WIDE {
            let a = column_as::<Int32Array>(&b, c + 1, "i32 column");
            for r in 0..b.num_rows() {
                assert!(a.is_valid(r), "c{c} of key {} is null", ids.value(r));
                assert_eq!(a.value(r), value(ids.value(r), c), "c{c}");
            }
        }
        seen += b.num_rows();
    }
    assert_eq!(seen, 300);
}

/// A scan of a level's aligned column groups reads the partners' columns
/// through one merged run, and still sees every update and delete: where
/// the groups' blocks hold partial rows, where the updates sit on other
/// levels, and through a predicate on a partner's column.
#[test]
fn scans_of_aligned_groups_see_every_update_and_delete() {
    for layout in ["column", "groups:2"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (_db, t) = table_in(dir.path(), layout);
        let mut rng = StdRng::seed_from_u64(20);
        let mut model: BTreeMap<i64, Row> = BTreeMap::new();
        for k in 0..600 {
            let row = random_row(&mut rng);
            t.upsert_row(&full(k, &row)).expect("upsert");
            model.insert(k, row);
        }
        t.compact().expect("compact");
        // Updates and deletes, compacted down onto the rows' groups (their
        // blocks then hold partial rows), then more left above them.
        for round in 0..2 {
            for _ in 0..40 {
                let k = rng.random_range(0..600);
                let c = rng.random_range(0..COLS - 1);
                let v = Value::Int32(rng.random_range(-1000..1000));
                t.update_row(&[Value::Int64(k)], &[(&format!("c{c}"), v.clone())])
                    .expect("update");
                if let Some(r) = model.get_mut(&k) {
                    r[c] = v;
                }
            }
            for _ in 0..5 {
                let k = rng.random_range(0..600);
                t.delete_row(&[Value::Int64(k)]).expect("delete");
                model.remove(&k);
            }
            t.flush().expect("flush");
            if round == 0 {
                for level in 0..2 {
                    for c in (0..COLS - 1).map(|c| format!("c{c}")).chain(["s".into()]) {
                        t.compact_column_run(level, &c).expect("compact run");
                    }
                }
            }
        }
        let got = scan_rows(&t, ScanOptions::default());
        assert_eq!(got, model, "layout {layout}");
        let p = Predicate::cmp("c3", CmpOp::Ge, Value::Int32(0));
        let got = scan_rows(&t, ScanOptions::default().filter(p));
        let want: BTreeMap<i64, Row> = model
            .iter()
            .filter(|(_, r)| matches!(r[3], Value::Int32(x) if x >= 0))
            .map(|(k, r)| (*k, r.clone()))
            .collect();
        assert_eq!(got, want, "layout {layout}, c3 >= 0");
    }
}

/// The automatic layout moves a table from pure row to a layout that
/// splits its columns once the recorded workload is single-column scans,
/// and the table reads the same throughout.
#[test]
fn the_automatic_layout_switches_to_the_workload_s_layout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), opts()).expect("open");
    let t = db
        .create_table(
            "t",
            schema(),
            TableOptions {
                auto_layout_threshold: Some(0.05),
                auto_layout_interval_ms: 20,
                ..small("row")
            },
        )
        .expect("create");
    let mut rng = StdRng::seed_from_u64(24);
    let mut model: BTreeMap<i64, Row> = BTreeMap::new();
    for k in 0..3000 {
        let row = random_row(&mut rng);
        t.upsert_row(&full(k, &row)).expect("upsert");
        model.insert(k, row);
    }
    t.compact().expect("compact");
    let before = t.layout();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while t.statistics().auto_switches == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no automatic switch in 60 s of single-column scans"
        );
        let n = t
            .scan(ScanOptions::default().columns(&["c4"]))
            .expect("scan")
            .map(|b| b.expect("batch").num_rows())
            .sum::<usize>();
        assert_eq!(n, model.len());
    }
    assert_ne!(t.layout(), before, "a switch changes the layout");
    t.compact().expect("compact");
    assert_eq!(scan_rows(&t, ScanOptions::default()), model);
}

#[test]
fn a_table_of_key_columns_only_is_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let db = Db::open(dir.path(), opts()).expect("open");
    let schema = Schema::new(
        vec![
            Column::new("a", ColumnType::Int64),
            Column::new("b", ColumnType::Utf8),
        ],
        &["a", "b"],
    )
    .expect("schema");
    let Err(err) = db.create_table("pairs", schema, small("row")) else {
        panic!("a key-only table was created");
    };
    assert!(err.to_string().contains("outside its primary key"), "{err}");
    assert!(db.table_names().is_empty());
}

/// A table held by one file (a flush to level 0, or one column-group file
/// per group at the bottom) is still scanned in parts: the range is cut at
/// the file's block boundaries, and the parts return what one scan does.
#[test]
fn a_table_in_one_file_is_scanned_in_parts() {
    for layout in ["row", "column"] {
        let dir = tempfile::tempdir().expect("dir");
        let db = Db::open(dir.path(), opts()).expect("open");
        let big = TableOptions {
            write_buffer_size: 64 << 20,
            target_file_size: 64 << 20,
            block_size: 1024,
            ..small(layout)
        };
        let t = db.create_table("t", schema(), big).expect("create");
        let mut rng = StdRng::seed_from_u64(5);
        for k in 0..4000 {
            t.upsert_row(&full(k, &random_row(&mut rng)))
                .expect("insert");
        }
        t.flush().expect("flush");
        if layout == "column" {
            t.compact().expect("compact");
        }
        db.wait_for_background_work().expect("background");
        let d = t.describe().expect("describe");
        assert!(
            d.levels
                .iter()
                .flat_map(|l| &l.groups)
                .all(|g| g.files == 1),
            "{layout}: {d}"
        );
        let one = scan_rows(&t, ScanOptions::default());
        assert_eq!(one.len(), 4000);
        for parts in [2, 4] {
            let scan = t.scan(ScanOptions::default().threads(parts)).expect("scan");
            assert!(
                scan.parts() > 1,
                "{layout}: {parts} parts asked, one run: {d}"
            );
            drop(scan);
            assert_eq!(
                scan_rows(&t, ScanOptions::default().threads(parts)),
                one,
                "{layout}, {parts} parts"
            );
        }
    }
}

/// A scan in parts reads at its snapshot like a single scan, counts what
/// every part read, and stops its threads when dropped before its end.
#[test]
fn parallel_scans_read_at_snapshots_and_stop_when_dropped() {
    let dir = tempfile::tempdir().expect("dir");
    let (db, t) = table_in(dir.path(), "groups:2");
    let row = |k: i64, x: i32| -> Vec<Value> {
        let mut r = vec![Value::Int64(k)];
        r.extend((0..COLS - 1).map(|_| Value::Int32(x)));
        r.push(Value::Utf8(format!("v{k}")));
        r
    };
    for k in 0..3000 {
        t.upsert_row(&row(k, 1)).expect("insert");
    }
    t.compact().expect("compact");
    let snap = db.snapshot();
    for k in (0..3000).step_by(3) {
        t.update_row(&[Value::Int64(k)], &[("c2", Value::Int32(2))])
            .expect("update");
    }
    for k in (1..3000).step_by(7) {
        t.delete_row(&[Value::Int64(k)]).expect("delete");
    }
    let sum_c2 = |opts: ScanOptions| -> (usize, i64, usize, u64) {
        let mut scan = t.scan(opts.columns(&["c2"])).expect("scan");
        let (mut rows, mut sum) = (0, 0i64);
        for b in scan.by_ref() {
            let b = b.expect("batch");
            let c2 = column_as::<Int32Array>(&b, 0, "c2");
            rows += b.num_rows();
            sum += c2.values().iter().map(|&v| i64::from(v)).sum::<i64>();
        }
        (rows, sum, scan.parts(), scan.counters().rows_returned)
    };
    let now = sum_c2(ScanOptions::default());
    let then = sum_c2(ScanOptions::default().at(&snap));
    assert_eq!((now.0, then.0), (3000 - 429, 3000));
    assert_eq!((now.2, then.2), (1, 1));
    for parts in [2, 3, 8] {
        let p = sum_c2(ScanOptions::default().threads(parts));
        assert_eq!(
            (p.0, p.1, p.3),
            (now.0, now.1, now.0 as u64),
            "{parts} parts"
        );
        assert!(p.2 > 1, "{parts} parts asked, one run");
        let p = sum_c2(ScanOptions::default().at(&snap).threads(parts));
        assert_eq!(
            (p.0, p.1),
            (then.0, then.1),
            "{parts} parts at the snapshot"
        );
    }
    // Dropped after one small batch: the parts stop, nothing hangs, and the
    // database closes.
    let mut scan = t
        .scan(ScanOptions {
            batch_rows: 16,
            ..ScanOptions::default().threads(4)
        })
        .expect("scan");
    assert!(scan.parts() > 1);
    assert_eq!(scan.next().expect("a batch").expect("batch").num_rows(), 16);
    drop(scan);
    drop(t);
    db.close().expect("close");
}

/// Writes `rows` random rows (from `seed`) into a table "t" under `layout`
/// in `dir`, compacts it and closes the database.
fn write_compacted(dir: &Path, layout: &str, rows: i64, seed: u64) {
    let (db, t) = table_in(dir, layout);
    let mut rng = StdRng::seed_from_u64(seed);
    for k in 0..rows {
        t.upsert_row(&full(k, &random_row(&mut rng)))
            .expect("insert");
    }
    t.compact().expect("compact");
    db.close().expect("close");
}

/// A damaged block fails a scan in parts with a corruption error, whichever
/// thread reads it (the caller's own or a helper): when the scan opens (a
/// range's first block is read as its scanner seeks) or as it reads.
#[test]
fn a_damaged_block_fails_a_scan_in_parts() {
    let dir = tempfile::tempdir().expect("dir");
    write_compacted(dir.path(), "groups:2", 4000, 9);
    // One byte in the middle of every file of the table's runs: a data
    // block's. (Files of a few hundred bytes are the catalog's, read at
    // open: their damage would fail the open, not the scan.)
    let mut damaged = 0;
    for e in std::fs::read_dir(dir.path()).expect("dir") {
        let path = e.expect("entry").path();
        let size = std::fs::metadata(&path).expect("metadata").len();
        if path.extension().is_some_and(|x| x == "sst") && size > 4096 {
            let mut bytes = std::fs::read(&path).expect("read");
            let mid = bytes.len() / 2;
            bytes[mid] ^= 0x40;
            std::fs::write(&path, bytes).expect("write");
            damaged += 1;
        }
    }
    assert!(damaged > 2, "only {damaged} table files");
    let db = Db::open(dir.path(), opts()).expect("reopen");
    let t = db.table("t").expect("table");
    for threads in [1, 2, 3] {
        let opened = t.scan(ScanOptions {
            batch_rows: 64,
            ..ScanOptions::default().threads(threads)
        });
        let err = match opened {
            Err(e) => e,
            Ok(mut scan) => {
                assert_eq!(scan.parts() > 1, threads > 1, "{threads} threads");
                let mut rows = 0;
                let err = loop {
                    match scan.next() {
                        Some(Ok(b)) => rows += b.num_rows(),
                        Some(Err(e)) => break e,
                        None => panic!("{threads} threads: the scan ended after {rows} rows"),
                    }
                };
                assert!(rows < 4000, "{threads} threads: {rows} rows");
                // After the error the scan is over.
                assert!(
                    scan.next().is_none(),
                    "{threads} threads: more after the error"
                );
                err
            }
        };
        assert!(
            matches!(err, Error::Corruption { .. }),
            "{threads} threads: {err}"
        );
    }
    drop(t);
    // A compaction the reopen started may have met the damage too: the
    // database then closes read-only, naming it.
    if let Err(e) = db.close() {
        assert!(e.to_string().contains("corruption"), "close: {e}");
    }
}

/// Scanned keys come back as written, in key order, for each single
/// integer key type (read straight from the key bytes) and for a key of
/// two columns (decoded part by part), through flushes and column groups.
#[test]
fn scanned_keys_round_trip_for_each_key_type() {
    use arrow_array::TimestampMicrosecondArray;
    let ints: Vec<i64> = vec![
        i64::from(i32::MIN),
        -70_000,
        -1,
        0,
        1,
        255,
        256,
        70_000,
        i64::from(i32::MAX),
    ];
    for (ty, layout) in [
        (ColumnType::Int32, "row"),
        (ColumnType::Int64, "groups:2"),
        (ColumnType::Timestamp, "column"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(dir.path(), opts()).expect("open");
        let schema = Schema::new(
            vec![
                Column::new("k", ty),
                Column::new("x", ColumnType::Int32),
                Column::nullable("y", ColumnType::Int32),
            ],
            &["k"],
        )
        .expect("schema");
        let t = db.create_table("t", schema, small(layout)).expect("create");
        let mut keys: Vec<i64> = ints.clone();
        if ty != ColumnType::Int32 {
            keys.extend([i64::MIN, i64::MIN + 1, i64::MAX - 1, i64::MAX, 1 << 40]);
        }
        // Written in reverse, half before a flush.
        for (n, &k) in keys.iter().rev().enumerate() {
            let key = match ty {
                ColumnType::Int32 => Value::Int32(k as i32),
                ColumnType::Timestamp => Value::Timestamp(k),
                _ => Value::Int64(k),
            };
            t.upsert_row(&[key, Value::Int32(n as i32), Value::Null])
                .expect("insert");
            if n == keys.len() / 2 {
                t.flush().expect("flush");
            }
        }
        // Row n (in writing order) has x = n: the key that was written n-th.
        let mut written: Vec<i64> = keys.iter().rev().copied().collect();
        keys.sort_unstable();
        for cols in [vec!["k"], vec!["x", "k"], vec!["k", "x", "k"]] {
            let mut got = Vec::new();
            for b in t.scan(ScanOptions::default().columns(&cols)).expect("scan") {
                let b = b.expect("batch");
                let c = b.column(cols.len() - 1);
                match ty {
                    ColumnType::Int32 => got.extend(
                        column_as::<Int32Array>(&b, cols.len() - 1, "k")
                            .values()
                            .iter()
                            .map(|&v| i64::from(v)),
                    ),
                    ColumnType::Timestamp => got.extend(
                        c.as_any()
                            .downcast_ref::<TimestampMicrosecondArray>()
                            .expect("timestamps")
                            .values()
                            .iter()
                            .copied(),
                    ),
                    _ => got.extend(column_as::<Int64Array>(&b, cols.len() - 1, "k").values()),
                }
            }
            assert_eq!(got, keys, "{ty:?} keys under {layout}, columns {cols:?}");
        }
        // Each key with its own value, the key output twice alike.
        let mut pairs = Vec::new();
        for b in t
            .scan(ScanOptions::default().columns(&["k", "x", "k"]))
            .expect("scan")
        {
            let b = b.expect("batch");
            let x = column_as::<Int32Array>(&b, 1, "x");
            for r in 0..b.num_rows() {
                let key = |c: usize| match ty {
                    ColumnType::Int32 => i64::from(column_as::<Int32Array>(&b, c, "k").value(r)),
                    ColumnType::Timestamp => b
                        .column(c)
                        .as_any()
                        .downcast_ref::<TimestampMicrosecondArray>()
                        .expect("timestamps")
                        .value(r),
                    _ => column_as::<Int64Array>(&b, c, "k").value(r),
                };
                assert_eq!(key(0), key(2), "{ty:?}: the key output twice");
                pairs.push((x.value(r) as usize, key(0)));
            }
        }
        pairs.sort_unstable();
        let want: Vec<(usize, i64)> = written.drain(..).enumerate().collect();
        assert_eq!(pairs, want, "{ty:?}: each key's value");
    }
    // Two key columns: each part as written.
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), opts()).expect("open");
    let schema = Schema::new(
        vec![
            Column::new("a", ColumnType::Int32),
            Column::new("b", ColumnType::Utf8),
            Column::new("x", ColumnType::Int32),
        ],
        &["a", "b"],
    )
    .expect("schema");
    let t = db.create_table("t", schema, small("row")).expect("create");
    let mut want = Vec::new();
    for a in [-3i32, 0, 7] {
        for b in ["", "a\0b", "z"] {
            t.upsert_row(&[Value::Int32(a), Value::Utf8(b.into()), Value::Int32(1)])
                .expect("insert");
            want.push((a, b.to_string()));
        }
    }
    let mut got = Vec::new();
    for b in t
        .scan(ScanOptions::default().columns(&["b", "a"]))
        .expect("scan")
    {
        let b = b.expect("batch");
        let s = column_as::<StringArray>(&b, 0, "b");
        let a = column_as::<Int32Array>(&b, 1, "a");
        for r in 0..b.num_rows() {
            got.push((a.value(r), s.value(r).to_string()));
        }
    }
    want.sort();
    assert_eq!(got, want);
}

/// Bounds at the ends of the key space: a lower bound excluding the
/// greatest key (whose encoding is all `0xff` bytes, with nothing sorting
/// past it) leaves an empty range, and bounds including it keep it.
#[test]
fn bounds_at_the_greatest_key() {
    use std::ops::Bound as RangeBound;
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, t) = table_in(dir.path(), "row");
    for id in [i64::MIN, -1, 0, i64::MAX - 1, i64::MAX] {
        let mut r = vec![Value::Int64(id)];
        r.extend((0..COLS - 1).map(|c| Value::Int32(c as i32)));
        r.push(Value::Null);
        t.upsert_row(&r).expect("insert");
    }
    let keys = |lower: RangeBound<i64>, upper: RangeBound<i64>| -> Vec<i64> {
        let opts = ScanOptions {
            lower: lower.map(|k| vec![Value::Int64(k)]),
            upper: upper.map(|k| vec![Value::Int64(k)]),
            ..ScanOptions::default().columns(&["id"])
        };
        let mut got = Vec::new();
        for b in t.scan(opts).expect("scan") {
            let b = b.expect("batch");
            got.extend(column_as::<Int64Array>(&b, 0, "id").values());
        }
        got
    };
    use RangeBound::{Excluded, Included, Unbounded};
    assert_eq!(keys(Excluded(i64::MAX), Unbounded), Vec::<i64>::new());
    assert_eq!(
        keys(Excluded(i64::MAX), Included(i64::MAX)),
        Vec::<i64>::new()
    );
    assert_eq!(keys(Included(i64::MAX), Unbounded), vec![i64::MAX]);
    assert_eq!(keys(Excluded(i64::MAX - 1), Unbounded), vec![i64::MAX]);
    assert_eq!(
        keys(Included(0), Included(i64::MAX)),
        vec![0, i64::MAX - 1, i64::MAX]
    );
    assert_eq!(keys(Unbounded, Excluded(i64::MIN)), Vec::<i64>::new());
    assert_eq!(keys(Unbounded, Included(i64::MIN)), vec![i64::MIN]);
}

/// A column-group file read under another group's name (two groups' files
/// of the same size swapped on disk, every checksum intact) is refused as
/// corruption by scans and point reads, never read through the wrong
/// group's columns (they returned no rows).
#[test]
fn a_column_group_file_under_another_group_s_name_is_corruption() {
    let dir = tempfile::tempdir().expect("tempdir");
    let schema = Schema::new(
        vec![
            Column::new("id", ColumnType::Int64),
            Column::new("a", ColumnType::Int32),
            Column::new("b", ColumnType::Int32),
        ],
        &["id"],
    )
    .expect("schema");
    {
        let db = Db::open(dir.path(), opts()).expect("open");
        let t = db
            .create_table("t", schema, small("column"))
            .expect("create");
        for id in 0..200i64 {
            t.upsert_row(&[
                Value::Int64(id),
                Value::Int32(id as i32),
                Value::Int32(1_000_000 + id as i32),
            ])
            .expect("insert");
        }
        t.flush().expect("flush");
        t.compact().expect("compact");
        db.close().expect("close");
    }
    let mut files: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    files.sort();
    let sizes: Vec<u64> = files
        .iter()
        .map(|p| std::fs::metadata(p).expect("stat").len())
        .collect();
    assert_eq!(files.len(), 2, "one file per group: {files:?} {sizes:?}");
    assert_eq!(sizes[0], sizes[1], "the groups' files are alike in size");
    let (x, y) = (
        std::fs::read(&files[0]).expect("read"),
        std::fs::read(&files[1]).expect("read"),
    );
    std::fs::write(&files[0], &y).expect("write");
    std::fs::write(&files[1], &x).expect("write");
    let db = Db::open(dir.path(), opts()).expect("reopen");
    let t = db.table("t").expect("table");
    for col in ["a", "b"] {
        let got: Result<Vec<RecordBatch>, Error> = t
            .scan(ScanOptions::default().columns(&["id", col]))
            .and_then(|s| s.collect());
        match got {
            Err(Error::Corruption { .. }) => {}
            other => panic!("column {col}: {other:?}"),
        }
        match t.get(&[Value::Int64(7)], Some(&[col])) {
            Err(Error::Corruption { .. }) => {}
            other => panic!("get of column {col}: {other:?}"),
        }
    }
}

/// A column-group file whose index, checksummed and well formed, gives a
/// data block a size near 2^64 is refused as corruption naming the block
/// when it opens, before a scan in parts adds the sizes up to share out
/// its range (found in review, 2026-12-01: those sums were unchecked).
#[test]
fn an_index_claiming_a_block_past_the_data_is_corruption() {
    use strata::coding::{crc32c, put_varint64};
    use strata::sst::format::block_trailer;
    let dir = tempfile::tempdir().expect("tempdir");
    write_compacted(dir.path(), "column", 2000, 5);
    // The largest column-group file is rewritten with the same length (the
    // manifest records it): its filter is dropped to make room for an index
    // whose first block's size is replaced, then its properties, zeros and
    // a footer pointing at both.
    let file = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| std::fs::read(p).is_ok_and(|b| b.len() > 64 && b.ends_with(b"SRTATSCG")))
        .max_by_key(|p| std::fs::metadata(p).expect("stat").len())
        .expect("a column-group file");
    let bytes = std::fs::read(&file).expect("read");
    let len = bytes.len();
    let mut footer = bytes[len - 64..].to_vec();
    let u64_at = |f: &[u8], i: usize| {
        u64::from_le_bytes(f[i * 8..i * 8 + 8].try_into().expect("8")) as usize
    };
    assert_eq!(
        crc32c(&footer[..48]).to_le_bytes(),
        footer[48..52],
        "the footer's checksum covers its handles"
    );
    let (index_at, index_len) = (u64_at(&footer, 0), u64_at(&footer, 1));
    let (filter_at, filter_len) = (u64_at(&footer, 2), u64_at(&footer, 3));
    let (props_at, props_len) = (u64_at(&footer, 4), u64_at(&footer, 5));
    assert!(filter_len > 16, "the file has a filter to give up");
    assert_eq!(bytes[index_at + index_len], 0, "the index is stored plain");
    // Entries begin: block count, then the first block's offset (0) and size.
    let mut src = &bytes[index_at..index_at + index_len];
    let mut varint = || {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (b, rest) = src.split_first().expect("varint");
            src = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
        }
        v
    };
    let count = varint();
    let offset = varint();
    let _size = varint();
    assert!(count > 1 && offset == 0, "count {count}, offset {offset}");
    let mut forged = Vec::new();
    put_varint64(&mut forged, count);
    put_varint64(&mut forged, offset);
    put_varint64(&mut forged, u64::MAX - 1000);
    forged.extend_from_slice(src);
    let mut out = bytes[..filter_at].to_vec();
    let new_index = out.len();
    out.extend_from_slice(&forged);
    out.extend_from_slice(&block_trailer(&forged, 0));
    let new_props = out.len();
    out.extend_from_slice(&bytes[props_at..props_at + props_len + 5]);
    assert!(out.len() <= len - 64, "the forged file fits");
    out.resize(len - 64, 0);
    for (i, v) in [new_index, forged.len(), 0, 0, new_props, props_len]
        .into_iter()
        .enumerate()
    {
        footer[i * 8..i * 8 + 8].copy_from_slice(&(v as u64).to_le_bytes());
    }
    let crc = crc32c(&footer[..48]);
    footer[48..52].copy_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&footer);
    let bytes = out;
    std::fs::write(&file, &bytes).expect("write");
    // The open checks the files it opens; whatever opens later, a scan
    // (in one part or two) must meet the damage as corruption.
    let check = |e: Error| {
        assert!(
            matches!(e, Error::Corruption { .. }) && e.to_string().contains("data block"),
            "{e}"
        )
    };
    let db = match Db::open(dir.path(), opts()) {
        Ok(db) => db,
        Err(e) => return check(e),
    };
    let t = db.table("t").expect("table");
    for threads in [1, 2] {
        match t
            .scan(ScanOptions::default().threads(threads))
            .and_then(|s| s.collect::<Result<Vec<RecordBatch>, Error>>())
        {
            Err(e) => check(e),
            Ok(b) => panic!("{threads} threads: {} batches", b.len()),
        }
    }
}
