//! Multi-way joins as a chain of binary joins.
//!
//! The first join runs as a [`Join`]; each further step joins the rows so
//! far with one more table on a column of an earlier table. Between steps
//! the rows so far go to a spill file, keyed by the next step's join value
//! (every column so far as one payload: payloads concatenate), so a chain
//! keeps the same memory budget as one join. Each step's method is the
//! planner's, from the spilled rows' count and size and the new table's
//! statistics, or the one named.

use std::sync::Arc;

use super::cost::{JoinStats, SideStats, plan};
use super::hash::{self, Source};
use super::output::{CountSink, Emit, Sink};
use super::side::Side;
use super::spill::{Budget, SpillFile, SpillSpace, SpillWriter};
use super::{Join, JoinMethod, JoinSummary, inlj, side_stats, sort};
use crate::error::{Error, Result};
use crate::index::codec::decode_payload;
use crate::table::keycodec;
use crate::table::{ColumnType, Table};

/// One step after the first join.
#[derive(Clone)]
struct Step {
    /// `TABLE.column` of a table joined before.
    on: String,
    right: Table,
    right_column: String,
    method: JoinMethod,
}

/// A multi-way inner equi-join: `first`, then each step's table joined on
/// a column of the rows so far. Counts its rows like [`Join::count`].
#[derive(Clone)]
pub struct JoinChain {
    first: Join,
    steps: Vec<Step>,
}

/// The rows so far: their columns (`TABLE.column`) and types.
struct Columns {
    names: Vec<String>,
    types: Vec<ColumnType>,
}

impl Columns {
    fn of(tables: &[&Table]) -> Columns {
        let mut c = Columns {
            names: Vec::new(),
            types: Vec::new(),
        };
        for t in tables {
            c.push(t);
        }
        c
    }

    fn push(&mut self, t: &Table) {
        for col in t.schema().columns() {
            self.names.push(format!("{}.{}", t.name(), col.name));
            self.types.push(col.ty);
        }
    }

    fn find(&self, name: &str) -> Result<usize> {
        self.names.iter().position(|n| n == name).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "the chain's rows so far have no column {name:?} (they have {})",
                self.names.join(", ")
            ))
        })
    }
}

/// Writes each pair as one row of the rows so far, keyed by the next
/// step's join value (rows whose value is null are dropped: they cannot
/// join).
struct SpillSink<'s> {
    writer: SpillWriter<'s>,
    types: &'s [ColumnType],
    at: usize,
    rows: u64,
    row: Vec<u8>,
}

impl Sink for SpillSink<'_> {
    fn emit(&mut self, left: &[u8], right: &[u8]) -> Result<()> {
        self.row.clear();
        self.row.extend_from_slice(left);
        self.row.extend_from_slice(right);
        let values = decode_payload(&self.row, self.types).ok_or_else(|| {
            Error::corruption(
                "join chain",
                0,
                "malformed row in a join chain's spill file",
            )
        })?;
        let v = &values[self.at];
        if v.is_null() {
            return Ok(());
        }
        let mut key = Vec::new();
        keycodec::encode_value(&mut key, self.types[self.at], v)?;
        self.rows += 1;
        self.writer.push(&key, &self.row)
    }
}

impl JoinChain {
    /// A chain starting with `first` (its columns and method are its own;
    /// its output is every column of both tables).
    pub fn new(first: Join) -> JoinChain {
        JoinChain {
            first,
            steps: Vec::new(),
        }
    }

    /// Joins the rows so far with `right` on `on` (`TABLE.column` of a
    /// table joined before) `= right.right_column`, by the planner's method.
    pub fn then(mut self, on: &str, right: &Table, right_column: &str) -> JoinChain {
        self.steps.push(Step {
            on: on.to_string(),
            right: right.clone(),
            right_column: right_column.to_string(),
            method: JoinMethod::Auto,
        });
        self
    }

    /// Runs the last step added by `method` (hash, sort-merge, or a nested
    /// loop reading the new table by primary key or index).
    pub fn method(mut self, method: JoinMethod) -> JoinChain {
        if let Some(s) = self.steps.last_mut() {
            s.method = method;
        }
        self
    }

    /// Runs the chain, counting its rows and summing a hash of each (the
    /// same for any methods). The summary's method is the last step's.
    pub fn count(&self) -> Result<JoinSummary> {
        // The rows so far are every column of every table joined.
        let mut first = self.first.clone();
        first.columns = None;
        first.check()?;
        let mut tables: Vec<&Table> = vec![&first.left, &first.right];
        for s in &self.steps {
            if !s.right.core().same_database(first.left.core()) {
                return Err(Error::InvalidArgument(format!(
                    "table {:?} is in another database than {:?}; a chain reads one database",
                    s.right.name(),
                    first.left.name()
                )));
            }
            if tables.iter().any(|t| t.name() == s.right.name()) {
                return Err(Error::InvalidArgument(format!(
                    "table {:?} is in the chain twice; a chain joins distinct tables",
                    s.right.name()
                )));
            }
            tables.push(&s.right);
        }
        let Some((last, middle)) = self.steps.split_last() else {
            return first.count();
        };
        let budget = Arc::new(Budget::new(first.memory_bytes));
        let space = SpillSpace::new(first.left.core(), Arc::clone(&budget));
        let mut cols = Columns::of(&tables[..2]);
        // The first join, into a spill file keyed by the next step's value.
        let first = first.resolved()?;
        let method = first.method;
        let out = first.output()?;
        let (l, r) = first.sides(&out)?;
        let rights = self
            .steps
            .iter()
            .map(|s| Side::new(s.right.clone(), &s.right_column, all_columns(&s.right)))
            .collect::<Result<Vec<Side>>>()?;
        // Every step reads at one snapshot, so that the chain's result is
        // one state of the database under concurrent writes.
        let mut sides = vec![&l, &r];
        sides.extend(rights.iter());
        let (snap, held) = first.read_point(&sides)?;
        let mut file = {
            let mut sink = SpillSink {
                writer: space.create(sink_block(&space))?,
                types: &cols.types,
                at: cols.find(&self.steps[0].on)?,
                rows: 0,
                row: Vec::new(),
            };
            super::execute_at(&first, method, &l, &r, &mut sink, &space, snap)?;
            (sink.writer.finish()?, sink.rows)
        };
        for (n, step) in middle.iter().enumerate() {
            let right = &rights[n];
            let mut next = cols.types.clone();
            next.extend(right.types.iter().copied());
            let mut names = cols.names.clone();
            names.extend(Columns::of(&[&step.right]).names);
            let next_cols = Columns { names, types: next };
            let out = {
                let mut sink = SpillSink {
                    writer: space.create(sink_block(&space))?,
                    types: &next_cols.types,
                    at: next_cols.find(&self.steps[n + 1].on)?,
                    rows: 0,
                    row: Vec::new(),
                };
                run_step(step, &file, &cols, right, &space, &mut sink, snap)?;
                (sink.writer.finish()?, sink.rows)
            };
            file = out;
            cols = next_cols;
        }
        let right = &rights[middle.len()];
        let mut sink = CountSink::default();
        let last_method = run_step(last, &file, &cols, right, &space, &mut sink, snap)?;
        let last_index = super::cost::index_sides(last_method, (false, right.is_primary()))
            .1
            .then(|| right.index_at(snap).map(|i| i.name.clone()))
            .flatten();
        drop(held);
        Ok(JoinSummary {
            rows: sink.rows,
            checksum: sink.checksum,
            method: last_method,
            peak_memory_bytes: budget.peak() as u64,
            spilled_bytes: space.bytes_written(),
            indexes: (None, last_index),
        })
    }
}

/// The write buffer of the spill file between two steps.
fn sink_block(space: &SpillSpace) -> usize {
    (space.budget.limit() / 16).clamp(4 << 10, 64 << 10)
}

fn all_columns(t: &Table) -> Vec<usize> {
    (0..t.schema().columns().len()).collect()
}

/// Joins the spilled rows so far (`file`, keyed by `step.on`) with
/// `right` at `snap` (the chain's snapshot); emits (rows so far, right
/// row) pairs. Returns the method run.
fn run_step(
    step: &Step,
    file: &(SpillFile, u64),
    cols: &Columns,
    right: &Side,
    space: &SpillSpace,
    sink: &mut dyn Sink,
    snap: crate::key::SeqNo,
) -> Result<JoinMethod> {
    let on = cols.find(&step.on)?;
    if cols.types[on] != right.ty {
        return Err(Error::InvalidArgument(format!(
            "{} ({}) and {}.{} ({}) have different types",
            step.on,
            cols.types[on],
            right.name(),
            step.right_column,
            right.ty
        )));
    }
    let (f, rows) = (&file.0, file.1);
    let method = match step.method {
        JoinMethod::Auto => {
            let bytes = f.len() as f64;
            let n = (rows as f64).max(1.0);
            let left = SideStats {
                rows: n,
                row_bytes: bytes / n,
                tuple_bytes: bytes / n + hash::TUPLE_OVERHEAD as f64,
                levels: 0.0,
                primary: false,
                index: None,
            };
            let stats = JoinStats {
                right: side_stats(right)?,
                left,
                left_match: 1.0,
                right_match: 1.0,
                left_fanout: 1.0,
                block_bytes: 4096.0,
                bloom_fpr: 0.01,
                memory_bytes: space.budget.limit() as f64,
                cpu_per_tuple: super::CPU_PER_TUPLE,
                threads: 1.0,
            };
            // The rows so far have no index and no key: only methods that
            // read them as a stream can run.
            plan(&stats)
                .candidates
                .into_iter()
                .filter(|c| step_can_run(c.method, right))
                .filter_map(|c| c.cost.map(|x| (x, c.method)))
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .map_or(JoinMethod::HybridHash, |(_, m)| m)
        }
        m if step_can_run(m, right) => m,
        m => {
            return Err(Error::InvalidArgument(format!(
                "{} cannot run as a step of a chain here (the rows so far have no key or \
                 index; the new table needs its primary key or an index for a nested loop)",
                m.name()
            )));
        }
    };
    let mut emit = Emit {
        sink,
        swapped: false,
    };
    match method {
        JoinMethod::NestedLoopPrimaryRight | JoinMethod::NestedLoopIndexRight => {
            let index = if method == JoinMethod::NestedLoopIndexRight {
                Some(
                    right
                        .index_at(snap)
                        .ok_or_else(|| super::no_index(method, right))?,
                )
            } else {
                None
            };
            inlj::nested_loop(
                &Source::File(f),
                right,
                index.as_deref(),
                snap,
                1,
                space,
                &mut emit,
            )?;
        }
        JoinMethod::SortMerge | JoinMethod::SortMergeIndex => {
            let cap = space.budget.limit() * 3 / 8;
            let mut a = sort::sort(&Source::File(f), space, cap)?;
            let index = if method == JoinMethod::SortMergeIndex && !right.is_primary() {
                right.index_at(snap)
            } else {
                None
            };
            let mut b = super::ordered(right, index.as_deref(), snap, space, cap)?;
            sort::merge_join(&mut a, b.as_mut(), space, &mut emit)?;
        }
        _ => {
            // Build on the rows so far: they are usually the smaller side
            // once filtered by the earlier joins.
            hash::hash_join(
                &Source::File(f),
                &Source::Side(right, snap),
                f.len(),
                method == JoinMethod::HybridHash,
                hash::HashRun::new(space, 1),
                &mut emit,
            )?;
        }
    }
    Ok(method)
}

fn step_can_run(m: JoinMethod, right: &Side) -> bool {
    match m {
        JoinMethod::NestedLoopPrimaryRight => right.is_primary(),
        JoinMethod::NestedLoopIndexRight => right.index().is_some(),
        JoinMethod::SortMergeIndex => right.index().is_some() || right.is_primary(),
        JoinMethod::SortMerge | JoinMethod::GraceHash | JoinMethod::HybridHash => true,
        _ => false,
    }
}
