//! The merging iterator: several sorted sources, newest first, read as
//! one sorted stream, with levels a [`Reducer`] vouches for left unread.

use std::cmp::Ordering;

use super::InternalIterator;
use crate::error::Result;
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
