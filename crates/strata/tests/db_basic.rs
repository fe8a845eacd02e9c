//! One behaviour per test: the public API of `Db` and `Keyspace`.

use std::sync::Arc;

use strata::merge::AppendOperator;
use strata::{Db, Error, KeyspaceOptions, Options, ReadOptions, WriteBatch, WriteOptions};

fn small_options() -> Options {
    let mut o = Options::default();
    o.default_keyspace.write_buffer_size = 64 * 1024;
    o.default_keyspace.target_file_size = 64 * 1024;
    o.default_keyspace.level1_max_bytes = 256 * 1024;
    o.default_keyspace.merge_operator = Some(Arc::new(AppendOperator { delimiter: b',' }));
    o.block_cache_bytes = 1 << 20;
    o
}

#[test]
fn put_get_delete_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    db.put(b"k", b"v").expect("put");
    assert_eq!(db.get(b"k").expect("get"), Some(b"v".to_vec()));
    db.delete(b"k").expect("delete");
    assert_eq!(db.get(b"k").expect("get"), None);
    db.put(b"", b"empty key").expect("empty key");
    assert_eq!(db.get(b"").expect("get"), Some(b"empty key".to_vec()));
}

#[test]
fn data_survives_reopen_from_log_and_from_tables() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = Db::open(dir.path(), small_options()).expect("open");
        for i in 0..5000u32 {
            db.put(
                format!("key{i:06}").as_bytes(),
                format!("value{i}").as_bytes(),
            )
            .expect("put");
        }
        db.close().expect("close");
    }
    let db = Db::open(dir.path(), small_options()).expect("reopen");
    assert!(
        db.recovery_report().entries_replayed > 0
            || db.stats().keyspaces[0].levels.iter().any(|l| l.0 > 0)
    );
    for i in (0..5000u32).step_by(97) {
        assert_eq!(
            db.get(format!("key{i:06}").as_bytes()).expect("get"),
            Some(format!("value{i}").into_bytes())
        );
    }
    let n = db
        .default_keyspace()
        .scan(None, None, usize::MAX)
        .expect("scan")
        .len();
    assert_eq!(n, 5000);
}

#[test]
fn second_open_of_same_path_is_locked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let _db = Db::open(dir.path(), small_options()).expect("open");
    match Db::open(dir.path(), small_options()) {
        Err(Error::Locked { .. }) => {}
        Err(e) => panic!("expected Locked, got {e}"),
        Ok(_) => panic!("expected Locked, got an open database"),
    }
}

#[test]
fn open_without_create_on_empty_dir_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = small_options();
    o.create_if_missing = false;
    assert!(matches!(
        Db::open(dir.path().join("nope"), o.clone()),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        Db::open(dir.path(), o),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn oversized_key_and_value_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    let big_key = vec![b'k'; 64 * 1024 + 1];
    assert!(matches!(
        db.put(&big_key, b"v"),
        Err(Error::InvalidArgument(_))
    ));
    let mut b = WriteBatch::new();
    b.put(b"ok", b"1");
    b.put(&big_key, b"2");
    assert!(matches!(
        db.write(WriteOptions::default(), b),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(db.get(b"ok").expect("get"), None);
    let max_key = vec![b'k'; 64 * 1024];
    db.put(&max_key, b"v")
        .expect("a key of exactly 64 KiB is fine");
}

/// A value is accepted only if a flush can write it: the largest key with
/// the largest value goes through a flush and reads back from the table;
/// one byte more is refused at the write.
#[test]
fn the_largest_value_flushes_and_a_larger_one_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let too_big = vec![7u8; strata::options::MAX_VALUE_BYTES + 1];
    assert!(matches!(
        db.put(b"big", &too_big),
        Err(Error::InvalidArgument(_))
    ));
    let key = vec![b'k'; strata::options::MAX_KEY_BYTES];
    let value = &too_big[..strata::options::MAX_VALUE_BYTES];
    db.put(&key, value).expect("the largest value");
    db.flush().expect("flush");
    assert_eq!(db.get(&key).expect("get").as_deref(), Some(value));
    assert_eq!(db.get(b"big").expect("get"), None);
}

#[test]
fn merge_operands_combine_across_flushes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    db.put(b"m", b"a").expect("put");
    db.flush().expect("flush");
    db.merge(b"m", b"b").expect("merge");
    db.flush().expect("flush");
    db.merge(b"m", b"c").expect("merge");
    assert_eq!(db.get(b"m").expect("get"), Some(b"a,b,c".to_vec()));
    // Into a reused buffer: the merged value replaces what it held, and a
    // miss or a deleted key leaves it empty.
    let mut buf = b"an older, longer value".to_vec();
    assert!(db.get_into(b"m", &mut buf).expect("get_into"));
    assert_eq!(buf, b"a,b,c");
    assert!(!db.get_into(b"absent", &mut buf).expect("get_into"));
    assert!(buf.is_empty());
    db.put(b"d", b"x").expect("put");
    db.delete(b"d").expect("delete");
    buf.extend_from_slice(b"junk");
    assert!(!db.get_into(b"d", &mut buf).expect("get_into"));
    assert!(buf.is_empty());
    db.compact().expect("compact");
    assert_eq!(db.get(b"m").expect("get"), Some(b"a,b,c".to_vec()));
    let all = db.default_keyspace().scan(None, None, 10).expect("scan");
    assert_eq!(all, vec![(b"m".to_vec(), b"a,b,c".to_vec())]);
}

#[test]
fn merge_without_operator_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    assert!(matches!(
        db.merge(b"k", b"x"),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn snapshot_sees_the_past_through_flush_and_compaction() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    let ks = db.default_keyspace();
    db.put(b"a", b"1").expect("put");
    let snap = db.snapshot();
    db.put(b"a", b"2").expect("put");
    db.delete(b"a").expect("delete");
    db.flush().expect("flush");
    db.compact().expect("compact");
    assert_eq!(ks.get_at(b"a", &snap).expect("get"), Some(b"1".to_vec()));
    assert_eq!(ks.get(b"a").expect("get"), None);
    let mut it = ks
        .iter(ReadOptions {
            snapshot: Some(snap.seqno()),
            ..Default::default()
        })
        .expect("iter");
    it.seek_to_first();
    assert!(it.valid());
    assert_eq!((it.key(), it.value()), (&b"a"[..], &b"1"[..]));
}

#[test]
fn keyspaces_are_independent_and_batches_span_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = Db::open(dir.path(), small_options()).expect("open");
        let idx = db
            .keyspace("index", KeyspaceOptions::default())
            .expect("keyspace");
        let mut b = WriteBatch::new();
        b.put(b"row1", b"data");
        b.put_in(idx.id(), b"data#row1", b"");
        db.write(WriteOptions::default(), b).expect("write");
        assert_eq!(db.get(b"data#row1").expect("get"), None);
        assert_eq!(idx.get(b"data#row1").expect("get"), Some(vec![]));
        db.close().expect("close");
    }
    let db = Db::open(dir.path(), small_options()).expect("reopen");
    assert_eq!(
        db.keyspace_names(),
        vec!["default".to_string(), "index".to_string()]
    );
    let idx = db
        .keyspace("index", KeyspaceOptions::default())
        .expect("keyspace");
    assert_eq!(idx.get(b"data#row1").expect("get"), Some(vec![]));
    assert_eq!(db.get(b"row1").expect("get"), Some(b"data".to_vec()));
}

#[test]
fn iterator_walks_both_ways_within_bounds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    for i in 0..100u32 {
        db.put(format!("{i:03}").as_bytes(), b"x").expect("put");
        if i % 30 == 0 {
            db.flush().expect("flush");
        }
    }
    db.delete(b"050").expect("delete");
    let ks = db.default_keyspace();
    let mut it = ks
        .iter(ReadOptions {
            lower_bound: Some(b"040".to_vec()),
            upper_bound: Some(b"060".to_vec()),
            ..Default::default()
        })
        .expect("iter");
    it.seek_to_first();
    let mut fwd = Vec::new();
    while it.valid() {
        fwd.push(it.key().to_vec());
        it.next();
    }
    assert_eq!(fwd.len(), 19);
    assert_eq!(fwd[0], b"040");
    assert_eq!(fwd.last().map(Vec::as_slice), Some(&b"059"[..]));
    it.seek_to_last();
    let mut back = Vec::new();
    while it.valid() {
        back.push(it.key().to_vec());
        it.prev();
    }
    back.reverse();
    assert_eq!(fwd, back);
    it.seek(b"049");
    it.next();
    assert_eq!(it.key(), b"051");
    it.prev();
    assert_eq!(it.key(), b"049");
}

#[test]
fn compaction_keeps_levels_sorted_and_drops_overwrites() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    for round in 0..4u32 {
        for i in 0..3000u32 {
            db.put(
                format!("key{i:05}").as_bytes(),
                format!("r{round}-{i:0>50}").as_bytes(),
            )
            .expect("put");
        }
    }
    db.compact().expect("compact");
    let st = db.stats();
    let levels = &st.keyspaces[0].levels;
    assert_eq!(
        levels[0].0, 0,
        "level 0 empty after full compaction: {levels:?}"
    );
    let on_disk: u64 = levels.iter().map(|l| l.1).sum();
    // 3000 live keys of ~70 bytes; four rounds would be four times that.
    assert!(
        on_disk < 3000 * 70 * 2,
        "overwritten versions dropped: {on_disk} bytes"
    );
    assert_eq!(
        db.get(b"key00042").expect("get"),
        Some(format!("r3-{:0>50}", 42).into_bytes())
    );
}

#[test]
fn idle_keyspace_does_not_pin_logs_beyond_the_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = small_options();
    o.max_total_wal_bytes = 256 * 1024;
    let db = Db::open(dir.path(), o).expect("open");
    let idle = db
        .keyspace("idle", KeyspaceOptions::default())
        .expect("keyspace");
    idle.put(b"lonely", b"write").expect("put");
    for i in 0..20_000u32 {
        db.put(format!("key{i:06}").as_bytes(), &[7u8; 50])
            .expect("put");
    }
    // Bytes on disk: the log being written has its size set ahead of its
    // appends (a sparse tail), which holds no data.
    use std::os::unix::fs::MetadataExt;
    let log_bytes: u64 = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| e.metadata().map(|m| m.blocks() * 512).unwrap_or(0))
        .sum();
    // Budget plus one memtable's worth of slack for the log being written.
    assert!(
        log_bytes < 256 * 1024 + 2 * 64 * 1024,
        "{log_bytes} bytes of logs"
    );
    assert_eq!(idle.get(b"lonely").expect("get"), Some(b"write".to_vec()));
}

#[test]
fn stale_keyspace_handle_fails_closed_and_does_not_block_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    let ks = db.default_keyspace();
    let snap = db.snapshot();
    ks.put(b"k", b"v").expect("put");
    drop(db);
    assert!(matches!(ks.put(b"k2", b"v"), Err(Error::Closed)));
    let db = Db::open(dir.path(), small_options()).expect("reopen while a stale handle exists");
    assert_eq!(db.get(b"k").expect("get"), Some(b"v".to_vec()));
    drop(snap);
}

#[test]
fn waiting_for_background_work_leaves_a_settled_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = small_options();
    let k = &mut o.default_keyspace;
    k.write_buffer_size = 32 * 1024;
    k.target_file_size = 32 * 1024;
    k.level1_max_bytes = 128 * 1024;
    k.level0_compaction_trigger = 2;
    let (trigger, l1_max, ratio) = (
        k.level0_compaction_trigger,
        k.level1_max_bytes,
        k.size_ratio,
    );
    let db = Db::open(dir.path(), o).expect("open");
    for i in 0..30_000u32 {
        db.put(format!("key{i:08}").as_bytes(), &[b'x'; 40])
            .expect("put");
    }
    db.wait_for_background_work().expect("wait");
    let st = db.stats();
    let ks = &st.keyspaces[0];
    assert_eq!(ks.immutable_memtables, 0, "{ks:?}");
    assert!(ks.levels[0].0 < trigger, "level 0 over its trigger: {ks:?}");
    let mut max = l1_max;
    for (level, (_, bytes)) in ks.levels.iter().enumerate().skip(1) {
        if level + 1 < ks.levels.len() {
            assert!(*bytes <= max, "level {level} over its budget: {ks:?}");
        }
        max *= ratio;
    }
    assert!(st.compactions > 0, "the load compacted: {ks:?}");
    // The newest keys are still in the memtable: waiting does not flush.
    assert!(ks.memtable_bytes > 0, "{ks:?}");
    db.close().expect("close");
}

/// Closing a database closes its log even while a handle outlives the
/// close: the next open of the directory reads the log at the size it
/// finds, and nothing of the closed database changes the file after that.
#[test]
fn close_gives_the_log_its_size_back_while_a_handle_lives_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    let ks = db.default_keyspace();
    let sync = WriteOptions {
        sync: true,
        ..WriteOptions::default()
    };
    for i in 0..20u32 {
        ks.put_opt(sync, format!("key{i:03}").as_bytes(), b"value")
            .expect("put");
    }
    db.close().expect("close");
    // `ks` still holds the closed database.
    assert_closed_logs_hold_only_data(dir.path());
    let again = Db::open(dir.path(), small_options()).expect("reopen");
    assert!(
        ks.put(b"late", b"write").is_err(),
        "the old handle is closed"
    );
    drop(ks);
    for i in 0..20u32 {
        assert_eq!(
            again.get(format!("key{i:03}").as_bytes()).expect("get"),
            Some(b"value".to_vec())
        );
    }
}

/// The same for a log that a memtable switch closed while another
/// keyspace still needs it (kept open until a sync covers it): the close
/// closes it too, not the last handle's drop under a database opened since.
#[test]
fn close_gives_every_closed_log_its_size_back_while_a_handle_lives_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    let ks = db.default_keyspace();
    let other = db
        .keyspace("other", KeyspaceOptions::default())
        .expect("keyspace");
    let sync = WriteOptions {
        sync: true,
        ..WriteOptions::default()
    };
    other.put(b"pin", b"the log").expect("put");
    for i in 0..20u32 {
        ks.put_opt(sync, format!("key{i:03}").as_bytes(), b"value")
            .expect("put");
    }
    ks.flush().expect("flush the default keyspace only");
    ks.put(b"after", b"switch").expect("put");
    db.close().expect("close");
    assert_closed_logs_hold_only_data(dir.path());
    let again = Db::open(dir.path(), small_options()).expect("reopen");
    drop(ks);
    drop(other);
    assert_closed_logs_hold_only_data(dir.path());
    assert_eq!(again.get(b"key007").expect("get"), Some(b"value".to_vec()));
}

/// A write-ahead log's size is set ahead of its appends, so a crash image
/// of an open database holds a log that ends in zeros: it opens with
/// every synced write and reports nothing dropped. A closed log is given
/// back the size of its data.
#[test]
fn a_preallocated_log_recovers_every_synced_write_and_nothing_else() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let image = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    let sync = WriteOptions {
        sync: true,
        ..WriteOptions::default()
    };
    for i in 0..100u32 {
        let mut b = WriteBatch::new();
        b.put(format!("key{i:03}").as_bytes(), b"value");
        db.write(sync, b).expect("write");
    }
    // The crash image: every file as it is now, the open log included.
    let mut preallocated = false;
    for e in std::fs::read_dir(dir.path()).expect("list") {
        let e = e.expect("entry");
        let name = e.file_name();
        let meta = e.metadata().expect("metadata");
        if meta.is_file() && name.to_string_lossy() != "LOCK" {
            let bytes = std::fs::read(e.path()).expect("read");
            if name.to_string_lossy().ends_with(".log") && bytes.ends_with(&[0; 4096]) {
                preallocated = true;
                // Sparse: the zeros take no room on disk.
                assert!(meta.blocks() * 512 < meta.len(), "{meta:?}");
            }
            std::fs::write(image.path().join(&name), bytes).expect("write");
        }
    }
    assert!(preallocated, "the open log's size is set ahead of its data");
    let copy = Db::open(image.path(), small_options()).expect("open the crash image");
    assert!(
        !copy.recovery_report().changed_anything(),
        "{}",
        copy.recovery_report().render()
    );
    for i in 0..100u32 {
        assert_eq!(
            copy.get(format!("key{i:03}").as_bytes()).expect("get"),
            Some(b"value".to_vec())
        );
    }
    drop(copy);
    drop(db);
    assert_closed_logs_hold_only_data(dir.path());
}

/// Every write-ahead log in `dir` ends in its data, not in the zeros of
/// a size set ahead of it.
fn assert_closed_logs_hold_only_data(dir: &std::path::Path) {
    for e in std::fs::read_dir(dir).expect("list") {
        let e = e.expect("entry");
        if e.file_name().to_string_lossy().ends_with(".log") {
            let bytes = std::fs::read(e.path()).expect("read");
            assert!(
                !bytes.ends_with(&[0; 64]),
                "a closed log keeps only its data ({} bytes)",
                bytes.len()
            );
        }
    }
}

/// Compaction reads its inputs without adding their blocks to the block
/// cache (the files are deleted when it ends, and their blocks would evict
/// those readers use); reads still fill it.
#[test]
fn compaction_does_not_fill_the_block_cache_and_reads_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), small_options()).expect("open");
    let value = [b'v'; 100];
    for round in 0..4u32 {
        for i in 0..500u32 {
            db.put(format!("key{:06}", i * 4 + round).as_bytes(), &value)
                .expect("put");
        }
        db.flush().expect("flush");
    }
    assert_eq!(db.stats().block_cache_usage_bytes, 0, "nothing read yet");
    db.compact().expect("compact");
    assert_eq!(
        db.stats().block_cache_usage_bytes,
        0,
        "compaction filled the cache"
    );
    for i in (0..2000u32).step_by(97) {
        assert_eq!(
            db.get(format!("key{i:06}").as_bytes()).expect("get"),
            Some(value.to_vec())
        );
    }
    assert!(
        db.stats().block_cache_usage_bytes > 0,
        "reads fill the cache"
    );
}

/// The real file system, noting whether each table file was asked to be
/// mapped.
#[derive(Debug, Default)]
struct NotingVfs {
    asked: std::sync::Mutex<Vec<bool>>,
}

impl strata::vfs::Vfs for NotingVfs {
    fn create_dir_all(&self, path: &std::path::Path) -> strata::Result<()> {
        strata::vfs::StdVfs.create_dir_all(path)
    }
    fn create(&self, path: &std::path::Path) -> strata::Result<Box<dyn strata::vfs::WritableFile>> {
        strata::vfs::StdVfs.create(path)
    }
    fn open(
        &self,
        path: &std::path::Path,
    ) -> strata::Result<Arc<dyn strata::vfs::RandomAccessFile>> {
        strata::vfs::StdVfs.open(path)
    }
    fn open_table(
        &self,
        path: &std::path::Path,
        map: bool,
    ) -> strata::Result<Arc<dyn strata::vfs::RandomAccessFile>> {
        self.asked.lock().expect("lock").push(map);
        strata::vfs::StdVfs.open_table(path, map)
    }
    fn rename(&self, from: &std::path::Path, to: &std::path::Path) -> strata::Result<()> {
        strata::vfs::StdVfs.rename(from, to)
    }
    fn remove(&self, path: &std::path::Path) -> strata::Result<()> {
        strata::vfs::StdVfs.remove(path)
    }
    fn list(&self, dir: &std::path::Path) -> strata::Result<Vec<String>> {
        strata::vfs::StdVfs.list(dir)
    }
    fn exists(&self, path: &std::path::Path) -> bool {
        strata::vfs::StdVfs.exists(path)
    }
    fn sync_dir(&self, dir: &std::path::Path) -> strata::Result<()> {
        strata::vfs::StdVfs.sync_dir(dir)
    }
    fn lock(&self, path: &std::path::Path) -> strata::Result<Box<dyn strata::vfs::FileLock>> {
        strata::vfs::StdVfs.lock(path)
    }
    fn file_size(&self, path: &std::path::Path) -> strata::Result<u64> {
        strata::vfs::StdVfs.file_size(path)
    }
    fn is_regular_file(&self, path: &std::path::Path) -> bool {
        strata::vfs::StdVfs.is_regular_file(path)
    }
}

#[test]
fn table_files_are_mapped_unless_turned_off_or_salvaging() {
    let dir = tempfile::tempdir().expect("tempdir");
    // (mmap_reads, skip_corrupt_tables) -> whether tables may be mapped.
    for (mmap, salvage, expect) in [
        (true, false, true),
        (false, false, false),
        (true, true, false),
    ] {
        let vfs = Arc::new(NotingVfs::default());
        let mut o = small_options();
        o.vfs = Arc::clone(&vfs) as Arc<dyn strata::vfs::Vfs>;
        o.mmap_reads = mmap;
        o.skip_corrupt_tables = salvage;
        let db = Db::open(dir.path(), o).expect("open");
        for i in 0..2000u32 {
            db.put(format!("key{i:06}").as_bytes(), &[b'v'; 100])
                .expect("put");
        }
        db.flush().expect("flush");
        for i in (0..2000u32).step_by(97) {
            assert_eq!(
                db.get(format!("key{i:06}").as_bytes()).expect("get"),
                Some(vec![b'v'; 100])
            );
        }
        drop(db);
        let asked = vfs.asked.lock().expect("lock").clone();
        assert!(!asked.is_empty(), "no table file was opened");
        assert!(
            asked.iter().all(|&m| m == expect),
            "mmap_reads {mmap}, salvage {salvage}: asked {asked:?}"
        );
    }
}

/// A value like the benchmarks': printable text, its second half repeating
/// its first.
fn text_value(i: u32) -> Vec<u8> {
    let mut x = i.wrapping_mul(2_654_435_761).max(1);
    let half: Vec<u8> = (0..50)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            b' ' + (x % 95) as u8
        })
        .collect();
    [half.as_slice(), half.as_slice()].concat()
}

/// The format version in a table file's footer (2: it has a zstd
/// dictionary).
fn footer_version(path: &std::path::Path) -> u32 {
    let b = std::fs::read(path).expect("read table");
    let n = b.len();
    u32::from_le_bytes(b[n - 12..n - 8].try_into().expect("4 bytes"))
}

#[test]
fn zstd_tables_train_dictionaries_and_read_back_after_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = small_options();
    o.default_keyspace.write_buffer_size = 1 << 20;
    o.default_keyspace.target_file_size = 1 << 20;
    o.default_keyspace.compression = strata::Compression::Zstd;
    o.default_keyspace.zstd_dictionary_bytes = 4096;
    let n = 30_000u32;
    let key = |i: u32| format!("key{:08}", i.wrapping_mul(7919) % 1_000_003).into_bytes();
    {
        let db = Db::open(dir.path(), o.clone()).expect("open");
        for i in 0..n {
            db.put(&key(i), &text_value(i)).expect("put");
        }
        db.flush().expect("flush");
        db.compact().expect("compact");
        db.close().expect("close");
    }
    let tables: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    assert!(!tables.is_empty());
    assert!(
        tables.iter().any(|p| footer_version(p) == 2),
        "no table has a dictionary"
    );
    let db = Db::open(dir.path(), o).expect("reopen");
    assert!(db.verify().is_empty(), "{:?}", db.verify());
    for i in (0..n).step_by(7) {
        assert_eq!(db.get(&key(i)).expect("get"), Some(text_value(i)), "{i}");
    }
    let all = db
        .default_keyspace()
        .scan(None, None, usize::MAX)
        .expect("scan");
    assert_eq!(all.len(), n as usize);
}

/// A ranged manual compaction of level 0 takes every level-0 file that
/// overlaps the ones it picks: an older file left behind would shadow the
/// newer versions moved below it, and a tombstone dropped at the bottom
/// would bring its key back.
#[test]
fn a_ranged_compaction_of_level_0_takes_the_files_that_overlap_its_own() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    db.put(b"y", b"old").expect("put");
    db.put(b"m", b"old").expect("put");
    db.flush().expect("flush");
    db.put(b"a", b"1").expect("put");
    db.delete(b"y").expect("delete");
    db.flush().expect("flush");
    db.put(b"m", b"new").expect("put");
    db.put(b"b", b"2").expect("put");
    db.flush().expect("flush");
    db.compact_range(Some(b"a"), Some(b"a")).expect("compact a");
    assert_eq!(db.get(b"y").expect("get"), None);
    assert_eq!(db.get(b"m").expect("get").as_deref(), Some(&b"new"[..]));
    db.compact().expect("compact");
    assert_eq!(db.get(b"y").expect("get"), None);
    assert_eq!(db.get(b"m").expect("get").as_deref(), Some(&b"new"[..]));
    assert_eq!(db.get(b"a").expect("get").as_deref(), Some(&b"1"[..]));
}

/// A batch larger than the log's largest record is refused as an invalid
/// argument and changes nothing: later writes go on (it used to fail in
/// the write group, which ends writing until a reopen). About 1.1 GB.
#[test]
fn a_batch_too_large_for_the_log_is_refused_and_writes_go_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), Options::default()).expect("open");
    let value = vec![7u8; 63 << 20];
    let mut b = WriteBatch::new();
    for i in 0..17u8 {
        b.put(&[i], &value);
    }
    drop(value);
    let err = db.write(WriteOptions::default(), b).expect_err("too large");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(err.to_string().contains("split it"), "{err}");
    db.put(b"k", b"v").expect("writes go on");
    assert_eq!(db.get(&[0]).expect("get"), None);
    assert_eq!(db.get(b"k").expect("get").as_deref(), Some(&b"v"[..]));
}

/// An operator that refuses the operands of key `b`.
struct FailsOnB;

impl strata::merge::MergeOperator for FailsOnB {
    fn name(&self) -> &str {
        "fails-on-b"
    }
    fn merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>, String> {
        if key == b"b" {
            return Err("b cannot be merged".into());
        }
        let mut v = existing.unwrap_or_default().to_vec();
        operands.iter().for_each(|o| v.extend_from_slice(o));
        Ok(v)
    }
}

/// A key whose merge fails stops a scan with the error, in either
/// direction (a forward scan skipped the key and went on), and iterating
/// a `DbIter` hands the error out once, then ends.
#[test]
fn a_failed_merge_stops_a_scan_and_iteration_ends_after_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        default_keyspace: KeyspaceOptions {
            merge_operator: Some(Arc::new(FailsOnB)),
            ..KeyspaceOptions::default()
        },
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).expect("open");
    db.put(b"a", b"1").expect("put");
    db.merge(b"b", b"x").expect("merge");
    db.put(b"c", b"3").expect("put");
    let mut it = db
        .default_keyspace()
        .iter(ReadOptions::default())
        .expect("iter");
    it.seek_to_first();
    assert_eq!(it.key(), b"a");
    it.next();
    assert!(!it.valid(), "went on to {:?}", it.key());
    assert!(it.status().is_err());
    it.seek_to_last();
    assert_eq!(it.key(), b"c");
    it.prev();
    assert!(!it.valid() && it.status().is_err());
    let mut it = db
        .default_keyspace()
        .iter(ReadOptions::default())
        .expect("iter");
    it.seek_to_first();
    let items: Vec<_> = it.by_ref().take(10).collect();
    assert_eq!(items.len(), 2, "{items:?}");
    assert!(items[0].is_ok() && items[1].is_err());
    assert!(Iterator::next(&mut it).is_none(), "the iteration ended");
    // A scan that stops at its limit before the key whose merge fails does
    // not read that key (found in review, 2026-12-01: it stepped once past
    // the last entry wanted and failed there).
    let got = db
        .default_keyspace()
        .scan(None, None, 1)
        .expect("a scan of one entry");
    assert_eq!(got, vec![(b"a".to_vec(), b"1".to_vec())]);
    assert!(db.default_keyspace().scan(None, None, 2).is_err());
}
