//! A single-writer, multi-reader sorted list with skiplist towers of at most
//! `H` levels: the building block of the hash representations' buckets.
//!
//! With `H = 1` it is a sorted singly linked list (hash-linklist buckets);
//! with `H = 4` a small skiplist of branching factor 4 (hash-skiplist buckets,
//! RocksDB's defaults for `NewHashSkipListRepFactory`).
//!
//! Nodes live in the owning representation's [`Arena`]; a new entry's bytes
//! follow its node in the same piece, so a step along the list touches one
//! place in memory, not two.
//!
//! Concurrency: inserts must be serialised by the caller (the owning
//! representation holds a writer mutex); readers run concurrently without
//! locks. A node is fully initialised before it is published with a release
//! store, linked bottom-up, and never unlinked; its memory goes with the
//! arena, which the owner keeps alive while any reader can reach the list.

use std::cmp::Ordering;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering as AtomicOrdering};

use super::arena::Arena;
use super::entry::SharedEntry;
use crate::key::compare_internal;

/// One node: an entry and its tower of `H` forward pointers (only the lowest
/// `height` are linked).
pub(crate) struct Node<const H: usize> {
    entry: SharedEntry,
    next: [AtomicPtr<Node<H>>; H],
}

impl<const H: usize> Node<H> {
    /// The entry held.
    #[inline]
    pub(crate) fn entry(&self) -> &SharedEntry {
        &self.entry
    }

    /// The next node at level 0.
    #[inline]
    pub(crate) fn next(&self) -> Option<&Node<H>> {
        let p = self.next[0].load(AtomicOrdering::Acquire);
        // SAFETY: published nodes live as long as the arena, which the owner
        // keeps alive while `&self` (a node of the list) is borrowed.
        unsafe { p.as_ref() }
    }
}

/// The list. See the module documentation for the concurrency contract.
pub(crate) struct SwSkipList<const H: usize> {
    head: [AtomicPtr<Node<H>>; H],
    len: AtomicUsize,
}

impl<const H: usize> SwSkipList<H> {
    /// An empty list.
    pub(crate) fn new() -> Self {
        SwSkipList {
            head: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            len: AtomicUsize::new(0),
        }
    }

    /// Entries held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len.load(AtomicOrdering::Acquire)
    }

    /// Copies a new entry into `arena`, right after its node, and inserts
    /// it with a tower of `height` levels (clamped to `1..=H`).
    ///
    /// # Safety
    ///
    /// As for [`SwSkipList::insert`].
    pub(crate) unsafe fn insert_new(
        &self,
        arena: &Arena,
        ikey: &[u8],
        value: &[u8],
        height: usize,
    ) {
        let node_bytes = std::mem::size_of::<Node<H>>();
        let base = arena.alloc(node_bytes + SharedEntry::size(ikey.len(), value.len()));
        // SAFETY: the piece holds the node (aligned: pieces are 8-aligned and
        // a node is pointers) followed by the entry's bytes.
        let entry = unsafe { SharedEntry::write(base.as_ptr().add(node_bytes), ikey, value) };
        // SAFETY: forwarded from the caller; the node's place is unused.
        unsafe { self.link(base.as_ptr() as *mut Node<H>, entry, height) };
    }

    /// Inserts `entry` (already in `arena`) with a tower of `height` levels
    /// (clamped to `1..=H`).
    ///
    /// # Safety
    ///
    /// Calls that insert into one list must not overlap: the caller
    /// serialises writers (readers may run concurrently). `arena` must be
    /// the one the owner keeps alive for this list's readers.
    pub(crate) unsafe fn insert(&self, arena: &Arena, entry: SharedEntry, height: usize) {
        let p = arena.alloc(std::mem::size_of::<Node<H>>());
        // SAFETY: forwarded from the caller; the piece fits a node.
        unsafe { self.link(p.as_ptr() as *mut Node<H>, entry, height) };
    }

    /// Writes a node holding `entry` at `p` and links it.
    ///
    /// # Safety
    ///
    /// `p` must be an unused, aligned piece of the owner's arena big enough
    /// for a node; writers serialised as for [`SwSkipList::insert`].
    unsafe fn link(&self, p: *mut Node<H>, entry: SharedEntry, height: usize) {
        let height = height.clamp(1, H);
        // Find, at each level, the last tower whose node sorts before `entry`.
        let mut preds: [&[AtomicPtr<Node<H>>; H]; H] = [&self.head; H];
        let mut x: &[AtomicPtr<Node<H>>; H] = &self.head;
        for level in (0..H).rev() {
            loop {
                let n = x[level].load(AtomicOrdering::Acquire);
                // SAFETY: published nodes live as long as the arena, which the
                // owner keeps alive while the list can be read.
                let Some(node) = (unsafe { n.as_ref() }) else {
                    break;
                };
                if compare_internal(node.entry.key(), entry.key()) == Ordering::Less {
                    x = &node.next;
                } else {
                    break;
                }
            }
            preds[level] = x;
        }
        // SAFETY: the caller hands over an unused piece that fits the node.
        unsafe {
            ptr::write(
                p,
                Node {
                    entry,
                    next: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
                },
            )
        };
        // SAFETY: just written; not yet visible to anyone else.
        let node = unsafe { &*p };
        for (level, (link, pred)) in node.next.iter().zip(preds.iter()).enumerate().take(height) {
            link.store(
                pred[level].load(AtomicOrdering::Relaxed),
                AtomicOrdering::Relaxed,
            );
        }
        // Publish bottom-up: a reader that reaches the node at any level finds
        // its lower links already set. The release stores make the node's
        // contents visible to readers that load the pointer with acquire.
        for (level, pred) in preds.iter().enumerate().take(height) {
            pred[level].store(p, AtomicOrdering::Release);
        }
        self.len.fetch_add(1, AtomicOrdering::Release);
    }

    /// The first node.
    pub(crate) fn first(&self) -> Option<&Node<H>> {
        let p = self.head[0].load(AtomicOrdering::Acquire);
        // SAFETY: published nodes live as long as the arena, which the
        // owner keeps alive while the list can be read.
        unsafe { p.as_ref() }
    }

    /// The first node whose key is `>= target`.
    pub(crate) fn lower_bound(&self, target: &[u8]) -> Option<&Node<H>> {
        let mut x: &[AtomicPtr<Node<H>>; H] = &self.head;
        for level in (0..H).rev() {
            loop {
                let n = x[level].load(AtomicOrdering::Acquire);
                // SAFETY: published nodes live as long as the arena, which the
                // owner keeps alive while the list can be read.
                let Some(node) = (unsafe { n.as_ref() }) else {
                    break;
                };
                if compare_internal(node.entry.key(), target) == Ordering::Less {
                    x = &node.next;
                } else {
                    break;
                }
            }
        }
        let p = x[0].load(AtomicOrdering::Acquire);
        // SAFETY: as above.
        unsafe { p.as_ref() }
    }

    /// Calls `f` on every entry in order.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&SharedEntry)) {
        let mut cur = self.first();
        while let Some(n) = cur {
            f(&n.entry);
            cur = n.next();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, make_internal_key};

    fn keys<const H: usize>(l: &SwSkipList<H>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        l.for_each(|e| out.push(e.key().to_vec()));
        out
    }

    fn check<const H: usize>() {
        let arena = Arena::new(4096);
        let l = SwSkipList::<H>::new();
        let mut want = Vec::new();
        let mut h = 1usize;
        for i in [5u64, 1, 9, 3, 7, 2, 8, 4, 6, 0] {
            let k = make_internal_key(format!("k{}", i % 4).as_bytes(), i, ValueKind::Put);
            h = h % 4 + 1;
            // SAFETY: single-threaded test.
            unsafe {
                if i % 2 == 0 {
                    l.insert_new(&arena, &k, b"v", h);
                } else {
                    l.insert(&arena, SharedEntry::new_in(&arena, &k, b"v"), h);
                }
            };
            want.push(k);
        }
        want.sort_by(|a, b| compare_internal(a, b));
        assert_eq!(keys(&l), want);
        assert_eq!(l.len(), want.len());
        for w in &want {
            assert_eq!(
                l.lower_bound(w).map(|n| n.entry().key().to_vec()),
                Some(w.clone())
            );
        }
        let past = make_internal_key(b"zzz", 1, ValueKind::Put);
        assert!(l.lower_bound(&past).is_none());
    }

    #[test]
    fn single_writer_list_stays_sorted() {
        check::<1>();
        check::<4>();
    }
}
