//! The file-system seam: every file operation of the engine goes through
//! [`Vfs`], so tests can substitute an in-memory or fault-injecting one.
//!
//! The contract the engine relies on:
//! - [`WritableFile::flush`] hands buffered bytes to the operating system (a
//!   process crash no longer loses them); [`WritableFile::sync`] makes them
//!   durable (a power cut no longer loses them).
//! - [`Vfs::rename`] is atomic, and durable once [`Vfs::sync_dir`] on the
//!   parent directory returns.
//! - A newly created file's directory entry is durable only after
//!   [`Vfs::sync_dir`].

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};

/// A file opened for appending.
pub trait WritableFile: Send {
    /// Appends bytes (possibly buffered in user space).
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Hands buffered bytes to the operating system.
    fn flush(&mut self) -> Result<()>;
    /// Appends bytes and hands them to the operating system at once, after
    /// anything buffered: for writers that keep buffers of their own
    /// (spill files, whose buffers a join's memory budget counts), which
    /// then need no second one here.
    fn append_unbuffered(&mut self, data: &[u8]) -> Result<()> {
        self.append(data)?;
        self.flush()
    }
    /// Flushes, then makes the contents durable (fsync/fdatasync).
    fn sync(&mut self) -> Result<()>;
    /// Bytes appended so far.
    fn len(&self) -> u64;
    /// True when nothing has been appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Asks the file to grow its size ahead of the appends, `step` bytes at
    /// a time (zero-filled past what was written), once it has been synced:
    /// most synced appends then land inside the file's size and have no
    /// size change to make durable. (Files never synced do without: on
    /// ext4 small writes into the sparse space cost more than appends at
    /// the end, 8-12 % of an unsynced `fillrandom`.) A hint: a file system
    /// that ignores it stays correct. Readers of such a file must take
    /// zeros after the last record as its end.
    fn preallocate_in_steps(&mut self, step: u64) {
        let _ = step;
    }
}

/// A file opened for positional reads; shared by many readers.
pub trait RandomAccessFile: Send + Sync {
    /// Fills `buf` from `offset`; an error if the file is shorter.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()>;
    /// Replaces `buf`'s contents with the `len` bytes at `offset`; an error
    /// if the file is shorter (`buf`'s contents are then unspecified). It
    /// reuses `buf`'s allocation when that is large enough. Files that can
    /// read into uninitialised memory skip the zero-fill the default does
    /// (a 16 KiB block read of a point lookup spent about a tenth of its
    /// time filling zeros).
    fn read_into(&self, buf: &mut Vec<u8>, len: usize, offset: u64) -> Result<()> {
        buf.clear();
        buf.resize(len, 0);
        self.read_exact_at(buf, offset)
    }
    /// Reads `len` bytes from `offset` into a new buffer; an error if the
    /// file is shorter.
    fn read_vec_at(&self, len: usize, offset: u64) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.read_into(&mut buf, len, offset)?;
        Ok(buf)
    }
    /// The file size when it was opened.
    fn len(&self) -> u64;
    /// True for an empty file.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A held database lock; released on drop.
pub trait FileLock: Send + Sync {}

/// Every file operation the engine performs.
pub trait Vfs: Send + Sync + fmt::Debug {
    /// Creates a directory and its parents.
    fn create_dir_all(&self, path: &Path) -> Result<()>;
    /// Creates a new file for appending. Fails if anything exists at
    /// `path` (a file, a directory or a symbolic link, which is never
    /// followed): the engine names every file it writes afresh, so an
    /// existing one is not the engine's to overwrite.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Opens a file for positional reads.
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Opens a table file, which nothing writes again once it is opened,
    /// for positional reads. With `map`, a file system may serve the reads
    /// from a memory mapping of the file instead of a system call each
    /// (see `docs/design.md`, "Reads"); by default it opens the file as
    /// [`Vfs::open`] does.
    fn open_table(&self, path: &Path, map: bool) -> Result<Arc<dyn RandomAccessFile>> {
        let _ = map;
        self.open(path)
    }
    /// Renames atomically, replacing `to` if it exists.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> Result<()>;
    /// Names (not paths) of the entries in a directory.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    /// True if the path exists.
    fn exists(&self, path: &Path) -> bool;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Takes an exclusive lock on `path` (created if missing, never
    /// truncated, never through a symbolic link), failing with
    /// [`Error::Locked`] if it is held elsewhere.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;
    /// Size of a file in bytes.
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// True if `path` is a regular file (not a directory, not a symbolic
    /// link, which is not followed).
    fn is_regular_file(&self, path: &Path) -> bool;

    /// Reads a whole file.
    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        let f = self.open(path)?;
        let len = usize::try_from(f.len())
            .map_err(|_| Error::corruption(path, 0, "file too large to read into memory"))?;
        let mut buf = vec![0u8; len];
        f.read_exact_at(&mut buf, 0)?;
        Ok(buf)
    }
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct StdVfs;

fn io_err(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::io(format!("{what} {}", path.display()), e)
}

/// How many bytes a [`StdWritableFile`] gathers before handing them to the OS.
const WRITE_BUFFER_BYTES: usize = 64 * 1024;

struct StdWritableFile {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    len: u64,
    /// Bytes handed to the operating system.
    written: u64,
    /// The step the size grows by ahead of the writes (0: it does not),
    /// once the file has been synced (see `preallocate_in_steps`).
    prealloc_step: u64,
    /// Whether the file has been synced.
    synced: bool,
    /// The file's size as set ahead of the writes.
    allocated: u64,
}

impl StdWritableFile {
    /// Writes `data` at the end of what was written, first growing the
    /// file's size past it when preallocating.
    fn write_out(&mut self, data: &[u8]) -> Result<()> {
        let end = self.written + data.len() as u64;
        if self.synced && self.prealloc_step > 0 && end > self.allocated {
            let size = end.div_ceil(self.prealloc_step) * self.prealloc_step;
            // Extending the size allocates nothing (the file is sparse past
            // the data); the write position does not move.
            self.file
                .set_len(size)
                .map_err(|e| io_err("preallocate", &self.path, e))?;
            self.allocated = size;
        }
        self.file
            .write_all(data)
            .map_err(|e| io_err("write", &self.path, e))?;
        self.written = end;
        Ok(())
    }
}

impl Drop for StdWritableFile {
    fn drop(&mut self) {
        // Gives a closed file back the size of what was written. Best
        // effort: zeros past the data read as the end of a log anyway.
        if self.allocated > self.written {
            let _ = self.file.set_len(self.written);
        }
    }
}

impl WritableFile for StdWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.len += data.len() as u64;
        if self.buf.len() + data.len() > WRITE_BUFFER_BYTES {
            self.flush()?;
            if data.len() >= WRITE_BUFFER_BYTES {
                return self.write_out(data);
            }
        }
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(WRITE_BUFFER_BYTES);
        }
        self.buf.extend_from_slice(data);
        Ok(())
    }

    fn append_unbuffered(&mut self, data: &[u8]) -> Result<()> {
        self.flush()?;
        self.len += data.len() as u64;
        self.write_out(data)
    }

    fn flush(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            let buf = std::mem::take(&mut self.buf);
            let r = self.write_out(&buf);
            self.buf = buf;
            self.buf.clear();
            r?;
        }
        Ok(())
    }

    fn preallocate_in_steps(&mut self, step: u64) {
        self.prealloc_step = step;
    }

    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.synced = true;
        self.file
            .sync_data()
            .map_err(|e| io_err("fsync", &self.path, e))
    }

    fn len(&self) -> u64 {
        self.len
    }
}

/// `file`, open at `path`, read with `pread`.
fn positional(file: File, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
    let len = file.metadata().map_err(|e| io_err("stat", path, e))?.len();
    Ok(Arc::new(StdRandomAccessFile {
        file,
        len,
        path: path.to_path_buf(),
    }))
}

struct StdRandomAccessFile {
    file: File,
    len: u64,
    path: PathBuf,
}

impl RandomAccessFile for StdRandomAccessFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        use std::os::unix::fs::FileExt;
        self.file.read_exact_at(buf, offset).map_err(|e| {
            io_err(
                &format!("read {} bytes at {offset} from", buf.len()),
                &self.path,
                e,
            )
        })
    }

    fn read_into(&self, buf: &mut Vec<u8>, len: usize, offset: u64) -> Result<()> {
        use std::os::fd::AsRawFd;
        let what = || format!("read {len} bytes at {offset} from");
        buf.clear();
        buf.try_reserve(len).map_err(|_| {
            io_err(
                &what(),
                &self.path,
                io::Error::new(io::ErrorKind::OutOfMemory, "cannot allocate the buffer"),
            )
        })?;
        while buf.len() < len {
            let done = buf.len();
            let at = offset
                .checked_add(done as u64)
                .and_then(|at| libc::off_t::try_from(at).ok())
                .ok_or_else(|| {
                    io_err(
                        &what(),
                        &self.path,
                        io::Error::new(io::ErrorKind::InvalidInput, "offset out of range"),
                    )
                })?;
            // SAFETY: `pread` writes at most `len - done` bytes into the
            // vector's spare capacity (allocated above) through a raw
            // pointer, so no reference to uninitialised memory is made; the
            // length then grows by exactly the bytes the kernel wrote.
            let n = unsafe {
                libc::pread(
                    self.file.as_raw_fd(),
                    buf.as_mut_ptr().add(done).cast::<libc::c_void>(),
                    len - done,
                    at,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(io_err(&what(), &self.path, e));
            }
            if n == 0 {
                return Err(io_err(
                    &what(),
                    &self.path,
                    io::Error::new(io::ErrorKind::UnexpectedEof, "failed to fill whole buffer"),
                ));
            }
            // SAFETY: the kernel initialised bytes `done..done + n`, and
            // `n <= len - done` keeps the length within the capacity.
            unsafe { buf.set_len(done + n as usize) };
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }
}

struct StdFileLock {
    _file: File,
}

impl FileLock for StdFileLock {}

impl Vfs for StdVfs {
    fn create_dir_all(&self, path: &Path) -> Result<()> {
        fs::create_dir_all(path).map_err(|e| io_err("create directory", path, e))
    }

    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        use std::os::unix::fs::OpenOptionsExt;
        // `create_new` is O_CREAT|O_EXCL, which also refuses a symbolic link
        // (even a dangling one); O_NOFOLLOW says so twice.
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| io_err("create", path, e))?;
        Ok(Box::new(StdWritableFile {
            file,
            path: path.to_path_buf(),
            // Allocated at the first buffered append: a file written only
            // through `append_unbuffered` never holds one.
            buf: Vec::new(),
            len: 0,
            written: 0,
            prealloc_step: 0,
            synced: false,
            allocated: 0,
        }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(|e| io_err("open", path, e))?;
        positional(file, path)
    }

    fn open_table(&self, path: &Path, map: bool) -> Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(|e| io_err("open", path, e))?;
        // A file the process may not map (its budget of mappings is spent,
        // or the system refuses) is read with `pread`.
        if map && let Some(m) = crate::vfs_map::MappedFile::map(&file, path) {
            return Ok(Arc::new(m));
        }
        positional(file, path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).map_err(|e| io_err("rename", from, e))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| io_err("remove", path, e))
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| io_err("list", dir, e))? {
            let entry = entry.map_err(|e| io_err("list", dir, e))?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        names.sort();
        Ok(names)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let d = File::open(dir).map_err(|e| io_err("open directory", dir, e))?;
        d.sync_all().map_err(|e| io_err("fsync directory", dir, e))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        use std::os::unix::fs::OpenOptionsExt;
        // Never truncated and never through a link: the lock file must not
        // become a way to clobber or create another file.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| io_err("open lock file", path, e))?;
        let meta = file.metadata().map_err(|e| io_err("stat", path, e))?;
        if !meta.is_file() {
            return Err(Error::InvalidArgument(format!(
                "lock file {} is not a regular file",
                path.display()
            )));
        }
        match file.try_lock() {
            Ok(()) => Ok(Box::new(StdFileLock { _file: file })),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Locked {
                path: path.parent().unwrap_or(path).to_path_buf(),
            }),
            Err(std::fs::TryLockError::Error(e)) => Err(io_err("lock", path, e)),
        }
    }

    fn is_regular_file(&self, path: &Path) -> bool {
        fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(fs::metadata(path)
            .map_err(|e| io_err("stat", path, e))?
            .len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_on_same_file_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("LOCK");
        let held = StdVfs.lock(&p).expect("first lock");
        assert!(matches!(StdVfs.lock(&p), Err(Error::Locked { .. })));
        drop(held);
        StdVfs.lock(&p).expect("lock after release");
    }

    #[test]
    fn create_refuses_existing_files_and_links() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        StdVfs.create(&p).expect("create").sync().expect("sync");
        assert!(
            StdVfs.create(&p).is_err(),
            "an existing file is not replaced"
        );
        let target = dir.path().join("target");
        std::fs::write(&target, b"keep me").expect("write");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        assert!(StdVfs.create(&link).is_err(), "a link is not followed");
        assert!(
            StdVfs.lock(&link).is_err(),
            "the lock is not taken through a link"
        );
        assert_eq!(std::fs::read(&target).expect("read"), b"keep me");
    }

    #[test]
    fn written_bytes_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        let mut w = StdVfs.create(&p).expect("create");
        w.append(b"hello ").expect("append");
        w.append(&vec![7u8; WRITE_BUFFER_BYTES + 3])
            .expect("append big");
        w.sync().expect("sync");
        assert_eq!(w.len(), 6 + WRITE_BUFFER_BYTES as u64 + 3);
        let all = StdVfs.read_all(&p).expect("read");
        assert_eq!(&all[..6], b"hello ");
        assert_eq!(all.len() as u64, w.len());
        let f = StdVfs.open(&p).expect("open");
        let mut buf = [0u8; 4];
        assert!(f.read_exact_at(&mut buf, f.len() - 2).is_err());
    }

    #[test]
    fn unbuffered_appends_reach_the_file_at_once_and_in_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        let on_disk = || std::fs::metadata(&p).expect("stat").len();
        let mut w = StdVfs.create(&p).expect("create");
        w.append_unbuffered(b"head").expect("unbuffered");
        assert_eq!(on_disk(), 4);
        w.append(b", buffered").expect("append");
        assert_eq!(on_disk(), 4, "a buffered append waits for a flush");
        w.append_unbuffered(b", then at once").expect("unbuffered");
        assert_eq!((on_disk(), w.len()), (28, 28));
        assert_eq!(
            StdVfs.read_all(&p).expect("read"),
            b"head, buffered, then at once"
        );
    }

    #[test]
    fn reads_into_new_buffers_match_reads_into_given_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("f");
        let mut w = StdVfs.create(&p).expect("create");
        let bytes: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        w.append(&bytes).expect("append");
        w.sync().expect("sync");
        let f = StdVfs.open(&p).expect("open");
        for (len, at) in [(0, 0), (1, 0), (4096, 3), (16_389, 1000), (10, 19_990)] {
            let got = f.read_vec_at(len, at).expect("read");
            let mut want = vec![0u8; len];
            f.read_exact_at(&mut want, at).expect("read");
            assert_eq!(got, want, "{len} bytes at {at}");
            assert_eq!(&got[..], &bytes[at as usize..at as usize + len]);
        }
        let past = f.read_vec_at(4, f.len() - 2);
        assert!(
            matches!(&past, Err(e) if e.to_string().contains("read 4 bytes at")),
            "a read past the end is an error naming it: {past:?}"
        );
        assert!(f.read_vec_at(1, u64::MAX).is_err(), "an offset past off_t");
    }
}
