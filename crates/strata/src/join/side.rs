//! One input of a join: a table, its join column and the columns the
//! output takes from it, read as tuples.
//!
//! A tuple is the join value in the primary-key encoding (ordered bytes:
//! sorting tuples by it sorts by value, hashing it hashes the value) and
//! the output columns as an index payload (`index::codec`). Nulls never
//! join, so rows with a null join value make no tuple.

use std::ops::Bound;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::index::codec::{decode_payload, encode_payload};
use crate::index::{Consistency, Index};
use crate::key::SeqNo;
use crate::options::ReadOptions;
use crate::table::keycodec::{self, KeyDecoder};
use crate::table::{ColumnType, ScanOptions, Table, Value, array_to_values};

/// Rows a scan hands over at a time.
const SCAN_BATCH: usize = 4096;

/// One side of a join.
pub(crate) struct Side {
    pub table: Table,
    /// The join column (schema position) and its type.
    pub column: usize,
    pub ty: ColumnType,
    /// The output columns (schema positions) and their types.
    pub cols: Vec<usize>,
    pub types: Vec<ColumnType>,
    /// The index to use (by name) instead of the best one.
    pub preferred: Option<String>,
}

impl Side {
    pub(crate) fn new(table: Table, column: &str, cols: Vec<usize>) -> Result<Side> {
        let schema = table.schema();
        let c = schema.index_of(column)?;
        let ty = schema.columns()[c].ty;
        let types = cols.iter().map(|&i| schema.columns()[i].ty).collect();
        Ok(Side {
            column: c,
            ty,
            cols,
            types,
            table,
            preferred: None,
        })
    }

    pub(crate) fn name(&self) -> &str {
        self.table.name()
    }

    /// Whether the join column is the table's whole primary key, so that
    /// a scan yields tuples in join order and a lookup is a point read.
    pub(crate) fn is_primary(&self) -> bool {
        self.table.schema().key_indices() == [self.column]
    }

    /// The built index on the join column that serves this side best: a
    /// synchronous one covering the output columns first.
    pub(crate) fn index(&self) -> Option<Arc<Index>> {
        let set = self.table.index_set();
        if let Some(name) = &self.preferred {
            return set
                .find(name)
                .ok()
                .filter(|i| i.column == self.column && !i.is_building())
                .cloned();
        }
        let mut best: Option<(u8, Arc<Index>)> = None;
        for i in &set.indexes {
            if i.column != self.column || i.is_building() {
                continue;
            }
            let score = u8::from(i.consistency == Consistency::Synchronous) * 2
                + u8::from(self.covered_by(i));
            if best.as_ref().is_none_or(|(s, _)| score > *s) {
                best = Some((score, Arc::clone(i)));
            }
        }
        best.map(|(_, i)| i)
    }

    /// Whether `index`'s entries hold every output column.
    pub(crate) fn covered_by(&self, index: &Index) -> bool {
        let schema = self.table.schema();
        self.cols
            .iter()
            .all(|&c| schema.is_key(c) || c == index.column || index.covering.contains(&c))
    }

    /// The payload of the output columns of a row given as values.
    pub(crate) fn row_bytes(&self, values: &[Value]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let pairs: Vec<_> = self
            .types
            .iter()
            .copied()
            .zip(values.iter().map(Some))
            .collect();
        encode_payload(&mut out, &pairs)?;
        Ok(out)
    }

    /// The output columns of a tuple's row.
    pub(crate) fn decode(&self, row: &[u8]) -> Result<Vec<Value>> {
        decode_payload(row, &self.types).ok_or_else(|| {
            Error::corruption(
                self.table.name(),
                0,
                "malformed join tuple (a damaged spill file or index payload)",
            )
        })
    }

    /// The encoded join value of `v` (`None` for null, which never joins).
    pub(crate) fn key_of(&self, v: &Value) -> Result<Option<Vec<u8>>> {
        if v.is_null() {
            return Ok(None);
        }
        let mut k = Vec::new();
        keycodec::encode_value(&mut k, self.ty, v)?;
        Ok(Some(k))
    }

    /// Every tuple of the table at `snapshot`, in primary-key order.
    pub(crate) fn scan(&self, snapshot: SeqNo) -> Result<SideScan<'_>> {
        let schema = self.table.schema();
        let mut scan_cols = vec![self.column];
        for &c in &self.cols {
            if !scan_cols.contains(&c) {
                scan_cols.push(c);
            }
        }
        let at: Vec<usize> = self
            .cols
            .iter()
            .map(|c| scan_cols.iter().position(|x| x == c).unwrap_or(0))
            .collect();
        let opts = ScanOptions {
            columns: Some(
                scan_cols
                    .iter()
                    .map(|&c| schema.columns()[c].name.clone())
                    .collect(),
            ),
            snapshot: Some(snapshot),
            batch_rows: SCAN_BATCH,
            ..ScanOptions::default()
        };
        Ok(SideScan {
            side: self,
            scan: self.table.scan(opts)?,
            scan_cols,
            at,
            columns: Vec::new(),
            next: 0,
            rows: 0,
            row: Vec::new(),
        })
    }

    /// The rows (output payloads) whose join value has encoding `key`,
    /// read through the primary key (`index` `None`) or through `index`.
    pub(crate) fn lookup(
        &self,
        key: &[u8],
        index: Option<&Index>,
        snapshot: SeqNo,
        out: &mut Vec<Vec<u8>>,
    ) -> Result<()> {
        match index {
            None => {
                // A single-column primary key's encoding is the value's.
                if let Some(row) = self.table.get_encoded(key, &self.cols, Some(snapshot))? {
                    out.push(self.row_bytes(&row)?);
                }
            }
            Some(index) => {
                let mut d = KeyDecoder::new(key);
                let v = d.value(self.ty)?;
                let hits = crate::index::lookup::hits(
                    index,
                    &Bound::Included(v.clone()),
                    &Bound::Included(v),
                    Some(snapshot),
                )?;
                for row in crate::index::lookup::resolve(
                    &self.table,
                    index,
                    hits,
                    &self.cols,
                    Some(snapshot),
                )? {
                    out.push(self.row_bytes(&row)?);
                }
            }
        }
        Ok(())
    }

    /// Every tuple in join-value order, by walking `index` (each value's
    /// rows in primary-key order).
    pub(crate) fn walk_index<'a>(
        &'a self,
        index: &'a Index,
        snapshot: SeqNo,
    ) -> Result<IndexWalk<'a>> {
        let mut it = index.keyspace.iter(ReadOptions {
            snapshot: Some(snapshot),
            ..ReadOptions::default()
        })?;
        it.seek_to_first();
        Ok(IndexWalk {
            side: self,
            index,
            snapshot,
            it,
            group: Vec::new(),
            ready: std::collections::VecDeque::new(),
        })
    }
}

/// A pull-based stream of tuples (join value, row payload).
pub(crate) trait TupleStream {
    fn next_tuple(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>>;
}

impl TupleStream for crate::join::spill::SpillReader {
    fn next_tuple(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.next_record()
    }
}

/// A side's tuples from a table scan.
pub(crate) struct SideScan<'a> {
    side: &'a Side,
    scan: crate::table::TableScan,
    scan_cols: Vec<usize>,
    at: Vec<usize>,
    columns: Vec<Vec<Value>>,
    next: usize,
    /// Rows read so far (with null join values).
    pub rows: u64,
    row: Vec<Value>,
}

impl TupleStream for SideScan<'_> {
    fn next_tuple(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        loop {
            if self.columns.first().is_none_or(|c| self.next >= c.len()) {
                let Some(batch) = self.scan.next().transpose()? else {
                    return Ok(None);
                };
                let schema = self.side.table.schema();
                self.columns = self
                    .scan_cols
                    .iter()
                    .zip(batch.columns())
                    .map(|(&c, a)| array_to_values(a.as_ref(), schema.columns()[c].ty))
                    .collect::<Result<Vec<_>>>()?;
                self.next = 0;
                continue;
            }
            let r = self.next;
            self.next += 1;
            self.rows += 1;
            let Some(key) = self.side.key_of(&self.columns[0][r])? else {
                continue;
            };
            // The key is encoded already, so the values can be moved out
            // (an output column that is also the join column included).
            self.row.clear();
            for &p in &self.at {
                self.row
                    .push(std::mem::replace(&mut self.columns[p][r], Value::Null));
            }
            return Ok(Some((key, self.side.row_bytes(&self.row)?)));
        }
    }
}

/// A side's tuples in join-value order from an index.
pub(crate) struct IndexWalk<'a> {
    side: &'a Side,
    index: &'a Index,
    snapshot: SeqNo,
    it: crate::db_iter::DbIter,
    group: Vec<crate::index::lookup::Hit>,
    ready: std::collections::VecDeque<(Vec<u8>, Vec<u8>)>,
}

impl IndexWalk<'_> {
    /// Resolves the gathered entries of one value into tuples.
    fn resolve_group(&mut self) -> Result<()> {
        if self.group.is_empty() {
            return Ok(());
        }
        let key = self.group[0].key.clone();
        let rows = crate::index::lookup::resolve(
            &self.side.table,
            self.index,
            std::mem::take(&mut self.group),
            &self.side.cols,
            Some(self.snapshot),
        )?;
        for row in rows {
            self.ready
                .push_back((key.clone(), self.side.row_bytes(&row)?));
        }
        Ok(())
    }
}

impl TupleStream for IndexWalk<'_> {
    fn next_tuple(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        loop {
            if let Some(t) = self.ready.pop_front() {
                return Ok(Some(t));
            }
            if !self.it.valid() {
                self.it.status()?;
                if self.group.is_empty() {
                    return Ok(None);
                }
                self.resolve_group()?;
                continue;
            }
            let mut hits = Vec::new();
            crate::index::lookup::entry_hits(
                self.index,
                self.it.key(),
                self.it.value(),
                &mut hits,
            )?;
            self.it.next();
            for h in hits {
                if self.group.first().is_some_and(|g| g.key != h.key) {
                    self.resolve_group()?;
                }
                self.group.push(h);
            }
        }
    }
}
