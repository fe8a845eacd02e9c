//! Appending logical records: fragmenting them into physical records that
//! never cross a block boundary.

use super::{
    BLOCK_SIZE, HEADER_SIZE, INLINE_FRAGMENT, MAX_RECORD_LEN, TYPE_FIRST, TYPE_FULL, TYPE_LAST,
    TYPE_MIDDLE, mask_crc, record_crc,
};
use crate::coding::put_fixed32;
use crate::error::{Error, Result};
use crate::vfs::WritableFile;

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
