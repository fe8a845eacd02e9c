//! Dictionary-encoded string columns of tables (issue 21, seed 002):
//! column-group files give a string column a per-file dictionary when few
//! of its values are distinct, and scans skip blocks by their code ranges
//! and test rows on codes. Tables with dictionaries and without must read
//! alike, through restarts; a damaged dictionary is an error naming the
//! file.

use std::collections::BTreeMap;
use std::path::Path;

use arrow_array::{Array, Int32Array, Int64Array, StringArray};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::table::{
    CmpOp, Column, ColumnType, Predicate, ScanOptions, Schema, TableOptions, Value,
};
use strata::{Db, Error, Options};

const ROWS: i64 = 6000;

fn schema() -> Schema {
    Schema::new(
        vec![
            Column::new("id", ColumnType::Int64),
            // Few distinct values, and clustered by key: blocks hold narrow
            // code ranges.
            Column::nullable("city", ColumnType::Utf8),
            // Every value distinct: stored plainly.
            Column::nullable("note", ColumnType::Utf8),
            Column::nullable("n", ColumnType::Int32),
            Column::nullable("tag", ColumnType::Binary),
        ],
        &["id"],
    )
    .expect("schema")
}

fn options(max_distinct_ratio: f64) -> TableOptions {
    TableOptions {
        layout: "column".into(),
        num_levels: 4,
        size_ratio: 4,
        level1_max_bytes: 64 << 10,
        write_buffer_size: 64 << 10,
        target_file_size: 256 << 10,
        block_size: 2048,
        level0_compaction_trigger: 2,
        max_distinct_ratio,
        ..Default::default()
    }
}

/// The model's row: city, note, n, tag.
type Row = (Option<String>, Option<String>, Option<i32>, Option<Vec<u8>>);

fn city(id: i64) -> String {
    // Long shared prefixes, so front coding and the 32-byte statistics
    // limit of plain strings both matter.
    format!("a-city-whose-name-is-quite-long-{:03}", id / 250)
}

fn load(db: &Db, name: &str, max_distinct_ratio: f64, rng: &mut StdRng) -> BTreeMap<i64, Row> {
    let t = db
        .create_table(name, schema(), options(max_distinct_ratio))
        .expect("create");
    let mut model = BTreeMap::new();
    for round in 0..3 {
        for id in 0..ROWS {
            if round > 0 && !rng.random_bool(0.2) {
                continue;
            }
            let row: Row = (
                (!rng.random_bool(0.05)).then(|| city(id)),
                Some(format!("note {id} {round} {}", rng.random::<u32>())),
                Some(rng.random_range(-100..100)),
                (id % 3 == 0).then(|| vec![0, (id % 5) as u8, 0xff]),
            );
            let cell = |v: &Option<String>| v.clone().map_or(Value::Null, Value::Utf8);
            t.upsert_row(&[
                Value::Int64(id),
                cell(&row.0),
                cell(&row.1),
                row.2.map_or(Value::Null, Value::Int32),
                row.3.clone().map_or(Value::Null, Value::Binary),
            ])
            .expect("upsert");
            model.insert(id, row);
        }
        // Partial updates and deletes between rounds.
        for _ in 0..200 {
            let id = rng.random_range(0..ROWS);
            if rng.random_bool(0.3) {
                t.delete_row(&[Value::Int64(id)]).expect("delete");
                model.remove(&id);
            } else if let Some(r) = model.get_mut(&id) {
                // The row's own city or null: blocks keep narrow ranges.
                let c = rng.random_bool(0.5).then(|| city(id));
                let v = c.clone().map_or(Value::Null, Value::Utf8);
                t.update_row(&[Value::Int64(id)], &[("city", v)])
                    .expect("update");
                r.0 = c;
            }
        }
        t.compact().expect("compact");
    }
    model
}

type Scanned = Vec<(i64, Option<String>, Option<String>, Option<i32>)>;

fn scan(db: &Db, name: &str, filter: Option<Predicate>) -> Scanned {
    let t = db.table(name).expect("table");
    let mut opts = ScanOptions::default().columns(&["id", "city", "note", "n"]);
    if let Some(p) = filter {
        opts = opts.filter(p);
    }
    let mut out = Vec::new();
    for b in t.scan(opts).expect("scan") {
        let b = b.expect("batch");
        let ids = b
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("id");
        let city = b
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("city");
        let note = b
            .column(2)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("note");
        let n = b
            .column(3)
            .as_any()
            .downcast_ref::<Int32Array>()
            .expect("n");
        for r in 0..b.num_rows() {
            let s = |a: &StringArray| (!a.is_null(r)).then(|| a.value(r).to_string());
            out.push((
                ids.value(r),
                s(city),
                s(note),
                (!n.is_null(r)).then(|| n.value(r)),
            ));
        }
    }
    out
}

fn predicates() -> Vec<Predicate> {
    let c = |op, v: String| Predicate::cmp("city", op, v);
    let present = city(2500);
    let absent = format!("{}-x", city(2500));
    let mut ps = Vec::new();
    for op in [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ] {
        ps.push(c(op, present.clone()));
        ps.push(c(op, absent.clone()));
    }
    ps.push(c(CmpOp::Lt, String::new()));
    ps.push(c(CmpOp::Ge, "zzz".into()));
    ps.push(
        c(CmpOp::Ge, city(1000))
            .and(c(CmpOp::Lt, city(1500)))
            .or(Predicate::IsNull("city".into())),
    );
    ps.push(Predicate::Not(Box::new(c(CmpOp::Eq, city(0)))));
    ps.push(c(CmpOp::Eq, city(4000)).or(c(CmpOp::Eq, city(10))));
    ps.push(Predicate::cmp("note", CmpOp::Ge, "note 59"));
    ps.push(Predicate::In {
        column: "city".into(),
        values: vec![city(300).into(), absent.clone().into(), city(5900).into()],
    });
    for prefix in [
        "a-city-whose-name-is-quite-long-01".to_string(),
        "a-city-whose-name-is-quite-long-".to_string(),
        "b".to_string(),
        String::new(),
    ] {
        ps.push(Predicate::StartsWith {
            column: "city".into(),
            prefix: prefix.into(),
        });
    }
    ps.push(Predicate::StartsWith {
        column: "tag".into(),
        prefix: Value::Binary(vec![0, 2]),
    });
    ps
}

fn open(dir: &Path) -> Db {
    Db::open(dir, Options::default()).expect("open")
}

#[test]
fn tables_with_dictionaries_read_like_tables_without_through_restarts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = StdRng::seed_from_u64(21);
    let (plain_model, coded_model);
    {
        let db = open(dir.path());
        plain_model = load(&db, "plain", 0.0, &mut StdRng::seed_from_u64(7));
        let before = db.stats();
        coded_model = load(&db, "coded", 0.25, &mut StdRng::seed_from_u64(7));
        let s = db.stats();
        // `city` got dictionaries; `note` (all distinct) stayed plain.
        assert!(
            s.dictionary_files_written > before.dictionary_files_written,
            "{s:?}"
        );
        assert!(
            s.plain_value_files_written > before.plain_value_files_written,
            "{s:?}"
        );
        // Compactions of files with dictionaries carried `city` as codes.
        assert!(
            s.values_carried_as_codes > before.values_carried_as_codes,
            "{s:?}"
        );
        db.close().expect("close");
    }
    assert_eq!(plain_model, coded_model);
    let db = open(dir.path());
    let all = scan(&db, "plain", None);
    assert_eq!(all.len(), plain_model.len());
    assert_eq!(all, scan(&db, "coded", None));
    for p in predicates() {
        let want = scan(&db, "plain", Some(p.clone()));
        let skipped = db
            .table("coded")
            .expect("t")
            .statistics()
            .scan_blocks_skipped;
        let got = scan(&db, "coded", Some(p.clone()));
        assert_eq!(got, want, "{p:?}");
        // And the model agrees: a row passes when its city compares true.
        if let Predicate::Cmp { column, op, value } = &p
            && column == "city"
        {
            let Value::Utf8(v) = value else { panic!() };
            let n = plain_model
                .values()
                .filter(|r| {
                    r.0.as_ref()
                        .is_some_and(|c| op_holds(*op, c.as_str().cmp(v)))
                })
                .count();
            assert_eq!(got.len(), n, "{p:?}");
            // A selective comparison skips blocks by their code range.
            // (Blocks are skipped where no other source holds their keys:
            // here, when the scan reads `city`'s group only.)
            if *op == CmpOp::Eq {
                let t = db.table("coded").expect("t");
                let opts = ScanOptions::default().columns(&["id"]).filter(p.clone());
                let rows: usize = t
                    .scan(opts)
                    .expect("scan")
                    .map(|b| b.expect("batch").num_rows())
                    .sum();
                assert_eq!(rows, n, "{p:?}");
                let after = t.statistics().scan_blocks_skipped;
                assert!(after > skipped, "{p:?}");
            }
        }
    }
    // Point reads through dictionaries.
    let t = db.table("coded").expect("t");
    for _ in 0..200 {
        let id = rng.random_range(0..ROWS);
        let got = t
            .get(&[Value::Int64(id)], Some(&["city", "tag"]))
            .expect("get");
        let want = plain_model.get(&id).map(|r| {
            vec![
                r.0.clone().map_or(Value::Null, Value::Utf8),
                r.3.clone().map_or(Value::Null, Value::Binary),
            ]
        });
        assert_eq!(got, want, "id {id}");
    }
}

fn op_holds(op: CmpOp, o: std::cmp::Ordering) -> bool {
    match op {
        CmpOp::Eq => o.is_eq(),
        CmpOp::Ne => o.is_ne(),
        CmpOp::Lt => o.is_lt(),
        CmpOp::Le => o.is_le(),
        CmpOp::Gt => o.is_gt(),
        CmpOp::Ge => o.is_ge(),
    }
}

#[test]
fn a_damaged_table_dictionary_is_a_corruption_error_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = open(dir.path());
        let t = db
            .create_table("t", schema(), options(0.25))
            .expect("create");
        for id in 0..2000 {
            t.upsert_row(&[
                Value::Int64(id),
                Value::Utf8(format!("shade-{}", id % 3)),
                Value::Null,
                Value::Int32(1),
                Value::Null,
            ])
            .expect("upsert");
        }
        t.compact().expect("compact");
        db.close().expect("close");
    }
    // After the compaction every row is in column-group files, whose data
    // blocks hold codes: the first "shade-" in a file is its dictionary's.
    let damaged = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .find_map(|p| {
            let mut bytes = std::fs::read(&p).expect("read");
            let at = bytes.windows(6).position(|w| w == b"shade-")?;
            bytes[at] ^= 0x20;
            std::fs::write(&p, &bytes).expect("write");
            Some(p)
        })
        .expect("a file with the dictionary");
    let db = open(dir.path());
    let t = db.table("t").expect("table");
    let err = t
        .scan(ScanOptions::default().columns(&["id", "city"]))
        .and_then(|s| s.map(|b| b.map(|_| ())).collect::<Result<Vec<()>, Error>>())
        .expect_err("a scan of the damaged file");
    match &err {
        Error::Corruption { file, .. } => assert_eq!(file, &damaged, "{err}"),
        other => panic!("expected a corruption error, got {other}"),
    }
}
