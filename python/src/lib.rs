//! The `strata` Python package (pyo3): a Strata database from Python.
//!
//! ```text
//!   lib.rs       the module: open(), the exception classes
//!   database.rs  Database (key-value, tables, SQL), Keyspace, WriteBatch,
//!                the key-value iterator
//!   table.rs     Table: rows in and out as Arrow (pyarrow, polars, pandas
//!                through the Arrow PyCapsule interface), point reads
//!   convert.rs   Python values and Arrow types to Strata's and back
//! ```
//!
//! Every call that reads or writes the database releases the GIL
//! (`Python::detach`), so other Python threads run while Strata does I/O.
//! Arrow data crosses the boundary through the Arrow C data interface:
//! batches Strata produces become pyarrow's without a copy.

mod convert;
mod database;
mod table;

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

use crate::database::{Database, KeyIterator, Keyspace, WriteBatch};
use crate::table::Table;

create_exception!(strata, Error, PyException, "Every error Strata raises.");
create_exception!(
    strata,
    InvalidArgumentError,
    Error,
    "The call passed something Strata refuses; nothing was written."
);
create_exception!(
    strata,
    NotFoundError,
    Error,
    "No such table (or no database at the path)."
);
create_exception!(
    strata,
    AlreadyExistsError,
    Error,
    "A table of that name exists already."
);
create_exception!(
    strata,
    DuplicateKeyError,
    Error,
    "An insert named a key the table holds already; nothing was written."
);
create_exception!(
    strata,
    CorruptionError,
    Error,
    "Bytes on disk are not what Strata wrote."
);
create_exception!(strata, ClosedError, Error, "The database has been closed.");
create_exception!(
    strata,
    SqlError,
    Error,
    "A SQL statement failed to parse, plan or run."
);

/// The Python exception for an engine error, with the engine's message.
pub(crate) fn engine_err(e: strata::Error) -> PyErr {
    error_of(&e, e.to_string())
}

/// The Python exception for a failed SQL statement: the class the engine's
/// error maps to when the engine refused it, else [`SqlError`]; the message
/// is DataFusion's, which quotes the engine's.
pub(crate) fn sql_err(e: strata_sql::datafusion::error::DataFusionError) -> PyErr {
    match strata_sql::as_engine_error(&e) {
        Some(inner) => error_of(inner, e.to_string()),
        None => SqlError::new_err(e.to_string()),
    }
}

/// The exception class an engine error maps to, carrying `msg`.
fn error_of(e: &strata::Error, msg: String) -> PyErr {
    match e {
        strata::Error::InvalidArgument(_)
        | strata::Error::MemoryBudget { .. }
        | strata::Error::NotNull { .. }
        | strata::Error::OpenedReadOnly { .. } => InvalidArgumentError::new_err(msg),
        strata::Error::TableNotFound(_) | strata::Error::NotFound { .. } => {
            NotFoundError::new_err(msg)
        }
        strata::Error::TableExists(_) => AlreadyExistsError::new_err(msg),
        strata::Error::DuplicateKey { .. } => DuplicateKeyError::new_err(msg),
        strata::Error::Corruption { .. } => CorruptionError::new_err(msg),
        strata::Error::Closed => ClosedError::new_err(msg),
        _ => Error::new_err(msg),
    }
}

/// Opens (or creates) the database at `path`.
///
/// `read_only` opens it for reading only (no writes, no background work,
/// no lock); `create_if_missing` (default true) makes a database
/// when the directory holds none.
#[pyfunction]
#[pyo3(signature = (path, *, read_only = false, create_if_missing = true))]
fn open(
    py: Python<'_>,
    path: std::path::PathBuf,
    read_only: bool,
    create_if_missing: bool,
) -> PyResult<Database> {
    Database::open(py, path, read_only, create_if_missing)
}

#[pymodule]
fn _strata(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_class::<Database>()?;
    m.add_class::<Keyspace>()?;
    m.add_class::<WriteBatch>()?;
    m.add_class::<KeyIterator>()?;
    m.add_class::<Table>()?;
    m.add("Error", py.get_type::<Error>())?;
    m.add(
        "InvalidArgumentError",
        py.get_type::<InvalidArgumentError>(),
    )?;
    m.add("NotFoundError", py.get_type::<NotFoundError>())?;
    m.add("AlreadyExistsError", py.get_type::<AlreadyExistsError>())?;
    m.add("DuplicateKeyError", py.get_type::<DuplicateKeyError>())?;
    m.add("CorruptionError", py.get_type::<CorruptionError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    m.add("SqlError", py.get_type::<SqlError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
