//! A single-writer, multi-reader sorted list with skiplist towers of at most
//! `H` levels: the building block of the hash representations' buckets.
//!
//! With `H = 1` it is a sorted singly linked list (hash-linklist buckets);
//! with `H = 4` a small skiplist of branching factor 4 (hash-skiplist buckets,
//! RocksDB's defaults for `NewHashSkipListRepFactory`).
//!
//! A [`SwSkipList`] is a view over a head tower the owner keeps where it
//! likes: a bucket in the arena, or (for a one-level list) the hash slot
//! itself, so that a point read goes from the slot straight to the first
//! node. The owner also keeps the length, if it needs one.
//!
//! Nodes have the layout of the default skiplist's ([`super::skiplist`]): one
//! arena piece per entry, the node's tower of forward pointers (only as many
//! as its height) just before the entry's bytes. A step along a bucket reads
//! `next[0]` and the key prefix from one place in memory, with no pointer to
//! follow in between, and a node of height 1 costs one pointer.
//!
//! Concurrency: inserts must be serialised by the caller (the owning
//! representation holds a writer mutex); readers run concurrently without
//! locks. A node is fully written before it is published with a release
//! store, linked bottom-up, and never unlinked; its memory goes with the
//! arena, which the owner keeps alive while any reader can reach the list.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicPtr, Ordering as AtomicOrdering};

use super::arena::Arena;
use super::entry::SharedEntry;
use super::skiplist::{Node, Probe};

/// A list seen through its head tower: `head[level]` is the first node
/// linked at `level` (null: none).
#[derive(Clone, Copy)]
pub(crate) struct SwSkipList<'a, const H: usize> {
    head: &'a [AtomicPtr<u8>; H],
}

impl<'a, const H: usize> SwSkipList<'a, H> {
    /// The list whose head tower is `head`.
    #[inline]
    pub(crate) fn over(head: &'a [AtomicPtr<u8>; H]) -> Self {
        SwSkipList { head }
    }

    /// The slot of `level` in `at`'s tower, or in the head's for `None`.
    #[inline]
    fn slot(self, at: Option<Node>, level: usize) -> &'a AtomicPtr<u8> {
        match at {
            Some(n) => n.next_slot(level),
            None => &self.head[level],
        }
    }

    /// The last node at each level that sorts before `probe`'s key (`None`:
    /// the head), and the first node `>=` it.
    #[inline]
    fn search(self, probe: &Probe) -> ([Option<Node>; H], Option<Node>) {
        let mut preds: [Option<Node>; H] = [None; H];
        let mut x: Option<Node> = None;
        let mut found = None;
        for level in (0..H).rev() {
            // The answer is the node that stopped the walk on level 0, from
            // the same load: loading `x`'s successor again could return a
            // node a concurrent insert has just linked after `x`, which
            // sorts before the probe.
            found = loop {
                let next = Node::from_raw(self.slot(x, level).load(AtomicOrdering::Acquire));
                match next {
                    Some(n) if probe.node_cmp(n) == Ordering::Less => x = Some(n),
                    _ => break next,
                }
            };
            preds[level] = x;
        }
        (preds, found)
    }

    /// Copies a new entry into `arena` under a tower of `height` levels
    /// (clamped to `1..=H`) and links it.
    ///
    /// # Safety
    ///
    /// Calls that insert into one list must not overlap: the caller
    /// serialises writers (readers may run concurrently). `arena` must be
    /// the one the owner keeps alive for this list's readers.
    pub(crate) unsafe fn insert_new(self, arena: &Arena, ikey: &[u8], value: &[u8], height: usize) {
        let height = height.clamp(1, H);
        let (preds, _) = self.search(&Probe::new(ikey));
        let node = Node::alloc(arena, height, ikey, value);
        for (level, pred) in preds.iter().enumerate().take(height) {
            node.next_slot(level).store(
                self.slot(*pred, level).load(AtomicOrdering::Relaxed),
                AtomicOrdering::Relaxed,
            );
        }
        // Publish bottom-up: a reader that reaches the node at any level finds
        // its lower links already set. The release stores make the node's
        // contents visible to readers that load the pointer with acquire.
        for (level, pred) in preds.iter().enumerate().take(height) {
            self.slot(*pred, level)
                .store(node.as_ptr(), AtomicOrdering::Release);
        }
    }

    /// The first node whose key is `>= target`.
    #[inline]
    pub(crate) fn lower_bound(self, target: &[u8]) -> Option<Node> {
        self.search(&Probe::new(target)).1
    }

    /// Calls `f` on every entry in order.
    pub(crate) fn for_each(self, mut f: impl FnMut(SharedEntry)) {
        let mut cur = Node::from_raw(self.head[0].load(AtomicOrdering::Acquire));
        while let Some(n) = cur {
            f(n.entry());
            cur = n.next(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, compare_internal, make_internal_key};

    fn keys<const H: usize>(l: SwSkipList<H>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        l.for_each(|e| out.push(e.key().to_vec()));
        out
    }

    fn check<const H: usize>() {
        let arena = Arena::new(4096);
        let head: [AtomicPtr<u8>; H] =
            std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut()));
        let l = SwSkipList::over(&head);
        let mut want = Vec::new();
        let mut h = 1usize;
        for i in [5u64, 1, 9, 3, 7, 2, 8, 4, 6, 0] {
            let k = make_internal_key(format!("k{}", i % 4).as_bytes(), i, ValueKind::Put);
            h = h % 4 + 1;
            // SAFETY: single-threaded test.
            unsafe { l.insert_new(&arena, &k, b"v", h) };
            want.push(k);
        }
        want.sort_by(|a, b| compare_internal(a, b));
        assert_eq!(keys(l), want);
        for w in &want {
            assert_eq!(
                l.lower_bound(w).map(|n| n.entry().key().to_vec()),
                Some(w.clone())
            );
        }
        let past = make_internal_key(b"zzz", 1, ValueKind::Put);
        assert!(l.lower_bound(&past).is_none());
    }

    /// Every insert lands just before the probed key, where a search that
    /// re-read its last link would return the new node instead.
    fn lower_bound_never_returns_a_smaller_key_during_inserts<const H: usize>() {
        use std::sync::atomic::{AtomicBool, Ordering as O};
        const INSERTS: u64 = 20_000;
        let arena = Arena::new(1 << 16);
        let head: [AtomicPtr<u8>; H] =
            std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut()));
        let l = SwSkipList::over(&head);
        let target = make_internal_key(b"m", 1, ValueKind::Put);
        // SAFETY: no reader or other writer yet.
        unsafe { l.insert_new(&arena, &target, b"v", H) };
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut probes = 0u64;
                while !done.load(O::Acquire) || probes == 0 {
                    probes += 1;
                    let got = l.lower_bound(&target).map(|n| n.key().to_vec());
                    assert_eq!(got.as_deref(), Some(target.as_slice()), "probe {probes}");
                }
            });
            let mut h = 0usize;
            for i in 0..INSERTS {
                let k = make_internal_key(format!("a{i:08}").as_bytes(), 1, ValueKind::Put);
                h = h % H + 1;
                // SAFETY: this thread is the only writer.
                unsafe { l.insert_new(&arena, &k, b"v", h) };
            }
            done.store(true, O::Release);
        });
    }

    #[test]
    fn lower_bound_is_exact_under_a_concurrent_writer() {
        lower_bound_never_returns_a_smaller_key_during_inserts::<1>();
        lower_bound_never_returns_a_smaller_key_during_inserts::<4>();
    }

    #[test]
    fn single_writer_list_stays_sorted() {
        check::<1>();
        check::<4>();
    }
}
