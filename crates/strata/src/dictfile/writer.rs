//! Writes a dictionary-encoded file.
//!
//! A value's code is its rank among the file's distinct values, which is
//! known only once every entry has arrived. The writer therefore keeps the
//! file's entries (keys and a reference per value) until `finish`, and
//! writes the blocks then. A file is at most the target file size, so this
//! holds at most about one file's keys in memory. Values arrive two ways:
//! - as bytes (a flush, or a compaction of plain files): each distinct
//!   value is interned once, and `finish` sorts the distinct values, not
//!   the entries;
//! - as codes into an input file's dictionary (a compaction of
//!   dictionary-encoded files, `TableWriter::add_coded`): the writer marks
//!   the code referenced and keeps it, touching no value bytes; `finish`
//!   merges the input dictionaries, restricted to the referenced values,
//!   with the interned values (`dict::merge`) and remaps every code through
//!   a table.
//!
//! When the share of distinct values passes the keyspace's threshold the
//! file stores its values plainly instead.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use super::block::DictBlockBuilder;
use super::meta::{BlockMeta, DICT_FOOTER, DICT_FORMAT_VERSION, Index};
use crate::dict::merge::{MergeInput, merge};
use crate::dict::{CodedValue, Dictionary, DictionaryBuilder};
use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueKind, compare_internal, parse_internal_key, trailer};
use crate::sst::bloom::BloomFilterBuilder;
use crate::sst::format::{BlockCompressor, BlockHandle, Compression, Footer, write_block};
use crate::sst::{TableBuilderOptions, TableProperties, TableSummary};
use crate::stats::Statistics;
use crate::table_format::{TableWriter, WriterContext};
use crate::vfs::WritableFile;

/// An entry's value: (source, code). Source 0 is the interned values
/// (the code is a provisional id), source `s > 0` the dictionary of input
/// `s - 1`; a tombstone has source `NO_VALUE`.
type ValueRef = (u32, u32);

/// The source of a tombstone's (absent) value.
const NO_VALUE: u32 = u32::MAX;

/// The input dictionaries whose codes a file's entries reference.
#[derive(Default)]
struct CodedInputs {
    dictionaries: Vec<Arc<Dictionary>>,
    /// Per dictionary, its referenced codes as a bitmap.
    referenced: Vec<Vec<u64>>,
    /// Distinct values referenced in all (a value two inputs hold counts
    /// twice), and per dictionary with their bytes.
    distinct: u64,
    per_input: Vec<(u64, u64)>,
}

impl CodedInputs {
    /// The source number of `dictionary` (adding it if new) after marking
    /// `code` referenced.
    fn reference(&mut self, dictionary: &Arc<Dictionary>, code: u32) -> u32 {
        // An output's entries come from a few inputs, one at a time: the
        // last dictionary is almost always the one.
        let i = match self
            .dictionaries
            .iter()
            .rposition(|d| Arc::ptr_eq(d, dictionary))
        {
            Some(i) => i,
            None => {
                self.dictionaries.push(Arc::clone(dictionary));
                self.referenced.push(vec![0; dictionary.len().div_ceil(64)]);
                self.per_input.push((0, 0));
                self.dictionaries.len() - 1
            }
        };
        let word = &mut self.referenced[i][code as usize / 64];
        let bit = 1u64 << (code % 64);
        if *word & bit == 0 {
            *word |= bit;
            let len = dictionary.value(code).len() as u64;
            self.distinct += 1;
            self.per_input[i].0 += 1;
            self.per_input[i].1 += len;
        }
        i as u32 + 1
    }

    /// What the merged dictionary will likely hold, in distinct values and
    /// bytes: the inputs of a compaction mostly share their values (each
    /// file's dictionary holds the values its key range uses), so the
    /// largest input's referenced values, not their sum, which would count
    /// a value once per input and cut outputs into many small files, each
    /// with its own copy of the dictionary.
    fn merged_estimate(&self) -> (u64, u64) {
        let distinct = self.per_input.iter().map(|p| p.0).max().unwrap_or(0);
        let bytes = self.per_input.iter().map(|p| p.1).max().unwrap_or(0);
        (distinct, bytes)
    }
}

/// Where the writer finds each entry's value once its sources are settled.
enum Values {
    /// The merged dictionary and, per source, each code's code in it.
    Merged {
        dict: Dictionary,
        remaps: Vec<Vec<u32>>,
    },
    /// Too many distinct values for a dictionary: the interned values by
    /// provisional id, and the input dictionaries (plain storage only).
    Direct {
        interned: Vec<Box<[u8]>>,
        inputs: Vec<Arc<Dictionary>>,
    },
}

impl Values {
    /// The value of `(source, code)`.
    fn value(&self, source: u32, code: u32) -> &[u8] {
        match self {
            Values::Merged { dict, remaps } => dict.value(remaps[source as usize][code as usize]),
            Values::Direct { interned, inputs } => match source {
                0 => &interned[code as usize],
                s => inputs[s as usize - 1].value(code),
            },
        }
    }
}

/// Whether a file of `values` values, `distinct` of them distinct, gets a
/// dictionary under `max_distinct_ratio`.
pub fn use_dictionary(values: u64, distinct: u64, max_distinct_ratio: f64) -> bool {
    values > 0
        && distinct as usize <= crate::dict::dictionary::MAX_VALUES
        && (distinct as f64) <= max_distinct_ratio * values as f64
}

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
    max_distinct_ratio: f64,
    /// Internal keys, end to end; `key_ends[i]` is where entry `i`'s ends.
    keys: Vec<u8>,
    key_ends: Vec<usize>,
    refs: Vec<ValueRef>,
    values: DictionaryBuilder,
    coded: CodedInputs,
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
            max_distinct_ratio,
            keys: Vec::new(),
            key_ends: Vec::new(),
            refs: Vec::new(),
            values: DictionaryBuilder::new(),
            coded: CodedInputs::default(),
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

    /// Where each value comes from: the merged dictionary (the interned
    /// values, sorted, merged with the referenced values of the input
    /// dictionaries) when the values could have one, else the sources as
    /// they are.
    fn settle_values(&mut self) -> Result<Values> {
        let builder = std::mem::take(&mut self.values);
        let coded = std::mem::take(&mut self.coded);
        // An upper bound: a value in two sources counts twice.
        let bound = builder.distinct() as u64 + coded.distinct;
        if bound > crate::dict::dictionary::MAX_VALUES as u64 {
            return Ok(Values::Direct {
                interned: builder.into_values(),
                inputs: coded.dictionaries,
            });
        }
        let too_large = || {
            Error::InvalidArgument(format!(
                "{}: over 4 GiB of distinct values in one file",
                self.path.display()
            ))
        };
        let (interned, interned_remap) = builder.finish().ok_or_else(too_large)?;
        let mut inputs = vec![MergeInput {
            dictionary: &interned,
            referenced: None,
        }];
        for (d, r) in coded.dictionaries.iter().zip(&coded.referenced) {
            inputs.push(MergeInput {
                dictionary: d,
                referenced: Some(r),
            });
        }
        let inputs = if interned.is_empty() {
            &inputs[1..]
        } else {
            &inputs[..]
        };
        let (dict, mut remaps) = if inputs.is_empty() {
            (Dictionary::default(), Vec::new())
        } else {
            merge(inputs).ok_or_else(too_large)?
        };
        if interned.is_empty() {
            remaps.insert(0, Vec::new());
        }
        // Source 0's codes are provisional ids: compose with the sort.
        remaps[0] = interned_remap
            .iter()
            .map(|&rank| remaps[0][rank as usize])
            .collect();
        Ok(Values::Merged { dict, remaps })
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
        let sources = self.settle_values()?;
        let coded = match &sources {
            Values::Merged { dict, .. } => {
                use_dictionary(values, dict.len() as u64, self.max_distinct_ratio)
            }
            Values::Direct { .. } => false,
        };
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
        let carried = self
            .refs
            .iter()
            .filter(|&&(s, _)| s != 0 && s != NO_VALUE)
            .count();
        Statistics::add(&self.stats.values_carried_as_codes, carried as u64);
        let (keys, key_ends, refs) = (
            std::mem::take(&mut self.keys),
            std::mem::take(&mut self.key_ends),
            std::mem::take(&mut self.refs),
        );
        let key = |i: usize| {
            let start = if i == 0 { 0 } else { key_ends[i - 1] };
            let ikey = &keys[start..key_ends[i]];
            (&ikey[..ikey.len() - 8], trailer(ikey))
        };
        for (i, &(source, code)) in refs.iter().enumerate() {
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
            match (&sources, source, coded) {
                (_, NO_VALUE, true) => block.add_code(ukey, t, 0),
                (_, NO_VALUE, false) => block.add_plain(ukey, t, &[]),
                (Values::Merged { remaps, .. }, s, true) => {
                    block.add_code(ukey, t, remaps[s as usize][code as usize])
                }
                (_, s, _) => block.add_plain(ukey, t, sources.value(s, code)),
            }
        }
        if block.rows() > 0 {
            self.write_data_block(&mut block, &mut raw, &mut out, &mut index)?;
        }
        let (mut offset, mut compressor) = (out.offset, out.compressor);
        self.props.data_size = offset;
        self.props.num_data_blocks = index.blocks.len() as u64;
        if let (true, Values::Merged { dict, .. }) = (coded, &sources) {
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
        self.add_coded(internal_key, value, None)
    }

    fn add_coded(
        &mut self,
        internal_key: &[u8],
        value: &[u8],
        coded: Option<CodedValue<'_>>,
    ) -> Result<()> {
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
        let r = match parsed.kind {
            ValueKind::Delete => {
                self.props.num_deletions += 1;
                (NO_VALUE, 0)
            }
            kind => {
                if kind == ValueKind::Merge {
                    self.props.num_merges += 1;
                }
                match coded {
                    Some(c) => (self.coded.reference(c.dictionary, c.code), c.code),
                    None => (0, self.values.intern(value)),
                }
            }
        };
        self.keys.extend_from_slice(internal_key);
        self.key_ends.push(self.keys.len());
        self.refs.push(r);
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
        // keys), about two bytes of code per entry, and the distinct
        // values; or every value when the file would be plain.
        let values = self.props.num_entries - self.props.num_deletions;
        let (coded_distinct, coded_bytes) = self.coded.merged_estimate();
        let distinct = self.values.distinct() as u64 + coded_distinct;
        let value_bytes = if use_dictionary(values, distinct, self.max_distinct_ratio) {
            self.values.value_bytes() as u64 + coded_bytes + 2 * self.props.num_entries
        } else {
            self.props.raw_value_bytes
        };
        self.keys.len() as u64 + value_bytes
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
