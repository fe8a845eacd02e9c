//! The meta blocks of a column-group file: the index (one entry per data
//! block, with column statistics) and the properties; and the kind of its
//! footer, whose layout and code are the core's ([`Footer`]).
//!
//! [`Footer`]: crate::sst::format::Footer
//!
//! ```text
//! index:      count: varint, then per data block:
//!               offset: varint, size: varint, rows: varint,
//!               last user key: varint length ++ bytes,
//!               per column of the group:
//!                 flags: u8 (bit 0 min follows, bit 1 max follows,
//!                        bit 2 min and max are codes into the file's
//!                        dictionary of the column, 4 bytes each)
//!                 present: varint, nulls: varint,
//!                 [min: varint length ++ bytes] [max: varint length ++ bytes]
//! properties: version: varint (= 1), then fields tag: varint
//!             (number << 1 | wire; wire 0 varint, wire 1 length-prefixed
//!             bytes) as in the core's properties block. Numbers:
//!             1 entries, 2 deletions, 3 merges, 4 smallest seqno,
//!             5 largest seqno, 6 smallest internal key, 7 largest internal
//!             key, 8 data blocks, 9 owner database id, 10 file number,
//!             11 group id, 12 columns (count varint, then per column the
//!             value-column number varint and type code u8), 13 data size,
//!             14 dictionaries (count varint, then per dictionary the
//!             value-column number, block offset, block size and value
//!             count, varints).
//!             Fields 1-8 and 11-13 are required; unknown ones are skipped.
//! footer:     64 bytes, the core table footer's layout (index, filter and
//!             properties handles as u64 pairs, CRC-32C of those 48 bytes,
//!             format version u32: 2 when the file has a dictionary, else 1)
//!             with magic "SRTATSCG".
//! ```

use std::path::Path;

use super::block::ColumnStats;
use crate::coding::{get_length_prefixed, get_varint64, put_length_prefixed, put_varint64};
use crate::error::{Error, Result};
use crate::sst::format::{BlockHandle, FooterKind};
use crate::table::schema::ColumnType;

/// The newest column-group file format version, which this build writes
/// for files with a dictionary (and reads).
pub const CG_FORMAT_VERSION: u32 = 2;

/// The version of files without dictionaries, which builds before
/// dictionaries read too.
pub const CG_FORMAT_VERSION_PLAIN: u32 = 1;

/// Magic number of column-group files ("SRTATSCG" little-endian).
pub const CG_MAGIC: u64 = u64::from_le_bytes(*b"SRTATSCG");

/// The footer: the core table footer's layout under the magic above.
pub(crate) const CG_FOOTER: FooterKind = FooterKind {
    magic: CG_MAGIC,
    newest_version: CG_FORMAT_VERSION,
    name: "a column-group file",
};

/// Cleanup's probe of a column-group file's owner (field 9 of its
/// properties), handed to the core when a database opens
/// (`table_format::OwnerProbe`).
pub(crate) const OWNER_PROBE: crate::table_format::OwnerProbe = crate::table_format::OwnerProbe {
    footer: &CG_FOOTER,
    owner: |raw, path, offset| Ok(CgProperties::decode(raw, path, offset)?.owner_db_id),
};

/// What the index says of one data block.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockMeta {
    /// Where the block is.
    pub handle: BlockHandle,
    /// Its rows.
    pub rows: u64,
    /// Its last user key.
    pub last_key: Vec<u8>,
    /// Per column of the group.
    pub stats: Vec<ColumnStats>,
}

/// Encodes the index.
pub fn encode_index(blocks: &[BlockMeta], out: &mut Vec<u8>) {
    put_varint64(out, blocks.len() as u64);
    for b in blocks {
        put_varint64(out, b.handle.offset);
        put_varint64(out, b.handle.size);
        put_varint64(out, b.rows);
        put_length_prefixed(out, &b.last_key);
        for s in &b.stats {
            let mut flags = 0u8;
            if s.min.is_some() {
                flags |= 1;
            }
            if s.max.is_some() {
                flags |= 2;
            }
            if s.codes {
                flags |= 4;
            }
            out.push(flags);
            put_varint64(out, s.present);
            put_varint64(out, s.nulls);
            if let Some(m) = &s.min {
                put_length_prefixed(out, m);
            }
            if let Some(m) = &s.max {
                put_length_prefixed(out, m);
            }
        }
    }
}

/// Decodes the index of a file whose group has `columns` columns.
pub fn decode_index(
    data: &[u8],
    columns: usize,
    file: &Path,
    offset: u64,
) -> Result<Vec<BlockMeta>> {
    let bad = |why: &str| Error::corruption(file, offset, format!("index block: {why}"));
    let mut src = data;
    let n = get_varint64(&mut src).ok_or_else(|| bad("bad block count"))?;
    if n > data.len() as u64 {
        return Err(bad("block count exceeds the index size"));
    }
    // Bounded: the count is the file's claim, not yet checked against the
    // entries that follow.
    let mut out = Vec::with_capacity((n as usize).min(4096));
    for _ in 0..n {
        let offset = get_varint64(&mut src).ok_or_else(|| bad("bad offset"))?;
        let size = get_varint64(&mut src).ok_or_else(|| bad("bad size"))?;
        let rows = get_varint64(&mut src).ok_or_else(|| bad("bad row count"))?;
        if rows == 0 {
            return Err(bad("an empty data block"));
        }
        let last_key = get_length_prefixed(&mut src)
            .ok_or_else(|| bad("bad last key"))?
            .to_vec();
        let mut stats = Vec::with_capacity(columns);
        for _ in 0..columns {
            let (&flags, rest) = src.split_first().ok_or_else(|| bad("truncated stats"))?;
            src = rest;
            if flags & !7 != 0 {
                return Err(bad("unknown statistics flags"));
            }
            let codes = flags & 4 != 0;
            let present = get_varint64(&mut src).ok_or_else(|| bad("bad present count"))?;
            let nulls = get_varint64(&mut src).ok_or_else(|| bad("bad null count"))?;
            if nulls > present || present > rows {
                return Err(bad("column counts exceed the block's rows"));
            }
            let mut read = |on: bool| -> Result<Option<Vec<u8>>> {
                if !on {
                    return Ok(None);
                }
                Ok(Some(
                    get_length_prefixed(&mut src)
                        .ok_or_else(|| bad("bad min/max"))?
                        .to_vec(),
                ))
            };
            let min = read(flags & 1 != 0)?;
            let max = read(flags & 2 != 0)?;
            if codes
                && [&min, &max]
                    .iter()
                    .any(|m| m.as_ref().is_some_and(|m| m.len() != 4))
            {
                return Err(bad("a code bound that is not 4 bytes"));
            }
            stats.push(ColumnStats {
                present,
                nulls,
                min,
                max,
                codes,
            });
        }
        out.push(BlockMeta {
            handle: BlockHandle { offset, size },
            rows,
            last_key,
            stats,
        });
    }
    if !src.is_empty() {
        return Err(bad("bytes after the last entry"));
    }
    // Strictly: a key's versions never span two blocks (point reads read
    // one block per file).
    for w in out.windows(2) {
        if w[0].last_key >= w[1].last_key {
            return Err(bad("blocks out of key order"));
        }
    }
    Ok(out)
}

/// Facts about a column-group file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CgProperties {
    /// Rows.
    pub num_entries: u64,
    /// Tombstone rows.
    pub num_deletions: u64,
    /// Partial-update rows.
    pub num_merges: u64,
    /// Smallest sequence number.
    pub smallest_seqno: u64,
    /// Largest sequence number.
    pub largest_seqno: u64,
    /// Smallest internal key.
    pub smallest: Vec<u8>,
    /// Largest internal key.
    pub largest: Vec<u8>,
    /// Data blocks.
    pub num_blocks: u64,
    /// The database that wrote the file (empty if not recorded).
    pub owner_db_id: Vec<u8>,
    /// The number the database gave the file (0 if not recorded).
    pub file_number: u64,
    /// The group the file belongs to.
    pub group: u32,
    /// The group's columns: value-column numbers and their types.
    pub columns: Vec<(usize, ColumnType)>,
    /// Bytes of data blocks with their trailers.
    pub data_size: u64,
    /// The dictionaries of the columns stored as codes.
    pub dictionaries: Vec<DictionaryMeta>,
}

/// Where a column's dictionary is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DictionaryMeta {
    /// The value column.
    pub column: usize,
    /// The dictionary block.
    pub handle: BlockHandle,
    /// Its values.
    pub values: u64,
}

const VERSION: u64 = 1;

impl CgProperties {
    /// Encodes the properties.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        put_varint64(out, VERSION);
        let int = |out: &mut Vec<u8>, n: u64, v: u64| {
            put_varint64(out, n << 1);
            put_varint64(out, v);
        };
        let bytes = |out: &mut Vec<u8>, n: u64, v: &[u8]| {
            put_varint64(out, (n << 1) | 1);
            put_length_prefixed(out, v);
        };
        int(out, 1, self.num_entries);
        int(out, 2, self.num_deletions);
        int(out, 3, self.num_merges);
        int(out, 4, self.smallest_seqno);
        int(out, 5, self.largest_seqno);
        bytes(out, 6, &self.smallest);
        bytes(out, 7, &self.largest);
        int(out, 8, self.num_blocks);
        if !self.owner_db_id.is_empty() {
            bytes(out, 9, &self.owner_db_id);
            int(out, 10, self.file_number);
        }
        int(out, 11, u64::from(self.group));
        let mut cols = Vec::new();
        put_varint64(&mut cols, self.columns.len() as u64);
        for (v, t) in &self.columns {
            put_varint64(&mut cols, *v as u64);
            cols.push(t.code());
        }
        bytes(out, 12, &cols);
        int(out, 13, self.data_size);
        if !self.dictionaries.is_empty() {
            let mut d = Vec::new();
            put_varint64(&mut d, self.dictionaries.len() as u64);
            for m in &self.dictionaries {
                put_varint64(&mut d, m.column as u64);
                put_varint64(&mut d, m.handle.offset);
                put_varint64(&mut d, m.handle.size);
                put_varint64(&mut d, m.values);
            }
            bytes(out, 14, &d);
        }
    }

    /// Decodes properties.
    pub fn decode(data: &[u8], file: &Path, offset: u64) -> Result<CgProperties> {
        let bad = |why: String| Error::corruption(file, offset, format!("properties: {why}"));
        let mut src = data;
        let version = get_varint64(&mut src).ok_or_else(|| bad("bad version".into()))?;
        if version > VERSION {
            return Err(Error::UnsupportedVersion {
                file: file.to_path_buf(),
                found: u32::try_from(version).unwrap_or(u32::MAX),
                supported: VERSION as u32,
            });
        }
        if version != VERSION {
            return Err(bad(format!("unknown version {version}")));
        }
        let mut p = CgProperties::default();
        let mut seen = 0u64;
        while !src.is_empty() {
            let tag = get_varint64(&mut src).ok_or_else(|| bad("bad tag".into()))?;
            let (n, wire) = (tag >> 1, tag & 1);
            // Known fields must come with their own wire type.
            let want_wire = match n {
                6 | 7 | 9 | 12 | 14 => Some(1),
                1..=5 | 8 | 10 | 11 | 13 => Some(0),
                _ => None,
            };
            if want_wire.is_some_and(|w| w != wire) {
                return Err(bad(format!("field {n} has the wrong wire type")));
            }
            if wire == 0 {
                let v = get_varint64(&mut src).ok_or_else(|| bad(format!("bad field {n}")))?;
                match n {
                    1 => p.num_entries = v,
                    2 => p.num_deletions = v,
                    3 => p.num_merges = v,
                    4 => p.smallest_seqno = v,
                    5 => p.largest_seqno = v,
                    8 => p.num_blocks = v,
                    10 => p.file_number = v,
                    11 => {
                        p.group = u32::try_from(v).map_err(|_| bad("group id too large".into()))?
                    }
                    13 => p.data_size = v,
                    _ => {}
                }
            } else {
                let v =
                    get_length_prefixed(&mut src).ok_or_else(|| bad(format!("bad field {n}")))?;
                match n {
                    6 => p.smallest = v.to_vec(),
                    7 => p.largest = v.to_vec(),
                    9 => p.owner_db_id = v.to_vec(),
                    12 => {
                        p.columns =
                            decode_columns(v).ok_or_else(|| bad("bad column list".into()))?
                    }
                    14 => {
                        p.dictionaries = decode_dictionaries(v)
                            .ok_or_else(|| bad("bad dictionary list".into()))?
                    }
                    _ => {}
                }
            }
            if n < 64 {
                seen |= 1 << n;
            }
        }
        for required in [1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13] {
            if seen & (1 << required) == 0 {
                return Err(bad(format!("required field {required} is missing")));
            }
        }
        if p.num_deletions.saturating_add(p.num_merges) > p.num_entries {
            return Err(bad("more deletions and merges than entries".into()));
        }
        Ok(p)
    }
}

fn decode_dictionaries(mut v: &[u8]) -> Option<Vec<DictionaryMeta>> {
    let n = get_varint64(&mut v)?;
    if n > v.len() as u64 {
        return None;
    }
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let column = usize::try_from(get_varint64(&mut v)?).ok()?;
        let offset = get_varint64(&mut v)?;
        let size = get_varint64(&mut v)?;
        let values = get_varint64(&mut v)?;
        out.push(DictionaryMeta {
            column,
            handle: BlockHandle { offset, size },
            values,
        });
    }
    v.is_empty().then_some(out)
}

fn decode_columns(mut v: &[u8]) -> Option<Vec<(usize, ColumnType)>> {
    let n = get_varint64(&mut v)?;
    if n > v.len() as u64 {
        return None;
    }
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let c = usize::try_from(get_varint64(&mut v)?).ok()?;
        let (&code, rest) = v.split_first()?;
        v = rest;
        out.push((c, ColumnType::from_code(code)?));
    }
    v.is_empty().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sst::format::{FOOTER_LEN, Footer};

    #[test]
    fn index_and_properties_round_trip_and_truncations_are_errors() {
        let p = Path::new("t");
        let blocks = vec![
            BlockMeta {
                handle: BlockHandle {
                    offset: 0,
                    size: 100,
                },
                rows: 10,
                last_key: b"k9".to_vec(),
                stats: vec![
                    ColumnStats {
                        present: 10,
                        nulls: 2,
                        min: Some(vec![1, 0, 0, 0]),
                        max: Some(vec![9, 0, 0, 0]),
                        codes: true,
                    },
                    ColumnStats {
                        present: 4,
                        nulls: 4,
                        min: None,
                        max: None,
                        codes: false,
                    },
                ],
            },
            BlockMeta {
                handle: BlockHandle {
                    offset: 105,
                    size: 90,
                },
                rows: 3,
                last_key: b"kz".to_vec(),
                stats: vec![
                    ColumnStats::default(),
                    ColumnStats {
                        present: 3,
                        nulls: 0,
                        min: Some(b"a".to_vec()),
                        max: None,
                        codes: false,
                    },
                ],
            },
        ];
        let mut enc = Vec::new();
        encode_index(&blocks, &mut enc);
        assert_eq!(decode_index(&enc, 2, p, 0).expect("index"), blocks);
        for cut in 0..enc.len() {
            assert!(decode_index(&enc[..cut], 2, p, 0).is_err(), "cut {cut}");
        }
        let props = CgProperties {
            num_entries: 13,
            num_deletions: 1,
            num_merges: 2,
            smallest_seqno: 4,
            largest_seqno: 40,
            smallest: b"a\x01\0\0\0\0\0\0\0".to_vec(),
            largest: b"z\x01\0\0\0\0\0\0\0".to_vec(),
            num_blocks: 2,
            owner_db_id: vec![7; 16],
            file_number: 12,
            group: 3,
            columns: vec![(4, ColumnType::Int32), (5, ColumnType::Utf8)],
            data_size: 200,
            dictionaries: vec![DictionaryMeta {
                column: 5,
                handle: BlockHandle {
                    offset: 195,
                    size: 40,
                },
                values: 3,
            }],
        };
        let mut enc = Vec::new();
        props.encode_to(&mut enc);
        assert_eq!(CgProperties::decode(&enc, p, 0).expect("props"), props);
        // Field 14 is optional: cut just before it, the properties are
        // those of a file without dictionaries; every other cut is an error.
        let plain = CgProperties {
            dictionaries: Vec::new(),
            ..props.clone()
        };
        let mut plain_enc = Vec::new();
        plain.encode_to(&mut plain_enc);
        for cut in 1..enc.len() {
            let r = CgProperties::decode(&enc[..cut], p, 0);
            if cut == plain_enc.len() {
                assert_eq!(r.expect("props without field 14"), plain);
            } else {
                assert!(r.is_err(), "cut {cut}");
            }
        }
        // A known field with the other wire type, a newer version and
        // counts that overflow are errors, not misreadings or panics.
        let mut wrong_wire = vec![1u8];
        put_varint64(&mut wrong_wire, (1 << 1) | 1);
        put_length_prefixed(&mut wrong_wire, b"x");
        let e = CgProperties::decode(&wrong_wire, p, 0).expect_err("wire");
        assert!(e.to_string().contains("wrong wire type"), "{e}");
        let mut newer = enc.clone();
        newer[0] = 2;
        assert!(matches!(
            CgProperties::decode(&newer, p, 0),
            Err(Error::UnsupportedVersion { found: 2, .. })
        ));
        let mut huge = props.clone();
        (huge.num_deletions, huge.num_merges) = (u64::MAX, u64::MAX);
        let mut henc = Vec::new();
        huge.encode_to(&mut henc);
        assert!(CgProperties::decode(&henc, p, 0).is_err());
        // Two blocks may not end with the same key: a key's versions share
        // one block.
        let mut same = blocks.clone();
        same[1].last_key = same[0].last_key.clone();
        let mut senc = Vec::new();
        encode_index(&same, &mut senc);
        assert!(decode_index(&senc, 2, p, 0).is_err());
        let footer = Footer {
            index: BlockHandle { offset: 1, size: 2 },
            filter: BlockHandle { offset: 3, size: 0 },
            properties: BlockHandle { offset: 5, size: 6 },
            version: CG_FORMAT_VERSION,
        };
        let bytes = footer.encode_as(&CG_FOOTER);
        assert_eq!(
            Footer::decode_as(&CG_FOOTER, &bytes, p, 0).expect("footer"),
            footer
        );
        for i in 0..FOOTER_LEN {
            let mut bad = bytes;
            bad[i] ^= 1;
            assert!(
                Footer::decode_as(&CG_FOOTER, &bad, p, 0).is_err(),
                "byte {i}"
            );
        }
    }
}
