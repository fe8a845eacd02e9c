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
//! Under [`TailPolicy::Strict`] any damage is [`Error::Corruption`](crate::Error::Corruption); under
//! [`TailPolicy::StopAtDamage`] the first damage ends the log and is reported
//! through [`LogReader::dropped`].

mod reader;
mod writer;

pub use reader::{Dropped, LogReader, TailPolicy};
pub use writer::{LogWriter, first_record_bytes};

use crate::coding::crc32c_two;

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

#[cfg(test)]
mod tests;
