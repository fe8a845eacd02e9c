//! [`FaultVfs`]: a wrapper that injects I/O faults into any [`Vfs`], by
//! rules that name the operation, a path fragment, the calls to skip and
//! the callers (see [`FaultRule`]). Tests combine it with the in-memory
//! file system of [`crate::vfs_mem`].

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::vfs::{FileLock, RandomAccessFile, Vfs, WritableFile};
// ---------------------------------------------------------------------------
// Fault rules
// ---------------------------------------------------------------------------

/// The kinds of VFS calls, for counting and for targeting faults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VfsOp {
    /// [`Vfs::create`].
    Create,
    /// [`Vfs::open`].
    Open,
    /// [`RandomAccessFile::read_exact_at`].
    Read,
    /// [`WritableFile::append`].
    Append,
    /// [`WritableFile::flush`].
    Flush,
    /// [`WritableFile::sync`].
    Sync,
    /// [`Vfs::rename`] (a rule's path filter matches either name).
    Rename,
    /// [`Vfs::remove`].
    Remove,
    /// [`Vfs::list`].
    List,
    /// [`Vfs::sync_dir`].
    SyncDir,
    /// [`Vfs::lock`].
    Lock,
    /// [`Vfs::create_dir_all`].
    CreateDir,
    /// [`Vfs::file_size`].
    FileSize,
}

const OP_COUNT: usize = 13;

/// What an injected fault does.
#[derive(Clone, Debug)]
pub enum FaultKind {
    /// The call fails with a generic I/O error and has no effect.
    IoError,
    /// The call fails with ENOSPC (`raw_os_error() == Some(28)`) and has no
    /// effect.
    NoSpace,
    /// For [`VfsOp::Append`]: the first half of the bytes (rounded down) are
    /// appended, then the call fails. For other calls: like `IoError`.
    ShortWrite,
}

/// A predicate on a call (its op and paths), for [`FaultRule::when`]. It runs
/// in the calling thread, so it can inspect the call stack (for example with
/// `std::backtrace::Backtrace`) to pick out one engine call site. It runs
/// while the rules are locked, so it must not call the file system.
#[derive(Clone)]
pub struct CallFilter(Arc<CallPredicate>);

type CallPredicate = dyn Fn(VfsOp, &[&Path]) -> bool + Send + Sync;

impl fmt::Debug for CallFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CallFilter(..)")
    }
}

/// When to inject a fault. A call matches when its op and path pass the
/// filters (and the `when` predicate, if set); the first `after` matching
/// calls succeed, and later ones fail (at most `count` times, each with
/// `probability` if set).
#[derive(Clone, Debug)]
pub struct FaultRule {
    /// Only this kind of call (`None`: any).
    pub op: Option<VfsOp>,
    /// Only calls whose path contains this string (`None`: any).
    pub path_contains: Option<String>,
    /// Only calls for which this predicate holds (`None`: any); evaluated
    /// after the op and path filters, and only for calls that pass them.
    pub when: Option<CallFilter>,
    /// This many matching calls succeed before faults start.
    pub after: u64,
    /// How many faults to inject (`None`: forever).
    pub count: Option<u64>,
    /// Each eligible call fails with probability `p`, drawn from a generator
    /// seeded with `seed`, so a run is reproducible.
    pub probability: Option<(f64, u64)>,
    /// What the fault does.
    pub kind: FaultKind,
}

impl FaultRule {
    /// A rule failing every call, forever, with `kind`; narrow it with the
    /// builder methods.
    pub fn new(kind: FaultKind) -> Self {
        FaultRule {
            op: None,
            path_contains: None,
            when: None,
            after: 0,
            count: None,
            probability: None,
            kind,
        }
    }

    /// Only calls of kind `op`.
    pub fn op(mut self, op: VfsOp) -> Self {
        self.op = Some(op);
        self
    }

    /// Only calls on paths containing `s`.
    pub fn path_contains(mut self, s: impl Into<String>) -> Self {
        self.path_contains = Some(s.into());
        self
    }

    /// Only calls for which `f(op, paths)` returns true (checked after the op
    /// and path filters, so it sees only calls that pass them).
    pub fn when(mut self, f: impl Fn(VfsOp, &[&Path]) -> bool + Send + Sync + 'static) -> Self {
        self.when = Some(CallFilter(Arc::new(f)));
        self
    }

    /// Let the first `n` matching calls succeed.
    pub fn after(mut self, n: u64) -> Self {
        self.after = n;
        self
    }

    /// Inject at most `n` faults.
    pub fn count(mut self, n: u64) -> Self {
        self.count = Some(n);
        self
    }

    /// Fail each eligible call with probability `p` (seeded).
    pub fn probability(mut self, p: f64, seed: u64) -> Self {
        self.probability = Some((p, seed));
        self
    }
}

struct RuleState {
    rule: FaultRule,
    matched: u64,
    fired: u64,
    rng: u64,
}

impl RuleState {
    fn new(rule: FaultRule) -> Self {
        let rng = rule.probability.map_or(0, |(_, seed)| seed);
        RuleState {
            rule,
            matched: 0,
            fired: 0,
            rng,
        }
    }

    fn matches(&self, op: VfsOp, paths: &[&Path]) -> bool {
        if self.rule.op.is_some_and(|o| o != op) {
            return false;
        }
        let path_ok = match &self.rule.path_contains {
            None => true,
            Some(s) => paths
                .iter()
                .any(|p| p.to_string_lossy().contains(s.as_str())),
        };
        path_ok && self.rule.when.as_ref().is_none_or(|w| (w.0)(op, paths))
    }

    /// Uniform in [0, 1) from a SplitMix64 sequence.
    fn next_f64(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Rules and call counters, shared by a [`FaultVfs`] and the files it opened.
#[derive(Default)]
struct FaultInjector {
    rules: Mutex<Vec<RuleState>>,
    counts: [AtomicU64; OP_COUNT],
    /// Faults injected so far, per op.
    injected: [AtomicU64; OP_COUNT],
}

impl fmt::Debug for FaultInjector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultInjector")
            .field("rules", &self.rules.lock().len())
            .finish()
    }
}

impl FaultInjector {
    fn set(&self, rule: FaultRule) {
        *self.rules.lock() = vec![RuleState::new(rule)];
    }

    fn add(&self, rule: FaultRule) {
        self.rules.lock().push(RuleState::new(rule));
    }

    fn clear(&self) {
        self.rules.lock().clear();
    }

    fn count(&self, op: VfsOp) -> u64 {
        self.counts[op as usize].load(Ordering::Relaxed)
    }

    fn injected(&self, op: VfsOp) -> u64 {
        self.injected[op as usize].load(Ordering::Relaxed)
    }

    /// Counts the call and decides whether it fails. Every rule matching the
    /// call counts it; the first eligible one fires.
    fn check(&self, op: VfsOp, paths: &[&Path]) -> Option<FaultKind> {
        self.counts[op as usize].fetch_add(1, Ordering::Relaxed);
        let mut rules = self.rules.lock();
        let mut hit = None;
        for r in rules.iter_mut() {
            if !r.matches(op, paths) {
                continue;
            }
            r.matched += 1;
            if hit.is_some() || r.matched <= r.rule.after {
                continue;
            }
            if r.rule.count.is_some_and(|c| r.fired >= c) {
                continue;
            }
            if let Some((p, _)) = r.rule.probability
                && r.next_f64() >= p
            {
                continue;
            }
            r.fired += 1;
            hit = Some(r.rule.kind.clone());
        }
        if hit.is_some() {
            self.injected[op as usize].fetch_add(1, Ordering::Relaxed);
        }
        hit
    }

    /// `Err` with the injected error if the call is to fail.
    fn gate(&self, op: VfsOp, paths: &[&Path]) -> Result<()> {
        match self.check(op, paths) {
            None => Ok(()),
            Some(kind) => Err(injected_error(op, paths, &kind)),
        }
    }
}

fn injected_error(op: VfsOp, paths: &[&Path], kind: &FaultKind) -> Error {
    let source = match kind {
        FaultKind::IoError => io::Error::other("injected I/O error"),
        FaultKind::NoSpace => io::Error::from_raw_os_error(28),
        FaultKind::ShortWrite => io::Error::new(io::ErrorKind::WriteZero, "injected short write"),
    };
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    Error::io(
        format!("{op:?} {} (injected {kind:?} fault)", names.join(" -> ")),
        source,
    )
}

// ---------------------------------------------------------------------------
// FaultVfs
// ---------------------------------------------------------------------------

/// Wraps any [`Vfs`], counting calls per [`VfsOp`] and failing the ones the
/// current [`FaultRule`]s select. Files it opens are wrapped too, so reads,
/// appends, flushes and syncs are counted and can fail. Clones share rules
/// and counters.
pub struct FaultVfs<V: Vfs> {
    inner: V,
    faults: Arc<FaultInjector>,
}

impl<V: Vfs> FaultVfs<V> {
    /// Wraps `inner` with no rules.
    pub fn new(inner: V) -> Self {
        FaultVfs {
            inner,
            faults: Arc::default(),
        }
    }

    /// The wrapped file system (calls on it bypass injection and counting).
    pub fn inner(&self) -> &V {
        &self.inner
    }

    /// Replaces all rules with `rule` (its counters start from zero).
    pub fn set_fault(&self, rule: FaultRule) {
        self.faults.set(rule);
    }

    /// Adds `rule` to the current rules; the first one that fires on a call
    /// decides the fault.
    pub fn add_fault(&self, rule: FaultRule) {
        self.faults.add(rule);
    }

    /// Removes all rules.
    pub fn clear_faults(&self) {
        self.faults.clear();
    }

    /// How many calls of kind `op` were made so far (including failed ones).
    pub fn op_count(&self, op: VfsOp) -> u64 {
        self.faults.count(op)
    }

    /// How many calls of kind `op` failed by an injected fault so far.
    pub fn injected_count(&self, op: VfsOp) -> u64 {
        self.faults.injected(op)
    }
}

impl<V: Vfs + Clone> Clone for FaultVfs<V> {
    fn clone(&self) -> Self {
        FaultVfs {
            inner: self.inner.clone(),
            faults: Arc::clone(&self.faults),
        }
    }
}

impl<V: Vfs + Default> Default for FaultVfs<V> {
    fn default() -> Self {
        FaultVfs::new(V::default())
    }
}

impl<V: Vfs> fmt::Debug for FaultVfs<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultVfs")
            .field("inner", &self.inner)
            .field("faults", &self.faults)
            .finish()
    }
}

struct FaultWritableFile {
    inner: Box<dyn WritableFile>,
    path: PathBuf,
    faults: Arc<FaultInjector>,
}

impl WritableFile for FaultWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        match self.faults.check(VfsOp::Append, &[&self.path]) {
            None => self.inner.append(data),
            Some(kind) => {
                if matches!(kind, FaultKind::ShortWrite) {
                    self.inner.append(&data[..data.len() / 2])?;
                }
                Err(injected_error(VfsOp::Append, &[&self.path], &kind))
            }
        }
    }

    fn flush(&mut self) -> Result<()> {
        self.faults.gate(VfsOp::Flush, &[&self.path])?;
        self.inner.flush()
    }

    fn sync(&mut self) -> Result<()> {
        self.faults.gate(VfsOp::Sync, &[&self.path])?;
        self.inner.sync()
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn preallocate_in_steps(&mut self, step: u64) {
        self.inner.preallocate_in_steps(step);
    }
}

struct FaultRandomAccessFile {
    inner: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    faults: Arc<FaultInjector>,
}

impl RandomAccessFile for FaultRandomAccessFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.faults.gate(VfsOp::Read, &[&self.path])?;
        self.inner.read_exact_at(buf, offset)
    }

    fn read_into(&self, buf: &mut Vec<u8>, len: usize, offset: u64) -> Result<()> {
        self.faults.gate(VfsOp::Read, &[&self.path])?;
        self.inner.read_into(buf, len, offset)
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl<V: Vfs> Vfs for FaultVfs<V> {
    fn create_dir_all(&self, path: &Path) -> Result<()> {
        self.faults.gate(VfsOp::CreateDir, &[path])?;
        self.inner.create_dir_all(path)
    }

    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.faults.gate(VfsOp::Create, &[path])?;
        let inner = self.inner.create(path)?;
        Ok(Box::new(FaultWritableFile {
            inner,
            path: path.to_path_buf(),
            faults: Arc::clone(&self.faults),
        }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.faults.gate(VfsOp::Open, &[path])?;
        let inner = self.inner.open(path)?;
        Ok(Arc::new(FaultRandomAccessFile {
            inner,
            path: path.to_path_buf(),
            faults: Arc::clone(&self.faults),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.faults.gate(VfsOp::Rename, &[from, to])?;
        self.inner.rename(from, to)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        self.faults.gate(VfsOp::Remove, &[path])?;
        self.inner.remove(path)
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.faults.gate(VfsOp::List, &[dir])?;
        self.inner.list(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.faults.gate(VfsOp::SyncDir, &[dir])?;
        self.inner.sync_dir(dir)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.faults.gate(VfsOp::Lock, &[path])?;
        self.inner.lock(path)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        self.faults.gate(VfsOp::FileSize, &[path])?;
        self.inner.file_size(path)
    }

    fn is_regular_file(&self, path: &Path) -> bool {
        self.inner.is_regular_file(path)
    }
}
