//! Between Arrow arrays and cells: reading the columns of an incoming
//! `RecordBatch` and building the arrays of an outgoing one.

use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Float64Array, Int32Array, Int64Array, StringArray,
    TimestampMicrosecondArray,
};

use super::piece::Cell;
use super::schema::{Column, ColumnType};
use super::value::Value;
use crate::error::{Error, Result};

/// A typed view of one incoming column.
pub(crate) enum ColumnReader<'a> {
    I32(&'a Int32Array),
    I64(&'a Int64Array),
    F64(&'a Float64Array),
    Bool(&'a BooleanArray),
    Utf8(&'a StringArray),
    Binary(&'a BinaryArray),
    Ts(&'a TimestampMicrosecondArray),
}

impl<'a> ColumnReader<'a> {
    /// Views `array` as column `column`'s type, or says why it cannot.
    pub(crate) fn new(array: &'a dyn Array, column: &Column) -> Result<ColumnReader<'a>> {
        let r = Self::of_type(array, column.ty).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "column {:?} is {} ({}); the batch has {}",
                column.name,
                column.ty,
                column.ty.arrow_type(),
                array.data_type()
            ))
        })?;
        if !column.nullable && array.null_count() > 0 {
            return Err(Error::NotNull {
                column: column.name.clone(),
                detail: Some(format!(
                    "the batch holds {} nulls in it",
                    array.null_count()
                )),
            });
        }
        Ok(r)
    }

    /// Views `array` as type `ty`, if it is of that type.
    fn of_type(array: &'a dyn Array, ty: ColumnType) -> Option<ColumnReader<'a>> {
        let any = array.as_any();
        match ty {
            ColumnType::Int32 => any.downcast_ref().map(ColumnReader::I32),
            ColumnType::Int64 => any.downcast_ref().map(ColumnReader::I64),
            ColumnType::Float64 => any.downcast_ref().map(ColumnReader::F64),
            ColumnType::Bool => any.downcast_ref().map(ColumnReader::Bool),
            ColumnType::Utf8 => any.downcast_ref().map(ColumnReader::Utf8),
            ColumnType::Binary => any.downcast_ref().map(ColumnReader::Binary),
            ColumnType::Timestamp => any.downcast_ref().map(ColumnReader::Ts),
        }
    }

    /// Row `i`'s cell.
    #[inline]
    pub(crate) fn cell(&self, i: usize) -> Cell<'a> {
        macro_rules! get {
            ($a:expr, $wrap:expr) => {
                if $a.is_null(i) {
                    Cell::Null
                } else {
                    $wrap($a.value(i))
                }
            };
        }
        match self {
            ColumnReader::I32(a) => get!(a, Cell::Int32),
            ColumnReader::I64(a) => get!(a, Cell::Int64),
            ColumnReader::F64(a) => get!(a, Cell::Float64),
            ColumnReader::Bool(a) => get!(a, Cell::Bool),
            ColumnReader::Utf8(a) => get!(a, |s: &'a str| Cell::Bytes(s.as_bytes())),
            ColumnReader::Binary(a) => get!(a, Cell::Bytes),
            ColumnReader::Ts(a) => get!(a, Cell::Int64),
        }
    }
}

/// An Arrow array of column type `ty` from `values`, each of exactly that
/// type or null: a column of a batch for [`super::Table::upsert`] built
/// from rows in hand. A value of another type is
/// [`Error::InvalidArgument`].
pub fn values_to_array(ty: ColumnType, values: &[Value]) -> Result<ArrayRef> {
    let mut b = ColumnBuilder::new(ty, values.len());
    for v in values {
        if let Some(t) = v.column_type()
            && t != ty
        {
            return Err(Error::InvalidArgument(format!(
                "a {t} value ({v}) for a column of type {ty}"
            )));
        }
        b.append(value_to_cell(v))?;
    }
    Ok(b.finish())
}

/// A batch of `schema` from rows of values: output column `i` is the
/// value at `columns[i].0` of each row, of type `columns[i].1`. The one
/// place rows in hand become a batch (index lookups and scans, joins).
pub(crate) fn rows_to_batch(
    schema: std::sync::Arc<arrow_schema::Schema>,
    columns: &[(usize, ColumnType)],
    rows: &[Vec<Value>],
) -> Result<arrow_array::RecordBatch> {
    let arrays = columns
        .iter()
        .map(|&(at, ty)| {
            let col: Vec<Value> = rows.iter().map(|r| r[at].clone()).collect();
            values_to_array(ty, &col)
        })
        .collect::<Result<Vec<_>>>()?;
    arrow_array::RecordBatch::try_new(schema, arrays)
        .map_err(|e| Error::InvalidArgument(format!("building a batch of rows: {e}")))
}

/// The values of `array`, a column of type `ty` as a scan returns it.
/// An array of another Arrow type is [`Error::InvalidArgument`].
pub fn array_to_values(array: &dyn Array, ty: ColumnType) -> Result<Vec<Value>> {
    let r = ColumnReader::of_type(array, ty).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "an array of {} for a column of type {ty}",
            array.data_type()
        ))
    })?;
    Ok((0..array.len())
        .map(|i| cell_to_value(r.cell(i), ty))
        .collect())
}

/// A cell as a [`Value`] of column type `ty` (text that is not UTF-8, which
/// only damage could produce, becomes bytes).
pub(crate) fn cell_to_value(c: Cell<'_>, ty: ColumnType) -> Value {
    match (c, ty) {
        (Cell::Null, _) => Value::Null,
        (Cell::Int32(x), _) => Value::Int32(x),
        (Cell::Int64(x), ColumnType::Timestamp) => Value::Timestamp(x),
        (Cell::Int64(x), _) => Value::Int64(x),
        (Cell::Float64(x), _) => Value::Float64(x),
        (Cell::Bool(b), _) => Value::Bool(b),
        (Cell::Bytes(b), ColumnType::Utf8) => match std::str::from_utf8(b) {
            Ok(s) => Value::Utf8(s.to_string()),
            Err(_) => Value::Binary(b.to_vec()),
        },
        (Cell::Bytes(b), _) => Value::Binary(b.to_vec()),
    }
}

/// A value as a cell of type `ty` (the value was coerced to it).
pub(crate) fn value_to_cell(v: &Value) -> Cell<'_> {
    match v {
        Value::Null => Cell::Null,
        Value::Int32(x) => Cell::Int32(*x),
        Value::Int64(x) | Value::Timestamp(x) => Cell::Int64(*x),
        Value::Float64(x) => Cell::Float64(*x),
        Value::Bool(b) => Cell::Bool(*b),
        Value::Utf8(s) => Cell::Bytes(s.as_bytes()),
        Value::Binary(b) => Cell::Bytes(b),
    }
}

/// A stored value of the wrong type for its column (damage).
pub(crate) fn type_mismatch(c: Cell<'_>) -> Error {
    Error::corruption(
        "table row",
        0,
        format!("a stored value ({c:?}) does not match its column's type"),
    )
}

/// Stored bytes of a utf8 column that are not UTF-8 (damage).
pub(crate) fn not_utf8() -> Error {
    Error::corruption(
        "table row",
        0,
        "a utf8 column holds bytes that are not UTF-8",
    )
}

/// Builds one outgoing column.
pub(crate) enum ColumnBuilder {
    I32(Int32Builder),
    I64(Int64Builder),
    F64(Float64Builder),
    Bool(BooleanBuilder),
    Utf8(StringBuilder),
    Binary(BinaryBuilder),
    Ts(TimestampMicrosecondBuilder),
}

/// The most rows a column builder makes room for before any arrive: a
/// caller's batch size is a bound, not a promise, and a huge one (a scan
/// asked for batches of 10^13 rows) must not allocate at once.
pub(crate) const PREALLOCATED_ROWS: usize = 1 << 16;

impl ColumnBuilder {
    /// A builder for a column of `ty` with room for `rows` (at most
    /// [`PREALLOCATED_ROWS`]; it grows past that as rows come).
    pub(crate) fn new(ty: ColumnType, rows: usize) -> ColumnBuilder {
        let rows = rows.min(PREALLOCATED_ROWS);
        match ty {
            ColumnType::Int32 => ColumnBuilder::I32(Int32Builder::with_capacity(rows)),
            ColumnType::Int64 => ColumnBuilder::I64(Int64Builder::with_capacity(rows)),
            ColumnType::Float64 => ColumnBuilder::F64(Float64Builder::with_capacity(rows)),
            ColumnType::Bool => ColumnBuilder::Bool(BooleanBuilder::with_capacity(rows)),
            ColumnType::Utf8 => ColumnBuilder::Utf8(StringBuilder::with_capacity(rows, rows * 16)),
            ColumnType::Binary => {
                ColumnBuilder::Binary(BinaryBuilder::with_capacity(rows, rows * 16))
            }
            ColumnType::Timestamp => {
                ColumnBuilder::Ts(TimestampMicrosecondBuilder::with_capacity(rows))
            }
        }
    }

    /// Appends a cell; a cell of the wrong type (damage) is an error.
    #[inline]
    pub(crate) fn append(&mut self, c: Cell<'_>) -> Result<()> {
        match (self, c) {
            (ColumnBuilder::I32(b), Cell::Null) => b.append_null(),
            (ColumnBuilder::I64(b), Cell::Null) => b.append_null(),
            (ColumnBuilder::F64(b), Cell::Null) => b.append_null(),
            (ColumnBuilder::Bool(b), Cell::Null) => b.append_null(),
            (ColumnBuilder::Utf8(b), Cell::Null) => b.append_null(),
            (ColumnBuilder::Binary(b), Cell::Null) => b.append_null(),
            (ColumnBuilder::Ts(b), Cell::Null) => b.append_null(),
            (ColumnBuilder::I32(b), Cell::Int32(x)) => b.append_value(x),
            (ColumnBuilder::I64(b), Cell::Int64(x)) => b.append_value(x),
            (ColumnBuilder::Ts(b), Cell::Int64(x)) => b.append_value(x),
            (ColumnBuilder::F64(b), Cell::Float64(x)) => b.append_value(x),
            (ColumnBuilder::Bool(b), Cell::Bool(x)) => b.append_value(x),
            (ColumnBuilder::Binary(b), Cell::Bytes(x)) => b.append_value(x),
            (ColumnBuilder::Utf8(b), Cell::Bytes(x)) => match std::str::from_utf8(x) {
                Ok(s) => b.append_value(s),
                Err(_) => return Err(not_utf8()),
            },
            (_, c) => return Err(type_mismatch(c)),
        }
        Ok(())
    }

    /// The finished array.
    pub(crate) fn finish(&mut self) -> ArrayRef {
        match self {
            ColumnBuilder::I32(b) => Arc::new(b.finish()),
            ColumnBuilder::I64(b) => Arc::new(b.finish()),
            ColumnBuilder::F64(b) => Arc::new(b.finish()),
            ColumnBuilder::Bool(b) => Arc::new(b.finish()),
            ColumnBuilder::Utf8(b) => Arc::new(b.finish()),
            ColumnBuilder::Binary(b) => Arc::new(b.finish()),
            ColumnBuilder::Ts(b) => Arc::new(b.finish()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_round_trip_through_values() {
        for (ty, vals) in [
            (ColumnType::Int32, vec![Value::Int32(1), Value::Null]),
            (ColumnType::Int64, vec![Value::Int64(-1), Value::Null]),
            (ColumnType::Float64, vec![Value::Float64(0.5)]),
            (ColumnType::Bool, vec![Value::Null, Value::Bool(true)]),
            (ColumnType::Utf8, vec![Value::Utf8("a".into()), Value::Null]),
            (
                ColumnType::Binary,
                vec![Value::Binary(vec![0]), Value::Null],
            ),
            (ColumnType::Timestamp, vec![Value::Timestamp(7)]),
        ] {
            let a = values_to_array(ty, &vals).expect("array");
            assert_eq!(
                array_to_values(a.as_ref(), ty).expect("values"),
                vals,
                "{ty}"
            );
        }
        let a = values_to_array(ColumnType::Int32, &[Value::Int32(1)]).expect("array");
        assert!(array_to_values(a.as_ref(), ColumnType::Utf8).is_err());
        assert!(values_to_array(ColumnType::Int32, &[Value::Utf8("x".into())]).is_err());
    }
}
