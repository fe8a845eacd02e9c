//! Reading logical records back, with the damage policy that decides what a
//! torn or corrupt record means.

use std::path::{Path, PathBuf};

use super::*;
use crate::coding::decode_fixed32;
use crate::error::{Error, Result};
use crate::vfs::Vfs;

/// How a reader treats damage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TailPolicy {
    /// Damage anywhere (including a torn or zero-filled tail) is
    /// [`Error::Corruption`].
    Strict,
    /// A torn or corrupt record ends the log: everything from the end of the
    /// last good record to the end of the file is dropped and reported via
    /// [`LogReader::dropped`] (point-in-time recovery).
    StopAtDamage,
}

/// One step of the physical-record scan.
enum Physical {
    /// Clean end of file at a record boundary.
    Eof,
    /// A valid physical record; payload is `data[start..end]`.
    Fragment {
        ty: u8,
        at: usize,
        start: usize,
        end: usize,
    },
    /// Damage found at `at`.
    Bad { at: usize, reason: String },
}

enum ReaderState {
    Reading,
    /// End of log reached (cleanly or at damage under `StopAtDamage`).
    Done,
    /// Damage under `Strict`; returned again by every later call.
    Failed(Error),
}

/// Reads logical records back from a log file.
pub struct LogReader {
    path: PathBuf,
    data: Vec<u8>,
    policy: TailPolicy,
    /// Next physical position to scan.
    pos: usize,
    /// End of the last fragment of the last record returned.
    good_end: usize,
    last_record_offset: u64,
    dropped: Option<Dropped>,
    state: ReaderState,
    /// The data ended inside a record (see [`LogReader::ran_out`]).
    ran_out: bool,
}

/// What a [`TailPolicy::StopAtDamage`] reader stopped at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dropped {
    /// End of the last good record (any block padding after it counts as
    /// dropped).
    pub offset: u64,
    /// Bytes from `offset` to the end of the file.
    pub bytes: u64,
    /// What was wrong at the damage.
    pub reason: String,
    /// Logical records with a valid checksum that start after the damage.
    /// Zero means nothing readable follows: the damage is a tail, which a
    /// crash in the middle of an append can leave. More than zero means
    /// complete records follow the damage, which no crash leaves.
    pub valid_records_after: usize,
    /// Where the first of those records starts.
    pub next_valid_offset: Option<u64>,
}

impl Dropped {
    /// Whether nothing readable follows the damage (a crash's torn tail).
    pub fn is_tail(&self) -> bool {
        self.valid_records_after == 0
    }
}

impl LogReader {
    /// Reads the whole file at `path` through `vfs`. I/O failures are
    /// [`Error::Io`]; damage is only reported by [`LogReader::next_record`].
    pub fn open(vfs: &dyn Vfs, path: &Path, policy: TailPolicy) -> Result<LogReader> {
        let data = vfs.read_all(path)?;
        Ok(LogReader::from_bytes(path, data, policy))
    }

    /// Reads a log already in memory; `path` is only used in error messages.
    pub fn from_bytes(path: impl Into<PathBuf>, data: Vec<u8>, policy: TailPolicy) -> LogReader {
        LogReader {
            path: path.into(),
            data,
            policy,
            pos: 0,
            good_end: 0,
            last_record_offset: 0,
            dropped: None,
            state: ReaderState::Reading,
            ran_out: false,
        }
    }

    /// Whether the reader stopped because its data ended inside a record
    /// (a truncated header or fragment, or a fragmented record without its
    /// last fragment) rather than at a clean end or at damage. Over a
    /// prefix of a file, only then can the rest of the file complete the
    /// record.
    pub fn ran_out(&self) -> bool {
        self.ran_out
    }

    /// The next logical record (an owned copy); `Ok(None)` at the end of the
    /// log, or at the first damage under [`TailPolicy::StopAtDamage`]. Under
    /// [`TailPolicy::Strict`] damage is [`Error::Corruption`] whose offset is
    /// the start of the damaged record, and every later call returns the same
    /// error. Never panics; never allocates more than the size of the record
    /// it returns (plus a small per-fragment index).
    pub fn next_record(&mut self) -> Result<Option<Vec<u8>>> {
        match &self.state {
            ReaderState::Reading => {}
            ReaderState::Done => return Ok(None),
            ReaderState::Failed(e) => return Err(e.duplicate()),
        }
        // (offset of the FIRST header, payload ranges) of a fragmented record
        // being assembled; bytes are copied once the LAST fragment is seen.
        let mut pending: Option<(usize, Vec<(usize, usize)>)> = None;
        let mut pending_len = 0usize;
        loop {
            match self.read_physical() {
                Physical::Eof => {
                    if let Some((start, _)) = pending {
                        self.ran_out = true;
                        return self.damage(
                            start,
                            "log ends inside a fragmented record (LAST fragment missing)"
                                .to_string(),
                        );
                    }
                    // (Padding and then only zeros is the unwritten rest.)
                    if self.pos > self.good_end && !self.rest_is_zero(self.good_end) {
                        return self.damage(
                            self.good_end,
                            "log ends in block padding with no record after it".to_string(),
                        );
                    }
                    self.state = ReaderState::Done;
                    return Ok(None);
                }
                Physical::Bad { at, reason } => {
                    return match pending {
                        Some((start, _)) => self.damage(
                            start,
                            format!("in fragment at offset {at} of the record: {reason}"),
                        ),
                        None => self.damage(at, reason),
                    };
                }
                Physical::Fragment { ty, at, start, end } => match ty {
                    TYPE_FULL | TYPE_FIRST => {
                        if let Some((rec, _)) = pending {
                            return self.damage(
                                rec,
                                format!(
                                    "{} fragment at offset {at} inside an unfinished fragmented \
                                     record",
                                    type_name(ty)
                                ),
                            );
                        }
                        if ty == TYPE_FULL {
                            let rec = self.data[start..end].to_vec();
                            return Ok(Some(self.finish_record(at, rec)));
                        }
                        pending = Some((at, vec![(start, end)]));
                        pending_len = end - start;
                    }
                    _ => {
                        // MIDDLE or LAST (read_physical rejects other types).
                        let Some((rec, ranges)) = pending.as_mut() else {
                            return self.damage(
                                at,
                                format!("{} fragment without a FIRST fragment", type_name(ty)),
                            );
                        };
                        let rec = *rec;
                        // The writer never writes an empty MIDDLE (only a
                        // FIRST can be empty, when a block has just a
                        // header's room left); a run of them would grow
                        // `ranges` without bound in the record's length.
                        if ty == TYPE_MIDDLE && start == end {
                            return self
                                .damage(rec, format!("empty MIDDLE fragment at offset {at}"));
                        }
                        ranges.push((start, end));
                        pending_len += end - start;
                        if pending_len > MAX_RECORD_LEN {
                            return self.damage(
                                rec,
                                format!("record longer than the maximum of {MAX_RECORD_LEN} bytes"),
                            );
                        }
                        if ty == TYPE_LAST {
                            let mut out = Vec::with_capacity(pending_len);
                            for &(s, e) in ranges.iter() {
                                out.extend_from_slice(&self.data[s..e]);
                            }
                            return Ok(Some(self.finish_record(rec, out)));
                        }
                    }
                },
            }
        }
    }

    /// File offset of the first header of the record last returned.
    pub fn last_record_offset(&self) -> u64 {
        self.last_record_offset
    }

    /// Under [`TailPolicy::StopAtDamage`], once damage has been reached:
    /// where, why, and whether valid records follow it. `None` when nothing
    /// was dropped (or the reader has not reached the damage yet).
    pub fn dropped(&self) -> Option<&Dropped> {
        self.dropped.as_ref()
    }

    /// After damage under [`TailPolicy::StopAtDamage`], resumes reading at
    /// the next physical record with a valid checksum (recovery that skips
    /// damaged records). Returns the byte range skipped, or `None` when
    /// nothing valid follows (the reader stays at the end). A resumed
    /// reader may stop again at later damage; `dropped` then describes the
    /// latest.
    pub fn skip_damage(&mut self) -> Option<(u64, u64)> {
        let d = self.dropped.as_ref()?;
        let next = usize::try_from(d.next_valid_offset?).ok()?;
        let from = d.offset;
        self.pos = next;
        self.good_end = next;
        self.dropped = None;
        self.state = ReaderState::Reading;
        Some((from, next as u64 - from))
    }

    /// Logical records (FULL or FIRST fragments with a valid checksum)
    /// starting after byte `from`, and the offset of the first. Every offset is tried, since a damaged
    /// length field hides where the next record starts; a candidate must
    /// fit its block, have a known type and match its checksum, so random
    /// bytes almost never pass and the CRC is rarely computed.
    fn valid_records_after(&self, from: usize) -> (usize, Option<usize>) {
        let len = self.data.len();
        let mut count = 0;
        let mut first = None;
        let mut at = from + 1;
        while at + HEADER_SIZE <= len {
            match self.valid_physical_at(at) {
                // Only the start of a logical record counts: the MIDDLE and
                // LAST fragments of the damaged record itself may survive a
                // torn write of a record that spans pages.
                Some((ty, end)) if ty == TYPE_FULL || ty == TYPE_FIRST => {
                    count += 1;
                    first.get_or_insert(at);
                    at = end;
                }
                Some((_, end)) => at = end,
                None => at += 1,
            }
        }
        (count, first)
    }

    /// The type and end of a valid physical record starting at `at`, if one
    /// does.
    fn valid_physical_at(&self, at: usize) -> Option<(u8, usize)> {
        let leftover = BLOCK_SIZE - at % BLOCK_SIZE;
        if leftover < HEADER_SIZE {
            return None;
        }
        let header = self.data.get(at..at + HEADER_SIZE)?;
        let ty = header[8];
        if !(TYPE_FULL..=TYPE_LAST).contains(&ty) {
            return None;
        }
        let length = usize::try_from(decode_fixed32(&header[4..])?).ok()?;
        if length > leftover - HEADER_SIZE {
            return None;
        }
        let start = at + HEADER_SIZE;
        let payload = self.data.get(start..start + length)?;
        let masked = decode_fixed32(header)?;
        (unmask_crc(masked) == record_crc(ty, payload)).then_some((ty, start + length))
    }

    /// Size of the log file in bytes.
    pub fn file_len(&self) -> u64 {
        self.data.len() as u64
    }

    /// The log's bytes.
    pub fn contents(&self) -> &[u8] {
        &self.data
    }

    fn finish_record(&mut self, at: usize, rec: Vec<u8>) -> Vec<u8> {
        self.last_record_offset = at as u64;
        self.good_end = self.pos;
        rec
    }

    fn damage(&mut self, at: usize, reason: String) -> Result<Option<Vec<u8>>> {
        match self.policy {
            TailPolicy::Strict => {
                let e = Error::corruption(&self.path, at as u64, reason);
                self.state = ReaderState::Failed(e.duplicate());
                Err(e)
            }
            TailPolicy::StopAtDamage => {
                let bytes = (self.data.len() - self.good_end) as u64;
                let (valid_records_after, next) = self.valid_records_after(at);
                self.dropped = Some(Dropped {
                    offset: self.good_end as u64,
                    bytes,
                    reason,
                    valid_records_after,
                    next_valid_offset: next.map(|n| n as u64),
                });
                self.state = ReaderState::Done;
                Ok(None)
            }
        }
    }

    fn rest_is_zero(&self, from: usize) -> bool {
        self.data[from..].iter().all(|&b| b == 0)
    }

    /// Scans the next physical record, skipping block padding.
    fn read_physical(&mut self) -> Physical {
        let len = self.data.len();
        loop {
            let at = self.pos;
            if at >= len {
                return Physical::Eof;
            }
            let leftover = BLOCK_SIZE - at % BLOCK_SIZE;
            if leftover < HEADER_SIZE {
                let end = at + leftover;
                if end > len {
                    if self.rest_is_zero(at) {
                        return Physical::Eof;
                    }
                    return Physical::Bad {
                        at,
                        reason: "non-zero bytes in block padding".to_string(),
                    };
                }
                if self.data[at..end].iter().any(|&b| b != 0) {
                    return Physical::Bad {
                        at,
                        reason: "non-zero bytes in block padding".to_string(),
                    };
                }
                self.pos = end;
                continue;
            }
            // Zeros from here to the end are where the writer has not
            // written yet: a log's size is set ahead of its appends
            // (`WritableFile::preallocate_in_steps`), and a crash can leave
            // an appended page unwritten. Neither held an acknowledged
            // record, so the log ends here.
            if self.rest_is_zero(at) {
                return Physical::Eof;
            }
            if len - at < HEADER_SIZE {
                self.ran_out = true;
                return Physical::Bad {
                    at,
                    reason: format!(
                        "truncated record header ({} of {HEADER_SIZE} bytes)",
                        len - at
                    ),
                };
            }
            let header = &self.data[at..at + HEADER_SIZE];
            let (Some(masked), Some(length)) =
                (decode_fixed32(header), decode_fixed32(&header[4..]))
            else {
                // Unreachable: the header has HEADER_SIZE bytes.
                return Physical::Bad {
                    at,
                    reason: "unreadable record header".to_string(),
                };
            };
            let ty = header[8];
            if masked == 0 && length == 0 && ty == 0 {
                return Physical::Bad {
                    at,
                    reason: "zero-filled record header".to_string(),
                };
            }
            let room = leftover - HEADER_SIZE;
            let length = usize::try_from(length).unwrap_or(usize::MAX);
            if length > room {
                return Physical::Bad {
                    at,
                    reason: format!(
                        "bad record length {length}: only {room} bytes left in its block"
                    ),
                };
            }
            let start = at + HEADER_SIZE;
            let end = start + length;
            if end > len {
                self.ran_out = true;
                return Physical::Bad {
                    at,
                    reason: format!(
                        "truncated record: length {length} but only {} bytes left in the file",
                        len - start
                    ),
                };
            }
            let expected = unmask_crc(masked);
            let actual = record_crc(ty, &self.data[start..end]);
            if expected != actual {
                return Physical::Bad {
                    at,
                    reason: format!(
                        "checksum mismatch: stored {expected:#010x}, computed {actual:#010x}"
                    ),
                };
            }
            if !(TYPE_FULL..=TYPE_LAST).contains(&ty) {
                return Physical::Bad {
                    at,
                    reason: format!("unknown record type {ty}"),
                };
            }
            self.pos = end;
            return Physical::Fragment { ty, at, start, end };
        }
    }
}
