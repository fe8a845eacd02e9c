//! What a file of keyed columnar blocks needs to be read as a table:
//! point lookups, an internal iterator and verification, written once for
//! every format whose blocks start with a key section ([`KeyRows`]).
//! A format says how to load its blocks and how to turn one row's values
//! into the value an entry carries ([`RowSource`]).
//!
//! Formats keep one user key's rows in one block (blocks end between user
//! keys), so a point lookup reads one block: the first whose last key is
//! at or after the key.

use std::sync::Arc;

use super::KeyRows;
use crate::dict::CodedValue;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{trailer, user_key};

/// A file of keyed blocks.
pub trait RowSource: Send + Sync + 'static {
    /// A parsed data block.
    type Block: Send + Sync + 'static;
    /// Per-iterator state for building values.
    type Scratch: Send + 'static;
    /// Number of data blocks.
    fn num_blocks(&self) -> usize;
    /// Data block `i`, through the cache.
    fn block(&self, i: usize) -> Result<Arc<Self::Block>>;
    /// Data block `i` read, checked and parsed from the file, not the cache.
    fn read_block(&self, i: usize) -> Result<Self::Block>;
    /// The first block whose last user key is at or after `user_key`.
    fn block_for(&self, user_key: &[u8]) -> usize;
    /// False only if the file certainly has no row of `user_key`.
    fn may_contain(&self, user_key: &[u8]) -> bool;
    /// A block's key section and the bytes it indexes.
    fn key_rows(block: &Self::Block) -> (&KeyRows, &[u8]);
    /// Fresh scratch state.
    fn scratch(&self) -> Self::Scratch;
    /// Whether [`RowSource::value_ref`] gives every row's value, so an
    /// iterator need not copy values out of blocks.
    const BORROWS_VALUES: bool = false;
    /// Row `r`'s value (empty for a tombstone), borrowed from the block,
    /// for a format whose blocks hold values whole. Used only when
    /// `BORROWS_VALUES`.
    fn value_ref(_block: &Self::Block, _r: usize) -> &[u8] {
        &[]
    }
    /// Row `r`'s value as a dictionary code, for a format that stores it so.
    fn value_code(_block: &Self::Block, _r: usize) -> Option<CodedValue<'_>> {
        None
    }
    /// Calls `f(v, code)` for each value column `v` of row `r` stored as a
    /// code, for a format that stores columns so.
    fn column_codes(_block: &Self::Block, _r: usize, _f: &mut dyn FnMut(usize, CodedValue<'_>)) {}
    /// Row `r`'s value (empty for a tombstone) into `value` (cleared first).
    /// Used unless `BORROWS_VALUES`.
    fn value_into(
        &self,
        block: &Self::Block,
        r: usize,
        scratch: &mut Self::Scratch,
        value: &mut Vec<u8>,
    );
    /// Where errors about the file point.
    fn path(&self) -> &std::path::Path;
    /// Data block `i`'s offset in the file.
    fn block_offset(&self, i: usize) -> u64;
}

/// Every row source is a table source: lookups, iteration and
/// verification as above.
impl<S: RowSource> crate::table_format::TableSource for S {
    fn get(
        &self,
        user_key: &[u8],
        seek_key: &[u8],
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<bool> {
        get_rows(self, user_key, seek_key, f)
    }

    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
        Box::new(RowIter::new(self))
    }

    fn may_contain(&self, user_key: &[u8]) -> bool {
        RowSource::may_contain(self, user_key)
    }

    fn verify(&self) -> Result<()> {
        verify_rows(self)
    }

    fn as_any(&self) -> Option<&(dyn std::any::Any + Send + Sync)> {
        Some(self)
    }
}

/// A block and a range of its rows.
pub type BlockRows<B> = (Arc<B>, std::ops::Range<usize>);

/// The rows of `user_key` at or after `snap_trailer` (newest first): the
/// block and the row range. `None` if the file has none.
pub fn find_rows<S: RowSource>(
    src: &S,
    user_key: &[u8],
    snap_trailer: u64,
) -> Result<Option<BlockRows<S::Block>>> {
    let i = src.block_for(user_key);
    if i >= src.num_blocks() {
        return Ok(None);
    }
    let block = src.block(i)?;
    let (k, d) = S::key_rows(&block);
    let start = k.lower_bound(d, user_key, snap_trailer);
    let mut end = start;
    while end < k.rows() && k.user_key(d, end) == user_key {
        end += 1;
    }
    Ok((end > start).then_some((block, start..end)))
}

/// `TableSource::get` for a row source: calls `f(internal_key, value)` for
/// each row of `user_key` at or after `seek_key` until `f` returns false.
/// `Ok(false)` when the filter ruled the key out.
pub fn get_rows<S: RowSource>(
    src: &S,
    user_key: &[u8],
    seek_key: &[u8],
    f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
) -> Result<bool> {
    if !src.may_contain(user_key) {
        return Ok(false);
    }
    let Some((block, rows)) = find_rows(src, user_key, trailer(seek_key))? else {
        return Ok(true);
    };
    let mut scratch = src.scratch();
    let (mut key, mut value) = (Vec::new(), Vec::new());
    let (k, d) = S::key_rows(&block);
    for r in rows {
        internal_key_into(k, d, r, &mut key);
        let v = if S::BORROWS_VALUES {
            S::value_ref(&block, r)
        } else {
            src.value_into(&block, r, &mut scratch, &mut value);
            &value
        };
        if !f(&key, v) {
            break;
        }
    }
    Ok(true)
}

fn internal_key_into(k: &KeyRows, d: &[u8], r: usize, key: &mut Vec<u8>) {
    key.clear();
    key.extend_from_slice(k.user_key(d, r));
    key.extend_from_slice(&k.trailer(d, r).to_le_bytes());
}

/// `TableSource::verify` for a row source: reads every block from the file
/// (a block read earlier may since have been damaged) and checks that each
/// starts after the previous block's last key and that the file's filter
/// admits every key (a filter that rules out a key the file holds would
/// hide it from point reads).
pub fn verify_rows<S: RowSource>(src: &S) -> Result<()> {
    let mut last: Option<Vec<u8>> = None;
    for i in 0..src.num_blocks() {
        let b = src.read_block(i)?;
        let (k, d) = S::key_rows(&b);
        if let Some(r) = (0..k.rows()).find(|&r| !src.may_contain(k.user_key(d, r))) {
            return Err(Error::corruption(
                src.path(),
                src.block_offset(i),
                format!("row {r}'s user key is missing from the file's filter"),
            ));
        }
        if k.rows() > 0 {
            let first = k.user_key(d, 0);
            // Strictly: one key's versions share a block.
            if last.as_deref().is_some_and(|l| l >= first) {
                return Err(Error::corruption(
                    src.path(),
                    src.block_offset(i),
                    "a block does not start after the previous block's last key",
                ));
            }
            last = Some(k.user_key(d, k.rows() - 1).to_vec());
        }
    }
    Ok(())
}

/// Iterates a row source's rows as (internal key, value).
pub struct RowIter<S: RowSource> {
    src: Arc<S>,
    scratch: S::Scratch,
    /// `num_blocks()` when not positioned.
    block_index: usize,
    block: Option<Arc<S::Block>>,
    row: usize,
    key: Vec<u8>,
    value: Vec<u8>,
    error: Option<Error>,
}

impl<S: RowSource> RowIter<S> {
    /// An unpositioned iterator over `src`.
    pub fn new(src: Arc<S>) -> RowIter<S> {
        RowIter {
            scratch: src.scratch(),
            block_index: src.num_blocks(),
            src,
            block: None,
            row: 0,
            key: Vec::new(),
            value: Vec::new(),
            error: None,
        }
    }

    fn invalidate(&mut self) {
        self.block_index = self.src.num_blocks();
        self.block = None;
    }

    fn rows(&self) -> usize {
        self.block.as_ref().map_or(0, |b| S::key_rows(b).0.rows())
    }

    fn load(&mut self, i: usize) -> bool {
        if i >= self.src.num_blocks() {
            self.invalidate();
            return false;
        }
        match self.src.block(i) {
            Ok(b) => {
                self.block_index = i;
                self.block = Some(b);
                true
            }
            Err(e) => {
                self.error = Some(e);
                self.invalidate();
                false
            }
        }
    }

    /// Fills key and value for the current row.
    fn fill(&mut self) {
        let Some(b) = &self.block else { return };
        let (k, d) = S::key_rows(b);
        internal_key_into(k, d, self.row, &mut self.key);
        if !S::BORROWS_VALUES {
            self.src
                .value_into(b, self.row, &mut self.scratch, &mut self.value);
        }
    }

    /// Moves forward over exhausted blocks until a row or the end.
    fn settle_forward(&mut self) {
        while self.block.is_some() {
            if self.row < self.rows() {
                self.fill();
                return;
            }
            let next = self.block_index + 1;
            if !self.load(next) {
                return;
            }
            self.row = 0;
        }
    }

    /// Moves backward until a row or the start (`row` may be one before
    /// the current block's start, as `usize::MAX`). Blocks are never empty
    /// (the formats' indexes refuse them).
    fn settle_backward(&mut self) {
        while self.block.is_some() {
            if self.row < self.rows() {
                self.fill();
                return;
            }
            if self.block_index == 0 {
                self.invalidate();
                return;
            }
            let prev = self.block_index - 1;
            if !self.load(prev) {
                return;
            }
            self.row = self.rows().wrapping_sub(1);
        }
    }
}

impl<S: RowSource> InternalIterator for RowIter<S> {
    fn valid(&self) -> bool {
        self.block.is_some() && self.error.is_none()
    }

    fn seek_to_first(&mut self) {
        self.error = None;
        if self.load(0) {
            self.row = 0;
            self.settle_forward();
        }
    }

    fn seek_to_last(&mut self) {
        self.error = None;
        let n = self.src.num_blocks();
        if n > 0 && self.load(n - 1) {
            self.row = self.rows().wrapping_sub(1);
            self.settle_backward();
        } else {
            self.invalidate();
        }
    }

    fn seek(&mut self, target: &[u8]) {
        self.error = None;
        let ukey = user_key(target);
        let i = self.src.block_for(ukey);
        if self.load(i) {
            let t = trailer(target);
            self.row = self.block.as_ref().map_or(0, |b| {
                let (k, d) = S::key_rows(b);
                k.lower_bound(d, ukey, t)
            });
            self.settle_forward();
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if self.error.is_some() {
            return;
        }
        if !self.valid() {
            self.seek_to_last();
        } else if crate::key::compare_internal(&self.key, target) == std::cmp::Ordering::Greater {
            self.prev();
        }
    }

    fn next(&mut self) {
        if self.block.is_none() {
            return;
        }
        self.row += 1;
        self.settle_forward();
    }

    fn prev(&mut self) {
        if self.block.is_none() {
            return;
        }
        self.row = self.row.wrapping_sub(1);
        self.settle_backward();
    }

    fn key(&self) -> &[u8] {
        &self.key
    }

    fn value(&self) -> &[u8] {
        match &self.block {
            Some(b) if S::BORROWS_VALUES => S::value_ref(b, self.row),
            _ => &self.value,
        }
    }

    fn value_code(&self) -> Option<CodedValue<'_>> {
        S::value_code(self.block.as_ref()?, self.row)
    }

    fn column_codes(&self, f: &mut dyn FnMut(usize, CodedValue<'_>)) {
        if let Some(b) = self.block.as_ref() {
            S::column_codes(b, self.row, f)
        }
    }

    fn may_contain_user_key(&self, user_key: &[u8]) -> bool {
        self.src.may_contain(user_key)
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}
