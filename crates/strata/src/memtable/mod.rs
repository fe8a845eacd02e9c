//! Memtables: the in-memory write buffer of a keyspace.
//!
//! A [`MemTable`] wraps a [`MemTableRep`], the data structure that actually
//! holds entries. Every representation stores internal keys (user key +
//! trailer, see [`crate::key`]) and iterates them in
//! [`compare_internal`](crate::key::compare_internal) order; they differ
//! in insert, lookup and scan cost (the memory-buffer study, seed 003).
//! Chosen per keyspace with
//! [`crate::KeyspaceOptions::memtable`] (a [`MemTableKind`], also parsed from
//! its name) plus [`MemTableOptions`] for the kinds that need parameters.
//!
//! | name | structure | insert | point read (mutable) | iterator (mutable) |
//! |---|---|---|---|---|
//! | `skiplist` (default) | concurrent skiplist in an arena | `O(log n)` | `O(log n)` | live, `O(1)` to create |
//! | `vector` | append-only `Vec`, doubling | `O(1)` | sorted copy, cached until the next insert: `O(n log n)` after an insert | the same sorted copy |
//! | `vector-static` | `Vec` reserved from the buffer size / entry hint | `O(1)` | as `vector` | as `vector` |
//! | `vector-sorted` | sorted `Vec` | `O(n)` (binary search + shift) | `O(log n)` in place | live cursor, `O(log n)` a step |
//! | `vector-unsorted` | append-only `Vec`, never sorted | `O(1)` | linear scan `O(n)` | sorted copy, as `vector` |
//! | `hash-skiplist` | prefix hash → small skiplists | `O(log(n/N))` | `O(log(n/N))` in one bucket | sorted copy of all buckets |
//! | `hash-linklist` | prefix hash → sorted lists (→ skiplist past 256) | `O(n/N)` | `O(n/N)` in one bucket | sorted copy of all buckets |
//! | `adaptive` | one of the above, chosen at each switch | | | |
//!
//! Details and costs are in each submodule's documentation ([`vector`],
//! [`hash`], [`adaptive`]). Once frozen, `vector` and `vector-static` are
//! sorted in place (once) and every iterator shares them; the snapshot
//! kinds build one sorted copy for the flush.
//!
//! **Concurrency.** One writer inserts at a time (the write-group leader)
//! while readers and iterators run. The skiplist also takes concurrent
//! inserts (compare-and-swap linking) and never blocks readers; vectors use a
//! reader-writer lock; the hash kinds serialise inserts with a mutex and let
//! readers walk buckets without locks.
//!
//! **Point reads.** [`MemTableRep::get`] visits entries from the first one
//! `>= seek_key` in order. The total-order kinds continue until `f` stops
//! them or the entries end; the hash kinds stop where the seek key's prefix
//! ends (they cannot see other buckets cheaply). Both visit every version of
//! the seek key's user key, which is all a lookup needs.
//!
//! **Memory accounting** ([`MemUsage`]) feeds the flush trigger, so every
//! kind is charged for what it holds: entry bytes are exact (key + value);
//! metadata is computed per insert from `size_of` the nodes, slots and
//! buckets, actual `Vec` capacities (doubling slack, static reservations),
//! bucket arrays, and a glibc-like allocator model (8-byte header, 16-byte
//! rounding, 32-byte minimum). The skiplist counts the bytes its arena has
//! handed out (nodes, towers, alignment, abandoned block tails) rather than
//! a model. Sorted copies built for reads are
//! read-side scratch and are not counted.
//!
//! **Prefix extractors** (hash kinds; see [`prefix`]) return a prefix
//! *length*. A key whose prefix would be longer than the key (or that the
//! extractor rejects) is refused by the write path with
//! [`Error::InvalidArgument`](crate::Error::InvalidArgument) ([`MemTableOptions::check_key`]); a hash kind
//! without an extractor is refused when the keyspace is opened
//! ([`MemTableOptions::validate`]). Nothing panics: such a key reaching a
//! memtable anyway (log replay under changed options) goes to an overflow
//! bucket and is counted in [`RepCounters::out_of_domain`].

pub mod adaptive;
mod arena;
mod entry;
mod filter;
pub mod hash;
mod options;
pub mod prefix;
mod skiplist;
mod sw_skiplist;
pub mod vector;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering as AtomicOrdering};

pub use adaptive::{AdaptiveDecision, AdaptivePolicy, OpCounts};
pub use options::{MemTableKind, MemTableOptions};
pub use prefix::{CappedPrefix, FixedPrefix, FnPrefix, PrefixExtractor};
pub use skiplist::SkipListRep;

use crate::ids::FileNumber;
use crate::iter::InternalIterator;
use crate::key::SeqNo;
use crate::options::KeyspaceOptions;

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

/// Event counters of a representation (zero where not applicable).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RepCounters {
    /// Keys outside the prefix extractor's domain, kept in the overflow bucket.
    pub out_of_domain: usize,
    /// Hash-linklist buckets converted to skiplists.
    pub bucket_conversions: usize,
    /// Times a vector's slot array grew (a `vector-static` one should not).
    pub regrowths: usize,
    /// Sorted copies built for reads.
    pub snapshot_rebuilds: usize,
}

/// A memtable data structure. Inserts may come from one writer at a time
/// (the write-group leader); reads and iterators run concurrently with it.
pub trait MemTableRep: Send + Sync {
    /// Inserts an entry. Internal keys are unique (each carries its own
    /// sequence number).
    fn insert(&self, internal_key: &[u8], value: &[u8]);
    /// Calls `f` on entries from the first one `>= seek_key` onwards, in
    /// order, until `f` returns false or the entries end. Hash kinds end
    /// after the last entry sharing the seek key's prefix (see the module
    /// documentation); every kind visits all versions of the seek key's user
    /// key.
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
    /// True when the representation cannot take more entries without
    /// growing past what it reserved (`vector-static`).
    fn at_capacity(&self) -> bool {
        false
    }
    /// Event counters.
    fn counters(&self) -> RepCounters {
        RepCounters::default()
    }
}

/// Write buffer size assumed by [`MemTable::new`] (the keyspace default).
const DEFAULT_WRITE_BUFFER: usize = 64 << 20;

/// A write buffer with its bookkeeping.
pub struct MemTable {
    rep: Arc<dyn MemTableRep>,
    /// The configured kind (`Adaptive` for adaptive memtables).
    kind: MemTableKind,
    /// The representation in use.
    rep_kind: MemTableKind,
    /// Why an adaptive memtable uses `rep_kind`.
    decision: Option<AdaptiveDecision>,
    /// Unique id (for retention and stats).
    pub id: u64,
    /// The first write-ahead log that may hold this memtable's entries.
    pub log_number: FileNumber,
    largest_seqno: AtomicU64,
    deletions: AtomicUsize,
    frozen: AtomicBool,
    inserts: AtomicU64,
    point_reads: AtomicU64,
    range_reads: AtomicU64,
    /// An adaptive keyspace's first buffer (nothing observed yet): when it
    /// may change representation early; see [`MemTable::switch_due`].
    probe: Option<FirstBufferProbe>,
    /// The whole-key filter ([`MemTableOptions::whole_key_filter`]).
    filter: Option<filter::KeyFilter>,
}

/// Why a memtable must make way for another ([`MemTable::switch_due`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchDue {
    /// It is full: it becomes immutable, is flushed, and a new log starts.
    Full,
    /// An adaptive first buffer has seen enough to pick another
    /// representation: its entries move to one ([`MemTable::rehomed`]).
    Representation,
}

/// What an adaptive keyspace's first buffer needs to decide early.
struct FirstBufferProbe {
    /// Bytes after which the buffer may change representation early.
    bytes: usize,
    policy: AdaptivePolicy,
    /// Hash buckets a hash buffer of this keyspace would have (`None`: no
    /// prefix extractor).
    buckets: Option<usize>,
    write_buffer_size: usize,
    /// Set once the probe found the current representation right: the
    /// buffer then fills up as usual.
    settled: AtomicBool,
}

impl MemTable {
    /// An empty memtable of `kind` with default [`MemTableOptions`], sized
    /// for the default 64 MiB write buffer.
    pub fn new(kind: MemTableKind, id: u64, log_number: FileNumber) -> Self {
        Self::with_options(
            kind,
            &MemTableOptions::default(),
            DEFAULT_WRITE_BUFFER,
            id,
            log_number,
        )
    }

    /// An empty memtable of `kind` for a buffer of `write_buffer_size` bytes.
    pub fn with_options(
        kind: MemTableKind,
        opts: &MemTableOptions,
        write_buffer_size: usize,
        id: u64,
        log_number: FileNumber,
    ) -> Self {
        let rep_kind = match kind {
            MemTableKind::Adaptive => MemTableKind::SkipList,
            k => k,
        };
        Self::build(
            kind,
            rep_kind,
            None,
            opts,
            write_buffer_size,
            id,
            log_number,
        )
    }

    /// An empty memtable as a keyspace's options describe it.
    pub fn for_keyspace(opts: &KeyspaceOptions, id: u64, log_number: FileNumber) -> Self {
        Self::with_options(
            opts.memtable,
            &opts.memtable_options,
            opts.write_buffer_size,
            id,
            log_number,
        )
    }

    /// The memtable that replaces this one at a switch. For an adaptive
    /// keyspace its representation is chosen from what this memtable
    /// observed ([`adaptive::decide`]); otherwise as [`MemTable::for_keyspace`].
    pub fn successor(&self, opts: &KeyspaceOptions, id: u64, log_number: FileNumber) -> Self {
        if opts.memtable != MemTableKind::Adaptive {
            return Self::for_keyspace(opts, id, log_number);
        }
        let mo = &opts.memtable_options;
        let has_extractor = mo.prefix_extractor.is_some();
        let current = match (self.kind, self.rep_kind) {
            // Options changed under us: a hash buffer needs an extractor.
            (MemTableKind::Adaptive, k) if k.is_hashed() && !has_extractor => {
                MemTableKind::SkipList
            }
            (MemTableKind::Adaptive, k) => k,
            _ => MemTableKind::SkipList,
        };
        let observed = self.op_counts();
        let d = match &self.decision {
            // Too small a sample (say, an idle buffer switched with others):
            // keep the representation and the reason it was chosen for.
            Some(prev)
                if observed.total() < mo.adaptive.min_ops
                    && self.kind == MemTableKind::Adaptive
                    && prev.kind == current =>
            {
                AdaptiveDecision {
                    moved: None,
                    ..prev.clone()
                }
            }
            _ => adaptive::decide(
                &mo.adaptive,
                observed,
                self.bucket_load(
                    has_extractor.then(|| mo.bucket_count(opts.write_buffer_size)),
                    opts.write_buffer_size,
                ),
                current,
            ),
        };
        Self::build(
            MemTableKind::Adaptive,
            d.kind,
            Some(d),
            mo,
            opts.write_buffer_size,
            id,
            log_number,
        )
    }

    fn build(
        kind: MemTableKind,
        rep_kind: MemTableKind,
        decision: Option<AdaptiveDecision>,
        opts: &MemTableOptions,
        write_buffer_size: usize,
        id: u64,
        log_number: FileNumber,
    ) -> Self {
        let probe = (kind == MemTableKind::Adaptive && decision.is_none()).then(|| {
            let bytes = write_buffer_size as f64 * opts.adaptive.first_buffer_fraction;
            FirstBufferProbe {
                bytes: bytes as usize,
                policy: opts.adaptive.clone(),
                buckets: opts
                    .prefix_extractor
                    .is_some()
                    .then(|| opts.bucket_count(write_buffer_size)),
                write_buffer_size,
                settled: AtomicBool::new(false),
            }
        });
        MemTable {
            rep: rep_kind.create(opts, write_buffer_size),
            kind,
            rep_kind,
            decision,
            id,
            log_number,
            largest_seqno: AtomicU64::new(0),
            deletions: AtomicUsize::new(0),
            frozen: AtomicBool::new(false),
            inserts: AtomicU64::new(0),
            point_reads: AtomicU64::new(0),
            range_reads: AtomicU64::new(0),
            probe,
            filter: opts
                .filter_bytes(write_buffer_size)
                .map(filter::KeyFilter::with_bytes),
        }
    }

    /// True when reads should be counted (adaptive and still mutable).
    #[inline]
    fn observing(&self) -> bool {
        self.kind == MemTableKind::Adaptive && !self.frozen.load(AtomicOrdering::Relaxed)
    }

    /// Adds one entry. REQUIRES: one writer at a time (the write-group
    /// leader, or recovery), so the counters take plain stores: a locked
    /// read-modify-write per counter cost as much as a vector's whole insert.
    pub fn add(&self, internal_key: &[u8], value: &[u8], seqno: impl Into<SeqNo>, is_delete: bool) {
        let seqno = seqno.into();
        self.insert_entry(internal_key, value);
        if seqno.get() > self.largest_seqno.load(AtomicOrdering::Relaxed) {
            self.largest_seqno
                .store(seqno.get(), AtomicOrdering::Relaxed);
        }
        let n = self.inserts.load(AtomicOrdering::Relaxed);
        self.inserts.store(n + 1, AtomicOrdering::Relaxed);
        if is_delete {
            let d = self.deletions.load(AtomicOrdering::Relaxed);
            self.deletions.store(d + 1, AtomicOrdering::Relaxed);
        }
    }

    /// Inserts an entry into the representation and its key into the
    /// filter. The key goes into the filter first: a reader that finds the
    /// entry must not be turned away by the filter.
    fn insert_entry(&self, internal_key: &[u8], value: &[u8]) {
        if let Some(f) = &self.filter {
            f.insert(crate::key::user_key(internal_key));
        }
        self.rep.insert(internal_key, value);
    }

    /// See [`MemTableRep::get`]; visits nothing when the whole-key filter
    /// rules out `seek_key`'s user key (so it is for point lookups of that
    /// key, as every caller makes). Counted as a point read by adaptive
    /// memtables.
    pub fn get(&self, seek_key: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) {
        if self.observing() {
            self.point_reads.fetch_add(1, AtomicOrdering::Relaxed);
        }
        if let Some(filter) = &self.filter
            && seek_key.len() >= 8
            && !filter.may_contain(crate::key::user_key(seek_key))
        {
            return;
        }
        self.rep.get(seek_key, f);
    }

    /// Bytes of the whole-key filter (0 without one): allocated when the
    /// memtable is created, besides the write buffer.
    pub fn filter_bytes(&self) -> usize {
        self.filter.as_ref().map_or(0, filter::KeyFilter::bytes)
    }

    /// An iterator over every entry. Counted as a range read by adaptive
    /// memtables.
    pub fn iter(&self) -> Box<dyn InternalIterator> {
        if self.observing() {
            self.range_reads.fetch_add(1, AtomicOrdering::Relaxed);
        }
        Arc::clone(&self.rep).iter()
    }

    /// Memory held by the representation.
    pub fn memory_usage(&self) -> MemUsage {
        self.rep.memory_usage()
    }

    /// Whether the memtable must make way for another, and how; `None`
    /// while it has room. Full: it holds `write_buffer_size` bytes, or its
    /// representation is out of reserved room (`vector-static`). Checked by
    /// the write leader before each write.
    pub fn switch_due(&self, write_buffer_size: usize) -> Option<SwitchDue> {
        let used = self.memory_usage().total();
        if used >= write_buffer_size || self.rep.at_capacity() {
            Some(SwitchDue::Full)
        } else if self.probe_calls_for_switch(used) {
            Some(SwitchDue::Representation)
        } else {
            None
        }
    }

    /// An adaptive keyspace's first buffer changes representation early,
    /// once it holds `first_buffer_fraction` of the buffer and `min_ops`
    /// operations, if [`adaptive::decide`] would pick another one: a whole
    /// first buffer in the wrong one costs throughput. The check runs once:
    /// if it keeps the representation, the buffer fills up as usual.
    fn probe_calls_for_switch(&self, used: usize) -> bool {
        let Some(p) = &self.probe else {
            return false;
        };
        if used < p.bytes || p.settled.load(AtomicOrdering::Relaxed) {
            return false;
        }
        let seen = self.op_counts();
        if seen.total() < p.policy.min_ops {
            return false;
        }
        let load = self.bucket_load(p.buckets, p.write_buffer_size);
        let next = adaptive::decide(&p.policy, seen, load, self.rep_kind).kind;
        if next == self.rep_kind {
            p.settled.store(true, AtomicOrdering::Relaxed);
            return false;
        }
        true
    }

    /// The memtable that takes this one's place when
    /// [`SwitchDue::Representation`] is due: the representation
    /// [`MemTable::successor`] picks, holding a copy of every entry, on the
    /// same log. No log switch, no flush and no small level-0 file: the
    /// entries only move to another structure. Readers of this memtable keep
    /// reading it (it is not changed); new readers see the copy.
    /// REQUIRES: no concurrent writer (the write leader calls this).
    pub fn rehomed(&self, opts: &KeyspaceOptions, id: u64) -> Self {
        let mut next = self.successor(opts, id, self.log_number);
        // Not `self.iter()`: the copy is not a range read of the workload.
        let mut it = Arc::clone(&self.rep).iter();
        it.seek_to_first();
        let mut moved = 0u64;
        while it.valid() {
            next.insert_entry(it.key(), it.value());
            moved += 1;
            it.next();
        }
        next.largest_seqno = AtomicU64::new(self.largest_seqno().get());
        next.deletions = AtomicUsize::new(self.deletions.load(AtomicOrdering::Relaxed));
        if let Some(d) = &mut next.decision {
            d.moved = Some(moved);
        }
        next
    }

    /// The entries a full buffer of this memtable's average entry size would
    /// put in each of `buckets` hash buckets (`None` without buckets).
    fn bucket_load(&self, buckets: Option<usize>, write_buffer_size: usize) -> Option<f64> {
        let buckets = buckets?.max(1) as f64;
        let entries = self.len().max(1) as f64;
        let per_entry = (self.memory_usage().total() as f64 / entries).max(1.0);
        Some(write_buffer_size as f64 / per_entry / buckets)
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
        SeqNo(self.largest_seqno.load(AtomicOrdering::Relaxed))
    }

    /// Marks the memtable immutable.
    pub fn freeze(&self) {
        self.frozen.store(true, AtomicOrdering::Relaxed);
        self.rep.freeze();
    }

    /// The configured kind (`Adaptive` for an adaptive memtable).
    pub fn kind(&self) -> MemTableKind {
        self.kind
    }

    /// The representation in use.
    pub fn rep_kind(&self) -> MemTableKind {
        self.rep_kind
    }

    /// Why an adaptive memtable uses its representation (`None` for the
    /// first adaptive buffer and for other kinds).
    pub fn decision(&self) -> Option<&AdaptiveDecision> {
        self.decision.as_ref()
    }

    /// Operations observed (reads only by adaptive memtables, while mutable).
    pub fn op_counts(&self) -> OpCounts {
        OpCounts {
            inserts: self.inserts.load(AtomicOrdering::Relaxed),
            point_reads: self.point_reads.load(AtomicOrdering::Relaxed),
            range_reads: self.range_reads.load(AtomicOrdering::Relaxed),
        }
    }

    /// The representation's event counters.
    pub fn counters(&self) -> RepCounters {
        self.rep.counters()
    }
}

#[cfg(test)]
mod tests;
