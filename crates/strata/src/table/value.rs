//! One cell's value, for the plain row API (`insert_row`, `get`, keys).
//! Bulk paths use Arrow arrays instead.

use std::cmp::Ordering;
use std::fmt;

use super::schema::ColumnType;
use crate::error::{Error, Result};

/// A value of one of the column types, or null.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// No value.
    Null,
    /// An i32.
    Int32(i32),
    /// An i64.
    Int64(i64),
    /// An f64.
    Float64(f64),
    /// A boolean.
    Bool(bool),
    /// UTF-8 text.
    Utf8(String),
    /// Bytes.
    Binary(Vec<u8>),
    /// Microseconds since the Unix epoch.
    Timestamp(i64),
}

impl Value {
    /// Whether this is [`Value::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The type of a non-null value.
    pub fn column_type(&self) -> Option<ColumnType> {
        Some(match self {
            Value::Null => return None,
            Value::Int32(_) => ColumnType::Int32,
            Value::Int64(_) => ColumnType::Int64,
            Value::Float64(_) => ColumnType::Float64,
            Value::Bool(_) => ColumnType::Bool,
            Value::Utf8(_) => ColumnType::Utf8,
            Value::Binary(_) => ColumnType::Binary,
            Value::Timestamp(_) => ColumnType::Timestamp,
        })
    }

    /// Converts the value to `ty` where that loses nothing (an integer to a
    /// wider integer, a float or a timestamp; text to bytes); an error
    /// naming `column` otherwise.
    pub fn coerce(self, ty: ColumnType, column: &str) -> Result<Value> {
        let v = match (self, ty) {
            (Value::Null, _) => Value::Null,
            (v, t) if v.column_type() == Some(t) => v,
            (Value::Int32(x), ColumnType::Int64) => Value::Int64(i64::from(x)),
            (Value::Int32(x), ColumnType::Float64) => Value::Float64(f64::from(x)),
            (Value::Int32(x), ColumnType::Timestamp) => Value::Timestamp(i64::from(x)),
            (Value::Int64(x), ColumnType::Int32) if i32::try_from(x).is_ok() => {
                Value::Int32(x as i32)
            }
            (Value::Int64(x), ColumnType::Timestamp) => Value::Timestamp(x),
            // Exactly representable only: 2^53 + 1 has no double.
            (Value::Int64(x), ColumnType::Float64) if (x as f64) as i64 == x && x != i64::MAX => {
                Value::Float64(x as f64)
            }
            (Value::Timestamp(x), ColumnType::Int64) => Value::Int64(x),
            (Value::Utf8(s), ColumnType::Binary) => Value::Binary(s.into_bytes()),
            (v, t) => {
                return Err(Error::InvalidArgument(format!(
                    "column {column:?} is {t}; the value {v} does not fit it"
                )));
            }
        };
        Ok(v)
    }

    /// Parses text as a value of `ty` (for the CLI and CSV import); the
    /// empty string and `NULL` (any case) are null.
    pub fn parse(text: &str, ty: ColumnType) -> Result<Value> {
        if text.is_empty() || text.eq_ignore_ascii_case("null") {
            return Ok(Value::Null);
        }
        let bad = || Error::InvalidArgument(format!("{text:?} is not a valid {ty} value"));
        Ok(match ty {
            ColumnType::Int32 => Value::Int32(text.trim().parse().map_err(|_| bad())?),
            ColumnType::Int64 => Value::Int64(text.trim().parse().map_err(|_| bad())?),
            ColumnType::Timestamp => Value::Timestamp(text.trim().parse().map_err(|_| bad())?),
            ColumnType::Float64 => Value::Float64(text.trim().parse().map_err(|_| bad())?),
            ColumnType::Bool => match text.trim().to_ascii_lowercase().as_str() {
                "true" | "t" | "1" | "yes" => Value::Bool(true),
                "false" | "f" | "0" | "no" => Value::Bool(false),
                _ => return Err(bad()),
            },
            ColumnType::Utf8 => Value::Utf8(text.to_string()),
            ColumnType::Binary => Value::Binary(text.as_bytes().to_vec()),
        })
    }

    /// Compares two values of the same type (nulls first; floats by their
    /// total order); `None` for values of different types.
    pub fn compare(&self, other: &Value) -> Option<Ordering> {
        Some(match (self, other) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Null, _) => Ordering::Less,
            (_, Value::Null) => Ordering::Greater,
            (Value::Int32(a), Value::Int32(b)) => a.cmp(b),
            (Value::Int64(a), Value::Int64(b)) => a.cmp(b),
            (Value::Timestamp(a), Value::Timestamp(b)) => a.cmp(b),
            (Value::Float64(a), Value::Float64(b)) => a.total_cmp(b),
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Utf8(a), Value::Utf8(b)) => a.cmp(b),
            (Value::Binary(a), Value::Binary(b)) => a.cmp(b),
            _ => return None,
        })
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Int32(x) => write!(f, "{x}"),
            Value::Int64(x) | Value::Timestamp(x) => write!(f, "{x}"),
            Value::Float64(x) => write!(f, "{x}"),
            Value::Bool(x) => write!(f, "{x}"),
            Value::Utf8(s) => f.write_str(s),
            Value::Binary(b) => {
                f.write_str("0x")?;
                for byte in b {
                    write!(f, "{byte:02x}")?;
                }
                Ok(())
            }
        }
    }
}

impl From<i32> for Value {
    fn from(x: i32) -> Value {
        Value::Int32(x)
    }
}
impl From<i64> for Value {
    fn from(x: i64) -> Value {
        Value::Int64(x)
    }
}
impl From<f64> for Value {
    fn from(x: f64) -> Value {
        Value::Float64(x)
    }
}
impl From<bool> for Value {
    fn from(x: bool) -> Value {
        Value::Bool(x)
    }
}
impl From<&str> for Value {
    fn from(x: &str) -> Value {
        Value::Utf8(x.to_string())
    }
}
impl From<String> for Value {
    fn from(x: String) -> Value {
        Value::Utf8(x)
    }
}
impl From<Vec<u8>> for Value {
    fn from(x: Vec<u8>) -> Value {
        Value::Binary(x)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(x: Option<T>) -> Value {
        x.map_or(Value::Null, Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coercion_widens_and_refuses_what_would_lose_data() {
        assert_eq!(
            Value::Int32(7)
                .coerce(ColumnType::Int64, "c")
                .expect("widen"),
            Value::Int64(7)
        );
        assert!(
            Value::Int64(1 << 40)
                .coerce(ColumnType::Int32, "c")
                .is_err()
        );
        assert!(
            Value::Utf8("x".into())
                .coerce(ColumnType::Int32, "c")
                .expect_err("refused")
                .to_string()
                .contains("\"c\"")
        );
        // An i64 becomes a double when the double holds it exactly (an
        // integer from Python addressing a double key): 2^53 + 1 does not.
        for x in [3, -7, 1 << 53, -(1 << 53), 1 << 60, i64::MIN] {
            assert_eq!(
                Value::Int64(x)
                    .coerce(ColumnType::Float64, "c")
                    .expect("exact"),
                Value::Float64(x as f64),
                "{x}"
            );
        }
        for x in [(1 << 53) + 1, -(1 << 53) - 1, i64::MAX] {
            assert!(
                Value::Int64(x).coerce(ColumnType::Float64, "c").is_err(),
                "{x}"
            );
        }
    }

    #[test]
    fn text_parses_by_type_and_bad_text_is_an_error() {
        assert_eq!(
            Value::parse("42", ColumnType::Int32).expect("int"),
            Value::Int32(42)
        );
        assert_eq!(
            Value::parse("", ColumnType::Int32).expect("null"),
            Value::Null
        );
        assert_eq!(
            Value::parse("T", ColumnType::Bool).expect("bool"),
            Value::Bool(true)
        );
        assert!(Value::parse("4x", ColumnType::Int64).is_err());
        assert!(Value::parse("maybe", ColumnType::Bool).is_err());
    }
}
