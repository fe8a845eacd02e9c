//! Predicates evaluated over all of a window's rows at once.
//!
//! Each comparison reads its column straight from the blocks' typed
//! slices (as the batch gather does) and compares with the constant decoded
//! once. On a string column a file stores as codes, the comparison becomes
//! a code range found in the file's dictionary and the vectorised selection
//! of `dict::select` runs over the block's packed codes, once per block: no
//! value's bytes are read; `AND`, `OR` and `NOT` combine the rows' answers in SQL's
//! three-valued logic (a comparison with a null is unknown, and a row is
//! kept only where the predicate is true). Predicates on key columns are
//! evaluated row by row by the scanner instead.

use std::cmp::Ordering;

use super::gather::{SlotView, views};
use super::window::Window;
use crate::dict::CodeSet;
use crate::dict::select::select;
use crate::table::cgfile::block::ColumnView;
use crate::table::predicate::{Bound, CmpOp, cell_cmp, code_comparison};
use crate::table::schema::{ColumnType, Schema};

/// Per row: known true, known false, or neither (unknown).
struct Truth {
    t: Vec<bool>,
    f: Vec<bool>,
}

impl Truth {
    /// Appends a row's answer (`None`: unknown).
    #[inline]
    fn push(&mut self, holds: Option<bool>) {
        self.t.push(holds == Some(true));
        self.f.push(holds == Some(false));
    }
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
    let refs = w.refs(slot);
    let mut truth = Truth {
        t: Vec::with_capacity(refs.len()),
        f: Vec::with_capacity(refs.len()),
    };
    macro_rules! push {
        ($o:expr) => {{
            let o: Option<Ordering> = $o;
            truth.push(o.map(|o| op.holds(o)))
        }};
    }
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
                push!(o);
            }
        }};
    }
    match ty {
        ColumnType::Int32 => typed!(4, i32::from_le_bytes, i32::cmp),
        ColumnType::Int64 | ColumnType::Timestamp => typed!(8, i64::from_le_bytes, i64::cmp),
        ColumnType::Float64 => typed!(8, f64::from_le_bytes, f64::total_cmp),
        ColumnType::Bool => typed!(1, |b: [u8; 1]| b[0], u8::cmp),
        ColumnType::Utf8 | ColumnType::Binary => {
            let selected: Vec<Option<Selection>> = views
                .iter()
                .map(|v| v.as_ref().and_then(|v| select_codes(v, op, value)))
                .collect();
            for &r in refs {
                let (s, row) = r.parts();
                let row = row as usize;
                match (views.get(s as usize), selected.get(s as usize)) {
                    (Some(Some(cv)), Some(Some(sel))) => {
                        // On codes: the block's selection answers.
                        truth.push(cv.valid(row).then(|| sel.holds(cv.holder_row(row))))
                    }
                    (Some(Some(cv)), _) => push!(cv.valid(row).then(|| cv.var(row).cmp(value))),
                    (Some(None), _) => push!(None),
                    (None, _) => push!(other(r)),
                }
            }
        }
    }
    truth
}

/// Which rows of a block of codes pass a comparison: a bitmap over the
/// block's rows, read negated for `<>`.
struct Selection {
    bits: Vec<u64>,
    negate: bool,
}

impl Selection {
    #[inline]
    fn holds(&self, r: usize) -> bool {
        let bit = self
            .bits
            .get(r / 64)
            .is_some_and(|w| w >> (r % 64) & 1 == 1);
        bit != self.negate
    }
}

/// `column op value` over every row of `v`'s block, if the block stores
/// the column as codes: the comparison as a code range in the file's
/// dictionary, tested on the packed codes by the vectorised kernel.
fn select_codes(v: &SlotView<'_>, op: CmpOp, value: &[u8]) -> Option<Selection> {
    let view = v.holder_view();
    let (dict, packed, width) = view.codes()?;
    let (set, negate) = code_set(dict, op, value);
    let mut bits = Vec::new();
    select(packed, width, view.rows(), &set, &mut bits);
    Some(Selection { bits, negate })
}

/// `x op value` over a dictionary's values as a set of codes, and whether
/// the answer is the set's complement (`<>`, as the complement of `=`).
fn code_set(dict: &crate::dict::Dictionary, op: CmpOp, value: &[u8]) -> (CodeSet, bool) {
    let (op, c) = code_comparison(dict, op, value);
    let n = dict.len() as u32;
    match op {
        CmpOp::Eq => (CodeSet::half_open(c, c + 1), false),
        CmpOp::Ne => (CodeSet::half_open(c, c + 1), true),
        CmpOp::Lt => (CodeSet::half_open(0, c), false),
        CmpOp::Le => (CodeSet::half_open(0, c + 1), false),
        CmpOp::Gt => (CodeSet::half_open(c + 1, n), false),
        CmpOp::Ge => (CodeSet::half_open(c, n), false),
    }
}

/// Per row of a lone lead segment (bit `i`: its `i`-th row): known true,
/// known false; neither is unknown.
struct Bits {
    t: Vec<u64>,
    f: Vec<u64>,
}

/// `len` bits set.
fn ones(len: usize) -> Vec<u64> {
    let mut v = vec![u64::MAX; len.div_ceil(64)];
    if !len.is_multiple_of(64)
        && let Some(last) = v.last_mut()
    {
        *last = (1u64 << (len % 64)) - 1;
    }
    v
}

/// Bits `from..from + len` of `bits`, as a bitmap from 0.
fn slice_bits(bits: &[u64], from: usize, len: usize) -> Vec<u64> {
    let word = |i: usize| bits.get(i).copied().unwrap_or(0);
    let (w, sh) = (from / 64, from % 64);
    let mut out: Vec<u64> = (0..len.div_ceil(64))
        .map(|k| {
            let lo = word(w + k) >> sh;
            if sh == 0 {
                lo
            } else {
                lo | (word(w + k + 1) << (64 - sh))
            }
        })
        .collect();
    if !len.is_multiple_of(64)
        && let Some(last) = out.last_mut()
    {
        *last &= (1u64 << (len % 64)) - 1;
    }
    out
}

/// The rows of window `w`'s lone lead segment `s` (see
/// `Window::lone_lead`) for which `p` is true, as a bitmap over the
/// segment's rows: the predicate tested on the blocks' column vectors
/// before any row is made. `p` must be [`vectorizable`].
pub(super) fn select_lead(
    p: &Bound,
    w: &Window,
    s: usize,
    schema: &Schema,
    slot_of: &[Option<usize>],
) -> Vec<u64> {
    eval_lead(p, w, s, w.segment_rows(s), schema, slot_of).t
}

fn eval_lead(
    p: &Bound,
    w: &Window,
    s: usize,
    len: usize,
    schema: &Schema,
    slot_of: &[Option<usize>],
) -> Bits {
    let words = len.div_ceil(64);
    match p {
        Bound::Cmp {
            column,
            ty,
            op,
            value,
        } => match lead_view(w, s, slot(schema, slot_of, *column)) {
            Some((view, from)) => compare_lead(&view, from, len, *ty, *op, value),
            None => Bits {
                t: vec![0; words],
                f: vec![0; words],
            },
        },
        Bound::IsNull(column, want) => {
            let valid = match lead_view(w, s, slot(schema, slot_of, *column)) {
                Some((view, from)) => view.validity(from, len).unwrap_or_else(|| ones(len)),
                None => vec![0; words],
            };
            let null: Vec<u64> = valid.iter().zip(ones(len)).map(|(v, o)| !v & o).collect();
            if *want {
                Bits { t: null, f: valid }
            } else {
                Bits { t: valid, f: null }
            }
        }
        Bound::And(ps) => {
            let mut acc = Bits {
                t: ones(len),
                f: vec![0; words],
            };
            for p in ps {
                let x = eval_lead(p, w, s, len, schema, slot_of);
                for k in 0..words {
                    acc.t[k] &= x.t[k];
                    acc.f[k] |= x.f[k];
                }
            }
            acc
        }
        Bound::Or(ps) => {
            let mut acc = Bits {
                t: vec![0; words],
                f: ones(len),
            };
            for p in ps {
                let x = eval_lead(p, w, s, len, schema, slot_of);
                for k in 0..words {
                    acc.t[k] |= x.t[k];
                    acc.f[k] &= x.f[k];
                }
            }
            acc
        }
        Bound::Not(p) => {
            let x = eval_lead(p, w, s, len, schema, slot_of);
            Bits { t: x.f, f: x.t }
        }
    }
}

/// The column of slot `slot` for lead `s`'s rows, and the block row of the
/// lead's first: `None` when the block holding the slot lacks the column
/// (every value null).
fn lead_view<'a>(w: &'a Window, s: usize, slot: usize) -> Option<(ColumnView<'a>, usize)> {
    let h = w.holder(s, slot);
    let c = &w.segs[h.seg as usize].chunk;
    let i = c.map[w.want_column(slot)]?;
    let from = w.segs[s].start as i64 + i64::from(h.shift);
    Some((c.block.column_view(i), usize::try_from(from).ok()?))
}

/// `column op value` over rows `from..from + len` of `view`.
fn compare_lead(
    view: &ColumnView<'_>,
    from: usize,
    len: usize,
    ty: ColumnType,
    op: CmpOp,
    value: &[u8],
) -> Bits {
    let words = len.div_ceil(64);
    let valid = view.validity(from, len);
    let mut t = vec![0u64; words];
    let mut f = vec![0u64; words];
    // Rows with a value: each answer sets a bit of `t` or of `f`.
    let mut answer = |i: usize, h: bool| {
        if h {
            t[i / 64] |= 1 << (i % 64);
        } else {
            f[i / 64] |= 1 << (i % 64);
        }
    };
    let has = |i: usize| {
        valid
            .as_ref()
            .is_none_or(|v| v[i / 64] >> (i % 64) & 1 == 1)
    };
    let mut fixed8 = [0u8; 8];
    let n = value.len().min(8);
    fixed8[..n].copy_from_slice(&value[..n]);
    macro_rules! typed {
        ($n:literal, $decode:expr, $cmp:expr) => {{
            let c = $decode(fixed8[..$n].try_into().unwrap_or([0u8; $n]));
            for i in 0..len {
                if has(i) {
                    answer(i, op.holds($cmp(&$decode(view.fixed::<$n>(from + i)), &c)));
                }
            }
        }};
    }
    match ty {
        ColumnType::Int32 => typed!(4, i32::from_le_bytes, i32::cmp),
        ColumnType::Int64 | ColumnType::Timestamp => typed!(8, i64::from_le_bytes, i64::cmp),
        ColumnType::Float64 => typed!(8, f64::from_le_bytes, f64::total_cmp),
        ColumnType::Bool => typed!(1, |b: [u8; 1]| b[0], u8::cmp),
        ColumnType::Utf8 | ColumnType::Binary => match view.codes() {
            Some((dict, packed, width)) => {
                // On codes: one selection over the block, then the lead's
                // rows of it.
                let (set, negate) = code_set(dict, op, value);
                let mut bits = Vec::new();
                select(packed, width, view.rows(), &set, &mut bits);
                let sel = slice_bits(&bits, from, len);
                let valid = valid.clone().unwrap_or_else(|| ones(len));
                for k in 0..words {
                    let hit = if negate { !sel[k] } else { sel[k] };
                    t[k] = valid[k] & hit;
                    f[k] = valid[k] & !hit;
                }
                return Bits { t, f };
            }
            None => {
                for i in 0..len {
                    if has(i) {
                        answer(i, op.holds(view.var(from + i).cmp(value)));
                    }
                }
            }
        },
    }
    Bits { t, f }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_slices_shift_across_words_and_mask_the_tail() {
        let bits = vec![0xF0F0_F0F0_F0F0_F0F0u64, 0x0123_4567_89AB_CDEF, 0xFFFF];
        for from in [0usize, 1, 4, 63, 64, 65, 100] {
            for len in [0usize, 1, 7, 64, 65, 120] {
                let got = slice_bits(&bits, from, len);
                assert_eq!(got.len(), len.div_ceil(64));
                for i in 0..len {
                    let want = bits
                        .get((from + i) / 64)
                        .is_some_and(|w| w >> ((from + i) % 64) & 1 == 1);
                    assert_eq!(
                        got[i / 64] >> (i % 64) & 1 == 1,
                        want,
                        "from {from} len {len} bit {i}"
                    );
                }
                if len % 64 != 0 {
                    assert_eq!(
                        got[len / 64] >> (len % 64),
                        0,
                        "tail of from {from} len {len}"
                    );
                }
            }
        }
        assert_eq!(ones(70), vec![u64::MAX, 0x3F]);
    }
}
