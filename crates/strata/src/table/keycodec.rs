//! Primary keys as bytes whose order is the key's order.
//!
//! A row's key is its key columns' values encoded one after another, so
//! that comparing two encoded keys as bytes compares the keys column by
//! column (the tree sorts rows by these bytes):
//!
//! ```text
//!   i32            4 bytes big-endian, sign bit flipped
//!   i64, timestamp 8 bytes big-endian, sign bit flipped
//!   f64            8 bytes big-endian: sign bit flipped if positive, every
//!                  bit flipped if negative (-0.0 is written as 0.0, every
//!                  NaN as the one positive quiet NaN, which sorts last)
//!   bool           1 byte, 0 or 1
//!   utf8, binary   the bytes with each 0x00 written 0x00 0xFF, then the
//!                  terminator 0x00 0x01
//! ```
//!
//! The escape keeps the order of strings that contain zero bytes or are
//! prefixes of each other, and makes every encoding self-delimiting, so
//! multi-column keys concatenate. Key columns are never null.

use super::piece::Cell;
use super::schema::{ColumnType, Schema};
use super::value::Value;
use crate::error::{Error, Result};

const SIGN32: u32 = 1 << 31;
const SIGN64: u64 = 1 << 63;

/// Appends the encoding of `v` (of type `ty`, not null) to `out`.
pub fn encode_value(out: &mut Vec<u8>, ty: ColumnType, v: &Value) -> Result<()> {
    match (ty, v) {
        (ColumnType::Int32, Value::Int32(x)) => encode_i32(out, *x),
        (ColumnType::Int64, Value::Int64(x)) | (ColumnType::Timestamp, Value::Timestamp(x)) => {
            encode_i64(out, *x)
        }
        (ColumnType::Float64, Value::Float64(x)) => encode_f64(out, *x),
        (ColumnType::Bool, Value::Bool(b)) => out.push(u8::from(*b)),
        (ColumnType::Utf8, Value::Utf8(s)) => encode_bytes(out, s.as_bytes()),
        (ColumnType::Binary, Value::Binary(b)) => encode_bytes(out, b),
        (_, Value::Null) => {
            return Err(Error::InvalidArgument("a key column cannot be null".into()));
        }
        (ty, v) => {
            return Err(Error::InvalidArgument(format!(
                "key value {v} is not of the key column's type {ty}"
            )));
        }
    }
    Ok(())
}

/// Appends the encoding of a cell, the same bytes [`encode_value`] gives
/// its value; false (nothing appended) for a null.
pub(crate) fn encode_cell(out: &mut Vec<u8>, c: Cell<'_>) -> bool {
    match c {
        Cell::Null => return false,
        Cell::Int32(x) => encode_i32(out, x),
        Cell::Int64(x) => encode_i64(out, x),
        Cell::Float64(x) => encode_f64(out, x),
        Cell::Bool(b) => out.push(u8::from(b)),
        Cell::Bytes(b) => encode_bytes(out, b),
    }
    true
}

/// [`encode_value`] for a value that is stored rather than compared:
/// doubles keep every bit ([`encode_f64_exact`]).
pub(crate) fn encode_value_exact(out: &mut Vec<u8>, ty: ColumnType, v: &Value) -> Result<()> {
    match (ty, v) {
        (ColumnType::Float64, Value::Float64(x)) => {
            encode_f64_exact(out, *x);
            Ok(())
        }
        _ => encode_value(out, ty, v),
    }
}

/// [`encode_cell`] for a cell that is stored rather than compared: doubles
/// keep every bit ([`encode_f64_exact`]).
pub(crate) fn encode_cell_exact(out: &mut Vec<u8>, c: Cell<'_>) -> bool {
    match c {
        Cell::Float64(x) => {
            encode_f64_exact(out, x);
            true
        }
        c => encode_cell(out, c),
    }
}

/// Appends an i32 key part.
pub fn encode_i32(out: &mut Vec<u8>, x: i32) {
    out.extend_from_slice(&((x as u32) ^ SIGN32).to_be_bytes());
}

/// Appends an i64 (or timestamp) key part.
pub fn encode_i64(out: &mut Vec<u8>, x: i64) {
    out.extend_from_slice(&((x as u64) ^ SIGN64).to_be_bytes());
}

/// Appends an f64 key part: -0.0 as 0.0 and every NaN as `f64::NAN`, so
/// that equal keys (in the key's sense) have equal bytes.
pub fn encode_f64(out: &mut Vec<u8>, x: f64) {
    let x = if x == 0.0 {
        0.0
    } else if x.is_nan() {
        f64::NAN
    } else {
        x
    };
    encode_f64_exact(out, x);
}

/// Appends `x` in the f64 key part's order-preserving form, every bit kept
/// (-0.0 sorts just below 0.0, NaNs by their bits): for values that are
/// stored, not compared as keys, such as an index entry's covered columns
/// and a join's tuples, which must give back what the row holds.
/// [`KeyDecoder::f64`] reads both forms.
pub(crate) fn encode_f64_exact(out: &mut Vec<u8>, x: f64) {
    let bits = x.to_bits();
    let ordered = if bits & SIGN64 == 0 {
        bits ^ SIGN64
    } else {
        !bits
    };
    out.extend_from_slice(&ordered.to_be_bytes());
}

/// Appends a utf8 or binary key part.
pub fn encode_bytes(out: &mut Vec<u8>, b: &[u8]) {
    for &byte in b {
        out.push(byte);
        if byte == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0x00, 0x01]);
}

/// Encodes a whole key from the key columns' values, in key order.
pub fn encode_key(schema: &Schema, values: &[Value]) -> Result<Vec<u8>> {
    let key = schema.key_indices();
    if values.len() != key.len() {
        return Err(Error::InvalidArgument(format!(
            "the key has {} columns; {} values given",
            key.len(),
            values.len()
        )));
    }
    let mut out = Vec::with_capacity(16);
    for (&i, v) in key.iter().zip(values) {
        let c = &schema.columns()[i];
        let v = v.clone().coerce(c.ty, &c.name)?;
        encode_value(&mut out, c.ty, &v)?;
    }
    Ok(out)
}

/// Reads encoded key parts one at a time.
pub struct KeyDecoder<'a> {
    rest: &'a [u8],
}

fn malformed(what: &str) -> Error {
    Error::corruption("table key", 0, format!("malformed key: {what}"))
}

impl<'a> KeyDecoder<'a> {
    /// Starts at the first part of `key`.
    pub fn new(key: &'a [u8]) -> Self {
        KeyDecoder { rest: key }
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        if self.rest.len() < N {
            return Err(malformed("truncated fixed-width part"));
        }
        let (a, b) = self.rest.split_at(N);
        self.rest = b;
        let mut out = [0u8; N];
        out.copy_from_slice(a);
        Ok(out)
    }

    /// The next part as an i32.
    pub fn i32(&mut self) -> Result<i32> {
        Ok((u32::from_be_bytes(self.take::<4>()?) ^ SIGN32) as i32)
    }

    /// The next part as an i64.
    pub fn i64(&mut self) -> Result<i64> {
        Ok((u64::from_be_bytes(self.take::<8>()?) ^ SIGN64) as i64)
    }

    /// The next part as an f64.
    pub fn f64(&mut self) -> Result<f64> {
        let ordered = u64::from_be_bytes(self.take::<8>()?);
        let bits = if ordered & SIGN64 != 0 {
            ordered ^ SIGN64
        } else {
            !ordered
        };
        Ok(f64::from_bits(bits))
    }

    /// The next part as a bool.
    pub fn bool(&mut self) -> Result<bool> {
        match self.take::<1>()? {
            [0] => Ok(false),
            [1] => Ok(true),
            _ => Err(malformed("bool part is neither 0 nor 1")),
        }
    }

    /// The next part as bytes (utf8 or binary), unescaped into `out`.
    pub fn bytes_into(&mut self, out: &mut Vec<u8>) -> Result<()> {
        let mut i = 0;
        let b = self.rest;
        while i < b.len() {
            if b[i] == 0 {
                match b.get(i + 1) {
                    Some(0xFF) => {
                        out.push(0);
                        i += 2;
                    }
                    Some(0x01) => {
                        self.rest = &b[i + 2..];
                        return Ok(());
                    }
                    _ => return Err(malformed("bad escape in a string part")),
                }
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        Err(malformed("string part without terminator"))
    }

    /// The next part as a value of `ty`.
    pub fn value(&mut self, ty: ColumnType) -> Result<Value> {
        Ok(match ty {
            ColumnType::Int32 => Value::Int32(self.i32()?),
            ColumnType::Int64 => Value::Int64(self.i64()?),
            ColumnType::Timestamp => Value::Timestamp(self.i64()?),
            ColumnType::Float64 => Value::Float64(self.f64()?),
            ColumnType::Bool => Value::Bool(self.bool()?),
            ColumnType::Utf8 => {
                let mut b = Vec::new();
                self.bytes_into(&mut b)?;
                Value::Utf8(String::from_utf8(b).map_err(|_| malformed("utf8 part is not UTF-8"))?)
            }
            ColumnType::Binary => {
                let mut b = Vec::new();
                self.bytes_into(&mut b)?;
                Value::Binary(b)
            }
        })
    }

    /// The next byte, if any (for formats that mix tags with key parts).
    pub fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.rest.split_first()?;
        self.rest = rest;
        Some(b)
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// Whether every part has been read.
    pub fn is_done(&self) -> bool {
        self.rest.is_empty()
    }
}

/// Decodes a whole key into the key columns' values, in key order.
pub fn decode_key(schema: &Schema, key: &[u8]) -> Result<Vec<Value>> {
    let mut d = KeyDecoder::new(key);
    let mut out = Vec::with_capacity(schema.key_indices().len());
    for &i in schema.key_indices() {
        out.push(d.value(schema.columns()[i].ty)?);
    }
    if !d.is_done() {
        return Err(malformed("bytes after the last key column"));
    }
    Ok(out)
}

/// The smallest encoded key that is greater than every key starting with
/// `prefix` (for turning a prefix into an exclusive upper bound); `None`
/// when no such key exists (the prefix is all 0xFF).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut p = prefix.to_vec();
    while let Some(last) = p.pop() {
        if last != 0xFF {
            p.push(last + 1);
            return Some(p);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::schema::Column;
    use proptest::prelude::*;

    fn enc(ty: ColumnType, v: Value) -> Vec<u8> {
        let mut out = Vec::new();
        encode_value(&mut out, ty, &v).expect("encode");
        out
    }

    #[test]
    fn cells_encode_as_their_values() {
        let values = [
            (ColumnType::Int32, Value::Int32(-7)),
            (ColumnType::Int32, Value::Int32(i32::MAX)),
            (ColumnType::Int64, Value::Int64(i64::MIN)),
            (ColumnType::Int64, Value::Int64(42)),
            (ColumnType::Timestamp, Value::Timestamp(-1)),
            (ColumnType::Float64, Value::Float64(-0.0)),
            (ColumnType::Float64, Value::Float64(f64::NAN)),
            (ColumnType::Float64, Value::Float64(2.5)),
            (ColumnType::Bool, Value::Bool(true)),
            (ColumnType::Utf8, Value::Utf8("a\0b".into())),
            (ColumnType::Binary, Value::Binary(vec![0, 0xFF, 0, 1])),
            (ColumnType::Binary, Value::Binary(Vec::new())),
        ];
        for (ty, v) in values {
            let mut out = Vec::new();
            assert!(encode_cell(
                &mut out,
                crate::table::arrowio::value_to_cell(&v)
            ));
            assert_eq!(out, enc(ty, v.clone()), "{v}");
        }
        let mut out = Vec::new();
        assert!(!encode_cell(&mut out, Cell::Null));
        assert!(out.is_empty());
    }

    proptest! {
        #[test]
        fn i64_order_is_byte_order(a: i64, b: i64) {
            let (x, y) = (enc(ColumnType::Int64, Value::Int64(a)), enc(ColumnType::Int64, Value::Int64(b)));
            prop_assert_eq!(a.cmp(&b), x.cmp(&y));
            prop_assert_eq!(KeyDecoder::new(&x).i64().expect("decode"), a);
        }

        #[test]
        fn i32_order_is_byte_order(a: i32, b: i32) {
            let (x, y) = (enc(ColumnType::Int32, Value::Int32(a)), enc(ColumnType::Int32, Value::Int32(b)));
            prop_assert_eq!(a.cmp(&b), x.cmp(&y));
        }

        #[test]
        fn f64_order_is_byte_order(a in proptest::num::f64::ANY, b in proptest::num::f64::ANY) {
            let (x, y) = (enc(ColumnType::Float64, Value::Float64(a)), enc(ColumnType::Float64, Value::Float64(b)));
            if !a.is_nan() && !b.is_nan() {
                // -0.0 and 0.0 are one key.
                let want = if a == b { std::cmp::Ordering::Equal } else { a.total_cmp(&b) };
                prop_assert_eq!(want, x.cmp(&y));
            }
            let back = KeyDecoder::new(&x).f64().expect("decode");
            prop_assert!(back == a || (a.is_nan() && back.is_nan()));
        }

        #[test]
        fn byte_string_order_is_byte_order(a: Vec<u8>, b: Vec<u8>) {
            let (x, y) = (enc(ColumnType::Binary, Value::Binary(a.clone())), enc(ColumnType::Binary, Value::Binary(b.clone())));
            prop_assert_eq!(a.cmp(&b), x.cmp(&y));
            let mut back = Vec::new();
            let mut d = KeyDecoder::new(&x);
            d.bytes_into(&mut back).expect("decode");
            prop_assert!(d.is_done());
            prop_assert_eq!(back, a);
        }

        #[test]
        fn two_column_keys_sort_column_by_column(a: (Vec<u8>, i32), b: (Vec<u8>, i32)) {
            let schema = Schema::new(vec![
                Column::new("s", ColumnType::Binary),
                Column::new("n", ColumnType::Int32),
                Column::nullable("v", ColumnType::Int32),
            ], &["s", "n"]).expect("schema");
            let k = |t: &(Vec<u8>, i32)| encode_key(&schema, &[Value::Binary(t.0.clone()), Value::Int32(t.1)]).expect("key");
            prop_assert_eq!(a.cmp(&b), k(&a).cmp(&k(&b)));
            let back = decode_key(&schema, &k(&a)).expect("decode");
            prop_assert_eq!(back, vec![Value::Binary(a.0.clone()), Value::Int32(a.1)]);
        }
    }

    #[test]
    fn embedded_zeros_and_prefixes_keep_their_order() {
        let keys: Vec<&[u8]> = vec![b"", b"\0", b"\0\0", b"\0\x01", b"a", b"a\0", b"a\0b", b"ab"];
        let enc: Vec<Vec<u8>> = keys
            .iter()
            .map(|k| enc(ColumnType::Binary, Value::Binary(k.to_vec())))
            .collect();
        for w in enc.windows(2) {
            assert!(w[0] < w[1], "{:?} !< {:?}", w[0], w[1]);
        }
    }

    #[test]
    fn malformed_keys_are_errors_not_panics() {
        assert!(KeyDecoder::new(&[1, 2]).i32().is_err());
        assert!(KeyDecoder::new(b"ab").bytes_into(&mut Vec::new()).is_err());
        assert!(
            KeyDecoder::new(&[b'a', 0, 7])
                .bytes_into(&mut Vec::new())
                .is_err()
        );
        assert!(KeyDecoder::new(&[2]).bool().is_err());
        let schema = Schema::new(vec![Column::new("k", ColumnType::Int32)], &["k"]).expect("s");
        assert!(decode_key(&schema, &[0, 0, 0, 1, 9]).is_err());
        assert!(encode_key(&schema, &[Value::Null]).is_err());
        assert!(encode_key(&schema, &[]).is_err());
    }

    #[test]
    fn prefix_successor_bounds_every_extension() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_successor(&[0xFF, 0xFF]), None);
    }
}
