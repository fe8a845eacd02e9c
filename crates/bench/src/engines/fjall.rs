//! fjall 3.x: one keyspace of one database.
//!
//! Mapping of [`BenchSettings`]:
//! - write buffer size -> `KeyspaceCreateOptions::max_memtable_size`
//! - size ratio T -> `Leveled::with_level_ratio_policy(vec![T])`
//! - bloom bits -> `FilterPolicy::all(Bloom(BitsPerKey(bits)))` on every
//!   level (fjall's default uses a 0.01% false-positive rate on L0), or
//!   `FilterPolicy::disabled()` for 0
//! - block size -> `BlockSizePolicy::all(block_size)` (fjall accepts 1 KiB
//!   to 1 MiB; other sizes are clamped, with a note)
//! - block cache -> `Database::builder().cache_size`
//! - compression -> `CompressionPolicy::all(None | Lz4)` on every level
//!   (fjall's default leaves L0/L1 uncompressed); fjall has no zstd: zstd
//!   falls back to lz4, with a note
//! - WAL off -> fjall always journals; `manual_journal_persist(true)` is the
//!   nearest (the journal is not flushed to the OS on each write), noted
//! - sync -> every write is committed with `PersistMode::SyncData`
//! - background work -> `worker_threads(2)` (Strata: 1 flush + 1 compaction
//!   thread); the journal cap `max_journaling_size` is 4 x 2 write buffers
//!   (Strata's and RocksDB's default rule), at least fjall's 64 MiB minimum
//! - memtable kind -> Strata only, noted when given

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fjall::compaction::Leveled;
use fjall::config::{
    BlockSizePolicy, BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry,
};
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use serde_json::json;

use crate::Result;
use crate::engine::{BatchOp, Engine, EngineStats};
use crate::settings::{BenchSettings, CompressionKind};

/// fjall with the settings it can express.
pub struct FjallEngine {
    db: Database,
    ks: Keyspace,
    sync: bool,
    dir: PathBuf,
    notes: Vec<String>,
}

const MIN_BLOCK: usize = 1 << 10;
const MAX_BLOCK: usize = 1 << 20;

impl FjallEngine {
    /// Opens (creating if missing) the database in `dir`.
    pub fn open(s: &BenchSettings, dir: &Path) -> Result<FjallEngine> {
        let mut notes = Vec::new();
        // Strata flushes the oldest logs' keyspaces when the logs exceed
        // four times the write buffers (as RocksDB's max_total_wal_size = 0);
        // fjall's max_journaling_size is the same knob (minimum 64 MiB).
        let journal = (4 * 2 * s.write_buffer_size).max(64 << 20);
        let db = Database::builder(dir)
            .cache_size(s.cache_size)
            .max_journaling_size(journal)
            // Strata runs one flush and one compaction thread.
            .worker_threads(2)
            .manual_journal_persist(s.disable_wal)
            .open()?;

        let block = s.block_size.clamp(MIN_BLOCK, MAX_BLOCK);
        if block != s.block_size {
            notes.push(format!(
                "fjall: block size {} is outside fjall's 1 KiB..1 MiB; used {block}",
                s.block_size
            ));
        }
        let compression = match s.compression {
            CompressionKind::None => CompressionType::None,
            CompressionKind::Lz4 => CompressionType::Lz4,
            CompressionKind::Zstd => {
                notes.push("fjall: no zstd support; used lz4 instead".into());
                CompressionType::Lz4
            }
        };
        let filter = if s.bloom_bits == 0 {
            FilterPolicy::disabled()
        } else {
            FilterPolicy::all(FilterPolicyEntry::Bloom(
                BloomConstructionPolicy::BitsPerKey(s.bloom_bits as f32),
            ))
        };
        if s.disable_wal {
            notes.push(
                "fjall: the journal cannot be disabled; --disable-wal mapped to \
                 manual_journal_persist (journal writes are not flushed to the OS per write)"
                    .into(),
            );
        }
        if let Some(m) = &s.memtable {
            notes.push(format!(
                "fjall: memtable kind {m:?} is Strata-only; fjall uses its own"
            ));
        }
        notes.push(
            "fjall: index and filter blocks of L0/L1 are pinned outside the block cache (fjall default)"
                .into(),
        );
        notes.push("fjall: no flush/compaction byte counters; write_amp is null".into());
        notes.push(
            "fjall: sealed memtables are not capped (Strata and RocksDB stall at 2 write buffers); \
             2 worker threads do flushes and compactions"
                .into(),
        );

        let size_ratio = s.size_ratio as f32;
        let wbs = s.write_buffer_size;
        let ks = db.keyspace("bench", move || {
            KeyspaceCreateOptions::default()
                .max_memtable_size(wbs)
                .data_block_size_policy(BlockSizePolicy::all(block as u32))
                .filter_policy(filter)
                .data_block_compression_policy(CompressionPolicy::all(compression))
                .compaction_strategy(Arc::new(
                    Leveled::default().with_level_ratio_policy(vec![size_ratio]),
                ))
                .manual_journal_persist(s.disable_wal)
        })?;
        Ok(FjallEngine {
            db,
            ks,
            sync: s.sync,
            dir: dir.to_path_buf(),
            notes,
        })
    }

    fn persist_if_sync(&self) -> Result<()> {
        if self.sync {
            self.db.persist(PersistMode::SyncData)?;
        }
        Ok(())
    }
}

impl Engine for FjallEngine {
    fn name(&self) -> &'static str {
        "fjall"
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.sync {
            let mut b = self.db.batch().durability(Some(PersistMode::SyncData));
            b.insert(&self.ks, key, value);
            return Ok(b.commit()?);
        }
        Ok(self.ks.insert(key, value)?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        Ok(self.ks.get(key)?.map(|v| v.len()))
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        self.ks.remove(key)?;
        self.persist_if_sync()
    }

    fn write_batch(&self, ops: &[BatchOp]) -> Result<()> {
        let mut b = self.db.batch();
        if self.sync {
            b = b.durability(Some(PersistMode::SyncData));
        }
        for op in ops {
            match op {
                BatchOp::Put(k, v) => b.insert(&self.ks, k.as_slice(), v.as_slice()),
                BatchOp::Delete(k) => b.remove(&self.ks, k.as_slice()),
            }
        }
        Ok(b.commit()?)
    }

    fn iterate(&self, start: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<u64> {
        let mut n = 0u64;
        for guard in self.ks.range(start..) {
            let (k, v) = guard.into_inner()?;
            n += 1;
            if !f(&k, &v) {
                break;
            }
        }
        Ok(n)
    }

    fn flush(&self) -> Result<()> {
        Ok(self.ks.rotate_memtable_and_wait()?)
    }

    fn wait_for_background(&self) -> Result<bool> {
        // fjall has no wait call: poll until no flush is outstanding and no
        // compaction runs, three polls in a row 100 ms apart.
        let mut quiet = 0;
        while quiet < 3 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            if self.db.outstanding_flushes() == 0 && self.db.active_compactions() == 0 {
                quiet += 1;
            } else {
                quiet = 0;
            }
        }
        Ok(true)
    }

    fn stats(&self) -> EngineStats {
        let mut extra = serde_json::Map::new();
        extra.insert("table_count".into(), json!(self.ks.table_count()));
        extra.insert("l0_table_count".into(), json!(self.ks.l0_table_count()));
        extra.insert(
            "compactions_completed".into(),
            json!(self.db.compactions_completed()),
        );
        extra.insert("journal_count".into(), json!(self.db.journal_count()));
        EngineStats {
            background_write_bytes: None,
            write_amp: None,
            reported_disk_bytes: self.db.disk_space().ok(),
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
        // fjall closes when the last handle drops; persist what is buffered.
        Ok(self.db.persist(PersistMode::Buffer)?)
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
            compression: CompressionKind::Zstd,
            ..BenchSettings::default()
        };
        let e = FjallEngine::open(&s, d.path()).unwrap();
        assert!(e.notes().iter().any(|n| n.contains("zstd")));
        crate::engine::check_engine(&e);
    }
}
