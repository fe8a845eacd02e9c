//! PAX data blocks of column-group files: the keys once, then each column
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
//!                        offsets, then the bytes
//! ```
//!
//! Integers are little-endian. A tombstone row has no column; a merge row
//! only the columns its update set.

use crate::coding::get_varint64;
use crate::key::{SeqNo, ValueKind};
use crate::table::piece::{Cell, PieceSchema};
use crate::table::schema::ColumnType;

pub(super) const PARTIAL: u8 = 1;
pub(super) const FIXED_KEYS: u8 = 2;
pub(super) const COL_PRESENCE: u8 = 1;
pub(super) const COL_NULLS: u8 = 2;

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

/// The first eight bytes of `key` as a big-endian integer, zero-padded.
#[inline]
pub fn prefix_of(key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(b)
}

/// One column of a block as slices (see [`CgBlock::column_view`]). Row
/// indices must be below the block's row count.
#[derive(Clone, Copy, Debug)]
pub struct ColumnView<'a> {
    presence: Option<&'a [u8]>,
    nulls: Option<&'a [u8]>,
    values: &'a [u8],
    bytes: &'a [u8],
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
        let a = u32_at(self.values, r * 4) as usize;
        let b = u32_at(self.values, r * 4 + 4) as usize;
        &self.bytes[a..b]
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
}

/// A decoded (parsed, checked) PAX block. Cheap accessors by row.
#[derive(Debug)]
pub struct CgBlock {
    data: Vec<u8>,
    rows: usize,
    key_len: Option<usize>,
    keys: (usize, usize),
    key_offsets: (usize, usize),
    trailers: (usize, usize),
    columns: Vec<ColumnSlices>,
}

/// Why a block does not parse (the caller adds the file and offset).
pub type BlockError = String;

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize, what: &str) -> Result<(usize, usize), BlockError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| format!("block too short for its {what}"))?;
        let r = (self.pos, end);
        self.pos = end;
        Ok(r)
    }

    fn varint(&mut self, what: &str) -> Result<u64, BlockError> {
        let mut s = &self.data[self.pos..];
        let before = s.len();
        let v = get_varint64(&mut s).ok_or_else(|| format!("bad varint for {what}"))?;
        self.pos += before - s.len();
        Ok(v)
    }

    fn byte(&mut self, what: &str) -> Result<u8, BlockError> {
        let (a, _) = self.take(1, what)?;
        Ok(self.data[a])
    }
}

fn u32_at(d: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&d[at..at + 4]);
    u32::from_le_bytes(b)
}

fn check_offsets(
    d: &[u8],
    offs: (usize, usize),
    bytes_len: usize,
    what: &str,
) -> Result<(), BlockError> {
    let mut prev = 0u32;
    let n = (offs.1 - offs.0) / 4;
    for i in 0..n {
        let o = u32_at(d, offs.0 + i * 4);
        if (i == 0 && o != 0) || o < prev || o as usize > bytes_len {
            return Err(format!(
                "{what} offsets are not increasing within the block"
            ));
        }
        prev = o;
    }
    if n > 0 && prev as usize != bytes_len {
        return Err(format!(
            "{what} offsets do not end at the end of their bytes"
        ));
    }
    Ok(())
}

impl CgBlock {
    /// Parses block contents for a group whose columns are `group` (value
    /// column numbers) of types from `schema`. Every length and offset is
    /// checked, so the accessors cannot go out of bounds.
    pub fn parse(
        data: Vec<u8>,
        schema: &PieceSchema,
        group: &[usize],
    ) -> Result<CgBlock, BlockError> {
        let mut c = Cursor {
            data: &data,
            pos: 0,
        };
        let rows = usize::try_from(c.varint("row count")?).map_err(|_| "row count")?;
        if rows > data.len() {
            return Err(format!("block claims {rows} rows in {} bytes", data.len()));
        }
        let flags = c.byte("flags")?;
        if flags & !(PARTIAL | FIXED_KEYS) != 0 {
            return Err(format!("unknown block flags {flags:#04x}"));
        }
        let partial = flags & PARTIAL != 0;
        let (key_len, keys, key_offsets) = if flags & FIXED_KEYS != 0 {
            let l = usize::try_from(c.varint("key length")?).map_err(|_| "key length")?;
            let n = l.checked_mul(rows).ok_or("key bytes overflow")?;
            (Some(l), c.take(n, "keys")?, (0, 0))
        } else {
            let offs = c.take((rows + 1) * 4, "key offsets")?;
            let last = u32_at(&data, offs.1 - 4) as usize;
            let keys = c.take(last, "keys")?;
            check_offsets(&data, offs, last, "key")?;
            (None, keys, offs)
        };
        let trailers = c.take(rows * 8, "trailers")?;
        let bitmap_len = rows.div_ceil(8);
        let mut columns = Vec::with_capacity(group.len());
        for &v in group {
            let ty = schema.ty(v);
            let cf = c.byte("column flags")?;
            if cf & !(COL_PRESENCE | COL_NULLS) != 0 || (cf & COL_PRESENCE != 0) != partial {
                return Err(format!("bad flags {cf:#04x} for column {v}"));
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
            let (values, bytes) = match ty.fixed_width() {
                Some(w) => (c.take(rows * w, "column values")?, (0, 0)),
                None => {
                    let offs = c.take((rows + 1) * 4, "column offsets")?;
                    let last = u32_at(&data, offs.1 - 4) as usize;
                    let bytes = c.take(last, "column bytes")?;
                    check_offsets(&data, offs, last, "column")?;
                    (offs, bytes)
                }
            };
            columns.push(ColumnSlices {
                v,
                ty,
                presence,
                nulls,
                values,
                bytes,
            });
        }
        if c.pos != data.len() {
            return Err("bytes after the last column".into());
        }
        let block = CgBlock {
            data,
            rows,
            key_len,
            keys,
            key_offsets,
            trailers,
            columns,
        };
        for r in 0..rows {
            let t = block.trailer(r);
            if ValueKind::from_u8((t & 0xff) as u8).is_none() {
                return Err(format!("row {r} has an unknown kind {}", t & 0xff));
            }
            if r > 0 && !block.row_before(r - 1, r) {
                return Err(format!("rows {} and {r} are out of order", r - 1));
            }
        }
        Ok(block)
    }

    fn row_before(&self, a: usize, b: usize) -> bool {
        // Keys of at most eight bytes, all one length: the prefix is the key.
        let keys = match self.key_len {
            Some(l) if l <= 8 => self.key_prefix(a).cmp(&self.key_prefix(b)),
            _ => self.user_key(a).cmp(self.user_key(b)),
        };
        match keys {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Equal => self.trailer(a) > self.trailer(b),
            std::cmp::Ordering::Greater => false,
        }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Bytes held (for the cache's weight).
    pub fn size_bytes(&self) -> usize {
        self.data.len() + self.columns.len() * std::mem::size_of::<ColumnSlices>()
    }

    /// Row `r`'s user key.
    #[inline]
    pub fn user_key(&self, r: usize) -> &[u8] {
        match self.key_len {
            Some(l) => &self.data[self.keys.0 + r * l..self.keys.0 + (r + 1) * l],
            None => {
                let a = u32_at(&self.data, self.key_offsets.0 + r * 4) as usize;
                let b = u32_at(&self.data, self.key_offsets.0 + (r + 1) * 4) as usize;
                &self.data[self.keys.0 + a..self.keys.0 + b]
            }
        }
    }

    /// Row `r`'s trailer (sequence number << 8 | kind).
    #[inline]
    pub fn trailer(&self, r: usize) -> u64 {
        let mut b = [0u8; 8];
        let at = self.trailers.0 + r * 8;
        b.copy_from_slice(&self.data[at..at + 8]);
        u64::from_le_bytes(b)
    }

    /// Row `r`'s sequence number.
    pub fn seqno(&self, r: usize) -> SeqNo {
        SeqNo(self.trailer(r) >> 8)
    }

    /// Row `r`'s kind (checked at parse).
    pub fn kind(&self, r: usize) -> ValueKind {
        ValueKind::from_u8((self.trailer(r) & 0xff) as u8).unwrap_or(ValueKind::Put)
    }

    /// The first row at or after (`user_key`, `trailer`) in internal-key
    /// order (`rows()` if none).
    pub fn lower_bound(&self, user_key: &[u8], trailer: u64) -> usize {
        let (mut lo, mut hi) = (0, self.rows);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let before = match self.user_key(mid).cmp(user_key) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Equal => self.trailer(mid) > trailer,
                std::cmp::Ordering::Greater => false,
            };
            if before {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The first row whose user key is after `user_key` (`rows()` if none).
    pub fn upper_bound_key(&self, user_key: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.rows);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.user_key(mid) <= user_key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Whether some row lacks some column (a tombstone or an update).
    pub fn partial(&self) -> bool {
        self.columns.iter().any(|c| c.presence.is_some())
    }

    /// The length of every user key, when all have the same.
    pub fn fixed_key_len(&self) -> Option<usize> {
        self.key_len
    }

    /// The first eight bytes of row `r`'s user key as a big-endian integer
    /// (zero-padded): keys with smaller prefixes sort first, so a merge
    /// compares whole keys only when prefixes tie.
    #[inline]
    pub fn key_prefix(&self, r: usize) -> u64 {
        if let Some(l) = self.key_len
            && l >= 8
        {
            let at = self.keys.0 + r * l;
            let mut b = [0u8; 8];
            b.copy_from_slice(&self.data[at..at + 8]);
            return u64::from_be_bytes(b);
        }
        prefix_of(self.user_key(r))
    }

    /// Whether row `r` carries every column of the block.
    pub fn row_whole(&self, r: usize) -> bool {
        self.columns.iter().all(|c| match c.presence {
            Some((a, _)) => get_bit(&self.data[a..], r),
            None => true,
        })
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
        }
    }

    /// The position among the block's columns of value column `v`.
    pub fn column_index(&self, v: usize) -> Option<usize> {
        self.columns.iter().position(|c| c.v == v)
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
        let block = CgBlock::parse(out, &s, &group).expect("parse");
        assert_eq!(block.rows(), 4);
        assert_eq!(block.user_key(2), b"bb");
        assert_eq!(block.kind(2), ValueKind::Delete);
        assert_eq!(block.cell(0, 0), Some(Cell::Null));
        assert_eq!(block.cell(1, 0), None);
        assert_eq!(block.cell(0, 1), Some(Cell::Bytes(b"x")));
        assert_eq!(block.cell(1, 1), Some(Cell::Bool(true)));
        assert_eq!(block.cell(0, 2), None);
        assert_eq!(block.cell(0, 3), Some(Cell::Bytes(b"longer value")));
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
        let block = CgBlock::parse(out, &s, &group).expect("parse");
        assert_eq!(block.cell(1, 42), Some(Cell::Float64(42.0)));
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
        for cut in 0..good.len() {
            assert!(
                CgBlock::parse(good[..cut].to_vec(), &s, &group).is_err(),
                "cut {cut}"
            );
        }
        for i in 0..good.len() {
            for flip in [1u8, 0x40, 0xFF] {
                let mut bad = good.clone();
                bad[i] ^= flip;
                if let Ok(block) = CgBlock::parse(bad, &s, &group) {
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
