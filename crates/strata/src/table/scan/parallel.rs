//! Scans split into key ranges read on threads of their own
//! ([`ScanOptions::threads`](super::ScanOptions)).
//!
//! The range is cut at block boundaries of the table's largest sorted run
//! (the run holding the most bytes of the range: the bottom level's, as a
//! tree settles) into [`RANGES_PER_THREAD`] ranges per thread of about
//! equal shares of its bytes, and the threads take the ranges in turn, so
//! that a range holding more rows than its share of that run (other levels
//! need not hold their keys where it does) does not keep one thread busy
//! while the others wait. Each range is an ordinary [`Scanner`] over the
//! same super-version and read plan, so it sees exactly the rows a single
//! scan would see in its range at the same sequence number.
//!
//! A scan on `n` threads starts `n - 1` helpers: the caller's thread reads
//! ranges too, whenever it asks for a batch and no helper has one waiting.
//! With a helper for every thread, the caller woke for each batch a helper
//! sent and took a core from the helpers to take it: on two cores a Q5-
//! shaped scan used 1.6 of them and switched threads about three times a
//! batch. Batches reach the caller as ranges produce them: each range's
//! batches in key order, the ranges interleaved. Memory is each thread's
//! range being read (one chunk per source and one batch) plus
//! [`QUEUED_PER_THREAD`] finished batches per helper waiting in the queue;
//! the ranges not yet read are opened but hold no chunk.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use arrow_array::RecordBatch;

use super::{ScanCounters, ScanSpec, Scanner};
use crate::db::SuperVersion;
use crate::error::{Error, Result};
use crate::ids::Level;
use crate::table::cgfile::CgReader;
use crate::table::schema::Schema;
use crate::table::view::ReadPlan;
use crate::version::FileMeta;

/// Finished batches a helper may have waiting before it pauses.
const QUEUED_PER_THREAD: usize = 2;

/// Key ranges per thread: a thread that finishes its range takes the next
/// one left, so the threads end within about one range of each other.
pub(crate) const RANGES_PER_THREAD: usize = 4;

/// The files of the run holding the most bytes of `[lower, upper)` among
/// the plan's deeper levels (counting whole files).
fn largest_run<'a>(
    sv: &'a SuperVersion,
    plan: &ReadPlan,
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
) -> Vec<&'a Arc<FileMeta>> {
    let in_range = |f: &FileMeta| {
        !(upper.is_some_and(|h| f.smallest_user_key() >= h)
            || lower.is_some_and(|l| f.largest_user_key() < l))
    };
    let mut best: Vec<&Arc<FileMeta>> = Vec::new();
    let mut best_bytes = 0u64;
    for (l, groups) in plan.levels.iter().enumerate().skip(1) {
        for (g, _) in groups {
            let run: Vec<&Arc<FileMeta>> = sv
                .version
                .run(Level::from_index(l), *g)
                .iter()
                .filter(|f| in_range(f))
                .collect();
            let bytes = run.iter().map(|f| f.size).sum();
            if bytes > best_bytes {
                best_bytes = bytes;
                best = run;
            }
        }
    }
    best
}

/// A file's blocks in a range, as (a key at or before the block's first,
/// its bytes).
type Anchors = Vec<(Vec<u8>, u64)>;

/// Where to cut a sorted run into at most `parts` parts of about equal
/// bytes, at block boundaries: `sizes[i]` is the run's `i`-th file's bytes
/// in `[lower, upper)`, and `blocks(i)` gives that file's blocks holding
/// keys of the range as (a key at or before the block's first, its bytes).
/// Only the files a cut falls in are asked for their blocks. Cuts are
/// ascending, distinct, strictly inside the range and after the run's
/// first block. A run of one file cuts a range that file holds alone.
pub(super) fn block_cuts(
    sizes: &[u64],
    mut blocks: impl FnMut(usize) -> Result<Anchors>,
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
    parts: usize,
) -> Result<Vec<Vec<u8>>> {
    let total: u64 = sizes.iter().sum();
    let mut cuts: Vec<Vec<u8>> = Vec::new();
    if parts < 2 || total == 0 {
        return Ok(cuts);
    }
    let inside = |k: &[u8]| lower.is_none_or(|l| k > l) && upper.is_none_or(|u| k < u);
    let target = |k: usize| total * k as u64 / parts as u64;
    let mut before = 0u64;
    let mut next = 1usize;
    for (i, &size) in sizes.iter().enumerate() {
        if next < parts && before + size >= target(next) {
            let list = blocks(i)?;
            let in_file: u64 = list.iter().map(|&(_, b)| b).sum();
            // The file's bytes and its blocks' may differ (its meta
            // blocks): targets are placed in proportion.
            let scale = |bytes: u64| {
                (u128::from(bytes) * u128::from(size))
                    .checked_div(u128::from(in_file))
                    .map_or(0, |x| x as u64)
            };
            let mut seen = 0u64;
            for (key, bytes) in &list {
                // Cut before this block when that brings the share before
                // the cut closer to `next` parts' worth than cutting after
                // it would (never before the first: that part would be
                // empty).
                while next < parts
                    && before + seen > 0
                    && before + scale(seen + bytes / 2) >= target(next)
                {
                    if inside(key) && cuts.last().is_none_or(|c| c < key) {
                        cuts.push(key.clone());
                    }
                    next += 1;
                }
                seen += bytes;
            }
        }
        before += size;
    }
    Ok(cuts)
}

/// The largest file holding keys of `[lower, upper)`, on any level: a
/// range that one file holds is cut inside it.
fn largest_file<'a>(
    sv: &'a SuperVersion,
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
) -> Option<&'a Arc<FileMeta>> {
    sv.version
        .all_files()
        .map(|(_, f)| f)
        .filter(|f| {
            !(upper.is_some_and(|h| f.smallest_user_key() >= h)
                || lower.is_some_and(|l| f.largest_user_key() < l))
        })
        .max_by_key(|f| f.size)
}

/// The blocks of `f` holding keys of `[lower, upper)`, as (a key at or
/// before the block's first, its bytes): where a range can be cut inside
/// the file. Its index is in memory, so no data block is read.
fn file_anchors(f: &FileMeta, lower: Option<&[u8]>, upper: Option<&[u8]>) -> Result<Anchors> {
    let all = if let Some(r) = CgReader::of(f) {
        // A block's first key is after the previous block's last; the
        // walk starts at the block holding `lower` and stops at `upper`.
        let first = lower.map_or(0, |l| r.block_for(l));
        let smallest = f.smallest_user_key();
        let mut start = lower.map_or(smallest, |l| l.max(smallest)).to_vec();
        let mut out = Vec::new();
        for b in &r.blocks()[first..] {
            if upper.is_some_and(|u| start.as_slice() >= u) {
                break;
            }
            out.push((
                std::mem::replace(&mut start, b.last_key.clone()),
                b.handle.size,
            ));
        }
        out
    } else {
        f.table.anchors(f.smallest_user_key(), lower, upper)?
    };
    Ok(within(all, lower, upper))
}

/// The blocks of `anchors` (each from its key to the next one's) that hold
/// keys of `[lower, upper)`, so that a range covering part of a file is
/// shared out by its own bytes.
fn within(
    anchors: Vec<(Vec<u8>, u64)>,
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
) -> Vec<(Vec<u8>, u64)> {
    let n = anchors.len();
    let ends_after_lower: Vec<bool> = (0..n)
        .map(|i| i + 1 == n || lower.is_none_or(|l| anchors[i + 1].0.as_slice() > l))
        .collect();
    anchors
        .into_iter()
        .zip(ends_after_lower)
        .filter(|((k, _), after)| *after && upper.is_none_or(|u| k.as_slice() < u))
        .map(|(a, _)| a)
        .collect()
}

/// A message from a part to the scan.
enum Msg {
    Batch(RecordBatch),
    Failed(Error),
    /// The part is done; what it did.
    Done(Box<ScanCounters>),
}

/// A running parallel scan: its helper threads and the ranges they and
/// the caller read.
pub(crate) struct ParallelScan {
    rx: Option<Receiver<Msg>>,
    handles: Vec<JoinHandle<()>>,
    /// The ranges no thread has taken yet.
    queue: Arc<Mutex<VecDeque<Scanner>>>,
    /// The range the caller's thread is reading.
    own: Option<Scanner>,
    /// Key ranges the scan was cut into.
    parts: usize,
    /// Helpers that have not said they are done.
    running: usize,
    /// The counters of the finished helpers and of the ranges the caller
    /// finished, summed.
    pub counters: ScanCounters,
}

impl ParallelScan {
    /// Starts a scan of `spec`'s range on up to `threads` threads, cut into
    /// up to [`RANGES_PER_THREAD`] ranges per thread, or `None` when the
    /// range does not split (then a single scan serves).
    pub(crate) fn start(
        sv: &Arc<SuperVersion>,
        plan: &ReadPlan,
        schema: &Arc<Schema>,
        spec: &ScanSpec,
        threads: usize,
    ) -> Result<Option<ParallelScan>> {
        let lower = spec.lower.as_deref();
        let upper = spec.upper.as_deref();
        let ranges = threads.saturating_mul(RANGES_PER_THREAD);
        let run = largest_run(sv, plan, lower, upper);
        // The first and last files may hold keys outside the range: they
        // count their blocks in it.
        let mut edges: Vec<Option<Anchors>> = vec![None; run.len()];
        let mut sizes: Vec<u64> = run.iter().map(|f| f.size).collect();
        for i in [0, run.len().saturating_sub(1)] {
            if i < run.len() && edges[i].is_none() {
                let blocks = file_anchors(run[i], lower, upper)?;
                sizes[i] = blocks.iter().map(|&(_, b)| b).sum();
                edges[i] = Some(blocks);
            }
        }
        let blocks = |i: usize| match edges[i].take() {
            Some(b) => Ok(b),
            None => file_anchors(run[i], lower, upper),
        };
        let mut cuts = block_cuts(&sizes, blocks, lower, upper, ranges)?;
        if cuts.is_empty()
            && let Some(f) = largest_file(sv, lower, upper)
        {
            // No deeper run to cut (a table that fits one file, often on
            // level 0): cut inside its largest file.
            let anchors = file_anchors(f, lower, upper)?;
            let size = anchors.iter().map(|&(_, b)| b).sum();
            let mut anchors = Some(anchors);
            let blocks = |_| Ok(anchors.take().unwrap_or_default());
            cuts = block_cuts(&[size], blocks, lower, upper, ranges)?;
        }
        if cuts.is_empty() {
            return Ok(None);
        }
        // Every part's scanner is opened here, so that a failure to open
        // one is the caller's error, not a message later.
        let mut bounds: Vec<Option<Vec<u8>>> = vec![spec.lower.clone()];
        bounds.extend(cuts.into_iter().map(Some));
        bounds.push(spec.upper.clone());
        let mut scanners = Vec::with_capacity(bounds.len() - 1);
        for w in bounds.windows(2) {
            let part = ScanSpec {
                projection: spec.projection.clone(),
                predicate: spec.predicate.clone(),
                lower: w[0].clone(),
                upper: w[1].clone(),
                snap: spec.snap,
                batch_rows: spec.batch_rows,
            };
            scanners.push(Scanner::new(
                Arc::clone(sv),
                plan,
                Arc::clone(schema),
                part,
            )?);
        }
        let parts = scanners.len();
        // The caller's thread is one of the `threads`.
        let helpers = threads.min(parts).saturating_sub(1);
        let queue = Arc::new(Mutex::new(VecDeque::from(scanners)));
        let (tx, rx) = sync_channel(QUEUED_PER_THREAD * helpers);
        let mut handles = Vec::with_capacity(helpers);
        for i in 0..helpers {
            let tx = tx.clone();
            let ranges = Arc::clone(&queue);
            let spawned = std::thread::Builder::new()
                .name(format!("strata-scan-{i}"))
                .spawn(move || run_worker(&ranges, &tx));
            match spawned {
                Ok(t) => handles.push(t),
                Err(e) => {
                    // The threads already started find no range left, or
                    // stop at their next batch once the receiver is gone.
                    drop_ranges(&queue);
                    drop(rx);
                    for t in handles {
                        let _ = t.join();
                    }
                    return Err(Error::Io {
                        context: "starting a thread of a parallel scan".into(),
                        source: e,
                    });
                }
            }
        }
        Ok(Some(ParallelScan {
            rx: Some(rx),
            handles,
            queue,
            own: None,
            parts,
            running: helpers,
            counters: ScanCounters::default(),
        }))
    }

    /// How many key ranges the scan was cut into.
    pub(crate) fn parts(&self) -> usize {
        self.parts
    }

    /// The next batch of any part, `None` when every part is done: a batch
    /// a helper has waiting, else one of the range the caller's thread
    /// reads (taking the next range left when its own is done), else,
    /// when no range is left to take, the helpers' next.
    pub(crate) fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            // A helper's waiting batch first: a helper whose batches wait
            // in the channel pauses once it holds `QUEUED_PER_THREAD`.
            if self.running > 0 {
                match self.rx.as_ref().map(Receiver::try_recv) {
                    Some(Ok(msg)) => match self.take(msg)? {
                        Some(b) => return Ok(Some(b)),
                        None => continue,
                    },
                    Some(Err(TryRecvError::Empty)) => {}
                    Some(Err(TryRecvError::Disconnected)) | None => return Err(self.lost()),
                }
            }
            if let Some(own) = &mut self.own {
                match own.next_batch() {
                    Ok(Some(b)) => return Ok(Some(b)),
                    Ok(None) => {
                        add_counters(&mut self.counters, &own.counters);
                        self.own = None;
                    }
                    Err(e) => {
                        self.stop();
                        return Err(e);
                    }
                }
            }
            if let Some(scanner) = next_range(&self.queue) {
                self.own = Some(scanner);
                continue;
            }
            if self.running == 0 {
                self.stop();
                return Ok(None);
            }
            let msg = match self.rx.as_ref().map(Receiver::recv) {
                Some(Ok(msg)) => msg,
                Some(Err(_)) | None => return Err(self.lost()),
            };
            if let Some(b) = self.take(msg)? {
                return Ok(Some(b));
            }
        }
    }

    /// Takes a helper's message: its batch, or `None` when it said it is
    /// done.
    fn take(&mut self, msg: Msg) -> Result<Option<RecordBatch>> {
        match msg {
            Msg::Batch(b) => Ok(Some(b)),
            Msg::Done(c) => {
                self.running -= 1;
                add_counters(&mut self.counters, &c);
                Ok(None)
            }
            Msg::Failed(e) => {
                self.stop();
                Err(e)
            }
        }
    }

    /// The error when every helper's sender is gone without saying done
    /// (a helper panicked).
    fn lost(&mut self) -> Error {
        self.stop();
        Error::Io {
            context: "a thread of a parallel scan".into(),
            source: std::io::Error::other("the thread stopped without finishing"),
        }
    }

    /// Stops the parts (each at its next batch) and waits for them.
    fn stop(&mut self) {
        // The ranges left go first, so that no helper starts one after the
        // receiver is gone.
        drop_ranges(&self.queue);
        self.running = 0;
        self.rx = None;
        self.own = None;
        for t in self.handles.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for ParallelScan {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The next range no thread has taken, if any. (Nothing panics while
/// holding the lock; a poisoned one reads as an empty queue.)
fn next_range(queue: &Mutex<VecDeque<Scanner>>) -> Option<Scanner> {
    queue.lock().ok().and_then(|mut q| q.pop_front())
}

/// Drops the ranges no thread has taken, so that none is started.
fn drop_ranges(queue: &Mutex<VecDeque<Scanner>>) {
    if let Ok(mut q) = queue.lock() {
        q.clear();
    }
}

/// One helper of a parallel scan: reads the ranges left in `queue`, one
/// at a time, until none is left, then says what they did.
fn run_worker(queue: &Mutex<VecDeque<Scanner>>, tx: &SyncSender<Msg>) {
    let mut done = ScanCounters::default();
    while let Some(mut scanner) = next_range(queue) {
        loop {
            match scanner.next_batch() {
                // A closed channel means the scan was dropped or failed:
                // stop.
                Ok(Some(b)) => {
                    if tx.send(Msg::Batch(b)).is_err() {
                        return;
                    }
                }
                Ok(None) => {
                    add_counters(&mut done, &scanner.counters);
                    break;
                }
                Err(e) => {
                    let _ = tx.send(Msg::Failed(e));
                    return;
                }
            }
        }
    }
    let _ = tx.send(Msg::Done(Box::new(done)));
}

fn add_counters(sum: &mut ScanCounters, c: &ScanCounters) {
    sum.rows_read += c.rows_read;
    sum.rows_returned += c.rows_returned;
    sum.blocks_read += c.blocks_read;
    sum.blocks_skipped += c.blocks_skipped;
    if sum.entries_per_level.len() < c.entries_per_level.len() {
        sum.entries_per_level.resize(c.entries_per_level.len(), 0);
    }
    for (s, &e) in sum.entries_per_level.iter_mut().zip(&c.entries_per_level) {
        *s += e;
    }
}

#[cfg(test)]
mod tests {
    use super::{Anchors, block_cuts, within};

    /// A run of files of `blocks[i]` blocks of `bytes` each, keyed by their
    /// global block number (four digits).
    fn run_of_blocks(blocks: &[usize], bytes: u64) -> (Vec<u64>, Vec<Anchors>) {
        let mut n = 0;
        let files: Vec<Anchors> = blocks
            .iter()
            .map(|&b| {
                (0..b)
                    .map(|_| {
                        n += 1;
                        (format!("{:04}", n - 1).into_bytes(), bytes)
                    })
                    .collect()
            })
            .collect();
        (
            files.iter().map(|f| f.len() as u64 * bytes).collect(),
            files,
        )
    }

    #[test]
    fn block_cuts_share_a_run_by_its_blocks() {
        // One large file and small ones around it: cutting where files
        // start could not share it out; its blocks can.
        let (sizes, files) = run_of_blocks(&[2, 40, 3], 100);
        let mut asked = Vec::new();
        let cuts = block_cuts(
            &sizes,
            |i| {
                asked.push(i);
                Ok(files[i].clone())
            },
            None,
            None,
            2,
        )
        .expect("cuts");
        assert_eq!(asked, vec![1], "only the file the cut falls in");
        // Blocks 0-21 (2,200 bytes) and 22-44 (2,300).
        assert_eq!(cuts, vec![b"0022".to_vec()]);
        for parts in 2..9 {
            let cuts =
                block_cuts(&sizes, |i| Ok(files[i].clone()), None, None, parts).expect("cuts");
            assert_eq!(cuts.len(), parts - 1, "{parts} parts");
            assert!(cuts.windows(2).all(|w| w[0] < w[1]));
            // Each part holds its share within a block.
            let mut bounds: Vec<usize> = vec![0];
            bounds.extend(cuts.iter().map(|c| {
                std::str::from_utf8(c)
                    .expect("digits")
                    .parse::<usize>()
                    .expect("number")
            }));
            bounds.push(45);
            for w in bounds.windows(2) {
                let share = (w[1] - w[0]) as f64;
                assert!(
                    (share - 45.0 / parts as f64).abs() <= 1.0,
                    "{parts}: {bounds:?}"
                );
            }
        }
    }

    #[test]
    fn block_cuts_stay_inside_the_range() {
        let (sizes, files) = run_of_blocks(&[10], 10);
        let lower = b"0004".as_slice();
        let upper = b"0006".as_slice();
        let cuts = block_cuts(
            &sizes,
            |i| Ok(files[i].clone()),
            Some(lower),
            Some(upper),
            8,
        )
        .expect("cuts");
        assert!(
            cuts.iter()
                .all(|c| c.as_slice() > lower && c.as_slice() < upper),
            "{cuts:?}"
        );
        assert!(
            block_cuts(&sizes, |i| Ok(files[i].clone()), None, None, 1)
                .expect("one part")
                .is_empty()
        );
        assert!(
            block_cuts(&[], |_| Ok(Vec::new()), None, None, 4)
                .expect("no run")
                .is_empty()
        );
    }

    #[test]
    fn within_keeps_the_blocks_that_hold_keys_of_the_range() {
        let a = |ks: &[&str]| -> Vec<(Vec<u8>, u64)> {
            ks.iter().map(|k| (k.as_bytes().to_vec(), 10)).collect()
        };
        let keys = |v: Vec<(Vec<u8>, u64)>| -> Vec<String> {
            v.into_iter()
                .map(|(k, _)| String::from_utf8(k).expect("utf8"))
                .collect()
        };
        let blocks = a(&["a", "d", "g", "k"]);
        assert_eq!(
            keys(within(blocks.clone(), None, None)),
            ["a", "d", "g", "k"]
        );
        // [e, h): the block from d (holds e, f) and the one from g.
        assert_eq!(
            keys(within(blocks.clone(), Some(b"e"), Some(b"h"))),
            ["d", "g"]
        );
        // A lower bound on a block's first key drops the block before it.
        assert_eq!(keys(within(blocks.clone(), Some(b"g"), None)), ["g", "k"]);
        // An upper bound on a block's first key drops that block.
        assert_eq!(keys(within(blocks.clone(), None, Some(b"g"))), ["a", "d"]);
        // Past the last block's first key, only the last block holds keys.
        assert_eq!(keys(within(blocks, Some(b"z"), None)), ["k"]);
        assert!(within(Vec::new(), None, None).is_empty());
    }

    fn run(keys: &[&'static [u8]], bytes: u64) -> Vec<(&'static [u8], u64)> {
        keys.iter().map(|&k| (k, bytes)).collect()
    }

    /// [`block_cuts`] of one file whose blocks start at `blocks`' keys,
    /// as a scan of a table that fits one file cuts it.
    fn cuts_of_one_file(
        blocks: &[(&[u8], u64)],
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
        parts: usize,
    ) -> Vec<Vec<u8>> {
        let anchors: Anchors = blocks.iter().map(|&(k, b)| (k.to_vec(), b)).collect();
        let size = blocks.iter().map(|&(_, b)| b).sum();
        block_cuts(&[size], |_| Ok(anchors.clone()), lower, upper, parts).expect("cuts")
    }

    #[test]
    fn one_file_is_cut_evenly_at_block_starts() {
        let r = run(&[b"a", b"c", b"e", b"g"], 10);
        assert_eq!(cuts_of_one_file(&r, None, None, 2), vec![b"e".to_vec()]);
        assert_eq!(
            cuts_of_one_file(&r, None, None, 4),
            vec![b"c".to_vec(), b"e".to_vec(), b"g".to_vec()]
        );
        // More parts than blocks: one cut per block start after the first.
        assert_eq!(cuts_of_one_file(&r, None, None, 9).len(), 3);
    }

    #[test]
    fn cuts_lie_strictly_inside_the_range() {
        let r = run(&[b"a", b"c", b"e", b"g"], 10);
        for (lo, hi) in [
            (Some(&b"c"[..]), Some(&b"g"[..])),
            (Some(b"e"), None),
            (None, Some(b"b")),
        ] {
            for parts in 1..6 {
                let cuts = cuts_of_one_file(&r, lo, hi, parts);
                assert!(cuts.len() < parts.max(1));
                assert!(cuts.windows(2).all(|w| w[0] < w[1]), "{cuts:?}");
                for c in &cuts {
                    assert!(lo.is_none_or(|l| c.as_slice() > l), "{c:?} vs {lo:?}");
                    assert!(hi.is_none_or(|h| c.as_slice() < h), "{c:?} vs {hi:?}");
                }
            }
        }
    }

    #[test]
    fn one_part_an_empty_file_or_one_block_give_no_cut() {
        let r = run(&[b"a", b"c"], 10);
        assert!(cuts_of_one_file(&r, None, None, 1).is_empty());
        assert!(cuts_of_one_file(&[], None, None, 4).is_empty());
        assert!(cuts_of_one_file(&run(&[b"a"], 10), None, None, 4).is_empty());
        assert!(cuts_of_one_file(&run(&[b"a", b"c"], 0), None, None, 4).is_empty());
    }

    #[test]
    fn an_uneven_file_is_cut_by_bytes_not_by_blocks() {
        // One big block, then many small ones: the cut falls after the big one.
        let r: Vec<(&[u8], u64)> = vec![
            (b"a", 100),
            (b"b", 10),
            (b"c", 10),
            (b"d", 10),
            (b"e", 10),
            (b"f", 10),
        ];
        assert_eq!(cuts_of_one_file(&r, None, None, 2), vec![b"b".to_vec()]);
    }
}
