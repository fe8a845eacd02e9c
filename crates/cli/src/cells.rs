//! Table cells on the command line: text typed by the user (or read from a
//! CSV file) parsed as a column's type (Arrow columns go to and from
//! [`Value`]s through `strata::table::{values_to_array, array_to_values}`).
//!
//! Which text is null is the caller's [`Nulls`]: by default the empty
//! string and `NULL` (any case), as [`Value::parse`] reads them; with
//! `--null TEXT`, that exact text and nothing else, so text that is empty
//! or spells `NULL` can be written, looked up and printed apart from a
//! null. A key column is never null, so a key argument's text is always
//! its value ([`Nulls::Never`]). A binary cell starting with `0x` is hex,
//! as keys and values are elsewhere in the tool; binary cells print as
//! `0x` + hex, so what `scan --format csv` prints imports back unchanged
//! under the same `--null` (without it, text that is empty or spells
//! `NULL` imports as null).

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

/// `--null TEXT`: the text that stands for null in table cells.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct CellArgs {
    /// The text that stands for null in table cells: in arguments, in CSV
    /// import and in printed rows (key arguments are never null). Without
    /// it an empty cell or NULL (any case) reads as null and nulls print as
    /// NULL (empty fields in CSV), so text that is empty or spells NULL
    /// reads as null; with it only this exact text is null, and a scan
    /// printed as CSV imports back unchanged under the same --null (for
    /// example --null '\N').
    #[arg(long, global = true, value_name = "TEXT")]
    pub null: Option<String>,
}

impl CellArgs {
    /// The rule these arguments give.
    pub fn nulls(&self) -> Nulls {
        match &self.null {
            Some(t) => Nulls::Exactly(t.clone()),
            None => Nulls::Loose,
        }
    }
}

/// Which cell text is null.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Nulls {
    /// The empty string and `NULL` in any case, the rule of
    /// [`Value::parse`] (no `--null`).
    #[default]
    Loose,
    /// This text and nothing else (`--null TEXT`).
    Exactly(String),
    /// No text: a key column's value is always what was typed.
    Never,
}

impl Nulls {
    fn is_null(&self, text: &str) -> bool {
        match self {
            Nulls::Loose => text.is_empty() || text.eq_ignore_ascii_case("null"),
            Nulls::Exactly(t) => text == t,
            Nulls::Never => false,
        }
    }

    /// How a value prints in a text table or record.
    pub fn show(&self, v: &Value) -> String {
        match (v, self) {
            (Value::Null, Nulls::Exactly(t)) => t.clone(),
            (v, _) => v.to_string(),
        }
    }

    /// How a value prints as a CSV field.
    pub fn show_csv(&self, v: &Value) -> String {
        match (v, self) {
            (Value::Null, Nulls::Exactly(t)) => t.clone(),
            (Value::Null, _) => String::new(),
            (v, _) => v.to_string(),
        }
    }
}

/// Parses `text` as a value of `column`; null (as `nulls` spells it) only
/// when the column is nullable.
pub fn parse_cell(text: &str, column: &Column, nulls: &Nulls) -> Result<Value, String> {
    if nulls.is_null(text) {
        if !column.nullable {
            return Err(format!(
                "column {:?} is not nullable; {text:?} reads as NULL",
                column.name
            ));
        }
        return Ok(Value::Null);
    }
    Ok(match column.ty {
        ColumnType::Binary if text.starts_with("0x") => Value::Binary(decode_token(text)?),
        ColumnType::Utf8 => Value::Utf8(text.to_string()),
        ColumnType::Binary => Value::Binary(text.as_bytes().to_vec()),
        ty => match Value::parse(text, ty).map_err(|e| message(&e))? {
            // Text `Value::parse` takes for null but `nulls` does not.
            Value::Null => return Err(format!("{text:?} is not a valid {ty} value")),
            v => v,
        },
    })
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
        let loose = Nulls::Loose;
        let score = Column::new("score", ColumnType::Float64);
        assert_eq!(parse_cell("1.5", &score, &loose), Ok(Value::Float64(1.5)));
        let e = parse_cell("x", &score, &loose).expect_err("bad float");
        assert!(e.contains("not a valid f64"), "{e}");
        let e = parse_cell("", &score, &loose).expect_err("null");
        assert!(e.contains("not nullable"), "{e}");
        let name = Column::nullable("name", ColumnType::Utf8);
        assert_eq!(parse_cell("NULL", &name, &loose), Ok(Value::Null));
        let blob = Column::new("b", ColumnType::Binary);
        assert_eq!(
            parse_cell("0x00ff", &blob, &loose),
            Ok(Value::Binary(vec![0, 255]))
        );
        assert_eq!(
            parse_cell("hi", &blob, &loose),
            Ok(Value::Binary(b"hi".to_vec()))
        );
    }

    #[test]
    fn an_exact_null_text_keeps_empty_and_null_spelled_text_apart() {
        let exact = Nulls::Exactly("\\N".into());
        let name = Column::nullable("name", ColumnType::Utf8);
        assert_eq!(parse_cell("\\N", &name, &exact), Ok(Value::Null));
        for text in ["", "NULL", "null"] {
            assert_eq!(
                parse_cell(text, &name, &exact),
                Ok(Value::Utf8(text.into())),
                "{text:?}"
            );
        }
        // Text that only the loose rule calls null is no number.
        let score = Column::nullable("score", ColumnType::Int64);
        let e = parse_cell("", &score, &exact).expect_err("empty int");
        assert!(e.contains("not a valid i64"), "{e}");
        let e = parse_cell("NULL", &score, &exact).expect_err("NULL int");
        assert!(e.contains("not a valid i64"), "{e}");
        // A required column still refuses the null text.
        let id = Column::new("id", ColumnType::Utf8);
        assert!(parse_cell("\\N", &id, &exact).is_err());
        // A key's text is its value, whatever it spells.
        assert_eq!(
            parse_cell("NULL", &id, &Nulls::Never),
            Ok(Value::Utf8("NULL".into()))
        );
        assert_eq!(
            parse_cell("", &id, &Nulls::Never),
            Ok(Value::Utf8(String::new()))
        );
        // Printing: the null text stands for null, text prints as itself.
        assert_eq!(exact.show(&Value::Null), "\\N");
        assert_eq!(exact.show_csv(&Value::Utf8("NULL".into())), "NULL");
        assert_eq!(Nulls::Loose.show(&Value::Null), "NULL");
        assert_eq!(Nulls::Loose.show_csv(&Value::Null), "");
    }
}
