//! The database's tables as a DataFusion schema: every table the catalog
//! holds, looked up when a query names it, so that tables created through
//! the Rust API, the CLI or another connection are visible at once.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::error::{DataFusionError, Result};
use strata::Db;

use crate::provider::StrataTable;

/// The `public` schema of a Strata database.
pub struct StrataSchema {
    db: Db,
}

impl StrataSchema {
    /// The schema of `db`'s tables.
    pub fn new(db: Db) -> StrataSchema {
        StrataSchema { db }
    }
}

impl fmt::Debug for StrataSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StrataSchema({})", self.db.path().display())
    }
}

#[async_trait]
impl SchemaProvider for StrataSchema {
    fn table_names(&self) -> Vec<String> {
        self.db.table_names()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        match self.db.table(name) {
            Ok(t) => Ok(Some(Arc::new(StrataTable::new(t)))),
            Err(strata::Error::TableNotFound(_)) => Ok(None),
            Err(e) => Err(DataFusionError::External(Box::new(e))),
        }
    }

    fn register_table(
        &self,
        name: String,
        _table: Arc<dyn TableProvider>,
    ) -> Result<Option<Arc<dyn TableProvider>>> {
        Err(DataFusionError::Plan(format!(
            "table {name:?} cannot be registered in a Strata database; \
             use CREATE TABLE ... (columns, PRIMARY KEY (...))"
        )))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.db.table(name).is_ok()
    }
}
