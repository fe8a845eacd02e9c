//! Compaction: which files to merge (a pure function of a version and the
//! options) and which entries survive the merge (a pure function of the
//! versions of one key, the live snapshots and whether deeper levels may
//! hold the key).

use std::sync::Arc;

use crate::dict::{CodedValue, Codes, Dictionary};
use crate::error::Result;
use crate::ids::Level;
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::{
    SeqNo, TRAILER_LEN, ValueKind, append_internal_key, parse_internal_key, trailer, user_key,
};
use crate::layout::{
    EmitVersion, GroupPlan, GroupSpec, KeyVersion, Layout, ReduceContext, VersionReducer,
};
use crate::merge::MergeOperator;
use crate::options::KeyspaceOptions;
use crate::table_format::{GroupId, TableFormat};
use crate::version::{FileMeta, Version};

/// Why a compaction was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactionReason {
    /// Level 0 reached its file-count trigger.
    Level0FileCount,
    /// A level exceeded its byte budget.
    LevelSize,
    /// `compact_range` asked for it.
    Manual,
}

/// One output of a compaction: a child group of the input group on the
/// output level, and the files of its run that the inputs overlap.
#[derive(Clone, Debug)]
pub struct OutputRun {
    pub group: GroupId,
    /// The format the group's files are written in.
    pub format: Arc<dyn TableFormat>,
    pub overlapping: Vec<Arc<FileMeta>>,
}

/// A key range a running compaction is writing into one run: no other
/// compaction may write that run's files over it, or the run would hold
/// overlapping files. (With one source run per destination run this cannot
/// happen: files taken from one sorted run have disjoint ranges. A layout
/// change gives a run a second source, the group the layout retired.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputClaim {
    pub level: Level,
    pub group: GroupId,
    /// Smallest and largest user key, inclusive.
    pub lo: Vec<u8>,
    pub hi: Vec<u8>,
}

/// A chosen compaction: merge `inputs` (column group `group` at `level`)
/// into each child group of it at `output_level`, each child's output
/// merged with the files of that child's run the inputs overlap. With one
/// group per level (a plain key-value keyspace) there is one output run.
#[derive(Clone, Debug)]
pub struct CompactionTask {
    pub level: Level,
    pub group: GroupId,
    pub output_level: Level,
    pub inputs: Vec<Arc<FileMeta>>,
    pub outputs: Vec<OutputRun>,
    pub reason: CompactionReason,
    /// The only input moves down unchanged: nothing overlaps it below, and
    /// its group and format continue unchanged on the output level.
    pub trivial_move: bool,
    /// No level below the output level holds any key of the inputs, so
    /// tombstones may be dropped.
    pub bottommost: bool,
    /// The score that made this run the most urgent (>= 1 unless manual).
    pub score: f64,
    /// The user-key range the outputs cover (inputs and overlapping files).
    pub range: (Vec<u8>, Vec<u8>),
}

impl CompactionTask {
    /// The files of the output level that the task rewrites.
    pub fn overlapping(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        self.outputs.iter().flat_map(|o| o.overlapping.iter())
    }

    /// Whether some file the task reads is in a format other than the
    /// core's (dictionary-encoded or column-group files), whose entries may
    /// come with dictionary codes. Core tables never do, so compacting only
    /// them skips asking each entry for codes.
    pub fn may_carry_codes(&self) -> bool {
        self.inputs
            .iter()
            .chain(self.overlapping())
            .any(|f| !f.file.format.is_empty())
    }

    /// What the task claims while it runs.
    pub fn claims(&self) -> Vec<OutputClaim> {
        self.outputs
            .iter()
            .map(|o| OutputClaim {
                level: self.output_level,
                group: o.group,
                lo: self.range.0.clone(),
                hi: self.range.1.clone(),
            })
            .collect()
    }

    /// Every input file.
    pub fn all_inputs(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        self.inputs.iter().chain(self.overlapping())
    }

    /// Bytes read: the inputs and the overlapping files, once each (one
    /// pass feeds every output run).
    pub fn input_bytes(&self) -> u64 {
        self.all_inputs().map(|f| f.size).sum()
    }
}

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

/// What to do with the versions of one user key during a merge.
pub struct DropPolicy<'a> {
    /// Live snapshots, ascending.
    pub snapshots: &'a [SeqNo],
    /// No deeper level may hold this key.
    pub bottommost: bool,
    pub merge: Option<&'a dyn MergeOperator>,
    /// The layout's own rule for which versions survive, replacing the
    /// core's (see [`crate::layout::Layout::reducer`]).
    pub reducer: Option<&'a dyn VersionReducer>,
}

/// Receives each surviving entry (internal key, value) in order.
pub type EmitFn<'a> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'a;

/// Counts what a merge of entries did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropStats {
    pub entries_in: u64,
    pub entries_out: u64,
    pub dropped_shadowed: u64,
    pub dropped_tombstones: u64,
    pub merges_folded: u64,
}

/// Reduces the versions of one user key (newest first) to those some reader
/// can still see, calling `emit(seqno, kind, value)` for each survivor in
/// order: the core's rule, in the shape of a layout's
/// [`VersionReducer::reduce`].
fn reduce_key(
    ukey: &[u8],
    versions: &[KeyVersion<'_>],
    policy: &DropPolicy<'_>,
    stats: &mut DropStats,
    emit: &mut EmitVersion<'_>,
) -> Result<()> {
    let ctx = ReduceContext {
        snapshots: policy.snapshots,
        bottommost: policy.bottommost,
    };
    let mut i = 0;
    while i < versions.len() {
        let s = ctx.stripe(versions[i].seqno);
        let end = i + versions[i..]
            .iter()
            .take_while(|v| ctx.stripe(v.seqno) == s)
            .count();
        let group = &versions[i..end];
        let is_last_group = end == versions.len();
        // Within a stripe, the newest non-merge version hides everything
        // older; merges above it fold into it.
        let merges = group
            .iter()
            .take_while(|v| v.kind == ValueKind::Merge)
            .count();
        let base = group.get(merges);
        stats.dropped_shadowed += group.len().saturating_sub(merges + 1) as u64;
        let top = &group[0];
        if merges == 0 {
            let v = &group[0];
            let oldest_stripe = s == 0;
            if v.kind == ValueKind::Delete && policy.bottommost && oldest_stripe {
                stats.dropped_tombstones += 1;
            } else {
                emit(v.seqno, v.kind, v.value)?;
            }
        } else {
            let operands: Vec<&[u8]> = group[..merges].iter().rev().map(|v| v.value).collect();
            let folded = match (policy.merge, base) {
                (Some(op), Some(b)) => {
                    let existing = (b.kind == ValueKind::Put).then_some(b.value);
                    op.merge(ukey, existing, &operands)
                        .ok()
                        .map(|v| (ValueKind::Put, v))
                }
                (Some(op), None) if policy.bottommost && is_last_group => op
                    .merge(ukey, None, &operands)
                    .ok()
                    .map(|v| (ValueKind::Put, v)),
                (Some(op), None) if merges > 1 => op
                    .merge_operands(ukey, &operands)
                    .ok()
                    .map(|v| (ValueKind::Merge, v)),
                _ => None,
            };
            match folded {
                Some((kind, value)) => {
                    stats.merges_folded += merges as u64;
                    emit(top.seqno, kind, &value)?;
                }
                None => {
                    // No operator, or it failed: keep every operand and the base.
                    for v in group.iter().take(merges + usize::from(base.is_some())) {
                        emit(v.seqno, v.kind, v.value)?;
                    }
                }
            }
        }
        i = end;
    }
    Ok(())
}

/// Merges the entries of `input` (sorted internal keys), dropping versions no
/// reader can see, and calls `emit` for each survivor in order. Entries of
/// one user key reach `emit` consecutively, so a caller that splits output
/// files between keys never splits a key.
pub fn compact_entries(
    input: &mut dyn InternalIterator,
    policy: &DropPolicy<'_>,
    emit: &mut EmitFn<'_>,
    should_stop: &dyn Fn() -> bool,
) -> Result<DropStats> {
    compact_core(
        input,
        |_| None,
        1,
        policy,
        false,
        &mut |_, k, v, _| emit(k, v),
        should_stop,
    )
}

/// Receives each surviving entry of one output: its index, the internal key,
/// the value and, when the survivor is an input entry unchanged whose
/// source stored it (or some of its columns) as dictionary codes, those
/// codes.
pub type FanoutEmitFn<'a> = dyn FnMut(usize, &[u8], &[u8], Codes<'_>) -> Result<()> + 'a;

/// Like [`compact_entries`], for a compaction with `outputs` outputs (the
/// child groups a group's data moves into) read in one pass: `owner_of[c]`
/// says whom the entries of `input`'s child `c` belong to — `None` for the
/// inputs being pushed down, which every output takes; `Some(k)` for a file
/// of output `k`'s own run, which only output `k` merges with. Each
/// output's versions of a key are reduced on their own and reach `emit`
/// with its index, keys in order per output. With `codes` (some input may
/// store values as dictionary codes, [`CompactionTask::may_carry_codes`]),
/// an unchanged survivor reaches `emit` with its codes.
pub fn compact_entries_fanout(
    input: &mut MergingIterator,
    owner_of: &[Option<usize>],
    outputs: usize,
    policy: &DropPolicy<'_>,
    codes: bool,
    emit: &mut FanoutEmitFn<'_>,
    should_stop: &dyn Fn() -> bool,
) -> Result<DropStats> {
    compact_core(
        input,
        |m: &MergingIterator| {
            m.current_child()
                .and_then(|c| owner_of.get(c).copied().flatten())
        },
        outputs,
        policy,
        codes,
        emit,
        should_stop,
    )
}

/// One version of the key being compacted: its trailer, its value's bytes
/// in the loop's buffer (or its code in an input dictionary) and the output
/// that owns it.
struct Span {
    trailer: u64,
    start: usize,
    end: usize,
    owner: Option<usize>,
    /// (index into the loop's dictionaries, code).
    code: Option<(usize, u32)>,
    /// Its columns' codes: a range of the loop's column codes.
    columns: (usize, usize),
}

fn compact_core<I: InternalIterator + ?Sized>(
    input: &mut I,
    owner: impl Fn(&I) -> Option<usize>,
    outputs: usize,
    policy: &DropPolicy<'_>,
    codes: bool,
    emit: &mut FanoutEmitFn<'_>,
    should_stop: &dyn Fn() -> bool,
) -> Result<DropStats> {
    let mut stats = DropStats::default();
    // Versions of the current user key: their bytes in `buf`, their spans,
    // owners and codes in `spans`. Reused across keys so the loop does not
    // allocate per entry. A version a dictionary-encoded source gives as a
    // code is not copied: its bytes stay in the dictionary (`dicts`, the
    // inputs' dictionaries met so far), and a survivor that is such a
    // version unchanged reaches `emit` with its code, so a dictionary-encoded
    // output can remap codes instead of taking in value bytes per entry.
    let mut buf: Vec<u8> = Vec::new();
    let mut spans: Vec<Span> = Vec::new();
    let mut dicts: Vec<Arc<Dictionary>> = Vec::new();
    // (value column, index into `dicts`, code) of the versions' columns
    // their sources store as codes.
    let mut column_codes: Vec<(usize, usize, u32)> = Vec::new();
    let mut cur_key: Vec<u8> = Vec::new();
    let mut key_buf = Vec::new();
    let mut have_key = false;
    let ctx = ReduceContext {
        snapshots: policy.snapshots,
        bottommost: policy.bottommost,
    };
    input.seek_to_first();
    let mut n: u64 = 0;
    loop {
        let valid = input.valid();
        let same_key = valid && have_key && user_key(input.key()) == cur_key.as_slice();
        if !same_key && have_key {
            for out in 0..outputs {
                let mine = |s: &&Span| outputs == 1 || s.owner.is_none_or(|o| o == out);
                let value_of = |s: &Span| match s.code {
                    Some((d, c)) => dicts[d].value(c),
                    None => &buf[s.start..s.end],
                };
                let mut vs: Vec<KeyVersion<'_>> = Vec::with_capacity(spans.len());
                vs.extend(spans.iter().filter(mine).map(|s| KeyVersion {
                    seqno: SeqNo(s.trailer >> 8),
                    kind: ValueKind::from_u8((s.trailer & 0xff) as u8).unwrap_or(ValueKind::Put),
                    value: value_of(s),
                }));
                if vs.is_empty() {
                    continue;
                }
                // Survivors become internal keys here, whichever rule
                // (the core's or the layout's) chose them.
                let mut written = 0u64;
                let mut write = |seqno: SeqNo, kind: ValueKind, value: &[u8]| {
                    key_buf.clear();
                    append_internal_key(&mut key_buf, &cur_key, seqno, kind as u8);
                    written += 1;
                    // The survivor is a coded input version unchanged when
                    // it has that version's sequence number, kind and very
                    // bytes (a merge result is a new value). Nothing to look
                    // for when no input gave codes.
                    let trailer = seqno.get() << 8 | kind as u64;
                    let source = (!dicts.is_empty())
                        .then(|| {
                            spans.iter().filter(mine).find(|s| {
                                (s.code.is_some() || s.columns.0 < s.columns.1)
                                    && s.trailer == trailer
                                    && std::ptr::eq(value_of(s), value)
                            })
                        })
                        .flatten();
                    let codes = source.map_or_else(Codes::default, |s| Codes {
                        value: s.code.map(|(d, code)| CodedValue {
                            dictionary: &dicts[d],
                            code,
                        }),
                        columns: &column_codes[s.columns.0..s.columns.1],
                        dictionaries: &dicts,
                    });
                    emit(out, &key_buf, value, codes)
                };
                match policy.reducer {
                    None => reduce_key(&cur_key, &vs, policy, &mut stats, &mut write)?,
                    Some(r) => r.reduce(&cur_key, &vs, &ctx, &mut write)?,
                }
                stats.entries_out += written;
            }
            buf.clear();
            spans.clear();
            column_codes.clear();
            have_key = false;
        }
        if !valid {
            break;
        }
        n += 1;
        if n.is_multiple_of(1024) && should_stop() {
            return Err(crate::Error::Closed);
        }
        let ikey = input.key();
        if parse_internal_key(ikey).is_none() {
            return Err(crate::Error::corruption(
                "compaction input",
                0,
                format!("malformed internal key of {} bytes", ikey.len()),
            ));
        }
        if !have_key {
            cur_key.clear();
            cur_key.extend_from_slice(&ikey[..ikey.len() - TRAILER_LEN]);
            have_key = true;
        }
        let start = buf.len();
        let columns_start = column_codes.len();
        let code = if codes {
            input.column_codes(&mut |v, cv| {
                let d = dict_index(&mut dicts, cv.dictionary);
                column_codes.push((v, d, cv.code));
            });
            input
                .value_code()
                .map(|cv| (dict_index(&mut dicts, cv.dictionary), cv.code))
        } else {
            None
        };
        if code.is_none() {
            buf.extend_from_slice(input.value());
        }
        spans.push(Span {
            trailer: trailer(ikey),
            start,
            end: buf.len(),
            owner: owner(input),
            code,
            columns: (columns_start, column_codes.len()),
        });
        stats.entries_in += 1;
        input.next();
    }
    input.status()?;
    Ok(stats)
}

/// `dictionary`'s index in `dicts`, added if new. Inputs are a few files:
/// the last dictionary met is almost always the one.
fn dict_index(dicts: &mut Vec<Arc<Dictionary>>, dictionary: &Arc<Dictionary>) -> usize {
    match dicts.iter().rposition(|d| Arc::ptr_eq(d, dictionary)) {
        Some(d) => d,
        None => {
            dicts.push(Arc::clone(dictionary));
            dicts.len() - 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::VecIterator;
    use crate::key::{compare_internal, make_internal_key};
    use crate::merge::AppendOperator;

    fn run(
        entries: &[(&[u8], u64, ValueKind, &[u8])],
        snapshots: &[SeqNo],
        bottommost: bool,
    ) -> Vec<(Vec<u8>, u64, ValueKind, Vec<u8>)> {
        let mut v: Vec<(Vec<u8>, Vec<u8>)> = entries
            .iter()
            .map(|(k, s, kind, val)| (make_internal_key(k, *s, *kind), val.to_vec()))
            .collect();
        v.sort_by(|a, b| compare_internal(&a.0, &b.0));
        let mut it = VecIterator::new(Arc::new(v));
        let op = AppendOperator { delimiter: b',' };
        let policy = DropPolicy {
            snapshots,
            bottommost,
            merge: Some(&op),
            reducer: None,
        };
        let mut out = Vec::new();
        compact_entries(
            &mut it,
            &policy,
            &mut |k, v| {
                let p = parse_internal_key(k).expect("valid key");
                out.push((p.user_key.to_vec(), p.seqno.get(), p.kind, v.to_vec()));
                Ok(())
            },
            &|| false,
        )
        .expect("compaction");
        out
    }

    use ValueKind::{Delete, Merge, Put};

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

    #[test]
    fn overwritten_versions_drop_without_snapshots() {
        let out = run(&[(b"a", 1, Put, b"1"), (b"a", 5, Put, b"5")], &[], false);
        assert_eq!(out, vec![(b"a".to_vec(), 5, Put, b"5".to_vec())]);
    }

    #[test]
    fn snapshot_keeps_the_version_it_sees() {
        let out = run(
            &[(b"a", 1, Put, b"1"), (b"a", 5, Put, b"5")],
            &[SeqNo(3)],
            false,
        );
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].1, 1);
    }

    #[test]
    fn tombstone_drops_only_at_bottom_and_below_all_snapshots() {
        let e: &[(&[u8], u64, ValueKind, &[u8])] = &[(b"a", 1, Put, b"1"), (b"a", 5, Delete, b"")];
        assert_eq!(run(e, &[], false), vec![(b"a".to_vec(), 5, Delete, vec![])]);
        assert!(run(e, &[], true).is_empty());
        // A snapshot at 3 still sees the put; the tombstone must stay to hide
        // it from newer readers.
        let out = run(e, &[SeqNo(3)], true);
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn merges_fold_into_base_within_a_stripe() {
        let e: &[(&[u8], u64, ValueKind, &[u8])] = &[
            (b"a", 1, Put, b"x"),
            (b"a", 2, Merge, b"y"),
            (b"a", 3, Merge, b"z"),
        ];
        assert_eq!(
            run(e, &[], false),
            vec![(b"a".to_vec(), 3, Put, b"x,y,z".to_vec())]
        );
        // A snapshot at 2 splits the stripes: {3} and {1,2}.
        let out = run(e, &[SeqNo(2)], false);
        assert_eq!(
            out,
            vec![
                (b"a".to_vec(), 3, Merge, b"z".to_vec()),
                (b"a".to_vec(), 2, Put, b"x,y".to_vec())
            ]
        );
    }

    #[test]
    fn lone_merges_fold_to_one_operand_above_bottom() {
        let e: &[(&[u8], u64, ValueKind, &[u8])] =
            &[(b"a", 2, Merge, b"y"), (b"a", 3, Merge, b"z")];
        assert_eq!(
            run(e, &[], false),
            vec![(b"a".to_vec(), 3, Merge, b"y,z".to_vec())]
        );
        assert_eq!(
            run(e, &[], true),
            vec![(b"a".to_vec(), 3, Put, b"y,z".to_vec())]
        );
    }
}
