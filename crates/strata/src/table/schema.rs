//! Table schemas: typed columns and a primary key.
//!
//! A schema lists a table's columns in declaration order and names the
//! columns of its primary key. The key columns are encoded into the
//! row's key ([`super::keycodec`]); every other column is a *value column*,
//! numbered 0.. in declaration order, and it is by these numbers that row
//! pieces ([`super::piece`]), layouts ([`super::layout`]) and column-group
//! files refer to columns.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema as ArrowSchema, TimeUnit};

use crate::error::{Error, Result};

/// The most columns a table may have (keeps row pieces' bitmaps and the
/// advisor's column sets small).
pub const MAX_COLUMNS: usize = 1024;

/// The longest column or table name, in bytes.
pub const MAX_NAME_BYTES: usize = 255;

/// A column's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// 32-bit signed integer.
    Int32,
    /// 64-bit signed integer.
    Int64,
    /// 64-bit IEEE float.
    Float64,
    /// Boolean.
    Bool,
    /// UTF-8 text.
    Utf8,
    /// Raw bytes.
    Binary,
    /// Microseconds since the Unix epoch (no time zone), as a 64-bit integer.
    Timestamp,
}

impl ColumnType {
    /// Every type, in the order of their stable codes.
    pub const ALL: [ColumnType; 7] = [
        ColumnType::Int32,
        ColumnType::Int64,
        ColumnType::Float64,
        ColumnType::Bool,
        ColumnType::Utf8,
        ColumnType::Binary,
        ColumnType::Timestamp,
    ];

    /// The stable name used in the catalog, the CLI and `describe`.
    pub fn name(self) -> &'static str {
        match self {
            ColumnType::Int32 => "i32",
            ColumnType::Int64 => "i64",
            ColumnType::Float64 => "f64",
            ColumnType::Bool => "bool",
            ColumnType::Utf8 => "utf8",
            ColumnType::Binary => "binary",
            ColumnType::Timestamp => "timestamp",
        }
    }

    /// Parses a type name (also accepts common SQL spellings).
    pub fn parse(s: &str) -> Result<ColumnType> {
        let t = match s.to_ascii_lowercase().as_str() {
            "i32" | "int" | "int32" | "integer" | "int4" => ColumnType::Int32,
            "i64" | "int64" | "bigint" | "int8" | "long" => ColumnType::Int64,
            "f64" | "float64" | "double" | "float8" | "real64" => ColumnType::Float64,
            "bool" | "boolean" => ColumnType::Bool,
            "utf8" | "string" | "text" | "varchar" | "str" => ColumnType::Utf8,
            "binary" | "bytes" | "bytea" | "blob" => ColumnType::Binary,
            "timestamp" | "ts" => ColumnType::Timestamp,
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "unknown column type {s:?}; the types are i32, i64, f64, bool, utf8, binary, timestamp"
                )));
            }
        };
        Ok(t)
    }

    /// The stable one-byte code stored in column-group files.
    pub fn code(self) -> u8 {
        match self {
            ColumnType::Int32 => 1,
            ColumnType::Int64 => 2,
            ColumnType::Float64 => 3,
            ColumnType::Bool => 4,
            ColumnType::Utf8 => 5,
            ColumnType::Binary => 6,
            ColumnType::Timestamp => 7,
        }
    }

    /// The type of a stable code.
    pub fn from_code(code: u8) -> Option<ColumnType> {
        ColumnType::ALL.into_iter().find(|t| t.code() == code)
    }

    /// Bytes of a value of a fixed-width type; `None` for utf8 and binary.
    pub fn fixed_width(self) -> Option<usize> {
        match self {
            ColumnType::Int32 => Some(4),
            ColumnType::Int64 | ColumnType::Float64 | ColumnType::Timestamp => Some(8),
            ColumnType::Bool => Some(1),
            ColumnType::Utf8 | ColumnType::Binary => None,
        }
    }

    /// The Arrow type scans return for this column.
    pub fn arrow_type(self) -> DataType {
        match self {
            ColumnType::Int32 => DataType::Int32,
            ColumnType::Int64 => DataType::Int64,
            ColumnType::Float64 => DataType::Float64,
            ColumnType::Bool => DataType::Boolean,
            ColumnType::Utf8 => DataType::Utf8,
            ColumnType::Binary => DataType::Binary,
            ColumnType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
        }
    }

    /// The column type of an Arrow type, if Strata stores it.
    pub fn from_arrow(t: &DataType) -> Option<ColumnType> {
        Some(match t {
            DataType::Int32 => ColumnType::Int32,
            DataType::Int64 => ColumnType::Int64,
            DataType::Float64 => ColumnType::Float64,
            DataType::Boolean => ColumnType::Bool,
            DataType::Utf8 => ColumnType::Utf8,
            DataType::Binary => ColumnType::Binary,
            DataType::Timestamp(TimeUnit::Microsecond, None) => ColumnType::Timestamp,
            _ => return None,
        })
    }

    /// A typical width in bytes, for the cost model (strings count 16).
    pub fn nominal_width(self) -> usize {
        self.fixed_width().unwrap_or(16)
    }
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One column of a schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The column's name, unique within its table.
    pub name: String,
    /// Its type.
    pub ty: ColumnType,
    /// Whether it may hold nulls (never for a key column).
    pub nullable: bool,
}

impl Column {
    /// A non-nullable column.
    pub fn new(name: impl Into<String>, ty: ColumnType) -> Column {
        Column {
            name: name.into(),
            ty,
            nullable: false,
        }
    }

    /// A nullable column.
    pub fn nullable(name: impl Into<String>, ty: ColumnType) -> Column {
        Column {
            name: name.into(),
            ty,
            nullable: true,
        }
    }
}

/// A table's columns and primary key, checked ([`Schema::new`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schema {
    columns: Vec<Column>,
    /// Indices into `columns`, in key order.
    key: Vec<usize>,
    /// Indices into `columns` of the value columns, in declaration order:
    /// `values[v]` is value column `v`.
    values: Vec<usize>,
    /// For each column, its value-column number (`None` for key columns).
    value_of: Vec<Option<usize>>,
}

impl Schema {
    /// Checks and builds a schema: names non-empty, at most
    /// [`MAX_NAME_BYTES`] and unique; at least one key column, each named
    /// once and not nullable; at most [`MAX_COLUMNS`] columns.
    pub fn new(columns: Vec<Column>, primary_key: &[&str]) -> Result<Schema> {
        let bad = |why: String| Err(Error::InvalidArgument(format!("schema: {why}")));
        if columns.is_empty() {
            return bad("a table needs at least one column".into());
        }
        if columns.len() > MAX_COLUMNS {
            return bad(format!("{} columns; at most {MAX_COLUMNS}", columns.len()));
        }
        let mut seen = HashSet::new();
        for c in &columns {
            if c.name.is_empty() {
                return bad("a column has an empty name".into());
            }
            if c.name.len() > MAX_NAME_BYTES {
                return bad(format!(
                    "column name {:?}... is longer than {MAX_NAME_BYTES} bytes",
                    &c.name[..c.name.floor_char_boundary(32)]
                ));
            }
            if !seen.insert(c.name.as_str()) {
                return bad(format!("column {:?} is named twice", c.name));
            }
        }
        if primary_key.is_empty() {
            return bad("no primary key: name one or more key columns".into());
        }
        let mut key = Vec::with_capacity(primary_key.len());
        for name in primary_key {
            let Some(i) = columns.iter().position(|c| c.name == *name) else {
                return bad(format!("key column {name:?} is not a column of the table"));
            };
            if key.contains(&i) {
                return bad(format!("key column {name:?} is named twice"));
            }
            if columns[i].nullable {
                return bad(format!(
                    "key column {name:?} is nullable; key columns must not be"
                ));
            }
            key.push(i);
        }
        let values: Vec<usize> = (0..columns.len()).filter(|i| !key.contains(i)).collect();
        let mut value_of = vec![None; columns.len()];
        for (v, &c) in values.iter().enumerate() {
            value_of[c] = Some(v);
        }
        Ok(Schema {
            columns,
            key,
            values,
            value_of,
        })
    }

    /// Every column, in declaration order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// The key columns' indices into [`Schema::columns`], in key order.
    pub fn key_indices(&self) -> &[usize] {
        &self.key
    }

    /// The value columns' indices into [`Schema::columns`]: entry `v` is
    /// value column `v`.
    pub fn value_indices(&self) -> &[usize] {
        &self.values
    }

    /// Number of value (non-key) columns.
    pub fn num_values(&self) -> usize {
        self.values.len()
    }

    /// Value column `v`.
    pub fn value_column(&self, v: usize) -> &Column {
        &self.columns[self.values[v]]
    }

    /// The index of the column named `name`.
    pub fn index_of(&self, name: &str) -> Result<usize> {
        self.index_from(name, 0)
    }

    /// [`Self::index_of`], searching from column `from` on and wrapping.
    fn index_from(&self, name: &str, from: usize) -> Result<usize> {
        let n = self.columns.len();
        (0..n)
            .map(|d| (from + d) % n)
            .find(|&i| self.columns[i].name == name)
            .ok_or_else(|| Error::InvalidArgument(format!("no column named {name:?}")))
    }

    /// The value-column number of the column at `index`, `None` for a key
    /// column.
    pub fn value_number(&self, index: usize) -> Option<usize> {
        self.value_of.get(index).copied().flatten()
    }

    /// Whether the column at `index` is part of the key.
    pub fn is_key(&self, index: usize) -> bool {
        self.key.contains(&index)
    }

    /// The Arrow schema of whole rows.
    pub fn arrow_schema(&self) -> Arc<ArrowSchema> {
        Arc::new(ArrowSchema::new(
            self.columns
                .iter()
                .map(|c| Field::new(&c.name, c.ty.arrow_type(), c.nullable))
                .collect::<Vec<_>>(),
        ))
    }

    /// The Arrow schema of the columns at `indices` (a projection).
    pub fn arrow_projection(&self, indices: &[usize]) -> Arc<ArrowSchema> {
        Arc::new(ArrowSchema::new(
            indices
                .iter()
                .map(|&i| {
                    let c = &self.columns[i];
                    Field::new(&c.name, c.ty.arrow_type(), c.nullable)
                })
                .collect::<Vec<_>>(),
        ))
    }

    /// Builds a schema from an Arrow schema and key column names.
    pub fn from_arrow(schema: &ArrowSchema, primary_key: &[&str]) -> Result<Schema> {
        let columns = schema
            .fields()
            .iter()
            .map(|f| {
                let ty = ColumnType::from_arrow(f.data_type()).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "column {:?} has Arrow type {}, which tables do not store \
                         (i32, i64, f64, bool, utf8, binary, timestamp[us])",
                        f.name(),
                        f.data_type()
                    ))
                })?;
                Ok(Column {
                    name: f.name().clone(),
                    ty,
                    nullable: f.is_nullable(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Schema::new(columns, primary_key)
    }

    /// Resolves column names to indices; `None` means every column.
    pub fn projection(&self, names: Option<&[&str]>) -> Result<Vec<usize>> {
        match names {
            None => Ok((0..self.columns.len()).collect()),
            Some(names) => {
                // Projections mostly name columns in schema order: each
                // search starts after the previous column found (a point
                // read of 15 of 31 columns spent a tenth of its time here
                // searching from the first column each time).
                let mut from = 0;
                names
                    .iter()
                    .map(|name| {
                        let i = self.index_from(name, from)?;
                        from = i + 1;
                        Ok(i)
                    })
                    .collect()
            }
        }
    }
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.columns.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{} {}", c.name, c.ty)?;
            if c.nullable {
                f.write_str(" null")?;
            }
        }
        f.write_str("; key (")?;
        for (i, &k) in self.key.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(&self.columns[k].name)?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols() -> Vec<Column> {
        vec![
            Column::new("id", ColumnType::Int64),
            Column::nullable("name", ColumnType::Utf8),
            Column::new("score", ColumnType::Float64),
        ]
    }

    #[test]
    fn a_valid_schema_numbers_its_value_columns_in_declaration_order() {
        let s = Schema::new(cols(), &["id"]).expect("schema");
        assert_eq!(s.key_indices(), &[0]);
        assert_eq!(s.value_indices(), &[1, 2]);
        assert_eq!(s.value_number(2), Some(1));
        assert_eq!(s.value_number(0), None);
        assert_eq!(s.arrow_schema().fields().len(), 3);
    }

    #[test]
    fn bad_schemas_are_refused_with_the_reason() {
        let err = |cols: Vec<Column>, key: &[&str]| {
            Schema::new(cols, key)
                .expect_err("must be refused")
                .to_string()
        };
        let mut dup = cols();
        dup.push(Column::new("name", ColumnType::Int32));
        assert!(err(dup, &["id"]).contains("named twice"));
        let mut empty = cols();
        empty[1].name.clear();
        assert!(err(empty, &["id"]).contains("empty name"));
        assert!(err(cols(), &[]).contains("no primary key"));
        assert!(err(cols(), &["nope"]).contains("not a column"));
        assert!(err(cols(), &["name"]).contains("nullable"));
        assert!(err(cols(), &["id", "id"]).contains("named twice"));
        assert!(err(Vec::new(), &["id"]).contains("at least one column"));
        assert!(
            ColumnType::parse("decimal")
                .expect_err("unknown")
                .to_string()
                .contains("unknown column type")
        );
    }

    #[test]
    fn arrow_schemas_round_trip() {
        let s = Schema::new(cols(), &["id"]).expect("schema");
        let back = Schema::from_arrow(&s.arrow_schema(), &["id"]).expect("from arrow");
        assert_eq!(s, back);
        let odd = ArrowSchema::new(vec![Field::new("x", DataType::UInt8, false)]);
        assert!(Schema::from_arrow(&odd, &["x"]).is_err());
    }

    #[test]
    fn type_codes_and_names_are_stable_and_distinct() {
        for t in ColumnType::ALL {
            assert_eq!(ColumnType::from_code(t.code()), Some(t));
            assert_eq!(ColumnType::parse(t.name()).expect("parse"), t);
        }
        assert_eq!(ColumnType::from_code(0), None);
    }
}
