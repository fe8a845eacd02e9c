//! What one read of a table sees, and how a row's columns are resolved
//! from the entries that carry them.
//!
//! A row's columns may sit at different levels: a partial update leaves
//! its columns high in the tree while the rest of the row has moved down,
//! and each column group moves down on its own. A read therefore resolves
//! each column separately ([`Resolver`]): its value is the one of the
//! newest entry that carries it, and the row exists if the newest row event
//! (insert or delete) is an insert.
//!
//! Within one lineage of groups (a column's group on each level) newer
//! entries sit higher, so a point read walks down level by level and stops
//! once every wanted column and the row event are found. While a layout
//! change is in progress a column may be held by two groups of one level,
//! or by a group the layout no longer has, and level order no longer says
//! which copy is newer; the [`ReadPlan`] marks such columns *ambiguous*,
//! and reads of them gather every level and order by sequence number.

use std::sync::Arc;

use super::piece::{Cell, PieceSchema};
use super::table::LayoutState;
use crate::db::SuperVersion;
use crate::ids::Level;
use crate::key::{SeqNo, ValueKind};
use crate::table_format::GroupId;

/// Per version of the table's keyspace: the groups present on each level
/// and the columns whose lineage is ambiguous.
pub(crate) struct ReadPlan {
    pub version_no: u64,
    pub state: Arc<LayoutState>,
    /// `levels[l]`: the groups with files on level `l` (>= 1), with their
    /// columns.
    pub levels: Vec<Vec<(GroupId, Vec<usize>)>>,
    /// Per value column: read by sequence number across all levels.
    pub ambiguous: Vec<bool>,
}

impl ReadPlan {
    /// Computes the plan of `sv` under `state`.
    pub(crate) fn new(sv: &SuperVersion, state: Arc<LayoutState>) -> ReadPlan {
        let n = state.shape.pieces.len();
        let mut ambiguous = vec![false; n];
        let mut levels = vec![Vec::new(); sv.version.num_levels()];
        for (l, groups) in levels.iter_mut().enumerate().skip(1) {
            let level = Level::from_index(l);
            let mut holders = vec![0u32; n];
            for (gid, _) in sv.version.runs(level) {
                let cols = state
                    .shape
                    .group_columns(gid)
                    .map(<[usize]>::to_vec)
                    .unwrap_or_default();
                let retired = !state.has(l, gid);
                for &c in &cols {
                    holders[c] += 1;
                    if retired {
                        ambiguous[c] = true;
                    }
                }
                groups.push((gid, cols));
            }
            for (c, h) in holders.iter().enumerate() {
                if *h > 1 {
                    ambiguous[c] = true;
                }
            }
        }
        ReadPlan {
            version_no: sv.version_no,
            state,
            levels,
            ambiguous,
        }
    }
}

/// A borrowed or owned cell value kept across source moves.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum OwnedCell {
    Null,
    Int32(i32),
    Int64(i64),
    Float64(f64),
    Bool(bool),
    Bytes(Vec<u8>),
}

impl OwnedCell {
    /// Overwrites `self` with `cell`, reusing a byte buffer.
    pub(crate) fn set(&mut self, cell: Cell<'_>) {
        *self = match cell {
            Cell::Null => OwnedCell::Null,
            Cell::Int32(x) => OwnedCell::Int32(x),
            Cell::Int64(x) => OwnedCell::Int64(x),
            Cell::Float64(x) => OwnedCell::Float64(x),
            Cell::Bool(b) => OwnedCell::Bool(b),
            Cell::Bytes(b) => {
                if let OwnedCell::Bytes(buf) = self {
                    buf.clear();
                    buf.extend_from_slice(b);
                    return;
                }
                OwnedCell::Bytes(b.to_vec())
            }
        };
    }

    /// The cell borrowed.
    pub(crate) fn as_cell(&self) -> Cell<'_> {
        match self {
            OwnedCell::Null => Cell::Null,
            OwnedCell::Int32(x) => Cell::Int32(*x),
            OwnedCell::Int64(x) => Cell::Int64(*x),
            OwnedCell::Float64(x) => Cell::Float64(*x),
            OwnedCell::Bool(b) => Cell::Bool(*b),
            OwnedCell::Bytes(b) => Cell::Bytes(b),
        }
    }
}

/// The row event that decides whether a row exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    Inserted(SeqNo),
    Deleted(SeqNo),
}

/// Resolves one row from its entries, offered newest first.
///
/// A delete is always a row event. An insert is one only if its entry
/// carries a column the read resolves (a wanted column, or for a read of
/// no value column the first one, whose lineage it probes): during a layout
/// change a group may receive an insert's piece without any of its own
/// columns, and such a piece must not speak for columns whose lineage
/// already dropped that insert under a later delete.
pub(crate) struct Resolver {
    /// The wanted value columns.
    want: Vec<usize>,
    /// The columns whose carriers decide the row's existence.
    event_cols: Vec<usize>,
    /// Per value column: resolved.
    done: Vec<bool>,
    pub values: Vec<OwnedCell>,
    remaining: usize,
    pub event: Option<Event>,
}

impl Resolver {
    /// A resolver for the value columns `want` of a table with `n` value
    /// columns.
    pub(crate) fn new(n: usize, want: &[usize]) -> Resolver {
        let mut want = want.to_vec();
        want.sort_unstable();
        want.dedup();
        let event_cols = if want.is_empty() {
            (0..n.min(1)).collect()
        } else {
            want.clone()
        };
        Resolver {
            remaining: want.len(),
            want,
            event_cols,
            done: vec![false; n],
            values: vec![OwnedCell::Null; n],
            event: None,
        }
    }

    /// Starts a new row.
    pub(crate) fn reset(&mut self) {
        for &v in &self.want {
            self.done[v] = false;
        }
        self.remaining = self.want.len();
        self.event = None;
    }

    /// Whether nothing older can change the answer.
    pub(crate) fn settled(&self) -> bool {
        match self.event {
            Some(Event::Deleted(_)) => true,
            Some(Event::Inserted(_)) => self.remaining == 0,
            None => false,
        }
    }

    /// Whether value column `v` still needs a value.
    pub(crate) fn needs(&self, v: usize) -> bool {
        !self.done[v] && self.want.binary_search(&v).is_ok()
    }

    /// Offers an entry (newest first): `cell(v)` gives its value of column
    /// `v` if it carries it.
    pub(crate) fn offer<'a>(
        &mut self,
        seq: SeqNo,
        kind: ValueKind,
        cell: &dyn Fn(usize) -> Option<Cell<'a>>,
    ) {
        if !self.admit(seq, kind, |events| {
            events.iter().any(|&v| cell(v).is_some())
        }) {
            return;
        }
        for k in 0..self.want.len() {
            let v = self.want[k];
            if !self.done[v]
                && let Some(c) = cell(v)
            {
                self.take(v, c);
            }
        }
    }

    /// [`Self::offer`] for an entry of a column-group block whose group
    /// holds value columns `cols` (ascending): `cell(i)` gives its value of
    /// the `i`-th of them, if it carries it. Only the group's columns are
    /// asked for (a point read of every column asked each group's block
    /// for all of them, most of which it does not hold).
    pub(crate) fn offer_group<'a>(
        &mut self,
        seq: SeqNo,
        kind: ValueKind,
        cols: &[usize],
        cell: &dyn Fn(usize) -> Option<Cell<'a>>,
    ) {
        let carries = |events: &[usize]| {
            cols.iter()
                .enumerate()
                .any(|(i, v)| events.binary_search(v).is_ok() && cell(i).is_some())
        };
        if !self.admit(seq, kind, carries) {
            return;
        }
        for (i, &v) in cols.iter().enumerate() {
            if self.needs(v)
                && let Some(c) = cell(i)
            {
                self.take(v, c);
            }
        }
    }

    /// The row event part of an offer: records a delete or an insert that
    /// decides the row (`carries_event(event columns)`: whether the entry
    /// carries one of them), and says whether the entry's values are still
    /// to be taken.
    fn admit(
        &mut self,
        seq: SeqNo,
        kind: ValueKind,
        carries_event: impl FnOnce(&[usize]) -> bool,
    ) -> bool {
        match self.event {
            Some(Event::Deleted(_)) => return false,
            // Older than the insert that decides the row: stale (the
            // insert's own pieces carry every column).
            Some(Event::Inserted(e)) if seq < e => return false,
            _ => {}
        }
        match kind {
            ValueKind::Delete => {
                if self.event.is_none() {
                    self.event = Some(Event::Deleted(seq));
                }
                return false;
            }
            ValueKind::Put if self.event.is_none() => {
                // A table with no value columns has nothing to carry: every
                // put is the whole row.
                if !self.event_cols.is_empty() && !carries_event(&self.event_cols) {
                    return false;
                }
                self.event = Some(Event::Inserted(seq));
            }
            _ => {}
        }
        self.remaining > 0
    }

    fn take(&mut self, v: usize, c: Cell<'_>) {
        self.values[v].set(c);
        self.done[v] = true;
        self.remaining -= 1;
    }

    /// Whether the row exists (after every entry was offered).
    pub(crate) fn exists(&self) -> bool {
        matches!(self.event, Some(Event::Inserted(_)))
    }

    /// Value column `v`'s value (null if never resolved).
    pub(crate) fn value(&self, v: usize) -> Cell<'_> {
        if self.done[v] {
            self.values[v].as_cell()
        } else {
            Cell::Null
        }
    }
}

/// Offers a row piece to a resolver.
pub(crate) fn offer_piece(
    r: &mut Resolver,
    schema: &PieceSchema,
    seq: SeqNo,
    kind: ValueKind,
    piece: &[u8],
) -> crate::error::Result<()> {
    if kind == ValueKind::Delete {
        r.offer(seq, kind, &|_| None);
        return Ok(());
    }
    let view = super::piece::PieceView::parse(schema, piece)?;
    r.offer(seq, kind, &|v| view.get(schema, v));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_resolve_from_their_newest_entry_and_the_row_from_its_newest_event() {
        let mut r = Resolver::new(3, &[0, 2]);
        // An update of column 0, then the insert below it.
        r.offer(SeqNo(9), ValueKind::Merge, &|v| {
            (v == 0).then_some(Cell::Int32(90))
        });
        assert!(!r.settled());
        r.offer(SeqNo(5), ValueKind::Put, &|v| Some(Cell::Int32(v as i32)));
        assert!(r.settled());
        assert!(r.exists());
        assert_eq!(r.value(0), Cell::Int32(90));
        assert_eq!(r.value(2), Cell::Int32(2));
        // Entries older than the insert are stale.
        r.reset();
        r.offer(SeqNo(5), ValueKind::Put, &|v| {
            (v == 0).then_some(Cell::Int32(1))
        });
        r.offer(SeqNo(3), ValueKind::Merge, &|_| Some(Cell::Int32(7)));
        assert!(r.exists());
        assert_eq!(r.value(2), Cell::Null);
        // A delete hides everything older; updates with no insert are no row.
        r.reset();
        r.offer(SeqNo(8), ValueKind::Merge, &|_| Some(Cell::Int32(1)));
        r.offer(SeqNo(7), ValueKind::Delete, &|_| None);
        r.offer(SeqNo(2), ValueKind::Put, &|_| Some(Cell::Int32(1)));
        assert!(!r.exists());
        r.reset();
        r.offer(SeqNo(8), ValueKind::Merge, &|_| Some(Cell::Int32(1)));
        assert!(!r.exists());
    }

    /// One entry of a column-group block: its group's columns, which of
    /// them the row carries, its kind and sequence number.
    #[derive(Debug, Clone)]
    struct GroupEntry {
        cols: Vec<usize>,
        carried: Vec<bool>,
        kind: ValueKind,
        seq: u64,
    }

    fn group_entry(n: usize) -> impl proptest::strategy::Strategy<Value = GroupEntry> {
        use proptest::prelude::*;
        (
            proptest::collection::btree_set(0..n, 1..=n),
            proptest::collection::vec(any::<bool>(), n),
            prop_oneof![
                Just(ValueKind::Put),
                Just(ValueKind::Merge),
                Just(ValueKind::Delete)
            ],
            0u64..20,
        )
            .prop_map(|(cols, carried, kind, seq)| GroupEntry {
                carried: carried[..cols.len()].to_vec(),
                cols: cols.into_iter().collect(),
                kind,
                seq,
            })
    }

    proptest::proptest! {
        /// Offering a group's entries by position resolves every row as
        /// offering them by column number does.
        #[test]
        fn group_offers_resolve_as_column_offers(
            want in proptest::collection::btree_set(0usize..6, 0..=6),
            mut entries in proptest::collection::vec(group_entry(6), 1..6),
        ) {
            entries.sort_by_key(|e| std::cmp::Reverse(e.seq));
            let want: Vec<usize> = want.into_iter().collect();
            let (mut by_column, mut by_group) = (Resolver::new(6, &want), Resolver::new(6, &want));
            let value = |e: &GroupEntry, i: usize| {
                e.carried[i].then(|| Cell::Int64((e.seq * 100 + e.cols[i] as u64) as i64))
            };
            for e in &entries {
                by_column.offer(SeqNo(e.seq), e.kind, &|v| {
                    e.cols.iter().position(|&c| c == v).and_then(|i| value(e, i))
                });
                by_group.offer_group(SeqNo(e.seq), e.kind, &e.cols, &|i| value(e, i));
                proptest::prop_assert_eq!(by_column.settled(), by_group.settled());
            }
            proptest::prop_assert_eq!(by_column.exists(), by_group.exists());
            proptest::prop_assert_eq!(by_column.event, by_group.event);
            for v in 0..6 {
                proptest::prop_assert_eq!(by_column.value(v), by_group.value(v), "column {}", v);
            }
        }
    }
}
