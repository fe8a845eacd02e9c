//! One input of a join: a table, its join column and the columns the
//! output takes from it, read as tuples.
//!
//! A tuple is the join value in the primary-key encoding (ordered bytes:
//! sorting tuples by it sorts by value, hashing it hashes the value) and
//! the output columns as an index payload (`index::codec`). Nulls never
//! join, so rows with a null join value make no tuple.

use std::sync::Arc;

use super::hash::tuple_bytes;
use super::spill::Budget;
use crate::db::Snapshot;
use crate::error::{Error, Result};
use crate::index::codec::{decode_payload, encode_payload, push_payload_cell};
use crate::index::{Consistency, Index};
use crate::key::SeqNo;
use crate::options::ReadOptions;
use crate::table::arrowio::ColumnReader;
use crate::table::keycodec::{self, KeyDecoder};
use crate::table::{ColumnType, ScanOptions, Table, Value};

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
    /// Threads a scan in no particular order may read on
    /// ([`Side::scan_any_order`]).
    pub threads: usize,
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
            threads: 1,
        })
    }

    pub(crate) fn name(&self) -> &str {
        self.table.name()
    }

    /// A snapshot of the database of `sides` that each side's index (the
    /// one [`Side::index`] picks) serves. One taken just before a build
    /// finished precedes the index's completion and is taken again: the
    /// next one, taken after the build was seen finished, follows it.
    pub(crate) fn snapshot(sides: &[&Side]) -> Result<Snapshot> {
        let mut tries = 0;
        loop {
            let snapshot = sides[0].table.core().snapshot();
            let snap = snapshot.seqno();
            let unserved = sides
                .iter()
                .filter_map(|s| s.index())
                .find(|i| !i.serves(snap));
            match unserved {
                None => return Ok(snapshot),
                Some(i) if tries > 0 => return i.check_serves(snap).map(|()| snapshot),
                Some(_) => tries += 1,
            }
        }
    }

    /// Whether the join column is the table's whole primary key, so that
    /// a scan yields tuples in join order and a lookup is a point read.
    pub(crate) fn is_primary(&self) -> bool {
        self.table.schema().key_indices() == [self.column]
    }

    /// The built index on the join column that serves this side best: a
    /// synchronous one covering the output columns first.
    pub(crate) fn index(&self) -> Option<Arc<Index>> {
        self.pick_index(&|i| !i.is_building())
    }

    /// [`Side::index`] among the indexes complete at `snap`: the one a join
    /// reading at `snap` uses. (An index whose build finished after the
    /// join's snapshot was taken lacks entries the snapshot sees; found in
    /// review, 2026-12-01: the join re-picked after taking its snapshot,
    /// and could read such an index.)
    pub(crate) fn index_at(&self, snap: SeqNo) -> Option<Arc<Index>> {
        self.pick_index(&|i| !i.is_building() && i.serves(snap))
    }

    /// The built indexes on the join column, in the set's order (when an
    /// index is named, that one alone).
    pub(crate) fn usable_indexes(&self) -> Vec<Arc<Index>> {
        let set = self.table.index_set();
        set.indexes
            .iter()
            .filter(|i| {
                i.column == self.column
                    && !i.is_building()
                    && self.preferred.as_ref().is_none_or(|n| *n == i.name)
            })
            .cloned()
            .collect()
    }

    fn pick_index(&self, usable: &dyn Fn(&Index) -> bool) -> Option<Arc<Index>> {
        let set = self.table.index_set();
        if let Some(name) = &self.preferred {
            return set
                .find(name)
                .ok()
                .filter(|i| i.column == self.column && usable(i))
                .cloned();
        }
        let mut best: Option<(u8, Arc<Index>)> = None;
        for i in &set.indexes {
            if i.column != self.column || !usable(i) {
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
            .all(|&c| schema.is_key(c) || index.entry_holds(schema, c))
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

    /// Every tuple of the table at `snapshot`, in primary-key order; the
    /// scan charges what it holds to the join's `budget`.
    pub(crate) fn scan(&self, snapshot: SeqNo, budget: &Arc<Budget>) -> Result<SideScan<'_>> {
        self.scan_on(snapshot, 1, Batches::Budget(budget))
    }

    /// The tuples of the table at `snapshot` in primary-key order, read in
    /// batches of `rows` on one thread and charged to no budget: the
    /// planner's sample of its first `rows` tuples reads one batch (another
    /// only where rows with null join values, which make no tuple, were in
    /// the first).
    pub(crate) fn sample(&self, snapshot: SeqNo, rows: usize) -> Result<SideScan<'_>> {
        self.scan_on(snapshot, 1, Batches::Rows(rows))
    }

    /// Every tuple of the table at `snapshot`, in no particular order: the
    /// table is read in key ranges on up to [`Side::threads`] threads (a
    /// hash join's partitioning, an external sort's runs and a nested
    /// loop's outer side need no order).
    pub(crate) fn scan_any_order(
        &self,
        snapshot: SeqNo,
        budget: &Arc<Budget>,
    ) -> Result<SideScan<'_>> {
        self.scan_on(snapshot, self.threads, Batches::Budget(budget))
    }

    /// About how many bytes a row of the table takes: its files' and
    /// memtables' bytes per entry (four times that when blocks are
    /// compressed), at least the nominal width of the columns read.
    fn row_bytes_estimate(&self) -> Result<f64> {
        let sv = self.table.inner().keyspace.super_version()?;
        let mut bytes = 0f64;
        let mut entries = 0f64;
        for (_, f) in sv.version.all_files() {
            bytes += f.size as f64;
            entries += f.num_entries as f64;
        }
        for m in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
            bytes += m.memory_usage().total() as f64;
            entries += m.len() as f64;
        }
        let compressed = self.table.inner().record().options.compression != "none";
        let stored = if entries > 0.0 { bytes / entries } else { 0.0 };
        Ok((stored * if compressed { 4.0 } else { 1.0 }).max(self.nominal_tuple_bytes()))
    }

    /// A tuple's bytes by its types' nominal widths: the join value and
    /// each output column with its payload tag.
    pub(crate) fn nominal_tuple_bytes(&self) -> f64 {
        (self.ty.nominal_width()
            + self
                .types
                .iter()
                .map(|t| t.nominal_width() + 1)
                .sum::<usize>()) as f64
    }

    fn scan_on(
        &self,
        snapshot: SeqNo,
        threads: usize,
        batches: Batches<'_>,
    ) -> Result<SideScan<'_>> {
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
            batch_rows: match batches {
                Batches::Budget(b) => {
                    scan_batch_rows(b.limit(), self.row_bytes_estimate()?, threads)
                }
                Batches::Rows(n) => n.clamp(1, SCAN_BATCH),
            },
            threads,
            ..ScanOptions::default()
        };
        Ok(SideScan {
            side: self,
            scan: self.table.scan(opts)?,
            scan_cols,
            at,
            keys: Vec::new(),
            payloads: Vec::new(),
            ends: Vec::new(),
            next: 0,
            rows: 0,
            budget: match batches {
                Batches::Budget(b) => Some(Arc::clone(b)),
                Batches::Rows(_) => None,
            },
            charged: 0,
            in_flight: batches_in_flight(threads),
        })
    }

    /// Calls `f` with each row (output payload) whose join value has
    /// encoding `key`, read through the primary key (`index` `None`) or
    /// through `index` [`WALK_ROWS`] entries at a time, until `f` returns
    /// false; whether every row went. A caller that charges each row can so stop
    /// at its budget instead of holding a skewed value's rows first.
    pub(crate) fn for_each_match(
        &self,
        key: &[u8],
        index: Option<&Index>,
        snapshot: SeqNo,
        f: &mut dyn FnMut(Vec<u8>) -> Result<bool>,
    ) -> Result<bool> {
        let Some(index) = index else {
            // A single-column primary key's encoding is the value's.
            return match self.table.get_encoded(key, &self.cols, Some(snapshot))? {
                Some(row) => f(self.row_bytes(&row)?),
                None => Ok(true),
            };
        };
        let mut d = KeyDecoder::new(key);
        let v = d.value(self.ty)?;
        crate::index::lookup::for_each_hit_part(index, &v, Some(snapshot), WALK_ROWS, &mut |hits| {
            for row in
                crate::index::lookup::resolve(&self.table, index, hits, &self.cols, Some(snapshot))?
            {
                if !f(self.row_bytes(&row)?)? {
                    return Ok(false);
                }
            }
            Ok(true)
        })
    }

    /// Every tuple in join-value order, by walking `index` (each value's
    /// rows in primary-key order).
    /// Rows are charged to `budget` while the walk holds them, each
    /// expected to take `width` bytes until read.
    pub(crate) fn walk_index<'a>(
        &'a self,
        index: &'a Index,
        snapshot: SeqNo,
        budget: &'a Budget,
        width: usize,
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
            hits: std::collections::VecDeque::new(),
            hits_charged: 0,
            posting_at: 0,
            ready: std::collections::VecDeque::new(),
            budget,
            charged: 0,
            width,
        })
    }
}

/// How a side's scan sizes its batches: by the join's budget, which it
/// charges, or a given number of rows, charged to nothing.
enum Batches<'a> {
    Budget(&'a Arc<Budget>),
    Rows(usize),
}

/// A callback handed each tuple (join value, row payload), borrowed for the
/// call.
pub(crate) type TupleFn<'f> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'f;

/// A pull-based stream of tuples (join value, row payload).
pub(crate) trait TupleStream {
    fn next_tuple(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>>;
}

impl TupleStream for crate::join::spill::SpillReader {
    fn next_tuple(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.next_record()
    }
}

/// A side's tuples from a table scan, encoded a batch at a time straight
/// from the scan's Arrow columns into two reused buffers (no value is
/// materialised and no tuple allocated unless a caller asks for owned ones).
pub(crate) struct SideScan<'a> {
    side: &'a Side,
    scan: crate::table::TableScan,
    /// The scanned columns' schema positions: the join column first.
    scan_cols: Vec<usize>,
    /// Per output column, its position among the scanned ones.
    at: Vec<usize>,
    /// The current batch's tuples: join values and payloads back to back,
    /// with each tuple's end in both.
    keys: Vec<u8>,
    payloads: Vec<u8>,
    ends: Vec<(usize, usize)>,
    next: usize,
    /// Rows read so far (with null join values).
    pub rows: u64,
    /// The join's budget, charged with the current batch and its tuples
    /// for every batch the scan may have in flight.
    budget: Option<Arc<Budget>>,
    charged: usize,
    in_flight: usize,
}

impl Drop for SideScan<'_> {
    fn drop(&mut self) {
        if let Some(b) = &self.budget {
            b.release(self.charged);
        }
    }
}

/// The batches a scan on `threads` threads may hold at once: the one being
/// read, and on each helper thread one being built and the finished ones
/// waiting for the reader (`table::scan::parallel`).
fn batches_in_flight(threads: usize) -> usize {
    1 + 3 * threads.saturating_sub(1)
}

/// Rows per batch of a join's scan under a budget of `limit` bytes, rows
/// of about `row_bytes` bytes, on `threads` threads: the batches in flight
/// and the encoded tuples of the one being read (about as large again)
/// take an eighth of the budget, at one row a batch at the least. (A hash
/// join's table takes half, its partition writers an eighth and its tuple
/// group a 32nd; a sort side 3/8, so both sides and a scan leave an eighth
/// for a run's or a group's write buffer.) Batches of a few rows cost: at
/// 4 KiB rows and 16 MiB, 102 rows a batch, and a hash join of 200,000
/// such rows took about 1.2 times as long as with 4,096-row batches,
/// which held four times the budget.
pub(crate) fn scan_batch_rows(limit: usize, row_bytes: f64, threads: usize) -> usize {
    let share = (limit / 8) as f64;
    let per_batch = share / (row_bytes.max(1.0) * (batches_in_flight(threads) + 1) as f64);
    (per_batch as usize).clamp(1, SCAN_BATCH)
}

impl SideScan<'_> {
    /// Encodes the next batch's tuples; false at the end of the scan.
    fn fill(&mut self) -> Result<bool> {
        let Some(batch) = self.scan.next().transpose()? else {
            return Ok(false);
        };
        let result = self.encode(&batch);
        self.charge(&batch)?;
        result
    }

    /// Charges the budget with what the scan holds now: the batch, as many
    /// times as it may have batches in flight, and its encoded tuples; in
    /// place of what it held before.
    fn charge(&mut self, batch: &arrow_array::RecordBatch) -> Result<()> {
        let Some(budget) = &self.budget else {
            return Ok(());
        };
        let tuples = self.keys.capacity()
            + self.payloads.capacity()
            + self.ends.capacity() * std::mem::size_of::<(usize, usize)>();
        let want = batch
            .get_array_memory_size()
            .saturating_mul(self.in_flight)
            .saturating_add(tuples);
        budget.release(self.charged);
        self.charged = 0;
        budget.charge(
            want,
            &format!("a batch of its scan of table {:?}", self.side.table.name()),
        )?;
        self.charged = want;
        Ok(())
    }

    /// Encodes `batch`'s tuples into the scan's buffers.
    fn encode(&mut self, batch: &arrow_array::RecordBatch) -> Result<bool> {
        let schema = self.side.table.schema();
        let readers = self
            .scan_cols
            .iter()
            .zip(batch.columns())
            .map(|(&c, a)| ColumnReader::new(a.as_ref(), &schema.columns()[c]))
            .collect::<Result<Vec<_>>>()?;
        self.keys.clear();
        self.payloads.clear();
        self.ends.clear();
        self.next = 0;
        for i in 0..batch.num_rows() {
            self.rows += 1;
            // Nulls never join: such a row makes no tuple.
            if !keycodec::encode_cell(&mut self.keys, readers[0].cell(i)) {
                continue;
            }
            for &p in &self.at {
                push_payload_cell(&mut self.payloads, readers[p].cell(i));
            }
            self.ends.push((self.keys.len(), self.payloads.len()));
        }
        Ok(true)
    }

    /// The `i`-th tuple of the current batch.
    fn tuple(&self, i: usize) -> (&[u8], &[u8]) {
        let (k0, p0) = if i == 0 { (0, 0) } else { self.ends[i - 1] };
        let (k1, p1) = self.ends[i];
        (&self.keys[k0..k1], &self.payloads[p0..p1])
    }

    /// Calls `f` with every remaining tuple, borrowed.
    pub(crate) fn for_each(&mut self, f: &mut TupleFn<'_>) -> Result<()> {
        loop {
            while self.next < self.ends.len() {
                let i = self.next;
                self.next += 1;
                let (k, r) = self.tuple(i);
                f(k, r)?;
            }
            if !self.fill()? {
                return Ok(());
            }
        }
    }
}

impl TupleStream for SideScan<'_> {
    fn next_tuple(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        while self.next >= self.ends.len() {
            if !self.fill()? {
                return Ok(None);
            }
        }
        let i = self.next;
        self.next += 1;
        let (k, r) = self.tuple(i);
        Ok(Some((k.to_vec(), r.to_vec())))
    }
}

/// Entries an index walk resolves into rows at a time (of one value, so
/// that their point reads share a read plan).
const WALK_ROWS: usize = 64;

/// A side's tuples in join-value order from an index.
pub(crate) struct IndexWalk<'a> {
    side: &'a Side,
    index: &'a Index,
    snapshot: SeqNo,
    it: crate::db_iter::DbIter,
    /// Entries read and not yet resolved, in index order.
    hits: std::collections::VecDeque<crate::index::lookup::Hit>,
    /// What `hits` holds, charged to `budget` (released on drop).
    hits_charged: usize,
    /// Where in the current stored entry's posting list the next hit
    /// starts: a value's list is read a part at a time, never whole.
    posting_at: usize,
    /// Resolved tuples not yet handed out.
    ready: std::collections::VecDeque<(Vec<u8>, Vec<u8>)>,
    budget: &'a Budget,
    /// What `ready` holds, charged to `budget` (released on drop).
    charged: usize,
    /// The bytes a tuple is expected to take: charged before its row is
    /// read, then settled to what it took.
    width: usize,
}

impl IndexWalk<'_> {
    /// Resolves the first entries (at most [`WALK_ROWS`], of one value)
    /// into tuples. A value with many rows is read a part at a time, so
    /// the walk holds one part, whatever the skew.
    fn resolve_some(&mut self) -> Result<()> {
        let key = self.hits[0].key.clone();
        let n = self
            .hits
            .iter()
            .take(WALK_ROWS)
            .take_while(|h| h.key == key)
            .count();
        let expected = n * self.width;
        self.budget
            .charge(expected, "the rows an index walk reads at a time")?;
        self.charged += expected;
        let part: Vec<_> = self.hits.drain(..n).collect();
        let held: usize = part.iter().map(hit_bytes).sum();
        self.budget.release(held);
        self.hits_charged -= held;
        let rows = crate::index::lookup::resolve(
            &self.side.table,
            self.index,
            part,
            &self.side.cols,
            Some(self.snapshot),
        )?;
        let mut took = 0;
        for row in rows {
            let t = (key.clone(), self.side.row_bytes(&row)?);
            took += tuple_bytes(&t.0, &t.1);
            self.ready.push_back(t);
        }
        if took > expected {
            self.budget
                .charge(took - expected, "the rows an index walk reads at a time")?;
        } else {
            self.budget.release(expected - took);
        }
        self.charged = self.charged - expected + took;
        Ok(())
    }
}

impl Drop for IndexWalk<'_> {
    fn drop(&mut self) {
        self.budget.release(self.charged + self.hits_charged);
    }
}

/// The bytes an index hit holds: its vectors and their contents, and its
/// decoded value (about as long as its encoding).
fn hit_bytes(h: &crate::index::lookup::Hit) -> usize {
    std::mem::size_of::<crate::index::lookup::Hit>()
        + h.pk.len()
        + 2 * h.key.len()
        + h.payload.len()
}

impl TupleStream for IndexWalk<'_> {
    fn next_tuple(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let mut hits = Vec::new();
        loop {
            if let Some(t) = self.ready.pop_front() {
                let n = tuple_bytes(&t.0, &t.1);
                self.budget.release(n);
                self.charged -= n;
                return Ok(Some(t));
            }
            // Resolve once a part is full, a value's entries end, or the
            // index does.
            let part_done = self.hits.len() >= WALK_ROWS
                || !self.it.valid()
                || self
                    .hits
                    .front()
                    .zip(self.hits.back())
                    .is_some_and(|(f, b)| f.key != b.key);
            if !self.hits.is_empty() && part_done {
                self.resolve_some()?;
                continue;
            }
            if !self.it.valid() {
                self.it.status()?;
                return Ok(None);
            }
            // At most a part's worth of a stored entry at a time: an
            // eager or lazy entry holds a value's whole posting list.
            let room = WALK_ROWS.saturating_sub(self.hits.len()).max(1);
            let next = crate::index::lookup::entry_hits_part(
                self.index,
                self.it.key(),
                self.it.value(),
                self.posting_at,
                room,
                &mut hits,
            )?;
            match next {
                Some(at) => self.posting_at = at,
                None => {
                    self.posting_at = 0;
                    self.it.next();
                }
            }
            let held: usize = hits.iter().map(hit_bytes).sum();
            self.budget
                .charge(held, "the index entries a walk reads at a time")?;
            self.hits_charged += held;
            self.hits.extend(hits.drain(..));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{IndexKind, IndexSpec};
    use crate::table::{Column, Schema, TableOptions};
    use crate::{Db, Options};

    /// Table `r` (id, a, pad) in a new database.
    fn table_r(dir: &std::path::Path) -> (Db, Table) {
        let db = Db::open(dir, Options::default()).expect("open");
        let schema = Schema::new(
            vec![
                Column::new("id", ColumnType::Int64),
                Column::nullable("a", ColumnType::Int64),
                Column::nullable("pad", ColumnType::Utf8),
            ],
            &["id"],
        )
        .expect("schema");
        let t = db
            .create_table("r", schema, TableOptions::default())
            .expect("create");
        (db, t)
    }

    #[test]
    fn a_join_at_a_snapshot_uses_only_indexes_complete_at_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (db, t) = table_r(dir.path());
        for id in 0..100i64 {
            t.upsert_row(&[Value::Int64(id), Value::Int64(id % 7), Value::Null])
                .expect("upsert");
        }
        let before = db.snapshot();
        t.create_index(IndexSpec::new("a", "a")).expect("index");
        let after = db.snapshot();
        let side = Side::new(t.clone(), "a", vec![0]).expect("side");
        assert!(side.index().is_some());
        assert!(
            side.index_at(before.seqno()).is_none(),
            "an index built after the snapshot lacks what it sees"
        );
        assert!(side.index_at(after.seqno()).is_some());
    }

    #[test]
    fn a_join_scan_sizes_its_batches_by_the_budget() {
        // 256 KiB, 200-byte rows: an eighth of the budget over the batch
        // and its tuples; a helper thread's batches in flight divide it.
        assert_eq!(scan_batch_rows(256 << 10, 200.0, 1), 81);
        assert_eq!(scan_batch_rows(256 << 10, 200.0, 2), 32);
        assert_eq!(scan_batch_rows(16 << 20, 4096.0, 2), 102);
        assert_eq!(scan_batch_rows(256 << 10, 4096.0, 2), 1, "one row at least");
        assert_eq!(scan_batch_rows(1 << 30, 16.0, 8), SCAN_BATCH, "at most");
        assert_eq!(scan_batch_rows(1 << 20, 0.0, 1), SCAN_BATCH);
    }

    #[test]
    fn a_join_scan_charges_its_batch_while_it_holds_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (db, t) = table_r(dir.path());
        let pad = "y".repeat(300);
        for id in 0..500i64 {
            t.upsert_row(&[Value::Int64(id), Value::Int64(id % 3), pad.clone().into()])
                .expect("upsert");
        }
        let side = Side::new(t.clone(), "a", vec![0, 2]).expect("side");
        let budget = Arc::new(Budget::new(256 << 10));
        let snapshot = db.snapshot();
        let mut scan = side.scan(snapshot.seqno(), &budget).expect("scan");
        let mut tuples = 0;
        while scan.next_tuple().expect("tuple").is_some() {
            tuples += 1;
            let used = budget.used();
            assert!(used > 300 && used == scan.charged, "{used} charged");
            assert!(used <= (256 << 10) / 4, "a batch of a few rows: {used}");
        }
        assert_eq!(tuples, 500);
        drop(scan);
        assert_eq!(budget.used(), 0);
        // The planner's sample reads without a budget, in batches of the
        // rows it asks for.
        let mut scan = side.sample(snapshot.seqno(), 3).expect("scan");
        assert!(scan.next_tuple().expect("tuple").is_some());
        assert_eq!(budget.used(), 0);
        assert_eq!(scan.rows, 3, "one batch of the sample's rows");
    }

    #[test]
    fn an_index_walk_holds_one_part_of_a_value_at_a_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (db, t) = table_r(dir.path());
        for kind in [IndexKind::Eager, IndexKind::Lazy, IndexKind::Composite] {
            let name = format!("{kind:?}");
            t.create_index(IndexSpec::new(&name, "a").kind(kind))
                .expect("index");
        }
        let pad = "x".repeat(100);
        for id in 0..1000i64 {
            t.upsert_row(&[Value::Int64(id), Value::Int64(7), pad.clone().into()])
                .expect("upsert");
        }
        for name in ["Eager", "Lazy", "Composite"] {
            let mut side = Side::new(t.clone(), "a", vec![0, 2]).expect("side");
            side.preferred = Some(name.into());
            let index = side.index().expect("the index");
            let budget = Budget::new(1 << 20);
            let snapshot = db.snapshot();
            let mut walk = side
                .walk_index(&index, snapshot.seqno(), &budget, 64)
                .expect("walk");
            let mut rows = 0;
            while walk.next_tuple().expect("tuple").is_some() {
                rows += 1;
                assert!(
                    walk.ready.len() < WALK_ROWS,
                    "{name}: {} rows held",
                    walk.ready.len()
                );
                // An eager or lazy value's 1,000 keys are one stored
                // entry, read a part at a time (it was decoded whole).
                assert!(
                    walk.hits.len() <= WALK_ROWS,
                    "{name}: {} entries held",
                    walk.hits.len()
                );
                assert_eq!(budget.used(), walk.charged + walk.hits_charged, "{name}");
            }
            assert_eq!(rows, 1000, "{name}");
            assert!(budget.peak() > 0, "{name}: the rows held are charged");
            drop(walk);
            assert_eq!(budget.used(), 0, "{name}");
        }
    }
}
