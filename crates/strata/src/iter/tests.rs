//! Tests of the merging iterator and the vector iterator.

use std::sync::Arc;

use super::*;
use crate::ids::Level;
use crate::key::{
    KIND_SEEK, MAX_SEQNO, SeqNo, ValueKind, append_internal_key, make_internal_key, user_key,
};

fn source(keys: &[(&[u8], u64)]) -> Box<dyn InternalIterator> {
    let mut v: Vec<(Vec<u8>, Vec<u8>)> = keys
        .iter()
        .map(|(k, s)| {
            (
                make_internal_key(k, *s, ValueKind::Put),
                s.to_le_bytes().to_vec(),
            )
        })
        .collect();
    v.sort_by(|a, b| compare_internal(&a.0, &b.0));
    Box::new(VecIterator::new(Arc::new(v)))
}

/// A source that reads its first entry, then fails (invalid, with an
/// error status) when it moves again or is positioned afresh after
/// `reads` positionings.
struct FailsAfter {
    inner: VecIterator,
    reads: usize,
    failed: bool,
}

impl FailsAfter {
    fn moved(&mut self) {
        if self.reads == 0 {
            self.failed = true;
        } else {
            self.reads -= 1;
        }
    }
}

impl InternalIterator for FailsAfter {
    fn valid(&self) -> bool {
        !self.failed && self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first();
        self.moved();
    }
    fn seek_to_last(&mut self) {
        self.inner.seek_to_last();
        self.moved();
    }
    fn seek(&mut self, t: &[u8]) {
        self.inner.seek(t);
        self.moved();
    }
    fn seek_for_prev(&mut self, t: &[u8]) {
        self.inner.seek_for_prev(t);
        self.moved();
    }
    fn next(&mut self) {
        self.inner.next();
        self.moved();
    }
    fn prev(&mut self) {
        self.inner.prev();
        self.moved();
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        if self.failed {
            Err(crate::error::Error::InvalidArgument("a read failed".into()))
        } else {
            Ok(())
        }
    }
}

fn fails_after(reads: usize, keys: &[(&[u8], u64, ValueKind)]) -> Box<dyn InternalIterator> {
    let mut v: Vec<(Vec<u8>, Vec<u8>)> = keys
        .iter()
        .map(|(k, s, kind)| (make_internal_key(k, *s, *kind), Vec::new()))
        .collect();
    v.sort_by(|a, b| compare_internal(&a.0, &b.0));
    Box::new(FailsAfter {
        inner: VecIterator::new(Arc::new(v)),
        reads,
        failed: false,
    })
}

/// A child that fails stops the merge with its error: going on without
/// it would show what its entries hide (here an older put of a key it
/// deletes).
#[test]
fn a_failing_child_stops_the_merge_with_its_error() {
    // Failing when positioned: a seek lands on nothing but the error.
    let mut m = MergingIterator::new(vec![
        fails_after(0, &[(b"k", 9, ValueKind::Delete)]),
        source(&[(b"k", 5)]),
    ]);
    m.seek(&seek_key(b"k"));
    assert!(!m.valid() && m.status().is_err());
    m.seek_to_last();
    assert!(!m.valid() && m.status().is_err());
    // Failing when stepped past its first entry, either way.
    let newest = || {
        fails_after(
            1,
            &[(b"a", 9, ValueKind::Put), (b"k", 8, ValueKind::Delete)],
        )
    };
    let mut m = MergingIterator::new(vec![newest(), source(&[(b"c", 5), (b"k", 5)])]);
    m.seek_to_first();
    assert_eq!(user_key(m.key()), b"a");
    m.next();
    assert!(
        !m.valid() && m.status().is_err(),
        "went on to {:?}",
        m.key()
    );
    let mut m = MergingIterator::new(vec![newest(), source(&[(b"c", 5), (b"k", 5)])]);
    m.seek_to_first();
    m.next();
    m.prev();
    assert!(!m.valid() && m.status().is_err());
}

fn seek_key(user: &[u8]) -> Vec<u8> {
    let mut t = Vec::new();
    append_internal_key(&mut t, user, MAX_SEQNO, KIND_SEEK);
    t
}

#[test]
fn an_observation_covers_the_current_key_and_its_older_versions() {
    // Memtable, level 1 (an older version of "c"), level 2.
    let mem = source(&[(b"x", 9)]);
    let l1 = source(&[(b"c", 5), (b"m", 6)]);
    let l2 = source(&[(b"a", 1), (b"c", 2), (b"d", 3)]);
    let mut m = MergingIterator::with_levels(
        vec![mem, l1, l2],
        vec![None, Some(Level(1)), Some(Level(2))],
    );
    m.seek(&seek_key(b"b"));
    assert_eq!(user_key(m.key()), b"c");
    let o = m.observation(None).expect("a pure forward scan");
    assert_eq!(o.lo, b"b");
    assert_eq!(o.hi.as_deref(), Some(&b"c\0"[..]), "[b, c] inclusive");
    assert_eq!(o.levels, 0b110, "level 2 holds the older version of c");
    // One step on: the current key is "c" again (level 2's version), then
    // "d"; "d" is only in level 2.
    m.next();
    m.next();
    assert_eq!(user_key(m.key()), b"d");
    let o = m.observation(None).expect("still forward");
    assert_eq!(o.hi.as_deref(), Some(&b"d\0"[..]));
    assert_eq!(o.levels, 0b110);
    // An upper bound at or before the current key caps the range and
    // leaves the current key's levels out.
    let o = m.observation(Some(b"d")).expect("forward");
    assert_eq!(o.hi.as_deref(), Some(&b"d"[..]));
    let mut only2 = MergingIterator::with_levels(
        vec![source(&[(b"m", 6)]), source(&[(b"a", 1), (b"d", 3)])],
        vec![Some(Level(1)), Some(Level(2))],
    );
    only2.seek(&seek_key(b"b"));
    let o = only2.observation(None).expect("forward");
    assert_eq!(o.levels, 0b100, "level 1 holds nothing in [b, d]");
    // Any other movement ends the observation.
    only2.prev();
    assert!(only2.observation(None).is_none());
}

/// A source whose point filter is exact (knows its user keys).
struct Filtered(Box<dyn InternalIterator>, Vec<Vec<u8>>);

impl InternalIterator for Filtered {
    fn valid(&self) -> bool {
        self.0.valid()
    }
    fn seek_to_first(&mut self) {
        self.0.seek_to_first()
    }
    fn seek_to_last(&mut self) {
        self.0.seek_to_last()
    }
    fn seek(&mut self, t: &[u8]) {
        self.0.seek(t)
    }
    fn seek_for_prev(&mut self, t: &[u8]) {
        self.0.seek_for_prev(t)
    }
    fn next(&mut self) {
        self.0.next()
    }
    fn prev(&mut self) {
        self.0.prev()
    }
    fn key(&self) -> &[u8] {
        self.0.key()
    }
    fn value(&self) -> &[u8] {
        self.0.value()
    }
    fn may_contain_user_key(&self, k: &[u8]) -> bool {
        self.1.iter().any(|x| x.as_slice() == k)
    }
    fn status(&self) -> Result<()> {
        self.0.status()
    }
}

fn filtered(keys: &[(&[u8], u64)], kind: ValueKind) -> Box<dyn InternalIterator> {
    let mut v: Vec<(Vec<u8>, Vec<u8>)> = keys
        .iter()
        .map(|(k, s)| (make_internal_key(k, *s, kind), s.to_le_bytes().to_vec()))
        .collect();
    v.sort_by(|a, b| compare_internal(&a.0, &b.0));
    let users = keys.iter().map(|(k, _)| k.to_vec()).collect();
    Box::new(Filtered(Box::new(VecIterator::new(Arc::new(v))), users))
}

/// Newest first: a memtable (no filter), two filtered sources.
fn three_sources(newest_kind: ValueKind) -> MergingIterator {
    MergingIterator::new(vec![
        source(&[(b"a", 30), (b"q", 31)]),
        filtered(&[(b"c", 20), (b"m", 21), (b"k", 40)], newest_kind),
        filtered(&[(b"c", 5), (b"d", 6), (b"m", 7)], ValueKind::Put),
    ])
}

fn user_keys_from(m: &mut MergingIterator, target: &[u8]) -> Vec<(Vec<u8>, u64)> {
    m.seek(&seek_key(target));
    let mut out = Vec::new();
    while m.valid() {
        out.push((user_key(m.key()).to_vec(), crate::key::seqno(m.key()).get()));
        m.next();
    }
    out
}

#[test]
fn point_first_seeks_only_up_to_the_visible_put_and_wakes_the_rest_after_it() {
    let mut full = three_sources(ValueKind::Put);
    let expected = user_keys_from(&mut full, b"c");
    let mut m = three_sources(ValueKind::Put);
    m.set_point_first(SeqNo(100));
    m.seek(&seek_key(b"c"));
    assert_eq!(
        m.child_seeks(),
        2,
        "the memtable and the source holding c; the older one waits"
    );
    assert_eq!(
        (user_key(m.key()), crate::key::seqno(m.key())),
        (&b"c"[..], SeqNo(20))
    );
    let mut m = three_sources(ValueKind::Put);
    m.set_point_first(SeqNo(100));
    // The older version of c, shadowed by the put the seek stopped at,
    // is merged in once the scan steps on.
    assert_eq!(user_keys_from(&mut m, b"c"), expected);
    assert_eq!(m.child_seeks(), 3, "the older source seeked once, after c");
}

#[test]
fn point_first_skips_sources_whose_filter_rules_the_key_out() {
    // "d" is only in the oldest source: the middle one is not seeked
    // (its filter says no), yet its "k" still shows up after "d".
    let mut full = three_sources(ValueKind::Put);
    let expected = user_keys_from(&mut full, b"d");
    let mut m = three_sources(ValueKind::Put);
    m.set_point_first(SeqNo(100));
    m.seek(&seek_key(b"d"));
    assert_eq!(m.child_seeks(), 2, "memtable and oldest");
    let mut m = three_sources(ValueKind::Put);
    m.set_point_first(SeqNo(100));
    assert_eq!(user_keys_from(&mut m, b"d"), expected);
}

#[test]
fn point_first_reads_every_source_without_a_visible_put() {
    for (kind, snapshot) in [
        (ValueKind::Delete, 100),
        (ValueKind::Merge, 100),
        (ValueKind::Put, 10),
    ] {
        let mut full = three_sources(kind);
        let expected = user_keys_from(&mut full, b"c");
        let mut m = three_sources(kind);
        m.set_point_first(SeqNo(snapshot));
        m.seek(&seek_key(b"c"));
        assert_eq!(m.child_seeks(), 3, "{kind:?} at {snapshot}");
        let mut m = three_sources(kind);
        m.set_point_first(SeqNo(snapshot));
        assert_eq!(user_keys_from(&mut m, b"c"), expected, "{kind:?}");
    }
    // A key no source holds: every source is seeked.
    let mut m = three_sources(ValueKind::Put);
    m.set_point_first(SeqNo(100));
    m.seek(&seek_key(b"e"));
    assert_eq!(m.child_seeks(), 3);
    assert_eq!(user_key(m.key()), b"k");
}

#[test]
fn point_first_never_lets_an_observation_vouch_for_an_unread_level() {
    let mut m = MergingIterator::with_levels(
        vec![
            source(&[(b"z", 9)]),
            filtered(&[(b"c", 20)], ValueKind::Put),
            filtered(&[(b"c", 5)], ValueKind::Put),
        ],
        vec![None, Some(Level(1)), Some(Level(2))],
    );
    m.set_point_first(SeqNo(100));
    m.seek(&seek_key(b"c"));
    assert_eq!(m.child_seeks(), 2);
    let o = m.observation(None).expect("a forward scan");
    assert_eq!(o.levels, 0b110, "level 2 was not read, so it counts");
}

#[test]
fn merging_iterator_switches_direction_anywhere() {
    let a = source(&[(b"a", 1), (b"c", 3), (b"e", 5)]);
    let b = source(&[(b"b", 2), (b"c", 9), (b"d", 4)]);
    let mut m = MergingIterator::new(vec![a, b]);
    let mut all = Vec::new();
    m.seek_to_first();
    while m.valid() {
        all.push(m.key().to_vec());
        m.next();
    }
    assert_eq!(all.len(), 6);
    for w in all.windows(2) {
        assert_eq!(compare_internal(&w[0], &w[1]), Ordering::Less);
    }
    // From every position, one step forward then back returns to it.
    for (i, k) in all.iter().enumerate() {
        m.seek(k);
        assert_eq!(m.key(), &k[..]);
        m.prev();
        if i == 0 {
            assert!(!m.valid());
            continue;
        }
        assert_eq!(m.key(), &all[i - 1][..]);
        m.next();
        assert_eq!(m.key(), &k[..]);
    }
    m.seek_for_prev(&all[3]);
    assert_eq!(m.key(), &all[3][..]);
    m.seek_to_last();
    assert_eq!(m.key(), &all[5][..]);
}
