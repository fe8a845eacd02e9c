//! Python values and Arrow data to Strata's, and back.
//!
//! Tables store seven types (i32, i64, f64, bool, utf8, binary,
//! timestamp[us]). Arrow data from Python often arrives in a wider family:
//! polars sends `large_string` or `string_view`, pandas categoricals are
//! dictionaries, numpy gives `int16` and `float32`, timestamps come in
//! seconds or nanoseconds and with time zones. Each is cast to the stored
//! type (timestamps finer than microseconds are truncated to them); a value
//! that does not fit (an overflow) is an error, and a type of another kind
//! (a double into an integer column, text into a number) is refused by
//! name.

use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyBool, PyBytes, PyFloat, PyInt, PyString};
use strata::table::{Column, ColumnType, Schema, Value};
use strata_sql::datafusion::arrow::array::{ArrayRef, RecordBatch};
use strata_sql::datafusion::arrow::compute::{CastOptions, cast_with_options};
use strata_sql::datafusion::arrow::datatypes::{DataType, Schema as ArrowSchema, SchemaRef};

use crate::{InvalidArgumentError, engine_err};

/// The stored type an Arrow type is kept as, if one holds every value.
pub(crate) fn stored_type(t: &DataType) -> Option<ColumnType> {
    use DataType::*;
    Some(match t {
        Int8 | Int16 | Int32 | UInt8 | UInt16 => ColumnType::Int32,
        Int64 | UInt32 => ColumnType::Int64,
        Float16 | Float32 | Float64 => ColumnType::Float64,
        Boolean => ColumnType::Bool,
        Utf8 | LargeUtf8 | Utf8View => ColumnType::Utf8,
        Binary | LargeBinary | BinaryView | FixedSizeBinary(_) => ColumnType::Binary,
        Timestamp(_, _) => ColumnType::Timestamp,
        Dictionary(_, values) => return stored_type(values),
        _ => return None,
    })
}

/// A table schema for Arrow data: every column's stored type, the key
/// columns not nullable (Arrow marks every column nullable by default).
pub(crate) fn table_schema(src: &ArrowSchema, primary_key: &[String]) -> PyResult<Schema> {
    let columns = src
        .fields()
        .iter()
        .map(|f| {
            let ty = stored_type(f.data_type()).ok_or_else(|| {
                InvalidArgumentError::new_err(format!(
                    "column {:?} has Arrow type {}, which tables do not store \
                     (integers, floats, bool, strings, binary, timestamps)",
                    f.name(),
                    f.data_type()
                ))
            })?;
            let key = primary_key.iter().any(|k| k == f.name());
            Ok(if key || !f.is_nullable() {
                Column::new(f.name().clone(), ty)
            } else {
                Column::nullable(f.name().clone(), ty)
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let key: Vec<&str> = primary_key.iter().map(String::as_str).collect();
    Schema::new(columns, &key).map_err(engine_err)
}

/// `batch` with the columns of `target`, by name and in its order, each
/// cast to the target's type. A missing column is null (refused by the
/// table if it is not nullable); an extra column, or a value the cast
/// would change (an overflow, a lost fraction), is an error.
pub(crate) fn conform(batch: &RecordBatch, target: &SchemaRef) -> PyResult<RecordBatch> {
    let src = batch.schema();
    for (i, f) in src.fields().iter().enumerate() {
        // Columns are matched by name: a second column of a name would be
        // dropped unsaid (found in review, 2026-12-01).
        if src.fields()[..i].iter().any(|g| g.name() == f.name()) {
            return Err(InvalidArgumentError::new_err(format!(
                "column {:?} is given twice",
                f.name()
            )));
        }
        if target.field_with_name(f.name()).is_err() {
            return Err(InvalidArgumentError::new_err(format!(
                "column {:?} is not a column of the table",
                f.name()
            )));
        }
    }
    // `safe: false`: a value that does not fit is an error, not a null.
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    let columns = target
        .fields()
        .iter()
        .map(|f| {
            let Ok(i) = src.index_of(f.name()) else {
                return Ok(strata_sql::datafusion::arrow::array::new_null_array(
                    f.data_type(),
                    batch.num_rows(),
                ));
            };
            let from = batch.column(i);
            let ok = ColumnType::from_arrow(f.data_type())
                .is_some_and(|to| widens(from.data_type(), to));
            if !ok {
                return Err(InvalidArgumentError::new_err(format!(
                    "column {:?}: Arrow type {} cannot be stored as {}",
                    f.name(),
                    from.data_type(),
                    f.data_type()
                )));
            }
            let cast =
                cast_with_options(from, &without_zone(f.data_type()), &strict).map_err(|e| {
                    InvalidArgumentError::new_err(format!("column {:?}: {e}", f.name()))
                })?;
            exact_doubles(from, &cast, f.name())?;
            Ok(cast)
        })
        .collect::<PyResult<Vec<_>>>()?;
    RecordBatch::try_new(Arc::clone(target), columns)
        .map_err(|e| InvalidArgumentError::new_err(e.to_string()))
}

/// Whether data of Arrow type `from` may go into a column of type `to`:
/// its stored type is `to`, or integers into another integer width (an
/// overflow is then an error) or into a double (an integer the double
/// cannot hold exactly is then an error, [`exact_doubles`]), or a column of
/// nulls alone (pyarrow's type for `[None]`, and pandas' for a column of
/// `None`) into any column. A double into an integer column, text into
/// numbers and the like are refused rather than converted.
fn widens(from: &DataType, to: ColumnType) -> bool {
    use ColumnType::{Float64, Int32, Int64};
    if *from == DataType::Null {
        return true;
    }
    match (stored_type(from), to) {
        (Some(t), to) if t == to => true,
        (Some(Int32 | Int64), Int32 | Int64 | Float64) => true,
        _ => false,
    }
}

/// Refuses integers that a cast to doubles changed: Arrow's cast rounds
/// 2^53 + 1 to 2^53 without an error even when it must not lose data.
fn exact_doubles(from: &ArrayRef, cast: &ArrayRef, column: &str) -> PyResult<()> {
    use strata_sql::datafusion::arrow::array::{Array, Float64Array, Int64Array};
    let (Some(ints), Some(doubles)) = (
        from.as_any().downcast_ref::<Int64Array>(),
        cast.as_any().downcast_ref::<Float64Array>(),
    ) else {
        return Ok(());
    };
    for i in 0..ints.len() {
        if ints.is_valid(i) {
            let (x, d) = (ints.value(i), doubles.value(i));
            // (`d as i64` saturates: 2^63 would pass for i64::MAX.)
            if d as i64 != x || x == i64::MAX {
                return Err(InvalidArgumentError::new_err(format!(
                    "column {column:?}: {x} has no exact double"
                )));
            }
        }
    }
    Ok(())
}

fn without_zone(t: &DataType) -> DataType {
    match t {
        DataType::Timestamp(unit, _) => DataType::Timestamp(*unit, None),
        other => other.clone(),
    }
}

/// A numpy integer (by its `__index__`) or boolean scalar as a value;
/// `None` for anything else.
fn numpy_scalar(ob: &Bound<'_, PyAny>) -> PyResult<Option<Value>> {
    let ty = ob.get_type();
    if ty.module()? != "numpy" {
        return Ok(None);
    }
    if ty.name()?.to_string().starts_with("bool") {
        return Ok(Some(Value::Bool(ob.is_truthy()?)));
    }
    if ob.hasattr("__index__")? {
        return Ok(Some(Value::Int64(ob.call_method0("__index__")?.extract()?)));
    }
    Ok(None)
}

/// A Python value as the value of column `column` of type `ty`.
pub(crate) fn to_value(ob: &Bound<'_, PyAny>, ty: ColumnType, column: &str) -> PyResult<Value> {
    let v = if ob.is_none() {
        Value::Null
    } else if ob.is_instance_of::<PyBool>() {
        Value::Bool(ob.extract()?)
    } else if ob.is_instance_of::<PyInt>() {
        Value::Int64(ob.extract()?)
    } else if ob.is_instance_of::<PyFloat>() {
        Value::Float64(ob.extract()?)
    } else if ob.is_instance_of::<PyString>() {
        Value::Utf8(ob.extract()?)
    } else if ob.is_instance_of::<PyBytes>() {
        Value::Binary(ob.extract()?)
    } else if let Some(micros) = datetime_micros(ob)? {
        Value::Timestamp(micros)
    } else if let Some(v) = numpy_scalar(ob)? {
        // numpy's integers and booleans (what pandas hands back from a
        // frame) are no Python ints or bools; its floats are floats.
        v
    } else {
        return Err(PyTypeError::new_err(format!(
            "column {column:?}: cannot store a Python {}",
            ob.get_type().name()?
        )));
    };
    v.coerce(ty, column).map_err(engine_err)
}

/// Microseconds since the epoch of a `datetime.datetime` (naive ones are
/// taken as UTC, as pyarrow does), or `None` for anything else.
fn datetime_micros(ob: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    let py = ob.py();
    let datetime = py.import("datetime")?;
    if !ob.is_instance(&datetime.getattr("datetime")?)? {
        return Ok(None);
    }
    let utc = datetime.getattr("timezone")?.getattr("utc")?;
    let aware = if ob.getattr("tzinfo")?.is_none() {
        ob.call_method("replace", (), Some(&[("tzinfo", &utc)].into_py_dict(py)?))?
    } else {
        ob.clone()
    };
    let epoch = datetime
        .getattr("datetime")?
        .call1((1970, 1, 1, 0, 0, 0, 0, &utc))?;
    let delta = aware.call_method1("__sub__", (epoch,))?;
    let days: i64 = delta.getattr("days")?.extract()?;
    let seconds: i64 = delta.getattr("seconds")?.extract()?;
    let micros: i64 = delta.getattr("microseconds")?.extract()?;
    Ok(Some(days * 86_400_000_000 + seconds * 1_000_000 + micros))
}

/// A stored value as a Python object (timestamps as naive UTC
/// `datetime.datetime`, as pyarrow gives them).
pub(crate) fn to_python<'py>(py: Python<'py>, v: Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Int32(x) => x.into_pyobject(py)?.into_any(),
        Value::Int64(x) => x.into_pyobject(py)?.into_any(),
        Value::Float64(x) => x.into_pyobject(py)?.into_any(),
        Value::Bool(x) => PyBool::new(py, x).to_owned().into_any(),
        Value::Utf8(x) => PyString::new(py, &x).into_any(),
        Value::Binary(x) => PyBytes::new(py, &x).into_any(),
        Value::Timestamp(us) => {
            let datetime = py.import("datetime")?;
            let epoch = datetime.getattr("datetime")?.call1((1970, 1, 1))?;
            let delta = datetime
                .getattr("timedelta")?
                .call((), Some(&[("microseconds", us)].into_py_dict(py)?))?;
            epoch.call_method1("__add__", (delta,))?
        }
    })
}
