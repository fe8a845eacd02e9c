//! Which files to merge next: a pure function of a version, the options and
//! the layout's groups.

use std::sync::Arc;

use super::{CompactionReason, CompactionTask, OutputClaim, OutputRun};
use crate::ids::Level;
use crate::layout::{GroupPlan, GroupSpec, Layout};
use crate::options::KeyspaceOptions;
use crate::table_format::GroupId;
use crate::version::{FileMeta, Version};

/// The urgency of each sorted run: level 0 by file count over its trigger,
/// a group's run on a deeper level by its bytes over its share of the
/// level's budget (the groups of a level divide it by weight). The last
/// level has no score; neither has a run whose group the layout no longer
/// has on its level (it stays until a layout change moves it).
pub fn run_scores(version: &Version, opts: &KeyspaceOptions, plan: &GroupPlan) -> Vec<RunScore> {
    let n = version.num_levels();
    let mut scores = Vec::new();
    let l0_files = version.levels[0]
        .iter()
        .filter(|f| !f.is_being_compacted())
        .count();
    scores.push(RunScore {
        level: Level::ZERO,
        group: GroupId::WHOLE,
        score: l0_files as f64 / opts.level0_compaction_trigger as f64,
    });
    for level in (1..n).map(Level::from_index) {
        let last = level.index() + 1 >= n;
        for (group, files) in version.runs(level) {
            let bytes: u64 = files
                .iter()
                .filter(|f| !f.is_being_compacted())
                .map(|f| f.size)
                .sum();
            let level_budget = opts.level_max_bytes(level) as f64;
            let score = if plan.group(level, group).is_some() {
                if last {
                    continue;
                }
                bytes as f64 / (level_budget * plan.share(level, group)).max(1.0)
            } else if destinations(plan, &*opts.layout, n, level, group).is_some() {
                // A group the layout no longer has: due as soon as nothing
                // is more urgent, so a layout change takes effect.
                1.0 + bytes as f64 / level_budget.max(1.0)
            } else {
                continue;
            };
            scores.push(RunScore {
                level,
                group,
                score,
            });
        }
    }
    scores
}

/// Where compaction moves the data of `group` on `level`: the output level
/// and the groups there that take it. A group of the layout goes to its
/// children on the next level (none from the last level); a group the
/// layout no longer has goes straight to the last level, into the groups
/// the layout's `retired_children` names, merged there with their data by
/// sequence number. (Its data is older than anything the current layout
/// has moved down since, so the bottom is the one place it may join a
/// current run; going there in one step rewrites it once.)
pub fn destinations(
    plan: &GroupPlan,
    layout: &dyn Layout,
    num_levels: usize,
    level: Level,
    group: GroupId,
) -> Option<(Level, Vec<GroupSpec>)> {
    let below = level.next().index() < num_levels;
    if plan.group(level, group).is_some() {
        let kids: Vec<GroupSpec> = plan.children(level, group).into_iter().cloned().collect();
        return (below && !kids.is_empty()).then_some((level.next(), kids));
    }
    let last = Level::from_index(num_levels.saturating_sub(1));
    let kids = layout.retired_children(level, group, num_levels);
    (!kids.is_empty()).then_some((last, kids))
}

/// How urgently one sorted run needs compacting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunScore {
    pub level: Level,
    pub group: GroupId,
    pub score: f64,
}

/// User-key range covered by `files`.
fn key_range<'a>(files: impl Iterator<Item = &'a Arc<FileMeta>>) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut range: Option<(&[u8], &[u8])> = None;
    for f in files {
        let (lo, hi) = (f.smallest_user_key(), f.largest_user_key());
        range = Some(match range {
            None => (lo, hi),
            Some((a, b)) => (a.min(lo), b.max(hi)),
        });
    }
    range.map(|(a, b)| (a.to_vec(), b.to_vec()))
}

/// True if nothing outside the task can hold an older version of a key in
/// `[lo, hi]`: no level deeper than `output_level` has a file there (in any
/// group: conservative, another lineage's files count too), and no group
/// the layout no longer has (on any level) has a file there other than the
/// task's `inputs`. The second rule matters while a layout change is in
/// progress: a retired group may hold older versions of the output's
/// columns on the output level or above it, which a tombstone dropped here
/// would no longer hide.
fn is_bottommost(
    version: &Version,
    plan: &GroupPlan,
    inputs: &[Arc<FileMeta>],
    output_level: Level,
    lo: &[u8],
    hi: &[u8],
) -> bool {
    let deeper_empty = (output_level.next().index()..version.num_levels())
        .map(Level::from_index)
        .all(|l| version.overlapping(l, Some(lo), Some(hi)).is_empty());
    deeper_empty
        && (1..version.num_levels()).map(Level::from_index).all(|l| {
            version
                .runs(l)
                .filter(|(g, _)| plan.group(l, *g).is_none())
                .flat_map(|(_, files)| files)
                .all(|f| {
                    !f.overlaps(Some(lo), Some(hi)) || inputs.iter().any(|i| Arc::ptr_eq(i, f))
                })
        })
}

/// Builds the task that merges `inputs` (of `group` at `level`) into the
/// groups that take their data ([`destinations`]), or `None` if any file
/// it would touch is already being compacted, a running compaction claims
/// part of its output range (`claims`), or the data has nowhere to go.
#[allow(clippy::too_many_arguments)]
pub fn task_for_inputs(
    version: &Version,
    plan: &GroupPlan,
    layout: &dyn Layout,
    claims: &[OutputClaim],
    level: Level,
    group: GroupId,
    inputs: Vec<Arc<FileMeta>>,
    reason: CompactionReason,
    score: f64,
) -> Option<CompactionTask> {
    if inputs.is_empty() {
        return None;
    }
    if inputs
        .iter()
        .any(|f| f.is_being_compacted() || f.group != group)
    {
        return None;
    }
    let (output_level, children) = destinations(plan, layout, version.num_levels(), level, group)?;
    let (lo, hi) = key_range(inputs.iter())?;
    let mut outputs = Vec::with_capacity(children.len());
    for child in &children {
        let overlapping = version.overlapping_in(output_level, child.id, Some(&lo), Some(&hi));
        if overlapping.iter().any(|f| f.is_being_compacted()) {
            return None;
        }
        outputs.push(OutputRun {
            group: child.id,
            format: Arc::clone(&child.format),
            overlapping,
        });
    }
    let (lo, hi) = key_range(
        inputs
            .iter()
            .chain(outputs.iter().flat_map(|o| &o.overlapping)),
    )?;
    let claimed = claims.iter().any(|c| {
        c.level == output_level
            && outputs.iter().any(|o| o.group == c.group)
            && c.lo.as_slice() <= hi.as_slice()
            && lo.as_slice() <= c.hi.as_slice()
    });
    if claimed {
        return None;
    }
    let same_format = |f: &FileMeta| {
        children.len() == 1
            && children[0].id == group
            && plan
                .format(&f.format)
                .is_some_and(|fmt| fmt.name() == children[0].format.name())
    };
    let trivial_move = level > Level::ZERO
        && output_level != level
        && inputs.len() == 1
        && outputs.iter().all(|o| o.overlapping.is_empty())
        && same_format(&inputs[0]);
    // Data moving down a retired lineage may have its base (or older
    // versions a tombstone hides) in a current run beside it: never the
    // bottom (see `is_bottommost` for the rest).
    let outputs_current = children
        .iter()
        .all(|c| plan.group(output_level, c.id).is_some());
    let bottommost =
        outputs_current && is_bottommost(version, plan, &inputs, output_level, &lo, &hi);
    Some(CompactionTask {
        level,
        group,
        output_level,
        inputs,
        outputs,
        reason,
        trivial_move,
        bottommost,
        score,
        range: (lo, hi),
    })
}

/// A file as the picker sees it: smallest and largest user key, bytes.
pub type FileSpan<'a> = (&'a [u8], &'a [u8], u64);

/// The order in which to try the files of a run on a level `>= 1`: by the
/// bytes of the next level's runs (`next`, one per child group) they
/// overlap per byte of their own, smallest first (what RocksDB's default
/// `kMinOverlappingRatio` does); ties in round-robin order from the first
/// file past `cursor` (the largest key compacted last time at this level).
/// Pushing down the file with the least overlap rewrites the fewest bytes
/// of the next level per byte moved. Each run of `next` must be sorted and
/// non-overlapping.
pub fn file_order(files: &[FileSpan<'_>], next: &[&[FileSpan<'_>]], cursor: &[u8]) -> Vec<usize> {
    let overlap = |lo: &[u8], hi: &[u8]| -> u64 {
        next.iter()
            .map(|run| {
                let first = run.partition_point(|(_, h, _)| *h < lo);
                run[first..]
                    .iter()
                    .take_while(|(l, _, _)| *l <= hi)
                    .map(|(_, _, size)| size)
                    .sum::<u64>()
            })
            .sum()
    };
    let n = files.len();
    let start = files.partition_point(|(_, h, _)| !cursor.is_empty() && *h <= cursor);
    let mut keyed: Vec<(u64, u64, usize, usize)> = files
        .iter()
        .enumerate()
        .map(|(i, (lo, hi, size))| {
            (
                overlap(lo, hi),
                (*size).max(1),
                (i + n - start) % n.max(1),
                i,
            )
        })
        .collect();
    // a/b < c/d  <=>  a*d < c*b (in u128, no rounding).
    keyed.sort_by(|x, y| {
        (u128::from(x.0) * u128::from(y.1))
            .cmp(&(u128::from(y.0) * u128::from(x.1)))
            .then(x.2.cmp(&y.2))
    });
    keyed.into_iter().map(|k| k.3).collect()
}

/// The runs over their budget, most urgent first: the most overflowing
/// level first (its bytes over its budget: the runs' scores weighted by
/// their groups' shares; level 0 by its file count), and within a level
/// the most overflowing group (LASER's column-group-local compaction). A
/// run the layout no longer has counts as its own level's urgency.
pub fn compaction_order(scores: &[RunScore], plan: &GroupPlan) -> Vec<RunScore> {
    let level_score = |level: Level| -> f64 {
        let (mut sum, mut retired) = (0.0f64, 0.0f64);
        for s in scores.iter().filter(|s| s.level == level) {
            match plan.group(level, s.group) {
                _ if level == Level::ZERO => sum = s.score,
                Some(_) => sum += s.score * plan.share(level, s.group),
                None => retired = retired.max(s.score),
            }
        }
        sum.max(retired)
    };
    let mut order: Vec<(f64, RunScore)> = scores
        .iter()
        .filter(|s| s.score >= 1.0)
        .map(|s| (level_score(s.level), *s))
        .collect();
    order.sort_by(|(la, a), (lb, b)| {
        lb.total_cmp(la)
            .then(b.score.total_cmp(&a.score))
            .then(a.level.cmp(&b.level))
    });
    order.into_iter().map(|(_, s)| s).collect()
}

/// Picks the most urgent compaction of a version, if any run is over its
/// budget: all of level 0, or one file of a deeper run chosen by
/// [`file_order`] (`cursor[level]` breaks ties round-robin).
pub fn pick_compaction(
    version: &Version,
    opts: &KeyspaceOptions,
    plan: &GroupPlan,
    cursor: &[Vec<u8>],
    claims: &[OutputClaim],
) -> Option<CompactionTask> {
    let order = compaction_order(&run_scores(version, opts, plan), plan);
    for RunScore {
        level,
        group,
        score,
    } in order
    {
        if level == Level::ZERO {
            let inputs: Vec<_> = version.levels[0].to_vec();
            if let Some(t) = task_for_inputs(
                version,
                plan,
                &*opts.layout,
                claims,
                Level::ZERO,
                group,
                inputs,
                CompactionReason::Level0FileCount,
                score,
            ) {
                return Some(t);
            }
            continue;
        }
        let files = version.run(level, group);
        fn span(f: &Arc<FileMeta>) -> FileSpan<'_> {
            (f.smallest_user_key(), f.largest_user_key(), f.size)
        }
        let spans: Vec<FileSpan<'_>> = files.iter().map(span).collect();
        let next: Vec<Vec<FileSpan<'_>>> =
            match destinations(plan, &*opts.layout, version.num_levels(), level, group) {
                Some((out, kids)) => kids
                    .iter()
                    .map(|c| version.run(out, c.id).iter().map(span).collect())
                    .collect(),
                None => Vec::new(),
            };
        let next: Vec<&[FileSpan<'_>]> = next.iter().map(Vec::as_slice).collect();
        let after = cursor.get(level.index()).map(Vec::as_slice).unwrap_or(&[]);
        for i in file_order(&spans, &next, after) {
            if let Some(t) = task_for_inputs(
                version,
                plan,
                &*opts.layout,
                claims,
                level,
                group,
                vec![Arc::clone(&files[i])],
                CompactionReason::LevelSize,
                score,
            ) {
                return Some(t);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Groups 1 (weight 3) and 2 (weight 1) below level 0; group 9 was
    /// retired and moves into group 1 of the last level.
    struct TwoGroups;

    impl Layout for TwoGroups {
        fn name(&self) -> &str {
            "two"
        }
        fn table_options(
            &self,
            _level: Level,
            base: &crate::sst::TableBuilderOptions,
        ) -> crate::sst::TableBuilderOptions {
            base.clone()
        }
        fn groups(&self, level: Level) -> Vec<GroupSpec> {
            if level == Level::ZERO {
                return vec![GroupSpec::whole()];
            }
            let g = |id, weight| GroupSpec {
                id: GroupId(id),
                parent: if level == Level(1) {
                    GroupId::WHOLE
                } else {
                    GroupId(id)
                },
                weight,
                format: Arc::new(crate::table_format::SstFormat),
            };
            vec![g(1, 3), g(2, 1)]
        }
        fn retired_children(&self, _level: Level, group: GroupId, _n: usize) -> Vec<GroupSpec> {
            if group != GroupId(9) {
                return Vec::new();
            }
            self.groups(Level(1)).into_iter().take(1).collect()
        }
    }

    #[test]
    fn the_most_overflowing_level_goes_first_then_its_most_overflowing_group() {
        let plan = GroupPlan::new(&TwoGroups, 4).expect("plan");
        let run = |level: u8, group: u32, score: f64| RunScore {
            level: Level(level),
            group: GroupId(group),
            score,
        };
        // Level 1: 2.0·3/4 + 1.0·1/4 = 1.75. Level 2: 1.1·3/4 + 3.0·1/4 = 1.575.
        let scores = [
            run(2, 1, 1.1),
            run(2, 2, 3.0),
            run(1, 1, 2.0),
            run(1, 2, 1.0),
            run(3, 1, 0.5),
        ];
        let order: Vec<(u8, u32)> = compaction_order(&scores, &plan)
            .iter()
            .map(|s| (s.level.get(), s.group.0))
            .collect();
        assert_eq!(order, vec![(1, 1), (1, 2), (2, 2), (2, 1)]);
        // Level 0 goes by its own (file count) score.
        let with_l0 = [run(0, 0, 1.8), run(1, 1, 2.0), run(1, 2, 1.0)];
        assert_eq!(compaction_order(&with_l0, &plan)[0].level, Level::ZERO);
    }

    #[test]
    fn a_retired_group_moves_to_the_last_level_in_one_step() {
        let plan = GroupPlan::new(&TwoGroups, 4).expect("plan");
        let (out, kids) = destinations(&plan, &TwoGroups, 4, Level(1), GroupId(9)).expect("moves");
        assert_eq!((out, kids[0].id), (Level(3), GroupId(1)));
        let (out, _) = destinations(&plan, &TwoGroups, 4, Level(3), GroupId(9)).expect("moves");
        assert_eq!(out, Level(3));
        // A current group moves to its children; nothing below the last level.
        let (out, kids) = destinations(&plan, &TwoGroups, 4, Level(1), GroupId(2)).expect("moves");
        assert_eq!((out, kids.len()), (Level(2), 1));
        assert!(destinations(&plan, &TwoGroups, 4, Level(3), GroupId(2)).is_none());
        assert!(destinations(&plan, &TwoGroups, 4, Level(2), GroupId(5)).is_none());
    }

    #[test]
    fn files_with_the_least_overlap_below_go_first() {
        let files: Vec<FileSpan<'_>> = vec![(b"a", b"c", 10), (b"d", b"f", 10), (b"g", b"i", 20)];
        let next: Vec<FileSpan<'_>> = vec![(b"a", b"b", 100), (b"e", b"e", 5), (b"h", b"z", 50)];
        // Overlap per byte: a-c 100/10, d-f 5/10, g-i 50/20.
        assert_eq!(file_order(&files, &[&next], b""), vec![1, 2, 0]);
        // A file that overlaps nothing below (a trivial move) comes first.
        let next: Vec<FileSpan<'_>> = vec![(b"a", b"b", 100), (b"h", b"z", 50)];
        assert_eq!(file_order(&files, &[&next], b"")[0], 1);
    }

    #[test]
    fn ties_go_round_robin_after_the_cursor() {
        let files: Vec<FileSpan<'_>> = vec![(b"a", b"c", 10), (b"d", b"f", 10), (b"g", b"i", 10)];
        assert_eq!(file_order(&files, &[], b""), vec![0, 1, 2]);
        assert_eq!(file_order(&files, &[], b"c"), vec![1, 2, 0]);
        assert_eq!(file_order(&files, &[], b"f"), vec![2, 0, 1]);
        assert_eq!(file_order(&files, &[], b"z"), vec![0, 1, 2]);
        assert!(file_order(&[], &[], b"z").is_empty());
    }
}
