//! The cleanup sweep's decision: which files an open may remove, by what
//! they say of their owner and whether their number was reserved.

use super::*;
use crate::ids::FileNumber;

/// Who a file says wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    /// It carries this database's id.
    Ours,
    /// It carries no id (written before ids, or too damaged to say).
    Unmarked,
    /// It carries another id, or is not the kind of file its name says.
    Other(String),
}

/// What cleanup at open does with a directory entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Disposition {
    Keep,
    Remove,
    /// Not provably the engine's (or not obsolete): left where it is and
    /// reported, with why.
    Leave(String),
}

/// Facts cleanup decides by.
pub(crate) struct CleanupFacts<'a> {
    /// Every number below this was allocated by this database (recorded in
    /// its manifest before this open).
    pub allocated_below: FileNumber,
    /// The log and manifest this open created.
    pub wal_number: FileNumber,
    pub manifest_number: FileNumber,
    pub live_tables: &'a HashSet<FileNumber>,
    /// Logs whose records are now in tables.
    pub applied_logs: &'a HashSet<FileNumber>,
    /// Logs still needed (a keyspace waiting for its options keeps what
    /// it replayed from them in memory).
    pub kept_logs: &'a HashSet<FileNumber>,
}

/// Decides what to do with a directory entry of kind `kind`. `owner` is
/// asked only for files that are not live (what they say of themselves then
/// decides).
/// Pure: the effects are the caller's.
pub(crate) fn decide(
    kind: FileKind,
    facts: &CleanupFacts<'_>,
    owner: &mut dyn FnMut() -> Owner,
) -> Disposition {
    let allocated = |n: FileNumber| n < facts.allocated_below;
    let not_allocated = |n: FileNumber| {
        Disposition::Leave(format!(
            "its number {n} is not one the manifest recorded as allocated (below {})",
            facts.allocated_below
        ))
    };
    match kind {
        FileKind::Current | FileKind::Lock => Disposition::Keep,
        FileKind::Log(n) if n == facts.wal_number || facts.kept_logs.contains(&n) => {
            Disposition::Keep
        }
        FileKind::Manifest(n) if n == facts.manifest_number => Disposition::Keep,
        FileKind::Table(n) if facts.live_tables.contains(&n) => Disposition::Keep,
        FileKind::Log(n) if facts.applied_logs.contains(&n) => Disposition::Remove,
        // A file that names this database is its own, whatever its number
        // (a table flushed at an open that crashed before its manifest was
        // written); an unmarked one only if its number was allocated.
        FileKind::Log(n) | FileKind::Table(n) | FileKind::Manifest(n) => match owner() {
            Owner::Ours => Disposition::Remove,
            Owner::Unmarked if allocated(n) => Disposition::Remove,
            Owner::Unmarked => not_allocated(n),
            Owner::Other(why) => Disposition::Leave(why),
        },
        FileKind::Temp => match owner() {
            Owner::Ours => Disposition::Remove,
            Owner::Unmarked => Disposition::Leave("not a temporary file the engine writes".into()),
            Owner::Other(why) => Disposition::Leave(why),
        },
    }
}

/// Name of the temporary file that becomes `CURRENT` for manifest `n`.
pub(crate) fn current_temp_name(n: FileNumber) -> String {
    format!("CURRENT.{n:06}.tmp")
}

/// Who wrote the temporary file `name`: ours only if it is a regular file
/// of the engine's naming, small, holding (a prefix of) the manifest name
/// it was written for — `CURRENT.NNNNNN.tmp` holds `MANIFEST-NNNNNN\n`; an
/// older build's `CURRENT.tmp`, any manifest name.
pub(crate) fn temp_owner(vfs: &dyn Vfs, dir: &Path, name: &str) -> Owner {
    let number = name
        .strip_prefix("CURRENT.")
        .and_then(|r| r.strip_suffix(".tmp"))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse::<u64>().ok())
        .map(FileNumber);
    if name != "CURRENT.tmp" && number.is_none() {
        return Owner::Unmarked;
    }
    let path = dir.join(name);
    if !vfs.is_regular_file(&path) {
        return Owner::Other("not a regular file".into());
    }
    match vfs.file_size(&path) {
        Ok(n) if n <= MAX_CURRENT_BYTES => {}
        _ => return Owner::Other("larger than a manifest name".into()),
    }
    match vfs.read_all(&path) {
        Ok(b) => {
            let names_manifest = match number {
                Some(n) => format!("{}\n", filename::manifest_name(n))
                    .as_bytes()
                    .starts_with(&b),
                None => std::str::from_utf8(&b).ok().is_some_and(|t| {
                    let t = t.trim_end();
                    "MANIFEST-".starts_with(t)
                        || matches!(filename::parse(t), Some(FileKind::Manifest(_)))
                }),
            };
            if names_manifest {
                Owner::Ours
            } else {
                Owner::Other("does not hold a manifest name".into())
            }
        }
        Err(e) => Owner::Other(format!("unreadable: {e}")),
    }
}

/// Bytes of a log or manifest an owner probe reads first: a log's first
/// record is its header, a few dozen bytes at the start of the first block.
const PROBE_BYTES: usize = 4 * crate::log::BLOCK_SIZE;

/// The most an owner probe reads: a manifest's first record (the version
/// as it was when the manifest was started) can span blocks, but a first
/// record longer than this is not one this engine wrote.
pub(crate) const MAX_PROBE_BYTES: usize = 64 << 20;

/// What the start of a log-format file holds.
pub(crate) enum FirstRecord {
    /// Its first record.
    Record(Vec<u8>),
    /// No readable first record (empty, zero-filled, or damaged), exactly
    /// as reading the whole file would find.
    Nothing,
    /// A first record longer than [`MAX_PROBE_BYTES`] (or one cut off
    /// there): not a record this engine starts a file with.
    TooLong,
}

/// The first record of the log-format file `path`, read from as little of
/// it as decides it: a probe must not read a huge file (perhaps a sparse
/// one) whole into memory.
pub(crate) fn first_record(vfs: &dyn Vfs, path: &Path) -> crate::error::Result<FirstRecord> {
    let file = vfs.open(path)?;
    let size = file.len();
    let mut want = PROBE_BYTES;
    loop {
        let len = usize::try_from(size).map_or(want, |s| s.min(want));
        let data = file.read_vec_at(len, 0)?;
        let mut reader = LogReader::from_bytes(path, data, TailPolicy::StopAtDamage);
        match reader.next_record() {
            Ok(Some(rec)) => return Ok(FirstRecord::Record(rec)),
            // The prefix ended inside the first record: more of the file
            // may complete it.
            _ if reader.ran_out() && (want as u64) < size => {
                if want >= MAX_PROBE_BYTES {
                    return Ok(FirstRecord::TooLong);
                }
                want = want.saturating_mul(8).min(MAX_PROBE_BYTES);
            }
            _ => return Ok(FirstRecord::Nothing),
        }
    }
}

/// [`first_record`] for an owner probe: what cannot be read, or is too
/// long to be the engine's, is another's.
fn probe(vfs: &dyn Vfs, path: &Path) -> std::result::Result<Option<Vec<u8>>, Owner> {
    match first_record(vfs, path) {
        Ok(FirstRecord::Record(rec)) => Ok(Some(rec)),
        Ok(FirstRecord::Nothing) => Ok(None),
        Ok(FirstRecord::TooLong) => Err(Owner::Other(format!(
            "its first record is longer than {} MiB",
            MAX_PROBE_BYTES >> 20
        ))),
        Err(e) => Err(Owner::Other(format!("unreadable: {e}"))),
    }
}

/// Who wrote log `path`: its header's database id.
pub(crate) fn log_owner(vfs: &dyn Vfs, path: &Path, id: &DbId) -> Owner {
    match probe(vfs, path) {
        Ok(Some(rec)) => match parse_wal_header(&rec) {
            Some((got, _)) if got == *id => Owner::Ours,
            Some((got, _)) => Owner::Other(format!(
                "a write-ahead log of another database ({})",
                db_id_hex(&got)
            )),
            None => Owner::Other("no write-ahead log header naming this database".into()),
        },
        // Empty, or not one readable record: nothing in it can be lost.
        Ok(None) => Owner::Unmarked,
        Err(owner) => owner,
    }
}

/// Who wrote manifest `path`: the id in its first record.
pub(crate) fn manifest_owner(vfs: &dyn Vfs, path: &Path, id: &DbId) -> Owner {
    match probe(vfs, path) {
        Ok(Some(rec)) => match VersionEdit::decode(&rec) {
            Ok(e) => match e.db_id {
                Some(got) if got == *id => Owner::Ours,
                Some(got) => Owner::Other(format!(
                    "a manifest of another database ({})",
                    db_id_hex(&got)
                )),
                None => Owner::Unmarked,
            },
            Err(_) => Owner::Other("its first record is not a version edit".into()),
        },
        Ok(None) => Owner::Unmarked,
        Err(owner) => owner,
    }
}
