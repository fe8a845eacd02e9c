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
use super::format::{
    BLOCK_TRAILER_LEN, BlockHandle, FOOTER_LEN, Footer, MAX_BLOCK_SIZE, decompress_block,
};
use super::properties::TableProperties;
use crate::cache::BlockCache;
use crate::coding::{crc32c, decode_fixed32};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{self, ValueKind, compare_internal, parse_internal_key};
use crate::stats::Statistics;
use crate::vfs::RandomAccessFile;

/// Reads the block at `h`, which must end by `limit`; checks the trailer and
/// decompresses.
pub(crate) fn read_block_contents(
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
                format!(
                    "file is {file_len} bytes, shorter than the {FOOTER_LEN}-byte table footer"
                ),
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
        let index_block = Arc::new(Block::new(raw).map_err(|r| {
            Error::corruption(&path, footer.index.offset, format!("index block: {r}"))
        })?);

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

    /// False only when the table's filter rules `user_key` out.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain(user_key))
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

    fn may_contain_user_key(&self, user_key: &[u8]) -> bool {
        self.table.may_contain(user_key)
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
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
mod tests {
    use super::*;
    use crate::coding::{put_length_prefixed, put_varint64};
    use crate::key::{MAX_SEQNO, make_internal_key, make_seek_key};
    use crate::sst::format::Compression;
    use crate::sst::{TableBuilder, TableBuilderOptions, TableSummary};
    use crate::vfs::{StdVfs, Vfs};
    use proptest::prelude::*;

    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    /// An in-memory file for feeding damaged copies to the reader.
    struct MemFile(Vec<u8>);

    impl RandomAccessFile for MemFile {
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
            let start = usize::try_from(offset).unwrap_or(usize::MAX);
            match start.checked_add(buf.len()) {
                Some(end) if end <= self.0.len() => {
                    buf.copy_from_slice(&self.0[start..end]);
                    Ok(())
                }
                _ => Err(Error::io(
                    "read mem file",
                    std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "short read"),
                )),
            }
        }
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
    }

    fn sort_entries(mut e: Entries) -> Entries {
        e.sort_by(|a, b| compare_internal(&a.0, &b.0));
        e.dedup_by(|a, b| a.0 == b.0);
        e
    }

    fn write_table(
        dir: &Path,
        name: &str,
        e: &Entries,
        opts: TableBuilderOptions,
    ) -> (PathBuf, TableSummary) {
        let path = dir.join(name);
        let file = StdVfs.create(&path).expect("create");
        let mut b = TableBuilder::new(file, path.clone(), opts);
        for (k, v) in e {
            b.add(k, v).expect("add");
        }
        let s = b.finish().expect("finish");
        (path, s)
    }

    fn open_path(
        path: &Path,
        cache: Option<Arc<BlockCache>>,
        stats: Arc<Statistics>,
    ) -> Arc<TableReader> {
        let f = StdVfs.open(path).expect("open file");
        Arc::new(TableReader::open(f, path.to_path_buf(), 7, cache, stats).expect("open table"))
    }

    fn open_bytes(bytes: Vec<u8>) -> Result<Arc<TableReader>> {
        TableReader::open(
            Arc::new(MemFile(bytes)),
            PathBuf::from("mem.sst"),
            1,
            None,
            Arc::new(Statistics::default()),
        )
        .map(Arc::new)
    }

    fn lower_bound(e: &Entries, t: &[u8]) -> usize {
        e.partition_point(|(k, _)| compare_internal(k, t) == Ordering::Less)
    }

    fn last_le(e: &Entries, t: &[u8]) -> Option<usize> {
        e.partition_point(|(k, _)| compare_internal(k, t) != Ordering::Greater)
            .checked_sub(1)
    }

    fn at(it: &TableIter) -> Option<(Vec<u8>, Vec<u8>)> {
        it.valid().then(|| (it.key().to_vec(), it.value().to_vec()))
    }

    fn expect_at(it: &TableIter, e: &Entries, i: Option<usize>, what: &str) {
        it.status().expect("iterator status");
        assert_eq!(at(it), i.map(|i| e[i].clone()), "{what}");
    }

    /// Expected `get` results for `uk` at snapshot `snap`.
    fn expected_get(e: &Entries, uk: &[u8], snap: u64) -> Entries {
        let sk = make_seek_key(uk, snap);
        e[lower_bound(e, &sk)..]
            .iter()
            .take_while(|(k, _)| key::user_key(k) == uk)
            .cloned()
            .collect()
    }

    /// Checks iteration, seeks and gets of `t` against the sorted reference.
    fn check_table(t: &Arc<TableReader>, e: &Entries, probe_user_keys: &[Vec<u8>]) {
        let mut it = t.iter();
        it.seek_to_first();
        for (i, (k, v)) in e.iter().enumerate() {
            assert!(it.valid(), "forward ended early at {i}: {:?}", it.status());
            assert_eq!(
                (it.key(), it.value()),
                (&k[..], &v[..]),
                "forward entry {i}"
            );
            it.next();
        }
        assert!(!it.valid());
        it.status().expect("status after forward scan");

        it.seek_to_last();
        for (i, (k, v)) in e.iter().enumerate().rev() {
            assert!(it.valid(), "backward ended early at {i}: {:?}", it.status());
            assert_eq!(
                (it.key(), it.value()),
                (&k[..], &v[..]),
                "backward entry {i}"
            );
            it.prev();
        }
        assert!(!it.valid());
        it.status().expect("status after backward scan");

        let mut user_keys: Vec<Vec<u8>> =
            e.iter().map(|(k, _)| key::user_key(k).to_vec()).collect();
        user_keys.extend(probe_user_keys.iter().cloned());
        user_keys.sort();
        user_keys.dedup();
        let mut targets: Vec<Vec<u8>> = e.iter().map(|(k, _)| k.clone()).collect();
        for uk in &user_keys {
            for snap in [0, 1, 7, 25, MAX_SEQNO.get()] {
                targets.push(make_seek_key(uk, snap));
            }
        }
        for t_key in &targets {
            let lb = lower_bound(e, t_key);
            it.seek(t_key);
            expect_at(&it, e, (lb < e.len()).then_some(lb), "seek");
            if it.valid() {
                it.prev();
                expect_at(&it, e, lb.checked_sub(1), "prev after seek");
                if it.valid() {
                    it.next();
                    expect_at(&it, e, Some(lb), "next after prev");
                }
            }
            let le = last_le(e, t_key);
            it.seek_for_prev(t_key);
            expect_at(&it, e, le, "seek_for_prev");
            if let Some(i) = le {
                it.next();
                expect_at(
                    &it,
                    e,
                    (i + 1 < e.len()).then_some(i + 1),
                    "next after seek_for_prev",
                );
            }
        }

        let present: std::collections::BTreeSet<&[u8]> =
            e.iter().map(|(k, _)| key::user_key(k)).collect();
        for uk in &user_keys {
            for snap in [0, 3, 20, MAX_SEQNO.get()] {
                let want = expected_get(e, uk, snap);
                let sk = make_seek_key(uk, snap);
                let mut got = Vec::new();
                let passed = t
                    .get(uk, &sk, &mut |k, v| {
                        got.push((k.to_vec(), v.to_vec()));
                        true
                    })
                    .expect("get");
                if !passed {
                    assert!(
                        !present.contains(&uk[..]),
                        "filter excluded present key {uk:?}"
                    );
                }
                assert_eq!(got, want, "get {uk:?} at {snap}");
                let mut calls = 0;
                t.get(uk, &sk, &mut |_, _| {
                    calls += 1;
                    false
                })
                .expect("get");
                assert_eq!(calls, want.len().min(1), "get stops when f returns false");
            }
        }
        t.verify().expect("verify");
    }

    fn big_value(seed: u8) -> Vec<u8> {
        let mut x = u64::from(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..100_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Low-entropy bytes: compressible but not trivially.
                b"abcdefgh"[(x % 8) as usize]
            })
            .collect()
    }

    fn entry_strategy() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        let uk = prop::collection::vec(
            prop::sample::select(vec![0u8, b'a', b'b', b'm', 0xff]),
            0..5,
        );
        let value = prop_oneof![
            12 => prop::collection::vec(any::<u8>(), 0..24),
            3 => Just(Vec::new()),
            1 => any::<u8>().prop_map(big_value),
        ];
        (uk, 0u64..40, 0u8..3, value).prop_map(|(uk, seq, kind, v)| {
            let kind = ValueKind::from_u8(kind).unwrap_or(ValueKind::Put);
            let v = if kind == ValueKind::Delete {
                Vec::new()
            } else {
                v
            };
            (make_internal_key(&uk, seq, kind), v)
        })
    }

    fn options_strategy() -> impl Strategy<Value = TableBuilderOptions> {
        (
            prop::sample::select(vec![Compression::None, Compression::Lz4, Compression::Zstd]),
            prop::sample::select(vec![1usize, 64, 300, 4096]),
            1usize..18,
            prop::sample::select(vec![0u32, 10]),
        )
            .prop_map(
                |(compression, block_size, restart_interval, bloom_bits_per_key)| {
                    TableBuilderOptions {
                        block_size,
                        restart_interval,
                        bloom_bits_per_key,
                        compression,
                    }
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn table_round_trip_matches_reference(
            raw in prop::collection::vec(entry_strategy(), 0..160),
            opts in options_strategy(),
            probes in prop::collection::vec(
                prop::collection::vec(prop::sample::select(vec![0u8, b'a', b'c', b'z', 0xff]), 0..4), 0..8),
            cache_bytes in prop::sample::select(vec![0u64, 8 << 10, 16 << 20]),
        ) {
            let e = sort_entries(raw);
            let dir = tempfile::tempdir().expect("tempdir");
            let (path, summary) = write_table(dir.path(), "t.sst", &e, opts.clone());
            prop_assert_eq!(summary.num_entries, e.len() as u64);
            prop_assert_eq!(summary.file_size, StdVfs.file_size(&path).expect("size"));
            let cache = Arc::new(BlockCache::new(cache_bytes));
            let t = open_path(&path, Some(cache.clone()), Arc::new(Statistics::default()));
            let p = t.properties();
            prop_assert_eq!(p.num_entries, e.len() as u64);
            let dels = e.iter().filter(|(k, _)| parse_internal_key(k).map(|x| x.kind) == Some(ValueKind::Delete)).count();
            let merges = e.iter().filter(|(k, _)| parse_internal_key(k).map(|x| x.kind) == Some(ValueKind::Merge)).count();
            prop_assert_eq!(p.num_deletions, dels as u64);
            prop_assert_eq!(summary.num_deletions, dels as u64);
            prop_assert_eq!(p.num_merges, merges as u64);
            prop_assert_eq!(p.compression, opts.compression);
            prop_assert_eq!(t.has_filter(), opts.bloom_bits_per_key > 0 && !e.is_empty());
            let (smallest, largest) = match (e.first(), e.last()) {
                (Some(f), Some(l)) => (f.0.clone(), l.0.clone()),
                _ => (Vec::new(), Vec::new()),
            };
            prop_assert_eq!(&p.smallest, &smallest);
            prop_assert_eq!(&p.largest, &largest);
            prop_assert_eq!(&summary.smallest, &smallest);
            prop_assert_eq!(&summary.largest, &largest);
            prop_assert_eq!(p.raw_value_bytes, e.iter().map(|(_, v)| v.len() as u64).sum::<u64>());
            prop_assert!(cache.usage_bytes() <= cache_bytes);
            check_table(&t, &e, &probes);
        }
    }

    #[test]
    fn large_values_span_blocks_and_compress() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut e = Entries::new();
        for i in 0..40u8 {
            let uk = format!("big{:03}", i / 3).into_bytes();
            e.push((
                make_internal_key(&uk, 100 - u64::from(i), ValueKind::Put),
                big_value(i),
            ));
        }
        let e = sort_entries(e);
        for c in [Compression::None, Compression::Lz4, Compression::Zstd] {
            let opts = TableBuilderOptions {
                compression: c,
                ..TableBuilderOptions::default()
            };
            let (path, s) = write_table(dir.path(), &format!("{c}.sst"), &e, opts);
            let t = open_path(&path, None, Arc::new(Statistics::default()));
            let p = t.properties();
            assert_eq!(p.num_data_blocks, 40, "one block per 100 KB value");
            if c == Compression::None {
                assert_eq!(p.num_compressed_blocks, 0);
                assert!(s.file_size > 4_000_000);
            } else {
                assert_eq!(p.num_compressed_blocks, 40);
                // 3 bits of entropy per byte: zstd entropy-codes, lz4 only
                // finds matches.
                let limit = if c == Compression::Zstd {
                    2_000_000
                } else {
                    3_600_000
                };
                assert!(s.file_size < limit, "{c}: {} bytes", s.file_size);
            }
            check_table(&t, &e, &[b"big".to_vec(), b"zzz".to_vec()]);
        }
    }

    fn small_table(c: Compression) -> (Entries, Vec<u8>) {
        let mut e = Entries::new();
        for i in 0..60u32 {
            let uk = format!("k{:02}", i / 2).into_bytes();
            let kind = match i % 5 {
                0 => ValueKind::Delete,
                1 => ValueKind::Merge,
                _ => ValueKind::Put,
            };
            let v = if i % 7 == 0 {
                Vec::new()
            } else {
                format!("value-{i}-{}", "x".repeat(i as usize % 13)).into_bytes()
            };
            e.push((make_internal_key(&uk, u64::from(1000 - i), kind), v));
        }
        let e = sort_entries(e);
        let dir = tempfile::tempdir().expect("tempdir");
        let opts = TableBuilderOptions {
            block_size: 200,
            restart_interval: 4,
            compression: c,
            ..TableBuilderOptions::default()
        };
        let (path, _) = write_table(dir.path(), "small.sst", &e, opts);
        (e, StdVfs.read_all(&path).expect("read"))
    }

    /// Runs every read path on a possibly damaged table; returns whether
    /// anything reported an error. Panics if wrong data comes back.
    fn exercise(t: &Arc<TableReader>, e: &Entries) -> bool {
        let mut saw_err = false;
        let mut it = t.iter();
        it.seek_to_first();
        let mut got = Entries::new();
        while it.valid() && got.len() <= e.len() {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        match it.status() {
            Ok(()) => assert_eq!(&got, e, "undetected damage in forward scan"),
            Err(err) => {
                assert!(err.is_corruption(), "{err}");
                assert!(e.starts_with(&got), "wrong data before the error");
                saw_err = true;
            }
        }
        let mut it = t.iter();
        it.seek_to_last();
        let mut n = 0;
        while it.valid() && n <= e.len() {
            assert_eq!(
                at(&it).as_ref(),
                Some(&e[e.len() - 1 - n]),
                "wrong data scanning backward"
            );
            n += 1;
            it.prev();
        }
        saw_err |= it.status().is_err();
        for (k, _) in e.iter().step_by(3) {
            let uk = key::user_key(k);
            let sk = make_seek_key(uk, MAX_SEQNO);
            let mut got = Vec::new();
            match t.get(uk, &sk, &mut |k, v| {
                got.push((k.to_vec(), v.to_vec()));
                true
            }) {
                Ok(true) => assert_eq!(got, expected_get(e, uk, MAX_SEQNO.get())),
                Ok(false) => panic!("filter excluded a present key"),
                Err(err) => {
                    assert!(err.is_corruption(), "{err}");
                    saw_err = true;
                }
            }
            let mut it = t.iter();
            it.seek(k);
            if it.valid() {
                assert_eq!(it.key(), &k[..]);
            } else {
                assert!(it.status().is_err());
            }
        }
        saw_err
    }

    #[test]
    fn every_flipped_byte_is_detected_or_harmless() {
        for c in [Compression::None, Compression::Lz4, Compression::Zstd] {
            let (e, good) = small_table(c);
            let t = open_bytes(good.clone()).expect("open good table");
            assert!(!exercise(&t, &e));
            t.verify().expect("verify good table");
            let handles = t.data_handles();
            assert!(
                handles.len() >= 5,
                "want several data blocks, got {}",
                handles.len()
            );
            let footer_offset = good.len() as u64 - FOOTER_LEN as u64;
            for pos in 0..good.len() {
                let mut bad = good.clone();
                bad[pos] ^= 1 << (pos % 8);
                let t = match open_bytes(bad) {
                    Ok(t) => t,
                    Err(Error::Corruption { offset, .. }) => {
                        assert!(
                            offset <= pos as u64 || offset == 0,
                            "open error offset {offset} after flip at {pos}"
                        );
                        continue;
                    }
                    Err(Error::UnsupportedVersion { .. }) => {
                        assert!((footer_offset + 52..footer_offset + 56).contains(&(pos as u64)));
                        continue;
                    }
                    Err(other) => panic!("flip at {pos}: unexpected error {other}"),
                };
                // Only data blocks are read lazily; the flip must be in one.
                let h = handles
                    .iter()
                    .find(|h| h.offset <= pos as u64 && (pos as u64) < h.offset + h.size + 5)
                    .unwrap_or_else(|| {
                        panic!("{c}: flip at {pos} outside data blocks went unnoticed by open")
                    });
                let _ = exercise(&t, &e);
                match t.verify() {
                    Err(Error::Corruption { offset, .. }) => {
                        assert_eq!(
                            offset, h.offset,
                            "{c}: flip at {pos} reported at the wrong block"
                        );
                    }
                    other => panic!("{c}: flip at {pos} not found by verify: {other:?}"),
                }
                // Reading the damaged block is an error for every path.
                let mut it = t.iter();
                it.seek_to_first();
                while it.valid() {
                    it.next();
                }
                assert!(
                    it.status().is_err(),
                    "{c}: scan over flip at {pos} succeeded"
                );
            }
        }
    }

    #[test]
    fn truncated_files_are_corrupt() {
        let (_, good) = small_table(Compression::Lz4);
        for len in 0..good.len() {
            match open_bytes(good[..len].to_vec()) {
                Err(e) => assert!(e.is_corruption(), "truncated to {len}: {e}"),
                Ok(t) => assert!(t.verify().is_err(), "truncated to {len} verifies"),
            }
        }
        let e = open_bytes(good[..10].to_vec()).expect_err("short file");
        assert!(e.to_string().contains("shorter than"), "{e}");
        let mut junk = good.clone();
        let n = junk.len();
        junk[n - 8..].copy_from_slice(b"NOTASST!");
        let e = open_bytes(junk).expect_err("bad magic");
        assert!(e.to_string().contains("not a Strata table file"), "{e}");
    }

    #[test]
    fn future_format_version_is_unsupported() {
        let (_, mut bytes) = small_table(Compression::None);
        let n = bytes.len();
        bytes[n - 12..n - 8].copy_from_slice(&2u32.to_le_bytes());
        match open_bytes(bytes) {
            Err(Error::UnsupportedVersion {
                found,
                supported,
                file,
            }) => {
                assert_eq!((found, supported), (2, 1));
                assert_eq!(file, PathBuf::from("mem.sst"));
            }
            other => panic!("expected UnsupportedVersion, got {other:?}"),
        }
    }

    #[test]
    fn oversized_or_out_of_range_handles_are_corrupt() {
        let f = MemFile(vec![0u8; 1000]);
        let p = Path::new("x.sst");
        for h in [
            BlockHandle {
                offset: 0,
                size: MAX_BLOCK_SIZE + 1,
            },
            BlockHandle {
                offset: 990,
                size: 10,
            },
            BlockHandle {
                offset: u64::MAX - 2,
                size: 10,
            },
        ] {
            let e = read_block_contents(&f, p, h, 1000).expect_err("bad handle accepted");
            match e {
                Error::Corruption { offset, file, .. } => {
                    assert_eq!(offset, h.offset);
                    assert_eq!(file, p);
                }
                other => panic!("unexpected {other}"),
            }
        }
        // All zeros: checksum mismatch.
        let e = read_block_contents(
            &f,
            p,
            BlockHandle {
                offset: 10,
                size: 20,
            },
            1000,
        )
        .expect_err("zero block accepted");
        assert!(e.to_string().contains("checksum"), "{e}");
    }

    #[test]
    fn zero_byte_cache_and_cache_stats() {
        let (e, bytes) = small_table(Compression::Zstd);
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("c.sst");
        std::fs::write(&path, &bytes).expect("write");

        let stats = Arc::new(Statistics::default());
        let zero = Arc::new(BlockCache::new(0));
        let t = open_path(&path, Some(zero.clone()), stats.clone());
        check_table(&t, &e, &[b"nope".to_vec()]);
        assert_eq!(Statistics::get(&stats.block_cache_hits), 0);
        assert!(Statistics::get(&stats.block_cache_misses) > 0);
        assert_eq!(zero.usage_bytes(), 0);

        let stats = Arc::new(Statistics::default());
        let cache = Arc::new(BlockCache::new(1 << 20));
        let t = open_path(&path, Some(cache.clone()), stats.clone());
        let blocks = t.properties().num_data_blocks;
        let scan = || {
            let mut it = t.iter();
            it.seek_to_first();
            while it.valid() {
                it.next();
            }
            it.status().expect("scan");
        };
        scan();
        assert_eq!(Statistics::get(&stats.block_cache_misses), blocks);
        assert_eq!(Statistics::get(&stats.block_cache_hits), 0);
        scan();
        assert_eq!(Statistics::get(&stats.block_cache_misses), blocks);
        assert_eq!(Statistics::get(&stats.block_cache_hits), blocks);
        assert!(cache.usage_bytes() > 0);
        // verify() bypasses the cache.
        t.verify().expect("verify");
        assert_eq!(Statistics::get(&stats.block_cache_hits), blocks);
        // A second reader of the same file gets its own cache id.
        let t2 = open_path(&path, Some(cache), stats.clone());
        assert_ne!(t.cache_id(), t2.cache_id());
    }

    #[test]
    fn bloom_filter_stats_and_exclusion() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e: Entries = (0..2000u32)
            .map(|i| {
                (
                    make_internal_key(format!("user{i:06}").as_bytes(), 5, ValueKind::Put),
                    b"v".to_vec(),
                )
            })
            .collect();
        let (path, _) = write_table(dir.path(), "b.sst", &e, TableBuilderOptions::default());
        let stats = Arc::new(Statistics::default());
        let t = open_path(&path, None, stats.clone());
        let mut excluded = 0;
        for i in 0..1000u32 {
            let uk = format!("absent{i:06}").into_bytes();
            let mut calls = 0;
            let passed = t
                .get(&uk, &make_seek_key(&uk, MAX_SEQNO), &mut |_, _| {
                    calls += 1;
                    true
                })
                .expect("get");
            assert_eq!(calls, 0);
            if !passed {
                excluded += 1;
            }
        }
        assert!(excluded > 970, "filter excluded only {excluded} of 1000");
        assert_eq!(Statistics::get(&stats.bloom_useful), excluded);
        assert_eq!(
            Statistics::get(&stats.bloom_false_positive),
            1000 - excluded
        );
        for (k, _) in e.iter().take(100) {
            let uk = key::user_key(k);
            assert!(
                t.get(uk, &make_seek_key(uk, MAX_SEQNO), &mut |_, _| true)
                    .expect("get")
            );
        }
        assert_eq!(
            Statistics::get(&stats.bloom_checked_positive),
            1000 - excluded + 100
        );
        assert_eq!(
            Statistics::get(&stats.bloom_false_positive),
            1000 - excluded
        );
        // Without a filter nothing is excluded.
        let opts = TableBuilderOptions {
            bloom_bits_per_key: 0,
            ..TableBuilderOptions::default()
        };
        let (path, _) = write_table(dir.path(), "nf.sst", &e, opts);
        let t = open_path(&path, None, Arc::new(Statistics::default()));
        assert!(!t.has_filter());
        assert_eq!(t.properties().filter_size, 0);
        assert!(
            t.get(b"absent", &make_seek_key(b"absent", 1), &mut |_, _| true)
                .expect("get")
        );
    }

    #[test]
    fn empty_table_round_trips() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, s) = write_table(
            dir.path(),
            "e.sst",
            &Entries::new(),
            TableBuilderOptions::default(),
        );
        assert_eq!(s.num_entries, 0);
        assert!(s.smallest.is_empty() && s.largest.is_empty());
        let t = open_path(&path, None, Arc::new(Statistics::default()));
        assert_eq!(t.properties().num_data_blocks, 0);
        check_table(&t, &Entries::new(), &[b"a".to_vec(), Vec::new()]);
    }

    #[test]
    fn properties_encoding_round_trips_and_is_strict() {
        let p = TableProperties {
            num_entries: 10,
            num_deletions: 2,
            num_merges: 3,
            raw_key_bytes: 100,
            raw_value_bytes: 1 << 40,
            data_size: 4096,
            index_size: 50,
            filter_size: 20,
            smallest_seqno: 1,
            largest_seqno: MAX_SEQNO.get(),
            smallest: b"a\0\0\0\0\0\0\0\x01".to_vec(),
            largest: vec![],
            num_data_blocks: 2,
            compression: Compression::Zstd,
            num_compressed_blocks: 1,
            bloom_bits_per_key: 10,
            owner_db_id: b"0123456789abcdef".to_vec(),
            owner_file_number: 77,
        };
        let mut buf = Vec::new();
        p.encode_to(&mut buf);
        let path = Path::new("p");
        assert_eq!(TableProperties::decode(&buf, path, 0).expect("decode"), p);
        // Without an owner (tables written before it was recorded).
        let unowned = TableProperties {
            owner_db_id: Vec::new(),
            owner_file_number: 0,
            ..p.clone()
        };
        let mut old = Vec::new();
        unowned.encode_to(&mut old);
        assert!(old.len() < buf.len());
        assert_eq!(
            TableProperties::decode(&old, path, 0).expect("decode"),
            unowned
        );
        // Unknown fields are skipped.
        let mut ext = buf.clone();
        put_varint64(&mut ext, 40 << 1);
        put_varint64(&mut ext, 5);
        put_varint64(&mut ext, 41 << 1 | 1);
        put_length_prefixed(&mut ext, b"future");
        assert_eq!(TableProperties::decode(&ext, path, 0).expect("decode"), p);
        // Every truncation fails cleanly, but the one that leaves exactly
        // the required fields (the owner is optional, as a whole).
        for n in 0..buf.len() {
            let r = TableProperties::decode(&buf[..n], path, 0);
            if n == old.len() {
                assert_eq!(r.expect("required fields only"), unowned);
            } else {
                assert!(r.is_err(), "truncated to {n}");
            }
        }
        let mut newer = buf.clone();
        newer[0] = 2;
        assert!(matches!(
            TableProperties::decode(&newer, path, 0),
            Err(Error::UnsupportedVersion { found: 2, .. })
        ));
    }

    /// The annotated example in docs/format/sst.md, byte for byte.
    #[test]
    fn golden_single_entry_table() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e = vec![(make_internal_key(b"k", 1, ValueKind::Put), b"v".to_vec())];
        let opts = TableBuilderOptions {
            bloom_bits_per_key: 0,
            ..TableBuilderOptions::default()
        };
        let (path, _) = write_table(dir.path(), "g.sst", &e, opts);
        let bytes = StdVfs.read_all(&path).expect("read");
        let golden = concat!(
            // data block @0, 21 bytes + trailer
            "0009016b0101000000000000",
            "76",
            "00000000",
            "01000000",
            "00",
            "0253bca3",
            // index block @26, 22 bytes + trailer
            "0009026b0101000000000000",
            "0015",
            "00000000",
            "01000000",
            "00",
            "322a5bfe",
            // properties block @53, 51 bytes + trailer
            "01",
            "0201",
            "0400",
            "0600",
            "0809",
            "0a01",
            "0c1a",
            "0e1b",
            "1000",
            "1201",
            "1401",
            "17096b0101000000000000",
            "19096b0101000000000000",
            "1a01",
            "1c00",
            "1e00",
            "2000",
            "00",
            "d32a89f2",
            // footer @109
            "1a00000000000000",
            "1600000000000000",
            "0000000000000000",
            "0000000000000000",
            "3500000000000000",
            "3300000000000000",
            "a5a6dc4c",
            "01000000",
            "5352544154535354",
        );
        let hex: String = bytes.iter().map(|x| format!("{x:02x}")).collect();
        assert_eq!(hex, golden);
        let t = open_bytes(bytes).expect("open");
        check_table(&t, &e, &[]);
    }

    #[test]
    fn readers_and_iterators_are_thread_safe() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>() {}
        send_sync::<TableReader>();
        send_sync::<BlockCache>();
        send::<TableIter>();
        send::<TableBuilder>();
    }
}
