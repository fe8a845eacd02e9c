//! Flipped bits in every file kind are reported as corruption naming the
//! file, never as a panic or wrong data.

use std::fs;
use std::path::{Path, PathBuf};

use strata::ids::FileNumber;
use strata::log::{LogReader, LogWriter, TailPolicy};
use strata::manifest::VersionEdit;
use strata::recovery::{parse_wal_header, wal_header};
use strata::vfs::{StdVfs, Vfs};
use strata::{Db, Error, KeyspaceOptions, Options, WriteBatch, WriteOptions};

mod common;

fn options() -> Options {
    let mut o = Options::default();
    o.default_keyspace.write_buffer_size = 64 * 1024;
    o.block_cache_bytes = 0; // every read goes to the file
    o
}

fn files_with(dir: &Path, suffix_or_prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .expect("read dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            n.ends_with(suffix_or_prefix) || n.starts_with(suffix_or_prefix)
        })
        .collect();
    v.sort();
    v
}

fn flip(path: &Path, offset: usize) {
    let mut b = fs::read(path).expect("read");
    b[offset] ^= 0x40;
    fs::write(path, b).expect("write");
}

/// Opens `dir`, which must fail with `Error::Corruption`; returns the file
/// it names and the reason.
fn open_corruption(dir: &Path) -> (PathBuf, String) {
    match Db::open(dir, options()) {
        Err(Error::Corruption { file, reason, .. }) => (file, reason),
        Err(e) => panic!("expected corruption, got {e}"),
        Ok(_) => panic!("open must fail"),
    }
}

/// Writes `n` keys and flushes them into exactly one table file.
fn fill(dir: &Path, n: u32) {
    let mut o = options();
    o.default_keyspace.write_buffer_size = 16 << 20;
    let db = Db::open(dir, o).expect("open");
    for i in 0..n {
        db.put(
            format!("key{i:06}").as_bytes(),
            format!("value{i:0>30}").as_bytes(),
        )
        .expect("put");
    }
    db.flush().expect("flush");
    db.close().expect("close");
}

#[test]
fn flipped_bit_in_a_table_block_is_reported_with_file_and_offset() {
    let dir = tempfile::tempdir().expect("tempdir");
    fill(dir.path(), 2000);
    let sst = files_with(dir.path(), ".sst");
    assert_eq!(sst.len(), 1);
    let len = fs::metadata(&sst[0]).expect("stat").len() as usize;
    flip(&sst[0], len / 3);
    let db = Db::open(dir.path(), options()).expect("open: the damage is in a data block");
    let bad = db.verify();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].0, sst[0]);
    match &bad[0].1 {
        Error::Corruption { file, .. } => assert_eq!(file, &sst[0]),
        e => panic!("expected corruption, got {e}"),
    }
    // Reads touching the damaged block fail; none returns wrong data.
    let mut errors = 0;
    for i in 0..2000u32 {
        match db.get(format!("key{i:06}").as_bytes()) {
            Ok(Some(v)) => assert_eq!(v, format!("value{i:0>30}").into_bytes()),
            Ok(None) => panic!("key {i} silently missing"),
            Err(e) => {
                assert!(e.is_corruption(), "{e}");
                errors += 1;
            }
        }
    }
    assert!(errors > 0);
    let scan = db.default_keyspace().scan(None, None, usize::MAX);
    assert!(matches!(scan, Err(Error::Corruption { .. })));
}

#[test]
fn flipped_bit_in_a_table_footer_fails_open_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    fill(dir.path(), 500);
    let sst = files_with(dir.path(), ".sst");
    let len = fs::metadata(&sst[0]).expect("stat").len() as usize;
    flip(&sst[0], len - 3);
    let (file, _) = open_corruption(dir.path());
    assert_eq!(file, sst[0]);
}

/// A database whose newest log holds 100 unflushed puts `key000000..`;
/// returns the log and every file's bytes before any damage.
fn db_with_unflushed_log(dir: &Path) -> PathBuf {
    let db = Db::open(dir, options()).expect("open");
    for i in 0..100u32 {
        db.put(format!("key{i:06}").as_bytes(), b"v").expect("put");
    }
    // Closing does not flush: the log holds everything.
    db.close().expect("close");
    files_with(dir, ".log").pop().expect("a log")
}

fn present(db: &Db) -> Vec<bool> {
    (0..100u32)
        .map(|i| {
            db.get(format!("key{i:06}").as_bytes())
                .expect("get")
                .is_some()
        })
        .collect()
}

#[test]
fn a_damaged_record_in_the_middle_of_the_log_refuses_open_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = db_with_unflushed_log(dir.path());
    let len = fs::metadata(&log).expect("stat").len() as usize;
    flip(&log, len / 2);
    let before = common::snapshot_except_lock(dir.path());
    let (file, reason) = open_corruption(dir.path());
    assert_eq!(file, log);
    assert!(reason.contains("valid records follow"), "{reason}");
    assert_eq!(
        common::snapshot_except_lock(dir.path()),
        before,
        "a refused open changed files"
    );
    // Read-only opens refuse it too.
    assert!(matches!(
        Db::open_read_only(dir.path(), options()),
        Err(Error::Corruption { .. })
    ));
}

#[test]
fn point_in_time_recovery_keeps_the_prefix_and_the_log_in_lost() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = db_with_unflushed_log(dir.path());
    let len = fs::metadata(&log).expect("stat").len() as usize;
    flip(&log, len / 2);
    let original = fs::read(&log).expect("read");
    let mut o = options();
    o.wal_recovery = strata::WalRecoveryMode::PointInTime;
    let db = Db::open(dir.path(), o).expect("point-in-time opens");
    let report = db.recovery_report().clone();
    assert_eq!(report.wal_damage.len(), 1);
    assert_eq!(report.wal_damage[0].file, log);
    assert!(report.wal_damage[0].records_after > 0);
    assert_eq!(report.logs_set_aside.len(), 1);
    let kept = &report.logs_set_aside[0].1;
    assert_eq!(fs::read(kept).expect("read kept log"), original);
    // What was dropped is on record in lost/ too.
    let record = files_with(&dir.path().join("lost"), "recovery-");
    assert_eq!(record.len(), 1, "{record:?}");
    let text = fs::read_to_string(&record[0]).expect("read record");
    assert!(text.contains("stopped damage in"), "{text}");
    assert!(text.contains("kept as"), "{text}");
    let p = present(&db);
    let first_missing = p.iter().position(|p| !p).expect("something dropped");
    assert!(first_missing > 0);
    assert!(p[first_missing..].iter().all(|p| !p), "recovered a prefix");
}

#[test]
fn skip_damaged_recovery_keeps_every_valid_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = db_with_unflushed_log(dir.path());
    let len = fs::metadata(&log).expect("stat").len() as usize;
    flip(&log, len / 2);
    let mut o = options();
    o.wal_recovery = strata::WalRecoveryMode::SkipDamagedRecords;
    let db = Db::open(dir.path(), o).expect("skip-damaged opens");
    let report = db.recovery_report().clone();
    assert_eq!(report.wal_damage.len(), 1);
    assert_eq!(report.logs_set_aside.len(), 1);
    let p = present(&db);
    let missing = p.iter().filter(|p| !**p).count();
    assert_eq!(missing, 1, "exactly the damaged put is lost: {p:?}");
    assert!(p[99], "records after the damage are applied");
}

/// The largest write-ahead log in `dir`: the one the test's writes went to.
fn largest_log(dir: &Path) -> PathBuf {
    files_with(dir, ".log")
        .into_iter()
        .max_by_key(|p| fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .expect("a log")
}

/// A database of the default keyspace and one named `other`: `write`
/// writes to them, then `other` alone is flushed (its log number moves past
/// the log the writes went to) and the database is closed, the default
/// keyspace's writes left in the log.
fn with_other_flushed(dir: &Path, write: impl FnOnce(&Db, &strata::Keyspace)) {
    let db = Db::open(dir, options()).expect("open");
    let other = db
        .keyspace("other", KeyspaceOptions::default())
        .expect("keyspace");
    write(&db, &other);
    other.flush().expect("flush");
    db.close().expect("close");
}

fn point_in_time() -> Options {
    let mut o = options();
    o.wal_recovery = strata::WalRecoveryMode::PointInTime;
    o
}

/// Point-in-time recovery stops at damage, but a keyspace that flushed
/// after the damaged log was written holds writes from after that point:
/// batches written to both keyspaces would come back in that keyspace
/// only, so the open is refused and changes nothing (RocksDB's "SST file
/// is ahead of WALs").
#[test]
fn point_in_time_refuses_a_keyspace_flushed_past_the_damage() {
    let dir = tempfile::tempdir().expect("tempdir");
    with_other_flushed(dir.path(), |db, other| {
        for i in 0..100u32 {
            let key = format!("key{i:06}");
            let mut b = WriteBatch::new();
            b.put(key.as_bytes(), b"v");
            b.put_in(other.id(), key.as_bytes(), b"v");
            db.write(WriteOptions::default(), b).expect("write");
        }
    });
    let log = largest_log(dir.path());
    let len = fs::metadata(&log).expect("stat").len() as usize;
    flip(&log, len / 2);
    let before = common::snapshot_except_lock(dir.path());
    match Db::open(dir.path(), point_in_time()) {
        Err(Error::Corruption { file, reason, .. }) => {
            assert_eq!(file, log);
            assert!(
                reason.contains("`other`") && reason.contains("skip-damaged"),
                "{reason}"
            );
        }
        Err(e) => panic!("not corruption: {e}"),
        Ok(_) => panic!("opened with the keyspaces at different points"),
    }
    assert!(
        common::snapshot_except_lock(dir.path()) == before,
        "the refused open changed the directory"
    );
}

/// A keyspace whose files are all older than the damage is not ahead of
/// it, though its log number moved past the damaged log with its flush:
/// point-in-time recovery opens, with a prefix of the default keyspace's
/// writes and every one of `other`'s.
#[test]
fn point_in_time_opens_when_a_flushed_keyspace_holds_only_older_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    with_other_flushed(dir.path(), |db, other| {
        for i in 0..100u32 {
            other
                .put(format!("key{i:06}").as_bytes(), b"v")
                .expect("put");
        }
        for i in 0..100u32 {
            db.put(format!("key{i:06}").as_bytes(), b"v").expect("put");
        }
    });
    // The default keyspace's writes are the log's second half.
    let log = largest_log(dir.path());
    let len = fs::metadata(&log).expect("stat").len() as usize;
    flip(&log, len * 3 / 4);
    let db = Db::open(dir.path(), point_in_time()).expect("point-in-time opens");
    assert_eq!(db.recovery_report().wal_damage.len(), 1);
    let p = present(&db);
    let first_missing = p.iter().position(|p| !p).expect("something dropped");
    assert!(first_missing > 0);
    assert!(p[first_missing..].iter().all(|p| !p), "recovered a prefix");
    let other = db
        .keyspace("other", KeyspaceOptions::default())
        .expect("keyspace");
    for i in 0..100u32 {
        assert!(
            other
                .get(format!("key{i:06}").as_bytes())
                .expect("get")
                .is_some(),
            "the flushed keyspace lost key {i}"
        );
    }
}

#[test]
fn a_damaged_last_record_is_a_torn_tail_dropped_and_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = db_with_unflushed_log(dir.path());
    let len = fs::metadata(&log).expect("stat").len() as usize;
    flip(&log, len - 2);
    let db = Db::open(dir.path(), options()).expect("a torn tail opens");
    let (path, _off, bytes, reason) = db
        .recovery_report()
        .wal_tail_dropped
        .clone()
        .expect("reported");
    assert_eq!(path, log);
    assert!(bytes > 0, "{reason}");
    let p = present(&db);
    assert_eq!(p.iter().filter(|p| !**p).count(), 1, "{p:?}");
    assert!(!p[99]);
    drop(db);
    // Absolute consistency refuses even a torn tail; the database was
    // already recovered above, so damage a fresh one.
    let dir = tempfile::tempdir().expect("tempdir");
    let log = db_with_unflushed_log(dir.path());
    let len = fs::metadata(&log).expect("stat").len() as usize;
    flip(&log, len - 2);
    let mut o = options();
    o.wal_recovery = strata::WalRecoveryMode::AbsoluteConsistency;
    assert!(matches!(
        Db::open(dir.path(), o),
        Err(Error::Corruption { .. })
    ));
}

#[test]
fn flipped_bit_in_the_manifest_fails_open_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    fill(dir.path(), 100);
    let m = files_with(dir.path(), "MANIFEST-");
    flip(&m[0], 12);
    let (file, _) = open_corruption(dir.path());
    assert_eq!(file, m[0]);
}

#[test]
fn current_naming_garbage_is_corruption() {
    let dir = tempfile::tempdir().expect("tempdir");
    fill(dir.path(), 10);
    fs::write(dir.path().join("CURRENT"), b"../../etc/passwd\n").expect("write");
    assert!(matches!(
        Db::open(dir.path(), options()),
        Err(Error::Corruption { .. })
    ));
}

#[test]
fn manifest_of_a_newer_format_is_refused_with_its_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    fill(dir.path(), 10);
    let m = files_with(dir.path(), "MANIFEST-");
    let edit = VersionEdit {
        format_version: Some(99),
        ..Default::default()
    };
    fs::remove_file(&m[0]).expect("remove");
    let mut w = LogWriter::new(StdVfs.create(&m[0]).expect("create"));
    w.add_record(&edit.encode()).expect("add");
    w.sync().expect("sync");
    match Db::open(dir.path(), options()) {
        Err(e @ Error::UnsupportedVersion { found: 99, .. }) => {
            assert!(e.to_string().contains("99"), "{e}")
        }
        Err(e) => panic!("expected UnsupportedVersion, got {e}"),
        Ok(_) => panic!("open must fail"),
    }
}

#[test]
fn missing_table_file_fails_open_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    fill(dir.path(), 100);
    let sst = files_with(dir.path(), ".sst");
    fs::remove_file(&sst[0]).expect("remove");
    let (file, reason) = open_corruption(dir.path());
    assert_eq!(file, sst[0]);
    assert!(reason.contains("missing"), "{reason}");
}

#[test]
fn salvage_mode_sets_a_corrupt_table_aside_and_reports_the_lost_range() {
    let dir = tempfile::tempdir().expect("tempdir");
    fill(dir.path(), 2000);
    // A second table with other keys, which must survive.
    {
        let mut o = options();
        o.default_keyspace.write_buffer_size = 16 << 20;
        let db = Db::open(dir.path(), o).expect("open");
        for i in 0..100u32 {
            db.put(format!("zzz{i:03}").as_bytes(), b"kept")
                .expect("put");
        }
        db.flush().expect("flush");
        db.close().expect("close");
    }
    let sst = files_with(dir.path(), ".sst");
    assert_eq!(sst.len(), 2);
    let len = fs::metadata(&sst[0]).expect("stat").len() as usize;
    flip(&sst[0], len / 3);
    let mut o = options();
    o.skip_corrupt_tables = true;
    let db = Db::open(dir.path(), o).expect("salvage open");
    let lost = &db.recovery_report().lost_tables;
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].file, sst[0]);
    assert_eq!(lost[0].smallest_key, b"key000000");
    assert_eq!(lost[0].largest_key, b"key001999");
    let moved = lost[0].moved_to.clone().expect("moved aside");
    assert!(moved.exists() && !sst[0].exists());
    assert!(db.verify().is_empty());
    assert_eq!(db.get(b"zzz042").expect("get"), Some(b"kept".to_vec()));
    assert_eq!(db.get(b"key000042").expect("get"), None);
    drop(db);
    // The salvaged database opens normally afterwards.
    let db = Db::open(dir.path(), options()).expect("normal open");
    assert_eq!(db.get(b"zzz001").expect("get"), Some(b"kept".to_vec()));
}

/// One write batch as the log holds it: the header (`seqno`, count), then
/// one put per key into the default keyspace (docs/format/wal.md).
fn batch_bytes(seqno: u64, puts: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut b = seqno.to_le_bytes().to_vec();
    b.extend_from_slice(&(puts.len() as u32).to_le_bytes());
    for (k, v) in puts {
        b.push(1); // put
        b.push(0); // keyspace 0, a one-byte varint
        b.push(k.len() as u8);
        b.extend_from_slice(k);
        b.push(v.len() as u8);
        b.extend_from_slice(v);
    }
    b
}

/// A database whose newest log holds `batches`.
fn db_with_log(dir: &Path, batches: &[Vec<u8>]) -> PathBuf {
    let db = Db::open(dir, options()).expect("open");
    let id = db.id();
    db.close().expect("close");
    let log = dir.join("999999.log");
    let mut w = LogWriter::new(StdVfs.create(&log).expect("create"));
    w.add_record(&strata::recovery::wal_header(
        &id,
        strata::FileNumber(999999),
    ))
    .expect("header");
    for b in batches {
        w.add_record(b).expect("add");
    }
    w.sync().expect("sync");
    log
}

#[test]
fn log_batches_overlapping_in_sequence_numbers_are_corruption() {
    // In order: the later batch's value wins.
    let dir = tempfile::tempdir().expect("tempdir");
    db_with_log(
        dir.path(),
        &[
            batch_bytes(5, &[(b"k", b"first")]),
            batch_bytes(6, &[(b"k", b"second")]),
        ],
    );
    let db = Db::open(dir.path(), options()).expect("open");
    assert_eq!(db.get(b"k").expect("get"), Some(b"second".to_vec()));
    drop(db);

    // Two batches claiming sequence number 5: two versions of `k` at one
    // sequence number, which no order can settle.
    let dir = tempfile::tempdir().expect("tempdir");
    let log = db_with_log(
        dir.path(),
        &[
            batch_bytes(5, &[(b"k", b"first")]),
            batch_bytes(5, &[(b"k", b"second")]),
        ],
    );
    let (file, reason) = open_corruption(dir.path());
    assert_eq!(file, log);
    assert!(reason.contains("follows one that reached 5"), "{reason}");
}

#[test]
fn a_log_batch_past_the_largest_sequence_number_is_corruption() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = db_with_log(
        dir.path(),
        &[batch_bytes(u64::MAX, &[(b"a", b"1"), (b"b", b"2")])],
    );
    let (file, _) = open_corruption(dir.path());
    assert_eq!(file, log);
}

/// A database directory whose only manifest is `edit`.
fn dir_with_manifest(dir: &Path, edit: &VersionEdit) -> PathBuf {
    let m = dir.join("MANIFEST-000001");
    let mut w = LogWriter::new(StdVfs.create(&m).expect("create"));
    let edit = VersionEdit {
        db_id: edit.db_id.or(Some([7; 16])),
        ..edit.clone()
    };
    w.add_record(&edit.encode()).expect("add");
    w.sync().expect("sync");
    fs::write(dir.join("CURRENT"), b"MANIFEST-000001\n").expect("write");
    m
}

#[test]
fn manifest_values_past_their_limits_are_corruption() {
    let edits = [
        VersionEdit {
            last_seqno: Some(strata::SeqNo(u64::MAX)),
            ..Default::default()
        },
        VersionEdit {
            next_file_number: Some(strata::FileNumber(u64::MAX)),
            ..Default::default()
        },
        VersionEdit {
            added_keyspaces: vec![(strata::KeyspaceId(u32::MAX), "last".into())],
            ..Default::default()
        },
    ];
    for edit in edits {
        let dir = tempfile::tempdir().expect("tempdir");
        let m = dir_with_manifest(
            dir.path(),
            &VersionEdit {
                format_version: Some(strata::manifest::MANIFEST_FORMAT_VERSION),
                ..edit.clone()
            },
        );
        let (file, _) = open_corruption(dir.path());
        assert_eq!(file, m, "{edit:?}");
    }
}

#[test]
fn when_keyspace_ids_run_out_creating_one_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let last = strata::manifest::MAX_KEYSPACE_ID;
    dir_with_manifest(
        dir.path(),
        &VersionEdit {
            format_version: Some(strata::manifest::MANIFEST_FORMAT_VERSION),
            added_keyspaces: vec![
                (strata::KeyspaceId::DEFAULT, "default".into()),
                (strata::KeyspaceId(last), "last".into()),
            ],
            ..Default::default()
        },
    );
    let db = Db::open(dir.path(), options()).expect("open");
    let ks = db
        .keyspace("last", Default::default())
        .expect("an existing keyspace still opens");
    ks.put(b"k", b"v").expect("put");
    match db.keyspace("new", Default::default()) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("keyspace id"), "{m}"),
        Err(e) => panic!("expected InvalidArgument, got {e}"),
        Ok(_) => panic!("no id is left"),
    }
    assert_eq!(ks.get(b"k").expect("get"), Some(b"v".to_vec()));
}

#[test]
fn a_huge_current_is_corruption_not_a_huge_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    fill(dir.path(), 10);
    let mut name = b"MANIFEST-000001".to_vec();
    name.resize(1 << 20, b' ');
    fs::write(dir.path().join("CURRENT"), name).expect("write");
    let (_, reason) = open_corruption(dir.path());
    assert!(reason.contains("1048576 bytes"), "{reason}");
}

/// A database whose only log has a torn last record, and a later log
/// number `n + 1` holding this database's header and then `records`
/// (followed by preallocated zeros). Returns the directory.
fn torn_log_then_later_log(records: impl Fn(&mut LogReader) -> Vec<Vec<u8>>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = db_with_unflushed_log(dir.path());
    let len = fs::metadata(&log).expect("stat").len() as usize;
    flip(&log, len - 2);
    let mut r = LogReader::open(&StdVfs, &log, TailPolicy::StopAtDamage).expect("read");
    let header = r.next_record().expect("record").expect("a header");
    let (id, n) = parse_wal_header(&header).expect("a header");
    let later = FileNumber(n.get() + 1);
    let path = strata::filename::log_path(dir.path(), later);
    let mut w = LogWriter::new(StdVfs.create(&path).expect("create"));
    w.add_record(&wal_header(&id, later)).expect("header");
    for rec in records(&mut r) {
        w.add_record(&rec).expect("record");
    }
    w.sync().expect("sync");
    drop(w);
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    std::io::Write::write_all(&mut f, &[0u8; 4096]).expect("zeros");
    dir
}

/// An open that crashed after creating its new log and before writing the
/// manifest that retires the old ones leaves a log holding only its header
/// after the log whose torn tail it dropped: that tail is still the last
/// thing written, so the next open drops it again rather than calling it
/// damage. A later log holding a write does make it damage.
#[test]
fn a_torn_tail_followed_only_by_an_empty_new_log_is_still_a_torn_tail() {
    let dir = torn_log_then_later_log(|_| Vec::new());
    let db = Db::open(dir.path(), options()).expect("the torn tail is dropped");
    assert!(db.recovery_report().wal_tail_dropped.is_some());
    let p = present(&db);
    assert_eq!(p.iter().filter(|p| !**p).count(), 1, "{p:?}");
    drop(db);

    let dir = torn_log_then_later_log(|r| vec![r.next_record().expect("record").expect("a batch")]);
    match Db::open(dir.path(), options()) {
        Err(Error::Corruption { reason, .. }) => {
            assert!(reason.contains("not the newest log"), "{reason}")
        }
        Err(e) => panic!("expected corruption, got {e}"),
        Ok(_) => panic!("damage before a later write must refuse the open"),
    }
}
