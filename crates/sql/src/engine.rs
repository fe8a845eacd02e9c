//! The SQL engine: a DataFusion session over one Strata database, with the
//! statements DataFusion cannot run on Strata (DDL) taken first.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{CatalogProvider, MemoryCatalogProvider};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::{DmlStatement, LogicalPlan, WriteOp};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::{DFParser, Statement as DfStatement};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use strata::Db;

use crate::catalog::StrataSchema;
use crate::error::engine_error;
use crate::join::StrataJoinRule;
use crate::point::{self, PointPlan};

/// The catalog name Strata's tables live under (`strata.public.t`).
pub const CATALOG: &str = "strata";
/// The one schema of a Strata database.
pub const SCHEMA: &str = "public";

/// Settings of a [`SqlEngine`].
#[derive(Clone, Debug)]
pub struct SqlOptions {
    /// Memory a session's queries may hold at once (hash tables, sorts,
    /// rows gathered for a write); a query that needs more fails with a
    /// "Resources exhausted" error. `None`: no limit.
    pub memory_limit: Option<usize>,
    /// Partitions DataFusion splits work into (default: the number of
    /// cores).
    pub target_partitions: usize,
    /// Let Strata run equi-joins its planner predicts beat a hash join
    /// ([`crate::StrataJoinRule`]; default true).
    pub strata_joins: bool,
    /// Memory budget of each join Strata runs (default 64 MiB).
    pub join_memory: usize,
    /// Let Strata run reads and writes of one row by its whole primary
    /// key itself, without DataFusion's planning (default true; see
    /// [`SqlEngine::prepare`]).
    pub point_statements: bool,
}

impl Default for SqlOptions {
    fn default() -> Self {
        SqlOptions {
            memory_limit: Some(1 << 30),
            target_partitions: std::thread::available_parallelism().map_or(2, |n| n.get()),
            strata_joins: true,
            join_memory: 64 << 20,
            point_statements: true,
        }
    }
}

/// What one statement produced.
#[derive(Debug)]
pub struct Output {
    /// The command tag, PostgreSQL style: `SELECT 3`, `INSERT 0 2`,
    /// `CREATE TABLE`.
    pub tag: String,
    /// The rows' schema (empty for DDL).
    pub schema: SchemaRef,
    /// The rows a query returned; for `INSERT`, `UPDATE` and `DELETE`, one
    /// row holding the count.
    pub batches: Vec<RecordBatch>,
}

impl Output {
    /// Rows returned.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }
}

/// SQL over one Strata database.
pub struct SqlEngine {
    db: Db,
    ctx: SessionContext,
    point_statements: bool,
}

impl SqlEngine {
    /// An engine over `db` with default settings.
    pub fn new(db: Db) -> Result<SqlEngine> {
        SqlEngine::with_options(db, SqlOptions::default())
    }

    /// An engine over `db`.
    pub fn with_options(db: Db, opts: SqlOptions) -> Result<SqlEngine> {
        let mut runtime = RuntimeEnvBuilder::new();
        if let Some(limit) = opts.memory_limit {
            runtime = runtime.with_memory_limit(limit, 1.0);
        }
        let config = SessionConfig::new()
            .with_default_catalog_and_schema(CATALOG, SCHEMA)
            .with_create_default_catalog_and_schema(false)
            .with_information_schema(true)
            .with_target_partitions(opts.target_partitions.max(1));
        let mut state = SessionStateBuilder::new()
            .with_config(config)
            .with_runtime_env(runtime.build_arc()?)
            .with_default_features();
        // UPDATE and DELETE must never run without their WHERE, nor with
        // filters that name columns the table does not have.
        use crate::dml_guard::{DmlGuard, NoCommonSubexprsInWrites};
        let mut rules = datafusion::optimizer::Optimizer::new().rules;
        for r in &mut rules {
            if r.name() == NoCommonSubexprsInWrites::REPLACES {
                *r = Arc::new(NoCommonSubexprsInWrites::default());
            }
        }
        rules.push(Arc::new(DmlGuard));
        state = state.with_optimizer_rules(rules);
        if opts.strata_joins {
            state = state.with_physical_optimizer_rule(Arc::new(StrataJoinRule {
                memory_bytes: opts.join_memory.max(strata::join::MIN_JOIN_MEMORY),
            }));
        }
        // Last: the Strata nodes the rules above made read at one snapshot.
        state = state.with_physical_optimizer_rule(Arc::new(
            crate::snapshot::OneSnapshotPerStatement { db: db.clone() },
        ));
        let ctx = SessionContext::new_with_state(state.build());
        let catalog = MemoryCatalogProvider::new();
        catalog.register_schema(SCHEMA, Arc::new(StrataSchema::new(db.clone())))?;
        ctx.register_catalog(CATALOG, Arc::new(catalog));
        Ok(SqlEngine {
            db,
            ctx,
            point_statements: opts.point_statements,
        })
    }

    /// The database.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// The DataFusion session, for registering functions or running plans.
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// Parses `sql` into statements (PostgreSQL dialect).
    pub fn parse(sql: &str) -> Result<Vec<DfStatement>> {
        Ok(
            DFParser::parse_sql_with_dialect(sql, &PostgreSqlDialect {})?
                .into_iter()
                .collect(),
        )
    }

    /// Runs every statement of `sql` in order, stopping at the first
    /// error, and returns what each produced.
    pub async fn execute(&self, sql: &str) -> Result<Vec<Output>> {
        let mut out = Vec::new();
        for stmt in SqlEngine::parse(sql)? {
            out.push(self.run(stmt).await?);
        }
        Ok(out)
    }

    /// Runs the one statement of `sql` and returns its rows.
    pub async fn query(&self, sql: &str) -> Result<Vec<RecordBatch>> {
        let mut stmts = SqlEngine::parse(sql)?;
        if stmts.len() != 1 {
            return Err(DataFusionError::Plan(format!(
                "query expects one statement; {} given",
                stmts.len()
            )));
        }
        Ok(self.run(stmts.remove(0)).await?.batches)
    }

    /// Runs one parsed statement.
    pub async fn run(&self, stmt: DfStatement) -> Result<Output> {
        if let Some(tag) = self.run_ddl(&stmt).await? {
            return Ok(ddl_output(tag));
        }
        let plan = self.ctx.state().statement_to_plan(stmt).await?;
        if let Some(p) = self.recognise(&plan)
            && let Some(out) = point_output(&plan, &p, &[])?
        {
            return Ok(out);
        }
        self.run_plan(plan).await
    }

    /// Parses and plans the one statement of `sql` for running many times
    /// with [`SqlEngine::run_prepared`]. Parameters are written `$1`,
    /// `$2`, ...; their types are inferred from where they appear.
    ///
    /// A prepared statement keeps the tables it was planned on: prepare it
    /// again after one of them is dropped and created anew.
    pub async fn prepare(&self, sql: &str) -> Result<Prepared> {
        let mut stmts = SqlEngine::parse(sql)?;
        if stmts.len() != 1 {
            return Err(DataFusionError::Plan(format!(
                "prepare expects one statement; {} given",
                stmts.len()
            )));
        }
        let stmt = stmts.remove(0);
        if self.is_ddl(&stmt) {
            return Ok(Prepared {
                kind: PreparedKind::Ddl(Box::new(stmt)),
            });
        }
        let plan = self.ctx.state().statement_to_plan(stmt).await?;
        let point = self.recognise(&plan);
        Ok(Prepared {
            kind: PreparedKind::Plan {
                plan: Box::new(plan),
                point,
            },
        })
    }

    /// Runs a prepared statement with `params` as `$1`, `$2`, ...
    ///
    /// A read or write of one row by its whole primary key runs on
    /// Strata directly (microseconds); anything else is optimised and
    /// planned by DataFusion at each run, with the parameters' values
    /// known.
    pub async fn run_prepared(&self, p: &Prepared, params: &[ScalarValue]) -> Result<Output> {
        match &p.kind {
            PreparedKind::Ddl(stmt) => {
                if !params.is_empty() {
                    return Err(DataFusionError::Plan("DDL takes no parameters".to_string()));
                }
                self.run(stmt.as_ref().clone()).await
            }
            PreparedKind::Plan { plan, point } => {
                if let Some(pp) = point
                    && let Some(out) = point_output(plan, pp, params)?
                {
                    return Ok(out);
                }
                let plan = plan.as_ref().clone();
                let plan = if params.is_empty() {
                    plan
                } else {
                    plan.with_param_values(params.to_vec())?
                };
                self.run_plan(plan).await
            }
        }
    }

    fn recognise(&self, plan: &LogicalPlan) -> Option<PointPlan> {
        self.point_statements
            .then(|| point::recognise(plan))
            .flatten()
    }

    /// Optimises, plans and runs a logical plan through DataFusion.
    async fn run_plan(&self, plan: LogicalPlan) -> Result<Output> {
        let verb = command_verb(&plan);
        let df = self.ctx.execute_logical_plan(plan).await?;
        let schema = Arc::new(df.schema().as_arrow().clone());
        let batches = df.collect().await?;
        let tag = match verb {
            Some(v) => format!("{v} {}", dml_count(&batches)),
            None => format!(
                "SELECT {}",
                batches.iter().map(|b| b.num_rows()).sum::<usize>()
            ),
        };
        Ok(Output {
            tag,
            schema,
            batches,
        })
    }

    fn is_ddl(&self, stmt: &DfStatement) -> bool {
        matches!(stmt, DfStatement::Statement(s) if crate::ddl::is_ddl(s))
    }

    /// Runs `stmt` if it is DDL on the Strata catalog; its tag.
    pub(crate) async fn run_ddl(&self, stmt: &DfStatement) -> Result<Option<&'static str>> {
        let DfStatement::Statement(s) = stmt else {
            return Ok(None);
        };
        if !self.is_ddl(stmt) {
            return Ok(None);
        }
        let db = self.db.clone();
        let s = s.as_ref().clone();
        // Building an index over existing rows can take a while.
        let tag = tokio::task::spawn_blocking(move || crate::ddl::run(&db, &s))
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        match tag {
            Some(Ok(tag)) => Ok(Some(tag)),
            Some(Err(e)) => Err(engine_error(e)),
            None => Ok(None),
        }
    }
}

/// A statement parsed and planned once, to run many times with different
/// parameters ([`SqlEngine::prepare`], [`SqlEngine::run_prepared`]).
#[derive(Debug, Clone)]
pub struct Prepared {
    kind: PreparedKind,
}

#[derive(Debug, Clone)]
enum PreparedKind {
    /// DDL runs from its statement each time.
    Ddl(Box<DfStatement>),
    /// Everything else: the logical plan, and the point statement it is,
    /// if it is one.
    Plan {
        plan: Box<LogicalPlan>,
        point: Option<PointPlan>,
    },
}

impl Prepared {
    /// Whether runs go straight to Strata (a point read or write by the
    /// whole primary key) rather than through DataFusion.
    pub fn is_point(&self) -> bool {
        matches!(&self.kind, PreparedKind::Plan { point: Some(_), .. })
    }
}

fn ddl_output(tag: &str) -> Output {
    Output {
        tag: tag.to_string(),
        schema: Arc::new(datafusion::arrow::datatypes::Schema::empty()),
        batches: Vec::new(),
    }
}

/// Runs a point statement; `None` when a value does not convert to its
/// column (DataFusion then runs the statement).
fn point_output(
    plan: &LogicalPlan,
    p: &PointPlan,
    params: &[ScalarValue],
) -> Result<Option<Output>> {
    let Some(out) = point::run(p, params)? else {
        return Ok(None);
    };
    let tag = match command_verb(plan) {
        Some(v) => format!("{v} {}", out.rows),
        None => format!("SELECT {}", out.rows),
    };
    Ok(Some(Output {
        tag,
        schema: out.batch.schema(),
        batches: vec![out.batch],
    }))
}

/// The tag verb of a write.
fn command_verb(plan: &LogicalPlan) -> Option<&'static str> {
    match plan {
        LogicalPlan::Dml(DmlStatement { op, .. }) => Some(match op {
            WriteOp::Insert(_) => "INSERT 0",
            WriteOp::Update => "UPDATE",
            WriteOp::Delete => "DELETE",
            _ => "WRITE",
        }),
        _ => None,
    }
}

/// The count a write's one-row result holds.
pub(crate) fn dml_count(batches: &[RecordBatch]) -> u64 {
    use datafusion::arrow::array::{Array, UInt64Array};
    batches
        .iter()
        .filter(|b| b.num_columns() == 1)
        .filter_map(|b| b.column(0).as_any().downcast_ref::<UInt64Array>())
        .flat_map(|a| (0..a.len()).map(move |i| a.value(i)))
        .sum()
}
