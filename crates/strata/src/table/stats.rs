//! A table's counters and its workload log: per level, how many point
//! reads, scans and updates used which projections, in bounded memory. The
//! layout advisor turns the log into the cost model's workload.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::cost::{ColumnSet, OpKind, OpStat, Workload};

/// Distinct (kind, projection) classes kept per level; further classes
/// are folded into the most common one of their kind, so the log stays
/// small whatever the workload.
pub const MAX_CLASSES_PER_LEVEL: usize = 64;

#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    count: f64,
    entries: f64,
}

/// Operations by level and projection.
#[derive(Debug, Default)]
pub(crate) struct WorkloadLog {
    inserts: f64,
    /// Per level: (kind, projection) → tally. Updates are kept at level 0
    /// and apply to every level (an update is rewritten on each).
    levels: Vec<HashMap<(OpKind, ColumnSet), Tally>>,
}

/// The log as stored in the catalog (JSON), so that the advisor of a
/// later process sees the workload of earlier ones.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredLog {
    pub inserts: f64,
    /// (level, kind, columns, count, entries); kind is point, scan or update.
    pub classes: Vec<(usize, String, ColumnSet, f64, f64)>,
}

fn kind_name(k: OpKind) -> &'static str {
    match k {
        OpKind::Point => "point",
        OpKind::Scan => "scan",
        OpKind::Update => "update",
    }
}

/// The largest number a stored log's count may add (10^15 operations,
/// decades of a busy table); larger is damage.
const MAX_STORED_COUNT: f64 = 1e15;

impl WorkloadLog {
    /// The log in its stored form.
    pub(crate) fn to_stored(&self) -> StoredLog {
        let mut classes: Vec<(usize, String, ColumnSet, f64, f64)> = self
            .levels
            .iter()
            .enumerate()
            .flat_map(|(l, m)| {
                m.iter().map(move |((k, c), t)| {
                    (l, kind_name(*k).to_string(), c.clone(), t.count, t.entries)
                })
            })
            .collect();
        classes.sort_by(|a, b| (a.0, &a.1, &a.2).cmp(&(b.0, &b.1, &b.2)));
        StoredLog {
            inserts: self.inserts,
            classes,
        }
    }

    /// Adds a stored log's operations to this one (unknown kinds and
    /// impossible levels are skipped: the log is advice, not data).
    pub(crate) fn absorb(&mut self, s: &StoredLog) {
        // Counts are clamped to what a workload could record: a damaged
        // 1e308 made the cost model's sums infinite and its comparisons
        // NaN (found in review, 2026-12-01).
        let sane = |x: f64| {
            if x.is_finite() {
                x.clamp(0.0, MAX_STORED_COUNT)
            } else {
                0.0
            }
        };
        self.inserts += sane(s.inserts);
        for (l, kind, cols, count, entries) in &s.classes {
            let kind = match kind.as_str() {
                "point" => OpKind::Point,
                "scan" => OpKind::Scan,
                "update" => OpKind::Update,
                _ => continue,
            };
            if *l < 64 && count.is_finite() && entries.is_finite() {
                self.add(*l, kind, cols.clone(), sane(*count), sane(*entries));
            }
        }
    }

    fn level(&mut self, l: usize) -> &mut HashMap<(OpKind, ColumnSet), Tally> {
        if self.levels.len() <= l {
            self.levels.resize_with(l + 1, HashMap::new);
        }
        &mut self.levels[l]
    }

    fn add(&mut self, l: usize, kind: OpKind, cols: ColumnSet, count: f64, entries: f64) {
        let map = self.level(l);
        let key = (kind, cols);
        if !map.contains_key(&key) && map.len() >= MAX_CLASSES_PER_LEVEL {
            // Fold into the most common class of this kind (or drop).
            if let Some(t) = map
                .iter_mut()
                .filter(|((k, _), _)| *k == kind)
                .max_by(|a, b| a.1.count.total_cmp(&b.1.count))
                .map(|(_, t)| t)
            {
                t.count += count;
                t.entries += entries;
            }
            return;
        }
        let t = map.entry(key).or_default();
        t.count += count;
        t.entries += entries;
    }

    /// Multiplies every tally by `factor` (in (0, 1]): older operations
    /// count less, so the log follows a drifting workload.
    pub(crate) fn decay(&mut self, factor: f64) {
        self.inserts *= factor;
        for map in &mut self.levels {
            map.retain(|_, t| {
                t.count *= factor;
                t.entries *= factor;
                t.count >= 0.01
            });
        }
    }

    /// The log as the cost model's workload over `num_levels` levels.
    pub(crate) fn workload(&self, num_levels: usize) -> Workload {
        let mut levels: Vec<Vec<OpStat>> = vec![Vec::new(); num_levels];
        let updates: Vec<OpStat> = self
            .levels
            .first()
            .map(|m| {
                m.iter()
                    .filter(|((k, _), _)| *k == OpKind::Update)
                    .map(|((k, c), t)| OpStat {
                        kind: *k,
                        columns: c.clone(),
                        count: t.count,
                        entries: 1.0,
                    })
                    .collect()
            })
            .unwrap_or_default();
        for (l, ops) in levels.iter_mut().enumerate() {
            if let Some(m) = self.levels.get(l) {
                let mut classes: Vec<(&(OpKind, ColumnSet), &Tally)> = m
                    .iter()
                    .filter(|((k, _), _)| *k != OpKind::Update)
                    .collect();
                classes.sort_by(|a, b| a.0.1.cmp(&b.0.1));
                for ((kind, cols), t) in classes {
                    ops.push(OpStat {
                        kind: *kind,
                        columns: cols.clone(),
                        count: t.count,
                        entries: if *kind == OpKind::Scan && t.count > 0.0 {
                            t.entries / t.count
                        } else {
                            1.0
                        },
                    });
                }
            }
            ops.extend(updates.iter().cloned());
        }
        Workload {
            inserts: self.inserts,
            levels,
        }
    }

    /// Total recorded operations (reads, scans, updates).
    pub(crate) fn operations(&self) -> f64 {
        self.levels
            .iter()
            .flat_map(|m| m.values())
            .map(|t| t.count)
            .sum()
    }
}

/// A table's counters.
#[derive(Debug, Default)]
pub(crate) struct TableStats {
    pub gets: AtomicU64,
    pub get_files: AtomicU64,
    pub get_blocks: AtomicU64,
    pub scans: AtomicU64,
    pub scan_rows_read: AtomicU64,
    pub scan_rows_returned: AtomicU64,
    pub scan_blocks_read: AtomicU64,
    pub scan_blocks_skipped: AtomicU64,
    pub rows_written: AtomicU64,
    pub updates: AtomicU64,
    pub deletes: AtomicU64,
    pub layout_changes: AtomicU64,
    pub auto_switches: AtomicU64,
    pub workload: Mutex<WorkloadLog>,
}

fn cols_of(want: &[usize]) -> ColumnSet {
    let mut c: ColumnSet = want.iter().map(|&v| v as u32).collect();
    c.sort_unstable();
    c.dedup();
    c
}

impl TableStats {
    pub(crate) fn bump(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// Point reads of value columns `want`: per deepest level probed, how
    /// many.
    pub(crate) fn record_points(&self, per_level: &[(usize, u64)], want: &[usize]) {
        let cols = cols_of(want);
        let mut log = self.workload.lock();
        for &(level, n) in per_level.iter().filter(|x| x.1 > 0) {
            log.add(level, OpKind::Point, cols.clone(), n as f64, n as f64);
        }
    }

    /// A scan of value columns `want` that read `entries[l]` entries on
    /// level `l`.
    pub(crate) fn record_scan(&self, entries: &[u64], want: &[usize]) {
        let cols = cols_of(want);
        let mut log = self.workload.lock();
        for (l, &e) in entries.iter().enumerate() {
            if e > 0 {
                log.add(l, OpKind::Scan, cols.clone(), 1.0, e as f64);
            }
        }
    }

    /// `n` partial updates of value columns `cols`: counted, and logged
    /// for the advisor.
    pub(crate) fn record_updates(&self, cols: &[usize], n: u64) {
        if n == 0 {
            return;
        }
        Self::bump(&self.updates, n);
        let n = n as f64;
        self.workload
            .lock()
            .add(0, OpKind::Update, cols_of(cols), n, n);
    }

    /// `n` rows inserted or upserted: counted, and logged for the advisor.
    pub(crate) fn record_inserts(&self, n: u64) {
        Self::bump(&self.rows_written, n);
        self.workload.lock().inserts += n as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_log_comes_back_as_the_same_workload() {
        let s = TableStats::default();
        s.record_points(&[(1, 1)], &[3, 4]);
        s.record_scan(&[10, 0, 300], &[0, 2]);
        s.record_updates(&[5], 1);
        s.record_inserts(7);
        let stored = s.workload.lock().to_stored();
        let json = serde_json::to_vec(&stored).expect("json");
        let back: StoredLog = serde_json::from_slice(&json).expect("parse");
        assert_eq!(back, stored);
        let mut fresh = WorkloadLog::default();
        fresh.absorb(&back);
        assert_eq!(fresh.to_stored(), stored);
        assert_eq!(fresh.workload(3).inserts, 7.0);
        // Nonsense in a stored log is skipped, not trusted.
        let mut bad = stored.clone();
        bad.classes.push((1, "merge".into(), vec![1], 5.0, 5.0));
        bad.classes.push((1_000, "point".into(), vec![1], 5.0, 5.0));
        bad.classes
            .push((1, "point".into(), vec![1], f64::NAN, 5.0));
        let mut f2 = WorkloadLog::default();
        f2.absorb(&bad);
        assert_eq!(f2.to_stored(), stored);
        // Counts no workload could make are clamped.
        let huge = StoredLog {
            inserts: 1e308,
            classes: vec![(0, "point".into(), vec![1], 1e308, f64::MAX)],
        };
        let mut f3 = WorkloadLog::default();
        f3.absorb(&huge);
        let w = f3.to_stored();
        assert_eq!(w.inserts, MAX_STORED_COUNT);
        assert_eq!(w.classes[0].3, MAX_STORED_COUNT);
        assert_eq!(w.classes[0].4, MAX_STORED_COUNT);
        let mut f4 = WorkloadLog::default();
        f4.absorb(&StoredLog {
            inserts: f64::INFINITY,
            classes: Vec::new(),
        });
        assert_eq!(f4.to_stored().inserts, 0.0);
    }

    #[test]
    fn the_log_is_bounded_and_becomes_a_per_level_workload() {
        let s = TableStats::default();
        for i in 0..200usize {
            s.record_points(&[(1, 1)], &[i % 100, 100]);
        }
        s.record_scan(&[10, 0, 300], &[3, 4]);
        s.record_updates(&[7], 1);
        s.record_inserts(50);
        let log = s.workload.lock();
        assert!(log.levels[1].len() <= MAX_CLASSES_PER_LEVEL);
        let w = log.workload(3);
        assert_eq!(w.inserts, 50.0);
        let points: f64 = w.levels[1]
            .iter()
            .filter(|o| o.kind == OpKind::Point)
            .map(|o| o.count)
            .sum();
        assert_eq!(points, 200.0);
        let scan = w.levels[2]
            .iter()
            .find(|o| o.kind == OpKind::Scan)
            .expect("scan");
        assert_eq!(scan.entries, 300.0);
        // Updates apply on every level.
        assert!(
            w.levels
                .iter()
                .all(|ops| ops.iter().any(|o| o.kind == OpKind::Update))
        );
    }

    #[test]
    fn decay_forgets_old_operations() {
        let s = TableStats::default();
        s.record_points(&[(0, 1)], &[1]);
        let mut log = s.workload.lock();
        for _ in 0..20 {
            log.decay(0.5);
        }
        assert_eq!(log.operations(), 0.0);
    }
}
