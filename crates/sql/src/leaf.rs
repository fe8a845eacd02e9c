//! What the plan nodes of this crate share: each is a leaf (it reads
//! Strata itself) with one output partition.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::{ExecutionPlan, Partitioning, PlanProperties};

/// A bounded, single-partition node's properties.
pub(crate) fn properties(schema: SchemaRef, emission: EmissionType) -> Arc<PlanProperties> {
    Arc::new(PlanProperties::new(
        EquivalenceProperties::new(schema),
        Partitioning::UnknownPartitioning(1),
        emission,
        Boundedness::Bounded,
    ))
}

/// `with_new_children` of a leaf: itself, given no children.
pub(crate) fn no_children(
    plan: Arc<dyn ExecutionPlan>,
    children: &[Arc<dyn ExecutionPlan>],
) -> Result<Arc<dyn ExecutionPlan>> {
    if children.is_empty() {
        Ok(plan)
    } else {
        Err(DataFusionError::Internal(format!(
            "{} has no children; {} given",
            plan.name(),
            children.len()
        )))
    }
}

/// Checks that `partition` is the one partition of `name`.
pub(crate) fn only_partition(name: &str, partition: usize) -> Result<()> {
    if partition == 0 {
        Ok(())
    } else {
        Err(DataFusionError::Internal(format!(
            "{name} has one partition; {partition} asked for"
        )))
    }
}
