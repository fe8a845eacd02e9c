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

use std::collections::HashMap;

use super::cost::{
    ColumnSet, CostBreakdown, ModelParams, OpKind, OpStat, Partition, Workload, layout_breakdown,
};

/// The most fragments a parent group may split into for the advisor to
/// search its partitions exactly; above it the search is greedy.
pub const EXACT_MAX_FRAGMENTS: usize = 12;

/// Passes of single-fragment moves after the greedy merges.
const MAX_MOVE_PASSES: usize = 8;

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

/// A fragment of a parent group.
struct Fragment {
    columns: Vec<u32>,
    /// The summed column units (without the key).
    units: f64,
    /// The local operations touching it, as a bitset of `words` words.
    sig: Vec<u64>,
}

/// One parent group at one level: its fragments and the local operations
/// (those touching it, deduplicated by their projection inside it).
struct Local {
    fragments: Vec<Fragment>,
    per_group: Vec<f64>,
    per_unit: Vec<f64>,
    words: usize,
    key_units: f64,
    insert: f64,
}

impl Local {
    fn new(s: &Search<'_>, level: usize, r: &[u32]) -> Local {
        let mut pos = vec![usize::MAX; s.p.columns];
        for (j, &c) in r.iter().enumerate() {
            pos[c as usize] = j;
        }
        let col_words = r.len().div_ceil(64).max(1);
        // Local operations: projections restricted to r, deduplicated.
        let mut index: HashMap<Vec<u64>, usize> = HashMap::new();
        let mut projections: Vec<Vec<u64>> = Vec::new();
        let mut per_group = Vec::new();
        let mut per_unit = Vec::new();
        for op in &s.ops[level] {
            let mut bits = vec![0u64; col_words];
            let mut any = false;
            for &c in &op.columns {
                let j = pos[c as usize];
                if j != usize::MAX {
                    bits[j / 64] |= 1 << (j % 64);
                    any = true;
                }
            }
            if !any {
                continue;
            }
            let next = projections.len();
            let k = *index.entry(bits.clone()).or_insert(next);
            if k == next {
                projections.push(bits);
                per_group.push(0.0);
                per_unit.push(0.0);
            }
            per_group[k] += op.per_group;
            per_unit[k] += op.per_unit;
        }
        let words = projections.len().div_ceil(64).max(1);
        let mut fragments: Vec<Fragment> = Vec::new();
        if !projections.is_empty() {
            let mut by_sig: HashMap<Vec<u64>, usize> = HashMap::new();
            for (j, &c) in r.iter().enumerate() {
                let mut sig = vec![0u64; words];
                for (k, proj) in projections.iter().enumerate() {
                    if proj[j / 64] >> (j % 64) & 1 == 1 {
                        sig[k / 64] |= 1 << (k % 64);
                    }
                }
                let next = fragments.len();
                let f = *by_sig.entry(sig.clone()).or_insert(next);
                if f == next {
                    fragments.push(Fragment {
                        columns: Vec::new(),
                        units: 0.0,
                        sig,
                    });
                }
                fragments[f].columns.push(c);
                fragments[f].units += s.column_units[c as usize];
            }
        }
        Local {
            fragments,
            per_group,
            per_unit,
            words,
            key_units: s.key_units,
            insert: s.per_group_insert[level],
        }
    }

    /// The level's cost of one group whose operations are `sig` and whose
    /// columns weigh `units` (without the key).
    fn group_cost(&self, sig: &[u64], units: f64) -> f64 {
        let (mut per_group, mut per_unit) = (0.0, 0.0);
        for (w, &word) in sig.iter().enumerate() {
            let mut x = word;
            while x != 0 {
                let k = w * 64 + x.trailing_zeros() as usize;
                per_group += self.per_group[k];
                per_unit += self.per_unit[k];
                x &= x - 1;
            }
        }
        self.insert + per_group + (self.key_units + units) * per_unit
    }

    /// The cost of a group made of the fragments `frags`.
    fn cost_of(&self, frags: &[usize]) -> f64 {
        let mut sig = vec![0u64; self.words];
        let mut units = 0.0;
        for &f in frags {
            or_into(&mut sig, &self.fragments[f].sig);
            units += self.fragments[f].units;
        }
        self.group_cost(&sig, units)
    }

    /// The level's cost of the whole parent as one group.
    fn whole_cost(&self) -> f64 {
        let all: Vec<usize> = (0..self.fragments.len()).collect();
        if all.is_empty() {
            return self.insert;
        }
        self.cost_of(&all)
    }

    /// The cheapest partition of the fragments, exactly: `best[S]` is the
    /// cheapest partition of the fragment set `S`, found by choosing the
    /// group holding `S`'s lowest fragment among all subsets of `S`.
    fn exact(&self) -> (Vec<Vec<usize>>, f64) {
        let n = self.fragments.len();
        let subsets = 1usize << n;
        let words = self.words;
        let mut sig = vec![0u64; subsets * words];
        let mut units = vec![0.0; subsets];
        let mut cost = vec![0.0; subsets];
        for s in 1..subsets {
            let low = s.trailing_zeros() as usize;
            let rest = s & (s - 1);
            let frag = &self.fragments[low];
            for w in 0..words {
                sig[s * words + w] = sig[rest * words + w] | frag.sig[w];
            }
            units[s] = units[rest] + frag.units;
            cost[s] = self.group_cost(&sig[s * words..(s + 1) * words], units[s]);
        }
        let mut best = vec![(0.0f64, 0usize); subsets];
        let mut choice = vec![0usize; subsets];
        for s in 1..subsets {
            let low = s & s.wrapping_neg();
            let rest = s ^ low;
            let mut top = (f64::INFINITY, usize::MAX);
            let mut sub = rest;
            loop {
                let group = sub | low;
                let (c, g) = best[s ^ group];
                let candidate = (cost[group] + c, g + 1);
                if better(candidate, top) {
                    top = candidate;
                    choice[s] = group;
                }
                if sub == 0 {
                    break;
                }
                sub = (sub - 1) & rest;
            }
            best[s] = top;
        }
        let mut groups = Vec::new();
        let mut s = subsets - 1;
        while s != 0 {
            let group = choice[s];
            groups.push((0..n).filter(|f| group >> f & 1 == 1).collect());
            s ^= group;
        }
        (groups, best[subsets - 1].0)
    }

    /// A greedy partition of the fragments: agglomerative merges by largest
    /// cost reduction, then single-fragment moves.
    fn greedy(&self) -> (Vec<Vec<usize>>, f64) {
        let n = self.fragments.len();
        let mut members: Vec<Vec<usize>> = (0..n).map(|f| vec![f]).collect();
        let mut alive = vec![true; n];
        let mut sigs: Vec<Vec<u64>> = self.fragments.iter().map(|f| f.sig.clone()).collect();
        let mut units: Vec<f64> = self.fragments.iter().map(|f| f.units).collect();
        let mut costs: Vec<f64> = (0..n)
            .map(|i| self.group_cost(&sigs[i], units[i]))
            .collect();
        let mut scratch = vec![0u64; self.words];
        let mut merged_cost = |sigs: &[Vec<u64>], units: &[f64], i: usize, j: usize| {
            scratch.copy_from_slice(&sigs[i]);
            or_into(&mut scratch, &sigs[j]);
            self.group_cost(&scratch, units[i] + units[j])
        };
        // delta[i * n + j] (i < j): the change in cost of merging i and j.
        let mut delta = vec![f64::INFINITY; n * n];
        for i in 0..n {
            for j in i + 1..n {
                delta[i * n + j] = merged_cost(&sigs, &units, i, j) - costs[i] - costs[j];
            }
        }
        loop {
            let mut pick: Option<(usize, usize)> = None;
            let mut least = f64::INFINITY;
            for i in (0..n).filter(|&i| alive[i]) {
                for j in (i + 1..n).filter(|&j| alive[j]) {
                    if delta[i * n + j] < least {
                        least = delta[i * n + j];
                        pick = Some((i, j));
                    }
                }
            }
            let Some((i, j)) = pick else { break };
            if least > tolerance(costs[i] + costs[j]) {
                break;
            }
            let moved = std::mem::take(&mut members[j]);
            members[i].extend(moved);
            let sj = std::mem::take(&mut sigs[j]);
            or_into(&mut sigs[i], &sj);
            units[i] += units[j];
            costs[i] = self.group_cost(&sigs[i], units[i]);
            alive[j] = false;
            for x in (0..n).filter(|&x| alive[x] && x != i) {
                let (a, b) = if x < i { (x, i) } else { (i, x) };
                delta[a * n + b] = merged_cost(&sigs, &units, a, b) - costs[a] - costs[b];
            }
        }
        let mut groups: Vec<Vec<usize>> = members.into_iter().filter(|m| !m.is_empty()).collect();
        self.improve_by_moves(&mut groups);
        let cost = groups.iter().map(|g| self.cost_of(g)).sum();
        (groups, cost)
    }

    /// Moves single fragments to another group (or to a group of their
    /// own) while a move lowers the cost.
    fn improve_by_moves(&self, groups: &mut Vec<Vec<usize>>) {
        let mut costs: Vec<f64> = groups.iter().map(|g| self.cost_of(g)).collect();
        for _ in 0..MAX_MOVE_PASSES {
            let mut improved = false;
            for f in 0..self.fragments.len() {
                let Some(from) = groups.iter().position(|g| g.contains(&f)) else {
                    continue;
                };
                let rest: Vec<usize> = groups[from].iter().copied().filter(|&x| x != f).collect();
                let rest_cost = if rest.is_empty() {
                    0.0
                } else {
                    self.cost_of(&rest)
                };
                // Gain of moving f to `to` (None: a group of its own).
                let mut best: Option<(Option<usize>, f64)> = None;
                let mut consider = |to: Option<usize>, new_cost: f64, old_cost: f64| {
                    let gain = costs[from] + old_cost - rest_cost - new_cost;
                    if gain > tolerance(costs[from] + old_cost)
                        && best.is_none_or(|(_, g)| gain > g)
                    {
                        best = Some((to, gain));
                    }
                };
                if !rest.is_empty() {
                    consider(None, self.cost_of(&[f]), 0.0);
                }
                for (to, g) in groups.iter().enumerate() {
                    if to == from {
                        continue;
                    }
                    let mut with: Vec<usize> = g.clone();
                    with.push(f);
                    consider(Some(to), self.cost_of(&with), costs[to]);
                }
                let Some((to, _)) = best else { continue };
                improved = true;
                groups[from] = rest;
                costs[from] = rest_cost;
                match to {
                    Some(to) => {
                        groups[to].push(f);
                        costs[to] = self.cost_of(&groups[to]);
                    }
                    None => {
                        groups.push(vec![f]);
                        costs.push(self.cost_of(&[f]));
                    }
                }
                if groups[from].is_empty() {
                    groups.swap_remove(from);
                    costs.swap_remove(from);
                }
            }
            if !improved {
                break;
            }
        }
    }
}

fn or_into(into: &mut [u64], from: &[u64]) {
    for (a, b) in into.iter_mut().zip(from) {
        *a |= b;
    }
}

/// The slack below which two costs near `scale` count as equal.
fn tolerance(scale: f64) -> f64 {
    1e-12 * scale.abs()
}

/// Whether `(cost, groups)` `a` beats `b`: clearly cheaper, or as cheap
/// with fewer groups.
fn better(a: (f64, usize), b: (f64, usize)) -> bool {
    if b.0.is_infinite() {
        return a.0 < b.0 || (a.0 == b.0 && a.1 < b.1);
    }
    let slack = tolerance(a.0.abs().max(b.0.abs()));
    a.0 < b.0 - slack || (a.0 <= b.0 + slack && a.1 < b.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::cost::{layout_cost, level_cost};

    /// xorshift64*: a small seeded generator for randomized tests.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }

        fn subset(&mut self, c: usize) -> ColumnSet {
            loop {
                let s: ColumnSet = match self.below(3) {
                    // A contiguous range, as real projections often are.
                    0 => {
                        let a = self.below(c as u64) as u32;
                        let b = self.below(c as u64) as u32;
                        (a.min(b)..=a.max(b)).collect()
                    }
                    // A sparse random subset.
                    1 => (0..c as u32).filter(|_| self.below(4) == 0).collect(),
                    // A dense random subset.
                    _ => (0..c as u32).filter(|_| self.below(4) != 0).collect(),
                };
                if !s.is_empty() {
                    return s;
                }
            }
        }
    }

    fn random_workload(rng: &mut Rng, c: usize, levels: usize, per_level: usize) -> Workload {
        let mut w = Workload {
            inserts: (rng.below(2000) as f64) * rng.unit(),
            levels: Vec::new(),
        };
        for i in 0..levels {
            let n = rng.below(per_level as u64 + 1) as usize;
            let ops = (0..n)
                .map(|_| {
                    let cols = rng.subset(c);
                    let count = 1.0 + rng.below(100) as f64;
                    match rng.below(3) {
                        0 => OpStat::point(cols, count * 10.0),
                        1 => OpStat::scan(cols, count / 10.0, (10u64 << i) as f64 * rng.unit()),
                        _ => OpStat::update(cols, count),
                    }
                })
                .collect();
            w.levels.push(ops);
        }
        w
    }

    fn random_params(rng: &mut Rng, c: usize) -> ModelParams {
        if rng.below(2) == 0 {
            ModelParams::uniform(
                c,
                2.0 + rng.below(9) as f64,
                4.0 + rng.below(60) as f64,
                4.0,
            )
        } else {
            ModelParams {
                columns: c,
                size_ratio: 2.0 + rng.below(9) as f64,
                entries_per_block: 4.0 + rng.below(60) as f64,
                column_bytes: (0..c).map(|_| 1.0 + rng.below(16) as f64).collect(),
                key_bytes: 1.0 + rng.below(16) as f64,
            }
        }
    }

    fn pure_row(c: usize, levels: usize) -> Vec<Partition> {
        vec![vec![(0..c as u32).collect()]; levels]
    }

    fn pure_column(c: usize, levels: usize) -> Vec<Partition> {
        let mut layout = vec![(0..c as u32).map(|x| vec![x]).collect::<Partition>(); levels];
        layout[0] = vec![(0..c as u32).collect()];
        layout
    }

    fn not_worse(a: f64, b: f64) -> bool {
        a <= b + 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn fragments_follow_the_papers_split_example() {
        // R = {a1..a4} = {0..3}, Π1 = {a2,a3,a4}, Π2 = {a1,a2}, Π3 = R.
        let projections = vec![vec![1, 2, 3], vec![0, 1], vec![0, 1, 2, 3]];
        assert_eq!(
            fragments(&[0, 1, 2, 3], &projections),
            vec![vec![0], vec![1], vec![2, 3]]
        );
        // Untouched columns form one fragment of their own.
        assert_eq!(
            fragments(&[0, 1, 2, 3, 4, 5], &[vec![1, 3]]),
            vec![vec![0, 2, 4, 5], vec![1, 3]]
        );
    }

    #[test]
    fn whole_row_point_reads_keep_one_group_per_level() {
        let p = ModelParams::uniform(8, 10.0, 32.0, 4.0);
        let all: ColumnSet = (0..8).collect();
        let w = Workload {
            inserts: 1000.0,
            levels: (0..5)
                .map(|_| vec![OpStat::point(all.clone(), 500.0)])
                .collect(),
        };
        let advice = advise(&p, &w, 5);
        assert_eq!(advice.layout, pure_row(8, 5));
        assert_eq!(check_containment(&advice.layout, 8), Ok(()));
    }

    #[test]
    fn single_column_scans_split_into_columns() {
        let c = 6;
        let p = ModelParams::uniform(c, 10.0, 32.0, 4.0);
        // Level 2 scans each column alone over many entries; levels 1 and 3
        // record nothing.
        let scans = (0..c as u32)
            .map(|x| OpStat::scan(vec![x], 1.0, 1e6))
            .collect();
        let w = Workload {
            inserts: 100.0,
            levels: vec![vec![], vec![], scans, vec![]],
        };
        let advice = advise(&p, &w, 4);
        let columns: Partition = (0..c as u32).map(|x| vec![x]).collect();
        assert_eq!(
            advice.layout[1],
            vec![(0..c as u32).collect::<ColumnSet>()],
            "no evidence at 1"
        );
        assert_eq!(advice.layout[2], columns);
        assert_eq!(
            advice.layout[3], columns,
            "level 3 keeps its parent's grouping"
        );
    }

    #[test]
    fn containment_checks_catch_bad_layouts() {
        let ok = vec![
            vec![vec![0, 1, 2, 3]],
            vec![vec![0, 1], vec![2, 3]],
            vec![vec![0], vec![1], vec![2, 3]],
        ];
        assert_eq!(check_containment(&ok, 4), Ok(()));
        let bad: Vec<Vec<Partition>> = vec![
            vec![],
            vec![vec![vec![0, 1], vec![2, 3]]], // level 0 split
            vec![vec![vec![0, 1, 2, 3]], vec![vec![0, 1], vec![3]]], // column 2 missing
            vec![vec![vec![0, 1, 2, 3]], vec![vec![0, 1], vec![1, 2, 3]]], // column 1 twice
            vec![vec![vec![0, 1, 2, 3]], vec![vec![1, 0], vec![2, 3]]], // unsorted
            vec![vec![vec![0, 1, 2, 3]], vec![vec![0, 1], vec![2, 3], vec![]]], // empty group
            vec![vec![vec![0, 1, 2, 3, 4]]],    // column 4 out of range
            vec![
                ok[0].clone(),
                ok[1].clone(),
                vec![vec![0], vec![1, 2], vec![3]],
            ], // straddles
        ];
        for layout in &bad {
            assert!(check_containment(layout, 4).is_err(), "{layout:?}");
        }
    }

    /// All partitions of `items`, for brute force on small instances.
    fn all_partitions(items: &[u32]) -> Vec<Partition> {
        let Some((&first, rest)) = items.split_first() else {
            return vec![vec![]];
        };
        let mut out = Vec::new();
        for partition in all_partitions(rest) {
            for i in 0..partition.len() {
                let mut with = partition.clone();
                with[i].insert(0, first);
                out.push(with);
            }
            let mut alone = partition;
            alone.insert(0, vec![first]);
            out.push(alone);
        }
        out
    }

    #[test]
    fn one_level_advice_is_the_brute_force_optimum() {
        // With one free level the advice must be the cheapest of all
        // Bell(c) partitions of the columns: fragments lose nothing and the
        // exact search finds the best partition of the fragments.
        let mut rng = Rng(0x5eed_0001);
        for _ in 0..60 {
            let c = 1 + rng.below(7) as usize;
            let p = random_params(&mut rng, c);
            let w = random_workload(&mut rng, c, 2, 6);
            let advice = advise(&p, &w, 2);
            let whole: ColumnSet = (0..c as u32).collect();
            let brute = all_partitions(&whole)
                .iter()
                .map(|part| level_cost(&p, part, w.inserts, w.level(1)))
                .fold(f64::INFINITY, f64::min);
            let got = level_cost(&p, &advice.layout[1], w.inserts, w.level(1));
            assert!(
                (got - brute).abs() <= 1e-9 * brute.abs().max(1.0),
                "{got} vs {brute}: {w:?}"
            );
        }
    }

    #[test]
    fn greedy_is_never_better_than_exact_nor_worse_than_fragments() {
        let mut rng = Rng(0x5eed_0002);
        for _ in 0..100 {
            let c = 2 + rng.below(14) as usize;
            let p = random_params(&mut rng, c);
            let w = random_workload(&mut rng, c, 2, 8);
            let search = Search::new(&p, &w, 2);
            let whole: ColumnSet = (0..c as u32).collect();
            let local = Local::new(&search, 1, &whole);
            let n = local.fragments.len();
            if n == 0 || n > EXACT_MAX_FRAGMENTS {
                continue;
            }
            let (_, exact) = local.exact();
            let (groups, greedy) = local.greedy();
            let singles: f64 = (0..n).map(|f| local.cost_of(&[f])).sum();
            let mut covered: Vec<usize> = groups.concat();
            covered.sort_unstable();
            assert_eq!(
                covered,
                (0..n).collect::<Vec<_>>(),
                "greedy covers every fragment once"
            );
            assert!(not_worse(exact, greedy), "exact {exact} > greedy {greedy}");
            assert!(
                not_worse(greedy, singles),
                "greedy {greedy} > fragments {singles}"
            );
        }
    }

    #[test]
    fn random_workloads_respect_containment_and_beat_row_and_column() {
        let mut rng = Rng(0x5eed_0003);
        for round in 0..150 {
            // Some rounds are wide enough for the greedy search.
            let c = if round % 5 == 0 {
                20 + rng.below(30)
            } else {
                1 + rng.below(16)
            } as usize;
            let levels = 1 + rng.below(7) as usize;
            let recorded = rng.below(levels as u64 + 2) as usize;
            let p = random_params(&mut rng, c);
            let w = random_workload(&mut rng, c, recorded, 10);
            let advice = advise(&p, &w, levels);
            assert_eq!(advice.layout.len(), levels);
            assert_eq!(
                check_containment(&advice.layout, c),
                Ok(()),
                "{:?}",
                advice.layout
            );
            let cost = layout_cost(&p, &advice.layout, &w);
            assert!((cost - advice.cost).abs() <= 1e-9 * cost.max(1.0));
            let total: f64 = advice.breakdown.iter().map(|b| b.total).sum();
            assert!((total - advice.cost).abs() <= 1e-9 * cost.max(1.0));
            let row = layout_cost(&p, &pure_row(c, levels), &w);
            let column = layout_cost(&p, &pure_column(c, levels), &w);
            assert!(
                not_worse(advice.cost, row),
                "round {round}: {} > row {row}",
                advice.cost
            );
            assert!(
                not_worse(advice.cost, column),
                "round {round}: {} > column {column}",
                advice.cost
            );
        }
    }

    /// The paper's HW benchmark (section 7, `laser.md`): 30 4-byte columns
    /// and an 8-byte key, T = 2, 8 levels, 4 KiB blocks (B = 4096/128 =
    /// 32). Inserts at 10,000/s; point reads of all columns hit the top
    /// levels, along with updates of one random column; point reads of
    /// columns 16-30 hit the middle levels; scans of 21-30 (5 % of keys)
    /// and 28-30 (50 % of keys) reach the bottom levels, whose levels hold
    /// 10^6·2^i entries.
    #[test]
    fn htap_workload_rows_on_top_and_narrow_groups_at_the_bottom() {
        let c = 30;
        let p = ModelParams {
            columns: c,
            size_ratio: 2.0,
            entries_per_block: 32.0,
            column_bytes: vec![4.0; c],
            key_bytes: 8.0,
        };
        let range = |a: u32, b: u32| -> ColumnSet { (a - 1..b).collect() }; // 1-based, inclusive
        let entries = |i: usize| 1e6 * f64::powi(2.0, i as i32);
        let mut levels = Vec::new();
        for i in 0..8 {
            let mut ops = Vec::new();
            if i <= 1 {
                ops.push(OpStat::point(range(1, 30), 5000.0));
                ops.extend((1..=30).map(|x| OpStat::update(range(x, x), 100.0 / 30.0)));
            }
            if (2..=5).contains(&i) {
                ops.push(OpStat::point(range(16, 30), 5000.0));
            }
            if i >= 4 {
                ops.push(OpStat::scan(range(21, 30), 1.0, 0.05 * entries(i)));
            }
            if i >= 6 {
                ops.push(OpStat::scan(range(28, 30), 0.1, 0.5 * entries(i)));
            }
            levels.push(ops);
        }
        let w = Workload {
            inserts: 10_000.0,
            levels,
        };
        let advice = advise(&p, &w, 8);
        for (i, level) in advice.layout.iter().enumerate() {
            eprintln!(
                "level {i}: {:?}",
                level
                    .iter()
                    .map(|g| (g[0] + 1, g[g.len() - 1] + 1))
                    .collect::<Vec<_>>()
            );
        }
        assert_eq!(check_containment(&advice.layout, c), Ok(()));
        // Top levels: whole rows.
        assert_eq!(advice.layout[0].len(), 1);
        assert_eq!(advice.layout[1].len(), 1);
        // Middle levels: a point read of 16-30 finds its columns in one
        // group.
        for i in 2..=3 {
            assert!(
                advice.layout[i]
                    .iter()
                    .any(|g| range(16, 30).iter().all(|x| g.contains(x)))
            );
        }
        // Bottom levels: 21-27 and 28-30 are groups of their own, and
        // columns 1-15 share no group with them.
        for i in 6..=7 {
            let level = &advice.layout[i];
            assert!(level.contains(&range(28, 30)), "level {i}: {level:?}");
            assert!(level.contains(&range(21, 27)), "level {i}: {level:?}");
            assert!(
                level
                    .iter()
                    .all(|g| g.iter().all(|&x| x < 15) || g.iter().all(|&x| x >= 15))
            );
        }
        // Never worse than the design the paper reports.
        let paper: Vec<Partition> = [
            vec![(1, 30)],
            vec![(1, 30)],
            vec![(1, 15), (16, 30)],
            vec![(1, 15), (16, 30)],
            vec![(1, 15), (16, 20), (21, 30)],
            vec![(1, 15), (16, 20), (21, 30)],
            vec![(1, 15), (16, 20), (21, 27), (28, 30)],
            vec![(1, 15), (16, 20), (21, 27), (28, 30)],
        ]
        .iter()
        .map(|level| level.iter().map(|&(a, b)| range(a, b)).collect())
        .collect();
        assert!(not_worse(advice.cost, layout_cost(&p, &paper, &w)));
        assert!(not_worse(advice.cost, layout_cost(&p, &pure_row(c, 8), &w)));
        assert!(not_worse(
            advice.cost,
            layout_cost(&p, &pure_column(c, 8), &w)
        ));
    }

    #[test]
    fn a_hundred_columns_and_eight_levels() {
        let c = 100;
        let mut rng = Rng(0x5eed_0004);
        let p = ModelParams::uniform(c, 10.0, 32.0, 8.0);
        let mut w = Workload {
            inserts: 50_000.0,
            levels: Vec::new(),
        };
        for i in 0..8 {
            let ops = (0..15)
                .map(|k| {
                    let cols = rng.subset(c);
                    match k % 3 {
                        0 => OpStat::point(cols, 1000.0 / (i + 1) as f64),
                        1 => OpStat::scan(cols, 1.0, 1e4 * f64::powi(10.0, i)),
                        _ => OpStat::update(cols, 50.0),
                    }
                })
                .collect();
            w.levels.push(ops);
        }
        let start = std::time::Instant::now();
        let advice = advise(&p, &w, 8);
        eprintln!(
            "100 columns x 8 levels: {:?}, groups per level {:?}",
            start.elapsed(),
            advice.layout.iter().map(Vec::len).collect::<Vec<_>>()
        );
        assert_eq!(check_containment(&advice.layout, c), Ok(()));
        assert!(not_worse(advice.cost, layout_cost(&p, &pure_row(c, 8), &w)));
        assert!(not_worse(
            advice.cost,
            layout_cost(&p, &pure_column(c, 8), &w)
        ));
    }
}
