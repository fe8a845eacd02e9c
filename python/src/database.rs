//! `strata.Database`: an open database, its key-value keyspaces, its tables
//! and SQL over them.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow_array::ffi_stream::ArrowArrayStreamReader;
use arrow_pyarrow::{FromPyArrow, IntoPyArrow};
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use strata::table::{Schema, TableOptions};
use strata::{Db, DbIter, Options, ReadOptions, WriteOptions};
use strata_sql::SqlEngine;
use strata_sql::datafusion::arrow::array::RecordBatchReader;
use strata_sql::datafusion::arrow::datatypes::Schema as ArrowSchema;

use crate::table::{Table, Write, read_stream};
use crate::{ClosedError, InvalidArgumentError, engine_err, sql_err};

/// An open Strata database. Use it as a context manager, or call
/// `close()`: the database closes when the last handle goes anyway, but
/// `close()` reports a failure to save its state.
///
/// The methods without a keyspace (`get`, `put`, `delete`, `scan`) work on
/// the default keyspace.
#[pyclass(module = "strata", frozen)]
pub struct Database {
    path: PathBuf,
    db: Mutex<Option<Db>>,
    sql: Mutex<Option<Arc<Sql>>>,
    /// This object's number among the databases opened in the process: a
    /// batch records the number of the database its keyspaces came from,
    /// because a batch names a keyspace by its id, and the same id in
    /// another database is another keyspace.
    serial: u64,
}

/// The next `Database::serial`.
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

/// A DataFusion session over the database and the runtime it runs on,
/// made at the first `sql()` call.
struct Sql {
    runtime: tokio::runtime::Runtime,
    engine: SqlEngine,
}

impl Database {
    pub(crate) fn open(
        py: Python<'_>,
        path: PathBuf,
        read_only: bool,
        create: bool,
    ) -> PyResult<Database> {
        let opts = Options {
            read_only,
            create_if_missing: create && !read_only,
            ..Default::default()
        };
        let db = py.detach(|| Db::open(&path, opts)).map_err(engine_err)?;
        Ok(Database {
            path,
            db: Mutex::new(Some(db)),
            sql: Mutex::new(None),
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// A handle on the open database.
    fn handle(&self) -> PyResult<Db> {
        self.db
            .lock()
            .clone()
            .ok_or_else(|| ClosedError::new_err("the database has been closed"))
    }

    fn session(&self) -> PyResult<Arc<Sql>> {
        let mut sql = self.sql.lock();
        if let Some(s) = sql.as_ref() {
            return Ok(Arc::clone(s));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("strata-sql")
            .build()
            .map_err(|e| crate::Error::new_err(format!("starting the SQL runtime: {e}")))?;
        let engine = SqlEngine::new(self.handle()?).map_err(sql_err)?;
        let s = Arc::new(Sql { runtime, engine });
        *sql = Some(Arc::clone(&s));
        Ok(s)
    }
}

#[pymethods]
impl Database {
    /// The database's directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The value of `key` in the default keyspace, or None.
    fn get<'py>(&self, py: Python<'py>, key: &[u8]) -> PyResult<Option<Bound<'py, PyBytes>>> {
        get(py, &self.handle()?.default_keyspace(), key)
    }

    /// Sets `key` to `value` in the default keyspace; `sync` waits for the
    /// write-ahead log to reach the disk.
    #[pyo3(signature = (key, value, *, sync = false))]
    fn put(&self, py: Python<'_>, key: &[u8], value: &[u8], sync: bool) -> PyResult<()> {
        put(py, &self.handle()?.default_keyspace(), key, value, sync)
    }

    /// Deletes `key` from the default keyspace.
    #[pyo3(signature = (key, *, sync = false))]
    fn delete(&self, py: Python<'_>, key: &[u8], sync: bool) -> PyResult<()> {
        delete(py, &self.handle()?.default_keyspace(), key, sync)
    }

    /// Iterates `(key, value)` pairs of the default keyspace in key order,
    /// from `start` (inclusive) to `end` (exclusive), at a snapshot taken
    /// now; `reverse` iterates from the end.
    #[pyo3(signature = (start = None, end = None, *, reverse = false))]
    fn scan(
        &self,
        py: Python<'_>,
        start: Option<Vec<u8>>,
        end: Option<Vec<u8>>,
        reverse: bool,
    ) -> PyResult<KeyIterator> {
        KeyIterator::new(py, &self.handle()?.default_keyspace(), start, end, reverse)
    }

    /// The keyspace `name`, created if it does not exist.
    fn keyspace(&self, py: Python<'_>, name: &str) -> PyResult<Keyspace> {
        let db = self.handle()?;
        let ks = py
            .detach(|| db.keyspace(name, Default::default()))
            .map_err(engine_err)?;
        Ok(Keyspace {
            ks,
            owner: self.serial,
        })
    }

    /// Names of the keyspaces, tables' own included.
    fn keyspace_names(&self) -> PyResult<Vec<String>> {
        Ok(self.handle()?.keyspace_names())
    }

    /// Applies every change in `batch` atomically. The batch is emptied
    /// when the write succeeds and kept as it was when it fails, so that it
    /// can be written again (it was emptied first, and a retry "succeeded"
    /// writing nothing; found in review, 2026-12-01).
    #[pyo3(signature = (batch, *, sync = false))]
    fn write(&self, py: Python<'_>, batch: &WriteBatch, sync: bool) -> PyResult<()> {
        let db = self.handle()?;
        let b = {
            let state = batch.state.lock();
            if state.owner.is_some_and(|o| o != self.serial) {
                return Err(InvalidArgumentError::new_err(
                    "the batch names a keyspace of another Database object; \
                     a keyspace handle writes only through the database it came from",
                ));
            }
            state.batch.clone()
        };
        py.detach(|| {
            db.write(
                WriteOptions {
                    sync,
                    ..Default::default()
                },
                b,
            )
        })
        .map_err(engine_err)?;
        let mut state = batch.state.lock();
        state.batch.clear();
        state.owner = None;
        Ok(())
    }

    /// Writes the memtables to disk.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| db.flush()).map_err(engine_err)
    }

    /// Compacts every keyspace fully.
    fn compact(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| db.compact()).map_err(engine_err)
    }

    /// Creates table `name` from Arrow data or an Arrow schema.
    ///
    /// `data` is a `pyarrow.Schema` (an empty table), or anything that
    /// exports an Arrow stream (`pyarrow.Table`, `RecordBatchReader`, a
    /// polars or pandas DataFrame), whose rows are inserted in one atomic
    /// write batch; if that fails, no table is left behind. `primary_key`
    /// names the key column or columns. `layout` is a layout preset
    /// (`"row-then-column:2"`, `"columnar"`, ...); `options` sets any other
    /// table option by name.
    #[pyo3(signature = (name, data, primary_key, *, layout = None, options = None))]
    fn create_table(
        &self,
        py: Python<'_>,
        name: &str,
        data: &Bound<'_, PyAny>,
        primary_key: &Bound<'_, PyAny>,
        layout: Option<String>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Table> {
        let db = self.handle()?;
        let key: Vec<String> = if primary_key.is_instance_of::<PyString>() {
            vec![primary_key.extract()?]
        } else {
            primary_key.extract()?
        };
        let mut opts = table_options(options)?;
        if let Some(l) = layout {
            opts.layout = l;
        }
        let (arrow_schema, rows) = if data.hasattr("__arrow_c_stream__")? {
            let reader = ArrowArrayStreamReader::from_pyarrow_bound(data)?;
            let schema = reader.schema();
            (schema, Some(reader))
        } else {
            let s = ArrowSchema::from_pyarrow_bound(data)?;
            (Arc::new(s), None)
        };
        let schema: Schema = crate::convert::table_schema(&arrow_schema, &key)?;
        let table = py
            .detach(|| db.create_table(name, schema, opts))
            .map_err(engine_err)?;
        let table = Table::new(table);
        if let Some(reader) = rows {
            let loaded = read_stream(reader, &table.arrow_schema(), true)
                .and_then(|batch| table.write_batch(py, batch, Write::Insert));
            if let Err(e) = loaded {
                // Best effort: the insert's error is the one to report.
                let _ = py.detach(|| db.drop_table(name));
                return Err(e);
            }
        }
        Ok(table)
    }

    /// The table `name` (NotFoundError if there is none).
    fn table(&self, name: &str) -> PyResult<Table> {
        Ok(Table::new(self.handle()?.table(name).map_err(engine_err)?))
    }

    /// Names of every table, sorted.
    fn table_names(&self) -> PyResult<Vec<String>> {
        Ok(self.handle()?.table_names())
    }

    /// Drops table `name` and its rows.
    fn drop_table(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| db.drop_table(name)).map_err(engine_err)
    }

    /// Runs the SQL statements in `query` in order (PostgreSQL dialect,
    /// through Apache DataFusion) and returns what the last produced as a
    /// `pyarrow.Table`: a query's rows, the count of rows an INSERT,
    /// UPDATE or DELETE changed, nothing for DDL. Each INSERT, UPDATE and
    /// DELETE is one atomic write batch.
    fn sql<'py>(&self, py: Python<'py>, query: &str) -> PyResult<Bound<'py, PyAny>> {
        let session = self.session()?;
        let outputs = py
            .detach(|| session.runtime.block_on(session.engine.execute(query)))
            .map_err(sql_err)?;
        let Some(last) = outputs.into_iter().next_back() else {
            return Err(InvalidArgumentError::new_err("no SQL statement given"));
        };
        // DataFusion's batches may carry a schema that differs from the
        // plan's in nullability only; the batches' own is the exact one.
        let schema = last
            .batches
            .first()
            .map(|b| b.schema())
            .unwrap_or(last.schema);
        arrow_pyarrow::Table::try_new(last.batches, schema)
            .map_err(|e| crate::Error::new_err(e.to_string()))?
            .into_pyarrow(py)
    }

    /// Closes the database: background work stops, state is saved, and
    /// every handle on it (tables, keyspaces) then raises ClosedError; an
    /// iterator already begun may still yield entries it had read.
    /// Closing twice is harmless.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let sql = self.sql.lock().take();
        let db = self.db.lock().take();
        py.detach(move || {
            drop(sql);
            match db {
                Some(db) => db.close(),
                None => Ok(()),
            }
        })
        .map_err(engine_err)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = if self.db.lock().is_some() {
            "open"
        } else {
            "closed"
        };
        format!("<strata.Database {:?} ({state})>", self.path)
    }
}

/// Table options from a dict of option names: every name must be one
/// [`TableOptions`] has, so that a misspelled option is an error rather
/// than a silent default.
fn table_options(options: Option<&Bound<'_, PyDict>>) -> PyResult<TableOptions> {
    let Some(options) = options else {
        return Ok(TableOptions::default());
    };
    let known = serde_json::to_value(TableOptions::default())
        .map_err(|e| crate::Error::new_err(e.to_string()))?;
    let json = options.py().import("json")?;
    let text: String = json.call_method1("dumps", (options,))?.extract()?;
    let given: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text)
        .map_err(|e| InvalidArgumentError::new_err(format!("table options: {e}")))?;
    if let Some(obj) = known.as_object()
        && let Some(bad) = given.keys().find(|k| !obj.contains_key(*k))
    {
        let mut names: Vec<&String> = obj.keys().collect();
        names.sort();
        return Err(InvalidArgumentError::new_err(format!(
            "unknown table option {bad:?}; the options are {names:?}"
        )));
    }
    let opts: TableOptions = serde_json::from_value(serde_json::Value::Object(given))
        .map_err(|e| InvalidArgumentError::new_err(format!("table options: {e}")))?;
    opts.validate().map_err(engine_err)?;
    Ok(opts)
}

/// One key-value keyspace: an independent sorted map sharing the
/// database's write-ahead log.
#[pyclass(module = "strata", frozen)]
pub struct Keyspace {
    ks: strata::Keyspace,
    /// The `Database::serial` of the database it came from.
    owner: u64,
}

#[pymethods]
impl Keyspace {
    /// The keyspace's name.
    #[getter]
    fn name(&self) -> String {
        self.ks.name().to_string()
    }

    /// The value of `key`, or None.
    fn get<'py>(&self, py: Python<'py>, key: &[u8]) -> PyResult<Option<Bound<'py, PyBytes>>> {
        get(py, &self.ks, key)
    }

    /// Sets `key` to `value`.
    #[pyo3(signature = (key, value, *, sync = false))]
    fn put(&self, py: Python<'_>, key: &[u8], value: &[u8], sync: bool) -> PyResult<()> {
        put(py, &self.ks, key, value, sync)
    }

    /// Deletes `key`.
    #[pyo3(signature = (key, *, sync = false))]
    fn delete(&self, py: Python<'_>, key: &[u8], sync: bool) -> PyResult<()> {
        delete(py, &self.ks, key, sync)
    }

    /// Iterates `(key, value)` pairs from `start` (inclusive) to `end`
    /// (exclusive).
    #[pyo3(signature = (start = None, end = None, *, reverse = false))]
    fn scan(
        &self,
        py: Python<'_>,
        start: Option<Vec<u8>>,
        end: Option<Vec<u8>>,
        reverse: bool,
    ) -> PyResult<KeyIterator> {
        KeyIterator::new(py, &self.ks, start, end, reverse)
    }

    fn __repr__(&self) -> String {
        format!("<strata.Keyspace {:?}>", self.ks.name())
    }
}

fn get<'py>(
    py: Python<'py>,
    ks: &strata::Keyspace,
    key: &[u8],
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let v = py.detach(|| ks.get(key)).map_err(engine_err)?;
    Ok(v.map(|v| PyBytes::new(py, &v)))
}

fn put(
    py: Python<'_>,
    ks: &strata::Keyspace,
    key: &[u8],
    value: &[u8],
    sync: bool,
) -> PyResult<()> {
    let opts = WriteOptions {
        sync,
        ..Default::default()
    };
    py.detach(|| ks.put_opt(opts, key, value))
        .map_err(engine_err)
}

fn delete(py: Python<'_>, ks: &strata::Keyspace, key: &[u8], sync: bool) -> PyResult<()> {
    let opts = WriteOptions {
        sync,
        ..Default::default()
    };
    py.detach(|| ks.delete_opt(opts, key)).map_err(engine_err)
}

/// Changes to apply atomically with `Database.write`, possibly across
/// keyspaces.
#[pyclass(module = "strata", frozen)]
#[derive(Default)]
pub struct WriteBatch {
    state: Mutex<BatchState>,
}

#[derive(Default)]
struct BatchState {
    batch: strata::WriteBatch,
    /// The `Database::serial` of the keyspaces named so far, if any was:
    /// one batch writes to one database.
    owner: Option<u64>,
}

impl BatchState {
    /// Records that the batch names a keyspace of database `owner`;
    /// refuses a keyspace of another database than the batch's others.
    fn name(&mut self, owner: u64) -> PyResult<()> {
        match self.owner {
            Some(o) if o != owner => Err(InvalidArgumentError::new_err(
                "the batch already names a keyspace of another Database object; \
                 one batch writes to one database",
            )),
            _ => {
                self.owner = Some(owner);
                Ok(())
            }
        }
    }
}

#[pymethods]
impl WriteBatch {
    #[new]
    fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Sets `key` to `value` (in `keyspace`, default the default one).
    #[pyo3(signature = (key, value, keyspace = None))]
    fn put(&self, key: &[u8], value: &[u8], keyspace: Option<&Keyspace>) -> PyResult<()> {
        let mut s = self.state.lock();
        match keyspace {
            Some(ks) => {
                s.name(ks.owner)?;
                s.batch.put_in(ks.ks.id(), key, value)
            }
            None => s.batch.put(key, value),
        }
        Ok(())
    }

    /// Deletes `key` (in `keyspace`, default the default one).
    #[pyo3(signature = (key, keyspace = None))]
    fn delete(&self, key: &[u8], keyspace: Option<&Keyspace>) -> PyResult<()> {
        let mut s = self.state.lock();
        match keyspace {
            Some(ks) => {
                s.name(ks.owner)?;
                s.batch.delete_in(ks.ks.id(), key)
            }
            None => s.batch.delete(key),
        }
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.state.lock().batch.len()
    }
}

/// Entries an iterator reads per release of the GIL.
const ITER_CHUNK: usize = 256;

/// `(key, value)` pairs in key order, at the snapshot taken when the scan
/// began. Reads a chunk of entries at a time with the GIL released.
#[pyclass(module = "strata", frozen)]
pub struct KeyIterator {
    state: Mutex<IterState>,
}

struct IterState {
    it: DbIter,
    reverse: bool,
    ready: VecDeque<(Vec<u8>, Vec<u8>)>,
    /// An error the iterator stopped on, raised once the entries read
    /// before it have been handed out.
    failed: Option<strata::Error>,
    /// The iterator is at its end or stopped on an error: nothing more is
    /// read.
    ended: bool,
}

impl KeyIterator {
    fn new(
        py: Python<'_>,
        ks: &strata::Keyspace,
        start: Option<Vec<u8>>,
        end: Option<Vec<u8>>,
        reverse: bool,
    ) -> PyResult<KeyIterator> {
        let opts = ReadOptions {
            lower_bound: start,
            upper_bound: end,
            ..Default::default()
        };
        let it = py
            .detach(|| {
                let mut it = ks.iter(opts)?;
                if reverse {
                    it.seek_to_last();
                } else {
                    it.seek_to_first();
                }
                it.status().map(|()| it)
            })
            .map_err(engine_err)?;
        Ok(KeyIterator {
            state: Mutex::new(IterState {
                it,
                reverse,
                ready: VecDeque::new(),
                failed: None,
                ended: false,
            }),
        })
    }
}

#[pymethods]
impl KeyIterator {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
        // Never wait for the lock holding the GIL: its holder may be
        // waiting for the GIL.
        let Some(mut state) = self.state.try_lock() else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "the iterator is being advanced by another thread",
            ));
        };
        if state.ready.is_empty() && !state.ended {
            let s = &mut *state;
            let r = py.detach(|| {
                while s.it.valid() && s.ready.len() < ITER_CHUNK {
                    s.ready
                        .push_back((s.it.key().to_vec(), s.it.value().to_vec()));
                    if s.reverse {
                        s.it.prev();
                    } else {
                        s.it.next();
                    }
                }
                s.it.status()
            });
            // The entries read before an error come first: the error is
            // raised when they are gone (it was raised at once, with them
            // still waiting).
            s.failed = r.err();
            s.ended = s.failed.is_some() || !s.it.valid();
        }
        if state.ready.is_empty()
            && let Some(e) = state.failed.take()
        {
            return Err(engine_err(e));
        }
        Ok(state
            .ready
            .pop_front()
            .map(|(k, v)| (PyBytes::new(py, &k), PyBytes::new(py, &v))))
    }
}
