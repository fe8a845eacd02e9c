//! Row pieces: the values of some of a row's value columns, as stored in
//! the value of a key-value entry.
//!
//! Every table entry's value is a piece. An insert writes a piece with every
//! value column (a `Put`); a partial update writes a piece with the changed
//! columns only (a `Merge` operand); in column-group files each group keeps
//! the piece's columns that belong to it. Which columns a piece holds is
//! recorded in it, so a piece is read the same wherever it is found.
//!
//! ```text
//!   flags: u8         bit 0: every value column present (no presence bitmap)
//!                     bit 1: no nulls (no null bitmap); bits 2-7 zero
//!   presence bitmap   ceil(n/8) bytes, bit v set if value column v is present
//!   null bitmap       ceil(n/8) bytes, bit v set if column v is null
//!   values            each present, non-null column in ascending order:
//!                     i32 4 bytes, i64/timestamp/f64 8 bytes little-endian,
//!                     bool 1 byte, utf8/binary a varint length and the bytes
//! ```
//!
//! `n` is the table's number of value columns; bitmaps use bit `v % 8` of
//! byte `v / 8`.

use super::schema::{ColumnType, Schema};
use crate::coding::{get_varint64, put_varint64};
use crate::error::{Error, Result};

const ALL_PRESENT: u8 = 1;
const NO_NULLS: u8 = 2;
const KNOWN_FLAGS: u8 = ALL_PRESENT | NO_NULLS;

/// A borrowed cell value; utf8 and binary are both bytes, timestamps are
/// i64 (the column's type says which).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell<'a> {
    /// Null.
    Null,
    /// An i32.
    Int32(i32),
    /// An i64 or timestamp.
    Int64(i64),
    /// An f64.
    Float64(f64),
    /// A boolean.
    Bool(bool),
    /// Utf8 or binary bytes.
    Bytes(&'a [u8]),
}

/// The value columns' types, as pieces need them.
#[derive(Clone, Debug)]
pub struct PieceSchema {
    types: Vec<ColumnType>,
    bitmap_len: usize,
    /// When every column is fixed-width: where each value lies in a piece
    /// with every column present and none null (the common insert), so
    /// parsing such a piece is one length check.
    dense: Option<DenseLayout>,
}

#[derive(Clone, Debug)]
struct DenseLayout {
    slots: Vec<(u32, u32)>,
    len: usize,
}

impl PieceSchema {
    /// The value columns of `schema`.
    pub fn new(schema: &Schema) -> PieceSchema {
        Self::from_types(
            (0..schema.num_values())
                .map(|v| schema.value_column(v).ty)
                .collect(),
        )
    }

    /// Value columns of the given types.
    pub fn from_types(types: Vec<ColumnType>) -> PieceSchema {
        let bitmap_len = types.len().div_ceil(8);
        let dense = types.iter().all(|t| t.fixed_width().is_some()).then(|| {
            // After the flags byte, each value at its fixed width.
            let mut pos = 1u32;
            let slots = types
                .iter()
                .map(|t| {
                    let w = t.fixed_width().unwrap_or(0) as u32;
                    let s = (pos, pos + w);
                    pos += w;
                    s
                })
                .collect();
            DenseLayout {
                slots,
                len: pos as usize,
            }
        });
        PieceSchema {
            types,
            bitmap_len,
            dense,
        }
    }

    /// Number of value columns.
    pub fn len(&self) -> usize {
        self.types.len()
    }

    /// Whether the table has no value columns.
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    /// The type of value column `v`.
    pub fn ty(&self, v: usize) -> ColumnType {
        self.types[v]
    }
}

fn bit(bitmap: &[u8], v: usize) -> bool {
    bitmap[v / 8] & (1 << (v % 8)) != 0
}

fn set_bit(bitmap: &mut [u8], v: usize) {
    bitmap[v / 8] |= 1 << (v % 8);
}

/// Builds pieces; reusable across rows.
pub struct PieceEncoder {
    presence: Vec<u8>,
    nulls: Vec<u8>,
    values: Vec<u8>,
    count: usize,
    last: Option<usize>,
}

impl PieceEncoder {
    /// An encoder for pieces of `schema`'s tables.
    pub fn new(schema: &PieceSchema) -> PieceEncoder {
        PieceEncoder {
            presence: vec![0; schema.bitmap_len],
            nulls: vec![0; schema.bitmap_len],
            values: Vec::new(),
            count: 0,
            last: None,
        }
    }

    /// Starts a new piece.
    pub fn clear(&mut self) {
        self.presence.fill(0);
        self.nulls.fill(0);
        self.values.clear();
        self.count = 0;
        self.last = None;
    }

    /// Adds value column `v` (columns must come in ascending order; the
    /// cell must match the column's type, which the caller checked).
    pub fn push(&mut self, schema: &PieceSchema, v: usize, cell: Cell<'_>) {
        debug_assert!(self.last.is_none_or(|l| l < v), "columns out of order");
        self.last = Some(v);
        set_bit(&mut self.presence, v);
        self.count += 1;
        match cell {
            Cell::Null => set_bit(&mut self.nulls, v),
            Cell::Int32(x) => self.values.extend_from_slice(&x.to_le_bytes()),
            Cell::Int64(x) => self.values.extend_from_slice(&x.to_le_bytes()),
            Cell::Float64(x) => self.values.extend_from_slice(&x.to_le_bytes()),
            Cell::Bool(b) => self.values.push(u8::from(b)),
            Cell::Bytes(b) => {
                put_varint64(&mut self.values, b.len() as u64);
                self.values.extend_from_slice(b);
            }
        }
        debug_assert!(cell_fits(schema.ty(v), &cell), "cell of the wrong type");
    }

    /// Appends the piece built so far to `out`.
    pub fn finish(&self, schema: &PieceSchema, out: &mut Vec<u8>) {
        let all = self.count == schema.len();
        let no_nulls = self.nulls.iter().all(|&b| b == 0);
        let mut flags = 0;
        if all {
            flags |= ALL_PRESENT;
        }
        if no_nulls {
            flags |= NO_NULLS;
        }
        out.push(flags);
        if !all {
            out.extend_from_slice(&self.presence);
        }
        if !no_nulls {
            out.extend_from_slice(&self.nulls);
        }
        out.extend_from_slice(&self.values);
    }

    /// Number of columns pushed since the last clear.
    pub fn count(&self) -> usize {
        self.count
    }
}

fn cell_fits(ty: ColumnType, cell: &Cell<'_>) -> bool {
    matches!(
        (ty, cell),
        (_, Cell::Null)
            | (ColumnType::Int32, Cell::Int32(_))
            | (ColumnType::Int64 | ColumnType::Timestamp, Cell::Int64(_))
            | (ColumnType::Float64, Cell::Float64(_))
            | (ColumnType::Bool, Cell::Bool(_))
            | (ColumnType::Utf8 | ColumnType::Binary, Cell::Bytes(_))
    )
}

/// A decoded piece: where each present column's value lies.
#[derive(Debug, Default)]
pub struct PieceView<'a> {
    data: &'a [u8],
    /// Per value column: start `u32::MAX` if absent, `u32::MAX - 1` if
    /// null, else the start and end of its value in `data`.
    slots: Vec<(u32, u32)>,
    present: usize,
    /// Every column present and non-null at the schema's dense layout
    /// (`slots` is then unused).
    dense: bool,
}

const ABSENT: u32 = u32::MAX;
const NULL: u32 = u32::MAX - 1;

fn bad(reason: impl Into<String>) -> Error {
    Error::corruption("row piece", 0, reason.into())
}

impl<'a> PieceView<'a> {
    /// Parses `data` as a piece of `schema`'s rows.
    pub fn parse(schema: &PieceSchema, data: &'a [u8]) -> Result<PieceView<'a>> {
        Self::parse_reusing(schema, data, Vec::new())
    }

    /// Parses `data` into a view that reuses `slots`' memory (from
    /// [`Self::into_slots`] of an earlier view): a scan parses a piece per
    /// row, and one allocation per row was a tenth of staging's time.
    pub fn parse_reusing(
        schema: &PieceSchema,
        data: &'a [u8],
        slots: Vec<(u32, u32)>,
    ) -> Result<PieceView<'a>> {
        let mut view = PieceView {
            data,
            slots,
            present: 0,
            dense: false,
        };
        view.reparse(schema, data)?;
        Ok(view)
    }

    /// The view's slot memory, for [`Self::parse_reusing`].
    pub fn into_slots(self) -> Vec<(u32, u32)> {
        self.slots
    }

    /// Parses `data` into this view, reusing its memory.
    fn reparse(&mut self, schema: &PieceSchema, data: &'a [u8]) -> Result<()> {
        let n = schema.len();
        self.data = data;
        self.present = 0;
        self.dense = false;
        let Some((&flags, mut rest)) = data.split_first() else {
            return Err(bad("empty piece"));
        };
        if flags == ALL_PRESENT | NO_NULLS
            && let Some(d) = &schema.dense
            && d.len == data.len()
        {
            self.dense = true;
            self.present = n;
            return Ok(());
        }
        self.slots.clear();
        self.slots.resize(n, (ABSENT, 0));
        if flags & !KNOWN_FLAGS != 0 {
            return Err(bad(format!("unknown piece flags {flags:#04x}")));
        }
        let bl = schema.bitmap_len;
        let presence: Option<&[u8]> = if flags & ALL_PRESENT == 0 {
            if rest.len() < bl {
                return Err(bad("truncated presence bitmap"));
            }
            let (p, r) = rest.split_at(bl);
            rest = r;
            Some(p)
        } else {
            None
        };
        let nulls: Option<&[u8]> = if flags & NO_NULLS == 0 {
            if rest.len() < bl {
                return Err(bad("truncated null bitmap"));
            }
            let (p, r) = rest.split_at(bl);
            rest = r;
            Some(p)
        } else {
            None
        };
        let mut pos = data.len() - rest.len();
        for v in 0..n {
            if presence.is_some_and(|p| !bit(p, v)) {
                continue;
            }
            self.present += 1;
            if nulls.is_some_and(|m| bit(m, v)) {
                self.slots[v] = (NULL, 0);
                continue;
            }
            let len = match schema.ty(v).fixed_width() {
                Some(w) => w,
                None => {
                    let mut src = &data[pos..];
                    let before = src.len();
                    let len = get_varint64(&mut src).ok_or_else(|| bad("bad length varint"))?;
                    pos += before - src.len();
                    usize::try_from(len).map_err(|_| bad("impossible length"))?
                }
            };
            let end = pos
                .checked_add(len)
                .filter(|&e| e <= data.len())
                .ok_or_else(|| bad(format!("value of column {v} runs past the piece")))?;
            // Pieces are values of entries, far below 4 GiB (the engine's
            // value limit), so offsets fit u32.
            self.slots[v] = (pos as u32, end as u32);
            pos = end;
        }
        if pos != data.len() {
            return Err(bad("bytes after the last value"));
        }
        if let Some(p) = presence {
            // Bits past the last column must be clear.
            if (n..bl * 8).any(|v| bit(p, v)) {
                return Err(bad("presence bit set for a column the table lacks"));
            }
        }
        Ok(())
    }

    /// Whether value column `v` is present.
    pub fn has(&self, v: usize) -> bool {
        if self.dense {
            return v < self.present;
        }
        self.slots.get(v).is_some_and(|&(s, _)| s != ABSENT)
    }

    /// Number of present columns.
    pub fn num_present(&self) -> usize {
        self.present
    }

    /// Value column `v`, if present.
    pub fn get(&self, schema: &PieceSchema, v: usize) -> Option<Cell<'a>> {
        let (start, end) = if self.dense {
            *schema.dense.as_ref()?.slots.get(v)?
        } else {
            *self.slots.get(v)?
        };
        if start == ABSENT {
            return None;
        }
        if start == NULL {
            return Some(Cell::Null);
        }
        let at = start as usize;
        let d = self.data;
        // Lengths were checked by `reparse`.
        Some(match schema.ty(v) {
            ColumnType::Int32 => Cell::Int32(i32::from_le_bytes(fixed(d, at))),
            ColumnType::Int64 | ColumnType::Timestamp => {
                Cell::Int64(i64::from_le_bytes(fixed(d, at)))
            }
            ColumnType::Float64 => Cell::Float64(f64::from_le_bytes(fixed(d, at))),
            ColumnType::Bool => Cell::Bool(d[at] != 0),
            ColumnType::Utf8 | ColumnType::Binary => Cell::Bytes(&d[at..end as usize]),
        })
    }
}

impl<'a> PieceView<'a> {
    /// Column `v`'s value as stored: `None` if the piece does not carry
    /// it, `Some(None)` if it is null, else its bytes (little-endian for
    /// fixed-width types, the same encoding a column-group block keeps, so
    /// a block builder copies them without decoding a [`Cell`]).
    #[inline]
    pub fn raw(&self, schema: &PieceSchema, v: usize) -> Option<Option<&'a [u8]>> {
        let (start, end) = if self.dense {
            *schema.dense.as_ref()?.slots.get(v)?
        } else {
            *self.slots.get(v)?
        };
        match start {
            ABSENT => None,
            NULL => Some(None),
            // Bounds were checked by `reparse` (and the dense layout's
            // length matched the piece's).
            _ => Some(self.data.get(start as usize..end as usize)),
        }
    }
}

fn fixed<const N: usize>(d: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&d[at..at + N]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> PieceSchema {
        PieceSchema::from_types(vec![
            ColumnType::Int32,
            ColumnType::Utf8,
            ColumnType::Float64,
            ColumnType::Binary,
            ColumnType::Bool,
            ColumnType::Timestamp,
            ColumnType::Utf8,
            ColumnType::Int64,
            ColumnType::Int32,
        ])
    }

    fn cells() -> Vec<Cell<'static>> {
        vec![
            Cell::Int32(-7),
            Cell::Bytes(b"hello"),
            Cell::Float64(2.5),
            Cell::Bytes(&[0u8; 200]),
            Cell::Bool(true),
            Cell::Int64(1_700_000_000_000_000),
            Cell::Bytes(b""),
            Cell::Int64(-1),
            Cell::Null,
        ]
    }

    fn encode(s: &PieceSchema, cols: &[(usize, Cell<'_>)]) -> Vec<u8> {
        let mut e = PieceEncoder::new(s);
        for (v, c) in cols {
            e.push(s, *v, *c);
        }
        let mut out = Vec::new();
        e.finish(s, &mut out);
        out
    }

    #[test]
    fn pieces_of_fixed_width_tables_parse_alike_by_either_path() {
        let s = PieceSchema::from_types(vec![
            ColumnType::Int32,
            ColumnType::Float64,
            ColumnType::Bool,
            ColumnType::Timestamp,
        ]);
        let full = [
            (0, Cell::Int32(3)),
            (1, Cell::Float64(-0.5)),
            (2, Cell::Bool(true)),
            (3, Cell::Int64(9)),
        ];
        // Complete and null-free: the precomputed layout.
        let bytes = encode(&s, &full);
        let view = PieceView::parse(&s, &bytes).expect("parse");
        assert_eq!(view.num_present(), 4);
        for (v, c) in &full {
            assert_eq!(view.get(&s, *v), Some(*c));
        }
        // A dense piece cut short or grown is refused, not misread.
        for bad in [
            &bytes[..bytes.len() - 1],
            &[bytes.as_slice(), &[0]].concat()[..],
        ] {
            assert!(PieceView::parse(&s, bad).is_err());
        }
        // With a null or an absent column: the general path.
        let mut some = full;
        some[1].1 = Cell::Null;
        let bytes = encode(&s, &some);
        let view = PieceView::parse(&s, &bytes).expect("parse");
        assert_eq!(view.get(&s, 1), Some(Cell::Null));
        assert_eq!(view.get(&s, 3), Some(Cell::Int64(9)));
        let bytes = encode(&s, &full[2..]);
        let view = PieceView::parse(&s, &bytes).expect("parse");
        assert_eq!(
            (view.get(&s, 0), view.get(&s, 2)),
            (None, Some(Cell::Bool(true)))
        );
    }

    #[test]
    fn whole_and_partial_pieces_round_trip() {
        let s = schema();
        let all: Vec<(usize, Cell<'_>)> = cells().into_iter().enumerate().collect();
        let bytes = encode(&s, &all);
        let view = PieceView::parse(&s, &bytes).expect("parse");
        for (v, c) in &all {
            assert_eq!(view.get(&s, *v), Some(*c), "column {v}");
        }
        for pick in [
            vec![1usize, 3],
            vec![0],
            vec![6, 8],
            vec![2, 3, 6, 7],
            vec![],
        ] {
            let part: Vec<(usize, Cell<'_>)> = pick.iter().map(|&v| all[v]).collect();
            let bytes = encode(&s, &part);
            let view = PieceView::parse(&s, &bytes).expect("parse");
            assert_eq!(view.num_present(), pick.len());
            for (v, cell) in all.iter().enumerate() {
                let want = pick.contains(&v).then_some(cell.1);
                assert_eq!(view.get(&s, v), want, "column {v} of {pick:?}");
            }
        }
    }

    #[test]
    fn a_whole_row_without_nulls_costs_one_byte_of_header() {
        let s = PieceSchema::from_types(vec![ColumnType::Int32; 30]);
        let all: Vec<(usize, Cell<'_>)> = (0..30).map(|v| (v, Cell::Int32(v as i32))).collect();
        assert_eq!(encode(&s, &all).len(), 1 + 30 * 4);
    }

    #[test]
    fn every_damaged_piece_is_an_error_or_parses_within_bounds() {
        let s = schema();
        let all: Vec<(usize, Cell<'_>)> = cells().into_iter().enumerate().collect();
        let good = encode(&s, &all[..7]);
        for cut in 0..good.len() {
            let _ = PieceView::parse(&s, &good[..cut]);
        }
        for i in 0..good.len() {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut bad = good.clone();
                bad[i] ^= flip;
                if let Ok(v) = PieceView::parse(&s, &bad) {
                    for c in 0..s.len() {
                        let _ = v.get(&s, c);
                    }
                }
            }
        }
        assert!(PieceView::parse(&s, &[]).is_err());
        assert!(PieceView::parse(&s, &[0x80]).is_err());
    }
}
