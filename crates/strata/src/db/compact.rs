//! Background and manual compaction.

use super::*;

/// Pause after a failed compaction before the next is picked; doubles on
/// each failure in a row, up to the maximum.
pub(super) const COMPACTION_RETRY_MIN: Duration = Duration::from_millis(200);

pub(super) const COMPACTION_RETRY_MAX: Duration = Duration::from_secs(10);

/// Finds a compaction in any keyspace and marks its inputs.
pub(super) fn pick_any(st: &mut State) -> Option<(u32, CompactionTask)> {
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
    pub(super) fn note_compaction_failure(&self, e: &Error) {
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
    pub(super) fn run_compaction(&self, id: u32, t: &CompactionTask) -> Result<()> {
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
                added.push((t.output_level, self.open_new_table(&rec)?));
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

    pub(super) fn write_compaction_outputs(
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

    pub(super) fn compact_range(
        &self,
        id: u32,
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
}
