//! Reads dictionary-encoded files: point lookups and iteration through the
//! shared keyed-block code (`keyblock::rows`), and block access for filters
//! that run on codes.

use std::path::PathBuf;
use std::sync::Arc;

use super::block::DictBlock;
use super::meta::{BlockMeta, DICT_FOOTER, Index};
use super::slot::{DictionarySlot, SlotFile};
use crate::cache::BlockCache;
use crate::dict::{CodedValue, Dictionary};
use crate::error::{Error, Result};
use crate::keyblock::{KeyRows, LastKeys, RowIter, RowSource};
use crate::sst::TableProperties;
use crate::sst::bloom::BloomFilter;
use crate::sst::format::{BLOCK_TRAILER_LEN, Footer};

/// The most a scan reads in one call: a run of adjacent blocks.
pub const SCAN_READ_BYTES: u64 = 1 << 20;
use crate::sst::reader::{check_block_contents, read_block_contents};
use crate::stats::Statistics;
use crate::table_format::OpenContext;
use crate::vfs::RandomAccessFile;

/// An open dictionary-encoded file. Its index, filter and properties stay
/// in memory while it is open; data blocks and the dictionary go through
/// the block cache, so its byte budget bounds dictionaries too (without a
/// cache the dictionary is decoded once, at open, and kept).
pub struct DictReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    cache: Option<Arc<BlockCache>>,
    cache_id: u64,
    stats: Arc<Statistics>,
    data_end: u64,
    blocks: Vec<BlockMeta>,
    /// The blocks' last keys, searched by prefix.
    last_keys: LastKeys,
    filter: Option<BloomFilter>,
    properties: TableProperties,
    dictionary: Option<DictionarySlot>,
    footer_offset: u64,
}

impl std::fmt::Debug for DictReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DictReader")
            .field("path", &self.path)
            .field("blocks", &self.blocks.len())
            .field("dictionary", &self.dictionary.is_some())
            .finish()
    }
}

impl DictReader {
    /// Opens a dictionary-encoded file.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        ctx: &OpenContext,
    ) -> Result<DictReader> {
        let (footer, footer_offset) = Footer::read(&DICT_FOOTER, &*file, &path)?;
        let props_raw = read_block_contents(&*file, &path, footer.properties, footer_offset, None)?;
        let properties = TableProperties::decode(&props_raw, &path, footer.properties.offset)?;
        let index_raw = read_block_contents(&*file, &path, footer.index, footer_offset, None)?;
        let index = Index::decode(&index_raw, &path, footer.index.offset)?;
        let bad = |why: String| Error::corruption(&path, footer.index.offset, why);
        // Data blocks end where the first meta block begins.
        let mut data_end = footer.index.offset;
        if footer.filter.size > 0 {
            data_end = data_end.min(footer.filter.offset);
        }
        let cache_id = BlockCache::new_id();
        let dictionary = match index.dictionary {
            None => None,
            Some((h, values)) => {
                data_end = data_end.min(h.offset);
                let src = SlotFile {
                    file: &*file,
                    path: &path,
                    footer_offset,
                    cache: ctx.cache.as_deref(),
                    cache_id,
                    stats: &ctx.stats,
                };
                Some(DictionarySlot::open(&src, h, values)?)
            }
        };
        let filter = if footer.filter.size == 0 {
            None
        } else {
            let raw = read_block_contents(&*file, &path, footer.filter, footer_offset, None)?;
            Some(
                BloomFilter::from_block(raw)
                    .map_err(|r| Error::corruption(&path, footer.filter.offset, r))?,
            )
        };
        let rows = index
            .blocks
            .iter()
            .try_fold(0u64, |a, b| a.checked_add(b.rows))
            .ok_or_else(|| bad("the index's row counts overflow".into()))?;
        if rows != properties.num_entries || index.blocks.len() as u64 != properties.num_data_blocks
        {
            return Err(bad(format!(
                "the index lists {} blocks of {rows} rows; the properties say {} blocks of {}",
                index.blocks.len(),
                properties.num_data_blocks,
                properties.num_entries
            )));
        }
        Ok(DictReader {
            file,
            path,
            cache: ctx.cache.clone(),
            cache_id,
            stats: Arc::clone(&ctx.stats),
            data_end,
            last_keys: LastKeys::new(index.blocks.iter().map(|b| b.last_key.as_slice())),
            blocks: index.blocks,
            filter,
            properties,
            dictionary,
            footer_offset,
        })
    }

    /// The file's dictionary, if its values are codes: from the block
    /// cache, or read and decoded (and cached).
    pub fn dictionary(&self) -> Result<Option<Arc<Dictionary>>> {
        let Some(slot) = &self.dictionary else {
            return Ok(None);
        };
        let src = SlotFile {
            file: &*self.file,
            path: &self.path,
            footer_offset: self.footer_offset,
            cache: self.cache.as_deref(),
            cache_id: self.cache_id,
            stats: &self.stats,
        };
        slot.get(&src).map(Some)
    }

    /// Calls `f(i, block)` for each data block `i` of `indices` (ascending),
    /// for a scan that reads most of a file: blocks in the block cache come
    /// from it, the others are read a run of adjacent blocks (up to
    /// [`SCAN_READ_BYTES`]) per read call, checked and parsed like any
    /// block, and not cached (a scan would push out what point reads use).
    pub fn scan_blocks(
        &self,
        indices: &[usize],
        f: &mut dyn FnMut(usize, &DictBlock) -> Result<()>,
    ) -> Result<()> {
        let dict = self.dictionary()?;
        let mut k = 0;
        while k < indices.len() {
            let i = indices[k];
            let meta = &self.blocks[i];
            if let Some(c) = &self.cache
                && let Some(b) = c.get_other(self.cache_id, meta.handle.offset)
                && let Ok(b) = b.downcast::<DictBlock>()
            {
                Statistics::add(&self.stats.block_cache_hits, 1);
                f(i, &b)?;
                k += 1;
                continue;
            }
            // A run of blocks that follow each other on disk.
            let start = meta.handle.offset;
            let mut end = self.block_end(i)?;
            let mut last = k;
            while last + 1 < indices.len()
                && indices[last + 1] == indices[last] + 1
                && self.blocks[indices[last + 1]].handle.offset == end
            {
                let next_end = self.block_end(indices[last + 1])?;
                if next_end - start > SCAN_READ_BYTES {
                    break;
                }
                end = next_end;
                last += 1;
            }
            let mut buf = vec![0u8; (end - start) as usize];
            self.file.read_exact_at(&mut buf, start)?;
            for &j in &indices[k..=last] {
                let h = self.blocks[j].handle;
                let at = (h.offset - start) as usize;
                let stored = buf[at..at + h.size as usize + BLOCK_TRAILER_LEN].to_vec();
                Statistics::add(&self.stats.block_cache_misses, 1);
                let raw = check_block_contents(&self.path, h, stored)?;
                let block = self.parse_block(j, raw, dict.as_ref())?;
                f(j, &block)?;
            }
            k = last + 1;
        }
        Ok(())
    }

    /// Where data block `i` ends, trailer included; a corruption error if
    /// past the data blocks.
    fn block_end(&self, i: usize) -> Result<u64> {
        let h = self.blocks[i].handle;
        h.end_with_trailer()
            .filter(|&e| e <= self.data_end && h.size <= crate::sst::format::MAX_BLOCK_SIZE)
            .ok_or_else(|| {
                Error::corruption(
                    &self.path,
                    h.offset,
                    "data block handle past the data blocks",
                )
            })
    }

    /// Parses data block `i`'s contents and checks them against its index
    /// entry.
    fn parse_block(
        &self,
        i: usize,
        raw: Vec<u8>,
        dict: Option<&Arc<Dictionary>>,
    ) -> Result<DictBlock> {
        let meta = &self.blocks[i];
        let block = DictBlock::parse(raw, dict)
            .map_err(|r| Error::corruption(&self.path, meta.handle.offset, r))?;
        let (k, d) = block.key_rows();
        // Filters skip blocks by the index's code range: it must be the
        // block's.
        if k.rows() as u64 != meta.rows
            || k.user_key(d, k.rows() - 1) != meta.last_key.as_slice()
            || block.code_stats() != meta.codes
        {
            return Err(Error::corruption(
                &self.path,
                meta.handle.offset,
                "the block disagrees with its index entry (rows, last key or codes)",
            ));
        }
        Ok(block)
    }

    /// Whether the file's values are codes into a dictionary.
    pub fn has_dictionary(&self) -> bool {
        self.dictionary.is_some()
    }

    /// The data blocks' index entries.
    pub fn blocks(&self) -> &[BlockMeta] {
        &self.blocks
    }

    /// The properties block.
    pub fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// Iterates every entry.
    pub fn iter(self: &Arc<Self>) -> RowIter<DictReader> {
        RowIter::new(Arc::clone(self))
    }
}

impl RowSource for DictReader {
    type Block = DictBlock;
    type Scratch = ();

    fn num_blocks(&self) -> usize {
        self.blocks.len()
    }

    fn block(&self, i: usize) -> Result<Arc<DictBlock>> {
        BlockCache::get_or_load(
            self.cache.as_deref(),
            self.cache_id,
            self.blocks[i].handle.offset,
            &self.stats,
            || self.read_block(i),
            DictBlock::size_bytes,
        )
    }

    fn read_block(&self, i: usize) -> Result<DictBlock> {
        let meta = &self.blocks[i];
        let raw = read_block_contents(&*self.file, &self.path, meta.handle, self.data_end, None)?;
        let dict = self.dictionary()?;
        self.parse_block(i, raw, dict.as_ref())
    }

    fn block_for(&self, user_key: &[u8]) -> usize {
        self.last_keys
            .block_for(user_key, |i| self.blocks[i].last_key.as_slice())
    }

    fn may_contain(&self, user_key: &[u8]) -> bool {
        BloomFilter::admits(self.filter.as_ref(), user_key, &self.stats)
    }

    fn key_rows(block: &DictBlock) -> (&KeyRows, &[u8]) {
        block.key_rows()
    }

    fn scratch(&self) {}

    const BORROWS_VALUES: bool = true;

    fn value_ref(block: &DictBlock, r: usize) -> &[u8] {
        block.value(r)
    }

    fn value_code(block: &DictBlock, r: usize) -> Option<CodedValue<'_>> {
        block.value_code(r)
    }

    fn value_into(&self, block: &DictBlock, r: usize, _: &mut (), value: &mut Vec<u8>) {
        value.clear();
        value.extend_from_slice(block.value(r));
    }

    fn path(&self) -> &std::path::Path {
        &self.path
    }

    fn block_offset(&self, i: usize) -> u64 {
        self.blocks[i].handle.offset
    }
}
