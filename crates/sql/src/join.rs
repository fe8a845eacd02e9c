//! Hands equi-joins of two Strata tables to Strata's join operators
//! (seed 000) when Strata's planner predicts they beat a hash join.
//!
//! DataFusion plans every equi-join as a hash join. Over an LSM-tree that
//! is not always best: when one side is small and the other has an index
//! or its primary key on the join column, an index nested loop join reads
//! a few entries where the hash join scans the whole table; when both
//! sides have indexes, merging them in index order avoids the hash table.
//! [`StrataJoinRule`] runs after DataFusion's own physical optimizer. For
//! each inner hash join whose inputs are plain scans of Strata tables
//! (whole tables: no pushed filter or limit) on one pair of columns, it
//! asks Strata's planner ([`strata::join::Join::explain`]) for every
//! method's predicted cost. If the cheapest is not a hash join and costs
//! less than Strata's own hybrid hash join — the stand-in for DataFusion's
//! hash join in the same cost units — the join subtree is replaced by a
//! [`StrataJoinExec`] running that method. `EXPLAIN` shows which ran:
//! `StrataJoinExec` with the method and both costs, or DataFusion's
//! `HashJoinExec`.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, RecordBatchOptions};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{JoinType, NullEquality};
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::execution_plan::EmissionType;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::stream::RecordBatchReceiverStreamBuilder;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use strata::join::{Join, JoinMethod};

use crate::error::engine_error;
use crate::scan::StrataScanExec;
use crate::snapshot::StatementSnapshot;

/// The physical optimizer rule; see the module documentation.
#[derive(Debug)]
pub struct StrataJoinRule {
    /// Memory budget of a join Strata runs.
    pub memory_bytes: usize,
}

impl PhysicalOptimizerRule for StrataJoinRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(hj) = node.downcast_ref::<HashJoinExec>() else {
                return Ok(Transformed::no(node));
            };
            match self.replacement(hj)? {
                Some(new) => Ok(Transformed::yes(new)),
                None => Ok(Transformed::no(node)),
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "strata_join"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// A scan under any number of repartitioning or coalescing nodes, which
/// change how rows are spread but not which rows there are.
fn base_scan(plan: &Arc<dyn ExecutionPlan>) -> Option<&StrataScanExec> {
    if let Some(scan) = plan.downcast_ref::<StrataScanExec>() {
        return Some(scan);
    }
    let passes = matches!(
        plan.name(),
        "RepartitionExec" | "CoalescePartitionsExec" | "CoalesceBatchesExec" | "CooperativeExec"
    );
    match plan.children().as_slice() {
        [child] if passes => base_scan(child),
        _ => None,
    }
}

/// The scanned column a join key names.
fn key_column(key: &Arc<dyn PhysicalExpr>, scan: &StrataScanExec) -> Option<String> {
    let c = key.downcast_ref::<Column>()?;
    scan.columns().get(c.index()).cloned()
}

impl StrataJoinRule {
    fn replacement(&self, hj: &HashJoinExec) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        // Strata's joins never match nulls: a join whose nulls are equal
        // (`IS NOT DISTINCT FROM`) stays DataFusion's.
        if *hj.join_type() != JoinType::Inner
            || hj.filter().is_some()
            || hj.on().len() != 1
            || hj.null_equality() != NullEquality::NullEqualsNothing
        {
            return Ok(None);
        }
        let (Some(ls), Some(rs)) = (base_scan(hj.left()), base_scan(hj.right())) else {
            return Ok(None);
        };
        let whole = |s: &StrataScanExec| s.predicate().is_none() && s.limit().is_none();
        if !whole(ls) || !whole(rs) {
            return Ok(None);
        }
        let (lk, rk) = &hj.on()[0];
        let (Some(lc), Some(rc)) = (key_column(lk, ls), key_column(rk, rs)) else {
            return Ok(None);
        };
        // Strata's joins match doubles by the key codec, in which every NaN
        // is one value; DataFusion's match a NaN only with the same bits. A
        // join on doubles stays DataFusion's.
        let double = |s: &StrataScanExec, c: &str| {
            let schema = s.table().schema();
            schema
                .index_of(c)
                .is_ok_and(|i| schema.columns()[i].ty == strata::table::ColumnType::Float64)
        };
        if double(ls, &lc) || double(rs, &rc) {
            return Ok(None);
        }
        // The join's output: left's scanned columns, then right's, then
        // the join's own projection.
        let mut all: Vec<String> = ls.columns().iter().map(|c| format!("left.{c}")).collect();
        all.extend(rs.columns().iter().map(|c| format!("right.{c}")));
        let columns: Vec<String> = match &hj.projection {
            Some(p) => p.iter().map(|&i| all[i].clone()).collect(),
            None => all,
        };
        let join = Join::new(ls.table(), &lc, rs.table(), &rc).memory(self.memory_bytes);
        let plan = match join.explain() {
            Ok(p) => p,
            // Not a join Strata can run (types differ, say): DataFusion's.
            Err(_) => return Ok(None),
        };
        let cost = |m: JoinMethod| {
            plan.candidates
                .iter()
                .find(|c| c.method == m)
                .and_then(|c| c.cost)
        };
        let chosen = plan.chosen;
        let (Some(strata_cost), Some(hash_cost)) = (cost(chosen), cost(JoinMethod::HybridHash))
        else {
            return Ok(None);
        };
        if matches!(chosen, JoinMethod::HybridHash | JoinMethod::GraceHash)
            || strata_cost >= hash_cost
        {
            return Ok(None);
        }
        let exec = StrataJoinExec {
            join: join.method(chosen),
            method: chosen,
            on: (
                format!("{}.{lc}", ls.table().name()),
                format!("{}.{rc}", rs.table().name()),
            ),
            left_key: lc,
            columns,
            schema: hj.schema(),
            costs: (strata_cost, hash_cost),
            properties: crate::leaf::properties(hj.schema(), EmissionType::Incremental),
            statement: None,
        };
        let exec: Arc<dyn ExecutionPlan> = Arc::new(exec);
        // Keep the partitioning the hash join promised its parents.
        let partitioning = hj.properties().output_partitioning().clone();
        Ok(Some(match partitioning {
            Partitioning::UnknownPartitioning(1) => exec,
            Partitioning::UnknownPartitioning(n) => Arc::new(RepartitionExec::try_new(
                exec,
                Partitioning::RoundRobinBatch(n),
            )?),
            p => Arc::new(RepartitionExec::try_new(exec, p)?),
        }))
    }
}

/// An inner equi-join Strata runs.
pub struct StrataJoinExec {
    join: Join,
    method: JoinMethod,
    /// `table.column` of each side, for display.
    on: (String, String),
    /// The left side's join column.
    left_key: String,
    /// Output columns as [`Join::columns`] takes them; empty when the
    /// query needs only the row count.
    columns: Vec<String>,
    schema: SchemaRef,
    /// Predicted cost of the chosen method and of a hash join.
    costs: (f64, f64),
    properties: Arc<PlanProperties>,
    /// The statement's snapshot ([`crate::snapshot`]); none: the state
    /// when the join starts.
    statement: Option<Arc<StatementSnapshot>>,
}

impl fmt::Debug for StrataJoinExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StrataJoinExec({} = {})", self.on.0, self.on.1)
    }
}

impl StrataJoinExec {
    /// The method Strata runs.
    pub fn method(&self) -> JoinMethod {
        self.method
    }

    /// The same join, reading at `statement`'s snapshot.
    pub(crate) fn at_statement(&self, statement: Arc<StatementSnapshot>) -> StrataJoinExec {
        StrataJoinExec {
            join: self.join.clone(),
            method: self.method,
            on: self.on.clone(),
            left_key: self.left_key.clone(),
            columns: self.columns.clone(),
            schema: Arc::clone(&self.schema),
            costs: self.costs,
            properties: Arc::clone(&self.properties),
            statement: Some(statement),
        }
    }
}

impl DisplayAs for StrataJoinExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "StrataJoinExec: on={} = {}, method={}, predicted cost {:.0} (hash join {:.0})",
            self.on.0,
            self.on.1,
            self.method().name(),
            self.costs.0,
            self.costs.1
        )
    }
}

impl ExecutionPlan for StrataJoinExec {
    fn name(&self) -> &str {
        "StrataJoinExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        crate::leaf::no_children(self, &children)
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        crate::leaf::only_partition(self.name(), partition)?;
        // A count-only query still needs rows: ask for the left key and
        // drop it.
        let count_only = self.columns.is_empty();
        let key = format!("left.{}", self.left_key);
        let names: Vec<&str> = if count_only {
            vec![key.as_str()]
        } else {
            self.columns.iter().map(String::as_str).collect()
        };
        let mut join = self.join.clone().columns(&names);
        // (The stream holds the statement's snapshot while it reads.)
        let statement = self.statement.clone();
        if let Some(s) = &statement {
            join = join.at(s.get());
        }
        let schema = Arc::clone(&self.schema);
        let mut builder = RecordBatchReceiverStreamBuilder::new(Arc::clone(&schema), 2);
        let tx = builder.tx();
        builder.spawn_blocking(move || {
            let _statement = statement;
            let mut stream = join.run().map_err(engine_error)?;
            for batch in stream.by_ref() {
                let batch = batch.map_err(engine_error)?;
                let columns = if count_only {
                    Vec::new()
                } else {
                    batch.columns().to_vec()
                };
                let opts = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
                let batch = RecordBatch::try_new_with_options(Arc::clone(&schema), columns, &opts)?;
                if tx.blocking_send(Ok(batch)).is_err() {
                    return Ok(());
                }
            }
            stream.finish().map_err(engine_error)?;
            Ok(())
        });
        Ok(builder.build())
    }
}
