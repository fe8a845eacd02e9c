//! The database: keyspaces over one write-ahead log, the group-commit write
//! path, background flush and compaction, reads at snapshots.
//!
//! Locks, in the order they may be taken:
//! 1. `writers` — the queue of pending writes; its leader alone touches the
//!    write-ahead log and switches memtables.
//! 2. `manifest` — serialises version changes; held across the manifest
//!    write so that versions change one at a time.
//! 3. `state` — memtables, versions and bookkeeping; never held across I/O.
//! 4. each keyspace's `sv` (read-mostly), swapped under `state`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};

use crate::batch::{DecodedBatch, WriteBatch};
use crate::cache::BlockCache;
use crate::compaction::{self, CompactionReason, CompactionTask, DropPolicy, DropStats};
use crate::db_iter::DbIter;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::gate::{self, SavingsGate};
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::{SeekKey, SeqNo, ValueKind, append_internal_key, user_key};
use crate::level_filter::{LevelFilter, LevelMask};
use crate::log::LogWriter;
use crate::lookup::Lookup;
use crate::manifest::{MANIFEST_FORMAT_VERSION, NewFile, VersionEdit};
use crate::memtable::{MemTable, SwitchDue};
use crate::options::{
    KeyspaceOptions, MAX_KEY_BYTES, MAX_VALUE_BYTES, Options, ReadOptions, WriteOptions,
};
use crate::recovery::{
    self, CleanupFacts, DbId, Disposition, FILE_NUMBER_RESERVATION, LostTable, ManifestState,
    Owner, RecoveredKeyspace, RecoveryReport,
};
use crate::retained::{RetainedTableBuilder, RetainedTableIter};
use crate::sst::{TableBuilder, TableReader};
use crate::stats::Statistics;
use crate::version::{FileMeta, LevelIter, Version};
use crate::vfs::{FileLock, Vfs};

/// Id of the default keyspace.
pub const DEFAULT_KEYSPACE_ID: u32 = 0;
/// Name of the default keyspace.
pub const DEFAULT_KEYSPACE: &str = "default";

/// What a reader of one keyspace needs, published as one immutable unit.
pub(crate) struct SuperVersion {
    mem: Arc<MemTable>,
    /// Newest first.
    imms: Vec<Arc<MemTable>>,
    version: Arc<Version>,
    opts: Arc<KeyspaceOptions>,
    /// Grows with every publication; the level filter dates its records by it.
    version_no: u64,
}

/// State of a keyspace that only changes under the `state` lock.
struct KeyspaceState {
    name: String,
    opts: Arc<KeyspaceOptions>,
    mem: Arc<MemTable>,
    /// Oldest first.
    imms: Vec<Arc<MemTable>>,
    version: Arc<Version>,
    /// Oldest log that may hold this keyspace's unflushed entries.
    log_number: u64,
    flushing: bool,
    compact_cursor: Vec<Vec<u8>>,
    shared: Arc<KeyspaceShared>,
    level_stats: Vec<LevelStats>,
    version_no: u64,
    /// Level-0 files serving reads from their retained memtable, oldest
    /// first (weak: a file that leaves level 0 frees its memtable).
    retained: VecDeque<std::sync::Weak<FileMeta>>,
    /// False for a keyspace recovered from the manifest whose identity
    /// needs options only the application can give, until `Db::keyspace`
    /// supplies them: it is then neither flushed nor compacted, and writes
    /// to it are refused.
    registered: bool,
    /// What its files are shaped by, as recorded in the manifest.
    identity: crate::manifest::KeyspaceIdentity,
    /// `log_number` as the manifest last recorded it. `log_number` itself
    /// may run ahead (a switch moves an empty memtable's keyspace to the
    /// new log without an edit); logs are deleted only below every
    /// keyspace's recorded number, so every log the manifest names stays on
    /// disk (recovery refuses a database missing one).
    recorded_log_number: u64,
}

/// Per-level compaction counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct LevelStats {
    pub compactions: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub micros: u64,
}

/// What keyspace handles share.
struct KeyspaceShared {
    id: u32,
    name: String,
    sv: RwLock<Arc<SuperVersion>>,
    /// Which levels recently scanned ranges draw from (iterator reduction).
    filter: Mutex<LevelFilter>,
    /// Whether scans consult `filter` (it spares enough of them a seek).
    filter_gate: SavingsGate,
    /// Whether scans seek point-first (enough of them end at their start
    /// key).
    point_first_gate: SavingsGate,
}

struct State {
    keyspaces: BTreeMap<u32, KeyspaceState>,
    next_keyspace_id: u32,
    next_file_number: u64,
    /// Numbers at or above `next_file_number` whose names were taken when
    /// the database opened (by files it cannot prove it wrote): skipped, so
    /// that they are never overwritten nor covered by a reservation.
    taken_numbers: std::collections::BTreeSet<u64>,
    /// File numbers below this are recorded as allocated in the manifest;
    /// a number is reserved there before any file is created with it.
    reserved_file_numbers: u64,
    /// Closed write-ahead logs still on disk, ascending, with their sizes.
    /// The current log is not listed; its size is `DbInner::current_wal_bytes`.
    closed_logs: Vec<(u64, u64)>,
    bg_error: Option<Error>,
    snapshots: BTreeMap<SeqNo, usize>,
    running_compactions: usize,
    running_flushes: usize,
    /// The last compaction's I/O failure, cleared by the next success (not
    /// sticky: see `note_compaction_failure`).
    compaction_error: Option<Error>,
    compaction_failures: u64,
    closed: bool,
}

impl State {
    fn new_file_number(&mut self) -> u64 {
        take_number(&mut self.next_file_number, &mut self.taken_numbers)
    }

    /// Keyspaces whose background work may run (see
    /// `KeyspaceState::registered`).
    fn registered_keyspaces(&self) -> impl Iterator<Item = u32> + '_ {
        self.keyspaces
            .iter()
            .filter(|(_, k)| k.registered)
            .map(|(id, _)| *id)
    }

    fn snapshot_list(&self) -> Vec<SeqNo> {
        self.snapshots.keys().copied().collect()
    }
}

struct ManifestWriter {
    log: LogWriter,
    number: u64,
}

enum Request {
    Batch {
        batch: WriteBatch,
        sync: bool,
        no_wal: bool,
    },
    /// Switch the memtables of these keyspaces (for `flush`).
    Switch(Vec<u32>),
}

#[derive(Default)]
struct WriteQueue {
    next_ticket: u64,
    pending: VecDeque<(u64, Request)>,
    leader_active: bool,
    finished: HashMap<u64, Result<()>>,
}

struct WalState {
    writer: Option<LogWriter>,
    number: u64,
    /// Logs closed at a memtable switch, oldest first, whose bytes reached
    /// the OS but maybe not the disk, while some memtable still needs them.
    /// The next `sync: true` write fsyncs them before its own log: a synced
    /// write must not survive a power cut that loses an earlier
    /// acknowledged write (RocksDB does the same). Syncing them at the
    /// switch instead stalls every writer behind the fsync of a whole
    /// write buffer's worth of log, at every switch, even when no write
    /// ever asks for durability.
    closed_unsynced: Vec<(u64, LogWriter)>,
}

/// Pause after a failed compaction before the next is picked; doubles on
/// each failure in a row, up to the maximum.
const COMPACTION_RETRY_MIN: Duration = Duration::from_millis(200);
const COMPACTION_RETRY_MAX: Duration = Duration::from_secs(10);

/// How long a writer waiting for its group spins before it sleeps.
const WRITER_SPIN: Duration = Duration::from_micros(20);

/// Errors that mean a file's bytes are damaged (as opposed to I/O failing,
/// or a file of a newer format, which salvage must not set aside).
fn is_damage(e: &Error) -> bool {
    matches!(e, Error::Corruption { .. })
}

/// Moves a damaged table to `lost/` beside the database (never deletes it)
/// and describes what was lost.
fn set_aside_table(
    vfs: &dyn Vfs,
    dir: &Path,
    keyspace: u32,
    f: &NewFile,
    e: &Error,
) -> Result<LostTable> {
    let file = filename::table_path(dir, f.number);
    let moved_to = if vfs.exists(&file) {
        Some(recovery::set_aside(vfs, dir, &file)?)
    } else {
        None
    };
    Ok(LostTable {
        keyspace,
        level: f.level,
        file,
        moved_to,
        smallest_key: user_key(&f.smallest).to_vec(),
        largest_key: user_key(&f.largest).to_vec(),
        entries: f.num_entries,
        error: e.to_string(),
    })
}

pub(crate) struct DbInner {
    path: PathBuf,
    opts: Options,
    /// The database's identity: in its manifest, every log header and every
    /// table's properties.
    db_id: DbId,
    vfs: Arc<dyn Vfs>,
    /// The database lock; released at shutdown so that a reopen in this
    /// process works even while stale keyspace handles exist.
    lock: Mutex<Option<Box<dyn FileLock>>>,
    cache: Option<Arc<BlockCache>>,
    stats: Arc<Statistics>,
    state: Mutex<State>,
    bg_cv: Condvar,
    writers: Mutex<WriteQueue>,
    writers_cv: Condvar,
    wal: Mutex<WalState>,
    manifest: Mutex<ManifestWriter>,
    last_seqno: AtomicU64,
    shutting_down: AtomicBool,
    threads: Mutex<Vec<JoinHandle<()>>>,
    next_memtable_id: AtomicU64,
    recovery: RecoveryReport,
    /// Bytes written to the current write-ahead log.
    current_wal_bytes: AtomicU64,
    /// Live `Db` handles; the last one to drop closes the database.
    db_handles: std::sync::atomic::AtomicUsize,
}

/// An open database. Cheap to clone; every clone is the same database. When
/// the last clone drops, the database closes (as [`Db::close`]); keyspace
/// handles and snapshots that outlive it then fail with [`Error::Closed`].
pub struct Db {
    inner: Arc<DbInner>,
}

impl Clone for Db {
    fn clone(&self) -> Self {
        self.inner.db_handles.fetch_add(1, Ordering::AcqRel);
        Db {
            inner: Arc::clone(&self.inner),
        }
    }
}

/// A handle on one keyspace (an independent LSM tree sharing the database's
/// log and write path). Cheap to clone.
#[derive(Clone)]
pub struct Keyspace {
    inner: Arc<DbInner>,
    shared: Arc<KeyspaceShared>,
}

/// A consistent point-in-time view; released on drop.
pub struct Snapshot {
    inner: Arc<DbInner>,
    seqno: SeqNo,
}

impl Snapshot {
    /// The sequence number the snapshot reads at.
    pub fn seqno(&self) -> SeqNo {
        self.seqno
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut st = self.inner.state.lock();
        if let Some(c) = st.snapshots.get_mut(&self.seqno) {
            *c -= 1;
            if *c == 0 {
                st.snapshots.remove(&self.seqno);
            }
        }
    }
}

/// Counters and shape of the database, from [`Db::stats`].
#[derive(Clone, Debug, Default)]
pub struct DbStats {
    pub keyspaces: Vec<KeyspaceStats>,
    pub block_cache_hits: u64,
    pub block_cache_misses: u64,
    pub block_cache_usage_bytes: u64,
    pub block_cache_capacity_bytes: u64,
    pub bloom_useful: u64,
    pub bloom_checked_positive: u64,
    pub bloom_false_positive: u64,
    pub user_bytes_written: u64,
    pub wal_bytes_written: u64,
    pub flush_bytes_written: u64,
    pub compaction_bytes_read: u64,
    pub compaction_bytes_written: u64,
    /// (flush + compaction bytes written) / user key and value bytes written.
    pub write_amplification: f64,
    pub stall_micros: u64,
    pub slowdown_micros: u64,
    pub flushes: u64,
    pub compactions: u64,
    pub writes: u64,
    pub write_groups: u64,
    pub wal_syncs: u64,
    pub last_seqno: SeqNo,
    pub live_snapshots: usize,
    pub background_error: Option<String>,
    /// Iterators created, children they merged, and seeks issued to children.
    pub iterators_created: u64,
    pub iterator_children: u64,
    pub iterator_child_seeks: u64,
    /// Levels >= 1 merged into a finished forward scan that held no entry
    /// in its range (what a perfect per-file range filter would spare).
    pub scan_levels_unused: u64,
}

/// Shape of one keyspace.
#[derive(Clone, Debug, Default)]
pub struct KeyspaceStats {
    pub name: String,
    pub id: u32,
    /// Per level: (file count, bytes).
    pub levels: Vec<(usize, u64)>,
    pub level_compactions: Vec<LevelStats>,
    pub memtable_bytes: usize,
    pub immutable_memtables: usize,
    pub memtable_kind: String,
    /// Level-0 files served from retained memtables, and their bytes.
    pub retained_memtables: usize,
    pub retained_memtable_bytes: usize,
    /// Level filter table: records, bytes, lookups, hits.
    pub level_filter_records: usize,
    pub level_filter_bytes: usize,
    pub level_filter_lookups: u64,
    pub level_filter_hits: u64,
    /// Whether every scan consults the level filter (else one in 64: it
    /// did not spare a quarter of scans a seek lately). The gate's verdict:
    /// with `reduction_gates` off every scan consults it regardless.
    pub level_filter_active: bool,
    /// Scans that consulted the level filter and those it spared a seek,
    /// over completed windows of 256.
    pub level_filter_scans: u64,
    pub level_filter_saved: u64,
    /// Whether every scan seeks point-first (else one in 64: under a
    /// quarter of scans ended at their start key lately). As for
    /// `level_filter_active`, the gate's verdict.
    pub point_first_active: bool,
    /// Point-first scans and those that ended with older sources unread,
    /// over completed windows of 256.
    pub point_first_scans: u64,
    pub point_first_saved: u64,
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
            "writes: {} in {} groups, wal syncs: {}",
            self.writes, self.write_groups, self.wal_syncs
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

fn check_key_value(key: &[u8], value: Option<&[u8]>) -> Result<()> {
    if key.len() > MAX_KEY_BYTES {
        return Err(Error::InvalidArgument(format!(
            "key of {} bytes exceeds the limit of {MAX_KEY_BYTES}",
            key.len()
        )));
    }
    if let Some(v) = value
        && v.len() > MAX_VALUE_BYTES
    {
        return Err(Error::InvalidArgument(format!(
            "value of {} bytes exceeds the limit of {MAX_VALUE_BYTES}",
            v.len()
        )));
    }
    Ok(())
}

impl Db {
    /// Opens (or creates) the database at `path`.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        opts.validate()?;
        let inner = if opts.read_only {
            DbInner::open_beside_writer(path.as_ref(), opts)?
        } else {
            DbInner::open(path.as_ref(), opts)?
        };
        let inner = Arc::new(inner);
        if !inner.opts.read_only {
            DbInner::start_threads(&inner);
        }
        Ok(Db { inner })
    }

    /// Opens the database at `path` read-only ([`Options::read_only`]):
    /// nothing on disk changes, no lock is taken, and writes fail with
    /// [`Error::OpenedReadOnly`]. What the write-ahead logs hold is replayed
    /// into memory only.
    pub fn open_read_only(path: impl AsRef<Path>, mut opts: Options) -> Result<Db> {
        opts.read_only = true;
        Db::open(path, opts)
    }

    /// The database's identity, chosen when it was created (recorded in its
    /// manifest, every write-ahead log header and every table).
    pub fn id(&self) -> recovery::DbId {
        self.inner.db_id
    }

    /// Whether the database was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.inner.opts.read_only
    }

    /// The directory of the database.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// What recovery found when the database was opened.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.inner.recovery
    }

    /// The default keyspace.
    pub fn default_keyspace(&self) -> Keyspace {
        let st = self.inner.state.lock();
        let ks = st
            .keyspaces
            .get(&DEFAULT_KEYSPACE_ID)
            .map(|k| Arc::clone(&k.shared));
        drop(st);
        Keyspace {
            inner: Arc::clone(&self.inner),
            // The default keyspace is created at open and never dropped.
            shared: ks.unwrap_or_else(unreachable_default),
        }
    }

    /// Opens the keyspace `name`, creating it if missing. Options of an
    /// existing keyspace are replaced by `opts` (the tree itself is kept).
    pub fn keyspace(&self, name: &str, opts: KeyspaceOptions) -> Result<Keyspace> {
        opts.validate()?;
        if name.is_empty() || name.len() > 255 {
            return Err(Error::InvalidArgument(
                "keyspace names must be 1 to 255 bytes".into(),
            ));
        }
        let shared = self.inner.open_keyspace(name, opts)?;
        Ok(Keyspace {
            inner: Arc::clone(&self.inner),
            shared,
        })
    }

    /// Names of every keyspace.
    pub fn keyspace_names(&self) -> Vec<String> {
        let st = self.inner.state.lock();
        st.keyspaces.values().map(|k| k.name.clone()).collect()
    }

    /// Sets `key` in the default keyspace.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.default_keyspace().put(key, value)
    }

    /// Reads `key` from the default keyspace.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.default_keyspace().get(key)
    }

    /// Reads `key` from the default keyspace into `value`; see
    /// [`Keyspace::get_into`].
    pub fn get_into(&self, key: &[u8], value: &mut Vec<u8>) -> Result<bool> {
        self.default_keyspace().get_into(key, value)
    }

    /// Deletes `key` from the default keyspace.
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        self.default_keyspace().delete(key)
    }

    /// Adds a merge operand to `key` in the default keyspace.
    pub fn merge(&self, key: &[u8], operand: &[u8]) -> Result<()> {
        self.default_keyspace().merge(key, operand)
    }

    /// Applies a batch atomically.
    pub fn write(&self, opts: WriteOptions, batch: WriteBatch) -> Result<()> {
        self.inner.write(opts, batch)
    }

    /// A consistent view of every keyspace at this moment.
    pub fn snapshot(&self) -> Snapshot {
        let mut st = self.inner.state.lock();
        let seqno = self.inner.last_seqno.load(Ordering::Acquire);
        *st.snapshots.entry(seqno).or_insert(0) += 1;
        Snapshot {
            inner: Arc::clone(&self.inner),
            seqno,
        }
    }

    /// Flushes every keyspace's memtable to level 0 and waits for it.
    pub fn flush(&self) -> Result<()> {
        let ids: Vec<u32> = self.inner.state.lock().registered_keyspaces().collect();
        self.inner.flush_keyspaces(ids)
    }

    /// Waits until background work is done: no immutable memtable waits
    /// for its flush, no flush or compaction runs, and no level needs a
    /// compaction (like RocksDB's `WaitForCompact` without flushing). The
    /// mutable memtables are left as they are. Fails with the background
    /// error if one stops the work.
    pub fn wait_for_background_work(&self) -> Result<()> {
        self.inner.check_open()?;
        let inner = &self.inner;
        let mut st = inner.state.lock();
        loop {
            DbInner::bg_error(&st)?;
            if st.closed {
                return Err(Error::Closed);
            }
            if st.running_compactions == 0
                && let Some(e) = &st.compaction_error
            {
                return Err(e.duplicate());
            }
            let busy = st.running_flushes > 0
                || st.running_compactions > 0
                || st.keyspaces.values().filter(|k| k.registered).any(|k| {
                    !k.imms.is_empty()
                        || compaction::pick_compaction(&k.version, &k.opts, &k.compact_cursor)
                            .is_some()
                });
            if !busy {
                return Ok(());
            }
            inner.bg_cv.notify_all();
            inner.bg_cv.wait_for(&mut st, Duration::from_millis(50));
        }
    }

    /// Compacts every keyspace's whole key range.
    pub fn compact(&self) -> Result<()> {
        let ids: Vec<u32> = self.inner.state.lock().registered_keyspaces().collect();
        for id in ids {
            self.inner.compact_range(id, None, None)?;
        }
        Ok(())
    }

    /// Compacts the default keyspace's keys in `[lo, hi]` down the tree.
    pub fn compact_range(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<()> {
        self.inner.compact_range(DEFAULT_KEYSPACE_ID, lo, hi)
    }

    /// Counters and the shape of every keyspace.
    pub fn stats(&self) -> DbStats {
        self.inner.stats()
    }

    /// Verifies every checksum of every live table file; returns the
    /// corrupt files with their errors (empty when all are sound).
    pub fn verify(&self) -> Vec<(PathBuf, Error)> {
        let files: Vec<Arc<FileMeta>> = {
            let st = self.inner.state.lock();
            st.keyspaces
                .values()
                .flat_map(|k| {
                    k.version
                        .all_files()
                        .map(|(_, f)| Arc::clone(f))
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        files
            .iter()
            .filter_map(|f| f.table.verify().err().map(|e| (f.path.clone(), e)))
            .collect()
    }

    /// Stops background work (waiting for running jobs) and releases the
    /// database. Other clones become unusable (`Error::Closed`).
    pub fn close(self) -> Result<()> {
        self.inner.shutdown();
        // Drop of `self` follows; shutdown is idempotent.
        let st = self.inner.state.lock();
        match &st.bg_error {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}

#[cold]
fn unreachable_default() -> Arc<KeyspaceShared> {
    // The default keyspace exists from creation on; reaching this means the
    // manifest lost it, which open() rejects.
    panic!("default keyspace missing")
}

impl Keyspace {
    /// The keyspace's id (for [`WriteBatch::put_in`]).
    pub fn id(&self) -> u32 {
        self.shared.id
    }

    /// The keyspace's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Sets `key` to `value`.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_opt(WriteOptions::default(), key, value)
    }

    /// Sets `key` to `value` with write options.
    pub fn put_opt(&self, opts: WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::for_one(key.len(), value.len());
        b.put_in(self.shared.id, key, value);
        self.inner.write(opts, b)
    }

    /// Deletes `key`.
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        self.delete_opt(WriteOptions::default(), key)
    }

    /// Deletes `key` with write options.
    pub fn delete_opt(&self, opts: WriteOptions, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::for_one(key.len(), 0);
        b.delete_in(self.shared.id, key);
        self.inner.write(opts, b)
    }

    /// Adds a merge operand for `key`.
    pub fn merge(&self, key: &[u8], operand: &[u8]) -> Result<()> {
        self.merge_opt(WriteOptions::default(), key, operand)
    }

    /// Adds a merge operand for `key` with write options.
    pub fn merge_opt(&self, opts: WriteOptions, key: &[u8], operand: &[u8]) -> Result<()> {
        let mut b = WriteBatch::for_one(key.len(), operand.len());
        b.merge_in(self.shared.id, key, operand);
        self.inner.write(opts, b)
    }

    /// Reads the latest value of `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut value = Vec::new();
        let found = self.inner.get(&self.shared, key, None, &mut value)?;
        Ok(found.then_some(value))
    }

    /// Reads `key` as of `snapshot`.
    pub fn get_at(&self, key: &[u8], snapshot: &Snapshot) -> Result<Option<Vec<u8>>> {
        let mut value = Vec::new();
        let found = self
            .inner
            .get(&self.shared, key, Some(snapshot.seqno), &mut value)?;
        Ok(found.then_some(value))
    }

    /// Reads the latest value of `key` into `value`, replacing its contents
    /// and reusing its allocation; whether the key has a value (`value` is
    /// left empty when not, and on an error). A loop of point reads that
    /// passes one buffer allocates only when a value outgrows it.
    pub fn get_into(&self, key: &[u8], value: &mut Vec<u8>) -> Result<bool> {
        self.inner.get(&self.shared, key, None, value)
    }

    /// An iterator with bounds and snapshot from `opts`; position it with a
    /// seek before reading.
    pub fn iter(&self, opts: ReadOptions) -> Result<DbIter> {
        self.inner.iter(&self.shared, opts)
    }

    /// Entries with keys in `[from, to)` (either bound open), at most
    /// `limit`, in key order.
    pub fn scan(
        &self,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut it = self.iter(ReadOptions {
            snapshot: None,
            lower_bound: from.map(<[u8]>::to_vec),
            upper_bound: to.map(<[u8]>::to_vec),
        })?;
        it.seek_to_first();
        let mut out = Vec::new();
        while it.valid() && out.len() < limit {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// Compacts keys in `[lo, hi]` down the tree.
    pub fn compact_range(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<()> {
        self.inner.compact_range(self.shared.id, lo, hi)
    }

    /// Flushes this keyspace's memtable and waits for it.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush_keyspaces(vec![self.shared.id])
    }
}

impl DbInner {
    /// Opens the database: reads the manifest, opens its tables, replays
    /// the write-ahead logs; then (unless read-only) flushes what was
    /// replayed, writes a fresh manifest and log, and removes what it can
    /// prove is its own and obsolete. See `recovery.rs` for the rules.
    fn open(path: &Path, opts: Options) -> Result<DbInner> {
        let vfs = Arc::clone(&opts.vfs);
        let read_only = opts.read_only;
        if !vfs.exists(path) {
            if read_only || !opts.create_if_missing {
                return Err(Error::NotFound {
                    path: path.to_path_buf(),
                });
            }
            vfs.create_dir_all(path)?;
        }
        // A read-only open takes no lock: it changes nothing, and a writer
        // may hold the lock meanwhile.
        let lock = if read_only {
            None
        } else {
            Some(vfs.lock(&filename::lock_path(path))?)
        };
        let mut report = RecoveryReport::default();
        let mut exists = vfs.exists(&filename::current_path(path));
        if !exists {
            let names = vfs.list(path)?;
            let found = recovery::engine_files(&names);
            if !found.is_empty() {
                let rebuilt = if opts.skip_corrupt_tables && !read_only {
                    recovery::newest_readable_manifest(&*vfs, path)?
                } else {
                    None
                };
                let Some(name) = rebuilt else {
                    return Err(recovery::missing_current(path, &found));
                };
                let number = match filename::parse(&name) {
                    Some(FileKind::Manifest(n)) => n,
                    _ => return Err(recovery::missing_current(path, &found)),
                };
                write_current(&*vfs, path, number)?;
                report.current_rebuilt = Some(name);
                exists = true;
            }
        }
        if exists && opts.error_if_exists {
            return Err(Error::InvalidArgument(format!(
                "database at {} already exists (error_if_exists is set)",
                path.display()
            )));
        }
        if !exists && (read_only || !opts.create_if_missing) {
            return Err(Error::NotFound {
                path: path.to_path_buf(),
            });
        }
        let stats = Arc::new(Statistics::default());
        let cache =
            (opts.block_cache_bytes > 0).then(|| Arc::new(BlockCache::new(opts.block_cache_bytes)));

        // Read the manifest named by CURRENT, or start empty.
        let mut manifest = ManifestState::default();
        let mut old_manifest = None;
        if exists {
            let name = recovery::read_current(&*vfs, path)?;
            let mpath = path.join(&name);
            recovery::replay_manifest(&*vfs, &mpath, &mut manifest)?;
            old_manifest = Some(mpath);
        }
        // Every number below this was recorded as allocated before this open.
        let allocated_below = manifest.next_file_number;
        let (db_id, id_known) = match manifest.db_id {
            Some(id) => (id, true),
            None => (recovery::new_db_id(), false),
        };
        manifest
            .keyspaces
            .entry(DEFAULT_KEYSPACE_ID)
            .or_insert_with(|| RecoveredKeyspace {
                name: DEFAULT_KEYSPACE.into(),
                log_number: 0,
                files: BTreeMap::new(),
                identity: None,
            });
        if let Some(d) = manifest.keyspaces.get(&DEFAULT_KEYSPACE_ID) {
            recovery::check_identity(
                DEFAULT_KEYSPACE,
                d.identity.as_ref(),
                &opts.default_keyspace.identity(),
            )?;
        }
        // Keyspaces whose files need what only the application can supply
        // (a merge operator, a layout) wait for it: nothing is flushed or
        // compacted for them until `Db::keyspace` registers them.
        let pending: std::collections::HashSet<u32> = manifest
            .keyspaces
            .iter()
            .filter(|(id, k)| {
                **id != DEFAULT_KEYSPACE_ID
                    && k.identity.as_ref().is_some_and(|i| i.needs_registration())
            })
            .map(|(id, _)| *id)
            .collect();

        let names = vfs.list(path)?;
        let mut logs: Vec<u64> = names
            .iter()
            .filter_map(|n| match filename::parse(n) {
                Some(FileKind::Log(k)) => Some(k),
                _ => None,
            })
            .collect();
        logs.sort_unstable();
        if let Some(m) = &old_manifest {
            recovery::check_manifest_tail(m, &manifest, &logs)?;
            if let Some((off, bytes, reason)) = &manifest.tail_dropped {
                report.manifest_tail_dropped = Some((m.clone(), *off, *bytes, reason.clone()));
            }
            if id_known {
                recovery::check_needed_logs(path, &manifest, &logs)?;
            }
        }
        let needed_logs: std::collections::HashSet<u64> =
            manifest.keyspaces.values().map(|k| k.log_number).collect();
        // Never reuse a name that is taken, ours or not; skip such numbers
        // rather than jump past them, so that a reservation never covers a
        // file the database did not write.
        let mut next_file_number = manifest.next_file_number.max(2);
        let mut taken_numbers: std::collections::BTreeSet<u64> = names
            .iter()
            .filter_map(|n| match filename::parse(n) {
                Some(FileKind::Log(k) | FileKind::Table(k) | FileKind::Manifest(k)) => Some(k),
                _ => None,
            })
            .filter(|&k| k >= next_file_number)
            .collect();
        let mut last_seqno = manifest.last_seqno;

        // Open the tables every keyspace references.
        let mut versions: BTreeMap<u32, Version> = BTreeMap::new();
        let mut ks_opts: BTreeMap<u32, Arc<KeyspaceOptions>> = BTreeMap::new();
        for (&id, rk) in &manifest.keyspaces {
            let o = if id == DEFAULT_KEYSPACE_ID {
                opts.default_keyspace.clone()
            } else {
                KeyspaceOptions::default()
            };
            let mut added = Vec::new();
            for f in rk.files.values() {
                let opened = open_table_meta(&vfs, path, f, cache.clone(), Arc::clone(&stats))
                    .and_then(|m| {
                        if opts.skip_corrupt_tables {
                            m.table.verify()?;
                        }
                        Ok(m)
                    });
                match opened {
                    Ok(meta) => added.push((f.level as usize, Arc::new(meta))),
                    Err(e) if opts.skip_corrupt_tables && is_damage(&e) => {
                        report
                            .lost_tables
                            .push(set_aside_table(&*vfs, path, id, f, &e)?);
                    }
                    Err(e) => return Err(e),
                }
            }
            let levels = o.num_levels.max(
                rk.files
                    .values()
                    .map(|f| f.level as usize + 1)
                    .max()
                    .unwrap_or(0),
            );
            let v = Version::empty(levels).apply(id, &[], added);
            v.check_invariants()
                .map_err(|e| Error::corruption(old_manifest.clone().unwrap_or_default(), 0, e))?;
            versions.insert(id, v);
            ks_opts.insert(id, Arc::new(o));
        }

        // Replay write-ahead logs into fresh memtables.
        let min_log = manifest
            .keyspaces
            .values()
            .map(|k| k.log_number)
            .min()
            .unwrap_or(0);
        let replay: Vec<u64> = logs.iter().copied().filter(|&l| l >= min_log).collect();
        let mut mems: BTreeMap<u32, MemTable> = BTreeMap::new();
        let mut key_buf = Vec::new();
        let mut entries_replayed = 0u64;
        // The writer logs batches in sequence order (one leader assigns
        // numbers and appends); a batch that does not come after the one
        // before it would put two versions of a key at one sequence number.
        let mut next_replay_seqno: SeqNo = 0;
        let keyspaces = &manifest.keyspaces;
        let outcome = recovery::replay_logs(
            &*vfs,
            path,
            &recovery::ReplayPlan {
                logs: &replay,
                expect_id: id_known.then_some(&db_id),
                needed: &needed_logs,
                mode: opts.wal_recovery,
            },
            &mut report,
            &mut |lpath, log, offset, rec| {
                let batch =
                    DecodedBatch::parse(rec).map_err(|e| Error::corruption(lpath, offset, e))?;
                if batch.seqno < next_replay_seqno {
                    return Err(Error::corruption(
                        lpath,
                        offset,
                        format!(
                            "write batch at sequence number {} follows one that reached {}",
                            batch.seqno,
                            next_replay_seqno - 1
                        ),
                    ));
                }
                next_replay_seqno = batch.seqno + u64::from(batch.count);
                for (j, entry) in batch.iter().enumerate() {
                    let entry = entry.map_err(|e| Error::corruption(lpath, offset, e))?;
                    let seq = batch.seqno + j as u64;
                    last_seqno = last_seqno.max(seq);
                    let Some(rk) = keyspaces.get(&entry.keyspace) else {
                        // Entries of a dropped keyspace.
                        continue;
                    };
                    if log < rk.log_number {
                        continue;
                    }
                    let mem = mems.entry(entry.keyspace).or_insert_with(|| {
                        match ks_opts.get(&entry.keyspace) {
                            Some(o) => MemTable::for_keyspace(o, 0, log),
                            None => MemTable::new(Default::default(), 0, log),
                        }
                    });
                    key_buf.clear();
                    append_internal_key(&mut key_buf, entry.key, seq, entry.kind as u8);
                    mem.add(&key_buf, entry.value, seq, entry.kind == ValueKind::Delete);
                    entries_replayed += 1;
                }
                Ok(())
            },
        )?;
        report.entries_replayed = entries_replayed;

        if read_only {
            // Say what is not the database's, changing nothing.
            let live_tables = live_table_numbers(&versions);
            let current_manifest = old_manifest.as_deref().and_then(|m| {
                match filename::parse(&m.file_name()?.to_string_lossy()) {
                    Some(FileKind::Manifest(n)) => Some(n),
                    _ => None,
                }
            });
            let facts = CleanupFacts {
                allocated_below,
                wal_number: logs.last().copied().unwrap_or(0),
                manifest_number: current_manifest.unwrap_or(0),
                live_tables: &live_tables,
                applied_logs: &outcome.applied,
                kept_logs: &Default::default(),
            };
            let sweep = Sweep {
                vfs: &vfs,
                dir: path,
                db_id: &db_id,
                id_known,
                read_manifest: old_manifest.as_deref(),
            };
            sweep.run(&facts, true, &mut report)?;
            return Ok(Self::assemble(
                path,
                opts,
                vfs,
                None,
                cache,
                stats,
                db_id,
                manifest,
                versions,
                ks_opts,
                mems,
                next_file_number,
                taken_numbers,
                next_file_number,
                last_seqno,
                None,
                None,
                report,
            ));
        }

        // Logs recovery went past damage in are copied to lost/ before
        // anything can retire them: the copy is complete before the new
        // manifest stops needing the original.
        let mut applied_logs = outcome.applied;
        for log in outcome.partial {
            let from = filename::log_path(path, log);
            let to = copy_aside(&*vfs, path, &from)?;
            report.logs_set_aside.push((from, to));
            applied_logs.insert(log);
        }

        // A pending keyspace keeps what was replayed in its memtable, and
        // the logs it came from, until it is registered and flushed.
        let pending_mems: BTreeMap<u32, MemTable> = {
            let ids: Vec<u32> = mems
                .iter()
                .filter(|(id, m)| pending.contains(id) && !m.is_empty())
                .map(|(id, _)| *id)
                .collect();
            ids.into_iter()
                .filter_map(|id| mems.remove(&id).map(|m| (id, m)))
                .collect()
        };
        let kept_log_numbers: BTreeMap<u32, u64> = pending_mems
            .keys()
            .map(|id| (*id, manifest.keyspaces[id].log_number))
            .collect();
        let kept_logs: std::collections::HashSet<u64> = match kept_log_numbers.values().min() {
            Some(&keep_from) => {
                applied_logs.retain(|&l| l < keep_from);
                replay.iter().copied().filter(|&l| l >= keep_from).collect()
            }
            None => Default::default(),
        };

        // Flush what was replayed to level 0, so the old logs can go.
        for (id, mem) in &mems {
            if mem.is_empty() {
                continue;
            }
            let o = &ks_opts[id];
            let number = take_number(&mut next_file_number, &mut taken_numbers);
            let mut it = mem.iter();
            let out = build_table(
                &vfs,
                path,
                &db_id,
                number,
                it.as_mut(),
                o,
                0,
                &[],
                false,
                &|| false,
                None,
            )?;
            if let Some(rec) = out {
                let rec = NewFile {
                    keyspace: *id,
                    ..rec
                };
                let meta = open_table_meta(&vfs, path, &rec, cache.clone(), Arc::clone(&stats))?;
                let v = versions
                    .remove(id)
                    .unwrap_or_else(|| Version::empty(o.num_levels));
                versions.insert(*id, v.apply(*id, &[], vec![(0, Arc::new(meta))]));
                Statistics::add(&stats.bytes_flushed, rec.size);
            }
        }
        if !mems.is_empty() {
            vfs.sync_dir(path)?;
        }

        // A new log for new writes, and a new manifest holding everything,
        // with a reservation of file numbers above what is in use.
        let wal_number = take_number(&mut next_file_number, &mut taken_numbers);
        let manifest_number = take_number(&mut next_file_number, &mut taken_numbers);
        let reserved = next_file_number + FILE_NUMBER_RESERVATION;
        let mut snapshot = VersionEdit {
            format_version: Some(MANIFEST_FORMAT_VERSION),
            db_id: Some(db_id),
            next_file_number: Some(reserved),
            last_seqno: Some(last_seqno),
            ..Default::default()
        };
        let mut identities = BTreeMap::new();
        for (&id, rk) in &manifest.keyspaces {
            snapshot.added_keyspaces.push((id, rk.name.clone()));
            let log = kept_log_numbers.get(&id).copied().unwrap_or(wal_number);
            snapshot.log_numbers.push((id, log));
            for (level, f) in versions[&id].all_files() {
                snapshot.new_files.push(f.record(id, level));
            }
            let identity = if id == DEFAULT_KEYSPACE_ID {
                opts.default_keyspace.identity()
            } else {
                rk.identity
                    .clone()
                    .unwrap_or_else(|| KeyspaceOptions::default().identity())
            };
            snapshot.keyspace_identities.push((id, identity.clone()));
            identities.insert(id, identity);
        }
        // The log first: a manifest never names a log that is not on disk,
        // so a missing one is damage (see `recovery::check_needed_logs`).
        let wal = create_wal(&*vfs, path, wal_number, &db_id)?;
        vfs.sync_dir(path)?;
        let mlog = write_new_manifest(&*vfs, path, manifest_number, &snapshot)?;

        // Remove what the database wrote and no longer needs; leave (and
        // report) whatever it cannot prove it wrote.
        let live_tables = live_table_numbers(&versions);
        let facts = CleanupFacts {
            allocated_below,
            wal_number,
            manifest_number,
            live_tables: &live_tables,
            applied_logs: &applied_logs,
            kept_logs: &kept_logs,
        };
        let sweep = Sweep {
            vfs: &vfs,
            dir: path,
            db_id: &db_id,
            id_known,
            read_manifest: old_manifest.as_deref(),
        };
        sweep.run(&facts, false, &mut report)?;
        vfs.sync_dir(path)?;

        let mut inner = Self::assemble(
            path,
            opts,
            vfs,
            lock,
            cache,
            stats,
            db_id,
            manifest,
            versions,
            ks_opts,
            pending_mems,
            next_file_number,
            taken_numbers,
            reserved,
            last_seqno,
            Some((wal, wal_number)),
            Some(ManifestWriter {
                log: mlog,
                number: manifest_number,
            }),
            report,
        );
        // Logs kept for pending keyspaces are retired like any closed log
        // once every keyspace has moved past them.
        if let Some(&keep_from) = kept_log_numbers.values().min() {
            let st = inner.state.get_mut();
            for &l in replay.iter().filter(|&&l| l >= keep_from) {
                let bytes = inner
                    .vfs
                    .file_size(&filename::log_path(path, l))
                    .unwrap_or(0);
                st.closed_logs.push((l, bytes));
            }
        }
        for (id, ks) in inner.state.get_mut().keyspaces.iter_mut() {
            ks.log_number = kept_log_numbers.get(id).copied().unwrap_or(wal_number);
            ks.recorded_log_number = ks.log_number;
            ks.registered = !pending.contains(id);
            if let Some(i) = identities.remove(id) {
                ks.identity = i;
            }
        }
        Ok(inner)
    }

    /// A read-only open, retried when a writer changed the database while
    /// it read (rolled the manifest, or retired a log or table the read
    /// state still named): such a failure says nothing of damage. A failure
    /// on a database that did not change is returned.
    fn open_beside_writer(path: &Path, opts: Options) -> Result<DbInner> {
        let vfs = Arc::clone(&opts.vfs);
        let fingerprint = || {
            let name = recovery::read_current(&*vfs, path).ok()?;
            let size = vfs.file_size(&path.join(&name)).ok()?;
            Some((name, size))
        };
        let mut attempts = 0;
        loop {
            let before = fingerprint();
            match DbInner::open(path, opts.clone()) {
                Ok(inner) => return Ok(inner),
                Err(_) if attempts < 5 && before.is_some() && fingerprint() != before => {
                    attempts += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Builds the open database from what recovery produced. `mems` become
    /// the keyspaces' memtables (a read-only open keeps what it replayed
    /// there); `wal` and `manifest` are absent for a read-only open.
    #[allow(clippy::too_many_arguments)]
    fn assemble(
        path: &Path,
        opts: Options,
        vfs: Arc<dyn Vfs>,
        lock: Option<Box<dyn FileLock>>,
        cache: Option<Arc<BlockCache>>,
        stats: Arc<Statistics>,
        db_id: DbId,
        manifest: ManifestState,
        mut versions: BTreeMap<u32, Version>,
        ks_opts: BTreeMap<u32, Arc<KeyspaceOptions>>,
        mut mems: BTreeMap<u32, MemTable>,
        next_file_number: u64,
        taken_numbers: std::collections::BTreeSet<u64>,
        reserved_file_numbers: u64,
        last_seqno: SeqNo,
        wal: Option<(LogWriter, u64)>,
        manifest_writer: Option<ManifestWriter>,
        report: RecoveryReport,
    ) -> DbInner {
        let wal_number = wal.as_ref().map_or(0, |w| w.1);
        let next_memtable_id = AtomicU64::new(1);
        let mut state_ks = BTreeMap::new();
        let mut next_keyspace_id = 1;
        for (id, rk) in manifest.keyspaces {
            let o = Arc::clone(&ks_opts[&id]);
            let version = Arc::new(
                versions
                    .remove(&id)
                    .unwrap_or_else(|| Version::empty(o.num_levels)),
            );
            let mem_id = next_memtable_id.fetch_add(1, Ordering::Relaxed);
            let mem = Arc::new(match mems.remove(&id) {
                Some(m) => m,
                None => MemTable::for_keyspace(&o, mem_id, wal_number),
            });
            let sv = Arc::new(SuperVersion {
                mem: Arc::clone(&mem),
                imms: Vec::new(),
                version: Arc::clone(&version),
                opts: Arc::clone(&o),
                version_no: 0,
            });
            let shared = Arc::new(KeyspaceShared {
                id,
                name: rk.name.clone(),
                sv: RwLock::new(sv),
                filter: Mutex::new(LevelFilter::new(o.level_filter_bytes)),
                filter_gate: SavingsGate::new(),
                point_first_gate: SavingsGate::new(),
            });
            next_keyspace_id = next_keyspace_id.max(id + 1);
            let levels = version.num_levels();
            state_ks.insert(
                id,
                KeyspaceState {
                    name: rk.name,
                    opts: o,
                    mem,
                    imms: Vec::new(),
                    version,
                    log_number: rk.log_number,
                    flushing: false,
                    compact_cursor: vec![Vec::new(); levels],
                    shared,
                    level_stats: vec![LevelStats::default(); levels],
                    version_no: 0,
                    retained: VecDeque::new(),
                    registered: true,
                    identity: rk.identity.unwrap_or_default(),
                    recorded_log_number: rk.log_number,
                },
            );
        }
        let (writer, wal_number) = match wal {
            Some((w, n)) => (Some(w), n),
            None => (None, 0),
        };
        let manifest_writer = manifest_writer.unwrap_or_else(|| ManifestWriter {
            log: LogWriter::new(Box::new(RefusingFile)),
            number: 0,
        });
        DbInner {
            path: path.to_path_buf(),
            vfs,
            db_id,
            lock: Mutex::new(lock),
            cache,
            stats,
            state: Mutex::new(State {
                keyspaces: state_ks,
                next_keyspace_id,
                next_file_number,
                taken_numbers,
                reserved_file_numbers,
                closed_logs: Vec::new(),
                bg_error: None,
                snapshots: BTreeMap::new(),
                running_compactions: 0,
                running_flushes: 0,
                compaction_error: None,
                compaction_failures: 0,
                closed: false,
            }),
            bg_cv: Condvar::new(),
            writers: Mutex::new(WriteQueue::default()),
            writers_cv: Condvar::new(),
            wal: Mutex::new(WalState {
                closed_unsynced: Vec::new(),
                writer,
                number: wal_number,
            }),
            manifest: Mutex::new(manifest_writer),
            last_seqno: AtomicU64::new(last_seqno),
            shutting_down: AtomicBool::new(false),
            threads: Mutex::new(Vec::new()),
            next_memtable_id,
            recovery: report,
            db_handles: std::sync::atomic::AtomicUsize::new(1),
            current_wal_bytes: AtomicU64::new(0),
            opts,
        }
    }

    /// A file number, reserved in the manifest before it is handed out (see
    /// [`FILE_NUMBER_RESERVATION`]). Takes the manifest lock only when the
    /// reservation runs out. REQUIRES: neither the manifest nor the state
    /// lock is held.
    fn allocate_file_number(&self) -> Result<u64> {
        {
            let mut st = self.state.lock();
            if st.next_file_number < st.reserved_file_numbers {
                return Ok(st.new_file_number());
            }
        }
        let mut manifest = self.manifest.lock();
        let ceiling = {
            let mut st = self.state.lock();
            if st.next_file_number < st.reserved_file_numbers {
                return Ok(st.new_file_number());
            }
            st.next_file_number + FILE_NUMBER_RESERVATION
        };
        let edit = VersionEdit {
            next_file_number: Some(ceiling),
            ..Default::default()
        };
        self.log_edit(&mut manifest, &edit)?;
        // Others allocate only below the old ceiling while the manifest lock
        // is held, so the number taken here is inside the new reservation.
        let mut st = self.state.lock();
        st.reserved_file_numbers = st.reserved_file_numbers.max(ceiling);
        Ok(st.new_file_number())
    }

    fn start_threads(inner: &Arc<DbInner>) {
        let mut threads = inner.threads.lock();
        for i in 0..inner.opts.flush_threads {
            let db = Arc::clone(inner);
            if let Ok(h) = std::thread::Builder::new()
                .name(format!("strata-flush-{i}"))
                .spawn(move || db.flush_loop())
            {
                threads.push(h);
            }
        }
        for i in 0..inner.opts.compaction_threads {
            let db = Arc::clone(inner);
            if let Ok(h) = std::thread::Builder::new()
                .name(format!("strata-compact-{i}"))
                .spawn(move || db.compaction_loop())
            {
                threads.push(h);
            }
        }
    }

    fn shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
        {
            let mut st = self.state.lock();
            st.closed = true;
            self.bg_cv.notify_all();
        }
        self.writers_cv.notify_all();
        let threads: Vec<_> = std::mem::take(&mut *self.threads.lock());
        for t in threads {
            let _ = t.join();
        }
        // Make sure everything acknowledged reached the OS.
        if let Some(w) = self.wal.lock().writer.as_mut() {
            let _ = w.flush();
        }
        self.lock.lock().take();
    }

    fn check_writable(&self, operation: &'static str) -> Result<()> {
        if self.opts.read_only {
            return Err(Error::OpenedReadOnly { operation });
        }
        Ok(())
    }

    fn check_open(&self) -> Result<()> {
        if self.shutting_down.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    fn open_keyspace(&self, name: &str, opts: KeyspaceOptions) -> Result<Arc<KeyspaceShared>> {
        self.check_open()?;
        let opts = Arc::new(opts);
        // Serialise with other version changes.
        let mut manifest = self.manifest.lock();
        let mut st = self.state.lock();
        if let Some((&id, ks)) = st.keyspaces.iter_mut().find(|(_, k)| k.name == name) {
            let given = opts.identity();
            recovery::check_identity(name, Some(&ks.identity), &given)?;
            ks.opts = Arc::clone(&opts);
            let levels = opts.num_levels.max(ks.version.num_levels());
            if levels > ks.version.num_levels() {
                let mut v = (*ks.version).clone();
                v.levels.resize(levels, Vec::new());
                ks.version = Arc::new(v);
                ks.compact_cursor.resize(levels, Vec::new());
                ks.level_stats.resize(levels, LevelStats::default());
            }
            publish(ks);
            let shared = Arc::clone(&ks.shared);
            let changed = ks.identity != given;
            if changed && !self.opts.read_only {
                // A new layout (or an operator where there was none) is
                // recorded before the keyspace's background work resumes
                // under it.
                drop(st);
                let edit = VersionEdit {
                    keyspace_identities: vec![(id, given.clone())],
                    ..Default::default()
                };
                self.log_edit(&mut manifest, &edit)?;
                st = self.state.lock();
            }
            if let Some(ks) = st.keyspaces.get_mut(&id) {
                if changed {
                    ks.identity = given;
                }
                ks.registered = true;
            }
            self.bg_cv.notify_all();
            return Ok(shared);
        }
        self.check_writable("create a keyspace")?;
        let id = st.next_keyspace_id;
        if id > crate::manifest::MAX_KEYSPACE_ID {
            return Err(Error::InvalidArgument(format!(
                "cannot create keyspace {name:?}: every keyspace id up to {} has been used",
                crate::manifest::MAX_KEYSPACE_ID
            )));
        }
        let log_number = self.wal.lock().number;
        let edit = VersionEdit {
            added_keyspaces: vec![(id, name.to_string())],
            log_numbers: vec![(id, log_number)],
            keyspace_identities: vec![(id, opts.identity())],
            ..Default::default()
        };
        drop(st);
        self.log_edit(&mut manifest, &edit)?;
        let mut st = self.state.lock();
        st.next_keyspace_id = id + 1;
        let mem = Arc::new(MemTable::for_keyspace(
            &opts,
            self.next_memtable_id.fetch_add(1, Ordering::Relaxed),
            log_number,
        ));
        let version = Arc::new(Version::empty(opts.num_levels));
        let shared = Arc::new(KeyspaceShared {
            id,
            name: name.to_string(),
            sv: RwLock::new(Arc::new(SuperVersion {
                mem: Arc::clone(&mem),
                imms: Vec::new(),
                version: Arc::clone(&version),
                opts: Arc::clone(&opts),
                version_no: 0,
            })),
            filter: Mutex::new(LevelFilter::new(opts.level_filter_bytes)),
            filter_gate: SavingsGate::new(),
            point_first_gate: SavingsGate::new(),
        });
        st.keyspaces.insert(
            id,
            KeyspaceState {
                name: name.to_string(),
                opts: Arc::clone(&opts),
                mem,
                imms: Vec::new(),
                version,
                log_number,
                flushing: false,
                compact_cursor: vec![Vec::new(); opts.num_levels],
                shared: Arc::clone(&shared),
                level_stats: vec![LevelStats::default(); opts.num_levels],
                version_no: 0,
                retained: VecDeque::new(),
                registered: true,
                identity: opts.identity(),
                recorded_log_number: log_number,
            },
        );
        Ok(shared)
    }

    /// Appends an edit to the manifest and syncs it. A failure is sticky.
    /// REQUIRES: the manifest lock is held (the guard is the proof).
    fn log_edit(
        &self,
        manifest: &mut MutexGuard<'_, ManifestWriter>,
        edit: &VersionEdit,
    ) -> Result<()> {
        if manifest.log.len() >= self.opts.max_manifest_bytes {
            // Every earlier edit is installed (edits are serialised by the
            // manifest lock), so the state is a faithful snapshot.
            let r = self.roll_manifest(manifest);
            if let Err(e) = &r {
                self.set_bg_error(e.duplicate());
            }
            r?;
        }
        let r = manifest
            .log
            .add_record(&edit.encode())
            .and_then(|()| manifest.log.sync());
        if let Err(e) = &r {
            self.set_bg_error(e.duplicate());
        }
        r
    }

    /// Starts a new manifest holding a snapshot of the installed state and
    /// points CURRENT at it; the old manifest is removed.
    /// REQUIRES: the manifest lock is held.
    fn roll_manifest(&self, manifest: &mut MutexGuard<'_, ManifestWriter>) -> Result<()> {
        let (number, snapshot) = {
            let mut st = self.state.lock();
            let number = st.new_file_number();
            // The new manifest's own number may be the last reserved one;
            // its snapshot then reserves more.
            if st.next_file_number >= st.reserved_file_numbers {
                st.reserved_file_numbers = st.next_file_number + FILE_NUMBER_RESERVATION;
            }
            let mut e = VersionEdit {
                format_version: Some(MANIFEST_FORMAT_VERSION),
                db_id: Some(self.db_id),
                next_file_number: Some(st.reserved_file_numbers),
                last_seqno: Some(self.last_seqno.load(Ordering::Acquire)),
                ..Default::default()
            };
            for (id, k) in &st.keyspaces {
                e.added_keyspaces.push((*id, k.name.clone()));
                e.keyspace_identities.push((*id, k.identity.clone()));
                e.log_numbers.push((*id, k.recorded_log_number));
                for (level, f) in k.version.all_files() {
                    e.new_files.push(f.record(*id, level));
                }
            }
            (number, e)
        };
        let log = write_new_manifest(&*self.vfs, &self.path, number, &snapshot)?;
        let old = std::mem::replace(&mut **manifest, ManifestWriter { log, number });
        // CURRENT names the new manifest durably; a failed removal leaves a
        // file that the next open deletes.
        let _ = self
            .vfs
            .remove(&self.path.join(filename::manifest_name(old.number)));
        Ok(())
    }

    fn set_bg_error(&self, e: Error) {
        let mut st = self.state.lock();
        if st.bg_error.is_none() {
            st.bg_error = Some(e);
        }
        self.bg_cv.notify_all();
    }

    fn bg_error(st: &State) -> Result<()> {
        match &st.bg_error {
            Some(e) => Err(Error::ReadOnly {
                cause: e.to_string(),
            }),
            None => Ok(()),
        }
    }

    // ----- writes -------------------------------------------------------

    fn write(&self, opts: WriteOptions, batch: WriteBatch) -> Result<()> {
        self.check_open()?;
        self.check_writable("write")?;
        if batch.is_empty() {
            return Ok(());
        }
        {
            let st = self.state.lock();
            Self::bg_error(&st)?;
            for e in batch.iter() {
                let e = e.map_err(Error::InvalidArgument)?;
                check_key_value(e.key, (e.kind != ValueKind::Delete).then_some(e.value))?;
                let Some(ks) = st.keyspaces.get(&e.keyspace) else {
                    return Err(Error::InvalidArgument(format!(
                        "no keyspace with id {}",
                        e.keyspace
                    )));
                };
                if !ks.registered {
                    return Err(Error::InvalidArgument(format!(
                        "keyspace {:?} needs options only the application can give (its merge \
                         operator or layout): open it with Db::keyspace before writing to it",
                        ks.name
                    )));
                }
                ks.opts
                    .memtable_options
                    .check_key(ks.opts.memtable, e.key)?;
                if e.kind == ValueKind::Merge && ks.opts.merge_operator.is_none() {
                    return Err(Error::InvalidArgument(format!(
                        "keyspace {} has no merge operator",
                        ks.name
                    )));
                }
            }
        }
        Statistics::add(&self.stats.writes, 1);
        self.submit(Request::Batch {
            batch,
            sync: opts.sync,
            no_wal: opts.disable_wal,
        })
    }

    /// Queues a request and waits until a leader (possibly this thread) has
    /// carried it out.
    fn submit(&self, req: Request) -> Result<()> {
        // A waiting writer first spins for `WRITER_SPIN`, re-checking under
        // the lock between short pauses, and only then sleeps: the leader
        // usually finishes a group within a few microseconds, and a futex
        // sleep and wake-up costs more than that (perf of a two-thread
        // fillrandom: a third of the CPU in the kernel's wait and wake-up
        // paths). RocksDB's writers spin and yield the same way.
        let mut q = self.writers.lock();
        let ticket = q.next_ticket;
        q.next_ticket += 1;
        q.pending.push_back((ticket, req));
        let mut spin_until: Option<Instant> = None;
        loop {
            if let Some(r) = q.finished.remove(&ticket) {
                return r;
            }
            if !q.leader_active && q.pending.front().is_some_and(|(t, _)| *t == ticket) {
                break;
            }
            let deadline = *spin_until.get_or_insert_with(|| Instant::now() + WRITER_SPIN);
            if Instant::now() < deadline {
                MutexGuard::unlocked(&mut q, || {
                    for _ in 0..64 {
                        std::hint::spin_loop();
                    }
                });
                continue;
            }
            self.writers_cv.wait(&mut q);
        }
        // This thread leads: take its request and, for batches, the batches
        // queued behind it, up to the group byte limit.
        q.leader_active = true;
        let Some((_, first)) = q.pending.pop_front() else {
            q.leader_active = false;
            return Err(Error::Closed);
        };
        let mut group: Vec<u64> = Vec::new();
        let result = match first {
            Request::Switch(ids) => {
                drop(q);
                self.switch_memtables(&ids)
            }
            Request::Batch {
                mut batch,
                mut sync,
                no_wal,
            } => {
                let limit = self.opts.max_write_group_bytes;
                while batch.encoded_len() < limit {
                    match q.pending.front() {
                        Some((
                            _,
                            Request::Batch {
                                batch: b,
                                no_wal: nw,
                                ..
                            },
                        )) if *nw == no_wal && batch.encoded_len() + b.encoded_len() <= limit => {}
                        _ => break,
                    }
                    if let Some((
                        t,
                        Request::Batch {
                            batch: b, sync: s, ..
                        },
                    )) = q.pending.pop_front()
                    {
                        batch.append(&b);
                        sync |= s;
                        group.push(t);
                    }
                }
                drop(q);
                self.write_group(batch, sync, no_wal)
            }
        };
        let mut q = self.writers.lock();
        for t in group {
            q.finished
                .insert(t, result.as_ref().map(|_| ()).map_err(Error::duplicate));
        }
        q.leader_active = false;
        self.writers_cv.notify_all();
        result
    }

    /// Fsyncs the logs closed since the last synced write (see
    /// [`WalState::closed_unsynced`]), oldest first.
    fn sync_closed_logs(closed: &mut Vec<(u64, LogWriter)>) -> Result<()> {
        for (_, log) in closed.iter_mut() {
            log.sync()?;
        }
        closed.clear();
        Ok(())
    }

    /// Writes one group: makes room, logs, inserts, publishes.
    /// REQUIRES: this thread is the write leader.
    fn write_group(&self, mut batch: WriteBatch, sync: bool, no_wal: bool) -> Result<()> {
        Statistics::add(&self.stats.write_groups, 1);
        let mut touched: Vec<u32> = batch
            .iter()
            .filter_map(|e| e.ok().map(|e| e.keyspace))
            .collect();
        touched.sort_unstable();
        touched.dedup();
        let (mems, skip_wal) = self.make_room_for_write(&touched)?;
        let base = self.last_seqno.load(Ordering::Acquire) + 1;
        batch.set_seqno(base);
        if !(no_wal || skip_wal) {
            let mut wal = self.wal.lock();
            let WalState {
                writer,
                closed_unsynced,
                ..
            } = &mut *wal;
            let Some(w) = writer.as_mut() else {
                return Err(Error::Closed);
            };
            let r = w.add_record(batch.encoded()).and_then(|()| {
                if sync {
                    Statistics::add(&self.stats.wal_syncs, 1);
                    Self::sync_closed_logs(closed_unsynced)?;
                    w.sync()
                } else {
                    w.flush()
                }
            });
            if let Err(e) = r {
                // The log may now hold a partial record; nothing after it can
                // be trusted to recover, so refuse writes until reopen.
                wal.writer = None;
                drop(wal);
                self.set_bg_error(e.duplicate());
                return Err(e);
            }
            Statistics::add(&self.stats.bytes_written_wal, batch.encoded_len() as u64);
            self.current_wal_bytes
                .fetch_add(batch.encoded_len() as u64, Ordering::AcqRel);
        }
        let mut key_buf = Vec::with_capacity(64);
        let mut user_bytes = 0u64;
        let mut n = 0u64;
        for e in batch.iter() {
            let e = e.map_err(Error::InvalidArgument)?;
            let seq = base + n;
            n += 1;
            key_buf.clear();
            append_internal_key(&mut key_buf, e.key, seq, e.kind as u8);
            if let Some((_, m)) = mems.iter().find(|(id, _)| *id == e.keyspace) {
                m.add(&key_buf, e.value, seq, e.kind == ValueKind::Delete);
            }
            user_bytes += (e.key.len() + e.value.len()) as u64;
        }
        Statistics::add(&self.stats.user_bytes_written, user_bytes);
        self.last_seqno.store(base + n - 1, Ordering::Release);
        Ok(())
    }

    /// Waits while the tree is too far behind, switches full memtables, and
    /// returns the memtables to insert into. Also reports whether every
    /// touched keyspace skips the log.
    /// REQUIRES: this thread is the write leader.
    #[allow(clippy::type_complexity)]
    fn make_room_for_write(&self, touched: &[u32]) -> Result<(Vec<(u32, Arc<MemTable>)>, bool)> {
        let mut slowed = false;
        let mut st = self.state.lock();
        loop {
            Self::bg_error(&st)?;
            if st.closed {
                return Err(Error::Closed);
            }
            let mut wait = false;
            let mut switch = Vec::new();
            let mut rehome = Vec::new();
            let mut slow = false;
            for id in touched {
                let Some(ks) = st.keyspaces.get(id) else {
                    continue;
                };
                let l0 = ks.version.levels[0].len();
                let due = ks.mem.switch_due(ks.opts.write_buffer_size);
                if due == Some(SwitchDue::Representation) {
                    rehome.push(*id);
                }
                let full = due == Some(SwitchDue::Full);
                let too_many_memtables = full && ks.imms.len() + 1 >= ks.opts.max_write_buffers;
                if l0 >= ks.opts.level0_stop_trigger || too_many_memtables {
                    wait = true;
                } else if full {
                    switch.push(*id);
                } else if l0 >= ks.opts.level0_slowdown_trigger {
                    slow = true;
                }
            }
            if !rehome.is_empty() {
                // Needs no room in the tree: the entries stay in memory.
                drop(st);
                self.rehome_memtables(&rehome);
                st = self.state.lock();
                continue;
            }
            if slow && !slowed && !wait && switch.is_empty() {
                // Delay this group a little so compaction keeps up, once.
                slowed = true;
                drop(st);
                let t = Instant::now();
                std::thread::sleep(Duration::from_millis(1));
                Statistics::add(&self.stats.slowdown_micros, t.elapsed().as_micros() as u64);
                st = self.state.lock();
                continue;
            }
            if wait {
                let t = Instant::now();
                self.bg_cv.notify_all();
                self.bg_cv.wait_for(&mut st, Duration::from_millis(100));
                Statistics::add(&self.stats.stall_micros, t.elapsed().as_micros() as u64);
                continue;
            }
            if switch.is_empty() {
                switch = self.keyspaces_pinning_old_logs(&st);
            }
            if !switch.is_empty() {
                drop(st);
                self.switch_memtables(&switch)?;
                st = self.state.lock();
                continue;
            }
            let mut mems = Vec::with_capacity(touched.len());
            let mut all_skip = true;
            for id in touched {
                if let Some(ks) = st.keyspaces.get(id) {
                    mems.push((*id, Arc::clone(&ks.mem)));
                    all_skip &= ks.opts.disable_wal;
                }
            }
            return Ok((mems, all_skip));
        }
    }

    /// When the logs on disk exceed their budget, the keyspaces whose
    /// unflushed entries hold the oldest log (and have a non-empty memtable)
    /// are due for a flush, so that the log can go.
    /// REQUIRES: the state lock is held.
    fn keyspaces_pinning_old_logs(&self, st: &State) -> Vec<u32> {
        let limit = match self.opts.max_total_wal_bytes {
            0 => st
                .keyspaces
                .values()
                .map(|k| k.opts.write_buffer_size as u64)
                .sum::<u64>()
                .saturating_mul(4),
            n => n,
        };
        let total: u64 = st.closed_logs.iter().map(|(_, b)| b).sum::<u64>()
            + self.current_wal_bytes.load(Ordering::Acquire);
        if total <= limit || st.closed_logs.is_empty() {
            return Vec::new();
        }
        let Some(oldest) = st.keyspaces.values().map(|k| k.log_number).min() else {
            return Vec::new();
        };
        st.keyspaces
            .iter()
            .filter(|(_, k)| {
                k.registered && k.log_number == oldest && !k.mem.is_empty() && k.imms.is_empty()
            })
            .map(|(id, _)| *id)
            .collect()
    }

    /// Moves the entries of each memtable of `ids` into the representation
    /// its adaptive policy picked ([`MemTable::rehomed`]) and installs the
    /// copy in its place. The copy is made without the state lock: only the
    /// write leader changes a keyspace's mutable memtable.
    /// REQUIRES: this thread is the write leader.
    fn rehome_memtables(&self, ids: &[u32]) {
        let current: Vec<(u32, Arc<MemTable>, Arc<KeyspaceOptions>)> = {
            let st = self.state.lock();
            ids.iter()
                .filter_map(|id| {
                    let ks = st.keyspaces.get(id)?;
                    Some((*id, Arc::clone(&ks.mem), Arc::clone(&ks.opts)))
                })
                .collect()
        };
        let copies: Vec<_> = current
            .into_iter()
            .map(|(id, old, opts)| {
                let mem_id = self.next_memtable_id.fetch_add(1, Ordering::Relaxed);
                let copy = Arc::new(old.rehomed(&opts, mem_id));
                (id, old, copy)
            })
            .collect();
        let mut st = self.state.lock();
        for (id, old, copy) in copies {
            if let Some(ks) = st.keyspaces.get_mut(&id)
                && Arc::ptr_eq(&ks.mem, &old)
            {
                ks.mem = copy;
                publish(ks);
            }
        }
    }

    /// Starts a new log and moves the memtables of `ids` (those not empty)
    /// to the immutable queue.
    /// REQUIRES: this thread is the write leader.
    fn switch_memtables(&self, ids: &[u32]) -> Result<()> {
        {
            let st = self.state.lock();
            Self::bg_error(&st)?;
            if !ids
                .iter()
                .any(|id| st.keyspaces.get(id).is_some_and(|k| !k.mem.is_empty()))
            {
                return Ok(());
            }
        }
        let new_log = self.allocate_file_number()?;
        let writer = match create_wal(&*self.vfs, &self.path, new_log, &self.db_id) {
            Ok(w) => w,
            Err(e) => {
                self.set_bg_error(e.duplicate());
                return Err(e);
            }
        };
        if let Err(e) = self.vfs.sync_dir(&self.path) {
            self.set_bg_error(e.duplicate());
            return Err(e);
        }
        let old_log = {
            let mut wal = self.wal.lock();
            // The old log's bytes go to the OS now; the next synced write
            // fsyncs it before its own (found by strata-stress; test
            // engine_bugs::synced_write_after_a_log_switch_keeps_earlier_acknowledged_writes).
            let old_number = std::mem::replace(&mut wal.number, new_log);
            if let Some(mut old) = wal.writer.replace(writer) {
                if let Err(e) = old.flush() {
                    wal.writer = None;
                    drop(wal);
                    self.set_bg_error(e.duplicate());
                    return Err(e);
                }
                wal.closed_unsynced.push((old_number, old));
            }
            old_number
        };
        let mut st = self.state.lock();
        let old_log_bytes = self.current_wal_bytes.swap(0, Ordering::AcqRel);
        st.closed_logs.push((old_log, old_log_bytes));
        for ks in st.keyspaces.values_mut() {
            let id = ks.shared.id;
            let mem_id = self.next_memtable_id.fetch_add(1, Ordering::Relaxed);
            let fresh = Arc::new(ks.mem.successor(&ks.opts, mem_id, new_log));
            if ids.contains(&id) && !ks.mem.is_empty() {
                let old = std::mem::replace(&mut ks.mem, fresh);
                old.freeze();
                ks.imms.push(old);
                publish(ks);
            } else if ks.mem.is_empty() {
                // An empty memtable holds nothing of the old logs; let it
                // stop pinning them.
                ks.mem = fresh;
                if ks.imms.is_empty() {
                    ks.log_number = new_log;
                }
                publish(ks);
            }
        }
        self.bg_cv.notify_all();
        Ok(())
    }

    fn flush_keyspaces(&self, ids: Vec<u32>) -> Result<()> {
        self.check_open()?;
        self.check_writable("flush")?;
        self.submit(Request::Switch(ids.clone()))?;
        let mut st = self.state.lock();
        loop {
            Self::bg_error(&st)?;
            if st.closed {
                return Err(Error::Closed);
            }
            // A flush still running may be attaching its retained copy
            // (`retain_flushed`); waiting for it makes a retained table
            // visible once `flush` returns.
            let pending = ids.iter().any(|id| {
                st.keyspaces
                    .get(id)
                    .is_some_and(|k| !k.imms.is_empty() || k.flushing)
            });
            if !pending {
                return Ok(());
            }
            self.bg_cv.notify_all();
            self.bg_cv.wait_for(&mut st, Duration::from_millis(100));
        }
    }

    // ----- reads --------------------------------------------------------

    /// Reads `key` into `out` (cleared first); whether it has a value.
    fn get(
        &self,
        ks: &KeyspaceShared,
        key: &[u8],
        snapshot: Option<SeqNo>,
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        self.check_open()?;
        let sv = Arc::clone(&ks.sv.read());
        let snap = snapshot.unwrap_or_else(|| self.last_seqno.load(Ordering::Acquire));
        let seek = SeekKey::new(key, snap);
        let seek = seek.as_slice();
        let mut lookup = Lookup::new(key, snap, out);
        let mut visit = |k: &[u8], v: &[u8]| lookup.visit(k, v);
        sv.mem.get(seek, &mut visit);
        for imm in &sv.imms {
            if lookup.is_done() {
                break;
            }
            let mut visit = |k: &[u8], v: &[u8]| lookup.visit(k, v);
            imm.get(seek, &mut visit);
        }
        let merge = sv.opts.merge_operator.as_deref();
        if lookup.is_done() {
            return lookup.finish(merge, "memtable");
        }
        let v = &sv.version;
        for f in &v.levels[0] {
            if lookup.is_done() {
                break;
            }
            if key < f.smallest_user_key() || key > f.largest_user_key() {
                continue;
            }
            let mut visit = |k: &[u8], val: &[u8]| lookup.visit(k, val);
            match f.retained() {
                // The file's filter answers for its retained entries (the
                // same user keys): a probe is cheaper than a search.
                Some(t) => {
                    if f.table.may_contain(key) {
                        t.get(seek, &mut visit);
                    }
                }
                None => {
                    f.table.get(key, seek, &mut visit)?;
                }
            }
        }
        for level in 1..v.num_levels() {
            if lookup.is_done() {
                break;
            }
            if let Some(f) = v.find_file(level, key) {
                let mut visit = |k: &[u8], val: &[u8]| lookup.visit(k, val);
                f.table.get(key, seek, &mut visit)?;
            }
        }
        lookup.finish(merge, "table")
    }

    fn iter(&self, ks: &Arc<KeyspaceShared>, opts: ReadOptions) -> Result<DbIter> {
        self.check_open()?;
        let sv = Arc::clone(&ks.sv.read());
        let snap = opts
            .snapshot
            .unwrap_or_else(|| self.last_seqno.load(Ordering::Acquire));
        let lo = opts.lower_bound.as_deref();
        let hi = opts.upper_bound.as_deref();
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        let mut levels: Vec<Option<usize>> = Vec::new();
        children.push(sv.mem.iter());
        for m in &sv.imms {
            children.push(m.iter());
        }
        let in_range = |f: &Arc<FileMeta>| {
            !(hi.is_some_and(|h| f.smallest_user_key() >= h)
                || lo.is_some_and(|l| f.largest_user_key() < l))
        };
        for f in sv.version.levels[0].iter().filter(|f| in_range(f)) {
            match f.retained() {
                Some(t) => children.push(Box::new(RetainedIter {
                    inner: t.iter(),
                    table: Arc::clone(&f.table),
                })),
                None => children.push(Box::new(f.table.iter())),
            }
        }
        levels.resize(children.len(), None);
        for (level, files) in sv.version.levels.iter().enumerate().skip(1) {
            let files: Vec<_> = files.iter().filter(|f| in_range(f)).cloned().collect();
            if !files.is_empty() {
                // Part of iterator reduction: a seek into the gap before a
                // file is answered from the file's smallest key, and a scan
                // that ends before it never reads the file.
                children.push(Box::new(if sv.opts.iterator_reduction {
                    LevelIter::new_lazy(files)
                } else {
                    LevelIter::new(files)
                }));
                levels.push(Some(level));
            }
        }
        Statistics::add(&self.stats.iterators_created, 1);
        Statistics::add(&self.stats.iterator_children, children.len() as u64);
        // The levels (>= 1) this scan could leave out; with none, reduction
        // has nothing to do.
        let level_mask: LevelMask = levels
            .iter()
            .flatten()
            .fold(0, |m, l| m | 1 << (*l).min(63));
        let mut merging = MergingIterator::with_levels(children, levels);
        // Each part of iterator reduction is used while it pays, and by one
        // scan in IDLE_SAMPLE_EVERY otherwise (so it notices when it would).
        let sampled = sv.opts.iterator_reduction && gate::idle_sample();
        let gated = sv.opts.reduction_gates;
        let point_first =
            sv.opts.iterator_reduction && (!gated || ks.point_first_gate.admits(sampled));
        if point_first {
            merging.set_point_first(snap);
        }
        let reduction = sv.opts.iterator_reduction
            && level_mask != 0
            && (!gated || ks.filter_gate.admits(sampled));
        let version_no = sv.version_no;
        if reduction {
            let shared = Arc::clone(ks);
            // The filter is a cache: when another scan holds it, this one
            // reads every level (always correct) rather than waiting; on two
            // cores a parked thread costs more than the seeks it would save.
            merging.set_reducer(Box::new(move |start| {
                shared.filter.try_lock()?.lookup(start, version_no)
            }));
        }
        let shared = Arc::clone(ks);
        let stats = Arc::clone(&self.stats);
        let on_drop = Box::new(
            move |merged: &MergingIterator, upper: Option<&[u8]>, healthy: bool| {
                Statistics::add(&stats.iterator_child_seeks, merged.child_seeks());
                if let Some(saved) = merged.point_first_saved() {
                    shared.point_first_gate.record(saved);
                }
                let levels = healthy.then(|| merged.observed_levels(upper)).flatten();
                if let Some(levels) = levels {
                    let unused = level_mask & !levels;
                    Statistics::add(&stats.scan_levels_unused, u64::from(unused.count_ones()));
                }
                if !reduction {
                    return;
                }
                let skipped = merged.filter_skips() > 0;
                // The gate counts a scan as saved only when a level it
                // skipped would have been read: skipping a lazy level whose
                // seek lands before a file spares nothing.
                shared.filter_gate.record(merged.filter_saved_reads() > 0);
                // A scan a record answered leaves that record in place; storing
                // its observation again would cost two key copies and a map
                // insert per repeated scan for no new claim.
                if skipped {
                    return;
                }
                // A record claiming every level this scan had saves no
                // later seek: not stored (nor built).
                if levels.is_none_or(|l| l & level_mask == level_mask) {
                    return;
                }
                let Some(o) = merged.observation(upper) else {
                    return;
                };
                // Dropping an observation loses a hint, never a result.
                if let Some(mut f) = shared.filter.try_lock() {
                    f.insert(o.lo, o.hi, o.levels, version_no);
                }
            },
        );
        Ok(DbIter::new(
            merging,
            snap,
            sv.opts.merge_operator.clone(),
            opts.lower_bound,
            opts.upper_bound,
            Box::new(sv),
            Some(on_drop),
        ))
    }

    // ----- background work ----------------------------------------------

    fn flush_loop(self: Arc<Self>) {
        loop {
            let job = {
                let mut st = self.state.lock();
                loop {
                    if st.closed {
                        return;
                    }
                    if st.bg_error.is_none() {
                        let found = st
                            .keyspaces
                            .iter_mut()
                            .find(|(_, k)| k.registered && !k.flushing && !k.imms.is_empty())
                            .map(|(id, k)| {
                                k.flushing = true;
                                (*id, Arc::clone(&k.imms[0]))
                            });
                        if let Some((id, imm)) = found {
                            st.running_flushes += 1;
                            break (id, imm, st.snapshot_list());
                        }
                    }
                    self.bg_cv.wait(&mut st);
                }
            };
            let (id, imm, snapshots) = job;
            let r = self
                .allocate_file_number()
                .and_then(|number| self.flush_memtable(id, &imm, number, &snapshots));
            let mut st = self.state.lock();
            st.running_flushes -= 1;
            if let Some(k) = st.keyspaces.get_mut(&id) {
                k.flushing = false;
            }
            drop(st);
            if let Err(e) = r
                && !matches!(e, Error::Closed)
            {
                self.set_bg_error(e);
            }
            self.bg_cv.notify_all();
        }
    }

    fn flush_memtable(
        &self,
        id: u32,
        imm: &Arc<MemTable>,
        number: u64,
        snapshots: &[SeqNo],
    ) -> Result<()> {
        let opts = {
            let st = self.state.lock();
            st.keyspaces
                .get(&id)
                .map(|k| Arc::clone(&k.opts))
                .ok_or(Error::Closed)?
        };
        let mut it = imm.iter();
        // Retention copies each entry as the flush writes it: no second walk
        // of the skiplist, and the copy holds exactly the file's entries.
        let mut copy = opts
            .retain_flushed_memtables
            .then(|| RetainedTableBuilder::new(imm.memory_usage().entry_bytes));
        let out = build_table(
            &self.vfs,
            &self.path,
            &self.db_id,
            number,
            it.as_mut(),
            &opts,
            0,
            snapshots,
            false,
            &|| false,
            copy.as_mut(),
        )?;
        let added = match out {
            Some(rec) => {
                let rec = NewFile {
                    keyspace: id,
                    ..rec
                };
                self.vfs.sync_dir(&self.path)?;
                Statistics::add(&self.stats.bytes_flushed, rec.size);
                let meta = open_table_meta(
                    &self.vfs,
                    &self.path,
                    &rec,
                    self.cache.clone(),
                    Arc::clone(&self.stats),
                )?;
                vec![(0usize, Arc::new(meta))]
            }
            None => Vec::new(),
        };
        Statistics::add(&self.stats.flushes, 1);
        let mut manifest = self.manifest.lock();
        let (edit, next_log) = {
            let st = self.state.lock();
            let k = st.keyspaces.get(&id).ok_or(Error::Closed)?;
            // The oldest memtable left after this one decides the log number.
            let next_log = k.imms.get(1).map_or(k.mem.log_number, |m| m.log_number);
            // Other keyspaces whose log number ran ahead of the manifest
            // (empty memtables moved to a new log) are recorded too, so
            // the logs behind them can go.
            let mut log_numbers = vec![(id, next_log)];
            log_numbers.extend(
                st.keyspaces
                    .iter()
                    .filter(|(kid, k)| **kid != id && k.log_number > k.recorded_log_number)
                    .map(|(kid, k)| (*kid, k.log_number)),
            );
            let edit = VersionEdit {
                next_file_number: Some(st.reserved_file_numbers),
                last_seqno: Some(self.last_seqno.load(Ordering::Acquire)),
                log_numbers,
                new_files: added.iter().map(|(l, f)| f.record(id, *l)).collect(),
                ..Default::default()
            };
            (edit, next_log)
        };
        self.log_edit(&mut manifest, &edit)?;
        let obsolete_logs = {
            let mut st = self.state.lock();
            for (kid, log) in &edit.log_numbers {
                if let Some(k) = st.keyspaces.get_mut(kid) {
                    k.recorded_log_number = k.recorded_log_number.max(*log);
                }
            }
            let k = st.keyspaces.get_mut(&id).ok_or(Error::Closed)?;
            k.version = Arc::new(k.version.apply(id, &[], added.clone()));
            if k.imms.first().is_some_and(|m| Arc::ptr_eq(m, imm)) {
                k.imms.remove(0);
            }
            k.log_number = next_log;
            publish(k);
            let min_log = st
                .keyspaces
                .values()
                .map(|k| k.recorded_log_number)
                .min()
                .unwrap_or(0);
            let (old, keep): (Vec<_>, Vec<_>) =
                st.closed_logs.iter().partition(|(l, _)| *l < min_log);
            st.closed_logs = keep;
            old.into_iter().map(|(l, _)| l).collect::<Vec<u64>>()
        };
        drop(manifest);
        if !obsolete_logs.is_empty() {
            // No synced write needs these any more.
            self.wal
                .lock()
                .closed_unsynced
                .retain(|(n, _)| !obsolete_logs.contains(n));
        }
        for l in obsolete_logs {
            // A log left behind is removed at the next open.
            let _ = self.vfs.remove(&filename::log_path(&self.path, l));
        }
        if let (Some(copy), Some((_, f))) = (copy, added.first()) {
            self.retain_flushed(id, copy, f);
        }
        Ok(())
    }

    /// Memtable retention: attaches the copy of the flushed entries to their
    /// level-0 file `f`, whose reads it then serves. Runs after the flush
    /// is installed, so that writers waiting for the memtable's room do not
    /// wait for the copy's index too; until it is attached, reads go to the
    /// file, which holds the same entries. Retention is a cache: entries
    /// the layout cannot hold (4 GiB or more) are simply not retained.
    fn retain_flushed(&self, id: u32, copy: RetainedTableBuilder, f: &Arc<FileMeta>) {
        let Some(table) = copy.finish() else {
            return;
        };
        f.retain(Arc::new(table));
        let mut st = self.state.lock();
        let Some(k) = st.keyspaces.get_mut(&id) else {
            f.release_retained();
            return;
        };
        if k.version.levels[0].iter().any(|g| Arc::ptr_eq(g, f)) {
            k.retained.push_back(Arc::downgrade(f));
            enforce_retention_budget(k);
        } else {
            // Compacted out of level 0 while the copy was made.
            f.release_retained();
        }
    }

    fn compaction_loop(self: Arc<Self>) {
        let mut backoff = COMPACTION_RETRY_MIN;
        loop {
            let task = {
                let mut st = self.state.lock();
                loop {
                    if st.closed {
                        return;
                    }
                    if st.bg_error.is_none()
                        && let Some((id, t)) = pick_any(&mut st)
                    {
                        st.running_compactions += 1;
                        break (id, t);
                    }
                    self.bg_cv.wait(&mut st);
                }
            };
            let (id, t) = task;
            let r = self.run_compaction(id, &t);
            for f in t.all_inputs() {
                f.being_compacted.store(false, Ordering::Release);
            }
            self.state.lock().running_compactions -= 1;
            self.bg_cv.notify_all();
            match r {
                Ok(()) => {
                    backoff = COMPACTION_RETRY_MIN;
                    self.state.lock().compaction_error = None;
                }
                Err(e) => {
                    self.note_compaction_failure(&e);
                    // Pause before picking again: the same compaction would
                    // most likely fail the same way at once.
                    let deadline = Instant::now() + backoff;
                    let mut st = self.state.lock();
                    while !st.closed && Instant::now() < deadline {
                        self.bg_cv.wait_until(&mut st, deadline);
                    }
                    backoff = (backoff * 2).min(COMPACTION_RETRY_MAX);
                }
            }
        }
    }

    /// Records a failed compaction. Damage in its inputs is sticky: the
    /// database turns read-only until it is reopened, and salvage can set
    /// the table aside. An I/O failure (a full disk, say) is not: the inputs
    /// are still live, the partial outputs were removed, and the log still
    /// takes writes, so writes go on and the compaction is retried after a
    /// pause; `wait_for_background_work` reports the failure meanwhile. (A
    /// failed manifest write inside the compaction is sticky on its own, in
    /// `log_edit`.)
    fn note_compaction_failure(&self, e: &Error) {
        if matches!(e, Error::Closed) {
            return;
        }
        if e.is_corruption() {
            self.set_bg_error(e.duplicate());
            return;
        }
        let mut st = self.state.lock();
        st.compaction_error = Some(e.duplicate());
        st.compaction_failures += 1;
    }

    /// Carries out a compaction task whose inputs are marked as being
    /// compacted, and installs its result.
    fn run_compaction(&self, id: u32, t: &CompactionTask) -> Result<()> {
        let started = Instant::now();
        let (opts, snapshots) = {
            let st = self.state.lock();
            let k = st.keyspaces.get(&id).ok_or(Error::Closed)?;
            (Arc::clone(&k.opts), st.snapshot_list())
        };
        let mut deleted: Vec<(u32, u32, u64)> = t
            .all_inputs()
            .map(|f| {
                (
                    id,
                    if t.inputs.iter().any(|i| Arc::ptr_eq(i, f)) {
                        t.level
                    } else {
                        t.output_level
                    } as u32,
                    f.number,
                )
            })
            .collect();
        let mut added: Vec<(usize, Arc<FileMeta>)> = Vec::new();
        let mut written = 0u64;
        if t.trivial_move {
            added.push((t.output_level, Arc::clone(&t.inputs[0])));
        } else {
            let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
            for f in &t.inputs {
                children.push(Box::new(f.table.iter()));
            }
            if t.level == 0 {
                // Level-0 inputs overlap; the merge handles that.
            }
            if !t.overlapping.is_empty() {
                children.push(Box::new(LevelIter::new(t.overlapping.clone())));
            }
            let mut input = MergingIterator::new(children);
            let stop = || self.shutting_down.load(Ordering::Acquire);
            let outputs = self.write_compaction_outputs(&mut input, &opts, t, &snapshots, &stop)?;
            for rec in outputs {
                written += rec.size;
                let rec = NewFile {
                    keyspace: id,
                    ..rec
                };
                let meta = open_table_meta(
                    &self.vfs,
                    &self.path,
                    &rec,
                    self.cache.clone(),
                    Arc::clone(&self.stats),
                )?;
                added.push((t.output_level, Arc::new(meta)));
            }
            self.vfs.sync_dir(&self.path)?;
        }
        let read = if t.trivial_move { 0 } else { t.input_bytes() };
        Statistics::add(&self.stats.compaction_bytes_read, read);
        Statistics::add(&self.stats.compaction_bytes_written, written);
        Statistics::add(&self.stats.compactions, 1);

        let mut manifest = self.manifest.lock();
        let edit = {
            let st = self.state.lock();
            VersionEdit {
                next_file_number: Some(st.reserved_file_numbers),
                deleted_files: deleted.clone(),
                new_files: added.iter().map(|(l, f)| f.record(id, *l)).collect(),
                ..Default::default()
            }
        };
        // On failure the outputs stay: the edit may have reached the manifest
        // (an fsync that fails after the append), and then the next open
        // needs them; if it did not, that open removes them as unreferenced
        // (test fault_sites::compaction_sites, manifest fsync).
        self.log_edit(&mut manifest, &edit)?;
        let mut st = self.state.lock();
        let k = st.keyspaces.get_mut(&id).ok_or(Error::Closed)?;
        if t.trivial_move {
            // The file stays; only its level changes.
            deleted.retain(|_| true);
        }
        let new_version = k.version.apply(id, &deleted, added.clone());
        if !t.trivial_move {
            for f in t.all_inputs() {
                f.mark_obsolete();
            }
        }
        k.version = Arc::new(new_version);
        // Before readers can see the new version: ranges whose keys just
        // moved into the output level must list it.
        let out_lo = added.iter().map(|(_, f)| f.smallest_user_key()).min();
        let out_hi = added.iter().map(|(_, f)| f.largest_user_key()).max();
        if let (Some(a), Some(b)) = (out_lo, out_hi) {
            k.shared
                .filter
                .lock()
                .apply_compaction(k.version_no + 1, t.output_level, a, b);
        }
        if let Some(c) = k.compact_cursor.get_mut(t.level) {
            *c = t
                .inputs
                .iter()
                .map(|f| f.largest_user_key().to_vec())
                .max()
                .unwrap_or_default();
        }
        if let Some(s) = k.level_stats.get_mut(t.output_level) {
            s.compactions += 1;
            s.bytes_read += read;
            s.bytes_written += written;
            s.micros += started.elapsed().as_micros() as u64;
        }
        publish(k);
        Ok(())
    }

    fn write_compaction_outputs(
        &self,
        input: &mut dyn InternalIterator,
        opts: &KeyspaceOptions,
        t: &CompactionTask,
        snapshots: &[SeqNo],
        stop: &dyn Fn() -> bool,
    ) -> Result<Vec<NewFile>> {
        let mut outputs: Vec<NewFile> = Vec::new();
        let mut builder: Option<(TableBuilder, u64)> = None;
        let mut last_ukey: Vec<u8> = Vec::new();
        let target = opts.target_file_size;
        let table_opts = opts.table_options(t.output_level);
        let policy = DropPolicy {
            snapshots,
            bottommost: t.bottommost,
            merge: opts.merge_operator.as_deref(),
        };
        // An output whose writing fails is removed at once, like the others
        // below (test fault_sites::compaction_sites).
        let finish = |b: TableBuilder, number: u64| {
            finish_table(b, number).inspect_err(|_| {
                let _ = self.vfs.remove(&filename::table_path(&self.path, number));
            })
        };
        let mut emit = |k: &[u8], v: &[u8]| -> Result<()> {
            let uk = user_key(k);
            let split = builder.as_ref().is_some_and(|(b, _)| {
                b.estimated_file_size() >= target && uk != last_ukey.as_slice()
            });
            if split && let Some((b, number)) = builder.take() {
                outputs.push(finish(b, number)?);
            }
            if builder.is_none() {
                let number = self.allocate_file_number()?;
                let p = filename::table_path(&self.path, number);
                let f = self.vfs.create(&p)?;
                let mut b = TableBuilder::new(f, p, table_opts.clone());
                b.set_owner(&self.db_id, number);
                builder = Some((b, number));
            }
            if let Some((b, _)) = builder.as_mut() {
                b.add(k, v)?;
            }
            last_ukey.clear();
            last_ukey.extend_from_slice(uk);
            Ok(())
        };
        let r: Result<DropStats> = compaction::compact_entries(input, &policy, &mut emit, stop);
        let r = r.and_then(|_| match builder.take() {
            Some((b, number)) => finish(b, number).map(|rec| outputs.push(rec)),
            None => Ok(()),
        });
        if let Err(e) = r {
            for o in &outputs {
                let _ = self.vfs.remove(&filename::table_path(&self.path, o.number));
            }
            if let Some((_, number)) = builder {
                let _ = self.vfs.remove(&filename::table_path(&self.path, number));
            }
            return Err(e);
        }
        Ok(outputs)
    }

    fn compact_range(&self, id: u32, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<()> {
        self.check_open()?;
        self.check_writable("compact")?;
        self.flush_keyspaces(vec![id])?;
        let last_nonempty = {
            let st = self.state.lock();
            let k = st
                .keyspaces
                .get(&id)
                .ok_or_else(|| Error::InvalidArgument(format!("no keyspace with id {id}")))?;
            (0..k.version.num_levels())
                .rev()
                .find(|&l| !k.version.overlapping(l, lo, hi).is_empty())
                .unwrap_or(0)
        };
        let target = last_nonempty.max(1);
        for level in 0..target {
            loop {
                let task = {
                    let mut st = self.state.lock();
                    Self::bg_error(&st)?;
                    if st.closed {
                        return Err(Error::Closed);
                    }
                    let k = st.keyspaces.get(&id).ok_or(Error::Closed)?;
                    let inputs = k.version.overlapping(level, lo, hi);
                    if inputs.is_empty() {
                        break;
                    }
                    match compaction::task_for_inputs(
                        &k.version,
                        level,
                        inputs,
                        CompactionReason::Manual,
                        0.0,
                    ) {
                        Some(mut t) => {
                            // A manual compaction rewrites even a lone file,
                            // so that its tombstones and old versions go.
                            t.trivial_move = false;
                            for f in t.all_inputs() {
                                f.being_compacted.store(true, Ordering::Release);
                            }
                            st.running_compactions += 1;
                            Some(t)
                        }
                        None => {
                            // Background compaction holds some input; wait.
                            self.bg_cv.wait_for(&mut st, Duration::from_millis(50));
                            None
                        }
                    }
                };
                let Some(t) = task else { continue };
                let r = self.run_compaction(id, &t);
                for f in t.all_inputs() {
                    f.being_compacted.store(false, Ordering::Release);
                }
                self.state.lock().running_compactions -= 1;
                self.bg_cv.notify_all();
                if let Err(e) = r {
                    self.note_compaction_failure(&e);
                    return Err(e);
                }
                self.state.lock().compaction_error = None;
                break;
            }
        }
        Ok(())
    }

    fn stats(&self) -> DbStats {
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
                    .map(|l| (k.version.levels[l].len(), k.version.level_bytes(l)))
                    .collect(),
                level_compactions: k.level_stats.clone(),
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
            last_seqno: self.last_seqno.load(Ordering::Acquire),
            live_snapshots: st.snapshots.values().sum(),
            background_error: st.bg_error.as_ref().map(|e| e.to_string()),
            iterators_created: g(&s.iterators_created),
            iterator_children: g(&s.iterator_children),
            iterator_child_seeks: g(&s.iterator_child_seeks),
            scan_levels_unused: g(&s.scan_levels_unused),
        }
    }
}

impl Drop for DbInner {
    fn drop(&mut self) {
        self.shutting_down.store(true, Ordering::Release);
        if let Some(w) = self.wal.get_mut().writer.as_mut() {
            let _ = w.flush();
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if self.inner.db_handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.inner.shutdown();
        }
    }
}

/// Publishes a keyspace's current memtables and version to readers.
/// REQUIRES: the state lock is held (the caller has `&mut KeyspaceState`).
fn publish(ks: &mut KeyspaceState) {
    ks.version_no += 1;
    let sv = Arc::new(SuperVersion {
        mem: Arc::clone(&ks.mem),
        imms: ks.imms.iter().rev().cloned().collect(),
        version: Arc::clone(&ks.version),
        opts: Arc::clone(&ks.opts),
        version_no: ks.version_no,
    });
    *ks.shared.sv.write() = sv;
}

/// A retained memtable read in place of its level-0 file. The file's point
/// filter answers for it: the copy holds exactly the file's entries.
struct RetainedIter {
    inner: RetainedTableIter,
    table: Arc<TableReader>,
}

impl InternalIterator for RetainedIter {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first()
    }
    fn seek_to_last(&mut self) {
        self.inner.seek_to_last()
    }
    fn seek(&mut self, target: &[u8]) {
        self.inner.seek(target)
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.inner.seek_for_prev(target)
    }
    fn next(&mut self) {
        self.inner.next()
    }
    fn prev(&mut self) {
        self.inner.prev()
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn may_contain_user_key(&self, user_key: &[u8]) -> bool {
        self.table.may_contain(user_key)
    }
    fn status(&self) -> Result<()> {
        self.inner.status()
    }
}

/// Releases retained memtables, oldest first, until they fit the
/// keyspace's budget; forgets files that no longer exist.
/// REQUIRES: the state lock is held.
fn enforce_retention_budget(ks: &mut KeyspaceState) {
    let budget = usize::try_from(ks.opts.retention_budget()).unwrap_or(usize::MAX);
    ks.retained
        .retain(|w| w.upgrade().is_some_and(|f| f.retained().is_some()));
    let mut total: usize = ks
        .retained
        .iter()
        .filter_map(|w| w.upgrade())
        .map(|f| f.retained_bytes())
        .sum();
    while total > budget {
        let Some(w) = ks.retained.pop_front() else {
            break;
        };
        if let Some(f) = w.upgrade() {
            total = total.saturating_sub(f.release_retained());
        }
    }
}

/// Finds a compaction in any keyspace and marks its inputs.
fn pick_any(st: &mut State) -> Option<(u32, CompactionTask)> {
    for (id, k) in st.keyspaces.iter().filter(|(_, k)| k.registered) {
        if let Some(t) = compaction::pick_compaction(&k.version, &k.opts, &k.compact_cursor) {
            for f in t.all_inputs() {
                f.being_compacted.store(true, Ordering::Release);
            }
            return Some((*id, t));
        }
    }
    None
}

fn finish_table(b: TableBuilder, number: u64) -> Result<NewFile> {
    Ok(NewFile::from_summary(b.finish()?, number))
}

/// Writes the surviving entries of `input` into one table file at `level`;
/// `None` if nothing survived (the file is removed).
#[allow(clippy::too_many_arguments)]
fn build_table(
    vfs: &Arc<dyn Vfs>,
    dir: &Path,
    db_id: &DbId,
    number: u64,
    input: &mut dyn InternalIterator,
    opts: &KeyspaceOptions,
    level: usize,
    snapshots: &[SeqNo],
    bottommost: bool,
    stop: &dyn Fn() -> bool,
    mut copy: Option<&mut RetainedTableBuilder>,
) -> Result<Option<NewFile>> {
    let p = filename::table_path(dir, number);
    let f = vfs.create(&p)?;
    let mut b = TableBuilder::new(f, p.clone(), opts.table_options(level));
    b.set_owner(db_id, number);
    let policy = DropPolicy {
        snapshots,
        bottommost,
        merge: opts.merge_operator.as_deref(),
    };
    let r = compaction::compact_entries(
        input,
        &policy,
        &mut |k, v| {
            if let Some(c) = copy.as_deref_mut() {
                c.add(k, v);
            }
            b.add(k, v)
        },
        stop,
    );
    let r = r.and_then(|_| {
        if b.num_entries() == 0 {
            Ok(None)
        } else {
            finish_table(b, number).map(Some)
        }
    });
    match r {
        Ok(Some(mut rec)) => {
            rec.level = level as u32;
            Ok(Some(rec))
        }
        Ok(None) => {
            let _ = vfs.remove(&p);
            Ok(None)
        }
        Err(e) => {
            let _ = vfs.remove(&p);
            Err(e)
        }
    }
}

fn open_table_meta(
    vfs: &Arc<dyn Vfs>,
    dir: &Path,
    rec: &NewFile,
    cache: Option<Arc<BlockCache>>,
    stats: Arc<Statistics>,
) -> Result<FileMeta> {
    let p = filename::table_path(dir, rec.number);
    if !vfs.exists(&p) {
        return Err(Error::corruption(
            &p,
            0,
            "table file named by the manifest is missing",
        ));
    }
    let file = vfs.open(&p)?;
    if file.len() != rec.size {
        return Err(Error::corruption(
            &p,
            0,
            format!(
                "table file has {} bytes, the manifest says {}",
                file.len(),
                rec.size
            ),
        ));
    }
    let table = TableReader::open(file, p.clone(), rec.number, cache, stats)?;
    Ok(FileMeta::new(rec, Arc::new(table), p, Arc::clone(vfs)))
}

/// Writes a manifest holding `snapshot` and points CURRENT at it.
fn write_new_manifest(
    vfs: &dyn Vfs,
    dir: &Path,
    number: u64,
    snapshot: &VersionEdit,
) -> Result<LogWriter> {
    let name = filename::manifest_name(number);
    let mut log = LogWriter::new(vfs.create(&dir.join(&name))?);
    log.add_record(&snapshot.encode())?;
    log.sync()?;
    write_current(vfs, dir, number)?;
    Ok(log)
}

/// Points CURRENT at manifest `number`: a new temporary file (created
/// exclusively, never through a link), synced, renamed over CURRENT.
fn write_current(vfs: &dyn Vfs, dir: &Path, number: u64) -> Result<()> {
    let tmp_name = recovery::current_temp_name(number);
    let tmp = dir.join(&tmp_name);
    // A leftover of a crash at this very step is ours to replace; anything
    // else by that name makes the exclusive create below fail.
    if vfs.exists(&tmp) && recovery::temp_owner(vfs, dir, &tmp_name) == Owner::Ours {
        vfs.remove(&tmp)?;
    }
    let mut f = vfs.create(&tmp)?;
    f.append(format!("{}\n", filename::manifest_name(number)).as_bytes())?;
    f.sync()?;
    drop(f);
    vfs.rename(&tmp, &filename::current_path(dir))?;
    // The rename is durable only once the directory is synced.
    vfs.sync_dir(dir)
}

/// Creates write-ahead log `number` and writes its header (naming the
/// database and the log), handed to the OS at once so that a log on disk
/// without its header is one a crash cut at creation.
fn create_wal(vfs: &dyn Vfs, dir: &Path, number: u64, db_id: &DbId) -> Result<LogWriter> {
    let mut w = LogWriter::new(vfs.create(&filename::log_path(dir, number))?);
    w.add_record(&recovery::wal_header(db_id, number))?;
    w.flush()?;
    Ok(w)
}

/// Copies `file` into `lost/` beside it, synced, before the original may be
/// retired; the copy's path.
fn copy_aside(vfs: &dyn Vfs, dir: &Path, file: &Path) -> Result<PathBuf> {
    let lost = dir.join("lost");
    vfs.create_dir_all(&lost)?;
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut to = lost.join(&name);
    let mut i = 1;
    while vfs.exists(&to) {
        to = lost.join(format!("{name}.{i}"));
        i += 1;
    }
    let bytes = vfs.read_all(file)?;
    let mut w = vfs.create(&to)?;
    w.append(&bytes)?;
    w.sync()?;
    vfs.sync_dir(&lost)?;
    Ok(to)
}

/// The next file number at or after `next` whose name is not taken.
fn take_number(next: &mut u64, taken: &mut std::collections::BTreeSet<u64>) -> u64 {
    while taken.remove(next) {
        *next += 1;
    }
    let n = *next;
    *next += 1;
    n
}

fn live_table_numbers(versions: &BTreeMap<u32, Version>) -> std::collections::HashSet<u64> {
    versions
        .values()
        .flat_map(|v| v.all_files().map(|(_, f)| f.number).collect::<Vec<_>>())
        .collect()
}

/// Cleanup at open: every directory entry the engine's naming covers is
/// kept, removed (only when provably the database's and obsolete) or left
/// and reported. A dry run (read-only opens) only reports.
struct Sweep<'a> {
    vfs: &'a Arc<dyn Vfs>,
    dir: &'a Path,
    db_id: &'a DbId,
    /// The database had an id before this open (its logs carry headers).
    id_known: bool,
    /// The manifest this open read (ours: it named the live state).
    read_manifest: Option<&'a Path>,
}

impl Sweep<'_> {
    fn run(
        &self,
        facts: &CleanupFacts<'_>,
        dry_run: bool,
        report: &mut RecoveryReport,
    ) -> Result<()> {
        let vfs = &**self.vfs;
        for n in vfs.list(self.dir)? {
            let Some(kind) = filename::parse(&n) else {
                continue;
            };
            let p = self.dir.join(&n);
            let mut owner = || match kind {
                FileKind::Log(_) if self.id_known => recovery::log_owner(vfs, &p, self.db_id),
                FileKind::Table(k) => table_owner(self.vfs, &p, k, self.db_id),
                FileKind::Manifest(_) if self.read_manifest == Some(p.as_path()) => Owner::Ours,
                FileKind::Manifest(_) => recovery::manifest_owner(vfs, &p, self.db_id),
                FileKind::Temp => recovery::temp_owner(vfs, self.dir, &n),
                _ => Owner::Unmarked,
            };
            match recovery::decide(kind, facts, &mut owner) {
                Disposition::Keep => {}
                Disposition::Remove if dry_run => {}
                Disposition::Remove => {
                    vfs.remove(&p)?;
                    report.obsolete_files_removed += 1;
                }
                Disposition::Leave(why) => report.left_in_place.push((p, why)),
            }
        }
        Ok(())
    }
}

/// Who wrote table `path`: the owner recorded in its properties. A table
/// too damaged to say is unmarked (cleanup then goes by its number alone).
fn table_owner(vfs: &Arc<dyn Vfs>, path: &Path, number: u64, db_id: &DbId) -> Owner {
    let Ok(file) = vfs.open(path) else {
        return Owner::Other("unreadable".into());
    };
    let stats = Arc::new(Statistics::default());
    match TableReader::open(file, path.to_path_buf(), number, None, stats) {
        Ok(t) => {
            let owner = &t.properties().owner_db_id;
            if owner.is_empty() {
                Owner::Unmarked
            } else if owner.as_slice() == db_id.as_slice() {
                Owner::Ours
            } else {
                Owner::Other("a table of another database".into())
            }
        }
        Err(_) => Owner::Unmarked,
    }
}

/// The manifest sink of a read-only database: every write is refused (the
/// write paths refuse earlier; this is the last line).
struct RefusingFile;

impl crate::vfs::WritableFile for RefusingFile {
    fn append(&mut self, _data: &[u8]) -> Result<()> {
        Err(Error::OpenedReadOnly {
            operation: "write the manifest",
        })
    }

    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn len(&self) -> u64 {
        0
    }
}
