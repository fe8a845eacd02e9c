//! Table writes: rows from Arrow batches (or plain values) encoded as keys
//! and row pieces into one write batch.
//!
//! An insert or upsert writes a `Put` of every value column; a partial
//! update a `Merge` of the columns it sets (LASER's partial rows); a delete
//! a tombstone. Everything one call writes goes into one [`WriteBatch`], so
//! it is atomic and recovered from the log like any other write.

use std::borrow::Cow;
use std::collections::HashSet;

use arrow_array::RecordBatch;

use super::arrowio::{ColumnReader, cell_to_value, value_to_cell};
use super::keycodec::{encode_bytes, encode_f64, encode_i32, encode_i64};
use super::piece::{Cell, PieceEncoder, PieceSchema};
use super::schema::{ColumnType, Schema};
use super::value::Value;
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::ids::KeyspaceId;
use crate::index::maintain::{RowChange, RowOp};

/// Appends the key part of `cell` (of key column type `ty`).
pub(crate) fn encode_key_cell(out: &mut Vec<u8>, ty: ColumnType, cell: Cell<'_>) -> Result<()> {
    match (ty, cell) {
        (_, Cell::Null) => {
            return Err(Error::InvalidArgument("a key column cannot be null".into()));
        }
        (ColumnType::Int32, Cell::Int32(x)) => encode_i32(out, x),
        (ColumnType::Int64 | ColumnType::Timestamp, Cell::Int64(x)) => encode_i64(out, x),
        (ColumnType::Float64, Cell::Float64(x)) => encode_f64(out, x),
        (ColumnType::Bool, Cell::Bool(b)) => out.push(u8::from(b)),
        (ColumnType::Utf8 | ColumnType::Binary, Cell::Bytes(b)) => encode_bytes(out, b),
        (ty, c) => {
            return Err(Error::InvalidArgument(format!(
                "key value {c:?} is not of the key column's type {ty}"
            )));
        }
    }
    Ok(())
}

/// The batch's columns in schema order (`None` where the batch lacks one);
/// unknown column names are an error.
fn match_columns<'a>(
    schema: &Schema,
    batch: &'a RecordBatch,
) -> Result<Vec<Option<ColumnReader<'a>>>> {
    let mut out: Vec<Option<ColumnReader<'a>>> =
        (0..schema.columns().len()).map(|_| None).collect();
    for (field, array) in batch.schema().fields().iter().zip(batch.columns()) {
        let i = schema.index_of(field.name()).map_err(|_| {
            Error::InvalidArgument(format!(
                "the batch has a column {:?}, which the table does not have",
                field.name()
            ))
        })?;
        if out[i].is_some() {
            return Err(Error::InvalidArgument(format!(
                "the batch names column {:?} twice",
                field.name()
            )));
        }
        out[i] = Some(ColumnReader::new(array.as_ref(), &schema.columns()[i])?);
    }
    Ok(out)
}

fn key_of(
    schema: &Schema,
    cols: &[Option<ColumnReader<'_>>],
    row: usize,
    out: &mut Vec<u8>,
) -> Result<()> {
    out.clear();
    for &k in schema.key_indices() {
        let c = &schema.columns()[k];
        let reader = cols[k].as_ref().ok_or_else(|| {
            Error::InvalidArgument(format!("the batch lacks key column {:?}", c.name))
        })?;
        encode_key_cell(out, c.ty, reader.cell(row))?;
    }
    Ok(())
}

/// The largest encoded row (or update) a table takes: a column-group block
/// holds every version of a key, and blocks are limited to 64 MiB.
pub const MAX_ROW_BYTES: usize = 16 << 20;

fn check_size(piece: &[u8]) -> Result<()> {
    if piece.len() > MAX_ROW_BYTES {
        return Err(Error::InvalidArgument(format!(
            "a row of {} bytes exceeds the table row limit of {MAX_ROW_BYTES} bytes",
            piece.len()
        )));
    }
    Ok(())
}

/// Adds whole rows (`Put`s) for every row of `batch`, which must have every
/// column of the table. Returns the encoded keys.
pub(crate) fn put_rows(
    schema: &Schema,
    pieces: &PieceSchema,
    ks: KeyspaceId,
    batch: &RecordBatch,
    wb: &mut WriteBatch,
) -> Result<Vec<Vec<u8>>> {
    let cols = match_columns(schema, batch)?;
    if let Some(missing) = cols.iter().position(Option::is_none) {
        return Err(Error::InvalidArgument(format!(
            "the batch lacks column {:?}; inserts give every column (nulls where allowed)",
            schema.columns()[missing].name
        )));
    }
    let mut enc = PieceEncoder::new(pieces);
    let mut keys = Vec::with_capacity(batch.num_rows());
    let (mut key, mut value) = (Vec::new(), Vec::new());
    for row in 0..batch.num_rows() {
        key_of(schema, &cols, row, &mut key)?;
        enc.clear();
        for (v, &i) in schema.value_indices().iter().enumerate() {
            if let Some(r) = &cols[i] {
                enc.push(pieces, v, r.cell(row));
            }
        }
        value.clear();
        enc.finish(pieces, &mut value);
        check_size(&value)?;
        wb.put_in(ks, &key, &value);
        keys.push(key.clone());
    }
    Ok(keys)
}

/// Adds partial updates (`Merge`s) for every row of `batch`: its key
/// columns name the row, its other columns are set. Returns the updated
/// value columns.
pub(crate) fn update_rows(
    schema: &Schema,
    pieces: &PieceSchema,
    ks: KeyspaceId,
    batch: &RecordBatch,
    wb: &mut WriteBatch,
) -> Result<Vec<usize>> {
    let cols = match_columns(schema, batch)?;
    let set: Vec<usize> = schema
        .value_indices()
        .iter()
        .enumerate()
        .filter(|(_, i)| cols[**i].is_some())
        .map(|(v, _)| v)
        .collect();
    if set.is_empty() {
        return Err(Error::InvalidArgument(
            "an update sets at least one column besides the key".into(),
        ));
    }
    let mut enc = PieceEncoder::new(pieces);
    let (mut key, mut value) = (Vec::new(), Vec::new());
    for row in 0..batch.num_rows() {
        key_of(schema, &cols, row, &mut key)?;
        enc.clear();
        for &v in &set {
            if let Some(r) = &cols[schema.value_indices()[v]] {
                enc.push(pieces, v, r.cell(row));
            }
        }
        value.clear();
        enc.finish(pieces, &mut value);
        check_size(&value)?;
        wb.merge_in(ks, &key, &value);
    }
    Ok(set)
}

/// Adds tombstones for the keys in `batch` (its key columns). Its other
/// columns are checked as any write's are (the table's, of their types)
/// and then not read: a batch that does not fit the table is refused.
pub(crate) fn delete_rows(
    schema: &Schema,
    ks: KeyspaceId,
    batch: &RecordBatch,
    wb: &mut WriteBatch,
) -> Result<()> {
    let cols = match_columns(schema, batch)?;
    let mut key = Vec::new();
    for row in 0..batch.num_rows() {
        key_of(schema, &cols, row, &mut key)?;
        wb.delete_in(ks, &key);
    }
    Ok(())
}

/// Encodes a plain row (every column, in schema order) as key and piece.
pub(crate) fn encode_row(
    schema: &Schema,
    pieces: &PieceSchema,
    row: &[Value],
) -> Result<(Vec<u8>, Vec<u8>)> {
    if row.len() != schema.columns().len() {
        return Err(Error::InvalidArgument(format!(
            "the table has {} columns; the row gives {} values",
            schema.columns().len(),
            row.len()
        )));
    }
    // Values of their column's type (nearly all) are borrowed, not cloned:
    // one insert is a few hundred nanoseconds of encoding, and copying its
    // values through a collected `Result` cost as much again.
    let mut coerced: Vec<Cow<'_, Value>> = Vec::with_capacity(row.len());
    for (v, c) in row.iter().zip(schema.columns()) {
        if v.is_null() && !c.nullable {
            return Err(Error::NotNull {
                column: c.name.clone(),
                detail: None,
            });
        }
        coerced.push(if v.is_null() || v.column_type() == Some(c.ty) {
            Cow::Borrowed(v)
        } else {
            Cow::Owned(v.clone().coerce(c.ty, &c.name)?)
        });
    }
    let mut key = Vec::new();
    for &k in schema.key_indices() {
        encode_key_cell(&mut key, schema.columns()[k].ty, value_to_cell(&coerced[k]))?;
    }
    let mut enc = PieceEncoder::new(pieces);
    for (v, &i) in schema.value_indices().iter().enumerate() {
        enc.push(pieces, v, value_to_cell(&coerced[i]));
    }
    let mut piece = Vec::new();
    enc.finish(pieces, &mut piece);
    check_size(&piece)?;
    Ok((key, piece))
}

/// Encodes a partial update of the named columns; returns the piece and
/// the value columns it sets.
pub(crate) fn encode_update(
    schema: &Schema,
    pieces: &PieceSchema,
    set: &[(&str, Value)],
) -> Result<(Vec<u8>, Vec<usize>)> {
    let mut cols: Vec<(usize, Value)> = Vec::with_capacity(set.len());
    let mut seen = HashSet::new();
    for (name, v) in set {
        let i = schema.index_of(name)?;
        let c = &schema.columns()[i];
        let Some(vn) = schema.value_number(i) else {
            return Err(Error::InvalidArgument(format!(
                "column {name:?} is part of the key; updates set value columns (delete and \
                 insert to change a key)"
            )));
        };
        if !seen.insert(vn) {
            return Err(Error::InvalidArgument(format!(
                "column {name:?} is set twice"
            )));
        }
        if v.is_null() && !c.nullable {
            return Err(Error::NotNull {
                column: c.name.clone(),
                detail: None,
            });
        }
        cols.push((vn, v.clone().coerce(c.ty, &c.name)?));
    }
    if cols.is_empty() {
        return Err(Error::InvalidArgument(
            "an update sets at least one column".into(),
        ));
    }
    cols.sort_by_key(|(v, _)| *v);
    let mut enc = PieceEncoder::new(pieces);
    for (v, val) in &cols {
        enc.push(pieces, *v, value_to_cell(val));
    }
    let mut piece = Vec::new();
    enc.finish(pieces, &mut piece);
    check_size(&piece)?;
    Ok((piece, cols.iter().map(|(v, _)| *v).collect()))
}

/// The rows `batch` touches, as index maintenance sees them: each row's
/// encoded key and its values of the `relevant` columns the batch holds.
pub(crate) fn row_changes(
    schema: &Schema,
    batch: &RecordBatch,
    op: RowOp,
    relevant: &[usize],
) -> Result<Vec<RowChange>> {
    let cols = match_columns(schema, batch)?;
    let mut out = Vec::with_capacity(batch.num_rows());
    let mut key = Vec::new();
    for row in 0..batch.num_rows() {
        key_of(schema, &cols, row, &mut key)?;
        let values = if op == RowOp::Delete {
            Vec::new()
        } else {
            relevant
                .iter()
                .filter(|&&c| !schema.is_key(c))
                .filter_map(|&c| {
                    cols[c]
                        .as_ref()
                        .map(|r| (c, cell_to_value(r.cell(row), schema.columns()[c].ty)))
                })
                .collect()
        };
        out.push(RowChange {
            pk: key.clone(),
            op: op.clone(),
            values,
        });
    }
    Ok(out)
}
