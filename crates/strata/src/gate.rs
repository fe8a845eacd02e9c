//! A gate that switches an optional read-path optimisation off while it does
//! not pay, and on again once it would.
//!
//! Iterator reduction's two parts (the level filter and point-first seeks)
//! each cost a little on every scan and save a lot on the scans they help.
//! Under a workload they do not help (uniform 10-entry scans of a dense key
//! space: every source holds keys in every range, and every scan leaves its
//! start key) the cost is all there is. A [`SavingsGate`] counts, over
//! windows of [`WINDOW`] scans that used the optimisation, how many it
//! actually saved work for; below a quarter ([`pays`]) it goes idle, and
//! then only one scan in [`IDLE_SAMPLE_EVERY`] uses the optimisation, so
//! that the gate notices when the workload changes.
//!
//! The gate is a hint: whatever it says, every scan returns the same
//! results. It is lock-free (one compare-and-swap per use) because scans on
//! different threads report to it concurrently.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Uses over which the gate judges whether the optimisation pays.
pub const WINDOW: u64 = 256;

/// While a gate is idle, one scan in this many uses the optimisation anyway.
pub const IDLE_SAMPLE_EVERY: u32 = 64;

/// Whether an optimisation pays, from one window: `saved` of the `uses`
/// scans that used it were spared work by it. A spared seek is worth 1-3 µs
/// on the machine of docs/BENCHMARKS.md; consulting the level filter (and
/// recording what a scan saw) or probing every source's point filter before
/// seeking costs about 1 µs. Below a quarter of scans saving, using it on
/// every scan cost more than it saved (uniform 10-entry scans: 5 % slower
/// with point-first seeks, 15 % with the level filter, each saving on under
/// 2 % of scans).
pub fn pays(saved: u64, uses: u64) -> bool {
    saved.saturating_mul(4) >= uses
}

/// Counts of uses and of uses that saved, packed in one word so that one
/// compare-and-swap records a use: uses in the high half, saved in the low.
const USE: u64 = 1 << 32;
const SAVED_MASK: u64 = USE - 1;

/// One use recorded in window `cur`: the window to store, and, when this use
/// completes the window, how many of its [`WINDOW`] uses saved.
fn step(cur: u64, saved: bool) -> (u64, Option<u64>) {
    let next = cur + (USE | u64::from(saved));
    if next >> 32 >= WINDOW {
        (0, Some(next & SAVED_MASK))
    } else {
        (next, None)
    }
}

/// See the module documentation.
#[derive(Debug)]
pub struct SavingsGate {
    active: AtomicBool,
    /// The current window, packed (see [`USE`]).
    window: AtomicU64,
    /// Uses and saving uses in the completed windows.
    total_uses: AtomicU64,
    total_saved: AtomicU64,
}

impl Default for SavingsGate {
    fn default() -> Self {
        Self::new()
    }
}

impl SavingsGate {
    /// An active gate: the optimisation is used until a window shows it
    /// does not pay.
    pub fn new() -> Self {
        SavingsGate {
            active: AtomicBool::new(true),
            window: AtomicU64::new(0),
            total_uses: AtomicU64::new(0),
            total_saved: AtomicU64::new(0),
        }
    }

    /// Whether every scan uses the optimisation.
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// Whether this scan should use the optimisation: always while the gate
    /// is active, else when `sampled` (see [`idle_sample`]).
    pub fn admits(&self, sampled: bool) -> bool {
        sampled || self.is_active()
    }

    /// Records one scan that used the optimisation, and whether it saved
    /// work. The use that completes a window sets the gate from it.
    pub fn record(&self, saved: bool) {
        let mut cur = self.window.load(Ordering::Relaxed);
        // A compare-and-swap rather than a plain add: with an add, the
        // caller that saw the window full could be preempted before taking
        // it out while others pushed the count past the next full window,
        // which nobody would then see full again, freezing the gate. Here
        // the stored count never reaches a full window: the use that would
        // fill it swaps in an empty one instead, and only that use judges.
        let judged = loop {
            let (next, judged) = step(cur, saved);
            match self
                .window
                .compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => break judged,
                Err(seen) => cur = seen,
            }
        };
        if let Some(saved) = judged {
            self.active.store(pays(saved, WINDOW), Ordering::Relaxed);
            self.total_uses.fetch_add(WINDOW, Ordering::Relaxed);
            self.total_saved.fetch_add(saved, Ordering::Relaxed);
        }
    }

    /// Scans counted in completed windows, and those of them that saved.
    pub fn totals(&self) -> (u64, u64) {
        (
            self.total_uses.load(Ordering::Relaxed),
            self.total_saved.load(Ordering::Relaxed),
        )
    }
}

/// True for one call in [`IDLE_SAMPLE_EVERY`] on this thread. Call it once
/// per scan and hand the answer to every gate: a thread-local count, because
/// a shared one would bounce between cores on every scan, and one per scan,
/// because two calls per scan would let one gate always draw the odd ticks.
pub fn idle_sample() -> bool {
    thread_local! {
        static TICK: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    }
    TICK.with(|t| {
        let n = t.get().wrapping_add(1);
        t.set(n);
        n % IDLE_SAMPLE_EVERY == 0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goes_idle_when_few_uses_save_and_wakes_when_enough_do() {
        let g = SavingsGate::new();
        assert!(g.is_active(), "active until judged");
        assert!(g.admits(false));
        for i in 0..WINDOW {
            g.record(i % 10 == 0);
            // Judged only when the window is full.
            assert_eq!(g.is_active(), i + 1 < WINDOW, "use {i}");
        }
        assert!(!g.admits(false));
        assert!(g.admits(true));
        assert_eq!(g.totals(), (WINDOW, WINDOW.div_ceil(10)));
        for i in 0..WINDOW {
            g.record(i % 2 == 0);
        }
        assert!(g.is_active());
        assert_eq!(g.totals(), (2 * WINDOW, WINDOW.div_ceil(10) + WINDOW / 2));
    }

    #[test]
    fn the_threshold_is_a_quarter() {
        assert!(pays(1, 4) && !pays(1, 5) && pays(0, 0));
        let g = SavingsGate::new();
        for i in 0..WINDOW {
            g.record(i < WINDOW / 4);
        }
        assert!(g.is_active(), "exactly a quarter pays");
        for i in 0..WINDOW {
            g.record(i < WINDOW / 4 - 1);
        }
        assert!(!g.is_active(), "one short of a quarter does not");
    }

    #[test]
    fn concurrent_records_are_all_counted() {
        let g = std::sync::Arc::new(SavingsGate::new());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let g = std::sync::Arc::clone(&g);
                std::thread::spawn(move || {
                    for i in 0..WINDOW * 8 {
                        g.record((i + t) % 3 == 0);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("join");
        }
        let (uses, saved) = g.totals();
        assert_eq!(uses, 4 * 8 * WINDOW, "every use lands in a window");
        let expect: u64 = (0..4u64)
            .map(|t| (0..WINDOW * 8).filter(|i| (i + t) % 3 == 0).count() as u64)
            .sum();
        assert_eq!(saved, expect);
        assert!(g.is_active(), "a third saved");
    }

    #[test]
    fn the_use_that_fills_a_window_empties_it_and_judges() {
        let mut w = 0;
        for i in 0..WINDOW - 1 {
            let (next, judged) = step(w, i % 2 == 0);
            assert_eq!(judged, None, "use {i}");
            w = next;
        }
        assert_eq!(w >> 32, WINDOW - 1);
        let (next, judged) = step(w, true);
        assert_eq!(next, 0, "the stored count never reaches a full window");
        assert_eq!(judged, Some(WINDOW / 2 + 1));
    }

    #[test]
    fn a_window_is_judged_even_when_the_judge_is_slow() {
        // Many more threads than cores, each yielding between uses, so that
        // threads are preempted mid-record: every window must still be
        // judged and every use counted.
        let g = std::sync::Arc::new(SavingsGate::new());
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let g = std::sync::Arc::clone(&g);
                std::thread::spawn(move || {
                    for i in 0..WINDOW * 4 {
                        g.record(i % 8 == 0);
                        std::thread::yield_now();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("join");
        }
        assert_eq!(g.totals(), (16 * 4 * WINDOW, 16 * 4 * WINDOW / 8));
    }

    #[test]
    fn one_call_in_the_sample_period_samples() {
        let n = (0..IDLE_SAMPLE_EVERY * 10)
            .filter(|_| idle_sample())
            .count();
        assert_eq!(n, 10);
    }
}
