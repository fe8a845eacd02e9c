//! The checks behind the fuzz targets of `fuzz/`, written once: each
//! `fuzz/fuzz_targets/<name>.rs` calls the function of the same name, and
//! `tests/fuzz_corpus.rs` replays the kept corpora through them.
//!
//! Every function must not panic, hang or allocate without bound on any
//! input; where the engine promises more (a table or dictionary-encoded
//! file that passes `verify` iterates the same both ways and finds its own
//! keys; a predicate's code set selects exactly the codes whose values
//! match; the two log-reading policies agree up to the first damage; a
//! decoded manifest edit or dictionary re-encodes to itself; shell tokens
//! round-trip), the function asserts it.

use std::io;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::FileNumber;
use strata::cache::BlockCache;
use strata::dict::select::{Kernel, bitmap_words, select, select_with};
use strata::dict::{Dictionary, ValuePredicate};
use strata::dictfile::DictReader;
use strata::iter::InternalIterator;
use strata::key;
use strata::keyblock::RowSource;
use strata::log::{LogReader, TailPolicy};
use strata::manifest::VersionEdit;
use strata::sst::format::{BLOCK_TRAILER_LEN, BlockHandle, FOOTER_LEN, Footer, block_trailer};
use strata::sst::{Block, TableReader};
use strata::stats::Statistics;
use strata::table::ColumnType;
use strata::table::cgfile::CgReader;
use strata::table::cgfile::meta::{CG_FORMAT_VERSION, CG_MAGIC, CgProperties, decode_index};
use strata::table::piece::PieceSchema;
use strata::table::shape::TableShape;
use strata::table_format::{OpenContext, TableSource};
use strata::vfs::RandomAccessFile;
use strata_cli::shell::{Command, parse_line};
use strata_cli::{decode_token, encode_bytes};

/// The targets, by name.
pub const TARGETS: &[&str] = &[
    "sst_table",
    "sst_table_repaired",
    "sst_block",
    "wal_reader",
    "manifest",
    "shell_parser",
    "dict_file",
    "dict_file_repaired",
    "dictionary",
    "cg_file",
    "cg_file_repaired",
];

/// The check of target `name`.
pub fn by_name(name: &str) -> Option<fn(&[u8])> {
    Some(match name {
        "sst_table" => sst_table,
        "sst_table_repaired" => sst_table_repaired,
        "sst_block" => sst_block,
        "wal_reader" => wal_reader,
        "manifest" => manifest,
        "shell_parser" => shell_parser,
        "dict_file" => dict_file,
        "dict_file_repaired" => dict_file_repaired,
        "dictionary" => dictionary,
        "cg_file" => cg_file,
        "cg_file_repaired" => cg_file_repaired,
        _ => return None,
    })
}

/// Entries an iteration collects at most (a bound against hangs).
const MAX_ENTRIES: usize = 1 << 16;

/// A file held in memory.
struct BytesFile(Vec<u8>);

impl RandomAccessFile for BytesFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> strata::Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|s| self.0.get(s..s.checked_add(buf.len())?));
        match src {
            Some(s) => {
                buf.copy_from_slice(s);
                Ok(())
            }
            None => Err(strata::Error::io(
                format!("read {} bytes at {offset}", buf.len()),
                io::Error::new(io::ErrorKind::UnexpectedEof, "past the end"),
            )),
        }
    }

    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Every entry of `it` (at most [`MAX_ENTRIES`]) in key order, walked
/// forward or backward, and whether the walk ended cleanly. Where the
/// iterator offers a value's code, the code's value is the value.
fn collect(it: &mut dyn InternalIterator, backward: bool) -> (Entries, bool) {
    if backward {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    let mut out = Vec::new();
    while it.valid() && out.len() < MAX_ENTRIES {
        if let Some(c) = it.value_code() {
            assert_eq!(
                c.dictionary.try_value(c.code),
                Some(it.value()),
                "an entry's code does not stand for its value"
            );
        }
        out.push((it.key().to_vec(), it.value().to_vec()));
        if backward {
            it.prev();
        } else {
            it.next();
        }
    }
    let clean = !it.valid() && it.status().is_ok();
    if backward {
        out.reverse();
    }
    (out, clean)
}

/// A point lookup as `TableSource::get` does it.
type GetFn<'a> =
    dyn Fn(&[u8], &[u8], &mut dyn FnMut(&[u8], &[u8]) -> bool) -> strata::Result<bool> + 'a;

/// The reads every table-like target makes of an open file: both
/// iterations, seeks and lookups at targets taken from `data`; and, if the
/// file passed `verify` (`verified`), the engine's promises: both
/// iterations end cleanly and agree, and `get` and `seek` find sampled
/// entries. Returns the entries of a verified file (`None` otherwise, or
/// past [`MAX_ENTRIES`]).
fn check_reads(
    data: &[u8],
    verified: bool,
    new_iter: &dyn Fn() -> Box<dyn InternalIterator>,
    get: &GetFn<'_>,
) -> Option<Entries> {
    let (fwd, fwd_clean) = collect(&mut *new_iter(), false);
    let (bwd, bwd_clean) = collect(&mut *new_iter(), true);
    // Seeks to arbitrary targets must not panic.
    for target in [
        &data[..data.len().min(9)],
        &data[data.len().saturating_sub(20)..],
        b"",
    ] {
        new_iter().seek(target);
        new_iter().seek_for_prev(target);
        let _ = get(key::user_key(target), target, &mut |_, _| true);
    }
    if !verified || fwd.len() >= MAX_ENTRIES {
        return None;
    }
    assert!(
        fwd_clean && bwd_clean,
        "a table that passes verify() fails to iterate"
    );
    assert_eq!(
        fwd, bwd,
        "forward and backward iteration of a verified table differ"
    );
    let step = (fwd.len() / 16).max(1);
    for (k, v) in fwd.iter().step_by(step) {
        let mut seen = false;
        let r = get(key::user_key(k), k, &mut |ik, iv| {
            if ik == k.as_slice() {
                assert_eq!(
                    iv,
                    v.as_slice(),
                    "get returned another value than iteration"
                );
                seen = true;
                false
            } else {
                true
            }
        });
        assert!(r.is_ok(), "get on a verified table failed: {r:?}");
        assert!(seen, "get did not find an entry of a verified table");
        let mut it = new_iter();
        it.seek(k);
        assert!(
            it.valid() && it.key() == k.as_slice(),
            "seek missed an entry of a verified table"
        );
    }
    Some(fwd)
}

/// Bytes as a table file: open, verify, iterate both ways, look keys up.
pub fn sst_table(data: &[u8]) {
    let file = Arc::new(BytesFile(data.to_vec()));
    let cache = Some(Arc::new(BlockCache::new(1 << 20)));
    let stats = Arc::new(Statistics::default());
    let Ok(reader) = TableReader::open(file, PathBuf::from("fuzz.sst"), 1, cache, stats) else {
        return;
    };
    let reader = Arc::new(reader);
    let verified = reader.verify().is_ok();
    check_reads(
        data,
        verified,
        &|| Box::new(TableReader::iter(&reader)),
        &|u, s, f| reader.get(u, s, f),
    );
}

/// The footer of a table-like image (the core's layout: three handles,
/// CRC, version, magic), its handles read as they are, with `version`;
/// and where it starts. `None` if the image is shorter than a footer.
fn footer_of(data: &[u8], version: u32) -> Option<(usize, Footer)> {
    let fo = data.len().checked_sub(FOOTER_LEN)?;
    let field = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&data[fo + i * 8..fo + i * 8 + 8]);
        u64::from_le_bytes(b)
    };
    let h = |i: usize| BlockHandle {
        offset: field(i),
        size: field(i + 1),
    };
    Some((
        fo,
        Footer {
            index: h(0),
            filter: h(2),
            properties: h(4),
            version,
        },
    ))
}

/// Recomputes the trailer CRC of block `b` of `data` for the compression
/// byte found there, if the block and its trailer end by `limit`; returns
/// the block's stored bytes.
fn fix_block(data: &mut [u8], limit: usize, b: BlockHandle) -> Option<Vec<u8>> {
    let start = usize::try_from(b.offset).ok()?;
    let end = start.checked_add(usize::try_from(b.size).ok()?)?;
    if end.checked_add(BLOCK_TRAILER_LEN)? > limit {
        return None;
    }
    let t = block_trailer(&data[start..end], data[end]);
    data[end..end + BLOCK_TRAILER_LEN].copy_from_slice(&t);
    Some(data[start..end].to_vec())
}

/// [`fix_block`] for the footer's filter handle, unless its size is 0
/// ("no filter": the handle is then (0, 0), and a trailer written there
/// would damage the first data block).
fn fix_filter(data: &mut [u8], limit: usize, b: BlockHandle) {
    if b.size > 0 {
        fix_block(data, limit, b);
    }
}

/// Rewrites the checksums of a table image so that mutated bytes get past
/// them: the footer gets the magic, its version (1, or 2 with a dictionary) and its CRC; every block the
/// footer and the index point at (when in bounds) gets its trailer CRC
/// recomputed for the compression byte found there.
pub fn repair_table_checksums(data: &mut [u8]) {
    // The file's own version, if it is one a reader takes (2: it has a
    // zstd dictionary), so that the dictionary's checks are reached too.
    let version = data
        .len()
        .checked_sub(12)
        .and_then(|at| data.get(at..at + 4))
        .map_or(1, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .clamp(1, 2);
    let Some((fo, footer)) = footer_of(data, version) else {
        return;
    };
    data[fo..].copy_from_slice(&footer.encode());
    fix_filter(data, fo, footer.filter);
    if let Some(props) = fix_block(data, fo, footer.properties)
        && let Ok(p) = strata::sst::TableProperties::decode(&props, Path::new("fuzz.sst"), 0)
        && let Some(h) = p.compression_dict
    {
        fix_block(data, fo, h);
    }
    let Some(index) = fix_block(data, fo, footer.index) else {
        return;
    };
    // Uncompressed index blocks only (the writer never compresses them).
    let Ok(block) = Block::new(index) else {
        return;
    };
    let block = Arc::new(block);
    let mut it = block.iter();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() && n < MAX_ENTRIES {
        if let Some(b) = BlockHandle::decode_exact(it.value()) {
            fix_block(data, fo, b);
        }
        it.next();
        n += 1;
    }
}

/// [`sst_table`] after [`repair_table_checksums`]: reaches the block,
/// properties, filter and decompression code that checksums shield from
/// plain byte mutations.
pub fn sst_table_repaired(data: &[u8]) {
    let mut d = data.to_vec();
    repair_table_checksums(&mut d);
    sst_table(&d);
}

/// The value columns of the table whose column-group files `cg_file`
/// reads (its seeds are written for it): one of each type.
pub fn cg_shape() -> Arc<TableShape> {
    Arc::new(TableShape::new(PieceSchema::from_types(vec![
        ColumnType::Int32,
        ColumnType::Utf8,
        ColumnType::Binary,
        ColumnType::Int64,
        ColumnType::Float64,
        ColumnType::Bool,
    ])))
}

/// Bytes as a column-group file of [`cg_shape`]'s table, with and without
/// a block cache: open, verify, iterate both ways, look keys up, read every
/// cell of every block. A file that passes `verify` iterates as many
/// entries as its properties say, in strict order, and the index's code
/// ranges of its columns of codes are those of the blocks' codes.
pub fn cg_file(data: &[u8]) {
    for cache in [Some(Arc::new(BlockCache::new(1 << 20))), None] {
        let ctx = OpenContext {
            file_number: FileNumber(1),
            cache,
            stats: Arc::new(Statistics::default()),
        };
        cg_file_with(data, &ctx);
    }
}

fn cg_file_with(data: &[u8], ctx: &OpenContext) {
    let file = Arc::new(BytesFile(data.to_vec()));
    let Ok(reader) = CgReader::open(file, PathBuf::from("fuzz.sst"), cg_shape(), ctx) else {
        return;
    };
    let reader = Arc::new(reader);
    let verified = TableSource::verify(&*reader).is_ok();
    let entries = check_reads(
        data,
        verified,
        &|| Box::new(strata::keyblock::RowIter::new(Arc::clone(&reader))),
        &|u, s, f| TableSource::get(&*reader, u, s, f),
    );
    let columns = reader.columns().len();
    for i in 0..reader.blocks().len().min(MAX_DICT_BLOCKS) {
        let Ok(block) = reader.block(i) else {
            continue;
        };
        for c in 0..columns {
            let view = block.column_view(c);
            let mut codes: Option<(u32, u32)> = None;
            for r in 0..block.rows() {
                let _ = block.cell(c, r);
                if let Some(code) = block.value_code(c, r) {
                    let (lo, hi) = codes.get_or_insert((code.code, code.code));
                    (*lo, *hi) = ((*lo).min(code.code), (*hi).max(code.code));
                    assert!(
                        (code.code as usize) < code.dictionary.len(),
                        "a parsed block has a code past its dictionary"
                    );
                    assert_eq!(
                        block.cell(c, r),
                        Some(strata::table::piece::Cell::Bytes(
                            code.dictionary.value(code.code)
                        )),
                        "a row's cell is not its code's value"
                    );
                }
            }
            assert_eq!(
                view.codes().is_some(),
                reader.is_coded(c),
                "a block's column is codes where the file has no dictionary, or the reverse"
            );
            let s = &reader.blocks()[i].stats[c];
            if verified && s.codes {
                let code = |m: &Option<Vec<u8>>| {
                    m.as_deref()
                        .map(|m| u32::from_le_bytes(m.try_into().unwrap_or([0; 4])))
                };
                assert_eq!(
                    (code(&s.min), code(&s.max)),
                    (codes.map(|c| c.0), codes.map(|c| c.1)),
                    "a verified file's code range disagrees with its block"
                );
            }
        }
    }
    if let Some(e) = entries {
        check_verified_entries(&e, reader.properties().num_entries);
    }
}

/// Rewrites the checksums of a column-group file's image: the footer gets
/// the column-group magic, version 2 and its CRC; the filter, properties
/// and index blocks, and the dictionary and data blocks they list (when in
/// bounds), get their trailer CRCs recomputed.
pub fn repair_cg_checksums(data: &mut [u8]) {
    let Some((fo, footer)) = footer_of(data, CG_FORMAT_VERSION) else {
        return;
    };
    rewrite_footer(data, fo, &footer, CG_MAGIC);
    fix_filter(data, fo, footer.filter);
    let path = Path::new("fuzz.sst");
    // Meta blocks are never compressed by the writer.
    let Some(raw) = fix_block(data, fo, footer.properties) else {
        return;
    };
    let Ok(props) = CgProperties::decode(&raw, path, footer.properties.offset) else {
        return;
    };
    for d in props.dictionaries.iter().take(MAX_ENTRIES) {
        fix_block(data, fo, d.handle);
    }
    let Some(raw) = fix_block(data, fo, footer.index) else {
        return;
    };
    let Ok(blocks) = decode_index(&raw, props.columns.len(), path, footer.index.offset) else {
        return;
    };
    for b in blocks.iter().take(MAX_ENTRIES) {
        fix_block(data, fo, b.handle);
    }
}

/// [`cg_file`] after [`repair_cg_checksums`]: reaches the index,
/// dictionary, block and properties parsing that checksums shield from
/// plain byte mutations.
pub fn cg_file_repaired(data: &[u8]) {
    let mut d = data.to_vec();
    repair_cg_checksums(&mut d);
    cg_file(&d);
}

/// Blocks of a dictionary-encoded file whose codes are scanned at most.
const MAX_DICT_BLOCKS: usize = 1024;

/// Bytes as a dictionary-encoded file (`strata.dict1`), opened twice:
/// with a block cache (the dictionary is read when first needed, through
/// the cache) and without (it is decoded at open and kept). Each time:
/// open, verify, iterate both ways, look keys up (as [`sst_table`]); the
/// dictionary's bounds and the predicates' code sets checked against its
/// values; each block's packed codes selected by every kernel for a few
/// predicates. Beyond `check_reads`: a verified file's entries are in
/// strict internal-key order and as many as its properties say; a
/// selection bitmap has a row exactly when the row's code is in the
/// predicate's set and exactly when its value matches; all kernels give
/// the same bitmap; a block's code statistics are those of its codes.
pub fn dict_file(data: &[u8]) {
    for cache in [Some(Arc::new(BlockCache::new(1 << 20))), None] {
        let ctx = OpenContext {
            file_number: FileNumber(1),
            cache,
            stats: Arc::new(Statistics::default()),
        };
        dict_file_with(data, &ctx);
    }
}

fn dict_file_with(data: &[u8], ctx: &OpenContext) {
    let file = Arc::new(BytesFile(data.to_vec()));
    let Ok(reader) = DictReader::open(file, PathBuf::from("fuzz.sst"), ctx) else {
        return;
    };
    let reader = Arc::new(reader);
    let verified = TableSource::verify(&*reader).is_ok();
    let entries = check_reads(
        data,
        verified,
        &|| Box::new(DictReader::iter(&reader)),
        &|u, s, f| TableSource::get(&*reader, u, s, f),
    );
    let dict = reader.dictionary();
    if let Ok(d) = &dict {
        assert_eq!(
            d.is_some(),
            reader.has_dictionary(),
            "has_dictionary() disagrees with dictionary()"
        );
    }
    if let Ok(Some(d)) = &dict {
        check_dictionary(d, data);
        check_dict_blocks(&reader, Some(d), data);
    } else if let Ok(None) = dict {
        check_dict_blocks(&reader, None, data);
    }
    if let Some(e) = entries {
        check_verified_entries(&e, reader.properties().num_entries);
        if !e.is_empty() {
            assert!(
                dict.is_ok(),
                "a verified file with entries has a dictionary that does not load: {dict:?}"
            );
        }
    }
}

/// A verified file's promises about its entries: as many as its
/// properties say, in strict internal-key order.
fn check_verified_entries(e: &Entries, num_entries: u64) {
    assert_eq!(
        e.len() as u64,
        num_entries,
        "a verified file iterates another number of entries than its properties say"
    );
    assert!(
        e.windows(2)
            .all(|w| key::compare_internal(&w[0].0, &w[1].0) == std::cmp::Ordering::Less),
        "a verified file's entries are not in strict internal-key order"
    );
}

/// Writes `footer` back at `fo` with its CRC and the file kind's `magic`
/// (the CRC covers the handles only; the magic is the file kind's).
fn rewrite_footer(data: &mut [u8], fo: usize, footer: &Footer, magic: u64) {
    let mut enc = footer.encode();
    enc[FOOTER_LEN - 8..].copy_from_slice(&magic.to_le_bytes());
    data[fo..].copy_from_slice(&enc);
}

/// Rewrites the checksums of a dictionary-encoded file's image, as
/// [`repair_table_checksums`] does for tables: the footer gets the
/// dictionary-file magic, version 1 and its CRC; the filter, properties
/// and index blocks, and the dictionary and data blocks the index lists
/// (when in bounds), get their trailer CRCs recomputed.
pub fn repair_dict_checksums(data: &mut [u8]) {
    use strata::dictfile::meta::{DICT_FORMAT_VERSION, DICT_MAGIC, Index};
    let Some((fo, footer)) = footer_of(data, DICT_FORMAT_VERSION) else {
        return;
    };
    rewrite_footer(data, fo, &footer, DICT_MAGIC);
    fix_filter(data, fo, footer.filter);
    fix_block(data, fo, footer.properties);
    let Some(raw) = fix_block(data, fo, footer.index) else {
        return;
    };
    // Uncompressed index blocks only (the writer never compresses them).
    let Ok(index) = Index::decode(&raw, Path::new("fuzz.sst"), footer.index.offset) else {
        return;
    };
    if let Some((h, _)) = index.dictionary {
        fix_block(data, fo, h);
    }
    for b in index.blocks.iter().take(MAX_ENTRIES) {
        fix_block(data, fo, b.handle);
    }
}

/// [`dict_file`] after [`repair_dict_checksums`]: reaches the index,
/// dictionary, block, properties and filter parsing that checksums shield
/// from plain byte mutations.
pub fn dict_file_repaired(data: &[u8]) {
    let mut d = data.to_vec();
    repair_dict_checksums(&mut d);
    dict_file(&d);
}

/// Bytes as a front-coded dictionary: a decoded one re-encodes and decodes
/// to itself, its values are strictly ascending, its bounds agree with a
/// linear scan, and predicates' code sets hold exactly the matching codes.
pub fn dictionary(data: &[u8]) {
    let Ok(d) = Dictionary::decode(data) else {
        return;
    };
    let mut enc = Vec::new();
    d.encode_to(&mut enc);
    assert_eq!(
        Dictionary::decode(&enc).as_ref(),
        Ok(&d),
        "a decoded dictionary does not re-encode to itself"
    );
    assert_eq!(
        Dictionary::from_sorted(d.values()).as_ref(),
        Some(&d),
        "a decoded dictionary's values are not strictly ascending"
    );
    check_dictionary(&d, data);
}

/// Values of `dict` at a few codes, and bytes from both ends of `input`.
fn sample_values(dict: Option<&Dictionary>, input: &[u8]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = match dict {
        Some(d) => {
            let n = d.len() as u32;
            [0, n / 2, n.saturating_sub(1)]
                .iter()
                .filter_map(|&c| d.try_value(c).map(<[u8]>::to_vec))
                .collect()
        }
        None => Vec::new(),
    };
    v.push(
        input
            .get(1..input.len().min(5))
            .unwrap_or_default()
            .to_vec(),
    );
    v.push(input[input.len().saturating_sub(3)..].to_vec());
    v
}

/// A few predicates of every kind, on values of `dict` (so that they
/// select something) and on bytes of `input`.
fn predicates(dict: Option<&Dictionary>, input: &[u8]) -> Vec<ValuePredicate> {
    let vals = sample_values(dict, input);
    let mut p = Vec::new();
    for v in &vals {
        p.push(ValuePredicate::Eq(v.clone()));
        p.push(ValuePredicate::Prefix(v[..v.len() / 2].to_vec()));
    }
    let (a, b) = (vals[0].clone(), vals[vals.len() / 2].clone());
    p.push(ValuePredicate::Range {
        start: Bound::Included(a.clone()),
        end: Bound::Excluded(b.clone()),
    });
    p.push(ValuePredicate::Range {
        start: Bound::Excluded(a),
        end: Bound::Unbounded,
    });
    p.push(ValuePredicate::Range {
        start: Bound::Unbounded,
        end: Bound::Included(b),
    });
    p.push(ValuePredicate::In(vals));
    p
}

/// Checks `dict` against linear scans of its values: `lower_bound`,
/// `upper_bound` and `code_of` at probes around its values and from
/// `input`, and predicates' code sets against `ValuePredicate::matches`.
fn check_dictionary(dict: &Dictionary, input: &[u8]) {
    let mut probes = Vec::new();
    for v in sample_values(Some(dict), input) {
        let mut after = v.clone();
        after.push(0);
        let mut bumped = v.clone();
        match bumped.last_mut() {
            Some(b) if *b < 0xff => *b += 1,
            _ => bumped.push(0xff),
        }
        let shorter = v[..v.len().saturating_sub(1)].to_vec();
        probes.extend([v, after, bumped, shorter]);
    }
    for p in &probes {
        let below = dict.values().filter(|v| *v < p.as_slice()).count();
        let at_most = dict.values().filter(|v| *v <= p.as_slice()).count();
        assert_eq!(
            dict.lower_bound(p) as usize,
            below,
            "lower_bound disagrees with a scan"
        );
        assert_eq!(
            dict.upper_bound(p) as usize,
            at_most,
            "upper_bound disagrees with a scan"
        );
        assert_eq!(
            dict.code_of(p),
            (at_most > below).then_some(below as u32),
            "code_of disagrees with a scan"
        );
    }
    for pred in predicates(Some(dict), input) {
        let set = pred.codes(dict);
        for (c, v) in dict.values().enumerate() {
            assert_eq!(
                set.contains(c as u32),
                pred.matches(v),
                "{pred:?}: code {c} of {v:?} is in its code set {set:?} differently from matching"
            );
        }
        assert!(
            !set.contains(dict.len() as u32),
            "{pred:?}: a code past the dictionary is in {set:?}"
        );
    }
}

/// Each block's packed codes (at most [`MAX_DICT_BLOCKS`] blocks) selected
/// for a few predicates by every kernel, the bitmaps checked row by row
/// against the codes and the values.
fn check_dict_blocks(reader: &DictReader, dict: Option<&Dictionary>, input: &[u8]) {
    let n = reader.blocks().len().min(MAX_DICT_BLOCKS);
    let Some(dict) = dict else {
        for i in 0..n {
            if let Ok(b) = RowSource::block(reader, i) {
                assert!(b.codes().is_none(), "codes in a file without a dictionary");
            }
        }
        return;
    };
    let preds: Vec<(ValuePredicate, _)> = predicates(Some(dict), input)
        .into_iter()
        .map(|p| {
            let set = p.codes(dict);
            (p, set)
        })
        .collect();
    let (mut bitmap, mut other) = (Vec::new(), Vec::new());
    for i in 0..n {
        let Ok(block) = RowSource::block(reader, i) else {
            continue;
        };
        let meta = &reader.blocks()[i].codes;
        // An assertion of the engine's promise, not a decode: the block
        // parser refuses plain values in a file with a dictionary.
        let (packed, width) = block
            .codes()
            .expect("a block of plain values in a file with a dictionary");
        let rows = block.rows();
        let codes: Vec<u32> = (0..rows)
            .filter_map(|r| block.value_code(r).map(|c| c.code))
            .collect();
        let stats = block.code_stats();
        assert_eq!(
            (stats.valued, stats.min, stats.max),
            (
                codes.len() as u64,
                codes.iter().copied().min().unwrap_or(0),
                codes.iter().copied().max().unwrap_or(0)
            ),
            "a block's code stats are not its codes'"
        );
        assert_eq!(
            &stats, meta,
            "a block read through the cache disagrees with its index entry"
        );
        for (pred, set) in &preds {
            let count = select(packed, width, rows, set, &mut bitmap);
            assert_eq!(bitmap.len(), bitmap_words(rows), "bitmap of the wrong size");
            assert_eq!(
                count,
                bitmap
                    .iter()
                    .map(|w| w.count_ones() as usize)
                    .sum::<usize>(),
                "select miscounts its bitmap"
            );
            if rows % 64 != 0 {
                assert_eq!(
                    bitmap[rows / 64] >> (rows % 64),
                    0,
                    "bits past the rows are set"
                );
            }
            for k in Kernel::available() {
                select_with(k, packed, width, rows, set, &mut other);
                assert_eq!(other, bitmap, "the {} kernel disagrees", k.name());
            }
            for r in 0..rows {
                let selected = bitmap[r / 64] >> (r % 64) & 1 == 1;
                let Some(c) = block.value_code(r) else {
                    assert!(block.value(r).is_empty(), "a tombstone has a value");
                    continue;
                };
                assert_eq!(
                    selected,
                    set.contains(c.code),
                    "row {r}'s code {} is selected differently from its set {set:?}",
                    c.code
                );
                assert_eq!(
                    selected,
                    pred.matches(block.value(r)),
                    "{pred:?}: row {r} is selected differently from matching"
                );
                if selected && (meta.min..=meta.max).contains(&c.code) {
                    assert!(
                        set.meets(meta.min, meta.max),
                        "{set:?} meets code {} but not its range",
                        c.code
                    );
                }
            }
        }
    }
}

/// Bytes as a decoded data block: validate, iterate both ways, seek.
pub fn sst_block(data: &[u8]) {
    let Ok(block) = Block::new(data.to_vec()) else {
        return;
    };
    let block = Arc::new(block);
    let mut keys = Vec::new();
    let mut it = block.iter();
    it.seek_to_first();
    while it.valid() && keys.len() < MAX_ENTRIES {
        keys.push(it.key().to_vec());
        let _ = it.value();
        it.next();
    }
    let mut it = block.iter();
    it.seek_to_last();
    let mut n = 0;
    while it.valid() && n < MAX_ENTRIES {
        it.prev();
        n += 1;
    }
    for k in keys.iter().step_by((keys.len() / 8).max(1)) {
        let mut it = block.iter();
        it.seek(k);
        let mut it = block.iter();
        it.seek_for_prev(k);
    }
    let mut it = block.iter();
    it.seek(&data[..data.len().min(12)]);
    if it.valid() {
        it.prev();
    }
}

fn read_log(data: &[u8], policy: TailPolicy) -> (Vec<Vec<u8>>, strata::Result<()>, LogReader) {
    let mut r = LogReader::from_bytes("fuzz.log", data.to_vec(), policy);
    let mut recs = Vec::new();
    let res = loop {
        match r.next_record() {
            Ok(Some(rec)) => {
                recs.push(rec);
                if recs.len() >= MAX_ENTRIES {
                    break Ok(());
                }
            }
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    (recs, res, r)
}

/// Bytes as a write-ahead log, read under both tail policies.
///
/// (Records are not decoded as write batches: the batch decoder,
/// `strata::batch::DecodedBatch`, is not public.)
pub fn wal_reader(data: &[u8]) {
    let (strict, strict_res, mut sr) = read_log(data, TailPolicy::Strict);
    let (lenient, lenient_res, lr) = read_log(data, TailPolicy::StopAtDamage);
    if strict.len() >= MAX_ENTRIES {
        return;
    }
    assert!(
        lenient_res.is_ok(),
        "StopAtDamage returned an error: {lenient_res:?}"
    );
    assert_eq!(
        strict, lenient,
        "the two policies disagree before the first damage"
    );
    match (&strict_res, lr.dropped()) {
        (Ok(()), None) => {}
        (Err(_), Some(d)) => {
            assert_eq!(
                d.offset + d.bytes,
                lr.file_len(),
                "dropped range does not reach the end"
            );
            assert!(sr.next_record().is_err(), "Strict forgot its error");
        }
        (s, d) => panic!("Strict says {s:?} but StopAtDamage dropped {d:?}"),
    }
}

/// Bytes as a manifest (records decoded as version edits), and as one edit.
pub fn manifest(data: &[u8]) {
    let roundtrip = |rec: &[u8]| {
        if let Ok(edit) = VersionEdit::decode(rec) {
            let again = VersionEdit::decode(&edit.encode());
            assert_eq!(
                again.as_ref(),
                Ok(&edit),
                "a decoded edit does not re-encode to itself"
            );
        }
    };
    roundtrip(data);
    for policy in [TailPolicy::Strict, TailPolicy::StopAtDamage] {
        let (recs, _, _) = read_log(data, policy);
        for r in &recs {
            roundtrip(r);
        }
    }
}

/// Bytes as shell input lines; tokens must round-trip.
pub fn shell_parser(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for line in std::iter::once(text.as_ref()).chain(text.lines()) {
        let parsed = parse_line(line);
        let again = match &parsed {
            Ok(Command::Put { key, value }) => {
                Some(format!("put {} {}", encode_bytes(key), encode_bytes(value)))
            }
            Ok(Command::Get { key }) => Some(format!("GET {}", encode_bytes(key))),
            Ok(Command::Delete { key }) => Some(format!("delete {}", encode_bytes(key))),
            Ok(Command::Merge { key, operand }) => Some(format!(
                "merge {}\t{}",
                encode_bytes(key),
                encode_bytes(operand)
            )),
            _ => None,
        };
        if let Some(l) = again {
            assert_eq!(
                parse_line(&l),
                parsed,
                "re-encoded command {l:?} parses differently"
            );
        }
    }
    let token = encode_bytes(data);
    assert_eq!(
        decode_token(&token).as_deref(),
        Ok(data),
        "encode_bytes does not round-trip"
    );
}
