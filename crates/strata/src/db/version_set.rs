//! Version changes: the manifest writer's one entry point (`log_edit`),
//! manifest rollover, file-number reservations, keyspace registration,
//! and the files that name versions (`CURRENT`, new logs).

use super::*;

/// Writes a manifest holding `snapshot` and points CURRENT at it.
pub(super) fn write_new_manifest(
    vfs: &dyn Vfs,
    dir: &Path,
    number: FileNumber,
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
pub(super) fn write_current(vfs: &dyn Vfs, dir: &Path, number: FileNumber) -> Result<()> {
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

/// How far ahead of its appends a write-ahead log's size is set.
const WAL_PREALLOCATION_STEP: u64 = 4 << 20;

/// Creates write-ahead log `number` and writes its header (naming the
/// database and the log), handed to the OS at once so that a log on disk
/// without its header is one a crash cut at creation.
pub(super) fn create_wal(
    vfs: &dyn Vfs,
    dir: &Path,
    number: FileNumber,
    db_id: &DbId,
) -> Result<LogWriter> {
    let mut file = vfs.create(&filename::log_path(dir, number))?;
    // Synced appends that grow a file also make its new size durable (a
    // journal commit on ext4): about a quarter of a synced write's time
    // here. Growing the size ahead in steps spares most of them.
    file.preallocate_in_steps(WAL_PREALLOCATION_STEP);
    let mut w = LogWriter::new(file);
    w.add_record(&recovery::wal_header(db_id, number))?;
    w.flush()?;
    Ok(w)
}

impl DbInner {
    /// A file number, reserved in the manifest before it is handed out (see
    /// [`FILE_NUMBER_RESERVATION`]). Takes the manifest lock only when the
    /// reservation runs out. REQUIRES: neither the manifest nor the state
    /// lock is held.
    pub(super) fn allocate_file_number(&self) -> Result<FileNumber> {
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

    pub(super) fn open_keyspace(
        &self,
        name: &str,
        opts: KeyspaceOptions,
    ) -> Result<Arc<KeyspaceShared>> {
        self.check_open()?;
        let plan = Arc::new(opts.group_plan()?);
        let opts = Arc::new(opts);
        // Serialise with other version changes.
        let mut manifest = self.manifest.lock();
        let mut st = self.state.lock();
        if let Some((&id, ks)) = st.keyspaces.iter_mut().find(|(_, k)| k.name == name) {
            let given = opts.identity();
            recovery::check_identity(name, Some(&ks.identity), &given)?;
            // Files whose format waited for this layout open now; one the
            // layout does not supply refuses the registration.
            if ks.version.all_files().any(|(_, f)| !f.table.is_opened()) {
                let mut v = (*ks.version).clone();
                for files in &mut v.levels {
                    for f in files.iter_mut() {
                        if !f.table.is_opened() {
                            let opened = open_table_meta(
                                &self.vfs,
                                &self.path,
                                &f.file,
                                Some(&plan),
                                self.cache.clone(),
                                Arc::clone(&self.stats),
                                self.opts.maps_tables(),
                            )?;
                            *f = Arc::new(opened);
                        }
                    }
                }
                ks.version = Arc::new(v);
            }
            ks.opts = Arc::clone(&opts);
            ks.plan = Arc::clone(&plan);
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
            // What recovery replayed for a keyspace that waited for its
            // options is still only in its memtable, and keeps every log
            // from the one it came from on disk: its memtable is switched
            // now, so that a background flush writes it out as recovery
            // flushes the other keyspaces and the logs retire instead of
            // piling up one per open of a database that is reopened more
            // often than its memtables fill.
            let mut replayed = false;
            if let Some(ks) = st.keyspaces.get_mut(&id) {
                if changed {
                    ks.identity = given;
                }
                replayed = !ks.registered && !ks.mem.is_empty() && !self.opts.read_only;
                ks.registered = true;
            }
            self.bg_cv.notify_all();
            drop(st);
            drop(manifest);
            if replayed {
                // Best effort: the registration stands either way. A switch
                // refused (a background error, a close under way) leaves
                // the entries where recovery put them, in the memtable and
                // its logs, as before, and the error is the database's to
                // report on its next write.
                let _ = self.submit(Request::Switch(vec![id]));
            }
            return Ok(shared);
        }
        self.check_writable("create a keyspace")?;
        let id = st.next_keyspace_id;
        if id.get() > crate::manifest::MAX_KEYSPACE_ID {
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
        st.next_keyspace_id = id.next();
        let mem = Arc::new(MemTable::for_keyspace(
            &opts,
            self.next_memtable_id.fetch_add(1, Ordering::Relaxed),
            log_number,
        ));
        let version = Arc::new(Version::empty(opts.num_levels));
        let shared = Arc::new(KeyspaceShared {
            id,
            name: name.to_string(),
            sv: ArcSwap::from_pointee(SuperVersion {
                mem: Arc::clone(&mem),
                imms: Vec::new(),
                version: Arc::clone(&version),
                opts: Arc::clone(&opts),
                plan: Arc::clone(&plan),
                version_no: 0,
            }),
            filter: Mutex::new(LevelFilter::new(opts.level_filter_bytes)),
            filter_gate: SavingsGate::new(),
            point_first_gate: SavingsGate::new(),
        });
        st.keyspaces.insert(
            id,
            KeyspaceState {
                name: name.to_string(),
                opts: Arc::clone(&opts),
                plan,
                mem,
                imms: Vec::new(),
                version,
                log_number,
                flushing: false,
                compact_cursor: vec![Vec::new(); opts.num_levels],
                claims: Vec::new(),
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

    /// Drops keyspace `name`: its record leaves the manifest, its files are
    /// deleted once no reader holds them, and writes naming it fail. Its id
    /// is never handed out again (its entries may remain in logs other
    /// keyspaces still need; replay skips them). A flush or compaction of it
    /// that is running finds it gone when it comes to record its output and
    /// drops the output (both hold the manifest lock to record).
    pub(super) fn drop_keyspace(&self, name: &str) -> Result<()> {
        self.check_open()?;
        self.check_writable("drop a keyspace")?;
        let mut manifest = self.manifest.lock();
        let (id, next_id) = {
            let st = self.state.lock();
            let (&id, _) = st
                .keyspaces
                .iter()
                .find(|(_, k)| k.name == name)
                .ok_or_else(|| Error::InvalidArgument(format!("no keyspace named {name:?}")))?;
            if id == DEFAULT_KEYSPACE_ID {
                return Err(Error::InvalidArgument(
                    "the default keyspace cannot be dropped".into(),
                ));
            }
            (id, st.next_keyspace_id)
        };
        let edit = VersionEdit {
            dropped_keyspaces: vec![id],
            next_keyspace_id: Some(next_id),
            ..Default::default()
        };
        self.log_edit(&mut manifest, &edit)?;
        let mut st = self.state.lock();
        if let Some(k) = st.keyspaces.remove(&id) {
            for (_, f) in k.version.all_files() {
                f.mark_obsolete();
            }
        }
        self.bg_cv.notify_all();
        Ok(())
    }

    /// Appends an edit to the manifest and syncs it. A failure is sticky.
    /// REQUIRES: the manifest lock is held (the guard is the proof).
    pub(super) fn log_edit(
        &self,
        manifest: &mut MutexGuard<'_, ManifestWriter>,
        edit: &VersionEdit,
    ) -> Result<()> {
        if manifest.closed {
            return Err(Error::Closed);
        }
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
    pub(super) fn roll_manifest(
        &self,
        manifest: &mut MutexGuard<'_, ManifestWriter>,
    ) -> Result<()> {
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
                last_seqno: Some(self.last_seqno()),
                ..Default::default()
            };
            let after_live = st
                .keyspaces
                .keys()
                .max()
                .map_or(KeyspaceId(1), |id| id.next());
            if st.next_keyspace_id > after_live {
                e.next_keyspace_id = Some(st.next_keyspace_id);
            }
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
        let old = std::mem::replace(
            &mut **manifest,
            ManifestWriter {
                log,
                number,
                closed: false,
            },
        );
        // CURRENT names the new manifest durably; a failed removal leaves a
        // file that the next open deletes.
        let _ = self
            .vfs
            .remove(&self.path.join(filename::manifest_name(old.number)));
        Ok(())
    }
}
