//! Opening a database: recovery (the rules are in `recovery/`), the
//! cleanup sweep, and assembling the in-memory state.

use super::open_files::{Sweep, copy_aside, is_damage, live_table_numbers, set_aside_table};
use super::*;

/// A recovered keyspace's options until the application registers it (the
/// default keyspace's are the application's), and its checked layout.
#[derive(Clone)]
pub(super) struct KeyspaceSetup {
    pub(super) opts: Arc<KeyspaceOptions>,
    pub(super) plan: Arc<GroupPlan>,
}

/// The manifest sink of a read-only database: every write is refused (the
/// write paths refuse earlier; this is the last line).
pub(super) struct RefusingFile;

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

impl DbInner {
    /// Opens the database: reads the manifest, opens its tables, replays
    /// the write-ahead logs; then (unless read-only) flushes what was
    /// replayed, writes a fresh manifest and log, and removes what it can
    /// prove is its own and obsolete. See `recovery/` for the rules.
    pub(super) fn open(
        path: &Path,
        opts: Options,
        owner_probes: &'static [OwnerProbe],
    ) -> Result<DbInner> {
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
            let mut found = recovery::engine_files(&names);
            // What a creation that failed or was killed before CURRENT
            // left: nothing in it can be lost, so it is removed and the
            // database created anew (it could never be opened otherwise).
            if !found.is_empty()
                && !read_only
                && opts.create_if_missing
                && recovery::holds_nothing(&*vfs, path, &found)
            {
                for name in &found {
                    vfs.remove(&path.join(name))?;
                }
                vfs.sync_dir(path)?;
                found.clear();
            }
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
                log_number: FileNumber(0),
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
        let pending: std::collections::HashSet<KeyspaceId> = manifest
            .keyspaces
            .iter()
            .filter(|(id, k)| {
                **id != DEFAULT_KEYSPACE_ID
                    && k.identity.as_ref().is_some_and(|i| i.needs_registration())
            })
            .map(|(id, _)| *id)
            .collect();

        let names = vfs.list(path)?;
        let mut logs: Vec<FileNumber> = names
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
        let needed_logs: std::collections::HashSet<FileNumber> =
            manifest.keyspaces.values().map(|k| k.log_number).collect();
        // Numbers go on after the highest one in use below the recorded
        // reservation, so that what this open creates before its own
        // manifest records a new reservation (the log, the manifest, the
        // tables of replayed entries) still has numbers the old one covers:
        // if the open is cut short, cleanup can prove those files are the
        // database's. Numbers of files above that (foreign, or a reserved
        // one taken) are skipped, never reused, and never jumped past, so a
        // reservation does not come to cover a file the database did not
        // write.
        let numbered: Vec<FileNumber> = names
            .iter()
            .filter_map(|n| match filename::parse(n) {
                Some(FileKind::Log(k) | FileKind::Table(k) | FileKind::Manifest(k)) => Some(k),
                _ => None,
            })
            .collect();
        let mut next_file_number = numbered
            .iter()
            .copied()
            .filter(|&k| k < manifest.next_file_number)
            .max()
            .map_or(manifest.next_file_number, |k| k + 1)
            .max(FileNumber(2));
        let mut taken_numbers: std::collections::BTreeSet<FileNumber> = numbered
            .into_iter()
            .filter(|&k| k >= next_file_number)
            .collect();
        let mut last_seqno = manifest.last_seqno;

        // Open the tables every keyspace references.
        let mut versions: BTreeMap<KeyspaceId, Version> = BTreeMap::new();
        let mut ks_opts: BTreeMap<KeyspaceId, KeyspaceSetup> = BTreeMap::new();
        for (&id, rk) in &manifest.keyspaces {
            let o = if id == DEFAULT_KEYSPACE_ID {
                opts.default_keyspace.clone()
            } else {
                KeyspaceOptions::default()
            };
            let plan = Arc::new(o.group_plan()?);
            // A keyspace waiting for its layout opens only the core's own
            // tables; the others wait with it.
            let known_plan = (!pending.contains(&id)).then_some(&*plan);
            let mut added = Vec::new();
            for f in rk.files.values() {
                let opened = open_table_meta(
                    &vfs,
                    path,
                    f,
                    known_plan,
                    cache.clone(),
                    Arc::clone(&stats),
                    opts.maps_tables(),
                )
                .and_then(|m| {
                    if opts.skip_corrupt_tables {
                        m.table.verify()?;
                    }
                    Ok(m)
                });
                match opened {
                    Ok(meta) => added.push((f.level, Arc::new(meta))),
                    Err(e) if opts.skip_corrupt_tables && is_damage(&e) => {
                        report
                            .lost_tables
                            .push(set_aside_table(&*vfs, path, id, f, &e)?);
                    }
                    Err(e) => return Err(e),
                }
            }
            // A keyspace waiting for its options gets the levels its files
            // use, no more: registration adds the ones its options ask for,
            // and a layout (the table layer's) may count on the tree having
            // exactly the levels it was given.
            let deepest = rk
                .files
                .values()
                .map(|f| f.level.index() + 1)
                .max()
                .unwrap_or_default();
            let levels = if pending.contains(&id) {
                deepest.max(2)
            } else {
                o.num_levels.max(deepest)
            };
            let v = Version::empty(levels).apply(id, &[], added);
            v.check_invariants()
                .map_err(|e| Error::corruption(old_manifest.clone().unwrap_or_default(), 0, e))?;
            versions.insert(id, v);
            ks_opts.insert(
                id,
                KeyspaceSetup {
                    opts: Arc::new(o),
                    plan,
                },
            );
        }

        // Replay write-ahead logs into fresh memtables.
        let min_log = manifest
            .keyspaces
            .values()
            .map(|k| k.log_number)
            .min()
            .unwrap_or_default();
        let in_range: Vec<FileNumber> = logs.iter().copied().filter(|&l| l >= min_log).collect();
        let replay = recovery::logs_to_replay(
            &*vfs,
            path,
            &in_range,
            id_known.then_some(&db_id),
            &needed_logs,
            manifest.next_file_number,
        )?;
        let mut mems: BTreeMap<KeyspaceId, MemTable> = BTreeMap::new();
        let mut key_buf = Vec::new();
        let mut entries_replayed = 0u64;
        // The writer logs batches in sequence order (one leader assigns
        // numbers and appends); a batch that does not come after the one
        // before it would put two versions of a key at one sequence number.
        let mut next_replay_seqno = SeqNo::ZERO;
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
                            Some(k) => MemTable::for_keyspace(&k.opts, 0, log),
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
        if let Some((log, offset)) = outcome.stopped
            && let Some((k, newest)) =
                recovery::ahead_of_stop(&manifest.keyspaces, log, next_replay_seqno)
        {
            return Err(recovery::ahead_of_stop_error(
                &filename::log_path(path, log),
                offset,
                &k.name,
                newest,
                next_replay_seqno,
                opts.skip_corrupt_tables,
            ));
        }

        // Cleanup: a dry run for a read-only open (it reports what is not
        // the database's), the real one after the new manifest is written.
        let sweep = Sweep {
            vfs: &vfs,
            dir: path,
            db_id: &db_id,
            id_known,
            read_manifest: old_manifest.as_deref(),
            owner_probes,
        };
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
                wal_number: logs.last().copied().unwrap_or_default(),
                manifest_number: current_manifest.unwrap_or_default(),
                live_tables: &live_tables,
                applied_logs: &outcome.applied,
                kept_logs: &Default::default(),
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
        let pending_mems: BTreeMap<KeyspaceId, MemTable> = {
            let ids: Vec<KeyspaceId> = mems
                .iter()
                .filter(|(id, m)| pending.contains(id) && !m.is_empty())
                .map(|(id, _)| *id)
                .collect();
            ids.into_iter()
                .filter_map(|id| mems.remove(&id).map(|m| (id, m)))
                .collect()
        };
        let kept_log_numbers: BTreeMap<KeyspaceId, FileNumber> = pending_mems
            .keys()
            .map(|id| (*id, manifest.keyspaces[id].log_number))
            .collect();
        let kept_logs: std::collections::HashSet<FileNumber> = match kept_log_numbers.values().min()
        {
            Some(&keep_from) => {
                applied_logs.retain(|&l| l < keep_from);
                replay.iter().copied().filter(|&l| l >= keep_from).collect()
            }
            None => Default::default(),
        };
        // A kept log is rewritten to what was applied from it, so that the
        // next open, which finds the new log after it, neither takes a
        // dropped tail for damage nor replays what this open dropped.
        for (&log, &repair) in &outcome.repairs {
            if kept_logs.contains(&log) {
                recovery::repair_kept_log(&*vfs, path, log, repair, id_known.then_some(&db_id))?;
            }
        }

        // Flush what was replayed to level 0, so the old logs can go.
        for (id, mem) in &mems {
            if mem.is_empty() {
                continue;
            }
            let k = &ks_opts[id];
            let number = take_number(&mut next_file_number, &mut taken_numbers);
            let mut it = mem.iter();
            let out = build_table(
                FileTarget {
                    vfs: &vfs,
                    dir: path,
                    db_id: &db_id,
                    stats: &stats,
                },
                number,
                it.as_mut(),
                &k.opts,
                &k.plan,
                &[],
                &|| false,
                None,
            )?;
            if let Some(file) = out {
                let meta = open_table_meta(
                    &vfs,
                    path,
                    &file,
                    Some(&k.plan),
                    cache.clone(),
                    Arc::clone(&stats),
                    opts.maps_tables(),
                )?;
                let v = versions
                    .remove(id)
                    .unwrap_or_else(|| Version::empty(k.opts.num_levels));
                versions.insert(*id, v.apply(*id, &[], vec![(Level::ZERO, Arc::new(meta))]));
                Statistics::add(&stats.bytes_flushed, file.size);
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
            next_keyspace_id: manifest.next_keyspace_id,
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
        // What was dropped or set aside is on record before the manifest
        // that no longer names it: if the open fails from here, the next one
        // finds the same and records it.
        recovery::log_report(&*vfs, path, manifest_number, &report)?;
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
                closed: false,
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
                    .unwrap_or_default();
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
    pub(super) fn open_beside_writer(
        path: &Path,
        opts: Options,
        owner_probes: &'static [OwnerProbe],
    ) -> Result<DbInner> {
        let vfs = Arc::clone(&opts.vfs);
        let fingerprint = || {
            let name = recovery::read_current(&*vfs, path).ok()?;
            let size = vfs.file_size(&path.join(&name)).ok()?;
            Some((name, size))
        };
        let mut attempts = 0;
        loop {
            let before = fingerprint();
            match DbInner::open(path, opts.clone(), owner_probes) {
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
    pub(super) fn assemble(
        path: &Path,
        opts: Options,
        vfs: Arc<dyn Vfs>,
        lock: Option<Box<dyn FileLock>>,
        cache: Option<Arc<BlockCache>>,
        stats: Arc<Statistics>,
        db_id: DbId,
        manifest: ManifestState,
        mut versions: BTreeMap<KeyspaceId, Version>,
        ks_opts: BTreeMap<KeyspaceId, KeyspaceSetup>,
        mut mems: BTreeMap<KeyspaceId, MemTable>,
        next_file_number: FileNumber,
        taken_numbers: std::collections::BTreeSet<FileNumber>,
        reserved_file_numbers: FileNumber,
        last_seqno: SeqNo,
        wal: Option<(LogWriter, FileNumber)>,
        manifest_writer: Option<ManifestWriter>,
        report: RecoveryReport,
    ) -> DbInner {
        let wal_number = wal.as_ref().map_or(FileNumber(0), |w| w.1);
        let next_memtable_id = AtomicU64::new(1);
        let mut state_ks = BTreeMap::new();
        let mut next_keyspace_id = manifest.next_keyspace_id.unwrap_or(KeyspaceId(1));
        for (id, rk) in manifest.keyspaces {
            let KeyspaceSetup { opts: o, plan } = ks_opts[&id].clone();
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
                plan: Arc::clone(&plan),
                version_no: 0,
            });
            let shared = Arc::new(KeyspaceShared {
                id,
                name: rk.name.clone(),
                sv: ArcSwap::new(sv),
                filter: Mutex::new(LevelFilter::new(o.level_filter_bytes)),
                filter_gate: SavingsGate::new(),
                point_first_gate: SavingsGate::new(),
            });
            next_keyspace_id = next_keyspace_id.max(id.next());
            let levels = version.num_levels();
            state_ks.insert(
                id,
                KeyspaceState {
                    name: rk.name,
                    opts: o,
                    plan,
                    mem,
                    imms: Vec::new(),
                    version,
                    log_number: rk.log_number,
                    flushing: false,
                    compact_cursor: vec![Vec::new(); levels],
                    claims: Vec::new(),
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
            None => (None, FileNumber(0)),
        };
        let default = match state_ks.get(&DEFAULT_KEYSPACE_ID) {
            Some(k) => Arc::clone(&k.shared),
            // The open inserts the default keyspace before it gets here.
            None => unreachable!("the default keyspace is always recovered"),
        };
        let manifest_writer = manifest_writer.unwrap_or_else(|| ManifestWriter {
            log: LogWriter::new(Box::new(RefusingFile)),
            number: FileNumber(0),
            closed: false,
        });
        DbInner {
            path: path.to_path_buf(),
            vfs,
            db_id,
            default,
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
                last_compaction_success: None,
                closed: false,
            }),
            bg_cv: Condvar::new(),
            writers: Mutex::new(WriteQueue::default()),
            writers_cv: Condvar::new(),
            wal: Mutex::new(WalState {
                writer,
                number: wal_number,
            }),
            closed_unsynced: Mutex::new(Vec::new()),
            manifest: Mutex::new(manifest_writer),
            last_seqno: AtomicU64::new(last_seqno.get()),
            shutting_down: AtomicBool::new(false),
            threads: Mutex::new(Vec::new()),
            next_memtable_id,
            recovery: report,
            db_handles: std::sync::atomic::AtomicUsize::new(1),
            current_wal_bytes: AtomicU64::new(0),
            opts,
        }
    }
}
