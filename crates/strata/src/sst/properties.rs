//! The properties block of a table: facts about the table, stored as
//! tagged fields after a version:
//!
//! ```text
//! +-------------------+-----------------------------+-----+
//! | version: varint   | field                       | ... |
//! | (= 1)             | tag: varint = number<<1|wire|     |
//! |                   | wire 0: value varint64      |     |
//! |                   | wire 1: len varint ++ bytes |     |
//! +-------------------+-----------------------------+-----+
//! ```
//!
//! Field numbers: 1 num_entries, 2 num_deletions, 3 num_merges,
//! 4 raw_key_bytes, 5 raw_value_bytes, 6 data_size, 7 index_size,
//! 8 filter_size, 9 smallest_seqno, 10 largest_seqno, 11 smallest (bytes),
//! 12 largest (bytes), 13 num_data_blocks, 14 compression (0/1/2),
//! 15 num_compressed_blocks, 16 bloom_bits_per_key. Fields 1..=16 are all
//! required in version 1; unknown field numbers are skipped by wire type.
//! Optional: 17 owner_db_id (bytes) and 18 owner_file_number, together;
//! 19 compression_dict (bytes: the zstd dictionary block's handle).

use std::path::Path;

use super::format::{BlockHandle, Compression};
use crate::coding::{get_length_prefixed, get_varint64, put_length_prefixed, put_varint64};
use crate::error::{Error, Result};

/// Version of the properties encoding written by this build.
pub const PROPERTIES_VERSION: u64 = 1;

/// Facts about a table, stored in its properties block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableProperties {
    pub num_entries: u64,
    /// Entries of kind [`crate::key::ValueKind::Delete`].
    pub num_deletions: u64,
    /// Entries of kind [`crate::key::ValueKind::Merge`].
    pub num_merges: u64,
    /// Sum of internal-key lengths.
    pub raw_key_bytes: u64,
    pub raw_value_bytes: u64,
    /// Bytes of data blocks including trailers (= offset of the first meta
    /// block).
    pub data_size: u64,
    /// Bytes of the index block including its trailer.
    pub index_size: u64,
    /// Bytes of the filter block including its trailer (0 = no filter).
    pub filter_size: u64,
    pub smallest_seqno: u64,
    pub largest_seqno: u64,
    /// Smallest internal key (empty for an empty table).
    pub smallest: Vec<u8>,
    /// Largest internal key (empty for an empty table).
    pub largest: Vec<u8>,
    pub num_data_blocks: u64,
    /// The compression the writer was configured with.
    pub compression: Compression,
    /// Data blocks actually stored compressed.
    pub num_compressed_blocks: u64,
    pub bloom_bits_per_key: u32,
    /// The database that wrote the table and the file number it gave it
    /// (empty and 0 for tables written before the owner was recorded).
    /// Recovery removes an unreferenced table only when it carries the
    /// database's own id.
    pub owner_db_id: Vec<u8>,
    pub owner_file_number: u64,
    /// Where the file's zstd dictionary is, if it has one (its blocks of
    /// type `COMPRESSION_ZSTD_DICT` need it).
    pub compression_dict: Option<BlockHandle>,
}

/// Optional fields (absent in older tables): the owner's database id and
/// the file number.
const FIELD_OWNER_DB_ID: u64 = 17;
const FIELD_OWNER_FILE_NUMBER: u64 = 18;
/// Optional: the zstd dictionary block's handle.
const FIELD_COMPRESSION_DICT: u64 = 19;

const WIRE_VARINT: u64 = 0;
const WIRE_BYTES: u64 = 1;
const NUM_PROPERTY_FIELDS: u64 = 16;

impl TableProperties {
    /// Appends the properties-block encoding.
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, PROPERTIES_VERSION);
        let varints = [
            (1, self.num_entries),
            (2, self.num_deletions),
            (3, self.num_merges),
            (4, self.raw_key_bytes),
            (5, self.raw_value_bytes),
            (6, self.data_size),
            (7, self.index_size),
            (8, self.filter_size),
            (9, self.smallest_seqno),
            (10, self.largest_seqno),
        ];
        for (field, v) in varints {
            put_varint64(dst, field << 1 | WIRE_VARINT);
            put_varint64(dst, v);
        }
        put_varint64(dst, 11 << 1 | WIRE_BYTES);
        put_length_prefixed(dst, &self.smallest);
        put_varint64(dst, 12 << 1 | WIRE_BYTES);
        put_length_prefixed(dst, &self.largest);
        let varints = [
            (13, self.num_data_blocks),
            (14, u64::from(self.compression.code())),
            (15, self.num_compressed_blocks),
            (16, u64::from(self.bloom_bits_per_key)),
        ];
        for (field, v) in varints {
            put_varint64(dst, field << 1 | WIRE_VARINT);
            put_varint64(dst, v);
        }
        if !self.owner_db_id.is_empty() {
            put_varint64(dst, FIELD_OWNER_DB_ID << 1 | WIRE_BYTES);
            put_length_prefixed(dst, &self.owner_db_id);
            put_varint64(dst, FIELD_OWNER_FILE_NUMBER << 1 | WIRE_VARINT);
            put_varint64(dst, self.owner_file_number);
        }
        if let Some(h) = self.compression_dict {
            let mut handle = Vec::new();
            h.encode_to(&mut handle);
            put_varint64(dst, FIELD_COMPRESSION_DICT << 1 | WIRE_BYTES);
            put_length_prefixed(dst, &handle);
        }
    }

    /// Decodes a properties block read from `offset` of `file`.
    pub fn decode(data: &[u8], file: &Path, offset: u64) -> Result<TableProperties> {
        let corrupt = |r: String| Error::corruption(file, offset, format!("properties block: {r}"));
        let mut cur = data;
        let version = get_varint64(&mut cur).ok_or_else(|| corrupt("bad version".into()))?;
        if version == 0 {
            return Err(corrupt("version 0".into()));
        }
        if version > PROPERTIES_VERSION {
            return Err(Error::UnsupportedVersion {
                file: file.to_path_buf(),
                found: u32::try_from(version).unwrap_or(u32::MAX),
                supported: PROPERTIES_VERSION as u32,
            });
        }
        let mut p = TableProperties::default();
        let mut seen = 0u64;
        let mut seen_owner = 0u64;
        while !cur.is_empty() {
            let tag = get_varint64(&mut cur).ok_or_else(|| corrupt("bad field tag".into()))?;
            let (field, wire) = (tag >> 1, tag & 1);
            if wire == WIRE_VARINT {
                let v = get_varint64(&mut cur)
                    .ok_or_else(|| corrupt(format!("bad value of field {field}")))?;
                let slot = match field {
                    1 => &mut p.num_entries,
                    2 => &mut p.num_deletions,
                    3 => &mut p.num_merges,
                    4 => &mut p.raw_key_bytes,
                    5 => &mut p.raw_value_bytes,
                    6 => &mut p.data_size,
                    7 => &mut p.index_size,
                    8 => &mut p.filter_size,
                    9 => &mut p.smallest_seqno,
                    10 => &mut p.largest_seqno,
                    13 => &mut p.num_data_blocks,
                    FIELD_OWNER_FILE_NUMBER => {
                        p.owner_file_number = v;
                        seen_owner |= 1 << FIELD_OWNER_FILE_NUMBER;
                        continue;
                    }
                    15 => &mut p.num_compressed_blocks,
                    14 => {
                        p.compression = u8::try_from(v)
                            .ok()
                            .and_then(Compression::from_code)
                            .ok_or_else(|| corrupt(format!("unknown compression {v}")))?;
                        seen |= 1 << 14;
                        continue;
                    }
                    16 => {
                        p.bloom_bits_per_key = u32::try_from(v)
                            .map_err(|_| corrupt(format!("bloom_bits_per_key {v} too large")))?;
                        seen |= 1 << 16;
                        continue;
                    }
                    11 | 12 | FIELD_COMPRESSION_DICT => {
                        return Err(corrupt(format!("field {field} must hold bytes")));
                    }
                    _ => continue,
                };
                *slot = v;
            } else {
                let b = get_length_prefixed(&mut cur)
                    .ok_or_else(|| corrupt(format!("bad length of field {field}")))?;
                match field {
                    11 => p.smallest = b.to_vec(),
                    FIELD_OWNER_DB_ID => {
                        p.owner_db_id = b.to_vec();
                        seen_owner |= 1 << FIELD_OWNER_DB_ID;
                        continue;
                    }
                    12 => p.largest = b.to_vec(),
                    FIELD_COMPRESSION_DICT => {
                        p.compression_dict =
                            Some(BlockHandle::decode_exact(b).ok_or_else(|| {
                                corrupt("malformed compression dictionary handle".into())
                            })?);
                        continue;
                    }
                    1..=NUM_PROPERTY_FIELDS => {
                        return Err(corrupt(format!("field {field} must hold a varint")));
                    }
                    _ => continue,
                }
            }
            if (1..=NUM_PROPERTY_FIELDS).contains(&field) {
                seen |= 1 << field;
            }
        }
        let owner_fields = (1u64 << FIELD_OWNER_DB_ID) | (1u64 << FIELD_OWNER_FILE_NUMBER);
        match seen_owner & owner_fields {
            0 => {}
            x if x == owner_fields => {}
            _ => {
                return Err(corrupt(
                    "owner id and owner file number must come together".into(),
                ));
            }
        }
        let all = ((1u64 << (NUM_PROPERTY_FIELDS + 1)) - 1) & !1;
        if seen != all {
            let missing = (1..=NUM_PROPERTY_FIELDS)
                .find(|f| seen & (1 << f) == 0)
                .unwrap_or(0);
            return Err(corrupt(format!("field {missing} is missing")));
        }
        Ok(p)
    }
}
