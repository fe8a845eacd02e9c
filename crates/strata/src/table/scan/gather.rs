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

/// A segment's view of one slot's column: the column of the block that
/// holds it (its own, or a zipped partner's, `shift` rows on).
#[derive(Clone, Copy)]
pub(super) struct SlotView<'a> {
    view: ColumnView<'a>,
    shift: isize,
}

impl<'a> SlotView<'a> {
    #[inline]
    fn at(&self, r: usize) -> usize {
        r.wrapping_add_signed(self.shift)
    }

    /// Whether the segment's row `r` has a non-null value.
    #[inline]
    pub fn valid(&self, r: usize) -> bool {
        self.view.valid(self.at(r))
    }

    /// The segment's row `r`'s value (fixed-width types).
    #[inline]
    pub fn fixed<const N: usize>(&self, r: usize) -> [u8; N] {
        self.view.fixed::<N>(self.at(r))
    }

    /// The segment's row `r`'s bytes (utf8 and binary).
    #[inline]
    pub fn var(&self, r: usize) -> &'a [u8] {
        self.view.var(self.at(r))
    }

    /// The holder's column, which a segment row `r` reads at `at(r)`.
    pub fn holder_view(&self) -> &ColumnView<'a> {
        &self.view
    }

    /// The holder's row of the segment's row `r`.
    #[inline]
    pub fn holder_row(&self, r: usize) -> usize {
        self.at(r)
    }
}

/// Slot `slot`'s column for each of the window's segments (`None` where
/// no block of the segment holds it).
pub(super) fn views(w: &Window, slot: usize) -> Vec<Option<SlotView<'_>>> {
    let v = w.want_column(slot);
    (0..w.segs.len())
        .map(|s| {
            let h = w.holder(s, slot);
            let c = &w.segs[h.seg as usize].chunk;
            c.map[v].map(|i| SlotView {
                view: c.block.column_view(i),
                shift: h.shift as isize,
            })
        })
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

/// Appends a fixed-width column's values: [`dense`] takes as many whole
/// chunks as it can read in place, and the rest is gathered into `values`
/// and `valid` and handed to the builder in one call.
fn fixed<T, const N: usize>(
    w: &Window,
    slot: usize,
    refs: &[Ref],
    views: &[Option<SlotView<'_>>],
    b: &mut PrimitiveBuilder<T>,
    from_bytes: fn([u8; N]) -> T::Native,
    from_cell: fn(Cell<'_>) -> Option<T::Native>,
) -> Result<()>
where
    T: ArrowPrimitiveType,
{
    let done = dense::<T, N>(refs, views, from_bytes, b);
    let refs = &refs[done..];
    if refs.is_empty() {
        return Ok(());
    }
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

/// A segment's values as [`dense`] reads them.
#[derive(Clone, Copy)]
struct DenseSeg<'a> {
    /// Its holder's values, every row's (little-endian, `N` bytes each).
    values: &'a [u8],
    /// Its holder's presence bits, if some rows lack the column.
    presence: Option<&'a [u8]>,
    /// Its holder's rows are this far from its own.
    shift: isize,
}

/// Values gathered per call to the builder in [`dense`]: a buffer on the
/// stack, so that the gather allocates nothing.
const DENSE_CHUNK: usize = 256;

/// Appends the values `refs` point at, read in place from the blocks'
/// vectors, to `b`, [`DENSE_CHUNK`] references at a time, for as long as
/// every value of a chunk is present and not null (the common case).
/// Returns how many references it appended (a whole number of chunks, or
/// all): the caller's general loop takes the rest.
fn dense<T, const N: usize>(
    refs: &[Ref],
    views: &[Option<SlotView<'_>>],
    from_bytes: fn([u8; N]) -> T::Native,
    b: &mut PrimitiveBuilder<T>,
) -> usize
where
    T: ArrowPrimitiveType,
{
    // Per segment: its holder's values, presence bits and shift; `None`
    // where the holder has nulls (a reference to it means the general
    // loop).
    let segs: Vec<Option<DenseSeg<'_>>> = views
        .iter()
        .map(|v| {
            let v = v.as_ref()?;
            let (values, presence) = v.view.without_nulls()?;
            Some(DenseSeg {
                values,
                presence,
                shift: v.shift,
            })
        })
        .collect();
    let mut buf = [T::Native::default(); DENSE_CHUNK];
    let mut done = 0;
    for part in refs.chunks(DENSE_CHUNK) {
        // A chunk is read whole before any of it is appended: a builder
        // cannot take values back.
        let mut ok = true;
        for (slot, &r) in buf.iter_mut().zip(part) {
            let (s, row) = r.parts();
            let Some(Some(seg)) = segs.get(s as usize) else {
                ok = false;
                break;
            };
            let at = (row as usize).wrapping_add_signed(seg.shift);
            if let Some(p) = seg.presence
                && get_bit(p, at) != Some(true)
            {
                ok = false;
                break;
            }
            let Some(bytes) = seg.values.get(at * N..at * N + N) else {
                ok = false;
                break;
            };
            let mut v = [0u8; N];
            v.copy_from_slice(bytes);
            *slot = from_bytes(v);
        }
        if !ok {
            break;
        }
        b.append_slice(&buf[..part.len()]);
        done += part.len();
    }
    done
}

fn get_bit(bitmap: &[u8], r: usize) -> Option<bool> {
    Some(bitmap.get(r / 8)? & (1 << (r % 8)) != 0)
}

fn fill(
    w: &Window,
    slot: usize,
    refs: &[Ref],
    views: &[Option<SlotView<'_>>],
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
