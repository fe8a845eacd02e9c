//! Rewriting a write-ahead log that recovery keeps after dropping part of
//! it.
//!
//! Recovery normally flushes what it replayed and retires every log it
//! read, torn tail and all. A keyspace that waits for its options (a merge
//! operator, a layout) cannot be flushed, so the logs it replayed from stay
//! on disk for the next open. If recovery dropped something from such a
//! log (the torn tail of the newest log, or damage a lenient
//! [`WalRecoveryMode`] went past), the log must then say exactly what was
//! applied: otherwise the next open, which finds a newer log beside it,
//! takes the dropped tail for damage in the middle of the history and
//! refuses to open, or replays again what the last open chose to drop.
//! The original of a log with damage was already copied to `lost/`.

use super::*;
use crate::log::LogWriter;

/// How a kept log is rewritten: to the records recovery applied from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LogRepair {
    /// The records before the first damage (a torn tail dropped, or the
    /// place where point-in-time recovery stopped).
    UpToDamage,
    /// Every record with a valid checksum, past each damaged stretch
    /// (recovery that skips damaged records).
    SkipDamage,
    /// Nothing: recovery stopped in an earlier log.
    Empty,
}

/// Name of the temporary file log `n` is rewritten into.
fn repair_temp_path(dir: &Path, n: FileNumber) -> PathBuf {
    let mut name = filename::log_path(dir, n).into_os_string();
    name.push(".tmp");
    PathBuf::from(name)
}

/// The log whose repair copy a directory entry named `name` would be
/// (`NNNNNN.log.tmp`), if it is named as one.
pub(crate) fn repair_temp_log(name: &str) -> Option<FileNumber> {
    match filename::parse(name.strip_suffix(".tmp")?) {
        Some(FileKind::Log(n)) => Some(n),
        _ => None,
    }
}

/// Who wrote `path`, a repair copy of log `log` that an open which crashed
/// while repairing left behind (the rename that ends a repair is atomic,
/// so the log itself is whole either way and the copy is never needed).
/// Ours if its header names this database (`id`;
/// `None` when the database's logs carry no header), or one that holds no
/// record at all for a log whose number the manifest recorded as
/// allocated (`allocated`): the crash came before its first record was
/// written. Both the repair itself and the cleanup sweep decide by this.
pub(crate) fn repair_temp_owner(
    vfs: &dyn Vfs,
    path: &Path,
    log: FileNumber,
    id: Option<&DbId>,
    allocated: bool,
) -> Owner {
    match id.map_or(Owner::Unmarked, |id| log_owner(vfs, path, id)) {
        Owner::Unmarked if allocated => Owner::Ours,
        Owner::Unmarked => Owner::Other(format!(
            "a repair copy of log {log}, whose number the manifest did not record as allocated"
        )),
        owner => owner,
    }
}

/// Rewrites log `n` in `dir` to hold what `repair` says, atomically: the new
/// contents are written and synced under a temporary name, then renamed
/// over the log. `id` is the database id the log's header names (`None`
/// for a log from before headers). Returns the bytes dropped.
pub(crate) fn repair_kept_log(
    vfs: &dyn Vfs,
    dir: &Path,
    n: FileNumber,
    repair: LogRepair,
    id: Option<&DbId>,
) -> Result<u64> {
    let path = filename::log_path(dir, n);
    let tmp = repair_temp_path(dir, n);
    if vfs.exists(&tmp) {
        // Left by an open that crashed while repairing (log `n` is kept,
        // so its number was allocated).
        match repair_temp_owner(vfs, &tmp, n, id, true) {
            Owner::Ours | Owner::Unmarked => vfs.remove(&tmp)?,
            Owner::Other(why) => {
                return Err(Error::corruption(
                    &tmp,
                    0,
                    format!(
                        "recovery must rewrite {} under this name, but the file there is not \
                         its own ({why}). Nothing was changed",
                        path.display()
                    ),
                ));
            }
        }
    }
    let mut reader = LogReader::open(vfs, &path, TailPolicy::StopAtDamage)?;
    let before = reader.file_len();
    let mut out = LogWriter::new(vfs.create(&tmp)?);
    if repair != LogRepair::Empty {
        if let Some(id) = id {
            out.add_record(&wal_header(id, n))?;
        }
        loop {
            if let Some(rec) = reader.next_record()? {
                if parse_wal_header(&rec).is_none() {
                    out.add_record(&rec)?;
                }
                continue;
            }
            if repair == LogRepair::SkipDamage && reader.skip_damage().is_some() {
                continue;
            }
            break;
        }
    }
    out.sync()?;
    let after = out.len();
    drop(out);
    vfs.rename(&tmp, &path)?;
    vfs.sync_dir(dir)?;
    Ok(before.saturating_sub(after))
}
