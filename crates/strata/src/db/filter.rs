//! Filters on values (seed 002): the keys of a range whose value matches a
//! predicate, evaluated on codes where files are dictionary-encoded.
//!
//! A merging scan would decode and compare every value of the range. A
//! filter instead reads each source (memtable, level-0 file, level) on its
//! own, newest first, and keeps a key when its newest visible version in
//! that source matches and no newer source holds the key at all:
//! - in a dictionary-encoded file the predicate becomes a set of codes (a
//!   binary search in the file's dictionary); a block whose smallest and
//!   largest codes miss the set is skipped unread; the others are tested
//!   with the vectorised selection over their packed codes, and only the
//!   selected rows are looked at;
//! - in any other source each key's value is compared;
//! - a key whose newest visible version is a merge operand is read whole
//!   (`get`) and its value compared;
//! - "no newer source holds the key" is a point probe per match into the
//!   newer sources (their Bloom filters answer most), so a selective filter
//!   over a compacted keyspace costs little more than its code scans.

use super::*;
use crate::dict::select::select;
use crate::dict::{CodeSet, ValuePredicate};
use crate::dictfile::DictReader;
use crate::key::{MAX_SEQNO, parse_internal_key};
use crate::keyblock::RowSource;

/// Where a keyspace's data lives for a filter, newest first.
enum Source<'a> {
    Mem(&'a Arc<MemTable>),
    /// A level-0 file.
    File(&'a Arc<FileMeta>),
    /// A level of one sorted run (>= 1).
    Level(Level),
}

/// What a filter found and did.
pub(super) struct FilterRun<'a> {
    sv: &'a SuperVersion,
    snap: SeqNo,
    lo: Option<&'a [u8]>,
    hi: Option<&'a [u8]>,
    pred: &'a ValuePredicate,
    stats: &'a Statistics,
    /// Matches (key, value), from every source.
    out: Vec<(Vec<u8>, Vec<u8>)>,
    /// Keys whose newest version is a merge operand, to be read whole.
    resolve: Vec<Vec<u8>>,
    bitmap: Vec<u64>,
}

impl<'a> FilterRun<'a> {
    pub(super) fn new(
        sv: &'a SuperVersion,
        snap: SeqNo,
        lo: Option<&'a [u8]>,
        hi: Option<&'a [u8]>,
        pred: &'a ValuePredicate,
        stats: &'a Statistics,
    ) -> FilterRun<'a> {
        FilterRun {
            sv,
            snap,
            lo,
            hi,
            pred,
            stats,
            out: Vec::new(),
            resolve: Vec::new(),
            bitmap: Vec::new(),
        }
    }

    fn sources(&self) -> Vec<Source<'a>> {
        let sv = self.sv;
        let mut s: Vec<Source<'a>> = vec![Source::Mem(&sv.mem)];
        s.extend(sv.imms.iter().map(Source::Mem));
        s.extend(sv.version.levels[0].iter().map(Source::File));
        s.extend((1..sv.version.num_levels()).map(|l| Source::Level(Level::from_index(l))));
        s
    }

    fn in_range(&self, ukey: &[u8]) -> bool {
        self.lo.is_none_or(|l| ukey >= l) && self.hi.is_none_or(|h| ukey < h)
    }

    /// Whether a source newer than `sources[i]` holds a version of `key`
    /// visible at the snapshot.
    fn newer_has(&self, sources: &[Source<'_>], i: usize, key: &[u8]) -> Result<bool> {
        let seek = SeekKey::new(key, self.snap);
        let seek = seek.as_slice();
        let found = std::cell::Cell::new(false);
        let mut visit = |k: &[u8], _: &[u8]| {
            found.set(user_key(k) == key);
            false
        };
        for s in &sources[..i] {
            match s {
                Source::Mem(m) => m.get(seek, &mut visit),
                Source::File(f) => {
                    if key >= f.smallest_user_key() && key <= f.largest_user_key() {
                        f.table.get(key, seek, &mut visit)?;
                    }
                }
                Source::Level(l) => {
                    if let Some(f) = self.sv.version.find_file(*l, GroupId::WHOLE, key) {
                        f.table.get(key, seek, &mut visit)?;
                    }
                }
            }
            if found.get() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Runs the filter; the matches in key order.
    pub(super) fn run(
        mut self,
        db: &DbInner,
        ks: &KeyspaceShared,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let sources = self.sources();
        for i in 0..sources.len() {
            let mut found = Vec::new();
            match &sources[i] {
                Source::Mem(m) => self.scan_iter(m.iter(), &mut found)?,
                Source::File(f) => self.scan_file(f, &mut found)?,
                Source::Level(l) => {
                    let sv = self.sv;
                    for f in sv.version.run(*l, GroupId::WHOLE) {
                        self.scan_file(f, &mut found)?;
                    }
                }
            }
            for (key, value) in found {
                if !self.newer_has(&sources, i, &key)? {
                    match value {
                        Some(v) => self.out.push((key, v)),
                        None => self.resolve.push(key),
                    }
                }
            }
        }
        let mut buf = Vec::new();
        for key in std::mem::take(&mut self.resolve) {
            if db.get(ks, &key, Some(self.snap), &mut buf)? && self.pred.matches(&buf) {
                self.out.push((key, std::mem::take(&mut buf)));
            }
        }
        self.out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(self.out)
    }

    fn file_in_range(&self, f: &FileMeta) -> bool {
        !(self.hi.is_some_and(|h| f.smallest_user_key() >= h)
            || self.lo.is_some_and(|l| f.largest_user_key() < l))
    }

    fn scan_file(
        &mut self,
        f: &FileMeta,
        found: &mut Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<()> {
        if !self.file_in_range(f) {
            return Ok(());
        }
        if let Some(r) = f
            .table
            .source_any()
            .and_then(|a| a.downcast_ref::<DictReader>())
            && r.has_dictionary()
        {
            return self.scan_codes(r, found);
        }
        self.scan_iter(Box::new(f.table.iter()), found)
    }

    /// Any source: each key's newest visible version, compared as bytes.
    /// `found` gets (key, Some(value)) for a matching put and (key, None)
    /// for a merge operand.
    fn scan_iter(
        &mut self,
        mut it: Box<dyn InternalIterator>,
        found: &mut Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<()> {
        match self.lo {
            Some(l) => it.seek(SeekKey::new(l, MAX_SEQNO).as_slice()),
            None => it.seek_to_first(),
        }
        let mut last: Vec<u8> = Vec::new();
        let mut decided = false;
        while it.valid() {
            let Some(p) = parse_internal_key(it.key()) else {
                return Err(Error::corruption(
                    "filter input",
                    0,
                    "malformed internal key",
                ));
            };
            if self.hi.is_some_and(|h| p.user_key >= h) {
                break;
            }
            if p.user_key != last.as_slice() {
                last.clear();
                last.extend_from_slice(p.user_key);
                decided = false;
            }
            if !decided && p.seqno <= self.snap {
                decided = true;
                let kind = p.kind;
                it.settle();
                match kind {
                    ValueKind::Put if self.pred.matches(it.value()) => {
                        found.push((last.clone(), Some(it.value().to_vec())));
                    }
                    ValueKind::Merge => found.push((last.clone(), None)),
                    _ => {}
                }
            }
            it.next();
        }
        it.status()
    }

    /// A dictionary-encoded file: the predicate as codes, blocks skipped by
    /// their code range, the rest selected by the vectorised scan.
    fn scan_codes(
        &mut self,
        r: &DictReader,
        found: &mut Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<()> {
        let Some(dict) = r.dictionary()? else {
            return Ok(());
        };
        let set = self.pred.codes(&dict);
        // Merge operands are not values: their keys must be read whole, so
        // a file holding any has every row looked at.
        let has_merges = r.properties().num_merges > 0;
        if set == CodeSet::Empty && !has_merges {
            Statistics::add(&self.stats.filter_blocks_skipped, r.blocks().len() as u64);
            return Ok(());
        }
        let first = self.lo.map_or(0, |l| RowSource::block_for(r, l));
        let mut wanted = Vec::new();
        for b in first..r.blocks().len() {
            if b > first
                && self
                    .hi
                    .is_some_and(|h| r.blocks()[b - 1].last_key.as_slice() >= h)
            {
                break;
            }
            let meta = &r.blocks()[b];
            if !has_merges && (meta.codes.valued == 0 || !set.meets(meta.codes.min, meta.codes.max))
            {
                Statistics::add(&self.stats.filter_blocks_skipped, 1);
                continue;
            }
            wanted.push(b);
        }
        let mut bitmap = std::mem::take(&mut self.bitmap);
        let (snap, stats) = (self.snap, self.stats);
        let in_range = |k: &[u8]| self.in_range(k);
        r.scan_blocks(&wanted, &mut |_, block| {
            let (k, d) = block.key_rows();
            let rows = k.rows();
            let Some((packed, width)) = block.codes() else {
                return Ok(());
            };
            select(packed, width, rows, &set, &mut bitmap);
            Statistics::add(&stats.filter_codes_scanned, rows as u64);
            let mut consider = |row: usize, selected: bool| {
                let ukey = k.user_key(d, row);
                let seq = k.seqno(d, row);
                let first_visible = seq <= snap
                    && (row == 0 || k.user_key(d, row - 1) != ukey || k.seqno(d, row - 1) > snap);
                if !first_visible || !in_range(ukey) {
                    return;
                }
                match k.kind(d, row) {
                    ValueKind::Put if selected => {
                        found.push((ukey.to_vec(), Some(block.value(row).to_vec())));
                    }
                    ValueKind::Merge => found.push((ukey.to_vec(), None)),
                    _ => {}
                }
            };
            if has_merges {
                for row in 0..rows {
                    consider(row, bitmap[row / 64] >> (row % 64) & 1 == 1);
                }
            } else {
                for (wi, &word) in bitmap.iter().enumerate() {
                    let mut w = word;
                    while w != 0 {
                        consider(wi * 64 + w.trailing_zeros() as usize, true);
                        w &= w - 1;
                    }
                }
            }
            Ok(())
        })?;
        self.bitmap = bitmap;
        Ok(())
    }
}
