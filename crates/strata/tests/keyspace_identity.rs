//! A keyspace's identity (its merge operator and layout) is recorded in the
//! manifest, and a reopen that has not registered the keyspace again does
//! not flush or compact it with the wrong options (issue 19).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::log::{LogReader, TailPolicy};
use strata::manifest::VersionEdit;
use strata::merge::U64AddOperator;
use strata::options::TieredCompressionLayout;
use strata::sst::{Compression, TableReader};
use strata::stats::Statistics;
use strata::vfs::{StdVfs, Vfs};
use strata::{Db, Error, KeyspaceOptions, Level, Options, WriteBatch, WriteOptions};

/// The counters keyspace: a merge operator, uncompressed level 0, Zstd
/// from level 1 on, and sizes small enough that a few thousand writes
/// flush and compact.
fn counters_options() -> KeyspaceOptions {
    KeyspaceOptions {
        write_buffer_size: 32 << 10,
        level1_max_bytes: 64 << 10,
        target_file_size: 32 << 10,
        level0_compaction_trigger: 2,
        merge_operator: Some(Arc::new(U64AddOperator)),
        layout: Arc::new(TieredCompressionLayout {
            hot: Compression::None,
            cold: Compression::Zstd,
            cold_from_level: Level(1),
        }),
        ..KeyspaceOptions::default()
    }
}

fn options() -> Options {
    let mut o = Options::default();
    o.default_keyspace.write_buffer_size = 32 << 10;
    o.default_keyspace.level1_max_bytes = 64 << 10;
    o.default_keyspace.target_file_size = 32 << 10;
    o.default_keyspace.level0_compaction_trigger = 2;
    o
}

/// The live files of keyspace `id` by number, with their levels, read from
/// the manifest named by CURRENT.
fn live_files(dir: &Path, id: strata::KeyspaceId) -> BTreeMap<u64, Level> {
    let name = std::fs::read_to_string(dir.join("CURRENT")).expect("CURRENT");
    let mut reader =
        LogReader::open(&StdVfs, &dir.join(name.trim_end()), TailPolicy::Strict).expect("open");
    let mut files = BTreeMap::new();
    while let Some(rec) = reader.next_record().expect("record") {
        let e = VersionEdit::decode(&rec).expect("edit");
        for (ks, _, n) in &e.deleted_files {
            if *ks == id {
                files.remove(&n.get());
            }
        }
        for f in &e.new_files {
            if f.keyspace == id {
                files.insert(f.number.get(), f.level);
            }
        }
    }
    files
}

fn compression_of(path: &Path, number: u64) -> Compression {
    let t = TableReader::open(
        StdVfs.open(path).expect("open"),
        path.to_path_buf(),
        number,
        None,
        Arc::new(Statistics::default()),
    )
    .expect("table");
    t.properties().compression
}

fn table_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.sst"))
}

fn counter_key(i: u32) -> Vec<u8> {
    format!("counter{:03}", i % 200).into_bytes()
}

#[test]
fn an_unregistered_keyspace_waits_for_its_options_and_then_keeps_its_layout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut expected: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    let id = {
        let db = Db::open(dir.path(), options()).expect("open");
        let counters = db
            .keyspace("counters", counters_options())
            .expect("keyspace");
        for i in 0..6000u32 {
            let k = counter_key(i);
            counters
                .merge(&k, &u64::from(i).to_le_bytes())
                .expect("merge");
            *expected.entry(k).or_default() += u64::from(i);
        }
        db.wait_for_background_work().expect("background");
        // Some operands stay in the log only.
        for i in 0..50u32 {
            let k = counter_key(i);
            counters.merge(&k, &7u64.to_le_bytes()).expect("merge");
            *expected.entry(k).or_default() += 7;
        }
        let id = counters.id();
        db.close().expect("close");
        id
    };
    let before = live_files(dir.path(), id);
    assert!(!before.is_empty());

    // Reopen without registering the keyspace; let the default keyspace's
    // background work run.
    {
        let db = Db::open(dir.path(), options()).expect("reopen");
        for i in 0..6000u32 {
            db.put(format!("d{i:05}").as_bytes(), &[b'x'; 40])
                .expect("put");
        }
        db.flush().expect("flush");
        db.wait_for_background_work().expect("background");
        assert_eq!(
            live_files(dir.path(), id),
            before,
            "the unregistered keyspace's files were rewritten"
        );
        // Writing to it before it is registered is refused.
        let mut b = WriteBatch::new();
        b.merge_in(id, b"counter000", &1u64.to_le_bytes());
        assert!(matches!(
            db.write(WriteOptions::default(), b),
            Err(Error::InvalidArgument(_))
        ));
        // Registering it with another operator is refused.
        let mut wrong = counters_options();
        wrong.merge_operator = None;
        match db.keyspace("counters", wrong) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("u64add"), "{m}"),
            Err(e) => panic!("expected InvalidArgument, got {e}"),
            Ok(_) => panic!("a missing merge operator must be refused"),
        }
        db.close().expect("close");
    }

    // Register it: every value is right, and after its background work and
    // a full compaction every file is in its layout's format.
    let db = Db::open(dir.path(), options()).expect("reopen");
    let counters = db
        .keyspace("counters", counters_options())
        .expect("register");
    for i in 0..3000u32 {
        let k = counter_key(i);
        counters.merge(&k, &1u64.to_le_bytes()).expect("merge");
        *expected.entry(k).or_default() += 1;
    }
    db.flush().expect("flush");
    db.wait_for_background_work().expect("background");
    for (k, v) in &expected {
        let got = counters.get(k).expect("get").expect("present");
        assert_eq!(got, v.to_le_bytes(), "{}", String::from_utf8_lossy(k));
    }
    let files = live_files(dir.path(), id);
    assert!(files.values().any(|&l| l >= Level(1)), "{files:?}");
    for (n, level) in &files {
        let want = if *level >= Level(1) {
            Compression::Zstd
        } else {
            Compression::None
        };
        assert_eq!(
            compression_of(&table_path(dir.path(), *n), *n),
            want,
            "table {n} at level {level}"
        );
    }
    db.close().expect("close");
    // The identity survives: a reopen with the operator reads the same.
    let db = Db::open(dir.path(), options()).expect("reopen");
    let counters = db
        .keyspace("counters", counters_options())
        .expect("register");
    let k = counter_key(5);
    assert_eq!(
        counters.get(&k).expect("get"),
        Some(expected[&k].to_le_bytes().to_vec())
    );
}

#[test]
fn the_default_keyspace_must_be_opened_with_its_merge_operator() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = options();
    o.default_keyspace.merge_operator = Some(Arc::new(U64AddOperator));
    {
        let db = Db::open(dir.path(), o.clone()).expect("open");
        db.merge(b"k", &5u64.to_le_bytes()).expect("merge");
        db.close().expect("close");
    }
    match Db::open(dir.path(), options()) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("merge operator"), "{m}"),
        Err(e) => panic!("expected InvalidArgument, got {e}"),
        Ok(_) => panic!("opening without the operator must be refused"),
    }
    let db = Db::open(dir.path(), o).expect("with the operator");
    assert_eq!(
        db.get(b"k").expect("get"),
        Some(5u64.to_le_bytes().to_vec())
    );
}

/// A database whose counters keyspace has `n` unflushed merges (one per
/// counter) in its only log, with one byte of that log flipped at
/// `at(len)`; returns the log.
fn counters_log_damaged_at(dir: &Path, n: u32, at: impl Fn(usize) -> usize) -> PathBuf {
    {
        let db = Db::open(dir, options()).expect("open");
        let counters = db.keyspace("counters", counters_options()).expect("create");
        for i in 0..n {
            counters
                .merge(&counter_key(i), &1u64.to_le_bytes())
                .expect("merge");
        }
        db.close().expect("close");
    }
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    let log = logs.pop().expect("a log");
    let mut bytes = std::fs::read(&log).expect("read");
    let i = at(bytes.len());
    bytes[i] ^= 0x40;
    std::fs::write(&log, bytes).expect("write");
    log
}

/// The counters' values, `None` for a missing one.
fn counter_values(counters: &strata::Keyspace, n: u32) -> Vec<Option<Vec<u8>>> {
    (0..n)
        .map(|i| counters.get(&counter_key(i)).expect("get"))
        .collect()
}

/// Recovery dropped part of a log (`mode`) that the counters keyspace,
/// unregistered during the open, keeps: registered after that open,
/// written to, closed and opened twice more in the default mode, the
/// database opens cleanly and holds what the first recovery kept plus the
/// writes made since, and nothing it dropped.
fn kept_log_recovers_once(mode: strata::WalRecoveryMode, at: impl Fn(usize) -> usize) -> usize {
    let dir = tempfile::tempdir().expect("tempdir");
    let n = 100;
    counters_log_damaged_at(dir.path(), n, at);
    let mut o = options();
    o.wal_recovery = mode;
    let db = Db::open(dir.path(), o).expect("the first open recovers");
    let report = db.recovery_report().clone();
    assert!(
        report.wal_tail_dropped.is_some() || !report.wal_damage.is_empty(),
        "{report:?}"
    );
    let counters = db
        .keyspace("counters", counters_options())
        .expect("register");
    let mut want = counter_values(&counters, n);
    let lost = want.iter().filter(|v| v.is_none()).count();
    // Writes after the recovery go to the new log and must survive it.
    counters
        .merge(&counter_key(n), &7u64.to_le_bytes())
        .expect("merge");
    want.push(Some(7u64.to_le_bytes().to_vec()));
    db.close().expect("close");

    for round in 0..2 {
        let db = Db::open(dir.path(), options())
            .unwrap_or_else(|e| panic!("reopen {round} after recovery in {mode:?}: {e}"));
        let report = db.recovery_report();
        assert!(report.wal_tail_dropped.is_none(), "{report:?}");
        assert!(report.wal_damage.is_empty(), "{report:?}");
        let counters = db
            .keyspace("counters", counters_options())
            .expect("register");
        assert_eq!(counter_values(&counters, n + 1), want, "reopen {round}");
        db.close().expect("close");
    }
    lost
}

/// The open after next must not take the torn tail dropped from a log kept
/// for an unregistered keyspace, now no longer the newest log, for damage.
#[test]
fn a_torn_tail_in_a_log_kept_for_an_unregistered_keyspace_is_no_damage_later() {
    let lost = kept_log_recovers_once(strata::WalRecoveryMode::default(), |len| len - 2);
    assert_eq!(lost, 1, "the torn record alone");
}

/// Damage in the middle of a kept log, recovered past by point-in-time
/// recovery (which stops there) and by skipping damaged records: the log
/// is rewritten to what was applied, so what was dropped stays dropped.
#[test]
fn damage_recovered_past_in_a_kept_log_stays_dropped_after_reopens() {
    let lost = kept_log_recovers_once(strata::WalRecoveryMode::PointInTime, |len| len / 2);
    assert!(
        lost > 1 && lost < 100,
        "everything after the damage: {lost}"
    );
    let lost = kept_log_recovers_once(strata::WalRecoveryMode::SkipDamagedRecords, |len| len / 2);
    assert_eq!(lost, 1, "the damaged record alone");
}

fn log_count(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .expect("read_dir")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".log"))
        })
        .count()
}

/// A keyspace whose replayed entries wait in its memtable until it is
/// registered flushes them then, as recovery flushes the others': a
/// database reopened more often than its memtables fill does not keep one
/// more log per open.
#[test]
fn reopening_does_not_pile_up_logs_for_a_keyspace_that_waited_for_its_options() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut expected: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    let mut logs = Vec::new();
    for round in 0..8u32 {
        let db = Db::open(dir.path(), options()).expect("open");
        let counters = db
            .keyspace("counters", counters_options())
            .expect("keyspace");
        for (k, v) in &expected {
            let got = counters.get(k).expect("get").expect("a counter");
            assert_eq!(got, v.to_le_bytes(), "round {round}");
        }
        // A few operands (far from filling the memtable) and a write to
        // the default keyspace, as an application's open and close would.
        for i in 0..20u32 {
            let k = counter_key(i);
            counters.merge(&k, &1u64.to_le_bytes()).expect("merge");
            *expected.entry(k).or_default() += 1;
        }
        db.put(format!("opened{round}").as_bytes(), b"x")
            .expect("put");
        db.wait_for_background_work().expect("background");
        db.close().expect("close");
        logs.push(log_count(dir.path()));
    }
    assert!(
        logs.iter().all(|&n| n <= 3),
        "logs on disk after each close: {logs:?}"
    );
}

/// A write-ahead log of another database planted among the logs kept for a
/// keyspace that waits for its options is never replayed and never removed:
/// not by the open, and not by the flush that retires the kept logs once
/// the keyspace is registered (the 2026-12-01 review found such a log
/// removed by that flush).
#[test]
fn another_databases_log_among_the_kept_logs_outlives_their_retirement() {
    let foreign = {
        let other = tempfile::tempdir().expect("tempdir");
        let db = Db::open(other.path(), options()).expect("open other");
        db.put(b"evil", b"from another database").expect("put");
        db.close().expect("close");
        let log = std::fs::read_dir(other.path())
            .expect("list")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "log"))
            .expect("a log");
        std::fs::read(log).expect("read")
    };
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = Db::open(dir.path(), options()).expect("open");
        let counters = db
            .keyspace("counters", counters_options())
            .expect("keyspace");
        for i in 0..20u32 {
            counters
                .merge(&counter_key(i), &1u64.to_le_bytes())
                .expect("merge");
        }
        db.close().expect("close");
    }
    // The newest log holds the counters' operands; the planted one comes
    // after it, inside the range the waiting keyspace keeps.
    let newest = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".log")?.parse::<u64>().ok()
        })
        .max()
        .expect("a log");
    let planted = dir.path().join(format!("{:06}.log", newest + 1));
    std::fs::write(&planted, &foreign).expect("plant");
    {
        let db = Db::open(dir.path(), options()).expect("open with the counters waiting");
        assert!(
            db.recovery_report()
                .left_in_place
                .iter()
                .any(|(p, _)| p == &planted),
            "{:?}",
            db.recovery_report()
        );
        assert_eq!(db.get(b"evil").expect("get"), None);
        let kept = dir.path().join(format!("{newest:06}.log"));
        assert!(kept.exists(), "the waiting keyspace's log was not kept");
        let counters = db
            .keyspace("counters", counters_options())
            .expect("register");
        counters.flush().expect("flush");
        db.wait_for_background_work().expect("background");
        assert_eq!(
            counters.get(&counter_key(3)).expect("get"),
            Some(1u64.to_le_bytes().to_vec())
        );
        // The flush retired the kept log, and only that one.
        assert!(!kept.exists(), "the kept log outlived the flush");
        db.close().expect("close");
    }
    assert_eq!(std::fs::read(&planted).expect("still there"), foreign);
    let db = Db::open(dir.path(), options()).expect("reopen");
    assert_eq!(db.get(b"evil").expect("get"), None);
    assert_eq!(std::fs::read(&planted).expect("still there"), foreign);
}
