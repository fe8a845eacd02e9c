//! The iterator protocol every source of entries speaks (memtables, table
//! files, levels, merges), and the merging iterator that combines them.

use crate::error::Result;

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

use std::cmp::Ordering;

use crate::ids::Level;
use crate::key::{
    KIND_SEEK, MAX_SEQNO, SeqNo, ValueKind, append_internal_key, compare_internal, trailer,
    user_key,
};
use crate::level_filter::{LevelMask, level_bit};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Direction {
    Forward,
    Reverse,
}

/// Decides, at the first seek, which levels a scan may leave unread: given
/// the start user key, returns the levels to read and the exclusive end of
/// the user-key range, from the start key on, that answer holds for.
pub type Reducer = Box<dyn FnMut(&[u8]) -> Option<(LevelMask, Option<Vec<u8>>)> + Send>;

/// What a forward scan observed: it read `[lo, hi)` and these levels
/// supplied at least one entry there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanObservation {
    pub lo: Vec<u8>,
    pub hi: Option<Vec<u8>>,
    pub levels: LevelMask,
}

/// Merges several sorted children into one sorted stream.
///
/// Children are ordered newest source first; internal keys are unique across
/// sources (each carries its sequence number), so ties do not arise in a
/// consistent state; if they do, the earlier child wins.
///
/// The current child is found with a linear scan over children: the number
/// of sources (memtables, level-0 files, one per deeper level) is small, and
/// a scan beats a heap's bookkeeping at that size.
///
/// Children that stand for a level `>= 1` may be left *dormant* by a
/// [`Reducer`]: they are not seeked while the scan stays inside the range
/// the reducer vouched for, and are woken (seeked past the range) as soon as
/// it leaves it, or at any operation other than a forward seek or `next`.
pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    /// The level each child reads, for children that are a level `>= 1`.
    levels: Vec<Option<Level>>,
    current: Option<usize>,
    direction: Direction,
    dormant: Vec<bool>,
    any_dormant: bool,
    /// Children (by index, below 64) the reducer left dormant whose seek
    /// would have read nothing ([`InternalIterator::seek_reads`]).
    free_skips: u64,
    /// Exclusive user-key end of the range in which dormant children hold
    /// nothing (`None`: unbounded).
    reduced_hi: Option<Vec<u8>>,
    reducer: Option<Reducer>,
    /// Start of the forward scan being observed; `None` once the iterator
    /// did anything but one seek followed by `next`s.
    observed_lo: Option<Vec<u8>>,
    observing: bool,
    emitted: LevelMask,
    child_seeks: u64,
    /// With a snapshot: seek point-first ([`MergingIterator::set_point_first`]).
    point_first: Option<SeqNo>,
    /// Children a point-first seek passed over; while dormant, they wait to
    /// be seeked to `point_target`, not to the reduced range's end.
    deferred: Vec<bool>,
    any_deferred: bool,
    point_target: Vec<u8>,
    /// Whether a seek ran point-first.
    point_first_ran: bool,
}

impl MergingIterator {
    /// Merges `children` (newest source first).
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        let n = children.len();
        Self::with_levels(children, vec![None; n])
    }

    /// Merges `children`, where `levels[i]` names the level `>= 1` child `i`
    /// reads (`None` for memtables and level-0 files, which are always read).
    pub fn with_levels(
        children: Vec<Box<dyn InternalIterator>>,
        levels: Vec<Option<Level>>,
    ) -> Self {
        debug_assert_eq!(children.len(), levels.len());
        let n = children.len();
        MergingIterator {
            children,
            levels,
            current: None,
            direction: Direction::Forward,
            dormant: vec![false; n],
            any_dormant: false,
            free_skips: 0,
            reduced_hi: None,
            reducer: None,
            observed_lo: None,
            observing: true,
            emitted: 0,
            child_seeks: 0,
            point_first: None,
            deferred: vec![false; n],
            any_deferred: false,
            point_target: Vec::new(),
            point_first_ran: false,
        }
    }

    /// Makes forward seeks point-first for reads at `snapshot`: children
    /// are seeked newest first, and once one lands on a put of the target's
    /// user key visible at `snapshot`, the older children (which can hold
    /// only versions that put shadows there) and the children whose point
    /// filter rules the key out are left dormant until the scan leaves the
    /// key. A scan that reads one entry from an existing key then seeks
    /// one or two sources instead of all of them; a longer scan seeks the
    /// rest when it steps past the first key (at the same cost as seeking
    /// them at the start, plus one filter probe each).
    pub fn set_point_first(&mut self, snapshot: SeqNo) {
        self.point_first = Some(snapshot);
    }

    /// Installs the reducer consulted at the first seek.
    pub fn set_reducer(&mut self, reducer: Reducer) {
        self.reducer = Some(reducer);
    }

    /// The child the current entry comes from.
    pub fn current_child(&self) -> Option<usize> {
        self.current
    }

    /// Number of children.
    pub fn num_children(&self) -> usize {
        self.children.len()
    }

    /// Children the reducer left dormant that are still unread: the seeks
    /// the level filter saved this scan.
    pub fn filter_skips(&self) -> u64 {
        self.dormant
            .iter()
            .zip(&self.deferred)
            .filter(|(d, p)| **d && !**p)
            .count() as u64
    }

    /// Of [`Self::filter_skips`], those that spared a read: the children
    /// whose seek would have read something had the scan not skipped them.
    pub fn filter_saved_reads(&self) -> u64 {
        self.dormant
            .iter()
            .zip(&self.deferred)
            .enumerate()
            .filter(|(i, (d, p))| **d && !**p && (*i >= 64 || self.free_skips & (1 << i) == 0))
            .count() as u64
    }

    /// `None` if no seek ran point-first; else whether the last one saved
    /// seeks: children it deferred are still unread.
    pub fn point_first_saved(&self) -> Option<bool> {
        self.point_first_ran.then_some(self.any_deferred)
    }

    /// Seeks issued to children so far (each positioning call counts one).
    pub fn child_seeks(&self) -> u64 {
        self.child_seeks
    }

    /// The levels a pure forward scan (one seek, then `next`s) drew any
    /// entry from in the range it covered (see [`Self::observation`]);
    /// computed without allocating, for scans that only count them.
    pub fn observed_levels(&self, upper: Option<&[u8]>) -> Option<LevelMask> {
        if !self.observing || self.observed_lo.is_none() {
            return None;
        }
        let mut levels = self.emitted;
        // A child a point-first seek left unread may hold older versions of
        // the start key: the observation cannot vouch for its level.
        for (i, l) in self.levels.iter().enumerate() {
            if let Some(l) = l
                && self.deferred[i]
            {
                levels |= level_bit(*l);
            }
        }
        // The range covers the current key too: every positioned child sits
        // at its first entry at or after it, so the levels holding `k` are
        // the emitted ones plus those positioned at another version of `k`;
        // a dormant child holds nothing before the end of the range that
        // made it dormant, which lies past `k`.
        if let Some(k) = self.current_in_range(upper) {
            for (i, c) in self.children.iter().enumerate() {
                if let Some(l) = self.levels[i]
                    && !self.dormant[i]
                    && c.valid()
                    && user_key(c.key()) == k
                {
                    levels |= level_bit(l);
                }
            }
        }
        Some(levels)
    }

    /// What a pure forward scan (one seek, then `next`s) observed; `upper`
    /// is the scan's exclusive upper bound, which caps the range.
    pub fn observation(&self, upper: Option<&[u8]>) -> Option<ScanObservation> {
        let levels = self.observed_levels(upper)?;
        let lo = self.observed_lo.clone()?;
        let hi = match self.current_in_range(upper) {
            // The smallest key after the current one (no greater than
            // `upper`).
            Some(k) => {
                let mut succ = Vec::with_capacity(k.len() + 1);
                succ.extend_from_slice(k);
                succ.push(0);
                Some(succ)
            }
            None => upper.map(<[u8]>::to_vec),
        };
        Some(ScanObservation { lo, hi, levels })
    }

    /// The current user key, if below `upper`.
    fn current_in_range(&self, upper: Option<&[u8]>) -> Option<&[u8]> {
        self.current
            .map(|i| user_key(self.children[i].key()))
            .filter(|k| upper.is_none_or(|u| *k < u))
    }

    fn stop_observing(&mut self) {
        self.observing = false;
    }

    /// Wakes every dormant child without positioning it (the caller is
    /// about to position all children).
    fn wake_unpositioned(&mut self) {
        if self.any_dormant {
            self.dormant.iter_mut().for_each(|d| *d = false);
            self.deferred.iter_mut().for_each(|d| *d = false);
            self.any_dormant = false;
            self.any_deferred = false;
            self.free_skips = 0;
        }
    }

    /// Forward: wakes the children a point-first seek deferred once the
    /// merged position left the start key (seeking them to it), and the
    /// children the level filter left dormant once it left the reduced
    /// range (seeking them to the range's end); merges them in.
    fn wake_if_outside(&mut self) {
        if !self.any_dormant {
            return;
        }
        let mut woke = false;
        if self.any_deferred {
            let at_start = self
                .current
                .is_some_and(|i| user_key(self.children[i].key()) == user_key(&self.point_target));
            if !at_start {
                for i in 0..self.children.len() {
                    if std::mem::take(&mut self.deferred[i]) {
                        self.children[i].seek(&self.point_target);
                        self.child_seeks += 1;
                        self.dormant[i] = false;
                    }
                }
                self.any_deferred = false;
                self.find_smallest();
                woke = true;
            }
        }
        // Dormant children left now are the level filter's; with no end to
        // the range they hold nothing from the start key on.
        if let Some(hi) = self.reduced_hi.as_deref()
            && !self.any_deferred
            && self.dormant.iter().any(|d| *d)
        {
            let inside = self
                .current
                .is_some_and(|i| user_key(self.children[i].key()) < hi);
            if !inside {
                let mut target = Vec::with_capacity(hi.len() + 8);
                append_internal_key(&mut target, hi, MAX_SEQNO, KIND_SEEK);
                for i in 0..self.children.len() {
                    if std::mem::take(&mut self.dormant[i]) {
                        self.children[i].seek(&target);
                        self.child_seeks += 1;
                    }
                }
                self.find_smallest();
                woke = true;
            }
        }
        if woke {
            self.any_dormant = self.dormant.iter().any(|d| *d);
            self.stop_if_a_child_failed();
        }
    }

    /// The seek of [`MergingIterator::set_point_first`]. Children already
    /// dormant (the level filter vouched for them) are left alone.
    fn seek_point_first(&mut self, target: &[u8], snapshot: SeqNo) {
        self.point_first_ran = true;
        let ukey = user_key(target);
        let mut found = false;
        for i in 0..self.children.len() {
            if self.dormant[i] {
                continue;
            }
            if found || !self.children[i].may_contain_user_key(ukey) {
                self.deferred[i] = true;
                continue;
            }
            let c = &mut self.children[i];
            c.seek(target);
            self.child_seeks += 1;
            found = c.valid() && {
                let k = c.key();
                user_key(k) == ukey
                    && trailer(k) & 0xff == ValueKind::Put as u64
                    && trailer(k) >> 8 <= snapshot.get()
            };
        }
        if !found {
            // No visible put at the key: the merge needs every child there.
            for i in 0..self.children.len() {
                if std::mem::take(&mut self.deferred[i]) {
                    self.children[i].seek(target);
                    self.child_seeks += 1;
                }
            }
            return;
        }
        for i in 0..self.children.len() {
            if self.deferred[i] {
                self.dormant[i] = true;
                self.any_dormant = true;
                self.any_deferred = true;
            }
        }
        // Woken when the scan leaves the key, and seeked to the target
        // itself: the older versions of the key they may hold sort after
        // every version merged so far, so the merged stream is the same as
        // if they had been seeked at the start.
        self.point_target.clear();
        self.point_target.extend_from_slice(target);
    }

    fn mark_emitted(&mut self) {
        if let Some(i) = self.current
            && let Some(l) = self.levels[i]
        {
            self.emitted |= level_bit(l);
        }
    }

    /// Whether child `i` stopped on an error (invalid, its status an
    /// error). The merge then stops too, invalid with that status: going on
    /// without the child would show the older versions its entries hide
    /// (a deleted key's put from a lower level).
    fn child_failed(&self, i: usize) -> bool {
        !self.children[i].valid() && self.children[i].status().is_err()
    }

    /// After children were positioned: stops the merge if one failed.
    fn stop_if_a_child_failed(&mut self) {
        if (0..self.children.len()).any(|i| !self.dormant[i] && self.child_failed(i)) {
            self.current = None;
        }
    }

    fn find_smallest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if self.dormant[i] || !c.valid() {
                continue;
            }
            best = match best {
                Some(b) if compare_internal(c.key(), self.children[b].key()) != Ordering::Less => {
                    Some(b)
                }
                _ => Some(i),
            };
        }
        self.current = best;
        if let Some(b) = best {
            self.children[b].settle();
            if !self.children[b].valid() {
                // Settling read the entry and failed.
                self.current = None;
                return;
            }
        }
        self.mark_emitted();
    }

    fn find_largest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if self.dormant[i] || !c.valid() {
                continue;
            }
            best = match best {
                Some(b)
                    if compare_internal(c.key(), self.children[b].key()) != Ordering::Greater =>
                {
                    Some(b)
                }
                _ => Some(i),
            };
        }
        self.current = best;
        if let Some(b) = best {
            self.children[b].settle();
            if !self.children[b].valid() {
                self.current = None;
            }
        }
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        self.stop_observing();
        self.wake_unpositioned();
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.child_seeks += self.children.len() as u64;
        self.direction = Direction::Forward;
        self.find_smallest();
        self.stop_if_a_child_failed();
    }

    fn seek_to_last(&mut self) {
        self.stop_observing();
        self.wake_unpositioned();
        for c in &mut self.children {
            c.seek_to_last();
        }
        self.child_seeks += self.children.len() as u64;
        self.direction = Direction::Reverse;
        self.find_largest();
        self.stop_if_a_child_failed();
    }

    fn seek(&mut self, target: &[u8]) {
        let ukey = user_key(target);
        if self.observed_lo.is_none() && self.observing && crate::key::seqno(target) == MAX_SEQNO {
            self.observed_lo = Some(ukey.to_vec());
        } else {
            self.stop_observing();
        }
        self.wake_unpositioned();
        if let Some(mut reducer) = self.reducer.take()
            && let Some((keep, hi)) = reducer(ukey)
        {
            for i in 0..self.children.len() {
                if let Some(l) = self.levels[i]
                    && keep & level_bit(l) == 0
                {
                    self.dormant[i] = true;
                    self.any_dormant = true;
                    if i < 64 && !self.children[i].seek_reads(target) {
                        self.free_skips |= 1 << i;
                    }
                }
            }
            self.reduced_hi = hi;
        }
        match self.point_first {
            Some(snapshot) if crate::key::seqno(target) == MAX_SEQNO => {
                self.seek_point_first(target, snapshot)
            }
            _ => {
                for i in 0..self.children.len() {
                    if !self.dormant[i] {
                        self.children[i].seek(target);
                        self.child_seeks += 1;
                    }
                }
            }
        }
        self.direction = Direction::Forward;
        self.find_smallest();
        self.wake_if_outside();
        self.stop_if_a_child_failed();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.stop_observing();
        self.wake_unpositioned();
        for c in &mut self.children {
            c.seek_for_prev(target);
        }
        self.child_seeks += self.children.len() as u64;
        self.direction = Direction::Reverse;
        self.find_largest();
        self.stop_if_a_child_failed();
    }

    fn next(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Forward {
            // Every other child must be positioned after key().
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek(&key);
                self.child_seeks += 1;
                if c.valid() && compare_internal(c.key(), &key) == Ordering::Equal {
                    c.next();
                }
            }
            self.direction = Direction::Forward;
            self.stop_if_a_child_failed();
            if self.current.is_none() {
                return;
            }
        }
        self.children[cur].next();
        if self.child_failed(cur) {
            self.current = None;
            return;
        }
        self.find_smallest();
        self.wake_if_outside();
    }

    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        self.stop_observing();
        if self.any_dormant {
            // Only forward scans run reduced; dormant children get
            // positioned by the direction switch below.
            self.wake_unpositioned();
            self.direction = Direction::Forward;
        }
        if self.direction != Direction::Reverse {
            // Every other child must be positioned before key().
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek_for_prev(&key);
                self.child_seeks += 1;
                if c.valid() && compare_internal(c.key(), &key) == Ordering::Equal {
                    c.prev();
                }
            }
            self.direction = Direction::Reverse;
            self.stop_if_a_child_failed();
            if self.current.is_none() {
                return;
            }
        }
        self.children[cur].prev();
        if self.child_failed(cur) {
            self.current = None;
            return;
        }
        self.find_largest();
    }

    fn key(&self) -> &[u8] {
        match self.current {
            Some(i) => self.children[i].key(),
            None => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match self.current {
            Some(i) => self.children[i].value(),
            None => &[],
        }
    }

    fn value_code(&self) -> Option<crate::dict::CodedValue<'_>> {
        self.children[self.current?].value_code()
    }
    fn column_codes(&self, f: &mut dyn FnMut(usize, crate::dict::CodedValue<'_>)) {
        if let Some(c) = self.current {
            self.children[c].column_codes(f)
        }
    }

    fn status(&self) -> Result<()> {
        for c in &self.children {
            c.status()?;
        }
        Ok(())
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, make_internal_key};
    use std::sync::Arc;

    fn source(keys: &[(&[u8], u64)]) -> Box<dyn InternalIterator> {
        let mut v: Vec<(Vec<u8>, Vec<u8>)> = keys
            .iter()
            .map(|(k, s)| {
                (
                    make_internal_key(k, *s, ValueKind::Put),
                    s.to_le_bytes().to_vec(),
                )
            })
            .collect();
        v.sort_by(|a, b| compare_internal(&a.0, &b.0));
        Box::new(VecIterator::new(Arc::new(v)))
    }

    /// A source that reads its first entry, then fails (invalid, with an
    /// error status) when it moves again or is positioned afresh after
    /// `reads` positionings.
    struct FailsAfter {
        inner: VecIterator,
        reads: usize,
        failed: bool,
    }

    impl FailsAfter {
        fn moved(&mut self) {
            if self.reads == 0 {
                self.failed = true;
            } else {
                self.reads -= 1;
            }
        }
    }

    impl InternalIterator for FailsAfter {
        fn valid(&self) -> bool {
            !self.failed && self.inner.valid()
        }
        fn seek_to_first(&mut self) {
            self.inner.seek_to_first();
            self.moved();
        }
        fn seek_to_last(&mut self) {
            self.inner.seek_to_last();
            self.moved();
        }
        fn seek(&mut self, t: &[u8]) {
            self.inner.seek(t);
            self.moved();
        }
        fn seek_for_prev(&mut self, t: &[u8]) {
            self.inner.seek_for_prev(t);
            self.moved();
        }
        fn next(&mut self) {
            self.inner.next();
            self.moved();
        }
        fn prev(&mut self) {
            self.inner.prev();
            self.moved();
        }
        fn key(&self) -> &[u8] {
            self.inner.key()
        }
        fn value(&self) -> &[u8] {
            self.inner.value()
        }
        fn status(&self) -> Result<()> {
            if self.failed {
                Err(crate::error::Error::InvalidArgument("a read failed".into()))
            } else {
                Ok(())
            }
        }
    }

    fn fails_after(reads: usize, keys: &[(&[u8], u64, ValueKind)]) -> Box<dyn InternalIterator> {
        let mut v: Vec<(Vec<u8>, Vec<u8>)> = keys
            .iter()
            .map(|(k, s, kind)| (make_internal_key(k, *s, *kind), Vec::new()))
            .collect();
        v.sort_by(|a, b| compare_internal(&a.0, &b.0));
        Box::new(FailsAfter {
            inner: VecIterator::new(Arc::new(v)),
            reads,
            failed: false,
        })
    }

    /// A child that fails stops the merge with its error: going on without
    /// it would show what its entries hide (here an older put of a key it
    /// deletes).
    #[test]
    fn a_failing_child_stops_the_merge_with_its_error() {
        // Failing when positioned: a seek lands on nothing but the error.
        let mut m = MergingIterator::new(vec![
            fails_after(0, &[(b"k", 9, ValueKind::Delete)]),
            source(&[(b"k", 5)]),
        ]);
        m.seek(&seek_key(b"k"));
        assert!(!m.valid() && m.status().is_err());
        m.seek_to_last();
        assert!(!m.valid() && m.status().is_err());
        // Failing when stepped past its first entry, either way.
        let newest = || {
            fails_after(
                1,
                &[(b"a", 9, ValueKind::Put), (b"k", 8, ValueKind::Delete)],
            )
        };
        let mut m = MergingIterator::new(vec![newest(), source(&[(b"c", 5), (b"k", 5)])]);
        m.seek_to_first();
        assert_eq!(user_key(m.key()), b"a");
        m.next();
        assert!(
            !m.valid() && m.status().is_err(),
            "went on to {:?}",
            m.key()
        );
        let mut m = MergingIterator::new(vec![newest(), source(&[(b"c", 5), (b"k", 5)])]);
        m.seek_to_first();
        m.next();
        m.prev();
        assert!(!m.valid() && m.status().is_err());
    }

    fn seek_key(user: &[u8]) -> Vec<u8> {
        let mut t = Vec::new();
        append_internal_key(&mut t, user, MAX_SEQNO, KIND_SEEK);
        t
    }

    #[test]
    fn an_observation_covers_the_current_key_and_its_older_versions() {
        // Memtable, level 1 (an older version of "c"), level 2.
        let mem = source(&[(b"x", 9)]);
        let l1 = source(&[(b"c", 5), (b"m", 6)]);
        let l2 = source(&[(b"a", 1), (b"c", 2), (b"d", 3)]);
        let mut m = MergingIterator::with_levels(
            vec![mem, l1, l2],
            vec![None, Some(Level(1)), Some(Level(2))],
        );
        m.seek(&seek_key(b"b"));
        assert_eq!(user_key(m.key()), b"c");
        let o = m.observation(None).expect("a pure forward scan");
        assert_eq!(o.lo, b"b");
        assert_eq!(o.hi.as_deref(), Some(&b"c\0"[..]), "[b, c] inclusive");
        assert_eq!(o.levels, 0b110, "level 2 holds the older version of c");
        // One step on: the current key is "c" again (level 2's version), then
        // "d"; "d" is only in level 2.
        m.next();
        m.next();
        assert_eq!(user_key(m.key()), b"d");
        let o = m.observation(None).expect("still forward");
        assert_eq!(o.hi.as_deref(), Some(&b"d\0"[..]));
        assert_eq!(o.levels, 0b110);
        // An upper bound at or before the current key caps the range and
        // leaves the current key's levels out.
        let o = m.observation(Some(b"d")).expect("forward");
        assert_eq!(o.hi.as_deref(), Some(&b"d"[..]));
        let mut only2 = MergingIterator::with_levels(
            vec![source(&[(b"m", 6)]), source(&[(b"a", 1), (b"d", 3)])],
            vec![Some(Level(1)), Some(Level(2))],
        );
        only2.seek(&seek_key(b"b"));
        let o = only2.observation(None).expect("forward");
        assert_eq!(o.levels, 0b100, "level 1 holds nothing in [b, d]");
        // Any other movement ends the observation.
        only2.prev();
        assert!(only2.observation(None).is_none());
    }

    /// A source whose point filter is exact (knows its user keys).
    struct Filtered(Box<dyn InternalIterator>, Vec<Vec<u8>>);

    impl InternalIterator for Filtered {
        fn valid(&self) -> bool {
            self.0.valid()
        }
        fn seek_to_first(&mut self) {
            self.0.seek_to_first()
        }
        fn seek_to_last(&mut self) {
            self.0.seek_to_last()
        }
        fn seek(&mut self, t: &[u8]) {
            self.0.seek(t)
        }
        fn seek_for_prev(&mut self, t: &[u8]) {
            self.0.seek_for_prev(t)
        }
        fn next(&mut self) {
            self.0.next()
        }
        fn prev(&mut self) {
            self.0.prev()
        }
        fn key(&self) -> &[u8] {
            self.0.key()
        }
        fn value(&self) -> &[u8] {
            self.0.value()
        }
        fn may_contain_user_key(&self, k: &[u8]) -> bool {
            self.1.iter().any(|x| x.as_slice() == k)
        }
        fn status(&self) -> Result<()> {
            self.0.status()
        }
    }

    fn filtered(keys: &[(&[u8], u64)], kind: ValueKind) -> Box<dyn InternalIterator> {
        let mut v: Vec<(Vec<u8>, Vec<u8>)> = keys
            .iter()
            .map(|(k, s)| (make_internal_key(k, *s, kind), s.to_le_bytes().to_vec()))
            .collect();
        v.sort_by(|a, b| compare_internal(&a.0, &b.0));
        let users = keys.iter().map(|(k, _)| k.to_vec()).collect();
        Box::new(Filtered(Box::new(VecIterator::new(Arc::new(v))), users))
    }

    /// Newest first: a memtable (no filter), two filtered sources.
    fn three_sources(newest_kind: ValueKind) -> MergingIterator {
        MergingIterator::new(vec![
            source(&[(b"a", 30), (b"q", 31)]),
            filtered(&[(b"c", 20), (b"m", 21), (b"k", 40)], newest_kind),
            filtered(&[(b"c", 5), (b"d", 6), (b"m", 7)], ValueKind::Put),
        ])
    }

    fn user_keys_from(m: &mut MergingIterator, target: &[u8]) -> Vec<(Vec<u8>, u64)> {
        m.seek(&seek_key(target));
        let mut out = Vec::new();
        while m.valid() {
            out.push((user_key(m.key()).to_vec(), crate::key::seqno(m.key()).get()));
            m.next();
        }
        out
    }

    #[test]
    fn point_first_seeks_only_up_to_the_visible_put_and_wakes_the_rest_after_it() {
        let mut full = three_sources(ValueKind::Put);
        let expected = user_keys_from(&mut full, b"c");
        let mut m = three_sources(ValueKind::Put);
        m.set_point_first(SeqNo(100));
        m.seek(&seek_key(b"c"));
        assert_eq!(
            m.child_seeks(),
            2,
            "the memtable and the source holding c; the older one waits"
        );
        assert_eq!(
            (user_key(m.key()), crate::key::seqno(m.key())),
            (&b"c"[..], SeqNo(20))
        );
        let mut m = three_sources(ValueKind::Put);
        m.set_point_first(SeqNo(100));
        // The older version of c, shadowed by the put the seek stopped at,
        // is merged in once the scan steps on.
        assert_eq!(user_keys_from(&mut m, b"c"), expected);
        assert_eq!(m.child_seeks(), 3, "the older source seeked once, after c");
    }

    #[test]
    fn point_first_skips_sources_whose_filter_rules_the_key_out() {
        // "d" is only in the oldest source: the middle one is not seeked
        // (its filter says no), yet its "k" still shows up after "d".
        let mut full = three_sources(ValueKind::Put);
        let expected = user_keys_from(&mut full, b"d");
        let mut m = three_sources(ValueKind::Put);
        m.set_point_first(SeqNo(100));
        m.seek(&seek_key(b"d"));
        assert_eq!(m.child_seeks(), 2, "memtable and oldest");
        let mut m = three_sources(ValueKind::Put);
        m.set_point_first(SeqNo(100));
        assert_eq!(user_keys_from(&mut m, b"d"), expected);
    }

    #[test]
    fn point_first_reads_every_source_without_a_visible_put() {
        for (kind, snapshot) in [
            (ValueKind::Delete, 100),
            (ValueKind::Merge, 100),
            (ValueKind::Put, 10),
        ] {
            let mut full = three_sources(kind);
            let expected = user_keys_from(&mut full, b"c");
            let mut m = three_sources(kind);
            m.set_point_first(SeqNo(snapshot));
            m.seek(&seek_key(b"c"));
            assert_eq!(m.child_seeks(), 3, "{kind:?} at {snapshot}");
            let mut m = three_sources(kind);
            m.set_point_first(SeqNo(snapshot));
            assert_eq!(user_keys_from(&mut m, b"c"), expected, "{kind:?}");
        }
        // A key no source holds: every source is seeked.
        let mut m = three_sources(ValueKind::Put);
        m.set_point_first(SeqNo(100));
        m.seek(&seek_key(b"e"));
        assert_eq!(m.child_seeks(), 3);
        assert_eq!(user_key(m.key()), b"k");
    }

    #[test]
    fn point_first_never_lets_an_observation_vouch_for_an_unread_level() {
        let mut m = MergingIterator::with_levels(
            vec![
                source(&[(b"z", 9)]),
                filtered(&[(b"c", 20)], ValueKind::Put),
                filtered(&[(b"c", 5)], ValueKind::Put),
            ],
            vec![None, Some(Level(1)), Some(Level(2))],
        );
        m.set_point_first(SeqNo(100));
        m.seek(&seek_key(b"c"));
        assert_eq!(m.child_seeks(), 2);
        let o = m.observation(None).expect("a forward scan");
        assert_eq!(o.levels, 0b110, "level 2 was not read, so it counts");
    }

    #[test]
    fn merging_iterator_switches_direction_anywhere() {
        let a = source(&[(b"a", 1), (b"c", 3), (b"e", 5)]);
        let b = source(&[(b"b", 2), (b"c", 9), (b"d", 4)]);
        let mut m = MergingIterator::new(vec![a, b]);
        let mut all = Vec::new();
        m.seek_to_first();
        while m.valid() {
            all.push(m.key().to_vec());
            m.next();
        }
        assert_eq!(all.len(), 6);
        for w in all.windows(2) {
            assert_eq!(compare_internal(&w[0], &w[1]), Ordering::Less);
        }
        // From every position, one step forward then back returns to it.
        for (i, k) in all.iter().enumerate() {
            m.seek(k);
            assert_eq!(m.key(), &k[..]);
            m.prev();
            if i == 0 {
                assert!(!m.valid());
                continue;
            }
            assert_eq!(m.key(), &all[i - 1][..]);
            m.next();
            assert_eq!(m.key(), &k[..]);
        }
        m.seek_for_prev(&all[3]);
        assert_eq!(m.key(), &all[3][..]);
        m.seek_to_last();
        assert_eq!(m.key(), &all[5][..]);
    }
}
