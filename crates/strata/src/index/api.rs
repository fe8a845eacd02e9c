//! The index methods of [`Table`]: create, drop, describe and look up.

use std::ops::Bound;
use std::sync::Arc;

use arrow_array::RecordBatch;

use super::{Index, IndexRecord, IndexSet, IndexSpec, build, check_spec, lookup};
use crate::error::{Error, Result};
use crate::key::SeqNo;
use crate::table::arrowio::rows_to_batch;
use crate::table::{Table, Value};

/// What an index lookup asks for: a range of the indexed column's values,
/// at the latest state or at a snapshot.
#[derive(Clone, Debug)]
pub struct IndexQuery {
    /// Lower bound on the indexed value.
    pub lower: Bound<Value>,
    /// Upper bound on the indexed value.
    pub upper: Bound<Value>,
    /// Read at this sequence number instead of the latest state; a
    /// snapshot at it must be live when the lookup runs, as for
    /// [`ScanOptions::snapshot`](crate::table::ScanOptions::snapshot).
    pub snapshot: Option<SeqNo>,
}

impl IndexQuery {
    /// Rows whose indexed value equals `v`.
    pub fn eq(v: impl Into<Value>) -> IndexQuery {
        let v = v.into();
        IndexQuery {
            lower: Bound::Included(v.clone()),
            upper: Bound::Included(v),
            snapshot: None,
        }
    }

    /// Rows whose indexed value lies within the bounds.
    pub fn range(lower: Bound<Value>, upper: Bound<Value>) -> IndexQuery {
        IndexQuery {
            lower,
            upper,
            snapshot: None,
        }
    }

    /// The same query at `snapshot`.
    pub fn at(mut self, snapshot: &crate::db::Snapshot) -> IndexQuery {
        self.snapshot = Some(snapshot.seqno());
        self
    }
}

/// An index's definition and what it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexDescription {
    /// The definition.
    pub spec: IndexSpec,
    /// Whether the index is still being built over existing rows (an
    /// interrupted build resumes when `create_index` is called again with
    /// the same definition).
    pub building: bool,
    /// Distinct indexed values.
    pub values: u64,
    /// Entries (primary keys) over all values; under validation this
    /// counts stale entries too.
    pub entries: u64,
    /// Bytes of the index's files on disk.
    pub bytes: u64,
}

impl Table {
    /// The table's open indexes.
    pub(crate) fn index_set(&self) -> Arc<IndexSet> {
        Arc::clone(&self.inner().indexes.read())
    }

    /// Creates an index and builds it over the rows the table holds (see
    /// [`Table::create_index_with_progress`]).
    pub fn create_index(&self, spec: IndexSpec) -> Result<IndexDescription> {
        self.create_index_with_progress(spec, &mut |_| {})
    }

    /// Creates an index; calls `progress` with the rows indexed so far as
    /// it builds. Writes continue during the build (each waits for at most
    /// one chunk of it). Calling it again with the definition of an index
    /// whose build was interrupted (by a crash) resumes the build.
    pub fn create_index_with_progress(
        &self,
        spec: IndexSpec,
        progress: &mut dyn FnMut(u64),
    ) -> Result<IndexDescription> {
        self.core().check_writable("create an index")?;
        let inner = self.inner();
        let existing = self.index_set().find(&spec.name).ok().cloned();
        let index = match existing {
            Some(index) => {
                let record = inner
                    .record()
                    .indexes
                    .into_iter()
                    .find(|r| r.name == spec.name);
                if !index.is_building()
                    || record.map(|r| r.spec()).transpose()? != Some(spec.clone())
                {
                    return Err(Error::InvalidArgument(format!(
                        "the table has an index named {:?} already",
                        spec.name
                    )));
                }
                index
            }
            None => {
                // Hold the set's write lock while the index joins it, so
                // that every write after this one maintains the index.
                let mut set = inner.indexes.write();
                let mut added = None;
                let record = inner.update_record(|r| {
                    check_spec(&spec, self.schema(), &r.indexes)?;
                    let id = r
                        .indexes
                        .iter()
                        .map(|i| i.id)
                        .max()
                        .unwrap_or(0)
                        .max(r.next_index)
                        .checked_add(1)
                        .ok_or_else(|| {
                            Error::InvalidArgument(format!(
                                "table {:?} has had as many indexes as it can number",
                                r.name
                            ))
                        })?;
                    r.next_index = id;
                    let rec = IndexRecord {
                        id,
                        name: spec.name.clone(),
                        column: spec.column.clone(),
                        kind: spec.kind.name().to_string(),
                        consistency: spec.consistency.name().to_string(),
                        covering: spec.covering.clone(),
                        building: true,
                        complete_at: 0,
                    };
                    r.indexes.push(rec.clone());
                    added = Some(rec);
                    Ok(())
                })?;
                let rec = added
                    .ok_or_else(|| Error::InvalidArgument("internal: no index record".into()))?;
                let index = Arc::new(Index::open(
                    self.core(),
                    record.id,
                    self.schema(),
                    &rec,
                    super::keyspace_options(&record.options),
                )?);
                let mut next: Vec<Arc<Index>> = set.indexes.clone();
                next.push(Arc::clone(&index));
                *set = Arc::new(IndexSet { indexes: next });
                index
            }
        };
        build::build(self, &index, progress)?;
        // Every row's entry is written by now: a snapshot from here on
        // finds every row through the index.
        let complete_at = inner.keyspace.last_seqno();
        inner.update_record(|r| {
            if let Some(rec) = r.indexes.iter_mut().find(|i| i.id == index.id) {
                rec.building = false;
                rec.complete_at = complete_at.0;
            }
            Ok(())
        })?;
        index.set_built(complete_at);
        self.describe_index(&spec.name)
    }

    /// Drops an index and deletes its entries.
    pub fn drop_index(&self, name: &str) -> Result<()> {
        self.core().check_writable("drop an index")?;
        let inner = self.inner();
        let mut set = inner.indexes.write();
        let index = Arc::clone(set.find(name)?);
        inner.update_record(|r| {
            r.indexes.retain(|i| i.id != index.id);
            Ok(())
        })?;
        let next: Vec<Arc<Index>> = set
            .indexes
            .iter()
            .filter(|i| i.id != index.id)
            .cloned()
            .collect();
        *set = Arc::new(IndexSet { indexes: next });
        drop(set);
        self.core().drop_keyspace(index.keyspace.name())
    }

    /// The definitions of the table's indexes, in creation order.
    pub fn indexes(&self) -> Vec<IndexSpec> {
        self.inner()
            .record()
            .indexes
            .iter()
            .filter_map(|r| r.spec().ok())
            .collect()
    }

    /// An index's definition, state, entry counts and size (the counts
    /// read the whole index).
    pub fn describe_index(&self, name: &str) -> Result<IndexDescription> {
        let set = self.index_set();
        let index = set.find(name)?;
        let spec = self
            .inner()
            .record()
            .indexes
            .iter()
            .find(|r| r.id == index.id)
            .map(|r| r.spec())
            .transpose()?
            .ok_or_else(|| {
                Error::InvalidArgument(format!("the table has no index named {name:?}"))
            })?;
        let hits = lookup::hits(index, &Bound::Unbounded, &Bound::Unbounded, None)?;
        let mut values = 0u64;
        let mut last: Option<&[u8]> = None;
        for h in &hits {
            if last != Some(h.key.as_slice()) {
                values += 1;
                last = Some(&h.key);
            }
        }
        let sv = index.keyspace.super_version()?;
        let bytes = sv.version.all_files().map(|(_, f)| f.size).sum();
        Ok(IndexDescription {
            spec,
            building: index.is_building(),
            values,
            entries: hits.len() as u64,
            bytes,
        })
    }

    /// The rows whose value of an index's column lies in `query`'s range:
    /// the named columns (`None`: every column), in primary-key order, as
    /// one batch.
    pub fn lookup(
        &self,
        index: &str,
        query: IndexQuery,
        columns: Option<&[&str]>,
    ) -> Result<RecordBatch> {
        let rows = self.lookup_rows(index, &query, columns)?;
        let schema = self.schema();
        let projection = schema.projection(columns)?;
        let columns: Vec<_> = projection
            .iter()
            .enumerate()
            .map(|(p, &c)| (p, schema.columns()[c].ty))
            .collect();
        rows_to_batch(schema.arrow_projection(&projection), &columns, &rows)
    }

    /// [`Table::lookup`] as rows of values.
    pub fn lookup_rows(
        &self,
        index: &str,
        query: &IndexQuery,
        columns: Option<&[&str]>,
    ) -> Result<Vec<Vec<Value>>> {
        self.inner().check_live()?;
        // The index and then the table are read at one sequence number; a
        // registered snapshot keeps the versions it sees while a flush or
        // compaction runs between the two reads (a bare number did not: a
        // flush could drop a row's version there, and the table read then
        // found an older one, or none; found in review, 2026-12-01).
        let held = match query.snapshot {
            Some(s) => self.core().hold_snapshot(s)?,
            None => self.core().snapshot(),
        };
        let snapshot = held.seqno();
        // The set is taken after the snapshot: an index dropped before it
        // is then not in the set, and one dropped after it was maintained
        // by every write the snapshot sees.
        let set = self.index_set();
        let index = set.find(index)?;
        index.check_serves(snapshot)?;
        let projection = self.schema().projection(columns)?;
        let snapshot = Some(snapshot);
        let hits = lookup::hits(index, &query.lower, &query.upper, snapshot)?;
        lookup::resolve(self, index, hits, &projection, snapshot)
    }
}
