//! Reading the manifest at open: its edits applied in order, and the
//! judgement of a cut last record.

use super::*;
use crate::ids::FileNumber;

/// Per-keyspace state read from the manifest.
pub(crate) struct RecoveredKeyspace {
    pub name: String,
    pub log_number: FileNumber,
    pub files: BTreeMap<FileNumber, NewFile>,
    /// What it was created with (absent in format-1 manifests).
    pub identity: Option<KeyspaceIdentity>,
}

/// Everything the manifest says.
#[derive(Default)]
pub(crate) struct ManifestState {
    pub keyspaces: BTreeMap<KeyspaceId, RecoveredKeyspace>,
    /// The largest next file number any edit recorded: every number below
    /// it was allocated by this database.
    pub next_file_number: FileNumber,
    pub last_seqno: SeqNo,
    /// The next keyspace id recorded after a drop (ids are never reused).
    pub next_keyspace_id: Option<KeyspaceId>,
    pub db_id: Option<DbId>,
    pub format_version: u32,
    /// A cut last record that was dropped: (offset, bytes, reason).
    pub tail_dropped: Option<(u64, u64, String)>,
}

/// Applies every edit of a manifest to `state`. A damaged record followed
/// by valid ones is corruption; a cut last record is recorded in
/// `state.tail_dropped` for `check_manifest_tail` to judge.
pub(crate) fn replay_manifest(
    vfs: &dyn Vfs,
    mpath: &Path,
    state: &mut ManifestState,
) -> Result<()> {
    if !vfs.exists(mpath) {
        return Err(Error::corruption(
            mpath,
            0,
            "manifest named by CURRENT is missing",
        ));
    }
    let mut reader = LogReader::open(vfs, mpath, TailPolicy::StopAtDamage)?;
    let mut first = true;
    while let Some(rec) = reader.next_record()? {
        let offset = reader.last_record_offset();
        let edit = VersionEdit::decode(&rec).map_err(|e| Error::corruption(mpath, offset, e))?;
        if first {
            let v = edit.format_version.ok_or_else(|| {
                Error::corruption(
                    mpath,
                    offset,
                    "manifest does not start with a format version",
                )
            })?;
            if v > MANIFEST_FORMAT_VERSION {
                return Err(Error::UnsupportedVersion {
                    file: mpath.to_path_buf(),
                    found: v,
                    supported: MANIFEST_FORMAT_VERSION,
                });
            }
            state.format_version = v;
            state.db_id = edit.db_id;
            if v >= 2 && edit.db_id.is_none() {
                return Err(Error::corruption(
                    mpath,
                    offset,
                    "manifest of format 2 does not name its database id",
                ));
            }
            first = false;
        } else if edit.db_id.is_some() && edit.db_id != state.db_id {
            return Err(Error::corruption(
                mpath,
                offset,
                "edit names another database id than the manifest's first record",
            ));
        }
        apply_edit(mpath, offset, &edit, state)?;
    }
    if let Some(d) = reader.dropped() {
        if first {
            return Err(Error::corruption(
                mpath,
                d.offset,
                format!("first record unreadable: {}", d.reason),
            ));
        }
        if !d.is_tail() {
            return Err(Error::corruption(
                mpath,
                d.offset,
                format!(
                    "{}; {} valid records follow, so this is damage, not a record cut by a crash",
                    d.reason, d.valid_records_after
                ),
            ));
        }
        state.tail_dropped = Some((d.offset, d.bytes, d.reason.clone()));
    } else if first {
        return Err(Error::corruption(mpath, 0, "manifest holds no records"));
    }
    Ok(())
}

fn apply_edit(
    mpath: &Path,
    offset: u64,
    edit: &VersionEdit,
    state: &mut ManifestState,
) -> Result<()> {
    if let Some(n) = edit.next_file_number {
        state.next_file_number = state.next_file_number.max(n);
    }
    if let Some(s) = edit.last_seqno {
        state.last_seqno = state.last_seqno.max(s);
    }
    if let Some(id) = edit.next_keyspace_id {
        state.next_keyspace_id = state.next_keyspace_id.max(Some(id));
    }
    for (id, name) in &edit.added_keyspaces {
        state
            .keyspaces
            .entry(*id)
            .or_insert_with(|| RecoveredKeyspace {
                name: name.clone(),
                log_number: FileNumber(0),
                files: BTreeMap::new(),
                identity: None,
            });
    }
    for (id, ident) in &edit.keyspace_identities {
        if let Some(k) = state.keyspaces.get_mut(id) {
            k.identity = Some(ident.clone());
        }
    }
    for id in &edit.dropped_keyspaces {
        state.keyspaces.remove(id);
    }
    for (id, log) in &edit.log_numbers {
        if let Some(k) = state.keyspaces.get_mut(id) {
            k.log_number = k.log_number.max(*log);
        }
    }
    for (id, _level, number) in &edit.deleted_files {
        if let Some(k) = state.keyspaces.get_mut(id) {
            k.files.remove(number);
        }
    }
    for f in &edit.new_files {
        let k = state.keyspaces.get_mut(&f.keyspace).ok_or_else(|| {
            Error::corruption(
                mpath,
                offset,
                format!("file {} of unknown keyspace {}", f.number, f.keyspace),
            )
        })?;
        if f.level.index() >= 64 {
            return Err(Error::corruption(
                mpath,
                offset,
                format!("file {} at impossible level {}", f.number, f.level),
            ));
        }
        k.files.insert(f.number, f.clone());
    }
    Ok(())
}

/// Judges a manifest whose last record was cut. The engine appends and
/// syncs an edit before it acts on it, and deletes a write-ahead log only
/// after an edit retiring it is synced; so if the cut edit was never
/// applied, every log the surviving edits still need is on disk. A missing
/// one proves the cut edit had been synced and acted on: the cut is damage,
/// and accepting it would lose that log's writes.
pub(crate) fn check_manifest_tail(
    mpath: &Path,
    state: &ManifestState,
    logs: &[FileNumber],
) -> Result<()> {
    let Some((offset, bytes, reason)) = &state.tail_dropped else {
        return Ok(());
    };
    for (id, k) in &state.keyspaces {
        if k.log_number > FileNumber(0) && logs.binary_search(&k.log_number).is_err() {
            return Err(Error::corruption(
                mpath,
                *offset,
                format!(
                    "the last record ({bytes} bytes) is cut ({reason}), and without it keyspace \
                     {id} ({}) needs write-ahead log {:06}.log, which is gone: the cut edit had \
                     been applied, so this is damage, not a crash",
                    k.name, k.log_number
                ),
            ));
        }
    }
    Ok(())
}

/// Checks that every write-ahead log a keyspace still needs is on disk. A
/// log is created (and its directory entry synced) before any manifest
/// edit names it, and deleted only after an edit moving every keyspace past
/// it is synced; so a needed log that is missing was lost after the fact,
/// with whatever acknowledged writes it held. (Only for databases whose
/// opens create the log before the manifest: format 2 on.)
pub(crate) fn check_needed_logs(
    dir: &Path,
    state: &ManifestState,
    logs: &[FileNumber],
) -> Result<()> {
    for (id, k) in &state.keyspaces {
        if k.log_number > FileNumber(0) && logs.binary_search(&k.log_number).is_err() {
            return Err(Error::corruption(
                filename::log_path(dir, k.log_number),
                0,
                format!(
                    "write-ahead log {:06}.log is missing, but keyspace {id} ({}) needs it: it \
                     may have held acknowledged writes. Nothing was changed",
                    k.log_number, k.name
                ),
            ));
        }
    }
    Ok(())
}
