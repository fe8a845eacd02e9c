//! Building the PAX data blocks of column-group files (the layout is in
//! [`super::block`]): rows are added one by one, each column's values,
//! presence and null bits and statistics collected apart, and the block is
//! encoded when it is full.

use super::block::{
    COL_CODES, COL_NULLS, COL_PRESENCE, ColumnStats, MAX_STAT_BYTES, PARTIAL, compare_stat, set_bit,
};
use crate::dict::bitpack;
use crate::keyblock::KeyRowsBuilder;
use crate::table::piece::{Cell, PieceSchema, PieceView};
use crate::table::schema::ColumnType;

/// A row's value of one column, as a writer hands it to the block.
#[derive(Clone, Copy, Debug)]
pub enum Value<'a> {
    /// A value (or null).
    Cell(Cell<'a>),
    /// A code into the file's dictionary of the column.
    Code(u32),
}

struct ColumnBuf {
    v: usize,
    ty: ColumnType,
    /// Values are codes into the file's dictionary of the column.
    coded: bool,
    codes: Vec<u32>,
    min_code: u32,
    max_code: u32,
    presence: Vec<u8>,
    nulls: Vec<u8>,
    fixed: Vec<u8>,
    offsets: Vec<u32>,
    bytes: Vec<u8>,
    /// Counts, and for variable-width columns the bounds so far (a
    /// fixed-width column's are found when the block is full).
    stats: ColumnStats,
    /// A string maximum was longer than [`MAX_STAT_BYTES`].
    max_unknown: bool,
    /// Whether to keep minimum and maximum (blocks bound for a file do).
    keep_stats: bool,
}

impl ColumnBuf {
    fn new(v: usize, ty: ColumnType) -> ColumnBuf {
        ColumnBuf {
            v,
            ty,
            coded: false,
            codes: Vec::new(),
            min_code: u32::MAX,
            max_code: 0,
            presence: Vec::new(),
            nulls: Vec::new(),
            fixed: Vec::new(),
            offsets: vec![0],
            bytes: Vec::new(),
            stats: ColumnStats::default(),
            max_unknown: false,
            keep_stats: true,
        }
    }

    fn clear(&mut self) {
        self.presence.clear();
        self.nulls.clear();
        self.fixed.clear();
        self.offsets.clear();
        self.offsets.push(0);
        self.bytes.clear();
        self.codes.clear();
        (self.min_code, self.max_code) = (u32::MAX, 0);
        self.stats = ColumnStats::default();
        self.max_unknown = false;
    }

    fn push_code(&mut self, r: usize, code: u32) {
        set_bit(&mut self.presence, r);
        self.stats.present += 1;
        self.codes.push(code);
        self.min_code = self.min_code.min(code);
        self.max_code = self.max_code.max(code);
    }

    fn push(&mut self, r: usize, cell: Option<Cell<'_>>) {
        let width = self.ty.fixed_width();
        match cell {
            None | Some(Cell::Null) => {
                if self.coded {
                    self.codes.push(0);
                } else if let Some(w) = width {
                    self.fixed.extend(std::iter::repeat_n(0, w));
                } else {
                    self.offsets.push(self.bytes.len() as u32);
                }
                if cell.is_some() {
                    set_bit(&mut self.presence, r);
                    set_bit(&mut self.nulls, r);
                    self.stats.present += 1;
                    self.stats.nulls += 1;
                }
            }
            Some(c) => {
                set_bit(&mut self.presence, r);
                self.stats.present += 1;
                match c {
                    Cell::Int32(x) => self.fixed.extend_from_slice(&x.to_le_bytes()),
                    Cell::Int64(x) => self.fixed.extend_from_slice(&x.to_le_bytes()),
                    Cell::Float64(x) => self.fixed.extend_from_slice(&x.to_le_bytes()),
                    Cell::Bool(b) => self.fixed.push(u8::from(b)),
                    Cell::Bytes(b) => {
                        self.bytes.extend_from_slice(b);
                        self.offsets.push(self.bytes.len() as u32);
                    }
                    Cell::Null => {}
                }
                // (Fixed-width bounds are found once per block: `stats`.)
                if self.keep_stats && width.is_none() {
                    self.note_stat(&c);
                }
            }
        }
    }

    /// Pushes a present, non-null value given as the bytes a block stores
    /// (little-endian for fixed-width types), as a row piece holds them.
    #[inline]
    fn push_stored(&mut self, r: usize, value: &[u8]) {
        set_bit(&mut self.presence, r);
        self.stats.present += 1;
        if self.ty.fixed_width().is_some() {
            // Constant lengths, so that no call to `memcpy` copies 4 bytes.
            match *value {
                [a, b, c, d] => self.fixed.extend_from_slice(&[a, b, c, d]),
                [a, b, c, d, e, f, g, h] => self.fixed.extend_from_slice(&[a, b, c, d, e, f, g, h]),
                _ => self.fixed.extend_from_slice(value),
            }
        } else {
            self.bytes.extend_from_slice(value);
            self.offsets.push(self.bytes.len() as u32);
            if self.keep_stats {
                self.note_stored(value);
            }
        }
    }

    /// Folds a non-null string or binary value into the block's minimum
    /// and maximum (fixed-width bounds are found once: `fixed_bounds`). No
    /// allocation unless a bound moves.
    fn note_stat(&mut self, c: &Cell<'_>) {
        let mut buf = [0u8; 8];
        let value: &[u8] = match *c {
            Cell::Null => return,
            Cell::Int32(x) => {
                buf[..4].copy_from_slice(&x.to_le_bytes());
                &buf[..4]
            }
            Cell::Int64(x) => {
                buf = x.to_le_bytes();
                &buf
            }
            Cell::Float64(x) => {
                buf = x.to_le_bytes();
                &buf
            }
            Cell::Bool(b) => {
                buf[0] = u8::from(b);
                &buf[..1]
            }
            Cell::Bytes(b) => b,
        };
        self.note_stored(value);
    }

    /// [`Self::note_stat`] of a value as a block stores it.
    fn note_stored(&mut self, value: &[u8]) {
        let ty = self.ty;
        let lo = &value[..value.len().min(MAX_STAT_BYTES)];
        fn set(slot: &mut Option<Vec<u8>>, v: &[u8]) {
            let m = slot.get_or_insert_with(Vec::new);
            m.clear();
            m.extend_from_slice(v);
        }
        if self
            .stats
            .min
            .as_deref()
            .is_none_or(|m| compare_stat(ty, lo, m).is_lt())
        {
            set(&mut self.stats.min, lo);
        }
        if value.len() > MAX_STAT_BYTES {
            self.max_unknown = true;
        } else if self
            .stats
            .max
            .as_deref()
            .is_none_or(|m| compare_stat(ty, value, m).is_gt())
        {
            set(&mut self.stats.max, value);
        }
    }

    fn size(&self) -> usize {
        let codes = bitpack::packed_len(self.codes.len(), bitpack::width_for(self.max_code));
        self.fixed.len()
            + self.bytes.len()
            + self.offsets.len() * 4
            + self.presence.len() * 2
            + codes
    }

    /// The smallest and largest non-null value of a fixed-width column, as
    /// stored bytes: one typed pass over the block's values when it is
    /// full, cheaper than a comparison of stored bytes per value added.
    fn fixed_bounds(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let w = self.ty.fixed_width()?;
        let bit = |bits: &[u8], r: usize| bits.get(r / 8).is_some_and(|b| b & (1 << (r % 8)) != 0);
        let valid = |r: usize| bit(&self.presence, r) && !bit(&self.nulls, r);
        fn fold<T: Copy, const N: usize>(
            values: &[u8],
            valid: impl Fn(usize) -> bool,
            parse: fn([u8; N]) -> T,
            less: fn(&T, &T) -> bool,
        ) -> Option<(T, T)> {
            let mut out: Option<(T, T)> = None;
            for (r, chunk) in values.chunks_exact(N).enumerate() {
                if !valid(r) {
                    continue;
                }
                let mut b = [0u8; N];
                b.copy_from_slice(chunk);
                let x = parse(b);
                out = Some(match out {
                    None => (x, x),
                    Some((lo, hi)) => (
                        if less(&x, &lo) { x } else { lo },
                        if less(&hi, &x) { x } else { hi },
                    ),
                });
            }
            out
        }
        let v = &self.fixed;
        match (self.ty, w) {
            (ColumnType::Int32, 4) => fold(v, valid, i32::from_le_bytes, |a, b| a < b)
                .map(|(lo, hi)| (lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec())),
            (ColumnType::Int64 | ColumnType::Timestamp, 8) => {
                fold(v, valid, i64::from_le_bytes, |a, b| a < b)
                    .map(|(lo, hi)| (lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec()))
            }
            (ColumnType::Float64, 8) => {
                fold(v, valid, f64::from_le_bytes, |a, b| a.total_cmp(b).is_lt())
                    .map(|(lo, hi)| (lo.to_le_bytes().to_vec(), hi.to_le_bytes().to_vec()))
            }
            (ColumnType::Bool, 1) => {
                fold(v, valid, |b: [u8; 1]| b[0], |a, b| a < b).map(|(lo, hi)| (vec![lo], vec![hi]))
            }
            _ => None,
        }
    }

    fn stats(&self) -> ColumnStats {
        let mut s = self.stats.clone();
        if self.keep_stats
            && !self.coded
            && let Some((lo, hi)) = self.fixed_bounds()
        {
            (s.min, s.max) = (Some(lo), Some(hi));
        }
        if self.coded {
            // Codes are exact bounds whatever the values' length.
            s.codes = true;
            if s.present > s.nulls {
                s.min = Some(self.min_code.to_le_bytes().to_vec());
                s.max = Some(self.max_code.to_le_bytes().to_vec());
            }
        } else if self.max_unknown {
            s.max = None;
        }
        s
    }
}

/// Collects rows into one PAX block.
pub struct BlockBuilder {
    keys: KeyRowsBuilder,
    columns: Vec<ColumnBuf>,
    rows: usize,
    partial: bool,
}

impl BlockBuilder {
    /// A builder for the group of value columns `group` (ascending) of a
    /// table whose value columns are `schema`.
    pub fn new(schema: &PieceSchema, group: &[usize]) -> BlockBuilder {
        BlockBuilder {
            keys: KeyRowsBuilder::default(),
            columns: group
                .iter()
                .map(|&v| ColumnBuf::new(v, schema.ty(v)))
                .collect(),
            rows: 0,
            partial: false,
        }
    }

    /// A builder for blocks that are read in memory and never stored (a
    /// scan's staged rows): no minimum and maximum.
    pub fn without_statistics(schema: &PieceSchema, group: &[usize]) -> BlockBuilder {
        let mut b = BlockBuilder::new(schema, group);
        for c in &mut b.columns {
            c.keep_stats = false;
        }
        b
    }

    /// Stores the group's `i`-th column as codes into the file's
    /// dictionary: rows give it [`Value::Code`]s (or nulls).
    pub fn set_coded(&mut self, i: usize) {
        self.columns[i].coded = true;
    }

    /// Adds a row: its user key, trailer and piece (`None` for a tombstone).
    /// Only the group's columns of the piece are kept.
    pub fn add(
        &mut self,
        user_key: &[u8],
        trailer: u64,
        piece: Option<(&PieceSchema, &PieceView<'_>)>,
    ) {
        let Some((schema, piece)) = piece else {
            return self.add_values(user_key, trailer, |_, _| None);
        };
        // Values are copied as the piece stores them (the block's own
        // encoding), without a `Cell` in between: staging whole rows for a
        // scan spends most of its time here.
        let r = self.rows;
        self.keys.add(user_key, trailer);
        for c in &mut self.columns {
            match piece.raw(schema, c.v) {
                Some(Some(bytes)) if !c.coded => c.push_stored(r, bytes),
                Some(Some(_)) => c.push(r, piece.get(schema, c.v)),
                Some(None) => c.push(r, Some(Cell::Null)),
                None => {
                    self.partial = true;
                    c.push(r, None)
                }
            }
        }
        self.rows += 1;
    }

    /// Adds a row: its user key, trailer and, from `value(i, v)`, the value
    /// of the group's `i`-th column (value column `v`), `None` where the
    /// row does not carry it. A column set coded takes codes and nulls; the
    /// others take cells.
    pub fn add_values<'a>(
        &mut self,
        user_key: &[u8],
        trailer: u64,
        mut value: impl FnMut(usize, usize) -> Option<Value<'a>>,
    ) {
        let r = self.rows;
        self.keys.add(user_key, trailer);
        for (i, c) in self.columns.iter_mut().enumerate() {
            match value(i, c.v) {
                Some(Value::Code(code)) => {
                    debug_assert!(c.coded, "a code for a plain column");
                    c.push_code(r, code)
                }
                Some(Value::Cell(cell)) => {
                    debug_assert!(
                        !c.coded || matches!(cell, Cell::Null),
                        "a value for a column of codes"
                    );
                    c.push(r, Some(cell))
                }
                None => {
                    self.partial = true;
                    c.push(r, None)
                }
            }
        }
        self.rows += 1;
    }

    /// Rows added since the last reset.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Approximate encoded size.
    pub fn size_estimate(&self) -> usize {
        self.keys.size_estimate() + self.columns.iter().map(ColumnBuf::size).sum::<usize>()
    }

    /// The statistics of each column (in group order) of the rows so far.
    pub fn stats(&self) -> Vec<ColumnStats> {
        self.columns.iter().map(ColumnBuf::stats).collect()
    }

    /// The last user key added.
    pub fn last_key(&self) -> &[u8] {
        self.keys.last_key()
    }

    /// Encodes the block into `out` (cleared first) and resets the builder.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        out.clear();
        let rows = self.rows;
        self.keys
            .finish(if self.partial { PARTIAL } else { 0 }, out);
        let bitmap_len = rows.div_ceil(8);
        for c in &mut self.columns {
            c.presence.resize(bitmap_len, 0);
            c.nulls.resize(bitmap_len, 0);
            let has_nulls = c.stats.nulls > 0;
            let mut cf = 0;
            if self.partial {
                cf |= COL_PRESENCE;
            }
            if has_nulls {
                cf |= COL_NULLS;
            }
            if c.coded {
                cf |= COL_CODES;
            }
            out.push(cf);
            if self.partial {
                out.extend_from_slice(&c.presence);
            }
            if has_nulls {
                out.extend_from_slice(&c.nulls);
            }
            if c.coded {
                let width = bitpack::width_for(c.max_code);
                out.push(width);
                bitpack::pack(&c.codes, width, out);
            } else if c.ty.fixed_width().is_some() {
                out.extend_from_slice(&c.fixed);
            } else {
                for o in &c.offsets {
                    out.extend_from_slice(&o.to_le_bytes());
                }
                out.extend_from_slice(&c.bytes);
            }
        }
        self.reset();
    }

    fn reset(&mut self) {
        for c in &mut self.columns {
            c.clear();
        }
        self.rows = 0;
        self.partial = false;
    }
}
