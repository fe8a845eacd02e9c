//! Scan predicates: comparisons of a column with a constant, `IS NULL`,
//! and `AND`/`OR`/`NOT` of those.
//!
//! Scans use a predicate twice: to skip whole blocks whose per-column
//! minimum, maximum and null counts show no row can match
//! ([`Bound::may_match`]), and to test each row on its decoded column
//! values before the row is assembled ([`Bound::eval`]). Comparisons follow
//! SQL: a comparison with a null is unknown, and a row matches only when
//! the predicate is true.
//!
//! On a string column a file stores as codes into its dictionary (seed
//! 002), a comparison with a constant becomes a comparison of codes with a
//! code found by binary search in the dictionary ([`code_comparison`],
//! [`Bound::on_codes`]): dictionary order is byte order, so the blocks'
//! minimum and maximum codes skip blocks and the rows are tested on their
//! codes, without their bytes.

use std::cmp::Ordering;
use std::fmt;

use super::cgfile::ColumnStats;
use super::cgfile::block::compare_stat;
use super::piece::Cell;
use super::schema::{ColumnType, Schema};
use super::value::Value;
use crate::dict::Dictionary;
use crate::error::{Error, Result};

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `<>`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    pub(crate) fn holds(self, o: Ordering) -> bool {
        match self {
            CmpOp::Eq => o == Ordering::Equal,
            CmpOp::Ne => o != Ordering::Equal,
            CmpOp::Lt => o == Ordering::Less,
            CmpOp::Le => o != Ordering::Greater,
            CmpOp::Gt => o == Ordering::Greater,
            CmpOp::Ge => o != Ordering::Less,
        }
    }

    /// Parses `=`, `==`, `!=`, `<>`, `<`, `<=`, `>`, `>=`.
    pub fn parse(s: &str) -> Option<CmpOp> {
        Some(match s {
            "=" | "==" => CmpOp::Eq,
            "!=" | "<>" => CmpOp::Ne,
            "<" => CmpOp::Lt,
            "<=" => CmpOp::Le,
            ">" => CmpOp::Gt,
            ">=" => CmpOp::Ge,
            _ => return None,
        })
    }

    fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "<>",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// A predicate over a table's columns, by name.
#[derive(Clone, Debug, PartialEq)]
pub enum Predicate {
    /// `column op value`.
    Cmp {
        /// The column.
        column: String,
        /// The operator.
        op: CmpOp,
        /// The constant (converted to the column's type).
        value: Value,
    },
    /// `column IN (values)`: equal to one of them.
    In {
        /// The column.
        column: String,
        /// The constants (converted to the column's type); at least one.
        values: Vec<Value>,
    },
    /// `column` (utf8 or binary) starts with `prefix` (SQL's
    /// `LIKE 'prefix%'`).
    StartsWith {
        /// The column.
        column: String,
        /// The prefix: text or bytes.
        prefix: Value,
    },
    /// `column IS NULL`.
    IsNull(String),
    /// `column IS NOT NULL`.
    IsNotNull(String),
    /// Every one holds.
    And(Vec<Predicate>),
    /// Some one holds.
    Or(Vec<Predicate>),
    /// It does not hold.
    Not(Box<Predicate>),
}

impl Predicate {
    /// `column op value`.
    pub fn cmp(column: impl Into<String>, op: CmpOp, value: impl Into<Value>) -> Predicate {
        Predicate::Cmp {
            column: column.into(),
            op,
            value: value.into(),
        }
    }

    /// Both hold.
    pub fn and(self, other: Predicate) -> Predicate {
        match self {
            Predicate::And(mut v) => {
                v.push(other);
                Predicate::And(v)
            }
            p => Predicate::And(vec![p, other]),
        }
    }

    /// Either holds.
    pub fn or(self, other: Predicate) -> Predicate {
        Predicate::Or(vec![self, other])
    }

    /// Parses one comparison of the CLI's form `column<op>value` (for
    /// example `score>=10`), `column IN (v1, v2, ...)`, `column STARTS WITH
    /// prefix`, or `column IS NULL` / `column IS NOT NULL`. A constant may
    /// be quoted (`'Washington, D.C.'`, with `''` for a quote inside): what
    /// is between the quotes is the value, and no operator, keyword or
    /// comma in it is read as one (until 2026-12-01 an `IN` list split at
    /// every comma, quoted or not).
    pub fn parse_simple(text: &str) -> Result<Predicate> {
        let bad = || {
            Error::InvalidArgument(format!(
                "cannot read the predicate {text:?}; write column<op>value with op one of \
                 = != < <= > >=, column IN (v1, v2, ...), column STARTS WITH prefix, or \
                 column IS [NOT] NULL"
            ))
        };
        let t = text.trim();
        // The column: everything before the first space or operator
        // character.
        let end = t
            .find(|c: char| c.is_whitespace() || "<>=!".contains(c))
            .unwrap_or(t.len());
        let (column, rest) = (t[..end].to_string(), t[end..].trim_start());
        if column.is_empty() || column.contains('\'') {
            return Err(bad());
        }
        let upper = rest.to_ascii_uppercase();
        if upper == "IS NOT NULL" {
            return Ok(Predicate::IsNotNull(column));
        }
        if upper == "IS NULL" {
            return Ok(Predicate::IsNull(column));
        }
        // Typed when bound to the schema.
        let one = |v: &str| unquote(v).map(Value::Utf8).ok_or_else(bad);
        if upper.starts_with("STARTS WITH ") {
            return Ok(Predicate::StartsWith {
                column,
                prefix: one(&rest["STARTS WITH ".len()..])?,
            });
        }
        if upper.starts_with("IN ") || upper.starts_with("IN(") {
            let list = rest[2..]
                .trim()
                .strip_prefix('(')
                .and_then(|l| l.strip_suffix(')'))
                .ok_or_else(bad)?;
            let values = split_outside_quotes(list)
                .into_iter()
                .map(one)
                .collect::<Result<Vec<_>>>()?;
            return Ok(Predicate::In { column, values });
        }
        for op in ["<=", ">=", "!=", "<>", "==", "=", "<", ">"] {
            if let Some(value) = rest.strip_prefix(op) {
                let op = CmpOp::parse(op).ok_or_else(bad)?;
                return Ok(Predicate::Cmp {
                    column,
                    op,
                    value: one(value)?,
                });
            }
        }
        Err(bad())
    }

    /// Resolves column names and converts constants to the columns' types.
    pub fn bind(&self, schema: &Schema) -> Result<Bound> {
        Ok(match self {
            Predicate::Cmp { column, op, value } => {
                let i = schema.index_of(column)?;
                let c = &schema.columns()[i];
                let value = match value {
                    // Text from the CLI parses as the column's type.
                    Value::Utf8(s) if c.ty != ColumnType::Utf8 && c.ty != ColumnType::Binary => {
                        Value::parse(s, c.ty)?
                    }
                    v => v.clone().coerce(c.ty, &c.name)?,
                };
                if value.is_null() {
                    return Err(Error::InvalidArgument(format!(
                        "comparing {column:?} with NULL is never true; use IS NULL"
                    )));
                }
                Bound::Cmp {
                    column: i,
                    ty: c.ty,
                    op: *op,
                    value: stat_value(&value),
                }
            }
            // An IN list is the OR of its equalities, a prefix the range of
            // values from it up to its successor: on a column of codes both
            // become code sets by binary search in the file's dictionary.
            Predicate::In { column, values } => {
                if values.is_empty() {
                    return Err(Error::InvalidArgument(format!(
                        "{column:?} IN (): an IN list needs at least one value"
                    )));
                }
                Bound::Or(
                    values
                        .iter()
                        .map(|v| Predicate::cmp(column.clone(), CmpOp::Eq, v.clone()).bind(schema))
                        .collect::<Result<_>>()?,
                )
            }
            Predicate::StartsWith { column, prefix } => {
                let i = schema.index_of(column)?;
                let ty = schema.columns()[i].ty;
                let prefix: &[u8] = match (ty, prefix) {
                    (ColumnType::Utf8 | ColumnType::Binary, Value::Utf8(s)) => s.as_bytes(),
                    (ColumnType::Utf8 | ColumnType::Binary, Value::Binary(b)) => b,
                    (ColumnType::Utf8 | ColumnType::Binary, v) => {
                        return Err(Error::InvalidArgument(format!(
                            "{column:?} STARTS WITH {v}: a prefix is text or bytes"
                        )));
                    }
                    _ => {
                        return Err(Error::InvalidArgument(format!(
                            "{column:?} is {ty}: only utf8 and binary columns have prefixes"
                        )));
                    }
                };
                let cmp = |op, value: &[u8]| Bound::Cmp {
                    column: i,
                    ty,
                    op,
                    value: value.to_vec(),
                };
                match prefix_successor(prefix) {
                    Some(hi) => Bound::And(vec![cmp(CmpOp::Ge, prefix), cmp(CmpOp::Lt, &hi)]),
                    // Empty or all 0xff: every value from it on starts with
                    // it (and a null is unknown, as SQL has it).
                    None => cmp(CmpOp::Ge, prefix),
                }
            }
            Predicate::IsNull(c) => Bound::IsNull(schema.index_of(c)?, true),
            Predicate::IsNotNull(c) => Bound::IsNull(schema.index_of(c)?, false),
            Predicate::And(ps) => {
                Bound::And(ps.iter().map(|p| p.bind(schema)).collect::<Result<_>>()?)
            }
            Predicate::Or(ps) => {
                Bound::Or(ps.iter().map(|p| p.bind(schema)).collect::<Result<_>>()?)
            }
            Predicate::Not(p) => Bound::Not(Box::new(p.bind(schema)?)),
        })
    }
}

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |f: &mut fmt::Formatter<'_>, ps: &[Predicate], sep: &str| {
            f.write_str("(")?;
            for (i, p) in ps.iter().enumerate() {
                if i > 0 {
                    write!(f, " {sep} ")?;
                }
                write!(f, "{p}")?;
            }
            f.write_str(")")
        };
        match self {
            Predicate::Cmp { column, op, value } => write!(f, "{column} {} {value}", op.symbol()),
            Predicate::In { column, values } => {
                write!(f, "{column} IN (")?;
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str(")")
            }
            Predicate::StartsWith { column, prefix } => write!(f, "{column} STARTS WITH {prefix}"),
            Predicate::IsNull(c) => write!(f, "{c} IS NULL"),
            Predicate::IsNotNull(c) => write!(f, "{c} IS NOT NULL"),
            Predicate::And(ps) => join(f, ps, "AND"),
            Predicate::Or(ps) => join(f, ps, "OR"),
            Predicate::Not(p) => write!(f, "NOT {p}"),
        }
    }
}

/// The smallest byte string above every string that starts with `prefix`
/// (its last byte below 0xff incremented, what follows dropped); `None`
/// when every byte is 0xff.
fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let end = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut s = prefix[..=end].to_vec();
    s[end] += 1;
    Some(s)
}

/// A constant in the byte form block statistics use.
fn stat_value(v: &Value) -> Vec<u8> {
    match v {
        Value::Null => Vec::new(),
        Value::Int32(x) => x.to_le_bytes().to_vec(),
        Value::Int64(x) | Value::Timestamp(x) => x.to_le_bytes().to_vec(),
        Value::Float64(x) => x.to_le_bytes().to_vec(),
        Value::Bool(b) => vec![u8::from(*b)],
        Value::Utf8(s) => s.as_bytes().to_vec(),
        Value::Binary(b) => b.clone(),
    }
}

pub(crate) fn cell_cmp(ty: ColumnType, cell: &Cell<'_>, value: &[u8]) -> Option<Ordering> {
    let fixed8 = || {
        let mut b = [0u8; 8];
        b.copy_from_slice(&value[..8]);
        b
    };
    Some(match (ty, cell) {
        (_, Cell::Null) => return None,
        (ColumnType::Int32, Cell::Int32(x)) => x.cmp(&i32::from_le_bytes([
            value[0], value[1], value[2], value[3],
        ])),
        (ColumnType::Int64 | ColumnType::Timestamp, Cell::Int64(x)) => {
            x.cmp(&i64::from_le_bytes(fixed8()))
        }
        (ColumnType::Float64, Cell::Float64(x)) => x.total_cmp(&f64::from_le_bytes(fixed8())),
        (ColumnType::Bool, Cell::Bool(b)) => u8::from(*b).cmp(&value[0]),
        (_, Cell::Bytes(b)) => (*b).cmp(value),
        _ => return None,
    })
}

/// A predicate bound to a schema: columns by index into the schema's
/// columns (key or value), constants in statistic byte form.
#[derive(Clone, Debug, PartialEq)]
pub enum Bound {
    /// `column op value`.
    Cmp {
        /// Schema index.
        column: usize,
        /// Its type.
        ty: ColumnType,
        /// The operator.
        op: CmpOp,
        /// The constant.
        value: Vec<u8>,
    },
    /// `column IS NULL` (true) or `IS NOT NULL` (false).
    IsNull(usize, bool),
    /// All.
    And(Vec<Bound>),
    /// Any.
    Or(Vec<Bound>),
    /// Not.
    Not(Box<Bound>),
}

/// `x op value`, for the values `x` of a dictionary, as the same test on
/// their codes: `code op' c`. A comparison no value can pass comes out as
/// `code < 0`, one every value passes as `code >= 0` (still unknown for a
/// null, as SQL has it).
pub fn code_comparison(dict: &Dictionary, op: CmpOp, value: &[u8]) -> (CmpOp, u32) {
    let lo = dict.lower_bound(value);
    let exact = dict.try_value(lo) == Some(value);
    match (op, exact) {
        (CmpOp::Eq, true) => (CmpOp::Eq, lo),
        (CmpOp::Eq, false) => (CmpOp::Lt, 0),
        (CmpOp::Ne, true) => (CmpOp::Ne, lo),
        (CmpOp::Ne, false) => (CmpOp::Ge, 0),
        (CmpOp::Lt, _) => (CmpOp::Lt, lo),
        (CmpOp::Le, true) => (CmpOp::Le, lo),
        (CmpOp::Le, false) => (CmpOp::Lt, lo),
        (CmpOp::Gt, true) => (CmpOp::Gt, lo),
        (CmpOp::Gt, false) => (CmpOp::Ge, lo),
        (CmpOp::Ge, _) => (CmpOp::Ge, lo),
    }
}

impl Bound {
    /// The predicate for one file whose string columns `dict(schema index)`
    /// stores as codes: each comparison on such a column becomes a
    /// comparison of its codes ([`code_comparison`]) typed `i32` (codes
    /// are below 2^24), to be evaluated against code statistics or codes.
    /// `None` when no comparison changes.
    pub fn on_codes<'d>(&self, dict: &dyn Fn(usize) -> Option<&'d Dictionary>) -> Option<Bound> {
        let all = |ps: &[Bound]| -> Option<Vec<Bound>> {
            let rewritten: Vec<Option<Bound>> = ps.iter().map(|p| p.on_codes(dict)).collect();
            rewritten.iter().any(Option::is_some).then(|| {
                rewritten
                    .into_iter()
                    .zip(ps)
                    .map(|(r, p)| r.unwrap_or_else(|| p.clone()))
                    .collect()
            })
        };
        match self {
            Bound::Cmp {
                column, op, value, ..
            } => {
                let d = dict(*column)?;
                let (op, code) = code_comparison(d, *op, value);
                Some(Bound::Cmp {
                    column: *column,
                    ty: ColumnType::Int32,
                    op,
                    value: (code as i32).to_le_bytes().to_vec(),
                })
            }
            Bound::IsNull(..) => None,
            Bound::And(ps) => all(ps).map(Bound::And),
            Bound::Or(ps) => all(ps).map(Bound::Or),
            Bound::Not(p) => p.on_codes(dict).map(|p| Bound::Not(Box::new(p))),
        }
    }

    /// Evaluates on a row whose columns `cell(schema index)` gives; `None`
    /// is SQL's unknown.
    pub fn eval<'a>(&self, cell: &dyn Fn(usize) -> Cell<'a>) -> Option<bool> {
        match self {
            Bound::Cmp {
                column,
                ty,
                op,
                value,
            } => cell_cmp(*ty, &cell(*column), value).map(|o| op.holds(o)),
            Bound::IsNull(c, want) => Some(matches!(cell(*c), Cell::Null) == *want),
            Bound::And(ps) => {
                let mut unknown = false;
                for p in ps {
                    match p.eval(cell) {
                        Some(false) => return Some(false),
                        None => unknown = true,
                        Some(true) => {}
                    }
                }
                (!unknown).then_some(true)
            }
            Bound::Or(ps) => {
                let mut unknown = false;
                for p in ps {
                    match p.eval(cell) {
                        Some(true) => return Some(true),
                        None => unknown = true,
                        Some(false) => {}
                    }
                }
                (!unknown).then_some(false)
            }
            Bound::Not(p) => p.eval(cell).map(|b| !b),
        }
    }

    /// Whether some row of a block could match, from its statistics:
    /// `stats(schema index)` gives a column's statistics if the block holds
    /// the column. False only when no row can match.
    pub fn may_match(&self, stats: &dyn Fn(usize) -> Option<(ColumnType, ColumnStats)>) -> bool {
        match self {
            Bound::Cmp {
                column, op, value, ..
            } => {
                let Some((ty, s)) = stats(*column) else {
                    return true;
                };
                if s.present == s.nulls {
                    // No row has a non-null value: no comparison holds. (A
                    // row lacking the column here has its value nowhere the
                    // scan would find it: scans skip a block only when no
                    // other source overlaps its keys.)
                    return false;
                }
                let below_min = s.min.as_ref().map(|m| compare_stat(ty, value, m));
                let above_max = s.max.as_ref().map(|m| compare_stat(ty, value, m));
                match op {
                    CmpOp::Eq => {
                        below_min != Some(Ordering::Less) && above_max != Some(Ordering::Greater)
                    }
                    CmpOp::Ne => {
                        !(below_min == Some(Ordering::Equal) && above_max == Some(Ordering::Equal))
                    }
                    // Some value < c needs min < c.
                    CmpOp::Lt => {
                        below_min != Some(Ordering::Less) && below_min != Some(Ordering::Equal)
                    }
                    CmpOp::Le => below_min != Some(Ordering::Less),
                    CmpOp::Gt => {
                        above_max != Some(Ordering::Greater) && above_max != Some(Ordering::Equal)
                    }
                    CmpOp::Ge => above_max != Some(Ordering::Greater),
                }
            }
            Bound::IsNull(c, want) => match stats(*c) {
                None => true,
                Some((_, s)) if *want => s.nulls > 0,
                Some((_, s)) => s.present > s.nulls,
            },
            Bound::And(ps) => ps.iter().all(|p| p.may_match(stats)),
            Bound::Or(ps) => ps.iter().any(|p| p.may_match(stats)),
            Bound::Not(_) => true,
        }
    }

    /// Every schema index the predicate reads, appended to `out`.
    pub fn columns(&self, out: &mut Vec<usize>) {
        match self {
            Bound::Cmp { column, .. } | Bound::IsNull(column, _) => {
                if !out.contains(column) {
                    out.push(*column)
                }
            }
            Bound::And(ps) | Bound::Or(ps) => ps.iter().for_each(|p| p.columns(out)),
            Bound::Not(p) => p.columns(out),
        }
    }
}

/// A constant of [`Predicate::parse_simple`]: the text between single
/// quotes (`''` standing for a quote), or the trimmed text as it is; `None`
/// for an unbalanced quote or text after the closing one.
fn unquote(v: &str) -> Option<String> {
    let v = v.trim();
    let Some(inner) = v.strip_prefix('\'') else {
        return Some(v.to_string());
    };
    let mut out = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            if chars.peek() == Some(&'\'') {
                chars.next();
                out.push('\'');
            } else {
                return chars.next().is_none().then_some(out);
            }
        } else {
            out.push(c);
        }
    }
    None
}

/// `list` split at the commas outside single quotes.
fn split_outside_quotes(list: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut quoted, mut from) = (false, 0);
    for (i, c) in list.char_indices() {
        match c {
            '\'' => quoted = !quoted,
            ',' if !quoted => {
                parts.push(&list[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&list[from..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::schema::Column;

    fn schema() -> Schema {
        Schema::new(
            vec![
                Column::new("id", ColumnType::Int64),
                Column::nullable("n", ColumnType::Int32),
                Column::nullable("s", ColumnType::Utf8),
            ],
            &["id"],
        )
        .expect("schema")
    }

    fn row<'a>(n: Option<i32>, s: Option<&'a str>) -> impl Fn(usize) -> Cell<'a> {
        move |c| match c {
            1 => n.map_or(Cell::Null, Cell::Int32),
            2 => s.map_or(Cell::Null, |s| Cell::Bytes(s.as_bytes())),
            _ => Cell::Int64(0),
        }
    }

    #[test]
    fn prefixes_and_in_lists_hold_exactly_where_they_should_and_bad_ones_are_errors() {
        let s = schema();
        let bytes: &[&[u8]] = &[
            b"",
            b"a",
            b"ab",
            b"ab\0",
            b"ab\xff",
            b"ab\xff\xff",
            b"ac",
            b"b",
            b"\xff",
            b"\xff\xff",
            b"\xff\x00",
        ];
        for prefix in bytes {
            let p = Predicate::StartsWith {
                column: "s".into(),
                prefix: Value::Binary(prefix.to_vec()),
            }
            .bind(&s)
            .expect("bind");
            for v in bytes {
                let got = p.eval(&|c| if c == 2 { Cell::Bytes(v) } else { Cell::Null });
                assert_eq!(
                    got,
                    Some(v.starts_with(prefix)),
                    "{v:?} starts with {prefix:?}"
                );
            }
            assert_eq!(p.eval(&|_| Cell::Null), None, "null starts with {prefix:?}");
        }
        assert_eq!(prefix_successor(b"ab\xff"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"\xff\xff"), None);
        let p = Predicate::In {
            column: "n".into(),
            values: vec![Value::Int32(3), Value::Utf8("7".into())],
        }
        .bind(&s)
        .expect("bind");
        assert_eq!(p.eval(&row(Some(7), None)), Some(true));
        assert_eq!(p.eval(&row(Some(4), None)), Some(false));
        assert_eq!(p.eval(&row(None, None)), None);
        let empty = Predicate::In {
            column: "n".into(),
            values: Vec::new(),
        };
        assert!(empty.bind(&s).is_err());
        let on_int = Predicate::StartsWith {
            column: "n".into(),
            prefix: Value::Utf8("1".into()),
        };
        let e = on_int.bind(&s).expect_err("prefix of an i32");
        assert!(e.to_string().contains("only utf8 and binary"), "{e}");
        assert_eq!(
            Predicate::In {
                column: "n".into(),
                values: vec![Value::Int32(1), Value::Int32(2)]
            }
            .to_string(),
            "n IN (1, 2)"
        );
    }

    #[test]
    fn rows_follow_sql_three_valued_logic() {
        let s = schema();
        let p = Predicate::cmp("n", CmpOp::Gt, 5).bind(&s).expect("bind");
        assert_eq!(p.eval(&row(Some(6), None)), Some(true));
        assert_eq!(p.eval(&row(Some(5), None)), Some(false));
        assert_eq!(p.eval(&row(None, None)), None);
        let q = Predicate::Not(Box::new(Predicate::cmp("n", CmpOp::Gt, 5)))
            .or(Predicate::IsNull("s".into()))
            .bind(&s)
            .expect("bind");
        assert_eq!(q.eval(&row(None, None)), Some(true));
        assert_eq!(q.eval(&row(None, Some("x"))), None);
        let r = Predicate::parse_simple("s >= 'b'")
            .expect("parse")
            .bind(&s)
            .expect("bind");
        assert_eq!(r.eval(&row(None, Some("c"))), Some(true));
        assert_eq!(r.eval(&row(None, Some("a"))), Some(false));
        assert!(Predicate::cmp("nope", CmpOp::Eq, 1).bind(&s).is_err());
        assert!(Predicate::cmp("n", CmpOp::Eq, "x").bind(&s).is_err());
        assert!(Predicate::parse_simple("just words").is_err());
    }

    #[test]
    fn simple_predicates_read_quoted_constants_whole() {
        let p = |t: &str| Predicate::parse_simple(t).expect(t);
        let s = |v: &str| Value::Utf8(v.into());
        assert_eq!(
            p("city IN ('Washington, D.C.', 'Paris')"),
            Predicate::In {
                column: "city".into(),
                values: vec![s("Washington, D.C."), s("Paris")]
            }
        );
        assert_eq!(
            p("s='a<=b'"),
            Predicate::Cmp {
                column: "s".into(),
                op: CmpOp::Eq,
                value: s("a<=b")
            }
        );
        assert_eq!(
            p("s = 'it''s'"),
            Predicate::Cmp {
                column: "s".into(),
                op: CmpOp::Eq,
                value: s("it's")
            }
        );
        assert_eq!(
            p("name STARTS WITH 'x IN (1)'"),
            Predicate::StartsWith {
                column: "name".into(),
                prefix: s("x IN (1)")
            }
        );
        assert_eq!(
            p("n IN (1,2, 3)"),
            Predicate::In {
                column: "n".into(),
                values: vec![s("1"), s("2"), s("3")]
            }
        );
        assert_eq!(
            p("score>=10"),
            Predicate::Cmp {
                column: "score".into(),
                op: CmpOp::Ge,
                value: s("10")
            }
        );
        assert_eq!(p("c is not null"), Predicate::IsNotNull("c".into()));
        for bad in [
            "s = 'open",
            "s = 'a' b",
            "= 3",
            "'s' = 3",
            "c IN (1",
            "c ~ 3",
        ] {
            assert!(Predicate::parse_simple(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn block_statistics_rule_out_only_blocks_no_row_of_which_matches() {
        let s = schema();
        let stats = |min: i32, max: i32, nulls: u64| {
            move |c: usize| {
                (c == 1).then(|| {
                    (
                        ColumnType::Int32,
                        ColumnStats {
                            present: 10,
                            nulls,
                            min: Some(min.to_le_bytes().to_vec()),
                            max: Some(max.to_le_bytes().to_vec()),
                            codes: false,
                        },
                    )
                })
            }
        };
        let p = |op, v: i32| Predicate::cmp("n", op, v).bind(&s).expect("bind");
        assert!(!p(CmpOp::Gt, 20).may_match(&stats(1, 20, 0)));
        assert!(p(CmpOp::Ge, 20).may_match(&stats(1, 20, 0)));
        assert!(!p(CmpOp::Lt, 1).may_match(&stats(1, 20, 0)));
        assert!(p(CmpOp::Le, 1).may_match(&stats(1, 20, 0)));
        assert!(!p(CmpOp::Eq, 30).may_match(&stats(1, 20, 0)));
        assert!(p(CmpOp::Eq, 7).may_match(&stats(1, 20, 0)));
        assert!(!p(CmpOp::Ne, 4).may_match(&stats(4, 4, 0)));
        let isnull = Predicate::IsNull("n".into()).bind(&s).expect("bind");
        assert!(!isnull.may_match(&stats(1, 2, 0)));
        assert!(isnull.may_match(&stats(1, 2, 3)));
        // A column the block does not hold decides nothing.
        let other = Predicate::cmp("s", CmpOp::Eq, "x").bind(&s).expect("bind");
        assert!(other.may_match(&stats(1, 2, 0)));
        let either = Predicate::cmp("n", CmpOp::Gt, 20)
            .or(Predicate::cmp("s", CmpOp::Eq, "x"))
            .bind(&s)
            .expect("bind");
        assert!(either.may_match(&stats(1, 20, 0)));
    }
}
