//! A join holds what its budget allows, measured on the heap: an index
//! nested loop join whose inner side has one value on more rows than the
//! budget holds fails with a clear error without reading them all first,
//! and planning such a join samples it without holding the value's rows.
//!
//! The allocator of this test binary counts live bytes and their peak, so
//! the test holds exactly one test function (tests run in parallel threads
//! of one process).

mod common;

use common::counting::{self, Counting};
use common::join_schema as schema;
use strata::index::{Consistency, IndexKind, IndexSpec};
use strata::join::{Join, JoinMethod};
use strata::table::{TableOptions, Value};
use strata::{Db, Error, Options};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const BUDGET: usize = 256 << 10;
const ROWS: i64 = 3000;
const PAD: usize = 200;

#[test]
fn a_nested_loop_stops_reading_a_value_at_its_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let r = db
        .create_table("r", schema("a", "pr"), TableOptions::default())
        .expect("r");
    let s = db
        .create_table("s", schema("b", "ps"), TableOptions::default())
        .expect("s");
    // A covering composite index: the loop's inner rows come from index
    // entries alone, read one at a time (a posting-list index's get hands
    // back the whole list, which is the engine's read, not the join's).
    r.create_index(
        IndexSpec::new("ra", "a")
            .kind(IndexKind::Composite)
            .consistency(Consistency::Synchronous)
            .covering(&["pr"]),
    )
    .expect("index");
    let pad = "x".repeat(PAD);
    for id in 0..ROWS {
        r.upsert_row(&[Value::Int64(id), Value::Int64(7), pad.clone().into()])
            .expect("r");
    }
    for id in 0..40i64 {
        s.upsert_row(&[Value::Int64(id), Value::Int64(7), pad.clone().into()])
            .expect("s");
    }
    r.flush().expect("flush");
    s.flush().expect("flush");
    db.wait_for_background_work().expect("background");
    let join = |memory: usize| {
        Join::new(&s, "b", &r, "a")
            .method(JoinMethod::NestedLoopIndexRight)
            .memory(memory)
            .count()
    };
    // With room, the join runs (and the blocks it reads are cached).
    let all = join(64 << 20).expect("a budget that holds the value");
    assert_eq!(all.rows, 40 * ROWS as u64);
    let held = ROWS as usize * PAD;
    assert!(
        held > 2 * BUDGET,
        "the value's rows are more than the budget"
    );

    let base = counting::start();
    let err = join(BUDGET).expect_err("the value's rows do not fit");
    let grown = counting::grown_since(base);
    assert!(
        matches!(&err, Error::MemoryBudget { limit, what, .. }
            if *limit == BUDGET && what.contains("inner rows of one value")),
        "{err}"
    );
    // The budget, plus what a lookup part and the scan of the outer side
    // take beside it; reading the value's rows first held them all (and
    // their index entries): more than 1.5 MB.
    assert!(
        grown < 2 * BUDGET,
        "the join's heap grew by {grown} bytes under a budget of {BUDGET}"
    );

    // The planner samples outside the budget, so it must hold little: its
    // scan of `s` reads the 200 rows it samples, not a 4,096-row batch;
    // each sampled value's rows in `r` are counted as they stream, once per
    // distinct value; the index's sample is counted a part at a time. When
    // it held each of those, the heap grew by about 1 MB here (83 KB now).
    let stats = |memory: usize| {
        Join::new(&s, "b", &r, "a")
            .memory(memory)
            .statistics()
            .expect("the planner's statistics")
    };
    // Statistics are cached by budget: the first call samples and caches
    // the blocks the sample reads, the second samples again.
    stats(2 * BUDGET);
    let base = counting::start();
    let stats = stats(BUDGET);
    let grown = counting::grown_since(base);
    // Every `s` row's value is on every `r` row.
    assert_eq!(stats.left_match, 1.0);
    assert_eq!(stats.left_fanout, ROWS as f64);
    assert!(
        grown < BUDGET,
        "sampling the join for its plan grew the heap by {grown} bytes"
    );

    // A hash join reading `r` whole (about 700 KB): its scan's batches are
    // sized by the budget and charged (at 4,096 rows a batch, beside their
    // encoded tuples, the heap grew by 4 MB). What the budget does not
    // count is the scan's read buffer, one staged chunk of up to 1,024 rows
    // (or about 256 KiB) per source and thread (`docs/design.md`, "Joins").
    let grace = |threads: usize| {
        Join::new(&r, "a", &s, "b")
            .method(JoinMethod::GraceHash)
            .memory(BUDGET)
            .threads(threads)
            .count()
    };
    for threads in [1, 2] {
        grace(threads).expect("warms the cache with r's blocks");
        let base = counting::start();
        let x = grace(threads).expect("grace hash");
        let grown = counting::grown_since(base);
        assert_eq!(x.rows, 40 * ROWS as u64);
        assert!(x.peak_memory_bytes <= BUDGET as u64);
        assert!(
            grown < 4 * BUDGET,
            "a grace hash join on {threads} threads grew the heap by {grown} bytes"
        );
    }
}
