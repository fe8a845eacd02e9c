//! Writes a dictionary-encoded file.
//!
//! A value's code is its rank among the file's distinct values, which is
//! known only once every entry has arrived. The writer therefore keeps the
//! file's keys and, per entry, a reference to its value (`dict::column`,
//! which interns values given as bytes and keeps codes given into input
//! dictionaries) until `finish`, and writes the blocks then. A file is at
//! most the target file size, so this holds at most about one file's keys
//! in memory. When the share of distinct values passes the keyspace's
//! threshold the file stores its values plainly instead.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use super::block::DictBlockBuilder;
use super::meta::{BlockMeta, DICT_FOOTER, DICT_FORMAT_VERSION, Index};
use crate::dict::Codes;
use crate::dict::column::{Slot, ValueColumn};
use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueKind, compare_internal, parse_internal_key, trailer};
use crate::sst::bloom::BloomFilterBuilder;
use crate::sst::format::{BlockCompressor, BlockHandle, Compression, Footer, write_block};
use crate::sst::{TableBuilderOptions, TableProperties, TableSummary};
use crate::stats::Statistics;
use crate::table_format::{TableWriter, WriterContext};
use crate::vfs::WritableFile;

/// Where the data blocks go so far: the file's length and the compressor.
struct Output {
    offset: u64,
    compressor: BlockCompressor,
}

/// Writes one dictionary-encoded file.
pub struct DictWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    options: TableBuilderOptions,
    /// Internal keys, end to end; `key_ends[i]` is where entry `i`'s ends.
    keys: Vec<u8>,
    key_ends: Vec<usize>,
    /// Entry `i`'s value is row `i`.
    values: ValueColumn,
    props: TableProperties,
    stats: Arc<Statistics>,
    failed: Option<Error>,
}

impl DictWriter {
    /// Starts a file for `ctx`, with a dictionary when at most
    /// `max_distinct_ratio` of its values are distinct.
    pub fn new(
        file: Box<dyn WritableFile>,
        path: PathBuf,
        ctx: &WriterContext<'_>,
        max_distinct_ratio: f64,
    ) -> DictWriter {
        let props = TableProperties {
            owner_db_id: ctx.owner_db_id.to_vec(),
            owner_file_number: ctx.file_number.get(),
            compression: ctx.options.compression,
            bloom_bits_per_key: ctx.options.bloom_bits_per_key,
            ..Default::default()
        };
        DictWriter {
            file,
            path,
            options: ctx.options.clone(),
            keys: Vec::new(),
            key_ends: Vec::new(),
            values: ValueColumn::new(max_distinct_ratio),
            props,
            stats: Arc::clone(ctx.stats),
            failed: None,
        }
    }

    fn fail(&mut self, e: Error) -> Error {
        if self.failed.is_none() {
            self.failed = Some(e.duplicate());
        }
        e
    }

    fn append(
        &mut self,
        offset: &mut u64,
        compressor: &mut BlockCompressor,
        compression: Compression,
        raw: &[u8],
    ) -> Result<(BlockHandle, bool)> {
        let r = write_block(self.file.as_mut(), offset, compressor, compression, raw);
        r.map_err(|e| self.fail(e))
    }

    /// Encodes `block` into `raw`, appends it and records it in `index`.
    fn write_data_block(
        &mut self,
        block: &mut DictBlockBuilder,
        raw: &mut Vec<u8>,
        out: &mut Output,
        index: &mut Index,
    ) -> Result<()> {
        let last_key = block.last_key().to_vec();
        let rows = block.rows() as u64;
        let codes = block.finish(raw);
        let compression = self.options.compression;
        let (handle, compressed) =
            self.append(&mut out.offset, &mut out.compressor, compression, raw)?;
        self.props.num_compressed_blocks += u64::from(compressed);
        index.blocks.push(BlockMeta {
            handle,
            rows,
            last_key,
            codes,
        });
        Ok(())
    }

    /// Writes the buffered entries, the dictionary, the filter, the index,
    /// the properties and the footer; returns the file's size.
    fn write_all(&mut self) -> Result<u64> {
        let values = self.props.num_entries - self.props.num_deletions;
        let started = Instant::now();
        let carried = self.values.carried_as_codes();
        let column = std::mem::replace(&mut self.values, ValueColumn::new(0.0));
        let column = column.settle().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{}: over 4 GiB of distinct values in one file",
                self.path.display()
            ))
        })?;
        let coded = column.dictionary().is_some();
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        Statistics::add(&self.stats.dictionary_build_micros, micros);
        // A file of tombstones only has neither.
        if values > 0 {
            Statistics::add(
                if coded {
                    &self.stats.dictionary_files_written
                } else {
                    &self.stats.plain_value_files_written
                },
                1,
            );
        }
        let mut out = Output {
            offset: 0,
            compressor: BlockCompressor::default(),
        };
        let compression = self.options.compression;
        let mut index = Index::default();
        let mut filter = (self.options.bloom_bits_per_key > 0)
            .then(|| BloomFilterBuilder::new(self.options.bloom_bits_per_key));
        let mut block = DictBlockBuilder::default();
        let mut raw = Vec::new();
        Statistics::add(&self.stats.values_carried_as_codes, carried as u64);
        let (keys, key_ends) = (
            std::mem::take(&mut self.keys),
            std::mem::take(&mut self.key_ends),
        );
        let key = |i: usize| {
            let start = if i == 0 { 0 } else { key_ends[i - 1] };
            let ikey = &keys[start..key_ends[i]];
            (&ikey[..ikey.len() - 8], trailer(ikey))
        };
        for i in 0..column.len() {
            let (ukey, t) = key(i);
            let new_key = i == 0 || key(i - 1).0 != ukey;
            if new_key {
                // Blocks end between user keys, so one key's versions
                // share a block.
                if block.size_estimate() >= self.options.block_size {
                    self.write_data_block(&mut block, &mut raw, &mut out, &mut index)?;
                }
                if let Some(f) = filter.as_mut() {
                    f.add_key(ukey);
                }
            }
            match (column.slot(i), coded) {
                (Slot::None, true) => block.add_code(ukey, t, 0),
                (Slot::None, false) => block.add_plain(ukey, t, &[]),
                (Slot::Code(c), _) => block.add_code(ukey, t, c),
                (Slot::Bytes(b), _) => block.add_plain(ukey, t, b),
            }
        }
        if block.rows() > 0 {
            self.write_data_block(&mut block, &mut raw, &mut out, &mut index)?;
        }
        let (mut offset, mut compressor) = (out.offset, out.compressor);
        self.props.data_size = offset;
        self.props.num_data_blocks = index.blocks.len() as u64;
        if let Some(dict) = column.dictionary() {
            raw.clear();
            dict.encode_to(&mut raw);
            // The dictionary is compressed like data blocks, and only when
            // that pays (the framing keeps it plain otherwise).
            let (h, _) = self.append(&mut offset, &mut compressor, compression, &raw)?;
            index.dictionary = Some((h, dict.len() as u64));
        }
        let mut filter_handle = BlockHandle::default();
        if let Some(f) = filter.take()
            && f.num_keys() > 0
        {
            let start = offset;
            (filter_handle, _) =
                self.append(&mut offset, &mut compressor, Compression::None, &f.finish())?;
            self.props.filter_size = offset - start;
        }
        raw.clear();
        index.encode_to(&mut raw);
        let start = offset;
        let (index_handle, _) =
            self.append(&mut offset, &mut compressor, Compression::None, &raw)?;
        self.props.index_size = offset - start;
        raw.clear();
        self.props.encode_to(&mut raw);
        let (properties, _) = self.append(&mut offset, &mut compressor, Compression::None, &raw)?;
        let footer = Footer {
            index: index_handle,
            filter: filter_handle,
            properties,
            version: DICT_FORMAT_VERSION,
        };
        let r = footer.write_and_sync(&DICT_FOOTER, self.file.as_mut());
        Ok(offset + r.map_err(|e| self.fail(e))?)
    }
}

impl TableWriter for DictWriter {
    fn add(&mut self, internal_key: &[u8], value: &[u8]) -> Result<()> {
        self.add_coded(internal_key, value, Codes::default())
    }

    fn add_coded(&mut self, internal_key: &[u8], value: &[u8], codes: Codes<'_>) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.duplicate());
        }
        let parsed = parse_internal_key(internal_key).ok_or_else(|| {
            Error::corruption(&self.path, 0, "malformed internal key handed to the writer")
        })?;
        if self.props.num_entries > 0
            && compare_internal(&self.props.largest, internal_key) != std::cmp::Ordering::Less
        {
            return Err(Error::InvalidArgument(format!(
                "dictionary-encoded writer for {}: entries out of order ({:?} after {:?})",
                self.path.display(),
                internal_key,
                self.props.largest
            )));
        }
        match parsed.kind {
            ValueKind::Delete => {
                self.props.num_deletions += 1;
                self.values.push_none();
            }
            kind => {
                if kind == ValueKind::Merge {
                    self.props.num_merges += 1;
                }
                match codes.value {
                    Some(c) => self.values.push_coded(c),
                    None => self.values.push_bytes(value),
                }
            }
        }
        self.keys.extend_from_slice(internal_key);
        self.key_ends.push(self.keys.len());
        self.props.raw_key_bytes += internal_key.len() as u64;
        self.props.raw_value_bytes += value.len() as u64;
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
        // Keys as stored (the trailers apart, a little under the internal
        // keys) and the values as the column expects to store them.
        self.keys.len() as u64 + self.values.estimated_bytes()
    }

    fn finish(mut self: Box<Self>) -> Result<TableSummary> {
        if let Some(e) = &self.failed {
            return Err(e.duplicate());
        }
        let file_size = self.write_all()?;
        Ok(TableSummary {
            file_size,
            num_entries: self.props.num_entries,
            num_deletions: self.props.num_deletions,
            smallest: std::mem::take(&mut self.props.smallest),
            largest: std::mem::take(&mut self.props.largest),
            smallest_seqno: SeqNo(self.props.smallest_seqno),
            largest_seqno: SeqNo(self.props.largest_seqno),
        })
    }
}
