//! Equality and range lookups through an index.
//!
//! A lookup reads the index's entries for a range of values (one get for an
//! equality on an eager or lazy index, a key range otherwise) and then
//! resolves them to rows. Under validation each primary key is checked
//! against the table: the row must exist and still hold the value the entry
//! was made for, else the entry is stale and dropped. Under synchronous
//! consistency entries are the truth, and a covering index answers from its
//! payloads alone when they hold every wanted column.

use std::ops::Bound;

use super::codec;
use super::{Consistency, Index, IndexKind};
use crate::error::{Error, Result};
use crate::key::SeqNo;
use crate::options::ReadOptions;
use crate::table::keycodec::{self, KeyDecoder};
use crate::table::{Schema, Table, Value};

/// One index entry: the row's primary key, the value it was made for
/// (encoded and decoded) and its payload.
#[derive(Clone, Debug)]
pub(crate) struct Hit {
    pub pk: Vec<u8>,
    pub key: Vec<u8>,
    pub value: Value,
    pub payload: Vec<u8>,
}

fn corrupt(index: &Index, what: &str) -> Error {
    Error::corruption(
        index.keyspace.name(),
        0,
        format!("index {:?}: malformed {what}", index.name),
    )
}

/// A lookup value's encoding as the index stores it.
fn encode(index: &Index, v: &Value) -> Result<Vec<u8>> {
    if v.is_null() {
        return Err(Error::InvalidArgument(
            "index lookups compare with values, not null (nulls are not indexed)".into(),
        ));
    }
    let v = v.clone().coerce(index.ty, &index.name)?;
    let mut out = Vec::new();
    keycodec::encode_value(&mut out, index.ty, &v)?;
    Ok(out)
}

/// An encoded key range `[lo, hi)`, open where `None`.
type KeyRange = (Option<Vec<u8>>, Option<Vec<u8>>);

/// The encoded key range `[lo, hi)` of the values within the bounds;
/// `None` when the range is empty.
fn key_range(
    index: &Index,
    lower: &Bound<Value>,
    upper: &Bound<Value>,
) -> Result<Option<KeyRange>> {
    let enc = |v: &Value| encode(index, v);
    // Encodings are prefix-free, so the successor of a value's encoding
    // lies above it and at or below every greater value's.
    let lo = match lower {
        Bound::Unbounded => None,
        Bound::Included(v) => Some(enc(v)?),
        Bound::Excluded(v) => match keycodec::prefix_successor(&enc(v)?) {
            Some(s) => Some(s),
            None => return Ok(None),
        },
    };
    let hi = match upper {
        Bound::Unbounded => None,
        Bound::Included(v) => keycodec::prefix_successor(&enc(v)?),
        Bound::Excluded(v) => Some(enc(v)?),
    };
    if let (Some(l), Some(h)) = (&lo, &hi)
        && l >= h
    {
        return Ok(None);
    }
    Ok(Some((lo, hi)))
}

/// An iterator over the stored entries of the values within the bounds,
/// at `snapshot`, at the first of them; `None` when the range is empty.
fn range_iter(
    index: &Index,
    lower: &Bound<Value>,
    upper: &Bound<Value>,
    snapshot: Option<SeqNo>,
) -> Result<Option<crate::db_iter::DbIter>> {
    let Some((lo, hi)) = key_range(index, lower, upper)? else {
        return Ok(None);
    };
    let mut it = index.keyspace.iter(ReadOptions {
        snapshot,
        lower_bound: lo.clone(),
        upper_bound: hi,
    })?;
    match &lo {
        Some(l) => it.seek(l),
        None => it.seek_to_first(),
    }
    Ok(Some(it))
}

/// The entries of `index` whose values lie within the bounds, at
/// `snapshot`, in index order.
pub(crate) fn hits(
    index: &Index,
    lower: &Bound<Value>,
    upper: &Bound<Value>,
    snapshot: Option<SeqNo>,
) -> Result<Vec<Hit>> {
    let mut out = Vec::new();
    // An equality on a posting-list index is one get, which the Bloom
    // filters serve.
    if index.kind != IndexKind::Composite
        && let (Bound::Included(a), Bound::Included(b)) = (lower, upper)
    {
        let key = encode(index, a)?;
        if key == encode(index, b)? {
            if let Some(list) = index.keyspace.get_at_seqno(&key, snapshot)? {
                let v = a.clone().coerce(index.ty, &index.name)?;
                push_postings(index, &key, &v, &list, (0, usize::MAX), &mut out)?;
            }
            return Ok(out);
        }
    }
    let Some(mut it) = range_iter(index, lower, upper, snapshot)? else {
        return Ok(Vec::new());
    };
    while it.valid() {
        entry_hits(index, it.key(), it.value(), &mut out)?;
        it.next();
    }
    it.status()?;
    Ok(out)
}

/// Calls `f` with the entries of `index` for value `v` at `snapshot`, at
/// most `part` at a time and in index order, until `f` returns false;
/// whether they all went. A value's posting list is decoded a part at a
/// time, so a caller holds one part of a skewed value, not all of it.
pub(crate) fn for_each_hit_part(
    index: &Index,
    v: &Value,
    snapshot: Option<SeqNo>,
    part: usize,
    f: &mut dyn FnMut(Vec<Hit>) -> Result<bool>,
) -> Result<bool> {
    let part = part.max(1);
    if index.kind != IndexKind::Composite {
        let key = encode(index, v)?;
        let Some(list) = index.keyspace.get_at_seqno(&key, snapshot)? else {
            return Ok(true);
        };
        let v = v.clone().coerce(index.ty, &index.name)?;
        let mut at = Some(0);
        while let Some(from) = at {
            let mut out = Vec::new();
            at = push_postings(index, &key, &v, &list, (from, part), &mut out)?;
            if !out.is_empty() && !f(out)? {
                return Ok(false);
            }
        }
        return Ok(true);
    }
    let one = Bound::Included(v.clone());
    let Some(mut it) = range_iter(index, &one, &one, snapshot)? else {
        return Ok(true);
    };
    let mut out = Vec::new();
    while it.valid() {
        entry_hits(index, it.key(), it.value(), &mut out)?;
        if out.len() >= part && !f(std::mem::take(&mut out))? {
            return Ok(false);
        }
        it.next();
    }
    it.status()?;
    Ok(out.is_empty() || f(out)?)
}

/// Adds the entries one stored index key and value hold to `out`.
pub(crate) fn entry_hits(
    index: &Index,
    key: &[u8],
    value: &[u8],
    out: &mut Vec<Hit>,
) -> Result<()> {
    entry_hits_part(index, key, value, 0, usize::MAX, out).map(|_| ())
}

/// Adds at most `max` of the entries one stored index key and value hold
/// to `out`, from byte `from` of a posting list (0, or an offset this
/// returned): the offset to go on from, or `None` when the stored entry is
/// done. A composite entry is one hit.
pub(crate) fn entry_hits_part(
    index: &Index,
    key: &[u8],
    value: &[u8],
    from: usize,
    max: usize,
    out: &mut Vec<Hit>,
) -> Result<Option<usize>> {
    match index.kind {
        IndexKind::Eager | IndexKind::Lazy => {
            let mut d = KeyDecoder::new(key);
            let v = d.value(index.ty).map_err(|_| corrupt(index, "key"))?;
            if !d.is_done() {
                return Err(corrupt(index, "key"));
            }
            push_postings(index, key, &v, value, (from, max), out)
        }
        IndexKind::Composite => {
            let (v, pk) =
                codec::split_composite(key, index.ty).ok_or_else(|| corrupt(index, "key"))?;
            let vlen = key.len() - pk.len();
            out.push(Hit {
                pk: pk.to_vec(),
                key: key[..vlen].to_vec(),
                value: v,
                payload: value.to_vec(),
            });
            Ok(None)
        }
    }
}

/// Adds a posting list's entries (for value `v`, encoded `key`) to `out`:
/// at most `part.1` of them from byte `part.0`; where to go on from, as
/// [`codec::for_each_posting_from`] says.
fn push_postings(
    index: &Index,
    key: &[u8],
    v: &Value,
    list: &[u8],
    (from, max): (usize, usize),
    out: &mut Vec<Hit>,
) -> Result<Option<usize>> {
    codec::for_each_posting_from(list, from, max, |pk, payload| {
        out.push(Hit {
            pk: pk.to_vec(),
            key: key.to_vec(),
            value: v.clone(),
            payload: payload.to_vec(),
        });
    })
    .ok_or_else(|| corrupt(index, "posting list"))
}

/// Rows found through an index: the projected columns of each, in
/// primary-key order.
pub(crate) fn resolve(
    table: &Table,
    index: &Index,
    mut hits: Vec<Hit>,
    projection: &[usize],
    snapshot: Option<SeqNo>,
) -> Result<Vec<Vec<Value>>> {
    let schema = table.schema();
    hits.sort_by(|a, b| a.pk.cmp(&b.pk).then_with(|| a.key.cmp(&b.key)));
    hits.dedup_by(|a, b| a.pk == b.pk && a.key == b.key);
    let covered = index.covered_types(schema);
    let from_entry = index.consistency == Consistency::Synchronous
        && projection
            .iter()
            .all(|&c| schema.is_key(c) || index.entry_holds(schema, c));
    let mut rows = Vec::with_capacity(hits.len());
    if from_entry {
        for h in hits {
            rows.push(row_from_entry(schema, index, &covered, &h, projection)?);
        }
        return Ok(rows);
    }
    // Read the table, with the indexed column first when validating.
    let validate = index.consistency == Consistency::Validation;
    let mut cols = Vec::with_capacity(projection.len() + 1);
    if validate {
        cols.push(index.column);
    }
    cols.extend_from_slice(projection);
    let mut current = Vec::new();
    let pks: Vec<&[u8]> = hits.iter().map(|h| h.pk.as_slice()).collect();
    table.get_many_encoded(&pks, &cols, snapshot, &mut |n, row| {
        let Some(mut row) = row else {
            return Ok(());
        };
        if validate {
            let v = row.remove(0);
            current.clear();
            if v.is_null() {
                return Ok(());
            }
            keycodec::encode_value(&mut current, index.ty, &v)?;
            if current != hits[n].key {
                return Ok(());
            }
        }
        rows.push(row);
        Ok(())
    })?;
    Ok(rows)
}

/// A row built from a synchronous index entry alone.
fn row_from_entry(
    schema: &Schema,
    index: &Index,
    covered: &[crate::table::ColumnType],
    hit: &Hit,
    projection: &[usize],
) -> Result<Vec<Value>> {
    let key = keycodec::decode_key(schema, &hit.pk)?;
    let payload = if index.covering.is_empty() {
        Vec::new()
    } else {
        codec::decode_payload(&hit.payload, covered).ok_or_else(|| corrupt(index, "payload"))?
    };
    Ok(projection
        .iter()
        .map(|&c| {
            if let Some(slot) = schema.key_indices().iter().position(|&k| k == c) {
                key[slot].clone()
            } else if c == index.column {
                hit.value.clone()
            } else {
                let p = index.covering.iter().position(|&x| x == c).unwrap_or(0);
                payload.get(p).cloned().unwrap_or(Value::Null)
            }
        })
        .collect())
}
