//! Table scans that read through an index.
//!
//! A scan whose predicate requires an indexed column to equal a value (or
//! one of a list, `IN`) can find its rows through the index instead of
//! reading the whole table. [`choose`] picks such an index from the
//! predicate's conjuncts (pure); [`run`] reads the index's entries for the
//! values and gives up, returning `None`, as soon as they pass a share of
//! the table's rows, when a full scan is the cheaper plan. Otherwise it
//! reads the rows (one batched point read each, validated where the index
//! asks for it), applies the whole predicate and the key bounds, and
//! returns the rows in key order as batches.

use std::ops::Bound as RangeBound;
use std::sync::Arc;

use arrow_array::RecordBatch;

use super::lookup::{self, Hit};
use super::{Index, IndexSet};
use crate::error::Result;
use crate::key::SeqNo;
use crate::table::arrowio::{rows_to_batch, value_to_cell};
use crate::table::predicate::Bound;
use crate::table::{ColumnType, Predicate, Table, Value};

/// The share of a table's rows past which a scan reads the table instead
/// of the index: an index read costs a point read per row, a scan a
/// fraction of a block read per row.
pub(crate) const MAX_INDEX_SHARE: f64 = 0.05;

/// The values an equality or `IN` conjunct of `p` requires of `column`.
fn required_values(p: &Predicate, column: &str) -> Option<Vec<Value>> {
    match p {
        Predicate::Cmp {
            column: c,
            op: crate::table::CmpOp::Eq,
            value,
        } if c == column => Some(vec![value.clone()]),
        Predicate::In { column: c, values } if c == column => Some(values.clone()),
        Predicate::And(ps) => ps.iter().find_map(|q| required_values(q, column)),
        _ => None,
    }
}

/// The built index a scan at `snapshot` with predicate `p` can read
/// through, with the values it must look up: the first index (in creation
/// order) that serves the snapshot and whose column an equality or `IN`
/// conjunct constrains.
pub(crate) fn choose(
    set: &IndexSet,
    table: &Table,
    p: &Predicate,
    snapshot: SeqNo,
) -> Option<(Arc<Index>, Vec<Value>)> {
    set.indexes
        .iter()
        .filter(|i| i.serves(snapshot))
        .find_map(|i| {
            let name = &table.schema().columns()[i.column].name;
            required_values(p, name).map(|v| (Arc::clone(i), v))
        })
}

/// What an index scan needs of the scan it replaces.
pub(crate) struct IndexScanSpec<'a> {
    /// The columns returned (schema positions).
    pub projection: &'a [usize],
    /// The whole predicate, bound.
    pub predicate: &'a Bound,
    /// Encoded key bounds: `[lower, upper)`.
    pub lower: Option<&'a [u8]>,
    pub upper: Option<&'a [u8]>,
    pub snapshot: SeqNo,
    pub batch_rows: usize,
    /// At most this many entries are read before the scan gives up.
    pub max_entries: usize,
}

/// The scan's result batches and the rows it read, or `None` when the
/// values have more entries than `max_entries`.
pub(crate) fn run(
    table: &Table,
    index: &Index,
    values: &[Value],
    spec: &IndexScanSpec<'_>,
) -> Result<Option<(Vec<RecordBatch>, u64)>> {
    let mut hits: Vec<Hit> = Vec::new();
    for v in values {
        let v = match v {
            Value::Null => continue,
            // Text from the CLI parses as the column's type, as the scan's
            // own predicate does.
            Value::Utf8(s) if !matches!(index.ty, ColumnType::Utf8 | ColumnType::Binary) => {
                Value::parse(s, index.ty)?
            }
            v => v.clone(),
        };
        let b = RangeBound::Included(v);
        hits.extend(lookup::hits(index, &b, &b, Some(spec.snapshot))?);
        if hits.len() > spec.max_entries {
            return Ok(None);
        }
    }
    hits.retain(|h| {
        spec.lower.is_none_or(|l| h.pk.as_slice() >= l)
            && spec.upper.is_none_or(|u| h.pk.as_slice() < u)
    });
    // The columns read: the projection, then the predicate's others.
    let mut cols: Vec<usize> = spec.projection.to_vec();
    let mut pred_cols = Vec::new();
    spec.predicate.columns(&mut pred_cols);
    for c in pred_cols {
        if !cols.contains(&c) {
            cols.push(c);
        }
    }
    let rows = lookup::resolve(table, index, hits, &cols, Some(spec.snapshot))?;
    let read = rows.len() as u64;
    let kept: Vec<Vec<Value>> = rows
        .into_iter()
        .filter(|row| {
            let cell = |c: usize| {
                let p = cols.iter().position(|&x| x == c).unwrap_or(0);
                value_to_cell(&row[p])
            };
            spec.predicate.eval(&cell) == Some(true)
        })
        .collect();
    let schema = table.schema();
    let arrow = schema.arrow_projection(spec.projection);
    let columns: Vec<_> = spec
        .projection
        .iter()
        .enumerate()
        .map(|(p, &c)| (p, schema.columns()[c].ty))
        .collect();
    let batches = kept
        .chunks(spec.batch_rows.max(1))
        .map(|chunk| rows_to_batch(Arc::clone(&arrow), &columns, chunk))
        .collect::<Result<Vec<_>>>()?;
    Ok(Some((batches, read)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::CmpOp;

    #[test]
    fn equality_and_in_conjuncts_name_values_and_others_do_not() {
        let eq = Predicate::cmp("a", CmpOp::Eq, 3);
        assert_eq!(required_values(&eq, "a"), Some(vec![Value::Int32(3)]));
        assert_eq!(required_values(&eq, "b"), None);
        let both = Predicate::cmp("b", CmpOp::Gt, 1).and(Predicate::In {
            column: "a".into(),
            values: vec![1.into(), 2.into()],
        });
        assert_eq!(required_values(&both, "a").map(|v| v.len()), Some(2));
        let or = Predicate::cmp("a", CmpOp::Eq, 3).or(Predicate::cmp("b", CmpOp::Eq, 1));
        assert_eq!(required_values(&or, "a"), None);
        assert_eq!(
            required_values(&Predicate::cmp("a", CmpOp::Ge, 3), "a"),
            None
        );
    }
}
