//! Hash representations: `hash-skiplist` and `hash-linklist`.
//!
//! The user key's prefix (from the keyspace's [`PrefixExtractor`]) is hashed
//! (xxh3) into one of `N` buckets. A bucket is created on its first entry and
//! is
//! * `hash-skiplist`: a skiplist of at most 4 levels, branching factor 4
//!   (RocksDB's `NewHashSkipListRepFactory` defaults);
//! * `hash-linklist`: a sorted singly linked list, converted to such a
//!   skiplist when an insert would take it past the threshold (default 256
//!   entries, RocksDB's `threshold_use_skiplist`). The list's nodes stay
//!   in the arena until the memtable is dropped (readers may still be
//!   walking them) and stay counted; the new skiplist's nodes point to the
//!   same entries.
//!
//! Keys outside the extractor's domain (see [`super::prefix`]) live in one
//! overflow skiplist; they can only arrive by log replay under a different
//! extractor, since the write path refuses them.
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
//! Nodes and entries live in the representation's arena, a new entry's
//! bytes right after its node (one place in memory per step of a bucket
//! walk).
//!
//! Memory: entry bytes exact; metadata = the bucket array (8 bytes a
//! bucket), the arena's bytes beyond the entries' (buckets, nodes, entry
//! headers, alignment, the buckets and nodes added by list-to-skiplist
//! conversions, abandoned block tails), and the representation struct.

use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering as AtomicOrdering};

use parking_lot::Mutex;

use super::arena::{Arena, block_size_for};
use super::entry::{
    SharedEntry, SnapshotIter, SortedCache, alloc_size, arena_overhead, cmp_entries,
};
use super::prefix::{PrefixExtractor, extract};
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

enum Bucket {
    List(SwSkipList<1>),
    Skip(SwSkipList<BUCKET_HEIGHT>),
}

impl Bucket {
    fn for_each(&self, f: impl FnMut(&SharedEntry)) {
        match self {
            Bucket::List(l) => l.for_each(f),
            Bucket::Skip(s) => s.for_each(f),
        }
    }

    /// Calls `f` on the entries from the first one `>= key` until it
    /// returns false.
    fn visit_from(&self, key: &[u8], f: &mut dyn FnMut(&SharedEntry) -> bool) {
        fn walk<const H: usize>(
            l: &SwSkipList<H>,
            key: &[u8],
            f: &mut dyn FnMut(&SharedEntry) -> bool,
        ) {
            let mut cur = l.lower_bound(key);
            while let Some(n) = cur {
                if !f(n.entry()) {
                    return;
                }
                cur = n.next();
            }
        }
        match self {
            Bucket::List(l) => walk(l, key, f),
            Bucket::Skip(s) => walk(s, key, f),
        }
    }
}

struct Writer {
    rng: u64,
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
    slots: Box<[AtomicPtr<Bucket>]>,
    overflow: AtomicPtr<Bucket>,
    arena: Arc<Arena>,
    writer: Mutex<Writer>,
    cache: SortedCache,
    len: AtomicUsize,
    entry_bytes: AtomicUsize,
    /// Metadata outside the arena: the struct and the bucket array.
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
        let slots: Box<[AtomicPtr<Bucket>]> = (0..buckets)
            .map(|_| AtomicPtr::new(std::ptr::null_mut()))
            .collect();
        let base = std::mem::size_of::<Self>()
            + alloc_size(buckets * std::mem::size_of::<AtomicPtr<Bucket>>())
            + alloc_size(2 * std::mem::size_of::<usize>() + std::mem::size_of::<Arena>());
        HashRep {
            policy,
            extractor,
            slots,
            overflow: AtomicPtr::new(std::ptr::null_mut()),
            arena: Arc::new(Arena::new(block_size_for(write_buffer_size))),
            writer: Mutex::new(Writer {
                rng: 0x9E37_79B9_7F4A_7C15,
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

    /// A bucket in the arena. Called just before the bucket's first node is
    /// allocated, so the two usually share a cache line: a point read in a
    /// bucket of one or two entries then costs one miss after the slot.
    fn new_bucket(&self, bucket: Bucket) -> *mut Bucket {
        let p = self.arena.alloc(std::mem::size_of::<Bucket>()).as_ptr() as *mut Bucket;
        // SAFETY: an unused, 8-aligned piece of the right size (a bucket is
        // pointers and counters). Buckets own nothing outside the arena, so
        // never running their destructor leaks nothing.
        unsafe { p.write(bucket) };
        p
    }

    #[inline]
    fn prefix<'a>(&self, uk: &'a [u8]) -> Option<&'a [u8]> {
        self.extractor.as_deref().and_then(|x| extract(x, uk))
    }

    /// The slot of a user key, and its prefix (`None`: the overflow bucket).
    #[inline]
    fn slot<'a>(&self, uk: &'a [u8]) -> (&AtomicPtr<Bucket>, Option<&'a [u8]>) {
        match self.prefix(uk) {
            Some(p) => {
                let h = xxhash_rust::xxh3::xxh3_64(p);
                let i = ((u128::from(h) * self.slots.len() as u128) >> 64) as usize;
                (&self.slots[i], Some(p))
            }
            None => (&self.overflow, None),
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
            // SAFETY: buckets live in the arena until the representation drops.
            if let Some(b) = unsafe { slot.load(AtomicOrdering::Acquire).as_ref() } {
                b.for_each(|e| v.push(*e));
            }
        }
        v.sort_by(cmp_entries);
        self.rebuilds.fetch_add(1, AtomicOrdering::Relaxed);
        let snap = Arc::new(v);
        self.cache.put(n, &snap);
        snap
    }
}

impl MemTableRep for HashRep {
    fn insert(&self, internal_key: &[u8], value: &[u8]) {
        let payload = internal_key.len() + value.len();
        let (slot, prefix) = self.slot(user_key(internal_key));
        let mut w = self.writer.lock();
        let mut b = slot.load(AtomicOrdering::Acquire);
        if b.is_null() {
            let fresh = match (self.policy, prefix) {
                (BucketPolicy::LinkList { .. }, Some(_)) => Bucket::List(SwSkipList::new()),
                _ => Bucket::Skip(SwSkipList::new()),
            };
            b = self.new_bucket(fresh);
            slot.store(b, AtomicOrdering::Release);
        }
        if prefix.is_none() {
            self.out_of_domain.fetch_add(1, AtomicOrdering::Relaxed);
        }
        // SAFETY: buckets live in the arena until the representation drops.
        let bucket = unsafe { &*b };
        match bucket {
            Bucket::List(l) => {
                let threshold = match self.policy {
                    BucketPolicy::LinkList { threshold } => threshold,
                    BucketPolicy::SkipList => usize::MAX,
                };
                if l.len() >= threshold {
                    let s = SwSkipList::<BUCKET_HEIGHT>::new();
                    l.for_each(|old| {
                        let h = w.height();
                        // SAFETY: `s` is not shared yet; the writer lock is
                        // held; nodes go to this representation's arena.
                        unsafe { s.insert(&self.arena, *old, h) };
                    });
                    let h = w.height();
                    // SAFETY: as above.
                    unsafe { s.insert_new(&self.arena, internal_key, value, h) };
                    // Nodes do not point at the list head, so the list can
                    // move into its bucket. The list bucket stays in the
                    // arena for readers still walking it.
                    let nb = self.new_bucket(Bucket::Skip(s));
                    slot.store(nb, AtomicOrdering::Release);
                    self.conversions.fetch_add(1, AtomicOrdering::Relaxed);
                } else {
                    // SAFETY: inserts are serialised by the writer lock.
                    unsafe { l.insert_new(&self.arena, internal_key, value, 1) };
                }
            }
            Bucket::Skip(s) => {
                let h = w.height();
                // SAFETY: inserts are serialised by the writer lock.
                unsafe { s.insert_new(&self.arena, internal_key, value, h) };
            }
        }
        self.entry_bytes.fetch_add(payload, AtomicOrdering::Relaxed);
        self.len.fetch_add(1, AtomicOrdering::Release);
        drop(w);
        // The cached snapshot is stale now; free it.
        self.cache.clear();
    }

    fn get(&self, seek_key: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) {
        let uk = user_key(seek_key);
        let (slot, prefix) = self.slot(uk);
        // SAFETY: buckets live in the arena until the representation drops.
        let Some(bucket) = (unsafe { slot.load(AtomicOrdering::Acquire).as_ref() }) else {
            return;
        };
        bucket.visit_from(seek_key, &mut |e| {
            let ek = user_key(e.key());
            let same = match prefix {
                Some(p) => self.prefix(ek) == Some(p),
                None => ek == uk,
            };
            same && f(e.key(), e.value())
        });
    }

    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
        Box::new(SnapshotIter::new(
            self.sorted_view(),
            Arc::clone(&self.arena),
        ))
    }

    fn memory_usage(&self) -> MemUsage {
        let entry_bytes = self.entry_bytes.load(AtomicOrdering::Relaxed);
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
