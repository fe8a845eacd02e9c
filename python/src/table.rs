//! `strata.Table`: rows in and out as Arrow.

use std::ops::Bound as KeyBound;
use std::sync::Arc;

use arrow_array::ffi_stream::ArrowArrayStreamReader;
use arrow_pyarrow::{FromPyArrow, IntoPyArrow, ToPyArrow};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use strata::table::{ScanOptions, TableScan, Value};
use strata_sql::datafusion::arrow::array::{RecordBatch, RecordBatchReader};
use strata_sql::datafusion::arrow::compute::concat_batches;
use strata_sql::datafusion::arrow::datatypes::SchemaRef;
use strata_sql::datafusion::arrow::error::ArrowError;

use crate::convert::{conform, to_python, to_value};
use crate::{InvalidArgumentError, engine_err};

/// A table: typed columns and a primary key, stored row-wise while recent
/// and in column groups as it ages.
#[pyclass(module = "strata", frozen)]
pub struct Table {
    t: strata::table::Table,
}

/// How a write treats existing keys.
#[derive(Clone, Copy)]
pub(crate) enum Write {
    /// Refuse the whole batch if a key exists.
    Insert,
    /// Replace rows whose key exists.
    Upsert,
    /// Set the given columns of existing rows.
    Update,
    /// Delete the rows of the given keys.
    Delete,
}

impl Table {
    pub(crate) fn new(t: strata::table::Table) -> Table {
        Table { t }
    }

    /// The whole table's Arrow schema.
    pub(crate) fn arrow_schema(&self) -> SchemaRef {
        self.t.schema().arrow_schema()
    }

    /// Writes `batch` (already conformed to the table) as one atomic batch.
    pub(crate) fn write_batch(
        &self,
        py: Python<'_>,
        batch: RecordBatch,
        how: Write,
    ) -> PyResult<()> {
        let t = &self.t;
        py.detach(|| match how {
            Write::Insert => t.insert(&batch),
            Write::Upsert => t.upsert(&batch),
            Write::Update => t.update(&batch),
            Write::Delete => t.delete(&batch),
        })
        .map_err(engine_err)
    }

    /// Reads Arrow data from Python and writes it as one atomic batch.
    fn write_data(&self, data: &Bound<'_, PyAny>, how: Write) -> PyResult<()> {
        let py = data.py();
        let reader = ArrowArrayStreamReader::from_pyarrow_bound(data)?;
        // Inserts and upserts give whole rows (a missing nullable column is
        // null); updates and deletes give only the columns they name.
        let whole = matches!(how, Write::Insert | Write::Upsert);
        let batch = read_stream(reader, &self.arrow_schema(), whole)?;
        self.write_batch(py, batch, how)
    }

    /// A key (one value, or a tuple of the key columns' values) as values:
    /// the whole key when `whole`, else a prefix of it (a scan bound).
    fn key_values(&self, key: &Bound<'_, PyAny>, whole: bool) -> PyResult<Vec<Value>> {
        let schema = self.t.schema();
        let parts: Vec<Bound<'_, PyAny>> =
            if key.is_instance_of::<PyTuple>() || key.is_instance_of::<PyList>() {
                key.try_iter()?.collect::<PyResult<_>>()?
            } else {
                vec![key.clone()]
            };
        let n = schema.key_indices().len();
        if parts.len() > n || (whole && parts.len() != n) {
            return Err(InvalidArgumentError::new_err(format!(
                "table {:?} has {n} key column(s); {} value(s) given",
                self.t.name(),
                parts.len()
            )));
        }
        parts
            .iter()
            .zip(schema.key_indices())
            .map(|(p, &i)| {
                let c = &schema.columns()[i];
                to_value(p, c.ty, &c.name)
            })
            .collect()
    }

    fn scan_options(
        &self,
        columns: Option<Vec<String>>,
        lower: Option<&Bound<'_, PyAny>>,
        upper: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(ScanOptions, SchemaRef)> {
        let schema = self.t.schema();
        let names: Option<Vec<&str>> = columns
            .as_ref()
            .map(|c| c.iter().map(String::as_str).collect());
        let indices = schema.projection(names.as_deref()).map_err(engine_err)?;
        let mut opts = ScanOptions {
            columns,
            ..Default::default()
        };
        if let Some(l) = lower {
            opts.lower = KeyBound::Included(self.key_values(l, false)?);
        }
        if let Some(u) = upper {
            opts.upper = KeyBound::Excluded(self.key_values(u, false)?);
        }
        Ok((opts, schema.arrow_projection(&indices)))
    }
}

#[pymethods]
impl Table {
    /// The table's name.
    #[getter]
    fn name(&self) -> String {
        self.t.name().to_string()
    }

    /// The table's columns as a `pyarrow.Schema`.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.arrow_schema().as_ref().to_pyarrow(py)
    }

    /// The key columns' names, in key order.
    #[getter]
    fn primary_key(&self) -> Vec<String> {
        let s = self.t.schema();
        s.key_indices()
            .iter()
            .map(|&i| s.columns()[i].name.clone())
            .collect()
    }

    /// Inserts the rows of `data` (anything exporting an Arrow stream:
    /// `pyarrow.Table`, `RecordBatch`, `RecordBatchReader`, polars or
    /// pandas DataFrames) in one atomic write batch. If any key exists
    /// already, or appears twice, nothing is written (DuplicateKeyError).
    fn insert(&self, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write_data(data, Write::Insert)
    }

    /// Inserts the rows of `data`, replacing rows whose key exists.
    fn upsert(&self, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write_data(data, Write::Upsert)
    }

    /// Sets, in the rows `data`'s key columns name, the other columns it
    /// holds (a partial update: only those columns are written).
    fn update(&self, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write_data(data, Write::Update)
    }

    /// Deletes the rows whose keys `data`'s key columns hold.
    fn delete_keys(&self, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write_data(data, Write::Delete)
    }

    /// Deletes the row with key `key` (a value, or a tuple for a compound
    /// key); nothing if there is none.
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = self.key_values(key, true)?;
        let t = &self.t;
        py.detach(|| t.delete_row(&key)).map_err(engine_err)
    }

    /// The row with key `key` as a dict of the named columns (default
    /// all), or None. Only the column groups holding them are read.
    #[pyo3(signature = (key, columns = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        columns: Option<Vec<String>>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let key = self.key_values(key, true)?;
        let names: Vec<String> = match &columns {
            Some(c) => c.clone(),
            None => self
                .t
                .schema()
                .columns()
                .iter()
                .map(|c| c.name.clone())
                .collect(),
        };
        let t = &self.t;
        let row = py
            .detach(|| {
                let refs: Option<Vec<&str>> = columns
                    .as_ref()
                    .map(|c| c.iter().map(String::as_str).collect());
                t.get(&key, refs.as_deref())
            })
            .map_err(engine_err)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let out = PyDict::new(py);
        for (name, v) in names.into_iter().zip(row) {
            out.set_item(name, to_python(py, v)?)?;
        }
        Ok(Some(out))
    }

    /// The rows from key `lower` (inclusive) to `upper` (exclusive), each
    /// a key value, tuple, or a prefix of a compound key, as a
    /// `pyarrow.Table` of the named columns (default all). Only the
    /// column groups holding them are read.
    #[pyo3(signature = (columns = None, *, lower = None, upper = None))]
    fn scan<'py>(
        &self,
        py: Python<'py>,
        columns: Option<Vec<String>>,
        lower: Option<&Bound<'py, PyAny>>,
        upper: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (opts, schema) = self.scan_options(columns, lower, upper)?;
        let t = &self.t;
        let batches = py
            .detach(|| t.scan(opts)?.collect::<strata::Result<Vec<_>>>())
            .map_err(engine_err)?;
        arrow_pyarrow::Table::try_new(batches, schema)
            .map_err(|e| crate::Error::new_err(e.to_string()))?
            .into_pyarrow(py)
    }

    /// Like `scan`, as a `pyarrow.RecordBatchReader` that reads batches
    /// as they are consumed: a table larger than memory streams through.
    #[pyo3(signature = (columns = None, *, lower = None, upper = None))]
    fn scan_batches<'py>(
        &self,
        py: Python<'py>,
        columns: Option<Vec<String>>,
        lower: Option<&Bound<'py, PyAny>>,
        upper: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (opts, schema) = self.scan_options(columns, lower, upper)?;
        let t = &self.t;
        let scan = py.detach(|| t.scan(opts)).map_err(engine_err)?;
        let reader: Box<dyn RecordBatchReader + Send> = Box::new(ScanReader { scan, schema });
        reader.into_pyarrow(py)
    }

    /// An estimate of the number of rows, from file and memtable counts.
    fn estimated_rows(&self) -> PyResult<f64> {
        self.t.estimated_rows().map_err(engine_err)
    }

    /// The table's layout, files and statistics, as text.
    fn describe(&self, py: Python<'_>) -> PyResult<String> {
        let t = &self.t;
        let d = py.detach(|| t.describe()).map_err(engine_err)?;
        Ok(d.to_string())
    }

    /// Writes the table's memtable rows to disk.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let t = &self.t;
        py.detach(|| t.flush()).map_err(engine_err)
    }

    /// Compacts the table fully (its layout's last level).
    fn compact(&self, py: Python<'_>) -> PyResult<()> {
        let t = &self.t;
        py.detach(|| t.compact()).map_err(engine_err)
    }

    fn __repr__(&self) -> String {
        format!("<strata.Table {:?}>", self.t.name())
    }
}

/// Reads every batch of `reader` and makes one batch of the table's
/// columns: all of `target`'s when `whole` (missing ones null), else the
/// ones the data names.
pub(crate) fn read_stream(
    reader: ArrowArrayStreamReader,
    target: &SchemaRef,
    whole: bool,
) -> PyResult<RecordBatch> {
    let source = reader.schema();
    let target: SchemaRef = if whole {
        Arc::clone(target)
    } else {
        let fields: Vec<_> = target
            .fields()
            .iter()
            .filter(|f| source.field_with_name(f.name()).is_ok())
            .cloned()
            .collect();
        Arc::new(strata_sql::datafusion::arrow::datatypes::Schema::new(
            fields,
        ))
    };
    let mut batches = Vec::new();
    for b in reader {
        let b = b.map_err(|e| InvalidArgumentError::new_err(format!("reading the data: {e}")))?;
        batches.push(conform(&b, &target)?);
    }
    concat_batches(&target, &batches).map_err(|e| crate::Error::new_err(e.to_string()))
}

/// A table scan as an Arrow stream.
struct ScanReader {
    scan: TableScan,
    schema: SchemaRef,
}

impl Iterator for ScanReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.scan
            .next()
            .map(|r| r.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl RecordBatchReader for ScanReader {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}
