//! The randomized multi-threaded workload, verifying every read against the
//! expected state while it runs.
//!
//! Operation mix (percent): put 30, delete 8, merge 15, counter put/delete 2,
//! multi-key batch 8, point get 15, counter get 5, snapshot read 5, range
//! scan 12 (forward or backward, over either keyspace).
//!
//! Writers take the stripe locks of every key they write (sorted, so batches
//! cannot deadlock), set the keys pending, write, and commit the expected
//! state once the write is acknowledged. Point reads take the key's lock too,
//! so they are checked exactly. Scans take no lock: each key's expected state
//! is read before and after the scan, and the check is exact only for keys
//! that did not change in between (otherwise any generation between the two
//! readings, or absence, is accepted — still self-verified). Snapshot reads
//! read a key (exactly, under its lock) and a range at a new snapshot, then
//! read both again at the same snapshot 20-200 operations later, while
//! flushes and compactions go on: the answers must not change.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::{ReadOptions, Snapshot, WriteBatch, WriteOptions};

use crate::check::{Failures, match_counter, match_value};
use crate::config::Handles;
use crate::expected::{CounterOp, ExpectedState, VState, vstate_gen};
use crate::values::{
    check_value, counter_key, decode_counter, mix64, parse_counter_key, parse_value_key, value_for,
    value_key,
};

/// What to run.
#[derive(Clone, Debug)]
pub struct WorkloadConfig {
    pub threads: usize,
    /// Total operations (all threads); `None`: until the deadline or a stop.
    pub ops: Option<u64>,
    pub duration: Option<Duration>,
    pub seed: u64,
    /// Fraction of writes made with `sync = true`.
    pub sync_ratio: f64,
}

impl WorkloadConfig {
    /// Runs `worker(thread, quota, deadline)` on `threads` threads (at
    /// least one) and waits for them: `ops` is split among the threads as
    /// evenly as it goes, and `duration` counts from now.
    pub fn run_threads(&self, worker: impl Fn(usize, Option<u64>, Option<Instant>) + Sync) {
        let deadline = self.duration.map(|d| Instant::now() + d);
        let threads = self.threads.max(1);
        let worker = &worker;
        std::thread::scope(|s| {
            for t in 0..threads {
                let quota = self
                    .ops
                    .map(|n| n / threads as u64 + u64::from((t as u64) < n % threads as u64));
                s.spawn(move || worker(t, quota, deadline));
            }
        });
    }
}

/// Runs `work`, printing `PROGRESS <line()>` to standard error every
/// `progress_ms` (at least 10 ms) until it returns; the crash driver reads
/// these lines from its children.
pub fn with_progress(progress_ms: u64, line: impl Fn() -> String + Sync, work: impl FnOnce()) {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let every = Duration::from_millis(progress_ms.max(10));
            let mut next = Instant::now() + every;
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(5));
                if Instant::now() >= next {
                    eprintln!("PROGRESS {}", line());
                    next += every;
                }
            }
        });
        work();
        done.store(true, Ordering::SeqCst);
    });
}

/// Operation counters of a run.
#[derive(Default, Debug)]
pub struct RunStats {
    pub ops: AtomicU64,
    pub puts: AtomicU64,
    pub deletes: AtomicU64,
    pub merges: AtomicU64,
    pub counter_writes: AtomicU64,
    pub batches: AtomicU64,
    pub gets: AtomicU64,
    pub snapshot_checks: AtomicU64,
    pub scans: AtomicU64,
    pub synced_writes: AtomicU64,
    /// Operations that failed after `expect_errors` was raised (power cut).
    pub expected_errors: AtomicU64,
}

impl RunStats {
    /// A one-line summary.
    pub fn line(&self) -> String {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "ops={} puts={} deletes={} merges={} counter_writes={} batches={} gets={} \
             snapshot_checks={} scans={} synced_writes={}",
            g(&self.ops),
            g(&self.puts),
            g(&self.deletes),
            g(&self.merges),
            g(&self.counter_writes),
            g(&self.batches),
            g(&self.gets),
            g(&self.snapshot_checks),
            g(&self.scans),
            g(&self.synced_writes)
        )
    }
}

/// Number of lock stripes.
const STRIPES: usize = 1024;

/// Everything the worker threads share.
pub struct Workload<'a> {
    pub h: &'a Handles,
    pub state: &'a ExpectedState,
    pub cfg: &'a WorkloadConfig,
    pub failures: &'a Failures,
    pub stats: &'a RunStats,
    /// Raised to stop the threads.
    pub stop: &'a AtomicBool,
    /// Raised before a simulated power cut: errors after it are expected
    /// and end the thread quietly.
    pub expect_errors: &'a AtomicBool,
    locks: Vec<Mutex<()>>,
}

/// The thread must stop (an error was met).
struct Halt;

type OpResult = Result<(), Halt>;

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Target {
    Value(u32),
    Counter(u32),
}

/// Key-value pairs read from the database.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

struct SnapCheck {
    snap: Snapshot,
    key: u32,
    first: Option<Vec<u8>>,
    lo: u32,
    hi: u32,
    scan: Entries,
    due: u64,
}

impl<'a> Workload<'a> {
    pub fn new(
        h: &'a Handles,
        state: &'a ExpectedState,
        cfg: &'a WorkloadConfig,
        failures: &'a Failures,
        stats: &'a RunStats,
        stop: &'a AtomicBool,
        expect_errors: &'a AtomicBool,
    ) -> Self {
        Workload {
            h,
            state,
            cfg,
            failures,
            stats,
            stop,
            expect_errors,
            locks: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }

    /// Runs the worker threads to completion (ops done, deadline, stop, or
    /// every thread halted by errors).
    pub fn run(&self) {
        self.cfg
            .run_threads(|t, quota, deadline| self.worker(t, quota, deadline));
    }

    fn lock_id(&self, t: Target) -> usize {
        match t {
            Target::Value(i) => i as usize,
            Target::Counter(c) => self.state.layout().value_keys as usize + c as usize,
        }
    }

    fn lock(&self, targets: &[Target]) -> Vec<MutexGuard<'_, ()>> {
        let mut stripes: Vec<usize> = targets.iter().map(|&t| self.lock_id(t) % STRIPES).collect();
        stripes.sort_unstable();
        stripes.dedup();
        stripes.into_iter().map(|s| self.locks[s].lock()).collect()
    }

    fn fail(&self, msg: String) {
        // A read that fails after a power cut is expected, not a failure.
        if !self.expect_errors.load(Ordering::SeqCst) {
            self.failures.report(msg);
        }
    }

    fn error(&self, what: &str, e: strata::Error) -> Halt {
        if self.expect_errors.load(Ordering::SeqCst) {
            self.stats.expected_errors.fetch_add(1, Ordering::Relaxed);
        } else {
            self.failures.report(format!("{what} failed: {e}"));
        }
        Halt
    }

    fn worker(&self, t: usize, quota: Option<u64>, deadline: Option<Instant>) {
        let mut rng = StdRng::seed_from_u64(mix64(self.cfg.seed ^ mix64(t as u64 + 1)));
        let mut done = 0u64;
        let mut snap: Option<SnapCheck> = None;
        loop {
            if self.stop.load(Ordering::Relaxed)
                || quota.is_some_and(|q| done >= q)
                || deadline.is_some_and(|d| Instant::now() >= d)
            {
                break;
            }
            let r = rng.random_range(0..100u32);
            let res = match r {
                0..30 => self.put_or_delete(&mut rng, false),
                30..38 => self.put_or_delete(&mut rng, true),
                38..53 => self.counter_write(&mut rng, true),
                53..55 => self.counter_write(&mut rng, false),
                55..63 => self.batch(&mut rng),
                63..78 => self.get(&mut rng),
                78..83 => self.counter_get(&mut rng),
                83..88 => self.snapshot_read(&mut rng, done, &mut snap),
                _ => self.scan(&mut rng),
            };
            if res.is_err() {
                break;
            }
            done += 1;
            self.stats.ops.fetch_add(1, Ordering::Relaxed);
            if snap.as_ref().is_some_and(|s| s.due <= done)
                && let Some(s) = snap.take()
                && self.recheck_snapshot(s).is_err()
            {
                break;
            }
        }
    }

    fn sync_opts(&self, rng: &mut StdRng) -> WriteOptions {
        let sync = self.cfg.sync_ratio >= 1.0
            || (self.cfg.sync_ratio > 0.0 && rng.random_bool(self.cfg.sync_ratio));
        if sync {
            self.stats.synced_writes.fetch_add(1, Ordering::Relaxed);
        }
        WriteOptions {
            sync,
            disable_wal: false,
        }
    }

    fn value_bytes(&self, i: u32, st: VState) -> Vec<u8> {
        let l = self.state.layout();
        value_for(
            i,
            vstate_gen(st),
            l.value_min as usize,
            l.value_max as usize,
        )
    }

    fn put_or_delete(&self, rng: &mut StdRng, delete: bool) -> OpResult {
        let i = rng.random_range(0..self.state.layout().value_keys);
        let opts = self.sync_opts(rng);
        let _g = self.lock(&[Target::Value(i)]);
        let st = self.state.begin_value(i, delete, 0);
        let key = value_key(i);
        let r = if delete {
            self.h.values.delete_opt(opts, &key)
        } else {
            self.h.values.put_opt(opts, &key, &self.value_bytes(i, st))
        };
        match r {
            Ok(()) => {
                self.state.commit_value(i, opts.sync);
                let c = if delete {
                    &self.stats.deletes
                } else {
                    &self.stats.puts
                };
                c.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => Err(self.error(if delete { "delete" } else { "put" }, e)),
        }
    }

    fn random_counter_op(rng: &mut StdRng, merge: bool) -> CounterOp {
        if merge {
            CounterOp::Add(rng.random_range(1..=1000))
        } else if rng.random_bool(0.5) {
            CounterOp::Put(rng.random_range(0..1_000_000))
        } else {
            CounterOp::Delete
        }
    }

    fn counter_write(&self, rng: &mut StdRng, merge: bool) -> OpResult {
        let c = rng.random_range(0..self.state.layout().counter_keys);
        let op = Self::random_counter_op(rng, merge);
        let opts = self.sync_opts(rng);
        let _g = self.lock(&[Target::Counter(c)]);
        self.state.begin_counter(c, op, 0);
        let key = counter_key(c);
        let ks = &self.h.counters;
        let r = match op {
            CounterOp::Add(d) => ks.merge_opt(opts, &key, &d.to_le_bytes()),
            CounterOp::Put(v) => ks.put_opt(opts, &key, &v.to_le_bytes()),
            CounterOp::Delete => ks.delete_opt(opts, &key),
        };
        match r {
            Ok(()) => {
                self.state.commit_counter(c, opts.sync);
                let s = if merge {
                    &self.stats.merges
                } else {
                    &self.stats.counter_writes
                };
                s.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => Err(self.error("counter write", e)),
        }
    }

    fn batch(&self, rng: &mut StdRng) -> OpResult {
        let l = self.state.layout();
        let n = rng.random_range(2..=8usize);
        let mut targets = Vec::with_capacity(n);
        let mut seen = HashSet::new();
        while targets.len() < n {
            let t = if rng.random_bool(0.7) {
                Target::Value(rng.random_range(0..l.value_keys))
            } else {
                Target::Counter(rng.random_range(0..l.counter_keys))
            };
            if seen.insert(t) {
                targets.push(t);
            }
        }
        let ops: Vec<(Target, bool, CounterOp)> = targets
            .iter()
            .map(|&t| {
                let delete = rng.random_bool(0.2);
                let merge = rng.random_bool(0.8);
                (t, delete, Self::random_counter_op(rng, merge))
            })
            .collect();
        let opts = self.sync_opts(rng);
        let _g = self.lock(&targets);
        let tag = self.state.next_tag();
        let mut b = WriteBatch::new();
        let (vid, cid) = (self.h.values.id(), self.h.counters.id());
        for &(t, delete, op) in &ops {
            match t {
                Target::Value(i) => {
                    let st = self.state.begin_value(i, delete, tag);
                    if delete {
                        b.delete_in(vid, &value_key(i));
                    } else {
                        b.put_in(vid, &value_key(i), &self.value_bytes(i, st));
                    }
                }
                Target::Counter(c) => {
                    self.state.begin_counter(c, op, tag);
                    let key = counter_key(c);
                    match op {
                        CounterOp::Add(d) => b.merge_in(cid, &key, &d.to_le_bytes()),
                        CounterOp::Put(v) => b.put_in(cid, &key, &v.to_le_bytes()),
                        CounterOp::Delete => b.delete_in(cid, &key),
                    }
                }
            }
        }
        match self.h.db.write(opts, b) {
            Ok(()) => {
                for &(t, _, _) in &ops {
                    match t {
                        Target::Value(i) => self.state.commit_value(i, opts.sync),
                        Target::Counter(c) => self.state.commit_counter(c, opts.sync),
                    }
                }
                self.stats.batches.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => Err(self.error("batch write", e)),
        }
    }

    /// Acceptable states of value key `i` while its lock is held.
    fn value_now(&self, i: u32) -> Vec<VState> {
        let mut v = vec![self.state.value_committed(i)];
        let p = self.state.value_pending(i);
        if p != 0 {
            // Left by a failed write: it may or may not have landed.
            v.push(p);
        }
        v
    }

    fn get(&self, rng: &mut StdRng) -> OpResult {
        let i = rng.random_range(0..self.state.layout().value_keys);
        let _g = self.lock(&[Target::Value(i)]);
        let found = self
            .h
            .values
            .get(&value_key(i))
            .map_err(|e| self.error("get", e))?;
        if let Err(m) = match_value(
            &self.state.layout(),
            i,
            found.as_deref(),
            &self.value_now(i),
        ) {
            self.fail(format!("get: {m}"));
        }
        self.stats.gets.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn counter_get(&self, rng: &mut StdRng) -> OpResult {
        let c = rng.random_range(0..self.state.layout().counter_keys);
        let _g = self.lock(&[Target::Counter(c)]);
        let found = self
            .h
            .counters
            .get(&counter_key(c))
            .map_err(|e| self.error("counter get", e))?;
        let committed = self.state.counter_committed(c);
        let mut ok = vec![committed];
        if let Some(op) = self.state.counter_pending(c) {
            ok.push(op.apply(committed));
        }
        if let Err(m) = match_counter(c, found.as_deref(), &ok) {
            self.fail(format!("counter get: {m}"));
        }
        self.stats.gets.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn read_range(
        &self,
        counters: bool,
        lo: u32,
        hi: u32,
        reverse: bool,
        snapshot: Option<strata::SeqNo>,
    ) -> strata::Result<Entries> {
        let (ks, lk, hk) = if counters {
            (&self.h.counters, counter_key(lo), counter_key(hi))
        } else {
            (&self.h.values, value_key(lo), value_key(hi))
        };
        let mut it = ks.iter(ReadOptions {
            snapshot,
            lower_bound: Some(lk),
            upper_bound: Some(hk),
        })?;
        let mut out = Vec::new();
        if reverse {
            it.seek_to_last();
        } else {
            it.seek_to_first();
        }
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            if out.len() > (hi - lo) as usize {
                break;
            }
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        it.status()?;
        if reverse {
            out.reverse();
        }
        Ok(out)
    }

    /// Checks that `entries` are sorted, in `[lo, hi)`, of the right kind
    /// and self-consistent; returns them by index.
    fn check_range(
        &self,
        what: &str,
        counters: bool,
        lo: u32,
        hi: u32,
        entries: &[(Vec<u8>, Vec<u8>)],
    ) -> Vec<Option<Vec<u8>>> {
        let l = self.state.layout();
        let mut by_index: Vec<Option<Vec<u8>>> = vec![None; (hi - lo) as usize];
        let mut prev: Option<u32> = None;
        for (k, v) in entries {
            let idx = if counters {
                parse_counter_key(k)
            } else {
                parse_value_key(k)
            };
            let Some(idx) = idx.filter(|x| (lo..hi).contains(x)) else {
                self.fail(format!(
                    "{what}: key {:?} outside the scanned range [{lo}, {hi})",
                    String::from_utf8_lossy(k)
                ));
                continue;
            };
            if prev.is_some_and(|p| p >= idx) {
                self.fail(format!(
                    "{what}: key {idx} returned after key {prev:?}: out of order"
                ));
            }
            prev = Some(idx);
            let bad = if counters {
                decode_counter(v).err()
            } else {
                check_value(idx, v, l.value_min as usize, l.value_max as usize).err()
            };
            if let Some(m) = bad {
                self.fail(format!("{what}: key {idx}: {m}"));
            }
            by_index[(idx - lo) as usize] = Some(v.clone());
        }
        by_index
    }

    fn scan(&self, rng: &mut StdRng) -> OpResult {
        let l = self.state.layout();
        let counters = rng.random_bool(0.2);
        let n = if counters {
            l.counter_keys
        } else {
            l.value_keys
        };
        let lo = rng.random_range(0..n);
        let hi = (lo + rng.random_range(1..=50)).min(n);
        let reverse = rng.random_bool(0.5);
        let what = format!(
            "{} scan of {} [{lo}, {hi})",
            if reverse { "backward" } else { "forward" },
            if counters { "counters" } else { "values" }
        );
        if counters {
            let pre: Vec<_> = (lo..hi).map(|c| self.state.counter_view(c)).collect();
            let got = self
                .read_range(true, lo, hi, reverse, None)
                .map_err(|e| self.error("scan", e))?;
            let post: Vec<_> = (lo..hi).map(|c| self.state.counter_view(c)).collect();
            let found = self.check_range(&what, true, lo, hi, &got);
            for (j, f) in found.iter().enumerate() {
                let (a, b) = (pre[j], post[j]);
                if a.changes_before == b.changes_after
                    && a.pending.is_none()
                    && b.pending.is_none()
                    && let Err(m) = match_counter(lo + j as u32, f.as_deref(), &[a.committed])
                {
                    self.fail(format!("{what}: {m}"));
                }
            }
        } else {
            let pre: Vec<_> = (lo..hi).map(|i| self.state.value_view(i)).collect();
            let got = self
                .read_range(false, lo, hi, reverse, None)
                .map_err(|e| self.error("scan", e))?;
            let post: Vec<_> = (lo..hi).map(|i| self.state.value_view(i)).collect();
            let found = self.check_range(&what, false, lo, hi, &got);
            for (j, f) in found.iter().enumerate() {
                let i = lo + j as u32;
                let (a, b) = (pre[j], post[j]);
                if a.changes_before == b.changes_after && a.pending == 0 && b.pending == 0 {
                    if let Err(m) = match_value(&l, i, f.as_deref(), &[a.committed]) {
                        self.fail(format!("{what}: {m}"));
                    }
                } else if let Some(v) = f.as_deref().filter(|v| v.len() >= 8) {
                    // Changed during the scan: anything from the state
                    // committed before the scan on is acceptable.
                    let g = u32::from_le_bytes([v[4], v[5], v[6], v[7]]);
                    let floor = vstate_gen(a.committed);
                    if g < floor || g > b.max_gen {
                        self.fail(format!(
                            "{what}: value key {i} holds generation {g}, outside [{floor}, {}] \
                             of the generations current during the scan",
                            b.max_gen
                        ));
                    }
                }
            }
        }
        self.stats.scans.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn snapshot_read(&self, rng: &mut StdRng, done: u64, slot: &mut Option<SnapCheck>) -> OpResult {
        if let Some(s) = slot.take() {
            self.recheck_snapshot(s)?;
        }
        let l = self.state.layout();
        let i = rng.random_range(0..l.value_keys);
        let (snap, first) = {
            let _g = self.lock(&[Target::Value(i)]);
            let snap = self.h.db.snapshot();
            let first = self
                .h
                .values
                .get_at(&value_key(i), &snap)
                .map_err(|e| self.error("snapshot get", e))?;
            if let Err(m) = match_value(&l, i, first.as_deref(), &self.value_now(i)) {
                self.fail(format!("snapshot get: {m}"));
            }
            (snap, first)
        };
        let lo = i.saturating_sub(10);
        let hi = (i + 10).min(l.value_keys);
        let scan = self
            .read_range(false, lo, hi, rng.random_bool(0.5), Some(snap.seqno()))
            .map_err(|e| self.error("snapshot scan", e))?;
        self.check_range("snapshot scan", false, lo, hi, &scan);
        if scan
            .iter()
            .find(|(k, _)| *k == value_key(i))
            .map(|(_, v)| v)
            != first.as_ref()
        {
            self.fail(format!(
                "snapshot {}: scan and get disagree on value key {i}",
                snap.seqno()
            ));
        }
        *slot = Some(SnapCheck {
            snap,
            key: i,
            first,
            lo,
            hi,
            scan,
            due: done + rng.random_range(20..200),
        });
        Ok(())
    }

    fn recheck_snapshot(&self, s: SnapCheck) -> OpResult {
        let again = self
            .h
            .values
            .get_at(&value_key(s.key), &s.snap)
            .map_err(|e| self.error("snapshot re-get", e))?;
        if again != s.first {
            self.fail(format!(
                "snapshot {}: value key {} read {:?} bytes first and {:?} bytes later",
                s.snap.seqno(),
                s.key,
                s.first.as_ref().map(Vec::len),
                again.as_ref().map(Vec::len)
            ));
        }
        let scan = self
            .read_range(false, s.lo, s.hi, false, Some(s.snap.seqno()))
            .map_err(|e| self.error("snapshot re-scan", e))?;
        if scan != s.scan {
            self.fail(format!(
                "snapshot {}: scan of [{}, {}) returned {} entries first and {} later (or other values)",
                s.snap.seqno(),
                s.lo,
                s.hi,
                s.scan.len(),
                scan.len()
            ));
        }
        self.stats.snapshot_checks.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}
