//! Writes a table file from entries added in increasing internal-key order.
//!
//! ```text
//! offset 0
//! +--------------------------+---------+
//! | data block 0             | trailer |   trailer = type u8 + CRC-32C u32 LE
//! +--------------------------+---------+
//! | ...                      |         |
//! +--------------------------+---------+
//! | data block n-1           | trailer |
//! +--------------------------+---------+  <- properties.data_size
//! | zstd dictionary (opt.)   | trailer |
//! +--------------------------+---------+
//! | filter block (optional)  | trailer |
//! +--------------------------+---------+
//! | index block              | trailer |
//! +--------------------------+---------+
//! | properties block         | trailer |
//! +--------------------------+---------+
//! | footer (64 bytes)                  |
//! +------------------------------------+  <- file size
//! ```
//!
//! A data block is cut once its size estimate reaches `block_size`. Its index
//! entry is added when the next key arrives, keyed by a short separator
//! between the block's last key and the next block's first key (the last
//! block gets a short successor of its last key). Only data blocks are
//! compressed; filter, index and properties blocks are stored uncompressed.
//!
//! With zstd and a dictionary size set, the first data blocks are held
//! back (raw) until the file's dictionary is trained on them
//! (`sst::compression_dict`); they are then written in order, compressed
//! with it, and their index entries added as their handles become known.

use std::cmp::Ordering;
use std::path::PathBuf;

use super::block::BlockBuilder;
use super::bloom::BloomFilterBuilder;
use super::compression_dict;
use super::format::{
    BLOCK_TRAILER_LEN, BlockCompressor, BlockHandle, Compression, FORMAT_VERSION,
    FORMAT_VERSION_DICT, Footer, MAX_BLOCK_SIZE, TABLE_FOOTER, write_block,
};
use super::properties::TableProperties;
use crate::error::{Error, Result};
use crate::key::{self, SeqNo, ValueKind, compare_internal, parse_internal_key};
use crate::vfs::WritableFile;

/// How a table is written.
#[derive(Clone, Debug)]
pub struct TableBuilderOptions {
    /// Target uncompressed size of a data block (default 4096).
    pub block_size: usize,
    /// Entries between restart points in data blocks (default 16).
    pub restart_interval: usize,
    /// Bloom filter bits per distinct user key; 0 writes no filter (default 10).
    pub bloom_bits_per_key: u32,
    /// Compression of data blocks (default none).
    pub compression: Compression,
    /// With zstd: the largest dictionary trained per file; 0 trains none
    /// (default 0; the database's default is 16 KiB).
    pub zstd_dictionary_bytes: usize,
}

impl Default for TableBuilderOptions {
    fn default() -> Self {
        TableBuilderOptions {
            block_size: 4096,
            restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: Compression::None,
            zstd_dictionary_bytes: 0,
        }
    }
}

/// What a finished table holds.
#[derive(Clone, Debug)]
pub struct TableSummary {
    /// Bytes of the finished file.
    pub file_size: u64,
    /// Entries written.
    pub num_entries: u64,
    /// Of those, tombstones.
    pub num_deletions: u64,
    /// Smallest internal key (empty for an empty table).
    pub smallest: Vec<u8>,
    /// Largest internal key (empty for an empty table).
    pub largest: Vec<u8>,
    /// The smallest sequence number of any entry.
    pub smallest_seqno: SeqNo,
    /// The largest sequence number of any entry.
    pub largest_seqno: SeqNo,
}

/// Writes one table file.
pub struct TableBuilder {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    opts: TableBuilderOptions,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    filter: Option<BloomFilterBuilder>,
    compressor: BlockCompressor,
    /// Bytes written so far.
    offset: u64,
    /// The last data block, waiting for the next key to pick its index
    /// separator.
    pending_entry: Option<Pending>,
    /// Data blocks held back for training the zstd dictionary (`None`
    /// when not training, or once trained).
    held: Option<Held>,
    /// The file's zstd dictionary, once trained.
    dictionary: Option<Vec<u8>>,
    last_key: Vec<u8>,
    props: TableProperties,
    /// Separator key being added to the index.
    scratch: Vec<u8>,
    /// Encoded handle being added to the index.
    handle_buf: Vec<u8>,
    failed: Option<Error>,
}

/// A data block whose index entry waits for the next key.
#[derive(Clone, Copy)]
enum Pending {
    Written(BlockHandle),
    /// The `i`-th held-back block.
    Held(usize),
}

/// Raw data blocks held back until the dictionary is trained, with the
/// index separators chosen for them so far.
#[derive(Default)]
struct Held {
    blocks: Vec<Vec<u8>>,
    separators: Vec<Option<Vec<u8>>>,
    bytes: usize,
}

/// Sets `dst` to a short key `k` with `start <= k < limit` (internal-key
/// order), given `start < limit`.
pub(crate) fn shortest_separator(dst: &mut Vec<u8>, start: &[u8], limit: &[u8]) {
    dst.clear();
    let (su, lu) = (key::user_key(start), key::user_key(limit));
    let n = su.iter().zip(lu).take_while(|(a, b)| a == b).count();
    if n < su.len().min(lu.len()) {
        let b = su[n];
        if b < 0xff && b + 1 < lu[n] && n + 1 + key::TRAILER_LEN < start.len() {
            dst.extend_from_slice(&su[..n]);
            dst.push(b + 1);
            dst.extend_from_slice(&u64::MAX.to_le_bytes());
            debug_assert_eq!(compare_internal(start, dst), Ordering::Less);
            debug_assert_eq!(compare_internal(dst, limit), Ordering::Less);
            return;
        }
    }
    dst.extend_from_slice(start);
}

/// Sets `dst` to a short key `k >= start` (internal-key order).
pub(crate) fn short_successor(dst: &mut Vec<u8>, start: &[u8]) {
    dst.clear();
    let su = key::user_key(start);
    if let Some(i) = su.iter().position(|&b| b != 0xff)
        && i + 1 + key::TRAILER_LEN < start.len()
    {
        dst.extend_from_slice(&su[..i]);
        dst.push(su[i] + 1);
        dst.extend_from_slice(&u64::MAX.to_le_bytes());
        debug_assert_eq!(compare_internal(start, dst), Ordering::Less);
        return;
    }
    dst.extend_from_slice(start);
}

impl TableBuilder {
    /// Records the database and file number that own this table in its
    /// properties (see [`TableProperties::owner_db_id`]).
    pub fn set_owner(&mut self, db_id: &[u8], file_number: u64) {
        self.props.owner_db_id = db_id.to_vec();
        self.props.owner_file_number = file_number;
    }

    /// Starts a table written to `file` (named `path` in errors).
    pub fn new(file: Box<dyn WritableFile>, path: PathBuf, mut opts: TableBuilderOptions) -> Self {
        opts.block_size = opts.block_size.clamp(1, MAX_BLOCK_SIZE as usize / 2);
        opts.restart_interval = opts.restart_interval.max(1);
        let filter =
            (opts.bloom_bits_per_key > 0).then(|| BloomFilterBuilder::new(opts.bloom_bits_per_key));
        let props = TableProperties {
            compression: opts.compression,
            bloom_bits_per_key: opts.bloom_bits_per_key,
            ..TableProperties::default()
        };
        opts.zstd_dictionary_bytes = compression_dict::dictionary_size(opts.zstd_dictionary_bytes);
        let held = (opts.compression == Compression::Zstd && opts.zstd_dictionary_bytes > 0)
            .then(Held::default);
        TableBuilder {
            offset: file.len(),
            file,
            path,
            data_block: BlockBuilder::new(opts.restart_interval),
            index_block: BlockBuilder::new(1),
            filter,
            compressor: BlockCompressor::default(),
            pending_entry: None,
            held,
            dictionary: None,
            last_key: Vec::new(),
            props,
            scratch: Vec::new(),
            handle_buf: Vec::new(),
            failed: None,
            opts,
        }
    }

    fn check_failed(&self) -> Result<()> {
        match &self.failed {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }

    fn fail(&mut self, e: Error) -> Error {
        if self.failed.is_none() {
            self.failed = Some(e.duplicate());
        }
        e
    }

    /// Adds an entry. Keys must be strictly increasing in
    /// [`compare_internal`] order and be valid internal keys.
    pub fn add(&mut self, internal_key: &[u8], value: &[u8]) -> Result<()> {
        self.check_failed()?;
        let Some(parsed) = parse_internal_key(internal_key) else {
            return Err(Error::InvalidArgument(format!(
                "{}: not an internal key ({} bytes)",
                self.path.display(),
                internal_key.len()
            )));
        };
        debug_assert!(
            self.props.num_entries == 0
                || compare_internal(&self.last_key, internal_key) == Ordering::Less,
            "table keys must be strictly increasing"
        );
        // Header varints (3 * 5) plus one restart slot.
        let entry_size = internal_key.len() + value.len() + 19;
        if entry_size as u64 + 8 > MAX_BLOCK_SIZE {
            return Err(Error::InvalidArgument(format!(
                "entry of {} bytes is too large for a table block (limit {MAX_BLOCK_SIZE})",
                internal_key.len() + value.len()
            )));
        }
        if !self.data_block.is_empty()
            && (self.data_block.current_size_estimate() + entry_size) as u64 > MAX_BLOCK_SIZE
        {
            self.flush_data_block()?;
        }
        if let Some(p) = self.pending_entry.take() {
            shortest_separator(&mut self.scratch, &self.last_key, internal_key);
            self.add_pending_entry(p);
        }
        if let Some(f) = &mut self.filter
            && (self.props.num_entries == 0 || key::user_key(&self.last_key) != parsed.user_key)
        {
            f.add_key(parsed.user_key);
        }
        self.data_block.add(internal_key, value);
        self.last_key.clear();
        self.last_key.extend_from_slice(internal_key);

        let p = &mut self.props;
        if p.num_entries == 0 {
            p.smallest = internal_key.to_vec();
            p.smallest_seqno = parsed.seqno.get();
            p.largest_seqno = parsed.seqno.get();
        }
        p.num_entries += 1;
        match parsed.kind {
            ValueKind::Delete => p.num_deletions += 1,
            ValueKind::Merge => p.num_merges += 1,
            ValueKind::Put => {}
        }
        p.raw_key_bytes += internal_key.len() as u64;
        p.raw_value_bytes += value.len() as u64;
        p.smallest_seqno = p.smallest_seqno.min(parsed.seqno.get());
        p.largest_seqno = p.largest_seqno.max(parsed.seqno.get());

        if self.data_block.current_size_estimate() >= self.opts.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Adds the index entry for `h` keyed by `self.scratch`.
    fn add_index_entry(&mut self, h: BlockHandle) {
        self.handle_buf.clear();
        h.encode_to(&mut self.handle_buf);
        self.index_block.add(&self.scratch, &self.handle_buf);
    }

    /// Adds the index entry, keyed by `self.scratch`, of a block whose
    /// entry was waiting: now, or when a held-back block is written.
    fn add_pending_entry(&mut self, p: Pending) {
        match p {
            Pending::Written(h) => self.add_index_entry(h),
            Pending::Held(i) => match &mut self.held {
                Some(held) => held.separators[i] = Some(self.scratch.clone()),
                // A block is `Held` only while `held` is, and releasing
                // turns the last one into `Written`.
                None => debug_assert!(false, "a held-back block outlived its release"),
            },
        }
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        let raw = self.data_block.finish();
        if let Some(held) = &mut self.held {
            held.blocks.push(raw.to_vec());
            held.separators.push(None);
            held.bytes += raw.len();
            self.pending_entry = Some(Pending::Held(held.blocks.len() - 1));
            self.data_block.reset();
            if compression_dict::release_now(
                held.blocks.len(),
                held.bytes,
                self.opts.zstd_dictionary_bytes,
            ) {
                self.release_held()?;
            }
            return Ok(());
        }
        let handle = self.write_data_block(None)?;
        self.data_block.reset();
        self.pending_entry = Some(Pending::Written(handle));
        Ok(())
    }

    /// Writes a data block: `raw`, or the data block being built.
    fn write_data_block(&mut self, raw: Option<&[u8]>) -> Result<BlockHandle> {
        let raw = raw.unwrap_or_else(|| self.data_block.finish());
        let r = write_block(
            self.file.as_mut(),
            &mut self.offset,
            &mut self.compressor,
            self.opts.compression,
            raw,
        );
        let (handle, compressed) = r.map_err(|e| self.fail(e))?;
        self.props.num_data_blocks += 1;
        if compressed {
            self.props.num_compressed_blocks += 1;
        }
        Ok(handle)
    }

    /// Trains the dictionary on the held-back blocks (when they are enough
    /// to learn from) and writes them, adding the index entries whose
    /// separators are known.
    fn release_held(&mut self) -> Result<()> {
        let Some(held) = self.held.take() else {
            return Ok(());
        };
        if let Some(dict) = compression_dict::train(&held.blocks, self.opts.zstd_dictionary_bytes)
            && self.compressor.set_zstd_dictionary(&dict)
        {
            self.dictionary = Some(dict);
        }
        let last = held.blocks.len().checked_sub(1);
        for (i, (block, sep)) in held.blocks.iter().zip(held.separators).enumerate() {
            let handle = self.write_data_block(Some(block))?;
            match sep {
                Some(sep) => {
                    self.scratch = sep;
                    self.add_index_entry(handle);
                }
                // Only the last held block can still wait for its
                // separator (the next key, or the file's end, picks it).
                None if Some(i) == last => self.pending_entry = Some(Pending::Written(handle)),
                // Never: each held block's separator is picked when the
                // next block starts. Failing the file beats an index that
                // lacks a block.
                None => {
                    return Err(self.fail(Error::InvalidArgument(format!(
                        "{}: internal error: held-back block {i} of {} has no index separator",
                        self.path.display(),
                        held.blocks.len()
                    ))));
                }
            }
        }
        Ok(())
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Bytes written so far plus the pending data block and the blocks
    /// held back for training (at their raw size).
    pub fn estimated_file_size(&self) -> u64 {
        let pending = if self.data_block.is_empty() {
            0
        } else {
            self.data_block.current_size_estimate() + BLOCK_TRAILER_LEN
        };
        let held = self
            .held
            .as_ref()
            .map_or(0, |h| h.bytes + h.blocks.len() * BLOCK_TRAILER_LEN);
        self.offset + (pending + held) as u64
    }

    fn write_meta_block(&mut self, raw: &[u8]) -> Result<BlockHandle> {
        let r = write_block(
            self.file.as_mut(),
            &mut self.offset,
            &mut self.compressor,
            Compression::None,
            raw,
        );
        r.map(|(h, _)| h).map_err(|e| self.fail(e))
    }

    /// Writes the last data block, the filter, index and properties blocks
    /// and the footer, then flushes and syncs the file.
    pub fn finish(mut self) -> Result<TableSummary> {
        self.check_failed()?;
        self.flush_data_block()?;
        self.release_held()?;
        if let Some(p) = self.pending_entry.take() {
            short_successor(&mut self.scratch, &self.last_key);
            self.add_pending_entry(p);
        }
        self.props.data_size = self.offset;
        self.props.largest = self.last_key.clone();

        if let Some(dict) = self.dictionary.take() {
            let h = self.write_meta_block(&dict)?;
            self.props.compression_dict = Some(h);
        }

        let mut filter_handle = BlockHandle::default();
        if let Some(f) = self.filter.take()
            && f.num_keys() > 0
        {
            let block = f.finish();
            filter_handle = self.write_meta_block(&block)?;
            self.props.filter_size = filter_handle.size + BLOCK_TRAILER_LEN as u64;
        }

        let r = write_block(
            self.file.as_mut(),
            &mut self.offset,
            &mut self.compressor,
            Compression::None,
            self.index_block.finish(),
        );
        let (index_handle, _) = r.map_err(|e| self.fail(e))?;
        self.props.index_size = index_handle.size + BLOCK_TRAILER_LEN as u64;

        let mut props = Vec::new();
        self.props.encode_to(&mut props);
        let props_handle = self.write_meta_block(&props)?;

        let footer = Footer {
            index: index_handle,
            filter: filter_handle,
            properties: props_handle,
            // A reader without dictionaries must not take the file's
            // blocks for plain zstd ones.
            version: if self.props.compression_dict.is_some() {
                FORMAT_VERSION_DICT
            } else {
                FORMAT_VERSION
            },
        };
        let r = footer.write_and_sync(&TABLE_FOOTER, self.file.as_mut());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::make_internal_key;
    use crate::vfs::{StdVfs, Vfs};

    fn ik(u: &[u8], s: u64) -> Vec<u8> {
        make_internal_key(u, s, ValueKind::Put)
    }

    #[test]
    fn separators_are_between_and_short() {
        let cases: &[(&[u8], u64, &[u8], u64)] = &[
            (b"abcdefgh", 5, b"abzzz", 9),
            (b"abc", 5, b"abc", 3),
            (b"abc", 5, b"abcd", 3),
            (b"a\xff\xff", 1, b"b", 1),
            (b"", 1, b"a", 1),
            (b"helloworld", 1, b"hellp", 1),
            (b"x1", 1, b"x2", 1),
        ];
        let mut dst = Vec::new();
        for &(a, sa, b, sb) in cases {
            let (a, b) = (ik(a, sa), ik(b, sb));
            assert_eq!(compare_internal(&a, &b), Ordering::Less);
            shortest_separator(&mut dst, &a, &b);
            assert_ne!(
                compare_internal(&dst, &a),
                Ordering::Less,
                "{dst:?} < {a:?}"
            );
            assert_eq!(
                compare_internal(&dst, &b),
                Ordering::Less,
                "{dst:?} >= {b:?}"
            );
            assert!(dst.len() <= a.len());
        }
        shortest_separator(&mut dst, &ik(b"abcdefgh", 5), &ik(b"abzzz", 9));
        assert_eq!(key::user_key(&dst), b"abd");
        for a in [&b"abc"[..], b"\xff\xffa", b"\xff\xff", b""] {
            let a = ik(a, 3);
            short_successor(&mut dst, &a);
            assert_ne!(compare_internal(&dst, &a), Ordering::Less);
            assert!(dst.len() <= a.len());
        }
        short_successor(&mut dst, &ik(b"\xff\xffab", 3));
        assert_eq!(key::user_key(&dst), b"\xff\xffb");
    }

    #[test]
    fn builder_tracks_summary_and_sizes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("1.sst");
        let file = StdVfs.create(&path).expect("create");
        let opts = TableBuilderOptions {
            block_size: 256,
            ..TableBuilderOptions::default()
        };
        let mut b = TableBuilder::new(file, path.clone(), opts);
        assert!(b.add(b"short", b"v").is_err(), "non-internal key accepted");
        let mut last_estimate = 0;
        for i in 0..500u64 {
            let kind = if i % 5 == 0 {
                ValueKind::Delete
            } else {
                ValueKind::Put
            };
            let k = make_internal_key(format!("key{i:05}").as_bytes(), 1000 - i, kind);
            b.add(&k, &[b'x'; 30]).expect("add");
            let e = b.estimated_file_size();
            assert!(e >= last_estimate);
            last_estimate = e;
        }
        assert_eq!(b.num_entries(), 500);
        let s = b.finish().expect("finish");
        assert_eq!(s.num_entries, 500);
        assert_eq!(s.num_deletions, 100);
        assert_eq!(
            s.smallest,
            make_internal_key(b"key00000", 1000, ValueKind::Delete)
        );
        assert_eq!(
            s.largest,
            make_internal_key(b"key00499", 501, ValueKind::Put)
        );
        assert_eq!((s.smallest_seqno.get(), s.largest_seqno.get()), (501, 1000));
        assert_eq!(s.file_size, StdVfs.file_size(&path).expect("size"));
        assert!(s.file_size >= last_estimate);
    }
}
