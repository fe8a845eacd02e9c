//! Test file systems: [`MemFs`], an in-memory [`Vfs`] that simulates power
//! cuts; [`FaultVfs`], a wrapper that injects I/O faults into any [`Vfs`];
//! and [`MemVfs`], the two combined (`FaultVfs<MemFs>`), which is what tests
//! normally use.
//!
//! Durability model of [`MemFs`] (the pessimistic reading of POSIX that the
//! contract in [`crate::vfs`] promises no more than):
//! - Every file has the bytes appended so far (visible to readers at once)
//!   and a durable prefix, extended to the full length by
//!   [`WritableFile::sync`]. `flush` is a no-op: there is no user-space
//!   buffer, so a process crash (as opposed to a power cut) loses nothing.
//! - Directory entries (a create, rename or removal) are durable once
//!   [`Vfs::sync_dir`] runs on the parent directory of the name concerned. A
//!   rename touches two names; each becomes durable with the sync of its own
//!   parent, so a rename inside one directory is atomic.
//! - `create` on an existing name makes a new, empty file under that name;
//!   until the directory is synced a power cut brings back the old file.
//! - Directories themselves (`create_dir_all`) are durable at once.
//! - [`MemFs::power_cut`] keeps only durable entries and durable bytes,
//!   releases every lock, and invalidates every open handle (later calls on
//!   them fail), as after a reboot.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::vfs::{FileLock, RandomAccessFile, Vfs, WritableFile};

pub use crate::vfs_fault::{CallFilter, FaultKind, FaultRule, FaultVfs, VfsOp};

// ---------------------------------------------------------------------------
// MemFs
// ---------------------------------------------------------------------------

#[derive(Default)]
struct Inode {
    data: Vec<u8>,
    /// Length of the durable prefix of `data`.
    synced: usize,
}

type InodeRef = Arc<Mutex<Inode>>;

#[derive(Default)]
struct FsState {
    /// Bumped by each power cut; handles from an older generation are dead.
    generation: u64,
    dirs: BTreeSet<PathBuf>,
    /// The namespace as the running system sees it.
    files: BTreeMap<PathBuf, InodeRef>,
    /// The namespace as it would be found after a power cut.
    durable: BTreeMap<PathBuf, InodeRef>,
    locks: HashSet<PathBuf>,
}

fn is_root(p: &Path) -> bool {
    p.parent().is_none()
}

impl FsState {
    fn dir_exists(&self, p: &Path) -> bool {
        is_root(p) || self.dirs.contains(p)
    }

    fn parent_exists(&self, p: &Path) -> bool {
        p.parent().is_some_and(|d| self.dir_exists(d))
    }
}

fn fs_err(what: &str, path: &Path, kind: io::ErrorKind, msg: &str) -> Error {
    Error::io(
        format!("{what} {}", path.display()),
        io::Error::new(kind, msg),
    )
}

fn not_found(what: &str, path: &Path) -> Error {
    fs_err(
        what,
        path,
        io::ErrorKind::NotFound,
        "no such file or directory",
    )
}

fn stale(what: &str, path: &Path) -> Error {
    fs_err(
        what,
        path,
        io::ErrorKind::Other,
        "file handle invalidated by a simulated power cut",
    )
}

/// The in-memory file system (without fault injection); see the module
/// documentation for its durability model. Clones share the same state.
#[derive(Clone, Default)]
pub struct MemFs {
    state: Arc<Mutex<FsState>>,
}

impl fmt::Debug for MemFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("MemFs")
            .field("dirs", &st.dirs.len())
            .field("files", &st.files.len())
            .field("generation", &st.generation)
            .finish()
    }
}

impl MemFs {
    /// An empty file system.
    pub fn new() -> Self {
        MemFs::default()
    }

    /// Simulates a power cut followed by a reboot: only durable directory
    /// entries and durable bytes remain, locks are released, and handles
    /// opened before the cut fail from now on.
    pub fn power_cut(&self) {
        let mut st = self.state.lock();
        st.generation += 1;
        st.locks.clear();
        for inode in st.durable.values() {
            let mut i = inode.lock();
            let synced = i.synced;
            i.data.truncate(synced);
        }
        st.files = st.durable.clone();
    }
}

struct MemWritableFile {
    fs: Arc<Mutex<FsState>>,
    inode: InodeRef,
    generation: u64,
    path: PathBuf,
    len: u64,
}

impl MemWritableFile {
    fn live(&self, what: &str) -> Result<parking_lot::MutexGuard<'_, FsState>> {
        let st = self.fs.lock();
        if st.generation != self.generation {
            return Err(stale(what, &self.path));
        }
        Ok(st)
    }
}

impl WritableFile for MemWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let st = self.live("append to")?;
        self.inode.lock().data.extend_from_slice(data);
        drop(st);
        self.len += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        let _live = self.live("flush")?;
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        let _live = self.live("fsync")?;
        let mut i = self.inode.lock();
        i.synced = i.data.len();
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }
}

struct MemRandomAccessFile {
    fs: Arc<Mutex<FsState>>,
    inode: InodeRef,
    generation: u64,
    path: PathBuf,
    len: u64,
}

impl RandomAccessFile for MemRandomAccessFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let what = format!("read {} bytes at {offset} from", buf.len());
        let st = self.fs.lock();
        if st.generation != self.generation {
            return Err(stale(&what, &self.path));
        }
        let i = self.inode.lock();
        let range = usize::try_from(offset)
            .ok()
            .and_then(|s| Some(s..s.checked_add(buf.len())?))
            .filter(|r| r.end <= i.data.len());
        match range {
            Some(r) => {
                buf.copy_from_slice(&i.data[r]);
                Ok(())
            }
            None => Err(fs_err(
                &what,
                &self.path,
                io::ErrorKind::UnexpectedEof,
                "read past the end of the file",
            )),
        }
    }

    fn len(&self) -> u64 {
        self.len
    }
}

struct MemFileLock {
    fs: Arc<Mutex<FsState>>,
    path: PathBuf,
    generation: u64,
}

impl FileLock for MemFileLock {}

impl Drop for MemFileLock {
    fn drop(&mut self) {
        let mut st = self.fs.lock();
        if st.generation == self.generation {
            st.locks.remove(&self.path);
        }
    }
}

impl Vfs for MemFs {
    fn create_dir_all(&self, path: &Path) -> Result<()> {
        let mut st = self.state.lock();
        let dirs: Vec<&Path> = path.ancestors().filter(|p| !is_root(p)).collect();
        if let Some(f) = dirs.iter().find(|d| st.files.contains_key(**d)) {
            return Err(fs_err(
                "create directory",
                f,
                io::ErrorKind::AlreadyExists,
                "a file exists with this name",
            ));
        }
        for d in dirs {
            st.dirs.insert(d.to_path_buf());
        }
        Ok(())
    }

    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let mut st = self.state.lock();
        if !st.parent_exists(path) {
            return Err(not_found("create", path));
        }
        if st.dir_exists(path) {
            return Err(fs_err(
                "create",
                path,
                io::ErrorKind::IsADirectory,
                "is a directory",
            ));
        }
        if st.files.contains_key(path) {
            return Err(fs_err(
                "create",
                path,
                io::ErrorKind::AlreadyExists,
                "file exists",
            ));
        }
        let inode = InodeRef::default();
        st.files.insert(path.to_path_buf(), Arc::clone(&inode));
        Ok(Box::new(MemWritableFile {
            fs: Arc::clone(&self.state),
            inode,
            generation: st.generation,
            path: path.to_path_buf(),
            len: 0,
        }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let st = self.state.lock();
        let inode = st.files.get(path).ok_or_else(|| not_found("open", path))?;
        let len = inode.lock().data.len() as u64;
        Ok(Arc::new(MemRandomAccessFile {
            fs: Arc::clone(&self.state),
            inode: Arc::clone(inode),
            generation: st.generation,
            path: path.to_path_buf(),
            len,
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = self.state.lock();
        if !st.files.contains_key(from) {
            return Err(not_found("rename", from));
        }
        if !st.parent_exists(to) {
            return Err(not_found("rename to", to));
        }
        if st.dir_exists(to) {
            return Err(fs_err(
                "rename to",
                to,
                io::ErrorKind::IsADirectory,
                "is a directory",
            ));
        }
        if let Some(inode) = st.files.remove(from) {
            st.files.insert(to.to_path_buf(), inode);
        }
        Ok(())
    }

    fn remove(&self, path: &Path) -> Result<()> {
        let mut st = self.state.lock();
        match st.files.remove(path) {
            Some(_) => Ok(()),
            None => Err(not_found("remove", path)),
        }
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let st = self.state.lock();
        if !st.dir_exists(dir) {
            return Err(not_found("list", dir));
        }
        let names: BTreeSet<String> = st
            .files
            .keys()
            .chain(st.dirs.iter())
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
            .collect();
        Ok(names.into_iter().collect())
    }

    fn exists(&self, path: &Path) -> bool {
        let st = self.state.lock();
        st.files.contains_key(path) || st.dir_exists(path)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let mut st = self.state.lock();
        if !st.dir_exists(dir) {
            return Err(not_found("fsync directory", dir));
        }
        let names: Vec<PathBuf> = st
            .files
            .keys()
            .chain(st.durable.keys())
            .filter(|p| p.parent() == Some(dir))
            .cloned()
            .collect();
        for name in names {
            match st.files.get(&name).cloned() {
                Some(inode) => st.durable.insert(name, inode),
                None => st.durable.remove(&name),
            };
        }
        Ok(())
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let mut st = self.state.lock();
        if !st.parent_exists(path) {
            return Err(not_found("open lock file", path));
        }
        if st.locks.contains(path) {
            return Err(Error::Locked {
                path: path.parent().unwrap_or(path).to_path_buf(),
            });
        }
        if !st.files.contains_key(path) {
            st.files.insert(path.to_path_buf(), InodeRef::default());
        }
        st.locks.insert(path.to_path_buf());
        Ok(Box::new(MemFileLock {
            fs: Arc::clone(&self.state),
            path: path.to_path_buf(),
            generation: st.generation,
        }))
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        let st = self.state.lock();
        let inode = st.files.get(path).ok_or_else(|| not_found("stat", path))?;
        Ok(inode.lock().data.len() as u64)
    }

    fn is_regular_file(&self, path: &Path) -> bool {
        self.state.lock().files.contains_key(path)
    }
}

// ---------------------------------------------------------------------------
// MemVfs
// ---------------------------------------------------------------------------

/// In-memory file system with fault injection: [`MemFs`] behind a
/// [`FaultVfs`]. Tracks, per file, the bytes appended and the prefix made
/// durable by `sync()`; directory entries (create/rename/remove) become
/// durable on `sync_dir` of the parent. Clones share the same state.
#[derive(Debug, Clone, Default)]
pub struct MemVfs {
    vfs: FaultVfs<MemFs>,
}

impl MemVfs {
    /// An empty file system with no fault rules.
    pub fn new() -> Self {
        MemVfs::default()
    }

    /// Simulates a power cut: every file loses bytes not synced;
    /// creations, renames and removals whose directory was not synced since
    /// are undone. Locks and handles are released (old handles fail).
    /// Afterwards the VFS works as a freshly booted machine. Fault rules and
    /// call counters are kept.
    pub fn power_cut(&self) {
        self.vfs.inner().power_cut();
    }

    /// Replaces all fault rules with `rule`.
    pub fn set_fault(&self, rule: FaultRule) {
        self.vfs.set_fault(rule);
    }

    /// Adds a fault rule to the current ones.
    pub fn add_fault(&self, rule: FaultRule) {
        self.vfs.add_fault(rule);
    }

    /// Removes all fault rules.
    pub fn clear_faults(&self) {
        self.vfs.clear_faults();
    }

    /// How many calls of kind `op` were made so far (including failed ones).
    pub fn op_count(&self, op: VfsOp) -> u64 {
        self.vfs.op_count(op)
    }

    /// How many calls of kind `op` failed by an injected fault so far.
    pub fn injected_count(&self, op: VfsOp) -> u64 {
        self.vfs.injected_count(op)
    }

    /// The underlying file system, bypassing fault injection and counting.
    pub fn mem_fs(&self) -> &MemFs {
        self.vfs.inner()
    }
}

impl Vfs for MemVfs {
    fn create_dir_all(&self, path: &Path) -> Result<()> {
        self.vfs.create_dir_all(path)
    }

    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.vfs.create(path)
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.vfs.open(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.vfs.rename(from, to)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        self.vfs.remove(path)
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.vfs.list(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        self.vfs.exists(path)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.vfs.sync_dir(dir)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.vfs.lock(path)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        self.vfs.file_size(path)
    }

    fn is_regular_file(&self, path: &Path) -> bool {
        self.vfs.is_regular_file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::StdVfs;

    fn setup() -> (MemVfs, PathBuf) {
        let vfs = MemVfs::new();
        let dir = PathBuf::from("/db");
        vfs.create_dir_all(&dir).expect("mkdir");
        vfs.sync_dir(Path::new("/")).expect("sync root");
        (vfs, dir)
    }

    fn write(vfs: &dyn Vfs, path: &Path, data: &[u8], sync: bool) -> Box<dyn WritableFile> {
        let mut f = vfs.create(path).expect("create");
        f.append(data).expect("append");
        if sync {
            f.sync().expect("sync");
        }
        f
    }

    fn read(vfs: &dyn Vfs, path: &Path) -> Vec<u8> {
        vfs.read_all(path).expect("read_all")
    }

    #[test]
    fn synced_bytes_survive_a_power_cut_and_unsynced_bytes_do_not() {
        let (vfs, dir) = setup();
        let p = dir.join("a");
        let mut f = write(&vfs, &p, b"durable", true);
        vfs.sync_dir(&dir).expect("sync dir");
        f.append(b" volatile").expect("append");
        f.flush().expect("flush");
        assert_eq!(read(&vfs, &p), b"durable volatile");
        assert_eq!(vfs.file_size(&p).expect("size"), 16);
        vfs.power_cut();
        assert_eq!(read(&vfs, &p), b"durable");
        // A second cut changes nothing.
        vfs.power_cut();
        assert_eq!(read(&vfs, &p), b"durable");
    }

    #[test]
    fn created_file_without_sync_dir_vanishes() {
        let (vfs, dir) = setup();
        let p = dir.join("new");
        drop(write(&vfs, &p, b"synced data", true));
        assert!(vfs.exists(&p));
        vfs.power_cut();
        assert!(!vfs.exists(&p));
        assert!(vfs.list(&dir).expect("list").is_empty());
        assert!(vfs.open(&p).is_err());
    }

    #[test]
    fn removal_without_sync_dir_comes_back() {
        let (vfs, dir) = setup();
        let p = dir.join("f");
        drop(write(&vfs, &p, b"content", true));
        vfs.sync_dir(&dir).expect("sync dir");
        vfs.remove(&p).expect("remove");
        assert!(!vfs.exists(&p));
        vfs.power_cut();
        assert_eq!(read(&vfs, &p), b"content");
        vfs.remove(&p).expect("remove");
        vfs.sync_dir(&dir).expect("sync dir");
        vfs.power_cut();
        assert!(!vfs.exists(&p));
    }

    #[test]
    fn rename_is_atomic_and_durable_only_after_sync_dir() {
        let (vfs, dir) = setup();
        let cur = dir.join("CURRENT");
        let tmp = dir.join("CURRENT.tmp");
        drop(write(&vfs, &cur, b"old", true));
        vfs.sync_dir(&dir).expect("sync dir");
        drop(write(&vfs, &tmp, b"new", true));
        vfs.rename(&tmp, &cur).expect("rename");
        assert_eq!(read(&vfs, &cur), b"new");
        assert!(!vfs.exists(&tmp));
        vfs.power_cut();
        // Unsynced rename reverts: old content, and the temp file was never
        // durable either.
        assert_eq!(read(&vfs, &cur), b"old");
        assert!(!vfs.exists(&tmp));

        drop(write(&vfs, &tmp, b"new", true));
        vfs.sync_dir(&dir).expect("sync dir");
        vfs.rename(&tmp, &cur).expect("rename");
        vfs.power_cut();
        // Rename not synced: the durable temp file is back, CURRENT is old.
        assert_eq!(read(&vfs, &cur), b"old");
        assert_eq!(read(&vfs, &tmp), b"new");

        vfs.rename(&tmp, &cur).expect("rename");
        vfs.sync_dir(&dir).expect("sync dir");
        vfs.power_cut();
        assert_eq!(read(&vfs, &cur), b"new");
        assert!(!vfs.exists(&tmp));
        assert_eq!(vfs.list(&dir).expect("list"), vec!["CURRENT".to_string()]);
    }

    #[test]
    fn recreating_a_file_without_sync_dir_brings_the_old_one_back() {
        let (vfs, dir) = setup();
        let p = dir.join("f");
        drop(write(&vfs, &p, b"first", true));
        vfs.sync_dir(&dir).expect("sync dir");
        vfs.remove(&p).expect("remove");
        drop(write(&vfs, &p, b"second", true));
        assert_eq!(read(&vfs, &p), b"second");
        vfs.power_cut();
        assert_eq!(read(&vfs, &p), b"first");
    }

    #[test]
    fn handles_from_before_a_power_cut_are_dead() {
        let (vfs, dir) = setup();
        let p = dir.join("f");
        let mut w = write(&vfs, &p, b"abc", true);
        vfs.sync_dir(&dir).expect("sync dir");
        let r = vfs.open(&p).expect("open");
        vfs.power_cut();
        assert!(w.append(b"x").is_err());
        assert!(w.sync().is_err());
        let mut buf = [0u8; 3];
        assert!(r.read_exact_at(&mut buf, 0).is_err());
        assert_eq!(read(&vfs, &p), b"abc");
        let r = vfs.open(&p).expect("reopen");
        r.read_exact_at(&mut buf, 0).expect("read");
        assert_eq!(&buf, b"abc");
        assert!(r.read_exact_at(&mut buf, 1).is_err(), "read past end");
    }

    #[test]
    fn second_lock_is_refused_until_released_or_power_cut() {
        let (vfs, dir) = setup();
        let p = dir.join("LOCK");
        let held = vfs.lock(&p).expect("lock");
        assert!(matches!(vfs.lock(&p), Err(Error::Locked { .. })));
        drop(held);
        let held = vfs.lock(&p).expect("relock");
        vfs.power_cut();
        let again = vfs.lock(&p).expect("lock after power cut");
        // Dropping the stale lock must not release the new one.
        drop(held);
        assert!(matches!(vfs.lock(&p), Err(Error::Locked { .. })));
        drop(again);
    }

    #[test]
    fn missing_parent_directory_is_an_error_and_list_is_sorted() {
        let vfs = MemVfs::new();
        assert!(vfs.create(Path::new("/nodir/f")).is_err());
        assert!(vfs.list(Path::new("/nodir")).is_err());
        vfs.create_dir_all(Path::new("/d/sub")).expect("mkdir");
        drop(write(&vfs, Path::new("/d/b"), b"", false));
        drop(write(&vfs, Path::new("/d/a"), b"", false));
        assert_eq!(
            vfs.list(Path::new("/d")).expect("list"),
            vec!["a".to_string(), "b".to_string(), "sub".to_string()]
        );
        assert!(vfs.exists(Path::new("/d/sub")));
        assert!(vfs.rename(Path::new("/d/zz"), Path::new("/d/y")).is_err());
        assert!(vfs.remove(Path::new("/d/zz")).is_err());
    }

    #[test]
    fn rule_fires_after_n_matching_calls_and_counts_ops() {
        let (vfs, dir) = setup();
        let p = dir.join("f");
        let mut f = vfs.create(&p).expect("create");
        vfs.set_fault(FaultRule::new(FaultKind::IoError).op(VfsOp::Sync).after(3));
        let before = vfs.op_count(VfsOp::Sync);
        for i in 0..3 {
            f.append(b"x").expect("append");
            f.sync()
                .unwrap_or_else(|e| panic!("sync {i} failed early: {e}"));
        }
        let err = f.sync().expect_err("fourth sync fails");
        match &err {
            Error::Io { context, .. } => {
                assert!(
                    context.contains("Sync") && context.contains("/db/f"),
                    "{context}"
                );
            }
            other => panic!("not an I/O error: {other:?}"),
        }
        assert!(f.sync().is_err(), "no count limit: keeps failing");
        assert_eq!(vfs.op_count(VfsOp::Sync) - before, 5);
        assert_eq!(vfs.op_count(VfsOp::Append), 3);
        vfs.clear_faults();
        f.sync().expect("sync after clear");
    }

    #[test]
    fn count_limited_rule_stops_and_path_filter_applies() {
        let (vfs, dir) = setup();
        vfs.set_fault(
            FaultRule::new(FaultKind::IoError)
                .op(VfsOp::Create)
                .path_contains("MANIFEST")
                .after(1)
                .count(2),
        );
        assert!(vfs.create(&dir.join("000001.log")).is_ok(), "filtered out");
        assert!(vfs.create(&dir.join("MANIFEST-1")).is_ok(), "first passes");
        assert!(vfs.create(&dir.join("MANIFEST-2")).is_err());
        assert!(vfs.create(&dir.join("000002.log")).is_ok(), "filtered out");
        assert!(vfs.create(&dir.join("MANIFEST-3")).is_err());
        assert!(vfs.create(&dir.join("MANIFEST-4")).is_ok(), "count used up");
        assert_eq!(vfs.op_count(VfsOp::Create), 6);
        assert!(
            !vfs.exists(&dir.join("MANIFEST-2")),
            "failed call had no effect"
        );

        // set_fault replaces the previous rules.
        vfs.set_fault(FaultRule::new(FaultKind::IoError).op(VfsOp::Remove));
        assert!(vfs.create(&dir.join("MANIFEST-5")).is_ok());
        assert!(vfs.remove(&dir.join("MANIFEST-5")).is_err());
    }

    #[test]
    fn rename_rule_matches_either_name() {
        let (vfs, dir) = setup();
        drop(write(&vfs, &dir.join("a.tmp"), b"x", false));
        vfs.set_fault(FaultRule::new(FaultKind::IoError).path_contains("CURRENT"));
        assert!(
            vfs.rename(&dir.join("a.tmp"), &dir.join("CURRENT"))
                .is_err()
        );
        assert!(vfs.exists(&dir.join("a.tmp")));
    }

    #[test]
    fn when_predicate_narrows_a_rule_and_injections_are_counted() {
        let (vfs, dir) = setup();
        vfs.set_fault(
            FaultRule::new(FaultKind::IoError)
                .op(VfsOp::Create)
                .when(|op, paths| op == VfsOp::Create && paths.iter().any(|p| p.ends_with("b")))
                .after(1)
                .count(1),
        );
        // Creation is exclusive: remove each file before making it again.
        let create = |name: &str| {
            let p = dir.join(name);
            let r = vfs.create(&p).map(drop);
            if r.is_ok() {
                vfs.remove(&p).expect("remove");
            }
            r
        };
        assert!(create("a").is_ok(), "predicate false");
        assert!(create("b").is_ok(), "first match passes");
        assert!(create("a").is_ok(), "predicate false");
        assert!(create("b").is_err(), "second match fails");
        assert!(create("b").is_ok(), "count used up");
        assert_eq!(vfs.op_count(VfsOp::Create), 5);
        assert_eq!(vfs.injected_count(VfsOp::Create), 1);
        assert_eq!(vfs.injected_count(VfsOp::Append), 0);
    }

    #[test]
    fn short_write_leaves_half_the_bytes() {
        let (vfs, dir) = setup();
        let p = dir.join("f");
        let mut f = vfs.create(&p).expect("create");
        f.append(b"0123").expect("append");
        vfs.set_fault(
            FaultRule::new(FaultKind::ShortWrite)
                .op(VfsOp::Append)
                .count(1),
        );
        assert!(f.append(b"abcdefghij").is_err());
        assert_eq!(read(&vfs, &p), b"0123abcde");
        assert_eq!(f.len(), 9);
        f.append(b"Z").expect("count used up");
        assert_eq!(read(&vfs, &p), b"0123abcdeZ");
    }

    #[test]
    fn no_space_is_enospc() {
        let (vfs, dir) = setup();
        let p = dir.join("f");
        let mut f = vfs.create(&p).expect("create");
        vfs.set_fault(FaultRule::new(FaultKind::NoSpace).op(VfsOp::Append));
        match f.append(b"data") {
            Err(Error::Io { source, .. }) => assert_eq!(source.raw_os_error(), Some(28)),
            other => panic!("expected ENOSPC, got {other:?}"),
        }
        assert_eq!(read(&vfs, &p), b"", "nothing written");
    }

    fn random_pattern(seed: u64) -> Vec<bool> {
        let (vfs, dir) = setup();
        vfs.set_fault(
            FaultRule::new(FaultKind::IoError)
                .op(VfsOp::Read)
                .probability(0.3, seed),
        );
        drop(write(&vfs, &dir.join("f"), b"abcd", false));
        let f = vfs.open(&dir.join("f")).expect("open");
        let mut buf = [0u8; 2];
        (0..200)
            .map(|_| f.read_exact_at(&mut buf, 1).is_err())
            .collect()
    }

    #[test]
    fn random_faults_are_reproducible_by_seed() {
        let a = random_pattern(42);
        assert_eq!(a, random_pattern(42));
        assert_ne!(a, random_pattern(43));
        let failures = a.iter().filter(|&&x| x).count();
        assert!((30..=90).contains(&failures), "{failures} of 200 at p=0.3");
    }

    #[test]
    fn fault_vfs_wraps_the_real_file_system() {
        let dir = tempfile::tempdir().expect("tempdir");
        let vfs = FaultVfs::new(StdVfs);
        let p = dir.path().join("f");
        vfs.set_fault(
            FaultRule::new(FaultKind::ShortWrite)
                .op(VfsOp::Append)
                .after(1),
        );
        let mut f = vfs.create(&p).expect("create");
        f.append(b"ok").expect("first append");
        assert!(f.append(b"1234").is_err());
        f.sync().expect("sync");
        assert_eq!(vfs.read_all(&p).expect("read"), b"ok12");
        assert_eq!(vfs.op_count(VfsOp::Open), 1);
        assert_eq!(vfs.op_count(VfsOp::Read), 1);
        vfs.set_fault(FaultRule::new(FaultKind::IoError).op(VfsOp::Open));
        assert!(vfs.read_all(&p).is_err());
        assert!(vfs.inner().read_all(&p).is_ok(), "inner bypasses faults");
    }

    #[test]
    fn clones_share_state() {
        let (vfs, dir) = setup();
        let other = vfs.clone();
        drop(write(&other, &dir.join("f"), b"x", false));
        assert!(vfs.exists(&dir.join("f")));
        vfs.set_fault(FaultRule::new(FaultKind::IoError).op(VfsOp::List));
        assert!(other.list(&dir).is_err());
        assert_eq!(vfs.op_count(VfsOp::List), other.op_count(VfsOp::List));
    }
}
