//! RocksDB through the `rocksdb` crate (0.25): the default column family.
//!
//! Mapping of [`BenchSettings`]:
//! - write buffer size -> `Options::set_write_buffer_size`
//!   (`max_write_buffer_number` 2, as Strata's `max_write_buffers`)
//! - size ratio T -> `Options::set_max_bytes_for_level_multiplier(T)`, with
//!   `level_compaction_dynamic_level_bytes = false` and
//!   `max_bytes_for_level_base` 256 MiB so level targets are
//!   `256 MiB * T^(n-1)` as in Strata
//! - bloom bits -> `BlockBasedOptions::set_bloom_filter(bits, false)` (full
//!   filter, whole-key filtering); none for 0
//! - block size -> `BlockBasedOptions::set_block_size`
//! - block cache -> `BlockBasedOptions::set_block_cache(Cache::new_lru_cache)`
//! - compression -> `Options::set_compression_type` (every level); with
//!   zstd, Strata's per-file dictionary -> `max_dict_bytes` and
//!   `zstd_max_train_bytes` only with `--rocksdb-zstd-dict` (RocksDB read
//!   slower with one); never for `rocksdb-defaults`
//! - WAL off / sync -> `WriteOptions::disable_wal` / `set_sync`
//! - mmap reads (Strata's default) -> `Options::set_allow_mmap_reads`; not
//!   in `rocksdb-defaults`, which reads with `pread` as RocksDB ships
//! - level-0 triggers 4/20/36, 7 levels, 64 MiB target files, 2 background
//!   jobs: Strata's defaults (1 flush + 1 compaction thread)
//! - memtable whole-key filter (Strata's default, 1/64 of the write buffer)
//!   -> `Options::set_memtable_prefix_bloom_ratio(1/64)` with
//!   `set_memtable_whole_key_filtering(true)`; not in `rocksdb-defaults`
//! - memtable kind (only when a run asks for one, as the `memtable` suite
//!   does; otherwise RocksDB's default skiplist) ->
//!   `Options::set_memtable_factory`: `skiplist` the default
//!   `SkipListFactory`, `vector` `MemtableFactory::Vector`, `hash-skiplist`
//!   `MemtableFactory::HashSkipList { bucket_count, height 4, branching 4 }`,
//!   `hash-linklist` `MemtableFactory::HashLinkList { bucket_count }`; the
//!   hash ones with `SliceTransform::create_fixed_prefix(prefix length)` and
//!   `allow_concurrent_memtable_write(false)` (only the skiplist supports
//!   concurrent inserts; the single-threaded suite does not use them), and
//!   every iterator with `total_order_seek` so range scans see every prefix.
//!   Buckets default to RocksDB's (1,000,000 and 50,000) unless
//!   `--hash-buckets`; the linklist threshold cannot be set through the C
//!   API (RocksDB's 256 is used, and noted when another is asked for).
//!   Strata's other kinds (`vector-static`, `vector-sorted`,
//!   `vector-unsorted`, `adaptive`) have no RocksDB counterpart: an error.

use std::path::{Path, PathBuf};

use rocksdb::statistics::{StatsLevel, Ticker};
use rocksdb::{
    BlockBasedOptions, Cache, DB, DBCompressionType, MemtableFactory, Options, ReadOptions,
    SliceTransform, WriteBatch, WriteOptions,
};
use serde_json::json;

use crate::engine::{BatchOp, Engine, EngineStats, MemProbe};
use crate::settings::{BenchSettings, CompressionKind};
use crate::{Error, Result};

/// RocksDB with every setting mapped.
pub struct RocksEngine {
    db: DB,
    // Holds the statistics object the tickers are read from.
    opts: Options,
    wo: WriteOptions,
    dir: PathBuf,
    notes: Vec<String>,
    disable_wal: bool,
    /// Iterators use `total_order_seek` (a prefix extractor is set).
    total_order: bool,
    /// The tree's shape is RocksDB's own (see `open_with_shipped_shape`).
    shipped: bool,
    // Keeps the block cache alive as long as the database.
    _cache: Cache,
}

impl RocksEngine {
    /// Opens (creating if missing) the database in `dir`, its tree shaped
    /// as Strata's (the settings mapped above).
    pub fn open(s: &BenchSettings, dir: &Path) -> Result<RocksEngine> {
        Self::open_shaped(s, dir, false)
    }

    /// Opens the database with RocksDB's own defaults for the tree's shape
    /// (`level_compaction_dynamic_level_bytes` on, its level base, size
    /// ratio, file size, level-0 triggers and background jobs): what a
    /// RocksDB user gets out of the box. The workload's settings (write
    /// buffer, block size and cache, bloom filter, compression, WAL and
    /// sync) still apply.
    pub fn open_with_shipped_shape(s: &BenchSettings, dir: &Path) -> Result<RocksEngine> {
        Self::open_shaped(s, dir, true)
    }

    /// Opens the database shaped as Strata's, with `tune` changing the
    /// options last (and noting what it set): the `opd` suite's Zstd
    /// dictionary compression and BlobDB.
    pub fn open_tuned(
        s: &BenchSettings,
        dir: &Path,
        tune: &dyn Fn(&mut Options, &mut Vec<String>),
    ) -> Result<RocksEngine> {
        Self::open_inner(s, dir, false, tune)
    }

    fn open_shaped(s: &BenchSettings, dir: &Path, shipped: bool) -> Result<RocksEngine> {
        Self::open_inner(s, dir, shipped, &|_, _| {})
    }

    fn open_inner(
        s: &BenchSettings,
        dir: &Path,
        shipped: bool,
        tune: &dyn Fn(&mut Options, &mut Vec<String>),
    ) -> Result<RocksEngine> {
        let mut notes = Vec::new();
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.set_write_buffer_size(
            usize::try_from(s.write_buffer_size)
                .map_err(|_| Error::msg("--write-buffer-size is too large"))?,
        );
        if shipped {
            notes.push(
                "rocksdb-defaults: the tree's shape is RocksDB's own \
                 (level_compaction_dynamic_level_bytes = true, size ratio 10)"
                    .into(),
            );
        } else {
            opts.set_max_write_buffer_number(2);
            opts.set_max_bytes_for_level_multiplier(s.size_ratio as f64);
            opts.set_level_compaction_dynamic_level_bytes(false);
            opts.set_max_bytes_for_level_base(256 << 20);
            opts.set_target_file_size_base(64 << 20);
            opts.set_num_levels(7);
            opts.set_level_zero_file_num_compaction_trigger(4);
            opts.set_level_zero_slowdown_writes_trigger(20);
            opts.set_level_zero_stop_writes_trigger(36);
            opts.set_max_background_jobs(2);
            // Strata reads its table files through mappings unless told
            // not to (`Options::mmap_reads`); the matched RocksDB as well.
            opts.set_allow_mmap_reads(s.mmap_reads);
            notes.push(format!(
                "rocksdb: allow_mmap_reads = {}, as Strata's mmap_reads",
                s.mmap_reads
            ));
            // Strata trains a zstd dictionary per table file on its first
            // blocks (16 times the dictionary's size). The matched RocksDB
            // trains one only when asked: it read slower with one.
            if s.compression == CompressionKind::Zstd
                && s.zstd_dict_bytes > 0
                && !s.rocksdb_zstd_dict
            {
                notes.push(
                    "rocksdb: no zstd dictionary (Strata trains one per file; RocksDB read \
                     slower with one, see --rocksdb-zstd-dict)"
                        .into(),
                );
            }
            if s.compression == CompressionKind::Zstd
                && s.zstd_dict_bytes > 0
                && s.rocksdb_zstd_dict
            {
                let bytes = i32::try_from(s.zstd_dict_bytes)
                    .map_err(|_| Error::msg("--zstd-dict-bytes is too large"))?;
                opts.set_compression_options(-14, 3, 0, bytes);
                opts.set_zstd_max_train_bytes(bytes.saturating_mul(16));
                notes.push(format!(
                    "rocksdb: zstd dictionary of {bytes} bytes per file trained on {} bytes \
                     (max_dict_bytes, zstd_max_train_bytes), as Strata's zstd_dictionary_bytes",
                    bytes.saturating_mul(16)
                ));
            }
            // Strata's memtables carry a whole-key Bloom filter of 1/64 of
            // the write buffer (`MemTableOptions::whole_key_filter`); the
            // matched RocksDB gets RocksDB's equivalent.
            let ratio = s.memtable_filter.unwrap_or(1.0 / 64.0);
            if ratio > 0.0 {
                opts.set_memtable_prefix_bloom_ratio(ratio);
                opts.set_memtable_whole_key_filtering(true);
                notes.push(format!(
                    "rocksdb: memtable whole-key Bloom filter of {ratio} of the write buffer \
                     (memtable_prefix_bloom_size_ratio, memtable_whole_key_filtering), as Strata's"
                ));
            } else {
                notes.push("rocksdb: no memtable Bloom filter, as Strata's".into());
            }
        }
        opts.set_compression_type(match s.compression {
            CompressionKind::None => DBCompressionType::None,
            CompressionKind::Lz4 => DBCompressionType::Lz4,
            CompressionKind::Zstd => DBCompressionType::Zstd,
        });
        opts.enable_statistics();
        opts.set_statistics_level(StatsLevel::ExceptHistogramOrTimers);
        opts.set_stats_dump_period_sec(0);

        let cache = Cache::new_lru_cache(
            usize::try_from(s.cache_size).map_err(|_| Error::msg("--cache-size is too large"))?,
        );
        let mut table = BlockBasedOptions::default();
        table.set_block_size(s.block_size);
        table.set_block_cache(&cache);
        if s.bloom_bits > 0 {
            table.set_bloom_filter(f64::from(s.bloom_bits), false);
        }
        opts.set_block_based_table_factory(&table);

        notes.push(
            "rocksdb: index and filter blocks are held outside the block cache \
             (cache_index_and_filter_blocks = false, RocksDB's default; Strata also keeps them in its table readers)"
                .into(),
        );
        notes.push(if shipped {
            "rocksdb: statistics enabled (tickers only, for write amplification)".into()
        } else {
            "rocksdb: statistics enabled (tickers only, for write amplification); \
             level_compaction_dynamic_level_bytes = false to match Strata's static level targets"
                .into()
        });
        let total_order = match &s.memtable {
            Some(m) => set_memtable(&mut opts, s, m, &mut notes)?,
            None => false,
        };
        if s.compression == CompressionKind::Zstd {
            notes.push("rocksdb: zstd at RocksDB's default level (3, as Strata)".into());
        }

        tune(&mut opts, &mut notes);
        let db = DB::open(&opts, dir)?;
        let mut wo = WriteOptions::default();
        wo.set_sync(s.sync);
        wo.disable_wal(s.disable_wal);
        Ok(RocksEngine {
            db,
            opts,
            wo,
            dir: dir.to_path_buf(),
            notes,
            disable_wal: s.disable_wal,
            total_order,
            shipped,
            _cache: cache,
        })
    }
}

/// RocksDB's default bucket count of `NewHashSkipListRepFactory`.
pub const ROCKSDB_HASH_SKIPLIST_BUCKETS: usize = 1_000_000;
/// RocksDB's default bucket count of `NewHashLinkListRepFactory`.
pub const ROCKSDB_HASH_LINKLIST_BUCKETS: usize = 50_000;

/// Sets RocksDB's memtable representation for Strata's kind `name`; returns
/// whether iterators need `total_order_seek` (a prefix extractor is set).
fn set_memtable(
    opts: &mut Options,
    s: &BenchSettings,
    name: &str,
    notes: &mut Vec<String>,
) -> Result<bool> {
    let prefix = |notes: &mut Vec<String>| {
        let n = s
            .effective_prefix_len(name)
            .unwrap_or(crate::settings::DEFAULT_PREFIX_LEN);
        notes.push(format!(
            "rocksdb: {name} memtable with a fixed {n}-byte prefix extractor, \
             allow_concurrent_memtable_write = false, total_order_seek iterators"
        ));
        n
    };
    match name {
        // The default SkipListFactory; no prefix extractor (it does not
        // hash, and Strata's skiplist ignores one too).
        "skiplist" => Ok(false),
        "vector" => {
            opts.set_allow_concurrent_memtable_write(false);
            opts.set_memtable_factory(MemtableFactory::Vector);
            notes.push(
                "rocksdb: vector memtable (VectorRep: every read of a mutable memtable \
                 copies and sorts it), allow_concurrent_memtable_write = false"
                    .into(),
            );
            Ok(false)
        }
        "hash-skiplist" => {
            let n = prefix(notes);
            opts.set_prefix_extractor(SliceTransform::create_fixed_prefix(n));
            opts.set_allow_concurrent_memtable_write(false);
            opts.set_memtable_factory(MemtableFactory::HashSkipList {
                bucket_count: s.hash_buckets.unwrap_or(ROCKSDB_HASH_SKIPLIST_BUCKETS),
                height: 4,
                branching_factor: 4,
            });
            Ok(true)
        }
        "hash-linklist" => {
            let n = prefix(notes);
            opts.set_prefix_extractor(SliceTransform::create_fixed_prefix(n));
            opts.set_allow_concurrent_memtable_write(false);
            opts.set_memtable_factory(MemtableFactory::HashLinkList {
                bucket_count: s.hash_buckets.unwrap_or(ROCKSDB_HASH_LINKLIST_BUCKETS),
            });
            if let Some(t) = s.linklist_threshold.filter(|t| *t != 256) {
                notes.push(format!(
                    "rocksdb: --linklist-threshold {t} cannot be passed through the C API; \
                     RocksDB's hash-linklist converts buckets past 256 entries"
                ));
            }
            Ok(true)
        }
        other => Err(Error(format!(
            "memtable kind {other:?} has no RocksDB counterpart (RocksDB offers \
             skiplist, vector, hash-skiplist and hash-linklist)"
        ))),
    }
}

impl Engine for RocksEngine {
    fn name(&self) -> &'static str {
        if self.shipped {
            "rocksdb-defaults"
        } else {
            "rocksdb"
        }
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put_opt(key, value, &self.wo)?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        Ok(self.db.get_pinned(key)?.map(|v| v.len()))
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        Ok(self.db.delete_opt(key, &self.wo)?)
    }

    fn write_batch(&self, ops: &[BatchOp]) -> Result<()> {
        let mut b = WriteBatch::default();
        for op in ops {
            match op {
                BatchOp::Put(k, v) => b.put(k, v),
                BatchOp::Delete(k) => b.delete(k),
            }
        }
        Ok(self.db.write_opt(b, &self.wo)?)
    }

    fn iterate(&self, start: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<u64> {
        let mut it = if self.total_order {
            let mut ro = ReadOptions::default();
            ro.set_total_order_seek(true);
            self.db.raw_iterator_opt(ro)
        } else {
            self.db.raw_iterator()
        };
        it.seek(start);
        let mut n = 0u64;
        while it.valid() {
            let (Some(k), Some(v)) = (it.key(), it.value()) else {
                break;
            };
            n += 1;
            if !f(k, v) {
                break;
            }
            it.next();
        }
        it.status()?;
        Ok(n)
    }

    fn flush(&self) -> Result<()> {
        Ok(self.db.flush()?)
    }

    fn compact_all(&self) -> Result<()> {
        // Into the last level, as Strata's `compact` (and blob files
        // rewritten where BlobDB's garbage collection would).
        let mut o = rocksdb::CompactOptions::default();
        o.set_bottommost_level_compaction(rocksdb::BottommostLevelCompaction::Force);
        self.db.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &o);
        Ok(())
    }

    fn wait_for_background(&self) -> Result<bool> {
        // WaitForCompact without flushing: pending flushes and compactions.
        let o = rocksdb::WaitForCompactOptions::default();
        self.db.wait_for_compact(&o)?;
        Ok(true)
    }

    fn stats(&self) -> EngineStats {
        let t = |x: Ticker| self.opts.get_ticker_count(x);
        let flush = t(Ticker::FlushWriteBytes);
        let compact = t(Ticker::CompactWriteBytes);
        let user = t(Ticker::BytesWritten);
        let mut extra = serde_json::Map::new();
        extra.insert("bytes_written".into(), json!(user));
        extra.insert("flush_write_bytes".into(), json!(flush));
        extra.insert("compact_write_bytes".into(), json!(compact));
        extra.insert(
            "compact_read_bytes".into(),
            json!(t(Ticker::CompactReadBytes)),
        );
        extra.insert("stall_micros".into(), json!(t(Ticker::StallMicros)));
        extra.insert("block_cache_hits".into(), json!(t(Ticker::BlockCacheHit)));
        extra.insert(
            "block_cache_misses".into(),
            json!(t(Ticker::BlockCacheMiss)),
        );
        extra.insert("bloom_useful".into(), json!(t(Ticker::BloomFilterUseful)));
        let sst = self
            .db
            .property_int_value(rocksdb::properties::TOTAL_SST_FILES_SIZE)
            .ok()
            .flatten();
        EngineStats {
            background_write_bytes: Some(flush + compact),
            // rocksdb.bytes.written counts write-batch bytes (a few bytes of
            // framing per entry beyond key and value).
            write_amp: (user > 0).then(|| (flush + compact) as f64 / user as f64),
            reported_disk_bytes: sst,
            extra,
        }
    }

    fn memtable_probe(&self) -> Option<MemProbe> {
        use rocksdb::properties as p;
        let int = |name: &rocksdb::properties::PropName| {
            self.db.property_int_value(name).ok().flatten().unwrap_or(0)
        };
        Some(MemProbe {
            bytes: int(p::CUR_SIZE_ALL_MEM_TABLES),
            entries: Some(
                int(p::NUM_ENTRIES_ACTIVE_MEM_TABLE) + int(p::NUM_ENTRIES_IMM_MEM_TABLES),
            ),
            immutable: int(p::NUM_IMMUTABLE_MEM_TABLE),
            // Flush jobs started because a write buffer filled (one job may
            // take several memtables).
            flushes: self
                .opts
                .get_ticker_count(Ticker::FlushReasonWriteBufferFull),
            rep: None,
            decision: None,
        })
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    fn data_dir(&self) -> &Path {
        &self.dir
    }

    fn close(&self) -> Result<()> {
        // RocksDB closes on drop; make the memtable durable first when the
        // WAL is off so a later --use-existing run sees the data.
        if self.disable_wal {
            self.db.flush()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_round_trips() {
        let d = tempfile::tempdir().unwrap();
        let s = BenchSettings {
            write_buffer_size: 1 << 20,
            compression: CompressionKind::Lz4,
            ..BenchSettings::default()
        };
        let e = RocksEngine::open(&s, d.path()).unwrap();
        crate::engine::check_engine(&e);
        assert!(e.stats().background_write_bytes.unwrap_or(0) > 0);
    }

    #[test]
    fn every_memtable_representation_round_trips() {
        for m in ["skiplist", "vector", "hash-skiplist", "hash-linklist"] {
            let d = tempfile::tempdir().unwrap();
            let s = BenchSettings {
                write_buffer_size: 1 << 20,
                memtable: Some(m.into()),
                hash_buckets: Some(1000),
                ..BenchSettings::default()
            };
            let e = RocksEngine::open(&s, d.path()).unwrap();
            let p = e.memtable_probe().unwrap();
            assert_eq!(p.entries, Some(0), "{m}");
            crate::engine::check_engine(&e);
        }
        let s = BenchSettings {
            memtable: Some("vector-sorted".into()),
            ..BenchSettings::default()
        };
        let d = tempfile::tempdir().unwrap();
        let e = RocksEngine::open(&s, d.path()).err().unwrap();
        assert!(e.0.contains("no RocksDB counterpart"), "{e}");
    }
}
