//! One conformance suite for every memtable representation.
//!
//! 1. Memtable level: the same random sequence of inserts (unique sequence
//!    numbers, given out of order; overwrites, deletes, merges), point reads
//!    and iterator walks runs against each kind and is compared with a sorted
//!    `Vec` reference, before and after `freeze`.
//! 2. Concurrency: one writer inserts while readers look up and iterate.
//! 3. Database level: a `Db` per kind runs random puts, deletes, merges,
//!    gets, scans, flushes and reopens against a `BTreeMap` model.
//! 4. Bad input and the adaptive kind's visible decisions.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};

use proptest::prelude::*;
use strata::FileNumber;
use strata::key::{
    KIND_SEEK, ValueKind, append_internal_key, compare_internal, make_internal_key, user_key,
};
use strata::memtable::{
    CappedPrefix, FixedPrefix, FnPrefix, MemTable, MemTableKind, MemTableOptions, PrefixExtractor,
};
use strata::merge::AppendOperator;
use strata::{Db, Error, KeyspaceOptions, Options, ReadOptions};

// ---------------------------------------------------------------------------
// Configurations: every kind at least once, hash kinds with collisions,
// list-to-skiplist conversions and out-of-domain keys.

struct Config {
    label: &'static str,
    kind: MemTableKind,
    opts: MemTableOptions,
    write_buffer_size: usize,
}

fn configs() -> Vec<Config> {
    let c = |label, kind, opts, write_buffer_size| Config {
        label,
        kind,
        opts,
        write_buffer_size,
    };
    let fixed2 = || MemTableOptions::fixed_prefix(2);
    let tiny_static = MemTableOptions {
        expected_entry_bytes: 1024,
        ..MemTableOptions::default()
    };
    let dot = MemTableOptions::default().prefix_extractor(Arc::new(FnPrefix::new(
        "upto-b",
        |k: &[u8]| {
            // Up to and including the first 'b'; keys without one are out of domain.
            k.iter().position(|&c| c == b'b').map(|i| i + 1)
        },
    )));
    vec![
        c(
            "skiplist",
            MemTableKind::SkipList,
            MemTableOptions::default(),
            1 << 20,
        ),
        c(
            "vector",
            MemTableKind::Vector,
            MemTableOptions::default(),
            1 << 20,
        ),
        c(
            "vector-static",
            MemTableKind::VectorStatic,
            MemTableOptions::default(),
            1 << 20,
        ),
        // Four reserved slots: exercises growth past the reservation.
        c(
            "vector-static-tiny",
            MemTableKind::VectorStatic,
            tiny_static,
            4096,
        ),
        c(
            "vector-sorted",
            MemTableKind::VectorSorted,
            MemTableOptions::default(),
            1 << 20,
        ),
        c(
            "vector-unsorted",
            MemTableKind::VectorUnsorted,
            MemTableOptions::default(),
            1 << 20,
        ),
        c(
            "hash-skiplist",
            MemTableKind::HashSkipList,
            fixed2().hash_buckets(3),
            1 << 20,
        ),
        c(
            "hash-skiplist-capped",
            MemTableKind::HashSkipList,
            MemTableOptions::default().prefix_extractor(Arc::new(CappedPrefix::new(1))),
            1 << 20,
        ),
        c(
            "hash-linklist",
            MemTableKind::HashLinkList,
            MemTableOptions {
                linklist_threshold: 3,
                ..fixed2().hash_buckets(2)
            },
            1 << 20,
        ),
        c(
            "hash-linklist-fn",
            MemTableKind::HashLinkList,
            MemTableOptions {
                linklist_threshold: 4,
                ..dot.hash_buckets(5)
            },
            1 << 20,
        ),
        c("adaptive", MemTableKind::Adaptive, fixed2(), 1 << 20),
    ]
}

#[test]
fn configurations_cover_every_kind() {
    let cs = configs();
    for kind in MemTableKind::ALL {
        assert!(
            cs.iter().any(|c| c.kind == *kind),
            "{kind} has no conformance configuration"
        );
    }
}

/// The prefix an extractor gives, `None` outside its domain.
fn prefix_of<'a>(x: &dyn PrefixExtractor, uk: &'a [u8]) -> Option<&'a [u8]> {
    match x.prefix_len(uk) {
        Some(n) if n <= uk.len() => Some(&uk[..n]),
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// 1. Memtable level.

#[derive(Clone, Debug)]
enum Start {
    First,
    Last,
    Seek(Vec<u8>),
    SeekForPrev(Vec<u8>),
}

#[derive(Clone, Debug)]
enum Step {
    Insert(ValueKind, Vec<u8>, Vec<u8>),
    /// Seek key, and after how many entries `f` says stop.
    Get(Vec<u8>, usize),
    Walk(Start, Vec<bool>),
    Freeze,
}

fn user_key_strategy() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], 0..4)
}

/// An internal key to seek to: any user key, sequence number and kind byte
/// (including the seek kind).
fn target_strategy() -> impl Strategy<Value = Vec<u8>> {
    (
        user_key_strategy(),
        0u64..300,
        prop_oneof![Just(0u8), Just(1), Just(2), Just(KIND_SEEK)],
    )
        .prop_map(|(uk, s, k)| {
            let mut v = Vec::new();
            append_internal_key(&mut v, &uk, s, k);
            v
        })
}

fn step_strategy() -> impl Strategy<Value = Step> {
    let kind = prop_oneof![
        6 => Just(ValueKind::Put),
        2 => Just(ValueKind::Delete),
        2 => Just(ValueKind::Merge)
    ];
    prop_oneof![
        12 => (kind, user_key_strategy(), proptest::collection::vec(any::<u8>(), 0..6))
            .prop_map(|(k, uk, v)| Step::Insert(k, uk, v)),
        4 => (target_strategy(), 1usize..8).prop_map(|(t, n)| Step::Get(t, n)),
        3 => (
            prop_oneof![
                Just(Start::First),
                Just(Start::Last),
                target_strategy().prop_map(Start::Seek),
                target_strategy().prop_map(Start::SeekForPrev)
            ],
            proptest::collection::vec(any::<bool>(), 0..10)
        )
            .prop_map(|(s, m)| Step::Walk(s, m)),
        1 => Just(Step::Freeze),
    ]
}

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn check_get(
    c: &Config,
    m: &MemTable,
    reference: &Entries,
    seek: &[u8],
    limit: usize,
) -> Result<(), TestCaseError> {
    let mut seen: Entries = Vec::new();
    m.get(seek, &mut |k, v| {
        seen.push((k.to_vec(), v.to_vec()));
        seen.len() < limit
    });
    let start = reference.partition_point(|(k, _)| compare_internal(k, seek) == Ordering::Less);
    let rest = &reference[start..];
    // A memtable's whole-key filter may end the lookup of a user key it
    // does not hold before any entry; a version it holds at or below the
    // seek key is never turned away.
    let holds = rest
        .first()
        .is_some_and(|(k, _)| user_key(k) == user_key(seek));
    if seen.is_empty() && m.filter_bytes() > 0 {
        prop_assert!(!holds, "{}: the filter hid {:?}", c.label, seek);
        return Ok(());
    }
    // The total-order kinds continue through every later entry; the hash
    // kinds stop where the seek key's prefix (its user key, out of domain)
    // ends. Every kind covers all versions of the seek key's user key.
    let hashed = c.kind.is_hashed();
    let suk = user_key(seek);
    let run = if hashed {
        let x = c
            .opts
            .prefix_extractor
            .as_deref()
            .expect("hash configs have extractors");
        let sp = prefix_of(x, suk);
        rest.iter()
            .take_while(|(k, _)| {
                let uk = user_key(k);
                match sp {
                    Some(p) => prefix_of(x, uk) == Some(p),
                    None => uk == suk,
                }
            })
            .count()
    } else {
        rest.len()
    };
    let want = &rest[..run.min(limit)];
    prop_assert_eq!(
        &seen[..],
        want,
        "{}: get {:?} limit {}",
        c.label,
        seek,
        limit
    );
    Ok(())
}

fn check_walk(
    c: &Config,
    m: &MemTable,
    reference: &Entries,
    start: &Start,
    moves: &[bool],
) -> Result<(), TestCaseError> {
    let mut it = m.iter();
    let mut pos: Option<usize> = match start {
        Start::First => {
            it.seek_to_first();
            (!reference.is_empty()).then_some(0)
        }
        Start::Last => {
            it.seek_to_last();
            reference.len().checked_sub(1)
        }
        Start::Seek(t) => {
            it.seek(t);
            let i = reference.partition_point(|(k, _)| compare_internal(k, t) == Ordering::Less);
            (i < reference.len()).then_some(i)
        }
        Start::SeekForPrev(t) => {
            it.seek_for_prev(t);
            reference
                .partition_point(|(k, _)| compare_internal(k, t) != Ordering::Greater)
                .checked_sub(1)
        }
    };
    for (n, forward) in std::iter::once(None)
        .chain(moves.iter().map(Some))
        .enumerate()
    {
        match forward {
            None => {}
            Some(true) => {
                it.next();
                pos = pos.and_then(|p| (p + 1 < reference.len()).then_some(p + 1));
            }
            Some(false) => {
                it.prev();
                pos = pos.and_then(|p| p.checked_sub(1));
            }
        }
        match pos {
            None => prop_assert!(
                !it.valid(),
                "{}: {:?} step {} should be invalid",
                c.label,
                start,
                n
            ),
            Some(p) => {
                prop_assert!(
                    it.valid(),
                    "{}: {:?} step {} should be at {}",
                    c.label,
                    start,
                    n,
                    p
                );
                prop_assert_eq!(
                    it.key(),
                    &reference[p].0[..],
                    "{}: {:?} step {}",
                    c.label,
                    start,
                    n
                );
                prop_assert_eq!(
                    it.value(),
                    &reference[p].1[..],
                    "{}: {:?} step {}",
                    c.label,
                    start,
                    n
                );
            }
        }
        if pos.is_none() {
            break;
        }
    }
    prop_assert!(it.status().is_ok());
    Ok(())
}

fn run_memtable(c: &Config, steps: &[Step], seqnos: &[u64]) -> Result<(), TestCaseError> {
    let m = MemTable::with_options(c.kind, &c.opts, c.write_buffer_size, 1, FileNumber(1));
    let mut reference: Entries = Vec::new();
    let mut next_seq = seqnos.iter();
    let mut frozen = false;
    let mut payload = 0;
    for step in steps {
        match step {
            Step::Insert(kind, uk, v) => {
                if frozen {
                    continue;
                }
                let Some(&seq) = next_seq.next() else {
                    continue;
                };
                let ik = make_internal_key(uk, seq, *kind);
                m.add(&ik, v, seq, *kind == ValueKind::Delete);
                payload += ik.len() + v.len();
                let i =
                    reference.partition_point(|(k, _)| compare_internal(k, &ik) == Ordering::Less);
                reference.insert(i, (ik, v.clone()));
            }
            Step::Get(seek, limit) => check_get(c, &m, &reference, seek, *limit)?,
            Step::Walk(start, moves) => check_walk(c, &m, &reference, start, moves)?,
            Step::Freeze => {
                if !frozen {
                    m.freeze();
                    frozen = true;
                }
            }
        }
        prop_assert_eq!(m.len(), reference.len());
    }
    prop_assert_eq!(
        m.memory_usage().entry_bytes,
        payload,
        "{}: entry bytes are exact",
        c.label
    );
    // A full scan both ways after everything.
    check_walk(
        c,
        &m,
        &reference,
        &Start::First,
        &vec![true; reference.len()],
    )?;
    check_walk(
        c,
        &m,
        &reference,
        &Start::Last,
        &vec![false; reference.len()],
    )?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    #[test]
    fn every_kind_matches_a_sorted_reference(
        steps in proptest::collection::vec(step_strategy(), 1..160),
        seqnos in Just((1u64..=400).collect::<Vec<_>>()).prop_shuffle(),
    ) {
        for c in configs() {
            run_memtable(&c, &steps, &seqnos)?;
        }
    }
}

// ---------------------------------------------------------------------------
// 2. One writer, concurrent readers.

#[test]
fn readers_see_a_consistent_sorted_view_while_one_writer_inserts() {
    const N: u64 = 1500;
    for c in configs() {
        let m = Arc::new(MemTable::with_options(
            c.kind,
            &c.opts,
            c.write_buffer_size,
            1,
            FileNumber(1),
        ));
        let published = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let key = |i: u64| format!("b{:02}x{i:05}", i % 37).into_bytes();
        std::thread::scope(|s| {
            for r in 0..2u64 {
                let (m, published, done) =
                    (Arc::clone(&m), Arc::clone(&published), Arc::clone(&done));
                s.spawn(move || {
                    let mut round = 0u64;
                    while !done.load(AtomicOrdering::Acquire) {
                        round += 1;
                        let n = published.load(AtomicOrdering::Acquire);
                        if n > 0 {
                            let i = (round * 7919 + r) % n;
                            let mut found = false;
                            let mut seek = Vec::new();
                            append_internal_key(&mut seek, &key(i), u64::MAX >> 8, KIND_SEEK);
                            m.get(&seek, &mut |k, v| {
                                found = user_key(k) == key(i).as_slice() && v == i.to_le_bytes();
                                false
                            });
                            assert!(found, "{}: key {i} of {n} published not found", c.label);
                        }
                        if round.is_multiple_of(8) {
                            let mut it = m.iter();
                            it.seek_to_first();
                            let mut count = 0u64;
                            let mut last: Option<Vec<u8>> = None;
                            while it.valid() {
                                if let Some(l) = &last {
                                    assert_eq!(
                                        compare_internal(l, it.key()),
                                        Ordering::Less,
                                        "{}",
                                        c.label
                                    );
                                }
                                last = Some(it.key().to_vec());
                                count += 1;
                                it.next();
                            }
                            assert!(count >= n, "{}: iterator saw {count} of {n}", c.label);
                        }
                    }
                });
            }
            for i in 0..N {
                let ik = make_internal_key(&key(i), i + 1, ValueKind::Put);
                m.add(&ik, &i.to_le_bytes(), i + 1, false);
                published.store(i + 1, AtomicOrdering::Release);
                if i % 64 == 0 {
                    std::thread::yield_now();
                }
            }
            m.freeze();
            done.store(true, AtomicOrdering::Release);
        });
        assert_eq!(m.len() as u64, N, "{}", c.label);
    }
}

// ---------------------------------------------------------------------------
// 3. Database level.

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Clone, Debug)]
enum DbOp {
    Put(u8, Vec<u8>),
    Delete(u8),
    Merge(u8, Vec<u8>),
    Get(u8),
    Scan(Option<u8>, Option<u8>, bool),
    Walk(u8, Vec<bool>),
    Flush,
    Reopen,
}

fn db_key(k: u8) -> Vec<u8> {
    format!("key{k:03}").into_bytes()
}

fn db_op_strategy() -> impl Strategy<Value = DbOp> {
    let k = 0u8..60;
    prop_oneof![
        20 => (k.clone(), proptest::collection::vec(any::<u8>(), 0..40)).prop_map(|(k, v)| DbOp::Put(k, v)),
        5 => k.clone().prop_map(DbOp::Delete),
        5 => (k.clone(), proptest::collection::vec(b'a'..=b'z', 1..4)).prop_map(|(k, v)| DbOp::Merge(k, v)),
        12 => k.clone().prop_map(DbOp::Get),
        4 => (proptest::option::of(k.clone()), proptest::option::of(k.clone()), any::<bool>())
            .prop_map(|(a, b, r)| DbOp::Scan(a, b, r)),
        3 => (k.clone(), proptest::collection::vec(any::<bool>(), 1..10)).prop_map(|(k, m)| DbOp::Walk(k, m)),
        2 => Just(DbOp::Flush),
        1 => Just(DbOp::Reopen),
    ]
}

fn db_options(kind: MemTableKind) -> Options {
    let mut mo = MemTableOptions::fixed_prefix(5);
    // Let the adaptive kind change representation within a small test.
    mo.adaptive.min_ops = 10;
    let default_keyspace = KeyspaceOptions {
        write_buffer_size: 4096,
        target_file_size: 4096,
        level1_max_bytes: 8192,
        level0_compaction_trigger: 2,
        block_size: 256,
        merge_operator: Some(Arc::new(AppendOperator { delimiter: b',' })),
        ..KeyspaceOptions::default()
    }
    .memtable(kind)
    .memtable_options(mo);
    Options {
        default_keyspace,
        block_cache_bytes: 64 * 1024,
        ..Options::default()
    }
}

fn fail(e: Error) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

fn run_db(kind: MemTableKind, ops: &[DbOp]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut db = Some(Db::open(dir.path(), db_options(kind)).map_err(fail)?);
    let mut model = Model::new();
    let all = [
        DbOp::Reopen,
        DbOp::Scan(None, None, false),
        DbOp::Scan(None, None, true),
    ];
    for op in ops.iter().chain(all.iter()) {
        let ks = db.as_ref().expect("open").default_keyspace();
        match op {
            DbOp::Put(k, v) => {
                ks.put(&db_key(*k), v).map_err(fail)?;
                model.insert(db_key(*k), v.clone());
            }
            DbOp::Delete(k) => {
                ks.delete(&db_key(*k)).map_err(fail)?;
                model.remove(&db_key(*k));
            }
            DbOp::Merge(k, v) => {
                ks.merge(&db_key(*k), v).map_err(fail)?;
                match model.get_mut(&db_key(*k)) {
                    Some(old) => {
                        old.push(b',');
                        old.extend_from_slice(v);
                    }
                    None => {
                        model.insert(db_key(*k), v.clone());
                    }
                }
            }
            DbOp::Get(k) => {
                let got = ks.get(&db_key(*k)).map_err(fail)?;
                prop_assert_eq!(got.as_ref(), model.get(&db_key(*k)), "{}: {:?}", kind, op);
            }
            DbOp::Scan(lo, hi, rev) => {
                let (lo, hi) = (lo.map(db_key), hi.map(db_key));
                let mut it = ks
                    .iter(ReadOptions {
                        snapshot: None,
                        lower_bound: lo.clone(),
                        upper_bound: hi.clone(),
                    })
                    .map_err(fail)?;
                let want: Entries = model
                    .iter()
                    .filter(|(k, _)| {
                        lo.as_ref().is_none_or(|l| *k >= l) && hi.as_ref().is_none_or(|h| *k < h)
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let mut got = Vec::new();
                if *rev {
                    it.seek_to_last();
                    while it.valid() {
                        got.push((it.key().to_vec(), it.value().to_vec()));
                        it.prev();
                    }
                    got.reverse();
                } else {
                    it.seek_to_first();
                    while it.valid() {
                        got.push((it.key().to_vec(), it.value().to_vec()));
                        it.next();
                    }
                }
                it.status().map_err(fail)?;
                prop_assert_eq!(got, want, "{}: {:?}", kind, op);
            }
            DbOp::Walk(k, moves) => {
                let entries: Entries = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                let mut it = ks.iter(ReadOptions::default()).map_err(fail)?;
                it.seek(&db_key(*k));
                let mut pos =
                    entries.partition_point(|(mk, _)| mk.as_slice() < db_key(*k).as_slice());
                for forward in moves {
                    if pos >= entries.len() {
                        prop_assert!(!it.valid(), "{}: walk past end {:?}", kind, op);
                        break;
                    }
                    prop_assert!(it.valid(), "{}: walk {:?} at {}", kind, op, pos);
                    prop_assert_eq!(it.key(), entries[pos].0.as_slice());
                    prop_assert_eq!(it.value(), entries[pos].1.as_slice());
                    if *forward {
                        it.next();
                        pos += 1;
                    } else {
                        it.prev();
                        if pos == 0 {
                            prop_assert!(!it.valid());
                            break;
                        }
                        pos -= 1;
                    }
                }
                it.status().map_err(fail)?;
            }
            DbOp::Flush => db.as_ref().expect("open").flush().map_err(fail)?,
            DbOp::Reopen => {
                drop(ks);
                if let Some(d) = db.take() {
                    d.close().map_err(fail)?;
                }
                db = Some(Db::open(dir.path(), db_options(kind)).map_err(fail)?);
            }
        }
    }
    Ok(())
}

macro_rules! db_conformance {
    ($($name:ident => $kind:expr),* $(,)?) => {
        proptest! {
            #![proptest_config(ProptestConfig { cases: 16, max_shrink_iters: 500, ..ProptestConfig::default() })]
            $(
                #[test]
                fn $name(ops in proptest::collection::vec(db_op_strategy(), 1..150)) {
                    run_db($kind, &ops)?;
                }
            )*
        }
    };
}

db_conformance! {
    db_skiplist_agrees_with_model => MemTableKind::SkipList,
    db_vector_agrees_with_model => MemTableKind::Vector,
    db_vector_static_agrees_with_model => MemTableKind::VectorStatic,
    db_vector_sorted_agrees_with_model => MemTableKind::VectorSorted,
    db_vector_unsorted_agrees_with_model => MemTableKind::VectorUnsorted,
    db_hash_skiplist_agrees_with_model => MemTableKind::HashSkipList,
    db_hash_linklist_agrees_with_model => MemTableKind::HashLinkList,
    db_adaptive_agrees_with_model => MemTableKind::Adaptive,
}

#[test]
fn db_tests_cover_every_kind() {
    // Keep the list above in step with `MemTableKind::ALL`.
    assert_eq!(MemTableKind::ALL.len(), 8);
}

// ---------------------------------------------------------------------------
// 4. Bad input, adaptive decisions.

#[test]
fn hash_kind_without_prefix_extractor_is_refused_at_open() {
    for kind in [MemTableKind::HashSkipList, MemTableKind::HashLinkList] {
        let dir = tempfile::tempdir().expect("tempdir");
        let o = Options {
            default_keyspace: KeyspaceOptions::default().memtable(kind),
            ..Options::default()
        };
        match Db::open(dir.path(), o) {
            Err(Error::InvalidArgument(msg)) => assert!(msg.contains("prefix extractor"), "{msg}"),
            Err(e) => panic!("{kind}: wrong error {e}"),
            Ok(_) => panic!("{kind}: opened without a prefix extractor"),
        }
        // The same for a second keyspace.
        let db = Db::open(dir.path(), Options::default()).expect("open");
        let e = db
            .keyspace("hashed", KeyspaceOptions::default().memtable(kind))
            .err()
            .expect("refused");
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    }
}

#[test]
fn key_shorter_than_a_fixed_prefix_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = Options {
        default_keyspace: KeyspaceOptions::default()
            .memtable(MemTableKind::HashSkipList)
            .memtable_options(
                MemTableOptions::default().prefix_extractor(Arc::new(FixedPrefix::new(4))),
            ),
        ..Options::default()
    };
    let db = Db::open(dir.path(), o).expect("open");
    let e = db
        .put(b"abc", b"v")
        .expect_err("key shorter than the prefix");
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    assert!(e.to_string().contains("prefix"), "{e}");
    db.put(b"abcd", b"v").expect("in domain");
    assert_eq!(db.get(b"abcd").expect("get"), Some(b"v".to_vec()));
    assert_eq!(db.get(b"abc").expect("get of an out-of-domain key"), None);
}

#[test]
fn adaptive_decision_is_visible_in_stats() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), db_options(MemTableKind::Adaptive)).expect("open");
    let ks_stats = |db: &Db| {
        db.stats()
            .keyspaces
            .into_iter()
            .next()
            .expect("default keyspace")
    };
    let first = ks_stats(&db);
    assert_eq!(
        (first.memtable_kind.as_str(), first.memtable_rep.as_str()),
        ("adaptive", "skiplist")
    );
    assert!(first.memtable_decision.is_none());

    // Insert-only: the next buffers are vectors.
    for i in 0..300u32 {
        db.put(format!("key{i:05}").as_bytes(), &[7u8; 40])
            .expect("put");
    }
    let s = ks_stats(&db);
    assert_eq!(s.memtable_rep, "vector", "{s:?}");
    let d = s.memtable_decision.expect("decided");
    assert!(d.contains("insert-only"), "{d}");
    assert!(db.stats().render().contains("adaptive memtable: vector"));

    // Point-read heavy with a prefix extractor and lightly loaded buckets:
    // hash-linklist.
    for i in 0..300u32 {
        db.put(format!("key{i:05}").as_bytes(), &[8u8; 40])
            .expect("put");
        for j in 0..3 {
            let k = format!("key{:05}", (i + j * 7) % 300);
            assert!(db.get(k.as_bytes()).expect("get").is_some());
        }
    }
    let s = ks_stats(&db);
    assert_eq!(s.memtable_rep, "hash-linklist", "{s:?}");
    let d = s.memtable_decision.expect("decided");
    assert!(d.contains("point-read heavy"), "{d}");
    assert!(d.contains("entries on average"), "{d}");

    // Range reads: skiplist.
    for i in 0..300u32 {
        db.put(format!("key{i:05}").as_bytes(), &[9u8; 40])
            .expect("put");
        if i % 5 == 0 {
            let mut it = db
                .default_keyspace()
                .iter(ReadOptions::default())
                .expect("iter");
            it.seek(format!("key{i:05}").as_bytes());
            assert!(it.valid());
        }
    }
    let s = ks_stats(&db);
    assert_eq!(s.memtable_rep, "skiplist", "{s:?}");
    assert!(
        s.memtable_decision
            .expect("decided")
            .contains("range reads")
    );
}

#[test]
fn adaptive_first_buffer_changes_representation_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = || {
        let mut mo = MemTableOptions::fixed_prefix(5);
        mo.adaptive.min_ops = 100;
        mo.adaptive.first_buffer_fraction = 0.25;
        Options {
            default_keyspace: KeyspaceOptions {
                write_buffer_size: 64 << 10,
                ..KeyspaceOptions::default()
            }
            .memtable(MemTableKind::Adaptive)
            .memtable_options(mo),
            ..Options::default()
        }
    };
    let logs = |dir: &std::path::Path| {
        std::fs::read_dir(dir)
            .expect("read_dir")
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "log"))
            })
            .count()
    };
    let db = Db::open(dir.path(), options()).expect("open");
    let logs_at_open = logs(dir.path());
    let key = |i: u32| format!("key{i:05}").into_bytes();
    // Insert-only past a quarter of the buffer (200 entries of about 120
    // bytes with overhead) and short of a full one.
    for i in 0..200u32 {
        db.put(&key(i), &[i as u8; 100]).expect("put");
    }
    let s = db.stats().keyspaces.into_iter().next().expect("keyspace");
    assert_eq!(s.memtable_rep, "vector", "{s:?}");
    let d = s.memtable_decision.clone().expect("decided");
    assert!(d.contains("changed representation early"), "{d}");
    // The entries moved: nothing was flushed and no log was started.
    assert!(s.levels.iter().all(|(files, _)| *files == 0), "{s:?}");
    assert_eq!(s.immutable_memtables, 0);
    assert_eq!(logs(dir.path()), logs_at_open);
    let moved: u64 = d
        .rsplit_once(", ")
        .and_then(|(_, t)| t.split(' ').next()?.parse().ok())
        .expect("moved count in the decision");
    assert!(moved > 0 && moved < 200, "{d}");
    // Every entry reads back, from the copy and after replaying the log.
    let check = |db: &Db| {
        for i in 0..200u32 {
            assert_eq!(db.get(&key(i)).expect("get"), Some(vec![i as u8; 100]));
        }
        let mut it = db
            .default_keyspace()
            .iter(ReadOptions::default())
            .expect("iter");
        it.seek_to_first();
        let mut n = 0u32;
        while it.valid() {
            assert_eq!(it.key(), key(n).as_slice());
            n += 1;
            it.next();
        }
        assert_eq!(n, 200);
    };
    check(&db);
    db.close().expect("close");
    let db = Db::open(dir.path(), options()).expect("reopen");
    check(&db);
}
