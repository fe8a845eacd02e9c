//! The default representation: a lock-free concurrent skiplist (crossbeam).
//!
//! Reads and iterators walk the live structure: a point read costs
//! `O(log n)`, an iterator is created in `O(1)` and sees entries inserted
//! after its creation (readers filter by sequence number).

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use crossbeam_skiplist::SkipSet;

use super::entry::alloc_size;
use super::{MemTableRep, MemUsage};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::compare_internal;

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

/// Expected bytes of a crossbeam skiplist node holding a [`SkipEntry`]:
/// the boxed-slice fat pointer (16 bytes), the reference count and height
/// word (8) and a tower of `h` pointers, where crossbeam draws `h` as one
/// plus the trailing zeros of a random word (`P(h) = 2^-h`, mean 2). Each
/// height's allocation is rounded by [`alloc_size`] and weighted by its
/// probability.
const fn expected_node_bytes() -> usize {
    let fixed = std::mem::size_of::<Box<[u8]>>() + std::mem::size_of::<usize>();
    // Sum in units of 2^-32 to stay in integers.
    let mut total: u128 = 0;
    let mut h = 1;
    while h <= 32 {
        let weight: u128 = if h < 32 { 1u128 << (32 - h) } else { 1 };
        total += weight * alloc_size(fixed + 8 * h) as u128;
        h += 1;
    }
    (total >> 32) as usize + 1
}

/// Bytes of one entry's node (estimated, see [`expected_node_bytes`]).
const SKIPLIST_NODE_BYTES: usize = expected_node_bytes();

/// Metadata of one entry with `payload` key and value bytes: its node and
/// the entry allocation's length prefix, header and rounding.
#[inline]
fn entry_overhead(payload: usize) -> usize {
    SKIPLIST_NODE_BYTES + alloc_size(4 + payload) - payload
}

/// A lock-free skiplist (crossbeam) of `SkipEntry`s.
pub struct SkipListRep {
    set: SkipSet<SkipEntry>,
    entry_bytes: AtomicUsize,
    metadata_bytes: AtomicUsize,
    len: AtomicUsize,
}

impl SkipListRep {
    /// An empty skiplist.
    pub fn new() -> Self {
        SkipListRep {
            set: SkipSet::new(),
            entry_bytes: AtomicUsize::new(0),
            // The set's head (a 32-level tower) and hot data live in the
            // representation itself.
            metadata_bytes: AtomicUsize::new(std::mem::size_of::<SkipListRep>()),
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
        let payload = internal_key.len() + value.len();
        self.entry_bytes.fetch_add(payload, AtomicOrdering::Relaxed);
        self.metadata_bytes
            .fetch_add(entry_overhead(payload), AtomicOrdering::Relaxed);
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
        MemUsage {
            entry_bytes: self.entry_bytes.load(AtomicOrdering::Relaxed),
            metadata_bytes: self.metadata_bytes.load(AtomicOrdering::Relaxed),
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
        e.map(|e| unsafe {
            std::mem::transmute::<crossbeam_skiplist::set::Entry<'_, SkipEntry>, SetEntry>(e)
        })
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
        self.cur = self.extend(
            self.rep
                .set
                .lower_bound(Bound::Included(KeyRef::new(target))),
        );
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.cur = self.extend(
            self.rep
                .set
                .upper_bound(Bound::Included(KeyRef::new(target))),
        );
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
