//! Writes a column-group file from entries in internal-key order.
//!
//! A string column gets a dictionary per file (seed 002) when few of its
//! values are distinct, and a value's code is its rank among the file's
//! distinct values, known only once every row has arrived. The writer
//! therefore keeps the file's rows until `finish`, column by column: keys,
//! presence and null bits, fixed-width values as they are, and string
//! values as references into `dict::column` (which interns them, keeps
//! codes carried from input dictionaries, and settles each column into a
//! dictionary or plain values). A file is at most the target file size, so
//! this holds about one file in memory. A group none of whose columns can
//! get a dictionary (fixed-width columns only, or dictionaries off) is
//! written as its rows arrive instead, a block at a time: a compaction
//! fanning out to many groups then holds one block per group, not one file.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use super::block::set_bit;
use super::block_builder::{BlockBuilder, Value};
use super::meta::{
    BlockMeta, CG_FOOTER, CG_FORMAT_VERSION, CG_FORMAT_VERSION_PLAIN, CgProperties, DictionaryMeta,
    encode_index,
};
use crate::dict::column::{SettledColumn, Slot, ValueColumn};
use crate::dict::{CodedValue, Codes};
use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueKind, parse_internal_key, trailer};
use crate::sst::bloom::BloomFilterBuilder;
use crate::sst::format::{BlockCompressor, BlockHandle, Compression, Footer, write_block};
use crate::sst::{TableBuilderOptions, TableSummary};
use crate::stats::Statistics;
use crate::table::piece::{Cell, PieceView};
use crate::table::schema::ColumnType;
use crate::table::shape::TableShape;
use crate::table_format::{GroupId, TableWriter, WriterContext};
use crate::vfs::WritableFile;

/// One column's rows of the file so far.
struct FileColumn {
    v: usize,
    ty: ColumnType,
    /// Bit `r`: row `r` carries the column (null or not).
    presence: Vec<u8>,
    /// Bit `r`: row `r` carries it as null.
    nulls: Vec<u8>,
    values: FileValues,
}

enum FileValues {
    /// Each row's value, little-endian, zero where absent or null.
    Fixed { width: usize, data: Vec<u8> },
    /// Strings.
    Var(ValueColumn),
}

/// A string column once its storage is decided.
enum Settled {
    Fixed,
    Var(SettledColumn),
}

impl FileColumn {
    fn new(v: usize, ty: ColumnType, max_distinct_ratio: f64) -> FileColumn {
        FileColumn {
            v,
            ty,
            presence: Vec::new(),
            nulls: Vec::new(),
            values: match ty.fixed_width() {
                Some(width) => FileValues::Fixed {
                    width,
                    data: Vec::new(),
                },
                None => FileValues::Var(ValueColumn::new(max_distinct_ratio)),
            },
        }
    }

    /// Adds row `r`'s value: `None` if it does not carry the column;
    /// `coded` if its input stored it as a code.
    fn push(&mut self, r: usize, cell: Option<Cell<'_>>, coded: Option<CodedValue<'_>>) {
        if cell.is_some() {
            set_bit(&mut self.presence, r);
        }
        if matches!(cell, Some(Cell::Null)) {
            set_bit(&mut self.nulls, r);
        }
        match &mut self.values {
            FileValues::Fixed { width, data } => match cell {
                Some(Cell::Int32(x)) => data.extend_from_slice(&x.to_le_bytes()),
                Some(Cell::Int64(x)) => data.extend_from_slice(&x.to_le_bytes()),
                Some(Cell::Float64(x)) => data.extend_from_slice(&x.to_le_bytes()),
                Some(Cell::Bool(b)) => data.push(u8::from(b)),
                _ => data.extend(std::iter::repeat_n(0, *width)),
            },
            FileValues::Var(col) => match (cell, coded) {
                (Some(Cell::Bytes(_)), Some(c)) => col.push_coded(c),
                (Some(Cell::Bytes(b)), None) => col.push_bytes(b),
                _ => col.push_none(),
            },
        }
    }

    fn estimated_bytes(&self) -> u64 {
        let bitmaps = 2 * self.presence.len() as u64;
        bitmaps
            + match &self.values {
                FileValues::Fixed { data, .. } => data.len() as u64,
                FileValues::Var(c) => c.estimated_bytes(),
            }
    }

    /// Row `r`'s value as a block takes it.
    fn value<'a>(&'a self, settled: &'a Settled, r: usize) -> Option<Value<'a>> {
        if !get_bit(&self.presence, r) {
            return None;
        }
        if get_bit(&self.nulls, r) {
            return Some(Value::Cell(Cell::Null));
        }
        Some(match (&self.values, settled) {
            (FileValues::Fixed { width, data }, _) => {
                let b = &data[r * width..(r + 1) * width];
                let mut w = [0u8; 8];
                w[..b.len()].copy_from_slice(b);
                Value::Cell(match self.ty {
                    ColumnType::Int32 => Cell::Int32(i32::from_le_bytes([w[0], w[1], w[2], w[3]])),
                    ColumnType::Float64 => Cell::Float64(f64::from_le_bytes(w)),
                    ColumnType::Bool => Cell::Bool(w[0] != 0),
                    _ => Cell::Int64(i64::from_le_bytes(w)),
                })
            }
            (_, Settled::Var(s)) => match s.slot(r) {
                Slot::Code(c) => Value::Code(c),
                Slot::Bytes(b) => Value::Cell(Cell::Bytes(b)),
                Slot::None => Value::Cell(Cell::Null),
            },
            (FileValues::Var(_), Settled::Fixed) => return None,
        })
    }
}

fn get_bit(bitmap: &[u8], r: usize) -> bool {
    bitmap.get(r / 8).is_some_and(|b| b & (1 << (r % 8)) != 0)
}

/// A file written as its rows arrive: the block being filled, the file so
/// far, its blocks' index entries and its filter.
struct Streaming {
    block: BlockBuilder,
    out: Output,
    blocks: Vec<BlockMeta>,
    filter: Option<BloomFilterBuilder>,
    last_user_key: Vec<u8>,
    /// The block's size estimate after the last entry added: the next
    /// entry's test for a full block and the file's size estimate between
    /// entries both read it (a block's estimate sums every column's).
    block_size: usize,
}

/// Writes one column-group file (see the module docs of `cgfile`).
pub struct CgWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    shape: Arc<TableShape>,
    options: TableBuilderOptions,
    stats: Arc<Statistics>,
    /// Internal keys, end to end; `key_ends[r]` is where row `r`'s ends.
    keys: Vec<u8>,
    key_ends: Vec<usize>,
    columns: Vec<FileColumn>,
    /// Set when no column can get a dictionary: rows go to blocks at once.
    /// Boxed: each entry takes it out and puts it back, and moving the
    /// state itself (a few hundred bytes, twice an entry) was an eighth of
    /// a column-group compaction's time.
    streaming: Option<Box<Streaming>>,
    props: CgProperties,
    failed: Option<Error>,
}

impl CgWriter {
    /// Starts a file of group `group` (columns `columns`) for `ctx`; a
    /// string column gets a dictionary when at most `max_distinct_ratio` of
    /// its values are distinct (0: never).
    pub fn new(
        file: Box<dyn WritableFile>,
        path: PathBuf,
        shape: Arc<TableShape>,
        group: GroupId,
        columns: &[usize],
        ctx: &WriterContext<'_>,
        max_distinct_ratio: f64,
    ) -> CgWriter {
        let props = CgProperties {
            owner_db_id: ctx.owner_db_id.to_vec(),
            file_number: ctx.file_number.get(),
            group: group.0,
            columns: columns.iter().map(|&v| (v, shape.pieces.ty(v))).collect(),
            ..Default::default()
        };
        let coded_possible = max_distinct_ratio > 0.0
            && columns
                .iter()
                .any(|&v| shape.pieces.ty(v).fixed_width().is_none());
        let streaming = (!coded_possible).then(|| {
            Box::new(Streaming {
                block: BlockBuilder::new(&shape.pieces, columns),
                out: Output {
                    offset: 0,
                    compressor: BlockCompressor::default(),
                    raw: Vec::new(),
                },
                blocks: Vec::new(),
                filter: (ctx.options.bloom_bits_per_key > 0)
                    .then(|| BloomFilterBuilder::new(ctx.options.bloom_bits_per_key)),
                last_user_key: Vec::new(),
                block_size: 0,
            })
        });
        CgWriter {
            columns: columns
                .iter()
                .map(|&v| FileColumn::new(v, shape.pieces.ty(v), max_distinct_ratio))
                .collect(),
            streaming,
            file,
            path,
            shape,
            options: ctx.options.clone(),
            stats: Arc::clone(ctx.stats),
            keys: Vec::new(),
            key_ends: Vec::new(),
            props,
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

    fn append(
        &mut self,
        out: &mut Output,
        compression: Compression,
        contents: &[u8],
    ) -> Result<BlockHandle> {
        let r = write_block(
            self.file.as_mut(),
            &mut out.offset,
            &mut out.compressor,
            compression,
            contents,
        );
        r.map(|(h, _)| h).map_err(|e| self.fail(e))
    }

    /// Encodes `block` and appends it as a data block.
    fn flush_block(
        &mut self,
        block: &mut BlockBuilder,
        out: &mut Output,
        blocks: &mut Vec<BlockMeta>,
    ) -> Result<()> {
        if block.rows() == 0 {
            return Ok(());
        }
        let rows = block.rows() as u64;
        let last_key = block.last_key().to_vec();
        let stats = block.stats();
        let mut raw = std::mem::take(&mut out.raw);
        block.finish(&mut raw);
        let handle = self.append(out, self.options.compression, &raw);
        out.raw = raw;
        blocks.push(BlockMeta {
            handle: handle?,
            rows,
            last_key,
            stats,
        });
        Ok(())
    }

    /// Settles each string column into a dictionary or plain values.
    fn settle(&mut self) -> Result<Vec<Settled>> {
        let started = Instant::now();
        let mut out = Vec::with_capacity(self.columns.len());
        let mut carried = 0;
        for c in &mut self.columns {
            let FileValues::Var(col) = &mut c.values else {
                out.push(Settled::Fixed);
                continue;
            };
            carried += col.carried_as_codes();
            let values = std::mem::replace(col, ValueColumn::new(0.0));
            let settled = values.settle().ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{}: over 4 GiB of distinct values in one column of one file",
                    self.path.display()
                ))
            })?;
            if c.presence.iter().any(|&b| b != 0) {
                Statistics::add(
                    if settled.dictionary().is_some() {
                        &self.stats.dictionary_files_written
                    } else {
                        &self.stats.plain_value_files_written
                    },
                    1,
                );
            }
            out.push(Settled::Var(settled));
        }
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        Statistics::add(&self.stats.dictionary_build_micros, micros);
        Statistics::add(&self.stats.values_carried_as_codes, carried as u64);
        Ok(out)
    }

    /// Writes the kept rows as blocks, then the dictionaries, the filter,
    /// the index, the properties and the footer; returns the file's size.
    fn write_all(&mut self) -> Result<u64> {
        if let Some(mut st) = self.streaming.take() {
            self.flush_block(&mut st.block, &mut st.out, &mut st.blocks)?;
            let Streaming {
                out,
                blocks,
                filter,
                ..
            } = *st;
            return self.write_meta(out, blocks, filter, &[]);
        }
        let settled = self.settle()?;
        let group: Vec<usize> = self.columns.iter().map(|c| c.v).collect();
        let mut block = BlockBuilder::new(&self.shape.pieces, &group);
        for (i, s) in settled.iter().enumerate() {
            if matches!(s, Settled::Var(c) if c.dictionary().is_some()) {
                block.set_coded(i);
            }
        }
        let mut out = Output {
            offset: 0,
            compressor: BlockCompressor::default(),
            raw: Vec::new(),
        };
        let mut blocks = Vec::new();
        let mut filter = (self.options.bloom_bits_per_key > 0)
            .then(|| BloomFilterBuilder::new(self.options.bloom_bits_per_key));
        let (keys, key_ends) = (
            std::mem::take(&mut self.keys),
            std::mem::take(&mut self.key_ends),
        );
        let columns = std::mem::take(&mut self.columns);
        let key = |r: usize| {
            let start = if r == 0 { 0 } else { key_ends[r - 1] };
            let ikey = &keys[start..key_ends[r]];
            (&ikey[..ikey.len() - 8], trailer(ikey))
        };
        for r in 0..key_ends.len() {
            let (ukey, t) = key(r);
            if r == 0 || key(r - 1).0 != ukey {
                // Blocks end between user keys, so one key's versions
                // share a block.
                if block.size_estimate() >= self.options.block_size {
                    self.flush_block(&mut block, &mut out, &mut blocks)?;
                }
                if let Some(f) = filter.as_mut() {
                    f.add_key(ukey);
                }
            }
            block.add_values(ukey, t, |i, _| columns[i].value(&settled[i], r));
        }
        self.flush_block(&mut block, &mut out, &mut blocks)?;
        let dictionaries: Vec<(usize, &crate::dict::Dictionary)> = columns
            .iter()
            .zip(&settled)
            .filter_map(|(c, s)| match s {
                Settled::Var(s) => s.dictionary().map(|d| (c.v, d)),
                Settled::Fixed => None,
            })
            .collect();
        self.write_meta(out, blocks, filter, &dictionaries)
    }

    /// Writes, after the data blocks, the dictionaries, the filter, the
    /// index, the properties and the footer; returns the file's size.
    fn write_meta(
        &mut self,
        mut out: Output,
        blocks: Vec<BlockMeta>,
        filter: Option<BloomFilterBuilder>,
        dictionaries: &[(usize, &crate::dict::Dictionary)],
    ) -> Result<u64> {
        self.props.data_size = out.offset;
        self.props.num_blocks = blocks.len() as u64;
        for &(column, dict) in dictionaries {
            let mut raw = Vec::new();
            dict.encode_to(&mut raw);
            // Compressed like data blocks, and only when that pays (the
            // framing keeps it plain otherwise).
            let handle = self.append(&mut out, self.options.compression, &raw)?;
            self.props.dictionaries.push(DictionaryMeta {
                column,
                handle,
                values: dict.len() as u64,
            });
        }
        let mut filter_handle = BlockHandle::default();
        if let Some(f) = filter
            && f.num_keys() > 0
        {
            filter_handle = self.append(&mut out, Compression::None, &f.finish())?;
        }
        let mut index = Vec::new();
        encode_index(&blocks, &mut index);
        let index = self.append(&mut out, Compression::None, &index)?;
        let mut props = Vec::new();
        self.props.encode_to(&mut props);
        let properties = self.append(&mut out, Compression::None, &props)?;
        let footer = Footer {
            index,
            filter: filter_handle,
            properties,
            version: if self.props.dictionaries.is_empty() {
                CG_FORMAT_VERSION_PLAIN
            } else {
                CG_FORMAT_VERSION
            },
        };
        let r = footer.write_and_sync(&CG_FOOTER, self.file.as_mut());
        Ok(out.offset + r.map_err(|e| self.fail(e))?)
    }

    fn add_entry(&mut self, internal_key: &[u8], value: &[u8], codes: Codes<'_>) -> Result<()> {
        self.check_failed()?;
        let parsed = parse_internal_key(internal_key).ok_or_else(|| {
            Error::corruption(&self.path, 0, "malformed internal key handed to the writer")
        })?;
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
        if let Some(mut st) = self.streaming.take() {
            let r = self.stream_entry(&mut st, internal_key, value);
            self.streaming = Some(st);
            r?;
        } else {
            self.buffer_entry(internal_key, value, codes)?;
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

    /// Parses a Put or Merge entry's value as a row piece.
    fn piece<'v>(&self, value: &'v [u8]) -> Result<PieceView<'v>> {
        PieceView::parse(&self.shape.pieces, value).map_err(|e| {
            Error::corruption(
                &self.path,
                0,
                format!("entry to write is not a row piece: {e}"),
            )
        })
    }

    /// Adds an entry to the streaming file's block, cutting a block first
    /// if it is full and the entry starts a new user key.
    fn stream_entry(
        &mut self,
        st: &mut Streaming,
        internal_key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        let ukey = &internal_key[..internal_key.len() - 8];
        let new_key = self.props.num_entries == 0 || ukey != st.last_user_key.as_slice();
        // Blocks end between user keys, so one key's versions share a block.
        if new_key && st.block_size >= self.options.block_size {
            self.flush_block(&mut st.block, &mut st.out, &mut st.blocks)?;
        }
        let t = trailer(internal_key);
        if t & 0xff == ValueKind::Delete as u64 {
            st.block.add(ukey, t, None);
            self.props.num_deletions += 1;
        } else {
            let view = self.piece(value)?;
            st.block.add(ukey, t, Some((&self.shape.pieces, &view)));
            if t & 0xff == ValueKind::Merge as u64 {
                self.props.num_merges += 1;
            }
        }
        if new_key {
            if let Some(f) = st.filter.as_mut() {
                f.add_key(ukey);
            }
            st.last_user_key.clear();
            st.last_user_key.extend_from_slice(ukey);
        }
        st.block_size = st.block.size_estimate();
        Ok(())
    }

    /// Keeps an entry's key and column values until the file is finished.
    fn buffer_entry(&mut self, internal_key: &[u8], value: &[u8], codes: Codes<'_>) -> Result<()> {
        let r = self.key_ends.len();
        let t = trailer(internal_key);
        match ValueKind::from_u8((t & 0xff) as u8).unwrap_or(ValueKind::Put) {
            ValueKind::Delete => {
                for c in &mut self.columns {
                    c.push(r, None, None);
                }
                self.props.num_deletions += 1;
            }
            kind => {
                let view = self.piece(value)?;
                for c in &mut self.columns {
                    let cell = view.get(&self.shape.pieces, c.v);
                    let coded = if codes.columns.is_empty() {
                        None
                    } else {
                        codes.column(c.v)
                    };
                    c.push(r, cell, coded);
                }
                if kind == ValueKind::Merge {
                    self.props.num_merges += 1;
                }
            }
        }
        self.keys.extend_from_slice(internal_key);
        self.key_ends.push(self.keys.len());
        Ok(())
    }
}

/// The file so far: its length, the compressor and a block buffer.
struct Output {
    offset: u64,
    compressor: BlockCompressor,
    raw: Vec<u8>,
}

impl TableWriter for CgWriter {
    fn add(&mut self, internal_key: &[u8], value: &[u8]) -> Result<()> {
        self.add_entry(internal_key, value, Codes::default())
    }

    fn add_coded(&mut self, internal_key: &[u8], value: &[u8], codes: Codes<'_>) -> Result<()> {
        self.add_entry(internal_key, value, codes)
    }

    fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    fn estimated_file_size(&self) -> u64 {
        if let Some(st) = &self.streaming {
            return st.out.offset + st.block_size as u64;
        }
        // Keys as stored (the trailers apart, a little under the internal
        // keys) and each column as it expects to be stored.
        self.keys.len() as u64
            + self
                .columns
                .iter()
                .map(FileColumn::estimated_bytes)
                .sum::<u64>()
    }

    fn finish(mut self: Box<Self>) -> Result<TableSummary> {
        self.check_failed()?;
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
