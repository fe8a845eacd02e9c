//! Opens table files, answers point lookups and iterates them.
//!
//! `open` reads the 64-byte footer, then the properties, index and filter
//! blocks (kept in memory); data blocks are read on demand through the
//! block cache. The properties block is tagged fields after a version:
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
//!
//! Every length read from disk is checked before it is used; damage is
//! reported as [`Error::Corruption`] naming the file and the offset of the
//! block (or footer) that holds it.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::block::{Block, BlockIter};
use super::bloom::BloomFilter;
use super::format::{
    BLOCK_TRAILER_LEN, BlockHandle, Compression, FOOTER_LEN, Footer, MAX_BLOCK_SIZE,
    decompress_block,
};
use crate::cache::BlockCache;
use crate::coding::{
    crc32c, decode_fixed32, get_length_prefixed, get_varint64, put_length_prefixed, put_varint64,
};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{self, ValueKind, compare_internal, parse_internal_key};
use crate::stats::Statistics;
use crate::vfs::RandomAccessFile;

/// Version of the properties encoding written by this build.
pub const PROPERTIES_VERSION: u64 = 1;

/// Facts about a table, stored in its properties block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableProperties {
    pub num_entries: u64,
    /// Entries of kind [`ValueKind::Delete`].
    pub num_deletions: u64,
    /// Entries of kind [`ValueKind::Merge`].
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
}

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
                    11 | 12 => return Err(corrupt(format!("field {field} must hold bytes"))),
                    _ => continue,
                };
                *slot = v;
            } else {
                let b = get_length_prefixed(&mut cur)
                    .ok_or_else(|| corrupt(format!("bad length of field {field}")))?;
                match field {
                    11 => p.smallest = b.to_vec(),
                    12 => p.largest = b.to_vec(),
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
        let all = ((1u64 << (NUM_PROPERTY_FIELDS + 1)) - 1) & !1;
        if seen != all {
            let missing = (1..=NUM_PROPERTY_FIELDS).find(|f| seen & (1 << f) == 0).unwrap_or(0);
            return Err(corrupt(format!("field {missing} is missing")));
        }
        Ok(p)
    }
}

/// Reads the block at `h`, which must end by `limit`; checks the trailer and
/// decompresses.
fn read_block_contents(
    file: &dyn RandomAccessFile,
    path: &Path,
    h: BlockHandle,
    limit: u64,
) -> Result<Vec<u8>> {
    let corrupt = |r: String| Error::corruption(path, h.offset, r);
    if h.size > MAX_BLOCK_SIZE {
        return Err(corrupt(format!(
            "block handle size {} exceeds the {MAX_BLOCK_SIZE}-byte limit",
            h.size
        )));
    }
    let end = h
        .end_with_trailer()
        .ok_or_else(|| corrupt("block handle overflows".to_string()))?;
    if end > limit {
        return Err(corrupt(format!(
            "block of {} bytes (+{BLOCK_TRAILER_LEN} trailer) ends at {end}, past {limit}",
            h.size
        )));
    }
    let n = h.size as usize;
    let mut buf = vec![0u8; n + BLOCK_TRAILER_LEN];
    file.read_exact_at(&mut buf, h.offset)?;
    let ctype = buf[n];
    let stored = decode_fixed32(&buf[n + 1..]).unwrap_or(0);
    let crc = crc32c(&buf[..n + 1]);
    if crc != stored {
        return Err(corrupt(format!(
            "block checksum mismatch (stored {stored:#010x}, computed {crc:#010x})"
        )));
    }
    buf.truncate(n);
    decompress_block(ctype, buf).map_err(corrupt)
}

/// An open table file. Send + Sync; share it in an `Arc`.
pub struct TableReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    file_number: u64,
    cache: Option<Arc<BlockCache>>,
    stats: Arc<Statistics>,
    cache_id: u64,
    footer: Footer,
    footer_offset: u64,
    index_block: Arc<Block>,
    filter: Option<BloomFilter>,
    properties: TableProperties,
}

impl std::fmt::Debug for TableReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableReader")
            .field("path", &self.path)
            .field("file_number", &self.file_number)
            .field("cache_id", &self.cache_id)
            .field("footer", &self.footer)
            .field("properties", &self.properties)
            .finish()
    }
}

impl TableReader {
    /// Opens a table: reads and checks the footer, properties, index and
    /// filter blocks.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        file_number: u64,
        cache: Option<Arc<BlockCache>>,
        stats: Arc<Statistics>,
    ) -> Result<TableReader> {
        let file_len = file.len();
        if file_len < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                &path,
                0,
                format!("file is {file_len} bytes, shorter than the {FOOTER_LEN}-byte table footer"),
            ));
        }
        let footer_offset = file_len - FOOTER_LEN as u64;
        let mut fb = [0u8; FOOTER_LEN];
        file.read_exact_at(&mut fb, footer_offset)?;
        let footer = Footer::decode(&fb, &path, footer_offset)?;

        let raw = read_block_contents(file.as_ref(), &path, footer.properties, footer_offset)?;
        let properties = TableProperties::decode(&raw, &path, footer.properties.offset)?;
        let mut meta_start = footer.index.offset.min(footer.properties.offset);
        if footer.filter.size > 0 {
            meta_start = meta_start.min(footer.filter.offset);
        }
        if properties.data_size > meta_start {
            return Err(Error::corruption(
                &path,
                footer.properties.offset,
                format!(
                    "properties say data blocks end at {}, but a meta block starts at {meta_start}",
                    properties.data_size
                ),
            ));
        }

        let raw = read_block_contents(file.as_ref(), &path, footer.index, footer_offset)?;
        let index_block = Arc::new(
            Block::new(raw)
                .map_err(|r| Error::corruption(&path, footer.index.offset, format!("index block: {r}")))?,
        );

        let filter = if footer.filter.size == 0 {
            None
        } else {
            let raw = read_block_contents(file.as_ref(), &path, footer.filter, footer_offset)?;
            Some(BloomFilter::from_block(raw).map_err(|r| {
                Error::corruption(&path, footer.filter.offset, format!("filter block: {r}"))
            })?)
        };

        Ok(TableReader {
            file,
            path,
            file_number,
            cache,
            stats,
            cache_id: BlockCache::new_id(),
            footer,
            footer_offset,
            index_block,
            filter,
            properties,
        })
    }

    /// The table's properties.
    pub fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// The file path (as given to `open`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file number given to `open`.
    pub fn file_number(&self) -> u64 {
        self.file_number
    }

    /// The id under which this reader's blocks are cached.
    pub fn cache_id(&self) -> u64 {
        self.cache_id
    }

    /// True if the table has a filter block.
    pub fn has_filter(&self) -> bool {
        self.filter.is_some()
    }

    fn corruption(&self, offset: u64, reason: impl Into<String>) -> Error {
        Error::corruption(&self.path, offset, reason)
    }

    fn index_error(&self, reason: &str) -> Error {
        self.corruption(self.footer.index.offset, format!("index block: {reason}"))
    }

    fn decode_data_handle(&self, v: &[u8]) -> Result<BlockHandle> {
        BlockHandle::decode_exact(v).ok_or_else(|| self.index_error("malformed block handle"))
    }

    fn read_uncached(&self, h: BlockHandle, limit: u64) -> Result<Vec<u8>> {
        read_block_contents(self.file.as_ref(), &self.path, h, limit)
    }

    /// Reads a data block through the cache.
    fn read_data_block(&self, h: BlockHandle) -> Result<Arc<Block>> {
        if let Some(c) = &self.cache {
            if let Some(b) = c.get(self.cache_id, h.offset) {
                Statistics::add(&self.stats.block_cache_hits, 1);
                return Ok(b);
            }
            Statistics::add(&self.stats.block_cache_misses, 1);
        }
        let raw = self.read_uncached(h, self.properties.data_size)?;
        let block = Arc::new(Block::new(raw).map_err(|r| self.corruption(h.offset, r))?);
        if let Some(c) = &self.cache {
            c.insert(self.cache_id, h.offset, block.clone());
        }
        Ok(block)
    }

    /// Point lookup: see the module docs of [`crate::sst`]. Calls `f` for
    /// each entry of `user_key` at or after `seek_key`, until `f` returns
    /// false. Returns `Ok(false)` when the filter excluded the key.
    pub fn get(
        &self,
        user_key: &[u8],
        seek_key: &[u8],
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<bool> {
        let filtered = match &self.filter {
            Some(filter) => {
                if !filter.may_contain(user_key) {
                    Statistics::add(&self.stats.bloom_useful, 1);
                    return Ok(false);
                }
                Statistics::add(&self.stats.bloom_checked_positive, 1);
                true
            }
            None => false,
        };
        let mut found = false;
        let mut index = self.index_block.iter();
        index.seek(seek_key);
        let mut data: Option<BlockIter> = None;
        'blocks: while index.valid() {
            let h = self.decode_data_handle(index.value())?;
            let block = self.read_data_block(h)?;
            let it = match &mut data {
                Some(it) => {
                    it.reset(block);
                    it
                }
                None => data.insert(block.iter()),
            };
            it.seek(seek_key);
            while it.valid() {
                if key::user_key(it.key()) != user_key {
                    break 'blocks;
                }
                found = true;
                if !f(it.key(), it.value()) {
                    break 'blocks;
                }
                it.next();
            }
            if let Some(r) = it.error() {
                return Err(self.corruption(h.offset, r));
            }
            index.next();
        }
        if let Some(r) = index.error() {
            return Err(self.index_error(r));
        }
        if filtered && !found {
            Statistics::add(&self.stats.bloom_false_positive, 1);
        }
        Ok(true)
    }

    /// An iterator over every entry.
    pub fn iter(self: &Arc<Self>) -> TableIter {
        TableIter {
            index: self.index_block.iter(),
            data: Block::empty().iter(),
            data_offset: None,
            table: self.clone(),
            err: None,
        }
    }

    /// Reads every block bypassing the cache and checks checksums, block
    /// structure, key order, index separators and handles, filter membership
    /// and the properties. Returns the first problem found.
    pub fn verify(&self) -> Result<()> {
        let fo = self.footer_offset;
        let f = &self.footer;
        let raw = self.read_uncached(f.properties, fo)?;
        let props = TableProperties::decode(&raw, &self.path, f.properties.offset)?;
        if props != self.properties {
            return Err(self.corruption(f.properties.offset, "properties changed since open"));
        }
        let filter = if f.filter.size == 0 {
            None
        } else {
            let raw = self.read_uncached(f.filter, fo)?;
            Some(
                BloomFilter::from_block(raw)
                    .map_err(|r| self.corruption(f.filter.offset, format!("filter block: {r}")))?,
            )
        };
        let raw = self.read_uncached(f.index, fo)?;
        let index = Arc::new(Block::new(raw).map_err(|r| self.index_error(&r))?);
        let mut idx = index.iter();

        let mut counted = TableProperties::default();
        let mut expected_offset = 0u64;
        let mut prev_key: Vec<u8> = Vec::new();
        let mut prev_sep: Vec<u8> = Vec::new();
        let mut first_key: Vec<u8> = Vec::new();
        let mut blocks = 0u64;
        idx.seek_to_first();
        while idx.valid() {
            let sep = idx.key();
            if blocks > 0 && compare_internal(&prev_sep, sep) != Ordering::Less {
                return Err(self.index_error(&format!("separator {blocks} is not increasing")));
            }
            let h = self.decode_data_handle(idx.value())?;
            if h.offset != expected_offset {
                return Err(self.index_error(&format!(
                    "entry {blocks} points at offset {}, expected {expected_offset}",
                    h.offset
                )));
            }
            let raw = self.read_uncached(h, props.data_size)?;
            let block = Arc::new(Block::new(raw).map_err(|r| self.corruption(h.offset, r))?);
            let mut it = block.iter();
            it.seek_to_first();
            let mut n_in_block = 0u64;
            while it.valid() {
                let k = it.key();
                let at = it.entry_offset();
                let bad = |what: &str| {
                    self.corruption(h.offset, format!("entry at block offset {at}: {what}"))
                };
                let Some(parsed) = parse_internal_key(k) else {
                    return Err(bad("malformed internal key"));
                };
                if counted.num_entries == 0 {
                    first_key = k.to_vec();
                    counted.smallest_seqno = parsed.seqno;
                } else if compare_internal(&prev_key, k) != Ordering::Less {
                    return Err(bad("key is not after the previous key"));
                }
                if blocks > 0 && n_in_block == 0 && compare_internal(k, &prev_sep) != Ordering::Greater {
                    return Err(bad("first key is not after the previous index separator"));
                }
                if compare_internal(k, sep) == Ordering::Greater {
                    return Err(bad("key is after the block's index separator"));
                }
                if let Some(fl) = &filter
                    && !fl.may_contain(parsed.user_key)
                {
                    return Err(bad("user key missing from the filter"));
                }
                counted.num_entries += 1;
                match parsed.kind {
                    ValueKind::Delete => counted.num_deletions += 1,
                    ValueKind::Merge => counted.num_merges += 1,
                    ValueKind::Put => {}
                }
                counted.raw_key_bytes += k.len() as u64;
                counted.raw_value_bytes += it.value().len() as u64;
                counted.smallest_seqno = counted.smallest_seqno.min(parsed.seqno);
                counted.largest_seqno = counted.largest_seqno.max(parsed.seqno);
                prev_key.clear();
                prev_key.extend_from_slice(k);
                n_in_block += 1;
                it.next();
            }
            if let Some(r) = it.error() {
                return Err(self.corruption(h.offset, r));
            }
            if n_in_block == 0 {
                return Err(self.corruption(h.offset, "data block has no entries"));
            }
            expected_offset = h.end_with_trailer().unwrap_or(u64::MAX);
            prev_sep.clear();
            prev_sep.extend_from_slice(sep);
            blocks += 1;
            idx.next();
        }
        if let Some(r) = idx.error() {
            return Err(self.index_error(r));
        }
        if expected_offset != props.data_size {
            return Err(self.index_error(&format!(
                "data blocks end at {expected_offset}, properties say {}",
                props.data_size
            )));
        }
        let mismatch = |what: &str, found: u64, stored: u64| {
            self.corruption(
                f.properties.offset,
                format!("properties block: {what} is {stored}, the data holds {found}"),
            )
        };
        let checks = [
            ("num_entries", counted.num_entries, props.num_entries),
            ("num_deletions", counted.num_deletions, props.num_deletions),
            ("num_merges", counted.num_merges, props.num_merges),
            ("raw_key_bytes", counted.raw_key_bytes, props.raw_key_bytes),
            ("raw_value_bytes", counted.raw_value_bytes, props.raw_value_bytes),
            ("smallest_seqno", counted.smallest_seqno, props.smallest_seqno),
            ("largest_seqno", counted.largest_seqno, props.largest_seqno),
            ("num_data_blocks", blocks, props.num_data_blocks),
        ];
        for (what, found, stored) in checks {
            if found != stored {
                return Err(mismatch(what, found, stored));
            }
        }
        if first_key != props.smallest || prev_key != props.largest {
            return Err(self.corruption(
                f.properties.offset,
                "properties block: smallest/largest keys differ from the data",
            ));
        }
        Ok(())
    }
}

/// Iterates a table's entries in internal-key order.
///
/// Holds the reader, an index-block iterator and the current data-block
/// iterator; key buffers are reused, so stepping does not allocate (a block
/// read does). The first error is sticky: the iterator stays invalid and
/// [`InternalIterator::status`] returns it.
pub struct TableIter {
    table: Arc<TableReader>,
    index: BlockIter,
    data: BlockIter,
    /// Offset of the block loaded in `data`.
    data_offset: Option<u64>,
    err: Option<Error>,
}

impl TableIter {
    /// The table iterated.
    pub fn table(&self) -> &Arc<TableReader> {
        &self.table
    }

    fn set_err(&mut self, e: Error) {
        self.data.invalidate();
        if self.err.is_none() {
            self.err = Some(e);
        }
    }

    /// Loads the block the index iterator points at into `data`
    /// (unpositioned). False on error.
    fn load_block(&mut self) -> bool {
        let h = match self.table.decode_data_handle(self.index.value()) {
            Ok(h) => h,
            Err(e) => {
                self.set_err(e);
                return false;
            }
        };
        if self.data_offset == Some(h.offset) {
            return true;
        }
        match self.table.read_data_block(h) {
            Ok(b) => {
                self.data.reset(b);
                self.data_offset = Some(h.offset);
                true
            }
            Err(e) => {
                self.data_offset = None;
                self.set_err(e);
                false
            }
        }
    }

    /// After the data iterator ran off its block: reports its error, or
    /// returns true when the index iterator is still valid.
    fn data_exhausted_ok(&mut self) -> bool {
        if let Some(r) = self.data.error() {
            let e = self
                .table
                .corruption(self.data_offset.unwrap_or(0), r.to_string());
            self.set_err(e);
            return false;
        }
        self.index_ok()
    }

    /// True when the index iterator is valid; records its error otherwise.
    fn index_ok(&mut self) -> bool {
        if self.index.valid() {
            return true;
        }
        if let Some(r) = self.index.error() {
            let e = self.table.index_error(r);
            self.set_err(e);
        }
        self.data.invalidate();
        false
    }

    fn skip_forward(&mut self) {
        while self.err.is_none() && !self.data.valid() {
            if !self.data_exhausted_ok() {
                return;
            }
            self.index.next();
            if !self.index_ok() || !self.load_block() {
                return;
            }
            self.data.seek_to_first();
        }
    }

    fn skip_backward(&mut self) {
        while self.err.is_none() && !self.data.valid() {
            if !self.data_exhausted_ok() {
                return;
            }
            self.index.prev();
            if !self.index_ok() || !self.load_block() {
                return;
            }
            self.data.seek_to_last();
        }
    }
}

impl InternalIterator for TableIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.data.valid()
    }

    fn seek_to_first(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.index.seek_to_first();
        if !self.index_ok() || !self.load_block() {
            return;
        }
        self.data.seek_to_first();
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.index.seek_to_last();
        if !self.index_ok() || !self.load_block() {
            return;
        }
        self.data.seek_to_last();
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        if self.err.is_some() {
            return;
        }
        self.index.seek(target);
        if !self.index_ok() || !self.load_block() {
            return;
        }
        self.data.seek(target);
        self.skip_forward();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if self.err.is_some() {
            return;
        }
        if !self.valid() {
            self.seek_to_last();
            return;
        }
        while self.valid() && compare_internal(self.data.key(), target) == Ordering::Greater {
            self.prev();
        }
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        if !self.valid() {
            return;
        }
        self.data.next();
        self.skip_forward();
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        if !self.valid() {
            return;
        }
        self.data.prev();
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.data.key()
    }

    fn value(&self) -> &[u8] {
        self.data.value()
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}

