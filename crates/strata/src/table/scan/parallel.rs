//! Scans split into key ranges read on threads of their own
//! ([`ScanOptions::threads`](super::ScanOptions)).
//!
//! The range is cut where the files of the table's largest sorted run
//! (the run holding the most bytes of the range: the bottom level's, as a
//! tree settles) start, so that the parts hold about equal shares of the
//! data; each part is an ordinary [`Scanner`] over the same super-version
//! and read plan, so it sees exactly the rows a single scan would see in
//! its range at the same sequence number. Batches reach the caller as
//! parts produce them: each part's batches in key order, the parts
//! interleaved. Memory is each part's (one chunk per source and one batch)
//! plus [`QUEUED_PER_PART`] finished batches per part waiting in the queue.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
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

/// Finished batches a part may have waiting before it pauses.
const QUEUED_PER_PART: usize = 2;

/// Where to cut `[lower, upper)` into at most `parts` ranges: the first
/// keys of files of `run` (sorted, non-overlapping, with their sizes)
/// chosen so that the bytes before each cut are closest to an equal share.
/// Cuts are ascending, distinct and strictly inside the range; none when
/// the run gives no key to cut at.
pub(super) fn split_points(
    run: &[(&[u8], u64)],
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
    parts: usize,
) -> Vec<Vec<u8>> {
    let inside = |k: &[u8]| lower.is_none_or(|l| k > l) && upper.is_none_or(|u| k < u);
    let total: u64 = run.iter().map(|&(_, b)| b).sum();
    if parts < 2 || total == 0 {
        return Vec::new();
    }
    let mut cuts: Vec<Vec<u8>> = Vec::with_capacity(parts - 1);
    let mut before = 0u64;
    let mut next = 1usize;
    for &(first, bytes) in run {
        // Cut before this file when that brings the share before the cut
        // closer to `next` parts' worth than cutting after it would.
        let target = total * next as u64 / parts as u64;
        if next < parts
            && before > 0
            && before + bytes / 2 >= target
            && inside(first)
            && cuts.last().is_none_or(|c| c.as_slice() < first)
        {
            cuts.push(first.to_vec());
            next += 1;
        }
        before += bytes;
    }
    cuts
}

/// The files of the run holding the most bytes of `[lower, upper)` among
/// the plan's deeper levels, with their first keys and sizes.
fn largest_run<'a>(
    sv: &'a SuperVersion,
    plan: &ReadPlan,
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
) -> Vec<(&'a [u8], u64)> {
    let in_range = |f: &FileMeta| {
        !(upper.is_some_and(|h| f.smallest_user_key() >= h)
            || lower.is_some_and(|l| f.largest_user_key() < l))
    };
    let mut best: Vec<(&[u8], u64)> = Vec::new();
    let mut best_bytes = 0u64;
    for (l, groups) in plan.levels.iter().enumerate().skip(1) {
        for (g, _) in groups {
            let run: Vec<(&[u8], u64)> = sv
                .version
                .run(Level::from_index(l), *g)
                .iter()
                .filter(|f| in_range(f))
                .map(|f| (f.smallest_user_key(), f.size))
                .collect();
            let bytes = run.iter().map(|&(_, b)| b).sum();
            if bytes > best_bytes {
                best_bytes = bytes;
                best = run;
            }
        }
    }
    best
}

/// The blocks of the largest file holding keys of `[lower, upper)`, on
/// any level, as (a key at or before the block's first, its bytes): where
/// a range that one file holds can be cut.
fn largest_file_anchors(
    sv: &SuperVersion,
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
) -> Result<Vec<(Vec<u8>, u64)>> {
    let largest = sv
        .version
        .all_files()
        .map(|(_, f)| f)
        .filter(|f| {
            !(upper.is_some_and(|h| f.smallest_user_key() >= h)
                || lower.is_some_and(|l| f.largest_user_key() < l))
        })
        .max_by_key(|f| f.size);
    let Some(f) = largest else {
        return Ok(Vec::new());
    };
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

/// The parts of a running parallel scan.
pub(crate) struct ParallelScan {
    rx: Option<Receiver<Msg>>,
    threads: Vec<JoinHandle<()>>,
    parts: usize,
    running: usize,
    /// The finished parts' counters, summed.
    pub counters: ScanCounters,
}

impl ParallelScan {
    /// Starts up to `parts` scans of `spec`'s range, or `None` when the
    /// range does not split (then a single scan serves).
    pub(crate) fn start(
        sv: &Arc<SuperVersion>,
        plan: &ReadPlan,
        schema: &Arc<Schema>,
        spec: &ScanSpec,
        parts: usize,
    ) -> Result<Option<ParallelScan>> {
        let lower = spec.lower.as_deref();
        let upper = spec.upper.as_deref();
        let mut cuts = split_points(&largest_run(sv, plan, lower, upper), lower, upper, parts);
        if cuts.is_empty() {
            // No run of several files to cut at (a table that fits one
            // file, often on level 0): cut inside its largest file.
            let anchors = largest_file_anchors(sv, lower, upper)?;
            let run: Vec<(&[u8], u64)> = anchors.iter().map(|(k, b)| (k.as_slice(), *b)).collect();
            cuts = split_points(&run, lower, upper, parts);
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
        let (tx, rx) = sync_channel(QUEUED_PER_PART * scanners.len());
        let mut threads = Vec::with_capacity(scanners.len());
        let running = scanners.len();
        for (i, scanner) in scanners.into_iter().enumerate() {
            let tx = tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("strata-scan-{i}"))
                .spawn(move || run_part(scanner, &tx));
            match spawned {
                Ok(t) => threads.push(t),
                Err(e) => {
                    // The parts already started stop at their next batch
                    // once the receiver is gone.
                    drop(rx);
                    for t in threads {
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
            threads,
            parts: running,
            running,
            counters: ScanCounters::default(),
        }))
    }

    /// How many parts the scan runs in.
    pub(crate) fn parts(&self) -> usize {
        self.parts
    }

    /// The next batch of any part, `None` when every part is done.
    pub(crate) fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        while self.running > 0 {
            let Some(rx) = &self.rx else { break };
            match rx.recv() {
                Ok(Msg::Batch(b)) => return Ok(Some(b)),
                Ok(Msg::Done(c)) => {
                    self.running -= 1;
                    add_counters(&mut self.counters, &c);
                }
                Ok(Msg::Failed(e)) => {
                    self.stop();
                    return Err(e);
                }
                // Every sender is gone without saying done: a part's
                // thread panicked.
                Err(_) => {
                    self.stop();
                    return Err(Error::Io {
                        context: "a thread of a parallel scan".into(),
                        source: std::io::Error::other("the thread stopped without finishing"),
                    });
                }
            }
        }
        self.stop();
        Ok(None)
    }

    /// Stops the parts (each at its next batch) and waits for them.
    fn stop(&mut self) {
        self.running = 0;
        self.rx = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for ParallelScan {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run_part(mut scanner: Scanner, tx: &SyncSender<Msg>) {
    loop {
        let msg = match scanner.next_batch() {
            Ok(Some(b)) => Msg::Batch(b),
            Ok(None) => Msg::Done(Box::new(std::mem::take(&mut scanner.counters))),
            Err(e) => Msg::Failed(e),
        };
        let last = !matches!(msg, Msg::Batch(_));
        // A closed channel means the scan was dropped or failed: stop.
        if tx.send(msg).is_err() || last {
            return;
        }
    }
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
    use super::{split_points, within};

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

    #[test]
    fn cuts_split_the_bytes_evenly_at_file_starts() {
        let r = run(&[b"a", b"c", b"e", b"g"], 10);
        assert_eq!(split_points(&r, None, None, 2), vec![b"e".to_vec()]);
        assert_eq!(
            split_points(&r, None, None, 4),
            vec![b"c".to_vec(), b"e".to_vec(), b"g".to_vec()]
        );
        // More parts than files: one cut per file start after the first.
        assert_eq!(split_points(&r, None, None, 9).len(), 3);
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
                let cuts = split_points(&r, lo, hi, parts);
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
    fn one_part_an_empty_run_or_one_file_give_no_cut() {
        let r = run(&[b"a", b"c"], 10);
        assert!(split_points(&r, None, None, 1).is_empty());
        assert!(split_points(&[], None, None, 4).is_empty());
        assert!(split_points(&run(&[b"a"], 10), None, None, 4).is_empty());
        assert!(split_points(&run(&[b"a", b"c"], 0), None, None, 4).is_empty());
    }

    #[test]
    fn an_uneven_run_is_cut_by_bytes_not_by_files() {
        // One big file, then many small ones: the cut falls after the big one.
        let r: Vec<(&[u8], u64)> = vec![
            (b"a", 100),
            (b"b", 10),
            (b"c", 10),
            (b"d", 10),
            (b"e", 10),
            (b"f", 10),
        ];
        assert_eq!(split_points(&r, None, None, 2), vec![b"b".to_vec()]);
    }
}
