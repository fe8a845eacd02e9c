//! Table files read through a memory mapping.
//!
//! A point read of a block larger than the cache is one `pread` of a few
//! KiB from the page cache, and on a host that guards every system call
//! against speculative execution the call costs more than copying the
//! bytes: serving the read from a mapping of the file made `readrandom`
//! with 1 % of the data cached 1.28-1.38× faster with LZ4 and 1.08-1.16×
//! with Zstd here (`docs/BENCHMARKS.md`, "Reads from mapped table files").
//! LevelDB maps its table files by default for the same reason. These
//! figures are of files in the page cache; for files that are not, see
//! `docs/design.md`, "Known gaps".
//!
//! Every read still copies the block out of the mapping, into a buffer of
//! its own, before the block's checksum is verified: no reference into the
//! mapping outlives a read, and what is verified is what is decoded.
//!
//! A mapping is advised `MADV_RANDOM`, as RocksDB advises the files it
//! maps: otherwise a page fault on a file not in the page cache reads far
//! around the faulting page (the kernel's read-around window), and 2,000
//! point reads of a cold 115 MiB database read the whole of it, about
//! 100 MiB more from the disk than `pread` did (`docs/BENCHMARKS.md`,
//! "Reads from mapped table files"). Sequential reads (compaction, scans)
//! then get their read-ahead from [`Sequential`]: a thread whose read of a
//! file starts where its previous read of that file ended asks the kernel
//! for the next [`READ_AHEAD`] bytes (`MADV_WILLNEED`) before it needs
//! them, as the kernel's own read-ahead does for `pread`. Once a file's
//! reads are seen waiting for the disk, its point reads ask for a block
//! that spans pages before they copy it ([`ColdReads`]), so that it comes
//! in one disk read, not a fault per page.
//!
//! The price is how a device error shows itself. `pread` of a bad sector
//! returns `EIO`, which becomes an error naming the file; a read of the
//! same page through a mapping raises `SIGBUS` and ends the process (the
//! read changes nothing on disk; the process's end loses what any crash
//! does, which is nothing acknowledged for keyspaces that keep their
//! write-ahead log). A deployment that
//! must survive failing media as errors turns mapping off
//! (`Options::mmap_reads`); salvage opens never map.

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use memmap2::{Advice, Mmap};

use crate::error::{Error, Result};
use crate::vfs::RandomAccessFile;

/// Files the process keeps mapped at once; the files opened past it are
/// read with `pread`. Linux allows 65,530 mappings per process by default
/// (`vm.max_map_count`), shared with the allocator and everything else the
/// process maps, so the tables take a small part of it (LevelDB keeps to
/// 1,000 per `Env`, which is process-wide for its default one).
pub(crate) const MAX_MAPPED_FILES: usize = 4096;

/// A budget of mappings: at most `max` taken at once.
pub(crate) struct Budget {
    used: AtomicUsize,
    max: usize,
}

impl Budget {
    pub(crate) const fn new(max: usize) -> Budget {
        Budget {
            used: AtomicUsize::new(0),
            max,
        }
    }

    fn take(&'static self) -> Option<Slot> {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(self))
    }
}

/// The process's budget: every database's table files together.
static PROCESS: Budget = Budget::new(MAX_MAPPED_FILES);

/// A place in a budget of mappings, given back on drop.
struct Slot(&'static Budget);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.used.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The most bytes asked for ahead of a sequential reader of a mapped file
/// (RocksDB reads ahead 2 MiB for compaction and up to 256 KiB for
/// iterators). The window starts at [`FIRST_WINDOW`] and doubles.
pub(crate) const READ_AHEAD: usize = 1 << 20;

/// The first window asked for ahead.
const FIRST_WINDOW: usize = 64 << 10;

/// Reads in a row, each starting where the last ended, before any is asked
/// for ahead: a seek that reads a block or two must not pay for a
/// `madvise` (asking for pages already cached still walks them: with one
/// from the second block on, `seekrandom` ran at 0.4× its speed).
const RUN_BEFORE_AHEAD: u32 = 4;

/// Mapped files a thread follows at once for sequential reads: a
/// compaction or a scan reads several files in turn, block by block.
const FOLLOWED: usize = 16;

/// Per thread, the mapped files it read last: where its last read of each
/// ended and how far ahead pages were asked for. A read that starts where
/// the last one ended is sequential. (A fixed table searched linearly and
/// replaced in turn: every read, point reads too, passes through it.)
#[derive(Default)]
struct Sequential {
    /// Per followed file; address 0 is a free slot.
    files: [Followed; FOLLOWED],
    /// The slot a file not in the table takes next.
    next: usize,
}

/// A file a thread follows.
#[derive(Clone, Copy, Default)]
struct Followed {
    /// The mapping's address.
    addr: usize,
    /// Where the thread's last read of it ended.
    end: usize,
    /// The end of what was asked for ahead.
    ahead: usize,
    /// Reads in a row that started where the last one ended.
    run: u32,
    /// The next window to ask for.
    window: usize,
}

impl Sequential {
    /// Records a read of `[offset, end)` of the mapping at `addr`, which
    /// is `len` bytes long; returns the range to ask for ahead, if the read
    /// continues the previous one and the pages asked for run out within
    /// half a window, and whether the file is being read ahead (its pages
    /// were asked for already: a read of it need not ask for its own).
    fn read(
        &mut self,
        addr: usize,
        offset: usize,
        end: usize,
        len: usize,
    ) -> (Option<(usize, usize)>, bool) {
        let slot = match self.files.iter().position(|f| f.addr == addr) {
            Some(i) => i,
            None => {
                let i = self.next;
                self.next = (i + 1) % FOLLOWED;
                self.files[i] = Followed {
                    addr,
                    end: usize::MAX,
                    ..Followed::default()
                };
                i
            }
        };
        let f = &mut self.files[slot];
        if f.end == offset {
            f.run = f.run.saturating_add(1);
            f.ahead = f.ahead.max(end);
        } else {
            // A read elsewhere starts over: what was asked for ahead of
            // the last one is not ahead of this one.
            *f = Followed {
                addr,
                end,
                ahead: end,
                run: 0,
                window: FIRST_WINDOW,
            };
            return (None, false);
        }
        f.end = end;
        let mut want = None;
        if f.run >= RUN_BEFORE_AHEAD && f.ahead < end.saturating_add(f.window / 2) && f.ahead < len
        {
            let to = f.ahead.saturating_add(f.window).min(len);
            want = Some((f.ahead, to));
            f.ahead = to;
            f.window = (f.window * 2).min(READ_AHEAD);
        }
        (want, f.run > RUN_BEFORE_AHEAD)
    }
}

thread_local! {
    static SEQUENTIAL: RefCell<Sequential> = RefCell::new(Sequential::default());
}

/// A copy out of the mapping slower than this waited for the disk: a
/// copy of pages in the page cache, faults and all, takes microseconds.
const COLD_COPY: Duration = Duration::from_micros(20);

/// Reads after a cold one that ask for their pages first.
const COLD_READS: u32 = 256;

/// One in this many of a thread's reads that span pages is timed.
const TIMED_EVERY: u32 = 8;

thread_local! {
    /// The thread's reads that spanned pages, for [`TIMED_EVERY`].
    static SPANNING_READS: Cell<u32> = const { Cell::new(0) };
}

/// The system's page size: a read within one page gains nothing from
/// asking for it (4,096 if the system will not say).
fn page_size() -> usize {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: `sysconf` only reads a configuration value.
        let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
    })
}

/// Whether `[offset, offset + len)` lies on more than one page.
#[inline]
fn spans_pages(offset: usize, len: usize) -> bool {
    let page = page_size();
    len > 1 && offset / page != (offset + len - 1) / page
}

/// Whether a mapped file's pages are likely on disk, judged by how long
/// its reads take. With `MADV_RANDOM` a fault reads just its own page, so
/// a cold block that spans two pages costs two disk reads in turn where
/// `pread` issues one (20,000 cold point reads ran at 0.66× `pread`'s
/// speed). After a read that waited for the disk, the next
/// [`COLD_READS`] reads of the file that span pages ask the kernel for
/// their pages first (`MADV_WILLNEED`: one read for the whole block),
/// unless the file is being read ahead already ([`Sequential`]). Reads of
/// a file in the page cache rarely take that long (a thread descheduled
/// mid-copy can), so they make no system call but for such a stretch.
#[derive(Default)]
struct ColdReads {
    /// Reads left that ask first.
    credit: AtomicU32,
}

impl ColdReads {
    /// Whether a read of `[offset, offset + len)` asks for its pages
    /// first (and uses up one of the credit).
    fn ask_first(&self, offset: usize, len: usize) -> bool {
        if !spans_pages(offset, len) {
            return false;
        }
        self.credit
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| c.checked_sub(1))
            .is_ok()
    }

    /// Runs `copy`, the copy of `[offset, offset + len)` out of the
    /// mapping, timing one in [`TIMED_EVERY`] of a thread's reads that
    /// span pages (the reads that can gain): reading the clock costs about
    /// 45 ns here, and the reads of cached files should not pay it each
    /// time. A cold file is still found within a few reads.
    #[inline]
    fn timed(&self, offset: u64, len: usize, copy: impl FnOnce()) {
        if !spans_pages(offset as usize, len)
            || SPANNING_READS.with(|n| {
                let v = n.get().wrapping_add(1);
                n.set(v);
                v % TIMED_EVERY != 0
            })
        {
            return copy();
        }
        let started = Instant::now();
        copy();
        self.copied(started.elapsed());
    }

    /// Notes that a read's copy took `took`.
    fn copied(&self, took: Duration) {
        if took >= COLD_COPY {
            self.credit.store(COLD_READS, Ordering::Relaxed);
        }
    }
}

/// A table file read through a read-only mapping of the whole file.
pub(crate) struct MappedFile {
    map: Mmap,
    path: PathBuf,
    cold: ColdReads,
    _slot: Slot,
}

impl MappedFile {
    /// Maps `file`, or `None` when the process's budget of mappings is
    /// spent, the file is empty, or the system refuses the mapping (the
    /// caller then reads it with `pread`).
    pub(crate) fn map(file: &File, path: &Path) -> Option<MappedFile> {
        MappedFile::map_within(&PROCESS, file, path)
    }

    /// [`MappedFile::map`] within `budget`.
    fn map_within(budget: &'static Budget, file: &File, path: &Path) -> Option<MappedFile> {
        if cfg!(not(all(unix, target_pointer_width = "64"))) {
            return None;
        }
        let slot = budget.take()?;
        // SAFETY: a mapping is sound only while no one changes the file
        // under it. The engine opens a table file this way only once its
        // writer has finished and synced it and been dropped (flush,
        // compaction and recovery open their outputs before the manifest
        // names them, but after that); files are created with `O_EXCL`, so
        // a number is never written over, and a removal (an unlink or a
        // rename) leaves the mapped pages in place until the mapping goes.
        // A process outside the engine that rewrote or truncated a live
        // table file would break the database whatever the read method.
        let map = unsafe { Mmap::map(file) }.ok()?;
        if map.is_empty() {
            return None;
        }
        // Point reads should fault in the pages they touch and no more;
        // sequential readers ask for theirs ahead (`Sequential`). Advice
        // is a hint: a refusal leaves the kernel's default.
        let _ = map.advise(Advice::Random);
        Some(MappedFile {
            map,
            path: path.to_path_buf(),
            cold: ColdReads::default(),
            _slot: slot,
        })
    }

    /// The `len` bytes at `offset`, or the error a short `pread` gives.
    /// Asks for pages ahead when the read continues this thread's last
    /// read of the file.
    fn range(&self, len: usize, offset: u64) -> Result<&[u8]> {
        let bytes = usize::try_from(offset)
            .ok()
            .and_then(|o| Some((o, self.map.get(o..o.checked_add(len)?)?)));
        if let Some((o, b)) = bytes {
            let addr = self.map.as_ptr() as usize;
            let (ahead, streaming) = SEQUENTIAL.with(|s| {
                s.try_borrow_mut().map_or((None, false), |mut s| {
                    s.read(addr, o, o + b.len(), self.map.len())
                })
            });
            if let Some((from, to)) = ahead {
                // A hint: a refusal only loses the read-ahead.
                let _ = self.map.advise_range(Advice::WillNeed, from, to - from);
            } else if !streaming && self.cold.ask_first(o, b.len()) {
                let _ = self.map.advise_range(Advice::WillNeed, o, b.len());
            }
        }
        bytes.map(|(_, b)| b).ok_or_else(|| {
            Error::io(
                format!("read {len} bytes at {offset} from {}", self.path.display()),
                io::Error::new(io::ErrorKind::UnexpectedEof, "failed to fill whole buffer"),
            )
        })
    }
}

impl RandomAccessFile for MappedFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let bytes = self.range(buf.len(), offset)?;
        self.cold
            .timed(offset, bytes.len(), || buf.copy_from_slice(bytes));
        Ok(())
    }

    fn read_into(&self, buf: &mut Vec<u8>, len: usize, offset: u64) -> Result<()> {
        let bytes = self.range(len, offset)?;
        buf.clear();
        self.cold
            .timed(offset, len, || buf.extend_from_slice(bytes));
        Ok(())
    }

    fn len(&self) -> u64 {
        self.map.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::vfs::{StdVfs, Vfs};

    fn file_with(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("000001.sst");
        let mut f = File::create(&path).expect("create");
        f.write_all(bytes).expect("write");
        (dir, path)
    }

    /// A mapping within a budget of the test's own, so that the tests
    /// running beside it in the process cannot spend it.
    fn mapped(path: &Path) -> MappedFile {
        static OWN: Budget = Budget::new(64);
        MappedFile::map_within(&OWN, &File::open(path).expect("open"), path).expect("map")
    }

    /// Reads of 4 KiB from `from`, `n` of them in a row; the ranges asked
    /// for ahead.
    fn read_run(
        s: &mut Sequential,
        addr: usize,
        from: usize,
        n: usize,
        len: usize,
    ) -> Vec<(usize, usize)> {
        (0..n)
            .filter_map(|i| s.read(addr, from + i * 4096, from + (i + 1) * 4096, len).0)
            .collect()
    }

    #[test]
    fn sequential_reads_ask_for_pages_ahead_and_point_reads_do_not() {
        let mut s = Sequential::default();
        let len = 64 * READ_AHEAD;
        // Scattered reads, and short runs (a seek reading a block or two),
        // ask for nothing.
        for at in [0, 50_000, 8_192, 900_000, 12_288] {
            assert_eq!(s.read(1, at, at + 4096, len), (None, false));
        }
        assert!(read_run(&mut s, 1, 2_000_000, 1 + RUN_BEFORE_AHEAD as usize - 1, len).is_empty());
        // A long run asks from its fifth read on, windows that follow each
        // other, grow from 64 KiB to 1 MiB and stay ahead of the reads.
        let asked = read_run(&mut s, 1, 4_000_000, 2_000, len);
        assert_eq!(asked[0].0, 4_000_000 + 5 * 4096);
        assert_eq!(asked[0].1 - asked[0].0, FIRST_WINDOW);
        for w in asked.windows(2) {
            assert_eq!(w[0].1, w[1].0, "{asked:?}");
        }
        let sizes: Vec<usize> = asked.iter().map(|r| r.1 - r.0).collect();
        assert!(sizes.windows(2).all(|w| w[1] >= w[0]), "{sizes:?}");
        assert_eq!(sizes.last(), Some(&READ_AHEAD));
        assert!(asked.last().expect("asked").1 >= 4_000_000 + 2_000 * 4096);
        // 8 MB read, about 8 MB asked for: not once per read.
        assert!(asked.len() < 20, "{} hints", asked.len());
        // Never past the end of the file.
        let mut t = Sequential::default();
        let asked = read_run(&mut t, 2, 0, 20, 30_000);
        assert!(asked.iter().all(|r| r.1 <= 30_000), "{asked:?}");
    }

    #[test]
    fn interleaved_files_are_followed_each_on_its_own() {
        let mut s = Sequential::default();
        let len = 1 << 30;
        // A merge of three files reads a block of each in turn.
        let mut hinted = [0usize; 3];
        for step in 0..20 {
            for (f, h) in hinted.iter_mut().enumerate() {
                let off = step * 4096;
                if s.read(100 + f, off, off + 4096, len).0.is_some() {
                    *h += 1;
                }
            }
        }
        assert!(hinted.iter().all(|&h| h >= 1), "{hinted:?}");
        // More files than the table follows: the oldest is forgotten, and
        // its run starts over.
        for f in 0..FOLLOWED {
            s.read(1000 + f, 0, 10, len);
        }
        assert_eq!(s.read(100, 20 * 4096, 21 * 4096, len).0, None, "forgotten");
    }

    #[test]
    fn a_slow_read_makes_the_next_reads_that_span_pages_ask_first() {
        let c = ColdReads::default();
        // Fast reads ask nothing and change nothing.
        c.copied(COLD_COPY / 4);
        assert!(!c.ask_first(100, 8000));
        c.copied(COLD_COPY);
        // Reads within one page never ask; they leave the credit alone.
        let page = page_size();
        assert!(!c.ask_first(0, page));
        assert!(!c.ask_first(page + 10, 100));
        assert!(!c.ask_first(5, 0));
        let asked = (0..COLD_READS as usize + 10)
            .filter(|&i| c.ask_first(i * page + page - 100, 200))
            .count();
        assert_eq!(asked as u32, COLD_READS);
        // Another slow read renews the credit.
        c.copied(COLD_COPY * 100);
        assert!(c.ask_first(page - 1, 2));
    }

    #[test]
    fn one_in_so_many_copies_that_span_pages_is_timed() {
        let page = page_size() as u64;
        let slow = || std::thread::sleep(COLD_COPY * 2);
        let c = ColdReads::default();
        // Slow copies within a page are never timed.
        for _ in 0..TIMED_EVERY * 2 {
            c.timed(page + 8, 100, slow);
        }
        assert_eq!(c.credit.load(Ordering::Relaxed), 0);
        // Bring this thread's count of spanning copies to a multiple of
        // `TIMED_EVERY`, whatever it was.
        let c = ColdReads::default();
        while c.credit.load(Ordering::Relaxed) == 0 {
            c.timed(page - 8, 100, slow);
        }
        // The next `TIMED_EVERY - 1` slow spanning copies go untimed; the
        // one after them is timed.
        let c = ColdReads::default();
        for _ in 0..TIMED_EVERY - 1 {
            c.timed(page - 8, 100, slow);
        }
        assert_eq!(c.credit.load(Ordering::Relaxed), 0);
        c.timed(page - 8, 100, slow);
        assert_eq!(c.credit.load(Ordering::Relaxed), COLD_READS);
    }

    #[test]
    fn mapped_reads_return_the_bytes_pread_returns() {
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let (_dir, path) = file_with(&bytes);
        let m = mapped(&path);
        let plain = StdVfs.open(&path).expect("open");
        assert_eq!(m.len(), plain.len());
        for (offset, len) in [(0u64, 1usize), (17, 4096), (9_000, 1_000), (0, 10_000)] {
            let a = m.read_vec_at(len, offset).expect("mapped read");
            let b = plain.read_vec_at(len, offset).expect("pread");
            assert_eq!(a, b, "{len} bytes at {offset}");
            let mut exact = vec![0u8; len];
            m.read_exact_at(&mut exact, offset).expect("exact");
            assert_eq!(exact, b);
        }
    }

    #[test]
    fn reads_past_the_end_fail_as_pread_does() {
        let (_dir, path) = file_with(&[7u8; 100]);
        let m = mapped(&path);
        let plain = StdVfs.open(&path).expect("open");
        for (len, offset) in [(1usize, 100u64), (50, 60), (1, 1 << 40)] {
            let mine = m.read_vec_at(len, offset).expect_err("past the end");
            let theirs = plain.read_vec_at(len, offset).expect_err("past the end");
            assert_eq!(mine.to_string(), theirs.to_string());
            assert!(mine.to_string().contains("000001.sst"), "{mine}");
            assert!(
                matches!(&mine, Error::Io { source, .. } if source.kind() == io::ErrorKind::UnexpectedEof),
                "{mine:?}"
            );
            let mut buf = vec![0u8; len];
            assert!(m.read_exact_at(&mut buf, offset).is_err());
        }
        // Lengths and offsets whose sum overflows are errors, not panics.
        assert!(m.read_vec_at(usize::MAX, 1).is_err());
        assert!(m.read_vec_at(1, u64::MAX).is_err());
    }

    #[test]
    fn an_empty_file_is_not_mapped_and_reads_as_empty() {
        static OWN: Budget = Budget::new(1);
        let (_dir, path) = file_with(&[]);
        let file = File::open(&path).expect("open");
        assert!(MappedFile::map_within(&OWN, &file, &path).is_none());
        // The refused mapping gave its place back.
        let (_d2, other) = file_with(&[1]);
        assert!(MappedFile::map_within(&OWN, &File::open(&other).expect("open"), &other).is_some());
        let f = StdVfs.open_table(&path, true).expect("falls back");
        assert_eq!(f.len(), 0);
    }

    /// Whether this process maps `path` now (Linux lists mappings in
    /// `/proc/self/maps`).
    #[cfg(target_os = "linux")]
    fn process_maps(path: &Path) -> bool {
        let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
        let name = path.to_str().expect("utf-8 path");
        maps.lines().any(|l| l.ends_with(name))
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_real_file_system_maps_table_files_only_when_asked() {
        let (_dir, path) = file_with(&[5u8; 4096]);
        let (_dir2, other) = file_with(&[6u8; 4096]);
        let yes = StdVfs.open_table(&path, true).expect("open mapped");
        let no = StdVfs.open_table(&other, false).expect("open");
        assert!(process_maps(&path), "asked for a mapping and got none");
        assert!(!process_maps(&other), "mapped a file opened without one");
        assert_eq!(yes.read_vec_at(10, 100).expect("read"), vec![5u8; 10]);
        assert_eq!(no.read_vec_at(10, 100).expect("read"), vec![6u8; 10]);
        drop(yes);
        assert!(!process_maps(&path), "the mapping outlived its file");
    }

    #[test]
    fn a_budget_maps_at_most_its_files_and_takes_back_dropped_ones() {
        static THREE: Budget = Budget::new(3);
        let (_dir, path) = file_with(&[3u8; 64]);
        let file = File::open(&path).expect("open");
        let mut held: Vec<MappedFile> = (0..3)
            .map(|_| MappedFile::map_within(&THREE, &file, &path).expect("within the budget"))
            .collect();
        assert!(MappedFile::map_within(&THREE, &file, &path).is_none());
        held.pop();
        let again = MappedFile::map_within(&THREE, &file, &path).expect("a place came back");
        assert_eq!(again.read_vec_at(64, 0).expect("read"), vec![3u8; 64]);
        assert!(MappedFile::map_within(&THREE, &file, &path).is_none());
    }
}
