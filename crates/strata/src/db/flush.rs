//! Flushing memtables to level-0 tables, and memtable retention.

use super::*;

/// Releases retained memtables, oldest first, until they fit the
/// keyspace's budget; forgets files that no longer exist.
/// REQUIRES: the state lock is held.
pub(super) fn enforce_retention_budget(ks: &mut KeyspaceState) {
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

/// A table file being written: the writer of its group's format and what
/// its manifest record needs besides the writer's summary.
pub(super) struct TableOutput {
    writer: Box<dyn TableWriter>,
    number: FileNumber,
    group: GroupId,
    format: String,
}

/// Where table files are written, and for whom.
#[derive(Clone, Copy)]
pub(super) struct FileTarget<'a> {
    pub vfs: &'a Arc<dyn Vfs>,
    pub dir: &'a Path,
    pub db_id: &'a DbId,
    pub stats: &'a Arc<Statistics>,
}

impl TableOutput {
    /// Creates table `number` for `group` of `level`, in `format`.
    pub(super) fn create(
        target: FileTarget<'_>,
        number: FileNumber,
        opts: &KeyspaceOptions,
        format: &Arc<dyn TableFormat>,
        level: Level,
        group: GroupId,
    ) -> Result<TableOutput> {
        let path = filename::table_path(target.dir, number);
        let file = target.vfs.create(&path)?;
        let table_opts = opts.table_options(level);
        let ctx = WriterContext {
            options: &table_opts,
            level,
            group,
            owner_db_id: target.db_id.as_slice(),
            file_number: number,
            stats: target.stats,
        };
        let writer = format.writer(file, path.clone(), &ctx).inspect_err(|_| {
            let _ = target.vfs.remove(&path);
        })?;
        Ok(TableOutput {
            writer,
            number,
            group,
            format: format.name().to_string(),
        })
    }

    pub(super) fn number(&self) -> FileNumber {
        self.number
    }

    pub(super) fn add(
        &mut self,
        internal_key: &[u8],
        value: &[u8],
        coded: crate::dict::Codes<'_>,
    ) -> Result<()> {
        self.writer.add_coded(internal_key, value, coded)
    }

    pub(super) fn num_entries(&self) -> u64 {
        self.writer.num_entries()
    }

    pub(super) fn estimated_file_size(&self) -> u64 {
        self.writer.estimated_file_size()
    }

    /// Completes the file; its manifest record.
    pub(super) fn finish(self) -> Result<TableFile> {
        let summary = self.writer.finish()?;
        Ok(TableFile::from_summary(
            summary,
            self.number,
            self.group,
            &self.format,
        ))
    }
}

/// Writes the surviving entries of `input` into one level-0 table file;
/// `None` if nothing survived (the file is removed).
#[allow(clippy::too_many_arguments)]
pub(super) fn build_table(
    target: FileTarget<'_>,
    number: FileNumber,
    input: &mut dyn InternalIterator,
    opts: &KeyspaceOptions,
    plan: &GroupPlan,
    snapshots: &[SeqNo],
    stop: &dyn Fn() -> bool,
    mut copy: Option<&mut RetainedTableBuilder>,
) -> Result<Option<TableFile>> {
    let p = filename::table_path(target.dir, number);
    let format = plan
        .group(Level::ZERO, GroupId::WHOLE)
        .map(|g| Arc::clone(&g.format))
        .ok_or_else(|| Error::InvalidArgument("a layout without level 0".into()))?;
    let mut b = TableOutput::create(target, number, opts, &format, Level::ZERO, GroupId::WHOLE)?;
    let policy = DropPolicy {
        snapshots,
        bottommost: false,
        merge: opts.merge_operator.as_deref(),
        reducer: plan.reducer(),
    };
    let r = compaction::compact_entries(
        input,
        &policy,
        &mut |k, v| {
            if let Some(c) = copy.as_deref_mut() {
                c.add(k, v);
            }
            b.add(k, v, crate::dict::Codes::default())
        },
        stop,
    );
    let r = r.and_then(|_| {
        if b.num_entries() == 0 {
            Ok(None)
        } else {
            b.finish().map(Some)
        }
    });
    if !matches!(r, Ok(Some(_))) {
        let _ = target.vfs.remove(&p);
    }
    r
}

/// Opens table `file` of a keyspace: the core's format directly, another
/// through the keyspace's layout (`plan`). With no plan (a keyspace waiting
/// for registration), a file of another format is left unopened. `map`:
/// read it through a memory mapping (`Options::mmap_reads`).
pub(super) fn open_table_meta(
    vfs: &Arc<dyn Vfs>,
    dir: &Path,
    file: &TableFile,
    plan: Option<&GroupPlan>,
    cache: Option<Arc<BlockCache>>,
    stats: Arc<Statistics>,
    map: bool,
) -> Result<FileMeta> {
    let p = filename::table_path(dir, file.number);
    if !vfs.exists(&p) {
        return Err(Error::corruption(
            &p,
            0,
            "table file named by the manifest is missing",
        ));
    }
    let handle = if file.format.is_empty() {
        let f = vfs.open_table(&p, map)?;
        check_table_size(&p, f.len(), file.size)?;
        TableHandle::Sst(Arc::new(TableReader::open(
            f,
            p.clone(),
            file.number.get(),
            cache,
            stats,
        )?))
    } else {
        match plan {
            None => TableHandle::Unopened(file.format.clone()),
            Some(plan) => {
                let format = plan.format(&file.format).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "table {} is in format {:?}, which the keyspace's layout does not supply",
                        p.display(),
                        file.format
                    ))
                })?;
                let f = vfs.open_table(&p, map)?;
                check_table_size(&p, f.len(), file.size)?;
                let ctx = OpenContext {
                    file_number: file.number,
                    cache,
                    stats,
                };
                TableHandle::Plugin(format.open(f, p.clone(), &ctx)?)
            }
        }
    };
    Ok(FileMeta::new(file.clone(), handle, p, Arc::clone(vfs)))
}

fn check_table_size(p: &Path, actual: u64, recorded: u64) -> Result<()> {
    if actual != recorded {
        return Err(Error::corruption(
            p,
            0,
            format!("table file has {actual} bytes, the manifest says {recorded}"),
        ));
    }
    Ok(())
}

impl DbInner {
    /// Opens a table this database just wrote (a flush or compaction
    /// output), through the shared cache.
    pub(super) fn open_new_table(
        &self,
        file: &TableFile,
        plan: &GroupPlan,
    ) -> Result<Arc<FileMeta>> {
        let meta = open_table_meta(
            &self.vfs,
            &self.path,
            file,
            Some(plan),
            self.cache.clone(),
            Arc::clone(&self.stats),
            self.opts.maps_tables(),
        )?;
        Ok(Arc::new(meta))
    }

    pub(super) fn flush_loop(self: Arc<Self>) {
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

    pub(super) fn flush_memtable(
        &self,
        id: KeyspaceId,
        imm: &Arc<MemTable>,
        number: FileNumber,
        snapshots: &[SeqNo],
    ) -> Result<()> {
        let (opts, plan) = {
            let st = self.state.lock();
            st.keyspaces
                .get(&id)
                .map(|k| (Arc::clone(&k.opts), Arc::clone(&k.plan)))
                .ok_or(Error::Closed)?
        };
        // While another keyspace still needs a log this memtable's entries
        // are in, the closed logs are made durable before the table: the
        // entries may be halves of batches whose other halves are only in
        // those logs, and once the table is recorded the flushed half no
        // longer depends on them, so a power cut would keep one half
        // without the other (found in review, 2026-12-01). RocksDB syncs
        // its closed logs before a flush when there are several column
        // families.
        let shares_logs = {
            let st = self.state.lock();
            let upto = st.keyspaces.get(&id).map_or(imm.log_number, |k| {
                k.imms.get(1).map_or(k.mem.log_number, |m| m.log_number)
            });
            st.keyspaces
                .iter()
                .any(|(kid, k)| *kid != id && k.log_number < upto)
        };
        if shares_logs {
            Self::sync_closed_logs(&mut self.closed_unsynced.lock())?;
        }
        let mut it = imm.iter();
        // Retention copies each entry as the flush writes it: no second walk
        // of the skiplist, and the copy holds exactly the file's entries.
        let mut copy = opts
            .retain_flushed_memtables
            .then(|| RetainedTableBuilder::new(imm.memory_usage().entry_bytes));
        let out = build_table(
            FileTarget {
                vfs: &self.vfs,
                dir: &self.path,
                db_id: &self.db_id,
                stats: &self.stats,
            },
            number,
            it.as_mut(),
            &opts,
            &plan,
            snapshots,
            &|| false,
            copy.as_mut(),
        )?;
        let added = match out {
            Some(file) => {
                self.vfs.sync_dir(&self.path)?;
                Statistics::add(&self.stats.bytes_flushed, file.size);
                vec![(Level::ZERO, self.open_new_table(&file, &plan)?)]
            }
            None => Vec::new(),
        };
        Statistics::add(&self.stats.flushes, 1);
        let mut manifest = self.manifest.lock();
        let (edit, next_log) = {
            let st = self.state.lock();
            let Some(k) = st.keyspaces.get(&id) else {
                // Dropped while this ran: the file goes with it.
                for (_, f) in &added {
                    f.mark_obsolete();
                }
                return Ok(());
            };
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
                last_seqno: Some(self.last_seqno()),
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
                .unwrap_or_default();
            let (old, keep): (Vec<_>, Vec<_>) =
                st.closed_logs.iter().partition(|(l, _)| *l < min_log);
            st.closed_logs = keep;
            old.into_iter().map(|(l, _)| l).collect::<Vec<FileNumber>>()
        };
        drop(manifest);
        if !obsolete_logs.is_empty() {
            // No synced write needs these any more.
            self.closed_unsynced
                .lock()
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
    pub(super) fn retain_flushed(
        &self,
        id: KeyspaceId,
        copy: RetainedTableBuilder,
        f: &Arc<FileMeta>,
    ) {
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
}
