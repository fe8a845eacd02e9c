//! Writes a column-group file from entries in internal-key order.

use std::path::PathBuf;
use std::sync::Arc;

use super::block_builder::BlockBuilder;
use super::meta::{BlockMeta, CG_FOOTER, CG_FORMAT_VERSION, CgProperties, encode_index};
use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueKind, parse_internal_key};
use crate::sst::bloom::BloomFilterBuilder;
use crate::sst::format::{BlockCompressor, BlockHandle, Compression, Footer, write_block};
use crate::sst::{TableBuilderOptions, TableSummary};
use crate::table::piece::PieceView;
use crate::table::shape::TableShape;
use crate::table_format::{GroupId, TableWriter, WriterContext};
use crate::vfs::WritableFile;

/// Writes one column-group file (see the module docs of `cgfile`).
pub struct CgWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    shape: Arc<TableShape>,
    options: TableBuilderOptions,
    block: BlockBuilder,
    blocks: Vec<BlockMeta>,
    filter: Option<BloomFilterBuilder>,
    compressor: BlockCompressor,
    offset: u64,
    props: CgProperties,
    last_user_key: Vec<u8>,
    scratch: Vec<u8>,
    failed: Option<Error>,
}

impl CgWriter {
    /// Starts a file of group `group` (columns `columns`) for `ctx`.
    pub fn new(
        file: Box<dyn WritableFile>,
        path: PathBuf,
        shape: Arc<TableShape>,
        group: GroupId,
        columns: &[usize],
        ctx: &WriterContext<'_>,
    ) -> CgWriter {
        let options = ctx.options.clone();
        let filter = (options.bloom_bits_per_key > 0)
            .then(|| BloomFilterBuilder::new(options.bloom_bits_per_key));
        let props = CgProperties {
            owner_db_id: ctx.owner_db_id.to_vec(),
            file_number: ctx.file_number.get(),
            group: group.0,
            columns: columns.iter().map(|&v| (v, shape.pieces.ty(v))).collect(),
            ..Default::default()
        };
        CgWriter {
            block: BlockBuilder::new(&shape.pieces, columns),
            file,
            path,
            shape,
            options,
            blocks: Vec::new(),
            filter,
            compressor: BlockCompressor::default(),
            offset: 0,
            props,
            last_user_key: Vec::new(),
            scratch: Vec::new(),
            failed: None,
        }
    }

    fn fail(&mut self, e: Error) -> Error {
        if self.failed.is_none() {
            self.failed = Some(e.duplicate());
        }
        e
    }

    fn check_failed(&self) -> Result<()> {
        match &self.failed {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }

    fn flush_block(&mut self) -> Result<()> {
        if self.block.rows() == 0 {
            return Ok(());
        }
        let rows = self.block.rows() as u64;
        let last_key = self.block.last_key().to_vec();
        let stats = self.block.stats();
        self.block.finish(&mut self.scratch);
        let r = write_block(
            self.file.as_mut(),
            &mut self.offset,
            &mut self.compressor,
            self.options.compression,
            &self.scratch,
        );
        let (handle, _) = r.map_err(|e| self.fail(e))?;
        self.blocks.push(BlockMeta {
            handle,
            rows,
            last_key,
            stats,
        });
        self.props.num_blocks += 1;
        Ok(())
    }

    fn write_meta(&mut self, contents: &[u8]) -> Result<BlockHandle> {
        let r = write_block(
            self.file.as_mut(),
            &mut self.offset,
            &mut self.compressor,
            Compression::None,
            contents,
        );
        r.map(|(h, _)| h).map_err(|e| self.fail(e))
    }
}

impl TableWriter for CgWriter {
    fn add(&mut self, internal_key: &[u8], value: &[u8]) -> Result<()> {
        self.check_failed()?;
        let parsed = parse_internal_key(internal_key).ok_or_else(|| {
            Error::corruption(&self.path, 0, "malformed internal key handed to the writer")
        })?;
        let ukey = parsed.user_key;
        if self.props.num_entries > 0
            && crate::key::compare_internal(&self.props.largest, internal_key)
                != std::cmp::Ordering::Less
        {
            // The caller broke the writer's contract; writing on would make
            // a file whose index lies.
            return Err(Error::InvalidArgument(format!(
                "column-group writer for {}: entries out of order ({:?} after {:?})",
                self.path.display(),
                internal_key,
                self.props.largest
            )));
        }
        let new_key = self.props.num_entries == 0 || ukey != self.last_user_key.as_slice();
        // Blocks end between user keys, so one key's versions share a block.
        if new_key && self.block.size_estimate() >= self.options.block_size {
            self.flush_block()?;
        }
        let trailer = crate::key::trailer(internal_key);
        match parsed.kind {
            ValueKind::Delete => {
                self.block.add(ukey, trailer, None);
                self.props.num_deletions += 1;
            }
            kind => {
                let view = PieceView::parse(&self.shape.pieces, value).map_err(|e| {
                    Error::corruption(
                        &self.path,
                        0,
                        format!("entry to write is not a row piece: {e}"),
                    )
                })?;
                self.block
                    .add(ukey, trailer, Some((&self.shape.pieces, &view)));
                if kind == ValueKind::Merge {
                    self.props.num_merges += 1;
                }
            }
        }
        if new_key {
            if let Some(f) = self.filter.as_mut() {
                f.add_key(ukey);
            }
            self.last_user_key.clear();
            self.last_user_key.extend_from_slice(ukey);
        }
        let seq = parsed.seqno.get();
        if self.props.num_entries == 0 {
            self.props.smallest = internal_key.to_vec();
            self.props.smallest_seqno = seq;
            self.props.largest_seqno = seq;
        }
        self.props.smallest_seqno = self.props.smallest_seqno.min(seq);
        self.props.largest_seqno = self.props.largest_seqno.max(seq);
        self.props.largest.clear();
        self.props.largest.extend_from_slice(internal_key);
        self.props.num_entries += 1;
        Ok(())
    }

    fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    fn estimated_file_size(&self) -> u64 {
        self.offset + self.block.size_estimate() as u64
    }

    fn finish(mut self: Box<Self>) -> Result<TableSummary> {
        self.check_failed()?;
        self.flush_block()?;
        self.props.data_size = self.offset;
        let mut filter = BlockHandle::default();
        if let Some(f) = self.filter.take()
            && f.num_keys() > 0
        {
            filter = self.write_meta(&f.finish())?;
        }
        let mut index = Vec::new();
        encode_index(&self.blocks, &mut index);
        let index = self.write_meta(&index)?;
        let mut props = Vec::new();
        self.props.encode_to(&mut props);
        let properties = self.write_meta(&props)?;
        let footer = Footer {
            index,
            filter,
            properties,
            version: CG_FORMAT_VERSION,
        };
        let r = footer.write_and_sync(&CG_FOOTER, self.file.as_mut());
        self.offset += r.map_err(|e| self.fail(e))?;
        Ok(TableSummary {
            file_size: self.offset,
            num_entries: self.props.num_entries,
            num_deletions: self.props.num_deletions,
            smallest: std::mem::take(&mut self.props.smallest),
            largest: std::mem::take(&mut self.props.largest),
            smallest_seqno: SeqNo(self.props.smallest_seqno),
            largest_seqno: SeqNo(self.props.largest_seqno),
        })
    }
}
