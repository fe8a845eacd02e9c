//! The iterator protocol every source of entries speaks (memtables, table
//! files, levels, merges): the [`InternalIterator`] trait, the
//! [`MergingIterator`] that combines sources (`merging.rs`) and a
//! [`VecIterator`] over sorted entries in memory.

mod merging;
#[cfg(test)]
mod tests;

pub use self::merging::{MergingIterator, Reducer, ScanObservation};

use std::cmp::Ordering;

use crate::error::Result;
use crate::key::compare_internal;

/// A positioned cursor over internal keys in [`crate::key::compare_internal`]
/// order.
///
/// After an I/O or corruption error the iterator becomes invalid and
/// [`InternalIterator::status`] returns the error; callers must check
/// `status()` when `valid()` turns false.
pub trait InternalIterator: Send {
    /// True when positioned on an entry.
    fn valid(&self) -> bool;
    /// Positions on the first entry.
    fn seek_to_first(&mut self);
    /// Positions on the last entry.
    fn seek_to_last(&mut self);
    /// Positions on the first entry whose internal key is `>= target`.
    fn seek(&mut self, target: &[u8]);
    /// Positions on the last entry whose internal key is `<= target`.
    fn seek_for_prev(&mut self, target: &[u8]);
    /// Moves to the next entry. REQUIRES: `valid()`.
    fn next(&mut self);
    /// Moves to the previous entry. REQUIRES: `valid()`.
    fn prev(&mut self);
    /// The current internal key. REQUIRES: `valid()`.
    fn key(&self) -> &[u8];
    /// The current value. REQUIRES: `valid()`.
    fn value(&self) -> &[u8];
    /// False only when the source certainly holds no entry with this user
    /// key (a point filter ruled it out, or no file's range holds it); the
    /// default, for sources without a filter, is true.
    fn may_contain_user_key(&self, _user_key: &[u8]) -> bool {
        true
    }
    /// The current value as a code into a file's dictionary, when the
    /// source stores it so (dictionary-encoded files): compaction then
    /// carries the code to its output instead of the value's bytes. The
    /// default, for sources of plain values, is `None`. REQUIRES: `valid()`.
    fn value_code(&self) -> Option<crate::dict::CodedValue<'_>> {
        None
    }
    /// Calls `f(v, code)` for each value column `v` the current entry's
    /// source stores as a code into a dictionary (string columns of
    /// column-group files), so that compaction can carry those codes. The
    /// default, for sources without, calls nothing. REQUIRES: `valid()`.
    fn column_codes(&self, f: &mut dyn FnMut(usize, crate::dict::CodedValue<'_>)) {
        let _ = f;
    }
    /// Makes `value()` readable. A source may position itself lazily
    /// (knowing its current key without reading the entry: a level whose
    /// next entry is a file's first, see `version::LevelIter::new_lazy`);
    /// whoever reads the value calls this first. `MergingIterator` does,
    /// on the child it makes current.
    fn settle(&mut self) {}
    /// Whether `seek(target)` would read anything (a block, a node). False
    /// when the source answers it from what it already holds: a lazy level
    /// whose target lies before a file or past its last one. A scan that
    /// skips such a source spares nothing; iterator reduction's gate counts
    /// only the skips that spare a read. The default, true, is safe.
    fn seek_reads(&self, _target: &[u8]) -> bool {
        true
    }
    /// Hands `f` the current entry (internal key, value) and each entry
    /// after it, moving past each one `f` accepts, until `f` returns false
    /// (the iterator then stays on that entry) or the entries end (then
    /// check [`InternalIterator::status`]). Settles before reading a
    /// value. The default steps through the trait's methods; sources that
    /// hold entries in blocks walk a whole block per call, which spares a
    /// scan that stages many entries the calls through the layers of
    /// iterators for each one.
    fn visit_forward(&mut self, f: &mut dyn FnMut(&[u8], &[u8]) -> bool) {
        while self.valid() {
            self.settle();
            if !self.valid() || !f(self.key(), self.value()) {
                return;
            }
            self.next();
        }
    }
    /// The first error met, if any.
    fn status(&self) -> Result<()>;
}

/// An iterator over an in-memory sorted vector of entries; used by tests and
/// by memtable representations that sort a copy.
pub struct VecIterator {
    entries: std::sync::Arc<Vec<(Vec<u8>, Vec<u8>)>>,
    pos: Option<usize>,
}

impl VecIterator {
    /// `entries` must be sorted by [`compare_internal`] on the keys.
    pub fn new(entries: std::sync::Arc<Vec<(Vec<u8>, Vec<u8>)>>) -> Self {
        VecIterator { entries, pos: None }
    }
}

impl InternalIterator for VecIterator {
    fn valid(&self) -> bool {
        self.pos.is_some()
    }
    fn seek_to_first(&mut self) {
        self.pos = if self.entries.is_empty() {
            None
        } else {
            Some(0)
        };
    }
    fn seek_to_last(&mut self) {
        self.pos = self.entries.len().checked_sub(1);
    }
    fn seek(&mut self, target: &[u8]) {
        let i = self
            .entries
            .partition_point(|(k, _)| compare_internal(k, target) == Ordering::Less);
        self.pos = (i < self.entries.len()).then_some(i);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let i = self
            .entries
            .partition_point(|(k, _)| compare_internal(k, target) != Ordering::Greater);
        self.pos = i.checked_sub(1);
    }
    fn next(&mut self) {
        self.pos = self
            .pos
            .and_then(|p| (p + 1 < self.entries.len()).then_some(p + 1));
    }
    fn prev(&mut self) {
        self.pos = self.pos.and_then(|p| p.checked_sub(1));
    }
    fn key(&self) -> &[u8] {
        self.pos.map_or(&[][..], |p| &self.entries[p].0)
    }
    fn value(&self) -> &[u8] {
        self.pos.map_or(&[][..], |p| &self.entries[p].1)
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}
