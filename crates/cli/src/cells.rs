//! Table cells on the command line: text typed by the user (or read from a
//! CSV file) parsed as a column's type (Arrow columns go to and from
//! [`Value`]s through `strata::table::{values_to_array, array_to_values}`).
//!
//! Text parses as [`Value::parse`] does (the empty string and `NULL` are
//! null), except that a binary cell starting with `0x` is hex, as keys and
//! values are elsewhere in the tool; binary cells print as `0x` + hex, so
//! what `scan --format csv` prints imports back unchanged, except text
//! that is empty or spells `NULL` (in any case), which imports as null.

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

/// How a column of `ty` is aligned in text tables: numbers right, the
/// rest left.
pub fn align_of(ty: ColumnType) -> crate::tabular::Align {
    if is_numeric(ty) {
        crate::tabular::Align::Right
    } else {
        crate::tabular::Align::Left
    }
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
}
