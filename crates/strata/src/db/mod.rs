//! The database: keyspaces over one write-ahead log, the group-commit write
//! path, background flush and compaction, reads at snapshots.
//!
//! One module per stage, all over the state defined here (`DbInner`):
//!
//! ```text
//!   handle.rs        DbCore, Keyspace, Snapshot: the handles
//!      │  open            │ put/write/flush          │ get/iter
//!      ▼                  ▼                           ▼
//!   open.rs          write.rs                    read.rs
//!   recovery,        group commit, WAL,          memtables + versions
//!   cleanup sweep    memtable switches           (iter, lookup, db_iter)
//!      │                  │ (imms)
//!      │                  ▼
//!      │             flush.rs ──► compact.rs     background jobs
//!      │                  │           │
//!      ▼                  ▼           ▼
//!   version_set.rs   log_edit: the one way a version changes (manifest
//!                    append + sync, rollover, file-number reservations)
//!      │
//!      ▼
//!   recovery, manifest, log, sst, version, memtable, vfs   (lower modules;
//!                                                 none calls back into db)
//! ```
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

use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::batch::{DecodedBatch, WriteBatch};
use crate::cache::BlockCache;
use crate::compaction::{self, CompactionReason, CompactionTask, DropPolicy, DropStats};
use crate::db_iter::DbIter;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::gate::{self, SavingsGate};
use crate::ids::{FileNumber, KeyspaceId, Level};
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::{SeekKey, SeqNo, ValueKind, append_internal_key, user_key};
use crate::layout::GroupPlan;
use crate::level_filter::{LevelFilter, LevelMask, level_bit};
use crate::log::LogWriter;
use crate::lookup::Lookup;
use crate::manifest::{MANIFEST_FORMAT_VERSION, NewFile, TableFile, VersionEdit};
use crate::memtable::{MemTable, SwitchDue};
use crate::options::{
    KeyspaceOptions, MAX_KEY_BYTES, MAX_VALUE_BYTES, Options, ReadOptions, WriteOptions,
};
use crate::recovery::{
    self, CleanupFacts, DbId, Disposition, FILE_NUMBER_RESERVATION, LostTable, ManifestState,
    Owner, RecoveredKeyspace, RecoveryReport,
};
use crate::retained::{RetainedTableBuilder, RetainedTableIter};
use crate::sst::TableReader;
use crate::stats::Statistics;
use crate::table_format::{
    CORE_OWNER_PROBES, GroupId, OpenContext, OwnerProbe, TableFormat, TableHandle, TableWriter,
    WriterContext, recorded_owner,
};
use crate::version::{FileMeta, LevelIter, Version};
use crate::vfs::{FileLock, Vfs};

mod compact;
mod filter;
mod flush;
mod handle;
mod open;
mod open_files;
mod read;
mod stats;
mod version_set;
mod write;

pub(crate) use handle::DbCore;
pub use handle::{Keyspace, Snapshot};
pub use stats::{DbStats, KeyspaceStats};

// Free functions that more than one stage uses.
use flush::{FileTarget, TableOutput, build_table, open_table_meta};
use open_files::take_number;
use version_set::{create_wal, write_current, write_new_manifest};

/// Id of the default keyspace.
pub const DEFAULT_KEYSPACE_ID: KeyspaceId = KeyspaceId::DEFAULT;

/// Name of the default keyspace.
pub const DEFAULT_KEYSPACE: &str = "default";

/// What a reader of one keyspace needs, published as one immutable unit.
pub(crate) struct SuperVersion {
    pub(crate) mem: Arc<MemTable>,
    /// Newest first.
    pub(crate) imms: Vec<Arc<MemTable>>,
    pub(crate) version: Arc<Version>,
    pub(crate) opts: Arc<KeyspaceOptions>,
    /// The keyspace's layout, checked: its groups and lineages.
    pub(crate) plan: Arc<GroupPlan>,
    /// Grows with every publication; the level filter dates its records by it.
    pub(crate) version_no: u64,
}

/// State of a keyspace that only changes under the `state` lock.
struct KeyspaceState {
    name: String,
    opts: Arc<KeyspaceOptions>,
    /// `opts.layout`, checked ([`GroupPlan::new`]).
    plan: Arc<GroupPlan>,
    mem: Arc<MemTable>,
    /// Oldest first.
    imms: Vec<Arc<MemTable>>,
    version: Arc<Version>,
    /// Oldest log that may hold this keyspace's unflushed entries.
    log_number: FileNumber,
    flushing: bool,
    compact_cursor: Vec<Vec<u8>>,
    /// Output ranges of the compactions running on this keyspace.
    claims: Vec<compaction::OutputClaim>,
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
    recorded_log_number: FileNumber,
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
    id: KeyspaceId,
    name: String,
    /// Swapped whole on every flush, compaction and memtable switch; read
    /// without a lock or a shared reference count (a point read on every
    /// thread would otherwise bounce one cache line between cores).
    sv: ArcSwap<SuperVersion>,
    /// Which levels recently scanned ranges draw from (iterator reduction).
    filter: Mutex<LevelFilter>,
    /// Whether scans consult `filter` (it spares enough of them a seek).
    filter_gate: SavingsGate,
    /// Whether scans seek point-first (enough of them end at their start
    /// key).
    point_first_gate: SavingsGate,
}

struct State {
    keyspaces: BTreeMap<KeyspaceId, KeyspaceState>,
    next_keyspace_id: KeyspaceId,
    next_file_number: FileNumber,
    /// Numbers at or above `next_file_number` whose names were taken when
    /// the database opened (by files it cannot prove it wrote): skipped, so
    /// that they are never overwritten nor covered by a reservation.
    taken_numbers: std::collections::BTreeSet<FileNumber>,
    /// File numbers below this are recorded as allocated in the manifest;
    /// a number is reserved there before any file is created with it.
    reserved_file_numbers: FileNumber,
    /// Closed write-ahead logs still on disk, ascending, with their sizes.
    /// The current log is not listed; its size is `DbInner::current_wal_bytes`.
    closed_logs: Vec<(FileNumber, u64)>,
    bg_error: Option<Error>,
    snapshots: BTreeMap<SeqNo, usize>,
    running_compactions: usize,
    running_flushes: usize,
    /// The last compaction's I/O failure, cleared by the next success (not
    /// sticky: see `note_compaction_failure`).
    compaction_error: Option<Error>,
    compaction_failures: u64,
    /// When the latest successful compaction started: a compaction that
    /// started before it and fails afterwards reports nothing (see
    /// `note_compaction_failure`).
    last_compaction_success: Option<std::time::Instant>,
    closed: bool,
}

impl State {
    fn new_file_number(&mut self) -> FileNumber {
        take_number(&mut self.next_file_number, &mut self.taken_numbers)
    }

    /// Keyspaces whose background work may run (see
    /// `KeyspaceState::registered`).
    fn registered_keyspaces(&self) -> impl Iterator<Item = KeyspaceId> + '_ {
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
    number: FileNumber,
    /// Set by `shutdown` before the directory lock goes: an edit made
    /// after it (by a handle still running an operation) would write the
    /// manifest of a directory another process may have opened since.
    closed: bool,
}

enum Request {
    Batch {
        batch: WriteBatch,
        sync: bool,
        no_wal: bool,
    },
    /// Switch the memtables of these keyspaces (for `flush`).
    Switch(Vec<KeyspaceId>),
}

#[derive(Default)]
struct WriteQueue {
    next_ticket: u64,
    pending: VecDeque<(u64, Request)>,
    leader_active: bool,
    finished: HashMap<u64, Result<()>>,
    /// The leader is writing a synced group: waiters yield longer before
    /// they sleep ([`write::SyncPace::waiter_patience`]).
    syncing: bool,
    /// How fast synced writes arrive and fsyncs take.
    pace: write::SyncPace,
}

struct WalState {
    writer: Option<LogWriter>,
    number: FileNumber,
}

pub(crate) struct DbInner {
    path: PathBuf,
    opts: Options,
    /// The database's identity: in its manifest, every log header and every
    /// table's properties.
    db_id: DbId,
    /// The default keyspace (also in `state`), for handles made without a
    /// lock.
    default: Arc<KeyspaceShared>,
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
    /// Logs closed at a memtable switch, oldest first, whose bytes reached
    /// the OS but maybe not the disk, while some memtable still needs them.
    /// Two things fsync them, each before it relies on them: a `sync: true`
    /// write, before its own log (a synced write must not survive a power
    /// cut that loses an earlier acknowledged write), and a flush, before
    /// its table (the flushed keyspace's half of a batch that spans
    /// keyspaces must not be durable while the other half is only in an
    /// unsynced log); RocksDB does both. Syncing them at the switch instead
    /// stalls every writer behind the fsync of a whole write buffer's worth
    /// of log. Lock order: `wal`, then this; a flush takes this alone, so
    /// writes that do not sync go on while it syncs.
    closed_unsynced: Mutex<Vec<(FileNumber, LogWriter)>>,
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

impl Drop for DbInner {
    fn drop(&mut self) {
        self.shutting_down.store(true, Ordering::Release);
        // Shutdown took the log already whenever a public handle closed the
        // database; this covers an engine dropped without one.
        if let Some(w) = self.wal.get_mut().writer.as_mut() {
            let _ = w.flush();
        }
    }
}

/// Publishes a keyspace's current memtables and version to readers.
/// REQUIRES: the state lock is held (the caller has `&mut KeyspaceState`).
impl DbInner {
    /// The sequence number of the newest write.
    fn last_seqno(&self) -> SeqNo {
        SeqNo(self.last_seqno.load(Ordering::Acquire))
    }
}

fn publish(ks: &mut KeyspaceState) {
    ks.version_no += 1;
    let sv = Arc::new(SuperVersion {
        mem: Arc::clone(&ks.mem),
        imms: ks.imms.iter().rev().cloned().collect(),
        version: Arc::clone(&ks.version),
        opts: Arc::clone(&ks.opts),
        plan: Arc::clone(&ks.plan),
        version_no: ks.version_no,
    });
    ks.shared.sv.store(sv);
}

impl DbInner {
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
        // Make sure everything acknowledged reached the OS, and close the
        // log (giving it back the size of its data) before the directory
        // lock goes: a handle that outlives the close (a keyspace, a
        // table) must not close it later, under a database opened since,
        // which may be reading it.
        // Logs a memtable switch closed but kept for a later sync are
        // closed here alike.
        let mut wal = self.wal.lock();
        if let Some(mut w) = wal.writer.take() {
            let _ = w.flush();
        }
        for (_, mut w) in self.closed_unsynced.lock().drain(..) {
            let _ = w.flush();
        }
        drop(wal);
        // An edit in progress finishes first; any later one is refused.
        self.manifest.lock().closed = true;
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
}
