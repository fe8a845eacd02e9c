//! Opens table files, answers point lookups and iterates them.
//!
//! `open` reads the 64-byte footer, then the properties, index and filter
//! blocks (kept in memory); data blocks are read on demand through the
//! block cache. The properties are decoded by [`super::properties`].
//!
//! Every length read from disk is checked before it is used; damage is
//! reported as [`Error::Corruption`] naming the file and the offset of the
//! block (or footer) that holds it.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::block::{Block, BlockIter};
use super::bloom::BloomFilter;
use super::compression_dict::MAX_DICT_BYTES;
use super::format::{
    BLOCK_TRAILER_LEN, BlockHandle, FORMAT_VERSION_DICT, Footer, MAX_BLOCK_SIZE, ReadDictionary,
    TABLE_FOOTER, decompress_block_with,
};
use super::properties::TableProperties;
use super::separators::SeparatorSearch;
use super::table_iter::TableIter;
use crate::cache::BlockCache;
use crate::coding::{crc32c, decode_fixed32};
use crate::error::{Error, Result};
use crate::key::{self, ValueKind, compare_internal, parse_internal_key};
use crate::stats::Statistics;
use crate::vfs::RandomAccessFile;

/// Reads the block at `h`, which must end by `limit`; checks the trailer and
/// decompresses (with `dict`, the file's zstd dictionary, if it has one).
pub(crate) fn read_block_contents(
    file: &dyn RandomAccessFile,
    path: &Path,
    h: BlockHandle,
    limit: u64,
    dict: Option<&ReadDictionary>,
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
    let mut buf = super::buffers::take(n + BLOCK_TRAILER_LEN);
    file.read_into(&mut buf, n + BLOCK_TRAILER_LEN, h.offset)?;
    check_block_with(path, h, buf, dict)
}

/// Checks the trailer of block `h` read into `buf` (its stored bytes and
/// trailer) and decompresses it.
pub(crate) fn check_block_contents(path: &Path, h: BlockHandle, buf: Vec<u8>) -> Result<Vec<u8>> {
    check_block_with(path, h, buf, None)
}

/// [`check_block_contents`] of a file whose zstd dictionary is `dict`.
fn check_block_with(
    path: &Path,
    h: BlockHandle,
    mut buf: Vec<u8>,
    dict: Option<&ReadDictionary>,
) -> Result<Vec<u8>> {
    let corrupt = |r: String| Error::corruption(path, h.offset, r);
    let n = h.size as usize;
    if buf.len() != n + BLOCK_TRAILER_LEN {
        return Err(corrupt(format!(
            "block of {} bytes read for a handle of {n} (+{BLOCK_TRAILER_LEN} trailer)",
            buf.len()
        )));
    }
    let ctype = buf[n];
    let stored = decode_fixed32(&buf[n + 1..]).unwrap_or(0);
    let crc = crc32c(&buf[..n + 1]);
    if crc != stored {
        return Err(corrupt(format!(
            "block checksum mismatch (stored {stored:#010x}, computed {crc:#010x})"
        )));
    }
    buf.truncate(n);
    decompress_block_with(ctype, buf, dict).map_err(corrupt)
}

/// Reads and digests the zstd dictionary `properties` point at, if any. It
/// must sit right after the data blocks, no larger than a writer makes
/// one, in a file of format version 2 (and a version-2 file must have
/// one): a handle pointing anywhere else would load some other block as a
/// raw-content dictionary, and every read would fail later instead of the
/// open now.
fn open_dictionary(
    file: &dyn RandomAccessFile,
    path: &Path,
    footer: &Footer,
    properties: &TableProperties,
    footer_offset: u64,
) -> Result<Option<ReadDictionary>> {
    let Some(h) = properties.compression_dict else {
        if footer.version >= FORMAT_VERSION_DICT {
            return Err(Error::corruption(
                path,
                footer.properties.offset,
                format!(
                    "format version {} promises a compression dictionary, the properties name none",
                    footer.version
                ),
            ));
        }
        return Ok(None);
    };
    let bad = |reason: String| {
        Error::corruption(
            path,
            h.offset,
            format!("compression dictionary block: {reason}"),
        )
    };
    if footer.version < FORMAT_VERSION_DICT {
        return Err(bad(format!(
            "present in a file of format version {}",
            footer.version
        )));
    }
    if h.offset != properties.data_size {
        return Err(bad(format!(
            "at offset {}, not right after the data blocks (which end at {})",
            h.offset, properties.data_size
        )));
    }
    if h.size > MAX_DICT_BYTES as u64 {
        return Err(bad(format!(
            "{} bytes, more than the {MAX_DICT_BYTES}-byte limit",
            h.size
        )));
    }
    let raw = read_block_contents(file, path, h, footer_offset, None)?;
    let dict =
        ReadDictionary::new(&raw).ok_or_else(|| bad("zstd cannot load the dictionary".into()))?;
    Ok(Some(dict))
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
    /// The index block's separator prefixes (`None`: search the block).
    separators: Option<SeparatorSearch>,
    filter: Option<BloomFilter>,
    properties: TableProperties,
    /// The file's zstd dictionary, digested once.
    dictionary: Option<ReadDictionary>,
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
        let (footer, footer_offset) = Footer::read(&TABLE_FOOTER, file.as_ref(), &path)?;

        let raw =
            read_block_contents(file.as_ref(), &path, footer.properties, footer_offset, None)?;
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

        let raw = read_block_contents(file.as_ref(), &path, footer.index, footer_offset, None)?;
        let index_block = Arc::new(Block::new(raw).map_err(|r| {
            Error::corruption(&path, footer.index.offset, format!("index block: {r}"))
        })?);

        let separators = SeparatorSearch::new(&index_block);

        let filter = if footer.filter.size == 0 {
            None
        } else {
            let raw =
                read_block_contents(file.as_ref(), &path, footer.filter, footer_offset, None)?;
            Some(BloomFilter::from_block(raw).map_err(|r| {
                Error::corruption(&path, footer.filter.offset, format!("filter block: {r}"))
            })?)
        };

        let dictionary =
            open_dictionary(file.as_ref(), &path, &footer, &properties, footer_offset)?;

        Ok(TableReader {
            dictionary,
            file,
            path,
            file_number,
            cache,
            stats,
            cache_id: BlockCache::new_id(),
            footer,
            footer_offset,
            index_block,
            separators,
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

    /// False only when the table's filter rules `user_key` out.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain(user_key))
    }

    pub(super) fn corruption(&self, offset: u64, reason: impl Into<String>) -> Error {
        Error::corruption(&self.path, offset, reason)
    }

    pub(super) fn index_error(&self, reason: &str) -> Error {
        self.corruption(self.footer.index.offset, format!("index block: {reason}"))
    }

    /// Where the file's data in `[lower, upper)` can be cut: per data
    /// block from the one the index seek for `lower` lands on (which may
    /// end just before `lower`, when `lower` equals a shortened
    /// separator) to the last that starts before `upper`, a user key at or
    /// before its first key in the range (`lower`, or `smallest`, for the
    /// first; the previous block's index separator for the others) and the
    /// block's size. A scan split into parts cuts its range at some of
    /// these keys.
    /// The index block is held open, so no data block is read, and the
    /// walk starts at `lower` and stops at `upper`.
    pub fn anchors(
        &self,
        smallest: &[u8],
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
    ) -> Result<Vec<(Vec<u8>, u64)>> {
        let mut out = Vec::new();
        let mut index = self.index_block.iter();
        let mut start = match lower {
            Some(l) => {
                index.seek(&crate::key::make_seek_key(l, crate::key::MAX_SEQNO));
                l.max(smallest).to_vec()
            }
            None => {
                index.seek_to_first();
                smallest.to_vec()
            }
        };
        while index.valid() {
            if upper.is_some_and(|u| start.as_slice() >= u) {
                break;
            }
            let h = self.decode_data_handle(index.value())?;
            // Callers add these sizes up before reading any block.
            if h.size > MAX_BLOCK_SIZE {
                return Err(self.index_error("a block handle larger than a block may be"));
            }
            let sep = crate::key::user_key(index.key()).to_vec();
            out.push((std::mem::replace(&mut start, sep), h.size));
            index.next();
        }
        if let Some(r) = index.error() {
            return Err(self.index_error(r));
        }
        Ok(out)
    }

    pub(super) fn decode_data_handle(&self, v: &[u8]) -> Result<BlockHandle> {
        BlockHandle::decode_exact(v).ok_or_else(|| self.index_error("malformed block handle"))
    }

    fn read_uncached(&self, h: BlockHandle, limit: u64) -> Result<Vec<u8>> {
        read_block_contents(
            self.file.as_ref(),
            &self.path,
            h,
            limit,
            self.dictionary.as_ref(),
        )
    }

    /// Reads a data block, from the cache when it is there; a block read
    /// from the file is added to the cache only if `fill`.
    pub(super) fn read_data_block(&self, h: BlockHandle, fill: bool) -> Result<Arc<Block>> {
        if let Some(c) = &self.cache {
            if let Some(b) = c.get(self.cache_id, h.offset) {
                Statistics::add(&self.stats.block_cache_hits, 1);
                return Ok(b);
            }
            Statistics::add(&self.stats.block_cache_misses, 1);
        }
        let raw = self.read_uncached(h, self.properties.data_size)?;
        let block = Arc::new(Block::new(raw).map_err(|r| self.corruption(h.offset, r))?);
        if fill && let Some(c) = &self.cache {
            c.insert(self.cache_id, h.offset, block.clone());
        }
        Ok(block)
    }

    /// Point lookup. Checks the Bloom filter on `user_key` (counting
    /// `bloom_useful` when it excludes the key, `bloom_checked_positive` when
    /// it passes), then seeks to the first entry `>= seek_key` (see
    /// [`key::make_seek_key`]) and calls `f(internal_key, value)` for each
    /// following entry whose user key is `user_key`, in order, across block
    /// boundaries, until `f` returns false or the user key changes.
    ///
    /// Returns `Ok(false)` when the filter excluded the key, `Ok(true)`
    /// otherwise; a pass with no entry for the user key counts
    /// `bloom_false_positive`.
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
        self.seek_index(&mut index, seek_key);
        let mut data: Option<BlockIter> = None;
        'blocks: while index.valid() {
            let h = self.decode_data_handle(index.value())?;
            let block = self.read_data_block(h, true)?;
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

    /// Positions `index`, an iterator over the index block, on the first
    /// entry whose separator is at or after `target`.
    pub(super) fn seek_index(&self, index: &mut BlockIter, target: &[u8]) {
        match &self.separators {
            Some(s) => s.seek(&self.index_block, index, target),
            None => index.seek(target),
        }
    }

    /// An iterator over every entry.
    pub fn iter(self: &Arc<Self>) -> TableIter {
        TableIter::new(Arc::clone(self), self.index_block.iter(), true)
    }

    /// An iterator over every entry that uses blocks already in the cache
    /// but does not add the blocks it reads from the file: compaction reads
    /// each input block once, from files it is about to delete, and filling
    /// the cache with them would evict the blocks readers use (RocksDB's
    /// compactions read with `fill_cache = false` for the same reason).
    pub fn iter_without_filling_cache(self: &Arc<Self>) -> TableIter {
        TableIter::new(Arc::clone(self), self.index_block.iter(), false)
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
        // The dictionary is re-read and checked as the open checked it.
        open_dictionary(self.file.as_ref(), &self.path, f, &props, fo)?;
        let raw = self.read_uncached(f.index, fo)?;
        let index = Arc::new(Block::new(raw).map_err(|r| self.index_error(&r))?);
        index.check_restarts().map_err(|r| self.index_error(&r))?;
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
            block
                .check_restarts()
                .map_err(|r| self.corruption(h.offset, r))?;
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
                    counted.smallest_seqno = parsed.seqno.get();
                } else if compare_internal(&prev_key, k) != Ordering::Less {
                    return Err(bad("key is not after the previous key"));
                }
                if blocks > 0
                    && n_in_block == 0
                    && compare_internal(k, &prev_sep) != Ordering::Greater
                {
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
                counted.smallest_seqno = counted.smallest_seqno.min(parsed.seqno.get());
                counted.largest_seqno = counted.largest_seqno.max(parsed.seqno.get());
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
            (
                "raw_value_bytes",
                counted.raw_value_bytes,
                props.raw_value_bytes,
            ),
            (
                "smallest_seqno",
                counted.smallest_seqno,
                props.smallest_seqno,
            ),
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

#[cfg(test)]
impl TableReader {
    /// Handles of every data block, read from the index.
    fn data_handles(&self) -> Vec<BlockHandle> {
        let mut it = self.index_block.iter();
        it.seek_to_first();
        let mut v = Vec::new();
        while it.valid() {
            v.push(BlockHandle::decode_exact(it.value()).expect("handle"));
            it.next();
        }
        v
    }
}

#[cfg(test)]
mod tests;
