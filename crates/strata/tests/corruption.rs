//! Flipped bits in every file kind are reported as corruption naming the
//! file, never as a panic or wrong data.

use std::fs;
use std::path::{Path, PathBuf};

use strata::log::LogWriter;
use strata::manifest::VersionEdit;
use strata::vfs::{StdVfs, Vfs};
use strata::{Db, Error, Options};

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
    match Db::open(dir.path(), options()) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, sst[0]),
        Err(e) => panic!("expected corruption, got {e}"),
        Ok(_) => panic!("open must fail"),
    }
}

#[test]
fn flipped_bit_in_the_log_tail_recovers_a_prefix_and_reports_dropped_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = Db::open(dir.path(), options()).expect("open");
        for i in 0..100u32 {
            db.put(format!("key{i:06}").as_bytes(), b"v").expect("put");
        }
        // Closing does not flush: the log holds everything.
        db.close().expect("close");
    }
    let logs = files_with(dir.path(), ".log");
    let log = logs.last().expect("a log");
    let len = fs::metadata(log).expect("stat").len() as usize;
    flip(log, len / 2);
    let db = Db::open(dir.path(), options()).expect("point-in-time recovery opens");
    let (path, _off, bytes, reason) = db
        .recovery_report()
        .wal_tail_dropped
        .clone()
        .expect("reported");
    assert_eq!(&path, log);
    assert!(bytes > 0, "{reason}");
    let present: Vec<bool> = (0..100u32)
        .map(|i| {
            db.get(format!("key{i:06}").as_bytes())
                .expect("get")
                .is_some()
        })
        .collect();
    let first_missing = present.iter().position(|p| !p).expect("something dropped");
    assert!(first_missing > 0);
    assert!(
        present[first_missing..].iter().all(|p| !p),
        "recovered a prefix"
    );
}

#[test]
fn flipped_bit_in_the_manifest_fails_open_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    fill(dir.path(), 100);
    let m = files_with(dir.path(), "MANIFEST-");
    flip(&m[0], 12);
    match Db::open(dir.path(), options()) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, m[0]),
        Err(e) => panic!("expected corruption, got {e}"),
        Ok(_) => panic!("open must fail"),
    }
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
    match Db::open(dir.path(), options()) {
        Err(Error::Corruption { file, reason, .. }) => {
            assert_eq!(file, sst[0]);
            assert!(reason.contains("missing"), "{reason}");
        }
        Err(e) => panic!("expected corruption, got {e}"),
        Ok(_) => panic!("open must fail"),
    }
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
