//! The user-facing iterator: turns the merged stream of internal entries into
//! the user keys and values visible at one snapshot, in either direction.
//!
//! Forward invariant: positioned on user key `K`, the inner iterator is at or
//! before the first entry of the next user key. Reverse invariant: the inner
//! iterator is at the last entry of a user key smaller than `K` (or invalid).

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::{
    KIND_SEEK, MAX_SEQNO, SeqNo, ValueKind, make_internal_key, make_seek_key, parse_internal_key,
};
use crate::layout::Layout;
use crate::merge::MergeOperator;
use crate::stitch::Stitched;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Direction {
    Forward,
    Reverse,
}

/// Called when an iterator is dropped, with its merged iterator (for the
/// seeks it issued, those it was spared, and what a pure forward scan
/// observed), the scan's upper bound, and whether it ended without error
/// (only then may its observation be trusted).
pub(crate) type ScanReport = Box<dyn FnOnce(&MergingIterator, Option<&[u8]>, bool) + Send>;

/// Iterates user keys and values at a snapshot. Create one with
/// [`crate::Keyspace::iter`].
pub struct DbIter {
    inner: MergingIterator,
    snapshot: SeqNo,
    merge: Option<Arc<dyn MergeOperator>>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    direction: Direction,
    valid: bool,
    key: Vec<u8>,
    value: Vec<u8>,
    /// The value is the inner iterator's current one (a forward step landed
    /// on a put), not a copy in `value`: stepping copies no values.
    value_pinned: bool,
    /// The user key a forward step skips the older versions of; its buffer
    /// is swapped with `key`'s, so stepping does not allocate.
    skip_key: Vec<u8>,
    error: Option<Error>,
    /// Whether `Iterator::next` has handed out the error (it ends there).
    error_yielded: bool,
    /// Reused buffers for merge operands, so stepping does not allocate.
    operands: Vec<Vec<u8>>,
    base: Option<Vec<u8>>,
    on_drop: Option<ScanReport>,
    /// Set for a keyspace whose layout splits values into column groups:
    /// every call goes to the lineage iterators it joins, and the fields
    /// above go unused.
    stitched: Option<Box<Stitched>>,
    // Keeps memtables and table files alive for the iterator's life.
    _pin: Box<dyn Send + Sync>,
}

impl Drop for DbIter {
    fn drop(&mut self) {
        if let Some(report) = self.on_drop.take() {
            let healthy = self.error.is_none() && self.inner.status().is_ok();
            report(&self.inner, self.upper.as_deref(), healthy);
        }
    }
}

impl DbIter {
    pub(crate) fn new(
        inner: MergingIterator,
        snapshot: SeqNo,
        merge: Option<Arc<dyn MergeOperator>>,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        pin: Box<dyn Send + Sync>,
        on_drop: Option<ScanReport>,
    ) -> Self {
        DbIter {
            inner,
            snapshot,
            merge,
            lower,
            upper,
            direction: Direction::Forward,
            valid: false,
            key: Vec::new(),
            value: Vec::new(),
            value_pinned: false,
            skip_key: Vec::new(),
            error: None,
            error_yielded: false,
            operands: Vec::new(),
            base: None,
            on_drop,
            stitched: None,
            _pin: pin,
        }
    }

    /// An iterator that joins one resolving iterator per lineage of
    /// `layout` (see [`crate::stitch`]).
    pub(crate) fn stitched(parts: Vec<DbIter>, layout: Arc<dyn Layout>) -> Self {
        let mut it = DbIter::new(
            MergingIterator::new(Vec::new()),
            SeqNo::ZERO,
            None,
            None,
            None,
            Box::new(()),
            None,
        );
        it.stitched = Some(Box::new(Stitched::new(parts, layout)));
        it
    }

    /// True when positioned on an entry.
    pub fn valid(&self) -> bool {
        if let Some(st) = &self.stitched {
            return st.valid();
        }
        self.valid
    }

    /// The current key. REQUIRES: `valid()`.
    pub fn key(&self) -> &[u8] {
        if let Some(st) = &self.stitched {
            return st.key();
        }
        &self.key
    }

    /// The current value. REQUIRES: `valid()`.
    pub fn value(&self) -> &[u8] {
        if let Some(st) = &self.stitched {
            return st.value();
        }
        if self.value_pinned {
            self.inner.value()
        } else {
            &self.value
        }
    }

    /// The first error met; check it when `valid()` turns false.
    pub fn status(&self) -> Result<()> {
        if let Some(st) = &self.stitched {
            return st.status();
        }
        match &self.error {
            Some(e) => Err(e.duplicate()),
            None => self.inner.status(),
        }
    }

    fn fail(&mut self, e: Error) {
        self.valid = false;
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    fn past_upper(&self, ukey: &[u8]) -> bool {
        self.upper.as_deref().is_some_and(|u| ukey >= u)
    }

    fn before_lower(&self, ukey: &[u8]) -> bool {
        self.lower.as_deref().is_some_and(|l| ukey < l)
    }

    /// Positions on the first key.
    pub fn seek_to_first(&mut self) {
        if let Some(st) = self.stitched.as_deref_mut() {
            return st.seek_to_first();
        }
        match self.lower.clone() {
            Some(l) => self.seek(&l),
            None => {
                self.direction = Direction::Forward;
                self.inner.seek_to_first();
                self.find_next_user_entry(false);
            }
        }
    }

    /// Positions on the last key.
    pub fn seek_to_last(&mut self) {
        if let Some(st) = self.stitched.as_deref_mut() {
            return st.seek_to_last();
        }
        self.direction = Direction::Reverse;
        match self.upper.clone() {
            Some(u) => self
                .inner
                .seek_for_prev(&make_internal_key_for_seek_before(&u)),
            None => self.inner.seek_to_last(),
        }
        self.find_prev_user_entry();
    }

    /// Positions on the first key `>= target`.
    pub fn seek(&mut self, target: &[u8]) {
        if let Some(st) = self.stitched.as_deref_mut() {
            return st.seek(target);
        }
        let target = match &self.lower {
            Some(l) if target < l.as_slice() => l.clone(),
            _ => target.to_vec(),
        };
        self.direction = Direction::Forward;
        // Seek to the newest version of the target, not the newest visible
        // one: the few newer versions are skipped below, and a scan that
        // starts before every version of its first key observes a range
        // the level filter can trust.
        self.inner.seek(&make_seek_key(&target, MAX_SEQNO));
        self.find_next_user_entry(false);
    }

    /// Positions on the last key `<= target`.
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        if let Some(st) = self.stitched.as_deref_mut() {
            return st.seek_for_prev(target);
        }
        self.direction = Direction::Reverse;
        if self.past_upper(target) {
            self.seek_to_last();
            return;
        }
        // (target, seqno 0, kind 0) is the largest internal key of `target`.
        self.inner
            .seek_for_prev(&make_internal_key(target, SeqNo::ZERO, ValueKind::Delete));
        self.find_prev_user_entry();
    }

    /// Moves to the next key. REQUIRES: `valid()`.
    pub fn next(&mut self) {
        if let Some(st) = self.stitched.as_deref_mut() {
            return st.next();
        }
        if !self.valid {
            return;
        }
        if self.direction == Direction::Reverse {
            // The inner iterator sits before the current key; go to its first
            // entry, then skip all of them.
            self.inner.seek(&make_seek_key(&self.key, MAX_SEQNO));
            self.direction = Direction::Forward;
        }
        std::mem::swap(&mut self.key, &mut self.skip_key);
        self.key.clear();
        self.find_next_user_entry(true);
        if !self.valid && self.key.is_empty() {
            self.key.extend_from_slice(&self.skip_key);
        }
    }

    /// Moves to the previous key. REQUIRES: `valid()`.
    pub fn prev(&mut self) {
        if let Some(st) = self.stitched.as_deref_mut() {
            return st.prev();
        }
        if !self.valid {
            return;
        }
        if self.direction == Direction::Forward {
            // The inner iterator is somewhere at or after the current key;
            // move to the last entry before its first version.
            let mut k = Vec::with_capacity(self.key.len() + 8);
            crate::key::append_internal_key(&mut k, &self.key, MAX_SEQNO, KIND_SEEK);
            self.inner.seek_for_prev(&k);
            self.direction = Direction::Reverse;
        }
        self.find_prev_user_entry();
    }

    /// Forward: skips invisible versions and deleted keys and lands on the next visible user key. With `skipping`, older
    /// versions of `skip_key` are passed over first.
    fn find_next_user_entry(&mut self, mut skipping: bool) {
        self.valid = false;
        self.value_pinned = false;
        while self.inner.valid() {
            let Some(p) = parse_internal_key(self.inner.key()) else {
                self.fail(malformed_key(self.inner.key()));
                return;
            };
            // The bound first: every entry after one past it is past it too,
            // so versions too new for the snapshot there are not stepped
            // over one by one (a bulk append past the bound after the
            // iterator was made).
            if self.past_upper(p.user_key) {
                return;
            }
            if p.seqno > self.snapshot || (skipping && self.skip_key == p.user_key) {
                self.inner.next();
                continue;
            }
            match p.kind {
                ValueKind::Delete => {
                    self.skip_key.clear();
                    self.skip_key.extend_from_slice(p.user_key);
                    skipping = true;
                    self.inner.next();
                }
                ValueKind::Put => {
                    self.key.clear();
                    self.key.extend_from_slice(p.user_key);
                    self.value_pinned = true;
                    self.valid = true;
                    return;
                }
                ValueKind::Merge => {
                    self.key.clear();
                    self.key.extend_from_slice(p.user_key);
                    if self.collect_merge_forward() || self.error.is_some() {
                        // Positioned, or the merge failed: a scan goes no
                        // further than a key it cannot resolve.
                        return;
                    }
                    self.skip_key.clear();
                    self.skip_key.extend_from_slice(&self.key);
                    skipping = true;
                }
            }
        }
        if let Err(e) = self.inner.status() {
            self.fail(e);
        }
    }

    /// Gathers the operands of `self.key` from the inner position onwards
    /// (newest first, down to the put or tombstone they apply to) and
    /// resolves them. Returns true when positioned on a value.
    fn collect_merge_forward(&mut self) -> bool {
        let mut versions = KeyVersions::take(&mut self.operands, &mut self.base);
        let ok = gather(
            &mut self.inner,
            &self.key,
            self.snapshot,
            Direction::Forward,
            &mut versions,
        );
        versions.give_back(&mut self.operands, &mut self.base);
        if let Err(e) = ok {
            self.fail(e);
            return false;
        }
        self.resolve_merge()
    }

    fn resolve_merge(&mut self) -> bool {
        let Some(op) = self.merge.clone() else {
            self.fail(Error::InvalidArgument(
                "key has merge operands but the keyspace has no merge operator".into(),
            ));
            return false;
        };
        let ops: Vec<&[u8]> = self.operands.iter().map(Vec::as_slice).collect();
        match op.merge(&self.key, self.base.as_deref(), &ops) {
            Ok(v) => {
                self.value = v;
                self.valid = true;
                true
            }
            Err(e) => {
                self.fail(Error::InvalidArgument(format!(
                    "merge operator {} failed: {e}",
                    op.name()
                )));
                false
            }
        }
    }

    /// Reverse: the inner iterator is at the last entry of some user key;
    /// gathers that key's visible versions (oldest first as we walk back),
    /// resolves them, and repeats until a key has a value.
    fn find_prev_user_entry(&mut self) {
        self.valid = false;
        self.value_pinned = false;
        loop {
            if !self.inner.valid() {
                if let Err(e) = self.inner.status() {
                    self.fail(e);
                }
                return;
            }
            let Some(p) = parse_internal_key(self.inner.key()) else {
                self.fail(malformed_key(self.inner.key()));
                return;
            };
            if self.before_lower(p.user_key) {
                return;
            }
            self.key.clear();
            self.key.extend_from_slice(p.user_key);
            let mut versions = KeyVersions::take(&mut self.operands, &mut self.base);
            let ok = gather(
                &mut self.inner,
                &self.key,
                self.snapshot,
                Direction::Reverse,
                &mut versions,
            );
            let has_value = versions.has_value;
            versions.give_back(&mut self.operands, &mut self.base);
            if let Err(e) = ok {
                self.fail(e);
                return;
            }
            if self.past_upper(&self.key) {
                continue;
            }
            if !self.operands.is_empty() {
                // Operands were gathered oldest first, as the operator wants.
                if self.resolve_merge() {
                    return;
                }
                if self.error.is_some() {
                    return;
                }
            } else if has_value {
                self.value = self.base.take().unwrap_or_default();
                self.valid = true;
                return;
            }
        }
    }
}

fn malformed_key(k: &[u8]) -> Error {
    Error::corruption(
        "iterator",
        0,
        format!("malformed internal key of {} bytes", k.len()),
    )
}

/// The visible versions of one user key, reduced as they are gathered:
/// the merge operands (oldest first once gathered) and the put they apply
/// to. Both scan directions gather into it, each in its own order.
struct KeyVersions {
    operands: Vec<Vec<u8>>,
    base: Option<Vec<u8>>,
    /// The key has a value without operands (its newest version is a put).
    has_value: bool,
}

impl KeyVersions {
    /// Starts with the iterator's reused buffers, emptied.
    fn take(operands: &mut Vec<Vec<u8>>, base: &mut Option<Vec<u8>>) -> Self {
        let mut operands = std::mem::take(operands);
        operands.clear();
        base.take();
        KeyVersions {
            operands,
            base: None,
            has_value: false,
        }
    }

    /// Returns the buffers for reuse.
    fn give_back(self, operands: &mut Vec<Vec<u8>>, base: &mut Option<Vec<u8>>) {
        *operands = self.operands;
        *base = self.base;
    }

    /// Forward: a version older than those seen. Returns whether older
    /// versions still matter (a put or tombstone ends the key).
    fn add_older(&mut self, kind: ValueKind, value: &[u8]) -> bool {
        match kind {
            ValueKind::Merge => {
                self.operands.push(value.to_vec());
                true
            }
            ValueKind::Put => {
                self.base = Some(value.to_vec());
                self.has_value = self.operands.is_empty();
                false
            }
            ValueKind::Delete => false,
        }
    }

    /// Reverse: a version newer than those seen. A put or tombstone
    /// replaces everything before it; operands pile on top.
    fn add_newer(&mut self, kind: ValueKind, value: &[u8]) {
        match kind {
            ValueKind::Put => {
                self.base = Some(value.to_vec());
                self.operands.clear();
                self.has_value = true;
            }
            ValueKind::Delete => {
                self.base = None;
                self.operands.clear();
                self.has_value = false;
            }
            ValueKind::Merge => {
                self.operands.push(value.to_vec());
                self.has_value = false;
            }
        }
    }
}

/// Walks `inner` over the entries of user key `key` from its position
/// (forward with `next`, stopping past the put or tombstone that ends the
/// key; in reverse with `prev`, to the key's first entry), handing the
/// versions visible at `snapshot` to `versions`. Leaves the operands
/// oldest first.
fn gather(
    inner: &mut MergingIterator,
    key: &[u8],
    snapshot: SeqNo,
    direction: Direction,
    versions: &mut KeyVersions,
) -> Result<()> {
    while inner.valid() {
        let Some(p) = parse_internal_key(inner.key()) else {
            return Err(malformed_key(inner.key()));
        };
        if p.user_key != key {
            break;
        }
        let visible = p.seqno <= snapshot;
        match direction {
            Direction::Forward => {
                let more = !visible || versions.add_older(p.kind, inner.value());
                inner.next();
                if !more {
                    break;
                }
            }
            Direction::Reverse => {
                if visible {
                    versions.add_newer(p.kind, inner.value());
                }
                inner.prev();
            }
        }
    }
    inner.status()?;
    if direction == Direction::Forward {
        // Gathered newest first; the operator wants oldest first.
        versions.operands.reverse();
    }
    Ok(())
}

/// The internal key just before every version of `ukey`, so that a
/// `seek_for_prev` to it lands on the last entry of a smaller user key.
fn make_internal_key_for_seek_before(ukey: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(ukey.len() + 8);
    crate::key::append_internal_key(&mut k, ukey, MAX_SEQNO, KIND_SEEK);
    k
}

impl Iterator for DbIter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    /// Yields the entry at the current position and advances. Call
    /// `seek`/`seek_to_first` first.
    fn next(&mut self) -> Option<Self::Item> {
        if !self.valid() {
            // An error ends the iteration: it is yielded once, then `None`
            // (a loop that skips errors would otherwise never end).
            if self.error_yielded {
                return None;
            }
            let e = self.status().err()?;
            self.error_yielded = true;
            return Some(Err(e));
        }
        let item = (self.key().to_vec(), self.value().to_vec());
        DbIter::next(self);
        Some(Ok(item))
    }
}
