//! Options for a database and for each keyspace, with defaults that match
//! RocksDB's where the concept is the same.

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::ids::Level;
pub use crate::layout::{GroupSpec, Layout, TieredCompressionLayout, UniformLayout};
use crate::memtable::{MemTableKind, MemTableOptions};
use crate::merge::MergeOperator;
use crate::sst::{Compression, TableBuilderOptions};
use crate::vfs::{StdVfs, Vfs};

/// Largest accepted key (bytes).
pub const MAX_KEY_BYTES: usize = 64 * 1024;
/// Largest accepted value (bytes): 63 MiB. A flush writes each entry into
/// one table block, and a block may not exceed 64 MiB (the reader refuses
/// larger ones), so a larger value would be acknowledged and then fail
/// every flush, leaving the database read-only at each reopen.
pub const MAX_VALUE_BYTES: usize = 63 << 20;

// A largest key and value, with their entry header, fit one block.
const _: () =
    assert!(MAX_KEY_BYTES + MAX_VALUE_BYTES + 64 <= crate::sst::format::MAX_BLOCK_SIZE as usize);

/// Options of a whole database.
#[derive(Clone)]
pub struct Options {
    /// Create the database if the directory holds none (default true).
    pub create_if_missing: bool,
    /// Fail if a database already exists (default false).
    pub error_if_exists: bool,
    /// The file system (default: the real one).
    pub vfs: Arc<dyn Vfs>,
    /// Byte budget of the block cache shared by all keyspaces (default 64 MiB).
    pub block_cache_bytes: u64,
    /// Background flush threads (default 1).
    pub flush_threads: usize,
    /// Background compaction threads (default 1).
    pub compaction_threads: usize,
    /// Upper bound on the bytes of one group commit (default 1 MiB).
    pub max_write_group_bytes: usize,
    /// Longest a synced write that found no other write to share its
    /// fsync waits for one, when synced writes have recently been arriving
    /// faster than one per fsync, which means several writers are active
    /// (default 1 ms; the wait is also at most half a recent fsync's time;
    /// zero never waits). See `docs/design.md`, "Write path".
    pub max_sync_gather_wait: std::time::Duration,
    /// When the live write-ahead logs exceed this, the keyspaces holding the
    /// oldest log are flushed (default 0: four times the sum of write buffers).
    pub max_total_wal_bytes: u64,
    /// A manifest larger than this is replaced by a fresh snapshot of the
    /// state (default 16 MiB).
    pub max_manifest_bytes: u64,
    /// Salvage mode: at open, verify every table and leave out (move to
    /// `lost/`) those that are corrupt, reporting the key ranges lost in
    /// `Db::recovery_report`, instead of failing (default false).
    pub skip_corrupt_tables: bool,
    /// What recovery does with damage in a write-ahead log (default: drop
    /// only a torn tail of the newest log; refuse anything else).
    pub wal_recovery: crate::recovery::WalRecoveryMode,
    /// Open without changing anything on disk: no lock, no log replay into
    /// new files, no manifest write, no background work, no cleanup; writes
    /// fail with [`Error::OpenedReadOnly`]. Works on read-only storage and
    /// beside a process that holds the database open for writing (a reader
    /// then sees the state as of its open).
    pub read_only: bool,
    /// Read table files through memory mappings rather than a `pread` per
    /// block (default true; up to 4,096 files per process, the rest with
    /// `pread`). Faster for data larger than the block cache when its files
    /// are in the page cache (point reads 1.1-1.4× here), but a device
    /// error in a mapped file ends the process (`SIGBUS`) where `pread`
    /// would return an error; salvage opens never map. Mappings are advised
    /// random access, so a read from a cold page cache brings in only the
    /// pages it touches; once a file's reads are seen waiting for the disk,
    /// its blocks that span pages are asked for whole first (one disk read
    /// each, as `pread`'s), and sequential readers ask for their pages
    /// ahead. `pread` still warms a cold cache faster (its read-ahead
    /// brings in neighbouring blocks). See `docs/design.md`, "Reads" and
    /// "Known gaps".
    pub mmap_reads: bool,
    /// Options of the default keyspace.
    pub default_keyspace: KeyspaceOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            vfs: Arc::new(StdVfs),
            block_cache_bytes: 64 << 20,
            flush_threads: 1,
            compaction_threads: 1,
            max_write_group_bytes: 1 << 20,
            max_sync_gather_wait: std::time::Duration::from_millis(1),
            max_total_wal_bytes: 0,
            max_manifest_bytes: 16 << 20,
            skip_corrupt_tables: false,
            wal_recovery: crate::recovery::WalRecoveryMode::default(),
            read_only: false,
            mmap_reads: true,
            default_keyspace: KeyspaceOptions::default(),
        }
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("block_cache_bytes", &self.block_cache_bytes)
            .field("flush_threads", &self.flush_threads)
            .field("compaction_threads", &self.compaction_threads)
            .field("wal_recovery", &self.wal_recovery)
            .field("read_only", &self.read_only)
            .field("mmap_reads", &self.mmap_reads)
            .field("default_keyspace", &self.default_keyspace)
            .finish_non_exhaustive()
    }
}

/// Largest accepted `write_buffer_size`: 64 GiB.
pub const MAX_WRITE_BUFFER_BYTES: u64 = 64 << 30;
/// Largest accepted `target_file_size`: 1 TiB.
pub const MAX_FILE_BYTES: u64 = 1 << 40;
/// Largest accepted `block_cache_bytes` and `max_total_wal_bytes`: 1 PiB.
pub const MAX_BUDGET_BYTES: u64 = 1 << 50;

fn check_at_most(name: &str, value: u64, max: u64) -> Result<()> {
    if value > max {
        return Err(Error::InvalidArgument(format!(
            "{name} {value} is too large: at most {max} bytes"
        )));
    }
    Ok(())
}

/// Bytes of physical memory, when the system says.
pub fn physical_memory_bytes() -> Option<u64> {
    // SAFETY: sysconf takes no pointers and only reads system constants.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages > 0 && page > 0).then(|| (pages as u64).saturating_mul(page as u64))
}

impl Options {
    /// Whether table files are read through memory mappings: as asked, but
    /// never in salvage mode, which expects damaged files and must report
    /// a device error rather than end the process on it.
    pub(crate) fn maps_tables(&self) -> bool {
        self.mmap_reads && !self.skip_corrupt_tables
    }

    /// Checks values that would make the engine misbehave.
    pub fn validate(&self) -> Result<()> {
        check_at_most(
            "block_cache_bytes",
            self.block_cache_bytes,
            MAX_BUDGET_BYTES,
        )?;
        check_at_most(
            "max_total_wal_bytes",
            self.max_total_wal_bytes,
            MAX_BUDGET_BYTES,
        )?;
        check_at_most(
            "max_write_group_bytes",
            self.max_write_group_bytes as u64,
            1 << 30,
        )?;
        if self.max_sync_gather_wait > std::time::Duration::from_secs(1) {
            return Err(Error::InvalidArgument(format!(
                "max_sync_gather_wait {:?} is too long: at most 1 s",
                self.max_sync_gather_wait
            )));
        }

        if self.flush_threads == 0 || self.compaction_threads == 0 {
            return Err(Error::InvalidArgument(
                "flush_threads and compaction_threads must be at least 1".into(),
            ));
        }
        if self.read_only && self.skip_corrupt_tables {
            return Err(Error::InvalidArgument(
                "salvage (skip_corrupt_tables) moves files aside, so it cannot run read-only"
                    .into(),
            ));
        }
        self.default_keyspace.validate()
    }
}

/// Options of one keyspace (one LSM tree).
#[derive(Clone)]
pub struct KeyspaceOptions {
    /// Bytes a memtable holds before it is switched for flushing (default 64 MiB).
    pub write_buffer_size: usize,
    /// Memtables (mutable + immutable) allowed before writes stall (default 2).
    pub max_write_buffers: usize,
    /// The memtable representation.
    pub memtable: MemTableKind,
    /// Parameters of the memtable representations that need them (prefix
    /// extractor and buckets of the hash kinds, the `vector-static` entry
    /// size hint, the adaptive thresholds).
    pub memtable_options: MemTableOptions,
    /// Target size of uncompressed data blocks (default 4 KiB).
    pub block_size: usize,
    /// Entries between restart points in a block (default 16).
    pub block_restart_interval: usize,
    /// Bloom filter bits per key; 0 disables filters (default 10).
    pub bloom_bits_per_key: u32,
    /// Block compression (default none).
    pub compression: Compression,
    /// With [`Compression::Zstd`]: the size of the dictionary trained for
    /// each table file on its first data blocks (default 16 KiB; 0, or less
    /// than zstd's minimum of 256, trains none; at most 1 MiB). Blocks then
    /// decompress without rebuilding
    /// their entropy tables (`docs/design.md`, Compression dictionaries).
    /// Files too small to train on get none.
    pub zstd_dictionary_bytes: usize,
    /// Level-0 files that trigger a compaction (default 4).
    pub level0_compaction_trigger: usize,
    /// Level-0 files at which writes are slowed (default 20).
    pub level0_slowdown_trigger: usize,
    /// Level-0 files at which writes stop until compaction catches up (default 36).
    pub level0_stop_trigger: usize,
    /// Size ratio `T` between adjacent levels (default 10).
    pub size_ratio: u64,
    /// Number of levels (default 7).
    pub num_levels: usize,
    /// Target size of files written by compaction (default 64 MiB).
    pub target_file_size: u64,
    /// Byte budget of level 1 (default 256 MiB); level n gets `T^(n-1)` times it.
    pub level1_max_bytes: u64,
    /// The merge operator; `merge` fails without one.
    pub merge_operator: Option<Arc<dyn MergeOperator>>,
    /// Skip the write-ahead log for this keyspace (bulk loads; data since the
    /// last flush is lost on a crash).
    pub disable_wal: bool,
    /// How each level is stored.
    pub layout: Arc<dyn Layout>,
    /// Keep a flushed memtable, copied into a read-optimized table, to serve
    /// the reads of its level-0 file while that file lives (memtable
    /// retention, seed 004). Default off: it holds up to a full level 0 of
    /// copies in memory (see `retained_memtable_bytes`), which the
    /// application should choose to spend. In the `shortrange` suite it
    /// made scans with uniform start keys 1.2-1.8× faster
    /// (docs/BENCHMARKS.md).
    pub retain_flushed_memtables: bool,
    /// Byte budget of retained memtables (each copy's entries, slots and
    /// prefixes); past it the oldest are released. 0 (the default) means
    /// room for the memtables of a full level 0:
    /// `(level0_compaction_trigger + 1) * write_buffer_size`, 320 MiB with
    /// the other defaults (see [`KeyspaceOptions::retention_budget`]).
    pub retained_memtable_bytes: u64,
    /// Iterator reduction (seed 004; default on): a scan seeks point-first
    /// (a source whose point filter rules its start key out, or older than
    /// the one holding a visible put of it, waits until the scan leaves the
    /// key), and skips the levels that the level filter table says hold
    /// nothing in its range. Each part stops itself while it spares fewer
    /// than a quarter of scans a seek; on by default because the
    /// `shortrange` suite measured it at no more than 2 % slower on any
    /// workload and up to 1.9× faster on one-entry scans.
    pub iterator_reduction: bool,
    /// Byte budget of the level filter table (default 1 MiB).
    pub level_filter_bytes: usize,
    /// Whether each part of iterator reduction may idle while it does not
    /// pay (default true). False keeps both parts in use by every scan: for
    /// workloads known to repeat their scans, and for measuring what the
    /// parts save when they are never switched off.
    pub reduction_gates: bool,
}

impl Default for KeyspaceOptions {
    fn default() -> Self {
        KeyspaceOptions {
            write_buffer_size: 64 << 20,
            max_write_buffers: 2,
            memtable: MemTableKind::default(),
            memtable_options: MemTableOptions::default(),
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: Compression::None,
            zstd_dictionary_bytes: 16 << 10,
            level0_compaction_trigger: 4,
            level0_slowdown_trigger: 20,
            level0_stop_trigger: 36,
            size_ratio: 10,
            num_levels: 7,
            target_file_size: 64 << 20,
            level1_max_bytes: 256 << 20,
            merge_operator: None,
            disable_wal: false,
            layout: Arc::new(UniformLayout),
            retain_flushed_memtables: false,
            retained_memtable_bytes: 0,
            iterator_reduction: true,
            level_filter_bytes: 1 << 20,
            reduction_gates: true,
        }
    }
}

impl KeyspaceOptions {
    /// The byte budget of retained memtables: `retained_memtable_bytes`, or
    /// when that is 0, enough for the memtables of the level-0 files that
    /// accumulate before level 0 is compacted (a memtable is counted a
    /// little above the write buffer size, hence the one extra).
    pub fn retention_budget(&self) -> u64 {
        if self.retained_memtable_bytes > 0 {
            return self.retained_memtable_bytes;
        }
        (self.level0_compaction_trigger as u64 + 1).saturating_mul(self.write_buffer_size as u64)
    }
}

impl fmt::Debug for KeyspaceOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyspaceOptions")
            .field("write_buffer_size", &self.write_buffer_size)
            .field("max_write_buffers", &self.max_write_buffers)
            .field("memtable", &self.memtable)
            .field("memtable_options", &self.memtable_options)
            .field("block_size", &self.block_size)
            .field("bloom_bits_per_key", &self.bloom_bits_per_key)
            .field("compression", &self.compression)
            .field("zstd_dictionary_bytes", &self.zstd_dictionary_bytes)
            .field("level0_compaction_trigger", &self.level0_compaction_trigger)
            .field("size_ratio", &self.size_ratio)
            .field("num_levels", &self.num_levels)
            .field("target_file_size", &self.target_file_size)
            .field("level1_max_bytes", &self.level1_max_bytes)
            .field(
                "merge_operator",
                &self.merge_operator.as_ref().map(|m| m.name().to_string()),
            )
            .field("disable_wal", &self.disable_wal)
            .field("layout", &self.layout.name())
            .field("retain_flushed_memtables", &self.retain_flushed_memtables)
            .field("retained_memtable_bytes", &self.retained_memtable_bytes)
            .field("iterator_reduction", &self.iterator_reduction)
            .field("level_filter_bytes", &self.level_filter_bytes)
            .field("reduction_gates", &self.reduction_gates)
            .finish()
    }
}

impl KeyspaceOptions {
    /// Sets the memtable representation.
    pub fn memtable(mut self, kind: MemTableKind) -> Self {
        self.memtable = kind;
        self
    }

    /// Sets the memtable representations' parameters.
    pub fn memtable_options(mut self, opts: MemTableOptions) -> Self {
        self.memtable_options = opts;
        self
    }

    /// Sets the merge operator.
    pub fn merge_operator(mut self, op: Arc<dyn MergeOperator>) -> Self {
        self.merge_operator = Some(op);
        self
    }

    /// Sets the write buffer size.
    pub fn write_buffer_size(mut self, bytes: usize) -> Self {
        self.write_buffer_size = bytes;
        self
    }

    /// Checks values that would make the engine misbehave.
    pub fn validate(&self) -> Result<()> {
        let bad = |s: &str| Err(Error::InvalidArgument(s.to_string()));
        if self.write_buffer_size < 4096 {
            return bad("write_buffer_size must be at least 4096 bytes");
        }
        check_at_most(
            "write_buffer_size",
            self.write_buffer_size as u64,
            MAX_WRITE_BUFFER_BYTES,
        )?;
        check_at_most("target_file_size", self.target_file_size, MAX_FILE_BYTES)?;
        check_at_most(
            "zstd_dictionary_bytes",
            self.zstd_dictionary_bytes as u64,
            crate::sst::compression_dict::MAX_DICT_BYTES as u64,
        )?;
        check_at_most(
            "level_filter_bytes",
            self.level_filter_bytes as u64,
            1 << 30,
        )?;
        check_at_most("max_write_buffers", self.max_write_buffers as u64, 1 << 16)?;
        // What a memtable allocates when it is created must fit in memory;
        // asking for more aborts the process instead of failing the open.
        let up_front = self
            .memtable_options
            .up_front_bytes(self.memtable, self.write_buffer_size) as u64;
        if let Some(mem) = physical_memory_bytes()
            && up_front > mem / 2
        {
            return Err(Error::InvalidArgument(format!(
                "write_buffer_size {}: a {} memtable reserves {up_front} bytes up front, more \
                 than half of this machine's {mem} bytes of memory; choose a smaller \
                 write_buffer_size (or a larger memtable_options.expected_entry_bytes)",
                self.write_buffer_size, self.memtable
            )));
        }
        if self.max_write_buffers < 2 {
            return bad("max_write_buffers must be at least 2");
        }
        if self.block_size < 64 || self.block_size > (16 << 20) {
            return bad("block_size must be between 64 bytes and 16 MiB");
        }
        if self.block_restart_interval == 0 {
            return bad("block_restart_interval must be at least 1");
        }
        if self.size_ratio < 2 {
            return bad("size_ratio must be at least 2");
        }
        if !(2..=32).contains(&self.num_levels) {
            return bad("num_levels must be between 2 and 32");
        }
        if self.level0_compaction_trigger == 0
            || self.level0_slowdown_trigger < self.level0_compaction_trigger
            || self.level0_stop_trigger < self.level0_slowdown_trigger
        {
            return bad("level-0 triggers must satisfy 1 <= compaction <= slowdown <= stop");
        }
        if self.target_file_size < 4096 || self.level1_max_bytes < 4096 {
            return bad("target_file_size and level1_max_bytes must be at least 4096 bytes");
        }
        self.memtable.validate()?;
        self.memtable_options
            .validate(self.memtable, self.write_buffer_size)?;
        self.group_plan().map(|_| ())
    }

    /// These options with values stored dictionary-encoded at every level
    /// (seed 002): each file keeps its distinct values once, sorted, and a
    /// bit-packed code per entry, when at most a quarter of its values are
    /// distinct (plainly otherwise). For another threshold, set `layout` to
    /// a [`crate::ValueDictionaryLayout`] yourself. Replaces the layout.
    pub fn with_value_dictionary(mut self) -> KeyspaceOptions {
        self.layout = Arc::new(crate::dictfile::ValueDictionaryLayout::default());
        self
    }

    /// The layout, checked and precomputed for this keyspace's levels.
    pub(crate) fn group_plan(&self) -> Result<crate::layout::GroupPlan> {
        crate::layout::GroupPlan::new(&*self.layout, self.num_levels)
    }

    /// What of these options shapes the keyspace's files, as recorded in
    /// the manifest.
    pub fn identity(&self) -> crate::manifest::KeyspaceIdentity {
        crate::manifest::KeyspaceIdentity {
            merge_operator: self
                .merge_operator
                .as_ref()
                .map(|m| m.name().to_string())
                .unwrap_or_default(),
            layout: self.layout.descriptor(),
        }
    }

    /// Table options for files written to `level`, through the layout.
    pub fn table_options(&self, level: Level) -> TableBuilderOptions {
        let base = TableBuilderOptions {
            block_size: self.block_size,
            restart_interval: self.block_restart_interval,
            bloom_bits_per_key: self.bloom_bits_per_key,
            compression: self.compression,
            zstd_dictionary_bytes: self.zstd_dictionary_bytes,
        };
        self.layout.table_options(level, &base)
    }

    /// Byte budget of `level` (>= 1).
    pub fn level_max_bytes(&self, level: Level) -> u64 {
        let mut b = self.level1_max_bytes;
        for _ in 1..level.get() {
            b = b.saturating_mul(self.size_ratio);
        }
        b
    }
}

/// Options of one write.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOptions {
    /// fsync the log before acknowledging (default false: the log reaches the
    /// operating system before the acknowledgement, so a process crash loses
    /// nothing, but a power cut may lose the last writes).
    pub sync: bool,
    /// Skip the write-ahead log for this write.
    pub disable_wal: bool,
}

/// Options of one read.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Read at this snapshot instead of the latest state.
    pub snapshot: Option<crate::key::SeqNo>,
    /// Inclusive lower bound of an iterator.
    pub lower_bound: Option<Vec<u8>>,
    /// Exclusive upper bound of an iterator.
    pub upper_bound: Option<Vec<u8>>,
}
