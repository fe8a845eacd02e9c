//! Joining column groups on scans: a keyspace whose layout splits values
//! into groups is scanned as one resolving iterator per lineage (see
//! [`crate::layout`]), and [`Stitched`] walks them in step, handing the
//! layout the parts each lineage has of the current key.

use std::sync::Arc;

use crate::db_iter::DbIter;
use crate::error::{Error, Result};
use crate::layout::Layout;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// Lineage iterators walked in step. Forward, every part is at or after
/// the current key; in reverse, at or before it.
pub(crate) struct Stitched {
    parts: Vec<DbIter>,
    layout: Arc<dyn Layout>,
    direction: Direction,
    valid: bool,
    key: Vec<u8>,
    value: Vec<u8>,
    error: Option<Error>,
}

impl Stitched {
    pub(crate) fn new(parts: Vec<DbIter>, layout: Arc<dyn Layout>) -> Self {
        Stitched {
            parts,
            layout,
            direction: Direction::Forward,
            valid: false,
            key: Vec::new(),
            value: Vec::new(),
            error: None,
        }
    }

    pub(crate) fn valid(&self) -> bool {
        self.valid
    }

    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }

    pub(crate) fn value(&self) -> &[u8] {
        &self.value
    }

    pub(crate) fn status(&self) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.duplicate());
        }
        self.parts.iter().try_for_each(|p| p.status())
    }

    pub(crate) fn seek_to_first(&mut self) {
        self.parts.iter_mut().for_each(DbIter::seek_to_first);
        self.settle(Direction::Forward);
    }

    pub(crate) fn seek_to_last(&mut self) {
        self.parts.iter_mut().for_each(DbIter::seek_to_last);
        self.settle(Direction::Reverse);
    }

    pub(crate) fn seek(&mut self, target: &[u8]) {
        self.parts.iter_mut().for_each(|p| p.seek(target));
        self.settle(Direction::Forward);
    }

    pub(crate) fn seek_for_prev(&mut self, target: &[u8]) {
        self.parts.iter_mut().for_each(|p| p.seek_for_prev(target));
        self.settle(Direction::Reverse);
    }

    pub(crate) fn next(&mut self) {
        if !self.valid {
            return;
        }
        let key = std::mem::take(&mut self.key);
        for p in &mut self.parts {
            if self.direction == Direction::Reverse {
                p.seek(&key);
            }
            if p.valid() && p.key() == key.as_slice() {
                p.next();
            }
        }
        self.settle(Direction::Forward);
    }

    pub(crate) fn prev(&mut self) {
        if !self.valid {
            return;
        }
        let key = std::mem::take(&mut self.key);
        for p in &mut self.parts {
            if self.direction == Direction::Forward {
                p.seek_for_prev(&key);
            }
            if p.valid() && p.key() == key.as_slice() {
                p.prev();
            }
        }
        self.settle(Direction::Reverse);
    }

    /// Lands on the nearest key in `direction` that some lineage has and
    /// the layout joins into a value, stepping past keys it joins into
    /// none.
    fn settle(&mut self, direction: Direction) {
        self.direction = direction;
        self.valid = false;
        loop {
            if let Err(e) = self.parts.iter().try_for_each(|p| p.status()) {
                self.error.get_or_insert(e);
                return;
            }
            let nearest = self.parts.iter().filter(|p| p.valid()).map(|p| p.key());
            let nearest = match direction {
                Direction::Forward => nearest.min(),
                Direction::Reverse => nearest.max(),
            };
            let Some(key) = nearest.map(<[u8]>::to_vec) else {
                return;
            };
            let parts: Vec<Option<&[u8]>> = self
                .parts
                .iter()
                .map(|p| (p.valid() && p.key() == key.as_slice()).then(|| p.value()))
                .collect();
            match self.layout.stitch(&key, &parts) {
                Ok(Some(value)) => {
                    self.key = key;
                    self.value = value;
                    self.valid = true;
                    return;
                }
                Ok(None) => {
                    for p in &mut self.parts {
                        if p.valid() && p.key() == key.as_slice() {
                            match direction {
                                Direction::Forward => p.next(),
                                Direction::Reverse => p.prev(),
                            }
                        }
                    }
                }
                Err(why) => {
                    self.error.get_or_insert(stitch_error(&*self.layout, &why));
                    return;
                }
            }
        }
    }
}

/// A layout's failure to join a key's parts, as the reader sees it.
pub(crate) fn stitch_error(layout: &dyn Layout, why: &str) -> Error {
    Error::InvalidArgument(format!(
        "layout {} could not join the column groups of a key: {why}",
        layout.name()
    ))
}
