//! Versions: the immutable set of table files of one keyspace, level by
//! level. A new version is built for every flush and compaction and published
//! as an `Arc`; readers keep the version they started with, so files never
//! vanish under an iterator. A file no version references any more is
//! deleted when its last [`FileMeta`] handle drops.

use std::cmp::Ordering;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{SeqNo, compare_internal, user_key};
use crate::manifest::NewFile;
use crate::memtable::MemTable;
use crate::sst::{TableIter, TableReader};
use crate::vfs::Vfs;

/// A live table file.
pub struct FileMeta {
    pub number: u64,
    pub group: u32,
    pub size: u64,
    /// Smallest and largest internal keys.
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    pub smallest_seqno: SeqNo,
    pub largest_seqno: SeqNo,
    pub num_entries: u64,
    pub num_deletions: u64,
    pub table: Arc<TableReader>,
    pub path: PathBuf,
    pub(crate) being_compacted: AtomicBool,
    obsolete: AtomicBool,
    vfs: Arc<dyn Vfs>,
    /// The memtable this level-0 file was flushed from, kept to serve its
    /// reads (memtable retention); freed with the file or by the budget.
    retained: parking_lot::RwLock<Option<Arc<MemTable>>>,
}

impl FileMeta {
    /// Wraps an opened table.
    pub fn new(rec: &NewFile, table: Arc<TableReader>, path: PathBuf, vfs: Arc<dyn Vfs>) -> Self {
        FileMeta {
            number: rec.number,
            group: rec.group,
            size: rec.size,
            smallest: rec.smallest.clone(),
            largest: rec.largest.clone(),
            smallest_seqno: rec.smallest_seqno,
            largest_seqno: rec.largest_seqno,
            num_entries: rec.num_entries,
            num_deletions: rec.num_deletions,
            table,
            path,
            being_compacted: AtomicBool::new(false),
            obsolete: AtomicBool::new(false),
            vfs,
            retained: parking_lot::RwLock::new(None),
        }
    }

    /// The retained memtable serving this file's reads, if any.
    pub fn retained(&self) -> Option<Arc<MemTable>> {
        self.retained.read().clone()
    }

    /// Serves this file's reads from `mem` (which holds every entry the file
    /// holds, and possibly older versions no reader can see).
    pub(crate) fn retain(&self, mem: Arc<MemTable>) {
        *self.retained.write() = Some(mem);
    }

    /// Stops serving reads from the retained memtable; returns its bytes.
    pub(crate) fn release_retained(&self) -> usize {
        self.retained
            .write()
            .take()
            .map_or(0, |m| m.memory_usage().total())
    }

    /// Bytes of the retained memtable (0 if none).
    pub fn retained_bytes(&self) -> usize {
        self.retained
            .read()
            .as_ref()
            .map_or(0, |m| m.memory_usage().total())
    }

    /// The manifest record of this file at `level`.
    pub fn record(&self, keyspace: u32, level: usize) -> NewFile {
        NewFile {
            keyspace,
            level: level as u32,
            group: self.group,
            number: self.number,
            size: self.size,
            smallest: self.smallest.clone(),
            largest: self.largest.clone(),
            smallest_seqno: self.smallest_seqno,
            largest_seqno: self.largest_seqno,
            num_entries: self.num_entries,
            num_deletions: self.num_deletions,
        }
    }

    /// Smallest user key.
    pub fn smallest_user_key(&self) -> &[u8] {
        user_key(&self.smallest)
    }

    /// Largest user key.
    pub fn largest_user_key(&self) -> &[u8] {
        user_key(&self.largest)
    }

    /// True if the file's user-key range intersects `[lo, hi]` (either bound
    /// open when `None`).
    pub fn overlaps(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> bool {
        let below = hi.is_some_and(|hi| self.smallest_user_key() > hi);
        let above = lo.is_some_and(|lo| self.largest_user_key() < lo);
        !below && !above
    }

    /// Marks the file for deletion once the last handle drops. Called only
    /// after the manifest records its removal durably.
    pub(crate) fn mark_obsolete(&self) {
        self.obsolete.store(true, AtomicOrdering::Release);
    }

    pub(crate) fn is_being_compacted(&self) -> bool {
        self.being_compacted.load(AtomicOrdering::Acquire)
    }
}

impl Drop for FileMeta {
    fn drop(&mut self) {
        if self.obsolete.load(AtomicOrdering::Acquire) {
            // Best effort: a file left behind is removed at the next open,
            // which deletes every table no version references.
            let _ = self.vfs.remove(&self.path);
        }
    }
}

impl std::fmt::Debug for FileMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}({}B)", self.number, self.size)
    }
}

/// The files of one keyspace at one moment.
#[derive(Clone, Debug)]
pub struct Version {
    /// `levels[0]` newest first (overlapping ranges); deeper levels sorted
    /// by smallest key, ranges disjoint.
    pub levels: Vec<Vec<Arc<FileMeta>>>,
}

impl Version {
    /// A version with `num_levels` empty levels.
    pub fn empty(num_levels: usize) -> Self {
        Version {
            levels: vec![Vec::new(); num_levels],
        }
    }

    /// Number of levels.
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// Total bytes of a level.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.levels[level].iter().map(|f| f.size).sum()
    }

    /// Every file, level by level.
    pub fn all_files(&self) -> impl Iterator<Item = (usize, &Arc<FileMeta>)> {
        self.levels
            .iter()
            .enumerate()
            .flat_map(|(l, fs)| fs.iter().map(move |f| (l, f)))
    }

    /// Files of `level` whose user-key range intersects `[lo, hi]`.
    pub fn overlapping(
        &self,
        level: usize,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>> {
        self.levels[level]
            .iter()
            .filter(|f| f.overlaps(lo, hi))
            .cloned()
            .collect()
    }

    /// The file of a sorted level (>= 1) that may hold `user_key`.
    pub fn find_file(&self, level: usize, ukey: &[u8]) -> Option<&Arc<FileMeta>> {
        let files = &self.levels[level];
        let i = files.partition_point(|f| f.largest_user_key() < ukey);
        files.get(i).filter(|f| f.smallest_user_key() <= ukey)
    }

    /// Applies an edit's file changes for `keyspace`, returning the new
    /// version. `open` turns a new file record into a handle.
    pub fn apply(
        &self,
        keyspace: u32,
        deleted: &[(u32, u32, u64)],
        added: Vec<(usize, Arc<FileMeta>)>,
    ) -> Version {
        let mut levels = self.levels.clone();
        for (ks, level, number) in deleted {
            if *ks != keyspace {
                continue;
            }
            if let Some(files) = levels.get_mut(*level as usize) {
                files.retain(|f| f.number != *number);
            }
        }
        for (level, f) in added {
            if level < levels.len() {
                levels[level].push(f);
            }
        }
        sort_level0(&mut levels[0]);
        for files in levels.iter_mut().skip(1) {
            files.sort_by(|a, b| compare_internal(&a.smallest, &b.smallest));
        }
        Version { levels }
    }

    /// Checks that deeper levels hold disjoint, sorted ranges.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        for (l, files) in self.levels.iter().enumerate().skip(1) {
            for w in files.windows(2) {
                if compare_internal(&w[0].largest, &w[1].smallest) != Ordering::Less {
                    return Err(format!(
                        "level {l}: files {} and {} overlap",
                        w[0].number, w[1].number
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Orders level-0 files newest first.
pub fn sort_level0(files: &mut [Arc<FileMeta>]) {
    files.sort_by(|a, b| {
        b.largest_seqno
            .cmp(&a.largest_seqno)
            .then(b.number.cmp(&a.number))
    });
}

/// Iterates a sorted level (>= 1) as one run, opening each file's iterator
/// only when the scan reaches it.
pub struct LevelIter {
    files: Vec<Arc<FileMeta>>,
    index: usize,
    current: Option<TableIter>,
}

impl LevelIter {
    /// `files` sorted by smallest key, disjoint.
    pub fn new(files: Vec<Arc<FileMeta>>) -> Self {
        LevelIter {
            files,
            index: 0,
            current: None,
        }
    }

    fn open(&mut self, index: usize) {
        self.index = index;
        self.current = self.files.get(index).map(|f| f.table.iter());
    }

    fn skip_forward(&mut self) {
        while self
            .current
            .as_ref()
            .is_some_and(|c| !c.valid() && c.status().is_ok())
        {
            if self.index + 1 >= self.files.len() {
                self.current = None;
                return;
            }
            self.open(self.index + 1);
            if let Some(c) = self.current.as_mut() {
                c.seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        while self
            .current
            .as_ref()
            .is_some_and(|c| !c.valid() && c.status().is_ok())
        {
            if self.index == 0 {
                self.current = None;
                return;
            }
            self.open(self.index - 1);
            if let Some(c) = self.current.as_mut() {
                c.seek_to_last();
            }
        }
    }
}

impl InternalIterator for LevelIter {
    fn valid(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.valid())
    }
    fn seek_to_first(&mut self) {
        self.open(0);
        if let Some(c) = self.current.as_mut() {
            c.seek_to_first();
        }
        self.skip_forward();
    }
    fn seek_to_last(&mut self) {
        match self.files.len().checked_sub(1) {
            Some(last) => {
                self.open(last);
                if let Some(c) = self.current.as_mut() {
                    c.seek_to_last();
                }
                self.skip_backward();
            }
            None => self.current = None,
        }
    }
    fn seek(&mut self, target: &[u8]) {
        let i = self
            .files
            .partition_point(|f| compare_internal(&f.largest, target) == Ordering::Less);
        if i >= self.files.len() {
            self.current = None;
            return;
        }
        self.open(i);
        if let Some(c) = self.current.as_mut() {
            c.seek(target);
        }
        self.skip_forward();
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let i = self
            .files
            .partition_point(|f| compare_internal(&f.smallest, target) != Ordering::Greater);
        let Some(i) = i.checked_sub(1) else {
            self.current = None;
            return;
        };
        self.open(i);
        if let Some(c) = self.current.as_mut() {
            c.seek_for_prev(target);
        }
        self.skip_backward();
    }
    fn next(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.next();
        }
        self.skip_forward();
    }
    fn prev(&mut self) {
        if let Some(c) = self.current.as_mut() {
            c.prev();
        }
        self.skip_backward();
    }
    fn key(&self) -> &[u8] {
        self.current.as_ref().map_or(&[][..], |c| c.key())
    }
    fn value(&self) -> &[u8] {
        self.current.as_ref().map_or(&[][..], |c| c.value())
    }
    fn may_contain_user_key(&self, user_key: &[u8]) -> bool {
        // The only file whose range can hold the key: the first one ending
        // at or after it.
        let i = self
            .files
            .partition_point(|f| f.largest_user_key() < user_key);
        self.files
            .get(i)
            .is_some_and(|f| f.smallest_user_key() <= user_key && f.table.may_contain(user_key))
    }
    fn status(&self) -> Result<()> {
        self.current.as_ref().map_or(Ok(()), |c| c.status())
    }
}
