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
//! - compression -> `Options::set_compression_type` (every level)
//! - WAL off / sync -> `WriteOptions::disable_wal` / `set_sync`
//! - level-0 triggers 4/20/36, 7 levels, 64 MiB target files, 2 background
//!   jobs: Strata's defaults (1 flush + 1 compaction thread)
//! - memtable kind -> Strata only, noted when given

use std::path::{Path, PathBuf};

use rocksdb::statistics::{StatsLevel, Ticker};
use rocksdb::{BlockBasedOptions, Cache, DB, DBCompressionType, Options, WriteBatch, WriteOptions};
use serde_json::json;

use crate::engine::{BatchOp, Engine, EngineStats};
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
    // Keeps the block cache alive as long as the database.
    _cache: Cache,
}

impl RocksEngine {
    /// Opens (creating if missing) the database in `dir`.
    pub fn open(s: &BenchSettings, dir: &Path) -> Result<RocksEngine> {
        let mut notes = Vec::new();
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.set_write_buffer_size(
            usize::try_from(s.write_buffer_size)
                .map_err(|_| Error::msg("--write-buffer-size is too large"))?,
        );
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
        notes.push(
            "rocksdb: statistics enabled (tickers only, for write amplification); \
             level_compaction_dynamic_level_bytes = false to match Strata's static level targets"
                .into(),
        );
        if let Some(m) = &s.memtable {
            notes.push(format!(
                "rocksdb: memtable kind {m:?} is Strata-only; RocksDB uses its skiplist"
            ));
        }
        if s.compression == CompressionKind::Zstd {
            notes.push("rocksdb: zstd at RocksDB's default level (3, as Strata)".into());
        }

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
            _cache: cache,
        })
    }
}

impl Engine for RocksEngine {
    fn name(&self) -> &'static str {
        "rocksdb"
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
        let mut it = self.db.raw_iterator();
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
}
