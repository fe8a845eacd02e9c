//! DataFusion filters as Strata predicates: which filters a scan can take
//! over, and whether Strata's answer is exact.
//!
//! A filter pushed into a Strata scan is evaluated where the data lies:
//! block statistics skip blocks, dictionary codes are compared instead of
//! strings, and an equality on an indexed column can read through the
//! index. A filter is *exact* when Strata keeps precisely the rows SQL's
//! `WHERE` keeps (rows for which it is true, not false or null); DataFusion
//! then drops its own copy of the filter. Comparisons on floating-point
//! columns are pushed but not exact, so DataFusion re-checks them: its
//! kernels order NaN and negative zero by IEEE total order, and Strata's
//! predicates need not agree on those corners.

use datafusion::common::ScalarValue;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Like, Operator};
use strata::table::{CmpOp, ColumnType, Predicate, Schema, Value};

/// A filter translated for Strata.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Pushed {
    /// The predicate Strata evaluates.
    pub predicate: Predicate,
    /// Whether it keeps exactly the rows the filter keeps.
    pub exact: bool,
}

/// Translates `expr` over a table of `schema`, or `None` when Strata
/// cannot evaluate it (DataFusion then filters the scan's output).
pub(crate) fn translate(expr: &Expr, schema: &Schema) -> Option<Pushed> {
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And | Operator::Or => {
                let l = translate(left, schema)?;
                let r = translate(right, schema)?;
                let exact = l.exact && r.exact;
                let predicate = if *op == Operator::And {
                    l.predicate.and(r.predicate)
                } else {
                    l.predicate.or(r.predicate)
                };
                Some(Pushed { predicate, exact })
            }
            _ => comparison(left, *op, right, schema),
        },
        Expr::Not(inner) => {
            // Negation needs the inner predicate to agree with SQL on every
            // row, false and null alike: an inexact one may keep rows SQL
            // drops (negated, it drops rows SQL keeps), and `x IN (1, NULL)`
            // pushed as `x IN (1)` is false where SQL says null. DataFusion
            // rewrites most negations away before they get here.
            let p = translate(inner, schema)?;
            if !p.exact || has_null_in_list(inner) {
                return None;
            }
            Some(Pushed {
                predicate: Predicate::Not(Box::new(p.predicate)),
                exact: true,
            })
        }
        Expr::IsNull(inner) => {
            let (name, _) = column(inner, schema)?;
            Some(exact(Predicate::IsNull(name)))
        }
        Expr::IsNotNull(inner) => {
            let (name, _) = column(inner, schema)?;
            Some(exact(Predicate::IsNotNull(name)))
        }
        Expr::Between(Between {
            expr,
            negated,
            low,
            high,
        }) => {
            let lo = comparison(expr, Operator::GtEq, low, schema)?;
            let hi = comparison(expr, Operator::LtEq, high, schema)?;
            let exact = lo.exact && hi.exact;
            if *negated && !exact {
                // See `Expr::Not`: only exact predicates are negated.
                return None;
            }
            let both = lo.predicate.and(hi.predicate);
            let predicate = if *negated {
                Predicate::Not(Box::new(both))
            } else {
                both
            };
            Some(Pushed { predicate, exact })
        }
        Expr::InList(list) => {
            let (name, ty) = column(&list.expr, schema)?;
            let mut values = Vec::with_capacity(list.list.len());
            let mut saw_null = false;
            for item in &list.list {
                match literal(item, ty)? {
                    Value::Null => saw_null = true,
                    v => values.push(v),
                }
            }
            // `x NOT IN (.., NULL)` is never true; `x IN (.., NULL)` is true
            // exactly where `x IN (..)` is.
            let exact = ty != ColumnType::Float64;
            if values.is_empty() || (list.negated && (saw_null || !exact)) {
                return None;
            }
            let p = Predicate::In {
                column: name,
                values,
            };
            let predicate = if list.negated {
                Predicate::Not(Box::new(p))
            } else {
                p
            };
            Some(Pushed { predicate, exact })
        }
        Expr::Like(like) => prefix_like(like, schema),
        _ => None,
    }
}

/// Whether `expr` holds an `IN` list with a null item (which its
/// translation drops).
fn has_null_in_list(expr: &Expr) -> bool {
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, right, .. }) => {
            has_null_in_list(left) || has_null_in_list(right)
        }
        Expr::Not(inner) => has_null_in_list(inner),
        Expr::InList(list) => list
            .list
            .iter()
            .any(|e| matches!(e, Expr::Literal(v, _) if v.is_null())),
        _ => false,
    }
}

fn exact(predicate: Predicate) -> Pushed {
    Pushed {
        predicate,
        exact: true,
    }
}

/// `column op literal` or `literal op column`.
fn comparison(left: &Expr, op: Operator, right: &Expr, schema: &Schema) -> Option<Pushed> {
    let op = cmp_op(op)?;
    let (name, ty, lit, op) = match (column(left, schema), column(right, schema)) {
        (Some((name, ty)), None) => (name, ty, right, op),
        (None, Some((name, ty))) => (name, ty, left, flip(op)),
        _ => return None,
    };
    let value = literal(lit, ty)?;
    if value.is_null() {
        // `x = NULL` is never true; DataFusion folds it away anyway.
        return None;
    }
    Some(Pushed {
        predicate: Predicate::cmp(name, op, value),
        exact: ty != ColumnType::Float64,
    })
}

fn cmp_op(op: Operator) -> Option<CmpOp> {
    Some(match op {
        Operator::Eq => CmpOp::Eq,
        Operator::NotEq => CmpOp::Ne,
        Operator::Lt => CmpOp::Lt,
        Operator::LtEq => CmpOp::Le,
        Operator::Gt => CmpOp::Gt,
        Operator::GtEq => CmpOp::Ge,
        _ => return None,
    })
}

/// The operator with its operands swapped: `5 < x` is `x > 5`.
fn flip(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        other => other,
    }
}

/// A plain reference to one of the table's columns: its name and type.
fn column(expr: &Expr, schema: &Schema) -> Option<(String, ColumnType)> {
    let Expr::Column(c) = expr else {
        return None;
    };
    let i = schema.index_of(&c.name).ok()?;
    Some((c.name.clone(), schema.columns()[i].ty))
}

/// A literal as a value of the column's type, when it converts without
/// loss (an out-of-range integer, say, is left to DataFusion).
fn literal(expr: &Expr, ty: ColumnType) -> Option<Value> {
    let Expr::Literal(scalar, _) = expr else {
        return None;
    };
    scalar_to_value(scalar, ty)
}

/// `scalar` as a value of type `ty`, or `None` if it does not convert
/// exactly. Null scalars become [`Value::Null`].
pub(crate) fn scalar_to_value(scalar: &ScalarValue, ty: ColumnType) -> Option<Value> {
    if scalar.is_null() {
        return Some(Value::Null);
    }
    let int = match scalar {
        ScalarValue::Int8(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int16(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int32(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int64(Some(v)) => Some(*v),
        ScalarValue::UInt8(Some(v)) => Some(i64::from(*v)),
        ScalarValue::UInt16(Some(v)) => Some(i64::from(*v)),
        ScalarValue::UInt32(Some(v)) => Some(i64::from(*v)),
        ScalarValue::UInt64(Some(v)) => i64::try_from(*v).ok(),
        _ => None,
    };
    match (ty, scalar) {
        (ColumnType::Int32, _) => int.and_then(|v| i32::try_from(v).ok()).map(Value::Int32),
        (ColumnType::Int64, _) => int.map(Value::Int64),
        (ColumnType::Float64, ScalarValue::Float64(Some(v))) => Some(Value::Float64(*v)),
        (ColumnType::Float64, ScalarValue::Float32(Some(v))) => Some(Value::Float64(f64::from(*v))),
        // Integers up to 2^53 are exact in an f64.
        (ColumnType::Float64, _) => int
            .filter(|v| v.unsigned_abs() <= 1 << 53)
            .map(|v| Value::Float64(v as f64)),
        (ColumnType::Bool, ScalarValue::Boolean(Some(b))) => Some(Value::Bool(*b)),
        (
            ColumnType::Utf8,
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)),
        ) => Some(Value::Utf8(s.clone())),
        (
            ColumnType::Binary,
            ScalarValue::Binary(Some(b))
            | ScalarValue::LargeBinary(Some(b))
            | ScalarValue::BinaryView(Some(b)),
        ) => Some(Value::Binary(b.clone())),
        (ColumnType::Timestamp, ScalarValue::TimestampMicrosecond(Some(v), None)) => {
            Some(Value::Timestamp(*v))
        }
        _ => None,
    }
}

/// `column LIKE 'prefix%'` (case-sensitive, no escape character, no other
/// wildcard) as a prefix match; a pattern without wildcards as equality.
fn prefix_like(like: &Like, schema: &Schema) -> Option<Pushed> {
    if like.negated || like.case_insensitive || like.escape_char.is_some() {
        return None;
    }
    let (name, ty) = column(&like.expr, schema)?;
    if ty != ColumnType::Utf8 {
        return None;
    }
    let Expr::Literal(
        ScalarValue::Utf8(Some(pattern))
        | ScalarValue::LargeUtf8(Some(pattern))
        | ScalarValue::Utf8View(Some(pattern)),
        _,
    ) = like.pattern.as_ref()
    else {
        return None;
    };
    let wild = |c: char| c == '%' || c == '_' || c == '\\';
    let (prefix, rest) = match pattern.find(wild) {
        None => return Some(exact(Predicate::cmp(name, CmpOp::Eq, pattern.clone()))),
        Some(i) => pattern.split_at(i),
    };
    if !rest.chars().all(|c| c == '%') {
        return None;
    }
    Some(exact(Predicate::StartsWith {
        column: name,
        prefix: Value::Utf8(prefix.to_string()),
    }))
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::{col, lit};
    use strata::table::Column;

    use super::*;

    fn schema() -> Schema {
        Schema::new(
            vec![
                Column::new("id", ColumnType::Int64),
                Column::nullable("n", ColumnType::Int32),
                Column::nullable("s", ColumnType::Utf8),
                Column::nullable("f", ColumnType::Float64),
            ],
            &["id"],
        )
        .expect("schema")
    }

    fn t(e: Expr) -> Option<Pushed> {
        translate(&e, &schema())
    }

    #[test]
    fn comparisons_either_way_round() {
        assert_eq!(
            t(col("n").gt(lit(5i32))).map(|p| p.predicate),
            Some(Predicate::cmp("n", CmpOp::Gt, Value::Int32(5)))
        );
        assert_eq!(
            t(lit(5i64).gt(col("n"))).map(|p| p.predicate),
            Some(Predicate::cmp("n", CmpOp::Lt, Value::Int32(5)))
        );
    }

    #[test]
    fn lossy_literals_stay_with_datafusion() {
        // 2^40 does not fit the i32 column.
        assert_eq!(t(col("n").eq(lit(1i64 << 40))), None);
        assert_eq!(t(col("n").eq(lit("x"))), None);
        assert_eq!(t(col("f").eq(lit((1i64 << 60) + 1))), None);
    }

    #[test]
    fn floats_are_pushed_but_rechecked() {
        let p = t(col("f").lt(lit(1.5f64))).expect("pushed");
        assert!(!p.exact);
        let p = t(col("f").lt(lit(1.5f64)).and(col("id").eq(lit(3i64)))).expect("pushed");
        assert!(!p.exact);
        assert!(t(col("id").eq(lit(3i64))).expect("pushed").exact);
    }

    #[test]
    fn in_lists_with_nulls() {
        let null = Expr::Literal(ScalarValue::Int32(None), None);
        let p = t(col("n").in_list(vec![lit(1i32), null.clone()], false)).expect("pushed");
        assert_eq!(
            p.predicate,
            Predicate::In {
                column: "n".into(),
                values: vec![Value::Int32(1)]
            }
        );
        // NOT IN with a null is never true: not expressible as Not(In).
        assert_eq!(
            t(col("n").in_list(vec![lit(1i32), null.clone()], true)),
            None
        );
        // Nor is the negation of an IN with a null, written out.
        let inner = col("n").in_list(vec![lit(1i32), null], false);
        assert_eq!(t(Expr::Not(Box::new(inner.clone()))), None);
        assert_eq!(
            t(Expr::Not(Box::new(inner.or(col("id").eq(lit(3i64)))))),
            None
        );
    }

    #[test]
    fn negations_only_of_exact_predicates() {
        // Negating a predicate DataFusion re-checks could drop rows SQL
        // keeps.
        assert_eq!(t(Expr::Not(Box::new(col("f").lt(lit(1.5f64))))), None);
        assert_eq!(t(col("f").not_between(lit(1.0f64), lit(2.0f64))), None);
        assert_eq!(t(col("f").in_list(vec![lit(1.0f64)], true)), None);
        assert!(
            t(col("n").not_between(lit(1i32), lit(2i32)))
                .expect("pushed")
                .exact
        );
        let p = t(Expr::Not(Box::new(col("n").lt(lit(3i32))))).expect("pushed");
        assert!(p.exact);
        assert_eq!(
            p.predicate,
            Predicate::Not(Box::new(Predicate::cmp("n", CmpOp::Lt, Value::Int32(3))))
        );
    }

    #[test]
    fn like_prefixes() {
        assert_eq!(
            t(col("s").like(lit("ab%"))).map(|p| p.predicate),
            Some(Predicate::StartsWith {
                column: "s".into(),
                prefix: Value::Utf8("ab".into())
            })
        );
        assert_eq!(
            t(col("s").like(lit("ab"))).map(|p| p.predicate),
            Some(Predicate::cmp("s", CmpOp::Eq, "ab"))
        );
        assert_eq!(t(col("s").like(lit("a_b%"))), None);
        assert_eq!(t(col("s").like(lit("%ab"))), None);
        assert_eq!(t(col("s").ilike(lit("ab%"))), None);
    }

    #[test]
    fn unknown_columns_and_functions_are_not_pushed() {
        assert_eq!(t(col("zz").eq(lit(1i32))), None);
        assert_eq!(t((col("n") + lit(1i32)).eq(lit(2i32))), None);
        // One side of an OR that cannot be pushed keeps the whole OR out.
        assert_eq!(
            t(col("n")
                .eq(lit(1i32))
                .or((col("n") + lit(1i32)).eq(lit(2i32)))),
            None
        );
    }
}
