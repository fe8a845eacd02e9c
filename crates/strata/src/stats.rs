//! Engine-wide counters, updated with relaxed atomics on hot paths and read by
//! [`crate::Db::stats`].

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters shared by every keyspace and background thread of one database.
#[derive(Debug, Default)]
pub struct Statistics {
    pub block_cache_hits: AtomicU64,
    pub block_cache_misses: AtomicU64,
    /// Point lookups the Bloom filter answered "definitely absent".
    pub bloom_useful: AtomicU64,
    /// Point lookups that passed the Bloom filter.
    pub bloom_checked_positive: AtomicU64,
    /// Lookups that passed the filter but found no entry for the key.
    pub bloom_false_positive: AtomicU64,
    pub bytes_written_wal: AtomicU64,
    pub bytes_flushed: AtomicU64,
    pub compaction_bytes_read: AtomicU64,
    pub compaction_bytes_written: AtomicU64,
    pub user_bytes_written: AtomicU64,
    pub stall_micros: AtomicU64,
    pub slowdown_micros: AtomicU64,
    pub flushes: AtomicU64,
    pub compactions: AtomicU64,
    pub wal_syncs: AtomicU64,
    pub write_groups: AtomicU64,
    pub writes: AtomicU64,
    /// Iterators created, the children they merged, and the seeks issued to
    /// children (iterator reduction lowers the last).
    pub iterators_created: AtomicU64,
    pub iterator_children: AtomicU64,
    pub iterator_child_seeks: AtomicU64,
    /// Levels >= 1 merged into a finished forward scan that held no entry in
    /// the range it covered: the seeks a perfect per-file range filter
    /// would spare.
    pub scan_levels_unused: AtomicU64,
}

impl Statistics {
    /// Adds `n` to a counter.
    #[inline]
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Reads a counter.
    #[inline]
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}
