//! Recovery never destroys data: what opening a database refuses, what it
//! leaves alone, and what a read-only open promises. Each test is one of
//! the losses found by hand (issue 18) and fails on the engine before it.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::vfs_mem::{FaultKind, FaultRule, MemVfs, VfsOp};
use strata::{Db, Error, MemTableKind, Options};

mod common;

fn options() -> Options {
    let mut o = Options::default();
    o.default_keyspace.write_buffer_size = 64 * 1024;
    o
}

/// A database with `a` flushed to a table and `b` only in the log.
/// [`options`] on the in-memory file system `vfs`.
fn on(vfs: &MemVfs) -> Options {
    Options {
        vfs: Arc::new(vfs.clone()),
        ..options()
    }
}

fn db_with_table_and_log(dir: &Path) {
    let db = Db::open(dir, options()).expect("open");
    db.put(b"a", b"1").expect("put");
    db.flush().expect("flush");
    db.put(b"b", b"2").expect("put");
    db.close().expect("close");
}

fn expect_corruption(r: strata::Result<Db>) -> (PathBuf, String) {
    match r {
        Err(Error::Corruption { file, reason, .. }) => (file, reason),
        Err(e) => panic!("expected corruption, got {e}"),
        Ok(_) => panic!("open must fail"),
    }
}

#[test]
fn a_missing_current_refuses_to_open_and_deletes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    db_with_table_and_log(dir.path());
    fs::remove_file(dir.path().join("CURRENT")).expect("remove CURRENT");
    let before = common::snapshot_except_lock(dir.path());
    let (file, reason) = expect_corruption(Db::open(dir.path(), options()));
    assert_eq!(file, dir.path().join("CURRENT"));
    assert!(reason.contains("not a new database"), "{reason}");
    assert!(reason.contains("Salvage"), "{reason}");
    assert_eq!(
        common::snapshot_except_lock(dir.path()),
        before,
        "a refused open changed files"
    );
    expect_corruption(Db::open_read_only(dir.path(), options()));
    assert_eq!(common::snapshot_except_lock(dir.path()), before);

    // Salvage rebuilds CURRENT from the manifest, and nothing is lost.
    let mut o = options();
    o.skip_corrupt_tables = true;
    let db = Db::open(dir.path(), o).expect("salvage");
    assert!(db.recovery_report().current_rebuilt.is_some());
    assert_eq!(db.get(b"a").expect("get"), Some(b"1".to_vec()));
    assert_eq!(db.get(b"b").expect("get"), Some(b"2".to_vec()));
}

#[test]
fn a_directory_of_engine_like_files_is_not_taken_for_a_new_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let planted = ["000007.log", "000123.sst", "MANIFEST-000002", "scratch.tmp"];
    for (i, name) in planted.iter().enumerate() {
        fs::write(dir.path().join(name), format!("not the engine's {i}")).expect("plant");
    }
    let before = common::snapshot_except_lock(dir.path());
    let (_, reason) = expect_corruption(Db::open(dir.path(), options()));
    for name in &planted[..3] {
        assert!(reason.contains(name), "{reason} should name {name}");
    }
    assert_eq!(common::snapshot_except_lock(dir.path()), before);
}

/// The bytes of the write-ahead log of another database, holding a put of
/// `evil` that must never appear in this one.
fn foreign_log_bytes() -> Vec<u8> {
    let other = tempfile::tempdir().expect("tempdir");
    {
        let db = Db::open(other.path(), options()).expect("open other");
        db.put(b"evil", b"from another database").expect("put");
        db.close().expect("close");
    }
    fs::read(log_in(other.path())).expect("read")
}

/// A write-ahead log in `dir`.
fn log_in(dir: &Path) -> PathBuf {
    fs::read_dir(dir)
        .expect("list")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "log"))
        .expect("a log")
}

#[test]
fn files_that_only_look_like_the_engines_are_left_in_place_and_not_replayed() {
    // Another database's write-ahead log, whose entry must not appear.
    let other_log = foreign_log_bytes();
    let dir = tempfile::tempdir().expect("tempdir");
    db_with_table_and_log(dir.path());
    let plants: Vec<(PathBuf, Vec<u8>)> = vec![
        // Numbers below and above every number the database allocated.
        (dir.path().join("000001.log"), other_log.clone()),
        (dir.path().join("999999.log"), other_log),
        (dir.path().join("999998.sst"), b"a foreign table".to_vec()),
        (
            dir.path().join("MANIFEST-999997"),
            b"a foreign manifest".to_vec(),
        ),
        (
            dir.path().join("notes.tmp"),
            b"a user's temporary file".to_vec(),
        ),
    ];
    for (p, b) in &plants {
        fs::write(p, b).expect("plant");
    }
    for _ in 0..2 {
        let db = Db::open(dir.path(), options()).expect("open");
        assert_eq!(db.get(b"a").expect("get"), Some(b"1".to_vec()));
        assert_eq!(db.get(b"b").expect("get"), Some(b"2".to_vec()));
        assert_eq!(
            db.get(b"evil").expect("get"),
            None,
            "a foreign log was replayed"
        );
        let left = left_in_place(&db);
        for (p, _) in &plants {
            assert!(left.contains(p), "{} not reported: {left:?}", p.display());
        }
        db.put(b"c", b"3").expect("put");
        db.flush().expect("flush");
        db.close().expect("close");
    }
    for (p, b) in &plants {
        assert_eq!(&fs::read(p).expect("planted file still there"), b);
    }
}

/// An open asks who wrote a log or manifest it did not expect by reading
/// its first record, not the whole file: huge sparse files of such names
/// (a terabyte each here, no disk space) are left and reported, and the
/// open neither reads them into memory nor fails.
#[test]
fn huge_sparse_files_of_engine_names_are_probed_not_read_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    db_with_table_and_log(dir.path());
    // The database's log ends in a torn record, so that the open asks
    // whether the logs after it (the planted one, by its number) hold any
    // write: that must not read the planted file whole either.
    let mut log = fs::OpenOptions::new()
        .append(true)
        .open(log_in(dir.path()))
        .expect("log");
    std::io::Write::write_all(&mut log, &[0xde, 0xad, 0xbe, 0xef, 50, 0, 1, 7, 7]).expect("tear");
    drop(log);
    let planted = [
        dir.path().join("999999.log"),
        dir.path().join("MANIFEST-999997"),
    ];
    for p in &planted {
        fs::File::create(p)
            .and_then(|f| f.set_len(1 << 40))
            .expect("plant a sparse file");
    }
    for _ in 0..2 {
        let db = Db::open(dir.path(), options()).expect("open");
        assert_eq!(db.get(b"a").expect("get"), Some(b"1".to_vec()));
        assert_eq!(db.get(b"b").expect("get"), Some(b"2".to_vec()));
        let left = left_in_place(&db);
        for p in &planted {
            assert!(left.contains(p), "{} not reported: {left:?}", p.display());
        }
        db.put(b"c", b"3").expect("put");
        db.close().expect("close");
    }
    for p in &planted {
        assert_eq!(fs::metadata(p).expect("still there").len(), 1 << 40);
    }
}

/// Repair copies (`NNNNNN.log.tmp`) that an open which crashed while
/// rewriting a kept log left behind: the next open removes the database's
/// own (one naming it, one that holds no record), reports them nowhere,
/// and leaves and reports one of another database and one for a number
/// the manifest never allocated.
#[test]
fn repair_copies_left_by_a_crashed_open_are_removed_when_provably_ours() {
    let other_log = foreign_log_bytes();
    let dir = tempfile::tempdir().expect("tempdir");
    db_with_table_and_log(dir.path());
    let own_log = log_in(dir.path());
    let mut own_copy = own_log.clone().into_os_string();
    own_copy.push(".tmp");
    let own_copy = PathBuf::from(own_copy);
    let ours = vec![
        (own_copy, fs::read(&own_log).expect("read")),
        (dir.path().join("000001.log.tmp"), Vec::new()),
    ];
    let foreign = vec![
        (dir.path().join("000002.log.tmp"), other_log),
        (dir.path().join("999999.log.tmp"), Vec::new()),
    ];
    for (p, b) in ours.iter().chain(&foreign) {
        fs::write(p, b).expect("plant");
    }
    // A read-only open removes nothing and reports only what it would
    // leave.
    {
        let db = Db::open_read_only(dir.path(), options()).expect("read-only open");
        let left = left_in_place(&db);
        for (p, _) in &ours {
            assert!(p.exists(), "{} removed by a read-only open", p.display());
            assert!(!left.contains(p), "{} reported: {left:?}", p.display());
        }
        for (p, _) in &foreign {
            assert!(left.contains(p), "{} not reported: {left:?}", p.display());
        }
    }
    let db = Db::open(dir.path(), options()).expect("open");
    assert_eq!(db.get(b"b").expect("get"), Some(b"2".to_vec()));
    assert_eq!(db.get(b"evil").expect("get"), None);
    let reported = left_in_place(&db);
    for (p, _) in &ours {
        assert!(!p.exists(), "{} not removed", p.display());
    }
    for (p, b) in &foreign {
        assert!(reported.contains(p), "{} not reported", p.display());
        assert_eq!(&fs::read(p).expect("still there"), b);
    }
}

/// The files an open left in place and reported.
fn left_in_place(db: &Db) -> Vec<PathBuf> {
    db.recovery_report()
        .left_in_place
        .iter()
        .map(|(p, _)| p.clone())
        .collect()
}

/// A database in `dir` holding files of the layers' formats: a table whose
/// levels below 0 are column groups (compacted there) and a keyspace of
/// dictionary-encoded files (flushed).
fn db_with_layer_files(dir: &Path) {
    use strata::table::{Column, ColumnType, Schema, TableOptions, Value};
    let db = Db::open(dir, options()).expect("open");
    let schema = Schema::new(
        vec![
            Column::new("id", ColumnType::Int64),
            Column::new("v", ColumnType::Int32),
            Column::new("w", ColumnType::Int32),
        ],
        &["id"],
    )
    .expect("schema");
    let t = db
        .create_table(
            "t",
            schema,
            TableOptions {
                num_levels: 5,
                size_ratio: 2,
                write_buffer_size: 16 << 10,
                level1_max_bytes: 16 << 10,
                target_file_size: 8 << 10,
                level0_compaction_trigger: 2,
                ..TableOptions::with_layout("column")
            },
        )
        .expect("create");
    for k in 0..2_000i64 {
        t.upsert_row(&[Value::Int64(k), Value::Int32(k as i32), Value::Int32(1)])
            .expect("upsert");
    }
    t.compact().expect("compact");
    let ks = db
        .keyspace(
            "d",
            strata::KeyspaceOptions::default().with_value_dictionary(),
        )
        .expect("keyspace");
    for k in 0..50u32 {
        ks.put(&k.to_be_bytes(), b"a repeated value").expect("put");
    }
    ks.flush().expect("flush");
    db.close().expect("close");
}

/// The files in `dir` named like tables whose footer ends with `magic`.
fn files_with_magic(dir: &Path, magic: &[u8; 8]) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(dir)
        .expect("list")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .filter(|p| fs::read(p).expect("read").ends_with(magic))
        .collect();
    found.sort();
    found
}

/// Files of the table layer's column-group format and of the core's
/// dictionary-encoded format are judged by the owner they record, as the
/// core's tables are: unreferenced, one of another database is left in place
/// and reported, and one of the database's own is removed. Until 2026-12-02
/// cleanup read owners only through the core's table reader, which refuses
/// both formats, so another database's files were removed whenever their
/// number was one this database had allocated.
#[test]
fn unreferenced_files_of_every_format_are_judged_by_the_owner_they_record() {
    let ours = tempfile::tempdir().expect("tempdir");
    let other = tempfile::tempdir().expect("tempdir");
    db_with_layer_files(ours.path());
    db_with_layer_files(other.path());
    let mut planted = Vec::new();
    // Numbers far above the ones in use and inside the first reservation
    // (1,024 numbers): allocated, never live.
    let mut number = 900;
    for magic in [b"SRTATSCG", b"SRTATSDV"] {
        for (dir, foreign) in [(other.path(), true), (ours.path(), false)] {
            let files = files_with_magic(dir, magic);
            let from = files.first().unwrap_or_else(|| {
                panic!(
                    "no file ending {} in {}",
                    magic.escape_ascii(),
                    dir.display()
                )
            });
            let to = ours.path().join(format!("{number:06}.sst"));
            number += 1;
            let bytes = fs::read(from).expect("read");
            fs::write(&to, &bytes).expect("plant");
            planted.push((to, bytes, foreign));
        }
    }
    {
        let db = Db::open_read_only(ours.path(), options()).expect("read-only open");
        let left = left_in_place(&db);
        for (p, _, foreign) in &planted {
            assert!(p.exists(), "{} removed by a read-only open", p.display());
            assert_eq!(left.contains(p), *foreign, "{}: {left:?}", p.display());
        }
    }
    let db = Db::open(ours.path(), options()).expect("open");
    let report = db.recovery_report();
    for (p, bytes, foreign) in &planted {
        if *foreign {
            let why = report
                .left_in_place
                .iter()
                .find(|(q, _)| q == p)
                .map(|(_, why)| why.clone())
                .unwrap_or_else(|| panic!("{} not reported: {report:?}", p.display()));
            assert!(why.contains("another database"), "{why}");
            assert_eq!(&fs::read(p).expect("still there"), bytes);
        } else {
            assert!(!p.exists(), "{} of this database not removed", p.display());
        }
    }
    // The database's own data is untouched by either.
    let t = db.table("t").expect("table");
    let row = t
        .get(&[strata::table::Value::Int64(7)], None)
        .expect("get")
        .expect("row 7");
    assert_eq!(row[1], strata::table::Value::Int32(7));
    let ks = db
        .keyspace(
            "d",
            strata::KeyspaceOptions::default().with_value_dictionary(),
        )
        .expect("keyspace");
    assert_eq!(
        ks.get(&7u32.to_be_bytes()).expect("get"),
        Some(b"a repeated value".to_vec())
    );
}

/// Cuts `path` to `len` bytes.
fn truncate(path: &Path, len: u64) {
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open")
        .set_len(len)
        .expect("truncate");
}

fn the_manifest(dir: &Path) -> PathBuf {
    let name = fs::read_to_string(dir.join("CURRENT")).expect("CURRENT");
    dir.join(name.trim_end())
}

#[test]
fn a_manifest_cut_in_an_edit_that_was_acted_on_is_damage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    db.put(b"a", b"1").expect("put");
    // The flush's edit adds the table and retires the log holding `a`,
    // which is then deleted.
    db.flush().expect("flush");
    db.close().expect("close");
    let m = the_manifest(dir.path());
    let len = fs::metadata(&m).expect("stat").len();
    truncate(&m, len - 3);
    let before = common::snapshot_except_lock(dir.path());
    let (file, reason) = expect_corruption(Db::open(dir.path(), options()));
    assert_eq!(file, m);
    assert!(reason.contains("not a crash"), "{reason}");
    assert_eq!(
        common::snapshot_except_lock(dir.path()),
        before,
        "a refused open changed files"
    );
}

#[test]
fn a_manifest_cut_in_an_edit_nothing_acted_on_is_a_crash_and_opens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    db.put(b"a", b"1").expect("put");
    db.close().expect("close");
    // A crash while appending an edit: its first bytes reached the file.
    let m = the_manifest(dir.path());
    let mut bytes = fs::read(&m).expect("read");
    let cut_record = [0x12, 0x34, 0x56, 0x78, 200, 0, 0, 0, 1, 9, 9];
    bytes.extend_from_slice(&cut_record);
    fs::write(&m, bytes).expect("write");
    let db = Db::open(dir.path(), options()).expect("a torn tail opens");
    let (file, _, bytes, _) = db
        .recovery_report()
        .manifest_tail_dropped
        .clone()
        .expect("reported");
    assert_eq!(file, m);
    assert_eq!(bytes, cut_record.len() as u64);
    assert_eq!(db.get(b"a").expect("get"), Some(b"1".to_vec()));
}

#[test]
fn sizes_that_cannot_be_honoured_are_refused_naming_the_option() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = options();
    o.default_keyspace.memtable = MemTableKind::VectorStatic;
    o.default_keyspace.write_buffer_size = 1 << 40;
    match Db::open(dir.path(), o) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("write_buffer_size"), "{m}"),
        Err(e) => panic!("expected InvalidArgument, got {e}"),
        Ok(_) => panic!("a 1 TiB static vector must be refused"),
    }
    let mut o = options();
    o.default_keyspace.write_buffer_size = usize::MAX;
    assert!(matches!(
        Db::open(dir.path(), o),
        Err(Error::InvalidArgument(_))
    ));
    let mut o = options();
    o.block_cache_bytes = u64::MAX;
    assert!(matches!(
        Db::open(dir.path(), o),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn links_planted_at_the_engines_file_names_are_never_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    let target = outside.path().join("precious");
    fs::write(&target, b"precious data").expect("write");
    // A new database writes its first log, manifest and CURRENT temporary
    // file under numbers 2 and 3; plant links at all of them.
    for name in [
        "CURRENT.000003.tmp",
        "CURRENT.tmp",
        "000002.log",
        "MANIFEST-000003",
    ] {
        std::os::unix::fs::symlink(&target, dir.path().join(name)).expect("symlink");
    }
    // With links at its names the directory is not empty: the open is
    // refused rather than writing through them.
    assert!(Db::open(dir.path(), options()).is_err());
    assert_eq!(fs::read(&target).expect("read"), b"precious data");

    // An existing database: a link at a name it is about to create.
    let dir = tempfile::tempdir().expect("tempdir");
    db_with_table_and_log(dir.path());
    for n in 1..=40u32 {
        let name = format!("CURRENT.{n:06}.tmp");
        std::os::unix::fs::symlink(&target, dir.path().join(name)).expect("symlink");
    }
    std::os::unix::fs::symlink(&target, dir.path().join("CURRENT.tmp")).expect("symlink");
    match Db::open(dir.path(), options()) {
        Ok(db) => {
            db.put(b"x", b"y").expect("put");
            db.flush().expect("flush");
            db.close().expect("close");
        }
        Err(e) => assert!(e.to_string().contains("CURRENT"), "{e}"),
    }
    assert_eq!(fs::read(&target).expect("read"), b"precious data");

    // The lock file.
    let dir = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(&target, dir.path().join("LOCK")).expect("symlink");
    assert!(Db::open(dir.path(), options()).is_err());
    assert_eq!(fs::read(&target).expect("read"), b"precious data");
}

#[test]
fn a_read_only_open_changes_nothing_and_refuses_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    db_with_table_and_log(dir.path());
    let before = common::snapshot_except_lock(dir.path());
    let db = Db::open_read_only(dir.path(), options()).expect("read-only open");
    assert!(db.is_read_only());
    assert_eq!(db.get(b"a").expect("get"), Some(b"1".to_vec()));
    assert_eq!(
        db.get(b"b").expect("get"),
        Some(b"2".to_vec()),
        "replayed in memory"
    );
    assert!(matches!(
        db.put(b"c", b"3"),
        Err(Error::OpenedReadOnly { .. })
    ));
    assert!(matches!(db.flush(), Err(Error::OpenedReadOnly { .. })));
    assert!(matches!(db.compact(), Err(Error::OpenedReadOnly { .. })));
    assert!(matches!(
        db.keyspace("new", Default::default()),
        Err(Error::OpenedReadOnly { .. })
    ));
    assert!(db.verify().is_empty());
    db.close().expect("close");
    assert_eq!(common::snapshot_except_lock(dir.path()), before);
    assert!(!dir.path().join("LOCK").exists() || before.iter().all(|(p, _)| !p.ends_with("LOCK")));
    // A missing database is not created.
    let missing = dir.path().join("nothing-here");
    assert!(matches!(
        Db::open_read_only(&missing, options()),
        Err(Error::NotFound { .. })
    ));
    assert!(!missing.exists());
}

#[test]
fn a_read_only_open_works_beside_a_writer_that_holds_the_lock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let writer = Db::open(dir.path(), options()).expect("open");
    writer.put(b"k", b"v1").expect("put");
    let reader = Db::open_read_only(dir.path(), options()).expect("read-only beside a writer");
    assert_eq!(reader.get(b"k").expect("get"), Some(b"v1".to_vec()));
    assert!(matches!(
        Db::open(dir.path(), options()),
        Err(Error::Locked { .. })
    ));
    drop(reader);
    writer.put(b"k", b"v2").expect("the writer is unaffected");
}

#[test]
fn a_read_only_open_works_on_storage_that_refuses_every_change() {
    let vfs = MemVfs::new();
    let o = on(&vfs);
    {
        let db = Db::open("/db", o.clone()).expect("open");
        db.put(b"a", b"1").expect("put");
        db.flush().expect("flush");
        db.put(b"b", b"2").expect("put");
        db.close().expect("close");
    }
    for op in [
        VfsOp::Create,
        VfsOp::Rename,
        VfsOp::Remove,
        VfsOp::SyncDir,
        VfsOp::Lock,
        VfsOp::CreateDir,
        VfsOp::Append,
    ] {
        vfs.set_fault(FaultRule::new(FaultKind::IoError).op(op));
    }
    let db = Db::open_read_only("/db", o.clone()).expect("read-only on read-only storage");
    assert_eq!(db.get(b"a").expect("get"), Some(b"1".to_vec()));
    assert_eq!(db.get(b"b").expect("get"), Some(b"2".to_vec()));
    drop(db);
    assert!(
        Db::open("/db", o).is_err(),
        "a writable open needs to write"
    );
    assert_eq!(vfs.injected_count(VfsOp::Create), 0);
}

#[test]
fn a_compaction_that_fails_on_a_full_disk_leaves_the_database_writable() {
    let vfs = MemVfs::new();
    let o = on(&vfs);
    let db = Db::open("/db", o.clone()).expect("open");
    for round in 0..3u32 {
        for i in 0..200u32 {
            db.put(
                format!("k{i:04}").as_bytes(),
                format!("v{round}").as_bytes(),
            )
            .expect("put");
        }
        db.flush().expect("flush");
    }
    vfs.set_fault(
        FaultRule::new(FaultKind::NoSpace)
            .op(VfsOp::Create)
            .path_contains(".sst"),
    );
    assert!(
        db.compact().is_err(),
        "the compaction's output cannot be created"
    );
    // The log still has room: writes go on.
    db.put(b"after", b"failure")
        .expect("a write after a failed compaction");
    vfs.clear_faults();
    db.compact()
        .expect("the compaction succeeds once there is room");
    db.wait_for_background_work().expect("no error left");
    for i in 0..200u32 {
        assert_eq!(
            db.get(format!("k{i:04}").as_bytes()).expect("get"),
            Some(b"v2".to_vec())
        );
    }
    assert_eq!(db.get(b"after").expect("get"), Some(b"failure".to_vec()));
    db.close().expect("close");
    let db = Db::open("/db", o).expect("reopen");
    assert_eq!(db.get(b"after").expect("get"), Some(b"failure".to_vec()));
}

#[test]
fn a_database_of_manifest_format_1_opens_and_is_given_an_id() {
    use strata::log::{LogReader, LogWriter, TailPolicy};
    use strata::manifest::VersionEdit;
    use strata::vfs::{StdVfs, Vfs};
    let dir = tempfile::tempdir().expect("tempdir");
    let first_id = {
        let db = Db::open(dir.path(), options()).expect("open");
        db.put(b"a", b"1").expect("put");
        db.flush().expect("flush");
        let id = db.id();
        db.close().expect("close");
        id
    };
    // Rewrite the manifest as format 1 wrote it (no id), and drop the live
    // log (it holds only its header: format 1 logs have none).
    let m = the_manifest(dir.path());
    let mut reader = LogReader::open(&StdVfs, &m, TailPolicy::Strict).expect("read");
    let mut edits = Vec::new();
    while let Some(rec) = reader.next_record().expect("record") {
        let mut e = VersionEdit::decode(&rec).expect("edit");
        e.db_id = None;
        if e.format_version.is_some() {
            e.format_version = Some(1);
        }
        edits.push(e);
    }
    fs::remove_file(&m).expect("remove");
    let mut w = LogWriter::new(StdVfs.create(&m).expect("create"));
    for e in &edits {
        w.add_record(&e.encode()).expect("add");
    }
    w.sync().expect("sync");
    for e in fs::read_dir(dir.path()).expect("list") {
        let p = e.expect("entry").path();
        if p.extension().is_some_and(|x| x == "log") {
            fs::remove_file(p).expect("remove log");
        }
    }
    let db = Db::open(dir.path(), options()).expect("a format-1 database opens");
    let id = db.id();
    assert_ne!(id, first_id, "a new id is assigned");
    assert_eq!(db.get(b"a").expect("get"), Some(b"1".to_vec()));
    db.put(b"b", b"2").expect("put");
    db.close().expect("close");
    let db = Db::open(dir.path(), options()).expect("reopen");
    assert_eq!(db.id(), id, "the id is durable");
    assert_eq!(db.get(b"b").expect("get"), Some(b"2".to_vec()));
}

#[test]
fn salvage_does_not_set_aside_a_table_of_a_newer_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    db_with_table_and_log(dir.path());
    let table = fs::read_dir(dir.path())
        .expect("list")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .expect("a table");
    // The footer's format version (bytes 52..56 of the last 64) is not
    // covered by its checksum: a newer writer's table reads as such.
    let mut bytes = fs::read(&table).expect("read");
    let at = bytes.len() - 64 + 52;
    bytes[at..at + 4].copy_from_slice(&9u32.to_le_bytes());
    fs::write(&table, &bytes).expect("write");
    let mut o = options();
    o.skip_corrupt_tables = true;
    match Db::open(dir.path(), o) {
        Err(Error::UnsupportedVersion { file, found, .. }) => {
            assert_eq!(file, table);
            assert_eq!(found, 9);
        }
        Err(e) => panic!("expected UnsupportedVersion, got {e}"),
        Ok(_) => panic!("a table of a newer format must not open"),
    }
    assert_eq!(fs::read(&table).expect("still in place"), bytes);
    assert!(!dir.path().join("lost").exists());
}

/// Copies the checked-in fixture `name` (a database written by an older
/// build) to a fresh directory.
fn fixture(name: &str) -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let dir = tempfile::tempdir().expect("tempdir");
    for e in fs::read_dir(&src).expect("fixture") {
        let p = e.expect("entry").path();
        fs::copy(&p, dir.path().join(p.file_name().expect("name"))).expect("copy");
    }
    dir
}

/// `tests/fixtures/format1` was written by the build before manifest
/// format 2 (commit 47a0988, `strata shell`: put a 1, put b 2, flush,
/// put d 4, delete a): a format-1 manifest without a database id, a table
/// without an owner, a log without a header. It must keep opening.
#[test]
fn a_database_written_by_the_format_1_build_opens() {
    let dir = fixture("format1");
    let db = Db::open_read_only(dir.path(), options()).expect("read-only open");
    assert_eq!(db.get(b"a").expect("get"), None);
    assert_eq!(db.get(b"b").expect("get"), Some(b"2".to_vec()));
    assert_eq!(db.get(b"d").expect("get"), Some(b"4".to_vec()));
    drop(db);
    let db = Db::open(dir.path(), options()).expect("open");
    assert!(db.recovery_report().left_in_place.is_empty());
    assert_eq!(db.get(b"b").expect("get"), Some(b"2".to_vec()));
    assert_eq!(db.get(b"d").expect("get"), Some(b"4".to_vec()));
    assert_eq!(db.get(b"a").expect("get"), None);
    let id = db.id();
    db.put(b"e", b"5").expect("put");
    db.close().expect("close");
    let db = Db::open(dir.path(), options()).expect("reopen");
    assert_eq!(db.id(), id);
    assert_eq!(db.get(b"e").expect("get"), Some(b"5".to_vec()));
}

/// An open that wrote its recovery report (`lost/recovery-N.txt`) and then
/// failed leaves the report; the next open, finding the same files, takes
/// the same number and writes its report beside it, and opens.
#[test]
fn an_open_that_failed_after_its_report_does_not_block_the_next() {
    use strata::vfs::Vfs;
    let vfs = MemVfs::new();
    let o = on(&vfs);
    {
        let db = Db::open("/db", o.clone()).expect("open");
        db.put(b"a", b"1").expect("put");
        db.flush().expect("flush");
        db.close().expect("close");
    }
    // A torn manifest tail: the next open reports dropping it.
    let root = Path::new("/db");
    let name = vfs
        .list(root)
        .expect("list")
        .into_iter()
        .find(|n| n.starts_with("MANIFEST-"))
        .expect("a manifest");
    let m = root.join(&name);
    let mut bytes = vfs.read_all(&m).expect("read");
    bytes.extend_from_slice(&[0x12, 0x34, 0x56, 0x78, 200, 0, 0, 0, 1, 9, 9]);
    vfs.remove(&m).expect("remove");
    let mut w = vfs.create(&m).expect("create");
    w.append(&bytes).expect("append");
    w.sync().expect("sync");
    drop(w);
    // The open writes its report, then fails to create the new log.
    vfs.set_fault(
        FaultRule::new(FaultKind::IoError)
            .op(VfsOp::Create)
            .path_contains(".log")
            .count(1),
    );
    assert!(Db::open("/db", o.clone()).is_err());
    vfs.clear_faults();
    let reports = || vfs.list(&root.join("lost")).expect("lost").len();
    assert_eq!(reports(), 1);
    let db = Db::open("/db", o).expect("the next open");
    assert!(db.recovery_report().manifest_tail_dropped.is_some());
    assert_eq!(db.get(b"a").expect("get"), Some(b"1".to_vec()));
    assert_eq!(reports(), 2, "both tries' reports are kept");
}

/// A database creation that failed before `CURRENT` existed (here: the
/// disk full when the manifest is created) leaves only files that hold
/// nothing; the next open creates the database instead of refusing it.
#[test]
fn a_creation_that_failed_before_current_opens_as_a_new_database() {
    use strata::vfs::Vfs;
    for (op, path) in [
        (VfsOp::Create, "MANIFEST"),
        (VfsOp::Sync, "MANIFEST"),
        (VfsOp::Rename, "CURRENT"),
    ] {
        let vfs = MemVfs::new();
        let o = on(&vfs);
        vfs.set_fault(
            FaultRule::new(FaultKind::NoSpace)
                .op(op)
                .path_contains(path)
                .count(1),
        );
        assert!(Db::open("/db", o.clone()).is_err(), "{op:?} {path}");
        vfs.clear_faults();
        let left = vfs.list(Path::new("/db")).expect("list");
        assert!(left.iter().any(|n| n.ends_with(".log")), "{op:?}: {left:?}");
        let db = Db::open("/db", o.clone()).expect("the next open creates it");
        db.put(b"a", b"1").expect("put");
        db.close().expect("close");
        let db = Db::open("/db", o).expect("reopen");
        assert_eq!(db.get(b"a").expect("get"), Some(b"1".to_vec()));
    }
}
