//! Spill files and the memory budget of a join (`docs/format/spill.md`).
//!
//! Sort runs and hash partitions that do not fit the budget go to files in
//! the database's `spill/` directory (a read-only database's joins use the
//! system's temporary directory):
//!
//! ```text
//!   header   magic "STRSPIL1" (8 bytes), database id (16 bytes)
//!   blocks   u32 LE length, u32 LE CRC-32C of the payload, payload:
//!              records, each  varint len, key, varint len, row
//! ```
//!
//! A file is removed when the join drops it, on success and on failure
//! alike; one left by a crash carries the database's id and is removed at
//! the next open. Reading checks every block's checksum, so a damaged
//! spill file fails the join with a corruption error instead of wrong rows.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::coding::{crc32c, decode_fixed32, get_length_prefixed, put_length_prefixed, varint_len};
use crate::db::DbCore;
use crate::error::{Error, Result};
use crate::recovery::DbId;
use crate::vfs::{RandomAccessFile, Vfs, WritableFile};

/// The spill directory's name inside the database directory.
pub(crate) const SPILL_DIR: &str = "spill";
const MAGIC: &[u8; 8] = b"STRSPIL1";
const HEADER_LEN: usize = 8 + crate::manifest::DB_ID_LEN;
/// The largest block a reader accepts (writers stay far below it).
const MAX_BLOCK: usize = 64 << 20;

/// A join's memory budget: the bytes its buffers hold, their peak, and the
/// limit they must stay under.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: usize,
    used: AtomicUsize,
    peak: AtomicUsize,
}

impl Budget {
    pub(crate) fn new(limit: usize) -> Budget {
        Budget {
            limit,
            used: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Charges `n` bytes if they fit under the limit; whether they did.
    pub(crate) fn try_charge(&self, n: usize) -> bool {
        let mut cur = self.used.load(Ordering::Relaxed);
        loop {
            let next = cur.saturating_add(n);
            if next > self.limit {
                return false;
            }
            match self
                .used
                .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    self.peak.fetch_max(next, Ordering::AcqRel);
                    return true;
                }
                Err(x) => cur = x,
            }
        }
    }

    /// Charges `n` bytes or fails the join with a clear error.
    pub(crate) fn charge(&self, n: usize, what: &str) -> Result<()> {
        if self.try_charge(n) {
            return Ok(());
        }
        Err(self.refusal(format!(
            "{what} ({n} bytes with {} in use); give the join more memory",
            self.used()
        )))
    }

    /// The error of a join this budget cannot hold: `what` says what did
    /// not fit and what to do.
    pub(crate) fn refusal(&self, what: String) -> Error {
        Error::MemoryBudget {
            limit: self.limit,
            what,
        }
    }

    pub(crate) fn release(&self, n: usize) {
        self.used.fetch_sub(n.min(self.used()), Ordering::AcqRel);
    }

    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    pub(crate) fn peak(&self) -> usize {
        self.peak.load(Ordering::Acquire)
    }
}

/// Where a join's spill files go, and what it wrote there.
pub(crate) struct SpillSpace {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    db_id: DbId,
    next: AtomicU64,
    pub(crate) budget: Arc<Budget>,
    written: AtomicU64,
}

/// Numbers spill files uniquely among concurrent joins of one process.
static SPILL_SEQ: AtomicU64 = AtomicU64::new(0);

impl SpillSpace {
    pub(crate) fn new(core: &DbCore, budget: Arc<Budget>) -> SpillSpace {
        // A database opened read-only is not written to (it may be on
        // read-only storage, and a writer opening it meanwhile sweeps the
        // spill directory): its joins spill to the system's temporary
        // directory instead, in a directory of their own process.
        let dir = if core.is_read_only() {
            std::env::temp_dir().join(format!("strata-spill-{}", std::process::id()))
        } else {
            core.path().join(SPILL_DIR)
        };
        SpillSpace {
            vfs: core.vfs(),
            dir,
            db_id: core.id(),
            next: AtomicU64::new(0),
            budget,
            written: AtomicU64::new(0),
        }
    }

    /// Bytes written to spill files so far.
    pub(crate) fn bytes_written(&self) -> u64 {
        self.written.load(Ordering::Acquire)
    }

    /// A new spill file whose writer buffers blocks of `block` bytes
    /// (charged to the budget until the file is finished).
    pub(crate) fn create(&self, block: usize) -> Result<SpillWriter<'_>> {
        self.budget.charge(block, "a spill file's write buffer")?;
        let guard = Charge {
            budget: &self.budget,
            bytes: block,
        };
        self.vfs.create_dir_all(&self.dir)?;
        let n = SPILL_SEQ.fetch_add(1, Ordering::AcqRel);
        let local = self.next.fetch_add(1, Ordering::AcqRel);
        let path = self
            .dir
            .join(format!("join-{}-{n}-{local}.spill", std::process::id()));
        let file = self.vfs.create(&path)?;
        let remove = RemoveOnDrop {
            vfs: Arc::clone(&self.vfs),
            path,
        };
        let mut w = SpillWriter {
            space: self,
            file,
            remove,
            buf: Vec::with_capacity(block),
            block,
            _charge: guard,
            extra: 0,
            records: 0,
        };
        // Written at once, so that a crash from here on leaves a file the
        // next open knows as this database's (`sweep`).
        let mut header = Vec::with_capacity(HEADER_LEN);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&self.db_id);
        w.file.append_unbuffered(&header)?;
        w.buf.resize(BLOCK_HEAD, 0);
        Ok(w)
    }
}

/// Bytes charged to a budget, released on drop.
struct Charge<'a> {
    budget: &'a Budget,
    bytes: usize,
}

impl Drop for Charge<'_> {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

/// Removes a spill file when dropped.
struct RemoveOnDrop {
    vfs: Arc<dyn Vfs>,
    path: PathBuf,
}

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        // Best effort: a file left behind is removed at the next open. An
        // empty path was handed on to the finished file.
        if !self.path.as_os_str().is_empty() {
            let _ = self.vfs.remove(&self.path);
        }
    }
}

/// A block's length and checksum, before its payload.
const BLOCK_HEAD: usize = 8;

/// Writes one spill file.
pub(crate) struct SpillWriter<'a> {
    space: &'a SpillSpace,
    file: Box<dyn WritableFile>,
    remove: RemoveOnDrop,
    /// The block being filled: room for its head, then its records. Its
    /// capacity is the `block` bytes charged to the budget, and the file
    /// is written without a buffer of its own
    /// ([`WritableFile::append_unbuffered`]), so the writer holds no more.
    buf: Vec<u8>,
    block: usize,
    _charge: Charge<'a>,
    /// Bytes charged beyond `block` while the buffer holds a record larger
    /// than a block (given back when that block is written).
    extra: usize,
    /// Records pushed.
    records: u64,
}

impl SpillWriter<'_> {
    /// Appends one record. A record that would take the block past its
    /// size starts the next block; one larger than a block is a block by
    /// itself (the buffer grows to hold it, and shrinks back after).
    pub(crate) fn push(&mut self, key: &[u8], row: &[u8]) -> Result<()> {
        let n = varint_len(key.len() as u64) + key.len() + varint_len(row.len() as u64) + row.len();
        if n > MAX_BLOCK {
            // The reader refuses a longer block as damage; refuse the
            // record here, by what it is.
            return Err(Error::InvalidArgument(format!(
                "a join tuple of {n} bytes is larger than a spill block may be ({MAX_BLOCK} bytes)"
            )));
        }
        if self.buf.len() > BLOCK_HEAD && self.buf.len() + n > self.block {
            self.write_block()?;
        }
        let need = self.buf.len() + n;
        if need > self.block + self.extra {
            let more = need - self.block - self.extra;
            self.space
                .budget
                .charge(more, "a join tuple larger than a spill block")?;
            self.extra += more;
            // Exactly what was charged, not the vector's doubling.
            self.buf.reserve_exact(need - self.buf.len());
        }
        put_length_prefixed(&mut self.buf, key);
        put_length_prefixed(&mut self.buf, row);
        self.records += 1;
        if self.buf.len() >= self.block {
            self.write_block()?;
        }
        Ok(())
    }

    fn write_block(&mut self) -> Result<()> {
        if self.buf.len() <= BLOCK_HEAD {
            return Ok(());
        }
        let payload = self.buf.len() - BLOCK_HEAD;
        let crc = crc32c(&self.buf[BLOCK_HEAD..]);
        self.buf[..4].copy_from_slice(&(payload as u32).to_le_bytes());
        self.buf[4..BLOCK_HEAD].copy_from_slice(&crc.to_le_bytes());
        self.file.append_unbuffered(&self.buf)?;
        self.space
            .written
            .fetch_add(self.buf.len() as u64, Ordering::AcqRel);
        if self.buf.capacity() > self.block {
            self.buf = Vec::with_capacity(self.block);
        }
        self.space.budget.release(self.extra);
        self.extra = 0;
        self.buf.clear();
        self.buf.resize(BLOCK_HEAD, 0);
        Ok(())
    }

    /// Writes the last block and closes the file for reading.
    pub(crate) fn finish(mut self) -> Result<SpillFile> {
        self.write_block()?;
        self.file.flush()?;
        let len = self.file.len();
        let path = self.remove.path.clone();
        let file = self.space.vfs.open(&path)?;
        Ok(SpillFile {
            file,
            len,
            records: self.records,
            budget: Arc::clone(&self.space.budget),
            _remove: RemoveOnDrop {
                vfs: Arc::clone(&self.space.vfs),
                path: std::mem::take(&mut self.remove.path),
            },
        })
    }
}

impl Drop for SpillWriter<'_> {
    fn drop(&mut self) {
        self.space.budget.release(self.extra);
    }
}

/// A finished spill file; removed when dropped.
pub(crate) struct SpillFile {
    file: Arc<dyn RandomAccessFile>,
    len: u64,
    /// Records written.
    records: u64,
    /// The budget its readers charge their block buffers to.
    budget: Arc<Budget>,
    _remove: RemoveOnDrop,
}

impl SpillFile {
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// How many records it holds.
    pub(crate) fn records(&self) -> u64 {
        self.records
    }

    /// Reads the file from its start. The reader charges its block buffer
    /// to the join's budget while it holds it, so reading a block the
    /// budget cannot hold fails the join with a clear error.
    pub(crate) fn reader(&self) -> SpillReader {
        SpillReader {
            file: Arc::clone(&self.file),
            path: self._remove.path.clone(),
            offset: HEADER_LEN as u64,
            len: self.len,
            block: Vec::new(),
            pos: 0,
            budget: Arc::clone(&self.budget),
            charged: 0,
        }
    }
}

/// Reads a spill file's records in order.
pub(crate) struct SpillReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    offset: u64,
    len: u64,
    block: Vec<u8>,
    pos: usize,
    budget: Arc<Budget>,
    /// The bytes of `block`'s buffer charged to `budget`.
    charged: usize,
}

impl Drop for SpillReader {
    fn drop(&mut self) {
        self.budget.release(self.charged);
    }
}

impl SpillReader {
    fn corrupt(&self, why: &str) -> Error {
        Error::corruption(&self.path, self.offset, format!("spill file: {why}"))
    }

    /// Makes the block buffer `n` bytes long, charging what it grows by
    /// and giving back what an oversized block took once blocks are small
    /// again (a record larger than a block is a block by itself).
    fn size_block(&mut self, n: usize) -> Result<()> {
        if n > self.charged {
            self.budget
                .charge(n - self.charged, "a spill file's read buffer")?;
            self.charged = n;
            self.block = Vec::with_capacity(n);
        } else if n < self.charged / 2 {
            self.block = Vec::with_capacity(n);
            self.budget.release(self.charged - n);
            self.charged = n;
        }
        self.block.resize(n, 0);
        Ok(())
    }

    /// The next record as (key, row), or `None` at the end.
    pub(crate) fn next_record(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        Ok(self.next_ref()?.map(|(k, r)| (k.to_vec(), r.to_vec())))
    }

    /// The next record, borrowed from the reader's block until the next
    /// call, or `None` at the end.
    pub(crate) fn next_ref(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        if self.pos >= self.block.len() {
            if self.offset >= self.len {
                return Ok(None);
            }
            let mut head = [0u8; 8];
            if self.offset + 8 > self.len {
                return Err(self.corrupt("truncated block header"));
            }
            self.file.read_exact_at(&mut head, self.offset)?;
            let n = decode_fixed32(&head[..4]).unwrap_or(0) as usize;
            let crc = decode_fixed32(&head[4..]).unwrap_or(0);
            if n == 0 || n > MAX_BLOCK || self.offset + 8 + n as u64 > self.len {
                return Err(self.corrupt("block length out of range"));
            }
            self.size_block(n)?;
            self.file.read_exact_at(&mut self.block, self.offset + 8)?;
            if crc32c(&self.block) != crc {
                return Err(self.corrupt("block checksum mismatch"));
            }
            self.offset += 8 + n as u64;
            self.pos = 0;
        }
        let mut rest = &self.block[self.pos..];
        let before = rest.len();
        let key = get_length_prefixed(&mut rest);
        let row = get_length_prefixed(&mut rest);
        match (key, row) {
            (Some(k), Some(r)) => {
                self.pos += before - rest.len();
                Ok(Some((k, r)))
            }
            _ => Err(self.corrupt("malformed record")),
        }
    }
}

/// Removes the spill files a crashed join of this database left in `dir`'s
/// spill directory: those whose header carries `db_id`, and those too short
/// to hold a header (a crash right after creating one; they hold nothing).
/// Others are left.
pub(crate) fn sweep(vfs: &dyn Vfs, db_dir: &Path, db_id: &DbId) -> Result<usize> {
    let dir = db_dir.join(SPILL_DIR);
    if !vfs.exists(&dir) {
        return Ok(0);
    }
    let mut removed = 0;
    for name in vfs.list(&dir)? {
        if !name.ends_with(".spill") {
            continue;
        }
        let path = dir.join(&name);
        let ours = vfs.open(&path).ok().is_some_and(|f| {
            let mut head = [0u8; HEADER_LEN];
            f.len() < HEADER_LEN as u64
                || (f.read_exact_at(&mut head, 0).is_ok()
                    && &head[..8] == MAGIC
                    && head[8..] == db_id[..])
        });
        if ours {
            vfs.remove(&path)?;
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn space(dir: &Path) -> SpillSpace {
        space_with(dir, 1 << 20)
    }

    /// A spill space in `dir` under a budget of `budget` bytes.
    pub(in crate::join) fn space_with(dir: &Path, budget: usize) -> SpillSpace {
        SpillSpace {
            vfs: Arc::new(crate::vfs::StdVfs),
            dir: dir.join(SPILL_DIR),
            db_id: [7; crate::manifest::DB_ID_LEN],
            next: AtomicU64::new(0),
            budget: Arc::new(Budget::new(budget)),
            written: AtomicU64::new(0),
        }
    }

    /// A reader's block buffer is charged while it is held, grows for an
    /// oversized block and gives the excess back after it (readers'
    /// buffers were not charged at all: a hash join's partition readers
    /// could pass a small budget).
    #[test]
    fn a_reader_charges_its_block_buffer_while_it_holds_it() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let space = space(tmp.path());
        let mut w = space.create(1024).expect("create");
        for i in 0..40u8 {
            let len = if i == 20 { 5000 } else { 40 };
            w.push(&[i], &vec![i; len]).expect("push");
        }
        let f = w.finish().expect("finish");
        assert_eq!(space.budget.used(), 0, "a finished writer holds nothing");
        let mut rd = f.reader();
        let mut most = 0;
        let mut after_big = None;
        while let Some((k, _)) = rd.next_record().expect("read") {
            let used = space.budget.used();
            assert!(used > 0 && used == rd.charged && rd.block.len() <= used);
            most = most.max(used);
            if k[0] == 25 {
                after_big = Some(used);
            }
        }
        assert!(most > 5000, "the oversized block was charged ({most})");
        assert!(
            after_big.expect("read on") < 1024,
            "its excess was given back"
        );
        drop(rd);
        assert_eq!(space.budget.used(), 0);
    }

    #[test]
    fn a_block_the_budget_cannot_hold_fails_the_read_clearly() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let space = space_with(tmp.path(), 4200);
        let mut w = space.create(1024).expect("create");
        w.push(b"k", &[1; 3000])
            .expect("an oversized record, charged");
        assert!(space.budget.peak() > 3000, "charged while it was buffered");
        let f = w.finish().expect("finish");
        assert_eq!(space.budget.used(), 0);
        let _others = [space.create(1024), space.create(1024)].map(|w| w.expect("writer"));
        let mut rd = f.reader();
        let err = rd
            .next_ref()
            .expect_err("3,000 bytes beside 2,048 in 4,200");
        assert!(
            matches!(&err, Error::MemoryBudget { what, .. } if what.contains("read buffer")),
            "{err}"
        );
        assert_eq!(space.budget.used(), 2048, "only the writers' blocks");
        // The writer's own charge for an oversized record fails as clearly.
        let mut w = space.create(1024).expect("a third writer fits");
        let err = w.push(b"k", &[1; 3000]).expect_err("no room");
        assert!(
            matches!(&err, Error::MemoryBudget { what, .. } if what.contains("larger than a spill block")),
            "{err}"
        );
    }

    /// The lengths of a finished file's blocks, from their heads.
    fn block_lengths(bytes: &[u8]) -> Vec<usize> {
        let mut at = HEADER_LEN;
        let mut out = Vec::new();
        while at < bytes.len() {
            let n = decode_fixed32(&bytes[at..at + 4]).expect("head") as usize;
            out.push(n);
            at += BLOCK_HEAD + n;
        }
        assert_eq!(at, bytes.len());
        out
    }

    #[test]
    fn blocks_keep_to_their_size_and_records_read_back() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let space = space(tmp.path());
        let block = 1024;
        let mut w = space.create(block).expect("create");
        let records: Vec<(Vec<u8>, Vec<u8>)> = (0..300u32)
            .map(|i| {
                // Mostly small, with a few larger than a block.
                let len = if i % 97 == 50 {
                    3000
                } else {
                    (i as usize * 37) % 200
                };
                (i.to_be_bytes().to_vec(), vec![i as u8; len])
            })
            .collect();
        for (k, r) in &records {
            w.push(k, r).expect("push");
            assert!(w.buf.capacity() <= block || w.buf.len() <= BLOCK_HEAD);
        }
        let f = w.finish().expect("finish");
        let bytes = std::fs::read(&f._remove.path).expect("read");
        for n in block_lengths(&bytes) {
            assert!(n + BLOCK_HEAD <= block || n > 3000, "a block of {n} bytes");
        }
        let mut rd = f.reader();
        for (k, r) in &records {
            assert_eq!(
                rd.next_record().expect("read"),
                Some((k.clone(), r.clone()))
            );
        }
        assert_eq!(rd.next_record().expect("end"), None);
    }

    /// The writer refuses a record its reader would refuse as damage, and
    /// takes the largest the reader reads (a tuple over 64 MiB failed the
    /// join as a corrupt spill file; found in review, 2026-12-01).
    #[test]
    fn a_record_past_the_block_limit_is_refused_when_written() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let space = space_with(tmp.path(), 3 * MAX_BLOCK);
        let head = varint_len(1) + 1 + varint_len(MAX_BLOCK as u64);
        let mut w = space.create(4096).expect("create");
        let row = vec![0u8; MAX_BLOCK - head + 1];
        let err = w.push(b"k", &row).expect_err("too large");
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        let row = vec![1u8; MAX_BLOCK - head];
        w.push(b"k", &row).expect("the largest record");
        let f = w.finish().expect("finish");
        let mut rd = f.reader();
        assert_eq!(rd.next_record().expect("read"), Some((b"k".to_vec(), row)));
        assert_eq!(rd.next_record().expect("end"), None);
    }

    #[test]
    fn a_writer_killed_before_its_first_block_leaves_a_file_open_sweeps() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let space = space(tmp.path());
        let mut w = space.create(4096).expect("create");
        w.push(b"k", b"row").expect("push");
        // The header is on disk before any block is: a crash here leaves
        // a file the next open knows as this database's.
        let path = w.remove.path.clone();
        assert_eq!(
            std::fs::metadata(&path).expect("stat").len(),
            HEADER_LEN as u64
        );
        std::mem::forget(w);
        assert!(path.exists());
        assert_eq!(
            sweep(&*space.vfs, tmp.path(), &space.db_id).expect("sweep"),
            1
        );
        assert!(!path.exists());
    }
}
