//! SQL over Strata tables through Apache DataFusion.
//!
//! Every table of a Strata database is a DataFusion table
//! ([`StrataTable`]): queries stream Arrow batches out of Strata scans,
//! with projections, filters and key ranges pushed into them, so column
//! groups, block skipping, dictionary codes and secondary indexes do their
//! work below SQL. `INSERT`, `UPDATE` and `DELETE` are each one atomic
//! write batch. `CREATE TABLE` (with a primary key and table options),
//! `DROP TABLE`, `CREATE INDEX` and `DROP INDEX` act on Strata's catalog.
//!
//! ```text
//!   SqlEngine (engine.rs) ── ddl.rs ───────────► strata catalog
//!      │  DataFusion session
//!      ├─ catalog.rs   StrataSchema: the database's tables
//!      ├─ provider.rs  StrataTable: scan, statistics, INSERT/UPDATE/DELETE
//!      │     ├─ filter.rs  DataFusion filters → Strata predicates
//!      │     ├─ scan.rs    StrataScanExec: a Strata scan as a stream
//!      │     └─ dml.rs     writes, one batch per statement
//!      ├─ join.rs      StrataJoinRule: equi-joins to Strata's join
//!      │               operators when its planner predicts a win
//!      └─ server/      `strata serve`: the PostgreSQL wire protocol
//! ```
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let db = strata::Db::open(dir.path(), strata::Options::default())?;
//! let sql = strata_sql::SqlEngine::new(db)?;
//! sql.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT)").await?;
//! sql.execute("INSERT INTO t VALUES (1, 'ada'), (2, 'grace')").await?;
//! let rows = sql.query("SELECT name FROM t WHERE id = 2").await?;
//! assert_eq!(rows[0].num_rows(), 1);
//! # Ok(())
//! # }
//! ```

mod catalog;
mod ddl;
mod dml;
mod dml_guard;
mod engine;
mod error;
mod filter;
mod join;
mod leaf;
mod point;
mod provider;
mod scan;
pub mod server;
mod snapshot;

pub use catalog::StrataSchema;
pub use datafusion;
pub use engine::{CATALOG, Output, Prepared, SCHEMA, SqlEngine, SqlOptions};
pub use error::as_engine_error;
pub use join::{StrataJoinExec, StrataJoinRule};
pub use provider::StrataTable;
pub use scan::StrataScanExec;
