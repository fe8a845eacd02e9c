//! What the wire needs beyond datafusion-postgres's own handling:
//!
//! - Strata's DDL: `CREATE TABLE`, `DROP TABLE`, `CREATE INDEX` and `DROP
//!   INDEX` reach Strata's catalog (`ddl.rs`) instead of DataFusion,
//!   through both the simple and the extended query protocol.
//! - `UPDATE` and `DELETE` answer with a command tag and a row count
//!   (`UPDATE 3`), as PostgreSQL does; datafusion-postgres answers only
//!   `INSERT` that way and would send their count as a result row the
//!   statement's description did not announce.
//! - Inside a transaction block that an error aborted, those statements
//!   are refused (`25P01`), as every other statement is by
//!   datafusion-postgres's transaction hook, which runs after this one.
//! - Strata has no transactions: each statement is committed as it runs.
//!   A `ROLLBACK` of a block that wrote is answered with a warning saying
//!   so before datafusion-postgres's `ROLLBACK`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use datafusion::common::{DFSchema, ParamValues};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{EmptyRelation, LogicalPlan};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::Statement;
use datafusion_postgres::QueryHook;
use datafusion_postgres::hooks::HookClient;
use datafusion_postgres::pgwire::api::ClientInfo;
use datafusion_postgres::pgwire::api::results::{Response, Tag};
use datafusion_postgres::pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use datafusion_postgres::pgwire::messages::PgWireBackendMessage;
use datafusion_postgres::pgwire::messages::response::TransactionStatus;
use strata::Db;

use super::errors::engine_to_pg;

/// Strata's statements over the wire (see the module documentation). One
/// per connection.
pub(crate) struct StrataHook {
    pub db: Db,
    /// Whether a statement that writes ran inside the open transaction
    /// block: each was committed as it ran, and a `ROLLBACK` of the block
    /// warns that it undoes none of them.
    pub wrote_in_block: AtomicBool,
}

impl StrataHook {
    pub(crate) fn new(db: Db) -> StrataHook {
        StrataHook {
            db,
            wrote_in_block: AtomicBool::new(false),
        }
    }

    /// Follows the transaction block `statement` runs in; before a
    /// `ROLLBACK` of a block that wrote, warns the client that the writes
    /// stay (the client was told `ROLLBACK` and believed them undone;
    /// found in review, 2026-12-01). The transaction statements themselves
    /// are answered by datafusion-postgres's hook.
    async fn track_block(&self, statement: &Statement, client: &mut dyn HookClient) {
        let in_block = client.transaction_status() != TransactionStatus::Idle;
        match statement {
            Statement::StartTransaction { .. } if !in_block => {
                self.wrote_in_block.store(false, Ordering::Relaxed);
            }
            Statement::Commit { .. } => self.wrote_in_block.store(false, Ordering::Relaxed),
            Statement::Rollback { .. }
                if in_block && self.wrote_in_block.swap(false, Ordering::Relaxed) =>
            {
                let warning = ErrorInfo::new(
                    "WARNING".to_string(),
                    "01000".to_string(),
                    "Strata commits each statement as it runs: the writes of this \
                     transaction block stay, ROLLBACK does not undo them"
                        .to_string(),
                );
                let _ = client
                    .send_message(PgWireBackendMessage::NoticeResponse(warning.into()))
                    .await;
            }
            Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_)
            | Statement::CreateTable(_)
            | Statement::CreateIndex(_)
            | Statement::Drop { .. }
                if in_block =>
            {
                self.wrote_in_block.store(true, Ordering::Relaxed);
            }
            _ => {}
        }
    }
}

impl StrataHook {
    /// Runs an `UPDATE` or `DELETE` plan and reports its count.
    async fn write(verb: &str, plan: LogicalPlan, ctx: &SessionContext) -> PgWireResult<Response> {
        let api = |e: DataFusionError| PgWireError::ApiError(Box::new(e));
        let batches = ctx
            .execute_logical_plan(plan)
            .await
            .map_err(api)?
            .collect()
            .await
            .map_err(api)?;
        let n = crate::engine::dml_count(&batches);
        Ok(Response::Execution(Tag::new(verb).with_rows(n as usize)))
    }

    async fn run(&self, statement: &Statement) -> Option<PgWireResult<Response>> {
        if !crate::ddl::is_ddl(statement) {
            return None;
        }
        let db = self.db.clone();
        let s = statement.clone();
        let result = tokio::task::spawn_blocking(move || crate::ddl::run(&db, &s)).await;
        Some(match result {
            Ok(Some(Ok(tag))) => Ok(Response::Execution(Tag::new(tag))),
            Ok(Some(Err(e))) => Err(engine_to_pg(&e)),
            Ok(None) => return None,
            Err(e) => Err(engine_to_pg(&strata::Error::InvalidArgument(e.to_string()))),
        })
    }
}

/// The refusal of a statement inside an aborted transaction block, if the
/// client is in one: PostgreSQL runs nothing until the block ends.
fn refused_in_aborted_block(client: &dyn ClientInfo) -> Option<PgWireResult<Response>> {
    (client.transaction_status() == TransactionStatus::Error).then(|| {
        Err(PgWireError::UserError(Box::new(ErrorInfo::new(
            "ERROR".to_string(),
            "25P01".to_string(),
            "current transaction is aborted, commands ignored until end of transaction block"
                .to_string(),
        ))))
    })
}

/// Whether this hook answers `statement` (rather than leaving it to
/// datafusion-postgres).
fn handled_here(statement: &Statement) -> bool {
    write_verb(statement).is_some() || crate::ddl::is_ddl(statement)
}

/// The tag of an `UPDATE` or `DELETE`.
fn write_verb(statement: &Statement) -> Option<&'static str> {
    match statement {
        Statement::Update(_) => Some("UPDATE"),
        Statement::Delete(_) => Some("DELETE"),
        _ => None,
    }
}

#[async_trait]
impl QueryHook for StrataHook {
    async fn handle_simple_query(
        &self,
        statement: &Statement,
        session_context: &SessionContext,
        client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        self.track_block(statement, client).await;
        if handled_here(statement)
            && let Some(refused) = refused_in_aborted_block(client)
        {
            return Some(refused);
        }
        if let Some(verb) = write_verb(statement) {
            let parsed = DfStatement::Statement(Box::new(statement.clone()));
            let plan = match session_context.state().statement_to_plan(parsed).await {
                Ok(p) => p,
                Err(e) => return Some(Err(PgWireError::ApiError(Box::new(e)))),
            };
            return Some(Self::write(verb, plan, session_context).await);
        }
        self.run(statement).await
    }

    async fn handle_extended_parse_query(
        &self,
        statement: &Statement,
        _session_context: &SessionContext,
        _client: &(dyn ClientInfo + Send + Sync),
    ) -> Option<PgWireResult<LogicalPlan>> {
        // Parsing must succeed without DataFusion planning the statement;
        // it runs when executed.
        crate::ddl::is_ddl(statement).then(|| {
            Ok(LogicalPlan::EmptyRelation(EmptyRelation {
                produce_one_row: false,
                schema: Arc::new(DFSchema::empty()),
            }))
        })
    }

    async fn handle_extended_query(
        &self,
        statement: &Statement,
        logical_plan: &LogicalPlan,
        params: &ParamValues,
        session_context: &SessionContext,
        client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        self.track_block(statement, client).await;
        if handled_here(statement)
            && let Some(refused) = refused_in_aborted_block(client)
        {
            return Some(refused);
        }
        if let Some(verb) = write_verb(statement) {
            let plan = match logical_plan.clone().with_param_values(params.clone()) {
                Ok(p) => p,
                Err(e) => return Some(Err(PgWireError::ApiError(Box::new(e)))),
            };
            return Some(Self::write(verb, plan, session_context).await);
        }
        self.run(statement).await
    }
}
