//! Replaying the write-ahead logs: torn tails, damage, and what each
//! `WalRecoveryMode` does with it.

use super::*;
use crate::ids::FileNumber;

/// What [`replay_logs`] did with each log.
#[derive(Default)]
pub(crate) struct LogReplay {
    /// Logs whose every record was applied (a dropped torn tail included).
    pub applied: HashSet<FileNumber>,
    /// Logs not fully applied (damage recovered past, or after the point
    /// where point-in-time recovery stopped): to be moved to `lost/`.
    pub partial: Vec<FileNumber>,
    /// Logs recovery dropped something from, and how each would be
    /// rewritten to what was applied, should it be kept ([`LogRepair`]).
    pub repairs: BTreeMap<FileNumber, LogRepair>,
    /// Where point-in-time recovery stopped: the log and the damage's
    /// offset in it.
    pub stopped: Option<(FileNumber, u64)>,
}

/// What [`replay_logs`] replays and how.
#[derive(Clone, Copy)]
pub(crate) struct ReplayPlan<'a> {
    /// Log numbers, ascending.
    pub logs: &'a [FileNumber],
    pub expect_id: Option<&'a DbId>,
    pub needed: &'a HashSet<FileNumber>,
    pub mode: WalRecoveryMode,
}

/// Applies one record: (log path, log number, offset, record).
pub(crate) type ApplyRecord<'a> = dyn FnMut(&Path, FileNumber, u64, &[u8]) -> Result<()> + 'a;

/// Replays write-ahead logs `plan.logs` (ascending) through `apply(path, log,
/// offset, record)`. `expect_id` is the database id the logs' headers must
/// carry (`None` for a database from before headers: every record is a
/// batch). A log without the right header is not replayed (cleanup then
/// leaves it in place and reports it), unless a keyspace needs it
/// (`needed`): then it is corruption.
pub(crate) fn replay_logs(
    vfs: &dyn Vfs,
    dir: &Path,
    plan: &ReplayPlan<'_>,
    report: &mut RecoveryReport,
    apply: &mut ApplyRecord<'_>,
) -> Result<LogReplay> {
    let ReplayPlan {
        logs,
        expect_id,
        needed,
        mode,
    } = *plan;
    let mut out = LogReplay::default();
    let mut stopped = false;
    for (i, &log) in logs.iter().enumerate() {
        let lpath = filename::log_path(dir, log);
        if stopped {
            out.partial.push(log);
            out.repairs.insert(log, LogRepair::Empty);
            continue;
        }
        let is_newest = i + 1 == logs.len();
        let mut reader = LogReader::open(vfs, &lpath, TailPolicy::StopAtDamage)?;
        if reader.file_len() == 0 {
            out.applied.insert(log);
            continue;
        }
        report.logs_replayed += 1;
        let mut want_header = expect_id.is_some();
        let mut partial = false;
        let mut foreign = false;
        loop {
            if let Some(rec) = reader.next_record()? {
                let offset = reader.last_record_offset();
                if want_header {
                    want_header = false;
                    match (parse_wal_header(&rec), expect_id) {
                        (Some((id, n)), Some(want)) if id == *want && n == log => continue,
                        _ => {
                            foreign = true;
                            break;
                        }
                    }
                }
                apply(&lpath, log, offset, &rec)?;
                continue;
            }
            let Some(d) = reader.dropped().cloned() else {
                break;
            };
            if want_header && d.is_tail() {
                // Not one valid record: a log cut while its header was being
                // written holds nothing and is ours; anything else is not a
                // log of this database.
                foreign = !is_torn_header(reader.contents(), expect_id, log);
                break;
            }
            // The tail of the last log written to: the newest, or one
            // followed only by logs that hold no write (an open that
            // crashed after creating its new log, before the manifest that
            // retires this one).
            let last_written = is_newest
                || (d.is_tail() && later_logs_hold_no_write(vfs, dir, &logs[i + 1..], expect_id)?);
            if last_written && d.is_tail() && mode != WalRecoveryMode::AbsoluteConsistency {
                report.wal_tail_dropped =
                    Some((lpath.clone(), d.offset, d.bytes, d.reason.clone()));
                out.repairs.entry(log).or_insert(LogRepair::UpToDamage);
                break;
            }
            let damage = |action, bytes| WalDamage {
                file: lpath.clone(),
                offset: d.offset,
                bytes,
                reason: d.reason.clone(),
                records_after: d.valid_records_after,
                action,
            };
            match mode {
                WalRecoveryMode::AbsoluteConsistency | WalRecoveryMode::TolerateTornTail => {
                    return Err(log_damage_error(&lpath, &d, last_written, mode));
                }
                WalRecoveryMode::PointInTime => {
                    report.wal_damage.push(damage("stopped", d.bytes));
                    out.repairs.insert(log, LogRepair::UpToDamage);
                    out.stopped = Some((log, d.offset));
                    partial = true;
                    stopped = true;
                    break;
                }
                WalRecoveryMode::SkipDamagedRecords => {
                    partial = true;
                    match reader.skip_damage() {
                        Some((_, skipped)) => {
                            report.wal_damage.push(damage("skipped", skipped));
                            out.repairs.insert(log, LogRepair::SkipDamage);
                            // Whatever header the log had is behind us.
                            want_header = false;
                        }
                        None => {
                            report.wal_damage.push(damage("skipped", d.bytes));
                            out.repairs.entry(log).or_insert(LogRepair::UpToDamage);
                            break;
                        }
                    }
                }
            }
        }
        if foreign {
            if needed.contains(&log) {
                return Err(not_this_databases_log(&lpath));
            }
            continue;
        }
        if partial {
            out.partial.push(log);
        } else {
            out.applied.insert(log);
        }
    }
    Ok(out)
}

/// The logs of `logs` (ascending) that may be this database's (`id`),
/// to replay, decided from each one's first record alone so that no huge
/// file of a log's name is read whole, here or later (replay, the check of
/// the logs after a torn tail, the copy of a partly replayed log): a first
/// record that is not the log's header, or one too long to be one, says
/// the file is another's; so does no readable first record at a number
/// this database never allocated (every number below `allocated_below`
/// was: a log of its own, even one whose header is damaged, is read whole
/// as before). Another's log that a keyspace needs (`needed`) is
/// corruption. Without `id` (logs from before headers) every log is kept.
pub(crate) fn logs_to_replay(
    vfs: &dyn Vfs,
    dir: &Path,
    logs: &[FileNumber],
    id: Option<&DbId>,
    needed: &std::collections::HashSet<FileNumber>,
    allocated_below: FileNumber,
) -> Result<Vec<FileNumber>> {
    let Some(id) = id else {
        return Ok(logs.to_vec());
    };
    let mut out = Vec::with_capacity(logs.len());
    for &log in logs {
        let path = filename::log_path(dir, log);
        let ours = match cleanup::first_record(vfs, &path)? {
            cleanup::FirstRecord::Record(rec) => {
                matches!(parse_wal_header(&rec), Some((got, n)) if got == *id && n == log)
            }
            cleanup::FirstRecord::Nothing => log < allocated_below,
            cleanup::FirstRecord::TooLong => false,
        };
        if ours {
            out.push(log);
        } else if needed.contains(&log) {
            return Err(not_this_databases_log(&path));
        }
    }
    Ok(out)
}

/// The error for a log a keyspace needs that is not this database's.
fn not_this_databases_log(path: &Path) -> Error {
    Error::corruption(
        path,
        0,
        "a keyspace needs this write-ahead log, but it does not start with a header \
         naming this database: it was replaced, and the acknowledged writes it held \
         are not here. Nothing was changed",
    )
}

/// A keyspace that point-in-time recovery would leave ahead of the others,
/// and its newest write: recovery stopped at damage in log `stopped`, and
/// every write after the damage has a sequence number of at least `next`
/// (the writer logs batches in sequence order). A keyspace whose log
/// number is past that log had flushed what the log held; if its files
/// hold a write numbered `next` or more, it holds writes that the other
/// keyspaces lose, and batches written across keyspaces would come back
/// split. RocksDB refuses such a database ("SST file is ahead of WALs").
/// A keyspace whose files are all older than the damage (one idle since,
/// whose log number moved on with empty memtables) is no such keyspace.
pub(crate) fn ahead_of_stop(
    keyspaces: &BTreeMap<KeyspaceId, RecoveredKeyspace>,
    stopped: FileNumber,
    next: SeqNo,
) -> Option<(&RecoveredKeyspace, SeqNo)> {
    keyspaces
        .values()
        .filter(|k| k.log_number > stopped)
        .find_map(|k| {
            let newest = k.files.values().map(|f| f.largest_seqno).max()?;
            (newest >= next).then_some((k, newest))
        })
}

/// The error refusing the open [`ahead_of_stop`] found a keyspace for:
/// keyspace `name`, whose files hold sequence number `newest`, is ahead of
/// the damage at `offset` in `log`, after which writes are numbered `next`
/// or more. Only salvage (`salvaged`) has changed anything by then.
pub(crate) fn ahead_of_stop_error(
    log: &Path,
    offset: u64,
    name: &str,
    newest: SeqNo,
    next: SeqNo,
    salvaged: bool,
) -> Error {
    let changed = if salvaged {
        "The logs were not changed (salvage may have set corrupt tables aside in lost/)"
    } else {
        "Nothing was changed"
    };
    Error::corruption(
        log,
        offset,
        format!(
            "point-in-time recovery stops at damage in this write-ahead log, but keyspace \
             `{name}` has flushed writes from after that point (its files hold sequence number \
             {}; the writes after the damage are numbered {} or more): it would keep them while \
             the other keyspaces lose theirs, and batches written across keyspaces would come \
             back split. {changed}. To open, recover past the damage instead (`--wal-recovery \
             skip-damaged`, WalRecoveryMode::SkipDamagedRecords)",
            newest.get(),
            next.get()
        ),
    )
}

/// Whether `data`, a log with not one valid record, is log `log` cut while
/// its header was being written: a prefix of that header, or zeros.
fn is_torn_header(data: &[u8], expect_id: Option<&DbId>, log: FileNumber) -> bool {
    let expected =
        crate::log::first_record_bytes(&wal_header(expect_id.unwrap_or(&[0; DB_ID_LEN]), log));
    expected.starts_with(data) || data.iter().all(|&b| b == 0)
}

/// Whether every log of `logs` holds no write: nothing but its header
/// (whole or torn) and then zeros.
fn later_logs_hold_no_write(
    vfs: &dyn Vfs,
    dir: &Path,
    logs: &[FileNumber],
    expect_id: Option<&DbId>,
) -> Result<bool> {
    for &log in logs {
        let path = filename::log_path(dir, log);
        let mut reader = LogReader::open(vfs, &path, TailPolicy::StopAtDamage)?;
        let mut header_seen = false;
        while let Some(rec) = reader.next_record()? {
            if header_seen || parse_wal_header(&rec).is_none() {
                return Ok(false);
            }
            header_seen = true;
        }
        let empty = match reader.dropped() {
            None => true,
            Some(d) => {
                !header_seen && d.is_tail() && is_torn_header(reader.contents(), expect_id, log)
            }
        };
        if !empty {
            return Ok(false);
        }
    }
    Ok(true)
}

fn log_damage_error(
    lpath: &Path,
    d: &crate::log::Dropped,
    last_written: bool,
    mode: WalRecoveryMode,
) -> Error {
    let why = if d.valid_records_after > 0 {
        format!(
            "{} valid records follow it, so this is damage, not a torn tail",
            d.valid_records_after
        )
    } else if !last_written {
        "it is not the newest log, whose tail alone a crash can tear (a later log holds writes)"
            .to_string()
    } else {
        format!("recovery mode {mode:?} accepts no damage")
    };
    Error::corruption(
        lpath,
        d.offset,
        format!(
            "write-ahead log damaged ({}); {why}. Nothing was changed. To open anyway, choose a \
             WAL recovery mode (Options::wal_recovery, `--wal-recovery point-in-time` or \
             `skip-damaged`): the log is then kept in lost/ and what was dropped is reported",
            d.reason
        ),
    )
}
