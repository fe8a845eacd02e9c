//! Strata through its public API: the default keyspace of one database.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use serde_json::json;
use strata::Compression;
use strata::{
    Db, Keyspace, KeyspaceOptions, MemTableKind, Options, ReadOptions, WriteBatch, WriteOptions,
};
use strata::{FixedPrefix, MemTableOptions};

use crate::engine::{BatchOp, Engine, EngineStats, MemProbe};
use crate::settings::{BenchSettings, CompressionKind};
use crate::{Error, Result};

/// Strata with every setting mapped one to one.
pub struct StrataEngine {
    db: Db,
    ks: Keyspace,
    wo: WriteOptions,
    dir: PathBuf,
    notes: Vec<String>,
}

/// Strata's options for `s` (exposed for tests and the report).
pub fn strata_options(s: &BenchSettings) -> Result<Options> {
    let memtable = match &s.memtable {
        Some(name) => name.parse::<MemTableKind>()?,
        None => MemTableKind::default(),
    };
    let compression = match s.compression {
        CompressionKind::None => Compression::None,
        CompressionKind::Lz4 => Compression::Lz4,
        CompressionKind::Zstd => Compression::Zstd,
    };
    // Memtable parameters: the prefix extractor (a default for the kinds
    // that hash, see `DEFAULT_PREFIX_LEN`), buckets, the linklist threshold,
    // and the entry size hint (sizes `vector-static` and automatic buckets).
    let mut memtable_options = MemTableOptions {
        expected_entry_bytes: usize::try_from(s.entry_bytes())
            .unwrap_or(usize::MAX)
            .max(1),
        ..MemTableOptions::default()
    };
    if let Some(n) = s.effective_prefix_len(memtable.name()) {
        memtable_options.prefix_extractor = Some(Arc::new(FixedPrefix::new(n)));
    }
    if let Some(r) = s.memtable_filter {
        memtable_options.whole_key_filter = r;
    }
    if let Some(n) = s.hash_buckets {
        memtable_options.hash_buckets = n;
    }
    if let Some(n) = s.linklist_threshold {
        memtable_options.linklist_threshold = n;
    }
    let ks = KeyspaceOptions {
        write_buffer_size: usize::try_from(s.write_buffer_size)
            .map_err(|_| Error::msg("--write-buffer-size is too large"))?,
        memtable,
        memtable_options,
        block_size: s.block_size,
        bloom_bits_per_key: s.bloom_bits,
        compression,
        zstd_dictionary_bytes: s.zstd_dict_bytes,
        size_ratio: s.size_ratio,
        disable_wal: s.disable_wal,
        retain_flushed_memtables: s.retain_memtables,
        iterator_reduction: s.iterator_reduction,
        level_filter_bytes: s
            .level_filter_bytes
            .unwrap_or(KeyspaceOptions::default().level_filter_bytes),
        reduction_gates: s.reduction_gates,
        ..KeyspaceOptions::default()
    };
    Ok(Options {
        block_cache_bytes: s.cache_size,
        mmap_reads: s.mmap_reads,
        default_keyspace: ks,
        ..Options::default()
    })
}

impl StrataEngine {
    /// Opens (creating if missing) the database in `dir`.
    pub fn open(s: &BenchSettings, dir: &Path) -> Result<StrataEngine> {
        Self::open_with(s, dir, strata_options(s)?)
    }

    /// Opens the database with values dictionary-encoded: files get a
    /// dictionary when at most `max_distinct_ratio` of their values are
    /// distinct (`opd` suite).
    pub fn open_value_dictionary(
        s: &BenchSettings,
        dir: &Path,
        max_distinct_ratio: f64,
    ) -> Result<StrataEngine> {
        let mut opts = strata_options(s)?;
        opts.default_keyspace.layout =
            Arc::new(strata::ValueDictionaryLayout::new(max_distinct_ratio)?);
        Self::open_with(s, dir, opts)
    }

    fn open_with(s: &BenchSettings, dir: &Path, opts: Options) -> Result<StrataEngine> {
        let db = Db::open(dir, opts)?;
        let ks = db.default_keyspace();
        Ok(StrataEngine {
            db,
            ks,
            wo: WriteOptions {
                sync: s.sync,
                disable_wal: s.disable_wal,
            },
            dir: dir.to_path_buf(),
            notes: Vec::new(),
        })
    }
}

impl Engine for StrataEngine {
    fn name(&self) -> &'static str {
        "strata"
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.ks.put_opt(self.wo, key, value)?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        // One value buffer per client thread, reused across reads, as the
        // RocksDB engine reads through `get_pinned`: a read allocates only
        // when a value outgrows the buffer.
        thread_local! {
            static VALUE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        VALUE.with_borrow_mut(|buf| Ok(self.ks.get_into(key, buf)?.then_some(buf.len())))
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        Ok(self.ks.delete_opt(self.wo, key)?)
    }

    fn write_batch(&self, ops: &[BatchOp]) -> Result<()> {
        let mut b = WriteBatch::new();
        let id = self.ks.id();
        for op in ops {
            match op {
                BatchOp::Put(k, v) => b.put_in(id, k, v),
                BatchOp::Delete(k) => b.delete_in(id, k),
            }
        }
        Ok(self.db.write(self.wo, b)?)
    }

    fn iterate(&self, start: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<u64> {
        let mut it = self.ks.iter(ReadOptions::default())?;
        it.seek(start);
        let mut n = 0u64;
        while it.valid() {
            n += 1;
            if !f(it.key(), it.value()) {
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

    fn wait_for_background(&self) -> Result<bool> {
        self.db.wait_for_background_work()?;
        Ok(true)
    }

    fn compact_all(&self) -> Result<()> {
        Ok(self.db.compact()?)
    }

    fn filter_values(&self, lo: &[u8], hi: &[u8]) -> Result<u64> {
        let pred = strata::ValuePredicate::Range {
            start: std::ops::Bound::Included(lo.to_vec()),
            end: std::ops::Bound::Excluded(hi.to_vec()),
        };
        Ok(self.ks.filter(None, None, &pred)?.len() as u64)
    }

    fn dictionary_bytes(&self) -> u64 {
        self.db.stats().dictionary_load_bytes
    }

    fn stats(&self) -> EngineStats {
        let st = self.db.stats();
        let mut extra = serde_json::Map::new();
        let levels: Vec<serde_json::Value> = st
            .keyspaces
            .iter()
            .flat_map(|k| k.levels.iter().map(|(files, bytes)| json!([files, bytes])))
            .collect();
        extra.insert("levels_files_bytes".into(), json!(levels));
        extra.insert("user_bytes_written".into(), json!(st.user_bytes_written));
        extra.insert("wal_bytes_written".into(), json!(st.wal_bytes_written));
        extra.insert("flush_bytes_written".into(), json!(st.flush_bytes_written));
        extra.insert(
            "compaction_bytes_read".into(),
            json!(st.compaction_bytes_read),
        );
        extra.insert(
            "compaction_bytes_written".into(),
            json!(st.compaction_bytes_written),
        );
        extra.insert("flushes".into(), json!(st.flushes));
        extra.insert("compactions".into(), json!(st.compactions));
        extra.insert(
            "dictionary_build_micros".into(),
            json!(st.dictionary_build_micros),
        );
        extra.insert("stall_micros".into(), json!(st.stall_micros));
        extra.insert("slowdown_micros".into(), json!(st.slowdown_micros));
        extra.insert("write_groups".into(), json!(st.write_groups));
        extra.insert("block_cache_hits".into(), json!(st.block_cache_hits));
        extra.insert("block_cache_misses".into(), json!(st.block_cache_misses));
        extra.insert("bloom_useful".into(), json!(st.bloom_useful));
        extra.insert(
            "bloom_false_positive".into(),
            json!(st.bloom_false_positive),
        );
        extra.insert("iterators_created".into(), json!(st.iterators_created));
        extra.insert("iterator_children".into(), json!(st.iterator_children));
        extra.insert(
            "iterator_child_seeks".into(),
            json!(st.iterator_child_seeks),
        );
        extra.insert("scan_levels_unused".into(), json!(st.scan_levels_unused));
        if let Some(k) = st.keyspaces.first() {
            extra.insert("retained_memtables".into(), json!(k.retained_memtables));
            extra.insert(
                "retained_memtable_bytes".into(),
                json!(k.retained_memtable_bytes),
            );
            extra.insert("level_filter_records".into(), json!(k.level_filter_records));
            extra.insert("level_filter_lookups".into(), json!(k.level_filter_lookups));
            extra.insert("level_filter_hits".into(), json!(k.level_filter_hits));
        }
        if let Some(e) = &st.background_error {
            extra.insert("background_error".into(), json!(e));
        }
        let memtable = st.keyspaces.first().map(|k| k.memtable_kind.clone());
        if let Some(m) = memtable {
            extra.insert("memtable_kind".into(), json!(m));
        }
        EngineStats {
            background_write_bytes: Some(st.flush_bytes_written + st.compaction_bytes_written),
            write_amp: (st.user_bytes_written > 0).then_some(st.write_amplification),
            reported_disk_bytes: None,
            extra,
        }
    }

    fn memtable_probe(&self) -> Option<MemProbe> {
        let st = self.db.stats();
        let ks = st.keyspaces.iter().find(|k| k.id == self.ks.id())?;
        Some(MemProbe {
            bytes: ks.memtable_bytes as u64,
            entries: None,
            immutable: ks.immutable_memtables as u64,
            flushes: st.flushes,
            rep: Some(ks.memtable_rep.clone()),
            decision: ks.memtable_decision.clone(),
        })
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    fn data_dir(&self) -> &Path {
        &self.dir
    }

    fn close(&self) -> Result<()> {
        // Closing consumes a handle; close a clone so `self` stays usable for
        // a final stats call (which then fails softly).
        Ok(self.db.clone().close()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_map_onto_options() {
        let s = BenchSettings {
            write_buffer_size: 8 << 20,
            size_ratio: 8,
            bloom_bits: 12,
            block_size: 16 << 10,
            cache_size: 32 << 20,
            compression: CompressionKind::Zstd,
            disable_wal: true,
            ..BenchSettings::default()
        };
        let o = strata_options(&s).unwrap();
        assert_eq!(o.block_cache_bytes, 32 << 20);
        let k = &o.default_keyspace;
        assert_eq!(k.write_buffer_size, 8 << 20);
        assert_eq!(k.size_ratio, 8);
        assert_eq!(k.bloom_bits_per_key, 12);
        assert_eq!(k.block_size, 16 << 10);
        assert_eq!(k.compression, Compression::Zstd);
        assert!(k.disable_wal);
        let bad = BenchSettings {
            memtable: Some("no-such-memtable".into()),
            ..BenchSettings::default()
        };
        assert!(strata_options(&bad).is_err());
    }

    #[test]
    fn memtable_flags_map_onto_memtable_options() {
        let name = |o: &Options| {
            o.default_keyspace
                .memtable_options
                .prefix_extractor
                .as_ref()
                .map(|x| x.name().to_string())
        };
        // A hash kind without --prefix-len gets the documented default.
        let s = BenchSettings {
            memtable: Some("hash-skiplist".into()),
            key_size: 8,
            value_size: 120,
            ..BenchSettings::default()
        };
        let o = strata_options(&s).unwrap();
        assert_eq!(name(&o).as_deref(), Some("fixed:6"));
        assert_eq!(
            o.default_keyspace.memtable_options.expected_entry_bytes,
            128
        );
        assert!(o.validate().is_ok());
        let s = BenchSettings {
            memtable: Some("hash-linklist".into()),
            prefix_len: Some(4),
            hash_buckets: Some(1000),
            linklist_threshold: Some(32),
            ..BenchSettings::default()
        };
        let o = strata_options(&s).unwrap();
        let mo = &o.default_keyspace.memtable_options;
        assert_eq!(name(&o).as_deref(), Some("fixed:4"));
        assert_eq!((mo.hash_buckets, mo.linklist_threshold), (1000, 32));
        // No extractor for a kind that does not hash.
        let o = strata_options(&BenchSettings::default()).unwrap();
        assert_eq!(name(&o), None);
        // The memtable filter: the engine's default unless given.
        let default = o.default_keyspace.memtable_options.whole_key_filter;
        assert!(default > 0.0);
        for r in [0.0, 0.05] {
            let s = BenchSettings {
                memtable_filter: Some(r),
                ..BenchSettings::default()
            };
            assert!(s.validate().is_ok());
            let o = strata_options(&s).unwrap();
            assert_eq!(o.default_keyspace.memtable_options.whole_key_filter, r);
        }
        for r in [-0.1, 0.5, f64::NAN] {
            let s = BenchSettings {
                memtable_filter: Some(r),
                ..BenchSettings::default()
            };
            assert!(s.validate().is_err(), "{r}");
        }
    }

    #[test]
    fn probe_reports_the_memtable() {
        let d = tempfile::tempdir().unwrap();
        let s = BenchSettings {
            memtable: Some("adaptive".into()),
            disable_wal: true,
            ..BenchSettings::default()
        };
        let e = StrataEngine::open(&s, d.path()).unwrap();
        let before = e.memtable_probe().unwrap();
        for i in 0..100u64 {
            e.put(&crate::keys::make_key(i, 16), b"value").unwrap();
        }
        let p = e.memtable_probe().unwrap();
        assert!(p.bytes > before.bytes, "{p:?}");
        assert_eq!(p.flushes, 0);
        assert_eq!(p.rep.as_deref(), Some("skiplist"));
        e.close().unwrap();
    }

    #[test]
    fn engine_round_trips() {
        let d = tempfile::tempdir().unwrap();
        let s = BenchSettings {
            write_buffer_size: 1 << 20,
            ..BenchSettings::default()
        };
        let e = StrataEngine::open(&s, d.path()).unwrap();
        crate::engine::check_engine(&e);
        assert!(e.stats().background_write_bytes.unwrap_or(0) > 0);
    }
}
