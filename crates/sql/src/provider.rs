//! A Strata table as a DataFusion table: scans with projections, filters
//! and key ranges pushed into Strata, row-count estimates, and `INSERT`,
//! `UPDATE` and `DELETE`, each one atomic write batch.

use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::{Constraint, Constraints, DFSchema, Statistics};
use datafusion::datasource::sink::DataSinkExec;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;
use strata::table::{CmpOp, ColumnType, Predicate, Schema, Table, Value};

use crate::dml::{DmlExec, DmlKind, InsertSink};
use crate::filter::{Pushed, translate};
use crate::scan::{ScanRequest, StrataScanExec};

/// One Strata table, as DataFusion sees it.
pub struct StrataTable {
    table: Table,
    schema: SchemaRef,
    constraints: Constraints,
}

impl fmt::Debug for StrataTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StrataTable")
            .field("table", &self.table.name())
            .finish()
    }
}

impl StrataTable {
    /// Wraps `table`.
    pub fn new(table: Table) -> StrataTable {
        let schema = table.schema().arrow_schema();
        let key = table.schema().key_indices().to_vec();
        let constraints = Constraints::new_unverified(vec![Constraint::PrimaryKey(key)]);
        StrataTable {
            table,
            schema,
            constraints,
        }
    }

    /// The wrapped table.
    pub fn table(&self) -> &Table {
        &self.table
    }

    fn estimated_rows(&self) -> Option<usize> {
        self.table.estimated_rows().ok().map(|n| n as usize)
    }
}

#[async_trait]
impl TableProvider for StrataTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn constraints(&self) -> Option<&Constraints> {
        Some(&self.constraints)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = self.table.schema();
        let projection: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..schema.columns().len()).collect(),
        };
        let columns = projection
            .iter()
            .map(|&i| schema.columns()[i].name.clone())
            .collect();
        let mut request = scan_request(columns, filters, schema);
        // A limit is only safe when nothing above filters again.
        request.limit = if request.exact { limit } else { None };
        let out_schema = Arc::new(self.schema.project(&projection)?);
        Ok(Arc::new(StrataScanExec::new(
            self.table.clone(),
            request,
            out_schema,
            self.estimated_rows(),
        )))
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        let schema = self.table.schema();
        Ok(filters
            .iter()
            .map(|f| match translate(f, schema) {
                Some(p) if p.exact => TableProviderFilterPushDown::Exact,
                Some(_) => TableProviderFilterPushDown::Inexact,
                None => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    fn statistics(&self) -> Option<Statistics> {
        let mut stats = Statistics::new_unknown(&self.schema);
        stats.num_rows = Precision::Inexact(self.estimated_rows()?);
        Some(stats)
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let replace = match insert_op {
            InsertOp::Append => false,
            InsertOp::Replace => true,
            InsertOp::Overwrite => {
                return Err(DataFusionError::NotImplemented(
                    "INSERT OVERWRITE is not supported on Strata tables; DELETE, then INSERT"
                        .into(),
                ));
            }
        };
        let sink = InsertSink::new(self.table.clone(), Arc::clone(&self.schema), replace);
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }

    async fn delete_from(
        &self,
        state: &dyn Session,
        filters: Vec<Expr>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.dml(state, DmlKind::Delete, Vec::new(), filters)
    }

    async fn update(
        &self,
        state: &dyn Session,
        assignments: Vec<(String, Expr)>,
        filters: Vec<Expr>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = self.table.schema();
        for (name, _) in &assignments {
            let i = schema.index_of(name).map_err(crate::error::engine_error)?;
            if schema.is_key(i) {
                return Err(DataFusionError::Plan(format!(
                    "UPDATE cannot set primary-key column {name:?} of table {:?}; \
                     DELETE the row and INSERT it with the new key",
                    self.table.name()
                )));
            }
        }
        self.dml(state, DmlKind::Update, assignments, filters)
    }
}

impl StrataTable {
    /// Plans an `UPDATE` or `DELETE`. Nothing runs until the plan is
    /// executed, so `EXPLAIN` changes nothing.
    fn dml(
        &self,
        state: &dyn Session,
        kind: DmlKind,
        assignments: Vec<(String, Expr)>,
        filters: Vec<Expr>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = self.table.schema();
        // Every column is read: the residual filters and the assignments
        // may name any of them, and row-then-column layouts read whole rows
        // near the top anyway.
        let columns = schema.columns().iter().map(|c| c.name.clone()).collect();
        let request = scan_request(columns, &filters, schema);
        let exact = request.exact;
        let df_schema = DFSchema::try_from(Arc::clone(&self.schema))?;
        let residual = if exact { Vec::new() } else { filters };
        DmlExec::try_new(
            self.table.clone(),
            kind,
            request,
            &df_schema,
            &residual,
            &assignments,
            state.execution_props(),
        )
        .map(|e| Arc::new(e) as Arc<dyn ExecutionPlan>)
    }
}

/// The scan of `columns` that evaluates what it can of `filters` (ANDed):
/// the pushed predicate, whether it is exact, and the key range it implies.
fn scan_request(columns: Vec<String>, filters: &[Expr], schema: &Schema) -> ScanRequest {
    let pushed: Vec<Pushed> = filters
        .iter()
        .filter_map(|f| translate(f, schema))
        .collect();
    let exact = pushed.len() == filters.len() && pushed.iter().all(|p| p.exact);
    let (lower, upper) = key_range(pushed.iter().map(|p| &p.predicate), schema);
    let predicate = pushed
        .into_iter()
        .map(|p| p.predicate)
        .reduce(Predicate::and);
    ScanRequest {
        columns,
        predicate,
        lower,
        upper,
        limit: None,
        exact,
    }
}

/// The key range the predicates imply through comparisons on the first
/// key column (a prefix bound, as [`strata::table::ScanOptions`] takes
/// them). Float keys are left alone: the range is an optimisation, and the
/// predicate itself still filters.
pub(crate) fn key_range<'a>(
    predicates: impl Iterator<Item = &'a Predicate>,
    schema: &Schema,
) -> (Bound<Vec<Value>>, Bound<Vec<Value>>) {
    let first = &schema.columns()[schema.key_indices()[0]];
    let mut lower: Bound<Value> = Bound::Unbounded;
    let mut upper: Bound<Value> = Bound::Unbounded;
    if first.ty == ColumnType::Float64 {
        return (Bound::Unbounded, Bound::Unbounded);
    }
    let mut conjuncts = Vec::new();
    for p in predicates {
        flatten_and(p, &mut conjuncts);
    }
    for p in conjuncts {
        let Predicate::Cmp { column, op, value } = p else {
            continue;
        };
        if column != &first.name || value.is_null() {
            continue;
        }
        let v = value.clone();
        match op {
            CmpOp::Eq => {
                tighten(&mut lower, Bound::Included(v.clone()), true);
                tighten(&mut upper, Bound::Included(v), false);
            }
            CmpOp::Gt => tighten(&mut lower, Bound::Excluded(v), true),
            CmpOp::Ge => tighten(&mut lower, Bound::Included(v), true),
            CmpOp::Lt => tighten(&mut upper, Bound::Excluded(v), false),
            CmpOp::Le => tighten(&mut upper, Bound::Included(v), false),
            CmpOp::Ne => {}
        }
    }
    (lower.map(|v| vec![v]), upper.map(|v| vec![v]))
}

fn flatten_and<'a>(p: &'a Predicate, out: &mut Vec<&'a Predicate>) {
    match p {
        Predicate::And(ps) => ps.iter().for_each(|q| flatten_and(q, out)),
        other => out.push(other),
    }
}

/// Replaces `bound` by `new` when `new` is tighter (higher for a lower
/// bound, lower for an upper one).
fn tighten(bound: &mut Bound<Value>, new: Bound<Value>, is_lower: bool) {
    use std::cmp::Ordering::*;
    let value = |b: &Bound<Value>| match b {
        Bound::Included(v) | Bound::Excluded(v) => Some(v.clone()),
        Bound::Unbounded => None,
    };
    let (Some(old), Some(nv)) = (value(bound), value(&new)) else {
        if matches!(bound, Bound::Unbounded) {
            *bound = new;
        }
        return;
    };
    let replace = match nv.compare(&old) {
        Some(Greater) => is_lower,
        Some(Less) => !is_lower,
        // Equal values: an exclusive bound is the tighter one.
        Some(Equal) => matches!(new, Bound::Excluded(_)),
        None => false,
    };
    if replace {
        *bound = new;
    }
}

#[cfg(test)]
mod tests {
    use strata::table::Column;

    use super::*;

    fn schema() -> Schema {
        Schema::new(
            vec![
                Column::new("k", ColumnType::Int64),
                Column::nullable("v", ColumnType::Int64),
            ],
            &["k"],
        )
        .expect("schema")
    }

    fn range(ps: &[Predicate]) -> (Bound<Vec<Value>>, Bound<Vec<Value>>) {
        key_range(ps.iter(), &schema())
    }

    #[test]
    fn equality_gives_a_point_range() {
        let (lo, hi) = range(&[Predicate::cmp("k", CmpOp::Eq, 5i64)]);
        assert_eq!(lo, Bound::Included(vec![Value::Int64(5)]));
        assert_eq!(hi, Bound::Included(vec![Value::Int64(5)]));
    }

    #[test]
    fn the_tightest_bounds_win() {
        let (lo, hi) = range(&[Predicate::cmp("k", CmpOp::Ge, 3i64)
            .and(Predicate::cmp("k", CmpOp::Gt, 3i64))
            .and(Predicate::cmp("k", CmpOp::Gt, 1i64))
            .and(Predicate::cmp("k", CmpOp::Lt, 10i64))
            .and(Predicate::cmp("k", CmpOp::Le, 12i64))]);
        assert_eq!(lo, Bound::Excluded(vec![Value::Int64(3)]));
        assert_eq!(hi, Bound::Excluded(vec![Value::Int64(10)]));
    }

    #[test]
    fn other_columns_and_disjunctions_give_no_range() {
        let (lo, hi) = range(&[
            Predicate::cmp("v", CmpOp::Eq, 5i64),
            Predicate::cmp("k", CmpOp::Eq, 1i64).or(Predicate::cmp("k", CmpOp::Eq, 2i64)),
        ]);
        assert_eq!((lo, hi), (Bound::Unbounded, Bound::Unbounded));
    }
}
