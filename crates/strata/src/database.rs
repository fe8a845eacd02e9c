//! [`Db`], the database an application opens: the key-value core
//! ([`crate::db`]) and, over it, the tables of the table layer
//! ([`crate::table`]).
//!
//! ```text
//!   Db ──► Catalog (tables) ──► DbCore (keyspaces, write path, versions)
//!     └───────────────────────► DbCore
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::batch::WriteBatch;
use crate::db::{DbCore, DbStats, Keyspace, Snapshot};
use crate::error::{Error, Result};
use crate::options::{KeyspaceOptions, Options, WriteOptions};
use crate::recovery::{DbId, RecoveryReport};
use crate::table::catalog::Catalog;
use crate::table::{Schema, Table, TableOptions};

/// An open database. Cheap to clone; every clone is the same database. When
/// the last clone drops, the database closes (as [`Db::close`]); keyspace
/// and table handles and snapshots that outlive it then fail with
/// [`Error::Closed`].
pub struct Db {
    core: DbCore,
    catalog: Arc<Catalog>,
}

impl Clone for Db {
    fn clone(&self) -> Self {
        self.core.add_handle();
        Db {
            core: self.core.clone(),
            catalog: Arc::clone(&self.catalog),
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if self.core.is_last_handle() {
            // Best effort: the workload log is advice.
            let _ = self.catalog.save_workloads();
        }
        self.core.release_handle();
    }
}

impl Db {
    /// Opens (or creates) the database at `path`, with its tables.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        let core = DbCore::open(path, opts, &[crate::table::CG_OWNER_PROBE])?;
        let catalog = match Catalog::open(core.clone()) {
            Ok(c) => Arc::new(c),
            Err(e) => {
                core.release_handle();
                return Err(e);
            }
        };
        if !core.is_read_only() {
            crate::table::start_auto_layout(&catalog);
        }
        Ok(Db { core, catalog })
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
    pub fn id(&self) -> DbId {
        self.core.id()
    }

    /// Whether the database was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.core.is_read_only()
    }

    /// The directory of the database.
    pub fn path(&self) -> &Path {
        self.core.path()
    }

    /// What recovery found when the database was opened.
    pub fn recovery_report(&self) -> &RecoveryReport {
        self.core.recovery_report()
    }

    /// The default keyspace.
    pub fn default_keyspace(&self) -> Keyspace {
        self.core.default_keyspace()
    }

    /// Opens the keyspace `name`, creating it if missing. Options of an
    /// existing keyspace are replaced by `opts` (the tree itself is kept).
    /// Names starting with `__` are reserved for the engine.
    pub fn keyspace(&self, name: &str, opts: KeyspaceOptions) -> Result<Keyspace> {
        self.core.keyspace(name, opts)
    }

    /// Names of every keyspace (tables' keyspaces and the catalog among them,
    /// named `__table/<id>` and `__catalog`).
    pub fn keyspace_names(&self) -> Vec<String> {
        self.core.keyspace_names()
    }

    /// Sets `key` in the default keyspace.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.core.put(key, value)
    }

    /// Reads `key` from the default keyspace.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.core.get(key)
    }

    /// Reads `key` from the default keyspace into `value`; see
    /// [`Keyspace::get_into`].
    pub fn get_into(&self, key: &[u8], value: &mut Vec<u8>) -> Result<bool> {
        self.core.get_into(key, value)
    }

    /// Deletes `key` from the default keyspace.
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        self.core.delete(key)
    }

    /// Adds a merge operand to `key` in the default keyspace.
    pub fn merge(&self, key: &[u8], operand: &[u8]) -> Result<()> {
        self.core.merge(key, operand)
    }

    /// Applies a batch atomically. A batch that names one of the engine's
    /// own keyspaces (`__`-named: the table catalog, tables' rows, indexes)
    /// is refused with [`Error::InvalidArgument`]: tables are written
    /// through their [`Table`](crate::table::Table) handles.
    pub fn write(&self, opts: WriteOptions, batch: WriteBatch) -> Result<()> {
        self.core.write_application(opts, batch)
    }

    /// A consistent view of every keyspace and table at this moment.
    pub fn snapshot(&self) -> Snapshot {
        self.core.snapshot()
    }

    /// Flushes every keyspace's (and table's) memtable to level 0 and waits
    /// for it.
    pub fn flush(&self) -> Result<()> {
        self.core.flush()
    }

    /// Waits until background work is done: no immutable memtable waits
    /// for its flush, no flush or compaction runs, and no level needs a
    /// compaction (like RocksDB's `WaitForCompact` without flushing). The
    /// mutable memtables are left as they are. Fails with the background
    /// error if one stops the work.
    pub fn wait_for_background_work(&self) -> Result<()> {
        self.core.wait_for_background_work()
    }

    /// Compacts every keyspace's (and table's) whole key range.
    pub fn compact(&self) -> Result<()> {
        self.core.compact()
    }

    /// Compacts the default keyspace's keys in `[lo, hi]` down the tree.
    pub fn compact_range(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<()> {
        self.core.compact_range(lo, hi)
    }

    /// Counters and the shape of every keyspace.
    pub fn stats(&self) -> DbStats {
        self.core.stats()
    }

    /// Verifies every checksum of every live table file; returns the
    /// corrupt files with their errors (empty when all are sound).
    pub fn verify(&self) -> Vec<(PathBuf, Error)> {
        self.core.verify()
    }

    /// Stops background work (waiting for running jobs) and releases the
    /// database. Other clones become unusable (`Error::Closed`).
    pub fn close(self) -> Result<()> {
        self.catalog.save_workloads()?;
        self.core.close()
    }

    /// Creates table `name` with `schema`, stored as `opts` say. Fails if a
    /// table of that name exists ([`Error::TableExists`]).
    pub fn create_table(&self, name: &str, schema: Schema, opts: TableOptions) -> Result<Table> {
        self.catalog.create(name, schema, opts)
    }

    /// The table `name` ([`Error::TableNotFound`] if there is none).
    pub fn table(&self, name: &str) -> Result<Table> {
        self.catalog.get(name)
    }

    /// Drops table `name` and its rows.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        self.catalog.drop_table(name)
    }

    /// Names of every table, sorted.
    pub fn table_names(&self) -> Vec<String> {
        self.catalog.names()
    }
}
