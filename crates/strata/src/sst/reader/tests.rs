use super::*;
use crate::coding::{put_length_prefixed, put_varint64};
use crate::iter::InternalIterator;
use crate::key::{MAX_SEQNO, make_internal_key, make_seek_key};
use crate::sst::format::{COMPRESSION_ZSTD_DICT, Compression, FOOTER_LEN};
use crate::sst::{TableBuilder, TableBuilderOptions, TableSummary};
use crate::vfs::{StdVfs, Vfs};
use proptest::prelude::*;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// An in-memory file for feeding damaged copies to the reader.
struct MemFile(Vec<u8>);

impl RandomAccessFile for MemFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        match start.checked_add(buf.len()) {
            Some(end) if end <= self.0.len() => {
                buf.copy_from_slice(&self.0[start..end]);
                Ok(())
            }
            _ => Err(Error::io(
                "read mem file",
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "short read"),
            )),
        }
    }
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

fn sort_entries(mut e: Entries) -> Entries {
    e.sort_by(|a, b| compare_internal(&a.0, &b.0));
    e.dedup_by(|a, b| a.0 == b.0);
    e
}

fn write_table(
    dir: &Path,
    name: &str,
    e: &Entries,
    opts: TableBuilderOptions,
) -> (PathBuf, TableSummary) {
    let path = dir.join(name);
    let file = StdVfs.create(&path).expect("create");
    let mut b = TableBuilder::new(file, path.clone(), opts);
    for (k, v) in e {
        b.add(k, v).expect("add");
    }
    let s = b.finish().expect("finish");
    (path, s)
}

fn open_path(
    path: &Path,
    cache: Option<Arc<BlockCache>>,
    stats: Arc<Statistics>,
) -> Arc<TableReader> {
    let f = StdVfs.open(path).expect("open file");
    Arc::new(TableReader::open(f, path.to_path_buf(), 7, cache, stats).expect("open table"))
}

fn open_bytes(bytes: Vec<u8>) -> Result<Arc<TableReader>> {
    TableReader::open(
        Arc::new(MemFile(bytes)),
        PathBuf::from("mem.sst"),
        1,
        None,
        Arc::new(Statistics::default()),
    )
    .map(Arc::new)
}

fn lower_bound(e: &Entries, t: &[u8]) -> usize {
    e.partition_point(|(k, _)| compare_internal(k, t) == Ordering::Less)
}

fn last_le(e: &Entries, t: &[u8]) -> Option<usize> {
    e.partition_point(|(k, _)| compare_internal(k, t) != Ordering::Greater)
        .checked_sub(1)
}

fn at(it: &TableIter) -> Option<(Vec<u8>, Vec<u8>)> {
    it.valid().then(|| (it.key().to_vec(), it.value().to_vec()))
}

fn expect_at(it: &TableIter, e: &Entries, i: Option<usize>, what: &str) {
    it.status().expect("iterator status");
    assert_eq!(at(it), i.map(|i| e[i].clone()), "{what}");
}

/// Expected `get` results for `uk` at snapshot `snap`.
fn expected_get(e: &Entries, uk: &[u8], snap: u64) -> Entries {
    let sk = make_seek_key(uk, snap);
    e[lower_bound(e, &sk)..]
        .iter()
        .take_while(|(k, _)| key::user_key(k) == uk)
        .cloned()
        .collect()
}

/// Checks iteration, seeks and gets of `t` against the sorted reference.
fn check_table(t: &Arc<TableReader>, e: &Entries, probe_user_keys: &[Vec<u8>]) {
    let mut it = t.iter();
    it.seek_to_first();
    for (i, (k, v)) in e.iter().enumerate() {
        assert!(it.valid(), "forward ended early at {i}: {:?}", it.status());
        assert_eq!(
            (it.key(), it.value()),
            (&k[..], &v[..]),
            "forward entry {i}"
        );
        it.next();
    }
    assert!(!it.valid());
    it.status().expect("status after forward scan");

    it.seek_to_last();
    for (i, (k, v)) in e.iter().enumerate().rev() {
        assert!(it.valid(), "backward ended early at {i}: {:?}", it.status());
        assert_eq!(
            (it.key(), it.value()),
            (&k[..], &v[..]),
            "backward entry {i}"
        );
        it.prev();
    }
    assert!(!it.valid());
    it.status().expect("status after backward scan");

    let mut user_keys: Vec<Vec<u8>> = e.iter().map(|(k, _)| key::user_key(k).to_vec()).collect();
    user_keys.extend(probe_user_keys.iter().cloned());
    user_keys.sort();
    user_keys.dedup();
    let mut targets: Vec<Vec<u8>> = e.iter().map(|(k, _)| k.clone()).collect();
    for uk in &user_keys {
        for snap in [0, 1, 7, 25, MAX_SEQNO.get()] {
            targets.push(make_seek_key(uk, snap));
        }
    }
    for t_key in &targets {
        let lb = lower_bound(e, t_key);
        it.seek(t_key);
        expect_at(&it, e, (lb < e.len()).then_some(lb), "seek");
        if it.valid() {
            it.prev();
            expect_at(&it, e, lb.checked_sub(1), "prev after seek");
            if it.valid() {
                it.next();
                expect_at(&it, e, Some(lb), "next after prev");
            }
        }
        let le = last_le(e, t_key);
        it.seek_for_prev(t_key);
        expect_at(&it, e, le, "seek_for_prev");
        if let Some(i) = le {
            it.next();
            expect_at(
                &it,
                e,
                (i + 1 < e.len()).then_some(i + 1),
                "next after seek_for_prev",
            );
        }
    }

    let present: std::collections::BTreeSet<&[u8]> =
        e.iter().map(|(k, _)| key::user_key(k)).collect();
    for uk in &user_keys {
        for snap in [0, 3, 20, MAX_SEQNO.get()] {
            let want = expected_get(e, uk, snap);
            let sk = make_seek_key(uk, snap);
            let mut got = Vec::new();
            let passed = t
                .get(uk, &sk, &mut |k, v| {
                    got.push((k.to_vec(), v.to_vec()));
                    true
                })
                .expect("get");
            if !passed {
                assert!(
                    !present.contains(&uk[..]),
                    "filter excluded present key {uk:?}"
                );
            }
            assert_eq!(got, want, "get {uk:?} at {snap}");
            let mut calls = 0;
            t.get(uk, &sk, &mut |_, _| {
                calls += 1;
                false
            })
            .expect("get");
            assert_eq!(calls, want.len().min(1), "get stops when f returns false");
        }
    }
    t.verify().expect("verify");
}

fn big_value(seed: u8) -> Vec<u8> {
    let mut x = u64::from(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..100_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Low-entropy bytes: compressible but not trivially.
            b"abcdefgh"[(x % 8) as usize]
        })
        .collect()
}

fn entry_strategy() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    let uk = prop::collection::vec(
        prop::sample::select(vec![0u8, b'a', b'b', b'm', 0xff]),
        0..5,
    );
    let value = prop_oneof![
        12 => prop::collection::vec(any::<u8>(), 0..24),
        3 => Just(Vec::new()),
        1 => any::<u8>().prop_map(big_value),
    ];
    (uk, 0u64..40, 0u8..3, value).prop_map(|(uk, seq, kind, v)| {
        let kind = ValueKind::from_u8(kind).unwrap_or(ValueKind::Put);
        let v = if kind == ValueKind::Delete {
            Vec::new()
        } else {
            v
        };
        (make_internal_key(&uk, seq, kind), v)
    })
}

fn options_strategy() -> impl Strategy<Value = TableBuilderOptions> {
    (
        prop::sample::select(vec![Compression::None, Compression::Lz4, Compression::Zstd]),
        prop::sample::select(vec![1usize, 64, 300, 4096]),
        1usize..18,
        prop::sample::select(vec![0u32, 10]),
        prop::sample::select(vec![0usize, 256]),
    )
        .prop_map(
            |(compression, block_size, restart_interval, bloom_bits_per_key, dict)| {
                TableBuilderOptions {
                    block_size,
                    restart_interval,
                    bloom_bits_per_key,
                    compression,
                    zstd_dictionary_bytes: dict,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn table_round_trip_matches_reference(
        raw in prop::collection::vec(entry_strategy(), 0..160),
        opts in options_strategy(),
        probes in prop::collection::vec(
            prop::collection::vec(prop::sample::select(vec![0u8, b'a', b'c', b'z', 0xff]), 0..4), 0..8),
        cache_bytes in prop::sample::select(vec![0u64, 8 << 10, 16 << 20]),
    ) {
        let e = sort_entries(raw);
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, summary) = write_table(dir.path(), "t.sst", &e, opts.clone());
        prop_assert_eq!(summary.num_entries, e.len() as u64);
        prop_assert_eq!(summary.file_size, StdVfs.file_size(&path).expect("size"));
        let cache = Arc::new(BlockCache::new(cache_bytes));
        let t = open_path(&path, Some(cache.clone()), Arc::new(Statistics::default()));
        let p = t.properties();
        prop_assert_eq!(p.num_entries, e.len() as u64);
        let dels = e.iter().filter(|(k, _)| parse_internal_key(k).map(|x| x.kind) == Some(ValueKind::Delete)).count();
        let merges = e.iter().filter(|(k, _)| parse_internal_key(k).map(|x| x.kind) == Some(ValueKind::Merge)).count();
        prop_assert_eq!(p.num_deletions, dels as u64);
        prop_assert_eq!(summary.num_deletions, dels as u64);
        prop_assert_eq!(p.num_merges, merges as u64);
        prop_assert_eq!(p.compression, opts.compression);
        prop_assert_eq!(t.has_filter(), opts.bloom_bits_per_key > 0 && !e.is_empty());
        let (smallest, largest) = match (e.first(), e.last()) {
            (Some(f), Some(l)) => (f.0.clone(), l.0.clone()),
            _ => (Vec::new(), Vec::new()),
        };
        prop_assert_eq!(&p.smallest, &smallest);
        prop_assert_eq!(&p.largest, &largest);
        prop_assert_eq!(&summary.smallest, &smallest);
        prop_assert_eq!(&summary.largest, &largest);
        prop_assert_eq!(p.raw_value_bytes, e.iter().map(|(_, v)| v.len() as u64).sum::<u64>());
        prop_assert!(cache.usage_bytes() <= cache_bytes);
        check_table(&t, &e, &probes);
    }
}

#[test]
fn large_values_span_blocks_and_compress() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut e = Entries::new();
    for i in 0..40u8 {
        let uk = format!("big{:03}", i / 3).into_bytes();
        e.push((
            make_internal_key(&uk, 100 - u64::from(i), ValueKind::Put),
            big_value(i),
        ));
    }
    let e = sort_entries(e);
    for c in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let opts = TableBuilderOptions {
            compression: c,
            ..TableBuilderOptions::default()
        };
        let (path, s) = write_table(dir.path(), &format!("{c}.sst"), &e, opts);
        let t = open_path(&path, None, Arc::new(Statistics::default()));
        let p = t.properties();
        assert_eq!(p.num_data_blocks, 40, "one block per 100 KB value");
        if c == Compression::None {
            assert_eq!(p.num_compressed_blocks, 0);
            assert!(s.file_size > 4_000_000);
        } else {
            assert_eq!(p.num_compressed_blocks, 40);
            // 3 bits of entropy per byte: zstd entropy-codes, lz4 only
            // finds matches.
            let limit = if c == Compression::Zstd {
                2_000_000
            } else {
                3_600_000
            };
            assert!(s.file_size < limit, "{c}: {} bytes", s.file_size);
        }
        check_table(&t, &e, &[b"big".to_vec(), b"zzz".to_vec()]);
    }
}

fn small_table(c: Compression) -> (Entries, Vec<u8>) {
    let mut e = Entries::new();
    for i in 0..60u32 {
        let uk = format!("k{:02}", i / 2).into_bytes();
        let kind = match i % 5 {
            0 => ValueKind::Delete,
            1 => ValueKind::Merge,
            _ => ValueKind::Put,
        };
        let v = if i % 7 == 0 {
            Vec::new()
        } else {
            format!("value-{i}-{}", "x".repeat(i as usize % 13)).into_bytes()
        };
        e.push((make_internal_key(&uk, u64::from(1000 - i), kind), v));
    }
    let e = sort_entries(e);
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = TableBuilderOptions {
        block_size: 200,
        restart_interval: 4,
        compression: c,
        ..TableBuilderOptions::default()
    };
    let (path, _) = write_table(dir.path(), "small.sst", &e, opts);
    (e, StdVfs.read_all(&path).expect("read"))
}

/// Runs every read path on a possibly damaged table; returns whether
/// anything reported an error. Panics if wrong data comes back.
fn exercise(t: &Arc<TableReader>, e: &Entries) -> bool {
    let mut saw_err = false;
    let mut it = t.iter();
    it.seek_to_first();
    let mut got = Entries::new();
    while it.valid() && got.len() <= e.len() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    match it.status() {
        Ok(()) => assert_eq!(&got, e, "undetected damage in forward scan"),
        Err(err) => {
            assert!(err.is_corruption(), "{err}");
            assert!(e.starts_with(&got), "wrong data before the error");
            saw_err = true;
        }
    }
    let mut it = t.iter();
    it.seek_to_last();
    let mut n = 0;
    while it.valid() && n <= e.len() {
        assert_eq!(
            at(&it).as_ref(),
            Some(&e[e.len() - 1 - n]),
            "wrong data scanning backward"
        );
        n += 1;
        it.prev();
    }
    saw_err |= it.status().is_err();
    for (k, _) in e.iter().step_by(3) {
        let uk = key::user_key(k);
        let sk = make_seek_key(uk, MAX_SEQNO);
        let mut got = Vec::new();
        match t.get(uk, &sk, &mut |k, v| {
            got.push((k.to_vec(), v.to_vec()));
            true
        }) {
            Ok(true) => assert_eq!(got, expected_get(e, uk, MAX_SEQNO.get())),
            Ok(false) => panic!("filter excluded a present key"),
            Err(err) => {
                assert!(err.is_corruption(), "{err}");
                saw_err = true;
            }
        }
        let mut it = t.iter();
        it.seek(k);
        if it.valid() {
            assert_eq!(it.key(), &k[..]);
        } else {
            assert!(it.status().is_err());
        }
    }
    saw_err
}

#[test]
fn every_flipped_byte_is_detected_or_harmless() {
    for c in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let (e, good) = small_table(c);
        let t = open_bytes(good.clone()).expect("open good table");
        assert!(!exercise(&t, &e));
        t.verify().expect("verify good table");
        let handles = t.data_handles();
        assert!(
            handles.len() >= 5,
            "want several data blocks, got {}",
            handles.len()
        );
        let footer_offset = good.len() as u64 - FOOTER_LEN as u64;
        for pos in 0..good.len() {
            let mut bad = good.clone();
            bad[pos] ^= 1 << (pos % 8);
            let t = match open_bytes(bad) {
                Ok(t) => t,
                Err(Error::Corruption { offset, .. }) => {
                    assert!(
                        offset <= pos as u64 || offset == 0,
                        "open error offset {offset} after flip at {pos}"
                    );
                    continue;
                }
                Err(Error::UnsupportedVersion { .. }) => {
                    assert!((footer_offset + 52..footer_offset + 56).contains(&(pos as u64)));
                    continue;
                }
                Err(other) => panic!("flip at {pos}: unexpected error {other}"),
            };
            // Only data blocks are read lazily; the flip must be in one.
            let h = handles
                .iter()
                .find(|h| h.offset <= pos as u64 && (pos as u64) < h.offset + h.size + 5)
                .unwrap_or_else(|| {
                    panic!("{c}: flip at {pos} outside data blocks went unnoticed by open")
                });
            let _ = exercise(&t, &e);
            match t.verify() {
                Err(Error::Corruption { offset, .. }) => {
                    assert_eq!(
                        offset, h.offset,
                        "{c}: flip at {pos} reported at the wrong block"
                    );
                }
                other => panic!("{c}: flip at {pos} not found by verify: {other:?}"),
            }
            // Reading the damaged block is an error for every path.
            let mut it = t.iter();
            it.seek_to_first();
            while it.valid() {
                it.next();
            }
            assert!(
                it.status().is_err(),
                "{c}: scan over flip at {pos} succeeded"
            );
        }
    }
}

#[test]
fn truncated_files_are_corrupt() {
    let (_, good) = small_table(Compression::Lz4);
    for len in 0..good.len() {
        match open_bytes(good[..len].to_vec()) {
            Err(e) => assert!(e.is_corruption(), "truncated to {len}: {e}"),
            Ok(t) => assert!(t.verify().is_err(), "truncated to {len} verifies"),
        }
    }
    let e = open_bytes(good[..10].to_vec()).expect_err("short file");
    assert!(e.to_string().contains("shorter than"), "{e}");
    let mut junk = good.clone();
    let n = junk.len();
    junk[n - 8..].copy_from_slice(b"NOTASST!");
    let e = open_bytes(junk).expect_err("bad magic");
    assert!(e.to_string().contains("not a Strata table file"), "{e}");
}

#[test]
fn future_format_version_is_unsupported() {
    let (_, mut bytes) = small_table(Compression::None);
    let n = bytes.len();
    bytes[n - 12..n - 8].copy_from_slice(&3u32.to_le_bytes());
    match open_bytes(bytes) {
        Err(Error::UnsupportedVersion {
            found,
            supported,
            file,
        }) => {
            assert_eq!((found, supported), (3, 2));
            assert_eq!(file, PathBuf::from("mem.sst"));
        }
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }
}

/// Entries with values like the benchmarks' (printable text, half of each
/// value repeating its other half), under distinct keys.
fn text_entries(n: u32) -> Entries {
    let mut x = 0x9e37_79b9_u32;
    let mut e = Entries::new();
    for i in 0..n {
        let half: Vec<u8> = (0..50)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                b' ' + (x % 95) as u8
            })
            .collect();
        let v = [half.as_slice(), half.as_slice()].concat();
        let uk = format!("user{:08}", u64::from(i) * 7919 % 1_000_003).into_bytes();
        e.push((make_internal_key(&uk, u64::from(i) + 1, ValueKind::Put), v));
    }
    sort_entries(e)
}

fn footer_version(bytes: &[u8]) -> u32 {
    let n = bytes.len();
    u32::from_le_bytes(bytes[n - 12..n - 8].try_into().expect("4 bytes"))
}

#[test]
fn zstd_dictionary_is_trained_recorded_and_read_back() {
    let e = text_entries(4000);
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = TableBuilderOptions {
        compression: Compression::Zstd,
        ..TableBuilderOptions::default()
    };
    let with = TableBuilderOptions {
        zstd_dictionary_bytes: 4096,
        ..plain.clone()
    };
    let (pp, _) = write_table(dir.path(), "plain.sst", &e, plain);
    let (pd, _) = write_table(dir.path(), "dict.sst", &e, with);
    let tp = open_path(&pp, None, Arc::new(Statistics::default()));
    let td = open_path(&pd, None, Arc::new(Statistics::default()));
    assert_eq!(tp.properties().compression_dict, None);
    let h = td.properties().compression_dict.expect("a dictionary");
    assert!(h.size > 0 && h.size <= 4096, "{h:?}");
    assert!(
        h.offset >= td.properties().data_size,
        "{h:?} inside the data"
    );
    assert_eq!(
        td.properties().num_data_blocks,
        tp.properties().num_data_blocks
    );
    let (bp, bd) = (
        StdVfs.read_all(&pp).expect("read"),
        StdVfs.read_all(&pd).expect("read"),
    );
    assert_eq!((footer_version(&bp), footer_version(&bd)), (1, 2));
    // Every data block, the held-back ones included, went through the
    // dictionary.
    let handles = td.data_handles();
    assert!(handles.len() > 64, "{} blocks", handles.len());
    for h in &handles {
        assert_eq!(
            bd[(h.offset + h.size) as usize],
            COMPRESSION_ZSTD_DICT,
            "block at {}",
            h.offset
        );
    }
    let probes = vec![b"user".to_vec(), b"user0000".to_vec(), b"zz".to_vec()];
    check_table(&td, &e, &probes);
    assert!(!exercise(&td, &e));
    td.verify().expect("verify");
    // A file shorter than the training sample gets no dictionary.
    let few = text_entries(100);
    let (ps, _) = write_table(
        dir.path(),
        "small.sst",
        &few,
        TableBuilderOptions {
            zstd_dictionary_bytes: 4096,
            compression: Compression::Zstd,
            ..TableBuilderOptions::default()
        },
    );
    let ts = open_path(&ps, None, Arc::new(Statistics::default()));
    assert_eq!(ts.properties().compression_dict, None);
    check_table(&ts, &few, &probes);
}

/// A table of 3,000 text entries written with a 4 KiB zstd dictionary.
fn dictionary_table(dir: &Path) -> (PathBuf, Entries) {
    let e = text_entries(3000);
    let opts = TableBuilderOptions {
        compression: Compression::Zstd,
        zstd_dictionary_bytes: 4096,
        ..TableBuilderOptions::default()
    };
    (write_table(dir, "d.sst", &e, opts).0, e)
}

#[test]
fn a_damaged_dictionary_fails_the_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, _) = dictionary_table(dir.path());
    let good = StdVfs.read_all(&path).expect("read");
    let h = open_bytes(good.clone())
        .expect("open")
        .properties()
        .compression_dict
        .expect("a dictionary");
    let (start, end) = (h.offset as usize, (h.offset + h.size) as usize);
    for pos in [start, start + 7, end - 1, end + 2] {
        let mut bad = good.clone();
        bad[pos] ^= 0x10;
        match open_bytes(bad) {
            Err(Error::Corruption { offset, .. }) => assert_eq!(offset, h.offset, "flip at {pos}"),
            other => panic!("flip at {pos}: {other:?}"),
        }
    }
    // A dictionary with a sound checksum that zstd cannot load: the
    // dictionary magic, then entropy tables of junk.
    let mut bad = good;
    bad[start..start + 4].copy_from_slice(&0xEC30_A437u32.to_le_bytes());
    bad[start + 8..end].fill(0xff);
    let crc = crate::coding::crc32c(&bad[start..=end]);
    bad[end + 1..end + 5].copy_from_slice(&crc.to_le_bytes());
    match open_bytes(bad) {
        Err(Error::Corruption { offset, reason, .. }) => {
            assert_eq!(offset, h.offset);
            assert!(reason.contains("dictionary"), "{reason}");
        }
        other => panic!("junk dictionary: {other:?}"),
    }
}

#[test]
fn large_blocks_still_get_a_dictionary() {
    // 8 KiB blocks: the first two pass 16 times a 1 KiB dictionary, but
    // the builder holds on until it has eight samples.
    let e = text_entries(3000);
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = TableBuilderOptions {
        block_size: 8192,
        compression: Compression::Zstd,
        zstd_dictionary_bytes: 1024,
        ..TableBuilderOptions::default()
    };
    let (path, _) = write_table(dir.path(), "big.sst", &e, opts);
    let t = open_path(&path, None, Arc::new(Statistics::default()));
    assert!(t.properties().compression_dict.is_some());
    check_table(&t, &e, &[b"user".to_vec()]);
    t.verify().expect("verify");
}

#[test]
fn a_dictionary_handle_must_be_where_the_writer_puts_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, _) = dictionary_table(dir.path());
    let bytes = StdVfs.read_all(&path).expect("read");
    let file = MemFile(bytes);
    let p = Path::new("d.sst");
    let (footer, fo) = Footer::read(&TABLE_FOOTER, &file, p).expect("footer");
    let t = open_path(&path, None, Arc::new(Statistics::default()));
    let props = t.properties().clone();
    let h = props.compression_dict.expect("a dictionary");
    assert!(
        open_dictionary(&file, p, &footer, &props, fo)
            .expect("sound")
            .is_some()
    );
    let fails = |footer: &Footer, props: &TableProperties, what: &str| match open_dictionary(
        &file, p, footer, props, fo,
    ) {
        Err(Error::Corruption { reason, .. }) => assert!(reason.contains(what), "{reason}"),
        other => panic!("expected corruption naming {what:?}, got {other:?}"),
    };
    // Pointing at another block (the filter, which checksums fine).
    let elsewhere = TableProperties {
        compression_dict: Some(footer.filter),
        ..props.clone()
    };
    fails(&footer, &elsewhere, "right after the data blocks");
    let huge = TableProperties {
        compression_dict: Some(BlockHandle {
            offset: h.offset,
            size: (MAX_DICT_BYTES + 1) as u64,
        }),
        ..props.clone()
    };
    fails(&footer, &huge, "limit");
    let v1 = Footer {
        version: 1,
        ..footer
    };
    fails(&v1, &props, "format version 1");
    let none = TableProperties {
        compression_dict: None,
        ..props.clone()
    };
    fails(&footer, &none, "promises a compression dictionary");
    // A version-1 file without one is fine.
    assert!(
        open_dictionary(&file, p, &v1, &none, fo)
            .expect("no dictionary")
            .is_none()
    );
}

#[test]
fn oversized_or_out_of_range_handles_are_corrupt() {
    let f = MemFile(vec![0u8; 1000]);
    let p = Path::new("x.sst");
    for h in [
        BlockHandle {
            offset: 0,
            size: MAX_BLOCK_SIZE + 1,
        },
        BlockHandle {
            offset: 990,
            size: 10,
        },
        BlockHandle {
            offset: u64::MAX - 2,
            size: 10,
        },
    ] {
        let e = read_block_contents(&f, p, h, 1000, None).expect_err("bad handle accepted");
        match e {
            Error::Corruption { offset, file, .. } => {
                assert_eq!(offset, h.offset);
                assert_eq!(file, p);
            }
            other => panic!("unexpected {other}"),
        }
    }
    // All zeros: checksum mismatch.
    let e = read_block_contents(
        &f,
        p,
        BlockHandle {
            offset: 10,
            size: 20,
        },
        1000,
        None,
    )
    .expect_err("zero block accepted");
    assert!(e.to_string().contains("checksum"), "{e}");
}

#[test]
fn zero_byte_cache_and_cache_stats() {
    let (e, bytes) = small_table(Compression::Zstd);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c.sst");
    std::fs::write(&path, &bytes).expect("write");

    let stats = Arc::new(Statistics::default());
    let zero = Arc::new(BlockCache::new(0));
    let t = open_path(&path, Some(zero.clone()), stats.clone());
    check_table(&t, &e, &[b"nope".to_vec()]);
    assert_eq!(Statistics::get(&stats.block_cache_hits), 0);
    assert!(Statistics::get(&stats.block_cache_misses) > 0);
    assert_eq!(zero.usage_bytes(), 0);

    let stats = Arc::new(Statistics::default());
    let cache = Arc::new(BlockCache::new(1 << 20));
    let t = open_path(&path, Some(cache.clone()), stats.clone());
    let blocks = t.properties().num_data_blocks;
    let scan = || {
        let mut it = t.iter();
        it.seek_to_first();
        while it.valid() {
            it.next();
        }
        it.status().expect("scan");
    };
    scan();
    assert_eq!(Statistics::get(&stats.block_cache_misses), blocks);
    assert_eq!(Statistics::get(&stats.block_cache_hits), 0);
    scan();
    assert_eq!(Statistics::get(&stats.block_cache_misses), blocks);
    assert_eq!(Statistics::get(&stats.block_cache_hits), blocks);
    assert!(cache.usage_bytes() > 0);
    // verify() bypasses the cache.
    t.verify().expect("verify");
    assert_eq!(Statistics::get(&stats.block_cache_hits), blocks);
    // A second reader of the same file gets its own cache id.
    let t2 = open_path(&path, Some(cache), stats.clone());
    assert_ne!(t.cache_id(), t2.cache_id());
}

#[test]
fn bloom_filter_stats_and_exclusion() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e: Entries = (0..2000u32)
        .map(|i| {
            (
                make_internal_key(format!("user{i:06}").as_bytes(), 5, ValueKind::Put),
                b"v".to_vec(),
            )
        })
        .collect();
    let (path, _) = write_table(dir.path(), "b.sst", &e, TableBuilderOptions::default());
    let stats = Arc::new(Statistics::default());
    let t = open_path(&path, None, stats.clone());
    let mut excluded = 0;
    for i in 0..1000u32 {
        let uk = format!("absent{i:06}").into_bytes();
        let mut calls = 0;
        let passed = t
            .get(&uk, &make_seek_key(&uk, MAX_SEQNO), &mut |_, _| {
                calls += 1;
                true
            })
            .expect("get");
        assert_eq!(calls, 0);
        if !passed {
            excluded += 1;
        }
    }
    assert!(excluded > 970, "filter excluded only {excluded} of 1000");
    assert_eq!(Statistics::get(&stats.bloom_useful), excluded);
    assert_eq!(
        Statistics::get(&stats.bloom_false_positive),
        1000 - excluded
    );
    for (k, _) in e.iter().take(100) {
        let uk = key::user_key(k);
        assert!(
            t.get(uk, &make_seek_key(uk, MAX_SEQNO), &mut |_, _| true)
                .expect("get")
        );
    }
    assert_eq!(
        Statistics::get(&stats.bloom_checked_positive),
        1000 - excluded + 100
    );
    assert_eq!(
        Statistics::get(&stats.bloom_false_positive),
        1000 - excluded
    );
    // Without a filter nothing is excluded.
    let opts = TableBuilderOptions {
        bloom_bits_per_key: 0,
        ..TableBuilderOptions::default()
    };
    let (path, _) = write_table(dir.path(), "nf.sst", &e, opts);
    let t = open_path(&path, None, Arc::new(Statistics::default()));
    assert!(!t.has_filter());
    assert_eq!(t.properties().filter_size, 0);
    assert!(
        t.get(b"absent", &make_seek_key(b"absent", 1), &mut |_, _| true)
            .expect("get")
    );
}

#[test]
fn empty_table_round_trips() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, s) = write_table(
        dir.path(),
        "e.sst",
        &Entries::new(),
        TableBuilderOptions::default(),
    );
    assert_eq!(s.num_entries, 0);
    assert!(s.smallest.is_empty() && s.largest.is_empty());
    let t = open_path(&path, None, Arc::new(Statistics::default()));
    assert_eq!(t.properties().num_data_blocks, 0);
    check_table(&t, &Entries::new(), &[b"a".to_vec(), Vec::new()]);
}

#[test]
fn properties_encoding_round_trips_and_is_strict() {
    let p = TableProperties {
        num_entries: 10,
        num_deletions: 2,
        num_merges: 3,
        raw_key_bytes: 100,
        raw_value_bytes: 1 << 40,
        data_size: 4096,
        index_size: 50,
        filter_size: 20,
        smallest_seqno: 1,
        largest_seqno: MAX_SEQNO.get(),
        smallest: b"a\0\0\0\0\0\0\0\x01".to_vec(),
        largest: vec![],
        num_data_blocks: 2,
        compression: Compression::Zstd,
        num_compressed_blocks: 1,
        bloom_bits_per_key: 10,
        owner_db_id: b"0123456789abcdef".to_vec(),
        owner_file_number: 77,
        compression_dict: None,
    };
    let mut buf = Vec::new();
    p.encode_to(&mut buf);
    let path = Path::new("p");
    assert_eq!(TableProperties::decode(&buf, path, 0).expect("decode"), p);
    // Without an owner (tables written before it was recorded).
    let unowned = TableProperties {
        owner_db_id: Vec::new(),
        owner_file_number: 0,
        ..p.clone()
    };
    let mut old = Vec::new();
    unowned.encode_to(&mut old);
    assert!(old.len() < buf.len());
    assert_eq!(
        TableProperties::decode(&old, path, 0).expect("decode"),
        unowned
    );
    // Unknown fields are skipped.
    let mut ext = buf.clone();
    put_varint64(&mut ext, 40 << 1);
    put_varint64(&mut ext, 5);
    put_varint64(&mut ext, 41 << 1 | 1);
    put_length_prefixed(&mut ext, b"future");
    assert_eq!(TableProperties::decode(&ext, path, 0).expect("decode"), p);
    // Every truncation fails cleanly, but the one that leaves exactly
    // the required fields (the owner is optional, as a whole).
    for n in 0..buf.len() {
        let r = TableProperties::decode(&buf[..n], path, 0);
        if n == old.len() {
            assert_eq!(r.expect("required fields only"), unowned);
        } else {
            assert!(r.is_err(), "truncated to {n}");
        }
    }
    // The dictionary's handle, when there is one; a malformed one fails.
    let with_dict = TableProperties {
        compression_dict: Some(BlockHandle {
            offset: 4101,
            size: 16384,
        }),
        ..p.clone()
    };
    let mut dict = Vec::new();
    with_dict.encode_to(&mut dict);
    assert_eq!(
        TableProperties::decode(&dict, path, 0).expect("decode"),
        with_dict
    );
    let mut bad = buf.clone();
    put_varint64(&mut bad, 19 << 1 | 1);
    put_length_prefixed(&mut bad, &[0x80]);
    let e = TableProperties::decode(&bad, path, 0).expect_err("malformed handle");
    assert!(e.to_string().contains("dictionary"), "{e}");
    let mut newer = buf.clone();
    newer[0] = 2;
    assert!(matches!(
        TableProperties::decode(&newer, path, 0),
        Err(Error::UnsupportedVersion { found: 2, .. })
    ));
}

/// The annotated example in docs/format/sst.md, byte for byte.
#[test]
fn golden_single_entry_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = vec![(make_internal_key(b"k", 1, ValueKind::Put), b"v".to_vec())];
    let opts = TableBuilderOptions {
        bloom_bits_per_key: 0,
        ..TableBuilderOptions::default()
    };
    let (path, _) = write_table(dir.path(), "g.sst", &e, opts);
    let bytes = StdVfs.read_all(&path).expect("read");
    let golden = concat!(
        // data block @0, 21 bytes + trailer
        "0009016b0101000000000000",
        "76",
        "00000000",
        "01000000",
        "00",
        "0253bca3",
        // index block @26, 22 bytes + trailer
        "0009026b0101000000000000",
        "0015",
        "00000000",
        "01000000",
        "00",
        "322a5bfe",
        // properties block @53, 51 bytes + trailer
        "01",
        "0201",
        "0400",
        "0600",
        "0809",
        "0a01",
        "0c1a",
        "0e1b",
        "1000",
        "1201",
        "1401",
        "17096b0101000000000000",
        "19096b0101000000000000",
        "1a01",
        "1c00",
        "1e00",
        "2000",
        "00",
        "d32a89f2",
        // footer @109
        "1a00000000000000",
        "1600000000000000",
        "0000000000000000",
        "0000000000000000",
        "3500000000000000",
        "3300000000000000",
        "a5a6dc4c",
        "01000000",
        "5352544154535354",
    );
    let hex: String = bytes.iter().map(|x| format!("{x:02x}")).collect();
    assert_eq!(hex, golden);
    let t = open_bytes(bytes).expect("open");
    check_table(&t, &e, &[]);
}

#[test]
fn readers_and_iterators_are_thread_safe() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<TableReader>();
    send_sync::<BlockCache>();
    send::<TableIter>();
    send::<TableBuilder>();
}

/// `anchors` over a range: the first anchor is the range's lower bound,
/// every anchor is before the upper one, the blocks are those a walk of
/// the whole index gives for that stretch, and each key of the range lies
/// in the span of one anchor.
#[test]
fn anchors_cover_a_range_from_its_lower_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e: Entries = sort_entries(
        (0..2000u32)
            .map(|i| {
                (
                    make_internal_key(format!("k{i:05}").as_bytes(), 1, ValueKind::Put),
                    vec![b'v'; 40],
                )
            })
            .collect(),
    );
    let (path, _) = write_table(dir.path(), "a.sst", &e, TableBuilderOptions::default());
    let t = open_path(&path, None, Arc::new(Statistics::default()));
    let all = t.anchors(b"k00000", None, None).expect("anchors");
    assert_eq!(all.len() as u64, t.properties().num_data_blocks);
    assert!(all.len() > 10, "{} blocks", all.len());
    for (lo, hi) in [(300u32, 1700u32), (0, 1), (1999, 2000), (1000, 1001)] {
        let (l, u) = (format!("k{lo:05}"), format!("k{hi:05}"));
        let part = t
            .anchors(b"k00000", Some(l.as_bytes()), Some(u.as_bytes()))
            .expect("anchors");
        assert_eq!(part[0].0, l.as_bytes(), "{l}..{u}");
        assert!(part.iter().all(|(k, _)| k.as_slice() < u.as_bytes()));
        assert!(part.windows(2).all(|w| w[0].0 < w[1].0), "ascending");
        // After the first, the anchors and sizes are the whole walk's, and
        // the first is the block whose span holds `lower`.
        if part.len() > 1 {
            let at = all
                .iter()
                .position(|a| a == &part[1])
                .expect("a block of the whole walk");
            assert_eq!(&all[at..at + part.len() - 1], &part[1..]);
            assert_eq!(all[at - 1].1, part[0].1, "the first block's size");
            assert!(all[at - 1].0.as_slice() <= l.as_bytes());
            assert!(l.as_bytes() <= part[1].0.as_slice());
        }
        for i in lo..hi {
            let k = format!("k{i:05}").into_bytes();
            let span = part.partition_point(|(a, _)| a.as_slice() <= k.as_slice());
            assert!(span >= 1, "{k:?} is before the first anchor");
        }
        // The walk stops at the upper bound: the anchor after the last one
        // in the whole walk is at or after it.
        let last = &part[part.len() - 1];
        if let Some(i) = all.iter().position(|a| a == last)
            && i + 1 < all.len()
        {
            assert!(all[i + 1].0.as_slice() >= u.as_bytes());
        }
    }
    // Bounds outside the file, empty ranges, a bound on a separator.
    let before = t
        .anchors(b"k00000", Some(b"a"), Some(b"k00100"))
        .expect("anchors");
    assert_eq!(before[0].0, b"k00000", "a lower bound before the file");
    let past = t.anchors(b"k00000", Some(b"z"), None).expect("anchors");
    assert!(past.is_empty(), "{past:?}");
    let empty = t.anchors(b"k00000", Some(b"k00500"), Some(b"k00500"));
    assert!(empty.expect("anchors").is_empty());
    let sep = all[5].0.clone();
    let on = t.anchors(b"k00000", Some(&sep), None).expect("anchors");
    assert_eq!(on[0].0, sep);
    assert!(
        on.len() == all.len() - 5 || on.len() == all.len() - 4,
        "{}",
        on.len()
    );
}
