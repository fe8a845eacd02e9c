//! What an open does with files besides reading them: sets damaged tables
//! and logs aside under `lost/`, hands out numbers that skip names already
//! taken, and sweeps leftovers (the rules are in `recovery::cleanup`).

use super::*;

/// Errors that mean a file's bytes are damaged (as opposed to I/O failing,
/// or a file of a newer format, which salvage must not set aside).
pub(super) fn is_damage(e: &Error) -> bool {
    matches!(e, Error::Corruption { .. })
}

/// Moves a damaged table to `lost/` beside the database (never deletes it)
/// and describes what was lost.
pub(super) fn set_aside_table(
    vfs: &dyn Vfs,
    dir: &Path,
    keyspace: KeyspaceId,
    f: &NewFile,
    e: &Error,
) -> Result<LostTable> {
    let file = filename::table_path(dir, f.number);
    let moved_to = if vfs.exists(&file) {
        Some(recovery::set_aside(vfs, dir, &file)?)
    } else {
        // An earlier salvage may have moved it and failed before the
        // manifest stopped naming it.
        let earlier = dir.join("lost").join(file.file_name().unwrap_or_default());
        vfs.exists(&earlier).then_some(earlier)
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

/// Copies `file` into `lost/` beside it, synced, before the original may be
/// retired; the copy's path.
pub(super) fn copy_aside(vfs: &dyn Vfs, dir: &Path, file: &Path) -> Result<PathBuf> {
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
pub(super) fn take_number(
    next: &mut FileNumber,
    taken: &mut std::collections::BTreeSet<FileNumber>,
) -> FileNumber {
    while taken.remove(next) {
        *next += 1;
    }
    let n = *next;
    *next += 1;
    n
}

pub(super) fn live_table_numbers(
    versions: &BTreeMap<KeyspaceId, Version>,
) -> std::collections::HashSet<FileNumber> {
    versions
        .values()
        .flat_map(|v| v.all_files().map(|(_, f)| f.number).collect::<Vec<_>>())
        .collect()
}

/// Cleanup at open: every directory entry the engine's naming covers is
/// kept, removed (only when provably the database's and obsolete) or left
/// and reported. A dry run (read-only opens) only reports.
pub(super) struct Sweep<'a> {
    pub(super) vfs: &'a Arc<dyn Vfs>,
    pub(super) dir: &'a Path,
    pub(super) db_id: &'a DbId,
    /// The database had an id before this open (its logs carry headers).
    pub(super) id_known: bool,
    /// The manifest this open read (ours: it named the live state).
    pub(super) read_manifest: Option<&'a Path>,
    /// Owner probes of the layers' formats, beside the core's.
    pub(super) owner_probes: &'a [OwnerProbe],
}

impl Sweep<'_> {
    pub(super) fn run(
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
                FileKind::Table(_) => table_owner(self.vfs, &p, self.db_id, self.owner_probes),
                FileKind::Manifest(_) if self.read_manifest == Some(p.as_path()) => Owner::Ours,
                FileKind::Manifest(_) => recovery::manifest_owner(vfs, &p, self.db_id),
                FileKind::Temp => match recovery::repair_temp_log(&n) {
                    Some(_) if !vfs.is_regular_file(&p) => {
                        Owner::Other("not a regular file".into())
                    }
                    Some(log) => recovery::repair_temp_owner(
                        vfs,
                        &p,
                        log,
                        self.id_known.then_some(self.db_id),
                        log < facts.allocated_below,
                    ),
                    None => recovery::temp_owner(vfs, self.dir, &n),
                },
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

/// Who wrote table file `path` (named like the core's tables, in any of the
/// engine's formats): the owner its properties record, read by the probe of
/// the format its footer names (the core's, or one of `probes`). A file too
/// damaged to say, of a format no probe knows, or recording no owner is
/// unmarked (cleanup then goes by its number alone).
pub(super) fn table_owner(
    vfs: &Arc<dyn Vfs>,
    path: &Path,
    db_id: &DbId,
    probes: &[OwnerProbe],
) -> Owner {
    let Ok(file) = vfs.open(path) else {
        return Owner::Other("unreadable".into());
    };
    match recorded_owner(&*file, path, CORE_OWNER_PROBES.iter().chain(probes)) {
        Ok(Some((_, owner))) if owner.is_empty() => Owner::Unmarked,
        Ok(Some((_, owner))) if owner.as_slice() == db_id.as_slice() => Owner::Ours,
        Ok(Some((format, _))) => Owner::Other(format!("{format} of another database")),
        Ok(None) | Err(_) => Owner::Unmarked,
    }
}
