//! The level filter table: which levels hold entries in recently scanned
//! key ranges, so a short scan need not seek an iterator on every level
//! (after RIOKV, seed 004, with three changes: ranges instead of exact start
//! keys, safe under concurrent compactions, bounded memory).
//!
//! A record `[lo, hi) -> levels` claims: in every version from `created_at`
//! on, no level `>= 1` outside `levels` holds an entry (of any kind, any
//! sequence number) with a user key in `[lo, hi)`. Writes cannot break the
//! claim (they go to memtables, which every scan reads), nor can flushes
//! (level 0 is always read). Compactions can: when one writes keys in
//! `[a, b]` into level `o`, every overlapping record gains `o`
//! ([`LevelFilter::apply_compaction`], called under the lock that publishes
//! the new version). Adding levels only makes a record more conservative.
//!
//! A scan uses a record only if the record's version is not newer than the
//! scan's own; a scan that leaves the record's range wakes the levels it
//! skipped, so an uncertain answer costs a seek, never a result.
//!
//! Whether scans consult the table at all is decided by a
//! [`crate::gate::SavingsGate`] kept beside it, from how many scans it
//! actually spared a seek.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;

use crate::ids::Level;

/// A set of levels as a bitmask (levels 0..63).
pub type LevelMask = u64;

/// The bit of `level` in a [`LevelMask`] (levels past 63 share bit 63).
#[inline]
pub fn level_bit(level: Level) -> LevelMask {
    1 << level.index().min(63)
}

/// One scanned range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeRecord {
    pub lo: Vec<u8>,
    /// Exclusive end; `None` means unbounded (the scan reached the end).
    pub hi: Option<Vec<u8>>,
    pub levels: LevelMask,
    /// The keyspace version the claim holds from.
    pub created_at: u64,
    order: u64,
}

impl RangeRecord {
    fn overlaps(&self, a: &[u8], b: &[u8]) -> bool {
        // [lo, hi) intersects [a, b]
        self.lo.as_slice() <= b && self.hi.as_deref().is_none_or(|h| h > a)
    }

    fn contains(&self, k: &[u8]) -> bool {
        self.lo.as_slice() <= k && self.hi.as_deref().is_none_or(|h| k < h)
    }

    fn bytes(&self) -> usize {
        self.lo.len() + self.hi.as_ref().map_or(0, Vec::len) + RECORD_OVERHEAD_BYTES
    }
}

/// Bookkeeping per record beyond its keys: the map nodes and the order index.
const RECORD_OVERHEAD_BYTES: usize = 96;

/// How many records, going back from a key, a lookup examines: a few
/// narrow records may start between a wide record and the key.
const LOOKUP_CANDIDATES: usize = 16;

/// How many recent compactions are remembered to bring late records up to
/// date.
const COMPACTION_LOG_LEN: usize = 256;

/// A compaction, as the filter needs to know it.
#[derive(Clone, Debug)]
struct CompactionNote {
    version: u64,
    output_level: Level,
    lo: Vec<u8>,
    hi: Vec<u8>,
}

/// The level filter table of one keyspace.
#[derive(Debug)]
pub struct LevelFilter {
    by_lo: BTreeMap<Vec<u8>, RangeRecord>,
    by_order: BTreeMap<u64, Vec<u8>>,
    next_order: u64,
    bytes: usize,
    budget_bytes: usize,
    log: VecDeque<CompactionNote>,
    /// Versions `>= log_complete_from` are all in `log`.
    log_complete_from: u64,
    pub stats: LevelFilterStats,
}

/// Counters of a level filter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelFilterStats {
    pub lookups: u64,
    pub hits: u64,
    pub inserted: u64,
    pub rejected_stale: u64,
    pub evicted: u64,
}

impl LevelFilter {
    /// An empty table holding at most `budget_bytes`.
    pub fn new(budget_bytes: usize) -> Self {
        LevelFilter {
            by_lo: BTreeMap::new(),
            by_order: BTreeMap::new(),
            next_order: 0,
            bytes: 0,
            budget_bytes,
            log: VecDeque::new(),
            log_complete_from: 0,
            stats: LevelFilterStats::default(),
        }
    }

    fn count_lookup(&mut self, hit: bool) {
        self.stats.lookups += 1;
        self.stats.hits += u64::from(hit);
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.by_lo.len()
    }

    /// True when no record is held.
    pub fn is_empty(&self) -> bool {
        self.by_lo.is_empty()
    }

    /// Records that a compaction published as `version` wrote user keys in
    /// `[lo, hi]` to `output_level`.
    pub fn apply_compaction(&mut self, version: u64, output_level: Level, lo: &[u8], hi: &[u8]) {
        for r in self.by_lo.values_mut() {
            if r.overlaps(lo, hi) {
                r.levels |= level_bit(output_level);
            }
        }
        self.log.push_back(CompactionNote {
            version,
            output_level,
            lo: lo.to_vec(),
            hi: hi.to_vec(),
        });
        while self.log.len() > COMPACTION_LOG_LEN {
            if let Some(n) = self.log.pop_front() {
                self.log_complete_from = n.version + 1;
            }
        }
    }

    /// The levels a scan starting at `start` under keyspace version
    /// `version` must read, with the range the answer holds for; `None` if
    /// no usable record covers `start`.
    pub fn lookup(&mut self, start: &[u8], version: u64) -> Option<(LevelMask, Option<Vec<u8>>)> {
        let found = self
            .by_lo
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(start)))
            .rev()
            .take(LOOKUP_CANDIDATES)
            .map(|(_, r)| r)
            .find(|r| r.contains(start) && r.created_at <= version)
            .map(|r| (r.levels, r.hi.clone()));
        self.count_lookup(found.is_some());
        found
    }

    /// True if a record already claims at least as much over `[lo, hi)`.
    fn covered(&self, lo: &[u8], hi: Option<&[u8]>, levels: LevelMask) -> bool {
        self.by_lo
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(lo)))
            .rev()
            .take(LOOKUP_CANDIDATES)
            .any(|(_, r)| {
                let reaches = match (r.hi.as_deref(), hi) {
                    (None, _) => true,
                    (Some(_), None) => false,
                    (Some(rh), Some(h)) => rh >= h,
                };
                reaches && r.levels & !levels == 0
            })
    }

    /// Adds what a scan observed under keyspace version `seen_at`: the
    /// levels that supplied any entry in `[lo, hi)`. Compactions published
    /// since `seen_at` are applied first, and if they are no longer all
    /// known the record is dropped. That is judged from the log alone, under
    /// the table's lock: a caller's view of the current version could be
    /// older than compactions the table has already recorded and forgotten.
    pub fn insert(
        &mut self,
        lo: Vec<u8>,
        hi: Option<Vec<u8>>,
        mut levels: LevelMask,
        seen_at: u64,
    ) {
        if hi.as_deref().is_some_and(|h| h <= lo.as_slice()) {
            return;
        }
        if seen_at + 1 < self.log_complete_from {
            self.stats.rejected_stale += 1;
            return;
        }
        let probe = RangeRecord {
            lo: lo.clone(),
            hi: hi.clone(),
            levels: 0,
            created_at: 0,
            order: 0,
        };
        for n in self.log.iter().filter(|n| n.version > seen_at) {
            if probe.overlaps(&n.lo, &n.hi) {
                levels |= level_bit(n.output_level);
            }
        }
        if self.covered(&lo, hi.as_deref(), levels) {
            return;
        }
        let order = self.next_order;
        self.next_order += 1;
        let rec = RangeRecord {
            lo: lo.clone(),
            hi,
            levels,
            created_at: seen_at,
            order,
        };
        let size = rec.bytes();
        if size > self.budget_bytes {
            return;
        }
        if let Some(old) = self.by_lo.insert(lo.clone(), rec) {
            self.bytes -= old.bytes();
            self.by_order.remove(&old.order);
        }
        self.by_order.insert(order, lo);
        self.bytes += size;
        self.stats.inserted += 1;
        while self.bytes > self.budget_bytes {
            let Some((_, lo)) = self.by_order.pop_first() else {
                break;
            };
            if let Some(old) = self.by_lo.remove(&lo) {
                self.bytes -= old.bytes();
                self.stats.evicted += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_covers_keys_inside_the_range_only() {
        let mut f = LevelFilter::new(1 << 20);
        f.insert(b"c".to_vec(), Some(b"m".to_vec()), 0b10, 5);
        assert_eq!(f.lookup(b"c", 5).map(|r| r.0), Some(0b10));
        assert_eq!(f.lookup(b"f", 9).map(|r| r.0), Some(0b10));
        assert!(f.lookup(b"m", 9).is_none(), "hi is exclusive");
        assert!(f.lookup(b"a", 9).is_none());
        assert!(
            f.lookup(b"f", 4).is_none(),
            "a scan of an older version cannot use it"
        );
    }

    #[test]
    fn compaction_into_a_level_adds_it_to_overlapping_records() {
        let mut f = LevelFilter::new(1 << 20);
        f.insert(b"c".to_vec(), Some(b"m".to_vec()), 0b10, 1);
        f.insert(b"x".to_vec(), None, 0b10, 1);
        f.apply_compaction(2, Level(3), b"k", b"q");
        assert_eq!(f.lookup(b"d", 2).map(|r| r.0), Some(0b1010));
        assert_eq!(
            f.lookup(b"y", 2).map(|r| r.0),
            Some(0b10),
            "no overlap, unchanged"
        );
    }

    #[test]
    fn a_late_record_is_brought_up_to_date_or_dropped() {
        let mut f = LevelFilter::new(1 << 20);
        f.apply_compaction(2, Level(4), b"a", b"z");
        // Seen at version 1, inserted when version 2 is current.
        f.insert(b"c".to_vec(), Some(b"d".to_vec()), 0b10, 1);
        assert_eq!(f.lookup(b"c", 2).map(|r| r.0), Some(0b10010));
        for v in 3..3 + COMPACTION_LOG_LEN as u64 + 2 {
            f.apply_compaction(v, Level(1), b"0", b"0");
        }
        f.insert(b"e".to_vec(), Some(b"f".to_vec()), 0b10, 1);
        assert!(
            f.lookup(b"e", 1000).is_none(),
            "history no longer known: dropped"
        );
        assert_eq!(f.stats.rejected_stale, 1);
    }

    #[test]
    fn a_record_older_than_the_remembered_history_is_dropped() {
        // Seen at version 1; then compaction 2 writes its range into level
        // 4 and so many more follow that compaction 2 is forgotten. Whatever
        // the inserting scan believes the current version to be, the record
        // could lack level 4 and must not be stored.
        let mut f = LevelFilter::new(1 << 20);
        f.apply_compaction(2, Level(4), b"a", b"z");
        for v in 3..3 + COMPACTION_LOG_LEN as u64 {
            f.apply_compaction(v, Level(1), b"0", b"0");
        }
        f.insert(b"c".to_vec(), Some(b"d".to_vec()), 0b10, 1);
        assert!(f.lookup(b"c", 1000).is_none());
        assert_eq!(f.stats.rejected_stale, 1);
        // Seen after the forgotten compaction: kept, as no note it needs is
        // missing.
        f.insert(b"c".to_vec(), Some(b"d".to_vec()), 0b10, 2);
        assert_eq!(f.lookup(b"c", 1000).map(|r| r.0), Some(0b10));
    }

    #[test]
    fn memory_stays_within_budget() {
        let mut f = LevelFilter::new(10 * (RECORD_OVERHEAD_BYTES + 16));
        for i in 0..100u32 {
            let lo = format!("k{i:05}").into_bytes();
            let hi = format!("k{:05}", i + 1).into_bytes();
            f.insert(lo, Some(hi), 0b10, 0);
            assert!(f.bytes() <= 10 * (RECORD_OVERHEAD_BYTES + 16));
        }
        assert!(f.len() <= 10);
        assert!(f.stats.evicted >= 90);
        // The newest survive.
        assert!(f.lookup(b"k00099", 0).is_some());
        assert!(f.lookup(b"k00000", 0).is_none());
    }

    #[test]
    fn a_narrow_record_does_not_hide_a_wide_one() {
        let mut f = LevelFilter::new(1 << 20);
        f.insert(b"a".to_vec(), Some(b"z".to_vec()), 0b110, 0);
        // Not covered: claims fewer levels, so it is kept.
        f.insert(b"c".to_vec(), Some(b"d".to_vec()), 0b010, 0);
        assert_eq!(f.len(), 2);
        assert_eq!(f.lookup(b"e", 0).map(|r| r.0), Some(0b110));
        assert_eq!(f.lookup(b"c", 0).map(|r| r.0), Some(0b010));
        // Covered with the same levels: adds nothing.
        f.insert(b"f".to_vec(), Some(b"g".to_vec()), 0b110, 0);
        assert_eq!(f.len(), 2);
    }

    #[test]
    fn empty_or_inverted_ranges_are_ignored() {
        let mut f = LevelFilter::new(1 << 20);
        f.insert(b"m".to_vec(), Some(b"c".to_vec()), 0, 0);
        f.insert(b"m".to_vec(), Some(b"m".to_vec()), 0, 0);
        assert!(f.is_empty());
    }
}
