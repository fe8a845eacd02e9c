//! The default representation: a concurrent skiplist whose nodes, keys and
//! values live in an [`Arena`].
//!
//! Layout of a node of height `h` (all in one arena piece, 8-byte aligned):
//!
//! ```text
//!   next[h-1] .. next[1] next[0] | key_len: u32 | value_len: u32 | internal key | value
//!                                ^ node pointer
//! ```
//!
//! The tower sits before the node pointer (as in RocksDB's InlineSkipList),
//! so the key is at a fixed offset and its first bytes share a cache line
//! with `next[0]`. Heights are drawn with branching factor 4 (mean 1.33
//! pointers per node), so a 16-byte internal key with a 120-byte value takes
//! about 155 bytes, against 219 with the crossbeam skiplist this replaced.
//!
//! Concurrency: any number of readers and inserters. An inserter fills its
//! node, then links it level by level from the bottom with a compare-and-swap
//! on the predecessor's pointer (release), recomputing that level's
//! neighbours when another insert got in between. Readers load pointers with
//! acquire, so a node they reach is fully written. Nodes are never unlinked;
//! memory goes back when the representation drops, which needs every
//! iterator (each holds an `Arc`) gone. Internal keys are unique (each
//! carries its own sequence number), so an insert never meets an equal key.

use std::cell::Cell;
use std::cmp::Ordering;
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering as AtomicOrdering};

use super::arena::{ALIGN, Arena, block_size_for};
use super::entry::SharedEntry;
use super::{MemTableRep, MemUsage};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{TRAILER_LEN, compare_internal};

/// Tallest tower. With branching 4, sixteen levels index 4^16 nodes before
/// searches start to lengthen.
const MAX_HEIGHT: usize = 16;
/// One node in `BRANCHING` gets each further level.
const BRANCHING: u32 = 4;
pub(super) const PTR: usize = std::mem::size_of::<AtomicPtr<u8>>();

/// The first eight bytes of an internal key's user key, big-endian,
/// zero-padded. Where two prefixes differ they order the user keys as a
/// bytewise comparison does (a padded zero is never above the other key's
/// byte there unless the keys tie on it), so only equal prefixes need the
/// full comparison. Most steps of a search end on the prefix.
#[inline]
fn key_prefix(ikey: &[u8]) -> u64 {
    let user_len = ikey.len().saturating_sub(TRAILER_LEN);
    if user_len >= 8 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&ikey[..8]);
        return u64::from_be_bytes(b);
    }
    let mut b = [0u8; 8];
    b[..user_len].copy_from_slice(&ikey[..user_len]);
    u64::from_be_bytes(b)
}

/// A key being searched for, with its prefix computed once.
pub(super) struct Probe<'a> {
    key: &'a [u8],
    prefix: u64,
}

impl<'a> Probe<'a> {
    pub(super) fn new(key: &'a [u8]) -> Self {
        Probe {
            key,
            prefix: key_prefix(key),
        }
    }

    /// How the node's key orders against the probe.
    #[inline]
    pub(super) fn node_cmp(&self, node: Node) -> Ordering {
        let k = node.key();
        key_prefix(k)
            .cmp(&self.prefix)
            .then_with(|| compare_internal(k, self.key))
    }
}

/// A pointer to a published (or being built) node. Valid while the list's
/// arena lives.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Node(NonNull<u8>);

impl Node {
    pub(super) fn from_raw(p: *mut u8) -> Option<Node> {
        NonNull::new(p).map(Node)
    }

    #[inline]
    pub(super) fn next_slot(self, level: usize) -> &'static AtomicPtr<u8> {
        // SAFETY: every node is allocated with a tower of at least
        // `level + 1` pointers before its header when it is reached at
        // `level` (a node is only linked, and so only reached, at levels
        // below its height); the slot is 8-aligned because pieces and the
        // header are. The 'static lifetime is internal: callers hold the
        // list (and so the arena) while they use a node.
        unsafe { &*(self.0.as_ptr().sub(PTR * (level + 1)) as *const AtomicPtr<u8>) }
    }

    #[inline]
    pub(super) fn next(self, level: usize) -> Option<Node> {
        Node::from_raw(self.next_slot(level).load(AtomicOrdering::Acquire))
    }

    #[inline]
    pub(super) fn key(self) -> &'static [u8] {
        // SAFETY: the node's entry was written before it was published;
        // lifetime as in `next_slot`.
        unsafe { SharedEntry::from_raw(self.0).parts().0 }
    }

    #[inline]
    pub(super) fn value(self) -> &'static [u8] {
        // SAFETY: as for `key`.
        unsafe { SharedEntry::from_raw(self.0).parts().1 }
    }

    /// The node pointer (where its entry starts).
    #[inline]
    pub(super) fn as_ptr(self) -> *mut u8 {
        self.0.as_ptr()
    }

    /// The node's entry, as a handle (valid while the arena lives).
    #[inline]
    pub(super) fn entry(self) -> SharedEntry {
        // SAFETY: the node pointer is where its entry was written.
        unsafe { SharedEntry::from_raw(self.0) }
    }

    /// A new node of `height` levels in `arena` holding the entry, unlinked
    /// (null tower).
    pub(super) fn alloc(arena: &Arena, height: usize, ikey: &[u8], value: &[u8]) -> Node {
        let tower = PTR * height;
        let size = tower + SharedEntry::size(ikey.len(), value.len());
        let base = arena.alloc(size).as_ptr();
        debug_assert_eq!(tower % ALIGN, 0);
        // SAFETY: the piece holds `size` bytes; the tower slots are aligned
        // (piece and pointer size are multiples of 8) and written as null
        // pointers before anything can read them.
        unsafe {
            for i in 0..height {
                ptr::write(
                    base.add(PTR * i) as *mut AtomicPtr<u8>,
                    AtomicPtr::new(ptr::null_mut()),
                );
            }
            let node = base.add(tower);
            SharedEntry::write(node, ikey, value);
            Node(NonNull::new_unchecked(node))
        }
    }
}

/// Hints the CPU to load the cache line holding `node`'s key.
#[inline]
fn prefetch(node: Node) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults, and the address is a live node.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(node.0.as_ptr() as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = node;
}

thread_local! {
    static HEIGHT_RNG: Cell<u64> = Cell::new({
        // Seeded per thread from the standard library's random hasher keys.
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(&h as *const _ as usize);
        h.finish() | 1
    });
}

/// A tower height: 1, then one more level with probability 1/4 each, up to
/// [`MAX_HEIGHT`].
fn random_height() -> usize {
    let r = HEIGHT_RNG.with(|c| {
        // xorshift64*
        let mut x = c.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        c.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    });
    // Two random bits per level: all zero with probability 1/4.
    let levels = (r.trailing_zeros() / BRANCHING.trailing_zeros()) as usize;
    (1 + levels).min(MAX_HEIGHT)
}

/// The arena skiplist. See the module documentation.
pub struct SkipListRep {
    arena: Arena,
    head: Node,
    /// Levels in use (at least 1).
    height: AtomicUsize,
    entry_bytes: AtomicUsize,
    len: AtomicUsize,
}

// SAFETY: nodes are reached through atomics with acquire/release ordering and
// never mutated after publishing except through their atomic tower slots;
// the arena is Sync.
unsafe impl Send for SkipListRep {}
unsafe impl Sync for SkipListRep {}

impl SkipListRep {
    /// An empty skiplist for a buffer of `write_buffer_size` bytes (which
    /// sizes the arena blocks).
    pub fn new(write_buffer_size: usize) -> Self {
        let arena = Arena::new(block_size_for(write_buffer_size));
        let head = Node::alloc(&arena, MAX_HEIGHT, &[], &[]);
        SkipListRep {
            arena,
            head,
            height: AtomicUsize::new(1),
            entry_bytes: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
        }
    }

    /// Starting at `from` (which orders before the probe, or is the head),
    /// walks `level` to the last node before the probe. Returns it and its
    /// successor there.
    #[inline]
    fn splice_at(&self, probe: &Probe, mut from: Node, level: usize) -> (Node, Option<Node>) {
        loop {
            match from.next(level) {
                Some(n) if probe.node_cmp(n) == Ordering::Less => from = n,
                next => return (from, next),
            }
        }
    }

    /// The first node `>= key`.
    fn seek_ge(&self, probe: &Probe) -> Option<Node> {
        let mut x = self.head;
        let mut level = self.height.load(AtomicOrdering::Relaxed) - 1;
        loop {
            let (prev, next) = self.splice_at(probe, x, level);
            if level == 0 {
                return next;
            }
            x = prev;
            level -= 1;
        }
    }

    /// The last node for which `keep_going(node)` holds along the list order
    /// (`keep_going` must hold on a prefix of the list), or `None`.
    fn last_where(&self, keep_going: impl Fn(Node) -> bool) -> Option<Node> {
        let mut x = self.head;
        let mut level = self.height.load(AtomicOrdering::Relaxed) - 1;
        loop {
            match x.next(level) {
                Some(n) if keep_going(n) => x = n,
                _ if level == 0 => return (x != self.head).then_some(x),
                _ => level -= 1,
            }
        }
    }

    fn insert_node(&self, ikey: &[u8], value: &[u8]) {
        let height = random_height();
        let node = Node::alloc(&self.arena, height, ikey, value);
        let listed = self
            .height
            .fetch_max(height, AtomicOrdering::Relaxed)
            .max(height);
        let probe = Probe::new(ikey);
        let mut prev = [self.head; MAX_HEIGHT];
        let mut next: [Option<Node>; MAX_HEIGHT] = [None; MAX_HEIGHT];
        let mut x = self.head;
        for level in (0..listed).rev() {
            let (p, n) = self.splice_at(&probe, x, level);
            prev[level] = p;
            next[level] = n;
            x = p;
        }
        for level in 0..height {
            loop {
                let succ = next[level].map_or(ptr::null_mut(), |n| n.0.as_ptr());
                node.next_slot(level).store(succ, AtomicOrdering::Relaxed);
                match prev[level].next_slot(level).compare_exchange(
                    succ,
                    node.0.as_ptr(),
                    AtomicOrdering::Release,
                    AtomicOrdering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(_) => {
                        // Another insert linked a node after `prev` here;
                        // the new neighbours are further right.
                        let (p, n) = self.splice_at(&probe, prev[level], level);
                        prev[level] = p;
                        next[level] = n;
                    }
                }
            }
        }
    }
}

impl MemTableRep for SkipListRep {
    fn insert(&self, internal_key: &[u8], value: &[u8]) {
        self.insert_node(internal_key, value);
        // Release, paired with the Acquire in `memory_usage`: whoever sees
        // this entry's bytes also sees the arena bytes it took.
        self.entry_bytes
            .fetch_add(internal_key.len() + value.len(), AtomicOrdering::Release);
        self.len.fetch_add(1, AtomicOrdering::Relaxed);
    }

    fn get(&self, seek_key: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) {
        let mut cur = self.seek_ge(&Probe::new(seek_key));
        while let Some(n) = cur {
            if !f(n.key(), n.value()) {
                return;
            }
            cur = n.next(0);
        }
    }

    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
        Box::new(SkipListIter {
            cur: None,
            rep: self,
        })
    }

    fn memory_usage(&self) -> MemUsage {
        let entry_bytes = self.entry_bytes.load(AtomicOrdering::Acquire);
        MemUsage {
            entry_bytes,
            // Towers, headers, alignment, the head node and abandoned block
            // tails; `used` counts every entry byte too. Read after
            // `entry_bytes`, which is only added to after the arena was.
            metadata_bytes: (self.arena.used() + std::mem::size_of::<SkipListRep>())
                .saturating_sub(entry_bytes),
        }
    }

    fn len(&self) -> usize {
        self.len.load(AtomicOrdering::Relaxed)
    }
}

/// Iterator over a [`SkipListRep`].
struct SkipListIter {
    cur: Option<Node>,
    // Keeps the arena, and so `cur`, alive.
    rep: Arc<SkipListRep>,
}

// SAFETY: `cur` points into the arena kept alive by `rep`, which is Sync.
unsafe impl Send for SkipListIter {}

impl InternalIterator for SkipListIter {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn seek_to_first(&mut self) {
        self.cur = self.rep.head.next(0);
    }
    fn seek_to_last(&mut self) {
        self.cur = self.rep.last_where(|_| true);
    }
    fn seek(&mut self, target: &[u8]) {
        self.cur = self.rep.seek_ge(&Probe::new(target));
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let probe = Probe::new(target);
        self.cur = self
            .rep
            .last_where(|n| probe.node_cmp(n) != Ordering::Greater);
    }
    fn next(&mut self) {
        self.cur = self.cur.and_then(|n| n.next(0));
        // Scans walk nodes scattered over the arena, one dependent cache miss
        // each; ask for the node after this one while the caller works on
        // this one.
        if let Some(after) = self.cur.and_then(|n| n.next(0)) {
            prefetch(after);
        }
    }
    fn prev(&mut self) {
        // No back pointers: search for the last node before this one.
        self.cur = self.cur.and_then(|cur| {
            let probe = Probe::new(cur.key());
            self.rep.last_where(|n| probe.node_cmp(n) == Ordering::Less)
        });
    }
    fn key(&self) -> &[u8] {
        self.cur.map_or(&[], |n| n.key())
    }
    fn value(&self) -> &[u8] {
        self.cur.map_or(&[], |n| n.value())
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{MAX_SEQNO, ValueKind, make_internal_key, user_key};

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
        let arena = Arena::new(1 << 16);
        let entries: Vec<(Vec<u8>, Node)> = users
            .iter()
            .flat_map(|u| {
                [1u64, 7].map(|s| {
                    let ik = make_internal_key(u, s, ValueKind::Put);
                    let n = Node::alloc(&arena, 1, &ik, b"v");
                    (ik, n)
                })
            })
            .collect();
        for (ka, _) in &entries {
            let probe = Probe::new(ka);
            for (kb, b) in &entries {
                assert_eq!(
                    probe.node_cmp(*b),
                    compare_internal(kb, ka),
                    "{kb:?} vs {ka:?}"
                );
            }
        }
    }

    #[test]
    fn seeks_find_entries_with_equal_prefixes() {
        let rep = Arc::new(SkipListRep::new(1 << 20));
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
        it.seek(&make_internal_key(b"aaaaaaaa", MAX_SEQNO, ValueKind::Put));
        assert_eq!(user_key(it.key()), b"aaaaaaaa");
        it.next();
        assert_eq!(user_key(it.key()), b"aaaaaaaa1");
        it.seek_for_prev(&make_internal_key(b"aaaaaaaa0", 0, ValueKind::Put));
        assert_eq!(user_key(it.key()), b"aaaaaaaa");
        it.prev();
        assert_eq!(user_key(it.key()), b"aaaaaaa");
        it.prev();
        assert!(!it.valid());
        let mut seen = Vec::new();
        rep.get(
            &make_internal_key(b"aaaaaaa", MAX_SEQNO, ValueKind::Put),
            &mut |k, _| {
                seen.push(user_key(k).to_vec());
                seen.len() < 2
            },
        );
        assert_eq!(seen, [b"aaaaaaa".to_vec(), b"aaaaaaaa".to_vec()]);
    }

    #[test]
    fn heights_follow_branching_four() {
        let n = 200_000;
        let mut counts = [0usize; MAX_HEIGHT + 1];
        for _ in 0..n {
            counts[random_height()] += 1;
        }
        // P(h >= k) = 4^-(k-1): about 25% reach 2 and 6.25% reach 3.
        let at_least = |k: usize| counts[k..].iter().sum::<usize>() as f64 / n as f64;
        assert!((at_least(2) - 0.25).abs() < 0.01, "{}", at_least(2));
        assert!((at_least(3) - 0.0625).abs() < 0.005, "{}", at_least(3));
        assert_eq!(counts[0], 0);
    }

    #[test]
    fn concurrent_inserters_and_readers_see_a_sorted_list() {
        let rep = Arc::new(SkipListRep::new(1 << 20));
        let threads = 4;
        // Small under Miri, which checks these threads for data races.
        let per = if cfg!(miri) { 40 } else { 5_000u64 };
        std::thread::scope(|s| {
            for t in 0..threads {
                let rep = &rep;
                s.spawn(move || {
                    for i in 0..per {
                        // Interleaved key ranges so inserts race on neighbours.
                        let k = (i * threads + t).to_be_bytes();
                        rep.insert(&make_internal_key(&k, i + 1, ValueKind::Put), &k);
                    }
                });
            }
            // A reader walking while the inserts run sees a sorted list.
            let rep = &rep;
            s.spawn(move || {
                for _ in 0..if cfg!(miri) { 3 } else { 20 } {
                    let mut it = Arc::clone(rep).iter();
                    it.seek_to_first();
                    let mut last: Option<Vec<u8>> = None;
                    while it.valid() {
                        if let Some(l) = &last {
                            assert_eq!(compare_internal(l, it.key()), Ordering::Less);
                        }
                        assert_eq!(it.value(), user_key(it.key()));
                        last = Some(it.key().to_vec());
                        it.next();
                    }
                }
            });
        });
        assert_eq!(rep.len(), (threads * per) as usize);
        let mut it = Arc::clone(&rep).iter();
        it.seek_to_first();
        let mut expected = 0u64;
        while it.valid() {
            assert_eq!(user_key(it.key()), expected.to_be_bytes());
            expected += 1;
            it.next();
        }
        assert_eq!(expected, threads * per);
        // Every key is also reachable by a seek through the upper levels.
        for k in (0..threads * per).step_by(97) {
            it.seek(&make_internal_key(
                &k.to_be_bytes(),
                MAX_SEQNO,
                ValueKind::Put,
            ));
            assert_eq!(user_key(it.key()), k.to_be_bytes());
        }
    }

    #[test]
    fn memory_counts_entries_and_structure_exactly() {
        let rep = SkipListRep::new(1 << 20);
        let empty = rep.memory_usage();
        assert_eq!(empty.entry_bytes, 0);
        // The head node: 16 pointers and a header.
        assert_eq!(
            empty.metadata_bytes,
            MAX_HEIGHT * PTR + SharedEntry::HEADER + std::mem::size_of::<SkipListRep>()
        );
        let n = 10_000;
        for i in 0..n as u64 {
            rep.insert(
                &make_internal_key(&i.to_be_bytes(), 1, ValueKind::Put),
                &[7u8; 120],
            );
        }
        let u = rep.memory_usage();
        assert_eq!(u.entry_bytes, n * (16 + 120));
        // Per entry: header 8, the key and value (136, already aligned) and
        // 1.33 tower pointers on average; abandoned block tails add a little.
        let per_entry_meta = (u.metadata_bytes - empty.metadata_bytes) as f64 / n as f64;
        assert!((16.0..22.0).contains(&per_entry_meta), "{per_entry_meta}");
    }
}
