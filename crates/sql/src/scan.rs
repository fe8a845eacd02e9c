//! The physical scan of a Strata table: streams the batches of a Strata
//! scan into DataFusion without holding the table in memory.
//!
//! A Strata scan is a blocking iterator, so it runs on one of tokio's
//! blocking threads and hands batches over a channel of two: the scan
//! stays at most two batches ahead of the query, and stops as soon as the
//! query drops the stream (a `LIMIT` satisfied, an error elsewhere).

use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, RecordBatchOptions};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::Statistics;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::Result;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::execution_plan::EmissionType;
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchReceiverStreamBuilder;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use strata::table::{Predicate, ScanOptions, Table, Value};

use crate::error::engine_error;
use crate::snapshot::StatementSnapshot;

/// What a scan asks of Strata.
#[derive(Clone, Debug)]
pub(crate) struct ScanRequest {
    /// Columns to return, in order.
    pub columns: Vec<String>,
    /// Rows must satisfy it (the pushed filters, joined by AND).
    pub predicate: Option<Predicate>,
    /// Key range taken from the predicate's conditions on the first key
    /// column.
    pub lower: Bound<Vec<Value>>,
    /// Likewise.
    pub upper: Bound<Vec<Value>>,
    /// Stop after this many rows.
    pub limit: Option<usize>,
    /// Whether every pushed filter is exact (DataFusion checks none again).
    pub exact: bool,
}

/// Scans one Strata table.
pub struct StrataScanExec {
    table: Table,
    request: ScanRequest,
    schema: SchemaRef,
    estimated_rows: Option<usize>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
    /// The statement's snapshot, shared with the plan's other Strata
    /// nodes ([`crate::snapshot`]); none: the state when the scan starts.
    statement: Option<Arc<StatementSnapshot>>,
}

impl fmt::Debug for StrataScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StrataScanExec({})", self.table.name())
    }
}

impl StrataScanExec {
    pub(crate) fn new(
        table: Table,
        request: ScanRequest,
        schema: SchemaRef,
        estimated_rows: Option<usize>,
    ) -> StrataScanExec {
        let properties = crate::leaf::properties(Arc::clone(&schema), EmissionType::Incremental);
        StrataScanExec {
            table,
            request,
            schema,
            estimated_rows,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
            statement: None,
        }
    }

    /// The same scan, reading at `statement`'s snapshot.
    pub(crate) fn at_statement(&self, statement: Arc<StatementSnapshot>) -> StrataScanExec {
        StrataScanExec {
            table: self.table.clone(),
            request: self.request.clone(),
            schema: Arc::clone(&self.schema),
            estimated_rows: self.estimated_rows,
            properties: Arc::clone(&self.properties),
            metrics: ExecutionPlanMetricsSet::new(),
            statement: Some(statement),
        }
    }

    /// The scanned table.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// The columns the scan returns.
    pub fn columns(&self) -> &[String] {
        &self.request.columns
    }

    /// The row limit pushed into Strata, if any.
    pub fn limit(&self) -> Option<usize> {
        self.request.limit
    }

    /// The predicate pushed into Strata, if any.
    pub fn predicate(&self) -> Option<&Predicate> {
        self.request.predicate.as_ref()
    }
}

impl DisplayAs for StrataScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let r = &self.request;
        match t {
            DisplayFormatType::TreeRender => write!(f, "table={}", self.table.name()),
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(
                    f,
                    "StrataScanExec: table={}, columns=[{}]",
                    self.table.name(),
                    r.columns.join(", ")
                )?;
                if let Some(p) = &r.predicate {
                    let how = if r.exact { "exact" } else { "rechecked" };
                    write!(f, ", predicate={p} ({how})")?;
                }
                if !matches!(r.lower, Bound::Unbounded) || !matches!(r.upper, Bound::Unbounded) {
                    write!(f, ", key_range={}", show_range(&r.lower, &r.upper))?;
                }
                if let Some(n) = r.limit {
                    write!(f, ", limit={n}")?;
                }
                Ok(())
            }
        }
    }
}

fn show_range(lo: &Bound<Vec<Value>>, hi: &Bound<Vec<Value>>) -> String {
    let show = |v: &Vec<Value>| {
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let l = match lo {
        Bound::Included(v) => format!("[{}", show(v)),
        Bound::Excluded(v) => format!("({}", show(v)),
        Bound::Unbounded => "(-inf".to_string(),
    };
    let h = match hi {
        Bound::Included(v) => format!("{}]", show(v)),
        Bound::Excluded(v) => format!("{})", show(v)),
        Bound::Unbounded => "+inf)".to_string(),
    };
    format!("{l} .. {h}")
}

/// Counters a scan reports to `EXPLAIN ANALYZE`.
struct ScanMetrics {
    output_rows: Count,
    rows_read: Count,
    blocks_skipped: Count,
    through_index: Count,
}

impl ScanMetrics {
    fn new(set: &ExecutionPlanMetricsSet, partition: usize) -> ScanMetrics {
        ScanMetrics {
            output_rows: MetricBuilder::new(set).output_rows(partition),
            rows_read: MetricBuilder::new(set).counter("rows_read", partition),
            blocks_skipped: MetricBuilder::new(set).counter("blocks_skipped", partition),
            through_index: MetricBuilder::new(set).counter("read_through_index", partition),
        }
    }
}

impl ExecutionPlan for StrataScanExec {
    fn name(&self) -> &str {
        "StrataScanExec"
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
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        crate::leaf::only_partition(self.name(), partition)?;
        let r = &self.request;
        // `count(*)` needs rows but no columns: read the first key column
        // (the cheapest to carry) and drop it.
        let count_only = r.columns.is_empty();
        let columns = if count_only {
            let s = self.table.schema();
            vec![s.columns()[s.key_indices()[0]].name.clone()]
        } else {
            r.columns.clone()
        };
        // (The stream holds the statement's snapshot while it reads.)
        let statement = self.statement.clone();
        let opts = ScanOptions {
            snapshot: statement.as_ref().map(|s| s.get().seqno()),
            columns: Some(columns),
            predicate: r.predicate.clone(),
            lower: r.lower.clone(),
            upper: r.upper.clone(),
            // The node promises no order, so the range is read in parts on
            // as many threads as DataFusion would give partitions.
            threads: context.session_config().target_partitions(),
            ..ScanOptions::default()
        };
        let table = self.table.clone();
        let limit = r.limit;
        let metrics = ScanMetrics::new(&self.metrics, partition);
        let mut builder = RecordBatchReceiverStreamBuilder::new(Arc::clone(&self.schema), 2);
        let tx = builder.tx();
        let schema = Arc::clone(&self.schema);
        builder.spawn_blocking(move || {
            let _statement = statement;
            let mut scan = table.scan(opts).map_err(engine_error)?;
            let mut left = limit.unwrap_or(usize::MAX);
            while left > 0 {
                let Some(batch) = scan.next() else { break };
                let batch = batch.map_err(engine_error)?;
                let batch = if batch.num_rows() > left {
                    batch.slice(0, left)
                } else {
                    batch
                };
                left -= batch.num_rows();
                metrics.output_rows.add(batch.num_rows());
                // Strata names the columns as the table does; the plan's
                // schema may carry other metadata, so rebuild on it.
                let columns = if count_only {
                    Vec::new()
                } else {
                    batch.columns().to_vec()
                };
                let opts = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
                let batch = RecordBatch::try_new_with_options(Arc::clone(&schema), columns, &opts)?;
                if tx.blocking_send(Ok(batch)).is_err() {
                    // The query no longer wants rows.
                    break;
                }
            }
            let c = scan.counters();
            metrics.rows_read.add(c.rows_read as usize);
            metrics.blocks_skipped.add(c.blocks_skipped as usize);
            metrics.through_index.add(usize::from(c.index.is_some()));
            Ok(())
        });
        Ok(builder.build())
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn partition_statistics(&self, _partition: Option<usize>) -> Result<Arc<Statistics>> {
        let mut stats = Statistics::new_unknown(&self.schema);
        if let Some(n) = self.estimated_rows {
            let n = self.request.limit.map_or(n, |l| l.min(n));
            // With a pushed predicate this is an upper bound.
            stats.num_rows = Precision::Inexact(n);
        }
        Ok(Arc::new(stats))
    }
}
