//! Tables whose layout changes as data ages (seed 001, LASER).
//!
//! A table is a schema (typed columns, a primary key) over its own
//! keyspace. Rows are written as row pieces keyed by their encoded primary
//! key; the keyspace's layout stores whole rows in the memtables and level
//! 0 and, level by level below, splits the value columns into column groups
//! — each its own sorted run, in column-group files with typed column
//! vectors — as the table's [`TableLayout`] says.
//!
//! ```text
//!   Table (mod.rs) ── write.rs ─────────────► WriteBatch ─► core write path
//!      │              get.rs ──┐
//!      │              scan.rs ─┴► view.rs (resolve columns) ─► SuperVersion
//!      │                                       memtables, level 0 (sst),
//!      │                                       column-group runs (cgfile/)
//!      ├─ catalog.rs   durable definitions (__catalog keyspace)
//!      ├─ seam.rs      the keyspace's Layout: groups, formats, reducer
//!      ├─ reduce.rs    which versions flush and compaction keep
//!      ├─ stats.rs ─► cost.rs ─► advisor/      workload, cost model, advice
//!      └─ schema.rs, keycodec.rs, piece.rs, layout.rs, predicate.rs
//! ```
//!
//! ```
//! use strata::table::{Column, ColumnType, Schema, TableOptions, Value};
//! # let dir = tempfile::tempdir()?;
//! let db = strata::Db::open(dir.path(), strata::Options::default())?;
//! let schema = Schema::new(
//!     vec![
//!         Column::new("id", ColumnType::Int64),
//!         Column::nullable("name", ColumnType::Utf8),
//!         Column::new("score", ColumnType::Int32),
//!     ],
//!     &["id"],
//! )?;
//! let t = db.create_table("users", schema, TableOptions::with_layout("row-then-column:2"))?;
//! t.insert_row(&[Value::Int64(1), "ada".into(), Value::Int32(36)])?;
//! t.update_row(&[Value::Int64(1)], &[("score", Value::Int32(37))])?;
//! let row = t.get(&[Value::Int64(1)], Some(&["score"]))?;
//! assert_eq!(row, Some(vec![Value::Int32(37)]));
//! let batches: Vec<_> = t.scan(Default::default())?.collect::<Result<_, _>>()?;
//! assert_eq!(batches[0].num_rows(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod advisor;
pub(crate) mod arrowio;
mod auto;
pub(crate) mod catalog;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod cgfile;
#[cfg(not(feature = "testing"))]
mod cgfile;
/// Cleanup's probe of column-group files' owners, for [`crate::Db::open`].
pub(crate) use self::cgfile::meta::OWNER_PROBE as CG_OWNER_PROBE;
pub mod cost;
mod describe;
mod get;
pub mod keycodec;
pub mod layout;
mod options;
pub mod piece;
pub mod predicate;
mod reduce;
mod scan;
pub mod schema;
mod seam;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod shape;
#[cfg(not(feature = "testing"))]
mod shape;
mod stats;
#[allow(clippy::module_inception)]
mod table;
pub mod value;
mod view;
mod write;

use std::ops::Bound as RangeBound;
use std::sync::Arc;

use arrow_array::RecordBatch;

pub use arrowio::{array_to_values, values_to_array};
pub use describe::{
    GroupDescription, LayoutAdvice, LevelDescription, TableDescription, TableStatistics,
};
pub use layout::TableLayout;
pub use options::TableOptions;
pub use predicate::{CmpOp, Predicate};
pub use scan::{ScanCounters, ScanOptions, TableScan};
pub use schema::{Column, ColumnType, Schema};
pub use value::Value;

use self::arrowio::cell_to_value;
use self::cost::{CostBreakdown, ModelParams, Partition};
use self::scan::{ParallelScan, ScanSpec, Scanner};
use self::stats::TableStats;
use self::table::TableInner;
use self::view::{ReadPlan, Resolver};
use crate::batch::WriteBatch;
use crate::db::{DbCore, Snapshot};
use crate::error::{Error, Result};
use crate::ids::Level;
use crate::index::maintain::{RowChange, RowOp};
use crate::options::WriteOptions;

/// A handle on one table. Cheap to clone.
#[derive(Clone)]
pub struct Table {
    inner: Arc<TableInner>,
    core: DbCore,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table").field("name", &self.name()).finish()
    }
}

/// Starts the automatic layout's thread for a database's catalog.
pub(crate) fn start_auto_layout(catalog: &Arc<catalog::Catalog>) {
    auto::start(
        catalog,
        Arc::clone(&catalog.auto_stop),
        std::time::Duration::from_millis(100),
    );
}

/// A scan's key bound, encoded: `Ok(None)` is no bound, and
/// `Ok(Some(None))` a lower bound no key lies at or past (nothing sorts
/// past every extension of a prefix of `0xff` bytes, such as an `i64` key
/// of `i64::MAX`).
fn encode_bound(
    schema: &Schema,
    b: &RangeBound<Vec<Value>>,
    upper: bool,
) -> Result<Option<Option<Vec<u8>>>> {
    let (vals, inclusive) = match b {
        RangeBound::Unbounded => return Ok(None),
        RangeBound::Included(v) => (v, true),
        RangeBound::Excluded(v) => (v, false),
    };
    let key = schema.key_indices();
    if vals.len() > key.len() || vals.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "a key bound gives 1 to {} values (a prefix of the key); {} given",
            key.len(),
            vals.len()
        )));
    }
    let mut out = Vec::new();
    for (&k, v) in key.iter().zip(vals) {
        let c = &schema.columns()[k];
        let v = v.clone().coerce(c.ty, &c.name)?;
        keycodec::encode_value(&mut out, c.ty, &v)?;
    }
    // Keys extending a prefix sort after it: an inclusive upper bound or an
    // exclusive lower bound moves past every extension.
    if inclusive == upper {
        return Ok(match keycodec::prefix_successor(&out) {
            Some(next) => Some(Some(next)),
            // Past every key: no bound above, nothing below.
            None if upper => None,
            None => Some(None),
        });
    }
    Ok(Some(Some(out)))
}

/// The error of an insert that found `key` (encoded) in table `i`.
fn duplicate_key(i: &TableInner, key: &[u8]) -> Error {
    let shown = keycodec::decode_key(&i.schema, key)
        .map(|v| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    Error::DuplicateKey {
        table: i.name.clone(),
        key: shown,
    }
}

impl Table {
    pub(crate) fn new(inner: Arc<TableInner>, core: DbCore) -> Table {
        Table { inner, core }
    }

    pub(crate) fn inner(&self) -> &TableInner {
        &self.inner
    }

    pub(crate) fn core(&self) -> &DbCore {
        &self.core
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The number the database gave the table at its creation: it stays
    /// the table's for as long as the table exists and is never given to
    /// another, so a table dropped and created again under the same name
    /// has a new one (a caller can tell its own table from another of the
    /// same name and schema by it).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// The table's schema.
    pub fn schema(&self) -> &Schema {
        &self.inner.schema
    }

    /// The table's current layout.
    pub fn layout(&self) -> TableLayout {
        self.inner.layout_state().layout.clone()
    }

    /// Writes `wb` with the index entries of the rows it touches, which
    /// `changes` describes (given the columns the indexes read); the
    /// indexes' read lock is held until the batch is written.
    fn write_indexed(
        &self,
        mut wb: WriteBatch,
        sync: bool,
        changes: impl FnOnce(&[usize]) -> Result<Vec<RowChange>>,
    ) -> Result<()> {
        let i = &self.inner;
        let set = i.indexes.read();
        if set.is_empty() {
            return self.write(wb, sync);
        }
        let _lock = set.needs_lock().then(|| i.index_lock.lock());
        let changes = changes(&set.relevant_columns())?;
        let read_row = |pk: &[u8], cols: &[usize]| self.get_encoded(pk, cols, None);
        crate::index::maintain::maintain(&set, &i.schema, &changes, &read_row, &mut wb)?;
        self.write(wb, sync)
    }

    /// The change a plain row (or partial update) makes, for the indexes:
    /// the `relevant` value columns `values` holds, coerced to their types.
    fn plain_change(
        &self,
        pk: Vec<u8>,
        op: RowOp,
        values: &[(usize, &Value)],
        relevant: &[usize],
    ) -> Result<Vec<RowChange>> {
        let schema = &self.inner.schema;
        let values = values
            .iter()
            .filter(|(c, _)| relevant.contains(c) && !schema.is_key(*c))
            .map(|&(c, v)| {
                let col = &schema.columns()[c];
                Ok((c, v.clone().coerce(col.ty, &col.name)?))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(vec![RowChange { pk, op, values }])
    }

    fn write(&self, wb: WriteBatch, sync: bool) -> Result<()> {
        self.inner.check_live()?;
        let written = self.core.write(
            WriteOptions {
                sync,
                ..Default::default()
            },
            wb,
        );
        // A drop that finished after the check above: the write found the
        // table's keyspace gone and wrote nothing; say so by the table.
        match written {
            Err(Error::InvalidArgument(_)) if self.inner.check_live().is_err() => {
                Err(Error::TableNotFound(self.inner.name().to_string()))
            }
            other => other,
        }
    }

    /// Inserts the rows of `batch` (every column of the table, by name),
    /// replacing rows with the same key.
    pub fn upsert(&self, batch: &RecordBatch) -> Result<()> {
        self.upsert_opt(batch, false)
    }

    /// [`Table::upsert`], fsynced before it returns when `sync`.
    pub fn upsert_opt(&self, batch: &RecordBatch, sync: bool) -> Result<()> {
        let mut wb = WriteBatch::new();
        let i = &self.inner;
        write::put_rows(&i.schema, &i.pieces, i.keyspace.id(), batch, &mut wb)?;
        self.write_indexed(wb, sync, |rel| {
            write::row_changes(&i.schema, batch, RowOp::Put, rel)
        })?;
        i.stats.record_inserts(batch.num_rows() as u64);
        Ok(())
    }

    /// Inserts the rows of `batch`; fails, writing nothing, if a key is
    /// already in the table or twice in the batch.
    pub fn insert(&self, batch: &RecordBatch) -> Result<()> {
        let i = &self.inner;
        let mut wb = WriteBatch::new();
        let keys = write::put_rows(&i.schema, &i.pieces, i.keyspace.id(), batch, &mut wb)?;
        let _guard = i.insert_lock.lock();
        let mut seen = std::collections::HashSet::with_capacity(keys.len());
        for k in &keys {
            if !seen.insert(k.as_slice()) || self.exists_encoded(k)? {
                return Err(duplicate_key(i, k));
            }
        }
        self.write_indexed(wb, false, |rel| {
            write::row_changes(&i.schema, batch, RowOp::Put, rel)
        })?;
        i.stats.record_inserts(keys.len() as u64);
        Ok(())
    }

    /// Inserts one row (every column, in schema order); fails if its key
    /// exists.
    pub fn insert_row(&self, row: &[Value]) -> Result<()> {
        let i = &self.inner;
        let (key, piece) = write::encode_row(&i.schema, &i.pieces, row)?;
        let _guard = i.insert_lock.lock();
        if self.exists_encoded(&key)? {
            return Err(duplicate_key(i, &key));
        }
        self.put_row(key, &piece, row)
    }

    /// Inserts or replaces one row (every column, in schema order).
    pub fn upsert_row(&self, row: &[Value]) -> Result<()> {
        let i = &self.inner;
        let (key, piece) = write::encode_row(&i.schema, &i.pieces, row)?;
        self.put_row(key, &piece, row)
    }

    /// Writes one encoded whole row (`row`: its values, for the indexes).
    fn put_row(&self, key: Vec<u8>, piece: &[u8], row: &[Value]) -> Result<()> {
        let i = &self.inner;
        let mut wb = WriteBatch::new();
        wb.put_in(i.keyspace.id(), &key, piece);
        self.write_indexed(wb, false, |rel| {
            let values: Vec<(usize, &Value)> = row.iter().enumerate().collect();
            self.plain_change(key, RowOp::Put, &values, rel)
        })?;
        i.stats.record_inserts(1);
        Ok(())
    }

    /// Sets the named columns of the row with key `key` (a partial update:
    /// only the changed columns are written). An update of a row that does
    /// not exist changes nothing (it reads as no row).
    pub fn update_row(&self, key: &[Value], set: &[(&str, Value)]) -> Result<()> {
        let i = &self.inner;
        let k = keycodec::encode_key(&i.schema, key)?;
        let (piece, cols) = write::encode_update(&i.schema, &i.pieces, set)?;
        let mut wb = WriteBatch::new();
        wb.merge_in(i.keyspace.id(), &k, &piece);
        self.write_indexed(wb, false, |rel| {
            let values = set
                .iter()
                .map(|(name, v)| Ok((i.schema.index_of(name)?, v)))
                .collect::<Result<Vec<_>>>()?;
            self.plain_change(k, RowOp::Update, &values, rel)
        })?;
        i.stats.record_updates(&cols, 1);
        Ok(())
    }

    /// Partial updates from a batch holding the key columns and the columns
    /// to set.
    pub fn update(&self, batch: &RecordBatch) -> Result<()> {
        let i = &self.inner;
        let mut wb = WriteBatch::new();
        let cols = write::update_rows(&i.schema, &i.pieces, i.keyspace.id(), batch, &mut wb)?;
        self.write_indexed(wb, false, |rel| {
            write::row_changes(&i.schema, batch, RowOp::Update, rel)
        })?;
        i.stats.record_updates(&cols, batch.num_rows() as u64);
        Ok(())
    }

    /// Deletes the row with key `key` (nothing if there is none).
    pub fn delete_row(&self, key: &[Value]) -> Result<()> {
        let i = &self.inner;
        let k = keycodec::encode_key(&i.schema, key)?;
        let mut wb = WriteBatch::new();
        wb.delete_in(i.keyspace.id(), &k);
        self.write_indexed(wb, false, |rel| {
            self.plain_change(k, RowOp::Delete, &[], rel)
        })?;
        TableStats::bump(&i.stats.deletes, 1);
        Ok(())
    }

    /// Deletes the rows whose keys a batch's key columns give (any other
    /// column it holds must be one of the table's, of its type).
    pub fn delete(&self, keys: &RecordBatch) -> Result<()> {
        let i = &self.inner;
        let mut wb = WriteBatch::new();
        write::delete_rows(&i.schema, i.keyspace.id(), keys, &mut wb)?;
        self.write_indexed(wb, false, |rel| {
            write::row_changes(&i.schema, keys, RowOp::Delete, rel)
        })?;
        TableStats::bump(&i.stats.deletes, keys.num_rows() as u64);
        Ok(())
    }

    fn read_plan(&self) -> Result<(Arc<crate::db::SuperVersion>, Arc<ReadPlan>)> {
        self.inner.check_live()?;
        let sv = self.inner.keyspace.super_version()?;
        let state = self.inner.layout_state();
        let plan = match self.inner.cached_plan(sv.version_no, &state) {
            Some(p) => p,
            None => {
                let p = Arc::new(ReadPlan::new(&sv, state));
                self.inner.cache_plan(Arc::clone(&p));
                p
            }
        };
        Ok((sv, plan))
    }

    /// Whether the table has a row with key `key` (the key columns'
    /// values, in key order). Reads no value column.
    pub fn contains(&self, key: &[Value]) -> Result<bool> {
        let k = keycodec::encode_key(&self.inner.schema, key)?;
        self.exists_encoded(&k)
    }

    fn exists_encoded(&self, key: &[u8]) -> Result<bool> {
        let (sv, plan) = self.read_plan()?;
        let mut r = Resolver::new(self.inner.pieces.len(), &[]);
        get::get(
            &sv,
            &plan,
            key,
            self.inner.keyspace.last_seqno(),
            &[],
            &mut r,
        )?;
        Ok(r.exists())
    }

    /// Reads the row with key `key` (the key columns' values, in key order):
    /// the named columns (`None`: every column, in schema order), or `None`
    /// if there is no such row. Only the column groups holding the named
    /// columns are read.
    pub fn get(&self, key: &[Value], columns: Option<&[&str]>) -> Result<Option<Vec<Value>>> {
        self.get_at_seqno(key, columns, None)
    }

    /// [`Table::get`] at `snapshot`.
    pub fn get_at(
        &self,
        key: &[Value],
        columns: Option<&[&str]>,
        snapshot: &Snapshot,
    ) -> Result<Option<Vec<Value>>> {
        self.get_at_seqno(key, columns, Some(snapshot.seqno()))
    }

    fn get_at_seqno(
        &self,
        key: &[Value],
        columns: Option<&[&str]>,
        snapshot: Option<crate::key::SeqNo>,
    ) -> Result<Option<Vec<Value>>> {
        let i = &self.inner;
        let k = keycodec::encode_key(&i.schema, key)?;
        let projection = i.schema.projection(columns)?;
        self.get_encoded(&k, &projection, snapshot)
    }

    /// The columns `projection` (schema positions) of the row with encoded
    /// key `k`, at `snapshot` (`None`: the latest).
    pub(crate) fn get_encoded(
        &self,
        k: &[u8],
        projection: &[usize],
        snapshot: Option<crate::key::SeqNo>,
    ) -> Result<Option<Vec<Value>>> {
        let mut out = None;
        self.get_many_encoded(&[k], projection, snapshot, &mut |_, row| {
            out = row;
            Ok(())
        })?;
        Ok(out)
    }

    /// Point reads of many encoded keys at one snapshot: calls `f` with
    /// each key's position and its row (`None`: no row). One read plan and
    /// one resolver serve them all (a join's lookups, an index's
    /// validation); the counters are bumped once.
    pub(crate) fn get_many_encoded(
        &self,
        keys: &[&[u8]],
        projection: &[usize],
        snapshot: Option<crate::key::SeqNo>,
        f: &mut dyn FnMut(usize, Option<Vec<Value>>) -> Result<()>,
    ) -> Result<()> {
        let i = &self.inner;
        let want: Vec<usize> = projection
            .iter()
            .filter_map(|&c| i.schema.value_number(c))
            .collect();
        let needs_key = projection.iter().any(|&c| i.schema.is_key(c));
        let (sv, plan) = self.read_plan()?;
        let snap = snapshot.unwrap_or_else(|| i.keyspace.last_seqno());
        let mut r = Resolver::new(i.pieces.len(), &want);
        let (mut files, mut blocks) = (0, 0);
        let mut per_level: Vec<(usize, u64)> = Vec::new();
        for (n, k) in keys.iter().enumerate() {
            let cost = get::get(&sv, &plan, k, snap, &want, &mut r)?;
            files += cost.files;
            blocks += cost.blocks;
            match per_level.iter_mut().find(|x| x.0 == cost.deepest) {
                Some(x) => x.1 += 1,
                None => per_level.push((cost.deepest, 1)),
            }
            if !r.exists() {
                f(n, None)?;
                continue;
            }
            let key_values = if needs_key {
                keycodec::decode_key(&i.schema, k)?
            } else {
                Vec::new()
            };
            let row = projection
                .iter()
                .map(|&c| match i.schema.value_number(c) {
                    Some(v) => cell_to_value(r.value(v), i.schema.columns()[c].ty),
                    None => {
                        let slot = i
                            .schema
                            .key_indices()
                            .iter()
                            .position(|&x| x == c)
                            .unwrap_or(0);
                        key_values.get(slot).cloned().unwrap_or(Value::Null)
                    }
                })
                .collect();
            f(n, Some(row))?;
        }
        TableStats::bump(&i.stats.gets, keys.len() as u64);
        TableStats::bump(&i.stats.get_files, files);
        TableStats::bump(&i.stats.get_blocks, blocks);
        i.stats.record_points(&per_level, &want);
        Ok(())
    }

    /// Scans rows in key order as a stream of Arrow batches.
    pub fn scan(&self, opts: ScanOptions) -> Result<TableScan> {
        let i = &self.inner;
        let names: Option<Vec<&str>> = opts
            .columns
            .as_ref()
            .map(|c| c.iter().map(String::as_str).collect());
        let projection = i.schema.projection(names.as_deref())?;
        let predicate = opts
            .predicate
            .as_ref()
            .map(|p| p.bind(&i.schema))
            .transpose()?;
        let lower = encode_bound(&i.schema, &opts.lower, false)?;
        let upper = encode_bound(&i.schema, &opts.upper, true)?.flatten();
        let (lower, upper) = match lower {
            // Nothing lies past the lower bound: the empty range [k, k).
            Some(None) => (Some(Vec::new()), Some(Vec::new())),
            lower => (lower.flatten(), upper),
        };
        // A scan through an index reads the index and then the table (a
        // point read per row) at `snap`; a registered snapshot keeps the
        // versions it sees while a flush or compaction runs in between (see
        // `lookup_rows`). A scan of the table alone reads one pinned
        // super-version and needs none.
        // A snapshot given by number is held too, until the scan has pinned
        // what it reads: the caller's may be gone already.
        let held = match opts.snapshot {
            Some(s) => Some(self.core().hold_snapshot(s)?),
            None => (opts.use_index && opts.predicate.is_some()).then(|| self.core().snapshot()),
        };
        let (sv, plan) = self.read_plan()?;
        let snap = held
            .as_ref()
            .map_or_else(|| i.keyspace.last_seqno(), |s| s.seqno());
        let mut want: Vec<usize> = projection
            .iter()
            .filter_map(|&c| i.schema.value_number(c))
            .collect();
        if let Some(p) = &predicate {
            let mut cols = Vec::new();
            p.columns(&mut cols);
            want.extend(cols.iter().filter_map(|&c| i.schema.value_number(c)));
        }
        let spec = ScanSpec {
            projection,
            predicate,
            lower,
            upper,
            snap,
            batch_rows: opts.batch_rows.max(1),
        };
        if opts.use_index
            && let (Some(p), Some(bound)) = (&opts.predicate, &spec.predicate)
            && let Some(scan) = self.scan_through_index(p, bound, &spec, &want)?
        {
            return Ok(scan);
        }
        if opts.threads > 1
            && let Some(parallel) = ParallelScan::start(&sv, &plan, &i.schema, &spec, opts.threads)?
        {
            return Ok(TableScan {
                scanner: None,
                parallel: Some(parallel),
                rows: None,
                counters: ScanCounters::default(),
                inner: Arc::clone(i),
                want,
                finished: false,
            });
        }
        let scanner = Scanner::new(sv, &plan, Arc::clone(&i.schema), spec)?;
        Ok(TableScan {
            scanner: Some(scanner),
            parallel: None,
            rows: None,
            counters: ScanCounters::default(),
            inner: Arc::clone(i),
            want,
            finished: false,
        })
    }

    /// The scan answered through an index, when its predicate requires an
    /// indexed column to equal one or a few values and their entries are a
    /// small share of the table (`index::scan`); `None` otherwise.
    fn scan_through_index(
        &self,
        p: &Predicate,
        bound: &predicate::Bound,
        spec: &ScanSpec,
        want: &[usize],
    ) -> Result<Option<TableScan>> {
        let set = self.index_set();
        let Some((index, values)) = crate::index::scan::choose(&set, self, p, spec.snap) else {
            return Ok(None);
        };
        let max_entries =
            (self.estimated_rows()? * crate::index::scan::MAX_INDEX_SHARE).max(64.0) as usize;
        let ispec = crate::index::scan::IndexScanSpec {
            projection: &spec.projection,
            predicate: bound,
            lower: spec.lower.as_deref(),
            upper: spec.upper.as_deref(),
            snapshot: spec.snap,
            batch_rows: spec.batch_rows,
            max_entries,
        };
        let Some((batches, read)) = crate::index::scan::run(self, &index, &values, &ispec)? else {
            return Ok(None);
        };
        let counters = ScanCounters {
            rows_read: read,
            rows_returned: batches.iter().map(|b| b.num_rows() as u64).sum(),
            index: Some(index.name.clone()),
            ..ScanCounters::default()
        };
        Ok(Some(TableScan {
            scanner: None,
            parallel: None,
            rows: Some(batches.into_iter()),
            counters,
            inner: Arc::clone(&self.inner),
            want: want.to_vec(),
            finished: false,
        }))
    }

    /// The table's rows, estimated from its memtables' and files' entry
    /// counts: all of level 0 and, per deeper level, the largest of its
    /// column groups' runs (each holds every row of the level). Versions
    /// and deletions count as rows.
    pub fn estimated_rows(&self) -> Result<f64> {
        let sv = self.inner.keyspace.super_version()?;
        let mut n = sv.mem.len() as f64 + sv.imms.iter().map(|m| m.len() as f64).sum::<f64>();
        for lv in 0..sv.version.num_levels() {
            let per_group: Vec<f64> = sv
                .version
                .runs(Level::from_index(lv))
                .map(|(_, files)| files.iter().map(|f| f.num_entries as f64).sum())
                .collect();
            n += if lv == 0 {
                per_group.iter().sum()
            } else {
                per_group.into_iter().fold(0.0, f64::max)
            };
        }
        Ok(n)
    }

    /// Changes the layout. It takes effect as compaction rewrites each
    /// level (groups the new layout lacks are moved into its groups); reads
    /// are correct throughout.
    pub fn set_layout(&self, layout: TableLayout) -> Result<()> {
        self.inner.set_layout(layout)?;
        TableStats::bump(&self.inner.stats.layout_changes, 1);
        Ok(())
    }

    /// The cost model's parameters for this table.
    fn model_params(&self) -> ModelParams {
        let i = &self.inner;
        let rec = i.record();
        let n = i.pieces.len();
        let column_bytes: Vec<f64> = (0..n)
            .map(|v| i.pieces.ty(v).nominal_width() as f64)
            .collect();
        let key_bytes: f64 = i
            .schema
            .key_indices()
            .iter()
            .map(|&k| i.schema.columns()[k].ty.nominal_width() as f64)
            .sum();
        let row = key_bytes + column_bytes.iter().sum::<f64>();
        ModelParams {
            columns: n,
            size_ratio: rec.options.size_ratio as f64,
            entries_per_block: (rec.options.block_size as f64 / row.max(1.0)).max(1.0),
            column_bytes,
            key_bytes,
        }
    }

    /// Runs the layout advisor (LASER's design search) on the workload the
    /// table has seen and the cost model, and returns its proposal beside
    /// the current layout, each with its predicted cost. Nothing changes.
    pub fn advise(&self) -> Result<LayoutAdvice> {
        let i = &self.inner;
        let current = self.layout();
        let n = i.pieces.len();
        let levels = current.num_levels();
        let to_partitions = |l: &TableLayout| -> Vec<Partition> {
            l.levels()
                .iter()
                .map(|g| {
                    g.iter()
                        .map(|c| c.iter().map(|&v| v as u32).collect())
                        .collect()
                })
                .collect()
        };
        if n == 0 {
            let zero = CostBreakdown::default();
            return Ok(LayoutAdvice {
                proposed: current.clone(),
                current,
                current_cost: zero,
                proposed_cost: zero,
            });
        }
        let params = self.model_params();
        let workload = i.stats.workload.lock().workload(levels);
        let current_cost: CostBreakdown =
            cost::layout_breakdown(&params, &to_partitions(&current), &workload)
                .into_iter()
                .sum();
        let advice = advisor::advise(&params, &workload, levels);
        let proposed = TableLayout::new(
            advice
                .layout
                .iter()
                .map(|p| {
                    p.iter()
                        .map(|g| g.iter().map(|&c| c as usize).collect())
                        .collect()
                })
                .collect(),
            n,
        )?;
        Ok(LayoutAdvice {
            current,
            current_cost,
            proposed,
            proposed_cost: advice.breakdown.into_iter().sum(),
        })
    }

    /// The table's counters.
    pub fn statistics(&self) -> TableStatistics {
        let s = &self.inner.stats;
        let g = TableStats::get;
        TableStatistics {
            gets: g(&s.gets),
            get_files: g(&s.get_files),
            get_blocks: g(&s.get_blocks),
            scans: g(&s.scans),
            scan_rows_read: g(&s.scan_rows_read),
            scan_rows_returned: g(&s.scan_rows_returned),
            scan_blocks_read: g(&s.scan_blocks_read),
            scan_blocks_skipped: g(&s.scan_blocks_skipped),
            rows_written: g(&s.rows_written),
            updates: g(&s.updates),
            deletes: g(&s.deletes),
            layout_changes: g(&s.layout_changes),
            auto_switches: g(&s.auto_switches),
        }
    }

    /// The table's definition, layout, what each level stores and its
    /// counters.
    pub fn describe(&self) -> Result<TableDescription> {
        let i = &self.inner;
        let sv = i.keyspace.super_version()?;
        let state = i.layout_state();
        let name_of = |cols: &[usize]| -> Vec<String> {
            cols.iter()
                .map(|&v| i.schema.value_column(v).name.clone())
                .collect()
        };
        let mut levels = Vec::new();
        for l in 0..sv.version.num_levels() {
            let mut groups = Vec::new();
            for (g, files) in sv.version.runs(Level::from_index(l)) {
                let columns = state.shape.group_columns(g).unwrap_or_default();
                let mut dictionary_files = Vec::new();
                for &v in columns {
                    let n = files
                        .iter()
                        .filter(|f| {
                            cgfile::CgReader::of(f).is_some_and(|r| {
                                r.properties().dictionaries.iter().any(|d| d.column == v)
                            })
                        })
                        .count();
                    if n > 0 {
                        dictionary_files.push((i.schema.value_column(v).name.clone(), n));
                    }
                }
                groups.push(GroupDescription {
                    columns: name_of(columns),
                    files: files.len(),
                    bytes: files.iter().map(|f| f.size).sum(),
                    dictionary_files,
                });
            }
            if !groups.is_empty() {
                levels.push(LevelDescription { level: l, groups });
            }
        }
        Ok(TableDescription {
            name: i.name.clone(),
            schema: (*i.schema).clone(),
            layout: state.layout.clone(),
            options: i.record().options,
            levels,
            stats: self.statistics(),
            indexes: self.indexes(),
        })
    }

    /// Every stored version of the row with key `key`, for debugging.
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub fn debug_versions(&self, key: &[Value]) -> Result<String> {
        let k = keycodec::encode_key(&self.inner.schema, key)?;
        let (sv, plan) = self.read_plan()?;
        Ok(get::debug_versions(&sv, &plan, &k))
    }

    /// Compacts the run on `level` of the group that holds value column
    /// `column` (level 0: the whole level) into the next level, and nothing
    /// else: for tests that need a row's groups at different depths.
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub fn compact_column_run(&self, level: usize, column: &str) -> Result<()> {
        let schema = &self.inner.schema;
        let v = schema
            .value_number(schema.index_of(column)?)
            .ok_or_else(|| Error::InvalidArgument(format!("{column:?} is a key column")))?;
        let state = self.inner.layout_state();
        let group = if level == 0 {
            crate::table_format::GroupId::WHOLE
        } else {
            *state
                .ids
                .get(level)
                .and_then(|ids| {
                    ids.iter().find(|&&g| {
                        state
                            .shape
                            .group_columns(g)
                            .is_ok_and(|cols| cols.contains(&v))
                    })
                })
                .ok_or_else(|| Error::InvalidArgument(format!("no group of level {level}")))?
        };
        self.inner.keyspace.compact_run(level, group)
    }

    /// Flushes the table's memtable to level 0.
    pub fn flush(&self) -> Result<()> {
        self.inner.keyspace.flush()
    }

    /// Compacts the whole table down the tree (rewriting every level into
    /// the current layout).
    pub fn compact(&self) -> Result<()> {
        self.inner.keyspace.compact_range(None, None)
    }
}
