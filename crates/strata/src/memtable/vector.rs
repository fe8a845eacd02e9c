//! Vector representations (RocksDB's `VectorRep` and the study's variants).
//!
//! Entries are copied into the representation's arena; a `Vec` of 8-byte
//! handles behind a reader-writer lock orders them. The single writer
//! appends or inserts under the write lock, readers take the read lock.
//!
//! | kind | insert | point read while mutable | iterator while mutable | freeze |
//! |---|---|---|---|---|
//! | `vector` | `O(1)` amortised append; the slot array doubles | sorted snapshot (below), then binary search | the sorted snapshot | sorts in place, `O(n log n)` once |
//! | `vector-static` | `O(1)` append into slots reserved up front from the buffer size and the entry-size hint | as `vector` | as `vector` | as `vector` |
//! | `vector-unsorted` | `O(1)` append | one linear scan, `O(n)` (V-Qscan) | the sorted snapshot | nothing: never sorted |
//! | `vector-sorted` | binary search + `Vec::insert`, `O(n)` moves | binary search in place, `O(log n)` | a live cursor: each step re-finds its key by binary search, `O(log n)`, no copy | nothing |
//!
//! **The sorted snapshot** (`vector`, `vector-static`, `vector-unsorted`):
//! a read copies the slot array (`n` pointer clones) under the read lock and
//! sorts the copy, `O(n log n)`, like RocksDB's `VectorRep`, which does this
//! on every read. Strata caches the sorted copy until the next insert: a read
//! that follows an insert pays the full copy and sort (so an interleaved
//! insert/read workload costs exactly what RocksDB's does), back-to-back
//! reads share it. The insert drops the stale copy. The copy (16 bytes per
//! entry while it lives) is read-side scratch and is **not** counted in
//! [`MemUsage`]; after `freeze` the `vector`/`vector-static` storage itself
//! is sorted and shared with iterators (no copy), while `vector-unsorted`
//! keeps one cached sorted copy for its iterators (the flush).
//!
//! Memory: entry bytes exact; metadata = the slot array's allocation at its
//! current *capacity* (so doubling slack and a static reservation are
//! counted in full), plus the arena's bytes beyond the entries' (the 8-byte
//! length header per entry, alignment, abandoned block tails), plus the
//! representation struct.

use std::cmp::Ordering;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use parking_lot::RwLock;

use super::arena::{Arena, block_size_for};
use super::entry::{
    SharedEntry, SnapshotIter, SortedCache, alloc_size, arena_overhead, cmp_entries, visit_sorted,
};
use super::{MemTableRep, MemUsage, RepCounters};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{compare_internal, user_key};

/// Adds `n` to a counter only one writer updates.
#[inline]
fn bump(counter: &AtomicUsize, n: usize) {
    counter.store(
        counter.load(AtomicOrdering::Relaxed) + n,
        AtomicOrdering::Relaxed,
    );
}

/// Bytes of one slot of the entry array.
const SLOT_BYTES: usize = std::mem::size_of::<SharedEntry>();

/// Which vector flavour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VectorMode {
    /// Grows by doubling; sorted at freeze.
    Dynamic,
    /// Capacity reserved up front; sorted at freeze.
    Static,
    /// Never sorted; point reads scan.
    Unsorted,
}

struct VecState {
    entries: Arc<Vec<SharedEntry>>,
    /// True once `freeze` sorted `entries` in place.
    sorted: bool,
}

/// `vector`, `vector-static` and `vector-unsorted`.
pub(crate) struct VectorRep {
    mode: VectorMode,
    /// Slots reserved up front (`vector-static`), else 0.
    reserved: usize,
    state: RwLock<VecState>,
    arena: Arc<Arena>,
    /// The sorted copy for reads while unsorted.
    cache: SortedCache,
    len: AtomicUsize,
    entry_bytes: AtomicUsize,
    slot_capacity: AtomicUsize,
    regrowths: AtomicUsize,
    rebuilds: AtomicUsize,
}

impl VectorRep {
    /// A vector of `mode` for a buffer of `write_buffer_size` bytes;
    /// `reserve` slots are allocated up front.
    pub(crate) fn new(mode: VectorMode, reserve: usize, write_buffer_size: usize) -> Self {
        let entries: Vec<SharedEntry> = Vec::with_capacity(reserve);
        let cap = entries.capacity();
        VectorRep {
            mode,
            reserved: if mode == VectorMode::Static {
                reserve
            } else {
                0
            },
            state: RwLock::new(VecState {
                entries: Arc::new(entries),
                sorted: false,
            }),
            arena: Arc::new(Arena::new(block_size_for(write_buffer_size))),
            cache: SortedCache::new(),
            len: AtomicUsize::new(0),
            entry_bytes: AtomicUsize::new(0),
            slot_capacity: AtomicUsize::new(cap),
            regrowths: AtomicUsize::new(0),
            rebuilds: AtomicUsize::new(0),
        }
    }

    /// The entries in order: the storage itself once sorted, else the
    /// cached sorted copy, rebuilt when an insert made it stale.
    fn sorted_view(&self) -> Arc<Vec<SharedEntry>> {
        let st = self.state.read();
        if st.sorted {
            return Arc::clone(&st.entries);
        }
        let n = st.entries.len();
        if let Some(snap) = self.cache.get(n) {
            return snap;
        }
        let mut copy: Vec<SharedEntry> = (*st.entries).clone();
        drop(st);
        copy.sort_unstable_by(cmp_entries);
        self.rebuilds.fetch_add(1, AtomicOrdering::Relaxed);
        let snap = Arc::new(copy);
        self.cache.put(n, &snap);
        // A freeze that sorted the storage while this copy was being built
        // may have cleared the cache before the put; the storage serves
        // every read from now on, so the copy would only hold memory.
        if self.state.read().sorted {
            self.cache.clear();
        }
        snap
    }

    /// `vector-unsorted` point read: one pass collects the versions of the
    /// seek key's user key at or after the seek key and the smallest entry of
    /// a larger user key; only those few are sorted. Should `f` ask for more
    /// after that, each further entry costs one more scan.
    fn get_linear(&self, seek_key: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) {
        let uk = user_key(seek_key);
        let (mut run, next) = {
            let st = self.state.read();
            let mut run: Vec<SharedEntry> = Vec::new();
            let mut next: Option<&SharedEntry> = None;
            for e in st.entries.iter() {
                let k = e.key();
                match user_key(k).cmp(uk) {
                    Ordering::Less => {}
                    Ordering::Equal => {
                        if compare_internal(k, seek_key) != Ordering::Less {
                            run.push(*e);
                        }
                    }
                    Ordering::Greater => {
                        if next.is_none_or(|n| compare_internal(k, n.key()) == Ordering::Less) {
                            next = Some(e);
                        }
                    }
                }
            }
            (run, next.copied())
        };
        run.sort_unstable_by(cmp_entries);
        let mut last = None;
        for e in run.into_iter().chain(next) {
            if !f(e.key(), e.value()) {
                return;
            }
            last = Some(e);
        }
        let Some(mut cur) = last else { return };
        loop {
            let nxt = {
                let st = self.state.read();
                let mut best: Option<&SharedEntry> = None;
                for e in st.entries.iter() {
                    if compare_internal(e.key(), cur.key()) == Ordering::Greater
                        && best.is_none_or(|b| cmp_entries(e, b) == Ordering::Less)
                    {
                        best = Some(e);
                    }
                }
                best.copied()
            };
            let Some(e) = nxt else { return };
            if !f(e.key(), e.value()) {
                return;
            }
            cur = e;
        }
    }
}

impl MemTableRep for VectorRep {
    fn insert(&self, internal_key: &[u8], value: &[u8]) {
        let payload = internal_key.len() + value.len();
        let e = SharedEntry::new_in(&self.arena, internal_key, value);
        {
            let mut st = self.state.write();
            // A reader may share the storage only once it is sorted (after
            // freeze); an insert after freeze then copies it (misuse, but
            // still correct).
            st.sorted = false;
            let v = Arc::make_mut(&mut st.entries);
            let before = v.capacity();
            v.push(e);
            let after = v.capacity();
            if after != before {
                self.slot_capacity.store(after, AtomicOrdering::Relaxed);
                if before > 0 {
                    self.regrowths.fetch_add(1, AtomicOrdering::Relaxed);
                }
            }
            // Writers are serialised by the write lock: plain stores.
            bump(&self.entry_bytes, payload);
            self.len.store(
                self.len.load(AtomicOrdering::Relaxed) + 1,
                AtomicOrdering::Release,
            );
        }
        // The cached sorted copy is stale now; free it.
        self.cache.clear();
    }

    fn get(&self, seek_key: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) {
        if self.mode == VectorMode::Unsorted {
            return self.get_linear(seek_key, f);
        }
        let snap = self.sorted_view();
        visit_sorted(&snap, seek_key, f);
    }

    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
        Box::new(SnapshotIter::new(
            self.sorted_view(),
            Arc::clone(&self.arena),
        ))
    }

    fn memory_usage(&self) -> MemUsage {
        let cap = self.slot_capacity.load(AtomicOrdering::Relaxed);
        let entry_bytes = self.entry_bytes.load(AtomicOrdering::Relaxed);
        MemUsage {
            entry_bytes,
            metadata_bytes: std::mem::size_of::<Self>()
                // The Arcs holding the Vec header and the arena.
                + alloc_size(2 * std::mem::size_of::<usize>() + std::mem::size_of::<Vec<SharedEntry>>())
                + alloc_size(2 * std::mem::size_of::<usize>() + std::mem::size_of::<Arena>())
                + alloc_size(cap * SLOT_BYTES)
                + arena_overhead(&self.arena, entry_bytes),
        }
    }

    fn len(&self) -> usize {
        self.len.load(AtomicOrdering::Acquire)
    }

    fn freeze(&self) {
        if self.mode == VectorMode::Unsorted {
            return;
        }
        {
            let mut st = self.state.write();
            if !st.sorted {
                // No reader holds the unsorted storage, so this does not copy.
                Arc::make_mut(&mut st.entries).sort_unstable_by(cmp_entries);
                st.sorted = true;
            }
        }
        self.cache.clear();
    }

    fn at_capacity(&self) -> bool {
        self.mode == VectorMode::Static && self.len() >= self.reserved
    }

    fn counters(&self) -> RepCounters {
        RepCounters {
            regrowths: self.regrowths.load(AtomicOrdering::Relaxed),
            snapshot_rebuilds: self.rebuilds.load(AtomicOrdering::Relaxed),
            ..RepCounters::default()
        }
    }
}

/// `vector-sorted`: kept sorted on insert.
pub(crate) struct SortedVectorRep {
    entries: RwLock<Vec<SharedEntry>>,
    arena: Arena,
    len: AtomicUsize,
    entry_bytes: AtomicUsize,
    slot_capacity: AtomicUsize,
    regrowths: AtomicUsize,
}

impl SortedVectorRep {
    /// An empty sorted vector for a buffer of `write_buffer_size` bytes.
    pub(crate) fn new(write_buffer_size: usize) -> Self {
        SortedVectorRep {
            entries: RwLock::new(Vec::new()),
            arena: Arena::new(block_size_for(write_buffer_size)),
            len: AtomicUsize::new(0),
            entry_bytes: AtomicUsize::new(0),
            slot_capacity: AtomicUsize::new(0),
            regrowths: AtomicUsize::new(0),
        }
    }
}

/// Index of the first entry `>= key` (or `> key` when `strict`).
fn lower(v: &[SharedEntry], key: &[u8], strict: bool) -> usize {
    v.partition_point(|e| match compare_internal(e.key(), key) {
        Ordering::Less => true,
        Ordering::Equal => strict,
        Ordering::Greater => false,
    })
}

impl MemTableRep for SortedVectorRep {
    fn insert(&self, internal_key: &[u8], value: &[u8]) {
        let payload = internal_key.len() + value.len();
        let e = SharedEntry::new_in(&self.arena, internal_key, value);
        let mut v = self.entries.write();
        let i = lower(&v, internal_key, false);
        let before = v.capacity();
        v.insert(i, e);
        let after = v.capacity();
        if after != before {
            self.slot_capacity.store(after, AtomicOrdering::Relaxed);
            if before > 0 {
                self.regrowths.fetch_add(1, AtomicOrdering::Relaxed);
            }
        }
        self.entry_bytes.fetch_add(payload, AtomicOrdering::Relaxed);
        self.len.fetch_add(1, AtomicOrdering::Release);
    }

    fn get(&self, seek_key: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) {
        // `f` runs under the read lock (it must not write to this memtable);
        // the writer waits for it.
        let v = self.entries.read();
        visit_sorted(&v, seek_key, f);
    }

    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
        Box::new(SortedCursor {
            rep: self,
            cur: None,
        })
    }

    fn memory_usage(&self) -> MemUsage {
        let cap = self.slot_capacity.load(AtomicOrdering::Relaxed);
        let entry_bytes = self.entry_bytes.load(AtomicOrdering::Relaxed);
        MemUsage {
            entry_bytes,
            metadata_bytes: std::mem::size_of::<Self>()
                + alloc_size(cap * SLOT_BYTES)
                + arena_overhead(&self.arena, entry_bytes),
        }
    }

    fn len(&self) -> usize {
        self.len.load(AtomicOrdering::Acquire)
    }

    fn counters(&self) -> RepCounters {
        RepCounters {
            regrowths: self.regrowths.load(AtomicOrdering::Relaxed),
            ..RepCounters::default()
        }
    }
}

/// A live cursor over a [`SortedVectorRep`]: it holds its current entry and
/// re-finds its place by binary search on every move, so it never copies
/// the vector and, like a skiplist iterator, may see entries inserted after
/// its creation (readers filter by sequence number).
struct SortedCursor {
    rep: Arc<SortedVectorRep>,
    cur: Option<SharedEntry>,
}

impl InternalIterator for SortedCursor {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn seek_to_first(&mut self) {
        self.cur = self.rep.entries.read().first().copied();
    }
    fn seek_to_last(&mut self) {
        self.cur = self.rep.entries.read().last().copied();
    }
    fn seek(&mut self, target: &[u8]) {
        let v = self.rep.entries.read();
        self.cur = v.get(lower(&v, target, false)).copied();
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let v = self.rep.entries.read();
        self.cur = lower(&v, target, true).checked_sub(1).map(|i| v[i]);
    }
    fn next(&mut self) {
        let Some(cur) = self.cur.take() else { return };
        let v = self.rep.entries.read();
        self.cur = v.get(lower(&v, cur.key(), true)).copied();
    }
    fn prev(&mut self) {
        let Some(cur) = self.cur.take() else { return };
        let v = self.rep.entries.read();
        self.cur = lower(&v, cur.key(), false).checked_sub(1).map(|i| v[i]);
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[][..], |e| e.key())
    }
    fn value(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[][..], |e| e.value())
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}
