//! Reads column-group files: point lookups, iteration (as row pieces, for
//! compaction and generic readers) and block access for columnar scans.

use std::path::PathBuf;
use std::sync::Arc;

use super::block::CgBlock;
use super::meta::{BlockMeta, CG_FOOTER, CgProperties, decode_index};
use crate::cache::BlockCache;
use crate::dict::Dictionary;
use crate::dictfile::slot::{DictionarySlot, SlotFile};
use crate::error::{Error, Result};
use crate::key::{KIND_SEEK, ValueKind, pack_trailer};
use crate::keyblock::{KeyRows, LastKeys, RowSource, find_rows};
use crate::sst::bloom::BloomFilter;
use crate::sst::format::{Footer, MAX_BLOCK_SIZE};
use crate::sst::reader::read_block_contents;
use crate::stats::Statistics;
use crate::table::piece::PieceEncoder;
use crate::table::shape::TableShape;
use crate::table_format::OpenContext;
use crate::version::FileMeta;
use crate::vfs::RandomAccessFile;

/// An open column-group file. Its index, filter and properties stay in
/// memory; data blocks and dictionaries go through the block cache.
pub struct CgReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    shape: Arc<TableShape>,
    cache: Option<Arc<BlockCache>>,
    cache_id: u64,
    stats: Arc<Statistics>,
    data_end: u64,
    blocks: Vec<BlockMeta>,
    /// The blocks' last keys, searched by prefix.
    last_keys: LastKeys,
    filter: Option<BloomFilter>,
    properties: CgProperties,
    /// The group's value-column numbers.
    columns: Vec<usize>,
    /// Per column of the group, its dictionary if it is stored as codes.
    dictionaries: Vec<Option<DictionarySlot>>,
    footer_offset: u64,
}

impl std::fmt::Debug for CgReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CgReader")
            .field("path", &self.path)
            .field("group", &self.properties.group)
            .field("blocks", &self.blocks.len())
            .finish()
    }
}

impl CgReader {
    /// Opens a column-group file of a table of `shape`.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        shape: Arc<TableShape>,
        ctx: &OpenContext,
    ) -> Result<CgReader> {
        let (footer, footer_offset) = Footer::read(&CG_FOOTER, &*file, &path)?;
        let props_raw = read_block_contents(&*file, &path, footer.properties, footer_offset, None)?;
        let properties = CgProperties::decode(&props_raw, &path, footer.properties.offset)?;
        let bad = |why: String| Error::corruption(&path, footer.properties.offset, why);
        let mut columns = Vec::with_capacity(properties.columns.len());
        for &(v, ty) in &properties.columns {
            if v >= shape.pieces.len() || shape.pieces.ty(v) != ty {
                return Err(bad(format!(
                    "the file stores value column {v} as {ty}, which the table does not have"
                )));
            }
            if columns.last().is_some_and(|&l| l >= v) {
                return Err(bad("the file's columns are not ascending".into()));
            }
            columns.push(v);
        }
        let index_raw = read_block_contents(&*file, &path, footer.index, footer_offset, None)?;
        let blocks = decode_index(&index_raw, columns.len(), &path, footer.index.offset)?;
        // Data blocks end where the first meta block begins (a file written
        // without a filter has none: its handle is zero).
        let mut data_end = if footer.filter.size == 0 {
            footer.index.offset
        } else {
            footer.filter.offset.min(footer.index.offset)
        };
        let cache_id = BlockCache::new_id();
        let src = SlotFile {
            file: &*file,
            path: &path,
            footer_offset,
            cache: ctx.cache.as_deref(),
            cache_id,
            stats: &ctx.stats,
        };
        let mut dictionaries: Vec<Option<DictionarySlot>> = columns.iter().map(|_| None).collect();
        let mut counts = vec![None; columns.len()];
        for d in &properties.dictionaries {
            let Ok(i) = columns.binary_search(&d.column) else {
                return Err(bad(format!(
                    "a dictionary for column {}, which the file does not hold",
                    d.column
                )));
            };
            if shape.pieces.ty(d.column).fixed_width().is_some() || dictionaries[i].is_some() {
                return Err(bad(format!(
                    "a dictionary for column {}, which cannot have one (fixed width, or a second)",
                    d.column
                )));
            }
            data_end = data_end.min(d.handle.offset);
            dictionaries[i] = Some(DictionarySlot::open(&src, d.handle, d.values)?);
            counts[i] = Some(d.values);
        }
        // Every data block lies before the meta blocks: scans size their
        // parts by these handles before reading any block (a damaged size
        // near 2^64 overflowed their sums).
        for b in &blocks {
            let end = b.handle.end_with_trailer();
            if end.is_none_or(|e| e > data_end) || b.handle.size > MAX_BLOCK_SIZE {
                return Err(Error::corruption(
                    &path,
                    footer.index.offset,
                    format!(
                        "index block: a data block at {} of {} bytes passes the data's end at {data_end}",
                        b.handle.offset, b.handle.size
                    ),
                ));
            }
        }
        // Scans skip blocks by the index's code ranges: they must be codes
        // of the file's dictionaries, and only where there is one.
        for b in &blocks {
            for (s, count) in b.stats.iter().zip(&counts) {
                let fits = |m: &Option<Vec<u8>>| {
                    m.as_deref().is_none_or(|m| {
                        let code = u32::from_le_bytes(m.try_into().unwrap_or([0xff; 4]));
                        count.is_some_and(|n| u64::from(code) < n)
                    })
                };
                let ok = match count {
                    Some(_) => s.codes || (s.min.is_none() && s.max.is_none()),
                    None => !s.codes,
                };
                if !ok || (s.codes && !(fits(&s.min) && fits(&s.max))) {
                    return Err(Error::corruption(
                        &path,
                        footer.index.offset,
                        "index block: column statistics disagree with the file's dictionaries",
                    ));
                }
            }
        }
        let filter = if footer.filter.size == 0 {
            None
        } else {
            let raw = read_block_contents(&*file, &path, footer.filter, footer_offset, None)?;
            Some(
                BloomFilter::from_block(raw)
                    .map_err(|r| Error::corruption(&path, footer.filter.offset, r))?,
            )
        };
        let rows = blocks
            .iter()
            .try_fold(0u64, |a, b| a.checked_add(b.rows))
            .ok_or_else(|| bad("the index's row counts overflow".into()))?;
        if rows != properties.num_entries || blocks.len() as u64 != properties.num_blocks {
            return Err(bad(format!(
                "the index lists {} blocks of {rows} rows; the properties say {} blocks of {}",
                blocks.len(),
                properties.num_blocks,
                properties.num_entries
            )));
        }
        Ok(CgReader {
            file,
            path,
            shape,
            cache: ctx.cache.clone(),
            cache_id,
            stats: Arc::clone(&ctx.stats),
            data_end,
            last_keys: LastKeys::new(blocks.iter().map(|b| b.last_key.as_slice())),
            blocks,
            filter,
            properties,
            columns,
            dictionaries,
            footer_offset,
        })
    }

    /// The dictionary of the group's `i`-th column, if it is stored as
    /// codes (from the cache, or read and cached).
    pub fn dictionary(&self, i: usize) -> Result<Option<Arc<Dictionary>>> {
        let Some(slot) = &self.dictionaries[i] else {
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

    /// Whether the group's `i`-th column is stored as codes.
    pub fn is_coded(&self, i: usize) -> bool {
        self.dictionaries[i].is_some()
    }

    /// `file`'s reader, if `file` is a column-group file.
    pub fn of(file: &FileMeta) -> Option<&CgReader> {
        file.table.source_any()?.downcast_ref()
    }

    /// `file`'s reader, if `file` is a column-group file; an error if the
    /// file holds another group than the one the manifest lists it under
    /// (a file swapped in, a damaged manifest), which would otherwise be
    /// read through the wrong group's columns.
    pub fn of_listed(file: &FileMeta) -> Result<Option<&CgReader>> {
        let Some(r) = Self::of(file) else {
            return Ok(None);
        };
        if r.properties.group != file.group.0 {
            return Err(Error::corruption(
                &file.path,
                0,
                format!(
                    "the file holds group {} (value columns {:?}); the manifest lists it under \
                     group {}",
                    r.properties.group, r.columns, file.group
                ),
            ));
        }
        Ok(Some(r))
    }

    /// The group's value-column numbers, ascending.
    pub fn columns(&self) -> &[usize] {
        &self.columns
    }

    /// The properties block.
    pub fn properties(&self) -> &CgProperties {
        &self.properties
    }

    /// The data blocks' index entries.
    pub fn blocks(&self) -> &[BlockMeta] {
        &self.blocks
    }

    /// Reads data block `i` (through the cache).
    pub fn block(&self, i: usize) -> Result<Arc<CgBlock>> {
        BlockCache::get_or_load(
            self.cache.as_deref(),
            self.cache_id,
            self.blocks[i].handle.offset,
            &self.stats,
            || self.read_block(i),
            CgBlock::size_bytes,
        )
    }

    /// Reads, checks and parses block `i` from the file (not the cache).
    fn read_block(&self, i: usize) -> Result<CgBlock> {
        let meta = &self.blocks[i];
        let raw = read_block_contents(&*self.file, &self.path, meta.handle, self.data_end, None)?;
        let dicts = if self.dictionaries.iter().any(Option::is_some) {
            (0..self.columns.len())
                .map(|i| self.dictionary(i))
                .collect::<Result<Vec<_>>>()?
        } else {
            Vec::new()
        };
        let block = CgBlock::parse(raw, &self.shape.pieces, &self.columns, &dicts)
            .map_err(|r| Error::corruption(&self.path, meta.handle.offset, r))?;
        if block.rows() as u64 != meta.rows
            || (block.rows() > 0 && block.user_key(block.rows() - 1) != meta.last_key.as_slice())
        {
            return Err(Error::corruption(
                &self.path,
                meta.handle.offset,
                "the block disagrees with its index entry (rows or last key)",
            ));
        }
        // Scans skip blocks by the index's code ranges: they must be the
        // block's.
        for (i, s) in meta.stats.iter().enumerate() {
            if !s.codes {
                continue;
            }
            let code = |m: &Option<Vec<u8>>| {
                m.as_deref()
                    .map(|m| u32::from_le_bytes(m.try_into().unwrap_or([0xff; 4])))
            };
            let range = block.code_range(i);
            if (code(&s.min), code(&s.max)) != (range.map(|r| r.0), range.map(|r| r.1)) {
                return Err(Error::corruption(
                    &self.path,
                    meta.handle.offset,
                    format!(
                        "the block's codes of column {} disagree with its index entry",
                        self.columns[i]
                    ),
                ));
            }
        }
        Ok(block)
    }

    /// The first block whose last key is at or after `user_key`.
    pub fn block_for(&self, user_key: &[u8]) -> usize {
        self.last_keys
            .block_for(user_key, |i| self.blocks[i].last_key.as_slice())
    }

    /// Whether the filter admits `user_key`.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        BloomFilter::admits(self.filter.as_ref(), user_key, &self.stats)
    }

    /// The rows of `user_key` at or below sequence number `snap`: the block
    /// and the row range, newest first. `None` if the file has none.
    pub fn find(
        &self,
        user_key: &[u8],
        snap_trailer: u64,
    ) -> Result<Option<(Arc<CgBlock>, std::ops::Range<usize>)>> {
        find_rows(self, user_key, snap_trailer)
    }

    /// Encodes row `r` of `block` as a row piece into `out` (cleared).
    pub fn encode_piece(
        &self,
        block: &CgBlock,
        r: usize,
        enc: &mut PieceEncoder,
        out: &mut Vec<u8>,
    ) {
        enc.clear();
        for (i, &v) in self.columns.iter().enumerate() {
            if let Some(cell) = block.cell(i, r) {
                enc.push(&self.shape.pieces, v, cell);
            }
        }
        out.clear();
        enc.finish(&self.shape.pieces, out);
    }
}

impl RowSource for CgReader {
    type Block = CgBlock;
    type Scratch = PieceEncoder;

    fn num_blocks(&self) -> usize {
        self.blocks.len()
    }
    fn block(&self, i: usize) -> Result<Arc<CgBlock>> {
        CgReader::block(self, i)
    }
    fn read_block(&self, i: usize) -> Result<CgBlock> {
        CgReader::read_block(self, i)
    }
    fn block_for(&self, user_key: &[u8]) -> usize {
        CgReader::block_for(self, user_key)
    }
    fn may_contain(&self, user_key: &[u8]) -> bool {
        CgReader::may_contain(self, user_key)
    }
    fn key_rows(block: &CgBlock) -> (&KeyRows, &[u8]) {
        block.key_rows()
    }
    fn scratch(&self) -> PieceEncoder {
        PieceEncoder::new(&self.shape.pieces)
    }
    fn column_codes(
        block: &CgBlock,
        r: usize,
        f: &mut dyn FnMut(usize, crate::dict::CodedValue<'_>),
    ) {
        block.for_each_code(r, f)
    }
    fn value_into(&self, block: &CgBlock, r: usize, enc: &mut PieceEncoder, value: &mut Vec<u8>) {
        value.clear();
        if block.kind(r) != ValueKind::Delete {
            self.encode_piece(block, r, enc, value);
        }
    }
    fn path(&self) -> &std::path::Path {
        &self.path
    }
    fn block_offset(&self, i: usize) -> u64 {
        self.blocks[i].handle.offset
    }
}

/// The seek key of `user_key` at sequence number `snap` (the trailer used
/// by [`CgReader::find`]).
pub fn snap_trailer(snap: crate::key::SeqNo) -> u64 {
    pack_trailer(snap, KIND_SEEK)
}
