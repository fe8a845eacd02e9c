//! Recovery: what opening a database may trust, what it must refuse, and
//! what it may remove.
//!
//! The rule is that recovery never destroys data it cannot explain:
//! - A directory without `CURRENT` is a new database only if it holds none
//!   of the engine's files (`engine_files`).
//! - Damage in a log is a torn tail only when it is in the last
//!   write-ahead log written to (the newest, or one followed only by logs
//!   holding nothing but their header: an open that crashed before its
//!   manifest) and no valid record follows it; anything else is
//!   corruption unless the operator chose a [`WalRecoveryMode`] that
//!   recovers past it, and then the log is moved to `lost/`, not deleted.
//!   A log that must stay after recovery dropped part of it (a keyspace
//!   waiting for its options replayed from it) is rewritten to what was
//!   applied (`repair_kept_log`), so later opens agree with this one.
//! - A manifest whose last record is cut is accepted only while every
//!   write-ahead log the surviving edits still need is on disk: the engine
//!   deletes a log only after the edit that retires it is synced, so a
//!   missing one proves the cut edit was applied (`check_manifest_tail`).
//! - Cleanup removes a file only when it can prove the file is its own: its
//!   number lies below the numbers the manifest recorded as allocated
//!   (file numbers are reserved in the manifest before they are used), and
//!   what the file says of its owner (the write-ahead log header, the
//!   table's owner property, the manifest's id) is this database or
//!   nothing. Everything else is left in place and reported
//!   (`Disposition`, `decide`).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::ids::{FileNumber, KeyspaceId, Level};
use crate::key::SeqNo;
use crate::log::{LogReader, TailPolicy};
use crate::manifest::{DB_ID_LEN, KeyspaceIdentity, MANIFEST_FORMAT_VERSION, NewFile, VersionEdit};
use crate::vfs::Vfs;

/// A database's identity, chosen when it is created.
pub type DbId = [u8; DB_ID_LEN];

/// Longest `CURRENT` accepted (a manifest name and a newline).
pub const MAX_CURRENT_BYTES: u64 = 4096;

/// How many file numbers one manifest record reserves. Every number the
/// engine uses was recorded as allocated before the file was created, so a
/// crash never leaves a file whose number the manifest does not cover.
pub const FILE_NUMBER_RESERVATION: u64 = 1024;

/// A fresh, random database id.
pub(crate) fn new_db_id() -> DbId {
    use std::hash::{BuildHasher, RandomState};
    // RandomState is seeded from the operating system's random source; the
    // clock and process id separate ids made from the same seed.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let pid = std::process::id();
    let a = RandomState::new().hash_one((nanos, pid));
    let b = RandomState::new().hash_one((pid, a, nanos));
    let mut id = [0u8; DB_ID_LEN];
    id[..8].copy_from_slice(&a.to_le_bytes());
    id[8..].copy_from_slice(&b.to_le_bytes());
    id
}

/// The id as 32 hex digits.
pub fn db_id_hex(id: &DbId) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// Magic bytes opening the header record of every write-ahead log. Read as
/// a batch's sequence number it is far above the largest one, so a header
/// can never be mistaken for a batch.
pub const WAL_HEADER_MAGIC: [u8; 8] = *b"STRATAWL";
/// Bytes of the header record: magic, database id, log number (u64 LE).
pub const WAL_HEADER_LEN: usize = 8 + DB_ID_LEN + 8;

/// The first record of write-ahead log `number` of database `id`.
pub fn wal_header(id: &DbId, number: FileNumber) -> Vec<u8> {
    let mut h = Vec::with_capacity(WAL_HEADER_LEN);
    h.extend_from_slice(&WAL_HEADER_MAGIC);
    h.extend_from_slice(id);
    h.extend_from_slice(&number.get().to_le_bytes());
    h
}

/// The database id and log number of a header record, if it is one.
pub fn parse_wal_header(rec: &[u8]) -> Option<(DbId, FileNumber)> {
    if rec.len() != WAL_HEADER_LEN || rec[..8] != WAL_HEADER_MAGIC {
        return None;
    }
    let id: DbId = rec[8..8 + DB_ID_LEN].try_into().ok()?;
    let n = u64::from_le_bytes(rec[8 + DB_ID_LEN..].try_into().ok()?);
    Some((id, FileNumber(n)))
}

/// What recovery does with damage in a write-ahead log (after RocksDB's WAL
/// recovery modes). Whatever the mode, a log whose records were not all
/// applied is moved to `lost/` in the database directory, never deleted,
/// and the damage is listed in [`RecoveryReport::wal_damage`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WalRecoveryMode {
    /// Any damage, even a torn tail, refuses the open.
    AbsoluteConsistency,
    /// The default: an incomplete last record of the newest log, with
    /// nothing valid after it (what a crash in the middle of an append
    /// leaves), is dropped and reported; any other damage refuses the open
    /// with the file, the offset and how many records follow.
    #[default]
    TolerateTornTail,
    /// Recover to the last consistent point: stop at the first damage and
    /// apply nothing after it, in this log or any later one. A database in
    /// which a keyspace has flushed writes from after that point is
    /// refused with [`crate::Error::Corruption`], changing nothing: it
    /// would keep them while the other keyspaces lose theirs.
    PointInTime,
    /// Skip damaged records and apply every valid record after them. The
    /// state recovered may then lack writes from the middle of the log.
    SkipDamagedRecords,
}

impl std::str::FromStr for WalRecoveryMode {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "absolute" | "absolute-consistency" => Ok(Self::AbsoluteConsistency),
            "torn-tail" | "tolerate-torn-tail" => Ok(Self::TolerateTornTail),
            "point-in-time" => Ok(Self::PointInTime),
            "skip" | "skip-damaged" => Ok(Self::SkipDamagedRecords),
            other => Err(format!(
                "unknown WAL recovery mode {other:?}: expected absolute, torn-tail, \
                 point-in-time or skip-damaged"
            )),
        }
    }
}

/// What recovery found and did.
#[derive(Clone, Debug, Default)]
pub struct RecoveryReport {
    /// Write-ahead logs replayed.
    pub logs_replayed: usize,
    /// Entries replayed into memtables.
    pub entries_replayed: u64,
    /// The torn tail dropped from the newest log: (file, offset, bytes,
    /// reason).
    pub wal_tail_dropped: Option<(PathBuf, u64, u64, String)>,
    /// Damage that was not a torn tail, recovered past by the chosen
    /// [`WalRecoveryMode`].
    pub wal_damage: Vec<WalDamage>,
    /// Logs not fully applied, moved from the database directory to
    /// `lost/`: (from, to).
    pub logs_set_aside: Vec<(PathBuf, PathBuf)>,
    /// The cut last record of the manifest that was dropped: (file, offset,
    /// bytes, reason).
    pub manifest_tail_dropped: Option<(PathBuf, u64, u64, String)>,
    /// Files removed because the database wrote them and no longer needs
    /// them.
    pub obsolete_files_removed: usize,
    /// Files that look like the engine's but that it cannot prove it wrote
    /// (or that another database wrote), left where they are, with why.
    pub left_in_place: Vec<(PathBuf, String)>,
    /// Tables set aside as corrupt (only in salvage mode).
    pub lost_tables: Vec<LostTable>,
    /// Salvage wrote a missing `CURRENT` naming this manifest.
    pub current_rebuilt: Option<String>,
}

impl RecoveryReport {
    /// True when recovery dropped, skipped or set aside anything that held
    /// (or may have held) acknowledged data.
    pub fn lost_anything(&self) -> bool {
        !self.wal_damage.is_empty()
            || !self.logs_set_aside.is_empty()
            || !self.lost_tables.is_empty()
    }

    /// Whether recovery dropped, skipped, set aside or rebuilt anything
    /// (what [`RecoveryReport::render`] then has to say).
    pub fn changed_anything(&self) -> bool {
        self.lost_anything()
            || self.wal_tail_dropped.is_some()
            || self.manifest_tail_dropped.is_some()
            || self.current_rebuilt.is_some()
    }

    /// What recovery dropped, skipped, set aside, rebuilt or left in place,
    /// one line each (empty when it did none of that).
    pub fn render(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        if let Some(name) = &self.current_rebuilt {
            let _ = writeln!(s, "CURRENT was missing; salvage rebuilt it naming {name}");
        }
        if let Some((f, off, bytes, why)) = &self.manifest_tail_dropped {
            let _ = writeln!(
                s,
                "dropped the cut last record of {} ({bytes} bytes at offset {off}: {why})",
                f.display()
            );
        }
        if let Some((f, off, bytes, why)) = &self.wal_tail_dropped {
            let _ = writeln!(
                s,
                "dropped the torn tail of {} ({bytes} bytes at offset {off}: {why})",
                f.display()
            );
        }
        for d in &self.wal_damage {
            let _ = writeln!(
                s,
                "{} damage in {} at offset {} ({}): {} bytes, {} valid records after it",
                d.action,
                d.file.display(),
                d.offset,
                d.reason,
                d.bytes,
                d.records_after
            );
        }
        for (from, to) in &self.logs_set_aside {
            let _ = writeln!(
                s,
                "log {} was not fully applied; kept as {}",
                from.display(),
                to.display()
            );
        }
        for t in &self.lost_tables {
            let _ = writeln!(
                s,
                "table {} (keyspace {}, level {}, {} entries) set aside: {}",
                t.file.display(),
                t.keyspace,
                t.level,
                t.entries,
                t.error
            );
        }
        for (p, why) in &self.left_in_place {
            let _ = writeln!(
                s,
                "left in place, not the database's: {}: {why}",
                p.display()
            );
        }
        s
    }
}

/// Keeps what recovery dropped or set aside on record: `lost/recovery-N.txt`
/// (N: the new manifest's number; `recovery-N-2.txt` and on when an open
/// that failed after writing its report left that name taken), written
/// only when there is something to say. The report is also returned by
/// `Db::recovery_report`.
pub(crate) fn log_report(
    vfs: &dyn Vfs,
    dir: &Path,
    manifest_number: FileNumber,
    r: &RecoveryReport,
) -> Result<()> {
    if !r.changed_anything() {
        return Ok(());
    }
    let lost = dir.join("lost");
    vfs.create_dir_all(&lost)?;
    // An open that wrote its report and then failed leaves it behind, and
    // the next open finds the same files and takes the same number: its
    // report goes beside the first, which stays as the record of that try.
    let path = (1..)
        .map(|n| match n {
            1 => lost.join(format!("recovery-{manifest_number:06}.txt")),
            n => lost.join(format!("recovery-{manifest_number:06}-{n}.txt")),
        })
        .find(|p| !vfs.exists(p))
        .unwrap_or_else(|| lost.join("recovery.txt"));
    let mut f = vfs.create(&path)?;
    f.append(r.render().as_bytes())?;
    f.sync()?;
    vfs.sync_dir(&lost)
}

/// A damaged stretch of a write-ahead log that recovery went past.
#[derive(Clone, Debug)]
pub struct WalDamage {
    /// The log.
    pub file: PathBuf,
    /// Where the damage starts (the end of the last good record).
    pub offset: u64,
    /// Bytes skipped (up to the next valid record, or to the end when the
    /// replay stopped there).
    pub bytes: u64,
    /// What was wrong with it.
    pub reason: String,
    /// Valid records that followed the damage in the same log.
    pub records_after: usize,
    /// What the mode did: "skipped" or "stopped".
    pub action: &'static str,
}

/// A corrupt table that salvage mode left out of the database.
#[derive(Clone, Debug)]
pub struct LostTable {
    /// The keyspace the table belonged to.
    pub keyspace: KeyspaceId,
    /// Its level.
    pub level: Level,
    /// Where the file was, and where it was moved (under `lost/`).
    pub file: PathBuf,
    /// Where it was moved (under `lost/`), if the move succeeded.
    pub moved_to: Option<PathBuf>,
    /// The user-key range whose data may be lost or stale: keys in it may
    /// be missing, or show an older value (or a deleted key its old value)
    /// from a deeper level.
    pub smallest_key: Vec<u8>,
    /// The end of that range.
    pub largest_key: Vec<u8>,
    /// Entries the table held, by the manifest.
    pub entries: u64,
    /// The damage found in it.
    pub error: String,
}

/// Moves `file` into `lost/` beside it (never deletes it); the new path.
pub(crate) fn set_aside(vfs: &dyn Vfs, dir: &Path, file: &Path) -> Result<PathBuf> {
    let lost = dir.join("lost");
    vfs.create_dir_all(&lost)?;
    let name = file
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    let mut to = lost.join(&name);
    // Never replace what an earlier salvage put there.
    let mut i = 1;
    while vfs.exists(&to) {
        to = lost.join(format!("{}.{i}", name.to_string_lossy()));
        i += 1;
    }
    vfs.rename(file, &to)?;
    vfs.sync_dir(&lost)?;
    vfs.sync_dir(dir)?;
    Ok(to)
}

/// Names in a directory listing that the engine would write (everything
/// `filename::parse` recognises except the lock file, which opening itself
/// creates).
pub(crate) fn engine_files(names: &[String]) -> Vec<&str> {
    names
        .iter()
        .map(String::as_str)
        .filter(|n| !matches!(filename::parse(n), None | Some(FileKind::Lock)))
        .collect()
}

/// Checks the options a keyspace is opened with against what it was
/// created with. A merge operator, once recorded, must be given again under
/// the same name: merging with another, or with none, would read or
/// compact its operands wrongly. A layout may change (compaction rewrites
/// each level into the new one as it goes).
pub(crate) fn check_identity(
    name: &str,
    recorded: Option<&KeyspaceIdentity>,
    given: &KeyspaceIdentity,
) -> Result<()> {
    let Some(recorded) = recorded else {
        return Ok(());
    };
    if !recorded.merge_operator.is_empty() && recorded.merge_operator != given.merge_operator {
        let given = if given.merge_operator.is_empty() {
            "none".to_string()
        } else {
            format!("{:?}", given.merge_operator)
        };
        return Err(Error::InvalidArgument(format!(
            "keyspace {name:?} was created with merge operator {:?} and is opened with {given}: \
             give it the same operator (KeyspaceOptions::merge_operator)",
            recorded.merge_operator
        )));
    }
    Ok(())
}

/// The error for a directory that has no `CURRENT` but holds engine files.
pub(crate) fn missing_current(dir: &Path, found: &[&str]) -> Error {
    let shown: Vec<&str> = found.iter().copied().take(5).collect();
    let more = if found.len() > shown.len() {
        format!(" and {} more", found.len() - shown.len())
    } else {
        String::new()
    };
    Error::corruption(
        filename::current_path(dir),
        0,
        format!(
            "CURRENT is missing, but the directory holds {} of the engine's files ({}{more}): \
             this is not a new database, and opening it as one would lose them; nothing was \
             changed. Salvage (Options::skip_corrupt_tables, `strata --salvage check`) rebuilds \
             CURRENT from the newest readable manifest",
            found.len(),
            shown.join(", ")
        ),
    )
}

/// Whether the engine files `found` (in a directory without `CURRENT`) hold
/// nothing an open could lose: only logs with no record after their
/// header, manifests that name no table and no keyspace but the default,
/// and `CURRENT`'s temporary replacement: what a database creation that
/// failed or was killed before `CURRENT` existed leaves. Anything unreadable, damaged or of
/// another kind counts as something.
pub(crate) fn holds_nothing(vfs: &dyn Vfs, dir: &Path, found: &[&str]) -> bool {
    found.iter().all(|name| {
        let path = dir.join(name);
        match filename::parse(name) {
            Some(FileKind::Log(_)) => {
                let Ok(mut r) = LogReader::open(vfs, &path, TailPolicy::Strict) else {
                    return false;
                };
                match r.next_record() {
                    Ok(None) => true,
                    Ok(Some(header)) => {
                        parse_wal_header(&header).is_some() && matches!(r.next_record(), Ok(None))
                    }
                    Err(_) => false,
                }
            }
            Some(FileKind::Manifest(_)) => {
                let mut state = ManifestState::default();
                replay_manifest(vfs, &path, &mut state).is_ok()
                    && state
                        .keyspaces
                        .iter()
                        .all(|(&id, k)| id == crate::db::DEFAULT_KEYSPACE_ID && k.files.is_empty())
            }
            // CURRENT's replacement being written: it names a manifest,
            // and the manifest is judged above.
            Some(FileKind::Temp) => name.starts_with("CURRENT."),
            _ => false,
        }
    })
}

/// Reads `CURRENT`: the name of the live manifest.
pub(crate) fn read_current(vfs: &dyn Vfs, dir: &Path) -> Result<String> {
    let current = filename::current_path(dir);
    // CURRENT holds one short line; a huge one is damage, not something to
    // read into memory.
    let f = vfs.open(&current)?;
    let size = f.len();
    if size > MAX_CURRENT_BYTES {
        return Err(Error::corruption(
            &current,
            0,
            format!("CURRENT is {size} bytes; it should hold one manifest name"),
        ));
    }
    let mut name = vec![0u8; size as usize];
    f.read_exact_at(&mut name, 0)?;
    std::str::from_utf8(&name)
        .ok()
        .map(str::trim_end)
        .filter(|n| matches!(filename::parse(n), Some(FileKind::Manifest(_))))
        .map(str::to_string)
        .ok_or_else(|| Error::corruption(&current, 0, "CURRENT does not name a manifest"))
}

/// Salvage for a missing `CURRENT`: the newest manifest whose every record
/// reads cleanly, or `None`.
pub(crate) fn newest_readable_manifest(vfs: &dyn Vfs, dir: &Path) -> Result<Option<String>> {
    let mut manifests: Vec<FileNumber> = vfs
        .list(dir)?
        .iter()
        .filter_map(|n| match filename::parse(n) {
            Some(FileKind::Manifest(k)) => Some(k),
            _ => None,
        })
        .collect();
    manifests.sort_unstable_by(|a, b| b.cmp(a));
    for k in manifests {
        let name = filename::manifest_name(k);
        let mut state = ManifestState::default();
        if replay_manifest(vfs, &dir.join(&name), &mut state).is_ok() {
            return Ok(Some(name));
        }
    }
    Ok(None)
}

mod cleanup;
mod log_repair;
mod manifest_replay;
mod wal_replay;

pub(crate) use cleanup::*;
pub(crate) use log_repair::*;
pub(crate) use manifest_replay::*;
pub(crate) use wal_replay::*;

#[cfg(test)]
mod tests {
    use super::*;

    fn facts<'a>(
        live: &'a HashSet<FileNumber>,
        applied: &'a HashSet<FileNumber>,
        kept: &'a HashSet<FileNumber>,
    ) -> CleanupFacts<'a> {
        CleanupFacts {
            allocated_below: FileNumber(100),
            wal_number: FileNumber(120),
            manifest_number: FileNumber(121),
            live_tables: live,
            applied_logs: applied,
            kept_logs: kept,
        }
    }

    #[test]
    fn wal_header_round_trips_and_is_never_a_batch() {
        let id = new_db_id();
        let h = wal_header(&id, FileNumber(77));
        assert_eq!(parse_wal_header(&h), Some((id, FileNumber(77))));
        assert_eq!(parse_wal_header(&h[1..]), None);
        let seqno = u64::from_le_bytes(WAL_HEADER_MAGIC);
        assert!(seqno > crate::key::MAX_SEQNO.get());
        assert_ne!(new_db_id(), new_db_id());
    }

    #[test]
    fn cleanup_removes_only_files_it_can_prove_are_its_own() {
        let live: HashSet<FileNumber> = [FileNumber(5)].into();
        let applied: HashSet<FileNumber> = [FileNumber(7)].into();
        let kept: HashSet<FileNumber> = [FileNumber(8)].into();
        let f = facts(&live, &applied, &kept);
        let never = &mut || -> Owner { panic!("owner asked needlessly") };
        assert_eq!(
            decide(FileKind::Table(FileNumber(5)), &f, never),
            Disposition::Keep
        );
        assert_eq!(
            decide(FileKind::Log(FileNumber(120)), &f, never),
            Disposition::Keep
        );
        assert_eq!(
            decide(FileKind::Manifest(FileNumber(121)), &f, never),
            Disposition::Keep
        );
        assert_eq!(
            decide(FileKind::Log(FileNumber(7)), &f, never),
            Disposition::Remove
        );
        assert_eq!(
            decide(FileKind::Log(FileNumber(8)), &f, never),
            Disposition::Keep
        );
        let ours = &mut || Owner::Ours;
        let unmarked = &mut || Owner::Unmarked;
        let other = &mut || Owner::Other("another database".into());
        // An unmarked file whose number the manifest never allocated is not
        // provably ours; one that names this database is.
        assert!(matches!(
            decide(FileKind::Table(FileNumber(100)), &f, unmarked),
            Disposition::Leave(_)
        ));
        assert!(matches!(
            decide(FileKind::Log(FileNumber(500)), &f, unmarked),
            Disposition::Leave(_)
        ));
        assert_eq!(
            decide(FileKind::Table(FileNumber(100)), &f, ours),
            Disposition::Remove
        );
        // Allocated numbers: what the file says decides.
        assert_eq!(
            decide(FileKind::Table(FileNumber(6)), &f, ours),
            Disposition::Remove
        );
        assert_eq!(
            decide(FileKind::Table(FileNumber(6)), &f, unmarked),
            Disposition::Remove
        );
        assert!(matches!(
            decide(FileKind::Table(FileNumber(6)), &f, other),
            Disposition::Leave(_)
        ));
        assert!(matches!(
            decide(FileKind::Manifest(FileNumber(3)), &f, other),
            Disposition::Leave(_)
        ));
        assert!(matches!(
            decide(FileKind::Temp, &f, unmarked),
            Disposition::Leave(_)
        ));
        assert_eq!(decide(FileKind::Temp, &f, ours), Disposition::Remove);
    }

    #[test]
    fn recovery_modes_parse_from_their_flag_names() {
        for (s, m) in [
            ("absolute", WalRecoveryMode::AbsoluteConsistency),
            ("torn-tail", WalRecoveryMode::TolerateTornTail),
            ("point-in-time", WalRecoveryMode::PointInTime),
            ("skip-damaged", WalRecoveryMode::SkipDamagedRecords),
        ] {
            assert_eq!(s.parse::<WalRecoveryMode>(), Ok(m));
        }
        assert!("sometimes".parse::<WalRecoveryMode>().is_err());
    }

    #[test]
    fn manifest_tail_is_damage_when_a_needed_log_is_gone() {
        let mut state = ManifestState::default();
        state.keyspaces.insert(
            KeyspaceId::DEFAULT,
            RecoveredKeyspace {
                name: "default".into(),
                log_number: FileNumber(9),
                files: BTreeMap::new(),
                identity: None,
            },
        );
        let m = Path::new("/db/MANIFEST-000010");
        assert!(
            check_manifest_tail(m, &state, &[]).is_ok(),
            "no cut, no judgement"
        );
        state.tail_dropped = Some((100, 20, "truncated".into()));
        assert!(check_manifest_tail(m, &state, &[FileNumber(9), FileNumber(12)]).is_ok());
        let e = check_manifest_tail(m, &state, &[FileNumber(12)]).expect_err("log 9 is gone");
        assert!(e.to_string().contains("000009.log"), "{e}");
    }
}
