//! One snapshot per statement: every Strata node of a plan reads the
//! database as it was at one moment, so a query that reads a table twice
//! (a self-join, a subquery) or reads several tables sees one state, as a
//! PostgreSQL statement does, however the writers move meanwhile.
//!
//! A physical optimizer rule, run last, gives every [`StrataScanExec`] and
//! [`StrataJoinExec`] of the plan one shared [`StatementSnapshot`]. The
//! snapshot is taken when the first of them starts (planning alone, as
//! `EXPLAIN` does, takes none), and every stream holds it until it ends.

use std::sync::{Arc, OnceLock};

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use strata::{Db, Snapshot};

use crate::join::StrataJoinExec;
use crate::scan::StrataScanExec;

/// The snapshot the Strata nodes of one statement's plan read at.
pub(crate) struct StatementSnapshot {
    db: Db,
    taken: OnceLock<Snapshot>,
}

impl std::fmt::Debug for StatementSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.taken.get() {
            Some(s) => write!(f, "StatementSnapshot({})", s.seqno()),
            None => write!(f, "StatementSnapshot(not taken)"),
        }
    }
}

impl StatementSnapshot {
    /// The statement's snapshot, taken at the first call.
    pub(crate) fn get(&self) -> &Snapshot {
        self.taken.get_or_init(|| self.db.snapshot())
    }
}

/// The physical optimizer rule; see the module documentation.
pub(crate) struct OneSnapshotPerStatement {
    pub db: Db,
}

impl std::fmt::Debug for OneSnapshotPerStatement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OneSnapshotPerStatement")
    }
}

impl PhysicalOptimizerRule for OneSnapshotPerStatement {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let shared = Arc::new(StatementSnapshot {
            db: self.db.clone(),
            taken: OnceLock::new(),
        });
        plan.transform_up(|node| {
            if let Some(scan) = node.downcast_ref::<StrataScanExec>() {
                return Ok(Transformed::yes(Arc::new(
                    scan.at_statement(Arc::clone(&shared)),
                )));
            }
            if let Some(join) = node.downcast_ref::<StrataJoinExec>() {
                return Ok(Transformed::yes(Arc::new(
                    join.at_statement(Arc::clone(&shared)),
                )));
            }
            Ok(Transformed::no(node))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "strata_one_snapshot_per_statement"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
