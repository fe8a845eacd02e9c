//! Predicates evaluated over all of a window's rows at once.
//!
//! Each comparison reads its column straight from the blocks' typed
//! slices (as the batch gather does) and compares with the constant decoded
//! once; `AND`, `OR` and `NOT` combine the rows' answers in SQL's
//! three-valued logic (a comparison with a null is unknown, and a row is
//! kept only where the predicate is true). Predicates on key columns are
//! evaluated row by row by the scanner instead.

use std::cmp::Ordering;

use super::gather::views;
use super::window::Window;
use crate::table::predicate::{Bound, CmpOp, cell_cmp};
use crate::table::schema::{ColumnType, Schema};

/// Per row: known true, known false, or neither (unknown).
struct Truth {
    t: Vec<bool>,
    f: Vec<bool>,
}

/// Whether `p` reads only value columns the window holds.
pub(super) fn vectorizable(p: &Bound, schema: &Schema, slot_of: &[Option<usize>]) -> bool {
    let slot = |c: usize| {
        schema
            .value_number(c)
            .and_then(|v| slot_of.get(v).copied().flatten())
            .is_some()
    };
    match p {
        Bound::Cmp { column, .. } | Bound::IsNull(column, _) => slot(*column),
        Bound::And(ps) | Bound::Or(ps) => ps.iter().all(|p| vectorizable(p, schema, slot_of)),
        Bound::Not(p) => vectorizable(p, schema, slot_of),
    }
}

/// Sets `keep[i]` to whether the predicate is true of output row `i`.
/// REQUIRES: [`vectorizable`].
pub(super) fn evaluate(
    p: &Bound,
    w: &Window,
    schema: &Schema,
    slot_of: &[Option<usize>],
    keep: &mut Vec<bool>,
) {
    let truth = eval(p, w, schema, slot_of);
    keep.clear();
    keep.extend_from_slice(&truth.t);
}

fn slot(schema: &Schema, slot_of: &[Option<usize>], column: usize) -> usize {
    schema
        .value_number(column)
        .and_then(|v| slot_of.get(v).copied().flatten())
        .unwrap_or(0)
}

fn eval(p: &Bound, w: &Window, schema: &Schema, slot_of: &[Option<usize>]) -> Truth {
    let n = w.rows;
    match p {
        Bound::Cmp {
            column,
            ty,
            op,
            value,
        } => compare(w, slot(schema, slot_of, *column), *ty, *op, value),
        Bound::IsNull(column, want) => {
            let s = slot(schema, slot_of, *column);
            let t: Vec<bool> = (0..n)
                .map(|i| matches!(w.value(s, i), crate::table::piece::Cell::Null) == *want)
                .collect();
            let f = t.iter().map(|b| !b).collect();
            Truth { t, f }
        }
        Bound::And(ps) => {
            let mut acc = Truth {
                t: vec![true; n],
                f: vec![false; n],
            };
            for p in ps {
                let x = eval(p, w, schema, slot_of);
                for i in 0..n {
                    acc.t[i] &= x.t[i];
                    acc.f[i] |= x.f[i];
                }
            }
            acc
        }
        Bound::Or(ps) => {
            let mut acc = Truth {
                t: vec![false; n],
                f: vec![true; n],
            };
            for p in ps {
                let x = eval(p, w, schema, slot_of);
                for i in 0..n {
                    acc.t[i] |= x.t[i];
                    acc.f[i] &= x.f[i];
                }
            }
            acc
        }
        Bound::Not(p) => {
            let x = eval(p, w, schema, slot_of);
            Truth { t: x.f, f: x.t }
        }
    }
}

/// `column op value` for every row of the window.
fn compare(w: &Window, slot: usize, ty: ColumnType, op: CmpOp, value: &[u8]) -> Truth {
    let views = views(w, slot);
    let refs = &w.cols[slot];
    let mut t = Vec::with_capacity(refs.len());
    let mut f = Vec::with_capacity(refs.len());
    let mut push = |o: Option<Ordering>| match o {
        Some(o) => {
            let h = op.holds(o);
            t.push(h);
            f.push(!h);
        }
        None => {
            t.push(false);
            f.push(false);
        }
    };
    let fixed8 = || {
        let mut b = [0u8; 8];
        let n = value.len().min(8);
        b[..n].copy_from_slice(&value[..n]);
        b
    };
    // The slow path for values the resolver produced.
    let other = |r| cell_cmp(ty, &w.cell(slot, r), value);
    macro_rules! typed {
        ($n:literal, $decode:expr, $cmp:expr) => {{
            let c = $decode(fixed8()[..$n].try_into().unwrap_or([0u8; $n]));
            for &r in refs {
                let (s, row) = r.parts();
                let o = match views.get(s as usize) {
                    Some(Some(cv)) => {
                        let row = row as usize;
                        cv.valid(row)
                            .then(|| $cmp(&$decode(cv.fixed::<$n>(row)), &c))
                    }
                    Some(None) => None,
                    None => other(r),
                };
                push(o);
            }
        }};
    }
    match ty {
        ColumnType::Int32 => typed!(4, i32::from_le_bytes, i32::cmp),
        ColumnType::Int64 | ColumnType::Timestamp => typed!(8, i64::from_le_bytes, i64::cmp),
        ColumnType::Float64 => typed!(8, f64::from_le_bytes, f64::total_cmp),
        ColumnType::Bool => typed!(1, |b: [u8; 1]| b[0], u8::cmp),
        ColumnType::Utf8 | ColumnType::Binary => {
            for &r in refs {
                let (s, row) = r.parts();
                let o = match views.get(s as usize) {
                    Some(Some(cv)) => {
                        let row = row as usize;
                        cv.valid(row).then(|| cv.var(row).cmp(value))
                    }
                    Some(None) => None,
                    None => other(r),
                };
                push(o);
            }
        }
    }
    Truth { t, f }
}
