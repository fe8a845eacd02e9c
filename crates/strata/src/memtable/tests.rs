use super::*;
use crate::error::Error;
use crate::key::{ValueKind, compare_internal, make_internal_key, make_seek_key};

fn opts() -> MemTableOptions {
    MemTableOptions::default().prefix_extractor(Arc::new(CappedPrefix::new(1)))
}

fn mem(kind: MemTableKind) -> MemTable {
    MemTable::with_options(kind, &opts(), 1 << 20, 1, FileNumber(1))
}

fn collect(it: &mut dyn InternalIterator) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push(it.key().to_vec());
        it.next();
    }
    out
}

#[test]
fn every_kind_iterates_in_internal_order_both_ways() {
    for kind in MemTableKind::ALL {
        for freeze in [false, true] {
            let m = mem(*kind);
            let mut keys = Vec::new();
            for (i, k) in [b"b".as_ref(), b"a", b"c", b"b", b""].iter().enumerate() {
                let ik = make_internal_key(k, i as u64 + 1, ValueKind::Put);
                m.add(&ik, b"v", i as u64 + 1, false);
                keys.push(ik);
            }
            if freeze {
                m.freeze();
            }
            keys.sort_by(|a, b| compare_internal(a, b));
            let mut it = m.iter();
            assert_eq!(collect(it.as_mut()), keys, "{kind}");
            it.seek_to_last();
            let mut back = Vec::new();
            while it.valid() {
                back.push(it.key().to_vec());
                it.prev();
            }
            back.reverse();
            assert_eq!(back, keys, "{kind}");
        }
    }
}

#[test]
fn get_starts_at_newest_visible_version() {
    for kind in MemTableKind::ALL {
        let m = mem(*kind);
        m.add(
            &make_internal_key(b"k", 3, ValueKind::Put),
            b"three",
            3,
            false,
        );
        m.add(
            &make_internal_key(b"k", 7, ValueKind::Put),
            b"seven",
            7,
            false,
        );
        m.add(
            &make_internal_key(b"j", 8, ValueKind::Put),
            b"other",
            8,
            false,
        );
        let mut seen = Vec::new();
        m.get(&make_seek_key(b"k", 5), &mut |k, v| {
            seen.push((k.to_vec(), v.to_vec()));
            false
        });
        assert_eq!(seen[0].1, b"three", "{kind}");
        assert_eq!(m.largest_seqno().get(), 8);
        let u = m.memory_usage();
        assert_eq!(u.entry_bytes, 3 * 9 + 5 + 5 + 5, "{kind}");
        assert!(u.metadata_bytes > 0);
    }
}

#[test]
fn unknown_kind_name_is_a_clear_error() {
    let e = "btree".parse::<MemTableKind>().expect_err("unknown kind");
    assert!(e.to_string().contains("skiplist"), "{e}");
    assert!(e.to_string().contains("hash-linklist"), "{e}");
}

#[test]
fn names_round_trip_and_default_is_skiplist() {
    assert_eq!(MemTableKind::default(), MemTableKind::SkipList);
    assert_eq!(MemTableKind::ALL.len(), 8);
    for kind in MemTableKind::ALL {
        assert_eq!(kind.to_string().parse::<MemTableKind>().ok(), Some(*kind));
    }
    assert_eq!(
        "vector-dynamic".parse::<MemTableKind>().ok(),
        Some(MemTableKind::Vector)
    );
}

/// Metadata must grow with every entry (each has its own allocation and
/// a node or slot), and entry bytes must be exact.
#[test]
fn metadata_grows_with_entries_for_every_kind() {
    for kind in MemTableKind::ALL {
        let m = mem(*kind);
        let mut last = m.memory_usage();
        let mut payload = 0;
        for i in 0..600u64 {
            let k = make_internal_key(format!("key{i:05}").as_bytes(), i + 1, ValueKind::Put);
            m.add(&k, b"value", i + 1, false);
            payload += k.len() + 5;
            let u = m.memory_usage();
            assert_eq!(u.entry_bytes, payload, "{kind}");
            assert!(
                u.metadata_bytes > last.metadata_bytes,
                "{kind} at {i}: {u:?} vs {last:?}"
            );
            last = u;
        }
        // At least one pointer-sized slot or link per entry, plus the
        // entry's own allocation header.
        assert!(last.metadata_bytes >= 600 * 16, "{kind}: {last:?}");
    }
}

#[test]
fn hash_kinds_count_the_bucket_array() {
    for kind in [MemTableKind::HashSkipList, MemTableKind::HashLinkList] {
        // A slot is a pointer; hash-linklist also keeps a 4-byte length
        // per bucket for its conversion threshold.
        let per_bucket = match kind {
            MemTableKind::HashLinkList => 12,
            _ => 8,
        };
        let small =
            MemTable::with_options(kind, &opts().hash_buckets(16), 1 << 20, 1, FileNumber(1));
        let big = MemTable::with_options(
            kind,
            &opts().hash_buckets(10_016),
            1 << 20,
            1,
            FileNumber(1),
        );
        let (s, b) = (small.memory_usage(), big.memory_usage());
        assert_eq!(s.entry_bytes, 0);
        assert!(s.metadata_bytes >= 16 * per_bucket, "{kind}: {s:?}");
        let diff = b.metadata_bytes - s.metadata_bytes;
        assert!(
            (10_000 * per_bucket..=10_000 * per_bucket + 32).contains(&diff),
            "{kind}: {diff}"
        );
        // A hash-skiplist bucket's head tower is allocated with its first
        // entry, so that entry costs more than one landing in an existing
        // bucket; a list's head is its slot, so both cost the same.
        let k1 = make_internal_key(b"a1", 1, ValueKind::Put);
        let k2 = make_internal_key(b"a2", 2, ValueKind::Put);
        small.add(&k1, b"", 1, false);
        let first = small.memory_usage().metadata_bytes - s.metadata_bytes;
        small.add(&k2, b"", 2, false);
        let second = small.memory_usage().metadata_bytes - s.metadata_bytes - first;
        match kind {
            MemTableKind::HashLinkList => assert_eq!(first, second, "{kind}"),
            _ => assert!(first > second, "{kind}: {first} vs {second}"),
        }
    }
}

#[test]
fn hash_linklist_conversion_is_counted() {
    let o = MemTableOptions {
        linklist_threshold: 8,
        ..opts().hash_buckets(1)
    };
    let m = MemTable::with_options(MemTableKind::HashLinkList, &o, 1 << 20, 1, FileNumber(1));
    let mut deltas = Vec::new();
    for i in 0..20u64 {
        let before = m.memory_usage().metadata_bytes;
        m.add(
            &make_internal_key(format!("a{i:02}").as_bytes(), i + 1, ValueKind::Put),
            b"",
            i + 1,
            false,
        );
        deltas.push(m.memory_usage().metadata_bytes - before);
    }
    assert_eq!(m.counters().bucket_conversions, 1);
    // The converting insert pays for a skiplist node per moved entry.
    assert!(deltas[8] > 8 * deltas[7], "{deltas:?}");
}

#[test]
fn vector_static_reserves_up_front_and_fills_without_regrowth() {
    let o = MemTableOptions {
        expected_entry_bytes: 1024,
        ..MemTableOptions::default()
    };
    let m = MemTable::with_options(MemTableKind::VectorStatic, &o, 64 * 1024, 1, FileNumber(1));
    let empty = m.memory_usage();
    assert!(empty.metadata_bytes >= 64 * 8, "{empty:?}");
    let dynamic = MemTable::with_options(MemTableKind::Vector, &o, 64 * 1024, 1, FileNumber(1));
    assert!(dynamic.memory_usage().metadata_bytes < empty.metadata_bytes);
    for i in 0..64u64 {
        assert_ne!(m.switch_due(usize::MAX), Some(SwitchDue::Full));
        m.add(
            &make_internal_key(&i.to_be_bytes(), i + 1, ValueKind::Put),
            b"v",
            i + 1,
            false,
        );
    }
    assert_eq!(
        m.switch_due(usize::MAX),
        Some(SwitchDue::Full),
        "64 slots reserved, 64 used"
    );
    assert_eq!(m.counters().regrowths, 0);
    // The slot array did not move: only per-entry overhead was added.
    assert!(m.memory_usage().metadata_bytes < empty.metadata_bytes + 64 * 64);
}

#[test]
fn vector_reads_share_a_sorted_copy_until_the_next_insert() {
    let m = mem(MemTableKind::Vector);
    for i in 0..10u64 {
        m.add(
            &make_internal_key(&[b'a' + (i % 3) as u8], i + 1, ValueKind::Put),
            b"v",
            i + 1,
            false,
        );
    }
    let seek = make_seek_key(b"b", 100);
    m.get(&seek, &mut |_, _| false);
    drop(m.iter());
    m.get(&seek, &mut |_, _| false);
    assert_eq!(m.counters().snapshot_rebuilds, 1);
    m.add(
        &make_internal_key(b"z", 11, ValueKind::Put),
        b"v",
        11,
        false,
    );
    m.get(&seek, &mut |_, _| false);
    assert_eq!(m.counters().snapshot_rebuilds, 2);
    m.freeze();
    drop(m.iter());
    m.get(&seek, &mut |_, _| false);
    assert_eq!(m.counters().snapshot_rebuilds, 2, "frozen: sorted in place");
}

#[test]
fn hash_kinds_without_extractor_are_refused_with_a_clear_error() {
    for kind in [MemTableKind::HashSkipList, MemTableKind::HashLinkList] {
        let e = MemTableOptions::default()
            .validate(kind, 1 << 20)
            .expect_err("no extractor");
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
        assert!(e.to_string().contains("prefix extractor"), "{e}");
        assert!(opts().validate(kind, 1 << 20).is_ok());
        let e = opts()
            .hash_buckets(1 << 20)
            .validate(kind, 1 << 20)
            .expect_err("bucket array larger than the buffer");
        assert!(e.to_string().contains("bucket array"), "{e}");
        // Still usable (degrades to the overflow bucket) without a panic.
        let m = MemTable::new(kind, 1, FileNumber(1));
        m.add(&make_internal_key(b"k", 1, ValueKind::Put), b"v", 1, false);
        let mut n = 0;
        m.get(&make_seek_key(b"k", 1), &mut |_, _| {
            n += 1;
            true
        });
        assert_eq!(n, 1);
        assert_eq!(m.counters().out_of_domain, 1);
    }
    assert!(
        MemTableOptions::default()
            .validate(MemTableKind::Adaptive, 1 << 20)
            .is_ok()
    );
}

#[test]
fn keys_outside_the_extractor_domain_are_errors_at_the_write_path() {
    let o = MemTableOptions::fixed_prefix(4);
    for kind in [
        MemTableKind::HashSkipList,
        MemTableKind::HashLinkList,
        MemTableKind::Adaptive,
    ] {
        let e = o
            .check_key(kind, b"abc")
            .expect_err("prefix longer than key");
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
        assert!(e.to_string().contains("prefix length 4"), "{e}");
        assert!(o.check_key(kind, b"abcd").is_ok());
    }
    assert!(
        o.check_key(MemTableKind::SkipList, b"a").is_ok(),
        "not used by skiplist"
    );
    let picky = MemTableOptions::default()
        .prefix_extractor(Arc::new(FnPrefix::new("dot", |k: &[u8]| {
            k.iter().position(|&b| b == b'.')
        })));
    let e = picky
        .check_key(MemTableKind::HashSkipList, b"nodot")
        .expect_err("rejected");
    assert!(e.to_string().contains("rejects"), "{e}");
}

fn adaptive_opts(extractor: bool) -> KeyspaceOptions {
    let mut o = KeyspaceOptions::default().memtable(MemTableKind::Adaptive);
    o.memtable_options.adaptive.min_ops = 100;
    if extractor {
        o.memtable_options.prefix_extractor = Some(Arc::new(CappedPrefix::new(2)));
    }
    o
}

fn drive(m: &MemTable, inserts: u64, points: u64, ranges: u64) {
    for i in 0..inserts {
        m.add(
            &make_internal_key(&i.to_be_bytes(), i + 1, ValueKind::Put),
            b"v",
            i + 1,
            false,
        );
    }
    for i in 0..points {
        m.get(
            &make_seek_key(&i.to_be_bytes(), u64::MAX >> 8),
            &mut |_, _| false,
        );
    }
    for _ in 0..ranges {
        drop(m.iter());
    }
}

#[test]
fn adaptive_first_buffer_is_switched_early_once_it_can_decide() {
    let mut o = adaptive_opts(true);
    o.write_buffer_size = 1 << 20;
    o.memtable_options.adaptive.first_buffer_fraction = 0.25;
    let first = MemTable::for_keyspace(&o, 1, FileNumber(1));
    let quarter = o.write_buffer_size / 4;
    // Past a quarter of the buffer but short of `min_ops` (100): not yet.
    let big = vec![0u8; quarter / 50];
    for i in 0..60u64 {
        first.add(
            &make_internal_key(&i.to_be_bytes(), i + 1, ValueKind::Put),
            &big,
            i + 1,
            false,
        );
    }
    assert!(first.memory_usage().total() >= quarter);
    assert_eq!(first.switch_due(o.write_buffer_size), None);
    drive(&first, 0, 40, 0);
    assert_eq!(
        first.switch_due(o.write_buffer_size),
        Some(SwitchDue::Representation),
        "100 operations seen, point-read heavy: a hash buffer is due"
    );
    assert_ne!(first.switch_due(o.write_buffer_size), Some(SwitchDue::Full));
    // A mix the skiplist suits (range reads) keeps filling the buffer:
    // switching would change nothing.
    let ranged = MemTable::for_keyspace(&o, 4, FileNumber(4));
    for i in 0..60u64 {
        ranged.add(
            &make_internal_key(&i.to_be_bytes(), i + 1, ValueKind::Put),
            &big,
            i + 1,
            false,
        );
    }
    drive(&ranged, 0, 0, 40);
    assert!(ranged.switch_due(o.write_buffer_size).is_none());
    drive(&ranged, 0, 400, 0);
    assert!(
        ranged.switch_due(o.write_buffer_size).is_none(),
        "the probe ran once and kept the skiplist"
    );
    // Its successors are whole buffers.
    let second = first.successor(&o, 2, FileNumber(2));
    for i in 0..60u64 {
        second.add(
            &make_internal_key(&i.to_be_bytes(), i + 1, ValueKind::Put),
            &big,
            i + 1,
            false,
        );
    }
    drive(&second, 0, 200, 0);
    assert!(second.memory_usage().total() >= quarter);
    assert!(second.switch_due(o.write_buffer_size).is_none());
    // A fixed kind never switches early.
    let fixed = MemTable::for_keyspace(
        &o.clone().memtable(MemTableKind::SkipList),
        3,
        FileNumber(3),
    );
    drive(&fixed, 200, 200, 0);
    for i in 0..60u64 {
        fixed.add(
            &make_internal_key(&(i + 1000).to_be_bytes(), i + 1, ValueKind::Put),
            &big,
            i + 1,
            false,
        );
    }
    assert!(fixed.switch_due(o.write_buffer_size).is_none());
}

#[test]
fn an_early_switch_moves_every_entry_into_the_new_representation() {
    let mut o = adaptive_opts(true);
    o.write_buffer_size = 1 << 20;
    let first = MemTable::for_keyspace(&o, 1, FileNumber(7));
    let mut keys = Vec::new();
    for i in 0..300u64 {
        // Some keys twice, some deleted: every version moves.
        let k = (i % 200).to_be_bytes();
        let ik = make_internal_key(&k, i + 1, ValueKind::Put);
        first.add(&ik, &i.to_le_bytes(), i + 1, false);
        keys.push((ik, i.to_le_bytes().to_vec()));
    }
    for i in 0..5u64 {
        let ik = make_internal_key(&i.to_be_bytes(), 301 + i, ValueKind::Delete);
        first.add(&ik, b"", 301 + i, true);
        keys.push((ik, Vec::new()));
    }
    drive(&first, 0, 2000, 0);
    let reads_before = first.op_counts();
    let moved = first.rehomed(&o, 2);
    assert_eq!(first.op_counts(), reads_before, "the copy is not a read");
    assert_eq!(moved.rep_kind(), MemTableKind::HashLinkList);
    assert_eq!(
        moved.log_number,
        FileNumber(7),
        "same log: nothing was flushed"
    );
    assert_eq!(moved.largest_seqno().get(), 305);
    assert_eq!(moved.deletions.load(AtomicOrdering::Relaxed), 5);
    assert_eq!(moved.len(), keys.len());
    let d = moved.decision().expect("decided");
    assert_eq!(d.moved, Some(keys.len() as u64));
    assert!(d.to_string().contains("305 entries moved"), "{d}");
    keys.sort_by(|a, b| compare_internal(&a.0, &b.0));
    let mut it = moved.iter();
    it.seek_to_first();
    for (k, v) in &keys {
        assert!(it.valid());
        assert_eq!((it.key(), it.value()), (k.as_slice(), v.as_slice()));
        it.next();
    }
    assert!(!it.valid());
    // The copy's own buffer is no longer a first buffer: it fills up,
    // and its successor decides afresh without the moved count.
    assert_eq!(moved.switch_due(o.write_buffer_size), None);
    let next = moved.successor(&o, 3, FileNumber(8));
    assert_eq!(next.decision().expect("decided").moved, None);
}

#[test]
fn adaptive_picks_the_next_representation_from_the_observed_mix() {
    let o = adaptive_opts(true);
    let first = MemTable::for_keyspace(&o, 1, FileNumber(1));
    assert_eq!(
        (first.kind(), first.rep_kind()),
        (MemTableKind::Adaptive, MemTableKind::SkipList)
    );
    assert!(first.decision().is_none());

    drive(&first, 500, 0, 0);
    let second = first.successor(&o, 2, FileNumber(2));
    assert_eq!(second.rep_kind(), MemTableKind::Vector);
    let d = second.decision().expect("decided").to_string();
    assert!(
        d.contains("insert-only") && d.contains("500 inserts"),
        "{d}"
    );

    drive(&second, 200, 300, 0);
    let third = second.successor(&o, 3, FileNumber(3));
    assert_eq!(
        third.rep_kind(),
        MemTableKind::HashLinkList,
        "{:?}",
        third.decision()
    );
    // The same mix with a tenth of the buckets: lists would grow past the
    // policy's load, so the buckets are skiplists.
    let mut crowded = o.clone();
    let buckets = o.memtable_options.bucket_count(o.write_buffer_size);
    crowded.memtable_options = crowded.memtable_options.hash_buckets(buckets / 10);
    let crowded = second.successor(&crowded, 3, FileNumber(3));
    assert_eq!(
        crowded.rep_kind(),
        MemTableKind::HashSkipList,
        "{:?}",
        crowded.decision()
    );

    drive(&third, 200, 300, 0);
    let no_x = third.successor(&adaptive_opts(false), 4, FileNumber(4));
    assert_eq!(no_x.rep_kind(), MemTableKind::SkipList);
    assert!(
        no_x.decision()
            .expect("decided")
            .reason
            .contains("no prefix extractor")
    );

    drive(&no_x, 200, 10, 10);
    let ranged = no_x.successor(&o, 5, FileNumber(5));
    assert_eq!(ranged.rep_kind(), MemTableKind::SkipList);
    assert!(ranged.decision().expect("decided").reason.contains("range"));

    // An idle buffer keeps its representation and the reason for it.
    let idle = first
        .successor(&o, 10, FileNumber(10))
        .successor(&o, 11, FileNumber(11));
    assert_eq!(idle.rep_kind(), MemTableKind::Vector);
    assert!(
        idle.decision()
            .expect("carried")
            .reason
            .contains("insert-only")
    );

    // Too few operations: keep what we have.
    let quiet = MemTable::for_keyspace(&o, 6, FileNumber(6)).successor(&o, 7, FileNumber(7));
    assert_eq!(quiet.rep_kind(), MemTableKind::SkipList);

    // Reads of a frozen memtable are not counted.
    let f = MemTable::for_keyspace(&o, 8, FileNumber(8));
    drive(&f, 10, 0, 0);
    f.freeze();
    drive(&f, 0, 5, 5);
    assert_eq!(
        f.op_counts(),
        OpCounts {
            inserts: 10,
            point_reads: 0,
            range_reads: 0
        }
    );

    // A non-adaptive keyspace gets its configured kind.
    let plain = third.successor(
        &KeyspaceOptions::default().memtable(MemTableKind::VectorSorted),
        9,
        FileNumber(9),
    );
    assert_eq!(
        (plain.kind(), plain.rep_kind()),
        (MemTableKind::VectorSorted, MemTableKind::VectorSorted)
    );
    assert!(plain.decision().is_none());
}

/// A point lookup of `uk` at `seq`: the versions of `uk` the memtable
/// visits, newest first.
fn lookup(m: &MemTable, uk: &[u8], seq: u64) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    m.get(&make_seek_key(uk, seq), &mut |k, _| {
        if crate::key::user_key(k) != uk {
            return false;
        }
        out.push(k.to_vec());
        true
    });
    out
}

proptest::proptest! {
    /// With and without the whole-key filter, every kind answers every
    /// point lookup alike (the filter may only skip keys it never saw),
    /// before and after freezing and across an adaptive buffer's early
    /// representation change.
    #[test]
    fn the_whole_key_filter_never_hides_a_key(
        keys in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..6), 1..200),
        probes in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..6), 1..40),
    ) {
        for kind in MemTableKind::ALL {
            let filtered = mem(*kind);
            let plain = MemTable::with_options(
                *kind,
                &opts().whole_key_filter(0.0),
                1 << 20,
                1,
                FileNumber(1),
            );
            proptest::prop_assert!(filtered.filter_bytes() > 0 && plain.filter_bytes() == 0);
            for (i, k) in keys.iter().enumerate() {
                let seq = i as u64 + 1;
                let ik = make_internal_key(k, seq, ValueKind::Put);
                filtered.add(&ik, b"v", seq, false);
                plain.add(&ik, b"v", seq, false);
            }
            let moved = filtered.rehomed(&KeyspaceOptions::default(), 2);
            for round in 0..2 {
                if round == 1 {
                    filtered.freeze();
                    plain.freeze();
                }
                for p in keys.iter().chain(&probes) {
                    let want = lookup(&plain, p, u64::MAX >> 8);
                    proptest::prop_assert_eq!(&lookup(&filtered, p, u64::MAX >> 8), &want, "{}", kind);
                    proptest::prop_assert_eq!(&lookup(&moved, p, u64::MAX >> 8), &want, "{} moved", kind);
                }
            }
        }
    }
}

#[test]
fn the_whole_key_filter_is_sized_from_the_buffer_and_checked() {
    let m = MemTable::with_options(
        MemTableKind::SkipList,
        &MemTableOptions::default(),
        64 << 20,
        1,
        FileNumber(1),
    );
    assert_eq!(
        m.filter_bytes(),
        1 << 20,
        "1/64 of the write buffer by default"
    );
    for bad in [-0.1, 0.3, f64::NAN] {
        let err = MemTableOptions::default()
            .whole_key_filter(bad)
            .validate(MemTableKind::SkipList, 1 << 20)
            .expect_err("refused");
        assert!(err.to_string().contains("whole_key_filter"), "{err}");
    }
    MemTableOptions::default()
        .whole_key_filter(0.0)
        .validate(MemTableKind::SkipList, 1 << 20)
        .expect("0 turns it off");
}
