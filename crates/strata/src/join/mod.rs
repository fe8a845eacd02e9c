//! Joins of two tables on one column each, with bounded memory (seed 000,
//! "Are Joins over LSM-trees Ready").
//!
//! Every algorithm of the study, chosen per join by a cost model over live
//! statistics or named by the caller:
//!
//! | method | how | module |
//! |---|---|---|
//! | index nested loop | scan one side, point-read the other by primary key or through its index | `inlj.rs` |
//! | sort-merge | external sort of each side not ordered already, then merge | `sort.rs` |
//! | sort-merge on indexes | walk indexes for order instead of sorting | `sort.rs`, `side.rs` |
//! | grace hash | partition both sides to spill files, join partition by partition | `hash.rs` |
//! | hybrid hash | the same, with the build side's partition 0 kept in memory | `hash.rs` |
//!
//! ```text
//!   Join (mod.rs) ── stats ─► cost.rs (plan: pure) ─► chosen method
//!        │
//!        └─ run ─► side.rs (tuples from scans, lookups, index walks)
//!                  inlj.rs / sort.rs / hash.rs ── spill.rs (budget, files)
//!                  output.rs (Arrow batches, or count and checksum)
//! ```
//!
//! Memory: every buffer a join holds (hash tables, sort buffers, spill
//! files' read and write buffers, the batches of its table scans, the rows
//! of a lookup chunk, the index entries a walk holds) is charged to one
//! budget and never passes it; [`JoinSummary::peak_memory_bytes`] reports
//! the peak. The engine's read buffers (cached blocks, a scan's staged
//! chunk per source) are not the join's and are not charged.

mod chain;
mod cost;
mod hash;
mod inlj;
mod output;
mod side;
mod sort;
pub(crate) mod spill;
mod table;

use std::sync::Arc;
use std::sync::mpsc::{Receiver, sync_channel};
use std::thread::JoinHandle;

use arrow_array::RecordBatch;
use arrow_schema::{Field, Schema as ArrowSchema};

pub use chain::JoinChain;
pub use cost::{
    Candidate, IndexChoice, IndexStats, JoinStats, Plan, SideStats, plan, plan_alternatives,
};

use self::hash::Source;
use self::output::{BatchSink, CountSink, Emit, Sink};
use self::side::{Side, TupleStream};
use self::spill::{Budget, SpillSpace};
use crate::error::{Error, Result};
use crate::ids::Level;
use crate::index::IndexKind;
use crate::table::Table;

/// How a join runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JoinMethod {
    /// The planner's cheapest method (the default).
    Auto,
    /// Scan the left side; read right rows by the right's primary key.
    NestedLoopPrimaryRight,
    /// Scan the right side; read left rows by the left's primary key.
    NestedLoopPrimaryLeft,
    /// Scan the left side; look right rows up through the right's index.
    NestedLoopIndexRight,
    /// Scan the right side; look left rows up through the left's index.
    NestedLoopIndexLeft,
    /// Sort both sides (a side ordered by its primary key is not sorted)
    /// and merge them.
    SortMerge,
    /// Merge, taking each side's order from its index where it has one.
    SortMergeIndex,
    /// Grace hash join: both sides partitioned to spill files.
    GraceHash,
    /// Hybrid hash join: the build side's first partition stays in memory.
    HybridHash,
}

impl JoinMethod {
    /// Every method but `Auto`.
    pub const ALL: [JoinMethod; 8] = [
        JoinMethod::NestedLoopPrimaryRight,
        JoinMethod::NestedLoopPrimaryLeft,
        JoinMethod::NestedLoopIndexRight,
        JoinMethod::NestedLoopIndexLeft,
        JoinMethod::SortMerge,
        JoinMethod::SortMergeIndex,
        JoinMethod::GraceHash,
        JoinMethod::HybridHash,
    ];

    /// The method's name, as the CLI takes it.
    pub fn name(self) -> &'static str {
        match self {
            JoinMethod::Auto => "auto",
            JoinMethod::NestedLoopPrimaryRight => "inlj-pk",
            JoinMethod::NestedLoopPrimaryLeft => "inlj-pk-left",
            JoinMethod::NestedLoopIndexRight => "inlj-index",
            JoinMethod::NestedLoopIndexLeft => "inlj-index-left",
            JoinMethod::SortMerge => "sort-merge",
            JoinMethod::SortMergeIndex => "sort-merge-index",
            JoinMethod::GraceHash => "grace-hash",
            JoinMethod::HybridHash => "hybrid-hash",
        }
    }

    /// Parses a method's name.
    pub fn parse(s: &str) -> Result<JoinMethod> {
        std::iter::once(JoinMethod::Auto)
            .chain(JoinMethod::ALL)
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = std::iter::once(JoinMethod::Auto)
                    .chain(JoinMethod::ALL)
                    .map(JoinMethod::name)
                    .collect();
                Error::InvalidArgument(format!(
                    "unknown join method {s:?}; one of {}",
                    names.join(", ")
                ))
            })
    }
}

/// The smallest memory budget a join takes.
pub const MIN_JOIN_MEMORY: usize = 256 << 10;

/// An inner equi-join of two tables: `left.left_column = right.right_column`.
#[derive(Clone)]
pub struct Join {
    left: Table,
    left_column: String,
    right: Table,
    right_column: String,
    method: JoinMethod,
    memory_bytes: usize,
    columns: Option<Vec<String>>,
    threads: usize,
    batch_rows: usize,
    cpu_per_tuple: f64,
    /// Indexes to use by name (left, right) instead of the best ones.
    indexes: (Option<String>, Option<String>),
    /// Read at this snapshot's sequence number ([`Join::at`]).
    snapshot: Option<Arc<crate::Snapshot>>,
}

/// What a finished join did.
#[derive(Clone, Debug, PartialEq)]
pub struct JoinSummary {
    /// Rows produced.
    pub rows: u64,
    /// A hash of the produced rows, independent of their order (count
    /// mode only; 0 for streamed joins).
    pub checksum: u64,
    /// The method that ran.
    pub method: JoinMethod,
    /// The most bytes the join's buffers held at once.
    pub peak_memory_bytes: u64,
    /// Bytes written to spill files.
    pub spilled_bytes: u64,
    /// The indexes the method read, left and right, by name (`None` for a
    /// side read without one).
    pub indexes: IndexChoice,
}

/// Block-read equivalents of one tuple's CPU work (see `cost.rs`).
const CPU_PER_TUPLE: f64 = 0.01;

impl Join {
    /// A join of `left.left_column = right.right_column`, returning every
    /// column of both tables, planned automatically, with 16 MiB of memory.
    pub fn new(left: &Table, left_column: &str, right: &Table, right_column: &str) -> Join {
        Join {
            left: left.clone(),
            left_column: left_column.to_string(),
            right: right.clone(),
            right_column: right_column.to_string(),
            method: JoinMethod::Auto,
            memory_bytes: 16 << 20,
            columns: None,
            threads: 1,
            batch_rows: 8192,
            cpu_per_tuple: CPU_PER_TUPLE,
            indexes: (None, None),
            snapshot: None,
        }
    }

    /// The sequence number a run reads `sides` at: the join's own snapshot
    /// ([`Join::at`]), or one taken now that every side's index serves,
    /// returned to be held while the run reads.
    fn read_point(&self, sides: &[&Side]) -> Result<(crate::key::SeqNo, Option<crate::Snapshot>)> {
        Ok(match &self.snapshot {
            Some(s) => (s.seqno(), None),
            None => {
                let h = Side::snapshot(sides)?;
                (h.seqno(), Some(h))
            }
        })
    }

    /// Reads both tables at `snapshot` instead of the state when the join
    /// starts (as a statement whose other reads are at it does). The join
    /// holds the view itself, so the caller may drop its snapshot; a
    /// snapshot of another database is refused when the join runs, and a
    /// method that reads through an index whose build finished after it is
    /// refused, as with no index.
    pub fn at(mut self, snapshot: &crate::Snapshot) -> Join {
        self.snapshot = Some(Arc::new(snapshot.held_again()));
        self
    }

    /// Runs `method` instead of the planner's choice.
    pub fn method(mut self, method: JoinMethod) -> Join {
        self.method = method;
        self
    }

    /// The memory budget in bytes (at least [`MIN_JOIN_MEMORY`]).
    pub fn memory(mut self, bytes: usize) -> Join {
        self.memory_bytes = bytes;
        self
    }

    /// The output columns, each `left.c`, `right.c`, `TABLE.c` or a bare
    /// name found in one table only; in the order given.
    pub fn columns(mut self, names: &[&str]) -> Join {
        self.columns = Some(names.iter().map(|s| (*s).to_string()).collect());
        self
    }

    /// Threads the join may use (default 1): an index nested loop's
    /// lookups, and the scans that need no order (a hash join's sides, an
    /// external sort's input, a nested loop's outer side), which read
    /// their table in that many key ranges at once. At most the machine's
    /// cores are used: more would only share them (the planner's cost
    /// model counts no more), and each is a thread the system must be able
    /// to start.
    pub fn threads(mut self, n: usize) -> Join {
        self.threads = n.clamp(1, cores());
        self
    }

    /// Reads the left side through its index `name` (when a method reads
    /// through an index) instead of the planner's pick.
    pub fn left_index(mut self, name: &str) -> Join {
        self.indexes.0 = Some(name.to_string());
        self
    }

    /// Reads the right side through its index `name`, likewise.
    pub fn right_index(mut self, name: &str) -> Join {
        self.indexes.1 = Some(name.to_string());
        self
    }

    /// Rows per output batch (default 8192).
    pub fn batch_rows(mut self, n: usize) -> Join {
        self.batch_rows = n.max(1);
        self
    }

    fn check(&self) -> Result<()> {
        // One snapshot's sequence number means nothing in another
        // database: such a join would read one side at a wrong point.
        if !self.left.core().same_database(self.right.core()) {
            return Err(Error::InvalidArgument(format!(
                "tables {:?} and {:?} are in different databases; a join reads one database",
                self.left.name(),
                self.right.name()
            )));
        }
        if let Some(s) = &self.snapshot
            && !s.is_of(self.left.core())
        {
            return Err(Error::InvalidArgument(
                "the join's snapshot (Join::at) is of another database than its tables".into(),
            ));
        }
        if self.memory_bytes < MIN_JOIN_MEMORY {
            return Err(Error::InvalidArgument(format!(
                "a join needs at least {MIN_JOIN_MEMORY} bytes of memory; {} given",
                self.memory_bytes
            )));
        }
        let lt = self.left.schema().columns()[self.left.schema().index_of(&self.left_column)?].ty;
        let rt =
            self.right.schema().columns()[self.right.schema().index_of(&self.right_column)?].ty;
        if lt != rt {
            return Err(Error::InvalidArgument(format!(
                "join columns {}.{} ({lt}) and {}.{} ({rt}) have different types",
                self.left.name(),
                self.left_column,
                self.right.name(),
                self.right_column
            )));
        }
        Ok(())
    }

    /// The output columns: per output position, (side 0 left / 1 right,
    /// schema position).
    fn output(&self) -> Result<Vec<(usize, usize)>> {
        let tables = [&self.left, &self.right];
        let Some(names) = &self.columns else {
            return Ok((0..2)
                .flat_map(|s| (0..tables[s].schema().columns().len()).map(move |c| (s, c)))
                .collect());
        };
        names
            .iter()
            .map(|n| {
                let find = |s: usize, c: &str| tables[s].schema().index_of(c).map(|i| (s, i));
                match n.split_once('.') {
                    Some(("left", c)) => find(0, c),
                    Some(("right", c)) => find(1, c),
                    Some((t, c)) if t == self.left.name() && t != self.right.name() => find(0, c),
                    Some((t, c)) if t == self.right.name() && t != self.left.name() => find(1, c),
                    _ => match (find(0, n), find(1, n)) {
                        (Ok(a), Err(_)) => Ok(a),
                        (Err(_), Ok(b)) => Ok(b),
                        (Ok(_), Ok(_)) => Err(Error::InvalidArgument(format!(
                            "column {n:?} is in both tables; write left.{n} or right.{n}"
                        ))),
                        (Err(e), Err(_)) => Err(e),
                    },
                }
            })
            .collect()
    }

    fn sides(&self, out: &[(usize, usize)]) -> Result<(Side, Side)> {
        let cols = |s: usize| -> Vec<usize> {
            let mut v: Vec<usize> = out.iter().filter(|o| o.0 == s).map(|o| o.1).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let mut l = Side::new(self.left.clone(), &self.left_column, cols(0))?;
        let mut r = Side::new(self.right.clone(), &self.right_column, cols(1))?;
        l.threads = self.threads;
        r.threads = self.threads;
        for (side, name) in [(&mut l, &self.indexes.0), (&mut r, &self.indexes.1)] {
            if let Some(n) = name {
                let i = side.table.index_set().find(n).cloned()?;
                if i.column != side.column {
                    return Err(Error::InvalidArgument(format!(
                        "index {n:?} of {} is not on the join column",
                        side.name()
                    )));
                }
                side.preferred = Some(n.clone());
            }
        }
        Ok((l, r))
    }

    /// The output's Arrow schema and, per output column, its position in
    /// the concatenated left and right payloads.
    fn output_schema(
        &self,
        out: &[(usize, usize)],
        l: &Side,
        r: &Side,
    ) -> (Arc<ArrowSchema>, Vec<usize>) {
        let same = self.left.name() == self.right.name();
        let label = |s: usize| match (same, s) {
            (true, 0) => "left".to_string(),
            (true, _) => "right".to_string(),
            (false, 0) => self.left.name().to_string(),
            (false, _) => self.right.name().to_string(),
        };
        let mut fields = Vec::new();
        let mut order = Vec::new();
        for &(s, c) in out {
            let t = if s == 0 { &self.left } else { &self.right };
            let col = &t.schema().columns()[c];
            fields.push(Field::new(
                format!("{}.{}", label(s), col.name),
                col.ty.arrow_type(),
                col.nullable,
            ));
            let pos = if s == 0 {
                l.cols.iter().position(|&x| x == c).unwrap_or(0)
            } else {
                l.cols.len() + r.cols.iter().position(|&x| x == c).unwrap_or(0)
            };
            order.push(pos);
        }
        (Arc::new(ArrowSchema::new(fields)), order)
    }

    /// What the statistics of this join depend on: the tables' versions
    /// and memtable sizes, their index sets, the columns and the budget.
    /// Statistics gathered for the same key are reused (a join run again
    /// on unchanged tables does not sample them again).
    fn stats_key(&self, l: &Side, r: &Side) -> Result<String> {
        let state = |t: &Table| -> Result<String> {
            let sv = t.inner().keyspace.super_version()?;
            let mem = sv.mem.len() + sv.imms.iter().map(|m| m.len()).sum::<usize>();
            // Each index by id (never reused) and whether it is built: the
            // set's address stayed the same when a build finished, and a
            // freed set's address could come back for another set (found
            // in review, 2026-12-01).
            let set = t.index_set();
            let indexes: Vec<String> = set
                .indexes
                .iter()
                .map(|i| format!("{}{}", i.id, if i.is_building() { "b" } else { "" }))
                .collect();
            Ok(format!(
                "{}:{}:{mem}:{}",
                t.name(),
                sv.version_no,
                indexes.join(",")
            ))
        };
        Ok(format!(
            "{}|{}|{}|{:?}|{:?}|{:?}|{:?}|{:?}|{}",
            state(&self.left)?,
            state(&self.right)?,
            self.right.inner().id,
            (l.column, r.column),
            l.cols,
            r.cols,
            self.indexes,
            self.memory_bytes,
            self.cpu_per_tuple
        ))
    }

    /// The planner's statistics for this join, with the indexes it reads
    /// when none is chosen for it: those named by [`Join::left_index`] and
    /// [`Join::right_index`], else each side's synchronous and covering
    /// one first.
    pub fn statistics(&self) -> Result<JoinStats> {
        let mut all = self.alternatives()?;
        Ok(all.swap_remove(0).1)
    }

    /// The planner's statistics for every way of reading the sides: one
    /// entry per pair of usable indexes on the join columns (a side whose
    /// index is named, or that has none, has one way), the default pair
    /// first. Gathered alternatives are reused while the tables, their
    /// index sets, the columns and the budget are unchanged.
    fn alternatives(&self) -> Result<PlanStats> {
        self.check()?;
        let out = self.output()?;
        let (l, r) = self.sides(&out)?;
        let key = self.stats_key(&l, &r)?;
        let cache = &self.left.inner().join_stats;
        if let Some((_, s)) = cache.lock().iter().find(|(k, _)| *k == key) {
            return Ok(s.clone());
        }
        let base = self.gather(&l, &r)?;
        let lefts = index_alternatives(&l, &base.left)?;
        let rights = index_alternatives(&r, &base.right)?;
        let mut all = Vec::with_capacity(lefts.len() * rights.len());
        for (ln, ls) in &lefts {
            for (rn, rs) in &rights {
                all.push((
                    (ln.clone(), rn.clone()),
                    JoinStats {
                        left: ls.clone(),
                        right: rs.clone(),
                        ..base.clone()
                    },
                ));
            }
        }
        let mut c = cache.lock();
        c.retain(|(k, _)| *k != key);
        c.push((key, all.clone()));
        if c.len() > 8 {
            c.remove(0);
        }
        Ok(all)
    }

    fn gather(&self, l: &Side, r: &Side) -> Result<JoinStats> {
        let snap = self.left.core().snapshot();
        let (left_match, left_fanout) = match_ratio(l, r, snap.seqno())?;
        let opts = self.left.inner().record().options;
        Ok(JoinStats {
            left_match,
            right_match: match_ratio(r, l, snap.seqno())?.0,
            left_fanout,
            left: side_stats(l)?,
            right: side_stats(r)?,
            block_bytes: opts.block_size as f64,
            bloom_fpr: 0.6185f64.powf(opts.bloom_bits_per_key as f64),
            memory_bytes: self.memory_bytes as f64,
            cpu_per_tuple: self.cpu_per_tuple,
            threads: self.threads as f64,
        })
    }

    /// Every candidate method with its predicted cost and the choice; a
    /// method that reads indexes is priced with the side's index that makes
    /// it cheapest (when the side has several on its join column and none
    /// is named) and names the indexes ([`Candidate::left_index`]).
    pub fn explain(&self) -> Result<Plan> {
        Ok(plan_alternatives(&self.alternatives()?))
    }

    /// This join with its method and indexes decided: for `Auto` the
    /// planner's choice and the indexes it priced; for a given method that
    /// reads an index, the index the planner prices cheapest for it on
    /// each side whose index is not named.
    fn resolved(&self) -> Result<Join> {
        // A given method plans (and samples the tables) only when a side
        // it reads through an index has more than one to choose from.
        let undecided = self.method == JoinMethod::Auto || {
            let out = self.output()?;
            let (l, r) = self.sides(&out)?;
            let (a, b) = cost::index_sides(self.method, (l.is_primary(), r.is_primary()));
            let choice = |s: &Side| s.usable_indexes().len() > 1;
            (a && choice(&l)) || (b && choice(&r))
        };
        if !undecided {
            return Ok(self.clone());
        }
        let plan = self.explain()?;
        let method = match self.method {
            JoinMethod::Auto => plan.chosen,
            m => m,
        };
        let mut j = self.clone().method(method);
        if let Some(c) = plan.candidates.iter().find(|c| c.method == method) {
            j.indexes.0 = j.indexes.0.or_else(|| c.left_index.clone());
            j.indexes.1 = j.indexes.1.or_else(|| c.right_index.clone());
        }
        Ok(j)
    }

    /// Runs the join to the end, counting rows and summing a hash of each
    /// (for benchmarks and checks: no batches are built).
    pub fn count(&self) -> Result<JoinSummary> {
        self.check()?;
        let join = self.resolved()?;
        let method = join.method;
        let out = join.output()?;
        let (l, r) = join.sides(&out)?;
        let mut sink = CountSink::default();
        let (peak, spilled) = execute(&join, method, &l, &r, &mut sink)?;
        Ok(JoinSummary {
            rows: sink.rows,
            checksum: sink.checksum,
            method,
            peak_memory_bytes: peak,
            spilled_bytes: spilled,
            indexes: read_indexes(method, &l, &r),
        })
    }

    /// Runs the join, streaming its rows as Arrow batches; it runs on its
    /// own thread and stops if the stream is dropped.
    pub fn run(&self) -> Result<JoinStream> {
        self.check()?;
        let join = self.resolved()?;
        let method = join.method;
        let out = join.output()?;
        let (l, r) = join.sides(&out)?;
        feasible(method, &l, &r)?;
        let (schema, order) = join.output_schema(&out, &l, &r);
        let (tx, rx) = sync_channel(2);
        let indexes = read_indexes(method, &l, &r);
        let thread_schema = Arc::clone(&schema);
        let handle = std::thread::Builder::new()
            .name("strata-join".into())
            .spawn(move || -> Result<JoinSummary> {
                let mut sink =
                    BatchSink::new(&l, &r, thread_schema, order, join.batch_rows, tx.clone());
                let result = execute(&join, method, &l, &r, &mut sink).and_then(|x| {
                    sink.flush()?;
                    Ok(x)
                });
                match result {
                    Ok((peak, spilled)) => Ok(JoinSummary {
                        rows: sink.rows_sent(),
                        checksum: 0,
                        method,
                        peak_memory_bytes: peak,
                        spilled_bytes: spilled,
                        indexes,
                    }),
                    Err(e) => {
                        let _ = tx.send(Err(e.duplicate()));
                        Err(e)
                    }
                }
            })
            .map_err(|e| Error::InvalidArgument(format!("starting the join thread: {e}")))?;
        Ok(JoinStream {
            schema,
            rx,
            handle: Some(handle),
            method,
        })
    }
}

/// A running join's output: an iterator of Arrow batches.
pub struct JoinStream {
    schema: Arc<ArrowSchema>,
    rx: Receiver<Result<RecordBatch>>,
    handle: Option<JoinHandle<Result<JoinSummary>>>,
    method: JoinMethod,
}

impl JoinStream {
    /// The output's schema (`TABLE.column` names).
    pub fn schema(&self) -> Arc<ArrowSchema> {
        Arc::clone(&self.schema)
    }

    /// The method running.
    pub fn method(&self) -> JoinMethod {
        self.method
    }

    /// Waits for the join to end (reading what is left) and reports it.
    pub fn finish(mut self) -> Result<JoinSummary> {
        for b in self.by_ref() {
            b?;
        }
        self.join_thread()
    }

    fn join_thread(&mut self) -> Result<JoinSummary> {
        match self.handle.take() {
            Some(h) => h
                .join()
                .map_err(|_| Error::InvalidArgument("the join thread panicked".into()))?,
            None => Err(Error::InvalidArgument(
                "the join was finished already".into(),
            )),
        }
    }
}

impl Iterator for JoinStream {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        self.rx.recv().ok()
    }
}

impl Drop for JoinStream {
    fn drop(&mut self) {
        // Unblock the worker (its sends fail once the receiver is gone) and
        // wait for it, so that its spill files are removed before we return.
        let (_, dead) = sync_channel(0);
        let rx = std::mem::replace(&mut self.rx, dead);
        drop(rx);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Runs `method`; returns the peak memory and the bytes spilled.
fn execute(
    join: &Join,
    method: JoinMethod,
    l: &Side,
    r: &Side,
    sink: &mut dyn Sink,
) -> Result<(u64, u64)> {
    let space = SpillSpace::new(join.left.core(), Arc::new(Budget::new(join.memory_bytes)));
    let (snap, held) = join.read_point(&[l, r])?;
    execute_at(join, method, l, r, sink, &space, snap)?;
    drop(held);
    Ok((space.budget.peak() as u64, space.bytes_written()))
}

/// Runs `method` within `space`'s budget and spill directory at `snap`,
/// which the caller holds (a snapshot from [`Side::snapshot`] of these
/// sides among others, or the join's own).
pub(super) fn execute_at(
    join: &Join,
    method: JoinMethod,
    l: &Side,
    r: &Side,
    sink: &mut dyn Sink,
    space: &SpillSpace,
    snap: crate::key::SeqNo,
) -> Result<()> {
    let budget = &*space.budget;
    feasible(method, l, r)?;
    let need_index = |s: &Side| s.index_at(snap).ok_or_else(|| no_index(method, s));
    match method {
        JoinMethod::Auto => unreachable_auto()?,
        JoinMethod::NestedLoopPrimaryRight
        | JoinMethod::NestedLoopPrimaryLeft
        | JoinMethod::NestedLoopIndexRight
        | JoinMethod::NestedLoopIndexLeft => {
            let left_inner = matches!(
                method,
                JoinMethod::NestedLoopPrimaryLeft | JoinMethod::NestedLoopIndexLeft
            );
            let (outer, inner) = if left_inner { (r, l) } else { (l, r) };
            let index = match method {
                JoinMethod::NestedLoopIndexRight | JoinMethod::NestedLoopIndexLeft => {
                    Some(need_index(inner)?)
                }
                _ => None,
            };
            let mut emit = Emit {
                sink,
                swapped: left_inner,
            };
            inlj::nested_loop(
                &Source::Side(outer, snap),
                inner,
                index.as_deref(),
                snap,
                join.threads,
                space,
                &mut emit,
            )?;
        }
        JoinMethod::SortMerge | JoinMethod::SortMergeIndex => {
            let use_index = method == JoinMethod::SortMergeIndex;
            let cap = budget.limit() * 3 / 8;
            let li = if use_index && !l.is_primary() {
                l.index_at(snap)
            } else {
                None
            };
            let ri = if use_index && !r.is_primary() {
                r.index_at(snap)
            } else {
                None
            };
            let mut a = ordered(l, li.as_deref(), snap, space, cap)?;
            let mut b = ordered(r, ri.as_deref(), snap, space, cap)?;
            let mut emit = Emit {
                sink,
                swapped: false,
            };
            sort::merge_join(a.as_mut(), b.as_mut(), space, &mut emit)?;
        }
        JoinMethod::GraceHash | JoinMethod::HybridHash => {
            let (lb, rb) = (estimated_bytes(l)?, estimated_bytes(r)?);
            let (build, probe, bytes, swapped) = if lb <= rb {
                (l, r, lb, false)
            } else {
                (r, l, rb, true)
            };
            let mut emit = Emit { sink, swapped };
            hash::hash_join(
                &Source::Side(build, snap),
                &Source::Side(probe, snap),
                bytes,
                method == JoinMethod::HybridHash,
                hash::HashRun::new(space, join.threads),
                &mut emit,
            )?;
        }
    }
    Ok(())
}

pub(super) fn no_index(method: JoinMethod, s: &Side) -> Error {
    Error::InvalidArgument(format!(
        "{} needs a built index on {}'s join column",
        method.name(),
        s.name()
    ))
}

/// Whether `method` can run on these sides: the primary key or index it
/// reads through exists.
fn feasible(method: JoinMethod, l: &Side, r: &Side) -> Result<()> {
    let need_pk = |s: &Side| -> Result<()> {
        if s.is_primary() {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "{} needs {}'s join column to be its whole primary key",
                method.name(),
                s.name()
            )))
        }
    };
    let need_index = |s: &Side| s.index().map(|_| ()).ok_or_else(|| no_index(method, s));
    match method {
        JoinMethod::NestedLoopPrimaryRight => need_pk(r),
        JoinMethod::NestedLoopPrimaryLeft => need_pk(l),
        JoinMethod::NestedLoopIndexRight => need_index(r),
        JoinMethod::NestedLoopIndexLeft => need_index(l),
        JoinMethod::SortMergeIndex => need_index(l).or_else(|_| need_index(r)),
        _ => Ok(()),
    }
}

fn unreachable_auto() -> Result<()> {
    Err(Error::InvalidArgument(
        "internal: the auto method was not resolved".into(),
    ))
}

/// A side's tuples in join-value order: its scan when the join column is
/// its primary key, a walk of `index` when given, else an external sort.
fn ordered<'a>(
    side: &'a Side,
    index: Option<&'a crate::index::Index>,
    snap: crate::key::SeqNo,
    space: &'a SpillSpace,
    cap: usize,
) -> Result<Box<dyn TupleStream + 'a>> {
    if side.is_primary() {
        return Ok(Box::new(side.scan(snap, &space.budget)?));
    }
    if let Some(i) = index {
        return Ok(Box::new(side.walk_index(
            i,
            snap,
            &space.budget,
            tuple_width(side) as usize,
        )?));
    }
    Ok(Box::new(sort::sort(&Source::Side(side, snap), space, cap)?))
}

fn estimated_bytes(s: &Side) -> Result<u64> {
    Ok((s.table.estimated_rows()? * tuple_width(s)) as u64)
}

/// The nominal bytes of a side's tuple: join value and output columns.
fn tuple_width(s: &Side) -> f64 {
    s.nominal_tuple_bytes() + hash::TUPLE_OVERHEAD as f64
}

/// The tiers a point read may visit: the memtables, then each level that
/// holds data.
fn levels_read(sv: &crate::db::SuperVersion) -> f64 {
    (0..sv.version.num_levels())
        .filter(|&l| sv.version.level_bytes(Level::from_index(l)) > 0)
        .count() as f64
        + 1.0
}

fn side_stats(s: &Side) -> Result<SideStats> {
    let t = &s.table;
    let sv = t.inner().keyspace.super_version()?;
    let rows = t.estimated_rows()?.max(1.0);
    let bytes: u64 = sv.version.all_files().map(|(_, f)| f.size).sum();
    let nominal = t
        .schema()
        .columns()
        .iter()
        .map(|c| c.ty.nominal_width() as f64)
        .sum::<f64>();
    let row_bytes = if bytes > 0 {
        bytes as f64 / rows
    } else {
        nominal
    };
    let levels = levels_read(&sv);
    let index = match s.index() {
        Some(i) => Some(index_stats(s, &i, rows)?),
        None => None,
    };
    Ok(SideStats {
        rows,
        row_bytes,
        tuple_bytes: tuple_width(s),
        levels,
        primary: s.is_primary(),
        index,
    })
}

/// The planner's statistics for each way of reading a join's sides
/// ([`Join::alternatives`]).
pub(crate) type PlanStats = Vec<(IndexChoice, JoinStats)>;

/// Indexes of one side the planner prices separately, at most.
const INDEX_ALTERNATIVES: usize = 8;

/// A side's ways of being read through an index, by name with its
/// statistics: `default` (the statistics with [`Side::index`]) first, then
/// each other usable index on the join column. A side read by its primary
/// key, or whose index is named, has the default alone.
fn index_alternatives(s: &Side, default: &SideStats) -> Result<Vec<(Option<String>, SideStats)>> {
    let first = s.index().map(|i| i.name.clone());
    let mut out = vec![(first.clone(), default.clone())];
    if s.is_primary() || s.preferred.is_some() {
        return Ok(out);
    }
    for i in s.usable_indexes() {
        if out.len() >= INDEX_ALTERNATIVES {
            break;
        }
        if first.as_deref() == Some(i.name.as_str()) {
            continue;
        }
        out.push((
            Some(i.name.clone()),
            SideStats {
                index: Some(index_stats(s, &i, default.rows)?),
                ..default.clone()
            },
        ));
    }
    Ok(out)
}

/// The indexes `method` reads on each side, by name.
fn read_indexes(method: JoinMethod, l: &Side, r: &Side) -> IndexChoice {
    let (a, b) = cost::index_sides(method, (l.is_primary(), r.is_primary()));
    let name = |s: &Side, reads: bool| s.index().filter(|_| reads).map(|i| i.name.clone());
    (name(l, a), name(r, b))
}

/// Entries of an index sampled to estimate primary keys per value.
const INDEX_SAMPLE: usize = 2000;

/// Hits of a posting list decoded at a time while sampling.
const INDEX_SAMPLE_PART: usize = 64;

fn index_stats(s: &Side, i: &crate::index::Index, rows: f64) -> Result<IndexStats> {
    let sv = i.keyspace.super_version()?;
    let files: Vec<_> = sv.version.all_files().map(|(_, f)| Arc::clone(f)).collect();
    let bytes: u64 = files.iter().map(|f| f.size).sum();
    let entries: u64 = files.iter().map(|f| f.num_entries).sum::<u64>() + sv.mem.len() as u64;
    let levels = levels_read(&sv);
    // Sample the first entries for keys per value, counting hits as they
    // are decoded (a part at a time: a covering index's hits carry their
    // columns) rather than holding the sample.
    let mut it = i.keyspace.iter(Default::default())?;
    it.seek_to_first();
    let (mut sampled, mut values) = (0usize, 0usize);
    let mut last_value: Option<Vec<u8>> = None;
    let mut part = Vec::new();
    'sample: while it.valid() && sampled < INDEX_SAMPLE {
        let mut from = 0;
        let mut first = true;
        loop {
            part.clear();
            let max = (INDEX_SAMPLE - sampled).min(INDEX_SAMPLE_PART);
            // A value's posting list is read only as far as the sample goes.
            let rest = crate::index::lookup::entry_hits_part(
                i,
                it.key(),
                it.value(),
                from,
                max,
                &mut part,
            )?;
            // A posting-list entry is one value; composite entries of one
            // value are neighbours.
            let new_value = match part.first() {
                _ if i.kind != IndexKind::Composite => first,
                Some(h) => last_value.as_deref() != Some(h.key.as_slice()),
                None => false,
            };
            values += usize::from(new_value);
            first = false;
            sampled += part.len();
            if let Some(h) = part.last().filter(|_| i.kind == IndexKind::Composite) {
                last_value = Some(h.key.clone());
            }
            match rest {
                None => break,
                Some(_) if sampled >= INDEX_SAMPLE => break 'sample,
                Some(at) => from = at,
            }
        }
        it.next();
    }
    it.status()?;
    // The sample reads the first entries; when it ends inside a value that
    // value is only partly counted, and when it saw one value only, all
    // that is known is that values are at least that crowded: assume the
    // worst (one value) rather than the sample's size.
    let full = sampled >= INDEX_SAMPLE;
    let d = match (values, full) {
        (0, _) => 1.0,
        (1, true) => rows.max(sampled as f64),
        (v, true) => sampled as f64 / (v - 1) as f64,
        (v, false) => sampled as f64 / v as f64,
    };
    let entry_bytes = if entries > 0 && bytes > 0 {
        bytes as f64 / entries as f64
    } else {
        (s.ty.nominal_width() as f64 + 16.0)
            * if i.kind == IndexKind::Composite {
                1.0
            } else {
                d
            }
    };
    Ok(IndexStats {
        kind: i.kind,
        consistency: i.consistency,
        covering: s.covered_by(i),
        levels,
        entry_bytes,
        keys_per_value: d,
    })
}

/// Outer tuples sampled to estimate the match ratio.
const MATCH_SAMPLE: usize = 200;

/// The estimated share of `outer`'s tuples with a match in `inner`, and
/// the inner rows found per outer tuple (matched or not): by point reads
/// or index lookups on a sample when `inner` has such an access path, else
/// 1 and 1 (no cheap way to tell). The sample is drawn by outer rows, so a
/// value many outer rows share weighs as much as they do: the fan-out
/// estimates a skewed join's output where an average per value would not.
/// Each distinct sampled value's inner rows are counted once, as they
/// stream (an index part at a time), never held together: a skewed
/// value's rows would otherwise be read, and held, once per outer row
/// that carries it, outside any join budget.
fn match_ratio(outer: &Side, inner: &Side, snap: crate::key::SeqNo) -> Result<(f64, f64)> {
    let index = inner.index();
    if !inner.is_primary() && index.is_none() {
        return Ok((1.0, 1.0));
    }
    let index = if inner.is_primary() {
        None
    } else {
        index.as_deref()
    };
    let mut scan = outer.sample(snap, MATCH_SAMPLE)?;
    let (mut seen, mut matched, mut found) = (0usize, 0usize, 0usize);
    let mut counted: std::collections::HashMap<Vec<u8>, usize> = Default::default();
    while seen < MATCH_SAMPLE {
        let Some((k, _)) = scan.next_tuple()? else {
            break;
        };
        seen += 1;
        let rows = match counted.get(&k) {
            Some(&n) => n,
            None => {
                let mut n = 0usize;
                inner.for_each_match(&k, index, snap, &mut |_| {
                    n += 1;
                    Ok(true)
                })?;
                counted.insert(k, n);
                n
            }
        };
        matched += usize::from(rows > 0);
        found += rows;
    }
    Ok(if seen == 0 {
        (1.0, 1.0)
    } else {
        (matched as f64 / seen as f64, found as f64 / seen as f64)
    })
}

/// The machine's cores (1 when unknown): a join's threads beyond them
/// share cores and gain nothing.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}
