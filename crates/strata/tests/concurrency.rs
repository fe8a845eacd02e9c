//! Many threads at once: writers, point readers and iterators racing with
//! background flushes and compactions.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use strata::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

fn options() -> Options {
    let mut o = Options::default();
    o.default_keyspace.write_buffer_size = 64 * 1024;
    o.default_keyspace.target_file_size = 64 * 1024;
    o.default_keyspace.level1_max_bytes = 256 * 1024;
    o.default_keyspace.level0_compaction_trigger = 2;
    o.block_cache_bytes = 512 * 1024;
    o
}

#[test]
fn concurrent_writers_each_see_their_own_writes_and_all_survive_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    let threads = 4u32;
    let per = 3000u32;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let db = db.clone();
            thread::spawn(move || {
                for i in 0..per {
                    let k = format!("t{t}-{i:06}");
                    db.put(k.as_bytes(), format!("{i}").as_bytes())
                        .expect("put");
                    if i % 97 == 0 {
                        // Read-your-writes: acknowledged means visible.
                        assert_eq!(
                            db.get(k.as_bytes()).expect("get"),
                            Some(format!("{i}").into_bytes())
                        );
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("writer");
    }
    let st = db.stats();
    assert!(st.flushes > 0 && st.compactions > 0, "{}", st.render());
    assert!(st.write_groups <= st.writes);
    db.close().expect("close");
    let db = Db::open(dir.path(), options()).expect("reopen");
    let all = db
        .default_keyspace()
        .scan(None, None, usize::MAX)
        .expect("scan");
    assert_eq!(all.len(), (threads * per) as usize);
}

#[test]
fn iterators_keep_one_snapshot_while_compaction_rewrites_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    let keys = 2000u32;
    // Every batch rewrites all keys with the same generation number, so any
    // consistent view shows one generation across all keys.
    let write_gen = move |db: &Db, g: u64| {
        for chunk in (0..keys).collect::<Vec<_>>().chunks(500) {
            let mut b = WriteBatch::new();
            for i in chunk {
                b.put(format!("k{i:05}").as_bytes(), &g.to_le_bytes());
            }
            db.write(WriteOptions::default(), b).expect("write");
        }
    };
    write_gen(&db, 0);
    let generation = Arc::new(AtomicU64::new(0));
    let writer = {
        let (db, generation) = (db.clone(), Arc::clone(&generation));
        thread::spawn(move || {
            let mut g = 1;
            while g < 40 {
                write_gen(&db, g);
                generation.store(g, Ordering::Relaxed);
                g += 1;
            }
        })
    };
    let mut checked = 0;
    while generation.load(Ordering::Relaxed) < 39 && checked < 200 {
        let snap = db.snapshot();
        let ks = db.default_keyspace();
        let mut it = ks
            .iter(ReadOptions {
                snapshot: Some(snap.seqno()),
                ..Default::default()
            })
            .expect("iter");
        it.seek_to_first();
        let mut gens = std::collections::BTreeMap::new();
        let mut n = 0;
        while it.valid() {
            let g = u64::from_le_bytes(it.value().try_into().expect("8 bytes"));
            *gens.entry(g).or_insert(0) += 1;
            n += 1;
            it.next();
        }
        it.status().expect("iterator status");
        assert_eq!(n, keys);
        // Batches of 500 keys are atomic; a snapshot may fall between the
        // batches of one generation, so at most two generations appear, in
        // whole multiples of 500 keys.
        assert!(gens.len() <= 2, "{gens:?}");
        assert!(gens.values().all(|c| c % 500 == 0), "{gens:?}");
        checked += 1;
    }
    // The writer writes all its generations (enough for compactions
    // whatever the machine's load did to the interleaving) before the
    // count is checked.
    writer.join().expect("writer");
    db.wait_for_background_work().expect("background work");
    assert!(db.stats().compactions > 0);
}

/// Synced writers from several threads: every acknowledged write is there
/// after a reopen, and the group commit's wait for a companion (on by
/// default) neither loses a wake-up nor lets an fsync carry a write twice.
/// With `max_sync_gather_wait` zero the same writes must land too.
#[test]
fn synced_writers_share_fsyncs_and_lose_nothing() {
    for gather in [
        std::time::Duration::from_millis(1),
        std::time::Duration::ZERO,
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut o = options();
        o.max_sync_gather_wait = gather;
        let db = Db::open(dir.path(), o.clone()).expect("open");
        let (threads, per) = (4u32, 150u32);
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let db = db.clone();
                thread::spawn(move || {
                    let sync = WriteOptions {
                        sync: true,
                        ..WriteOptions::default()
                    };
                    for i in 0..per {
                        let mut b = WriteBatch::new();
                        b.put(format!("s{t}-{i:05}").as_bytes(), b"v");
                        db.write(sync, b).expect("synced write");
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("writer");
        }
        let st = db.stats();
        assert_eq!(st.writes, u64::from(threads * per), "{}", st.render());
        assert!(st.wal_syncs <= st.write_groups, "{}", st.render());
        assert!(st.sync_gathers <= st.write_groups, "{}", st.render());
        if gather.is_zero() {
            assert_eq!(st.sync_gathers, 0, "{}", st.render());
        }
        drop(db);
        let db = Db::open(dir.path(), o).expect("reopen");
        let all = db
            .default_keyspace()
            .scan(None, None, usize::MAX)
            .expect("scan");
        assert_eq!(all.len(), (threads * per) as usize);
    }
}
