//! The index entries a table write adds and removes.
//!
//! A table write describes each row it touches as a [`RowChange`]; this
//! module turns the changes into index writes in the same write batch.
//! Under synchronous consistency it first reads the row's old indexed and
//! covered values (from earlier changes of the same batch when there are
//! any, else from the table) and removes the entry they made; under
//! validation it only adds. Eager indexes gather every change to one
//! value's posting list and rewrite the list once per batch.

use std::collections::{BTreeMap, HashMap};

use super::codec;
use super::{Index, IndexKind, IndexSet};
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::table::keycodec;
use crate::table::{Schema, Value};

/// What a table write does to one row.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RowOp {
    /// The whole row is written: `values` holds every relevant column.
    Put,
    /// A partial update: `values` holds the columns it sets.
    Update,
    /// The row is deleted.
    Delete,
}

/// One row a table write touches: its encoded primary key, what happens to
/// it, and the values it writes of the columns indexes read (schema
/// position, value).
#[derive(Clone, Debug)]
pub(crate) struct RowChange {
    pub pk: Vec<u8>,
    pub op: RowOp,
    pub values: Vec<(usize, Value)>,
}

/// Reads the named columns (schema positions) of the row with an encoded
/// primary key: `None` when there is no row.
pub(crate) type ReadRow<'a> = dyn Fn(&[u8], &[usize]) -> Result<Option<Vec<Value>>> + 'a;

/// The entry a row makes in an index: encoded value and payload; `None`
/// when the indexed value is null (nulls are not indexed).
fn entry_of(
    index: &Index,
    schema: &Schema,
    relevant: &[usize],
    row: &[Value],
) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
    let at = |c: usize| relevant.iter().position(|&r| r == c).map(|p| &row[p]);
    let Some(v) = at(index.column).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let mut key = Vec::new();
    keycodec::encode_value(&mut key, index.ty, v)?;
    let mut payload = Vec::new();
    let covered: Vec<_> = index
        .covering
        .iter()
        .map(|&c| (schema.columns()[c].ty, at(c)))
        .collect();
    codec::encode_payload(&mut payload, &covered)?;
    Ok(Some((key, payload)))
}

/// The relevant columns of a row after a write, given the row before
/// (`None`: no row) and the change.
fn after(
    schema: &Schema,
    relevant: &[usize],
    old: Option<&[Value]>,
    change: &RowChange,
) -> Result<Option<Vec<Value>>> {
    let set = |row: &mut Vec<Value>| {
        for (c, v) in &change.values {
            if let Some(p) = relevant.iter().position(|r| r == c) {
                row[p] = v.clone();
            }
        }
    };
    Ok(match change.op {
        RowOp::Delete => None,
        RowOp::Put => {
            let mut row = key_filled(schema, relevant, &change.pk)?;
            set(&mut row);
            Some(row)
        }
        // An update of a missing row changes nothing (it reads as no row).
        RowOp::Update => old.map(|o| {
            let mut row = o.to_vec();
            set(&mut row);
            row
        }),
    })
}

/// A row of the relevant columns with key columns filled from `pk` and the
/// others null.
fn key_filled(schema: &Schema, relevant: &[usize], pk: &[u8]) -> Result<Vec<Value>> {
    let mut row = vec![Value::Null; relevant.len()];
    if relevant.iter().any(|&c| schema.is_key(c)) {
        let key = keycodec::decode_key(schema, pk)?;
        for (p, &c) in relevant.iter().enumerate() {
            if let Some(slot) = schema.key_indices().iter().position(|&k| k == c) {
                row[p] = key[slot].clone();
            }
        }
    }
    Ok(row)
}

/// An eager index's changes in one batch: per encoded value, the primary
/// keys changed, in order.
type ListChanges = BTreeMap<Vec<u8>, Vec<(Vec<u8>, EntryOp)>>;

/// One change to one index entry.
enum EntryOp {
    Add(Vec<u8>, Vec<u8>),
    Remove(Vec<u8>),
}

/// Adds to `wb` the index writes of `changes` for every index of `set`.
/// The caller holds the table's index lock when [`IndexSet::needs_lock`].
pub(crate) fn maintain(
    set: &IndexSet,
    schema: &Schema,
    changes: &[RowChange],
    read_row: &ReadRow<'_>,
    wb: &mut WriteBatch,
) -> Result<()> {
    if set.is_empty() {
        return Ok(());
    }
    let relevant = set.relevant_columns();
    let reads_old = set.indexes.iter().any(|i| i.reads_old_rows());
    // Rows as earlier changes of this batch left them.
    let mut overlay: HashMap<&[u8], Option<Vec<Value>>> = HashMap::new();
    // Eager indexes: per index, per encoded value, the changes in order.
    let mut eager: Vec<ListChanges> = set.indexes.iter().map(|_| BTreeMap::new()).collect();
    for change in changes {
        let old: Option<Option<Vec<Value>>> = if reads_old {
            Some(match overlay.get(change.pk.as_slice()) {
                Some(row) => row.clone(),
                None => read_row(&change.pk, &relevant)?,
            })
        } else {
            None
        };
        let new = match &old {
            Some(o) => after(schema, &relevant, o.as_deref(), change)?,
            None if change.op == RowOp::Put => after(schema, &relevant, None, change)?,
            None => None,
        };
        for (n, index) in set.indexes.iter().enumerate() {
            let ops = entry_ops(
                index,
                schema,
                &relevant,
                change,
                old.as_ref(),
                new.as_deref(),
            )?;
            for op in ops {
                emit(index, &change.pk, op, &mut eager[n], wb);
            }
        }
        if reads_old {
            overlay.insert(&change.pk, new);
        }
    }
    for (index, lists) in set.indexes.iter().zip(eager) {
        rewrite_posting_lists(index, lists, wb)?;
    }
    Ok(())
}

/// The entry changes one row change makes in `index`. `old` is known
/// (`Some`) when some index of the set reads old rows; `new` is the row
/// after the change when it is known.
fn entry_ops(
    index: &Index,
    schema: &Schema,
    relevant: &[usize],
    change: &RowChange,
    old: Option<&Option<Vec<Value>>>,
    new: Option<&[Value]>,
) -> Result<Vec<EntryOp>> {
    let new_entry = match new {
        Some(row) => entry_of(index, schema, relevant, row)?,
        None => None,
    };
    if index.reads_old_rows() {
        let old = old.ok_or_else(|| {
            Error::InvalidArgument("internal: a synchronous index without the old row".into())
        })?;
        let old_entry = match old {
            Some(row) => entry_of(index, schema, relevant, row)?,
            None => None,
        };
        if old_entry == new_entry {
            return Ok(Vec::new());
        }
        let mut ops = Vec::new();
        if let Some((old_key, _)) = &old_entry
            && new_entry.as_ref().map(|(k, _)| k) != Some(old_key)
        {
            ops.push(EntryOp::Remove(old_key.clone()));
        }
        if let Some((k, p)) = new_entry {
            ops.push(EntryOp::Add(k, p));
        }
        return Ok(ops);
    }
    // Validation: blind adds only, for whole rows and for updates that set
    // the indexed column; lookups drop what turned stale.
    Ok(match change.op {
        RowOp::Put => new_entry
            .map(|(k, p)| EntryOp::Add(k, p))
            .into_iter()
            .collect(),
        RowOp::Update => match change.values.iter().find(|(c, _)| *c == index.column) {
            None => Vec::new(),
            // Another index read the old row: the new row is known (and
            // `None` when the update found no row).
            Some(_) if old.is_some() => new_entry
                .map(|(k, p)| EntryOp::Add(k, p))
                .into_iter()
                .collect(),
            Some((_, v)) if v.is_null() => Vec::new(),
            Some(_) => {
                // The rest of the row is unknown: covered values this write
                // does not set are written as null (validated lookups read
                // them from the table).
                let mut row = key_filled(schema, relevant, &change.pk)?;
                for (c, v) in &change.values {
                    if let Some(p) = relevant.iter().position(|r| r == c) {
                        row[p] = v.clone();
                    }
                }
                entry_of(index, schema, relevant, &row)?
                    .map(|(k, p)| EntryOp::Add(k, p))
                    .into_iter()
                    .collect()
            }
        },
        RowOp::Delete => Vec::new(),
    })
}

/// Writes one entry change: lazy and composite indexes straight into the
/// batch, eager ones into the per-value list of changes.
fn emit(index: &Index, pk: &[u8], op: EntryOp, eager: &mut ListChanges, wb: &mut WriteBatch) {
    let ks = index.keyspace.id();
    match index.kind {
        IndexKind::Eager => {
            let key = match &op {
                EntryOp::Add(k, _) | EntryOp::Remove(k) => k.clone(),
            };
            eager.entry(key).or_default().push((pk.to_vec(), op));
        }
        IndexKind::Lazy => match op {
            EntryOp::Add(k, p) => wb.merge_in(ks, &k, &codec::add_operand(pk, &p)),
            EntryOp::Remove(k) => wb.merge_in(ks, &k, &codec::remove_operand(pk)),
        },
        IndexKind::Composite => match op {
            EntryOp::Add(mut k, p) => {
                k.extend_from_slice(pk);
                wb.put_in(ks, &k, &p);
            }
            EntryOp::Remove(mut k) => {
                k.extend_from_slice(pk);
                wb.delete_in(ks, &k);
            }
        },
    }
}

/// Reads each changed posting list of an eager index, applies the changes
/// and writes it back (deleted when it becomes empty).
fn rewrite_posting_lists(index: &Index, lists: ListChanges, wb: &mut WriteBatch) -> Result<()> {
    let ks = index.keyspace.id();
    for (key, ops) in lists {
        let mut postings = match index.keyspace.get(&key)? {
            Some(v) => codec::decode_postings(&v).ok_or_else(|| {
                Error::corruption(
                    index.keyspace.name(),
                    0,
                    format!("malformed posting list in index {:?}", index.name),
                )
            })?,
            None => codec::Postings::new(),
        };
        for (pk, op) in ops {
            match op {
                EntryOp::Add(_, payload) => {
                    postings.insert(pk, payload);
                }
                EntryOp::Remove(_) => {
                    postings.remove(&pk);
                }
            }
        }
        if postings.is_empty() {
            wb.delete_in(ks, &key);
        } else {
            let mut v = Vec::new();
            codec::encode_postings(&mut v, &postings);
            wb.put_in(ks, &key, &v);
        }
    }
    Ok(())
}

/// Adds to `wb` the entries of `rows` (encoded primary key and the values
/// of `relevant`, the index's columns) in `index`: an index build's adds.
pub(crate) fn add_rows(
    index: &Index,
    schema: &Schema,
    relevant: &[usize],
    rows: &[(Vec<u8>, Vec<Value>)],
    wb: &mut WriteBatch,
) -> Result<()> {
    let mut eager = BTreeMap::new();
    for (pk, row) in rows {
        if let Some((k, p)) = entry_of(index, schema, relevant, row)? {
            emit(index, pk, EntryOp::Add(k, p), &mut eager, wb);
        }
    }
    rewrite_posting_lists(index, eager, wb)
}
