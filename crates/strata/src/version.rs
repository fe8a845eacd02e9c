//! Versions: the immutable set of table files of one keyspace, level by
//! level. A new version is built for every flush and compaction and published
//! as an `Arc`; readers keep the version they started with, so files never
//! vanish under an iterator. A file no version references any more is
//! deleted when its last [`FileMeta`] handle drops.

use std::cmp::Ordering;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use crate::error::{Error, Result};
use crate::ids::{FileNumber, KeyspaceId, Level};
use crate::iter::InternalIterator;
use crate::key::{compare_internal, user_key};
use crate::manifest::{NewFile, TableFile};
use crate::retained::RetainedTable;
use crate::table_format::{GroupId, TableHandle, TableHandleIter};
use crate::vfs::Vfs;

/// A live table file: its manifest record (reached through `Deref`), its
/// open handle and, for level-0 files, the memtable retained to serve it.
pub struct FileMeta {
    pub file: TableFile,
    pub(crate) table: TableHandle,
    pub path: PathBuf,
    pub(crate) being_compacted: AtomicBool,
    obsolete: AtomicBool,
    vfs: Arc<dyn Vfs>,
    /// The entries of the memtable this level-0 file was flushed from, kept
    /// to serve its reads (memtable retention); freed with the file or by
    /// the budget.
    retained: parking_lot::RwLock<Option<Arc<RetainedTable>>>,
}

impl std::ops::Deref for FileMeta {
    type Target = TableFile;
    fn deref(&self) -> &TableFile {
        &self.file
    }
}

impl FileMeta {
    /// Wraps an opened table.
    pub(crate) fn new(
        file: TableFile,
        table: TableHandle,
        path: PathBuf,
        vfs: Arc<dyn Vfs>,
    ) -> Self {
        FileMeta {
            file,
            table,
            path,
            being_compacted: AtomicBool::new(false),
            obsolete: AtomicBool::new(false),
            vfs,
            retained: parking_lot::RwLock::new(None),
        }
    }

    /// The retained memtable serving this file's reads, if any.
    pub fn retained(&self) -> Option<Arc<RetainedTable>> {
        self.retained.read().clone()
    }

    /// Serves this file's reads from `table`, a copy of exactly the
    /// entries the file holds.
    pub(crate) fn retain(&self, table: Arc<RetainedTable>) {
        *self.retained.write() = Some(table);
    }

    /// Stops serving reads from the retained memtable; returns its bytes.
    pub(crate) fn release_retained(&self) -> usize {
        self.retained.write().take().map_or(0, |t| t.memory_bytes())
    }

    /// Bytes of the retained memtable (0 if none).
    pub fn retained_bytes(&self) -> usize {
        self.retained
            .read()
            .as_ref()
            .map_or(0, |t| t.memory_bytes())
    }

    /// The manifest record of this file at `level`.
    pub fn record(&self, keyspace: KeyspaceId, level: Level) -> NewFile {
        NewFile {
            keyspace,
            level,
            file: self.file.clone(),
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
        write!(f, "#{}({}B, {})", self.number, self.size, self.group)
    }
}

/// The files of one keyspace at one moment.
#[derive(Clone, Debug)]
pub struct Version {
    /// `levels[0]` newest first (overlapping ranges, all of the whole-value
    /// group); deeper levels sorted by column group and then by smallest
    /// key: each group's files form one sorted run of disjoint ranges.
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
    pub fn level_bytes(&self, level: Level) -> u64 {
        self.levels[level.index()].iter().map(|f| f.size).sum()
    }

    /// Every file, level by level.
    pub fn all_files(&self) -> impl Iterator<Item = (Level, &Arc<FileMeta>)> {
        self.levels
            .iter()
            .enumerate()
            .flat_map(|(l, fs)| fs.iter().map(move |f| (Level::from_index(l), f)))
    }

    /// The sorted run of column group `group` on `level` (>= 1).
    pub fn run(&self, level: Level, group: GroupId) -> &[Arc<FileMeta>] {
        let files = &self.levels[level.index()];
        // The common case, one group per level, costs two comparisons.
        match (files.first(), files.last()) {
            (Some(a), Some(b)) if a.group == group && b.group == group => files,
            (None, _) | (_, None) => &[],
            _ => {
                let lo = files.partition_point(|f| f.group < group);
                let hi = lo + files[lo..].partition_point(|f| f.group == group);
                &files[lo..hi]
            }
        }
    }

    /// The sorted runs of `level` (>= 1), one per column group present.
    pub fn runs(&self, level: Level) -> impl Iterator<Item = (GroupId, &[Arc<FileMeta>])> {
        self.levels[level.index()]
            .chunk_by(|a, b| a.group == b.group)
            .map(|run| (run[0].group, run))
    }

    /// Files of `level` (every group) whose user-key range intersects
    /// `[lo, hi]`.
    pub fn overlapping(
        &self,
        level: Level,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>> {
        self.levels[level.index()]
            .iter()
            .filter(|f| f.overlaps(lo, hi))
            .cloned()
            .collect()
    }

    /// Level 0's files that a compaction of the ones intersecting
    /// `[lo, hi]` must take too: those files, and every file whose range
    /// meets theirs, until none is left. Level-0 files overlap one
    /// another, so an older file left out of a compaction that moves a
    /// newer one below it would shadow the newer versions (and the
    /// tombstones a bottommost compaction drops).
    pub fn overlapping_level0(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Vec<Arc<FileMeta>> {
        let files = &self.levels[0];
        let mut taken: Vec<bool> = files.iter().map(|f| f.overlaps(lo, hi)).collect();
        loop {
            let chosen = files.iter().zip(&taken).filter(|&(_, &t)| t);
            let Some(small) = chosen.clone().map(|(f, _)| f.smallest_user_key()).min() else {
                return Vec::new();
            };
            let large = chosen
                .map(|(f, _)| f.largest_user_key())
                .max()
                .unwrap_or(small);
            let mut grew = false;
            for (f, t) in files.iter().zip(taken.iter_mut()) {
                if !*t && f.overlaps(Some(small), Some(large)) {
                    *t = true;
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }
        files
            .iter()
            .zip(&taken)
            .filter(|&(_, &t)| t)
            .map(|(f, _)| Arc::clone(f))
            .collect()
    }

    /// Files of group `group`'s run on `level` whose user-key range
    /// intersects `[lo, hi]`.
    pub fn overlapping_in(
        &self,
        level: Level,
        group: GroupId,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>> {
        self.run(level, group)
            .iter()
            .filter(|f| f.overlaps(lo, hi))
            .cloned()
            .collect()
    }

    /// The file of group `group`'s run on a sorted level (>= 1) that may
    /// hold `user_key`.
    pub fn find_file(&self, level: Level, group: GroupId, ukey: &[u8]) -> Option<&Arc<FileMeta>> {
        let files = self.run(level, group);
        let i = files.partition_point(|f| f.largest_user_key() < ukey);
        files.get(i).filter(|f| f.smallest_user_key() <= ukey)
    }

    /// Applies an edit's file changes for `keyspace`, returning the new
    /// version.
    pub fn apply(
        &self,
        keyspace: KeyspaceId,
        deleted: &[(KeyspaceId, Level, FileNumber)],
        added: Vec<(Level, Arc<FileMeta>)>,
    ) -> Version {
        let mut levels = self.levels.clone();
        for (ks, level, number) in deleted {
            if *ks != keyspace {
                continue;
            }
            if let Some(files) = levels.get_mut(level.index()) {
                files.retain(|f| f.number != *number);
            }
        }
        for (level, f) in added {
            if let Some(files) = levels.get_mut(level.index()) {
                files.push(f);
            }
        }
        sort_level0(&mut levels[0]);
        for files in levels.iter_mut().skip(1) {
            files.sort_by(|a, b| {
                a.group
                    .cmp(&b.group)
                    .then_with(|| compare_internal(&a.smallest, &b.smallest))
            });
        }
        Version { levels }
    }

    /// Checks that level 0 holds only whole values and that each column
    /// group's run on a deeper level holds disjoint, sorted ranges.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        if let Some(f) = self.levels[0].iter().find(|f| f.group != GroupId::WHOLE) {
            return Err(format!(
                "level 0: file {} is of column group {}, but level 0 holds whole values",
                f.number, f.group
            ));
        }
        for l in (1..self.levels.len()).map(Level::from_index) {
            for (group, files) in self.runs(l) {
                for w in files.windows(2) {
                    if compare_internal(&w[0].largest, &w[1].smallest) != Ordering::Less {
                        return Err(format!(
                            "level {l}, group {group}: files {} and {} overlap",
                            w[0].number, w[1].number
                        ));
                    }
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
    current: Option<TableHandleIter>,
    /// Seeks that land before a file's first key position lazily.
    lazy: bool,
    /// Positioned on the first entry of `files[index]` without opening it:
    /// its key is the file's smallest key, from the manifest.
    pending: bool,
    /// Whether the files' blocks go into the block cache.
    fill_cache: bool,
    error: Option<Error>,
}

impl LevelIter {
    /// `files` sorted by smallest key, disjoint.
    pub fn new(files: Vec<Arc<FileMeta>>) -> Self {
        LevelIter {
            files,
            index: 0,
            current: None,
            lazy: false,
            pending: false,
            fill_cache: true,
            error: None,
        }
    }

    /// Like [`LevelIter::new`], for compaction: blocks read from the files
    /// are not added to the block cache
    /// ([`TableHandle::iter_filling`]).
    pub(crate) fn without_filling_cache(files: Vec<Arc<FileMeta>>) -> Self {
        LevelIter {
            fill_cache: false,
            ..Self::new(files)
        }
    }

    /// Like [`LevelIter::new`], but a seek whose target falls before a
    /// file's first key (in the gap between two files, or before the
    /// first) does not open the file: the level's next entry is that
    /// file's first, whose internal key the manifest records, so the
    /// iterator reports it as its key and reads the file only when
    /// [`InternalIterator::settle`] (or a step) needs the entry. A short
    /// scan that ends before that key never touches the file. The reader
    /// must call `settle` before `value` (the merging iterator does).
    pub fn new_lazy(files: Vec<Arc<FileMeta>>) -> Self {
        LevelIter {
            lazy: true,
            ..Self::new(files)
        }
    }

    fn open(&mut self, index: usize) {
        self.pending = false;
        self.index = index;
        self.current = self
            .files
            .get(index)
            .map(|f| f.table.iter_filling(self.fill_cache));
    }

    /// How `seek(target)` is answered, from the file key ranges alone.
    fn seek_plan(&self, target: &[u8]) -> SeekPlan {
        let i = self
            .files
            .partition_point(|f| compare_internal(&f.largest, target) == Ordering::Less);
        match self.files.get(i) {
            None => SeekPlan::PastEnd,
            // Every earlier file ends before the target and this one starts
            // at or after it: the level's next entry is this file's first.
            Some(f) if self.lazy && compare_internal(target, &f.smallest) != Ordering::Greater => {
                SeekPlan::FirstOf(i)
            }
            Some(_) => SeekPlan::Read(i),
        }
    }

    /// Reads the entry a lazy seek stood on.
    fn load_pending(&mut self) {
        if !self.pending {
            return;
        }
        let index = self.index;
        self.open(index);
        if let Some(c) = self.current.as_mut() {
            c.seek_to_first();
        }
        let f = &self.files[index];
        let agrees = self
            .current
            .as_ref()
            .is_some_and(|c| !c.valid() || c.key() == f.smallest.as_slice());
        if !agrees {
            // The merge ordered this level by the manifest's key; a file
            // that starts elsewhere would break the order silently.
            self.error = Some(Error::corruption(
                f.path.clone(),
                0,
                "the table's first key differs from the smallest key the manifest records",
            ));
            self.current = None;
            return;
        }
        self.skip_forward();
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

/// How a level answers a seek ([`LevelIter::seek_plan`]).
enum SeekPlan {
    /// No file ends at or after the target.
    PastEnd,
    /// Lazy: the next entry is file `i`'s first, known without a read.
    FirstOf(usize),
    /// File `i` must be opened and sought.
    Read(usize),
}

impl InternalIterator for LevelIter {
    fn valid(&self) -> bool {
        self.pending || self.current.as_ref().is_some_and(|c| c.valid())
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
            None => {
                self.pending = false;
                self.current = None;
            }
        }
    }
    fn seek(&mut self, target: &[u8]) {
        match self.seek_plan(target) {
            SeekPlan::PastEnd => {
                self.pending = false;
                self.current = None;
            }
            SeekPlan::FirstOf(i) => {
                self.index = i;
                self.current = None;
                self.pending = true;
            }
            SeekPlan::Read(i) => {
                self.open(i);
                if let Some(c) = self.current.as_mut() {
                    c.seek(target);
                }
                self.skip_forward();
            }
        }
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let i = self
            .files
            .partition_point(|f| compare_internal(&f.smallest, target) != Ordering::Greater);
        let Some(i) = i.checked_sub(1) else {
            self.pending = false;
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
        self.load_pending();
        if let Some(c) = self.current.as_mut() {
            c.next();
        }
        self.skip_forward();
    }
    fn prev(&mut self) {
        self.load_pending();
        if let Some(c) = self.current.as_mut() {
            c.prev();
        }
        self.skip_backward();
    }
    fn key(&self) -> &[u8] {
        if self.pending {
            return &self.files[self.index].smallest;
        }
        self.current.as_ref().map_or(&[][..], |c| c.key())
    }
    fn value(&self) -> &[u8] {
        debug_assert!(!self.pending, "settle() before value()");
        self.current.as_ref().map_or(&[][..], |c| c.value())
    }
    fn value_code(&self) -> Option<crate::dict::CodedValue<'_>> {
        self.current.as_ref()?.value_code()
    }
    fn column_codes(&self, f: &mut dyn FnMut(usize, crate::dict::CodedValue<'_>)) {
        if let Some(c) = &self.current {
            c.column_codes(f)
        }
    }
    fn settle(&mut self) {
        self.load_pending();
    }
    fn visit_forward(&mut self, f: &mut dyn FnMut(&[u8], &[u8]) -> bool) {
        self.load_pending();
        while let Some(c) = self.current.as_mut() {
            c.visit_forward(f);
            if c.valid() || c.status().is_err() {
                // `f` stopped on an entry, or the file failed (reported by
                // `status`).
                return;
            }
            self.skip_forward();
        }
    }
    fn seek_reads(&self, target: &[u8]) -> bool {
        matches!(self.seek_plan(target), SeekPlan::Read(_))
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
        if let Some(e) = &self.error {
            return Err(e.duplicate());
        }
        self.current.as_ref().map_or(Ok(()), |c| c.status())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, make_internal_key, make_seek_key};
    use crate::sst::{TableBuilder, TableBuilderOptions, TableReader};
    use crate::stats::Statistics;
    use crate::vfs::StdVfs;

    fn ikey(k: u32, seq: u64) -> Vec<u8> {
        make_internal_key(format!("k{k:04}").as_bytes(), seq, ValueKind::Put)
    }

    /// A level of three files holding keys 10-19, 40-49 and 70-79 (each
    /// key in two versions), with gaps between them.
    fn level(dir: &std::path::Path, bend_first_key: bool) -> Vec<Arc<FileMeta>> {
        let vfs: Arc<dyn Vfs> = Arc::new(StdVfs);
        [10u32, 40, 70]
            .iter()
            .enumerate()
            .map(|(n, &lo)| {
                let path = dir.join(format!("{n}.sst"));
                // Small blocks, so that a file holds several.
                let mut b = TableBuilder::new(
                    vfs.create(&path).expect("create"),
                    path.clone(),
                    TableBuilderOptions {
                        block_size: 64,
                        ..Default::default()
                    },
                );
                for k in lo..lo + 10 {
                    for seq in [9, 3] {
                        b.add(&ikey(k, seq), format!("v{k}-{seq}").as_bytes())
                            .expect("add");
                    }
                }
                let s = b.finish().expect("finish");
                let mut rec = TableFile::from_summary(s, FileNumber(n as u64), GroupId::WHOLE, "");
                if bend_first_key && n == 1 {
                    // A manifest that claims the file starts earlier.
                    rec.smallest = ikey(35, 9);
                }
                let table = TableReader::open(
                    vfs.open(&path).expect("open"),
                    path.clone(),
                    n as u64,
                    None,
                    Arc::new(Statistics::default()),
                )
                .expect("table");
                Arc::new(FileMeta::new(
                    rec,
                    TableHandle::Sst(Arc::new(table)),
                    path,
                    Arc::clone(&vfs),
                ))
            })
            .collect()
    }

    /// Seeks, settles, and reads up to three entries forward and one back.
    fn walk(it: &mut LevelIter, target: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        it.seek(target);
        for _ in 0..3 {
            if !it.valid() {
                break;
            }
            it.settle();
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        it.seek(target);
        if it.valid() {
            it.prev();
            if it.valid() {
                it.settle();
                out.push((it.key().to_vec(), it.value().to_vec()));
            }
        }
        out
    }

    #[test]
    fn lazy_seeks_read_exactly_what_eager_seeks_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = level(dir.path(), false);
        let mut eager = LevelIter::new(files.clone());
        let mut lazy = LevelIter::new_lazy(files);
        let mut targets = Vec::new();
        for k in 0..90u32 {
            let uk = format!("k{k:04}");
            targets.push(make_seek_key(uk.as_bytes(), crate::key::MAX_SEQNO));
            for seq in [10, 9, 5, 3, 1] {
                targets.push(ikey(k, seq));
            }
        }
        for t in &targets {
            let e = walk(&mut eager, t);
            let l = walk(&mut lazy, t);
            assert_eq!(l, e, "target {t:?}");
            lazy.status().expect("status");
        }
        // A seek into a gap is answered from the manifest: the key is the
        // next file's first, before any read.
        lazy.seek(&make_seek_key(b"k0025", crate::key::MAX_SEQNO));
        assert!(lazy.pending && lazy.valid());
        assert_eq!(lazy.key(), ikey(40, 9).as_slice());
        lazy.settle();
        assert!(!lazy.pending);
        assert_eq!(lazy.value(), b"v40-9");
    }

    /// Entries from `it`'s position on, stepping one at a time.
    fn rest_by_steps(it: &mut LevelIter) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        while it.valid() {
            it.settle();
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        out
    }

    #[test]
    fn visiting_forward_stops_where_asked_across_blocks_and_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = level(dir.path(), false);
        let all = rest_by_steps(&mut {
            let mut it = LevelIter::new(files.clone());
            it.seek_to_first();
            it
        });
        assert_eq!(all.len(), 60);
        for lazy in [false, true] {
            for start in [0usize, 7, 20, 33] {
                for take in 0..=all.len() - start {
                    let mut it = if lazy {
                        LevelIter::new_lazy(files.clone())
                    } else {
                        LevelIter::new(files.clone())
                    };
                    it.seek(&all[start].0);
                    let mut seen = Vec::new();
                    it.visit_forward(&mut |k, v| {
                        if seen.len() == take {
                            return false;
                        }
                        seen.push((k.to_vec(), v.to_vec()));
                        true
                    });
                    it.status().expect("status");
                    assert_eq!(
                        seen,
                        all[start..start + take],
                        "lazy {lazy}, {start}+{take}"
                    );
                    // The iterator stays on the entry it was not given, and
                    // goes on from there.
                    let rest = rest_by_steps(&mut it);
                    assert_eq!(rest, all[start + take..], "lazy {lazy}, {start}+{take}");
                }
            }
        }
    }

    #[test]
    fn seek_reads_says_whether_a_seek_opens_a_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = level(dir.path(), false);
        let mut eager = LevelIter::new(files.clone());
        let mut lazy = LevelIter::new_lazy(files);
        let mut reads = [0, 0];
        for k in 0..90u32 {
            let t = make_seek_key(format!("k{k:04}").as_bytes(), crate::key::MAX_SEQNO);
            for (n, it) in [&mut eager, &mut lazy].into_iter().enumerate() {
                let predicted = it.seek_reads(&t);
                it.seek(&t);
                // A seek that read stands on an opened file.
                let read = !it.pending && it.current.is_some();
                assert_eq!(predicted, read, "iterator {n}, key {k}");
                reads[n] += usize::from(read);
            }
        }
        // Keys 0-79 lie at or before the last file's end; a lazy level
        // reads only for targets inside a file past its first key (9 in
        // each of three files).
        assert_eq!(reads, [80, 27]);
    }

    #[test]
    fn a_file_that_does_not_start_where_the_manifest_says_is_corruption() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut it = LevelIter::new_lazy(level(dir.path(), true));
        it.seek(&make_seek_key(b"k0030", crate::key::MAX_SEQNO));
        assert_eq!(it.key(), ikey(35, 9).as_slice());
        it.settle();
        assert!(!it.valid());
        let e = it.status().expect_err("corruption");
        assert!(e.is_corruption(), "{e}");
        assert!(e.to_string().contains("manifest"), "{e}");

        // A visit from that lazy position hands over nothing and reports
        // the same corruption.
        let dir = tempfile::tempdir().expect("tempdir");
        let mut it = LevelIter::new_lazy(level(dir.path(), true));
        it.seek(&make_seek_key(b"k0030", crate::key::MAX_SEQNO));
        let mut seen = 0;
        it.visit_forward(&mut |_, _| {
            seen += 1;
            true
        });
        assert_eq!(seen, 0);
        assert!(!it.valid());
        let e = it.status().expect_err("corruption");
        assert!(e.is_corruption(), "{e}");
    }
}
