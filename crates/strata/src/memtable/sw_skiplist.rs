//! A single-writer, multi-reader sorted list with skiplist towers of at most
//! `H` levels: the building block of the hash representations' buckets.
//!
//! With `H = 1` it is a sorted singly linked list (hash-linklist buckets);
//! with `H = 4` a small skiplist of branching factor 4 (hash-skiplist buckets,
//! RocksDB's defaults for `NewHashSkipListRepFactory`).
//!
//! Concurrency: inserts must be serialised by the caller (the owning
//! representation holds a writer mutex); readers run concurrently without
//! locks. A node is fully initialised before it is published with a release
//! store, linked bottom-up, and never unlinked or freed until the list is
//! dropped (which needs `&mut self`, so no reader can be active).

use std::cmp::Ordering;
use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering as AtomicOrdering};

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
        // SAFETY: published nodes are never freed before the list drops, and
        // `&self` borrows the list through the node.
        unsafe { p.as_ref() }
    }
}

/// The list. See the module documentation for the concurrency contract.
pub(crate) struct SwSkipList<const H: usize> {
    head: [AtomicPtr<Node<H>>; H],
    len: AtomicUsize,
    _owns: PhantomData<Box<Node<H>>>,
}

impl<const H: usize> SwSkipList<H> {
    /// An empty list.
    pub(crate) fn new() -> Self {
        SwSkipList {
            head: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            len: AtomicUsize::new(0),
            _owns: PhantomData,
        }
    }

    /// Entries held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len.load(AtomicOrdering::Acquire)
    }

    /// Bytes of one node (for memory accounting).
    pub(crate) const NODE_BYTES: usize = std::mem::size_of::<Node<H>>();

    /// Inserts `entry` with a tower of `height` levels (clamped to `1..=H`).
    ///
    /// # Safety
    ///
    /// Calls to `insert` on one list must not overlap: the caller serialises
    /// writers (readers may run concurrently).
    pub(crate) unsafe fn insert(&self, entry: SharedEntry, height: usize) {
        let height = height.clamp(1, H);
        // Find, at each level, the last tower whose node sorts before `entry`.
        let mut preds: [&[AtomicPtr<Node<H>>; H]; H] = [&self.head; H];
        let mut x: &[AtomicPtr<Node<H>>; H] = &self.head;
        for level in (0..H).rev() {
            loop {
                let n = x[level].load(AtomicOrdering::Acquire);
                // SAFETY: published nodes live until the list drops.
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
        let node = Box::new(Node {
            entry,
            next: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
        });
        for (level, (link, pred)) in node.next.iter().zip(preds.iter()).enumerate().take(height) {
            link.store(
                pred[level].load(AtomicOrdering::Relaxed),
                AtomicOrdering::Relaxed,
            );
        }
        let p = Box::into_raw(node);
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
        // SAFETY: published nodes live until the list drops.
        unsafe { p.as_ref() }
    }

    /// The first node whose key is `>= target`.
    pub(crate) fn lower_bound(&self, target: &[u8]) -> Option<&Node<H>> {
        let mut x: &[AtomicPtr<Node<H>>; H] = &self.head;
        for level in (0..H).rev() {
            loop {
                let n = x[level].load(AtomicOrdering::Acquire);
                // SAFETY: published nodes live until the list drops.
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

impl<const H: usize> Drop for SwSkipList<H> {
    fn drop(&mut self) {
        // Every node is linked at level 0, exactly once.
        let mut p = *self.head[0].get_mut();
        while !p.is_null() {
            // SAFETY: `p` came from `Box::into_raw` in `insert` and is
            // reachable only through this list, which no one else can use now.
            let mut node = unsafe { Box::from_raw(p) };
            p = *node.next[0].get_mut();
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
        let l = SwSkipList::<H>::new();
        let mut want = Vec::new();
        let mut h = 1usize;
        for i in [5u64, 1, 9, 3, 7, 2, 8, 4, 6, 0] {
            let k = make_internal_key(format!("k{}", i % 4).as_bytes(), i, ValueKind::Put);
            h = h % 4 + 1;
            // SAFETY: single-threaded test.
            unsafe { l.insert(SharedEntry::new(&k, b"v"), h) };
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
