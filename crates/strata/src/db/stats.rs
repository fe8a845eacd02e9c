//! Statistics: [`DbStats`] and its rendering.

use super::*;

/// Counters and shape of the database, from [`crate::Db::stats`].
#[derive(Clone, Debug, Default)]
pub struct DbStats {
    /// Every keyspace, by id.
    pub keyspaces: Vec<KeyspaceStats>,
    /// Data blocks found in the block cache.
    pub block_cache_hits: u64,
    /// Data blocks read from disk because the cache lacked them.
    pub block_cache_misses: u64,
    /// Bytes the block cache holds.
    pub block_cache_usage_bytes: u64,
    /// The block cache's byte budget.
    pub block_cache_capacity_bytes: u64,
    /// Point lookups a table's Bloom filter answered "absent".
    pub bloom_useful: u64,
    /// Point lookups that passed a Bloom filter.
    pub bloom_checked_positive: u64,
    /// Lookups that passed a filter but found no entry.
    pub bloom_false_positive: u64,
    /// Key and value bytes the application wrote.
    pub user_bytes_written: u64,
    /// Bytes appended to write-ahead logs.
    pub wal_bytes_written: u64,
    /// Bytes of level-0 tables written by flushes.
    pub flush_bytes_written: u64,
    /// Bytes compactions read.
    pub compaction_bytes_read: u64,
    /// Bytes compactions wrote.
    pub compaction_bytes_written: u64,
    /// (flush + compaction bytes written) / user key and value bytes written.
    pub write_amplification: f64,
    /// Time writers waited because memtables or level 0 were full.
    pub stall_micros: u64,
    /// Time writers were delayed as level 0 neared its limit.
    pub slowdown_micros: u64,
    /// Memtables flushed.
    pub flushes: u64,
    /// Compactions run.
    pub compactions: u64,
    /// Write batches committed.
    pub writes: u64,
    /// Group commits (a group carries one or more batches).
    pub write_groups: u64,
    /// Write-ahead log fsyncs.
    pub wal_syncs: u64,
    /// Synced groups whose leader waited for another synced write to
    /// share its fsync and got one (`Options::max_sync_gather_wait`).
    pub sync_gathers: u64,
    /// The sequence number of the newest write.
    pub last_seqno: SeqNo,
    /// Snapshots the application holds.
    pub live_snapshots: usize,
    /// The error that turned the database read-only, if any.
    pub background_error: Option<String>,
    /// Iterators created, children they merged, and seeks issued to children.
    pub iterators_created: u64,
    /// Sources (memtables, files, levels) those iterators merged.
    pub iterator_children: u64,
    /// Dictionaries read and decoded from files (they live in the block
    /// cache, which charges them to its budget).
    pub dictionary_loads: u64,
    /// Bytes those decoded dictionaries take in memory.
    pub dictionary_load_bytes: u64,
    /// Dictionaries found in the block cache.
    pub dictionary_cache_hits: u64,
    /// Files written with a dictionary of their values.
    pub dictionary_files_written: u64,
    /// Files of dictionary-encoded keyspaces written with plain values
    /// (too many distinct values for a dictionary to pay).
    pub plain_value_files_written: u64,
    /// Time spent sorting distinct values into dictionaries.
    pub dictionary_build_micros: u64,
    /// Values compactions carried as codes (their bytes untouched).
    pub values_carried_as_codes: u64,
    /// Blocks filters skipped by their code range, unread.
    pub filter_blocks_skipped: u64,
    /// Codes filters tested with the vectorised scan.
    pub filter_codes_scanned: u64,
    /// Seeks the iterators issued to their sources.
    pub iterator_child_seeks: u64,
    /// Levels >= 1 merged into a finished forward scan that held no entry
    /// in its range (what a perfect per-file range filter would spare).
    pub scan_levels_unused: u64,
}

/// Shape of one keyspace.
#[derive(Clone, Debug, Default)]
pub struct KeyspaceStats {
    /// The keyspace's name.
    pub name: String,
    /// The keyspace's id.
    pub id: KeyspaceId,
    /// Per level: (file count, bytes).
    pub levels: Vec<(usize, u64)>,
    /// Per level: what compactions into it did.
    pub level_compactions: Vec<LevelStats>,
    /// Bytes of the mutable memtable.
    pub memtable_bytes: usize,
    /// Memtables waiting to be flushed.
    pub immutable_memtables: usize,
    /// The configured memtable representation.
    pub memtable_kind: String,
    /// Level-0 files served from retained memtables, and their bytes.
    pub retained_memtables: usize,
    /// Bytes of the retained memtables.
    pub retained_memtable_bytes: usize,
    /// Level filter table: records, bytes, lookups, hits.
    pub level_filter_records: usize,
    /// Bytes of the level filter table.
    pub level_filter_bytes: usize,
    /// Lookups in the level filter table.
    pub level_filter_lookups: u64,
    /// Lookups a record answered.
    pub level_filter_hits: u64,
    /// Whether every scan consults the level filter (else one in 64: it
    /// did not spare a quarter of scans a seek lately). The gate's verdict:
    /// with `reduction_gates` off every scan consults it regardless.
    pub level_filter_active: bool,
    /// Scans that consulted the level filter and those it spared a seek,
    /// over completed windows of 256.
    pub level_filter_scans: u64,
    /// Of those scans, the ones it spared a seek.
    pub level_filter_saved: u64,
    /// Whether every scan seeks point-first (else one in 64: under a
    /// quarter of scans ended at their start key lately). As for
    /// `level_filter_active`, the gate's verdict.
    pub point_first_active: bool,
    /// Point-first scans and those that ended with older sources unread,
    /// over completed windows of 256.
    pub point_first_scans: u64,
    /// Of those scans, the ones that left older sources unread.
    pub point_first_saved: u64,
    /// Files of dictionary-encoded values (with or without a dictionary).
    pub dictionary_encoded_files: usize,
    /// The representation of the mutable memtable (differs from
    /// `memtable_kind` for `adaptive`).
    pub memtable_rep: String,
    /// Why the adaptive kind chose `memtable_rep`, with the operation mix
    /// that led to it.
    pub memtable_decision: Option<String>,
}

impl DbStats {
    /// A human-readable multi-line summary (used by `strata stats`).
    pub fn render(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        for ks in &self.keyspaces {
            let _ = writeln!(
                s,
                "keyspace {} (id {}), memtable {}: {} bytes, {} immutable",
                ks.name, ks.id, ks.memtable_kind, ks.memtable_bytes, ks.immutable_memtables
            );
            if let Some(d) = &ks.memtable_decision {
                let _ = writeln!(s, "  adaptive memtable: {d}");
            }
            if ks.dictionary_encoded_files > 0 {
                let _ = writeln!(
                    s,
                    "  values dictionary-encoded in {} files",
                    ks.dictionary_encoded_files
                );
            }
            let _ = writeln!(
                s,
                "  level  files        bytes  compactions   read_bytes  written_bytes"
            );
            for (l, (n, b)) in ks.levels.iter().enumerate() {
                let c = ks.level_compactions.get(l).copied().unwrap_or_default();
                let _ = writeln!(
                    s,
                    "  L{l:<4} {n:>6} {b:>12} {:>12} {:>12} {:>14}",
                    c.compactions, c.bytes_read, c.bytes_written
                );
            }
        }
        let _ = writeln!(s, "user bytes written: {}", self.user_bytes_written);
        let _ = writeln!(s, "wal bytes written: {}", self.wal_bytes_written);
        let _ = writeln!(s, "flush bytes written: {}", self.flush_bytes_written);
        let _ = writeln!(
            s,
            "compaction bytes read/written: {} / {}",
            self.compaction_bytes_read, self.compaction_bytes_written
        );
        let _ = writeln!(s, "write amplification: {:.2}", self.write_amplification);
        let _ = writeln!(
            s,
            "stall micros: {} (slowdown {})",
            self.stall_micros, self.slowdown_micros
        );
        let _ = writeln!(
            s,
            "flushes: {}, compactions: {}",
            self.flushes, self.compactions
        );
        let _ = writeln!(
            s,
            "writes: {} in {} groups, wal syncs: {} ({} gathered a waiting write)",
            self.writes, self.write_groups, self.wal_syncs, self.sync_gathers
        );
        let _ = writeln!(
            s,
            "block cache: {} hits, {} misses, {} / {} bytes",
            self.block_cache_hits,
            self.block_cache_misses,
            self.block_cache_usage_bytes,
            self.block_cache_capacity_bytes
        );
        let _ = writeln!(
            s,
            "bloom: {} useful, {} positive, {} false positive",
            self.bloom_useful, self.bloom_checked_positive, self.bloom_false_positive
        );
        let _ = writeln!(
            s,
            "last seqno: {}, live snapshots: {}",
            self.last_seqno, self.live_snapshots
        );
        let _ = writeln!(
            s,
            "iterators: {} created, {} children, {} child seeks; {} levels held nothing in a scan's range",
            self.iterators_created,
            self.iterator_children,
            self.iterator_child_seeks,
            self.scan_levels_unused
        );
        if self
            .keyspaces
            .iter()
            .any(|k| k.dictionary_encoded_files > 0)
            || self.dictionary_files_written + self.plain_value_files_written > 0
        {
            let _ = writeln!(
                s,
                "dictionaries: {} loaded ({} bytes), {} block-cache hits; files written: {} with a dictionary, {} plain; {} us building them; {} values compacted as codes",
                self.dictionary_loads,
                self.dictionary_load_bytes,
                self.dictionary_cache_hits,
                self.dictionary_files_written,
                self.plain_value_files_written,
                self.dictionary_build_micros,
                self.values_carried_as_codes
            );
            let _ = writeln!(
                s,
                "filters: {} codes scanned, {} blocks skipped by their code range",
                self.filter_codes_scanned, self.filter_blocks_skipped
            );
        }
        let gate = |active: bool| {
            if active {
                "every scan"
            } else {
                "idle: one scan in 64"
            }
        };
        for ks in &self.keyspaces {
            if ks.retained_memtables > 0 || ks.level_filter_records > 0 || ks.point_first_scans > 0
            {
                let _ = writeln!(
                    s,
                    "keyspace {}: {} retained memtables ({} bytes); level filter {} records ({} bytes), {} of {} lookups hit, {} of {} scans spared a seek ({}); point-first seeks spared {} of {} scans ({})",
                    ks.name,
                    ks.retained_memtables,
                    ks.retained_memtable_bytes,
                    ks.level_filter_records,
                    ks.level_filter_bytes,
                    ks.level_filter_hits,
                    ks.level_filter_lookups,
                    ks.level_filter_saved,
                    ks.level_filter_scans,
                    gate(ks.level_filter_active),
                    ks.point_first_saved,
                    ks.point_first_scans,
                    gate(ks.point_first_active),
                );
            }
        }
        if let Some(e) = &self.background_error {
            let _ = writeln!(s, "background error: {e}");
        }
        s
    }
}

impl DbInner {
    pub(super) fn stats(&self) -> DbStats {
        let s = &self.stats;
        let g = Statistics::get;
        let st = self.state.lock();
        let keyspaces = st
            .keyspaces
            .iter()
            .map(|(id, k)| {
                // One guard: two lock() temporaries in one expression would
                // deadlock on this non-reentrant mutex.
                let f = k.shared.filter.lock();
                let filter = (f.stats, f.len(), f.bytes());
                drop(f);
                (id, k, filter)
            })
            .map(|(id, k, (fstats, frecords, fbytes))| KeyspaceStats {
                name: k.name.clone(),
                id: *id,
                levels: (0..k.version.num_levels())
                    .map(|l| {
                        let bytes = k.version.level_bytes(Level::from_index(l));
                        (k.version.levels[l].len(), bytes)
                    })
                    .collect(),
                level_compactions: k.level_stats.clone(),
                dictionary_encoded_files: k
                    .version
                    .all_files()
                    .filter(|(_, f)| f.file.format == crate::dictfile::DICT_FORMAT)
                    .count(),
                memtable_bytes: k.mem.memory_usage().total(),
                immutable_memtables: k.imms.len(),
                memtable_kind: k.opts.memtable.name().to_string(),
                retained_memtables: k.version.levels[0]
                    .iter()
                    .filter(|f| f.retained().is_some())
                    .count(),
                retained_memtable_bytes: k.version.levels[0]
                    .iter()
                    .map(|f| f.retained_bytes())
                    .sum(),
                level_filter_records: frecords,
                level_filter_bytes: fbytes,
                level_filter_lookups: fstats.lookups,
                level_filter_hits: fstats.hits,
                level_filter_active: k.shared.filter_gate.is_active(),
                level_filter_scans: k.shared.filter_gate.totals().0,
                level_filter_saved: k.shared.filter_gate.totals().1,
                point_first_active: k.shared.point_first_gate.is_active(),
                point_first_scans: k.shared.point_first_gate.totals().0,
                point_first_saved: k.shared.point_first_gate.totals().1,
                memtable_rep: k.mem.rep_kind().name().to_string(),
                memtable_decision: k.mem.decision().map(|d| d.to_string()),
            })
            .collect();
        let user = g(&s.user_bytes_written);
        let flushed = g(&s.bytes_flushed);
        let cw = g(&s.compaction_bytes_written);
        DbStats {
            keyspaces,
            block_cache_hits: g(&s.block_cache_hits),
            block_cache_misses: g(&s.block_cache_misses),
            block_cache_usage_bytes: self.cache.as_ref().map_or(0, |c| c.usage_bytes()),
            block_cache_capacity_bytes: self.cache.as_ref().map_or(0, |c| c.capacity_bytes()),
            bloom_useful: g(&s.bloom_useful),
            bloom_checked_positive: g(&s.bloom_checked_positive),
            bloom_false_positive: g(&s.bloom_false_positive),
            user_bytes_written: user,
            wal_bytes_written: g(&s.bytes_written_wal),
            flush_bytes_written: flushed,
            compaction_bytes_read: g(&s.compaction_bytes_read),
            compaction_bytes_written: cw,
            write_amplification: if user == 0 {
                0.0
            } else {
                (flushed + cw) as f64 / user as f64
            },
            stall_micros: g(&s.stall_micros),
            slowdown_micros: g(&s.slowdown_micros),
            flushes: g(&s.flushes),
            compactions: g(&s.compactions),
            writes: g(&s.writes),
            write_groups: g(&s.write_groups),
            wal_syncs: g(&s.wal_syncs),
            sync_gathers: g(&s.sync_gathers),
            last_seqno: self.last_seqno(),
            live_snapshots: st.snapshots.values().sum(),
            background_error: st.bg_error.as_ref().map(|e| e.to_string()),
            dictionary_loads: g(&s.dictionary_loads),
            dictionary_load_bytes: g(&s.dictionary_load_bytes),
            dictionary_cache_hits: g(&s.dictionary_cache_hits),
            dictionary_files_written: g(&s.dictionary_files_written),
            plain_value_files_written: g(&s.plain_value_files_written),
            dictionary_build_micros: g(&s.dictionary_build_micros),
            values_carried_as_codes: g(&s.values_carried_as_codes),
            filter_blocks_skipped: g(&s.filter_blocks_skipped),
            filter_codes_scanned: g(&s.filter_codes_scanned),
            iterators_created: g(&s.iterators_created),
            iterator_children: g(&s.iterator_children),
            iterator_child_seeks: g(&s.iterator_child_seeks),
            scan_levels_unused: g(&s.scan_levels_unused),
        }
    }
}
