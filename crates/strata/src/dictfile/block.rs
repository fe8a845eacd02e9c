//! Data blocks of dictionary-encoded files: the shared key section, then
//! the values, either as codes into the file's dictionary or plainly.
//!
//! ```text
//!   key section          rows, flags, keys, trailers (crate::keyblock);
//!                        flags bit 0 PLAIN: values are stored plainly
//!   PLAIN clear:  width: u8, then ceil(rows × width / 8) bytes of codes
//!                 bit-packed (dict::bitpack); a Delete row's code is 0
//!   PLAIN set:    (rows + 1) × u32 offsets, then the value bytes
//! ```

use std::sync::Arc;

use crate::dict::{CodedValue, Dictionary, bitpack};
use crate::key::ValueKind;
use crate::keyblock::{BlockError, KeyRows, KeyRowsBuilder, u32_at};

/// Block flag: the values are stored as bytes, not codes.
pub const PLAIN: u8 = 1;

/// How a block's values are stored.
#[derive(Debug)]
enum Values {
    /// Codes of `width` bits at `range` of the block.
    Codes {
        width: u8,
        range: (usize, usize),
        dict: Arc<Dictionary>,
    },
    /// An offset array and the bytes it indexes.
    Plain {
        offsets: (usize, usize),
        bytes: (usize, usize),
    },
}

/// A parsed, checked data block.
#[derive(Debug)]
pub struct DictBlock {
    data: Vec<u8>,
    keys: KeyRows,
    values: Values,
    /// What the index should say of the block's values.
    stats: CodeStats,
}

impl crate::cache::Recyclable for DictBlock {
    fn into_buffer(self) -> Vec<u8> {
        self.data
    }
}

impl DictBlock {
    /// Parses a block of a file whose dictionary is `dict` (`None`: a file
    /// of plain values). Every code of a row with a value is checked to be
    /// in the dictionary, so no read can go past it.
    pub fn parse(data: Vec<u8>, dict: Option<&Arc<Dictionary>>) -> Result<DictBlock, BlockError> {
        let (keys, flags, mut c) = KeyRows::parse(&data)?;
        let rows = keys.rows();
        let valued = (0..rows)
            .filter(|&r| keys.kind(&data, r) != ValueKind::Delete)
            .count() as u64;
        let mut stats = CodeStats {
            valued,
            min: 0,
            max: 0,
        };
        if flags & !PLAIN != 0 {
            return Err(format!("unknown block flags {flags:#04x}"));
        }
        let values = match (flags & PLAIN != 0, dict) {
            (true, None) => {
                let (offsets, bytes) = c.offsets_and_bytes(rows, "value")?;
                Values::Plain { offsets, bytes }
            }
            (false, Some(dict)) => {
                let width = c.byte("code width")?;
                let needed = bitpack::width_for(dict.len().saturating_sub(1) as u32);
                if width > needed {
                    return Err(format!(
                        "codes of {width} bits for a dictionary of {} values",
                        dict.len()
                    ));
                }
                let range = c.take(bitpack::packed_len(rows, width), "codes")?;
                let packed = &data[range.0..range.1];
                let (mut min, mut max) = (u32::MAX, 0u32);
                // Without tombstones every code is a value's (the common
                // case): no kind to look at per row.
                if valued == rows as u64 {
                    bitpack::for_each(packed, width, rows, |_, c| {
                        min = min.min(c);
                        max = max.max(c);
                    });
                } else {
                    bitpack::for_each(packed, width, rows, |r, c| {
                        if keys.kind(&data, r) != ValueKind::Delete {
                            min = min.min(c);
                            max = max.max(c);
                        }
                    });
                }
                if valued > 0 {
                    if max as usize >= dict.len() {
                        return Err(format!(
                            "a row has code {max}; the dictionary has {} values",
                            dict.len()
                        ));
                    }
                    (stats.min, stats.max) = (min, max);
                }
                Values::Codes {
                    width,
                    range,
                    dict: Arc::clone(dict),
                }
            }
            (true, Some(_)) => return Err("plain values in a file with a dictionary".into()),
            (false, None) => return Err("codes in a file without a dictionary".into()),
        };
        if c.pos() != data.len() {
            return Err("bytes after the values".into());
        }
        Ok(DictBlock {
            data,
            keys,
            values,
            stats,
        })
    }

    /// The rows with a value and their smallest and largest code (0 and 0
    /// for plain values), as the block's index entry must say.
    pub fn code_stats(&self) -> CodeStats {
        self.stats
    }

    /// The key section and the bytes it indexes.
    pub fn key_rows(&self) -> (&KeyRows, &[u8]) {
        (&self.keys, &self.data)
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.keys.rows()
    }

    /// Bytes held (the cache's weight).
    pub fn size_bytes(&self) -> usize {
        // (The buffer's capacity: a recycled one may be larger than the
        // block.)
        self.data.capacity() + std::mem::size_of::<DictBlock>()
    }

    /// Row `r`'s value (empty for a tombstone).
    #[inline]
    pub fn value(&self, r: usize) -> &[u8] {
        if self.keys.kind(&self.data, r) == ValueKind::Delete {
            return &[];
        }
        match &self.values {
            Values::Codes { width, range, dict } => {
                dict.value(bitpack::get(&self.data[range.0..range.1], *width, r))
            }
            Values::Plain { offsets, bytes } => {
                let a = u32_at(&self.data, offsets.0 + r * 4) as usize;
                let b = u32_at(&self.data, offsets.0 + r * 4 + 4) as usize;
                &self.data[bytes.0 + a..bytes.0 + b]
            }
        }
    }

    /// Row `r`'s value as a code into the file's dictionary (`None` for a
    /// tombstone or a block of plain values).
    pub fn value_code(&self, r: usize) -> Option<CodedValue<'_>> {
        match &self.values {
            Values::Codes { width, range, dict }
                if self.keys.kind(&self.data, r) != ValueKind::Delete =>
            {
                Some(CodedValue {
                    dictionary: dict,
                    code: bitpack::get(&self.data[range.0..range.1], *width, r),
                })
            }
            _ => None,
        }
    }

    /// The packed codes and their width, for a block of codes.
    pub fn codes(&self) -> Option<(&[u8], u8)> {
        match &self.values {
            Values::Codes { width, range, .. } => Some((&self.data[range.0..range.1], *width)),
            Values::Plain { .. } => None,
        }
    }
}

/// Builds one data block.
#[derive(Default)]
pub struct DictBlockBuilder {
    keys: KeyRowsBuilder,
    codes: Vec<u32>,
    offsets: Vec<u32>,
    bytes: Vec<u8>,
    max_code: u32,
    min_code: u32,
    valued: u64,
}

/// What the index records of a block's values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodeStats {
    /// Rows with a value (Put and Merge).
    pub valued: u64,
    /// The smallest and largest code among them (0, 0 when there are none
    /// or the values are plain).
    pub min: u32,
    /// See `min`.
    pub max: u32,
}

impl DictBlockBuilder {
    /// Adds a row whose value is code `code` (ignored for a tombstone).
    pub fn add_code(&mut self, user_key: &[u8], trailer: u64, code: u32) {
        let valued = (trailer & 0xff) as u8 != ValueKind::Delete as u8;
        self.keys.add(user_key, trailer);
        if valued {
            if self.valued == 0 {
                self.min_code = code;
                self.max_code = code;
            }
            self.min_code = self.min_code.min(code);
            self.max_code = self.max_code.max(code);
            self.valued += 1;
        }
        self.codes.push(if valued { code } else { 0 });
    }

    /// Adds a row whose value is stored plainly.
    pub fn add_plain(&mut self, user_key: &[u8], trailer: u64, value: &[u8]) {
        let valued = (trailer & 0xff) as u8 != ValueKind::Delete as u8;
        self.keys.add(user_key, trailer);
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        if valued {
            self.bytes.extend_from_slice(value);
            self.valued += 1;
        }
        self.offsets.push(self.bytes.len() as u32);
    }

    /// Rows added.
    pub fn rows(&self) -> usize {
        self.keys.rows()
    }

    /// Approximate encoded size.
    pub fn size_estimate(&self) -> usize {
        let codes = bitpack::packed_len(self.codes.len(), bitpack::width_for(self.max_code));
        self.keys.size_estimate() + codes + self.offsets.len() * 4 + self.bytes.len()
    }

    /// The last user key added.
    pub fn last_key(&self) -> &[u8] {
        self.keys.last_key()
    }

    /// Encodes the block into `out` (cleared) and resets the builder;
    /// returns what the index records of its values.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> CodeStats {
        out.clear();
        let plain = !self.offsets.is_empty();
        self.keys.finish(if plain { PLAIN } else { 0 }, out);
        let stats = if plain {
            for o in &self.offsets {
                out.extend_from_slice(&o.to_le_bytes());
            }
            out.extend_from_slice(&self.bytes);
            CodeStats {
                valued: self.valued,
                min: 0,
                max: 0,
            }
        } else {
            let width = bitpack::width_for(self.max_code);
            out.push(width);
            bitpack::pack(&self.codes, width, out);
            CodeStats {
                valued: self.valued,
                min: self.min_code,
                max: self.max_code,
            }
        };
        *self = DictBlockBuilder::default();
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::SeqNo;
    use crate::key::pack_trailer;

    fn dict() -> Arc<Dictionary> {
        Arc::new(Dictionary::from_sorted([&b"apple"[..], b"fig", b"pear"]).expect("sorted"))
    }

    #[test]
    fn coded_and_plain_blocks_give_back_their_values() {
        let d = dict();
        let mut b = DictBlockBuilder::default();
        b.add_code(b"k1", pack_trailer(SeqNo(9), ValueKind::Put as u8), 2);
        b.add_code(b"k1", pack_trailer(SeqNo(3), ValueKind::Delete as u8), 0);
        b.add_code(b"k2", pack_trailer(SeqNo(4), ValueKind::Merge as u8), 1);
        let mut out = Vec::new();
        let stats = b.finish(&mut out);
        assert_eq!(
            stats,
            CodeStats {
                valued: 2,
                min: 1,
                max: 2
            }
        );
        let block = DictBlock::parse(out.clone(), Some(&d)).expect("parses");
        assert_eq!(block.value(0), b"pear");
        assert_eq!(block.value(1), b"");
        assert_eq!(block.value(2), b"fig");
        assert!(
            DictBlock::parse(out, None).is_err(),
            "codes need a dictionary"
        );

        let mut p = DictBlockBuilder::default();
        p.add_plain(b"a", pack_trailer(SeqNo(1), ValueKind::Put as u8), b"x\0y");
        p.add_plain(b"b", pack_trailer(SeqNo(1), ValueKind::Delete as u8), b"");
        let mut out = Vec::new();
        p.finish(&mut out);
        let block = DictBlock::parse(out, None).expect("parses");
        assert_eq!(block.value(0), b"x\0y");
        assert_eq!(block.value(1), b"");
    }

    #[test]
    fn a_code_past_the_dictionary_is_refused() {
        let mut b = DictBlockBuilder::default();
        b.add_code(b"k", pack_trailer(SeqNo(1), ValueKind::Put as u8), 3);
        let mut out = Vec::new();
        b.finish(&mut out);
        let four =
            Arc::new(Dictionary::from_sorted([&b"a"[..], b"b", b"c", b"d"]).expect("sorted"));
        assert!(DictBlock::parse(out.clone(), Some(&four)).is_ok());
        let err = DictBlock::parse(out, Some(&dict())).expect_err("code 3 of 3 values");
        assert!(err.contains("code"), "{err}");
    }

    #[test]
    fn damaged_blocks_are_errors_never_panics() {
        let mut b = DictBlockBuilder::default();
        for i in 0..40u32 {
            let k = format!("key{i:03}");
            b.add_code(
                k.as_bytes(),
                pack_trailer(SeqNo(u64::from(i) + 1), 1),
                i % 3,
            );
        }
        let mut out = Vec::new();
        b.finish(&mut out);
        let d = dict();
        for cut in 0..out.len() {
            assert!(DictBlock::parse(out[..cut].to_vec(), Some(&d)).is_err());
        }
        for i in 0..out.len() {
            for flip in [0x01u8, 0x80] {
                let mut bad = out.clone();
                bad[i] ^= flip;
                // Either refused or parsed; a parsed block's values are
                // dictionary values.
                if let Ok(block) = DictBlock::parse(bad, Some(&d)) {
                    for r in 0..block.rows() {
                        let v = block.value(r);
                        assert!(v.is_empty() || d.code_of(v).is_some());
                    }
                }
            }
        }
    }
}
