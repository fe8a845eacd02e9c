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
//! [`Error::InvalidArgument`] ([`MemTableOptions::check_key`]); a hash kind
//! without an extractor is refused when the keyspace is opened
//! ([`MemTableOptions::validate`]). Nothing panics: such a key reaching a
//! memtable anyway (log replay under changed options) goes to an overflow
//! bucket and is counted in [`RepCounters::out_of_domain`].

pub mod adaptive;
mod arena;
mod entry;
pub mod hash;
pub mod prefix;
mod skiplist;
mod sw_skiplist;
pub mod vector;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering as AtomicOrdering};

pub use adaptive::{AdaptiveDecision, AdaptivePolicy, OpCounts};
pub use prefix::{CappedPrefix, FixedPrefix, FnPrefix, PrefixExtractor};
pub use skiplist::SkipListRep;

use crate::error::{Error, Result};
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

/// The memtable representations Strata offers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemTableKind {
    /// A concurrent skiplist: good at everything, best at range scans.
    #[default]
    SkipList,
    /// An append-only vector grown by doubling, sorted when frozen: the
    /// fastest inserts, the slowest reads while mutable.
    Vector,
    /// A vector whose capacity is reserved up front from the write buffer
    /// size and [`MemTableOptions::expected_entry_bytes`].
    VectorStatic,
    /// A vector kept sorted on insert.
    VectorSorted,
    /// A vector that is never sorted; point reads scan it.
    VectorUnsorted,
    /// Prefix-hashed buckets of small skiplists (needs a prefix extractor).
    HashSkipList,
    /// Prefix-hashed buckets of sorted linked lists that become skiplists
    /// past a threshold (needs a prefix extractor).
    HashLinkList,
    /// Starts as a skiplist and picks each next buffer's representation from
    /// the operation mix it observed.
    Adaptive,
}

impl MemTableKind {
    /// Every kind, for tests and benchmarks that run the whole family.
    pub const ALL: &'static [MemTableKind] = &[
        MemTableKind::SkipList,
        MemTableKind::Vector,
        MemTableKind::VectorStatic,
        MemTableKind::VectorSorted,
        MemTableKind::VectorUnsorted,
        MemTableKind::HashSkipList,
        MemTableKind::HashLinkList,
        MemTableKind::Adaptive,
    ];

    /// The name used in options, flags and benchmark output.
    pub fn name(&self) -> &'static str {
        match self {
            MemTableKind::SkipList => "skiplist",
            MemTableKind::Vector => "vector",
            MemTableKind::VectorStatic => "vector-static",
            MemTableKind::VectorSorted => "vector-sorted",
            MemTableKind::VectorUnsorted => "vector-unsorted",
            MemTableKind::HashSkipList => "hash-skiplist",
            MemTableKind::HashLinkList => "hash-linklist",
            MemTableKind::Adaptive => "adaptive",
        }
    }

    /// True for the kinds that hash on a key prefix.
    pub fn is_hashed(&self) -> bool {
        matches!(
            self,
            MemTableKind::HashSkipList | MemTableKind::HashLinkList
        )
    }

    /// Checks the kind alone (its options are checked by
    /// [`MemTableOptions::validate`]).
    pub fn validate(&self) -> Result<()> {
        Ok(())
    }

    /// Creates an empty representation of this kind for a buffer of
    /// `write_buffer_size` bytes. `Adaptive` starts as a skiplist. Never
    /// fails: options that validation would refuse degrade gracefully (a hash
    /// kind without an extractor keeps every key in its overflow bucket).
    pub fn create(&self, opts: &MemTableOptions, write_buffer_size: usize) -> Arc<dyn MemTableRep> {
        use hash::{BucketPolicy, HashRep};
        use vector::{SortedVectorRep, VectorMode, VectorRep};
        match self {
            MemTableKind::SkipList | MemTableKind::Adaptive => {
                Arc::new(SkipListRep::new(write_buffer_size))
            }
            MemTableKind::Vector => {
                Arc::new(VectorRep::new(VectorMode::Dynamic, 0, write_buffer_size))
            }
            MemTableKind::VectorStatic => Arc::new(VectorRep::new(
                VectorMode::Static,
                opts.static_capacity(write_buffer_size),
                write_buffer_size,
            )),
            MemTableKind::VectorSorted => Arc::new(SortedVectorRep::new(write_buffer_size)),
            MemTableKind::VectorUnsorted => {
                Arc::new(VectorRep::new(VectorMode::Unsorted, 0, write_buffer_size))
            }
            MemTableKind::HashSkipList => Arc::new(HashRep::new(
                BucketPolicy::SkipList,
                opts.bucket_count(write_buffer_size),
                opts.prefix_extractor.clone(),
                write_buffer_size,
            )),
            MemTableKind::HashLinkList => Arc::new(HashRep::new(
                BucketPolicy::LinkList {
                    threshold: opts.linklist_threshold.max(1),
                },
                opts.bucket_count(write_buffer_size),
                opts.prefix_extractor.clone(),
                write_buffer_size,
            )),
        }
    }
}

impl fmt::Display for MemTableKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for MemTableKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let s = match s {
            "vector-dynamic" => "vector",
            other => other,
        };
        MemTableKind::ALL
            .iter()
            .copied()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = MemTableKind::ALL.iter().map(|k| k.name()).collect();
                Error::InvalidArgument(format!(
                    "unknown memtable kind {s:?} (known: {})",
                    names.join(", ")
                ))
            })
    }
}

/// Parameters of the representations that need them.
#[derive(Clone)]
pub struct MemTableOptions {
    /// Buckets of the hash kinds; 0 (default) sizes them from the write
    /// buffer: one bucket per 4 expected entries, between 16 and 2^20. An
    /// explicit count whose bucket array (8 bytes a bucket) would exceed half
    /// the write buffer is refused.
    pub hash_buckets: usize,
    /// Chooses the prefix the hash kinds hash on; required by them.
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    /// Entries after which a hash-linklist bucket becomes a skiplist
    /// (default 256).
    pub linklist_threshold: usize,
    /// Expected bytes of one entry (key + value): sizes the `vector-static`
    /// reservation and the automatic bucket count (default 128).
    pub expected_entry_bytes: usize,
    /// Thresholds of the adaptive kind.
    pub adaptive: AdaptivePolicy,
}

impl Default for MemTableOptions {
    fn default() -> Self {
        MemTableOptions {
            hash_buckets: 0,
            prefix_extractor: None,
            linklist_threshold: 256,
            expected_entry_bytes: 128,
            adaptive: AdaptivePolicy::default(),
        }
    }
}

impl fmt::Debug for MemTableOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemTableOptions")
            .field("hash_buckets", &self.hash_buckets)
            .field(
                "prefix_extractor",
                &self.prefix_extractor.as_ref().map(|x| x.name().to_string()),
            )
            .field("linklist_threshold", &self.linklist_threshold)
            .field("expected_entry_bytes", &self.expected_entry_bytes)
            .field("adaptive", &self.adaptive)
            .finish()
    }
}

/// Largest accepted bucket count.
const MAX_BUCKETS: usize = 1 << 26;

impl MemTableOptions {
    /// Options with a [`FixedPrefix`] of `len` bytes.
    pub fn fixed_prefix(len: usize) -> Self {
        MemTableOptions::default().prefix_extractor(Arc::new(FixedPrefix::new(len)))
    }

    /// Sets the prefix extractor.
    pub fn prefix_extractor(mut self, x: Arc<dyn PrefixExtractor>) -> Self {
        self.prefix_extractor = Some(x);
        self
    }

    /// Sets the bucket count of the hash kinds.
    pub fn hash_buckets(mut self, n: usize) -> Self {
        self.hash_buckets = n;
        self
    }

    /// Buckets used for a buffer of `write_buffer_size` bytes.
    pub fn bucket_count(&self, write_buffer_size: usize) -> usize {
        if self.hash_buckets > 0 {
            return self.hash_buckets.min(MAX_BUCKETS);
        }
        let entries = write_buffer_size / self.expected_entry_bytes.max(1);
        (entries / 4).clamp(16, 1 << 20)
    }

    /// Slots `vector-static` reserves for a buffer of `write_buffer_size`
    /// bytes: the entries that fit if each takes `expected_entry_bytes`.
    pub fn static_capacity(&self, write_buffer_size: usize) -> usize {
        (write_buffer_size / self.expected_entry_bytes.max(1)).max(1)
    }

    /// Bytes a buffer of `kind` allocates when it is created, before any
    /// write: `vector-static`'s slot array and the hash kinds' bucket array.
    pub fn up_front_bytes(&self, kind: MemTableKind, write_buffer_size: usize) -> usize {
        match kind {
            MemTableKind::VectorStatic => self
                .static_capacity(write_buffer_size)
                .saturating_mul(std::mem::size_of::<entry::SharedEntry>()),
            k if k.is_hashed() => self
                .bucket_count(write_buffer_size)
                .saturating_mul(std::mem::size_of::<usize>()),
            _ => 0,
        }
    }

    /// Checks the options `kind` uses, for a buffer of `write_buffer_size`.
    pub fn validate(&self, kind: MemTableKind, write_buffer_size: usize) -> Result<()> {
        let bad = |s: String| Err(Error::InvalidArgument(s));
        if self.expected_entry_bytes == 0 {
            return bad("memtable_options.expected_entry_bytes must be at least 1".into());
        }
        if kind.is_hashed() && self.prefix_extractor.is_none() {
            return bad(format!(
                "memtable kind {kind} needs a prefix extractor: set \
                 KeyspaceOptions::memtable_options.prefix_extractor (for example \
                 MemTableOptions::fixed_prefix(n)), or use another kind"
            ));
        }
        // `adaptive` may pick a hash buffer when it has an extractor.
        let may_hash =
            kind.is_hashed() || (kind == MemTableKind::Adaptive && self.prefix_extractor.is_some());
        if may_hash {
            if self.hash_buckets > MAX_BUCKETS {
                return bad(format!(
                    "memtable_options.hash_buckets {} exceeds the limit of {MAX_BUCKETS}",
                    self.hash_buckets
                ));
            }
            let array = self.bucket_count(write_buffer_size) * std::mem::size_of::<usize>();
            if array > write_buffer_size / 2 {
                return bad(format!(
                    "memtable_options.hash_buckets {}: the bucket array ({array} bytes) would \
                     take more than half of the {write_buffer_size}-byte write buffer",
                    self.hash_buckets
                ));
            }
        }
        if kind == MemTableKind::HashLinkList && self.linklist_threshold == 0 {
            return bad("memtable_options.linklist_threshold must be at least 1".into());
        }
        if kind == MemTableKind::Adaptive {
            self.adaptive.validate().map_err(Error::InvalidArgument)?;
        }
        Ok(())
    }

    /// Checks that a key written to a keyspace with memtable `kind` is in the
    /// prefix extractor's domain, when that kind hashes on prefixes (the hash
    /// kinds, and `adaptive` when an extractor is set, since it may pick a
    /// hash buffer). Called by the write path before anything is logged.
    pub fn check_key(&self, kind: MemTableKind, user_key: &[u8]) -> Result<()> {
        let uses = kind.is_hashed() || kind == MemTableKind::Adaptive;
        let Some(x) = self.prefix_extractor.as_deref().filter(|_| uses) else {
            return Ok(());
        };
        match x.prefix_len(user_key) {
            Some(n) if n <= user_key.len() => Ok(()),
            got => Err(Error::InvalidArgument(format!(
                "key of {} bytes is outside the domain of prefix extractor {} \
                 (memtable {kind}): {}",
                user_key.len(),
                x.name(),
                match got {
                    Some(n) => format!("prefix length {n} exceeds the key"),
                    None => "the extractor rejects it".to_string(),
                }
            ))),
        }
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
        self.rep.insert(internal_key, value);
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

    /// See [`MemTableRep::get`]. Counted as a point read by adaptive memtables.
    pub fn get(&self, seek_key: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) {
        if self.observing() {
            self.point_reads.fetch_add(1, AtomicOrdering::Relaxed);
        }
        self.rep.get(seek_key, f);
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
            next.rep.insert(it.key(), it.value());
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
mod tests {
    use super::*;
    use crate::key::{ValueKind, compare_internal, make_internal_key, make_seek_key};

    fn opts() -> MemTableOptions {
        MemTableOptions::default().prefix_extractor(Arc::new(CappedPrefix::new(1)))
    }

    fn mem(kind: MemTableKind) -> MemTable {
        MemTable::with_options(kind, &opts(), 1 << 20, 1, FileNumber(1))
    }

    fn collect(it: &mut dyn InternalIterator) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push(it.key().to_vec());
            it.next();
        }
        out
    }

    #[test]
    fn every_kind_iterates_in_internal_order_both_ways() {
        for kind in MemTableKind::ALL {
            for freeze in [false, true] {
                let m = mem(*kind);
                let mut keys = Vec::new();
                for (i, k) in [b"b".as_ref(), b"a", b"c", b"b", b""].iter().enumerate() {
                    let ik = make_internal_key(k, i as u64 + 1, ValueKind::Put);
                    m.add(&ik, b"v", i as u64 + 1, false);
                    keys.push(ik);
                }
                if freeze {
                    m.freeze();
                }
                keys.sort_by(|a, b| compare_internal(a, b));
                let mut it = m.iter();
                assert_eq!(collect(it.as_mut()), keys, "{kind}");
                it.seek_to_last();
                let mut back = Vec::new();
                while it.valid() {
                    back.push(it.key().to_vec());
                    it.prev();
                }
                back.reverse();
                assert_eq!(back, keys, "{kind}");
            }
        }
    }

    #[test]
    fn get_starts_at_newest_visible_version() {
        for kind in MemTableKind::ALL {
            let m = mem(*kind);
            m.add(
                &make_internal_key(b"k", 3, ValueKind::Put),
                b"three",
                3,
                false,
            );
            m.add(
                &make_internal_key(b"k", 7, ValueKind::Put),
                b"seven",
                7,
                false,
            );
            m.add(
                &make_internal_key(b"j", 8, ValueKind::Put),
                b"other",
                8,
                false,
            );
            let mut seen = Vec::new();
            m.get(&make_seek_key(b"k", 5), &mut |k, v| {
                seen.push((k.to_vec(), v.to_vec()));
                false
            });
            assert_eq!(seen[0].1, b"three", "{kind}");
            assert_eq!(m.largest_seqno().get(), 8);
            let u = m.memory_usage();
            assert_eq!(u.entry_bytes, 3 * 9 + 5 + 5 + 5, "{kind}");
            assert!(u.metadata_bytes > 0);
        }
    }

    #[test]
    fn unknown_kind_name_is_a_clear_error() {
        let e = "btree".parse::<MemTableKind>().expect_err("unknown kind");
        assert!(e.to_string().contains("skiplist"), "{e}");
        assert!(e.to_string().contains("hash-linklist"), "{e}");
    }

    #[test]
    fn names_round_trip_and_default_is_skiplist() {
        assert_eq!(MemTableKind::default(), MemTableKind::SkipList);
        assert_eq!(MemTableKind::ALL.len(), 8);
        for kind in MemTableKind::ALL {
            assert_eq!(kind.to_string().parse::<MemTableKind>().ok(), Some(*kind));
        }
        assert_eq!(
            "vector-dynamic".parse::<MemTableKind>().ok(),
            Some(MemTableKind::Vector)
        );
    }

    /// Metadata must grow with every entry (each has its own allocation and
    /// a node or slot), and entry bytes must be exact.
    #[test]
    fn metadata_grows_with_entries_for_every_kind() {
        for kind in MemTableKind::ALL {
            let m = mem(*kind);
            let mut last = m.memory_usage();
            let mut payload = 0;
            for i in 0..600u64 {
                let k = make_internal_key(format!("key{i:05}").as_bytes(), i + 1, ValueKind::Put);
                m.add(&k, b"value", i + 1, false);
                payload += k.len() + 5;
                let u = m.memory_usage();
                assert_eq!(u.entry_bytes, payload, "{kind}");
                assert!(
                    u.metadata_bytes > last.metadata_bytes,
                    "{kind} at {i}: {u:?} vs {last:?}"
                );
                last = u;
            }
            // At least one pointer-sized slot or link per entry, plus the
            // entry's own allocation header.
            assert!(last.metadata_bytes >= 600 * 16, "{kind}: {last:?}");
        }
    }

    #[test]
    fn hash_kinds_count_the_bucket_array() {
        for kind in [MemTableKind::HashSkipList, MemTableKind::HashLinkList] {
            // A slot is a pointer; hash-linklist also keeps a 4-byte length
            // per bucket for its conversion threshold.
            let per_bucket = match kind {
                MemTableKind::HashLinkList => 12,
                _ => 8,
            };
            let small =
                MemTable::with_options(kind, &opts().hash_buckets(16), 1 << 20, 1, FileNumber(1));
            let big = MemTable::with_options(
                kind,
                &opts().hash_buckets(10_016),
                1 << 20,
                1,
                FileNumber(1),
            );
            let (s, b) = (small.memory_usage(), big.memory_usage());
            assert_eq!(s.entry_bytes, 0);
            assert!(s.metadata_bytes >= 16 * per_bucket, "{kind}: {s:?}");
            let diff = b.metadata_bytes - s.metadata_bytes;
            assert!(
                (10_000 * per_bucket..=10_000 * per_bucket + 32).contains(&diff),
                "{kind}: {diff}"
            );
            // A hash-skiplist bucket's head tower is allocated with its first
            // entry, so that entry costs more than one landing in an existing
            // bucket; a list's head is its slot, so both cost the same.
            let k1 = make_internal_key(b"a1", 1, ValueKind::Put);
            let k2 = make_internal_key(b"a2", 2, ValueKind::Put);
            small.add(&k1, b"", 1, false);
            let first = small.memory_usage().metadata_bytes - s.metadata_bytes;
            small.add(&k2, b"", 2, false);
            let second = small.memory_usage().metadata_bytes - s.metadata_bytes - first;
            match kind {
                MemTableKind::HashLinkList => assert_eq!(first, second, "{kind}"),
                _ => assert!(first > second, "{kind}: {first} vs {second}"),
            }
        }
    }

    #[test]
    fn hash_linklist_conversion_is_counted() {
        let o = MemTableOptions {
            linklist_threshold: 8,
            ..opts().hash_buckets(1)
        };
        let m = MemTable::with_options(MemTableKind::HashLinkList, &o, 1 << 20, 1, FileNumber(1));
        let mut deltas = Vec::new();
        for i in 0..20u64 {
            let before = m.memory_usage().metadata_bytes;
            m.add(
                &make_internal_key(format!("a{i:02}").as_bytes(), i + 1, ValueKind::Put),
                b"",
                i + 1,
                false,
            );
            deltas.push(m.memory_usage().metadata_bytes - before);
        }
        assert_eq!(m.counters().bucket_conversions, 1);
        // The converting insert pays for a skiplist node per moved entry.
        assert!(deltas[8] > 8 * deltas[7], "{deltas:?}");
    }

    #[test]
    fn vector_static_reserves_up_front_and_fills_without_regrowth() {
        let o = MemTableOptions {
            expected_entry_bytes: 1024,
            ..MemTableOptions::default()
        };
        let m = MemTable::with_options(MemTableKind::VectorStatic, &o, 64 * 1024, 1, FileNumber(1));
        let empty = m.memory_usage();
        assert!(empty.metadata_bytes >= 64 * 8, "{empty:?}");
        let dynamic = MemTable::with_options(MemTableKind::Vector, &o, 64 * 1024, 1, FileNumber(1));
        assert!(dynamic.memory_usage().metadata_bytes < empty.metadata_bytes);
        for i in 0..64u64 {
            assert_ne!(m.switch_due(usize::MAX), Some(SwitchDue::Full));
            m.add(
                &make_internal_key(&i.to_be_bytes(), i + 1, ValueKind::Put),
                b"v",
                i + 1,
                false,
            );
        }
        assert_eq!(
            m.switch_due(usize::MAX),
            Some(SwitchDue::Full),
            "64 slots reserved, 64 used"
        );
        assert_eq!(m.counters().regrowths, 0);
        // The slot array did not move: only per-entry overhead was added.
        assert!(m.memory_usage().metadata_bytes < empty.metadata_bytes + 64 * 64);
    }

    #[test]
    fn vector_reads_share_a_sorted_copy_until_the_next_insert() {
        let m = mem(MemTableKind::Vector);
        for i in 0..10u64 {
            m.add(
                &make_internal_key(&[b'a' + (i % 3) as u8], i + 1, ValueKind::Put),
                b"v",
                i + 1,
                false,
            );
        }
        let seek = make_seek_key(b"b", 100);
        m.get(&seek, &mut |_, _| false);
        drop(m.iter());
        m.get(&seek, &mut |_, _| false);
        assert_eq!(m.counters().snapshot_rebuilds, 1);
        m.add(
            &make_internal_key(b"z", 11, ValueKind::Put),
            b"v",
            11,
            false,
        );
        m.get(&seek, &mut |_, _| false);
        assert_eq!(m.counters().snapshot_rebuilds, 2);
        m.freeze();
        drop(m.iter());
        m.get(&seek, &mut |_, _| false);
        assert_eq!(m.counters().snapshot_rebuilds, 2, "frozen: sorted in place");
    }

    #[test]
    fn hash_kinds_without_extractor_are_refused_with_a_clear_error() {
        for kind in [MemTableKind::HashSkipList, MemTableKind::HashLinkList] {
            let e = MemTableOptions::default()
                .validate(kind, 1 << 20)
                .expect_err("no extractor");
            assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
            assert!(e.to_string().contains("prefix extractor"), "{e}");
            assert!(opts().validate(kind, 1 << 20).is_ok());
            let e = opts()
                .hash_buckets(1 << 20)
                .validate(kind, 1 << 20)
                .expect_err("bucket array larger than the buffer");
            assert!(e.to_string().contains("bucket array"), "{e}");
            // Still usable (degrades to the overflow bucket) without a panic.
            let m = MemTable::new(kind, 1, FileNumber(1));
            m.add(&make_internal_key(b"k", 1, ValueKind::Put), b"v", 1, false);
            let mut n = 0;
            m.get(&make_seek_key(b"k", 1), &mut |_, _| {
                n += 1;
                true
            });
            assert_eq!(n, 1);
            assert_eq!(m.counters().out_of_domain, 1);
        }
        assert!(
            MemTableOptions::default()
                .validate(MemTableKind::Adaptive, 1 << 20)
                .is_ok()
        );
    }

    #[test]
    fn keys_outside_the_extractor_domain_are_errors_at_the_write_path() {
        let o = MemTableOptions::fixed_prefix(4);
        for kind in [
            MemTableKind::HashSkipList,
            MemTableKind::HashLinkList,
            MemTableKind::Adaptive,
        ] {
            let e = o
                .check_key(kind, b"abc")
                .expect_err("prefix longer than key");
            assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
            assert!(e.to_string().contains("prefix length 4"), "{e}");
            assert!(o.check_key(kind, b"abcd").is_ok());
        }
        assert!(
            o.check_key(MemTableKind::SkipList, b"a").is_ok(),
            "not used by skiplist"
        );
        let picky = MemTableOptions::default()
            .prefix_extractor(Arc::new(FnPrefix::new("dot", |k: &[u8]| {
                k.iter().position(|&b| b == b'.')
            })));
        let e = picky
            .check_key(MemTableKind::HashSkipList, b"nodot")
            .expect_err("rejected");
        assert!(e.to_string().contains("rejects"), "{e}");
    }

    fn adaptive_opts(extractor: bool) -> KeyspaceOptions {
        let mut o = KeyspaceOptions::default().memtable(MemTableKind::Adaptive);
        o.memtable_options.adaptive.min_ops = 100;
        if extractor {
            o.memtable_options.prefix_extractor = Some(Arc::new(CappedPrefix::new(2)));
        }
        o
    }

    fn drive(m: &MemTable, inserts: u64, points: u64, ranges: u64) {
        for i in 0..inserts {
            m.add(
                &make_internal_key(&i.to_be_bytes(), i + 1, ValueKind::Put),
                b"v",
                i + 1,
                false,
            );
        }
        for i in 0..points {
            m.get(
                &make_seek_key(&i.to_be_bytes(), u64::MAX >> 8),
                &mut |_, _| false,
            );
        }
        for _ in 0..ranges {
            drop(m.iter());
        }
    }

    #[test]
    fn adaptive_first_buffer_is_switched_early_once_it_can_decide() {
        let mut o = adaptive_opts(true);
        o.write_buffer_size = 1 << 20;
        o.memtable_options.adaptive.first_buffer_fraction = 0.25;
        let first = MemTable::for_keyspace(&o, 1, FileNumber(1));
        let quarter = o.write_buffer_size / 4;
        // Past a quarter of the buffer but short of `min_ops` (100): not yet.
        let big = vec![0u8; quarter / 50];
        for i in 0..60u64 {
            first.add(
                &make_internal_key(&i.to_be_bytes(), i + 1, ValueKind::Put),
                &big,
                i + 1,
                false,
            );
        }
        assert!(first.memory_usage().total() >= quarter);
        assert_eq!(first.switch_due(o.write_buffer_size), None);
        drive(&first, 0, 40, 0);
        assert_eq!(
            first.switch_due(o.write_buffer_size),
            Some(SwitchDue::Representation),
            "100 operations seen, point-read heavy: a hash buffer is due"
        );
        assert_ne!(first.switch_due(o.write_buffer_size), Some(SwitchDue::Full));
        // A mix the skiplist suits (range reads) keeps filling the buffer:
        // switching would change nothing.
        let ranged = MemTable::for_keyspace(&o, 4, FileNumber(4));
        for i in 0..60u64 {
            ranged.add(
                &make_internal_key(&i.to_be_bytes(), i + 1, ValueKind::Put),
                &big,
                i + 1,
                false,
            );
        }
        drive(&ranged, 0, 0, 40);
        assert!(ranged.switch_due(o.write_buffer_size).is_none());
        drive(&ranged, 0, 400, 0);
        assert!(
            ranged.switch_due(o.write_buffer_size).is_none(),
            "the probe ran once and kept the skiplist"
        );
        // Its successors are whole buffers.
        let second = first.successor(&o, 2, FileNumber(2));
        for i in 0..60u64 {
            second.add(
                &make_internal_key(&i.to_be_bytes(), i + 1, ValueKind::Put),
                &big,
                i + 1,
                false,
            );
        }
        drive(&second, 0, 200, 0);
        assert!(second.memory_usage().total() >= quarter);
        assert!(second.switch_due(o.write_buffer_size).is_none());
        // A fixed kind never switches early.
        let fixed = MemTable::for_keyspace(
            &o.clone().memtable(MemTableKind::SkipList),
            3,
            FileNumber(3),
        );
        drive(&fixed, 200, 200, 0);
        for i in 0..60u64 {
            fixed.add(
                &make_internal_key(&(i + 1000).to_be_bytes(), i + 1, ValueKind::Put),
                &big,
                i + 1,
                false,
            );
        }
        assert!(fixed.switch_due(o.write_buffer_size).is_none());
    }

    #[test]
    fn an_early_switch_moves_every_entry_into_the_new_representation() {
        let mut o = adaptive_opts(true);
        o.write_buffer_size = 1 << 20;
        let first = MemTable::for_keyspace(&o, 1, FileNumber(7));
        let mut keys = Vec::new();
        for i in 0..300u64 {
            // Some keys twice, some deleted: every version moves.
            let k = (i % 200).to_be_bytes();
            let ik = make_internal_key(&k, i + 1, ValueKind::Put);
            first.add(&ik, &i.to_le_bytes(), i + 1, false);
            keys.push((ik, i.to_le_bytes().to_vec()));
        }
        for i in 0..5u64 {
            let ik = make_internal_key(&i.to_be_bytes(), 301 + i, ValueKind::Delete);
            first.add(&ik, b"", 301 + i, true);
            keys.push((ik, Vec::new()));
        }
        drive(&first, 0, 2000, 0);
        let reads_before = first.op_counts();
        let moved = first.rehomed(&o, 2);
        assert_eq!(first.op_counts(), reads_before, "the copy is not a read");
        assert_eq!(moved.rep_kind(), MemTableKind::HashLinkList);
        assert_eq!(
            moved.log_number,
            FileNumber(7),
            "same log: nothing was flushed"
        );
        assert_eq!(moved.largest_seqno().get(), 305);
        assert_eq!(moved.deletions.load(AtomicOrdering::Relaxed), 5);
        assert_eq!(moved.len(), keys.len());
        let d = moved.decision().expect("decided");
        assert_eq!(d.moved, Some(keys.len() as u64));
        assert!(d.to_string().contains("305 entries moved"), "{d}");
        keys.sort_by(|a, b| compare_internal(&a.0, &b.0));
        let mut it = moved.iter();
        it.seek_to_first();
        for (k, v) in &keys {
            assert!(it.valid());
            assert_eq!((it.key(), it.value()), (k.as_slice(), v.as_slice()));
            it.next();
        }
        assert!(!it.valid());
        // The copy's own buffer is no longer a first buffer: it fills up,
        // and its successor decides afresh without the moved count.
        assert_eq!(moved.switch_due(o.write_buffer_size), None);
        let next = moved.successor(&o, 3, FileNumber(8));
        assert_eq!(next.decision().expect("decided").moved, None);
    }

    #[test]
    fn adaptive_picks_the_next_representation_from_the_observed_mix() {
        let o = adaptive_opts(true);
        let first = MemTable::for_keyspace(&o, 1, FileNumber(1));
        assert_eq!(
            (first.kind(), first.rep_kind()),
            (MemTableKind::Adaptive, MemTableKind::SkipList)
        );
        assert!(first.decision().is_none());

        drive(&first, 500, 0, 0);
        let second = first.successor(&o, 2, FileNumber(2));
        assert_eq!(second.rep_kind(), MemTableKind::Vector);
        let d = second.decision().expect("decided").to_string();
        assert!(
            d.contains("insert-only") && d.contains("500 inserts"),
            "{d}"
        );

        drive(&second, 200, 300, 0);
        let third = second.successor(&o, 3, FileNumber(3));
        assert_eq!(
            third.rep_kind(),
            MemTableKind::HashLinkList,
            "{:?}",
            third.decision()
        );
        // The same mix with a tenth of the buckets: lists would grow past the
        // policy's load, so the buckets are skiplists.
        let mut crowded = o.clone();
        let buckets = o.memtable_options.bucket_count(o.write_buffer_size);
        crowded.memtable_options = crowded.memtable_options.hash_buckets(buckets / 10);
        let crowded = second.successor(&crowded, 3, FileNumber(3));
        assert_eq!(
            crowded.rep_kind(),
            MemTableKind::HashSkipList,
            "{:?}",
            crowded.decision()
        );

        drive(&third, 200, 300, 0);
        let no_x = third.successor(&adaptive_opts(false), 4, FileNumber(4));
        assert_eq!(no_x.rep_kind(), MemTableKind::SkipList);
        assert!(
            no_x.decision()
                .expect("decided")
                .reason
                .contains("no prefix extractor")
        );

        drive(&no_x, 200, 10, 10);
        let ranged = no_x.successor(&o, 5, FileNumber(5));
        assert_eq!(ranged.rep_kind(), MemTableKind::SkipList);
        assert!(ranged.decision().expect("decided").reason.contains("range"));

        // An idle buffer keeps its representation and the reason for it.
        let idle = first
            .successor(&o, 10, FileNumber(10))
            .successor(&o, 11, FileNumber(11));
        assert_eq!(idle.rep_kind(), MemTableKind::Vector);
        assert!(
            idle.decision()
                .expect("carried")
                .reason
                .contains("insert-only")
        );

        // Too few operations: keep what we have.
        let quiet = MemTable::for_keyspace(&o, 6, FileNumber(6)).successor(&o, 7, FileNumber(7));
        assert_eq!(quiet.rep_kind(), MemTableKind::SkipList);

        // Reads of a frozen memtable are not counted.
        let f = MemTable::for_keyspace(&o, 8, FileNumber(8));
        drive(&f, 10, 0, 0);
        f.freeze();
        drive(&f, 0, 5, 5);
        assert_eq!(
            f.op_counts(),
            OpCounts {
                inserts: 10,
                point_reads: 0,
                range_reads: 0
            }
        );

        // A non-adaptive keyspace gets its configured kind.
        let plain = third.successor(
            &KeyspaceOptions::default().memtable(MemTableKind::VectorSorted),
            9,
            FileNumber(9),
        );
        assert_eq!(
            (plain.kind(), plain.rep_kind()),
            (MemTableKind::VectorSorted, MemTableKind::VectorSorted)
        );
        assert!(plain.decision().is_none());
    }
}
