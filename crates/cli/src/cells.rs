//! Table cells on the command line: text typed by the user (or read from a
//! CSV file) parsed as a column's type, and Arrow columns turned back into
//! [`Value`]s for printing.
//!
//! Text parses as [`Value::parse`] does (the empty string and `NULL` are
//! null), except that a binary cell starting with `0x` is hex, as keys and
//! values are elsewhere in the tool; binary cells print as `0x` + hex, so
//! what `scan --format csv` prints imports back unchanged.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Float64Array, Int32Array, Int64Array, StringArray,
    TimestampMicrosecondArray,
};
use strata::Error;
use strata::table::{Column, ColumnType, Value};

use crate::encoding::decode_token;

/// The message of a library error, without its `invalid argument: ` prefix.
pub fn message(e: &Error) -> String {
    match e {
        Error::InvalidArgument(m) => m.clone(),
        e => e.to_string(),
    }
}

/// Parses `text` as a value of `column`; null (the empty string or `NULL`)
/// only when the column is nullable.
pub fn parse_cell(text: &str, column: &Column) -> Result<Value, String> {
    let v = if column.ty == ColumnType::Binary && text.starts_with("0x") {
        Value::Binary(decode_token(text)?)
    } else {
        Value::parse(text, column.ty).map_err(|e| message(&e))?
    };
    if v.is_null() && !column.nullable {
        return Err(format!(
            "column {:?} is not nullable; {text:?} reads as NULL",
            column.name
        ));
    }
    Ok(v)
}

/// An Arrow array of type `ty` from values of that type (or null).
pub fn build_array(ty: ColumnType, values: &[Value]) -> ArrayRef {
    macro_rules! build {
        ($array:ty, $pat:pat => $x:expr) => {
            Arc::new(<$array>::from(
                values
                    .iter()
                    .map(|v| match v {
                        $pat => Some($x),
                        _ => None,
                    })
                    .collect::<Vec<_>>(),
            ))
        };
    }
    match ty {
        ColumnType::Int32 => build!(Int32Array, Value::Int32(x) => *x),
        ColumnType::Int64 => build!(Int64Array, Value::Int64(x) => *x),
        ColumnType::Float64 => build!(Float64Array, Value::Float64(x) => *x),
        ColumnType::Bool => build!(BooleanArray, Value::Bool(x) => *x),
        ColumnType::Utf8 => build!(StringArray, Value::Utf8(s) => s.as_str()),
        ColumnType::Binary => Arc::new(BinaryArray::from_opt_vec(
            values
                .iter()
                .map(|v| match v {
                    Value::Binary(b) => Some(b.as_slice()),
                    _ => None,
                })
                .collect(),
        )),
        ColumnType::Timestamp => build!(TimestampMicrosecondArray, Value::Timestamp(x) => *x),
    }
}

/// The values of an array a scan returned for a column of type `ty`.
pub fn column_values(array: &dyn Array, ty: ColumnType) -> Result<Vec<Value>, String> {
    let any = array.as_any();
    let mismatch = || {
        format!(
            "a scan returned {} for a column of type {ty}",
            array.data_type()
        )
    };
    macro_rules! collect {
        ($array:ty, $wrap:expr) => {{
            let a = any.downcast_ref::<$array>().ok_or_else(mismatch)?;
            (0..a.len())
                .map(|i| {
                    if a.is_null(i) {
                        Value::Null
                    } else {
                        $wrap(a.value(i))
                    }
                })
                .collect()
        }};
    }
    Ok(match ty {
        ColumnType::Int32 => collect!(Int32Array, Value::Int32),
        ColumnType::Int64 => collect!(Int64Array, Value::Int64),
        ColumnType::Float64 => collect!(Float64Array, Value::Float64),
        ColumnType::Bool => collect!(BooleanArray, Value::Bool),
        ColumnType::Utf8 => collect!(StringArray, |s: &str| Value::Utf8(s.to_string())),
        ColumnType::Binary => collect!(BinaryArray, |b: &[u8]| Value::Binary(b.to_vec())),
        ColumnType::Timestamp => collect!(TimestampMicrosecondArray, Value::Timestamp),
    })
}

/// Whether a column of `ty` is right-aligned in text tables.
pub fn is_numeric(ty: ColumnType) -> bool {
    matches!(
        ty,
        ColumnType::Int32 | ColumnType::Int64 | ColumnType::Float64 | ColumnType::Timestamp
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_parse_by_type_and_refuse_null_in_required_columns() {
        let score = Column::new("score", ColumnType::Float64);
        assert_eq!(parse_cell("1.5", &score), Ok(Value::Float64(1.5)));
        let e = parse_cell("x", &score).expect_err("bad float");
        assert!(e.contains("not a valid f64"), "{e}");
        let e = parse_cell("", &score).expect_err("null");
        assert!(e.contains("not nullable"), "{e}");
        let name = Column::nullable("name", ColumnType::Utf8);
        assert_eq!(parse_cell("NULL", &name), Ok(Value::Null));
        let blob = Column::new("b", ColumnType::Binary);
        assert_eq!(parse_cell("0x00ff", &blob), Ok(Value::Binary(vec![0, 255])));
        assert_eq!(parse_cell("hi", &blob), Ok(Value::Binary(b"hi".to_vec())));
    }

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
            let a = build_array(ty, &vals);
            assert_eq!(column_values(a.as_ref(), ty), Ok(vals), "{ty}");
        }
        let a = build_array(ColumnType::Int32, &[Value::Int32(1)]);
        assert!(column_values(a.as_ref(), ColumnType::Utf8).is_err());
    }
}
