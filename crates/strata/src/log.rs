//! The record log: the on-disk framing shared by the write-ahead log and the
//! manifest. Full specification: `docs/format/log.md`.
//!
//! A log is a sequence of 32 KiB blocks (the last one may be short). Each
//! block holds physical records:
//!
//! ```text
//! +---------------+----------------+-----------+-------------------------+
//! | masked crc32c | length: u32 LE | type: u8  | payload: `length` bytes |
//! |   u32 LE      |                |           |                         |
//! +---------------+----------------+-----------+-------------------------+
//!   0..4            4..8             8           9..9+length
//! ```
//!
//! - The CRC-32C covers the type byte followed by the payload and is stored
//!   masked (`rotr(crc, 15) + 0xa282ead8`, wrapping), as in LevelDB, so that
//!   the CRC of data that itself contains CRCs does not degenerate.
//! - A physical record never crosses a block boundary. When fewer than
//!   [`HEADER_SIZE`] (9) bytes remain in a block, the writer fills them with
//!   zeros and starts the next record at the next block.
//! - A logical record (one [`LogWriter::add_record`] call) is stored as one
//!   `FULL` (1) physical record, or as `FIRST` (2), zero or more `MIDDLE` (3)
//!   and one `LAST` (4). Type 0 is never written: it marks zero-filled
//!   (preallocated or torn) space.
//!
//! Why block framing rather than one unframed record per logical record: a
//! damaged length field can never send the reader further than the end of
//! its 32 KiB block, so lengths are validated without trusting them; and a
//! repair tool can resynchronise at the next block boundary and salvage what
//! follows a damaged record. The cost is 9 bytes per fragment plus at most 8
//! bytes of padding per block (< 0.06 %).
//!
//! Reading: [`LogReader`] loads the whole file (logs are bounded by the write
//! buffer size / manifest rollover) and hands back owned logical records.
//! Under [`TailPolicy::Strict`] any damage is [`Error::Corruption`]; under
//! [`TailPolicy::StopAtDamage`] the first damage ends the log and is reported
//! through [`LogReader::dropped`].

use std::path::{Path, PathBuf};

use crate::coding::{crc32c_two, decode_fixed32, put_fixed32};
use crate::error::{Error, Result};
use crate::vfs::{Vfs, WritableFile};

/// Size of a block; physical records never straddle a block boundary.
pub const BLOCK_SIZE: usize = 32 * 1024;
/// Bytes of a physical record header: crc (4) + length (4) + type (1).
pub const HEADER_SIZE: usize = 9;
/// Largest logical record the writer accepts and the reader believes:
/// 1 GiB plus 1 MiB of headroom for the caller's own framing.
pub const MAX_RECORD_LEN: usize = (1 << 30) + (1 << 20);

/// The whole logical record in one physical record.
const TYPE_FULL: u8 = 1;
/// The first fragment of a logical record.
const TYPE_FIRST: u8 = 2;
/// An inner fragment.
const TYPE_MIDDLE: u8 = 3;
/// The last fragment.
const TYPE_LAST: u8 = 4;

/// Fragments up to this size are copied into the writer's scratch buffer so
/// a small record is a single `append` call; larger ones are appended
/// directly to avoid copying.
const INLINE_FRAGMENT: usize = 4096;

const MASK_DELTA: u32 = 0xa282_ead8;

/// Masks a CRC for storage (LevelDB's scheme).
#[inline]
fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask_crc`].
#[inline]
fn unmask_crc(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

/// CRC of a physical record: type byte followed by the payload.
#[inline]
fn record_crc(ty: u8, payload: &[u8]) -> u32 {
    crc32c_two(&[ty], payload)
}

fn type_name(ty: u8) -> &'static str {
    match ty {
        TYPE_FULL => "FULL",
        TYPE_FIRST => "FIRST",
        TYPE_MIDDLE => "MIDDLE",
        TYPE_LAST => "LAST",
        _ => "unknown",
    }
}

/// Appends logical records to a log file.
///
/// After any error from the underlying file the writer is poisoned: the file
/// may end in a torn record, so every later call fails too. The caller must
/// abandon the log (readers treat the torn record as the end of the log).
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    /// Position inside the current block.
    block_offset: usize,
    /// Bytes in the file, headers and padding included.
    len: u64,
    scratch: Vec<u8>,
    /// Set after a failed write: the description of the first failure.
    failed: Option<String>,
}

impl LogWriter {
    /// Writes to `file`, continuing at its current length (normally 0).
    pub fn new(file: Box<dyn WritableFile>) -> Self {
        let len = file.len();
        LogWriter {
            file,
            block_offset: (len % BLOCK_SIZE as u64) as usize,
            len,
            scratch: Vec::with_capacity(INLINE_FRAGMENT + 2 * HEADER_SIZE),
            failed: None,
        }
    }

    /// Appends one logical record of up to [`MAX_RECORD_LEN`] bytes. Does not
    /// flush: call [`LogWriter::flush`] or [`LogWriter::sync`].
    pub fn add_record(&mut self, payload: &[u8]) -> Result<()> {
        self.check_usable()?;
        if payload.len() > MAX_RECORD_LEN {
            return Err(Error::InvalidArgument(format!(
                "log record of {} bytes exceeds the maximum of {MAX_RECORD_LEN}",
                payload.len()
            )));
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let r = self.emit(payload, &mut scratch);
        self.scratch = scratch;
        self.poison_on_error(r)
    }

    /// Hands buffered bytes to the operating system.
    pub fn flush(&mut self) -> Result<()> {
        self.check_usable()?;
        let r = self.file.flush();
        self.poison_on_error(r)
    }

    /// Flushes and makes everything written so far durable.
    pub fn sync(&mut self) -> Result<()> {
        self.check_usable()?;
        let r = self.file.sync();
        self.poison_on_error(r)
    }

    /// Bytes written to the file, headers and padding included.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when nothing has been written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn check_usable(&self) -> Result<()> {
        match &self.failed {
            None => Ok(()),
            Some(cause) => Err(Error::io(
                format!("log writer unusable after an earlier failure ({cause})"),
                std::io::Error::other("log writer poisoned"),
            )),
        }
    }

    fn poison_on_error(&mut self, r: Result<()>) -> Result<()> {
        if let Err(e) = &r {
            self.failed.get_or_insert_with(|| e.to_string());
        }
        r
    }

    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        self.file.append(bytes)?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    fn emit(&mut self, payload: &[u8], scratch: &mut Vec<u8>) -> Result<()> {
        let mut rest = payload;
        let mut first = true;
        loop {
            let leftover = BLOCK_SIZE - self.block_offset;
            if leftover < HEADER_SIZE {
                scratch.resize(scratch.len() + leftover, 0);
                self.block_offset = 0;
            }
            let avail = BLOCK_SIZE - self.block_offset - HEADER_SIZE;
            let (frag, tail) = rest.split_at(avail.min(rest.len()));
            let last = tail.is_empty();
            let ty = match (first, last) {
                (true, true) => TYPE_FULL,
                (true, false) => TYPE_FIRST,
                (false, false) => TYPE_MIDDLE,
                (false, true) => TYPE_LAST,
            };
            put_fixed32(scratch, mask_crc(record_crc(ty, frag)));
            // `frag.len() < BLOCK_SIZE`, so it fits in a u32.
            put_fixed32(scratch, frag.len() as u32);
            scratch.push(ty);
            if frag.len() <= INLINE_FRAGMENT {
                scratch.extend_from_slice(frag);
            } else {
                self.append(scratch)?;
                scratch.clear();
                self.append(frag)?;
            }
            self.block_offset += HEADER_SIZE + frag.len();
            rest = tail;
            first = false;
            if last {
                break;
            }
        }
        if !scratch.is_empty() {
            self.append(scratch)?;
        }
        Ok(())
    }
}

/// The bytes of a log whose only record is `payload` (which must fit one
/// block): what a writer puts first in a new log.
pub fn first_record_bytes(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_SIZE + payload.len());
    put_fixed32(&mut out, mask_crc(record_crc(TYPE_FULL, payload)));
    put_fixed32(&mut out, payload.len() as u32);
    out.push(TYPE_FULL);
    out.extend_from_slice(payload);
    out
}

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
        }
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
                        return self.damage(
                            start,
                            "log ends inside a fragmented record (LAST fragment missing)"
                                .to_string(),
                        );
                    }
                    if self.pos > self.good_end {
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
                    let reason = if self.rest_is_zero(at) {
                        "log ends inside block padding (torn tail)".to_string()
                    } else {
                        "non-zero bytes in block padding".to_string()
                    };
                    return Physical::Bad { at, reason };
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
            if len - at < HEADER_SIZE {
                let reason = if self.rest_is_zero(at) {
                    "zero-filled tail (preallocated or torn write)".to_string()
                } else {
                    format!(
                        "truncated record header ({} of {HEADER_SIZE} bytes)",
                        len - at
                    )
                };
                return Physical::Bad { at, reason };
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
                let reason = if self.rest_is_zero(at) {
                    "zero-filled tail (preallocated or torn write)".to_string()
                } else {
                    "zero-filled record header".to_string()
                };
                return Physical::Bad { at, reason };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::StdVfs;
    use crate::vfs_mem::{FaultKind, FaultRule, MemVfs, VfsOp};
    use parking_lot::Mutex;
    use proptest::prelude::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::sync::Arc;

    /// A `WritableFile` appending into a shared vector.
    #[derive(Clone, Default)]
    struct VecFile(Arc<Mutex<Vec<u8>>>);

    impl WritableFile for VecFile {
        fn append(&mut self, data: &[u8]) -> Result<()> {
            self.0.lock().extend_from_slice(data);
            Ok(())
        }
        fn flush(&mut self) -> Result<()> {
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
        fn len(&self) -> u64 {
            self.0.lock().len() as u64
        }
    }

    /// Deterministic, record-specific payload so mixed-up records differ.
    fn payload(len: usize, seed: u64) -> Vec<u8> {
        let mut rng = StdRng::seed_from_u64(seed ^ (len as u64).rotate_left(32));
        let mut v = vec![0u8; len];
        rng.fill(&mut v[..]);
        v
    }

    struct Written {
        bytes: Vec<u8>,
        records: Vec<Vec<u8>>,
        /// Per record: (end of previous record = start of its span incl.
        /// padding, offset of its first header, end of its last fragment).
        spans: Vec<(usize, usize, usize)>,
    }

    fn write_log(records: Vec<Vec<u8>>) -> Written {
        let file = VecFile::default();
        let mut w = LogWriter::new(Box::new(file.clone()));
        let mut spans = Vec::new();
        let mut prev_end = 0usize;
        for r in &records {
            w.add_record(r).expect("add_record");
            let end = w.len() as usize;
            // The first header follows any padding needed in prev's block.
            let left = BLOCK_SIZE - prev_end % BLOCK_SIZE;
            let header = if left < HEADER_SIZE {
                prev_end + left
            } else {
                prev_end
            };
            spans.push((prev_end, header, end));
            prev_end = end;
        }
        w.flush().expect("flush");
        let bytes = file.0.lock().clone();
        assert_eq!(bytes.len() as u64, w.len());
        Written {
            bytes,
            records,
            spans,
        }
    }

    fn read_all(bytes: &[u8], policy: TailPolicy) -> (Vec<Vec<u8>>, Result<()>, LogReader) {
        let mut r = LogReader::from_bytes("test.log", bytes.to_vec(), policy);
        let mut out = Vec::new();
        loop {
            match r.next_record() {
                Ok(Some(rec)) => out.push(rec),
                Ok(None) => return (out, Ok(()), r),
                Err(e) => return (out, Err(e), r),
            }
        }
    }

    fn sizes_log(sizes: &[usize]) -> Written {
        write_log(
            sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| payload(n, i as u64))
                .collect(),
        )
    }

    #[test]
    fn mask_round_trips_and_changes_value() {
        for crc in [0u32, 1, 0xdead_beef, u32::MAX] {
            assert_eq!(unmask_crc(mask_crc(crc)), crc);
            assert_ne!(mask_crc(crc), crc);
        }
    }

    #[test]
    fn round_trip_edge_sizes() {
        let room = BLOCK_SIZE - HEADER_SIZE;
        let sizes = [
            0,
            1,
            room - 1,
            room,
            room + 1,
            BLOCK_SIZE - 7,
            BLOCK_SIZE,
            2 * room,
            2 * room + 1,
            0,
            100_000,
            3_000_000,
            1,
        ];
        let w = sizes_log(&sizes);
        let mut r = LogReader::from_bytes("x", w.bytes.clone(), TailPolicy::Strict);
        for (i, rec) in w.records.iter().enumerate() {
            let got = r.next_record().expect("read").expect("record present");
            assert_eq!(got.len(), rec.len(), "record {i}");
            assert!(got == *rec, "record {i} differs");
            assert_eq!(r.last_record_offset(), w.spans[i].1 as u64, "offset {i}");
        }
        assert!(r.next_record().expect("eof").is_none());
        assert!(r.next_record().expect("eof again").is_none());
        assert_eq!(r.dropped(), None);
    }

    #[test]
    fn record_filling_a_block_exactly_leaves_no_padding() {
        let w = sizes_log(&[BLOCK_SIZE - HEADER_SIZE, 5]);
        assert_eq!(w.spans[1].1, BLOCK_SIZE);
        assert_eq!(w.bytes.len(), BLOCK_SIZE + HEADER_SIZE + 5);
        // Leaving 8 bytes forces 8 bytes of zero padding.
        let w = sizes_log(&[BLOCK_SIZE - HEADER_SIZE - 8, 5]);
        assert_eq!(w.spans[1].1, BLOCK_SIZE);
        assert_eq!(&w.bytes[BLOCK_SIZE - 8..BLOCK_SIZE], &[0u8; 8]);
        let (recs, res, _) = read_all(&w.bytes, TailPolicy::Strict);
        res.expect("clean");
        assert_eq!(recs, w.records);
    }

    #[test]
    fn header_layout_matches_the_documented_format() {
        let w = write_log(vec![b"abc".to_vec()]);
        let b = &w.bytes;
        assert_eq!(b.len(), HEADER_SIZE + 3);
        let masked = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        assert_eq!(unmask_crc(masked), crc32c::crc32c(&[1, b'a', b'b', b'c']));
        assert_eq!(&b[4..8], &3u32.to_le_bytes());
        assert_eq!(b[8], TYPE_FULL);
        assert_eq!(&b[9..], b"abc");
    }

    #[test]
    fn open_reads_through_the_vfs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("000001.log");
        let mut w = LogWriter::new(StdVfs.create(&path).expect("create"));
        let recs: Vec<Vec<u8>> = (0..50).map(|i| payload(i * 997, i as u64)).collect();
        for r in &recs {
            w.add_record(r).expect("add");
        }
        w.sync().expect("sync");
        assert_eq!(StdVfs.file_size(&path).expect("size"), w.len());
        let mut r = LogReader::open(&StdVfs, &path, TailPolicy::Strict).expect("open");
        for rec in &recs {
            assert!(r.next_record().expect("read").expect("some") == *rec);
        }
        assert!(r.next_record().expect("eof").is_none());
        assert_eq!(r.file_len(), w.len());
    }

    #[test]
    fn writer_is_poisoned_after_a_failed_append() {
        let vfs = MemVfs::new();
        let dir = Path::new("/db");
        vfs.create_dir_all(dir).expect("mkdir");
        let path = dir.join("000001.log");
        let mut w = LogWriter::new(vfs.create(&path).expect("create"));
        w.add_record(b"first").expect("first");
        vfs.set_fault(FaultRule::new(FaultKind::ShortWrite).op(VfsOp::Append));
        assert!(w.add_record(&payload(100, 1)).is_err());
        vfs.clear_faults();
        assert!(
            w.add_record(b"later").is_err(),
            "poisoned writer accepted a record"
        );
        assert!(w.sync().is_err());
        // The torn record is dropped; the first record survives.
        let mut r = LogReader::open(&vfs, &path, TailPolicy::StopAtDamage).expect("open");
        assert_eq!(r.next_record().expect("read"), Some(b"first".to_vec()));
        assert_eq!(r.next_record().expect("read"), None);
        let d = r.dropped().expect("torn record reported");
        assert_eq!(d.offset, (HEADER_SIZE + 5) as u64);
        assert_eq!(d.bytes, ((HEADER_SIZE + 100) / 2) as u64);
        assert!(d.is_tail());
    }

    #[test]
    fn oversized_record_is_refused() {
        let mut w = LogWriter::new(Box::new(VecFile::default()));
        let big = vec![0u8; MAX_RECORD_LEN + 1];
        assert!(matches!(w.add_record(&big), Err(Error::InvalidArgument(_))));
        assert_eq!(w.len(), 0);
    }

    /// Checks reading `bytes[..cut]` under StopAtDamage returns exactly the
    /// records complete before the cut and reports the rest as dropped.
    fn check_cut(w: &Written, cut: usize) {
        let complete = w.spans.iter().take_while(|s| s.2 <= cut).count();
        let good_end = if complete == 0 {
            0
        } else {
            w.spans[complete - 1].2
        };
        let (recs, res, r) = read_all(&w.bytes[..cut], TailPolicy::StopAtDamage);
        res.expect("StopAtDamage never errors on damage");
        assert_eq!(recs.len(), complete, "cut at {cut}");
        for (i, rec) in recs.iter().enumerate() {
            assert!(*rec == w.records[i], "cut at {cut}: record {i} wrong");
        }
        if cut == good_end {
            assert_eq!(r.dropped(), None, "cut at {cut}");
        } else {
            let d = r.dropped().expect("dropped reported");
            assert!(d.is_tail(), "cut at {cut}: nothing valid follows a cut");
            let (off, bytes, reason) = (d.offset, d.bytes, d.reason.clone());
            assert_eq!(
                (off, bytes),
                (good_end as u64, (cut - good_end) as u64),
                "cut at {cut}: {reason}"
            );
        }
        // Strict: a cut inside a record is an error at that record.
        let (recs, res, _) = read_all(&w.bytes[..cut], TailPolicy::Strict);
        assert_eq!(recs.len(), complete, "strict cut at {cut}");
        if cut == good_end {
            res.expect("clean cut is not an error");
        } else {
            match res {
                Err(Error::Corruption { offset, .. }) => {
                    let next = w.spans[complete];
                    assert!(
                        offset as usize >= next.0 && offset as usize <= next.1,
                        "strict cut at {cut}: offset {offset} not at record {complete} {next:?}"
                    );
                }
                other => panic!("strict cut at {cut}: expected corruption, got {other:?}"),
            }
        }
    }

    #[test]
    fn truncation_at_every_offset_of_a_small_log_yields_a_prefix() {
        let w = sizes_log(&[0, 1, 10, 0, 200, 3, 1000, 50]);
        for cut in 0..=w.bytes.len() {
            check_cut(&w, cut);
        }
    }

    #[test]
    fn truncation_across_blocks_yields_a_prefix() {
        // r1 ends 5 bytes before the block end (padding), r2 spans three
        // blocks (FIRST, MIDDLE, LAST), r3 is small.
        let r0 = 100;
        let r1 = BLOCK_SIZE - 5 - 2 * HEADER_SIZE - r0;
        let w = sizes_log(&[r0, r1, 2 * BLOCK_SIZE, 7, 0]);
        assert_eq!(w.spans[1].2, BLOCK_SIZE - 5);
        assert_eq!(w.spans[2].1, BLOCK_SIZE);
        let mut cuts: Vec<usize> = Vec::new();
        for s in &w.spans {
            for p in [s.0, s.1, s.2] {
                cuts.extend(p.saturating_sub(12)..(p + 12).min(w.bytes.len() + 1));
            }
        }
        for b in 1..=3 {
            let p = b * BLOCK_SIZE;
            cuts.extend(p.saturating_sub(12)..(p + 12).min(w.bytes.len() + 1));
        }
        let mut rng = StdRng::seed_from_u64(7);
        cuts.extend((0..300).map(|_| rng.random_range(0..=w.bytes.len())));
        cuts.push(w.bytes.len());
        for cut in cuts {
            check_cut(&w, cut);
        }
    }

    /// Flips one bit and checks no wrong record is ever returned.
    fn check_flip(w: &Written, byte: usize, bit: u8) {
        let mut bytes = w.bytes.clone();
        bytes[byte] ^= 1 << bit;
        // The damaged record: the one whose span (incl. padding before its
        // header) holds the byte.
        let idx = w
            .spans
            .iter()
            .position(|s| byte >= s.0 && byte < s.2)
            .expect("byte inside some record span");
        let (recs, res, r) = read_all(&bytes, TailPolicy::StopAtDamage);
        res.expect("no error under StopAtDamage");
        assert_eq!(recs.len(), idx, "flip {byte}:{bit}");
        for (i, rec) in recs.iter().enumerate() {
            assert!(*rec == w.records[i], "flip {byte}:{bit} record {i} wrong");
        }
        let d = r.dropped().expect("damage reported");
        let (off, dropped) = (d.offset, d.bytes);
        // A flip in a record that a later record follows is damage with
        // valid records after it, never a tail.
        let later_records = w.records.len() - idx - 1;
        if later_records > 0 {
            assert!(
                !d.is_tail(),
                "flip {byte}:{bit}: {later_records} records follow, none found"
            );
        }
        assert_eq!(off as usize, w.spans[idx].0, "flip {byte}:{bit}");
        assert_eq!(dropped as usize, bytes.len() - w.spans[idx].0);

        let (recs, res, _) = read_all(&bytes, TailPolicy::Strict);
        assert_eq!(recs.len(), idx, "strict flip {byte}:{bit}");
        match res {
            Err(Error::Corruption { offset, .. }) => {
                let s = w.spans[idx];
                assert!(
                    offset as usize >= s.0 && offset as usize <= s.1,
                    "strict flip {byte}:{bit}: offset {offset} not at record {idx} {s:?}"
                );
            }
            other => panic!("strict flip {byte}:{bit}: expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn every_single_bit_flip_in_a_small_log_is_detected() {
        let w = sizes_log(&[0, 1, 10, 0, 200, 3, 50]);
        for byte in 0..w.bytes.len() {
            for bit in 0..8 {
                check_flip(&w, byte, bit);
            }
        }
    }

    #[test]
    fn bit_flips_in_headers_padding_and_fragments_across_blocks_are_detected() {
        let r0 = 100;
        let r1 = BLOCK_SIZE - 5 - 2 * HEADER_SIZE - r0;
        let w = sizes_log(&[r0, r1, 2 * BLOCK_SIZE, 7, 0]);
        let mut bytes_to_flip: Vec<usize> = Vec::new();
        // Every header (fragment headers sit at block starts too) and the
        // padding, plus the first/last bytes of each payload.
        for s in &w.spans {
            bytes_to_flip.extend(s.0..(s.1 + HEADER_SIZE + 2).min(s.2));
            bytes_to_flip.extend(s.2.saturating_sub(2).max(s.0)..s.2);
        }
        for b in 1..=3 {
            let p = b * BLOCK_SIZE;
            bytes_to_flip.extend(p.saturating_sub(3)..(p + HEADER_SIZE + 2).min(w.bytes.len()));
        }
        let mut rng = StdRng::seed_from_u64(11);
        bytes_to_flip.extend((0..200).map(|_| rng.random_range(0..w.bytes.len())));
        for byte in bytes_to_flip {
            for bit in 0..8 {
                check_flip(&w, byte, bit);
            }
        }
    }

    #[test]
    fn zero_filled_tail_is_a_torn_tail() {
        let w = sizes_log(&[10, 20]);
        let mut bytes = w.bytes.clone();
        bytes.resize(bytes.len() + 4096, 0);
        let (recs, res, r) = read_all(&bytes, TailPolicy::StopAtDamage);
        res.expect("no error");
        assert_eq!(recs, w.records);
        let d = r.dropped().expect("dropped");
        assert!(d.is_tail());
        let (off, n, reason) = (d.offset, d.bytes, d.reason.clone());
        assert_eq!((off, n), (w.bytes.len() as u64, 4096));
        assert!(reason.contains("zero-filled"), "{reason}");
        let (recs, res, _) = read_all(&bytes, TailPolicy::Strict);
        assert_eq!(recs, w.records);
        assert!(
            matches!(res, Err(Error::Corruption { offset, .. }) if offset == w.bytes.len() as u64)
        );
    }

    /// Builds one physical record by hand.
    fn physical(ty: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        put_fixed32(&mut v, mask_crc(record_crc(ty, payload)));
        put_fixed32(&mut v, payload.len() as u32);
        v.push(ty);
        v.extend_from_slice(payload);
        v
    }

    fn strict_error(bytes: Vec<u8>) -> (usize, u64, String) {
        let (recs, res, _) = read_all(&bytes, TailPolicy::Strict);
        match res {
            Err(Error::Corruption { offset, reason, .. }) => (recs.len(), offset, reason),
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn unknown_type_and_out_of_order_fragments_are_corruption() {
        let ok = physical(TYPE_FULL, b"ok");
        let n = ok.len() as u64;

        let (good, off, reason) = strict_error([ok.clone(), physical(9, b"x")].concat());
        assert_eq!((good, off), (1, n));
        assert!(reason.contains("unknown record type 9"), "{reason}");

        let (good, off, reason) = strict_error([ok.clone(), physical(TYPE_MIDDLE, b"x")].concat());
        assert_eq!((good, off), (1, n));
        assert!(reason.contains("without a FIRST"), "{reason}");

        let (good, off, reason) = strict_error([ok.clone(), physical(TYPE_LAST, b"x")].concat());
        assert_eq!((good, off), (1, n));
        assert!(reason.contains("without a FIRST"), "{reason}");

        let bytes = [
            ok.clone(),
            physical(TYPE_FIRST, b"a"),
            physical(TYPE_FULL, b"b"),
        ]
        .concat();
        let (good, off, reason) = strict_error(bytes.clone());
        assert_eq!((good, off), (1, n));
        assert!(reason.contains("FULL fragment"), "{reason}");
        let (recs, res, r) = read_all(&bytes, TailPolicy::StopAtDamage);
        res.expect("no error");
        assert_eq!(recs, vec![b"ok".to_vec()]);
        assert_eq!(
            r.dropped().map(|d| (d.offset, d.bytes)),
            Some((n, bytes.len() as u64 - n))
        );

        let (good, off, _) = strict_error(
            [
                ok.clone(),
                physical(TYPE_FIRST, b"a"),
                physical(TYPE_FIRST, b"b"),
            ]
            .concat(),
        );
        assert_eq!((good, off), (1, n));

        // A well-formed hand-built fragmented record is accepted, an empty
        // FIRST included (the writer leaves one when a block has just a
        // header's room).
        let bytes = [
            physical(TYPE_FIRST, b""),
            physical(TYPE_MIDDLE, b"ab"),
            physical(TYPE_MIDDLE, b"c"),
            physical(TYPE_LAST, b"d"),
        ]
        .concat();
        let (recs, res, _) = read_all(&bytes, TailPolicy::Strict);
        res.expect("valid");
        assert_eq!(recs, vec![b"abcd".to_vec()]);

        // An empty MIDDLE is never written; a run of them is damage, not
        // memory spent on nothing.
        let (good, off, reason) = strict_error(
            [
                ok.clone(),
                physical(TYPE_FIRST, b"a"),
                physical(TYPE_MIDDLE, b""),
                physical(TYPE_MIDDLE, b""),
                physical(TYPE_LAST, b"b"),
            ]
            .concat(),
        );
        assert_eq!((good, off), (1, n));
        assert!(reason.contains("empty MIDDLE"), "{reason}");
    }

    #[test]
    fn length_past_the_block_end_is_corruption() {
        let mut v = Vec::new();
        put_fixed32(&mut v, 0x1234_5678);
        put_fixed32(&mut v, u32::MAX);
        v.push(TYPE_FULL);
        v.extend_from_slice(&[1, 2, 3]);
        let (good, off, reason) = strict_error(v);
        assert_eq!((good, off), (0, 0));
        assert!(reason.contains("bad record length"), "{reason}");
    }

    #[test]
    fn strict_error_repeats_on_later_calls() {
        let mut bytes = physical(TYPE_FULL, b"ok");
        bytes.extend_from_slice(&[1, 2, 3]);
        let mut r = LogReader::from_bytes("f", bytes, TailPolicy::Strict);
        assert!(r.next_record().expect("first").is_some());
        assert!(r.next_record().is_err());
        assert!(r.next_record().is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn random_sizes_round_trip(
            sizes in prop::collection::vec(
                prop_oneof![0usize..64, 0usize..40_000, 30_000usize..100_000], 0..16),
            seed in any::<u64>(),
        ) {
            let w = write_log(
                sizes.iter().enumerate().map(|(i, &n)| payload(n, seed.wrapping_add(i as u64))).collect(),
            );
            let (recs, res, r) = read_all(&w.bytes, TailPolicy::Strict);
            prop_assert!(res.is_ok(), "{:?}", res);
            prop_assert_eq!(recs.len(), w.records.len());
            for (a, b) in recs.iter().zip(&w.records) {
                prop_assert!(a == b);
            }
            prop_assert_eq!(r.dropped(), None);
        }

        #[test]
        fn random_garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..70_000)) {
            for policy in [TailPolicy::Strict, TailPolicy::StopAtDamage] {
                let mut r = LogReader::from_bytes("g", data.clone(), policy);
                let mut total = 0usize;
                for _ in 0..data.len() + 2 {
                    match r.next_record() {
                        Ok(Some(rec)) => total += rec.len(),
                        Ok(None) | Err(_) => break,
                    }
                }
                prop_assert!(total <= data.len());
            }
        }

        #[test]
        fn damaged_valid_logs_yield_a_prefix(
            sizes in prop::collection::vec(0usize..20_000, 1..10),
            hits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
            cut in any::<prop::sample::Index>(),
            truncate in any::<bool>(),
        ) {
            let w = sizes_log(&sizes);
            let mut bytes = w.bytes.clone();
            for (i, b) in &hits {
                let i = i.index(bytes.len());
                bytes[i] = *b;
            }
            if truncate {
                bytes.truncate(cut.index(bytes.len() + 1));
            }
            for policy in [TailPolicy::Strict, TailPolicy::StopAtDamage] {
                let (recs, res, _) = read_all(&bytes, policy);
                if policy == TailPolicy::StopAtDamage {
                    prop_assert!(res.is_ok());
                }
                prop_assert!(recs.len() <= w.records.len());
                for (a, b) in recs.iter().zip(&w.records) {
                    prop_assert!(a == b, "a wrong record was returned");
                }
            }
        }
    }

    #[test]
    fn damage_followed_by_records_is_not_a_tail_and_can_be_skipped() {
        let w = sizes_log(&[10, 20, 30, 40]);
        let mut bytes = w.bytes.clone();
        // Corrupt the length field of the second record: where it ends is
        // no longer known, yet the records after it must still be found.
        bytes[w.spans[1].0 + 5] ^= 0x40;
        let (recs, res, mut r) = read_all(&bytes, TailPolicy::StopAtDamage);
        res.expect("no error under StopAtDamage");
        assert_eq!(recs, w.records[..1].to_vec());
        let d = r.dropped().expect("damage").clone();
        assert_eq!(d.valid_records_after, 2);
        assert!(!d.is_tail());
        assert_eq!(d.next_valid_offset, Some(w.spans[2].0 as u64));
        let skipped = r.skip_damage().expect("resumes");
        assert_eq!(
            skipped,
            (w.spans[1].0 as u64, (w.spans[2].0 - w.spans[1].0) as u64)
        );
        let mut rest = Vec::new();
        while let Some(rec) = r.next_record().expect("read") {
            rest.push(rec);
        }
        assert_eq!(rest, w.records[2..].to_vec());
        assert_eq!(r.dropped(), None);
    }

    #[test]
    fn a_damaged_last_record_is_a_tail_and_nothing_is_skipped_to() {
        let w = sizes_log(&[10, 20, 30]);
        let mut bytes = w.bytes.clone();
        let last = bytes.len() - 3;
        bytes[last] ^= 1;
        let (recs, _, mut r) = read_all(&bytes, TailPolicy::StopAtDamage);
        assert_eq!(recs.len(), 2);
        assert!(r.dropped().expect("damage").is_tail());
        assert_eq!(r.skip_damage(), None);
    }

    #[test]
    fn first_record_bytes_are_what_a_writer_writes_first() {
        let mut w = LogWriter::new(Box::new(VecFile::default()));
        w.add_record(b"a header").expect("add");
        let written = read_all(&first_record_bytes(b"a header"), TailPolicy::Strict);
        assert_eq!(written.0, vec![b"a header".to_vec()]);
        assert_eq!(w.len() as usize, first_record_bytes(b"a header").len());
    }
}
