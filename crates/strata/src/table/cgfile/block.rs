//! PAX data blocks of column-group files: the keys once (the shared key
//! section, `crate::keyblock`), then each column
//! of the group as its own typed vector.
//!
//! ```text
//!   rows: varint
//!   flags: u8            bit 0: some row lacks some column (presence
//!                        bitmaps follow); bit 1: every user key has the
//!                        same length; bits 2-7 zero
//!   keys                 fixed length: varint length, then rows × length bytes
//!                        otherwise:    (rows + 1) × u32 offsets, then the bytes
//!   trailers             rows × u64 (sequence number << 8 | kind)
//!   per column of the group, in the group's order:
//!     flags: u8          bit 0: presence bitmap follows (only with block
//!                        flag bit 0); bit 1: null bitmap follows
//!     presence bitmap    ceil(rows / 8) bytes, bit r set if row r has it
//!     null bitmap        ceil(rows / 8) bytes, bit r set if row r's is null
//!     values             fixed width: rows × width bytes (zero where
//!                        absent or null); utf8 and binary: (rows + 1) × u32
//!                        offsets, then the bytes; or, with column flag
//!                        bit 2 (the file has a dictionary for the column),
//!                        width: u8 and rows codes bit-packed to that width
//!                        (`dict::bitpack`; 0 where absent or null)
//! ```
//!
//! Integers are little-endian. A tombstone row has no column; a merge row
//! only the columns its update set.

use std::sync::Arc;

use crate::coding::prefetch_at;
use crate::dict::{CodedValue, Dictionary, bitpack};
use crate::key::{SeqNo, ValueKind};
pub use crate::keyblock::BlockError;
use crate::keyblock::{KeyRows, u32_at};
use crate::table::piece::{Cell, PieceSchema};
use crate::table::schema::ColumnType;

pub(super) const PARTIAL: u8 = 1;
pub(super) const COL_PRESENCE: u8 = 1;
pub(super) const COL_NULLS: u8 = 2;
pub(super) const COL_CODES: u8 = 4;

pub(super) fn set_bit(bitmap: &mut Vec<u8>, r: usize) {
    if bitmap.len() <= r / 8 {
        bitmap.resize(r / 8 + 1, 0);
    }
    bitmap[r / 8] |= 1 << (r % 8);
}

#[inline]
fn get_bit(bitmap: &[u8], r: usize) -> bool {
    bitmap[r / 8] & (1 << (r % 8)) != 0
}

/// One column of a block as slices (see [`CgBlock::column_view`]). Row
/// indices must be below the block's row count.
#[derive(Clone, Copy, Debug)]
pub struct ColumnView<'a> {
    presence: Option<&'a [u8]>,
    nulls: Option<&'a [u8]>,
    /// Fixed width: the values. Var: the offsets, or the packed codes.
    values: &'a [u8],
    bytes: &'a [u8],
    /// For a column of codes: the file's dictionary and the codes' width.
    codes: Option<(&'a Arc<Dictionary>, u8)>,
    /// The block's rows.
    rows: usize,
}

impl<'a> ColumnView<'a> {
    /// Whether row `r` has a non-null value.
    #[inline]
    pub fn valid(&self, r: usize) -> bool {
        self.presence.is_none_or(|p| get_bit(p, r)) && self.nulls.is_none_or(|n| !get_bit(n, r))
    }

    /// The fixed-width values and the presence bitmap (`None`: every row
    /// carries the column), when no value is null.
    pub fn without_nulls(&self) -> Option<(&'a [u8], Option<&'a [u8]>)> {
        self.nulls.is_none().then_some((self.values, self.presence))
    }

    /// Row `r`'s value read as `N` little-endian bytes (fixed-width types).
    #[inline]
    pub fn fixed<const N: usize>(&self, r: usize) -> [u8; N] {
        let mut b = [0u8; N];
        b.copy_from_slice(&self.values[r * N..r * N + N]);
        b
    }

    /// Row `r`'s bytes (utf8 and binary).
    #[inline]
    pub fn var(&self, r: usize) -> &'a [u8] {
        if let Some((dict, width)) = self.codes {
            return dict.value(bitpack::get(self.values, width, r));
        }
        let a = u32_at(self.values, r * 4) as usize;
        let b = u32_at(self.values, r * 4 + 4) as usize;
        &self.bytes[a..b]
    }
}

impl<'a> ColumnView<'a> {
    /// For a column stored as codes: the file's dictionary, the packed
    /// codes and their width (a null or absent row's code is 0 and means
    /// nothing).
    pub fn codes(&self) -> Option<(&'a Arc<Dictionary>, &'a [u8], u8)> {
        self.codes.map(|(d, w)| (d, self.values, w))
    }

    /// The block's rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Bit `i` set for each row `from + i` (`i < len`) with a non-null
    /// value; `None` when every row has one.
    pub fn validity(&self, from: usize, len: usize) -> Option<Vec<u64>> {
        if self.presence.is_none() && self.nulls.is_none() {
            return None;
        }
        let mut out = vec![0u64; len.div_ceil(64)];
        for i in 0..len {
            if self.valid(from + i) {
                out[i / 64] |= 1 << (i % 64);
            }
        }
        Some(out)
    }
}

/// Minimum, maximum and counts of one column over one block.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ColumnStats {
    /// Rows that carry the column (null or not).
    pub present: u64,
    /// Of those, nulls.
    pub nulls: u64,
    /// Smallest non-null value, in key-part-free form: fixed-width types as
    /// their little-endian bytes, strings as (a prefix of) their bytes.
    pub min: Option<Vec<u8>>,
    /// Largest non-null value; for strings, `None` when it was too long to
    /// keep whole (the maximum is then unknown).
    pub max: Option<Vec<u8>>,
    /// The column is stored as codes and `min` and `max` are codes into the
    /// file's dictionary (4 bytes, little-endian), exact whatever the
    /// values' length.
    pub codes: bool,
}

/// Strings longer than this keep only a prefix as their block minimum and
/// no maximum.
pub const MAX_STAT_BYTES: usize = 32;

/// Orders two stored statistic values of type `ty`.
pub fn compare_stat(ty: ColumnType, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    fn fixed<const N: usize>(s: &[u8]) -> [u8; N] {
        let mut out = [0u8; N];
        let n = s.len().min(N);
        out[..n].copy_from_slice(&s[..n]);
        out
    }
    match ty {
        ColumnType::Int32 => i32::from_le_bytes(fixed(a)).cmp(&i32::from_le_bytes(fixed(b))),
        ColumnType::Int64 | ColumnType::Timestamp => {
            i64::from_le_bytes(fixed(a)).cmp(&i64::from_le_bytes(fixed(b)))
        }
        ColumnType::Float64 => {
            f64::from_le_bytes(fixed(a)).total_cmp(&f64::from_le_bytes(fixed(b)))
        }
        ColumnType::Bool | ColumnType::Utf8 | ColumnType::Binary => a.cmp(b),
    }
}

/// Where one column's parts lie in a decoded block.
#[derive(Clone, Debug)]
struct ColumnSlices {
    v: usize,
    ty: ColumnType,
    presence: Option<(usize, usize)>,
    nulls: Option<(usize, usize)>,
    /// Fixed: the values. Var: the offsets array.
    values: (usize, usize),
    /// Var only: the bytes.
    bytes: (usize, usize),
    /// A column of codes: the file's dictionary and the codes' width.
    codes: Option<(Arc<Dictionary>, u8)>,
}

/// A decoded (parsed, checked) PAX block. Cheap accessors by row.
#[derive(Debug)]
pub struct CgBlock {
    data: Vec<u8>,
    keys: KeyRows,
    columns: Vec<ColumnSlices>,
    /// The group's value column numbers, ascending (`columns[i]` holds
    /// column `numbers[i]`).
    numbers: Vec<usize>,
    /// In a partial block, bit `r` says whether row `r` carries every
    /// column (the presence bitmaps' intersection, computed once so that a
    /// scan asks it per row in one step); empty in a whole block.
    whole: Vec<u8>,
}

impl crate::cache::Recyclable for CgBlock {
    fn into_buffer(self) -> Vec<u8> {
        self.data
    }
}

impl CgBlock {
    /// Parses block contents for a group whose columns are `group` (value
    /// column numbers, ascending) of types from `schema`; `dicts[i]` is the file's
    /// dictionary of the group's `i`-th column, if it has one (an empty
    /// slice: none has). Every length, offset and code is checked, so the
    /// accessors cannot go out of bounds.
    pub fn parse(
        data: Vec<u8>,
        schema: &PieceSchema,
        group: &[usize],
        dicts: &[Option<Arc<Dictionary>>],
    ) -> Result<CgBlock, BlockError> {
        let (keys, flags, mut c) = KeyRows::parse(&data)?;
        let rows = keys.rows();
        if flags & !PARTIAL != 0 {
            return Err(format!("unknown block flags {flags:#04x}"));
        }
        let partial = flags & PARTIAL != 0;
        if group.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!("the group's columns {group:?} are not ascending"));
        }
        let bitmap_len = rows.div_ceil(8);
        let mut columns = Vec::with_capacity(group.len());
        for (i, &v) in group.iter().enumerate() {
            let ty = schema.ty(v);
            let dict = dicts.get(i).and_then(Option::as_ref);
            let cf = c.byte("column flags")?;
            if cf & !(COL_PRESENCE | COL_NULLS | COL_CODES) != 0
                || (cf & COL_PRESENCE != 0) != partial
            {
                return Err(format!("bad flags {cf:#04x} for column {v}"));
            }
            if (cf & COL_CODES != 0) != dict.is_some() {
                return Err(format!(
                    "column {v} is {} but the file {} a dictionary for it",
                    if cf & COL_CODES != 0 {
                        "codes"
                    } else {
                        "plain"
                    },
                    if dict.is_some() { "has" } else { "has no" }
                ));
            }
            let presence = if cf & COL_PRESENCE != 0 {
                Some(c.take(bitmap_len, "presence bitmap")?)
            } else {
                None
            };
            let nulls = if cf & COL_NULLS != 0 {
                Some(c.take(bitmap_len, "null bitmap")?)
            } else {
                None
            };
            let mut codes = None;
            let (values, bytes) = match (ty.fixed_width(), dict) {
                (Some(w), None) => (c.take(rows * w, "column values")?, (0, 0)),
                (None, None) => c.offsets_and_bytes(rows, "column")?,
                (None, Some(dict)) => {
                    let width = c.byte("code width")?;
                    let limit = dict.len().max(1) as u32;
                    if width > bitpack::width_for(limit - 1) {
                        return Err(format!(
                            "codes of {width} bits for a dictionary of {} values",
                            dict.len()
                        ));
                    }
                    let range = c.take(bitpack::packed_len(rows, width), "codes")?;
                    // A row with a value needs a code in the dictionary (an
                    // empty dictionary has none); the others' codes are not
                    // read, and only need to fit the width.
                    let bit = |slice: Option<(usize, usize)>, r: usize| {
                        slice.map(|(a, _)| get_bit(&data[a..], r))
                    };
                    let mut bad = false;
                    bitpack::for_each(&data[range.0..range.1], width, rows, |r, code| {
                        let valued = bit(presence, r) != Some(false) && bit(nulls, r) != Some(true);
                        bad |= code >= limit || (valued && code as usize >= dict.len());
                    });
                    if bad {
                        return Err(format!("a code of column {v} past its dictionary"));
                    }
                    codes = Some((Arc::clone(dict), width));
                    (range, (0, 0))
                }
                (Some(_), Some(_)) => {
                    return Err(format!("column {v} is fixed-width and cannot be codes"));
                }
            };
            columns.push(ColumnSlices {
                v,
                ty,
                presence,
                nulls,
                values,
                bytes,
                codes,
            });
        }
        if c.pos() != data.len() {
            return Err("bytes after the last column".into());
        }
        let mut whole = Vec::new();
        if partial {
            whole.resize(bitmap_len, 0xff);
            for col in &columns {
                if let Some((a, b)) = col.presence {
                    for (w, p) in whole.iter_mut().zip(&data[a..b]) {
                        *w &= p;
                    }
                }
            }
        }
        Ok(CgBlock {
            data,
            keys,
            columns,
            numbers: group.to_vec(),
            whole,
        })
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.keys.rows()
    }

    /// The key section and the bytes it indexes.
    pub fn key_rows(&self) -> (&KeyRows, &[u8]) {
        (&self.keys, &self.data)
    }

    /// Bytes held (for the cache's weight).
    pub fn size_bytes(&self) -> usize {
        // (The buffer's capacity: a recycled one may be larger than the
        // block.)
        self.data.capacity()
            + self.whole.capacity()
            + self.numbers.capacity() * std::mem::size_of::<usize>()
            + self.columns.len() * std::mem::size_of::<ColumnSlices>()
    }

    /// Row `r`'s user key.
    #[inline]
    pub fn user_key(&self, r: usize) -> &[u8] {
        self.keys.user_key(&self.data, r)
    }

    /// Row `r`'s trailer (sequence number << 8 | kind).
    #[inline]
    pub fn trailer(&self, r: usize) -> u64 {
        self.keys.trailer(&self.data, r)
    }

    /// Row `r`'s sequence number.
    pub fn seqno(&self, r: usize) -> SeqNo {
        self.keys.seqno(&self.data, r)
    }

    /// Row `r`'s kind (checked at parse).
    pub fn kind(&self, r: usize) -> ValueKind {
        self.keys.kind(&self.data, r)
    }

    /// The first row at or after (`user_key`, `trailer`) in internal-key
    /// order (`rows()` if none).
    pub fn lower_bound(&self, user_key: &[u8], trailer: u64) -> usize {
        self.keys.lower_bound(&self.data, user_key, trailer)
    }

    /// The first row whose user key is after `user_key` (`rows()` if none).
    pub fn upper_bound_key(&self, user_key: &[u8]) -> usize {
        self.keys.upper_bound_key(&self.data, user_key)
    }

    /// Whether some row lacks some column (a tombstone or an update).
    pub fn partial(&self) -> bool {
        self.columns.iter().any(|c| c.presence.is_some())
    }

    /// The length of every user key, when all have the same.
    pub fn fixed_key_len(&self) -> Option<usize> {
        self.keys.fixed_key_len()
    }

    /// The first eight bytes of row `r`'s user key as a big-endian integer
    /// (zero-padded): keys with smaller prefixes sort first, so a merge
    /// compares whole keys only when prefixes tie.
    #[inline]
    pub fn key_prefix(&self, r: usize) -> u64 {
        self.keys.key_prefix(&self.data, r)
    }

    /// Whether row `r` carries every column of the block.
    #[inline]
    pub fn row_whole(&self, r: usize) -> bool {
        self.whole.is_empty() || get_bit(&self.whole, r)
    }

    /// Whether row `r` carries the block's `i`-th column (null or not).
    #[inline]
    pub fn has(&self, i: usize, r: usize) -> bool {
        match self.columns[i].presence {
            Some((a, _)) => get_bit(&self.data[a..], r),
            None => true,
        }
    }

    /// The block's `i`-th column as slices, for loops over many rows.
    pub fn column_view(&self, i: usize) -> ColumnView<'_> {
        let c = &self.columns[i];
        let d = &self.data;
        ColumnView {
            presence: c.presence.map(|(a, b)| &d[a..b]),
            nulls: c.nulls.map(|(a, b)| &d[a..b]),
            values: &d[c.values.0..c.values.1],
            bytes: &d[c.bytes.0..c.bytes.1],
            codes: c.codes.as_ref().map(|(dict, w)| (dict, *w)),
            rows: self.rows(),
        }
    }

    /// The smallest and largest code of the block's `i`-th column over the
    /// rows that carry a non-null value, if it is stored as codes and some
    /// row does (what the index's statistics must say).
    pub fn code_range(&self, i: usize) -> Option<(u32, u32)> {
        let c = &self.columns[i];
        let (_, width) = c.codes.as_ref()?;
        let view = self.column_view(i);
        let mut range: Option<(u32, u32)> = None;
        bitpack::for_each(
            &self.data[c.values.0..c.values.1],
            *width,
            self.rows(),
            |r, code| {
                if view.valid(r) {
                    let (lo, hi) = range.get_or_insert((code, code));
                    (*lo, *hi) = ((*lo).min(code), (*hi).max(code));
                }
            },
        );
        range
    }

    /// Calls `f(v, code)` for each column `v` of the block stored as codes
    /// whose row `r` carries a non-null value.
    pub fn for_each_code(&self, r: usize, f: &mut dyn FnMut(usize, CodedValue<'_>)) {
        for (i, c) in self.columns.iter().enumerate() {
            if c.codes.is_some()
                && let Some(code) = self.value_code(i, r)
            {
                f(c.v, code);
            }
        }
    }

    /// Row `r`'s value of the block's `i`-th column as a code into the
    /// file's dictionary, if the column is stored as codes and the row
    /// carries a non-null value.
    pub fn value_code(&self, i: usize, r: usize) -> Option<CodedValue<'_>> {
        let c = &self.columns[i];
        let (dictionary, width) = c.codes.as_ref()?;
        self.column_view(i).valid(r).then(|| CodedValue {
            dictionary,
            code: bitpack::get(&self.data[c.values.0..c.values.1], *width, r),
        })
    }

    /// The position among the block's columns of value column `v`.
    #[cfg(test)]
    pub fn column_index(&self, v: usize) -> Option<usize> {
        // (The group is ascending: `parse` refuses another.)
        self.numbers.binary_search(&v).ok()
    }

    /// The group's value column numbers, ascending: the `i`-th is the
    /// block's column `i`.
    pub fn value_columns(&self) -> &[usize] {
        &self.numbers
    }

    /// Asks for the cache lines row `r`'s cells are in (for strings, their
    /// offsets), of every value column `wanted` names at once: a point read
    /// then waits for one miss where reading the cells one by one waited
    /// for each column's in turn.
    pub fn prefetch_row(&self, r: usize, wanted: impl Fn(usize) -> bool) {
        let d = &self.data;
        for c in self.columns.iter().filter(|c| wanted(c.v)) {
            if let Some((a, _)) = c.presence {
                prefetch_at(d, a + r / 8);
            }
            if let Some((a, _)) = c.nulls {
                prefetch_at(d, a + r / 8);
            }
            let at = match &c.codes {
                Some((_, bits)) => r * usize::from(*bits) / 8,
                // Variable-width values: their u32 offsets.
                None => r * c.ty.fixed_width().unwrap_or(4),
            };
            prefetch_at(d, c.values.0 + at);
        }
    }

    /// Row `r`'s value of the block's `i`-th column; `None` if the row does
    /// not carry it.
    #[inline]
    pub fn cell(&self, i: usize, r: usize) -> Option<Cell<'_>> {
        let c = &self.columns[i];
        if let Some((a, _)) = c.presence
            && !get_bit(&self.data[a..], r)
        {
            return None;
        }
        if let Some((a, _)) = c.nulls
            && get_bit(&self.data[a..], r)
        {
            return Some(Cell::Null);
        }
        let d = &self.data;
        let at = |w: usize| c.values.0 + r * w;
        Some(match c.ty {
            ColumnType::Int32 => {
                let p = at(4);
                Cell::Int32(i32::from_le_bytes([d[p], d[p + 1], d[p + 2], d[p + 3]]))
            }
            ColumnType::Int64 | ColumnType::Timestamp => {
                let p = at(8);
                let mut b = [0u8; 8];
                b.copy_from_slice(&d[p..p + 8]);
                Cell::Int64(i64::from_le_bytes(b))
            }
            ColumnType::Float64 => {
                let p = at(8);
                let mut b = [0u8; 8];
                b.copy_from_slice(&d[p..p + 8]);
                Cell::Float64(f64::from_le_bytes(b))
            }
            ColumnType::Bool => Cell::Bool(d[at(1)] != 0),
            ColumnType::Utf8 | ColumnType::Binary => {
                if let Some((dict, width)) = &c.codes {
                    let code = bitpack::get(&d[c.values.0..c.values.1], *width, r);
                    return Some(Cell::Bytes(dict.value(code)));
                }
                let a = u32_at(d, c.values.0 + r * 4) as usize;
                let b = u32_at(d, c.values.0 + (r + 1) * 4) as usize;
                Cell::Bytes(&d[c.bytes.0 + a..c.bytes.0 + b])
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::pack_trailer;
    use crate::table::cgfile::block_builder::BlockBuilder;
    use crate::table::piece::PieceEncoder;
    use crate::table::piece::PieceView;

    fn schema() -> PieceSchema {
        PieceSchema::from_types(vec![
            ColumnType::Int32,
            ColumnType::Utf8,
            ColumnType::Float64,
            ColumnType::Bool,
        ])
    }

    fn piece(s: &PieceSchema, cells: &[(usize, Cell<'_>)]) -> Vec<u8> {
        let mut e = PieceEncoder::new(s);
        for (v, c) in cells {
            e.push(s, *v, *c);
        }
        let mut out = Vec::new();
        e.finish(s, &mut out);
        out
    }

    #[test]
    fn rows_round_trip_with_partial_rows_tombstones_and_nulls() {
        let s = schema();
        let group = [1usize, 3];
        let mut b = BlockBuilder::new(&s, &group);
        let p0 = piece(
            &s,
            &[
                (0, Cell::Int32(1)),
                (1, Cell::Bytes(b"x")),
                (2, Cell::Float64(1.0)),
                (3, Cell::Bool(true)),
            ],
        );
        let p1 = piece(&s, &[(1, Cell::Null)]);
        let p2 = piece(
            &s,
            &[
                (0, Cell::Int32(5)),
                (1, Cell::Bytes(b"longer value")),
                (2, Cell::Null),
                (3, Cell::Bool(false)),
            ],
        );
        type Row<'a> = (&'a [u8], u64, Option<&'a Vec<u8>>);
        let rows: Vec<Row<'_>> = vec![
            (
                b"a",
                pack_trailer(SeqNo(9), ValueKind::Merge as u8),
                Some(&p1),
            ),
            (
                b"a",
                pack_trailer(SeqNo(3), ValueKind::Put as u8),
                Some(&p0),
            ),
            (b"bb", pack_trailer(SeqNo(7), ValueKind::Delete as u8), None),
            (
                b"c",
                pack_trailer(SeqNo(2), ValueKind::Put as u8),
                Some(&p2),
            ),
        ];
        for (k, t, p) in &rows {
            let view = p.map(|p| PieceView::parse(&s, p).expect("piece"));
            b.add(k, *t, view.as_ref().map(|v| (&s, v)));
        }
        let stats = b.stats();
        assert_eq!(stats[0].present, 3);
        assert_eq!(stats[0].nulls, 1);
        assert_eq!(stats[0].min.as_deref(), Some(&b"longer value"[..]));
        assert_eq!(stats[0].max.as_deref(), Some(&b"x"[..]));
        let mut out = Vec::new();
        b.finish(&mut out);
        let block = CgBlock::parse(out, &s, &group, &[]).expect("parse");
        assert_eq!(block.rows(), 4);
        assert_eq!(block.user_key(2), b"bb");
        assert_eq!(block.kind(2), ValueKind::Delete);
        assert_eq!(block.cell(0, 0), Some(Cell::Null));
        assert_eq!(block.cell(1, 0), None);
        assert_eq!(block.cell(0, 1), Some(Cell::Bytes(b"x")));
        assert_eq!(block.cell(1, 1), Some(Cell::Bool(true)));
        assert_eq!(block.cell(0, 2), None);
        assert_eq!(block.cell(0, 3), Some(Cell::Bytes(b"longer value")));
        // Whole rows: every column of the group present (null or not).
        let columns: Vec<Option<usize>> = (0..5).map(|v| block.column_index(v)).collect();
        assert_eq!(columns, [None, Some(0), None, Some(1), None]);
        let whole: Vec<bool> = (0..4).map(|r| block.row_whole(r)).collect();
        assert_eq!(whole, [false, true, false, true]);
        let has_all = |r| (0..group.len()).all(|i| block.has(i, r));
        assert_eq!(whole, (0..4).map(has_all).collect::<Vec<_>>());
        assert_eq!(block.lower_bound(b"a", pack_trailer(SeqNo(5), 0xff)), 1);
        assert_eq!(block.lower_bound(b"b", 0), 2);
        assert_eq!(block.lower_bound(b"z", 0), 4);
    }

    #[test]
    fn fixed_width_keys_and_complete_rows_need_no_bitmaps() {
        let s = schema();
        let group = [0usize, 2];
        let mut b = BlockBuilder::new(&s, &group);
        for i in 0..100i32 {
            let p = piece(
                &s,
                &[
                    (0, Cell::Int32(i)),
                    (1, Cell::Bytes(b"")),
                    (2, Cell::Float64(f64::from(i))),
                    (3, Cell::Bool(false)),
                ],
            );
            let view = PieceView::parse(&s, &p).expect("piece");
            b.add(
                &i.to_be_bytes(),
                pack_trailer(SeqNo(1), 1),
                Some((&s, &view)),
            );
        }
        let mut out = Vec::new();
        b.finish(&mut out);
        // rows varint + flags + key len + keys + trailers + 2 × (flags + values)
        assert_eq!(out.len(), 1 + 1 + 1 + 400 + 800 + 1 + 400 + 1 + 800);
        let block = CgBlock::parse(out, &s, &group, &[]).expect("parse");
        assert_eq!(block.cell(1, 42), Some(Cell::Float64(42.0)));
    }

    /// Fixed-width bounds are the smallest and largest non-null value of
    /// the rows that carry the column, in the type's order (signed, floats
    /// in total order), as a fold of `compare_stat` over those values
    /// gives them; nulls and rows without the column (stored as zeros) do
    /// not count.
    #[test]
    fn fixed_width_bounds_skip_nulls_and_absent_rows() {
        let s = schema();
        let group = [0usize, 2, 3];
        let floats = [
            0.5,
            -0.0,
            0.0,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e300,
            -3.25,
        ];
        // Ints and floats away from zero in the first case, so a stray
        // zero moves a bound; then every special float in turn.
        // One row: the int, float and bool columns' values (`None`: null).
        type Row = (Option<i32>, Option<f64>, Option<bool>);
        let cases: Vec<Vec<Row>> = vec![
            vec![
                (Some(17), Some(0.5), Some(true)),
                (Some(1_000), Some(7.0), Some(true)),
                (None, None, None),
                (Some(5), Some(3.5), Some(true)),
                (Some(42), Some(1e300), None),
            ],
            (0..floats.len() * 3)
                .map(|i| {
                    let f = floats[(i * 7) % floats.len()];
                    let n = i32::try_from(i).expect("small") * 37 - 200;
                    (Some(n), (i % 5 != 3).then_some(f), Some(i % 2 == 0))
                })
                .collect(),
        ];
        for rows in &cases {
            let mut b = BlockBuilder::new(&s, &group);
            let mut expect: [Option<(Vec<u8>, Vec<u8>)>; 3] = [None, None, None];
            for (i, (a, f, t)) in rows.iter().enumerate() {
                // A row of all-missing columns carries only the string (a
                // partial row); others carry nulls where a value is missing.
                let cells = if a.is_none() && f.is_none() && t.is_none() {
                    vec![(1, Cell::Bytes(b"s"))]
                } else {
                    vec![
                        (0, a.map_or(Cell::Null, Cell::Int32)),
                        (1, Cell::Bytes(b"s")),
                        (2, f.map_or(Cell::Null, Cell::Float64)),
                        (3, t.map_or(Cell::Null, Cell::Bool)),
                    ]
                };
                let p = piece(&s, &cells);
                let view = PieceView::parse(&s, &p).expect("piece");
                b.add(&[i as u8], pack_trailer(SeqNo(1), 1), Some((&s, &view)));
                let stored: [Option<Vec<u8>>; 3] = [
                    a.map(|x| x.to_le_bytes().to_vec()),
                    f.map(|x| x.to_le_bytes().to_vec()),
                    t.map(|x| vec![u8::from(x)]),
                ];
                let types = [ColumnType::Int32, ColumnType::Float64, ColumnType::Bool];
                for ((e, v), ty) in expect.iter_mut().zip(stored).zip(types) {
                    let Some(v) = v else { continue };
                    *e = Some(match e.take() {
                        None => (v.clone(), v),
                        Some((lo, hi)) => (
                            if compare_stat(ty, &v, &lo).is_lt() {
                                v.clone()
                            } else {
                                lo
                            },
                            if compare_stat(ty, &v, &hi).is_gt() {
                                v
                            } else {
                                hi
                            },
                        ),
                    });
                }
            }
            let stats = b.stats();
            for (i, e) in expect.iter().enumerate() {
                let got = stats[i].min.clone().zip(stats[i].max.clone());
                assert_eq!(&got, e, "column {i} of {rows:?}");
            }
        }
        // A column with no value has no bounds.
        let mut b = BlockBuilder::new(&s, &[0]);
        let p = piece(&s, &[(0, Cell::Null)]);
        let view = PieceView::parse(&s, &p).expect("piece");
        b.add(b"k", pack_trailer(SeqNo(1), 1), Some((&s, &view)));
        assert_eq!(b.stats()[0].min, None);
        assert_eq!(b.stats()[0].max, None);
    }

    #[test]
    fn codes_must_lie_in_the_dictionary_for_rows_with_values() {
        use crate::table::cgfile::block_builder::Value;
        let s = schema();
        let group = [1usize];
        // Rows: code 1, null, code 0.
        let mut b = BlockBuilder::new(&s, &group);
        b.set_coded(0);
        let cells = [
            Some(Value::Code(1)),
            Some(Value::Cell(Cell::Null)),
            Some(Value::Code(0)),
        ];
        for (i, v) in cells.iter().enumerate() {
            b.add_values(
                format!("k{i}").as_bytes(),
                pack_trailer(SeqNo(1), 1),
                |_, _| *v,
            );
        }
        let stats = b.stats();
        assert!(stats[0].codes);
        assert_eq!(stats[0].min.as_deref(), Some(&0u32.to_le_bytes()[..]));
        assert_eq!(stats[0].max.as_deref(), Some(&1u32.to_le_bytes()[..]));
        let mut out = Vec::new();
        b.finish(&mut out);
        let dict = |values: &[&[u8]]| {
            Some(Arc::new(
                Dictionary::from_sorted(values.iter().copied()).expect("dict"),
            ))
        };
        let block = CgBlock::parse(out.clone(), &s, &group, &[dict(&[b"a", b"b"])]).expect("parse");
        assert_eq!(block.cell(0, 0), Some(Cell::Bytes(b"b")));
        assert_eq!(block.cell(0, 1), Some(Cell::Null));
        assert_eq!(block.code_range(0), Some((0, 1)));
        // A dictionary too small for a row's code, an empty one, or none at
        // all: errors, not panics on read.
        for d in [dict(&[b"a"]), dict(&[]), None] {
            assert!(CgBlock::parse(out.clone(), &s, &group, &[d]).is_err());
        }
        // Codes of width 0 (every code 0) against an empty dictionary: the
        // row with a value has no value to read.
        let mut z = BlockBuilder::new(&s, &group);
        z.set_coded(0);
        z.add_values(b"k", pack_trailer(SeqNo(1), 1), |_, _| Some(Value::Code(0)));
        let mut zero = Vec::new();
        z.finish(&mut zero);
        assert!(CgBlock::parse(zero.clone(), &s, &group, &[dict(&[b"only"])]).is_ok());
        assert!(CgBlock::parse(zero, &s, &group, &[dict(&[])]).is_err());
        // A plain block read as if the file had a dictionary: an error.
        let mut p = BlockBuilder::new(&s, &group);
        let piece_bytes = piece(&s, &[(1, Cell::Bytes(b"x"))]);
        let view = PieceView::parse(&s, &piece_bytes).expect("piece");
        p.add(b"k", pack_trailer(SeqNo(1), 1), Some((&s, &view)));
        let mut plain = Vec::new();
        p.finish(&mut plain);
        assert!(CgBlock::parse(plain, &s, &group, &[dict(&[b"x"])]).is_err());
    }

    #[test]
    fn damaged_blocks_are_errors_never_panics() {
        let s = schema();
        let group = [0usize, 1];
        let mut b = BlockBuilder::new(&s, &group);
        for i in 0..5i32 {
            let p = piece(&s, &[(0, Cell::Int32(i)), (1, Cell::Bytes(&[b'v'; 3]))]);
            let view = PieceView::parse(&s, &p).expect("piece");
            b.add(
                format!("key{i}").as_bytes(),
                pack_trailer(SeqNo(1), 2),
                Some((&s, &view)),
            );
        }
        let mut good = Vec::new();
        b.finish(&mut good);
        // A group out of order is refused (column lookups search it).
        assert!(CgBlock::parse(good.clone(), &s, &[1, 0], &[]).is_err());
        for cut in 0..good.len() {
            assert!(
                CgBlock::parse(good[..cut].to_vec(), &s, &group, &[]).is_err(),
                "cut {cut}"
            );
        }
        for i in 0..good.len() {
            for flip in [1u8, 0x40, 0xFF] {
                let mut bad = good.clone();
                bad[i] ^= flip;
                if let Ok(block) = CgBlock::parse(bad, &s, &group, &[]) {
                    for r in 0..block.rows() {
                        let _ = block.user_key(r);
                        for c in 0..group.len() {
                            let _ = block.cell(c, r);
                        }
                    }
                }
            }
        }
    }
}
