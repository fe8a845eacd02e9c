//! The layout advisor: picks a column-group layout per level for a
//! workload under the [cost model](super::cost) (seed 001, section 6.3).
//!
//! Level 0 is always one group of all columns. Going down, each group of
//! level `i - 1` (the *parent*, with columns `R`) is split for level `i` on
//! its own, which keeps every group inside one parent (containment) and is
//! exact because a level's cost is a sum over its parents' shares:
//!
//! 1. **Fragments.** `R` is split by the projections of the operations the
//!    level serves into the smallest fragments whose columns are always
//!    co-accessed: columns are grouped by their *access signature*, the set
//!    of operations whose projection contains them ([`fragments`]). The
//!    columns that no operation touches share the empty signature and so
//!    form one fragment of their own; steps 2-3 decide whether it stays
//!    apart (it then costs only its key copies) or joins another group.
//!    Splitting a fragment further never lowers the cost (its columns pay
//!    for the same operations wherever they are), so nothing is lost.
//! 2. **Merges** and 3. **selection.** With at most
//!    [`EXACT_MAX_FRAGMENTS`] fragments the advisor finds the cheapest
//!    partition of the fragments exactly: a dynamic program over subsets
//!    (`O(3^n)`) that takes the minimum over every partition, which is what
//!    listing all `Bell(n)` partitions would find, without listing them.
//!    With more fragments it searches greedily: starting from the
//!    fragments, it repeatedly applies the merge of two groups with the
//!    largest cost reduction until no merge reduces the cost, then moves
//!    single fragments between groups while that helps. Ties go to fewer
//!    groups.
//!
//! A level with no recorded operations (or none touching `R`) keeps the
//! parent's grouping: no split without evidence.
//!
//! **Looking down.** Section 6.3 decides level by level, and a split made
//! for one level binds every deeper level, which cannot re-merge: a level
//! whose scans favour columns would split a group that the point reads of
//! the next level want whole. So, per parent group and level, the advisor
//! compares the split found above against keeping the group whole at that
//! level, each with the best continuation below (memoised per level and
//! group), and keeps the cheaper. Splitting everywhere is the paper's
//! algorithm and keeping everything whole is a pure row store, so the
//! advice never costs more than a pure row store, nor (because fragments
//! never cost more than single columns) than a pure column store.
//!
//! Operations recorded below the deepest advised level are served by the
//! last level's layout (levels past the last repeat it, as in the engine
//! and in [`layout_cost`](super::cost::layout_cost)), so the last level is
//! chosen for all of them.
//!
//! **Cost of the search.** One split of a parent group with `n` fragments
//! and `k` distinct projections costs `O(3^n)` group evaluations when
//! exact, `O(n^2)` merge evaluations and a few `O(n^2)` move passes when
//! greedy, each evaluation `O(k)`. Splits are memoised per level and
//! group, and the groups explored stay in the low thousands for 100-200
//! columns and 8-12 levels with 15-30 projections per level (tens to
//! hundreds of milliseconds in an unoptimised test build).

mod partition;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use self::partition::{Local, better};
use super::cost::{
    ColumnSet, CostBreakdown, ModelParams, OpKind, OpStat, Partition, Workload, layout_breakdown,
};

/// The most fragments a parent group may split into for the advisor to
/// search its partitions exactly; above it the search is greedy.
pub const EXACT_MAX_FRAGMENTS: usize = 12;

/// A layout the advisor recommends, with its predicted cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Advice {
    /// One partition per level; index 0 is all columns in one group. Groups
    /// are ordered by their first column.
    pub layout: Vec<Partition>,
    /// The predicted cost of the workload under `layout`
    /// ([`layout_cost`](super::cost::layout_cost)).
    pub cost: f64,
    /// The predicted cost per level (as [`layout_breakdown`]), including
    /// levels of the workload past the last advised level.
    pub breakdown: Vec<CostBreakdown>,
}

/// Advises a layout of `levels` levels (at least 1) for the workload `w`
/// on the table and tree `p`; see the module documentation for the search.
/// The layout always passes [`check_containment`]. Panics if `p` is
/// invalid ([`ModelParams::validate`]).
pub fn advise(p: &ModelParams, w: &Workload, levels: usize) -> Advice {
    p.assert_valid();
    let levels = levels.max(1);
    let mut search = Search::new(p, w, levels);
    let whole = p.whole_row();
    let below = search.best(1, &whole);
    let mut layout: Vec<Partition> = vec![Vec::new(); levels];
    layout[0].push(whole.clone());
    search.emit(1, &whole, &mut layout);
    for level in &mut layout {
        level.sort_by_key(|g| g[0]);
    }
    debug_assert_eq!(check_containment(&layout, p.columns), Ok(()));
    let breakdown = layout_breakdown(p, &layout, w);
    let cost: f64 = breakdown.iter().map(|b| b.total).sum();
    debug_assert!({
        let level0 = super::cost::level_cost(p, &layout[0], w.inserts, w.level(0));
        // With one level, level 0's whole row also serves the levels below.
        let extra: f64 = if levels == 1 {
            (1..w.levels.len())
                .map(|i| super::cost::level_cost(p, &layout[0], w.inserts, w.level(i)))
                .sum()
        } else {
            0.0
        };
        let predicted = level0 + below + extra;
        (predicted - cost).abs() <= 1e-6 * cost.abs().max(1.0)
    });
    Advice {
        layout,
        cost,
        breakdown,
    }
}

/// Checks that `layout` is a valid layout of `columns` columns: at least
/// one level; every level a partition of `0..columns` into non-empty
/// groups, each sorted ascending without duplicates; level 0 a single
/// group; every group of a deeper level inside one group of the level
/// above.
pub fn check_containment(layout: &[Partition], columns: usize) -> Result<(), String> {
    if columns == 0 {
        return Err("a table has at least one column".into());
    }
    if layout.is_empty() {
        return Err("a layout has at least level 0".into());
    }
    let mut parent_of: Vec<usize> = Vec::new();
    for (i, level) in layout.iter().enumerate() {
        let mut group_of = vec![usize::MAX; columns];
        for (j, g) in level.iter().enumerate() {
            if g.is_empty() {
                return Err(format!("level {i}: group {j} is empty"));
            }
            if g.windows(2).any(|w| w[0] >= w[1]) {
                return Err(format!(
                    "level {i}: group {j} {g:?} is not sorted without duplicates"
                ));
            }
            for &c in g {
                let c = c as usize;
                if c >= columns {
                    return Err(format!("level {i}: column {c} is not below {columns}"));
                }
                if group_of[c] != usize::MAX {
                    return Err(format!("level {i}: column {c} is in two groups"));
                }
                group_of[c] = j;
            }
            if i > 0 {
                let parent = parent_of[g[0] as usize];
                if g.iter().any(|&c| parent_of[c as usize] != parent) {
                    return Err(format!(
                        "level {i}: group {g:?} is not inside one group of level {}",
                        i - 1
                    ));
                }
            }
        }
        if let Some(c) = group_of.iter().position(|&g| g == usize::MAX) {
            return Err(format!("level {i}: column {c} is in no group"));
        }
        if i == 0 && level.len() != 1 {
            return Err(format!(
                "level 0 has {} groups, not one whole row",
                level.len()
            ));
        }
        parent_of = group_of;
    }
    Ok(())
}

/// Step 1 of section 6.3: splits `parent` (sorted columns) by
/// `projections` into the smallest fragments whose columns are always
/// co-accessed, by grouping columns with the same access signature (the set
/// of projections containing them). Columns no projection touches form one
/// fragment. Fragments are ordered by their first column.
///
/// The paper's example: `R = {a1..a4}`, `Π1 = {a2,a3,a4}`, `Π2 = {a1,a2}`,
/// `Π3 = R` gives `{a1}, {a2}, {a3,a4}`.
pub fn fragments(parent: &[u32], projections: &[ColumnSet]) -> Partition {
    let words = projections.len().div_ceil(64).max(1);
    let mut index: HashMap<Vec<u64>, usize> = HashMap::new();
    let mut out: Partition = Vec::new();
    for &c in parent {
        let mut sig = vec![0u64; words];
        for (k, proj) in projections.iter().enumerate() {
            if proj.contains(&c) {
                sig[k / 64] |= 1 << (k % 64);
            }
        }
        let next = out.len();
        let f = *index.entry(sig).or_insert(next);
        if f == next {
            out.push(Vec::new());
        }
        out[f].push(c);
    }
    out
}

/// One operation class of a level as the search sees it: its columns
/// (sorted, deduplicated, below `c`) and what it costs per group it
/// touches (`per_group`, point reads) and per unit of size of those groups
/// (`per_unit`, scans and updates).
#[derive(Clone, Debug)]
struct LevelOp {
    columns: Vec<u32>,
    per_group: f64,
    per_unit: f64,
}

/// What the search decided for one parent group at one level.
struct Decision {
    /// The cost of this level's share and everything below it.
    cost: f64,
    /// The groups of this level inside the parent.
    parts: Partition,
}

/// The state of one [`advise`] call.
struct Search<'a> {
    p: &'a ModelParams,
    levels: usize,
    key_units: f64,
    column_units: Vec<f64>,
    /// Per level (index = level, 0 unused): its operations.
    ops: Vec<Vec<LevelOp>>,
    /// Per level: the insert cost each group adds.
    per_group_insert: Vec<f64>,
    memo: HashMap<(usize, ColumnSet), Decision>,
}

impl<'a> Search<'a> {
    fn new(p: &'a ModelParams, w: &Workload, levels: usize) -> Self {
        let model_levels = levels.max(w.levels.len());
        let mut ops = vec![Vec::new(); levels];
        let mut per_group_insert = vec![0.0; levels];
        for (i, level_ops) in ops.iter_mut().enumerate().skip(1) {
            // The last level serves every level below it too.
            let deepest = if i + 1 == levels { model_levels } else { i + 1 };
            let stats: Vec<&OpStat> = (i..deepest).flat_map(|j| w.level(j)).collect();
            *level_ops = level_ops_of(p, &stats);
            per_group_insert[i] = (deepest - i) as f64 * p.insert_cost_per_group(w.inserts);
        }
        Search {
            p,
            levels,
            key_units: p.key_units(),
            column_units: (0..p.columns as u32).map(|c| p.column_units(c)).collect(),
            ops,
            per_group_insert,
            memo: HashMap::new(),
        }
    }

    /// The least cost of levels `level..` for the columns of the parent
    /// group `r`, memoised with the decision that reaches it.
    fn best(&mut self, level: usize, r: &[u32]) -> f64 {
        if level >= self.levels {
            return 0.0;
        }
        if let Some(d) = self.memo.get(&(level, r.to_vec())) {
            return d.cost;
        }
        let split = self.split(level, r);
        let keep = split.whole_cost + self.best(level + 1, r);
        let mut decision = Decision {
            cost: keep,
            parts: vec![r.to_vec()],
        };
        if split.parts.len() > 1 {
            let mut cost = split.cost;
            for part in &split.parts {
                cost += self.best(level + 1, part);
            }
            if better((cost, split.parts.len()), (keep, 1)) {
                decision = Decision {
                    cost,
                    parts: split.parts,
                };
            }
        }
        let cost = decision.cost;
        self.memo.insert((level, r.to_vec()), decision);
        cost
    }

    /// Writes the groups decided for `r` at `level` and below into
    /// `layout`.
    fn emit(&self, level: usize, r: &[u32], layout: &mut [Partition]) {
        if level >= self.levels {
            return;
        }
        let d = &self.memo[&(level, r.to_vec())];
        for part in &d.parts {
            layout[level].push(part.clone());
            self.emit(level + 1, part, layout);
        }
    }

    /// Section 6.3 for one parent group `r` at one level, without looking
    /// down: the cheapest split of `r` for this level alone.
    fn split(&self, level: usize, r: &[u32]) -> Split {
        let local = Local::new(self, level, r);
        let whole_cost = local.whole_cost();
        let n = local.fragments.len();
        if n <= 1 {
            return Split {
                parts: vec![r.to_vec()],
                cost: whole_cost,
                whole_cost,
            };
        }
        let (groups, cost) = if n <= EXACT_MAX_FRAGMENTS {
            local.exact()
        } else {
            local.greedy()
        };
        let mut parts: Partition = groups
            .iter()
            .map(|frags| {
                let mut cols: Vec<u32> = frags
                    .iter()
                    .flat_map(|&f| local.fragments[f].columns.iter().copied())
                    .collect();
                cols.sort_unstable();
                cols
            })
            .collect();
        parts.sort_by_key(|g| g[0]);
        Split {
            parts,
            cost,
            whole_cost,
        }
    }
}

/// The operations of one level, deduplicated by projection, with the
/// columns outside `0..c` and the operations that cost nothing dropped.
fn level_ops_of(p: &ModelParams, stats: &[&OpStat]) -> Vec<LevelOp> {
    let mut index: HashMap<Vec<u32>, usize> = HashMap::new();
    let mut out: Vec<LevelOp> = Vec::new();
    for s in stats {
        let per_group = if s.kind == OpKind::Point {
            s.count
        } else {
            0.0
        };
        let per_unit = s.count * p.per_unit_cost(s.kind, s.entries);
        if per_group == 0.0 && per_unit == 0.0 {
            continue;
        }
        let mut columns: Vec<u32> = s
            .columns
            .iter()
            .copied()
            .filter(|&c| (c as usize) < p.columns)
            .collect();
        columns.sort_unstable();
        columns.dedup();
        if columns.is_empty() {
            continue;
        }
        let next = out.len();
        let k = *index.entry(columns.clone()).or_insert(next);
        if k == next {
            out.push(LevelOp {
                columns,
                per_group: 0.0,
                per_unit: 0.0,
            });
        }
        out[k].per_group += per_group;
        out[k].per_unit += per_unit;
    }
    out
}

/// The best split of one parent group for one level.
struct Split {
    parts: Partition,
    /// The level's cost of `parts` (inside the parent).
    cost: f64,
    /// The level's cost of the parent kept whole.
    whole_cost: f64,
}
