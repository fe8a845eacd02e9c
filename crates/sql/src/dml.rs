//! `INSERT`, `UPDATE` and `DELETE` on Strata tables.
//!
//! Each statement is one write batch: its rows are gathered first (charged
//! to the query's memory pool, so a statement larger than the per-query
//! limit fails with a clear error and writes nothing), then written in one
//! call, which either applies every row or none. `INSERT` fails, writing
//! nothing, if a key exists or repeats; `INSERT OR REPLACE` replaces.
//! `UPDATE` writes only the assigned columns of the matched rows (a
//! partial update); `DELETE` writes a deletion per matched key.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, UInt64Array};
use datafusion::arrow::compute::{
    CastOptions, cast_with_options, concat_batches, filter_record_batch,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef};
use datafusion::common::DFSchema;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::sink::DataSink;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::execution_props::ExecutionProps;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::physical_expr::{PhysicalExpr, create_physical_expr};
use datafusion::physical_plan::execution_plan::EmissionType;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::StreamExt;
use strata::table::{ScanOptions, Table};

use crate::error::engine_error;
use crate::scan::ScanRequest;

/// The one-column `count` schema DML statements return.
fn count_schema() -> SchemaRef {
    Arc::new(ArrowSchema::new(vec![Field::new(
        "count",
        DataType::UInt64,
        false,
    )]))
}

/// Charges `batch` to the statement's reservation.
fn charge(reservation: &mut MemoryReservation, batch: &RecordBatch) -> Result<()> {
    reservation.try_grow(batch.get_array_memory_size())
}

/// Runs blocking engine work off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))?
}

/// Writes an `INSERT`'s rows.
pub(crate) struct InsertSink {
    table: Table,
    schema: SchemaRef,
    replace: bool,
}

impl InsertSink {
    pub(crate) fn new(table: Table, schema: SchemaRef, replace: bool) -> InsertSink {
        InsertSink {
            table,
            schema,
            replace,
        }
    }
}

impl fmt::Debug for InsertSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InsertSink({})", self.table.name())
    }
}

impl DisplayAs for InsertSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let how = if self.replace { "replace" } else { "insert" };
        write!(f, "StrataInsert: table={}, mode={how}", self.table.name())
    }
}

#[async_trait]
impl DataSink for InsertSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    async fn write_all(
        &self,
        mut data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> Result<u64> {
        let mut reservation = MemoryConsumer::new(format!("INSERT INTO {}", self.table.name()))
            .register(context.memory_pool());
        let mut batches = Vec::new();
        while let Some(batch) = data.next().await {
            let batch = batch?;
            charge(&mut reservation, &batch)?;
            batches.push(batch);
        }
        let Some(first) = batches.first() else {
            return Ok(0);
        };
        let batch = concat_batches(&first.schema(), &batches)?;
        drop(batches);
        let batch = conform(&batch, &self.schema)?;
        let n = batch.num_rows() as u64;
        let table = self.table.clone();
        let replace = self.replace;
        blocking(move || {
            if replace {
                table.upsert(&batch)
            } else {
                table.insert(&batch)
            }
            .map_err(engine_error)
        })
        .await?;
        Ok(n)
    }
}

/// `batch` with the table's column names and types (DataFusion has already
/// coerced the values; this fixes names and nullability flags).
fn conform(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| {
            if c.data_type() == f.data_type() {
                Ok(Arc::clone(c))
            } else {
                strict_cast(c, f.data_type())
            }
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

/// `array` as `to`, failing on a value that does not convert: Arrow's
/// default cast would store it as NULL. (DataFusion's own casts in a plan
/// are strict; a prepared statement's parameters reach here uncast.)
fn strict_cast(array: &ArrayRef, to: &DataType) -> Result<ArrayRef> {
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    Ok(cast_with_options(array, to, &strict)?)
}

/// Which statement a [`DmlExec`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DmlKind {
    Update,
    Delete,
}

/// Runs an `UPDATE` or `DELETE`: scans the matching rows (the pushed
/// filters in Strata, the rest here), then writes one batch.
pub(crate) struct DmlExec {
    table: Table,
    kind: DmlKind,
    request: ScanRequest,
    /// Filters Strata could not take exactly, evaluated on scanned rows.
    residual: Option<Arc<dyn PhysicalExpr>>,
    /// Columns to set and their new values' expressions.
    assignments: Vec<(usize, Arc<dyn PhysicalExpr>)>,
    properties: Arc<PlanProperties>,
}

impl fmt::Debug for DmlExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DmlExec({:?} {})", self.kind, self.table.name())
    }
}

impl DmlExec {
    pub(crate) fn try_new(
        table: Table,
        kind: DmlKind,
        request: ScanRequest,
        df_schema: &DFSchema,
        residual: &[Expr],
        assignments: &[(String, Expr)],
        props: &ExecutionProps,
    ) -> Result<DmlExec> {
        let ctx = PhysicalPlanningContext::default();
        let residual = residual
            .iter()
            .cloned()
            .reduce(Expr::and)
            .map(|e| create_physical_expr(&e, df_schema, props, &ctx))
            .transpose()?;
        let assignments = assignments
            .iter()
            .map(|(name, e)| {
                let i = table.schema().index_of(name).map_err(engine_error)?;
                Ok((i, create_physical_expr(e, df_schema, props, &ctx)?))
            })
            .collect::<Result<Vec<_>>>()?;
        let properties = crate::leaf::properties(count_schema(), EmissionType::Final);
        Ok(DmlExec {
            table,
            kind,
            request,
            residual,
            assignments,
            properties,
        })
    }

    /// Scans the matched rows and builds the batch to write: the key
    /// columns, plus the new values of the assigned columns for an update.
    fn matched(
        table: &Table,
        request: &ScanRequest,
        residual: Option<&Arc<dyn PhysicalExpr>>,
        assignments: &[(usize, Arc<dyn PhysicalExpr>)],
        reservation: &mut MemoryReservation,
    ) -> Result<Option<RecordBatch>> {
        let schema = table.schema();
        let mut out_fields: Vec<Field> = Vec::new();
        let mut out_cols: Vec<usize> = schema.key_indices().to_vec();
        out_cols.extend(assignments.iter().map(|(i, _)| *i));
        for &i in &out_cols {
            let c = &schema.columns()[i];
            out_fields.push(Field::new(&c.name, c.ty.arrow_type(), c.nullable));
        }
        let out_schema = Arc::new(ArrowSchema::new(out_fields));
        let opts = ScanOptions {
            columns: Some(request.columns.clone()),
            predicate: request.predicate.clone(),
            lower: request.lower.clone(),
            upper: request.upper.clone(),
            ..ScanOptions::default()
        };
        let mut parts = Vec::new();
        for batch in table.scan(opts).map_err(engine_error)? {
            let batch = batch.map_err(engine_error)?;
            let batch = match residual {
                None => batch,
                Some(f) => {
                    let mask = f.evaluate(&batch)?.into_array(batch.num_rows())?;
                    let mask = mask
                        .as_any()
                        .downcast_ref::<BooleanArray>()
                        .ok_or_else(|| {
                            DataFusionError::Plan("a WHERE clause must be boolean".into())
                        })?
                        .clone();
                    filter_record_batch(&batch, &mask)?
                }
            };
            if batch.num_rows() == 0 {
                continue;
            }
            let mut cols: Vec<ArrayRef> = schema
                .key_indices()
                .iter()
                .map(|&k| Arc::clone(batch.column(k)))
                .collect();
            for ((i, e), f) in assignments
                .iter()
                .zip(out_schema.fields().iter().skip(schema.key_indices().len()))
            {
                let v = e.evaluate(&batch)?.into_array(batch.num_rows())?;
                let v = if v.data_type() == f.data_type() {
                    v
                } else {
                    strict_cast(&v, f.data_type())?
                };
                if !f.is_nullable() && v.null_count() > 0 {
                    return Err(crate::error::engine_error(strata::Error::NotNull {
                        column: schema.columns()[*i].name.clone(),
                        detail: Some(format!(
                            "the UPDATE would set it to NULL in {} rows",
                            v.null_count()
                        )),
                    }));
                }
                cols.push(v);
            }
            let part = RecordBatch::try_new(Arc::clone(&out_schema), cols)?;
            charge(reservation, &part)?;
            parts.push(part);
        }
        if parts.is_empty() {
            return Ok(None);
        }
        Ok(Some(concat_batches(&out_schema, &parts)?))
    }
}

impl DisplayAs for DmlExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let verb = match self.kind {
            DmlKind::Update => "StrataUpdate",
            DmlKind::Delete => "StrataDelete",
        };
        write!(f, "{verb}: table={}", self.table.name())?;
        if !self.assignments.is_empty() {
            let names: Vec<&str> = self
                .assignments
                .iter()
                .map(|(i, _)| self.table.schema().columns()[*i].name.as_str())
                .collect();
            write!(f, ", set=[{}]", names.join(", "))?;
        }
        if let Some(p) = &self.request.predicate {
            write!(f, ", predicate={p}")?;
        }
        if let Some(r) = &self.residual {
            write!(f, ", residual={r}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for DmlExec {
    fn name(&self) -> &str {
        match self.kind {
            DmlKind::Update => "StrataUpdate",
            DmlKind::Delete => "StrataDelete",
        }
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        for e in self
            .residual
            .iter()
            .chain(self.assignments.iter().map(|(_, e)| e))
        {
            if f(e)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
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
        let table = self.table.clone();
        let kind = self.kind;
        let request = self.request.clone();
        let residual = self.residual.clone();
        let assignments = self.assignments.clone();
        let verb = self.name().to_string();
        let work = async move {
            let mut reservation = MemoryConsumer::new(format!("{verb} {}", table.name()))
                .register(context.memory_pool());
            let n = blocking(move || {
                let Some(batch) = Self::matched(
                    &table,
                    &request,
                    residual.as_ref(),
                    &assignments,
                    &mut reservation,
                )?
                else {
                    return Ok(0);
                };
                let n = batch.num_rows() as u64;
                match kind {
                    DmlKind::Delete => table.delete(&batch),
                    // Every column set to itself (DataFusion drops such
                    // assignments): the rows matched, nothing changes.
                    DmlKind::Update if assignments.is_empty() => Ok(()),
                    DmlKind::Update => table.update(&batch),
                }
                .map_err(engine_error)?;
                Ok(n)
            })
            .await?;
            let count: ArrayRef = Arc::new(UInt64Array::from(vec![n]));
            Ok(RecordBatch::try_new(count_schema(), vec![count])?)
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            count_schema(),
            futures::stream::once(work),
        )))
    }
}
