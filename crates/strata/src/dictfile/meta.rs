//! The index block of a dictionary-encoded file, and the kind of its
//! footer.
//!
//! ```text
//! index:  flags: u8                bit 0: the file has a dictionary
//!         [dictionary: offset varint, size varint, values varint]
//!         count: varint            data blocks
//!         per block: offset varint, size varint, rows varint,
//!                    last user key: varint length ++ bytes,
//!                    valued: varint (rows with a value),
//!                    [min code varint, max code varint]  if the file has a
//!                                   dictionary and valued > 0
//! ```

use std::path::Path;

use super::block::CodeStats;
use crate::coding::{get_length_prefixed, get_varint64, put_length_prefixed, put_varint64};
use crate::error::{Error, Result};
use crate::sst::format::{BlockHandle, FooterKind};

/// The format version this build writes and reads.
pub const DICT_FORMAT_VERSION: u32 = 1;

/// Magic number of dictionary-encoded files ("SRTATSDV" little-endian).
pub const DICT_MAGIC: u64 = u64::from_le_bytes(*b"SRTATSDV");

/// The footer: the core table footer's layout under the magic above.
pub(crate) const DICT_FOOTER: FooterKind = FooterKind {
    magic: DICT_MAGIC,
    newest_version: DICT_FORMAT_VERSION,
    name: "a dictionary-encoded file",
};

/// What the index says of one data block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockMeta {
    /// Where the block is.
    pub handle: BlockHandle,
    /// Its rows (at least one).
    pub rows: u64,
    /// Its last user key.
    pub last_key: Vec<u8>,
    /// Its values' codes.
    pub codes: CodeStats,
}

/// The decoded index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Index {
    /// The dictionary block and its number of values, if the file has one.
    pub dictionary: Option<(BlockHandle, u64)>,
    /// The data blocks in file order.
    pub blocks: Vec<BlockMeta>,
}

impl Index {
    /// Appends the encoding.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        out.push(u8::from(self.dictionary.is_some()));
        if let Some((h, values)) = self.dictionary {
            put_varint64(out, h.offset);
            put_varint64(out, h.size);
            put_varint64(out, values);
        }
        put_varint64(out, self.blocks.len() as u64);
        for b in &self.blocks {
            put_varint64(out, b.handle.offset);
            put_varint64(out, b.handle.size);
            put_varint64(out, b.rows);
            put_length_prefixed(out, &b.last_key);
            put_varint64(out, b.codes.valued);
            if self.dictionary.is_some() && b.codes.valued > 0 {
                put_varint64(out, u64::from(b.codes.min));
                put_varint64(out, u64::from(b.codes.max));
            }
        }
    }

    /// Decodes the index read from `offset` of `file`.
    pub fn decode(data: &[u8], file: &Path, offset: u64) -> Result<Index> {
        let bad = |why: &str| Error::corruption(file, offset, format!("index block: {why}"));
        let mut src = data;
        let (&flags, rest) = src.split_first().ok_or_else(|| bad("empty"))?;
        src = rest;
        if flags & !1 != 0 {
            return Err(bad("unknown flags"));
        }
        let mut var = |what: &str| get_varint64(&mut src).ok_or_else(|| bad(what));
        let dictionary = if flags & 1 != 0 {
            let h = BlockHandle {
                offset: var("bad dictionary offset")?,
                size: var("bad dictionary size")?,
            };
            Some((h, var("bad dictionary count")?))
        } else {
            None
        };
        let n = var("bad block count")?;
        if n > data.len() as u64 {
            return Err(bad("block count exceeds the index size"));
        }
        let values = dictionary.map_or(0, |(_, v)| v);
        let mut blocks = Vec::with_capacity((n as usize).min(4096));
        for _ in 0..n {
            let handle = BlockHandle {
                offset: get_varint64(&mut src).ok_or_else(|| bad("bad offset"))?,
                size: get_varint64(&mut src).ok_or_else(|| bad("bad size"))?,
            };
            let rows = get_varint64(&mut src).ok_or_else(|| bad("bad row count"))?;
            if rows == 0 {
                return Err(bad("an empty data block"));
            }
            let last_key = get_length_prefixed(&mut src)
                .ok_or_else(|| bad("bad last key"))?
                .to_vec();
            if blocks
                .last()
                .is_some_and(|p: &BlockMeta| p.last_key >= last_key)
            {
                return Err(bad("last keys do not increase"));
            }
            let valued = get_varint64(&mut src).ok_or_else(|| bad("bad value count"))?;
            if valued > rows {
                return Err(bad("more values than rows"));
            }
            let mut codes = CodeStats {
                valued,
                min: 0,
                max: 0,
            };
            if dictionary.is_some() && valued > 0 {
                let min = get_varint64(&mut src).ok_or_else(|| bad("bad min code"))?;
                let max = get_varint64(&mut src).ok_or_else(|| bad("bad max code"))?;
                if min > max || max >= values {
                    return Err(bad("block codes outside the dictionary"));
                }
                codes.min = min as u32;
                codes.max = max as u32;
            }
            blocks.push(BlockMeta {
                handle,
                rows,
                last_key,
                codes,
            });
        }
        if !src.is_empty() {
            return Err(bad("bytes after the last entry"));
        }
        Ok(Index { dictionary, blocks })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn the_index_round_trips_and_refuses_every_truncation() {
        let index = Index {
            dictionary: Some((
                BlockHandle {
                    offset: 900,
                    size: 77,
                },
                12,
            )),
            blocks: vec![
                BlockMeta {
                    handle: BlockHandle {
                        offset: 0,
                        size: 400,
                    },
                    rows: 10,
                    last_key: b"k09".to_vec(),
                    codes: CodeStats {
                        valued: 9,
                        min: 1,
                        max: 11,
                    },
                },
                BlockMeta {
                    handle: BlockHandle {
                        offset: 405,
                        size: 90,
                    },
                    rows: 2,
                    last_key: b"k11".to_vec(),
                    codes: CodeStats {
                        valued: 0,
                        min: 0,
                        max: 0,
                    },
                },
            ],
        };
        let mut enc = Vec::new();
        index.encode_to(&mut enc);
        let path = PathBuf::from("x.sst");
        assert_eq!(Index::decode(&enc, &path, 0).expect("decodes"), index);
        for cut in 0..enc.len() {
            assert!(Index::decode(&enc[..cut], &path, 0).is_err(), "cut {cut}");
        }
        // A block's largest code at the dictionary's size is refused.
        let mut past = index.clone();
        past.blocks[0].codes.max = 12;
        let mut enc = Vec::new();
        past.encode_to(&mut enc);
        assert!(Index::decode(&enc, &path, 0).is_err());
    }
}
