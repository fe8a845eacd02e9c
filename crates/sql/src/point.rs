//! Point statements: reads and writes of single rows by their whole primary
//! key, which Strata runs itself instead of through DataFusion.
//!
//! A point read or write costs Strata a few microseconds; DataFusion's
//! optimizer, physical planner and stream machinery cost most of a
//! millisecond for any statement. So after a statement is planned (once,
//! for a prepared statement), [`recognise`] looks for these shapes in the
//! logical plan, where names and types are already resolved:
//!
//! ```text
//!   SELECT cols FROM t WHERE k1 = v1 AND ... (every key column, once)
//!   INSERT [OR REPLACE] INTO t [(cols)] VALUES (v, ...), ...
//!   UPDATE t SET c = v, ... WHERE k1 = v1 AND ...   (no key column set)
//!   DELETE FROM t WHERE k1 = v1 AND ...
//! ```
//!
//! where each `v` is a literal or a parameter (`$1`), possibly cast or
//! negated. Anything else, or a value that does not convert to its
//! column's type, goes to DataFusion, which gives the same answer slower
//! (and its own error messages).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::{Column, ScalarValue};
use datafusion::datasource::source_as_provider;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{
    BinaryExpr, DmlStatement, Expr, LogicalPlan, Operator, TableSource, WriteOp,
};
use strata::table::{ColumnType, Schema, Table, Value, values_to_array};

use crate::error::engine_error;
use crate::filter::scalar_to_value;
use crate::provider::StrataTable;

/// A point statement, its values still expressions (literals, parameters).
#[derive(Debug, Clone)]
pub(crate) enum PointPlan {
    /// One row's named columns by key.
    Get {
        table: Table,
        key: Vec<Expr>,
        columns: Vec<String>,
        schema: SchemaRef,
    },
    /// Whole rows (one expression per table column, in schema order).
    Insert {
        table: Table,
        replace: bool,
        rows: Vec<Vec<Expr>>,
    },
    /// Named non-key columns of one row.
    Update {
        table: Table,
        key: Vec<Expr>,
        set: Vec<(String, Expr)>,
    },
    /// One row.
    Delete { table: Table, key: Vec<Expr> },
}

/// The point statement `plan` is, if it is one.
pub(crate) fn recognise(plan: &LogicalPlan) -> Option<PointPlan> {
    match plan {
        LogicalPlan::Projection(p) => {
            let LogicalPlan::Filter(f) = p.input.as_ref() else {
                return None;
            };
            let table = scanned_table(f.input.as_ref())?;
            let key = key_values(table.schema(), &f.predicate)?;
            let columns = p
                .expr
                .iter()
                .map(|e| match e {
                    Expr::Column(c) => Some(c.name.clone()),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            let schema = Arc::new(p.schema.as_arrow().clone());
            Some(PointPlan::Get {
                table,
                key,
                columns,
                schema,
            })
        }
        LogicalPlan::Dml(DmlStatement {
            target, op, input, ..
        }) => {
            let table = strata_table(target)?;
            match op {
                WriteOp::Insert(InsertOp::Append) => insert(table, input, false),
                WriteOp::Insert(InsertOp::Replace) => insert(table, input, true),
                WriteOp::Update => update(table, input),
                WriteOp::Delete => {
                    let LogicalPlan::Filter(f) = input.as_ref() else {
                        return None;
                    };
                    let scanned = scanned_table(f.input.as_ref())?;
                    same_table(&table, &scanned)?;
                    let key = key_values(table.schema(), &f.predicate)?;
                    Some(PointPlan::Delete { table, key })
                }
                _ => None,
            }
        }
        _ => None,
    }
}

fn insert(table: Table, input: &LogicalPlan, replace: bool) -> Option<PointPlan> {
    let LogicalPlan::Projection(p) = input else {
        return None;
    };
    let LogicalPlan::Values(values) = p.input.as_ref() else {
        return None;
    };
    if p.expr.len() != table.schema().columns().len() {
        return None;
    }
    // Each table column is a column of the VALUES rows or a constant (the
    // NULL of a column the statement leaves out).
    let sources = p
        .expr
        .iter()
        .map(|e| match unalias(e) {
            Expr::Column(c) => values.schema.index_of_column(c).ok().map(Ok),
            e if is_value(e) => Some(Err(e.clone())),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    let rows = values
        .values
        .iter()
        .map(|row| {
            sources
                .iter()
                .map(|s| match s {
                    Ok(i) => row.get(*i).filter(|e| is_value(e)).cloned(),
                    Err(constant) => Some(constant.clone()),
                })
                .collect::<Option<Vec<_>>>()
        })
        .collect::<Option<Vec<_>>>()?;
    Some(PointPlan::Insert {
        table,
        replace,
        rows,
    })
}

fn update(table: Table, input: &LogicalPlan) -> Option<PointPlan> {
    let LogicalPlan::Projection(p) = input else {
        return None;
    };
    let LogicalPlan::Filter(f) = p.input.as_ref() else {
        return None;
    };
    let scanned = scanned_table(f.input.as_ref())?;
    same_table(&table, &scanned)?;
    let schema = table.schema();
    let key = key_values(schema, &f.predicate)?;
    let mut set = Vec::new();
    for (e, column) in p.expr.iter().zip(schema.columns()) {
        match unalias(e) {
            Expr::Column(c) if c.name == column.name => {}
            e if is_value(e) => {
                // Changing a key moves the row: DataFusion's path does that.
                if schema.is_key(schema.index_of(&column.name).ok()?) {
                    return None;
                }
                set.push((column.name.clone(), e.clone()));
            }
            _ => return None,
        }
    }
    // Every column set to itself (DataFusion drops such assignments):
    // DataFusion's path counts the row without writing.
    if set.is_empty() {
        return None;
    }
    Some(PointPlan::Update { table, key, set })
}

/// The Strata table a plain scan (no pushed filters, no limit) reads.
fn scanned_table(plan: &LogicalPlan) -> Option<Table> {
    let LogicalPlan::TableScan(s) = plan else {
        return None;
    };
    if !s.filters.is_empty() || s.fetch.is_some() {
        return None;
    }
    strata_table(&s.source)
}

/// The Strata table behind a table source, if it is one.
pub(crate) fn strata_table(source: &Arc<dyn TableSource>) -> Option<Table> {
    let provider = source_as_provider(source).ok()?;
    let t = provider.downcast_ref::<StrataTable>()?;
    Some(t.table().clone())
}

fn same_table(a: &Table, b: &Table) -> Option<()> {
    (a.name() == b.name()).then_some(())
}

/// The key's value expressions, in key order, when `predicate` is a
/// conjunction of `key column = value`, each key column exactly once.
fn key_values(schema: &Schema, predicate: &Expr) -> Option<Vec<Expr>> {
    let mut key: Vec<Option<Expr>> = vec![None; schema.key_indices().len()];
    for term in split_conjunction(predicate) {
        let Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Eq,
            right,
        }) = term
        else {
            return None;
        };
        let (column, value) = match (left.as_ref(), right.as_ref()) {
            (Expr::Column(c), v) | (v, Expr::Column(c)) if is_value(v) => (c, v),
            _ => return None,
        };
        let slot = key_slot(schema, column)?;
        if key[slot].replace(value.clone()).is_some() {
            return None;
        }
    }
    key.into_iter().collect()
}

fn key_slot(schema: &Schema, column: &Column) -> Option<usize> {
    let index = schema.index_of(&column.name).ok()?;
    schema.key_indices().iter().position(|&k| k == index)
}

fn unalias(e: &Expr) -> &Expr {
    match e {
        Expr::Alias(a) => unalias(&a.expr),
        e => e,
    }
}

/// Whether `e` is a value known before reading any row: a literal or a
/// parameter, possibly cast or negated.
fn is_value(e: &Expr) -> bool {
    match e {
        Expr::Literal(..) | Expr::Placeholder(_) => true,
        Expr::Cast(c) => is_value(&c.expr),
        Expr::Negative(inner) => is_value(inner),
        _ => false,
    }
}

/// The value of a value expression, with parameters `$1`... from `params`.
fn evaluate(e: &Expr, params: &[ScalarValue]) -> Result<ScalarValue> {
    match e {
        Expr::Literal(v, _) => Ok(v.clone()),
        Expr::Placeholder(p) => {
            let n: usize =
                p.id.strip_prefix('$')
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| DataFusionError::Plan(format!("unknown parameter {}", p.id)))?;
            params.get(n.wrapping_sub(1)).cloned().ok_or_else(|| {
                DataFusionError::Plan(format!(
                    "no value for parameter {}: {} given",
                    p.id,
                    params.len()
                ))
            })
        }
        Expr::Cast(c) => evaluate(&c.expr, params)?.cast_to(c.field.data_type()),
        Expr::Negative(inner) => evaluate(inner, params)?.arithmetic_negate(),
        other => Err(DataFusionError::Internal(format!(
            "not a point statement value: {other}"
        ))),
    }
}

/// The key's values, or why there are none.
enum Key {
    Values(Vec<Value>),
    /// A key value is NULL: `k = NULL` matches no row.
    Null,
    /// A value does not convert: DataFusion runs the statement.
    Unconverted,
}

fn key(table: &Table, exprs: &[Expr], params: &[ScalarValue]) -> Result<Key> {
    let s = table.schema();
    Ok(
        match values(s, s.key_indices().iter().copied(), exprs, params)? {
            None => Key::Unconverted,
            // The key codec stores -0.0 as 0.0 (one key), so a point read
            // of -0.0 finds the row of 0.0, which DataFusion's comparison
            // (IEEE total order) does not; NaN likewise has its own rules
            // there. Such keys go the way of any statement.
            Some(v)
                if v.iter().any(|x| {
                    matches!(x, Value::Float64(f) if f.is_nan() || (*f == 0.0 && f.is_sign_negative()))
                }) =>
            {
                Key::Unconverted
            }
            Some(v) if v.iter().any(Value::is_null) => Key::Null,
            Some(v) => Key::Values(v),
        },
    )
}

/// Evaluates `exprs` as the values of the columns `columns` (schema
/// indices); `None` when one does not convert.
fn values(
    schema: &Schema,
    columns: impl Iterator<Item = usize>,
    exprs: &[Expr],
    params: &[ScalarValue],
) -> Result<Option<Vec<Value>>> {
    let mut out = Vec::with_capacity(exprs.len());
    for (i, e) in columns.zip(exprs) {
        let v = evaluate(e, params)?;
        // A value that does not convert exactly (`id = 1.5`, `name = 1`)
        // sends the statement to DataFusion, whose coercions and errors are
        // the reference; filter literals are pushed into scans by the same
        // rule.
        match scalar_to_value(&v, schema.columns()[i].ty) {
            Some(v) => out.push(v),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// What a point statement returned: rows and the number of rows it read or
/// changed.
pub(crate) struct PointOutput {
    pub batch: RecordBatch,
    pub rows: u64,
}

/// Runs `plan` with `params`; `None` when a value does not convert to its
/// column's type (run the statement through DataFusion instead).
pub(crate) fn run(plan: &PointPlan, params: &[ScalarValue]) -> Result<Option<PointOutput>> {
    match plan {
        PointPlan::Get {
            table,
            key,
            columns,
            schema,
        } => {
            let row = match self::key(table, key, params)? {
                Key::Unconverted => return Ok(None),
                Key::Null => None,
                Key::Values(key) => {
                    let names: Vec<&str> = columns.iter().map(String::as_str).collect();
                    table.get(&key, Some(&names)).map_err(engine_error)?
                }
            };
            let rows = u64::from(row.is_some());
            let arrays = schema
                .fields()
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let ty = ColumnType::from_arrow(f.data_type()).ok_or_else(|| {
                        DataFusionError::Internal(format!("column type {}", f.data_type()))
                    })?;
                    let v: Vec<Value> = row.as_ref().map(|r| r[i].clone()).into_iter().collect();
                    values_to_array(ty, &v).map_err(engine_error)
                })
                .collect::<Result<Vec<ArrayRef>>>()?;
            Ok(Some(PointOutput {
                batch: RecordBatch::try_new(Arc::clone(schema), arrays)?,
                rows,
            }))
        }
        PointPlan::Insert {
            table,
            replace,
            rows,
        } => {
            let s = table.schema();
            let mut converted = Vec::with_capacity(rows.len());
            for r in rows {
                match values(s, 0..s.columns().len(), r, params)? {
                    Some(v) => converted.push(v),
                    None => return Ok(None),
                }
            }
            let n = converted.len() as u64;
            let written = match (converted.len(), replace) {
                (1, false) => table.insert_row(&converted[0]),
                (1, true) => table.upsert_row(&converted[0]),
                _ => {
                    let batch = rows_to_batch(s, &converted)?;
                    if *replace {
                        table.upsert(&batch)
                    } else {
                        table.insert(&batch)
                    }
                }
            };
            written.map_err(engine_error)?;
            Ok(Some(count(n)?))
        }
        PointPlan::Update { table, key, set } => {
            let s = table.schema();
            let key = match self::key(table, key, params)? {
                Key::Unconverted => return Ok(None),
                Key::Null => return Ok(Some(count(0)?)),
                Key::Values(key) => key,
            };
            let mut changes = Vec::with_capacity(set.len());
            for (name, e) in set {
                let ty = s.columns()[s.index_of(name).map_err(engine_error)?].ty;
                match scalar_to_value(&evaluate(e, params)?, ty) {
                    Some(v) => changes.push((name.as_str(), v)),
                    None => return Ok(None),
                }
            }
            // UPDATE changes existing rows only; `update_row` alone would
            // write the columns of a row that does not exist.
            if !table.contains(&key).map_err(engine_error)? {
                return Ok(Some(count(0)?));
            }
            table.update_row(&key, &changes).map_err(engine_error)?;
            Ok(Some(count(1)?))
        }
        PointPlan::Delete { table, key } => {
            let key = match self::key(table, key, params)? {
                Key::Unconverted => return Ok(None),
                Key::Null => return Ok(Some(count(0)?)),
                Key::Values(key) => key,
            };
            if !table.contains(&key).map_err(engine_error)? {
                return Ok(Some(count(0)?));
            }
            table.delete_row(&key).map_err(engine_error)?;
            Ok(Some(count(1)?))
        }
    }
}

fn rows_to_batch(schema: &Schema, rows: &[Vec<Value>]) -> Result<RecordBatch> {
    let arrays = schema
        .columns()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let column: Vec<Value> = rows.iter().map(|r| r[i].clone()).collect();
            values_to_array(c.ty, &column).map_err(engine_error)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(schema.arrow_schema(), arrays)?)
}

/// The one-row `count` result DataFusion gives for a write.
fn count(n: u64) -> Result<PointOutput> {
    let schema = Arc::new(datafusion::arrow::datatypes::Schema::new(vec![
        datafusion::arrow::datatypes::Field::new("count", DataType::UInt64, false),
    ]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(UInt64Array::from(vec![n]))])?;
    Ok(PointOutput { batch, rows: n })
}
