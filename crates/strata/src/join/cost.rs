//! The join cost model and planner (seed 000's model, with live
//! parameters): a pure function from statistics to each candidate
//! method's predicted cost, testable without I/O.
//!
//! Costs are in block reads, as in the study (`../shared/reference/joins.md`):
//! L levels, p the Bloom filters' false-positive rate, B entries per block,
//! e entry bytes, d primary keys per index value, m the share of outer rows
//! with a match. A scan of N entries costs N·e/(block bytes). A sort or a
//! hash partitioning that does not fit memory reads, writes and reads its
//! input again (3 passes, plus 2 per extra merge pass); one that fits costs
//! the scan alone. Every tuple handled also costs `cpu_per_tuple` blocks,
//! so that in-memory work is not free.

use std::fmt;

use super::JoinMethod;
use crate::index::{Consistency, IndexKind};

/// What the planner knows of one side of a join.
#[derive(Clone, Debug, PartialEq)]
pub struct SideStats {
    /// Rows (estimated from the files' entry counts and the memtables).
    pub rows: f64,
    /// Bytes per row as stored.
    pub row_bytes: f64,
    /// Bytes per join tuple (join value and output columns).
    pub tuple_bytes: f64,
    /// Levels holding data.
    pub levels: f64,
    /// The join column is the whole primary key.
    pub primary: bool,
    /// The index on the join column, if any.
    pub index: Option<IndexStats>,
}

/// What the planner knows of an index.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexStats {
    /// The index's kind.
    pub kind: IndexKind,
    /// The index's consistency strategy.
    pub consistency: Consistency,
    /// Its entries hold every output column of the side.
    pub covering: bool,
    /// Levels holding index data.
    pub levels: f64,
    /// Bytes per index entry (a posting list for eager and lazy).
    pub entry_bytes: f64,
    /// Primary keys per indexed value (d).
    pub keys_per_value: f64,
}

/// Everything the planner decides by.
#[derive(Clone, Debug, PartialEq)]
pub struct JoinStats {
    /// The left side.
    pub left: SideStats,
    /// The right side.
    pub right: SideStats,
    /// Share of left rows whose value has a match on the right, estimated
    /// by sampling.
    pub left_match: f64,
    /// Share of right rows with a match on the left.
    pub right_match: f64,
    /// Right rows per left row (matched or not), estimated by the same
    /// sample: the join's output is about `left.rows` times this.
    pub left_fanout: f64,
    /// Block size in bytes.
    pub block_bytes: f64,
    /// Bloom filter false-positive rate.
    pub bloom_fpr: f64,
    /// The join's memory budget in bytes.
    pub memory_bytes: f64,
    /// Block-read equivalents one tuple's CPU work costs.
    pub cpu_per_tuple: f64,
    /// Threads the join may use ([`crate::join::Join::threads`]), at most
    /// the machine's cores.
    pub threads: f64,
}

/// One method the planner considered.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The method.
    pub method: JoinMethod,
    /// Predicted cost in block reads; `None` when the method cannot run
    /// (no index or primary key it needs).
    pub cost: Option<f64>,
    /// Why it cannot run, or how it would.
    pub note: String,
    /// The left side's index the method reads, by name, when it reads one
    /// (set by [`plan_alternatives`], which prices each index).
    pub left_index: Option<String>,
    /// The right side's index the method reads, likewise.
    pub right_index: Option<String>,
}

/// The planner's answer: every candidate and the cheapest runnable one.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Every method, with its cost or why it cannot run.
    pub candidates: Vec<Candidate>,
    /// The cheapest method that can run.
    pub chosen: JoinMethod,
}

impl Plan {
    /// The chosen method's candidate.
    pub fn chosen_candidate(&self) -> Option<&Candidate> {
        self.candidates.iter().find(|c| c.method == self.chosen)
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.candidates {
            let mark = if c.method == self.chosen { "*" } else { " " };
            let through = match (&c.left_index, &c.right_index) {
                (Some(a), Some(b)) => format!(" (left {a}, right {b})"),
                (Some(a), None) => format!(" (left {a})"),
                (None, Some(b)) => format!(" (right {b})"),
                (None, None) => String::new(),
            };
            match c.cost {
                Some(x) => writeln!(
                    f,
                    "{mark} {:<22} {:>14.0}  {}{through}",
                    c.method.name(),
                    x,
                    c.note
                )?,
                None => writeln!(f, "{mark} {:<22} {:>14}  {}", c.method.name(), "-", c.note)?,
            }
        }
        write!(f, "chosen: {}", self.chosen.name())
    }
}

fn scan(s: &SideStats, block: f64) -> f64 {
    (s.rows * s.row_bytes / block).max(1.0)
}

/// Passes over its input an external sort or partitioning of `bytes`
/// makes beyond the first read, given `mem` bytes.
fn extra_passes(bytes: f64, mem: f64, sort: bool) -> f64 {
    if bytes <= mem {
        return 0.0;
    }
    if !sort {
        return 2.0;
    }
    // Runs of `mem` bytes merged `fan` at a time.
    let runs = (bytes / mem).ceil();
    let fan = (mem * 2.0 / 32768.0).max(2.0);
    let merges = (runs.ln() / fan.ln()).ceil().max(1.0);
    2.0 * merges
}

/// A point lookup's cost on a side through its primary key: empty (z0)
/// and non-empty (z1).
fn pk_lookup(s: &SideStats, p: f64) -> (f64, f64) {
    let z0 = s.levels * p;
    (z0, z0 + 1.0)
}

/// An index lookup's cost (z0 empty, z1 with its rows) by the study's
/// table, where reading the rows costs d·(L·p + 1) unless a synchronous
/// index covers them.
fn index_lookup(s: &SideStats, i: &IndexStats, block: f64, p: f64) -> (f64, f64) {
    let l_i = i.levels.max(1.0);
    let d = i.keys_per_value.max(1.0);
    let e_blocks = (i.entry_bytes / block).max(0.0);
    let z0 = l_i * p;
    let entries = match i.kind {
        IndexKind::Eager => l_i * p + e_blocks.ceil().max(1.0),
        IndexKind::Lazy => l_i * e_blocks.ceil().max(1.0),
        IndexKind::Composite => l_i + d * e_blocks,
    };
    let rows = if i.consistency == Consistency::Synchronous && i.covering {
        0.0
    } else {
        d * (s.levels * p + 1.0)
    };
    (z0, entries + rows)
}

/// CPU of one row a nested loop finds, in scanned tuples' CPU: measured
/// on this machine (the demo's 100-row table joined through a 10,000-keys-
/// per-value index with a million rows: 1.7 µs per row found, against
/// about 0.2 µs per row a hash join scans).
const INLJ_ROW_CPU: f64 = 8.0;

/// CPU of one tuple an index walk yields, in scanned tuples' CPU: the
/// walk merges the index's levels, decodes each entry and resolves its
/// rows, where a scan hands over columns a batch at a time. Measured on the
/// joins suite's secondary joins (2026-11-27, `docs/BENCHMARKS.md`): a walk
/// of both sides' covering indexes took 0.13-0.14 s for 400,000 tuples,
/// while its reads of index blocks predict a fifth of that.
const WALK_TUPLE_CPU: f64 = 5.5;

/// CPU a lazy index's walk spends per tuple beyond another index's: each
/// value's posting list is merged at read from the fragments its writes
/// left on the levels, a copy of every posting. Measured on the joins
/// suite's six datasets (2026-12-04, `docs/BENCHMARKS.md`): walking S's
/// lazy index took 31-59 ms longer than its eager one for 200,000 rows,
/// 155-295 ns a tuple, about 4 scanned tuples' work (about 54 ns each).
const LAZY_WALK_CPU: f64 = 4.0;

/// CPU a hash join spends per output row beyond a merge join's, in
/// scanned tuples' CPU: each match is an entry found by following the
/// value's chain through the table, where a merge pairs a group held
/// together. Measured on the suite's heavily duplicated datasets: 11-15 ns
/// per output row for hash, 4.5-6.7 ns for merge, about 7 ns apart, where
/// one `cpu_per_tuple` was worth about 54 ns of that run's time (the
/// model's unit, a block read, about 5.4 µs).
const HASH_PAIR_CPU: f64 = 0.13;

/// What each thread beyond the first adds to a parallel phase's speed.
/// Fitted 2026-11-27 on 2 cores: hash joins of the `join_prof` example ran
/// 1.3-1.8x faster on two threads than on one (medians of 25), the scans'
/// threads and the consumer sharing the cores.
const PARALLEL_GAIN: f64 = 0.5;

/// How many times faster work that runs on `threads` threads goes.
fn speedup(threads: f64) -> f64 {
    1.0 + (threads - 1.0).max(0.0) * PARALLEL_GAIN
}

/// The expected output rows: the left rows times the right rows each
/// finds, as sampled.
fn output_rows(st: &JoinStats) -> f64 {
    st.left.rows * st.left_fanout.max(0.0)
}

/// Every candidate method with its predicted cost, and the cheapest.
pub fn plan(st: &JoinStats) -> Plan {
    let b = st.block_bytes.max(1.0);
    let p = st.bloom_fpr;
    let cpu = st.cpu_per_tuple;
    let (l, r) = (&st.left, &st.right);
    let (scan_l, scan_r) = (scan(l, b), scan(r, b));
    let (bytes_l, bytes_r) = (l.rows * l.tuple_bytes, r.rows * r.tuple_bytes);
    let tuples = l.rows + r.rows;
    let mut out = Vec::new();
    // Index nested loop: the outer side scanned, the inner looked up.
    // `d` inner rows per matched value: each found row is read, decoded and
    // paired, several times a scanned tuple's work (`INLJ_ROW_CPU`).
    // Work that spreads over the join's threads (scans in parts, lookups,
    // partition joins) is divided by their speed-up.
    let par = speedup(st.threads);
    let inlj = |outer: &SideStats, scan_o: f64, m: f64, z: (f64, f64), d: f64| {
        (scan_o
            + outer.rows * (m * z.1 + (1.0 - m) * z.0)
            + cpu * outer.rows * (4.0 + INLJ_ROW_CPU * m * d))
            / par
    };
    let note_none = |what: &str| Candidate {
        method: JoinMethod::Auto,
        cost: None,
        note: what.to_string(),
        left_index: None,
        right_index: None,
    };
    for (method, outer, inner, scan_o, m) in [
        (
            JoinMethod::NestedLoopPrimaryRight,
            l,
            r,
            scan_l,
            st.left_match,
        ),
        (
            JoinMethod::NestedLoopPrimaryLeft,
            r,
            l,
            scan_r,
            st.right_match,
        ),
    ] {
        let c = if inner.primary {
            Candidate {
                method,
                cost: Some(inlj(outer, scan_o, m, pk_lookup(inner, p), 1.0)),
                note: "point reads by primary key".into(),
                left_index: None,
                right_index: None,
            }
        } else {
            note_none("the inner join column is not its primary key")
        };
        out.push(Candidate { method, ..c });
    }
    for (method, outer, inner, scan_o, m) in [
        (
            JoinMethod::NestedLoopIndexRight,
            l,
            r,
            scan_l,
            st.left_match,
        ),
        (
            JoinMethod::NestedLoopIndexLeft,
            r,
            l,
            scan_r,
            st.right_match,
        ),
    ] {
        let c = match &inner.index {
            Some(i) => Candidate {
                method,
                cost: Some(inlj(
                    outer,
                    scan_o,
                    m,
                    index_lookup(inner, i, b, p),
                    i.keys_per_value.max(1.0),
                )),
                note: format!("{} {} index lookups", i.kind, i.consistency),
                left_index: None,
                right_index: None,
            },
            None => note_none("no index on the inner join column"),
        };
        out.push(Candidate { method, ..c });
    }
    // Sort-merge: each side sorted unless its order comes free.
    let half = st.memory_bytes / 2.0;
    // A primary-key side is read in order (one thread); another is sorted
    // from a scan in parts.
    let sorted_cost = |s: &SideStats, scan_s: f64, bytes: f64| {
        if s.primary {
            scan_s
        } else {
            scan_s * (1.0 + extra_passes(bytes, half, true)) / par
        }
    };
    out.push(Candidate {
        method: JoinMethod::SortMerge,
        cost: Some(
            sorted_cost(l, scan_l, bytes_l)
                + sorted_cost(r, scan_r, bytes_r)
                + cpu * tuples * (2.0 + tuples.max(2.0).log2() / 4.0),
        ),
        note: "external sort of each side not ordered by its primary key".into(),
        left_index: None,
        right_index: None,
    });
    // Sort-merge walking indexes for order: a walked side's tuples cost
    // `WALK_TUPLE_CPU`, the others' a scanned tuple's.
    let walk = |s: &SideStats, scan_s: f64, bytes: f64| -> f64 {
        match &s.index {
            Some(i) if !s.primary => {
                // A composite index holds an entry per row; the others a
                // posting list per value.
                let lists = match i.kind {
                    IndexKind::Composite => s.rows,
                    IndexKind::Eager | IndexKind::Lazy => s.rows / i.keys_per_value.max(1.0),
                };
                let entries = (lists * i.entry_bytes / b).max(1.0);
                let rows = if i.consistency == Consistency::Synchronous && i.covering {
                    0.0
                } else {
                    s.rows * (s.levels * p + 1.0)
                };
                let tuple_cpu = WALK_TUPLE_CPU
                    + if i.kind == IndexKind::Lazy {
                        LAZY_WALK_CPU
                    } else {
                        0.0
                    };
                entries + rows + cpu * s.rows * tuple_cpu
            }
            _ => sorted_cost(s, scan_s, bytes) + cpu * s.rows * 2.0,
        }
    };
    let c = if l.index.is_some() || r.index.is_some() {
        Candidate {
            method: JoinMethod::SortMergeIndex,
            cost: Some(walk(l, scan_l, bytes_l) + walk(r, scan_r, bytes_r)),
            note: "indexes walked in order instead of sorting".into(),
            left_index: None,
            right_index: None,
        }
    } else {
        note_none("no index on either join column")
    };
    out.push(Candidate {
        method: JoinMethod::SortMergeIndex,
        ..c
    });
    // Hash joins build on the smaller side.
    let (build, probe) = if bytes_l <= bytes_r {
        ((scan_l, bytes_l), (scan_r, bytes_r))
    } else {
        ((scan_r, bytes_r), (scan_l, bytes_l))
    };
    // The sides' scans and the spilled partitions' joins spread over the
    // threads; partitioning (one tuple's work each) and a hybrid join's
    // in-memory partition run on the join's thread.
    let grace_passes = 2.0;
    let pairs = cpu * output_rows(st) * HASH_PAIR_CPU;
    let scans = build.0 + probe.0;
    out.push(Candidate {
        method: JoinMethod::GraceHash,
        cost: Some(
            scans * (1.0 + grace_passes) / par + cpu * tuples * (1.0 + 2.0 / par) + pairs / par,
        ),
        note: "both sides partitioned to spill files".into(),
        left_index: None,
        right_index: None,
    });
    // Kept in memory: all of a build side that fits half the budget, else
    // one partition sized for a thread's share of it.
    let in_memory = if build.1 * 1.25 < half {
        1.0
    } else {
        (half / st.threads.max(1.0) / build.1.max(1.0)).min(1.0)
    };
    let spilled = 1.0 - in_memory;
    out.push(Candidate {
        method: JoinMethod::HybridHash,
        cost: Some(
            scans * (1.0 + grace_passes * spilled) / par
                + cpu * tuples * (1.0 + in_memory + spilled / par)
                + pairs * (in_memory + spilled / par),
        ),
        note: format!(
            "{:.0} % of the build side kept in memory",
            in_memory * 100.0
        ),
        left_index: None,
        right_index: None,
    });
    let chosen = cheapest(&out);
    Plan {
        candidates: out,
        chosen,
    }
}

/// The cheapest runnable candidate's method (a hybrid hash join when none
/// can run).
fn cheapest(candidates: &[Candidate]) -> JoinMethod {
    candidates
        .iter()
        .filter_map(|c| c.cost.map(|x| (x, c.method)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map_or(JoinMethod::HybridHash, |(_, m)| m)
}

/// The indexes a join may read, left and right, by name (`None` for a side
/// without one).
pub type IndexChoice = (Option<String>, Option<String>);

/// The sides `method` reads through an index (left, right), given whether
/// each side's join column is its primary key: a nested loop's inner side,
/// and a sort-merge's sides that are not read in primary-key order.
pub(crate) fn index_sides(method: JoinMethod, primary: (bool, bool)) -> (bool, bool) {
    match method {
        JoinMethod::NestedLoopIndexRight => (false, true),
        JoinMethod::NestedLoopIndexLeft => (true, false),
        JoinMethod::SortMergeIndex => (!primary.0, !primary.1),
        _ => (false, false),
    }
}

/// Whether `method` reads the left and the right side's index, given the
/// statistics.
fn reads_indexes(method: JoinMethod, st: &JoinStats) -> (bool, bool) {
    let (l, r) = index_sides(method, (st.left.primary, st.right.primary));
    (l && st.left.index.is_some(), r && st.right.index.is_some())
}

/// [`plan`] over several ways of reading the sides, each the statistics
/// with one index per side (a side may have several on its join column,
/// of different kinds and consistency): every method is priced with the
/// indexes that make it cheapest (the earlier alternative on a tie) and
/// names the ones it reads. Candidates keep the first alternative's order.
pub fn plan_alternatives(alternatives: &[(IndexChoice, JoinStats)]) -> Plan {
    let mut best: Vec<Candidate> = Vec::new();
    for (names, st) in alternatives {
        for mut c in plan(st).candidates {
            let (l, r) = reads_indexes(c.method, st);
            if c.cost.is_some() {
                c.left_index = names.0.clone().filter(|_| l);
                c.right_index = names.1.clone().filter(|_| r);
            }
            match best.iter_mut().find(|b| b.method == c.method) {
                Some(b) => {
                    if let Some(x) = c.cost
                        && b.cost.is_none_or(|y| x < y)
                    {
                        *b = c;
                    }
                }
                None => best.push(c),
            }
        }
    }
    let chosen = cheapest(&best);
    Plan {
        candidates: best,
        chosen,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(rows: f64, row_bytes: f64) -> SideStats {
        SideStats {
            rows,
            row_bytes,
            tuple_bytes: row_bytes,
            levels: 3.0,
            primary: false,
            index: None,
        }
    }

    fn stats(l: SideStats, r: SideStats) -> JoinStats {
        JoinStats {
            left: l,
            right: r,
            left_match: 0.8,
            right_match: 0.8,
            left_fanout: 0.8,
            block_bytes: 4096.0,
            bloom_fpr: 0.01,
            memory_bytes: 16e6,
            cpu_per_tuple: 0.001,
            threads: 1.0,
        }
    }

    fn cost(p: &Plan, m: JoinMethod) -> Option<f64> {
        p.candidates
            .iter()
            .find(|c| c.method == m)
            .and_then(|c| c.cost)
    }

    #[test]
    fn methods_without_their_access_path_cannot_run() {
        let p = plan(&stats(side(1e6, 64.0), side(1e6, 64.0)));
        assert!(cost(&p, JoinMethod::NestedLoopPrimaryRight).is_none());
        assert!(cost(&p, JoinMethod::NestedLoopIndexLeft).is_none());
        assert!(cost(&p, JoinMethod::SortMergeIndex).is_none());
        assert!(matches!(
            p.chosen,
            JoinMethod::HybridHash | JoinMethod::GraceHash | JoinMethod::SortMerge
        ));
        assert!(p.to_string().contains("chosen"));
    }

    #[test]
    fn large_entries_and_a_small_outer_side_favour_the_nested_loop() {
        // The study: at 4 KiB entries INLJ beats sort-merge and hash.
        let mut r = side(1e6, 4096.0);
        r.primary = true;
        let p = plan(&stats(side(1e5, 4096.0), r));
        assert_eq!(p.chosen, JoinMethod::NestedLoopPrimaryRight, "{p}");
        // Small entries on equal sides favour a hash join.
        let mut r = side(1e6, 32.0);
        r.primary = true;
        let p = plan(&stats(side(1e6, 32.0), r));
        assert_ne!(p.chosen, JoinMethod::NestedLoopPrimaryRight, "{p}");
    }

    #[test]
    fn a_small_outer_side_on_a_crowded_index_is_not_a_nested_loop() {
        // 100 outer rows, each matching 10,000 rows through an index: the
        // nested loop finds a million rows, a hash join scans them once.
        let mut r = side(1e6, 170.0);
        r.index = Some(IndexStats {
            kind: IndexKind::Composite,
            consistency: Consistency::Synchronous,
            covering: true,
            levels: 3.0,
            entry_bytes: 25.0,
            keys_per_value: 1e4,
        });
        let mut st = stats(side(100.0, 30.0), r);
        st.left_match = 1.0;
        st.block_bytes = 16384.0;
        let p = plan(&st);
        assert_ne!(p.chosen, JoinMethod::NestedLoopIndexRight, "{p}");
    }

    #[test]
    fn spilling_costs_more_than_fitting_and_hybrid_never_exceeds_grace() {
        let small = plan(&stats(side(1e4, 64.0), side(1e4, 64.0)));
        let big = plan(&stats(side(1e7, 64.0), side(1e7, 64.0)));
        for p in [&small, &big] {
            assert!(cost(p, JoinMethod::HybridHash) <= cost(p, JoinMethod::GraceHash));
        }
        let per_row = |p: &Plan, n: f64| cost(p, JoinMethod::SortMerge).unwrap_or(0.0) / n;
        assert!(per_row(&big, 2e7) > per_row(&small, 2e4));
    }

    #[test]
    fn a_covering_synchronous_index_is_cheaper_to_probe_than_a_validated_one() {
        let idx = |consistency, covering| IndexStats {
            kind: IndexKind::Eager,
            consistency,
            covering,
            levels: 3.0,
            entry_bytes: 40.0,
            keys_per_value: 4.0,
        };
        let mut r1 = side(1e6, 256.0);
        r1.index = Some(idx(Consistency::Synchronous, true));
        let mut r2 = side(1e6, 256.0);
        r2.index = Some(idx(Consistency::Validation, true));
        let a = plan(&stats(side(1e5, 256.0), r1));
        let b = plan(&stats(side(1e5, 256.0), r2));
        assert!(
            cost(&a, JoinMethod::NestedLoopIndexRight) < cost(&b, JoinMethod::NestedLoopIndexRight)
        );
    }

    #[test]
    fn threads_speed_up_scans_and_partitions_but_not_index_walks() {
        let idx = IndexStats {
            kind: IndexKind::Composite,
            consistency: Consistency::Synchronous,
            covering: true,
            levels: 3.0,
            entry_bytes: 24.0,
            keys_per_value: 2.0,
        };
        let mut l = side(200_000.0, 64.0);
        l.index = Some(idx.clone());
        let mut r = side(200_000.0, 64.0);
        r.index = Some(idx);
        let one = stats(l, r);
        let two = JoinStats {
            threads: 2.0,
            ..one.clone()
        };
        let (p1, p2) = (plan(&one), plan(&two));
        // Faster, but by less than the whole speed-up: partitioning stays
        // on the join's thread.
        for m in [JoinMethod::GraceHash, JoinMethod::HybridHash] {
            let (a, b) = (cost(&p1, m).expect("cost"), cost(&p2, m).expect("cost"));
            assert!(b < a && b > a / speedup(2.0), "{m:?}: {a} -> {b}");
        }
        // Both sides walked through their indexes: one thread either way.
        assert_eq!(
            cost(&p1, JoinMethod::SortMergeIndex),
            cost(&p2, JoinMethod::SortMergeIndex)
        );
        // More threads than one never cost more.
        for c in &p1.candidates {
            if let (Some(a), Some(b)) = (c.cost, cost(&p2, c.method)) {
                assert!(b <= a, "{:?}", c.method);
            }
        }
    }

    #[test]
    fn each_method_is_priced_with_its_cheapest_index_and_names_it() {
        let idx = |kind, consistency, covering| IndexStats {
            kind,
            consistency,
            covering,
            levels: 3.0,
            entry_bytes: 40.0,
            keys_per_value: 4.0,
        };
        let with = |i: IndexStats| {
            let mut r = side(1e6, 256.0);
            r.index = Some(i);
            stats(side(1e4, 256.0), r)
        };
        // The default (first) is the validated one: lookups also read rows.
        let validated = with(idx(IndexKind::Eager, Consistency::Validation, false));
        let synced = with(idx(IndexKind::Eager, Consistency::Synchronous, true));
        let alts = vec![
            ((None, Some("v".to_string())), validated.clone()),
            ((None, Some("s".to_string())), synced.clone()),
        ];
        let p = plan_alternatives(&alts);
        let (pv, ps) = (plan(&validated), plan(&synced));
        for c in &p.candidates {
            let (a, b) = (cost(&pv, c.method), cost(&ps, c.method));
            let least = match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            assert_eq!(c.cost, least, "{:?}", c.method);
            match c.method {
                JoinMethod::NestedLoopIndexRight | JoinMethod::SortMergeIndex => {
                    let want = if b < a { "s" } else { "v" };
                    assert_eq!(c.right_index.as_deref(), Some(want), "{p}");
                    assert_eq!(c.left_index, None, "{p}");
                }
                _ => assert_eq!((&c.left_index, &c.right_index), (&None, &None), "{p}"),
            }
        }
        assert!(
            cost(&ps, JoinMethod::NestedLoopIndexRight)
                < cost(&pv, JoinMethod::NestedLoopIndexRight)
        );
        assert_eq!(
            p.chosen_candidate().map(|c| c.method),
            Some(p.chosen),
            "{p}"
        );
        // One alternative is plan() itself, with the index named.
        let one = plan_alternatives(&alts[..1]);
        assert_eq!(one.chosen, pv.chosen);
        assert!(one.to_string().contains("(right v)"), "{one}");
    }

    #[test]
    fn walks_are_priced_by_what_each_index_kind_reads() {
        let walk = |kind| {
            let mut l = side(2e5, 80.0);
            l.index = Some(IndexStats {
                kind,
                consistency: Consistency::Synchronous,
                covering: true,
                levels: 2.0,
                entry_bytes: 4096.0,
                keys_per_value: 100.0,
            });
            let p = plan(&stats(l, side(2e5, 80.0)));
            cost(&p, JoinMethod::SortMergeIndex).expect("walk")
        };
        // Entries of one block each: 200,000 of them against 2,000 lists.
        assert!(walk(IndexKind::Composite) > walk(IndexKind::Eager) + 1e5);
        // A lazy index's lists are merged from fragments as they are read.
        assert!(walk(IndexKind::Lazy) > walk(IndexKind::Eager));
    }

    #[test]
    fn output_rows_decide_between_hash_and_an_index_walk() {
        // The suite's secondary joins: 200,000 rows a side, both with a
        // covering synchronous index on the join column.
        let with_index = |keys_per_value| {
            let mut s = side(2e5, 80.0);
            s.index = Some(IndexStats {
                kind: IndexKind::Composite,
                consistency: Consistency::Synchronous,
                covering: true,
                levels: 2.0,
                entry_bytes: 25.0,
                keys_per_value,
            });
            s
        };
        let mut st = stats(with_index(1.2), with_index(1.2));
        st.cpu_per_tuple = 0.01;
        st.left_fanout = 1.0;
        let few = plan(&st);
        assert!(
            matches!(few.chosen, JoinMethod::HybridHash | JoinMethod::GraceHash),
            "{few}"
        );
        // Hundreds of rows per value: the hash join's chains cost more
        // than walking both indexes in order.
        st.left_fanout = 300.0;
        let many = plan(&st);
        assert_eq!(many.chosen, JoinMethod::SortMergeIndex, "{many}");
        assert!(
            cost(&many, JoinMethod::HybridHash) > cost(&few, JoinMethod::HybridHash),
            "{few}\n{many}"
        );
    }
}
