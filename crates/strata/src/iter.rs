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
    /// The first error met, if any.
    fn status(&self) -> Result<()>;
}

use std::cmp::Ordering;

use crate::key::compare_internal;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Direction {
    Forward,
    Reverse,
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
pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
    direction: Direction,
}

impl MergingIterator {
    /// Merges `children` (newest source first).
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> Self {
        MergingIterator {
            children,
            current: None,
            direction: Direction::Forward,
        }
    }

    /// Number of children.
    pub fn num_children(&self) -> usize {
        self.children.len()
    }

    fn find_smallest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if !c.valid() {
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
    }

    fn find_largest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, c) in self.children.iter().enumerate() {
            if !c.valid() {
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
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) {
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    fn seek_to_last(&mut self) {
        for c in &mut self.children {
            c.seek_to_last();
        }
        self.direction = Direction::Reverse;
        self.find_largest();
    }

    fn seek(&mut self, target: &[u8]) {
        for c in &mut self.children {
            c.seek(target);
        }
        self.direction = Direction::Forward;
        self.find_smallest();
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        for c in &mut self.children {
            c.seek_for_prev(target);
        }
        self.direction = Direction::Reverse;
        self.find_largest();
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
                if c.valid() && compare_internal(c.key(), &key) == Ordering::Equal {
                    c.next();
                }
            }
            self.direction = Direction::Forward;
        }
        self.children[cur].next();
        self.find_smallest();
    }

    fn prev(&mut self) {
        let Some(cur) = self.current else { return };
        if self.direction != Direction::Reverse {
            // Every other child must be positioned before key().
            let key = self.children[cur].key().to_vec();
            for (i, c) in self.children.iter_mut().enumerate() {
                if i == cur {
                    continue;
                }
                c.seek_for_prev(&key);
                if c.valid() && compare_internal(c.key(), &key) == Ordering::Equal {
                    c.prev();
                }
            }
            self.direction = Direction::Reverse;
        }
        self.children[cur].prev();
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
        self.pos = if self.entries.is_empty() { None } else { Some(0) };
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
        self.pos = self.pos.and_then(|p| (p + 1 < self.entries.len()).then_some(p + 1));
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
            .map(|(k, s)| (make_internal_key(k, *s, ValueKind::Put), s.to_le_bytes().to_vec()))
            .collect();
        v.sort_by(|a, b| compare_internal(&a.0, &b.0));
        Box::new(VecIterator::new(Arc::new(v)))
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
