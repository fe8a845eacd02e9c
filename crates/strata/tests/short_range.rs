//! Memtable retention and iterator reduction (seed 004): they engage, they
//! save work, and they never change a result.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use strata::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

fn options(retention: bool, reduction: bool) -> Options {
    let mut o = Options::default();
    let k = &mut o.default_keyspace;
    k.write_buffer_size = 64 * 1024;
    k.target_file_size = 64 * 1024;
    k.level1_max_bytes = 256 * 1024;
    k.level0_compaction_trigger = 4;
    k.retain_flushed_memtables = retention;
    k.iterator_reduction = reduction;
    o.block_cache_bytes = 1 << 20;
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:07}").into_bytes()
}

fn short_scan(
    db: &Db,
    start: &[u8],
    n: usize,
    snapshot: Option<strata::SeqNo>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db
        .default_keyspace()
        .iter(ReadOptions {
            snapshot,
            ..Default::default()
        })
        .expect("iter");
    it.seek(start);
    let mut out = Vec::new();
    while it.valid() && out.len() < n {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().expect("status");
    out
}

#[test]
fn repeated_short_scans_seek_fewer_children_with_reduction() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(false, true)).expect("open");
    // Old data over the whole key space settles in the deeper levels;
    // recent updates only to the top quarter are then flushed four times,
    // which compacts them from level 0 into level 1. Scans below the top
    // quarter draw nothing from level 1.
    type Levels = [(usize, u64)];
    let wait_for = |what: &str, done: &dyn Fn(&Levels) -> bool| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let levels = db.stats().keyspaces[0].levels.clone();
            if done(&levels) {
                return levels;
            }
            assert!(std::time::Instant::now() < deadline, "{what}: {levels:?}");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    for i in 0..20_000u32 {
        db.put(&key(i), format!("v0-{i}").as_bytes()).expect("put");
    }
    db.compact().expect("compact");
    wait_for("base data settles", &|l| {
        l[0].0 == 0 && l[1].1 <= 256 * 1024
    });
    for round in 0..4u32 {
        for i in 15_000..16_000u32 {
            db.put(&key(i), format!("v{round}-{i}").as_bytes())
                .expect("put");
        }
        db.flush().expect("flush");
    }
    let levels = wait_for("updates reach level 1", &|l| l[0].0 == 0 && l[1].0 > 0);
    assert!(levels[2..].iter().any(|l| l.0 > 0), "{levels:?}");
    // A wide first scan records which levels the range draws from.
    let first = short_scan(&db, &key(1000), 2000, None);
    let before = db.stats();
    let mut results = Vec::new();
    for i in 0..100u32 {
        results.push(short_scan(&db, &key(1000 + i * 13), 10, None));
    }
    let after = db.stats();
    let seeks = after.iterator_child_seeks - before.iterator_child_seeks;
    let children = after.iterator_children - before.iterator_children;
    assert!(
        seeks < children,
        "reduction skipped no seek: {seeks} seeks for {children} children"
    );
    let ks = &after.keyspaces[0];
    assert!(ks.level_filter_hits >= 100, "{ks:?}");
    for (i, r) in results.iter().enumerate() {
        let start = first
            .iter()
            .position(|(k, _)| k == &key(1000 + i as u32 * 13))
            .expect("present");
        assert_eq!(r.as_slice(), &first[start..start + 10]);
    }
}

/// The key past both levels' other keys that [`two_level_tree`] writes.
const FAR: u32 = 50_000;

/// Every key below 30,000 in a deep level, and the even keys below 20,000
/// (plus [`FAR`]) rewritten into level 1: scans below 20,000 draw from both
/// levels, scans between 20,000 and 30,000 from the deep one only.
fn two_level_tree(db: &Db) {
    for i in 0..30_000u32 {
        db.put(&key(i), b"old").expect("put");
    }
    db.compact().expect("compact");
    for _ in 0..4 {
        for i in (0..20_000u32).step_by(2) {
            db.put(&key(i), b"new").expect("put");
        }
        // One key far past the others: the upper level's last file spans
        // the hole 20,000-49,999, so a seek into the hole reads that file
        // (a skip there spares a read) rather than being answered lazily.
        db.put(&key(FAR), b"far").expect("put");
        db.flush().expect("flush");
    }
    db.wait_for_background_work().expect("settle");
    // How many level-0 files the last compaction left behind (fewer than the
    // trigger) depends on how flushes and compactions interleaved. One-key
    // flushes top level 0 up to the trigger, so it empties into level 1.
    for _ in 0..8 {
        if db.stats().keyspaces[0].levels[0].0 == 0 {
            break;
        }
        db.put(&key(0), b"new").expect("put");
        db.flush().expect("flush");
        db.wait_for_background_work().expect("settle");
    }
    let levels = db.stats().keyspaces[0].levels.clone();
    assert_eq!(levels[0].0, 0, "{levels:?}");
    assert!(
        levels[1].0 > 0 && levels[2..].iter().any(|l| l.0 > 0),
        "{levels:?}"
    );
}

#[test]
fn the_level_filter_idles_when_it_does_not_pay_and_wakes_when_it_would() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(false, true)).expect("open");
    // Scans below 20,000 draw from both levels, so the filter can never
    // let them skip one; scans above draw from the deep level only.
    two_level_tree(&db);
    let expect = |start: u32, n: u32| -> Vec<(Vec<u8>, Vec<u8>)> {
        (start..start + n)
            .map(|i| {
                let v: &[u8] = if i < 20_000 && i % 2 == 0 {
                    b"new"
                } else {
                    b"old"
                };
                (key(i), v.to_vec())
            })
            .collect()
    };
    // Distinct starts, none repeated: no lookup can hit.
    for i in 0..1_000u32 {
        let start = (i * 7_919) % 19_000;
        assert_eq!(short_scan(&db, &key(start), 10, None), expect(start, 10));
    }
    let ks = db.stats().keyspaces[0].clone();
    assert!(!ks.level_filter_active, "{ks:?}");
    let idle_lookups = ks.level_filter_lookups;
    assert!(idle_lookups < 1_000, "idle scans mostly skip it: {ks:?}");
    // The same range above 20,000, over and over: the sampled scans hit, and
    // the filter is consulted by every scan again.
    for _ in 0..(256 + 2) * 64 {
        assert_eq!(short_scan(&db, &key(25_000), 5, None), expect(25_000, 5));
    }
    let ks = db.stats().keyspaces[0].clone();
    assert!(ks.level_filter_active, "{ks:?}");
    assert!(ks.level_filter_hits >= 256, "{ks:?}");
    assert!(ks.level_filter_saved >= 256, "{ks:?}");
}

#[test]
fn without_gates_every_scan_consults_the_level_filter_even_when_it_does_not_pay() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = options(false, true);
    opts.default_keyspace.reduction_gates = false;
    let db = Db::open(dir.path(), opts).expect("open");
    two_level_tree(&db);
    // The scans of the gated test above, which idle the gated filter.
    let before = db.stats().keyspaces[0].level_filter_lookups;
    for i in 0..1_000u32 {
        let start = (i * 7_919) % 19_000;
        assert_eq!(short_scan(&db, &key(start), 10, None).len(), 10);
    }
    let ks = db.stats().keyspaces[0].clone();
    assert!(!ks.level_filter_active, "{ks:?}");
    assert!(ks.level_filter_lookups - before >= 1_000, "{ks:?}");
}

#[test]
fn scans_count_the_levels_that_held_nothing_in_their_range() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(false, false)).expect("open");
    two_level_tree(&db);
    let levels = db.stats().keyspaces[0].levels.clone();
    let populated = levels.iter().skip(1).filter(|l| l.0 > 0).count();
    assert_eq!(populated, 2, "{levels:?}");
    let unused = || db.stats().scan_levels_unused;
    // Below 20,000 both levels supply entries; above, only the deep one.
    let before = unused();
    for i in 0..50u32 {
        assert_eq!(short_scan(&db, &key(i * 300), 10, None).len(), 10);
    }
    assert_eq!(unused(), before, "both levels used below 20,000");
    for i in 0..50u32 {
        assert_eq!(short_scan(&db, &key(21_000 + i * 150), 10, None).len(), 10);
    }
    assert_eq!(unused(), before + 50, "level 1 unused above 20,000");
}

#[test]
fn point_first_seeks_idle_when_scans_leave_their_start_key_and_wake_when_they_stop() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = options(false, true);
    opts.default_keyspace.write_buffer_size = 4 << 20;
    let db = Db::open(dir.path(), opts).expect("open");
    // Every key on disk, the even ones rewritten in the memtable: a
    // point-first seek to an even key stops at the memtable.
    for i in 0..5_000u32 {
        db.put(&key(i), b"old").expect("put");
    }
    db.compact().expect("compact");
    for i in (0..5_000u32).step_by(2) {
        db.put(&key(i), b"new").expect("put");
    }
    let expect = |start: u32, n: u32| -> Vec<(Vec<u8>, Vec<u8>)> {
        (start..start + n)
            .map(|i| {
                let v: &[u8] = if i % 2 == 0 { b"new" } else { b"old" };
                (key(i), v.to_vec())
            })
            .collect()
    };
    // Scans of ten step past their start key and seek the deferred
    // sources anyway: point-first saves nothing, and idles.
    for i in 0..1_000u32 {
        let start = (i * 2 * 7_919) % 4_900;
        assert_eq!(short_scan(&db, &key(start), 10, None), expect(start, 10));
    }
    let ks = db.stats().keyspaces[0].clone();
    assert!(!ks.point_first_active, "{ks:?}");
    assert_eq!(ks.point_first_saved, 0, "{ks:?}");
    assert!(ks.point_first_scans >= 256, "{ks:?}");
    // Reads of one entry end at the start key: the sampled scans save, and
    // every scan seeks point-first again.
    for i in 0..(256 + 2) * 64u32 {
        let start = (i * 2 * 7_919) % 4_900;
        let mut it = db
            .default_keyspace()
            .iter(ReadOptions::default())
            .expect("iter");
        it.seek(&key(start));
        assert!(it.valid());
        assert_eq!(
            (it.key().to_vec(), it.value().to_vec()),
            expect(start, 1)[0]
        );
    }
    let ks = db.stats().keyspaces[0].clone();
    assert!(ks.point_first_active, "{ks:?}");
    assert!(ks.point_first_saved >= 256, "{ks:?}");
}

#[test]
fn reduced_scans_match_full_scans_while_writes_and_compactions_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(true, true)).expect("open");
    // Old data over the whole key space in the deeper levels; updates to the
    // top quarter only, so that level 1 (and what compaction moves) covers
    // that quarter and scans below it have a level to leave out. Scans that
    // run into the top quarter must wake it.
    for i in 0..20_000u32 {
        db.put(&key(i), format!("v0-{i}").as_bytes()).expect("put");
    }
    db.compact().expect("compact");
    for round in 0..4u32 {
        for i in 15_000..16_000u32 {
            db.put(&key(i), format!("v1.{round}-{i}").as_bytes())
                .expect("put");
        }
        db.flush().expect("flush");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), Arc::clone(&stop));
        thread::spawn(move || {
            let mut g = 2u32;
            while !stop.load(Ordering::Relaxed) {
                let mut b = WriteBatch::new();
                for i in (14_900 + g % 13..20_000).step_by(31) {
                    if i % 3 == 0 {
                        b.delete(&key(i));
                    } else {
                        b.put(&key(i), format!("v{g}-{i}").as_bytes());
                    }
                }
                db.write(WriteOptions::default(), b).expect("write");
                g += 1;
            }
        })
    };
    let mut rounds = 0;
    while rounds < 30 {
        let snap = db.snapshot();
        // Reference: a full scan from the first key, which is not reduced.
        let mut it = db
            .default_keyspace()
            .iter(ReadOptions {
                snapshot: Some(snap.seqno()),
                ..Default::default()
            })
            .expect("iter");
        it.seek_to_first();
        let mut all = Vec::new();
        while it.valid() {
            all.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        it.status().expect("status");
        drop(it);
        // A wide scan records the levels of the bottom of the key space;
        // the short scans below that start inside it use the record.
        let wide = short_scan(&db, &key(0), 4000, Some(snap.seqno()));
        assert_eq!(wide.as_slice(), &all[..4000]);
        for j in 0..40u32 {
            let start = key((rounds * 617 + j * 491) % 20_000);
            let got = short_scan(&db, &start, 1 + (j as usize % 50), Some(snap.seqno()));
            let from = all.partition_point(|(k, _)| k.as_slice() < start.as_slice());
            let want = &all[from..(from + got.len()).min(all.len())];
            assert_eq!(
                got.as_slice(),
                want,
                "round {rounds} start {:?}",
                String::from_utf8_lossy(&start)
            );
            assert!(got.len() == 1 + (j as usize % 50) || from + got.len() == all.len());
        }
        rounds += 1;
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().expect("writer");
    let st = db.stats();
    assert!(
        st.compactions > 0 && st.keyspaces[0].level_filter_hits > 0,
        "{}",
        st.render()
    );
}

#[test]
fn retained_memtables_serve_level0_reads_and_respect_the_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = options(true, false);
    o.default_keyspace.level0_compaction_trigger = 100;
    o.default_keyspace.level0_slowdown_trigger = 100;
    o.default_keyspace.level0_stop_trigger = 100;
    o.default_keyspace.retained_memtable_bytes = 300 * 1024;
    let db = Db::open(dir.path(), o.clone()).expect("open");
    for i in 0..30_000u32 {
        db.put(&key(i), format!("v-{i}").as_bytes()).expect("put");
    }
    db.flush().expect("flush");
    let ks = &db.stats().keyspaces[0];
    assert!(ks.levels[0].0 >= 5, "several level-0 files: {ks:?}");
    assert!(
        ks.retained_memtables > 0 && ks.retained_memtables < ks.levels[0].0,
        "{ks:?}"
    );
    assert!(ks.retained_memtable_bytes <= 300 * 1024, "{ks:?}");
    for i in (0..30_000u32).step_by(101) {
        assert_eq!(
            db.get(&key(i)).expect("get"),
            Some(format!("v-{i}").into_bytes())
        );
    }
    assert_eq!(short_scan(&db, &key(29_990), 100, None).len(), 10);
    // Compaction removes the level-0 files, and their memtables with them.
    db.compact().expect("compact");
    assert_eq!(db.stats().keyspaces[0].retained_memtables, 0);
    drop(db);
    // After a restart nothing is retained and everything reads from files.
    let db = Db::open(dir.path(), o).expect("reopen");
    assert_eq!(db.stats().keyspaces[0].retained_memtables, 0);
    assert_eq!(
        db.get(&key(12_345)).expect("get"),
        Some(b"v-12345".to_vec())
    );
}

#[test]
fn a_retained_copy_holds_what_its_file_holds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = options(true, false);
    o.default_keyspace.write_buffer_size = 4 << 20;
    o.default_keyspace.retained_memtable_bytes = 64 << 20;
    let db = Db::open(dir.path(), o).expect("open");
    let value = |round: u32, i: u32| format!("{round:03}-{i:04}-{}", "x".repeat(80)).into_bytes();
    // Forty overwrites of 200 keys with no snapshot: the file keeps the
    // newest version of each, and so does its copy.
    for round in 0..40 {
        for i in 0..200 {
            db.put(&key(i), &value(round, i)).expect("put");
        }
    }
    db.flush().expect("flush");
    let ks = &db.stats().keyspaces[0];
    assert_eq!(ks.retained_memtables, 1, "{ks:?}");
    assert!(
        ks.retained_memtable_bytes < 200 * 200,
        "only the newest versions are copied: {ks:?}"
    );
    // A snapshot keeps the versions it sees in the next file, and in its
    // copy.
    let snap = db.snapshot();
    for i in 0..200 {
        db.put(&key(i), &value(99, i)).expect("put");
    }
    db.flush().expect("flush");
    assert_eq!(db.stats().keyspaces[0].retained_memtables, 2);
    for i in (0..200).step_by(7) {
        assert_eq!(db.get(&key(i)).expect("get"), Some(value(99, i)));
        assert_eq!(
            db.default_keyspace().get_at(&key(i), &snap).expect("get"),
            Some(value(39, i))
        );
    }
    let old = short_scan(&db, &key(10), 5, Some(snap.seqno()));
    let new = short_scan(&db, &key(10), 5, None);
    assert_eq!(
        old,
        (10..15).map(|i| (key(i), value(39, i))).collect::<Vec<_>>()
    );
    assert_eq!(
        new,
        (10..15).map(|i| (key(i), value(99, i))).collect::<Vec<_>>()
    );
}

#[test]
fn the_default_retention_budget_holds_a_full_level0() {
    // With the automatic budget (0), every level-0 file below the
    // compaction trigger keeps its memtable: a memtable is counted a little
    // above the write buffer, and the budget leaves room for that.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = options(true, false);
    o.default_keyspace.level0_compaction_trigger = 4;
    assert_eq!(o.default_keyspace.retained_memtable_bytes, 0);
    assert_eq!(o.default_keyspace.retention_budget(), 5 * 64 * 1024);
    let db = Db::open(dir.path(), o).expect("open");
    let ks = db.default_keyspace();
    for round in 0..3u32 {
        // About 40 KiB: under the 64 KiB write buffer, one file per round.
        for i in 0..800u32 {
            ks.put(&key(round * 800 + i), &[b'v'; 20]).expect("put");
        }
        db.flush().expect("flush");
    }
    let st = &db.stats().keyspaces[0];
    // Every level-0 file (compaction may have moved some down) keeps its
    // memtable.
    assert!(st.levels[0].0 >= 2, "{st:?}");
    assert_eq!(st.retained_memtables, st.levels[0].0, "{st:?}");
    assert!(st.retained_memtable_bytes <= 5 * 64 * 1024, "{st:?}");
    let mut o = Options::default();
    o.default_keyspace.retained_memtable_bytes = 1234;
    assert_eq!(o.default_keyspace.retention_budget(), 1234);
}

#[test]
fn default_options_seek_point_first_and_retain_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let defaults = strata::KeyspaceOptions::default();
    assert!(defaults.iterator_reduction);
    assert!(!defaults.retain_flushed_memtables);
    // A key on disk and rewritten in the memtable: a one-entry read stops
    // at the memtable.
    for i in 0..100u32 {
        db.put(&key(i), b"old").expect("put");
    }
    db.flush().expect("flush");
    db.compact().expect("compact");
    for i in 0..100u32 {
        db.put(&key(i), b"new").expect("put");
    }
    db.flush().expect("flush");
    db.put(&key(7), b"newest").expect("put");
    let before = db.stats();
    let mut it = db
        .default_keyspace()
        .iter(ReadOptions::default())
        .expect("iter");
    it.seek(&key(7));
    assert_eq!((it.key(), it.value()), (&key(7)[..], &b"newest"[..]));
    drop(it);
    let after = db.stats();
    let children = after.iterator_children - before.iterator_children;
    let seeks = after.iterator_child_seeks - before.iterator_child_seeks;
    assert!(
        children >= 3,
        "memtable, a level-0 file and a level: {children}"
    );
    assert_eq!(seeks, 1, "only the memtable is seeked");
    assert_eq!(after.keyspaces[0].retained_memtables, 0);
}
