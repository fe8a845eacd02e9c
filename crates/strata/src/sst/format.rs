//! Table-file framing: block handles, block trailers, compression, footer.
//!
//! Every block is stored as its (possibly compressed) bytes followed by a
//! 5-byte trailer:
//!
//! ```text
//! +---------------------------+-----------+---------------------------+
//! | stored bytes (size bytes) | type: u8  | crc: u32 LE               |
//! +---------------------------+-----------+---------------------------+
//!   crc = CRC-32C(stored bytes ++ type byte)
//!   type 0 = none:  stored bytes are the block contents
//!   type 1 = lz4:   stored bytes = varint(uncompressed len) ++ lz4 block
//!   type 2 = zstd:  stored bytes = varint(uncompressed len) ++ zstd frame
//! ```
//!
//! A block handle, as stored in the index block, is two varints:
//!
//! ```text
//! +----------------------+--------------------+
//! | offset: varint64     | size: varint64     |   (size excludes the trailer)
//! +----------------------+--------------------+
//! ```
//!
//! The footer is the last 64 bytes of the file; every field little-endian:
//!
//! ```text
//!  0      8      16     24     32     40     48     52      56              64
//!  +------+------+------+------+------+------+------+-------+---------------+
//!  |index |index |filter|filter|props |props | crc  |version| magic         |
//!  |offset|size  |offset|size  |offset|size  | u32  | u32   | u64           |
//!  +------+------+------+------+------+------+------+-------+---------------+
//!   (all handle fields u64)     crc = CRC-32C(bytes 0..48)
//!   filter size 0 = the table has no filter block
//!   magic = 0x5453_5354_4154_5253 (bytes "SRTATSST" on disk)
//! ```

use std::cell::RefCell;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use crate::coding::{crc32c, decode_fixed32, decode_fixed64, get_varint64, put_varint64};
use crate::error::{Error, Result};

/// Largest block (stored or uncompressed) the format allows: 64 MiB.
pub const MAX_BLOCK_SIZE: u64 = 64 << 20;

/// Bytes after every stored block: compression type + CRC-32C.
pub const BLOCK_TRAILER_LEN: usize = 5;

/// Size of the fixed footer at the end of every table file.
pub const FOOTER_LEN: usize = 64;

/// The table format version this build writes for files without a
/// compression dictionary.
pub const FORMAT_VERSION: u32 = 1;

/// The version written for files with a zstd compression dictionary (their
/// blocks of type [`COMPRESSION_ZSTD_DICT`] cannot be read without it), and
/// the newest this build reads.
pub const FORMAT_VERSION_DICT: u32 = 2;

/// Magic number in the last 8 bytes of every table file. Stored little-endian
/// it reads `SRTATSST` in a hex dump.
pub const TABLE_MAGIC: u64 = u64::from_le_bytes(*b"SRTATSST");

/// Compression type byte: no compression.
pub const COMPRESSION_NONE: u8 = 0;
/// Compression type byte: LZ4 block format with a varint length prefix.
pub const COMPRESSION_LZ4: u8 = 1;
/// Compression type byte: one zstd frame with a varint length prefix.
pub const COMPRESSION_ZSTD: u8 = 2;
/// Compression type byte: one zstd frame compressed with the file's
/// dictionary (its properties say where the dictionary block is), with a
/// varint length prefix.
pub const COMPRESSION_ZSTD_DICT: u8 = 3;

/// The zstd level used for [`Compression::Zstd`].
pub const ZSTD_LEVEL: i32 = 3;

/// How data blocks are compressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// Stored as is.
    #[default]
    None,
    /// LZ4 (block format).
    Lz4,
    /// Zstandard at level 3.
    Zstd,
}

impl Compression {
    /// The trailer type byte for this compression.
    pub fn code(self) -> u8 {
        match self {
            Compression::None => COMPRESSION_NONE,
            Compression::Lz4 => COMPRESSION_LZ4,
            Compression::Zstd => COMPRESSION_ZSTD,
        }
    }

    /// Decodes a trailer type byte.
    pub fn from_code(code: u8) -> Option<Compression> {
        match code {
            COMPRESSION_NONE => Some(Compression::None),
            COMPRESSION_LZ4 => Some(Compression::Lz4),
            COMPRESSION_ZSTD => Some(Compression::Zstd),
            _ => None,
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        })
    }
}

impl FromStr for Compression {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "none" => Ok(Compression::None),
            "lz4" => Ok(Compression::Lz4),
            "zstd" => Ok(Compression::Zstd),
            _ => Err(Error::InvalidArgument(format!(
                "unknown compression {s:?} (expected none, lz4 or zstd)"
            ))),
        }
    }
}

/// Where a block lives in the file: its offset and stored size (without the
/// 5-byte trailer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

impl BlockHandle {
    /// Longest varint encoding of a handle.
    pub const MAX_ENCODED_LEN: usize = 20;

    /// Appends `offset varint | size varint`.
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
    }

    /// Decodes a handle that must fill `src` exactly.
    pub fn decode_exact(src: &[u8]) -> Option<BlockHandle> {
        let mut cur = src;
        let offset = get_varint64(&mut cur)?;
        let size = get_varint64(&mut cur)?;
        if !cur.is_empty() {
            return None;
        }
        Some(BlockHandle { offset, size })
    }

    /// Offset just past the block's trailer, or `None` on overflow.
    pub fn end_with_trailer(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_LEN as u64)
    }
}

/// Builds the 5-byte trailer for `stored` bytes of compression type `ctype`.
pub fn block_trailer(stored: &[u8], ctype: u8) -> [u8; BLOCK_TRAILER_LEN] {
    let crc = crate::coding::crc32c_two(stored, &[ctype]);
    let c = crc.to_le_bytes();
    [ctype, c[0], c[1], c[2], c[3]]
}

/// Which kind of file a footer ends: its magic, the newest version this
/// build reads and the kind's name in errors. The table layer's
/// column-group files end with this footer layout under their own magic.
pub(crate) struct FooterKind {
    pub magic: u64,
    pub newest_version: u32,
    /// As in "not {name} (magic ...)".
    pub name: &'static str,
}

/// The footer of the core's table files.
pub(crate) const TABLE_FOOTER: FooterKind = FooterKind {
    magic: TABLE_MAGIC,
    newest_version: FORMAT_VERSION_DICT,
    name: "a Strata table file",
};

/// The decoded footer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    pub index: BlockHandle,
    /// `size == 0` means "no filter".
    pub filter: BlockHandle,
    pub properties: BlockHandle,
    pub version: u32,
}

impl Footer {
    /// Serializes the footer (64 bytes).
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        self.encode_as(&TABLE_FOOTER)
    }

    /// Parses the footer read from `offset` of `file`. Checks, in order: the
    /// magic number, the version (0 is corrupt, above [`FORMAT_VERSION`] is
    /// [`Error::UnsupportedVersion`]), then the footer checksum.
    pub fn decode(bytes: &[u8], file: &Path, offset: u64) -> Result<Footer> {
        Footer::decode_as(&TABLE_FOOTER, bytes, file, offset)
    }

    /// [`Footer::encode`] for a file of `kind`.
    pub(crate) fn encode_as(&self, kind: &FooterKind) -> [u8; FOOTER_LEN] {
        let mut out = [0u8; FOOTER_LEN];
        let fields = [
            self.index.offset,
            self.index.size,
            self.filter.offset,
            self.filter.size,
            self.properties.offset,
            self.properties.size,
        ];
        for (i, v) in fields.iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        let crc = crc32c(&out[..48]);
        out[48..52].copy_from_slice(&crc.to_le_bytes());
        out[52..56].copy_from_slice(&self.version.to_le_bytes());
        out[56..64].copy_from_slice(&kind.magic.to_le_bytes());
        out
    }

    /// Reads and decodes the footer of `file` (named `path` in errors), a
    /// file of `kind`: the footer and its offset.
    pub(crate) fn read(
        kind: &FooterKind,
        file: &dyn crate::vfs::RandomAccessFile,
        path: &Path,
    ) -> Result<(Footer, u64)> {
        let len = file.len();
        let Some(offset) = len.checked_sub(FOOTER_LEN as u64) else {
            return Err(Error::corruption(
                path,
                0,
                format!(
                    "file is {len} bytes, shorter than the {FOOTER_LEN}-byte footer of {}",
                    kind.name
                ),
            ));
        };
        let mut buf = [0u8; FOOTER_LEN];
        file.read_exact_at(&mut buf, offset)?;
        Ok((Footer::decode_as(kind, &buf, path, offset)?, offset))
    }

    /// Appends the footer of a file of `kind` to `file`, then flushes and
    /// syncs the file: the last step of every table writer. Returns the
    /// footer's length.
    pub(crate) fn write_and_sync(
        &self,
        kind: &FooterKind,
        file: &mut dyn crate::vfs::WritableFile,
    ) -> Result<u64> {
        let footer = self.encode_as(kind);
        file.append(&footer)?;
        file.flush()?;
        file.sync()?;
        Ok(footer.len() as u64)
    }

    /// [`Footer::decode`] for a file of `kind`.
    pub(crate) fn decode_as(
        kind: &FooterKind,
        bytes: &[u8],
        file: &Path,
        offset: u64,
    ) -> Result<Footer> {
        let corrupt = |reason: String| Error::corruption(file, offset, reason);
        if bytes.len() != FOOTER_LEN {
            return Err(corrupt(format!(
                "footer is {} bytes, expected {FOOTER_LEN}",
                bytes.len()
            )));
        }
        let magic = decode_fixed64(&bytes[56..]).unwrap_or(0);
        if magic != kind.magic {
            return Err(corrupt(format!(
                "not {} (magic {magic:#018x}, expected {:#018x})",
                kind.name, kind.magic
            )));
        }
        let version = decode_fixed32(&bytes[52..]).unwrap_or(0);
        if version == 0 {
            return Err(corrupt("footer has format version 0".to_string()));
        }
        if version > kind.newest_version {
            return Err(Error::UnsupportedVersion {
                file: file.to_path_buf(),
                found: version,
                supported: kind.newest_version,
            });
        }
        let stored_crc = decode_fixed32(&bytes[48..]).unwrap_or(0);
        let crc = crc32c(&bytes[..48]);
        if crc != stored_crc {
            return Err(corrupt(format!(
                "footer checksum mismatch (stored {stored_crc:#010x}, computed {crc:#010x})"
            )));
        }
        let f = |i: usize| decode_fixed64(&bytes[i * 8..]).unwrap_or(0);
        Ok(Footer {
            index: BlockHandle {
                offset: f(0),
                size: f(1),
            },
            filter: BlockHandle {
                offset: f(2),
                size: f(3),
            },
            properties: BlockHandle {
                offset: f(4),
                size: f(5),
            },
            version,
        })
    }
}

/// Builder-side compression with reusable buffers and zstd context.
#[derive(Default)]
pub(crate) struct BlockCompressor {
    scratch: Vec<u8>,
    zstd: Option<zstd::bulk::Compressor<'static>>,
    /// The file's zstd dictionary, digested for compression, and the
    /// context that compresses with it: zstd blocks are then stored as
    /// [`COMPRESSION_ZSTD_DICT`].
    dict: Option<(
        zstd::zstd_safe::CCtx<'static>,
        zstd::zstd_safe::CDict<'static>,
    )>,
}

impl BlockCompressor {
    /// Compresses zstd blocks from now on with `dict`
    /// (`sst::compression_dict`). False when zstd refuses it (the blocks are
    /// then compressed without one).
    pub(crate) fn set_zstd_dictionary(&mut self, dict: &[u8]) -> bool {
        let Some(cdict) = zstd::zstd_safe::CDict::try_create(dict, ZSTD_LEVEL) else {
            return false;
        };
        let Some(cctx) = zstd::zstd_safe::CCtx::try_create() else {
            return false;
        };
        self.dict = Some((cctx, cdict));
        true
    }

    /// Compresses `raw`; returns the type byte and stored bytes, or `None`
    /// when the block should be stored uncompressed (compression off, failed,
    /// or saved less than 12.5%).
    pub(crate) fn compress(&mut self, c: Compression, raw: &[u8]) -> Option<(u8, &[u8])> {
        if c == Compression::None || raw.is_empty() {
            return None;
        }
        self.scratch.clear();
        put_varint64(&mut self.scratch, raw.len() as u64);
        let prefix = self.scratch.len();
        let (ctype, n) = match c {
            Compression::None => return None,
            Compression::Lz4 => {
                self.scratch.resize(
                    prefix + lz4_flex::block::get_maximum_output_size(raw.len()),
                    0,
                );
                let n = lz4_flex::block::compress_into(raw, &mut self.scratch[prefix..]).ok()?;
                (COMPRESSION_LZ4, n)
            }
            Compression::Zstd => {
                self.scratch
                    .resize(prefix + zstd::zstd_safe::compress_bound(raw.len()), 0);
                if let Some((cctx, cdict)) = &mut self.dict {
                    let n = cctx
                        .compress_using_cdict(&mut self.scratch[prefix..], raw, cdict)
                        .ok()?;
                    (COMPRESSION_ZSTD_DICT, n)
                } else {
                    if self.zstd.is_none() {
                        self.zstd = zstd::bulk::Compressor::new(ZSTD_LEVEL).ok();
                    }
                    let z = self.zstd.as_mut()?;
                    let n = z
                        .compress_to_buffer(raw, &mut self.scratch[prefix..])
                        .ok()?;
                    (COMPRESSION_ZSTD, n)
                }
            }
        };
        self.scratch.truncate(prefix + n);
        if self.scratch.len() > raw.len() - raw.len() / 8 {
            return None;
        }
        Some((ctype, &self.scratch[..]))
    }
}

thread_local! {
    static ZSTD_DCTX: RefCell<Option<zstd::zstd_safe::DCtx<'static>>> = const { RefCell::new(None) };
}

/// Turns stored block bytes of type `ctype` into the block contents. Errors
/// are reasons for a corruption report.
pub fn decompress_block(ctype: u8, stored: Vec<u8>) -> std::result::Result<Vec<u8>, String> {
    decompress_block_with(ctype, stored, None)
}

/// [`decompress_block`] for a file whose zstd dictionary is `dict`.
pub(crate) fn decompress_block_with(
    ctype: u8,
    stored: Vec<u8>,
    dict: Option<&ReadDictionary>,
) -> std::result::Result<Vec<u8>, String> {
    if ctype == COMPRESSION_NONE {
        return Ok(stored);
    }
    if ctype != COMPRESSION_LZ4 && ctype != COMPRESSION_ZSTD && ctype != COMPRESSION_ZSTD_DICT {
        return Err(format!("unknown block compression type {ctype}"));
    }
    let dict = if ctype == COMPRESSION_ZSTD_DICT {
        Some(dict.ok_or("block compressed with a zstd dictionary in a file that has none")?)
    } else {
        None
    };
    let mut src = &stored[..];
    let ulen = get_varint64(&mut src).ok_or("compressed block has a bad length prefix")?;
    if ulen > MAX_BLOCK_SIZE {
        return Err(format!(
            "compressed block claims {ulen} uncompressed bytes (limit {MAX_BLOCK_SIZE})"
        ));
    }
    // LZ4 expands at most 255-fold; a larger claim is damage, and checking
    // it first keeps a corrupt length from allocating up to the limit.
    if ctype == COMPRESSION_LZ4 && ulen > (src.len() as u64).saturating_mul(255).saturating_add(64)
    {
        return Err(format!(
            "compressed block of {} bytes claims {ulen} uncompressed bytes",
            src.len()
        ));
    }
    let ulen = ulen as usize;
    // The output buffer is a recycled one when one fits (`buffers`), and
    // the stored bytes' buffer goes back for the next read. Zstd writes
    // into the buffer's capacity; LZ4 into its initialised bytes, of which
    // a recycled buffer usually holds enough already, so little or nothing
    // is zero-filled. lz4_flex is built without `safe-decode`: its
    // pointer-based decoder still checks every read and write against the
    // input and the output (a corrupt block is an error, never an
    // out-of-bounds access), and the block's checksum was verified before
    // this call in any case (docs/design.md, "Dependencies and what we
    // wrote ourselves").
    let mut out = super::buffers::take(ulen);
    if ctype == COMPRESSION_LZ4 {
        out.resize(ulen, 0);
        let n = lz4_flex::block::decompress_into(src, &mut out)
            .map_err(|e| format!("lz4 decompression failed: {e}"))?;
        out.truncate(n);
    } else {
        ZSTD_DCTX.with(|cell| -> std::result::Result<(), String> {
            let mut slot = cell.borrow_mut();
            if slot.is_none() {
                *slot = Some(
                    zstd::zstd_safe::DCtx::try_create().ok_or("cannot create a zstd context")?,
                );
            }
            let d = slot.as_mut().ok_or("no zstd context")?;
            let r = match dict {
                Some(dict) => d.decompress_using_ddict(&mut out, src, &dict.ddict),
                None => d.decompress(&mut out, src),
            };
            r.map(|_| ()).map_err(|code| {
                format!(
                    "zstd decompression failed: {}",
                    zstd::zstd_safe::get_error_name(code)
                )
            })
        })?;
    }
    super::buffers::give(stored);
    let n = out.len();
    if n != ulen {
        return Err(format!(
            "block decompressed to {n} bytes, its header claims {ulen}"
        ));
    }
    Ok(out)
}

/// A file's zstd dictionary, digested for decompression once, when the
/// file is opened.
pub(crate) struct ReadDictionary {
    ddict: zstd::zstd_safe::DDict<'static>,
    bytes: usize,
}

impl ReadDictionary {
    /// Digests `dict`; `None` when zstd refuses it.
    pub(crate) fn new(dict: &[u8]) -> Option<ReadDictionary> {
        Some(ReadDictionary {
            ddict: zstd::zstd_safe::DDict::try_create(dict)?,
            bytes: dict.len(),
        })
    }
}

impl fmt::Debug for ReadDictionary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReadDictionary({} bytes)", self.bytes)
    }
}

/// Appends `raw` (compressed when asked and worthwhile) and its trailer to
/// `file`, whose length is `*offset`; advances `*offset`. Says where the
/// block went and whether it was stored compressed. Every table format
/// frames its blocks this way.
pub(crate) fn write_block(
    file: &mut dyn crate::vfs::WritableFile,
    offset: &mut u64,
    compressor: &mut BlockCompressor,
    compression: Compression,
    raw: &[u8],
) -> Result<(BlockHandle, bool)> {
    // Readers refuse blocks that decompress to more than the limit, so the
    // limit applies before compression.
    if raw.len() as u64 > MAX_BLOCK_SIZE {
        return Err(Error::InvalidArgument(format!(
            "block of {} bytes exceeds the {MAX_BLOCK_SIZE}-byte block limit",
            raw.len()
        )));
    }
    let (ctype, stored) = compressor
        .compress(compression, raw)
        .unwrap_or((COMPRESSION_NONE, raw));
    let trailer = block_trailer(stored, ctype);
    file.append(stored)?;
    file.append(&trailer)?;
    let handle = BlockHandle {
        offset: *offset,
        size: stored.len() as u64,
    };
    *offset += (stored.len() + BLOCK_TRAILER_LEN) as u64;
    Ok((handle, ctype != COMPRESSION_NONE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_lz4_block_claiming_more_than_it_can_expand_to_is_refused_before_allocating() {
        let mut stored = Vec::new();
        crate::coding::put_varint64(&mut stored, 1 << 20);
        stored.extend_from_slice(&[0x10, b'x']);
        let e = decompress_block(COMPRESSION_LZ4, stored).expect_err("refused");
        assert!(e.contains("claims 1048576"), "{e}");
        // A real block still decodes.
        let raw = vec![7u8; 100_000];
        let mut stored = Vec::new();
        crate::coding::put_varint64(&mut stored, raw.len() as u64);
        stored.extend_from_slice(&lz4_flex::block::compress(&raw));
        assert_eq!(
            decompress_block(COMPRESSION_LZ4, stored).expect("valid"),
            raw
        );
    }

    #[test]
    fn compression_parses_and_prints() {
        for c in [Compression::None, Compression::Lz4, Compression::Zstd] {
            let s = c.to_string();
            assert_eq!(s.parse::<Compression>().expect("parse"), c);
            assert_eq!(Compression::from_code(c.code()), Some(c));
        }
        assert_eq!(
            "LZ4".parse::<Compression>().expect("parse"),
            Compression::Lz4
        );
        assert!("snappy".parse::<Compression>().is_err());
        assert_eq!(Compression::from_code(3), None);
    }

    #[test]
    fn footer_round_trips_and_rejects_damage() {
        let f = Footer {
            index: BlockHandle {
                offset: 1000,
                size: 77,
            },
            filter: BlockHandle {
                offset: 900,
                size: 95,
            },
            properties: BlockHandle {
                offset: 1082,
                size: 300,
            },
            version: FORMAT_VERSION,
        };
        let bytes = f.encode();
        assert_eq!(&bytes[56..], b"SRTATSST");
        let p = Path::new("t.sst");
        assert_eq!(Footer::decode(&bytes, p, 5).expect("decode"), f);
        for i in 0..FOOTER_LEN {
            let mut b = bytes;
            b[i] ^= 0x04;
            let e = Footer::decode(&b, p, 5).expect_err("damaged footer accepted");
            match e {
                Error::Corruption { offset, .. } => assert_eq!(offset, 5),
                Error::UnsupportedVersion { found, .. } => {
                    assert!((52..56).contains(&i), "version error from byte {i}");
                    assert!(found > 1);
                }
                other => panic!("unexpected error {other}"),
            }
        }
        let mut b = bytes;
        b[52..56].copy_from_slice(&3u32.to_le_bytes());
        assert!(matches!(
            Footer::decode(&b, p, 0),
            Err(Error::UnsupportedVersion {
                found: 3,
                supported: 2,
                ..
            })
        ));
    }

    #[test]
    fn handle_decoding_is_exact() {
        let h = BlockHandle {
            offset: 1 << 40,
            size: 4096,
        };
        let mut buf = Vec::new();
        h.encode_to(&mut buf);
        assert!(buf.len() <= BlockHandle::MAX_ENCODED_LEN);
        assert_eq!(BlockHandle::decode_exact(&buf), Some(h));
        buf.push(0);
        assert_eq!(BlockHandle::decode_exact(&buf), None);
        assert_eq!(BlockHandle::decode_exact(&buf[..2]), None);
        let big = BlockHandle {
            offset: u64::MAX,
            size: 1,
        };
        assert_eq!(big.end_with_trailer(), None);
    }

    #[test]
    fn compression_round_trips_and_skips_incompressible() {
        let mut c = BlockCompressor::default();
        let raw: Vec<u8> = (0..20_000u32).map(|i| (i % 7) as u8).collect();
        for comp in [Compression::Lz4, Compression::Zstd] {
            let (t, stored) = c.compress(comp, &raw).expect("compressible");
            assert_eq!(t, comp.code());
            assert!(stored.len() < raw.len() / 2);
            let out = decompress_block(t, stored.to_vec()).expect("decompress");
            assert_eq!(out, raw);
        }
        // Random bytes do not compress by 12.5%.
        let mut x = 0x1234_5678_9abc_def0u64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        assert!(c.compress(Compression::Lz4, &noise).is_none());
        assert!(c.compress(Compression::Zstd, &noise).is_none());
        assert!(c.compress(Compression::None, &raw).is_none());
    }

    #[test]
    fn decompression_refuses_bad_lengths() {
        let mut c = BlockCompressor::default();
        let raw = vec![b'a'; 10_000];
        for comp in [Compression::Lz4, Compression::Zstd] {
            let (t, stored) = c.compress(comp, &raw).expect("compressible");
            let stored = stored.to_vec();
            // Claim a larger and a smaller uncompressed size.
            for claim in [10_001u64, 9_999, MAX_BLOCK_SIZE + 1, 0] {
                let mut body = Vec::new();
                put_varint64(&mut body, claim);
                let mut cur = &stored[..];
                get_varint64(&mut cur).expect("prefix");
                body.extend_from_slice(cur);
                assert!(decompress_block(t, body).is_err(), "claim {claim} accepted");
            }
        }
        assert!(decompress_block(9, vec![1, 2, 3]).is_err());
        // A block compressed with a dictionary, read without one.
        let e = decompress_block(COMPRESSION_ZSTD_DICT, vec![4, 0x28, 0xb5, 0x2f, 0xfd])
            .expect_err("no dictionary");
        assert!(e.contains("dictionary"), "{e}");
        assert!(decompress_block(COMPRESSION_LZ4, vec![0xff]).is_err());
    }

    /// Damaged compressed blocks whose checksum was forged (the trailer is
    /// not checked here): the decoders, lz4_flex's pointer-based one
    /// included, must return an error or a block of exactly the claimed
    /// length, never read or write out of bounds (run it under Miri or
    /// AddressSanitizer to check the bounds themselves).
    #[test]
    fn damaged_compressed_blocks_decode_to_errors_or_the_claimed_length() {
        use rand::{Rng, SeedableRng, rngs::StdRng};
        let mut rng = StdRng::seed_from_u64(24);
        let mut c = BlockCompressor::default();
        let raw: Vec<u8> = (0..4096u32)
            .map(|i| {
                if i % 7 == 0 {
                    rng.random()
                } else {
                    (i % 61) as u8
                }
            })
            .collect();
        for comp in [Compression::Lz4, Compression::Zstd] {
            let (t, stored) = c.compress(comp, &raw).expect("compressible");
            let stored = stored.to_vec();
            assert_eq!(decompress_block(t, stored.clone()).expect("intact"), raw);
            let (mut errors, mut decoded) = (0, 0);
            for _ in 0..3_000 {
                let mut bad = stored.clone();
                match rng.random_range(0..3) {
                    0 => {
                        for _ in 0..rng.random_range(1..4) {
                            let i = rng.random_range(0..bad.len());
                            bad[i] ^= 1 << rng.random_range(0..8);
                        }
                    }
                    1 => bad.truncate(rng.random_range(0..bad.len())),
                    _ => {
                        let i = rng.random_range(2..bad.len());
                        let n = rng.random_range(1..64).min(bad.len() - i);
                        rng.fill(&mut bad[i..i + n]);
                    }
                }
                let claim = get_varint64(&mut &bad[..]);
                match decompress_block(t, bad) {
                    Ok(out) => {
                        assert_eq!(
                            Some(out.len() as u64),
                            claim,
                            "{comp}: a length other than the claim"
                        );
                        decoded += 1;
                    }
                    Err(_) => errors += 1,
                }
            }
            assert!(errors > 0, "{comp}: no damage was noticed");
            assert!(errors + decoded == 3_000);
        }
    }
}
