//! The sources of a scan, each read as a sequence of columnar chunks.
//!
//! A column-group run yields its blocks as they are stored. A whole-row
//! source (a memtable, a level-0 file, a whole-row run) is staged: up to
//! [`STAGE_ROWS`] of its entries, or [`STAGE_BYTES`] of their columns, are
//! decoded into a block of the same PAX form, holding only the columns the
//! scan reads. Every source then looks
//! alike to the merge ([`super::window`]): sorted rows with keys, trailers
//! and column vectors.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{KIND_SEEK, ValueKind, trailer, user_key};
use crate::keyblock::{cmp_prefixed, prefix_of};
use crate::table::cgfile::block::CgBlock;
use crate::table::cgfile::block_builder::BlockBuilder;
use crate::table::cgfile::{BlockMeta, CgReader};
use crate::table::piece::{PieceSchema, PieceView};
use crate::table::predicate::Bound;
use crate::table::schema::{ColumnType, Schema};
use crate::version::FileMeta;

/// Entries of a whole-row source staged per chunk (more when the last
/// key's versions continue, so that no key spans two chunks).
pub(super) const STAGE_ROWS: usize = 1024;

/// Bytes of the scan's columns staged per chunk of a whole-row source, past
/// which the chunk ends at the next key: wide rows make chunks of fewer
/// rows, so a scan's staged memory (a chunk per source and thread in
/// flight) stays bounded whatever the rows' width. At 16 KiB rows, 1,024
/// of them were 16 MiB a source.
pub(super) const STAGE_BYTES: usize = 256 << 10;

/// A block and where its columns are: `map[v]` is value column `v`'s
/// position among the block's columns.
#[derive(Clone)]
pub(super) struct Chunk {
    pub block: Arc<CgBlock>,
    pub map: Arc<[Option<usize>]>,
}

impl Chunk {
    /// Row `r`'s value of value column `v`, if the row carries it.
    #[inline]
    pub fn cell(&self, v: usize, r: usize) -> Option<crate::table::piece::Cell<'_>> {
        self.map[v].and_then(|i| self.block.cell(i, r))
    }

    /// Whether row `r` carries value column `v`.
    #[inline]
    pub fn carries(&self, v: usize, r: usize) -> bool {
        self.map[v].is_some_and(|i| self.block.has(i, r))
    }
}

fn reader(f: &FileMeta) -> Result<&CgReader> {
    CgReader::of(f).ok_or_else(|| {
        Error::corruption(
            &f.path,
            0,
            "a column-group run holds a file that is not a column-group file",
        )
    })
}

/// Whether `f` is a column-group file.
pub(super) fn is_cg(f: &FileMeta) -> bool {
    CgReader::of(f).is_some()
}

/// A run of column-group files, read block by block.
pub(super) struct CgRun {
    files: Vec<Arc<FileMeta>>,
    /// The next block to read: `files[file]`'s block `block`.
    file: usize,
    block: usize,
    /// The scan's lower bound, applied to the first block read.
    lower: Option<Vec<u8>>,
    map: Arc<[Option<usize>]>,
    /// The group's columns in group order, with their types.
    pub cols: Vec<(usize, ColumnType)>,
    /// The scan's predicate rewritten for a file's columns of codes
    /// ([`Bound::on_codes`]): the file's position and the rewrite (`None`:
    /// no comparison changed).
    coded: Option<(usize, Option<Bound>)>,
}

impl CgRun {
    pub fn new(files: Vec<Arc<FileMeta>>, pieces: &PieceSchema) -> Result<CgRun> {
        let mut map = vec![None; pieces.len()];
        let mut cols = Vec::new();
        if let Some(f) = files.first() {
            for (i, &v) in reader(f)?.columns().iter().enumerate() {
                if v >= map.len() {
                    return Err(Error::corruption(
                        &f.path,
                        0,
                        format!("the file's group names column {v} of {}", map.len()),
                    ));
                }
                map[v] = Some(i);
                cols.push((v, pieces.ty(v)));
            }
        }
        // Every file of the run is read through the first's column map: a
        // file listed under another group (`CgReader::of_listed`), or one
        // holding other columns than the first, is refused rather than
        // read through the wrong map.
        let first: Vec<usize> = cols.iter().map(|&(v, _)| v).collect();
        for f in &files {
            let r = CgReader::of_listed(f)?;
            if r.is_some_and(|r| r.columns() != first.as_slice()) {
                return Err(Error::corruption(
                    &f.path,
                    0,
                    format!("the file holds other columns than its run's {first:?}"),
                ));
            }
        }
        Ok(CgRun {
            files,
            file: 0,
            block: 0,
            lower: None,
            map: map.into(),
            cols,
            coded: None,
        })
    }

    /// Rewrites `p` for the file of the next block, whose string columns
    /// may be codes into its dictionaries (once per file; loads only the
    /// dictionaries of columns `p` compares).
    pub fn prepare(&mut self, p: &Bound, schema: &Schema) -> Result<()> {
        let Some(f) = self.files.get(self.file) else {
            return Ok(());
        };
        if self.coded.as_ref().is_some_and(|(at, _)| *at == self.file) {
            return Ok(());
        }
        let r = reader(f)?;
        let mut columns = Vec::new();
        p.columns(&mut columns);
        let mut dicts = vec![None; self.cols.len()];
        for c in columns {
            if let Some(i) = schema
                .value_number(c)
                .and_then(|v| self.map.get(v).copied().flatten())
                && r.is_coded(i)
            {
                dicts[i] = r.dictionary(i)?;
            }
        }
        let rewritten = p.on_codes(&|c| {
            let i = schema
                .value_number(c)
                .and_then(|v| self.map.get(v).copied().flatten())?;
            dicts[i].as_deref()
        });
        self.coded = Some((self.file, rewritten));
        Ok(())
    }

    /// `p` as [`CgRun::prepare`] rewrote it for the next block's file.
    pub fn predicate<'a>(&'a self, p: &'a Bound) -> &'a Bound {
        match &self.coded {
            Some((at, Some(b))) if *at == self.file => b,
            _ => p,
        }
    }

    /// Positions before the first row at or after `lower`.
    pub fn seek(&mut self, lower: Option<&[u8]>) -> Result<()> {
        self.lower = lower.map(<[u8]>::to_vec);
        match lower {
            None => {
                self.file = 0;
                self.block = 0;
            }
            Some(l) => {
                self.file = self.files.partition_point(|f| f.largest_user_key() < l);
                self.block = match self.files.get(self.file) {
                    Some(f) => reader(f)?.block_for(l),
                    None => 0,
                };
            }
        }
        self.normalize()
    }

    /// Moves past files whose blocks are all read.
    fn normalize(&mut self) -> Result<()> {
        while let Some(f) = self.files.get(self.file) {
            if self.block < reader(f)?.blocks().len() {
                break;
            }
            self.file += 1;
            self.block = 0;
        }
        Ok(())
    }

    pub fn exhausted(&self) -> bool {
        self.file >= self.files.len()
    }

    /// The index entry of the next block.
    pub fn pending(&self) -> Option<&BlockMeta> {
        let f = self.files.get(self.file)?;
        reader(f).ok()?.blocks().get(self.block)
    }

    /// Passes over the next block without reading it.
    pub fn skip(&mut self) -> Result<()> {
        self.lower = None;
        self.block += 1;
        self.normalize()
    }

    /// Reads the next block: the chunk and the row to start at.
    pub fn load(&mut self) -> Result<Option<(Chunk, usize)>> {
        let Some(f) = self.files.get(self.file) else {
            return Ok(None);
        };
        let block = reader(f)?.block(self.block)?;
        self.block += 1;
        self.normalize()?;
        let start = match self.lower.take() {
            Some(l) => block.lower_bound(&l, u64::MAX),
            None => 0,
        };
        Ok(Some((
            Chunk {
                block,
                map: Arc::clone(&self.map),
            },
            start,
        )))
    }
}

/// A whole-row source staged into blocks of the columns a scan reads.
pub(super) struct PieceRun {
    it: Box<dyn InternalIterator>,
    pieces: PieceSchema,
    builder: BlockBuilder,
    group: Vec<usize>,
    map: Arc<[Option<usize>]>,
    /// The scan's exclusive upper bound: staging stops there.
    upper: Option<Vec<u8>>,
    buf: Vec<u8>,
    /// A piece view's memory, reused row after row.
    slots: Vec<(u32, u32)>,
}

impl PieceRun {
    /// Stages the value columns `group` (ascending) of `it`'s entries.
    pub fn new(
        it: Box<dyn InternalIterator>,
        pieces: &PieceSchema,
        group: &[usize],
        upper: Option<&[u8]>,
    ) -> PieceRun {
        let mut map = vec![None; pieces.len()];
        for (i, &v) in group.iter().enumerate() {
            map[v] = Some(i);
        }
        PieceRun {
            it,
            builder: BlockBuilder::without_statistics(pieces, group),
            pieces: pieces.clone(),
            group: group.to_vec(),
            map: map.into(),
            upper: upper.map(<[u8]>::to_vec),
            buf: Vec::new(),
            slots: Vec::new(),
        }
    }

    pub fn seek(&mut self, seek_key: Option<&[u8]>) -> Result<()> {
        match seek_key {
            Some(k) => self.it.seek(k),
            None => self.it.seek_to_first(),
        }
        self.it.status()
    }

    /// Whether no entry remains before the upper bound.
    pub fn exhausted(&self) -> bool {
        !self.it.valid() || past(&self.upper, user_key(self.it.key()))
    }

    /// Stages the next chunk.
    pub fn load(&mut self) -> Result<Option<Chunk>> {
        if self.exhausted() {
            return Ok(None);
        }
        let mut rows = 0usize;
        let mut failed = None;
        let PieceRun {
            it,
            pieces,
            builder,
            upper,
            slots,
            ..
        } = self;
        it.visit_forward(&mut |k, value| {
            let uk = user_key(k);
            let full = rows >= STAGE_ROWS || builder.size_estimate() >= STAGE_BYTES;
            if past(upper, uk) || (full && uk != builder.last_key()) {
                return false;
            }
            let t = trailer(k);
            if (t & 0xff) as u8 == KIND_SEEK {
                return true;
            }
            if t & 0xff == ValueKind::Delete as u64 {
                builder.add(uk, t, None);
            } else {
                match PieceView::parse_reusing(pieces, value, std::mem::take(slots)) {
                    Ok(view) => {
                        builder.add(uk, t, Some((pieces, &view)));
                        *slots = view.into_slots();
                    }
                    Err(e) => {
                        failed = Some(e);
                        return false;
                    }
                }
            }
            rows += 1;
            true
        });
        if let Some(e) = failed {
            return Err(e);
        }
        self.it.status()?;
        if rows == 0 {
            return Ok(None);
        }
        // (The block moves into the chunk, so each chunk's buffer is new:
        // sized once rather than grown.)
        self.buf.reserve(self.builder.size_estimate() + 64);
        self.builder.finish(&mut self.buf);
        let block = CgBlock::parse(
            std::mem::take(&mut self.buf),
            &self.pieces,
            &self.group,
            &[],
        )
        .map_err(|r| Error::corruption("a scan's staged rows", 0, r))?;
        Ok(Some(Chunk {
            block: Arc::new(block),
            map: Arc::clone(&self.map),
        }))
    }
}

/// Whether user key `uk` is at or past the exclusive upper bound `upper`.
#[inline]
fn past(upper: &Option<Vec<u8>>, uk: &[u8]) -> bool {
    upper.as_deref().is_some_and(|u| at_or_after(uk, u))
}

/// `a >= b`, deciding on the keys' eight-byte prefixes when they differ
/// ([`cmp_prefixed`]): staging tests every entry against the scan's upper
/// bound, and windows compare chunks' last keys.
#[inline]
pub(super) fn at_or_after(a: &[u8], b: &[u8]) -> bool {
    cmp_prefixed(a, prefix_of(a), b, prefix_of(b)).is_ge()
}

#[cfg(test)]
mod tests {
    use super::at_or_after;

    #[test]
    fn at_or_after_is_byte_order() {
        let keys: [&[u8]; 9] = [
            b"",
            b"a",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefgi",
            b"abcdefghij",
            b"\xff\xff\xff\xff\xff\xff\xff\xff",
            b"\x00\x00\x00\x00\x00\x00\x00\x01",
            b"\x80\x00\x00\x00\x00\x00\x00\x00z",
        ];
        for a in keys {
            for b in keys {
                assert_eq!(at_or_after(a, b), a >= b, "{a:?} >= {b:?}");
            }
        }
    }
}
