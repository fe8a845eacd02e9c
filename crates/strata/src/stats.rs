//! Engine-wide counters, updated with relaxed atomics on hot paths and read by
//! [`crate::Db::stats`].

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters shared by every keyspace and background thread of one database.
#[derive(Debug, Default)]
pub struct Statistics {
    /// Data blocks found in the block cache.
    pub block_cache_hits: AtomicU64,
    /// Data blocks read from disk because the cache lacked them.
    pub block_cache_misses: AtomicU64,
    /// Point lookups the Bloom filter answered "definitely absent".
    pub bloom_useful: AtomicU64,
    /// Point lookups that passed the Bloom filter.
    pub bloom_checked_positive: AtomicU64,
    /// Lookups that passed the filter but found no entry for the key.
    pub bloom_false_positive: AtomicU64,
    /// Bytes appended to write-ahead logs.
    pub bytes_written_wal: AtomicU64,
    /// Bytes of level-0 tables written by flushes.
    pub bytes_flushed: AtomicU64,
    /// Bytes compactions read.
    pub compaction_bytes_read: AtomicU64,
    /// Bytes compactions wrote.
    pub compaction_bytes_written: AtomicU64,
    /// Key and value bytes the application wrote.
    pub user_bytes_written: AtomicU64,
    /// Time writers waited because memtables or level 0 were full.
    pub stall_micros: AtomicU64,
    /// Time writers were delayed as level 0 neared its limit.
    pub slowdown_micros: AtomicU64,
    /// Memtables flushed.
    pub flushes: AtomicU64,
    /// Compactions run.
    pub compactions: AtomicU64,
    /// Write-ahead log fsyncs.
    pub wal_syncs: AtomicU64,
    /// Synced groups whose leader waited for a companion and got one.
    pub sync_gathers: AtomicU64,
    /// Group commits.
    pub write_groups: AtomicU64,
    /// Write batches committed.
    pub writes: AtomicU64,
    /// Iterators created, the children they merged, and the seeks issued to
    /// children (iterator reduction lowers the last).
    pub iterators_created: AtomicU64,
    /// Sources those iterators merged.
    pub iterator_children: AtomicU64,
    /// Seeks issued to the sources.
    pub iterator_child_seeks: AtomicU64,
    /// Levels >= 1 merged into a finished forward scan that held no entry in
    /// the range it covered: the seeks a perfect per-file range filter
    /// would spare.
    pub scan_levels_unused: AtomicU64,
    /// Dictionaries read and decoded from dictionary-encoded files (block
    /// cache misses, or every open without a cache).
    pub dictionary_loads: AtomicU64,
    /// Bytes those decoded dictionaries take in memory.
    pub dictionary_load_bytes: AtomicU64,
    /// Dictionaries found in the block cache.
    pub dictionary_cache_hits: AtomicU64,
    /// Files written with a dictionary, and with plain values (too many
    /// distinct values for a dictionary to pay).
    pub dictionary_files_written: AtomicU64,
    /// See `dictionary_files_written`.
    pub plain_value_files_written: AtomicU64,
    /// Time writers spent sorting distinct values into dictionaries.
    pub dictionary_build_micros: AtomicU64,
    /// Values compactions carried as codes into input dictionaries (their
    /// bytes untouched).
    pub values_carried_as_codes: AtomicU64,
    /// Blocks of dictionary-encoded files a filter skipped by their code
    /// range, without reading them.
    pub filter_blocks_skipped: AtomicU64,
    /// Codes filters tested with the vectorised scan.
    pub filter_codes_scanned: AtomicU64,
}

impl Statistics {
    /// Adds `n` to a counter.
    #[inline]
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Subtracts `n` from a gauge.
    #[inline]
    pub fn sub(counter: &AtomicU64, n: u64) {
        counter.fetch_sub(n, Ordering::Relaxed);
    }

    /// Reads a counter.
    #[inline]
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}
