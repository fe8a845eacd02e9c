//! Keeps `UPDATE` and `DELETE` on Strata tables from running without
//! their `WHERE` clause.
//!
//! DataFusion hands a table provider's `delete_from` and `update` the
//! filters it finds in the optimised plan under the write (its
//! `extract_dml_filters`). Two shapes lose them:
//!
//! - a `WHERE` the optimiser proves never true (`WHERE false`, `k = NULL`)
//!   becomes an empty relation, and no filter is left: the provider would
//!   change every row;
//! - a `WHERE` with a subquery (`k IN (SELECT ...)`) becomes a join, whose
//!   condition is not a filter on the table: likewise.
//!
//! [`DmlGuard`], an optimiser rule, answers the first with a count of 0
//! without touching the table, and refuses the second with an error.
//!
//! A third shape loses the filters' meaning rather than the filters: common
//! subexpression elimination rewrites a `WHERE` or `SET` that repeats an
//! expression (`v * 2 > 2 AND v * 2 < 5`) over a projection defining
//! `__common_expr_1`, which the filters and assignments handed to the
//! provider then name although the table has no such column.
//! [`NoCommonSubexprsInWrites`] runs that elimination on every plan but an
//! `UPDATE` or `DELETE` of a Strata table.

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchemaRef, TableReference};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    DmlStatement, Expr, LogicalPlan, LogicalPlanBuilder, WriteOp, col, lit,
};
use datafusion::optimizer::common_subexpr_eliminate::CommonSubexprEliminate;
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};

use crate::point::strata_table;

/// The optimiser rule; see the module documentation.
#[derive(Debug, Default)]
pub(crate) struct DmlGuard;

impl OptimizerRule for DmlGuard {
    fn name(&self) -> &str {
        "strata_dml_guard"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        let LogicalPlan::Dml(DmlStatement {
            table_name,
            target,
            op,
            input,
            output_schema,
        }) = &plan
        else {
            return Ok(Transformed::no(plan));
        };
        if !matches!(op, WriteOp::Update | WriteOp::Delete) || strata_table(target).is_none() {
            return Ok(Transformed::no(plan));
        }
        if produces_no_rows(input) {
            return Ok(Transformed::yes(zero_count(output_schema)?));
        }
        check(input, table_name, op)?;
        Ok(Transformed::no(plan))
    }
}

/// DataFusion's common subexpression elimination, except on plans that
/// write to a Strata table (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct NoCommonSubexprsInWrites(CommonSubexprEliminate);

impl NoCommonSubexprsInWrites {
    /// The name of the rule it stands in for.
    pub(crate) const REPLACES: &str = "common_sub_expression_eliminate";
}

impl OptimizerRule for NoCommonSubexprsInWrites {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        // As the rule it wraps: it sees the whole plan and recurses itself.
        self.0.apply_order()
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        let writes = plan.exists(|p| {
            Ok(matches!(
                p,
                LogicalPlan::Dml(DmlStatement { op: WriteOp::Update | WriteOp::Delete, target, .. })
                    if strata_table(target).is_some()
            ))
        })?;
        if writes {
            return Ok(Transformed::no(plan));
        }
        self.0.rewrite(plan, config)
    }
}

/// Whether `plan` is an empty relation under nodes that keep it empty.
fn produces_no_rows(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::EmptyRelation(e) => !e.produce_one_row,
        LogicalPlan::Projection(p) => produces_no_rows(&p.input),
        LogicalPlan::Filter(f) => produces_no_rows(&f.input),
        LogicalPlan::SubqueryAlias(a) => produces_no_rows(&a.input),
        _ => false,
    }
}

/// Refuses a write whose input is anything but the target table's scan
/// under filters and projections free of subqueries: the filters
/// DataFusion extracts from it are then the whole `WHERE`.
fn check(plan: &LogicalPlan, target: &TableReference, op: &WriteOp) -> Result<()> {
    let refuse = |what: &str| {
        Err(DataFusionError::Plan(format!(
            "{op} on table {target} whose WHERE or SET needs {what} is not supported \
             (Strata would not see the condition)"
        )))
    };
    let exprs_ok = |exprs: &[&Expr]| -> Result<bool> {
        for e in exprs {
            let has_subquery = e.exists(|e| {
                Ok(matches!(
                    e,
                    Expr::ScalarSubquery(_)
                        | Expr::Exists(_)
                        | Expr::InSubquery(_)
                        | Expr::OuterReferenceColumn(..)
                ))
            })?;
            if has_subquery {
                return Ok(false);
            }
        }
        Ok(true)
    };
    match plan {
        LogicalPlan::TableScan(s) if s.table_name.resolved_eq(target) => Ok(()),
        LogicalPlan::Filter(f) => {
            if !exprs_ok(&[&f.predicate])? {
                return refuse("a subquery");
            }
            check(&f.input, target, op)
        }
        LogicalPlan::Projection(p) => {
            if !exprs_ok(&p.expr.iter().collect::<Vec<_>>())? {
                return refuse("a subquery");
            }
            check(&p.input, target, op)
        }
        LogicalPlan::SubqueryAlias(a) => check(&a.input, target, op),
        _ => refuse("another table or a subquery"),
    }
}

/// A one-row plan with the write's `count` of 0.
fn zero_count(schema: &DFSchemaRef) -> Result<LogicalPlan> {
    let name = schema
        .fields()
        .first()
        .map_or("count".to_string(), |f| f.name().clone());
    LogicalPlanBuilder::values(vec![vec![lit(0u64)]])?
        .project(vec![col("column1").alias(name)])?
        .build()
}
