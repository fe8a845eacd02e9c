//! The automatic layout (LASER's stated future work: a self-configuring
//! Real-Time LSM-tree). For each table with `auto_layout_threshold` set, a
//! background thread re-runs the advisor on the recorded workload every
//! `auto_layout_interval_ms`, switches to its layout when the predicted
//! cost falls by more than the threshold in two rounds in a row (with the
//! same layout: [`confirm`]), and halves the recorded counts so that the
//! log follows a drifting workload.
//!
//! A switch only records the new layout (a catalog write and a manifest
//! edit); compaction moves the data in the background, so writes never wait
//! for it.

use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::catalog::Catalog;
use super::layout::TableLayout;
use super::stats::TableStats;

/// How often (in ticks of the thread) the workload logs are saved.
const SAVE_EVERY_TICKS: u64 = 300;

/// Operations a table must have recorded since the last check before the
/// advisor is asked (fewer say too little about the workload).
pub const MIN_OPERATIONS: f64 = 100.0;

/// Stops the thread when the catalog goes away.
#[derive(Default)]
pub(crate) struct Stop {
    stopped: Mutex<bool>,
    cv: Condvar,
}

impl Stop {
    pub(crate) fn stop(&self) {
        *self.stopped.lock() = true;
        self.cv.notify_all();
    }

    /// Waits `d`; true if stopped meanwhile.
    fn wait(&self, d: Duration) -> bool {
        let mut s = self.stopped.lock();
        if !*s {
            self.cv.wait_for(&mut s, d);
        }
        *s
    }
}

/// Starts the thread for `catalog`.
pub(crate) fn start(catalog: &Arc<Catalog>, stop: Arc<Stop>, tick: Duration) {
    let weak: Weak<Catalog> = Arc::downgrade(catalog);
    let _ = std::thread::Builder::new()
        .name("strata-auto-layout".into())
        .spawn(move || {
            let mut ticks: u64 = 0;
            while !stop.wait(tick) {
                let Some(c) = weak.upgrade() else { return };
                c.auto_layout_round();
                ticks += 1;
                if ticks.is_multiple_of(SAVE_EVERY_TICKS) {
                    // Best effort: the log is advice.
                    let _ = c.save_workloads();
                }
            }
        });
}

/// Whether to switch to `proposal` (`None`: the advisor proposes no
/// switch): only when the round before proposed the same layout. One
/// round's advice may follow a passing phase of the workload (a burst of
/// scans at the end of a mix); switching on it and back would rewrite the
/// data twice for nothing. `pending` carries the proposal between rounds.
pub(crate) fn confirm(pending: &mut Option<TableLayout>, proposal: Option<&TableLayout>) -> bool {
    match proposal {
        Some(p) if pending.as_ref() == Some(p) => {
            *pending = None;
            true
        }
        Some(p) => {
            *pending = Some(p.clone());
            false
        }
        None => {
            *pending = None;
            false
        }
    }
}

impl Catalog {
    /// One round: every auto table whose interval passed is advised and
    /// maybe re-laid-out.
    pub(crate) fn auto_layout_round(&self) {
        for t in self.tables_with_auto() {
            let rec = t.inner().record();
            let Some(threshold) = rec.options.auto_layout_threshold else {
                continue;
            };
            if !t.inner().auto_due(rec.options.auto_layout_interval_ms) {
                continue;
            }
            let ops = t.inner().stats.workload.lock().operations();
            if ops < MIN_OPERATIONS {
                continue;
            }
            if let Ok(advice) = t.advise() {
                let wanted = advice.gain() > threshold && advice.proposed != advice.current;
                let confirmed = confirm(
                    &mut t.inner().auto_pending.lock(),
                    wanted.then_some(&advice.proposed),
                );
                if confirmed && t.set_layout(advice.proposed).is_ok() {
                    TableStats::bump(&t.inner().stats.auto_switches, 1);
                }
            }
            t.inner().stats.workload.lock().decay(0.5);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(spec: &str) -> TableLayout {
        let schema = crate::table::Schema::new(
            vec![
                crate::table::Column::new("k", crate::table::ColumnType::Int64),
                crate::table::Column::new("a", crate::table::ColumnType::Int32),
                crate::table::Column::new("b", crate::table::ColumnType::Int32),
            ],
            &["k"],
        )
        .expect("schema");
        TableLayout::parse(spec, &schema, 3).expect("layout")
    }

    #[test]
    fn a_switch_needs_the_same_proposal_twice_in_a_row() {
        let (row, col) = (layout("row"), layout("column"));
        let mut pending = None;
        assert!(!confirm(&mut pending, Some(&col)), "first proposal");
        assert!(confirm(&mut pending, Some(&col)), "confirmed");
        // Confirmed once, it starts over.
        assert!(!confirm(&mut pending, Some(&col)));
        // A different proposal, or none, in between resets it.
        assert!(!confirm(&mut pending, Some(&row)));
        assert!(!confirm(&mut pending, Some(&col)));
        assert!(!confirm(&mut pending, None));
        assert!(!confirm(&mut pending, Some(&col)));
        assert!(confirm(&mut pending, Some(&col)));
    }
}
