//! Memtables: the in-memory write buffer of a keyspace.
//!
//! A [`MemTable`] wraps a [`MemTableRep`], the data structure that actually
//! holds entries. Representations differ in insert, lookup and scan cost
//! (see the memory-buffer study, seed 003); every one stores internal keys
//! (user key + trailer, see [`crate::key`]) and must iterate them in
//! [`compare_internal`] order.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::ops::Bound;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};

use crossbeam_skiplist::SkipSet;

use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{SeqNo, compare_internal};

/// Bytes a memtable holds, split into entry payload and structure overhead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemUsage {
    /// Internal keys plus values.
    pub entry_bytes: usize,
    /// Everything else: nodes, pointers, allocation headers, buckets.
    pub metadata_bytes: usize,
}

impl MemUsage {
    /// Entry and metadata bytes together.
    pub fn total(&self) -> usize {
        self.entry_bytes + self.metadata_bytes
    }
}

/// A memtable data structure. Inserts may come from one writer at a time
/// (the write-group leader); reads and iterators run concurrently with it.
pub trait MemTableRep: Send + Sync {
    /// Inserts an entry. Internal keys are unique (each carries its own
    /// sequence number).
    fn insert(&self, internal_key: &[u8], value: &[u8]);
    /// Calls `f` on entries from the first one `>= seek_key` onwards, in
    /// order, until `f` returns false or the entries end.
    fn get(&self, seek_key: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool);
    /// An iterator over every entry.
    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator>;
    /// Memory held.
    fn memory_usage(&self) -> MemUsage;
    /// Number of entries.
    fn len(&self) -> usize;
    /// True when empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Called once when the memtable stops taking writes.
    fn freeze(&self) {}
}

/// The memtable representations Strata offers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemTableKind {
    /// A concurrent skiplist: good at everything, best at range scans.
    #[default]
    SkipList,
}

impl MemTableKind {
    /// Every kind, for tests and benchmarks that run the whole family.
    pub const ALL: &'static [MemTableKind] = &[MemTableKind::SkipList];

    /// The name used in options, flags and benchmark output.
    pub fn name(&self) -> &'static str {
        match self {
            MemTableKind::SkipList => "skiplist",
        }
    }

    /// Checks that the kind's own options are usable.
    pub fn validate(&self) -> Result<()> {
        Ok(())
    }

    /// Creates an empty representation of this kind.
    pub fn create(&self) -> Arc<dyn MemTableRep> {
        match self {
            MemTableKind::SkipList => Arc::new(SkipListRep::new()),
        }
    }
}

impl fmt::Display for MemTableKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for MemTableKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        MemTableKind::ALL
            .iter()
            .copied()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = MemTableKind::ALL.iter().map(|k| k.name()).collect();
                Error::InvalidArgument(format!(
                    "unknown memtable kind {s:?} (known: {})",
                    names.join(", ")
                ))
            })
    }
}

/// A write buffer with its bookkeeping.
pub struct MemTable {
    rep: Arc<dyn MemTableRep>,
    /// Unique id (for retention and stats).
    pub id: u64,
    /// The first write-ahead log that may hold this memtable's entries.
    pub log_number: u64,
    largest_seqno: AtomicU64,
    deletions: AtomicUsize,
}

impl MemTable {
    /// An empty memtable of `kind`.
    pub fn new(kind: MemTableKind, id: u64, log_number: u64) -> Self {
        MemTable {
            rep: kind.create(),
            id,
            log_number,
            largest_seqno: AtomicU64::new(0),
            deletions: AtomicUsize::new(0),
        }
    }

    /// Adds one entry.
    pub fn add(&self, internal_key: &[u8], value: &[u8], seqno: SeqNo, is_delete: bool) {
        self.rep.insert(internal_key, value);
        self.largest_seqno.fetch_max(seqno, AtomicOrdering::Relaxed);
        if is_delete {
            self.deletions.fetch_add(1, AtomicOrdering::Relaxed);
        }
    }

    /// See [`MemTableRep::get`].
    pub fn get(&self, seek_key: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) {
        self.rep.get(seek_key, f);
    }

    /// An iterator over every entry.
    pub fn iter(&self) -> Box<dyn InternalIterator> {
        Arc::clone(&self.rep).iter()
    }

    /// Memory held by the representation.
    pub fn memory_usage(&self) -> MemUsage {
        self.rep.memory_usage()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.rep.len()
    }

    /// True when no entry has been added.
    pub fn is_empty(&self) -> bool {
        self.rep.is_empty()
    }

    /// Largest sequence number added.
    pub fn largest_seqno(&self) -> SeqNo {
        self.largest_seqno.load(AtomicOrdering::Relaxed)
    }

    /// Marks the memtable immutable.
    pub fn freeze(&self) {
        self.rep.freeze();
    }
}

// ---------------------------------------------------------------------------
// Skiplist representation.

/// An entry of the skiplist: one allocation holding
/// `key_len: u32 LE | internal key | value`.
struct SkipEntry(Box<[u8]>);

impl SkipEntry {
    fn new(ikey: &[u8], value: &[u8]) -> Self {
        let mut v = Vec::with_capacity(4 + ikey.len() + value.len());
        // Keys are at most 64 KiB plus the trailer (checked at the write path).
        v.extend_from_slice(&(ikey.len() as u32).to_le_bytes());
        v.extend_from_slice(ikey);
        v.extend_from_slice(value);
        SkipEntry(v.into_boxed_slice())
    }

    #[inline]
    fn key_len(&self) -> usize {
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.0[..4]);
        u32::from_le_bytes(b) as usize
    }

    #[inline]
    fn key(&self) -> &[u8] {
        &self.0[4..4 + self.key_len()]
    }

    #[inline]
    fn value(&self) -> &[u8] {
        &self.0[4 + self.key_len()..]
    }
}

/// An internal key, ordered by [`compare_internal`], that skiplist lookups
/// borrow entries as.
#[repr(transparent)]
struct KeyRef([u8]);

impl KeyRef {
    #[inline]
    fn new(b: &[u8]) -> &KeyRef {
        // SAFETY: KeyRef is repr(transparent) over [u8], so the pointer cast
        // keeps layout and lifetime.
        unsafe { &*(b as *const [u8] as *const KeyRef) }
    }
}

impl PartialEq for KeyRef {
    fn eq(&self, other: &Self) -> bool {
        compare_internal(&self.0, &other.0) == Ordering::Equal
    }
}
impl Eq for KeyRef {}
impl PartialOrd for KeyRef {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for KeyRef {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_internal(&self.0, &other.0)
    }
}

impl Borrow<KeyRef> for SkipEntry {
    fn borrow(&self) -> &KeyRef {
        KeyRef::new(self.key())
    }
}
impl PartialEq for SkipEntry {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for SkipEntry {}
impl PartialOrd for SkipEntry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for SkipEntry {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_internal(self.key(), other.key())
    }
}

/// Estimated overhead of one skiplist entry beyond key and value: the
/// crossbeam node (header, refcount, tower of 1.33 pointers on average), the
/// boxed-slice fat pointer, the 4-byte length prefix, and two allocator
/// headers (node and entry).
const SKIPLIST_ENTRY_OVERHEAD: usize = 32 + 11 + 16 + 4 + 32;

/// A lock-free skiplist (crossbeam) of [`SkipEntry`]s.
pub struct SkipListRep {
    set: SkipSet<SkipEntry>,
    entry_bytes: AtomicUsize,
    len: AtomicUsize,
}

impl SkipListRep {
    /// An empty skiplist.
    pub fn new() -> Self {
        SkipListRep {
            set: SkipSet::new(),
            entry_bytes: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
        }
    }
}

impl Default for SkipListRep {
    fn default() -> Self {
        Self::new()
    }
}

impl MemTableRep for SkipListRep {
    fn insert(&self, internal_key: &[u8], value: &[u8]) {
        self.set.insert(SkipEntry::new(internal_key, value));
        self.entry_bytes
            .fetch_add(internal_key.len() + value.len(), AtomicOrdering::Relaxed);
        self.len.fetch_add(1, AtomicOrdering::Relaxed);
    }

    fn get(&self, seek_key: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) {
        let mut cur = self.set.lower_bound(Bound::Included(KeyRef::new(seek_key)));
        while let Some(e) = cur {
            let entry = e.value();
            if !f(entry.key(), entry.value()) {
                return;
            }
            cur = e.next();
        }
    }

    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
        Box::new(SkipListIter {
            cur: None,
            rep: self,
        })
    }

    fn memory_usage(&self) -> MemUsage {
        let n = self.len.load(AtomicOrdering::Relaxed);
        MemUsage {
            entry_bytes: self.entry_bytes.load(AtomicOrdering::Relaxed),
            metadata_bytes: n * SKIPLIST_ENTRY_OVERHEAD,
        }
    }

    fn len(&self) -> usize {
        self.len.load(AtomicOrdering::Relaxed)
    }
}

type SetEntry = crossbeam_skiplist::set::Entry<'static, SkipEntry>;

/// Iterator over a [`SkipListRep`].
struct SkipListIter {
    // Declared before `rep` so it is dropped first: the entry refers into the
    // set that `rep` keeps alive.
    cur: Option<SetEntry>,
    rep: Arc<SkipListRep>,
}

impl SkipListIter {
    fn extend(&self, e: Option<crossbeam_skiplist::set::Entry<'_, SkipEntry>>) -> Option<SetEntry> {
        // SAFETY: the entry borrows `self.rep.set`, which lives as long as the
        // Arc held in `self.rep`; `cur` is dropped before `rep` (field order)
        // and never handed out, so the extended lifetime is never observed
        // beyond the set's life. Crossbeam entries hold a node reference
        // count, so the node itself stays valid while the entry exists.
        e.map(|e| unsafe { std::mem::transmute::<crossbeam_skiplist::set::Entry<'_, SkipEntry>, SetEntry>(e) })
    }
}

impl InternalIterator for SkipListIter {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn seek_to_first(&mut self) {
        self.cur = self.extend(self.rep.set.front());
    }
    fn seek_to_last(&mut self) {
        self.cur = self.extend(self.rep.set.back());
    }
    fn seek(&mut self, target: &[u8]) {
        self.cur = self
            .extend(self.rep.set.lower_bound(Bound::Included(KeyRef::new(target))));
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.cur = self
            .extend(self.rep.set.upper_bound(Bound::Included(KeyRef::new(target))));
    }
    fn next(&mut self) {
        self.cur = self.cur.as_ref().and_then(|e| e.next());
    }
    fn prev(&mut self) {
        self.cur = self.cur.as_ref().and_then(|e| e.prev());
    }
    fn key(&self) -> &[u8] {
        match &self.cur {
            Some(e) => e.value().key(),
            None => &[],
        }
    }
    fn value(&self) -> &[u8] {
        match &self.cur {
            Some(e) => e.value().value(),
            None => &[],
        }
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, make_internal_key, make_seek_key};

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
    fn skiplist_iterates_in_internal_order_both_ways() {
        for kind in MemTableKind::ALL {
            let m = MemTable::new(*kind, 1, 1);
            let mut keys = Vec::new();
            for (i, k) in [b"b".as_ref(), b"a", b"c", b"b", b""].iter().enumerate() {
                let ik = make_internal_key(k, i as u64 + 1, ValueKind::Put);
                m.add(&ik, b"v", i as u64 + 1, false);
                keys.push(ik);
            }
            keys.sort_by(|a, b| compare_internal(a, b));
            let mut it = m.iter();
            assert_eq!(collect(it.as_mut()), keys);
            it.seek_to_last();
            let mut back = Vec::new();
            while it.valid() {
                back.push(it.key().to_vec());
                it.prev();
            }
            back.reverse();
            assert_eq!(back, keys);
        }
    }

    #[test]
    fn get_starts_at_newest_visible_version() {
        let m = MemTable::new(MemTableKind::SkipList, 1, 1);
        m.add(&make_internal_key(b"k", 3, ValueKind::Put), b"three", 3, false);
        m.add(&make_internal_key(b"k", 7, ValueKind::Put), b"seven", 7, false);
        let mut seen = Vec::new();
        m.get(&make_seek_key(b"k", 5), &mut |k, v| {
            seen.push((k.to_vec(), v.to_vec()));
            false
        });
        assert_eq!(seen[0].1, b"three");
        assert_eq!(m.largest_seqno(), 7);
        let u = m.memory_usage();
        assert_eq!(u.entry_bytes, 2 * 9 + 5 + 5);
        assert!(u.metadata_bytes > 0);
    }

    #[test]
    fn unknown_kind_name_is_a_clear_error() {
        let e = "btree".parse::<MemTableKind>().expect_err("unknown kind");
        assert!(e.to_string().contains("skiplist"), "{e}");
    }
}
