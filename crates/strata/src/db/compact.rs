//! Background and manual compaction.

use super::*;

/// Pause after a failed compaction before the next is picked; doubles on
/// each failure in a row, up to the maximum.
pub(super) const COMPACTION_RETRY_MIN: Duration = Duration::from_millis(200);

pub(super) const COMPACTION_RETRY_MAX: Duration = Duration::from_secs(10);

/// Finds a compaction in any keyspace, marks its inputs and claims its
/// output range.
pub(super) fn pick_any(st: &mut State) -> Option<(KeyspaceId, CompactionTask)> {
    for (id, k) in st.keyspaces.iter_mut().filter(|(_, k)| k.registered) {
        if let Some(t) =
            compaction::pick_compaction(&k.version, &k.opts, &k.plan, &k.compact_cursor, &k.claims)
        {
            start_task(k, &t);
            return Some((*id, t));
        }
    }
    None
}

/// Marks a task's inputs as being compacted and claims its output range.
/// REQUIRES: the state lock is held.
fn start_task(k: &mut KeyspaceState, t: &CompactionTask) {
    for f in t.all_inputs() {
        f.being_compacted.store(true, Ordering::Release);
    }
    k.claims.extend(t.claims());
}

/// Undoes [`start_task`] once the task ran (whatever its outcome).
fn end_task(st: &mut State, id: KeyspaceId, t: &CompactionTask) {
    for f in t.all_inputs() {
        f.being_compacted.store(false, Ordering::Release);
    }
    if let Some(k) = st.keyspaces.get_mut(&id) {
        let done = t.claims();
        k.claims.retain(|c| !done.contains(c));
    }
    st.running_compactions -= 1;
}

impl DbInner {
    pub(super) fn compaction_loop(self: Arc<Self>) {
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
            let started = Instant::now();
            let r = self.run_compaction(id, &t);
            // The outcome is recorded before the task ends, so that
            // `wait_for_background_work`, which reports a failure once no
            // compaction runs, never sees this one ended with an older
            // failure still standing.
            match &r {
                Ok(()) => self.note_compaction_success(started),
                Err(e) => self.note_compaction_failure(e, started),
            }
            end_task(&mut self.state.lock(), id, &t);
            self.bg_cv.notify_all();
            match r {
                Ok(()) => {
                    backoff = COMPACTION_RETRY_MIN;
                }
                Err(_) => {
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
    ///
    /// A failure is counted but not reported when a compaction that started
    /// after the failed one has already succeeded: the failed one ran
    /// through a window (a full disk, since freed) that a later compaction
    /// saw closed, and whatever work it left is still pending, so it is
    /// retried and reported if it fails again.
    pub(super) fn note_compaction_failure(&self, e: &Error, started: Instant) {
        if matches!(e, Error::Closed) {
            return;
        }
        if e.is_corruption() {
            self.set_bg_error(e.duplicate());
            return;
        }
        let mut st = self.state.lock();
        st.compaction_failures += 1;
        if st.last_compaction_success.is_some_and(|s| s > started) {
            return;
        }
        st.compaction_error = Some(e.duplicate());
    }

    /// Records a compaction that started at `started` and succeeded.
    pub(super) fn note_compaction_success(&self, started: Instant) {
        let mut st = self.state.lock();
        st.compaction_error = None;
        if st.last_compaction_success.is_none_or(|s| s < started) {
            st.last_compaction_success = Some(started);
        }
    }

    /// Carries out a compaction task whose inputs are marked as being
    /// compacted, and installs its result.
    pub(super) fn run_compaction(&self, id: KeyspaceId, t: &CompactionTask) -> Result<()> {
        let started = Instant::now();
        let (opts, plan, snapshots) = {
            let st = self.state.lock();
            let k = st.keyspaces.get(&id).ok_or(Error::Closed)?;
            (Arc::clone(&k.opts), Arc::clone(&k.plan), st.snapshot_list())
        };
        let mut deleted: Vec<(KeyspaceId, Level, FileNumber)> = t
            .all_inputs()
            .map(|f| {
                (
                    id,
                    if t.inputs.iter().any(|i| Arc::ptr_eq(i, f)) {
                        t.level
                    } else {
                        t.output_level
                    },
                    f.number,
                )
            })
            .collect();
        let mut added: Vec<(Level, Arc<FileMeta>)> = Vec::new();
        let mut written = 0u64;
        if t.trivial_move {
            added.push((t.output_level, Arc::clone(&t.inputs[0])));
        } else {
            // One pass over the inputs and every child's overlapping files:
            // each child group's output is the inputs merged with that
            // child's own files (a child holds only its columns, so another
            // child's entries must not reach it), reduced on its own.
            let stop = || self.shutting_down.load(Ordering::Acquire);
            let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
            let mut owner_of: Vec<Option<usize>> = Vec::new();
            for f in &t.inputs {
                children.push(Box::new(f.table.iter_filling(false)));
                owner_of.push(None);
            }
            for (k, out) in t.outputs.iter().enumerate() {
                if !out.overlapping.is_empty() {
                    children.push(Box::new(LevelIter::without_filling_cache(
                        out.overlapping.clone(),
                    )));
                    owner_of.push(Some(k));
                }
            }
            let mut input = MergingIterator::new(children);
            let written_files = self.write_compaction_outputs(
                &mut input, &owner_of, &opts, &plan, t, &snapshots, &stop,
            )?;
            for file in written_files {
                written += file.size;
                added.push((t.output_level, self.open_new_table(&file, &plan)?));
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
            if !st.keyspaces.contains_key(&id) {
                // Dropped while this ran (the drop holds the manifest lock,
                // so no edit of it can follow): its outputs go.
                for (_, f) in &added {
                    f.mark_obsolete();
                }
                return Ok(());
            }
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
        if let Some(c) = k.compact_cursor.get_mut(t.level.index()) {
            *c = t
                .inputs
                .iter()
                .map(|f| f.largest_user_key().to_vec())
                .max()
                .unwrap_or_default();
        }
        if let Some(s) = k.level_stats.get_mut(t.output_level.index()) {
            s.compactions += 1;
            s.bytes_read += read;
            s.bytes_written += written;
            s.micros += started.elapsed().as_micros() as u64;
        }
        publish(k);
        Ok(())
    }

    /// Removes table files a failed job wrote (best effort: the next open
    /// removes what no version references).
    fn remove_tables(&self, numbers: impl Iterator<Item = FileNumber>) {
        for n in numbers {
            let _ = self.vfs.remove(&filename::table_path(&self.path, n));
        }
    }

    /// Writes the survivors of `input` as the files of each output group
    /// of `t` on its output level, each split at the target file size.
    /// `owner_of` says which output each child of `input` belongs to (see
    /// `compaction::compact_entries_fanout`). On failure every file written
    /// is removed.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_compaction_outputs(
        &self,
        input: &mut MergingIterator,
        owner_of: &[Option<usize>],
        opts: &KeyspaceOptions,
        plan: &GroupPlan,
        t: &CompactionTask,
        snapshots: &[SeqNo],
        stop: &dyn Fn() -> bool,
    ) -> Result<Vec<TableFile>> {
        /// One output group's files: finished ones and the one being written.
        struct Out {
            group: GroupId,
            format: Arc<dyn TableFormat>,
            done: Vec<TableFile>,
            builder: Option<TableOutput>,
            last_ukey: Vec<u8>,
        }
        let mut outs: Vec<Out> = t
            .outputs
            .iter()
            .map(|o| Out {
                group: o.group,
                format: Arc::clone(&o.format),
                done: Vec::new(),
                builder: None,
                last_ukey: Vec::new(),
            })
            .collect();
        let target = opts.target_file_size;
        let policy = DropPolicy {
            snapshots,
            bottommost: t.bottommost,
            merge: opts.merge_operator.as_deref(),
            reducer: plan.reducer(),
        };
        // An output whose writing fails is removed at once, like the others
        // below (test fault_sites::compaction_sites).
        let finish = |b: TableOutput| {
            let number = b.number();
            b.finish()
                .inspect_err(|_| self.remove_tables(std::iter::once(number)))
        };
        let mut emit =
            |i: usize, k: &[u8], v: &[u8], coded: crate::dict::Codes<'_>| -> Result<()> {
                let o = &mut outs[i];
                let uk = user_key(k);
                let split = o.builder.as_ref().is_some_and(|b| {
                    b.estimated_file_size() >= target && uk != o.last_ukey.as_slice()
                });
                if split && let Some(b) = o.builder.take() {
                    o.done.push(finish(b)?);
                }
                if o.builder.is_none() {
                    let number = self.allocate_file_number()?;
                    o.builder = Some(TableOutput::create(
                        FileTarget {
                            vfs: &self.vfs,
                            dir: &self.path,
                            db_id: &self.db_id,
                            stats: &self.stats,
                        },
                        number,
                        opts,
                        &o.format,
                        t.output_level,
                        o.group,
                    )?);
                }
                if let Some(b) = o.builder.as_mut() {
                    b.add(k, v, coded)?;
                }
                o.last_ukey.clear();
                o.last_ukey.extend_from_slice(uk);
                Ok(())
            };
        let r: Result<DropStats> = compaction::compact_entries_fanout(
            input,
            owner_of,
            t.outputs.len(),
            &policy,
            t.may_carry_codes(),
            &mut emit,
            stop,
        );
        let mut r = r.map(|_| ());
        for o in &mut outs {
            if r.is_ok()
                && let Some(b) = o.builder.take()
            {
                r = finish(b).map(|rec| o.done.push(rec));
            }
        }
        if let Err(e) = r {
            for o in outs {
                self.remove_tables(o.done.iter().map(|f| f.number));
                if let Some(b) = o.builder {
                    self.remove_tables(std::iter::once(b.number()));
                }
            }
            return Err(e);
        }
        Ok(outs.into_iter().flat_map(|o| o.done).collect())
    }

    pub(super) fn compact_range(
        &self,
        id: KeyspaceId,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Result<()> {
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
                .map(Level::from_index)
                .find(|&l| !k.version.overlapping(l, lo, hi).is_empty())
                .unwrap_or(Level::ZERO)
        };
        let target = last_nonempty.max(Level(1));
        let num_levels = self
            .state
            .lock()
            .keyspaces
            .get(&id)
            .map_or(0, |k| k.version.num_levels());
        for level in (0..num_levels).map(Level::from_index) {
            // Every run above the deepest level with data moves down; below
            // it, only runs of groups the layout no longer has (a layout
            // change), which move to the layout's groups.
            let groups: Vec<GroupId> = {
                let st = self.state.lock();
                let k = st.keyspaces.get(&id).ok_or(Error::Closed)?;
                if level == Level::ZERO {
                    vec![GroupId::WHOLE]
                } else {
                    k.version
                        .runs(level)
                        .map(|(g, _)| g)
                        .filter(|&g| level < target || k.plan.group(level, g).is_none())
                        .collect()
                }
            };
            for group in groups {
                self.compact_run_manually(id, level, group, lo, hi)?;
            }
        }
        Ok(())
    }

    /// Compacts the files of `group` on `level` in `[lo, hi]` into the
    /// next level, waiting for background compactions holding them.
    pub(super) fn compact_run_manually(
        &self,
        id: KeyspaceId,
        level: Level,
        group: GroupId,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Result<()> {
        loop {
            let task = {
                let mut st = self.state.lock();
                Self::bg_error(&st)?;
                if st.closed {
                    return Err(Error::Closed);
                }
                let k = st.keyspaces.get_mut(&id).ok_or(Error::Closed)?;
                let inputs = if level == Level::ZERO {
                    k.version.overlapping_level0(lo, hi)
                } else {
                    k.version.overlapping_in(level, group, lo, hi)
                };
                if inputs.is_empty() {
                    break;
                }
                let plan = Arc::clone(&k.plan);
                let n = k.version.num_levels();
                if compaction::destinations(&plan, &*k.opts.layout, n, level, group).is_none() {
                    // Nowhere to go: the last level, or a retired group
                    // its layout gives no destination.
                    break;
                }
                match compaction::task_for_inputs(
                    &k.version,
                    &plan,
                    &*k.opts.layout,
                    &k.claims,
                    level,
                    group,
                    inputs,
                    CompactionReason::Manual,
                    0.0,
                ) {
                    Some(mut t) => {
                        // A manual compaction rewrites even a lone file,
                        // so that its tombstones and old versions go.
                        t.trivial_move = false;
                        start_task(k, &t);
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
            let started = Instant::now();
            let r = self.run_compaction(id, &t);
            // Recorded before the task ends (see the background loop).
            match &r {
                Ok(()) => self.note_compaction_success(started),
                Err(e) => self.note_compaction_failure(e, started),
            }
            end_task(&mut self.state.lock(), id, &t);
            self.bg_cv.notify_all();
            r?;
            break;
        }
        Ok(())
    }
}
