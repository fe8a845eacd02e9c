//! Dictionary-encoded values in key-value keyspaces (issue 21, seed 002):
//! a keyspace whose files keep their distinct values once, sorted, with a
//! code per entry reads exactly like one whose files store values plainly,
//! through flushes, compactions, merges, deletes and reopens; damage to a
//! dictionary is an error naming the file.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use strata::merge::AppendOperator;
use strata::{Db, Error, KeyspaceOptions, Options, ValueDictionaryLayout, ValuePredicate};

fn options(dictionary: bool) -> Options {
    let mut o = Options::default();
    let k = &mut o.default_keyspace;
    k.write_buffer_size = 32 * 1024;
    k.target_file_size = 32 * 1024;
    k.level1_max_bytes = 128 * 1024;
    k.block_size = 1024;
    k.merge_operator = Some(Arc::new(AppendOperator { delimiter: b',' }));
    if dictionary {
        o.default_keyspace = o.default_keyspace.clone().with_value_dictionary();
    }
    o
}

/// Every file gets a dictionary, however many of its values are distinct.
fn always_encoded() -> Options {
    let mut o = options(false);
    o.default_keyspace.layout = Arc::new(ValueDictionaryLayout::new(1.0).expect("valid"));
    o.block_cache_bytes = 1 << 20;
    o
}

fn contents(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.default_keyspace()
        .scan(None, None, usize::MAX)
        .expect("scan")
}

#[derive(Clone, Debug)]
enum Op {
    Put(u16, Vec<u8>),
    Merge(u16, Vec<u8>),
    Delete(u16),
    Flush,
    Compact,
    Reopen,
}

/// Values of the kinds the issue names: empty, very long, not UTF-8,
/// sharing long prefixes, drawn from a small set (many repeats) or not.
fn value() -> impl Strategy<Value = Vec<u8>> {
    let long_prefix = vec![b'p'; 300];
    prop_oneof![
        Just(Vec::new()),
        (0u8..6).prop_map(|i| format!("common-{i}").into_bytes()),
        (0u8..4).prop_map(move |i| {
            let mut v = long_prefix.clone();
            v.push(i);
            v
        }),
        proptest::collection::vec(any::<u8>(), 0..40),
        (0u8..3).prop_map(|i| vec![0xff - i; 2000]),
        Just(vec![0, 0xff, 0, 0xfe]),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (0u16..300, value()).prop_map(|(k, v)| Op::Put(k, v)),
        // Operands are never empty: the append operator folds empty
        // operands differently depending on when they meet their base.
        3 => (0u16..300, value()).prop_map(|(k, mut v)| { v.insert(0, b'm'); Op::Merge(k, v) }),
        3 => (0u16..300).prop_map(Op::Delete),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
    ]
}

fn key(k: u16) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

fn apply(db: Db, dir: &Path, op: &Op, opts: fn() -> Options) -> Db {
    match op {
        Op::Put(k, v) => db.put(&key(*k), v).expect("put"),
        Op::Merge(k, v) => db.merge(&key(*k), v).expect("merge"),
        Op::Delete(k) => db.delete(&key(*k)).expect("delete"),
        Op::Flush => db.flush().expect("flush"),
        Op::Compact => db.compact().expect("compact"),
        Op::Reopen => {
            db.close().expect("close");
            return Db::open(dir, opts()).expect("reopen");
        }
    }
    db
}

fn predicate() -> impl Strategy<Value = ValuePredicate> {
    prop_oneof![
        value().prop_map(ValuePredicate::Eq),
        (value(), value()).prop_map(|(a, b)| ValuePredicate::Range {
            start: Bound::Included(a.min(b.clone())),
            end: Bound::Excluded(b),
        }),
        value().prop_map(|v| ValuePredicate::Range {
            start: Bound::Excluded(v),
            end: Bound::Unbounded
        }),
        proptest::collection::vec(any::<u8>(), 0..3).prop_map(ValuePredicate::Prefix),
        Just(ValuePredicate::Prefix(b"common-".to_vec())),
        Just(ValuePredicate::Prefix(b"m".to_vec())),
        proptest::collection::vec(value(), 0..4).prop_map(ValuePredicate::In),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn encoded_and_plain_keyspaces_read_alike(
        ops in proptest::collection::vec(op(), 1..400),
        preds in proptest::collection::vec(predicate(), 1..6),
        range in (0u16..300, 0u16..300),
    ) {
        let (dir_a, dir_b) = (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
        let plain_opts = || options(false);
        let mut encoded = Db::open(dir_a.path(), always_encoded()).expect("open");
        let mut plain = Db::open(dir_b.path(), plain_opts()).expect("open");
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for op in &ops {
            match op {
                Op::Put(k, v) => { model.insert(key(*k), v.clone()); }
                // AppendOperator: a delimiter between an existing value
                // (even an empty one) and each operand.
                Op::Merge(k, v) => match model.get_mut(&key(*k)) {
                    Some(e) => { e.push(b','); e.extend_from_slice(v); }
                    None => { model.insert(key(*k), v.clone()); }
                },
                Op::Delete(k) => { model.remove(&key(*k)); }
                _ => {}
            }
            encoded = apply(encoded, dir_a.path(), op, always_encoded);
            plain = apply(plain, dir_b.path(), op, plain_opts);
        }
        let got = contents(&encoded);
        prop_assert_eq!(&got, &contents(&plain));
        for k in (0u16..300).step_by(7) {
            prop_assert_eq!(encoded.get(&key(k)).expect("get"), plain.get(&key(k)).expect("get"));
        }
        let want: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
        prop_assert_eq!(&got, &want);
        // Filters: on codes in the encoded keyspace, on bytes in the plain
        // one, against the model.
        let (lo, hi) = (key(range.0.min(range.1)), key(range.0.max(range.1)));
        for p in &preds {
            for (from, to) in [(None, None), (Some(&lo[..]), Some(&hi[..]))] {
                let expect: Vec<(Vec<u8>, Vec<u8>)> = want
                    .iter()
                    .filter(|(k, v)| from.is_none_or(|f| k.as_slice() >= f) && to.is_none_or(|t| k.as_slice() < t) && p.matches(v))
                    .cloned()
                    .collect();
                let coded = encoded.default_keyspace().filter(from, to, p).expect("filter");
                prop_assert_eq!(&coded, &expect, "{:?} in {:?}..{:?}", p, from, to);
                let bytes = plain.default_keyspace().filter(from, to, p).expect("filter");
                prop_assert_eq!(&bytes, &expect);
            }
        }
        prop_assert_eq!(encoded.stats().plain_value_files_written, 0);
    }
}

#[test]
fn files_with_few_distinct_values_get_dictionaries_and_the_rest_do_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(true)).expect("open");
    for i in 0..2000u32 {
        db.put(
            format!("a{i:05}").as_bytes(),
            format!("colour-{}", i % 5).as_bytes(),
        )
        .expect("put");
    }
    db.flush().expect("flush");
    let s = db.stats();
    assert!(s.dictionary_files_written >= 1, "{s:?}");
    assert_eq!(s.plain_value_files_written, 0, "{s:?}");
    assert_eq!(db.get(b"a00001").expect("get"), Some(b"colour-1".to_vec()));
    let s = db.stats();
    assert!(
        s.dictionary_loads >= 1 && s.dictionary_load_bytes > 0,
        "{s:?}"
    );
    for i in 0..2000u32 {
        db.put(
            format!("b{i:05}").as_bytes(),
            format!("unique-{i}").as_bytes(),
        )
        .expect("put");
    }
    db.flush().expect("flush");
    let s = db.stats();
    assert!(s.plain_value_files_written >= 1, "{s:?}");
    assert_eq!(db.get(b"a00007").expect("get"), Some(b"colour-2".to_vec()));
    assert_eq!(
        db.get(b"b01999").expect("get"),
        Some(b"unique-1999".to_vec())
    );
}

#[test]
fn dictionaries_survive_reopening_even_without_the_option() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = Db::open(dir.path(), options(true)).expect("open");
        for i in 0..3000u32 {
            db.put(
                format!("k{i:05}").as_bytes(),
                format!("v{}", i % 7).as_bytes(),
            )
            .expect("put");
        }
        db.compact().expect("compact");
        db.close().expect("close");
    }
    let db = Db::open(dir.path(), options(false)).expect("reopen without the option");
    let all = contents(&db);
    assert!(db.stats().dictionary_loads >= 1);
    assert_eq!(all.len(), 3000);
    for (i, (k, v)) in all.iter().enumerate() {
        assert_eq!(k, format!("k{i:05}").as_bytes());
        assert_eq!(v, format!("v{}", i % 7).as_bytes());
    }
}

#[test]
fn compaction_carries_codes_and_merges_dictionaries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(true)).expect("open");
    // Two overlapping level-0 files with different value sets, then an
    // overwrite of some keys and deletes of others.
    for round in 0..3u32 {
        for i in (0..1500u32).filter(|i| i % (round + 1) == 0) {
            let v = format!("tone-{}-{}", round, i % 9);
            db.put(format!("k{i:05}").as_bytes(), v.as_bytes())
                .expect("put");
        }
        db.flush().expect("flush");
    }
    for i in (0..1500u32).step_by(11) {
        db.delete(format!("k{i:05}").as_bytes()).expect("delete");
    }
    db.compact().expect("compact");
    let s = db.stats();
    assert!(s.values_carried_as_codes > 1000, "{s:?}");
    for (k, v) in contents(&db) {
        let i: u32 = std::str::from_utf8(&k[1..])
            .expect("utf8")
            .parse()
            .expect("number");
        assert_ne!(i % 11, 0, "deleted key {i} is back");
        let round = (0..3u32)
            .rev()
            .find(|r| i.is_multiple_of(r + 1))
            .expect("some round wrote it");
        assert_eq!(v, format!("tone-{}-{}", round, i % 9).as_bytes());
    }
}

#[test]
fn filters_skip_blocks_by_code_range_and_read_at_snapshots() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options(true)).expect("open");
    let ks = db.default_keyspace();
    // Values follow keys in runs, so most blocks hold one or two codes.
    let value = |i: u32| format!("band-{:02}", i / 400).into_bytes();
    for i in 0..8000u32 {
        ks.put(format!("k{i:05}").as_bytes(), &value(i))
            .expect("put");
    }
    db.compact().expect("compact");
    let snapshot = db.snapshot();
    for i in (1200..1600u32).step_by(2) {
        ks.put(format!("k{i:05}").as_bytes(), b"moved")
            .expect("put");
    }
    ks.delete(b"k01201").expect("delete");
    let band = ValuePredicate::Eq(b"band-03".to_vec());
    let now = ks.filter(None, None, &band).expect("filter");
    let want: Vec<u32> = (1200..1600).filter(|i| i % 2 == 1 && *i != 1201).collect();
    let keys: Vec<Vec<u8>> = now.iter().map(|(k, _)| k.clone()).collect();
    let want_keys: Vec<Vec<u8>> = want
        .iter()
        .map(|i| format!("k{i:05}").into_bytes())
        .collect();
    assert_eq!(keys, want_keys);
    assert!(now.iter().all(|(_, v)| v == b"band-03"));
    let then = ks
        .filter_at(None, None, &band, &snapshot)
        .expect("filter at");
    assert_eq!(then.len(), 400);
    let s = db.stats();
    assert!(s.filter_blocks_skipped > 0, "{s:?}");
    // The second filter found the dictionaries in the block cache.
    assert!(s.dictionary_cache_hits > 0, "{s:?}");
    assert!(
        s.filter_codes_scanned > 0 && s.filter_codes_scanned < 8000,
        "{s:?}"
    );
    let moved = ks
        .filter(
            Some(b"k01300"),
            Some(b"k01310"),
            &ValuePredicate::Prefix(b"mov".to_vec()),
        )
        .expect("filter");
    assert_eq!(moved.len(), 5);
}

#[test]
fn dictionaries_are_read_alike_without_a_cache_and_through_a_tiny_one() {
    for cache in [0u64, 16 << 10, 64 << 20] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut o = options(true);
        o.block_cache_bytes = cache;
        let db = Db::open(dir.path(), o).expect("open");
        for i in 0..6000u32 {
            db.put(
                format!("k{i:05}").as_bytes(),
                format!("hue-{:03}", i % 300).as_bytes(),
            )
            .expect("put");
        }
        db.compact().expect("compact");
        let ks = db.default_keyspace();
        for round in 0..3 {
            let hits = ks
                .filter(None, None, &ValuePredicate::Eq(b"hue-007".to_vec()))
                .expect("filter");
            assert_eq!(hits.len(), 20, "cache {cache}, round {round}");
            assert_eq!(ks.get(b"k05999").expect("get"), Some(b"hue-299".to_vec()));
        }
        let s = db.stats();
        match cache {
            // Decoded once per file at open, kept.
            0 => assert_eq!(s.dictionary_cache_hits, 0, "{s:?}"),
            // Evicted between filters: decoded again.
            c if c < 1 << 20 => assert!(s.dictionary_loads > 1, "{s:?}"),
            _ => assert!(s.dictionary_cache_hits > 0, "{s:?}"),
        }
    }
}

#[test]
fn a_threshold_outside_zero_to_one_is_refused() {
    assert!(ValueDictionaryLayout::new(1.5).is_err());
    assert!(ValueDictionaryLayout::new(-0.1).is_err());
    assert!(ValueDictionaryLayout::new(f64::NAN).is_err());
    let o = KeyspaceOptions {
        layout: Arc::new(ValueDictionaryLayout::new(0.0).expect("zero: never a dictionary")),
        ..KeyspaceOptions::default()
    };
    o.validate().expect("valid");
}

#[test]
fn a_damaged_dictionary_is_a_corruption_error_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = Db::open(dir.path(), options(true)).expect("open");
        for i in 0..500u32 {
            db.put(
                format!("k{i:05}").as_bytes(),
                format!("shade-{}", i % 3).as_bytes(),
            )
            .expect("put");
        }
        db.flush().expect("flush");
        db.close().expect("close");
    }
    // The dictionary holds "shade-0", "shade-1", "shade-2": flip a byte of
    // the first occurrence of "shade-" in the file (the data blocks hold
    // codes only, so it is the dictionary's).
    let table = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .expect("a table");
    let mut bytes = std::fs::read(&table).expect("read");
    let at = bytes
        .windows(6)
        .position(|w| w == b"shade-")
        .expect("the dictionary's values are in the file");
    bytes[at] ^= 0x20;
    std::fs::write(&table, &bytes).expect("write");
    let err = match Db::open(dir.path(), options(true)) {
        Err(e) => e,
        Ok(db) => db.get(b"k00001").expect_err("a read of the damaged file"),
    };
    match &err {
        Error::Corruption { file, .. } => assert_eq!(file, &table, "{err}"),
        other => panic!("expected a corruption error, got {other}"),
    }
}
