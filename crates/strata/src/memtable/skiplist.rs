//! The default representation: a lock-free concurrent skiplist (crossbeam).
//!
//! Reads and iterators walk the live structure: a point read costs
//! `O(log n)`, an iterator is created in `O(1)` and sees entries inserted
//! after its creation (readers filter by sequence number).

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use crossbeam_skiplist::SkipSet;

use super::entry::alloc_size;
use super::{MemTableRep, MemUsage};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{compare_internal, user_key};

/// An entry of the skiplist: the first eight bytes of its user key (for
/// comparisons that need not leave the node) and one allocation holding
/// `key_len: u32 LE | internal key | value`.
///
/// A search compares the sought key with a node at every step; with the
/// key behind a pointer, each step costs two cache misses (node, then
/// entry). Most comparisons are decided by the prefix kept in the node, so
/// the entry is read only on a prefix tie. (perf showed crossbeam's
/// `search_position` at a third of the CPU of a 5M-key `fillrandom`.)
struct SkipEntry {
    prefix: u64,
    data: Box<[u8]>,
}

/// The first eight bytes of a user key, big-endian, zero-padded. Where two
/// prefixes differ they order the keys as a bytewise comparison does (a
/// padded zero is never above the other key's byte there unless the keys
/// tie on it), so only equal prefixes need the full comparison.
#[inline]
fn key_prefix(user: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = user.len().min(8);
    b[..n].copy_from_slice(&user[..n]);
    u64::from_be_bytes(b)
}

impl SkipEntry {
    fn new(ikey: &[u8], value: &[u8]) -> Self {
        let mut v = Vec::with_capacity(4 + ikey.len() + value.len());
        // Keys are at most 64 KiB plus the trailer (checked at the write path).
        v.extend_from_slice(&(ikey.len() as u32).to_le_bytes());
        v.extend_from_slice(ikey);
        v.extend_from_slice(value);
        SkipEntry {
            prefix: key_prefix(user_key(ikey)),
            data: v.into_boxed_slice(),
        }
    }

    /// A search key (an internal key without a value).
    fn probe(ikey: &[u8]) -> Self {
        Self::new(ikey, &[])
    }

    #[inline]
    fn key_len(&self) -> usize {
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.data[..4]);
        u32::from_le_bytes(b) as usize
    }

    #[inline]
    fn key(&self) -> &[u8] {
        &self.data[4..4 + self.key_len()]
    }

    #[inline]
    fn value(&self) -> &[u8] {
        &self.data[4 + self.key_len()..]
    }
}

impl PartialEq for SkipEntry {
    fn eq(&self, other: &Self) -> bool {
        self.prefix == other.prefix && self.key() == other.key()
    }
}
impl Eq for SkipEntry {}
impl PartialOrd for SkipEntry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for SkipEntry {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        self.prefix
            .cmp(&other.prefix)
            .then_with(|| compare_internal(self.key(), other.key()))
    }
}

/// Expected bytes of a crossbeam skiplist node holding a [`SkipEntry`]:
/// the entry (prefix and boxed-slice fat pointer, 24 bytes), the reference count and height
/// word (8) and a tower of `h` pointers, where crossbeam draws `h` as one
/// plus the trailing zeros of a random word (`P(h) = 2^-h`, mean 2). Each
/// height's allocation is rounded by [`alloc_size`] and weighted by its
/// probability.
const fn expected_node_bytes() -> usize {
    let fixed = std::mem::size_of::<SkipEntry>() + std::mem::size_of::<usize>();
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
        let probe = SkipEntry::probe(seek_key);
        let mut cur = self.set.lower_bound(Bound::Included(&probe));
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
        let probe = SkipEntry::probe(target);
        self.cur = self.extend(self.rep.set.lower_bound(Bound::Included(&probe)));
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let probe = SkipEntry::probe(target);
        self.cur = self.extend(self.rep.set.upper_bound(Bound::Included(&probe)));
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
    use crate::key::{ValueKind, make_internal_key};

    /// Every user key of up to `max_len` bytes over a small alphabet that
    /// includes zero (padding ties) and 0xff.
    fn keys(max_len: usize) -> Vec<Vec<u8>> {
        let mut out = vec![Vec::new()];
        let mut frontier = vec![Vec::new()];
        for _ in 0..max_len {
            let mut next = Vec::new();
            for k in &frontier {
                for b in [0u8, 1, 0xff] {
                    let mut k2: Vec<u8> = k.clone();
                    k2.push(b);
                    next.push(k2);
                }
            }
            out.extend(next.iter().cloned());
            frontier = next;
        }
        out
    }

    #[test]
    fn prefix_order_agrees_with_the_internal_key_order() {
        // Keys around the 8-byte prefix boundary: 7 to 10 bytes sharing a
        // stem, plus every short key.
        let mut users = keys(3);
        for tail in keys(3) {
            let mut k = b"stem-ab".to_vec();
            k.extend_from_slice(&tail);
            users.push(k);
        }
        let entries: Vec<(Vec<u8>, SkipEntry)> = users
            .iter()
            .flat_map(|u| {
                [1u64, 7].map(|s| {
                    let ik = make_internal_key(u, s, ValueKind::Put);
                    let e = SkipEntry::new(&ik, b"v");
                    (ik, e)
                })
            })
            .collect();
        for (ka, a) in &entries {
            for (kb, b) in &entries {
                assert_eq!(a.cmp(b), compare_internal(ka, kb), "{ka:?} vs {kb:?}");
            }
        }
    }

    #[test]
    fn seeks_find_entries_with_equal_prefixes() {
        let rep = Arc::new(SkipListRep::new());
        for (i, u) in [
            &b"aaaaaaaa1"[..],
            b"aaaaaaaa2",
            b"aaaaaaaa",
            b"aaaaaaa",
            b"b",
        ]
        .iter()
        .enumerate()
        {
            rep.insert(&make_internal_key(u, i as u64 + 1, ValueKind::Put), b"v");
        }
        let mut it = Arc::clone(&rep).iter();
        it.seek(&make_internal_key(
            b"aaaaaaaa",
            crate::key::MAX_SEQNO,
            ValueKind::Put,
        ));
        assert_eq!(user_key(it.key()), b"aaaaaaaa");
        it.next();
        assert_eq!(user_key(it.key()), b"aaaaaaaa1");
        it.seek_for_prev(&make_internal_key(b"aaaaaaaa0", 0, ValueKind::Put));
        assert_eq!(user_key(it.key()), b"aaaaaaaa");
        let mut seen = Vec::new();
        rep.get(
            &make_internal_key(b"aaaaaaa", crate::key::MAX_SEQNO, ValueKind::Put),
            &mut |k, _| {
                seen.push(user_key(k).to_vec());
                seen.len() < 2
            },
        );
        assert_eq!(seen, [b"aaaaaaa".to_vec(), b"aaaaaaaa".to_vec()]);
    }
}
