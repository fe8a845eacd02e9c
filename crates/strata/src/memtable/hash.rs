//! Hash representations: `hash-skiplist` and `hash-linklist`.
//!
//! The user key's prefix (from the keyspace's [`PrefixExtractor`]) is hashed
//! (xxh3) into one of `N` slots. A slot holds nothing until its first entry,
//! then
//! * `hash-skiplist`: a pointer to a bucket: the head tower of a skiplist of
//!   at most 4 levels, branching factor 4 (RocksDB's
//!   `NewHashSkipListRepFactory` defaults);
//! * `hash-linklist`: the first node of a sorted singly linked list (the
//!   slot is the list's head, so a point read goes from the slot to the
//!   first node with nothing in between), converted to such a skiplist
//!   bucket when an insert would take it past the threshold (default 256
//!   entries, RocksDB's `threshold_use_skiplist`). The conversion copies the
//!   entries into the new skiplist's nodes; the list stays in the arena
//!   until the memtable is dropped (readers may still be walking it) and
//!   stays counted.
//!
//! A slot tells the two apart by its low bit (set: a skiplist bucket). Keys
//! outside the extractor's domain (see [`super::prefix`]) live in one
//! overflow skiplist bucket; they can only arrive by log replay under a
//! different extractor, since the write path refuses them.
//!
//! Concurrency: inserts take a writer mutex (one writer at a time anyway);
//! readers never lock: buckets and nodes are published with release stores
//! and never freed before the representation drops.
//!
//! Reads:
//! * point read: hash the prefix, walk one bucket from the first entry `>=`
//!   the seek key while the entries share the seek key's prefix (its user key
//!   for the overflow bucket): `O(log(n/N))` for skiplist buckets, `O(n/N)`
//!   for list buckets. Unlike the total-order kinds, the walk ends where the
//!   prefix ends instead of continuing into the next prefix.
//! * total-order iteration: a sorted snapshot: every bucket's entries are
//!   copied (8-byte handles, `O(N + n)`) and merge-sorted (`O(n log n)`, the
//!   stable sort exploits the per-bucket sorted runs), as RocksDB does for
//!   total-order seeks over its hash memtables. The snapshot is cached until
//!   the next insert, so the flush of a frozen memtable builds it once. It
//!   takes 8 bytes per entry while alive and is not counted in
//!   [`MemUsage`] (read-side scratch).
//!
//! Nodes have the default skiplist's layout (tower just before the entry's
//! bytes, in one arena piece; see `memtable::sw_skiplist`), so a step along a
//! bucket touches one place in memory and a one-level node costs 8 bytes.
//!
//! Memory: entry bytes exact; metadata = the slot array (8 bytes a slot;
//! hash-linklist adds a 4-byte list length per slot, which only the writer
//! reads), the arena's bytes beyond the entries' (bucket heads, towers,
//! entry headers, alignment, lists replaced by conversions, abandoned block
//! tails), and the representation struct.

use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering as AtomicOrdering};

use parking_lot::Mutex;

use super::arena::{Arena, block_size_for};
use super::entry::{
    SharedEntry, SnapshotIter, SortedCache, alloc_size, arena_overhead, cmp_entries,
};
use super::prefix::{PrefixExtractor, extract};
use super::skiplist::Node;
use super::sw_skiplist::SwSkipList;
use super::{MemTableRep, MemUsage, RepCounters};
use crate::iter::InternalIterator;
use crate::key::user_key;

/// Levels of a bucket skiplist.
const BUCKET_HEIGHT: usize = 4;
/// One in `BRANCHING` nodes of a level reaches the next.
const BRANCHING: u64 = 4;

/// How buckets are organised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BucketPolicy {
    /// Every bucket is a small skiplist.
    SkipList,
    /// Buckets are sorted lists, converted to skiplists past `threshold`.
    LinkList { threshold: usize },
}

/// Low bit of a slot that points to a [`SkipBucket`] (nodes and buckets are
/// 8-aligned, so the bit is free).
const SKIP_TAG: usize = 1;

/// A skiplist bucket's head tower, in the arena.
struct SkipBucket {
    head: [AtomicPtr<u8>; BUCKET_HEIGHT],
}

/// A slot's contents as loaded. A slot is null (no entry yet), a tagged
/// pointer to a [`SkipBucket`], or (hash-linklist only) the first node of a
/// sorted list: the slot is the list's head, so a point read goes from the
/// slot straight to the first node.
#[derive(Clone, Copy)]
enum Loaded {
    Empty,
    List(*mut u8),
    Skip(&'static SkipBucket),
}

impl Loaded {
    #[inline]
    fn from_slot(slot: &AtomicPtr<u8>) -> Loaded {
        let p = slot.load(AtomicOrdering::Acquire);
        if p.is_null() {
            Loaded::Empty
        } else if p as usize & SKIP_TAG != 0 {
            // SAFETY: tagged slots hold buckets written by `new_skip_bucket`
            // before the release store that published them; buckets live in
            // the arena until the representation drops (the 'static lifetime
            // is internal: readers hold the representation).
            Loaded::Skip(unsafe { &*(p.wrapping_sub(SKIP_TAG) as *const SkipBucket) })
        } else {
            Loaded::List(p)
        }
    }

    /// Calls `f` on the entries from the first one `>= key` until it
    /// returns false.
    #[inline]
    fn visit_from(self, key: &[u8], mut f: impl FnMut(Node) -> bool) {
        let mut cur = match self {
            Loaded::Empty => None,
            // A copy of the head: the slot may change under us (a
            // conversion), the list we loaded does not.
            Loaded::List(first) => SwSkipList::over(&[AtomicPtr::new(first)]).lower_bound(key),
            Loaded::Skip(b) => SwSkipList::over(&b.head).lower_bound(key),
        };
        while let Some(n) = cur {
            if !f(n) {
                return;
            }
            cur = n.next(0);
        }
    }

    fn for_each(self, f: impl FnMut(SharedEntry)) {
        match self {
            Loaded::Empty => {}
            Loaded::List(first) => SwSkipList::over(&[AtomicPtr::new(first)]).for_each(f),
            Loaded::Skip(b) => SwSkipList::over(&b.head).for_each(f),
        }
    }
}

/// State only the writer touches (under the writer mutex).
struct Writer {
    rng: u64,
    /// Entries in each list bucket (hash-linklist; empty otherwise).
    list_lens: Vec<u32>,
}

impl Writer {
    /// A tower height with branching factor [`BRANCHING`].
    fn height(&mut self) -> usize {
        let mut h = 1;
        while h < BUCKET_HEIGHT {
            // xorshift64
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            if !self.rng.is_multiple_of(BRANCHING) {
                break;
            }
            h += 1;
        }
        h
    }
}

/// `hash-skiplist` and `hash-linklist`.
pub(crate) struct HashRep {
    policy: BucketPolicy,
    extractor: Option<Arc<dyn PrefixExtractor>>,
    slots: Box<[AtomicPtr<u8>]>,
    /// Keys outside the extractor's domain: always a skiplist bucket.
    overflow: AtomicPtr<u8>,
    arena: Arc<Arena>,
    writer: Mutex<Writer>,
    cache: SortedCache,
    len: AtomicUsize,
    entry_bytes: AtomicUsize,
    /// Metadata outside the arena: the struct, the slot array and the list
    /// lengths.
    base_bytes: usize,
    out_of_domain: AtomicUsize,
    conversions: AtomicUsize,
    rebuilds: AtomicUsize,
}

impl HashRep {
    /// `buckets` (at least 1) buckets of `policy` for a buffer of
    /// `write_buffer_size` bytes. Without an extractor every key is outside
    /// the domain (options validation refuses that setup; the representation
    /// still works, as one skiplist).
    pub(crate) fn new(
        policy: BucketPolicy,
        buckets: usize,
        extractor: Option<Arc<dyn PrefixExtractor>>,
        write_buffer_size: usize,
    ) -> Self {
        let buckets = buckets.max(1);
        let slots: Box<[AtomicPtr<u8>]> = (0..buckets)
            .map(|_| AtomicPtr::new(std::ptr::null_mut()))
            .collect();
        let list_lens = match policy {
            BucketPolicy::LinkList { .. } => vec![0u32; buckets],
            BucketPolicy::SkipList => Vec::new(),
        };
        let base = std::mem::size_of::<Self>()
            + alloc_size(buckets * std::mem::size_of::<AtomicPtr<u8>>())
            + alloc_size(list_lens.len() * std::mem::size_of::<u32>())
            + alloc_size(2 * std::mem::size_of::<usize>() + std::mem::size_of::<Arena>());
        HashRep {
            policy,
            extractor,
            slots,
            overflow: AtomicPtr::new(std::ptr::null_mut()),
            arena: Arc::new(Arena::new(block_size_for(write_buffer_size))),
            writer: Mutex::new(Writer {
                rng: 0x9E37_79B9_7F4A_7C15,
                list_lens,
            }),
            cache: SortedCache::new(),
            len: AtomicUsize::new(0),
            entry_bytes: AtomicUsize::new(0),
            base_bytes: base,
            out_of_domain: AtomicUsize::new(0),
            conversions: AtomicUsize::new(0),
            rebuilds: AtomicUsize::new(0),
        }
    }

    /// An empty skiplist bucket in the arena, as a tagged slot value.
    fn new_skip_bucket(&self) -> *mut u8 {
        let p = self.arena.alloc(std::mem::size_of::<SkipBucket>()).as_ptr() as *mut SkipBucket;
        // SAFETY: an unused, 8-aligned piece of the right size (a bucket is
        // pointers). Buckets own nothing outside the arena, so never running
        // their destructor leaks nothing.
        unsafe {
            p.write(SkipBucket {
                head: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            })
        };
        (p as *mut u8).wrapping_add(SKIP_TAG)
    }

    #[inline]
    fn prefix<'a>(&self, uk: &'a [u8]) -> Option<&'a [u8]> {
        self.extractor.as_deref().and_then(|x| extract(x, uk))
    }

    /// The slot of a user key, its index (`None`: the overflow slot) and its
    /// prefix (`None` for the overflow slot).
    #[inline]
    fn slot<'a>(&self, uk: &'a [u8]) -> (&AtomicPtr<u8>, Option<usize>, Option<&'a [u8]>) {
        match self.prefix(uk) {
            Some(p) => {
                let h = xxhash_rust::xxh3::xxh3_64(p);
                let i = ((u128::from(h) * self.slots.len() as u128) >> 64) as usize;
                (&self.slots[i], Some(i), Some(p))
            }
            None => (&self.overflow, None, None),
        }
    }

    /// The entries in order, from the cache or rebuilt.
    fn sorted_view(&self) -> Arc<Vec<SharedEntry>> {
        let n = self.len.load(AtomicOrdering::Acquire);
        if let Some(snap) = self.cache.get(n) {
            return snap;
        }
        // Every insert counted in `n` is visible: `len` is bumped (release)
        // after the entry is published.
        let mut v = Vec::with_capacity(n);
        for slot in self.slots.iter().chain(std::iter::once(&self.overflow)) {
            Loaded::from_slot(slot).for_each(|e| v.push(e));
        }
        v.sort_by(cmp_entries);
        self.rebuilds.fetch_add(1, AtomicOrdering::Relaxed);
        let snap = Arc::new(v);
        self.cache.put(n, &snap);
        snap
    }

    /// Inserts into a list bucket (the slot is empty or a list), converting
    /// it to a skiplist bucket when it would pass `threshold` entries.
    /// Called under the writer lock.
    fn insert_into_list(
        &self,
        w: &mut Writer,
        slot: &AtomicPtr<u8>,
        index: usize,
        threshold: usize,
        internal_key: &[u8],
        value: &[u8],
    ) {
        let list = SwSkipList::<1>::over(std::array::from_ref(slot));
        if (w.list_lens[index] as usize) < threshold {
            // SAFETY: inserts are serialised by the writer lock; nodes go to
            // this representation's arena.
            unsafe { list.insert_new(&self.arena, internal_key, value, 1) };
            w.list_lens[index] += 1;
            return;
        }
        // The list is full: copy its entries and the new one into a new
        // skiplist bucket, then swing the slot to it. Readers walking the
        // old list still find it intact: its nodes stay in the arena (and
        // counted) until the representation drops.
        let bucket = self.new_skip_bucket();
        // SAFETY: just written by `new_skip_bucket`; not shared yet.
        let head = unsafe { &(*(bucket.wrapping_sub(SKIP_TAG) as *const SkipBucket)).head };
        let skip = SwSkipList::over(head);
        list.for_each(|old| {
            let h = w.height();
            // SAFETY: `skip` is not shared yet; the writer lock is held.
            unsafe { skip.insert_new(&self.arena, old.key(), old.value(), h) };
        });
        let h = w.height();
        // SAFETY: as above.
        unsafe { skip.insert_new(&self.arena, internal_key, value, h) };
        slot.store(bucket, AtomicOrdering::Release);
        self.conversions.fetch_add(1, AtomicOrdering::Relaxed);
    }
}

impl MemTableRep for HashRep {
    fn insert(&self, internal_key: &[u8], value: &[u8]) {
        let payload = internal_key.len() + value.len();
        let (slot, index, prefix) = self.slot(user_key(internal_key));
        if prefix.is_none() {
            self.out_of_domain.fetch_add(1, AtomicOrdering::Relaxed);
        }
        let mut w = self.writer.lock();
        let loaded = Loaded::from_slot(slot);
        match (self.policy, index, loaded) {
            (BucketPolicy::LinkList { threshold }, Some(i), Loaded::Empty | Loaded::List(_)) => {
                self.insert_into_list(&mut w, slot, i, threshold, internal_key, value);
            }
            (_, _, Loaded::Skip(b)) => {
                let h = w.height();
                // SAFETY: inserts are serialised by the writer lock.
                unsafe {
                    SwSkipList::over(&b.head).insert_new(&self.arena, internal_key, value, h)
                };
            }
            (_, _, _) => {
                // The first entry of a skiplist bucket (or of the overflow
                // slot, which is one whatever the policy); a slot that holds
                // a list is only ever reached with the list policy above.
                let bucket = self.new_skip_bucket();
                // SAFETY: just written by `new_skip_bucket`; not shared yet.
                let head = unsafe { &(*(bucket.wrapping_sub(SKIP_TAG) as *const SkipBucket)).head };
                let h = w.height();
                // SAFETY: not shared yet; the writer lock is held.
                unsafe { SwSkipList::over(head).insert_new(&self.arena, internal_key, value, h) };
                slot.store(bucket, AtomicOrdering::Release);
            }
        }
        // Release, paired with the Acquire in `memory_usage` (see
        // `arena_overhead`).
        self.entry_bytes.fetch_add(payload, AtomicOrdering::Release);
        self.len.fetch_add(1, AtomicOrdering::Release);
        drop(w);
        // The cached snapshot is stale now; free it.
        self.cache.clear();
    }

    fn get(&self, seek_key: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) {
        let uk = user_key(seek_key);
        let (slot, _, prefix) = self.slot(uk);
        Loaded::from_slot(slot).visit_from(seek_key, |n| {
            let ek = user_key(n.key());
            let same = match prefix {
                Some(p) => self.prefix(ek) == Some(p),
                None => ek == uk,
            };
            same && f(n.key(), n.value())
        });
    }

    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
        Box::new(SnapshotIter::new(
            self.sorted_view(),
            Arc::clone(&self.arena),
        ))
    }

    fn memory_usage(&self) -> MemUsage {
        let entry_bytes = self.entry_bytes.load(AtomicOrdering::Acquire);
        MemUsage {
            entry_bytes,
            metadata_bytes: self.base_bytes + arena_overhead(&self.arena, entry_bytes),
        }
    }

    fn len(&self) -> usize {
        self.len.load(AtomicOrdering::Acquire)
    }

    fn counters(&self) -> RepCounters {
        RepCounters {
            out_of_domain: self.out_of_domain.load(AtomicOrdering::Relaxed),
            bucket_conversions: self.conversions.load(AtomicOrdering::Relaxed),
            snapshot_rebuilds: self.rebuilds.load(AtomicOrdering::Relaxed),
            ..RepCounters::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, make_internal_key};
    use crate::memtable::prefix::FixedPrefix;

    #[test]
    fn link_list_buckets_convert_past_the_threshold_and_stay_sorted() {
        let rep = Arc::new(HashRep::new(
            BucketPolicy::LinkList { threshold: 4 },
            2,
            Some(Arc::new(FixedPrefix::new(1))),
            1 << 20,
        ));
        let mut want = Vec::new();
        for i in 0..40u64 {
            let k = make_internal_key(
                format!("a{}", (i * 7) % 13).as_bytes(),
                i + 1,
                ValueKind::Put,
            );
            rep.insert(&k, b"v");
            want.push(k);
        }
        assert!(rep.counters().bucket_conversions >= 1);
        want.sort_by(|a, b| crate::key::compare_internal(a, b));
        let mut it = Arc::clone(&rep).iter();
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() {
            got.push(it.key().to_vec());
            it.next();
        }
        assert_eq!(got, want);
    }
}
