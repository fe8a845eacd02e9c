//! A scan streams: reading a table much larger than the memory it may use
//! (a small block cache, one batch at a time) keeps the process's heap
//! within a bound that does not grow with the table.
//!
//! The allocator of this test binary counts live bytes and their peak, so
//! the test holds exactly one test function (tests run in parallel threads
//! of one process).

mod common;

use common::counting::{self, Counting};
use strata::table::{Column, ColumnType, ScanOptions, Schema, Table, TableOptions, Value};
use strata::{Db, Options};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const ROWS: i64 = 60_000;

/// Scans `t` whole, `batch_rows` rows a batch: the rows and the bytes of
/// text column `col` it returned.
fn scan_text(t: &Table, batch_rows: usize, col: usize) -> (i64, usize) {
    let scan = ScanOptions {
        batch_rows,
        ..ScanOptions::default()
    };
    let (mut rows, mut text) = (0i64, 0usize);
    for b in t.scan(scan).expect("scan") {
        let b = b.expect("batch");
        rows += b.num_rows() as i64;
        text += b.column(col).to_data().buffers()[1].len();
    }
    (rows, text)
}
const TEXT: usize = 400;

#[test]
fn a_scan_of_a_table_larger_than_its_memory_streams() {
    let dir = tempfile::tempdir().expect("dir");
    let db = Db::open(
        dir.path(),
        Options {
            block_cache_bytes: 1 << 20,
            ..Options::default()
        },
    )
    .expect("open");
    let schema = Schema::new(
        vec![
            Column::new("id", ColumnType::Int64),
            Column::new("n", ColumnType::Int32),
            Column::new("s", ColumnType::Utf8),
        ],
        &["id"],
    )
    .expect("schema");
    let t = db
        .create_table(
            "big",
            schema,
            TableOptions {
                layout: "row-then-column:1".into(),
                write_buffer_size: 1 << 20,
                level1_max_bytes: 4 << 20,
                target_file_size: 1 << 20,
                ..TableOptions::default()
            },
        )
        .expect("create");
    for i in 0..ROWS {
        let s = format!("{i:0>width$}", width = TEXT);
        t.insert_row(&[Value::Int64(i), Value::Int32(i as i32), Value::Utf8(s)])
            .expect("insert");
    }
    t.flush().expect("flush");
    db.wait_for_background_work().expect("background");
    let table_bytes = ROWS as usize * TEXT;

    let base = counting::start();
    let (rows, text) = scan_text(&t, 1024, 2);
    let grown = counting::grown_since(base);
    assert_eq!(rows, ROWS);
    assert_eq!(text, table_bytes);
    // One batch (~0.4 MiB of text), one chunk per source, the 1 MiB cache:
    // a few MiB, against the table's 24 MiB.
    assert!(
        grown < table_bytes / 4,
        "the scan's heap grew by {grown} bytes for a table of {table_bytes}"
    );

    // Wide rows in whole-row sources (a memtable that holds them all): the
    // scan stages them a chunk at a time, and a chunk is bounded in bytes
    // as well as rows.
    let wide = db
        .create_table(
            "wide",
            Schema::new(
                vec![
                    Column::new("id", ColumnType::Int64),
                    Column::new("s", ColumnType::Utf8),
                ],
                &["id"],
            )
            .expect("schema"),
            TableOptions {
                layout: "row".into(),
                write_buffer_size: 64 << 20,
                ..TableOptions::default()
            },
        )
        .expect("create");
    const WIDE_ROWS: i64 = 600;
    const WIDE: usize = 32 << 10;
    for i in 0..WIDE_ROWS {
        let s = format!("{i:0>width$}", width = WIDE);
        wide.insert_row(&[Value::Int64(i), Value::Utf8(s)])
            .expect("insert");
    }
    let wide_bytes = WIDE_ROWS as usize * WIDE;
    let base = counting::start();
    let (rows, text) = scan_text(&wide, 4, 1);
    let grown = counting::grown_since(base);
    assert_eq!((rows, text), (WIDE_ROWS, wide_bytes));
    // A batch of 128 KiB and a staged chunk of about 256 KiB, against the
    // rows' 19 MiB (a chunk of 1,024 rows held them all).
    assert!(
        grown < wide_bytes / 8,
        "the scan's heap grew by {grown} bytes for wide rows of {wide_bytes}"
    );
}
