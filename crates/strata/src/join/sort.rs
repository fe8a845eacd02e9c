//! External sort and the merge join over two sorted tuple streams.
//!
//! The sort fills a buffer up to its share of the budget, sorts it by join
//! value and writes it as a run; at the end, runs are merged k at a time
//! (k limited so that the readers' block buffers fit the budget, with
//! intermediate passes when there are more runs) into one sorted stream.
//! A side that fits its share is sorted in memory and never written.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::hash::{Source, tuple_bytes};
use super::output::Emit;
use super::side::TupleStream;
use super::spill::{Budget, SpillFile, SpillReader, SpillSpace, SpillWriter};
use crate::error::Result;

/// The write buffer of a sort run.
const RUN_BLOCK: usize = 32 << 10;

type Tuple = (Vec<u8>, Vec<u8>);

/// A sorted stream: in memory (its bytes charged until dropped) or a merge
/// of runs.
pub(crate) enum Sorted<'s> {
    Memory {
        tuples: std::vec::IntoIter<Tuple>,
        budget: &'s Budget,
        charged: usize,
    },
    Merge(Merger<'s>),
}

impl Drop for Sorted<'_> {
    fn drop(&mut self) {
        if let Sorted::Memory {
            budget, charged, ..
        } = self
        {
            budget.release(*charged);
        }
    }
}

impl TupleStream for Sorted<'_> {
    fn next_tuple(&mut self) -> Result<Option<Tuple>> {
        match self {
            Sorted::Memory { tuples, .. } => Ok(tuples.next()),
            Sorted::Merge(m) => m.next_tuple(),
        }
    }
}

/// Sorts `source` by join value using at most `cap` bytes of buffer.
pub(crate) fn sort<'s>(
    source: &Source<'_>,
    space: &'s SpillSpace,
    cap: usize,
) -> Result<Sorted<'s>> {
    let budget = &*space.budget;
    let mut buf: Vec<Tuple> = Vec::new();
    let mut charged = 0usize;
    let mut runs: Vec<SpillFile> = Vec::new();
    source.for_each(&space.budget, &mut |k, r| {
        let n = tuple_bytes(k, r);
        if charged + n > cap || !budget.try_charge(n) {
            if !buf.is_empty() {
                runs.push(write_run(space, &mut buf, &mut charged)?);
            }
            budget.charge(n, "one join tuple")?;
        }
        charged += n;
        buf.push((k.to_vec(), r.to_vec()));
        Ok(())
    })?;
    if runs.is_empty() {
        buf.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        return Ok(Sorted::Memory {
            tuples: buf.into_iter(),
            budget,
            charged,
        });
    }
    if !buf.is_empty() {
        runs.push(write_run(space, &mut buf, &mut charged)?);
    }
    Ok(Sorted::Merge(merge_runs(runs, space)?))
}

/// Sorts `buf` and writes it as a run; releases its charge.
fn write_run(space: &SpillSpace, buf: &mut Vec<Tuple>, charged: &mut usize) -> Result<SpillFile> {
    buf.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut w = space.create(RUN_BLOCK)?;
    for (k, r) in buf.drain(..) {
        w.push(&k, &r)?;
    }
    let f = w.finish()?;
    space.budget.release(*charged);
    *charged = 0;
    Ok(f)
}

/// How many runs one merge may read at once: their block buffers take at
/// most a quarter of the budget.
fn fan_in(budget: &Budget) -> usize {
    (budget.limit() / 4 / (RUN_BLOCK + 8)).max(2)
}

/// Merges `runs` into one stream, with intermediate passes while there are
/// more runs than one merge may read.
fn merge_runs<'s>(mut runs: Vec<SpillFile>, space: &'s SpillSpace) -> Result<Merger<'s>> {
    let k = fan_in(&space.budget);
    while runs.len() > k {
        let rest = runs.split_off(k);
        let mut m = Merger::new(std::mem::replace(&mut runs, rest), space)?;
        let mut w: SpillWriter<'_> = space.create(RUN_BLOCK)?;
        while let Some((key, row)) = m.next_tuple()? {
            w.push(&key, &row)?;
        }
        drop(m);
        runs.push(w.finish()?);
    }
    Merger::new(runs, space)
}

/// A k-way merge of sorted runs.
pub(crate) struct Merger<'s> {
    runs: Vec<SpillFile>,
    readers: Vec<SpillReader>,
    heap: BinaryHeap<Head>,
    budget: &'s Budget,
    /// The bytes of the tuples on the heap, charged to `budget`.
    charged: usize,
}

struct Head {
    key: Vec<u8>,
    row: Vec<u8>,
    run: usize,
}

impl PartialEq for Head {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Head {
    // The heap is a max-heap: reverse, so the smallest key (then the
    // earliest run) comes out first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.key.cmp(&self.key).then(o.run.cmp(&self.run))
    }
}

impl<'s> Merger<'s> {
    fn new(runs: Vec<SpillFile>, space: &'s SpillSpace) -> Result<Merger<'s>> {
        let mut m = Merger {
            readers: runs.iter().map(SpillFile::reader).collect(),
            runs,
            heap: BinaryHeap::new(),
            budget: &space.budget,
            charged: 0,
        };
        for run in 0..m.readers.len() {
            m.refill(run)?;
        }
        Ok(m)
    }

    /// Puts run `run`'s next tuple on the heap, charged while it is there
    /// (each reader charges its own block buffer).
    fn refill(&mut self, run: usize) -> Result<()> {
        if let Some((key, row)) = self.readers[run].next_record()? {
            let n = tuple_bytes(&key, &row);
            self.budget.charge(n, "the sort merge's head tuples")?;
            self.charged += n;
            self.heap.push(Head { key, row, run });
        }
        Ok(())
    }
}

impl Drop for Merger<'_> {
    fn drop(&mut self) {
        self.budget.release(self.charged);
        // The readers release their buffers before their files go.
        self.readers.clear();
        self.runs.clear();
    }
}

impl TupleStream for Merger<'_> {
    fn next_tuple(&mut self) -> Result<Option<Tuple>> {
        let Some(h) = self.heap.pop() else {
            return Ok(None);
        };
        let n = tuple_bytes(&h.key, &h.row);
        self.budget.release(n);
        self.charged -= n;
        self.refill(h.run)?;
        Ok(Some((h.key, h.row)))
    }
}

/// Charges `n` bytes if a spill file's buffer would still fit after them.
fn room_after(budget: &super::spill::Budget, n: usize) -> bool {
    if budget.try_charge(n + RUN_BLOCK) {
        budget.release(RUN_BLOCK);
        true
    } else {
        false
    }
}

/// Joins two streams sorted by join value: for each value, the second
/// stream's rows are gathered (in memory while they fit a quarter of the
/// budget, else in a spill file) and paired with each of the first's.
pub(crate) fn merge_join(
    first: &mut dyn TupleStream,
    second: &mut dyn TupleStream,
    space: &SpillSpace,
    emit: &mut Emit<'_>,
) -> Result<()> {
    let budget = &*space.budget;
    let cap = budget.limit() / 4;
    let mut a = first.next_tuple()?;
    let mut b = second.next_tuple()?;
    while let (Some((ka, _)), Some((kb, _))) = (&a, &b) {
        match ka.cmp(kb) {
            Ordering::Less => a = first.next_tuple()?,
            Ordering::Greater => b = second.next_tuple()?,
            Ordering::Equal => {
                let key = kb.clone();
                // Gather the second stream's group.
                let mut group: Vec<Vec<u8>> = Vec::new();
                let mut charged = 0usize;
                let mut file: Option<SpillWriter<'_>> = None;
                while let Some((k, r)) = b.take() {
                    if k != key {
                        b = Some((k, r));
                        break;
                    }
                    let n = tuple_bytes(&k, &r);
                    match &mut file {
                        Some(w) => w.push(&k, &r)?,
                        // A tuple joins the group in memory only while a
                        // spill file's buffer would still fit beside it, in
                        // the group's share and in the budget: the group
                        // goes to a file before it is released.
                        None if charged + n + RUN_BLOCK <= cap && room_after(budget, n) => {
                            charged += n;
                            group.push(r);
                        }
                        None => {
                            let mut w = space.create(RUN_BLOCK)?;
                            for g in group.drain(..) {
                                w.push(&key, &g)?;
                            }
                            budget.release(charged);
                            charged = 0;
                            w.push(&k, &r)?;
                            file = Some(w);
                        }
                    }
                    b = second.next_tuple()?;
                }
                let file = file.map(SpillWriter::finish).transpose()?;
                // Pair it with each of the first stream's rows of the value.
                while let Some((k, r)) = a.take() {
                    if k != key {
                        a = Some((k, r));
                        break;
                    }
                    match &file {
                        None => {
                            for g in &group {
                                emit.pair(&r, g)?;
                            }
                        }
                        Some(f) => {
                            let mut rd = f.reader();
                            while let Some((_, g)) = rd.next_record()? {
                                emit.pair(&r, &g)?;
                            }
                        }
                    }
                    a = first.next_tuple()?;
                }
                budget.release(charged);
            }
        }
    }
    Ok(())
}
