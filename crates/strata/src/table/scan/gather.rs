//! Filling a batch's columns from a window's references, one column at a
//! time: each segment's column is viewed as typed slices once per window,
//! so the loop over rows reads values straight out of the blocks.

use arrow_array::ArrowPrimitiveType;
use arrow_array::builder::PrimitiveBuilder;

use super::window::{Ref, Window};
use crate::error::Result;
use crate::table::arrowio::{ColumnBuilder, not_utf8, type_mismatch};
use crate::table::cgfile::block::ColumnView;
use crate::table::piece::Cell;

fn int64(c: Cell<'_>) -> Option<i64> {
    match c {
        Cell::Int64(x) => Some(x),
        _ => None,
    }
}

/// Slot `slot`'s column in each of the window's segments (`None` where
/// the segment's group does not hold it).
pub(super) fn views(w: &Window, slot: usize) -> Vec<Option<ColumnView<'_>>> {
    let v = w.want_column(slot);
    w.segs
        .iter()
        .map(|s| s.chunk.map[v].map(|i| s.chunk.block.column_view(i)))
        .collect()
}

/// Appends slot `slot`'s values at `refs` to `b`.
pub(super) fn append_slot(
    w: &Window,
    slot: usize,
    refs: &[Ref],
    b: &mut ColumnBuilder,
) -> Result<()> {
    fill(w, slot, refs, &views(w, slot), b)
}

/// Gathers a fixed-width column into `values` and `valid`, then hands
/// them to the builder in one call.
fn fixed<T, const N: usize>(
    w: &Window,
    slot: usize,
    refs: &[Ref],
    views: &[Option<ColumnView<'_>>],
    b: &mut PrimitiveBuilder<T>,
    from_bytes: fn([u8; N]) -> T::Native,
    from_cell: fn(Cell<'_>) -> Option<T::Native>,
) -> Result<()>
where
    T: ArrowPrimitiveType,
{
    let mut values: Vec<T::Native> = Vec::with_capacity(refs.len());
    let mut valid: Vec<bool> = Vec::with_capacity(refs.len());
    for &r in refs {
        let (s, row) = r.parts();
        let (v, ok) = match views.get(s as usize) {
            Some(Some(cv)) => {
                let row = row as usize;
                (from_bytes(cv.fixed::<N>(row)), cv.valid(row))
            }
            Some(None) => (T::Native::default(), false),
            None => match w.cell(slot, r) {
                Cell::Null => (T::Native::default(), false),
                c => (from_cell(c).ok_or_else(|| type_mismatch(c))?, true),
            },
        };
        values.push(v);
        valid.push(ok);
    }
    if valid.iter().all(|&v| v) {
        b.append_slice(&values);
    } else {
        b.append_values(&values, &valid);
    }
    Ok(())
}

fn fill(
    w: &Window,
    slot: usize,
    refs: &[Ref],
    views: &[Option<ColumnView<'_>>],
    b: &mut ColumnBuilder,
) -> Result<()> {
    match b {
        ColumnBuilder::I32(b) => fixed(w, slot, refs, views, b, i32::from_le_bytes, |c| match c {
            Cell::Int32(x) => Some(x),
            _ => None,
        })?,
        ColumnBuilder::I64(b) => fixed(w, slot, refs, views, b, i64::from_le_bytes, int64)?,
        ColumnBuilder::Ts(b) => fixed(w, slot, refs, views, b, i64::from_le_bytes, int64)?,
        ColumnBuilder::F64(b) => fixed(w, slot, refs, views, b, f64::from_le_bytes, |c| match c {
            Cell::Float64(x) => Some(x),
            _ => None,
        })?,
        ColumnBuilder::Bool(b) => {
            for &r in refs {
                let (s, row) = r.parts();
                match views.get(s as usize) {
                    Some(Some(cv)) if cv.valid(row as usize) => {
                        b.append_value(cv.fixed::<1>(row as usize)[0] != 0)
                    }
                    Some(_) => b.append_null(),
                    None => match w.cell(slot, r) {
                        Cell::Null => b.append_null(),
                        Cell::Bool(x) => b.append_value(x),
                        c => return Err(type_mismatch(c)),
                    },
                }
            }
        }
        ColumnBuilder::Binary(b) => {
            for &r in refs {
                let (s, row) = r.parts();
                match views.get(s as usize) {
                    Some(Some(cv)) if cv.valid(row as usize) => {
                        b.append_value(cv.var(row as usize))
                    }
                    Some(_) => b.append_null(),
                    None => match w.cell(slot, r) {
                        Cell::Null => b.append_null(),
                        Cell::Bytes(x) => b.append_value(x),
                        c => return Err(type_mismatch(c)),
                    },
                }
            }
        }
        ColumnBuilder::Utf8(b) => {
            for &r in refs {
                let (s, row) = r.parts();
                let bytes = match views.get(s as usize) {
                    Some(Some(cv)) if cv.valid(row as usize) => Some(cv.var(row as usize)),
                    Some(_) => None,
                    None => match w.cell(slot, r) {
                        Cell::Null => None,
                        Cell::Bytes(x) => Some(x),
                        c => return Err(type_mismatch(c)),
                    },
                };
                match bytes {
                    Some(x) => b.append_value(std::str::from_utf8(x).map_err(|_| not_utf8())?),
                    None => b.append_null(),
                }
            }
        }
    }
    Ok(())
}
