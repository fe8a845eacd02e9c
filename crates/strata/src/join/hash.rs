//! Grace and hybrid hash joins under a memory budget.
//!
//! Both partition the build side and then the probe side by a hash of the
//! join value into spill files, and join each pair of partitions with an
//! in-memory hash table of the build partition. Grace hash partitions
//! everything; hybrid hash keeps partition 0 of the build side in memory
//! and joins the probe side's partition 0 as it streams past, so a build
//! side that fits the budget is never written out (on several threads,
//! with other partitions spilled, the probe side's partition 0 is written
//! and joined with them, so that its probes run on every thread). A build partition too
//! big for memory (skew) is partitioned again with another hash seed; after
//! [`MAX_DEPTH`] rounds (one value with more rows than memory holds, which
//! no hash can split) it is joined in memory-sized chunks, each against the
//! whole probe partition.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::output::{Emit, Forked, Sink};
use super::side::{Side, TupleFn};
use super::spill::{Budget, SpillFile, SpillSpace, SpillWriter};
use super::table::{HashTable, PROBE_GROUP};
use crate::error::{Error, Result};
use crate::key::SeqNo;

/// Bytes a buffered tuple costs beyond its key and row: its two vectors'
/// headers and its share of a sort buffer.
pub(crate) const TUPLE_OVERHEAD: usize = 64;
/// Rounds of re-partitioning before a partition is joined in chunks.
pub(crate) const MAX_DEPTH: u32 = 3;
/// Most partitions per round (the study's artifact uses up to 500).
const MAX_PARTITIONS: u64 = 256;

pub(crate) fn tuple_bytes(key: &[u8], row: &[u8]) -> usize {
    key.len() + row.len() + TUPLE_OVERHEAD
}

/// Where a phase reads tuples from: a table side or a spill file.
pub(crate) enum Source<'a> {
    Side(&'a Side, SeqNo),
    File(&'a SpillFile),
}

impl Source<'_> {
    /// Calls `f` with every tuple, borrowed (copy what outlives the call);
    /// a table's scan charges what it holds to `budget`.
    pub(crate) fn for_each(&self, budget: &Arc<Budget>, f: &mut TupleFn<'_>) -> Result<()> {
        match self {
            Source::Side(side, snap) => side.scan_any_order(*snap, budget)?.for_each(f),
            Source::File(file) => {
                let mut reader = file.reader();
                while let Some((k, r)) = reader.next_ref()? {
                    f(k, r)?;
                }
                Ok(())
            }
        }
    }
}

fn partition_of(key: &[u8], depth: u32, parts: u64) -> usize {
    (xxh3_64_with_seed(key, 131 + u64::from(depth)) % parts) as usize
}

/// The partitions for a build side of about `bytes`: enough that each fits
/// `table_cap` bytes of hash table.
fn partitions_for(bytes: u64, table_cap: usize, at_least: u64) -> u64 {
    let mem = table_cap.max(1) as u64;
    (bytes.saturating_mul(5) / 4 / mem + 1).clamp(at_least, MAX_PARTITIONS)
}

/// The partitions of one partitioning round of a build side whose hash
/// table would take about `table_bytes`. A hybrid join whose build side
/// fits one table keeps it all in memory; otherwise partitions are sized
/// for the tables of the `threads` that will join them at once. A round
/// past the first splits a partition whose table did not fit `cap`, so it
/// makes at least two, whatever the estimate says.
fn partition_count(table_bytes: u64, cap: usize, threads: usize, hybrid: bool, depth: u32) -> u64 {
    if depth == 0 && hybrid && partitions_for(table_bytes, cap, 1) == 1 {
        return 1;
    }
    // Past that return nothing stays whole: a first hybrid round that does
    // not fit one table gets two or more from its size already.
    partitions_for(table_bytes, cap / threads.max(1), 2)
}

/// About the bytes a hash table of `file`'s tuples takes: each tuple's
/// key and row (the file's bytes, a little more than those) and
/// [`TUPLE_OVERHEAD`] each for its entry and slots. Sizing a split by the
/// file's bytes alone undercounts small tuples several times over, and
/// the split's partitions then did not fit either.
fn file_table_bytes(file: &SpillFile) -> u64 {
    file.len()
        .saturating_add(file.records().saturating_mul(TUPLE_OVERHEAD as u64))
}

/// The hash-table bytes a whole join may hold at once: half the budget
/// (the rest is the spill files' buffers and the probe side's reads).
fn join_table_cap(budget: &Budget) -> usize {
    budget.limit() / 2
}

/// Where and with what a hash join (or one of its partition pairs) runs.
#[derive(Clone, Copy)]
pub(crate) struct HashRun<'a> {
    pub space: &'a SpillSpace,
    /// The partitioning round: 0 for a join, one more for each time a
    /// partition is partitioned again (it seeds the hash).
    pub depth: u32,
    /// Threads that may join spilled partition pairs at once.
    pub threads: usize,
    /// The hash-table bytes this run may hold at once: half the budget
    /// for a join, a thread's share when a partition is joined again.
    pub cap: usize,
}

impl<'a> HashRun<'a> {
    /// A whole join in `space` on up to `threads` threads.
    pub(crate) fn new(space: &'a SpillSpace, threads: usize) -> HashRun<'a> {
        HashRun {
            space,
            depth: 0,
            threads: threads.max(1),
            cap: join_table_cap(&space.budget),
        }
    }
}

/// The write-buffer size of one of `parts` partition files: together they
/// take at most an eighth of the budget.
fn block_for(budget: &Budget, parts: u64) -> usize {
    (budget.limit() / 8 / parts.max(1) as usize).clamp(512, 64 << 10)
}

/// Joins `build` with `probe`, emitting (build row, probe row) pairs.
/// `build_bytes` estimates the build side's size; `hybrid` keeps its
/// partition 0 in memory; the spilled partitions are joined on up to
/// `run.threads` threads when the sink can be forked, which split
/// `run.cap`.
pub(crate) fn hash_join(
    build: &Source<'_>,
    probe: &Source<'_>,
    build_bytes: u64,
    hybrid: bool,
    run: HashRun<'_>,
    emit: &mut Emit<'_>,
) -> Result<()> {
    let HashRun {
        space,
        depth,
        threads,
        cap,
    } = run;
    let budget = &*space.budget;
    let parts = partition_count(build_bytes, cap, threads, hybrid, depth);
    let block = block_for(budget, parts);
    // With spilled partitions to join on several threads, a kept partition
    // 0 is probed among them instead of as the probe side streams past:
    // inline, its probes and pairs run on the one thread that partitions,
    // while the others wait for its spill files (on two cores the grace
    // join was 1.1-1.3 times as fast on secondary joins, and level on one
    // thread). Its table then takes one thread's share of the cap, as each
    // spilled partition's does.
    let defer0 = hybrid && parts > 1 && threads > 1 && emit.sink.fork().is_some();
    // Partition the build side; hybrid keeps partition 0 in memory while it
    // fits, and spills it (once) when it stops fitting.
    let mut table0 = Table0 {
        table: HashTable::new(budget, if defer0 { cap / threads } else { cap }),
        keep: hybrid,
        writers: (0..parts).map(|_| None).collect(),
        space,
        block,
    };
    let mut group = TupleGroup::new(budget, hybrid);
    build.for_each(&space.budget, &mut |k, r| {
        let p = partition_of(k, depth, parts);
        if p == 0 && table0.keep {
            if !group.add_or(k, r, |g| table0.insert_group(g))? {
                table0.insert(k, r, None)?;
            }
            return Ok(());
        }
        writer(&mut table0.writers, p, space, block)?.push(k, r)
    })?;
    table0.insert_group(&mut group)?;
    drop(group);
    let Table0 {
        table: table0,
        keep: keep0,
        writers,
        ..
    } = table0;
    let build_files = finish_all(writers)?;
    // Partition the probe side, joining partition 0 at once when it stayed
    // in memory and is not probed among the spilled partitions.
    let inline0 = keep0 && !defer0;
    // Partition 0's probe tuples can match only when its build side was
    // spilled or kept with a tuple in it.
    let kept0 = keep0 && !table0.is_empty();
    let mut writers: Vec<Option<SpillWriter<'_>>> = (0..parts).map(|_| None).collect();
    let mut group = TupleGroup::new(budget, inline0);
    probe.for_each(&space.budget, &mut |k, r| {
        let p = partition_of(k, depth, parts);
        if p == 0 && inline0 {
            if !group.add_or(k, r, |g| g.probe(&table0, emit))? {
                table0.for_each_match(k, |b| emit.pair(b, r))?;
            }
            return Ok(());
        }
        if build_files[p].is_none() && !(p == 0 && kept0) {
            // No build tuple hashed here: nothing can match.
            return Ok(());
        }
        writer(&mut writers, p, space, block)?.push(k, r)
    })?;
    group.probe(&table0, emit)?;
    drop(group);
    let probe_files = finish_all(writers)?;
    let kept = match (&probe_files[0], keep0 && defer0) {
        (Some(file), true) => Some((table0, file)),
        _ => {
            drop(table0);
            None
        }
    };
    let pairs: Vec<(&SpillFile, &SpillFile)> = build_files
        .iter()
        .zip(&probe_files)
        .filter_map(|(b, p)| Some((b.as_ref()?, p.as_ref()?)))
        .collect();
    join_partitions(&pairs, kept, run, emit)
}

/// A build partition kept in memory and the probe partition it joins.
type Kept<'t, 'f> = (HashTable<'t>, &'f SpillFile);

/// Joins each pair of partitions, and first a `kept` partition whose
/// table is already built: on `threads` threads, each with a fork of the
/// sink and its own hash table (an equal share of `cap`; the thread that
/// takes the kept one builds none while it holds it), taking pairs in
/// turn; on this one when one thread is asked for, there is one pair, or
/// the sink does not fork.
fn join_partitions(
    pairs: &[(&SpillFile, &SpillFile)],
    kept: Option<Kept<'_, '_>>,
    run: HashRun<'_>,
    emit: &mut Emit<'_>,
) -> Result<()> {
    let workers = run.threads.min(pairs.len() + usize::from(kept.is_some()));
    let forks: Vec<_> = if workers > 1 {
        let parent: &dyn Sink = &*emit.sink;
        (0..workers).map_while(|_| parent.fork()).collect()
    } else {
        Vec::new()
    };
    if forks.len() < 2 {
        drop(forks);
        if let Some((table, probe)) = kept {
            probe_file(&table, probe, emit)?;
        }
        for &(b, p) in pairs {
            join_partition(b, p, run, emit)?;
        }
        return Ok(());
    }
    let kept = std::sync::Mutex::new(kept);
    let run = HashRun {
        cap: run.cap / forks.len(),
        ..run
    };
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let swapped = emit.swapped;
    let results: Vec<Result<Forked>> = std::thread::scope(|s| {
        let handles: Vec<_> = forks
            .into_iter()
            .map(|mut sink| {
                let (next, failed) = (&next, &failed);
                let kept = &kept;
                s.spawn(move || -> Result<Forked> {
                    // A panic stops the other threads too.
                    let _stop = StopOnPanic(failed);
                    let mut emit = Emit {
                        sink: sink.as_mut(),
                        swapped,
                    };
                    let mine = kept.lock().unwrap_or_else(|e| e.into_inner()).take();
                    if let Some((table, probe)) = mine
                        && let Err(e) = probe_file(&table, probe, &mut emit)
                    {
                        failed.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                    while !failed.load(Ordering::Relaxed) {
                        let Some(&(b, p)) = pairs.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            break;
                        };
                        if let Err(e) = join_partition(b, p, run, &mut emit) {
                            // The other threads stop at their next pair.
                            failed.store(true, Ordering::Relaxed);
                            return Err(e);
                        }
                    }
                    sink.close()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::InvalidArgument(
                        "a thread joining hash partitions panicked".into(),
                    ))
                })
            })
            .collect()
    });
    for r in results {
        emit.sink.absorb(r?);
    }
    Ok(())
}

/// Raises a flag when dropped by a panicking thread.
struct StopOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

fn writer<'a, 's>(
    writers: &'a mut [Option<SpillWriter<'s>>],
    p: usize,
    space: &'s SpillSpace,
    block: usize,
) -> Result<&'a mut SpillWriter<'s>> {
    if writers[p].is_none() {
        writers[p] = Some(space.create(block)?);
    }
    // The slot was filled just above when empty; `Option::insert` cannot
    // be used here because creating the writer can fail.
    Ok(writers[p].as_mut().expect("created above"))
}

fn finish_all(writers: Vec<Option<SpillWriter<'_>>>) -> Result<Vec<Option<SpillFile>>> {
    writers
        .into_iter()
        .map(|w| w.map(SpillWriter::finish).transpose())
        .collect()
}

/// Joins one build partition with its probe partition, its hash table
/// holding at most `run.cap` bytes.
fn join_partition(
    build: &SpillFile,
    probe: &SpillFile,
    run: HashRun<'_>,
    emit: &mut Emit<'_>,
) -> Result<()> {
    let HashRun {
        space, depth, cap, ..
    } = run;
    let budget = &*space.budget;
    let mut table = HashTable::new(budget, cap);
    let mut reader = build.reader();
    let mut overflow = None;
    while let Some((k, r)) = reader.next_ref()? {
        if !table.try_insert(k, r) {
            overflow = Some((k.to_vec(), r.to_vec()));
            break;
        }
    }
    let Some(first_left_over) = overflow else {
        return probe_file(&table, probe, emit);
    };
    if depth < MAX_DEPTH {
        // The next round reads the file again from its start: its table
        // and this reader's block go back to the budget first.
        drop(table);
        drop(reader);
        return hash_join(
            &Source::File(build),
            &Source::File(probe),
            file_table_bytes(build),
            true,
            HashRun {
                depth: depth + 1,
                threads: 1,
                ..run
            },
            emit,
        );
    }
    // One value (or a few) with more rows than memory: join in chunks.
    probe_file(&table, probe, emit)?;
    drop(table);
    let mut pending = Some(first_left_over);
    loop {
        let mut chunk = HashTable::new(budget, cap);
        let mut more = false;
        if let Some((k, r)) = pending.take()
            && !chunk.try_insert(&k, &r)
        {
            // A single tuple larger than the budget's half.
            budget.charge(tuple_bytes(&k, &r), "one join tuple")?;
            let mut rp = probe.reader();
            while let Some((pk, pr)) = rp.next_record()? {
                if pk == k {
                    emit.pair(&r, &pr)?;
                }
            }
            budget.release(tuple_bytes(&k, &r));
            continue;
        }
        while let Some((k, r)) = reader.next_record()? {
            if !chunk.try_insert(&k, &r) {
                pending = Some((k, r));
                more = true;
                break;
            }
        }
        if !chunk.is_empty() {
            probe_file(&chunk, probe, emit)?;
        }
        if !more {
            return Ok(());
        }
    }
}

fn probe_file(table: &HashTable<'_>, probe: &SpillFile, emit: &mut Emit<'_>) -> Result<()> {
    let mut group = TupleGroup::new(table.budget(), true);
    let mut r = probe.reader();
    while let Some((k, row)) = r.next_ref()? {
        if !group.add_or(k, row, |g| g.probe(table, emit))? {
            table.for_each_match(k, |b| emit.pair(b, row))?;
        }
    }
    group.probe(table, emit)
}

/// A hybrid join's in-memory build partition, and the spill files it
/// falls back to.
struct Table0<'a, 'b> {
    table: HashTable<'b>,
    /// Whether partition 0 is still kept in memory.
    keep: bool,
    writers: Vec<Option<SpillWriter<'a>>>,
    space: &'a SpillSpace,
    block: usize,
}

impl Table0<'_, '_> {
    /// Inserts a group of partition 0's build tuples, spilling the
    /// partition (once) when a tuple no longer fits; empties the group.
    /// The group's slots, and the entries they name, are read ahead of the
    /// inserts ([`HashTable::warm`]); an insert that grows the slot array
    /// leaves the rest of the group to miss as before.
    fn insert_group(&mut self, group: &mut TupleGroup<'_>) -> Result<()> {
        let (keys, _) = group.split();
        let mut hashes = [0u64; PROBE_GROUP];
        self.table
            .warm(&keys[..group.len()], &mut hashes[..group.len()]);
        for ((k, r), &h) in group.tuples().zip(&hashes) {
            self.insert(k, r, Some(h))?;
        }
        group.clear();
        Ok(())
    }

    /// Inserts one tuple (its key's hash, when known), or spills it (and
    /// the partition, once) when it no longer fits.
    fn insert(&mut self, k: &[u8], r: &[u8], hash: Option<u64>) -> Result<()> {
        if self.keep {
            let fits = match hash {
                Some(h) => self.table.try_insert_hashed(k, r, h),
                None => self.table.try_insert(k, r),
            };
            if fits {
                return Ok(());
            }
        }
        let w = writer(&mut self.writers, 0, self.space, self.block)?;
        if self.keep {
            self.keep = false;
            self.table.for_each(|k, r| w.push(k, r))?;
            self.table.clear();
        }
        w.push(k, r)
    }
}

/// Tuples gathered [`PROBE_GROUP`] at a time, so that a group's first
/// reads of a hash table overlap ([`HashTable::warm`]): a table probed or
/// filled while a scan runs is pushed out of the cache between two
/// tuples (`docs/design.md`, Joins).
struct TupleGroup<'b> {
    data: Vec<u8>,
    /// Per gathered tuple: its key's and row's lengths.
    lens: Vec<(u32, u32)>,
    charged: usize,
    budget: &'b Budget,
}

/// Bytes of tuples a group holds at most (charged to the budget, of which
/// it takes at most a 32nd).
const GROUP_BYTES: usize = 16 << 10;

impl<'b> TupleGroup<'b> {
    /// A group charged to `budget` when `used` (else one that holds and
    /// charges nothing); with no room in the budget, each tuple is a
    /// group of its own.
    fn new(budget: &'b Budget, used: bool) -> TupleGroup<'b> {
        let want = if used {
            GROUP_BYTES.min(budget.limit() / 32)
        } else {
            0
        };
        let charged = if budget.try_charge(want) { want } else { 0 };
        TupleGroup {
            data: Vec::with_capacity(charged),
            lens: Vec::with_capacity(PROBE_GROUP),
            charged,
            budget,
        }
    }

    fn len(&self) -> usize {
        self.lens.len()
    }

    fn clear(&mut self) {
        self.data.clear();
        self.lens.clear();
    }

    /// Adds a tuple, first handing the group to `full` (which empties it)
    /// when the tuple does not fit. False when the tuple is larger than a
    /// group holds: the caller takes it on its own.
    fn add_or(
        &mut self,
        key: &[u8],
        row: &[u8],
        full: impl FnOnce(&mut Self) -> Result<()>,
    ) -> Result<bool> {
        let len = key.len() + row.len();
        if self.lens.len() == PROBE_GROUP || self.data.len() + len > self.charged {
            full(self)?;
        }
        if len > self.charged {
            return Ok(false);
        }
        self.data.extend_from_slice(key);
        self.data.extend_from_slice(row);
        self.lens.push((key.len() as u32, row.len() as u32));
        Ok(true)
    }

    /// The gathered tuples.
    fn tuples(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let mut at = 0;
        self.lens.iter().map(move |&(kl, rl)| {
            let (kl, rl) = (kl as usize, rl as usize);
            let t = (&self.data[at..at + kl], &self.data[at + kl..at + kl + rl]);
            at += kl + rl;
            t
        })
    }

    /// The gathered keys and rows, in arrays of [`PROBE_GROUP`].
    fn split(&self) -> ([&[u8]; PROBE_GROUP], [&[u8]; PROBE_GROUP]) {
        let mut keys: [&[u8]; PROBE_GROUP] = [&[]; PROBE_GROUP];
        let mut rows: [&[u8]; PROBE_GROUP] = [&[]; PROBE_GROUP];
        for (i, (k, r)) in self.tuples().enumerate().take(PROBE_GROUP) {
            keys[i] = k;
            rows[i] = r;
        }
        (keys, rows)
    }

    /// Probes `table` with the gathered tuples and empties the group.
    fn probe(&mut self, table: &HashTable<'_>, emit: &mut Emit<'_>) -> Result<()> {
        let n = self.len();
        let (keys, rows) = self.split();
        let mut hashes = [0u64; PROBE_GROUP];
        table.warm(&keys[..n], &mut hashes[..n]);
        for i in 0..n {
            table.for_each_match_hashed(keys[i], hashes[i], |b| emit.pair(b, rows[i]))?;
        }
        self.clear();
        Ok(())
    }
}

impl Drop for TupleGroup<'_> {
    fn drop(&mut self) {
        self.budget.release(self.charged);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_side_that_fits_stays_whole_only_in_a_first_hybrid_round() {
        let cap = 8 << 20;
        assert_eq!(partition_count(1 << 20, cap, 2, true, 0), 1);
        // Grace always writes partitions out, so it makes two at least.
        assert_eq!(partition_count(1 << 20, cap, 2, false, 0), 2);
        // A re-split runs only because its partition did not fit, so an
        // estimate that says it fits still gives two.
        for depth in 1..=MAX_DEPTH {
            assert!(partition_count(1 << 20, cap, 1, true, depth) >= 2);
        }
    }

    #[test]
    fn partitions_are_sized_for_the_joining_threads_tables() {
        let cap = 4 << 20;
        let bytes = 40u64 << 20;
        let one = partition_count(bytes, cap, 1, true, 0);
        let two = partition_count(bytes, cap, 2, true, 0);
        assert!(
            one * (cap as u64) >= bytes,
            "{one} partitions of {cap} cannot hold {bytes}"
        );
        assert!(
            two >= 2 * one - 1,
            "two threads share the cap: {two} against {one}"
        );
        assert_eq!(partition_count(u64::MAX, cap, 1, false, 0), MAX_PARTITIONS);
    }

    /// Counts the pairs emitted to it and those its forks report.
    #[derive(Default)]
    struct Tally {
        direct: u64,
        forked: u64,
    }

    impl Sink for Tally {
        fn emit(&mut self, _: &[u8], _: &[u8]) -> Result<()> {
            self.direct += 1;
            Ok(())
        }
        fn fork(&self) -> Option<Box<dyn Sink + Send + '_>> {
            Some(Box::new(crate::join::output::CountSink::default()))
        }
        fn absorb(&mut self, fork: Forked) {
            self.forked += fork.rows;
        }
    }

    #[test]
    fn on_two_threads_a_kept_partition_is_probed_by_the_partition_threads() {
        let dir = tempfile::tempdir().expect("tempdir");
        let space = crate::join::spill::tests::space_with(dir.path(), 1 << 20);
        let file = |n: u64| {
            let mut w = space.create(4096).expect("create");
            for i in 0..n {
                w.push(&(i % 5000).to_be_bytes(), &i.to_le_bytes())
                    .expect("push");
            }
            w.finish().expect("finish")
        };
        let (build, probe) = (file(20_000), file(10_000));
        let bytes = file_table_bytes(&build);
        let run = |threads: usize| {
            let mut tally = Tally::default();
            let mut emit = Emit {
                sink: &mut tally,
                swapped: false,
            };
            hash_join(
                &Source::File(&build),
                &Source::File(&probe),
                bytes,
                true,
                HashRun::new(&space, threads),
                &mut emit,
            )
            .expect("join");
            tally
        };
        // 5,000 values, four build and two probe tuples each.
        let one = run(1);
        assert_eq!(one.direct + one.forked, 40_000);
        assert!(one.direct > 0, "one thread probes partition 0 inline");
        let two = run(2);
        assert_eq!((two.direct, two.forked), (0, 40_000));
        assert_eq!(space.budget.used(), 0);
    }

    #[test]
    fn a_split_of_small_tuples_counts_their_table_overhead() {
        let dir = tempfile::tempdir().expect("tempdir");
        let space = crate::join::spill::tests::space_with(dir.path(), 64 << 20);
        let mut w = space.create(4096).expect("create");
        let n = 50_000u64;
        for i in 0..n {
            w.push(&i.to_be_bytes(), &(i * 7).to_be_bytes())
                .expect("push");
        }
        let file = w.finish().expect("finish");
        assert_eq!(file.records(), n);
        // 16 bytes a tuple in the file, more than four times that in a table.
        let table = file_table_bytes(&file);
        assert!(table >= n * (16 + TUPLE_OVERHEAD as u64), "{table}");
        // A cap the file's bytes fit but its table does not: the split by
        // the file alone made one partition (and rewrote it unsplit); the
        // table's estimate gives enough that each part's table fits.
        let cap = (file.len() * 2) as usize;
        assert_eq!(partitions_for(file.len(), cap, 1), 1);
        let parts = partition_count(table, cap, 1, true, 1);
        assert!(
            parts * cap as u64 >= table,
            "{parts} partitions of {cap} for {table}"
        );
    }
}
