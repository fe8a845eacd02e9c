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
        // Left by an open that crashed while repairing: ours if it names
        // this database or holds no record at all.
        match id.map(|id| log_owner(vfs, &tmp, id)) {
            Some(Owner::Ours | Owner::Unmarked) => vfs.remove(&tmp)?,
            Some(Owner::Other(why)) => {
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
            None => vfs.remove(&tmp)?,
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
