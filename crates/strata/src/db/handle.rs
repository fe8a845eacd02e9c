//! The key-value core's handles: [`DbCore`] (what the public
//! [`crate::Db`] and the table layer call), [`Keyspace`], [`Snapshot`].

use super::*;

/// The key-value core of an open database. The public [`crate::Db`] wraps
/// it with the table layer; the table layer holds clones of it. Clones do
/// not keep the database open: the last `Db` closes it.
#[derive(Clone)]
pub(crate) struct DbCore {
    inner: Arc<DbInner>,
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

    /// Another hold on the same sequence number, released on its own drop
    /// (for a reader that must keep the view after its caller lets go).
    pub(crate) fn held_again(&self) -> Snapshot {
        let mut st = self.inner.state.lock();
        *st.snapshots.entry(self.seqno).or_insert(0) += 1;
        Snapshot {
            inner: Arc::clone(&self.inner),
            seqno: self.seqno,
        }
    }

    /// Whether this is a snapshot of `core`'s database.
    pub(crate) fn is_of(&self, core: &DbCore) -> bool {
        Arc::ptr_eq(&self.inner, &core.inner)
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

impl DbCore {
    /// Whether `other` is a handle on the same open database.
    pub(crate) fn same_database(&self, other: &DbCore) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Opens (or creates) the database at `path`. `owner_probes` read the
    /// owners of files in the layers' formats that the core does not know,
    /// for cleanup at open (the table layer's column-group files).
    pub(crate) fn open(
        path: impl AsRef<Path>,
        opts: Options,
        owner_probes: &'static [OwnerProbe],
    ) -> Result<DbCore> {
        opts.validate()?;
        let inner = if opts.read_only {
            DbInner::open_beside_writer(path.as_ref(), opts, owner_probes)?
        } else {
            DbInner::open(path.as_ref(), opts, owner_probes)?
        };
        let inner = Arc::new(inner);
        if !inner.opts.read_only {
            DbInner::start_threads(&inner);
        }
        Ok(DbCore { inner })
    }

    /// Counts a new public handle (see `DbInner::db_handles`).
    pub fn add_handle(&self) {
        self.inner.db_handles.fetch_add(1, Ordering::AcqRel);
    }

    /// The file system the database lives on.
    pub(crate) fn vfs(&self) -> Arc<dyn Vfs> {
        Arc::clone(&self.inner.vfs)
    }

    /// Whether exactly one public handle is left.
    pub fn is_last_handle(&self) -> bool {
        self.inner.db_handles.load(Ordering::Acquire) == 1
    }

    /// Forgets a public handle; the last one closes the database.
    pub fn release_handle(&self) {
        if self.inner.db_handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.inner.shutdown();
        }
    }

    /// Opens an internal keyspace (a name starting with `__`: the catalog,
    /// a table's rows).
    pub fn system_keyspace(&self, name: &str, opts: KeyspaceOptions) -> Result<Keyspace> {
        opts.validate()?;
        let shared = self.inner.open_keyspace(name, opts)?;
        Ok(Keyspace {
            inner: Arc::clone(&self.inner),
            shared,
        })
    }

    /// Drops keyspace `name` and its files.
    pub fn drop_keyspace(&self, name: &str) -> Result<()> {
        self.inner.drop_keyspace(name)
    }

    /// Fails when the database was opened read-only.
    pub fn check_writable(&self, operation: &'static str) -> Result<()> {
        self.inner.check_writable(operation)
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
        // No lock: the default keyspace exists from the open on and is
        // never dropped, so its handle is kept beside the state.
        Keyspace {
            inner: Arc::clone(&self.inner),
            shared: Arc::clone(&self.inner.default),
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
        if name.starts_with("__") {
            return Err(Error::InvalidArgument(format!(
                "keyspace name {name:?}: names starting with \"__\" are reserved for the \
                 engine (the table catalog and tables' rows)"
            )));
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

    /// Applies an application's batch atomically: [`DbCore::write`], but a
    /// keyspace the engine keeps for itself (`__`-named: the table catalog,
    /// tables' rows, indexes) is refused. A batch names keyspaces by id,
    /// and an id taken from another database, or guessed, wrote raw bytes
    /// into a table (found in review, 2026-12-01).
    pub fn write_application(&self, opts: WriteOptions, batch: WriteBatch) -> Result<()> {
        self.inner.write_as(opts, batch, true)
    }

    /// A snapshot at `seqno`, held for a read that was handed the bare
    /// number: one a live snapshot holds, or the latest. An older number
    /// that no snapshot holds is refused: compaction may have dropped some
    /// of the versions a read at it needs, and a table's columns would
    /// then come from different versions (found in review, 2026-12-01).
    pub(crate) fn hold_snapshot(&self, seqno: SeqNo) -> Result<Snapshot> {
        let mut st = self.inner.state.lock();
        if !st.snapshots.contains_key(&seqno) && seqno < self.inner.last_seqno() {
            return Err(Error::InvalidArgument(format!(
                "a read at sequence number {} needs a snapshot at it held until the read \
                 opens (Db::snapshot); none is",
                seqno.0
            )));
        }
        Ok(self.register_snapshot(&mut st, seqno))
    }

    /// A consistent view of every keyspace at this moment.
    pub fn snapshot(&self) -> Snapshot {
        let mut st = self.inner.state.lock();
        let seqno = self.inner.last_seqno();
        self.register_snapshot(&mut st, seqno)
    }

    /// Counts one more snapshot at `seqno` (its drop counts it off).
    fn register_snapshot(&self, st: &mut State, seqno: SeqNo) -> Snapshot {
        *st.snapshots.entry(seqno).or_insert(0) += 1;
        Snapshot {
            inner: Arc::clone(&self.inner),
            seqno,
        }
    }

    /// Flushes every keyspace's memtable to level 0 and waits for it.
    pub fn flush(&self) -> Result<()> {
        let ids: Vec<KeyspaceId> = self.inner.state.lock().registered_keyspaces().collect();
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
                        || compaction::pick_compaction(
                            &k.version,
                            &k.opts,
                            &k.plan,
                            &k.compact_cursor,
                            &k.claims,
                        )
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
        let ids: Vec<KeyspaceId> = self.inner.state.lock().registered_keyspaces().collect();
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
    pub fn close(&self) -> Result<()> {
        self.inner.shutdown();
        // Drop of `self` follows; shutdown is idempotent.
        let st = self.inner.state.lock();
        match &st.bg_error {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}

impl Keyspace {
    /// What a reader of this keyspace sees now: its memtables and version
    /// (the table layer reads through it).
    pub(crate) fn super_version(&self) -> Result<Arc<SuperVersion>> {
        self.inner.check_open()?;
        Ok(self.shared.sv.load_full())
    }

    /// The sequence number of the newest write.
    pub(crate) fn last_seqno(&self) -> SeqNo {
        self.inner.last_seqno()
    }

    /// The keyspace's id (for [`WriteBatch::put_in`]).
    pub fn id(&self) -> KeyspaceId {
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

    /// The keys in `[from, to)` (unbounded where `None`) whose value
    /// matches `predicate`, with their values, in key order. In files whose
    /// values are dictionary-encoded (`KeyspaceOptions::with_value_dictionary`)
    /// the predicate runs on codes: blocks whose codes cannot match are not
    /// read, and the others are tested with a vectorised scan.
    pub fn filter(
        &self,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        predicate: &crate::dict::ValuePredicate,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.inner.filter(&self.shared, from, to, predicate, None)
    }

    /// [`Keyspace::filter`] as of `snapshot`.
    pub fn filter_at(
        &self,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        predicate: &crate::dict::ValuePredicate,
        snapshot: &Snapshot,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.inner
            .filter(&self.shared, from, to, predicate, Some(snapshot.seqno))
    }

    /// Reads `key` at sequence number `snapshot` (`None`: the latest).
    pub(crate) fn get_at_seqno(
        &self,
        key: &[u8],
        snapshot: Option<SeqNo>,
    ) -> Result<Option<Vec<u8>>> {
        let mut value = Vec::new();
        let found = self.inner.get(&self.shared, key, snapshot, &mut value)?;
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
            // Past the limit the iterator does not step: the entry after
            // the last one wanted may fail to read, and is no concern.
            if out.len() < limit {
                it.next();
            }
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

    /// Compacts the run of `group` on `level` (every file of it) into the
    /// next level, as one background compaction of that run would: for
    /// tests that need column groups at different depths.
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub fn compact_run(&self, level: usize, group: crate::table_format::GroupId) -> Result<()> {
        self.inner
            .compact_run_manually(self.shared.id, Level::from_index(level), group, None, None)
    }
}
