//! Iterating a table file: an index-block iterator over a data-block
//! iterator, loading each data block through the cache as it is reached.

use std::cmp::Ordering;
use std::sync::Arc;

use super::block::{Block, BlockIter};
use super::reader::TableReader;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::compare_internal;

/// Iterates a table's entries in internal-key order.
///
/// Holds the reader, an index-block iterator and the current data-block
/// iterator; key buffers are reused, so stepping does not allocate (a block
/// read does). The first error is sticky: the iterator stays invalid and
/// [`InternalIterator::status`] returns it.
pub struct TableIter {
    table: Arc<TableReader>,
    index: BlockIter,
    data: BlockIter,
    /// Offset of the block loaded in `data`.
    data_offset: Option<u64>,
    /// Whether blocks read from the file go into the block cache (see
    /// [`TableReader::iter_without_filling_cache`]).
    fill_cache: bool,
    err: Option<Error>,
}

impl TableIter {
    pub(super) fn new(table: Arc<TableReader>, index: BlockIter, fill_cache: bool) -> TableIter {
        TableIter {
            index,
            data: Block::empty().iter(),
            data_offset: None,
            fill_cache,
            table,
            err: None,
        }
    }

    /// The table iterated.
    pub fn table(&self) -> &Arc<TableReader> {
        &self.table
    }

    fn set_err(&mut self, e: Error) {
        self.data.invalidate();
        if self.err.is_none() {
            self.err = Some(e);
        }
    }

    /// Loads the block the index iterator points at into `data`
    /// (unpositioned). False on error.
    fn load_block(&mut self) -> bool {
        let h = match self.table.decode_data_handle(self.index.value()) {
            Ok(h) => h,
            Err(e) => {
                self.set_err(e);
                return false;
            }
        };
        if self.data_offset == Some(h.offset) {
            return true;
        }
        match self.table.read_data_block(h, self.fill_cache) {
            Ok(b) => {
                self.data.reset(b);
                self.data_offset = Some(h.offset);
                true
            }
            Err(e) => {
                self.data_offset = None;
                self.set_err(e);
                false
            }
        }
    }

    /// After the data iterator ran off its block: reports its error, or
    /// returns true when the index iterator is still valid.
    fn data_exhausted_ok(&mut self) -> bool {
        if let Some(r) = self.data.error() {
            let e = self
                .table
                .corruption(self.data_offset.unwrap_or(0), r.to_string());
            self.set_err(e);
            return false;
        }
        self.index_ok()
    }

    /// True when the index iterator is valid; records its error otherwise.
    fn index_ok(&mut self) -> bool {
        if self.index.valid() {
            return true;
        }
        if let Some(r) = self.index.error() {
            let e = self.table.index_error(r);
            self.set_err(e);
        }
        self.data.invalidate();
        false
    }

    fn skip_forward(&mut self) {
        while self.err.is_none() && !self.data.valid() {
            if !self.data_exhausted_ok() {
                return;
            }
            self.index.next();
            if !self.index_ok() || !self.load_block() {
                return;
            }
            self.data.seek_to_first();
        }
    }

    fn skip_backward(&mut self) {
        while self.err.is_none() && !self.data.valid() {
            if !self.data_exhausted_ok() {
                return;
            }
            self.index.prev();
            if !self.index_ok() || !self.load_block() {
                return;
            }
            self.data.seek_to_last();
        }
    }
}

impl InternalIterator for TableIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.data.valid()
    }

    fn seek_to_first(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.index.seek_to_first();
        if !self.index_ok() || !self.load_block() {
            return;
        }
        self.data.seek_to_first();
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.index.seek_to_last();
        if !self.index_ok() || !self.load_block() {
            return;
        }
        self.data.seek_to_last();
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        if self.err.is_some() {
            return;
        }
        self.table.seek_index(&mut self.index, target);
        if !self.index_ok() || !self.load_block() {
            return;
        }
        self.data.seek(target);
        self.skip_forward();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if self.err.is_some() {
            return;
        }
        if !self.valid() {
            self.seek_to_last();
            return;
        }
        while self.valid() && compare_internal(self.data.key(), target) == Ordering::Greater {
            self.prev();
        }
    }

    fn next(&mut self) {
        debug_assert!(self.valid());
        if !self.valid() {
            return;
        }
        self.data.next();
        self.skip_forward();
    }

    fn prev(&mut self) {
        debug_assert!(self.valid());
        if !self.valid() {
            return;
        }
        self.data.prev();
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.data.key()
    }

    fn value(&self) -> &[u8] {
        self.data.value()
    }

    fn may_contain_user_key(&self, user_key: &[u8]) -> bool {
        self.table.may_contain(user_key)
    }

    fn visit_forward(&mut self, f: &mut dyn FnMut(&[u8], &[u8]) -> bool) {
        while self.valid() {
            // The block's entries without going back through the trait.
            loop {
                if !f(self.data.key(), self.data.value()) {
                    return;
                }
                self.data.next();
                if !self.data.valid() {
                    break;
                }
            }
            self.skip_forward();
        }
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}
