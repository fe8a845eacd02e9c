//! Version edits and the manifest that logs them.
//!
//! The manifest is a record log (see [`crate::log`], `docs/format/log.md`)
//! whose records are encoded [`VersionEdit`]s. The first record of every
//! manifest carries the format version and a full snapshot of the state;
//! later records are deltas. `CURRENT` names the live manifest.
//!
//! Each edit is a sequence of tagged fields:
//! ```text
//! edit  := field*
//! field := tag: varint32 | payload
//!   1 FORMAT_VERSION  version: varint32
//!   2 NEXT_FILE       number: varint64
//!   3 LAST_SEQNO      seqno: varint64
//!   4 ADD_KEYSPACE    id: varint32 | name: len-prefixed bytes
//!   5 DROP_KEYSPACE   id: varint32
//!   6 LOG_NUMBER      keyspace: varint32 | log number: varint64
//!   7 NEW_FILE        keyspace: varint32 | level: varint32 | group: varint32
//!                     | number: varint64 | size: varint64
//!                     | smallest: len-prefixed | largest: len-prefixed
//!                     | smallest seqno: varint64 | largest seqno: varint64
//!                     | entries: varint64 | deletions: varint64
//!   8 DELETED_FILE    keyspace: varint32 | level: varint32 | number: varint64
//!   9 DB_ID           id: len-prefixed bytes (16)          (format 2 on)
//!  10 KEYSPACE_IDENTITY keyspace: varint32 | merge operator: len-prefixed
//!                     | layout: len-prefixed                (format 2 on)
//!  11 NEW_FILE_IN_FORMAT  the fields of NEW_FILE | format: len-prefixed
//!                     (a table in a format other than the core's own)
//!  12 NEXT_KEYSPACE   id: varint32 (the next keyspace id to hand out)
//! ```
//!
//! `NEXT_KEYSPACE` is written only once a keyspace has been dropped (in the
//! drop's edit and in later snapshots), so that a dropped keyspace's id is
//! never handed out again: its entries may still sit in a write-ahead log
//! that another keyspace needs, and replay skips them only while no
//! keyspace has that id.
//!
//! `NEW_FILE_IN_FORMAT` is written only for files of a format a layout
//! plugged in, so the manifest of a plain key-value database is unchanged;
//! a build that does not know the tag refuses the manifest rather than
//! read such a file as the core's format.
//!
//! Format 2 adds `DB_ID`: the database's identity, chosen at creation and
//! carried by the first record of every manifest, the header of every
//! write-ahead log and the properties of every table, so that recovery can
//! tell the engine's own files from files that only look like them. A
//! format-1 manifest has none; opening it assigns one.
//!
//! File and log numbers are at most [`MAX_FILE_NUMBER`], sequence numbers
//! at most [`MAX_SEQNO`], keyspace ids at most [`MAX_KEYSPACE_ID`], levels
//! (a varint32 on disk) at most 255; an edit holding a larger one is
//! corrupt. (Recovery refuses a file at level 64 or deeper too.)

use crate::coding::{
    get_length_prefixed, get_varint32, get_varint64, put_length_prefixed, put_varint32,
    put_varint64,
};
use crate::filename::MAX_FILE_NUMBER;
use crate::ids::{FileNumber, KeyspaceId, Level};
use crate::key::{MAX_SEQNO, SeqNo};
use crate::sst::TableSummary;
use crate::table_format::{GroupId, SST_FORMAT};

/// The largest keyspace id. Leaves room so that the next id, counted on
/// from one read from disk, cannot overflow.
pub const MAX_KEYSPACE_ID: u32 = 1 << 30;

fn file_number(s: &mut &[u8], what: &str) -> Result<FileNumber, String> {
    let n = get_varint64(s).ok_or_else(|| format!("bad {what}"))?;
    if n > MAX_FILE_NUMBER.get() {
        return Err(format!(
            "{what} {n} is above the largest, {}",
            MAX_FILE_NUMBER.get()
        ));
    }
    Ok(FileNumber(n))
}

fn seqno(s: &mut &[u8], what: &str) -> Result<SeqNo, String> {
    let n = get_varint64(s).ok_or_else(|| format!("bad {what}"))?;
    if n > MAX_SEQNO.get() {
        return Err(format!("{what} {n} is above the largest, {MAX_SEQNO}"));
    }
    Ok(SeqNo(n))
}

fn keyspace_id(s: &mut &[u8]) -> Result<KeyspaceId, String> {
    let id = get_varint32(s).ok_or("bad keyspace id")?;
    if id > MAX_KEYSPACE_ID {
        return Err(format!(
            "keyspace id {id} is above the largest, {MAX_KEYSPACE_ID}"
        ));
    }
    Ok(KeyspaceId(id))
}

fn level(s: &mut &[u8]) -> Result<Level, String> {
    let n = get_varint32(s).ok_or("bad level")?;
    let level = u8::try_from(n).map_err(|_| format!("level {n} is above the largest, 255"))?;
    Ok(Level(level))
}

/// The manifest format version this build writes (it reads 1 and 2).
pub const MANIFEST_FORMAT_VERSION: u32 = 2;

const TAG_FORMAT_VERSION: u32 = 1;
const TAG_NEXT_FILE: u32 = 2;
const TAG_LAST_SEQNO: u32 = 3;
const TAG_ADD_KEYSPACE: u32 = 4;
const TAG_DROP_KEYSPACE: u32 = 5;
const TAG_LOG_NUMBER: u32 = 6;
const TAG_NEW_FILE: u32 = 7;
const TAG_DELETED_FILE: u32 = 8;
const TAG_DB_ID: u32 = 9;
const TAG_KEYSPACE_IDENTITY: u32 = 10;
const TAG_NEW_FILE_IN_FORMAT: u32 = 11;
const TAG_NEXT_KEYSPACE: u32 = 12;

/// What a keyspace was created with that shapes its files: the merge
/// operator's name (empty for none) and the layout's descriptor. Recorded
/// so that a reopen that has not supplied them does not rewrite the
/// keyspace's files with the wrong ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyspaceIdentity {
    pub merge_operator: String,
    pub layout: String,
}

impl KeyspaceIdentity {
    /// Whether background work on the keyspace needs what only the
    /// application can supply (an operator, a layout other than the
    /// default).
    pub fn needs_registration(&self) -> bool {
        !self.merge_operator.is_empty() || (!self.layout.is_empty() && self.layout != "uniform")
    }
}

/// Bytes of a database id.
pub const DB_ID_LEN: usize = 16;

/// What the manifest records of a table file wherever it is: its group,
/// number, size, key and sequence ranges, counts and format. A live file's
/// handle ([`crate::version::FileMeta`]) carries the same record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableFile {
    /// Column group ([`GroupId::WHOLE`] for plain key-value keyspaces).
    pub group: GroupId,
    pub number: FileNumber,
    pub size: u64,
    /// Smallest and largest internal keys.
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    pub smallest_seqno: SeqNo,
    pub largest_seqno: SeqNo,
    pub num_entries: u64,
    pub num_deletions: u64,
    /// The table format's name; empty for the core's own format (written
    /// as `NEW_FILE`; any other as `NEW_FILE_IN_FORMAT`).
    pub format: String,
}

impl TableFile {
    /// The record of table `number`, just written in `format` for `group`.
    pub fn from_summary(s: TableSummary, number: FileNumber, group: GroupId, format: &str) -> Self {
        TableFile {
            group,
            number,
            size: s.file_size,
            smallest: s.smallest,
            largest: s.largest,
            smallest_seqno: s.smallest_seqno,
            largest_seqno: s.largest_seqno,
            num_entries: s.num_entries,
            num_deletions: s.num_deletions,
            format: if format == SST_FORMAT {
                String::new()
            } else {
                format.to_string()
            },
        }
    }
}

/// A table file added to a keyspace's level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewFile {
    pub keyspace: KeyspaceId,
    pub level: Level,
    pub file: TableFile,
}

impl std::ops::Deref for NewFile {
    type Target = TableFile;
    fn deref(&self) -> &TableFile {
        &self.file
    }
}

impl std::ops::DerefMut for NewFile {
    fn deref_mut(&mut self) -> &mut TableFile {
        &mut self.file
    }
}

/// A change to the set of live files and counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionEdit {
    pub format_version: Option<u32>,
    pub next_file_number: Option<FileNumber>,
    pub last_seqno: Option<SeqNo>,
    pub added_keyspaces: Vec<(KeyspaceId, String)>,
    pub dropped_keyspaces: Vec<KeyspaceId>,
    /// Per keyspace: the oldest write-ahead log that may still hold its
    /// unflushed entries.
    pub log_numbers: Vec<(KeyspaceId, FileNumber)>,
    pub new_files: Vec<NewFile>,
    /// (keyspace, level, file number)
    pub deleted_files: Vec<(KeyspaceId, Level, FileNumber)>,
    /// The database's identity (first record only).
    pub db_id: Option<[u8; DB_ID_LEN]>,
    /// Keyspaces' identities (set when a keyspace is created or registered
    /// with a different layout, and in every snapshot).
    pub keyspace_identities: Vec<(KeyspaceId, KeyspaceIdentity)>,
    /// The next keyspace id to hand out, when a dropped keyspace holds the
    /// highest id used so far.
    pub next_keyspace_id: Option<KeyspaceId>,
}

impl VersionEdit {
    /// Encodes the edit.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(v) = self.format_version {
            put_varint32(&mut out, TAG_FORMAT_VERSION);
            put_varint32(&mut out, v);
        }
        if let Some(id) = &self.db_id {
            put_varint32(&mut out, TAG_DB_ID);
            put_length_prefixed(&mut out, id);
        }
        if let Some(n) = self.next_file_number {
            put_varint32(&mut out, TAG_NEXT_FILE);
            put_varint64(&mut out, n.get());
        }
        if let Some(s) = self.last_seqno {
            put_varint32(&mut out, TAG_LAST_SEQNO);
            put_varint64(&mut out, s.get());
        }
        for (id, name) in &self.added_keyspaces {
            put_varint32(&mut out, TAG_ADD_KEYSPACE);
            put_varint32(&mut out, id.get());
            put_length_prefixed(&mut out, name.as_bytes());
        }
        for (id, ident) in &self.keyspace_identities {
            put_varint32(&mut out, TAG_KEYSPACE_IDENTITY);
            put_varint32(&mut out, id.get());
            put_length_prefixed(&mut out, ident.merge_operator.as_bytes());
            put_length_prefixed(&mut out, ident.layout.as_bytes());
        }
        for id in &self.dropped_keyspaces {
            put_varint32(&mut out, TAG_DROP_KEYSPACE);
            put_varint32(&mut out, id.get());
        }
        if let Some(id) = self.next_keyspace_id {
            put_varint32(&mut out, TAG_NEXT_KEYSPACE);
            put_varint32(&mut out, id.get());
        }
        for (ks, log) in &self.log_numbers {
            put_varint32(&mut out, TAG_LOG_NUMBER);
            put_varint32(&mut out, ks.get());
            put_varint64(&mut out, log.get());
        }
        for (ks, level, number) in &self.deleted_files {
            put_varint32(&mut out, TAG_DELETED_FILE);
            put_varint32(&mut out, ks.get());
            put_varint32(&mut out, u32::from(level.get()));
            put_varint64(&mut out, number.get());
        }
        for f in &self.new_files {
            let tag = if f.format.is_empty() {
                TAG_NEW_FILE
            } else {
                TAG_NEW_FILE_IN_FORMAT
            };
            put_varint32(&mut out, tag);
            put_varint32(&mut out, f.keyspace.get());
            put_varint32(&mut out, u32::from(f.level.get()));
            put_varint32(&mut out, f.group.0);
            put_varint64(&mut out, f.number.get());
            put_varint64(&mut out, f.size);
            put_length_prefixed(&mut out, &f.smallest);
            put_length_prefixed(&mut out, &f.largest);
            put_varint64(&mut out, f.smallest_seqno.get());
            put_varint64(&mut out, f.largest_seqno.get());
            put_varint64(&mut out, f.num_entries);
            put_varint64(&mut out, f.num_deletions);
            if tag == TAG_NEW_FILE_IN_FORMAT {
                put_length_prefixed(&mut out, f.format.as_bytes());
            }
        }
        out
    }

    /// Decodes an edit; the error names the field that is malformed.
    pub fn decode(mut src: &[u8]) -> Result<VersionEdit, String> {
        let mut e = VersionEdit::default();
        let s = &mut src;
        while !s.is_empty() {
            let tag = get_varint32(s).ok_or("bad field tag")?;
            match tag {
                TAG_FORMAT_VERSION => {
                    e.format_version = Some(get_varint32(s).ok_or("bad format version")?)
                }
                TAG_DB_ID => {
                    let id = get_length_prefixed(s).ok_or("bad database id")?;
                    let id: [u8; DB_ID_LEN] = id
                        .try_into()
                        .map_err(|_| format!("database id of {} bytes", id.len()))?;
                    e.db_id = Some(id);
                }
                TAG_NEXT_FILE => e.next_file_number = Some(file_number(s, "next file number")?),
                TAG_LAST_SEQNO => e.last_seqno = Some(seqno(s, "last seqno")?),
                TAG_ADD_KEYSPACE => {
                    let id = keyspace_id(s)?;
                    let name = get_length_prefixed(s).ok_or("bad keyspace name")?;
                    let name = String::from_utf8(name.to_vec())
                        .map_err(|_| "keyspace name is not UTF-8")?;
                    e.added_keyspaces.push((id, name));
                }
                TAG_DROP_KEYSPACE => e.dropped_keyspaces.push(keyspace_id(s)?),
                TAG_NEXT_KEYSPACE => e.next_keyspace_id = Some(keyspace_id(s)?),
                TAG_KEYSPACE_IDENTITY => {
                    let id = keyspace_id(s)?;
                    let text = |s: &mut &[u8], what: &str| {
                        get_length_prefixed(s)
                            .ok_or_else(|| format!("bad {what}"))
                            .and_then(|b| {
                                String::from_utf8(b.to_vec())
                                    .map_err(|_| format!("{what} is not UTF-8"))
                            })
                    };
                    let merge_operator = text(s, "merge operator name")?;
                    let layout = text(s, "layout descriptor")?;
                    e.keyspace_identities.push((
                        id,
                        KeyspaceIdentity {
                            merge_operator,
                            layout,
                        },
                    ));
                }
                TAG_LOG_NUMBER => {
                    let ks = keyspace_id(s)?;
                    let log = file_number(s, "log number")?;
                    e.log_numbers.push((ks, log));
                }
                TAG_DELETED_FILE => {
                    let ks = keyspace_id(s)?;
                    let level = level(s)?;
                    let number = file_number(s, "file number")?;
                    e.deleted_files.push((ks, level, number));
                }
                TAG_NEW_FILE | TAG_NEW_FILE_IN_FORMAT => {
                    let keyspace = keyspace_id(s)?;
                    let level = level(s)?;
                    let mut file = TableFile {
                        group: GroupId(get_varint32(s).ok_or("bad column group")?),
                        number: file_number(s, "file number")?,
                        size: get_varint64(s).ok_or("bad file size")?,
                        smallest: get_length_prefixed(s).ok_or("bad smallest key")?.to_vec(),
                        largest: get_length_prefixed(s).ok_or("bad largest key")?.to_vec(),
                        smallest_seqno: seqno(s, "smallest seqno")?,
                        largest_seqno: seqno(s, "largest seqno")?,
                        num_entries: get_varint64(s).ok_or("bad entry count")?,
                        num_deletions: get_varint64(s).ok_or("bad deletion count")?,
                        format: String::new(),
                    };
                    if tag == TAG_NEW_FILE_IN_FORMAT {
                        let name = get_length_prefixed(s).ok_or("bad table format name")?;
                        file.format = String::from_utf8(name.to_vec())
                            .map_err(|_| "table format name is not UTF-8")?;
                        if file.format.is_empty() || file.format == SST_FORMAT {
                            return Err("NEW_FILE_IN_FORMAT names the core's own format".into());
                        }
                    }
                    e.new_files.push(NewFile {
                        keyspace,
                        level,
                        file,
                    });
                }
                other => return Err(format!("unknown field tag {other}")),
            }
        }
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_past_their_limits_are_corrupt() {
        let field = |tag: u32, v: u64| {
            let mut b = Vec::new();
            put_varint32(&mut b, tag);
            put_varint64(&mut b, v);
            b
        };
        // At the limit: fine.
        assert!(VersionEdit::decode(&field(TAG_NEXT_FILE, MAX_FILE_NUMBER.get())).is_ok());
        assert!(VersionEdit::decode(&field(TAG_LAST_SEQNO, MAX_SEQNO.get())).is_ok());
        let e = VersionEdit::decode(&field(TAG_NEXT_FILE, u64::MAX)).expect_err("refused");
        assert!(e.contains("next file number"), "{e}");
        let e =
            VersionEdit::decode(&field(TAG_LAST_SEQNO, MAX_SEQNO.get() + 1)).expect_err("refused");
        assert!(e.contains("last seqno"), "{e}");
        let e = VersionEdit::decode(&field(TAG_DROP_KEYSPACE, u64::from(MAX_KEYSPACE_ID) + 1))
            .expect_err("refused");
        assert!(e.contains("keyspace id"), "{e}");
        let mut deleted = Vec::new();
        put_varint32(&mut deleted, TAG_DELETED_FILE);
        put_varint32(&mut deleted, 0);
        put_varint32(&mut deleted, 256);
        put_varint64(&mut deleted, 5);
        let e = VersionEdit::decode(&deleted).expect_err("refused");
        assert!(e.contains("level 256"), "{e}");
        // At the limit: fine (recovery, not decoding, refuses level 64 on).
        let mut f = sample();
        f.deleted_files[0].1 = Level(255);
        assert!(VersionEdit::decode(&f.encode()).is_ok());
        // Inside a new file too.
        let mut f = sample();
        f.new_files[0].largest_seqno = MAX_SEQNO + 1;
        assert!(VersionEdit::decode(&f.encode()).is_err());
        let mut f = sample();
        f.new_files[0].number = MAX_FILE_NUMBER + 1;
        assert!(VersionEdit::decode(&f.encode()).is_err());
    }

    fn sample() -> VersionEdit {
        VersionEdit {
            format_version: Some(MANIFEST_FORMAT_VERSION),
            next_file_number: Some(FileNumber(42)),
            last_seqno: Some(SeqNo(1 << 40)),
            added_keyspaces: vec![
                (KeyspaceId(0), "default".into()),
                (KeyspaceId(3), "idx".into()),
            ],
            dropped_keyspaces: vec![KeyspaceId(2)],
            next_keyspace_id: Some(KeyspaceId(4)),
            log_numbers: vec![(KeyspaceId(0), FileNumber(7))],
            new_files: vec![
                NewFile {
                    keyspace: KeyspaceId(3),
                    level: Level(1),
                    file: TableFile {
                        group: GroupId(0),
                        number: FileNumber(9),
                        size: 4096,
                        smallest: b"a\0\0\0\0\0\0\0\0".to_vec(),
                        largest: b"z\0\0\0\0\0\0\0\0".to_vec(),
                        smallest_seqno: SeqNo(1),
                        largest_seqno: SeqNo(99),
                        num_entries: 10,
                        num_deletions: 2,
                        format: String::new(),
                    },
                },
                NewFile {
                    keyspace: KeyspaceId(3),
                    level: Level(2),
                    file: TableFile {
                        group: GroupId(7),
                        number: FileNumber(10),
                        size: 100,
                        smallest: b"b\0\0\0\0\0\0\0\0".to_vec(),
                        largest: b"c\0\0\0\0\0\0\0\0".to_vec(),
                        smallest_seqno: SeqNo(2),
                        largest_seqno: SeqNo(3),
                        num_entries: 1,
                        num_deletions: 0,
                        format: "columns".into(),
                    },
                },
            ],
            deleted_files: vec![(KeyspaceId(0), Level(0), FileNumber(5))],
            db_id: Some(*b"0123456789abcdef"),
            keyspace_identities: vec![(
                KeyspaceId(3),
                KeyspaceIdentity {
                    merge_operator: "u64add".into(),
                    layout: "tiered-compression:hot=lz4,cold=zstd,from=2".into(),
                },
            )],
        }
    }

    #[test]
    fn levels_are_stored_as_varint32s() {
        let e = VersionEdit {
            deleted_files: vec![(KeyspaceId(3), Level(5), FileNumber(300))],
            ..Default::default()
        };
        assert_eq!(e.encode(), [TAG_DELETED_FILE as u8, 3, 5, 0xac, 0x02]);
        let mut file = sample().new_files.swap_remove(0);
        file.level = Level(200);
        let e = VersionEdit {
            new_files: vec![file],
            ..Default::default()
        };
        let bytes = e.encode();
        assert_eq!(bytes[..4], [TAG_NEW_FILE as u8, 3, 0xc8, 0x01]);
        assert_eq!(VersionEdit::decode(&bytes), Ok(e));
    }

    #[test]
    fn edit_round_trips() {
        let e = sample();
        assert_eq!(VersionEdit::decode(&e.encode()), Ok(e));
    }

    #[test]
    fn every_truncation_is_an_error_or_a_prefix_of_fields() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            // A cut may land between fields (a valid shorter edit) but must
            // never panic.
            let _ = VersionEdit::decode(&bytes[..cut]);
        }
        assert!(VersionEdit::decode(&[99]).is_err());
    }
}
