//! Steps 1 to 3 of section 6.3 for one parent group at one level: its
//! fragments (its columns grouped by the local operations that touch them)
//! and their cheapest partition, found exactly or greedily (see the
//! `advisor` module documentation).

use std::collections::HashMap;

use super::Search;

/// Passes of single-fragment moves after the greedy merges.
const MAX_MOVE_PASSES: usize = 8;

/// A fragment of a parent group.
pub(super) struct Fragment {
    pub(super) columns: Vec<u32>,
    /// The summed column units (without the key).
    units: f64,
    /// The local operations touching it, as a bitset of `words` words.
    sig: Vec<u64>,
}

/// One parent group at one level: its fragments and the local operations
/// (those touching it, deduplicated by their projection inside it).
pub(super) struct Local {
    pub(super) fragments: Vec<Fragment>,
    per_group: Vec<f64>,
    per_unit: Vec<f64>,
    words: usize,
    key_units: f64,
    insert: f64,
}

impl Local {
    pub(super) fn new(s: &Search<'_>, level: usize, r: &[u32]) -> Local {
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
    pub(super) fn cost_of(&self, frags: &[usize]) -> f64 {
        let mut sig = vec![0u64; self.words];
        let mut units = 0.0;
        for &f in frags {
            or_into(&mut sig, &self.fragments[f].sig);
            units += self.fragments[f].units;
        }
        self.group_cost(&sig, units)
    }

    /// The level's cost of the whole parent as one group.
    pub(super) fn whole_cost(&self) -> f64 {
        let all: Vec<usize> = (0..self.fragments.len()).collect();
        if all.is_empty() {
            return self.insert;
        }
        self.cost_of(&all)
    }

    /// The cheapest partition of the fragments, exactly: `best[S]` is the
    /// cheapest partition of the fragment set `S`, found by choosing the
    /// group holding `S`'s lowest fragment among all subsets of `S`.
    pub(super) fn exact(&self) -> (Vec<Vec<usize>>, f64) {
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
    pub(super) fn greedy(&self) -> (Vec<Vec<usize>>, f64) {
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
pub(super) fn better(a: (f64, usize), b: (f64, usize)) -> bool {
    if b.0.is_infinite() {
        return a.0 < b.0 || (a.0 == b.0 && a.1 < b.1);
    }
    let slack = tolerance(a.0.abs().max(b.0.abs()));
    a.0 < b.0 - slack || (a.0 <= b.0 + slack && a.1 < b.1)
}
