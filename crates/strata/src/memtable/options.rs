//! Choosing and configuring a memtable: the kinds Strata offers and the
//! options (prefix extractor, hash buckets, adaptive policy) checked before
//! a keyspace opens.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use super::{AdaptivePolicy, FixedPrefix, MemTableRep, PrefixExtractor, SkipListRep};
use crate::error::{Error, Result};

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
        use super::hash::{BucketPolicy, HashRep};
        use super::vector::{SortedVectorRep, VectorMode, VectorRep};
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
    /// Bytes of whole-key Bloom filter per byte of write buffer (RocksDB's
    /// `memtable_prefix_bloom_size_ratio` with whole-key filtering): point
    /// reads of keys a memtable does not hold skip its search. Allocated
    /// with each memtable, besides the write buffer. 0 turns it off;
    /// default 1/64 (1 MiB for a 64 MiB buffer: about 20 bits a key for
    /// 100-byte values, so about 1 % of absent keys still search).
    pub whole_key_filter: f64,
}

impl Default for MemTableOptions {
    fn default() -> Self {
        MemTableOptions {
            hash_buckets: 0,
            prefix_extractor: None,
            linklist_threshold: 256,
            expected_entry_bytes: 128,
            adaptive: AdaptivePolicy::default(),
            whole_key_filter: 1.0 / 64.0,
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
            .field("whole_key_filter", &self.whole_key_filter)
            .finish()
    }
}

/// Largest accepted bucket count.
const MAX_BUCKETS: usize = 1 << 26;
/// Largest accepted whole-key filter size, as a share of the write buffer.
const MAX_FILTER_RATIO: f64 = 0.25;

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

    /// Sets the whole-key filter's bytes per byte of write buffer (0: none).
    pub fn whole_key_filter(mut self, ratio: f64) -> Self {
        self.whole_key_filter = ratio;
        self
    }

    /// Bytes of the whole-key filter of a buffer of `write_buffer_size`
    /// bytes; `None` without one.
    pub(crate) fn filter_bytes(&self, write_buffer_size: usize) -> Option<usize> {
        (self.whole_key_filter > 0.0).then(|| {
            (write_buffer_size as f64 * self.whole_key_filter.min(MAX_FILTER_RATIO)) as usize
        })
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
                .saturating_mul(std::mem::size_of::<super::entry::SharedEntry>()),
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
        if !(0.0..=MAX_FILTER_RATIO).contains(&self.whole_key_filter) {
            return bad(format!(
                "memtable_options.whole_key_filter {} must be between 0 and {MAX_FILTER_RATIO}                  (bytes of filter per byte of write buffer)",
                self.whole_key_filter
            ));
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
