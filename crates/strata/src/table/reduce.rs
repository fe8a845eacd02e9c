//! Which versions of a row survive a flush or compaction.
//!
//! A table entry is a row event or a column update:
//! - a `Put` piece is an insert (the row exists from its sequence number on
//!   and holds the piece's values); in column-group files each group keeps
//!   its columns of it, so one insert may be several pieces with one
//!   sequence number;
//! - a `Merge` piece is a partial update: new values for its columns only;
//! - a `Delete` removes the row.
//!
//! Reads resolve each column on its own: its value is the newest entry that
//! carries it, provided the newest row event is a `Put` (see `get.rs`). This
//! reducer keeps exactly what that needs for every reader: within each
//! snapshot stripe it keeps the newest row event (the union of its pieces)
//! and, above it, for each column only the newest update. It never moves a
//! value to another sequence number, so the answer stays right even while a
//! layout change leaves a column in two groups of one level and level order
//! no longer says which copy is newer; updates are therefore not folded
//! into the row below them (an update folded into the insert under it would
//! take the insert's older sequence number).
//!
//! At the bottom of the tree, in the stripe every reader sees, a deleted
//! row and updates with no insert beneath them are dropped: they read as no
//! row.

use crate::error::Result;
use crate::key::ValueKind;
use crate::layout::{KeyVersion, ReduceContext, VersionReducer};
use crate::table::piece::{PieceEncoder, PieceSchema, PieceView};

/// The table layer's reducer for a table's value columns.
pub struct TableReducer {
    pieces: PieceSchema,
}

impl TableReducer {
    /// A reducer for pieces of `pieces`.
    pub fn new(pieces: PieceSchema) -> TableReducer {
        TableReducer { pieces }
    }
}

use crate::layout::EmitVersion as Emit;

impl VersionReducer for TableReducer {
    fn reduce(
        &self,
        _user_key: &[u8],
        versions: &[KeyVersion<'_>],
        ctx: &ReduceContext<'_>,
        emit: &mut Emit<'_>,
    ) -> Result<()> {
        // The common case: one version, nothing to combine.
        if let [v] = versions {
            let oldest = ctx.stripe(v.seqno) == 0;
            let gone = ctx.bottommost && oldest && v.kind != ValueKind::Put;
            return if gone {
                Ok(())
            } else {
                emit(v.seqno, v.kind, v.value)
            };
        }
        for (run, s) in ctx.stripes(versions) {
            self.reduce_stripe(&versions[run], ctx.bottommost && s == 0, emit)?;
        }
        Ok(())
    }
}

impl TableReducer {
    /// Reduces the versions of one stripe (newest first). `bottom`: nothing
    /// lies below and every reader sees this stripe.
    fn reduce_stripe(
        &self,
        vs: &[KeyVersion<'_>],
        bottom: bool,
        emit: &mut Emit<'_>,
    ) -> Result<()> {
        let event = vs.iter().position(|v| v.kind != ValueKind::Merge);
        let updates = &vs[..event.unwrap_or(vs.len())];
        let row_exists = event.is_some_and(|e| vs[e].kind == ValueKind::Put);
        if bottom && !row_exists {
            // A deleted row, or updates of a row that was never inserted.
            return Ok(());
        }
        if !updates.is_empty() {
            self.reduce_updates(updates, emit)?;
        }
        let Some(e) = event else { return Ok(()) };
        let ev = &vs[e];
        if ev.kind == ValueKind::Delete {
            return emit(ev.seqno, ValueKind::Delete, &[]);
        }
        // The insert: its pieces share its sequence number.
        let pieces = vs[e..]
            .iter()
            .take_while(|v| v.seqno == ev.seqno && v.kind == ValueKind::Put)
            .count();
        if pieces == 1 {
            return emit(ev.seqno, ValueKind::Put, ev.value);
        }
        let views = vs[e..e + pieces]
            .iter()
            .map(|u| PieceView::parse(&self.pieces, u.value))
            .collect::<Result<Vec<_>>>()?;
        let mut enc = PieceEncoder::new(&self.pieces);
        for v in 0..self.pieces.len() {
            if let Some(cell) = views.iter().find_map(|p| p.get(&self.pieces, v)) {
                enc.push(&self.pieces, v, cell);
            }
        }
        let mut out = Vec::new();
        enc.finish(&self.pieces, &mut out);
        emit(ev.seqno, ValueKind::Put, &out)
    }

    /// Emits the updates above a stripe's row event (newest first): for
    /// each column only its newest value; pieces of one update (same
    /// sequence number) are joined.
    fn reduce_updates(&self, updates: &[KeyVersion<'_>], emit: &mut Emit<'_>) -> Result<()> {
        let mut set = vec![false; self.pieces.len()];
        let mut enc = PieceEncoder::new(&self.pieces);
        let mut out = Vec::new();
        let mut j = 0;
        while j < updates.len() {
            let seq = updates[j].seqno;
            let k = j + updates[j..].iter().take_while(|v| v.seqno == seq).count();
            if k == j + 1 && set.iter().all(|s| !s) {
                // The newest update stands as written.
                let view = PieceView::parse(&self.pieces, updates[j].value)?;
                for (v, flag) in set.iter_mut().enumerate() {
                    *flag |= view.has(v);
                }
                emit(seq, ValueKind::Merge, updates[j].value)?;
            } else {
                enc.clear();
                let views = updates[j..k]
                    .iter()
                    .map(|u| PieceView::parse(&self.pieces, u.value))
                    .collect::<Result<Vec<_>>>()?;
                for (v, flag) in set.iter_mut().enumerate() {
                    if *flag {
                        continue;
                    }
                    if let Some(cell) = views.iter().find_map(|p| p.get(&self.pieces, v)) {
                        enc.push(&self.pieces, v, cell);
                        *flag = true;
                    }
                }
                if enc.count() > 0 {
                    out.clear();
                    enc.finish(&self.pieces, &mut out);
                    emit(seq, ValueKind::Merge, &out)?;
                }
            }
            j = k;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::SeqNo;
    use crate::table::piece::Cell;
    use crate::table::schema::ColumnType;

    fn schema() -> PieceSchema {
        PieceSchema::from_types(vec![ColumnType::Int32; 3])
    }

    fn piece(cols: &[(usize, i32)]) -> Vec<u8> {
        let s = schema();
        let mut e = PieceEncoder::new(&s);
        for &(v, x) in cols {
            e.push(&s, v, Cell::Int32(x));
        }
        let mut out = Vec::new();
        e.finish(&s, &mut out);
        out
    }

    type Out = (u64, ValueKind, Vec<(usize, i32)>);

    fn run(
        versions: &[(u64, ValueKind, Vec<u8>)],
        snapshots: &[SeqNo],
        bottommost: bool,
    ) -> Vec<Out> {
        let s = schema();
        let r = TableReducer::new(s.clone());
        let vs: Vec<KeyVersion<'_>> = versions
            .iter()
            .map(|(q, k, v)| KeyVersion {
                seqno: SeqNo(*q),
                kind: *k,
                value: v,
            })
            .collect();
        let mut out = Vec::new();
        r.reduce(
            b"k",
            &vs,
            &ReduceContext {
                snapshots,
                bottommost,
            },
            &mut |q, k, v| {
                let cols = if k == ValueKind::Delete {
                    Vec::new()
                } else {
                    let p = PieceView::parse(&s, v).expect("piece");
                    (0..3)
                        .filter_map(|c| match p.get(&s, c) {
                            Some(Cell::Int32(x)) => Some((c, x)),
                            _ => None,
                        })
                        .collect()
                };
                out.push((q.get(), k, cols));
                Ok(())
            },
        )
        .expect("reduce");
        out
    }

    use ValueKind::{Delete as D, Merge as M, Put as P};

    #[test]
    fn updates_keep_only_each_columns_newest_value_above_the_insert() {
        let out = run(
            &[
                (9, M, piece(&[(0, 90)])),
                (8, M, piece(&[(0, 80), (1, 81)])),
                (5, P, piece(&[(0, 1), (1, 2), (2, 3)])),
                (3, P, piece(&[(0, 7), (1, 7), (2, 7)])),
            ],
            &[],
            false,
        );
        assert_eq!(
            out,
            vec![
                (9, M, vec![(0, 90)]),
                (8, M, vec![(1, 81)]),
                (5, P, vec![(0, 1), (1, 2), (2, 3)]),
            ]
        );
    }

    #[test]
    fn pieces_of_one_insert_are_joined() {
        let out = run(
            &[
                (5, P, piece(&[(0, 1)])),
                (5, P, piece(&[(1, 2), (2, 3)])),
                (2, D, Vec::new()),
            ],
            &[],
            false,
        );
        assert_eq!(out, vec![(5, P, vec![(0, 1), (1, 2), (2, 3)])]);
    }

    #[test]
    fn at_the_bottom_deleted_rows_and_orphan_updates_vanish() {
        assert!(run(&[(9, M, piece(&[(0, 1)])), (4, D, Vec::new())], &[], true).is_empty());
        assert!(run(&[(9, M, piece(&[(0, 1)]))], &[], true).is_empty());
        assert!(run(&[(4, D, Vec::new())], &[], true).is_empty());
        // Not at the bottom: the tombstone must stay to hide older data.
        assert_eq!(run(&[(4, D, Vec::new())], &[], false), vec![(4, D, vec![])]);
    }

    #[test]
    fn snapshots_keep_what_they_see() {
        // A snapshot at 6 sees the insert at 5 and the update at 6, not 9.
        let out = run(
            &[
                (9, M, piece(&[(0, 90)])),
                (6, M, piece(&[(0, 60)])),
                (5, P, piece(&[(0, 1), (1, 2), (2, 3)])),
            ],
            &[SeqNo(6)],
            true,
        );
        assert_eq!(
            out,
            vec![
                (9, M, vec![(0, 90)]),
                (6, M, vec![(0, 60)]),
                (5, P, vec![(0, 1), (1, 2), (2, 3)])
            ]
        );
    }
}
