//! Compaction: which files to merge (a pure function of a version and the
//! options) and which entries survive the merge (a pure function of the
//! versions of one key, the live snapshots and whether deeper levels may
//! hold the key).

use std::sync::Arc;

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{
    SeqNo, TRAILER_LEN, ValueKind, append_internal_key, parse_internal_key, trailer, user_key,
};
use crate::merge::MergeOperator;
use crate::options::KeyspaceOptions;
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

/// A chosen compaction: merge `inputs` (at `level`) with `overlapping` (at
/// `output_level`) and write the result to `output_level`.
#[derive(Clone, Debug)]
pub struct CompactionTask {
    pub level: usize,
    pub output_level: usize,
    pub inputs: Vec<Arc<FileMeta>>,
    pub overlapping: Vec<Arc<FileMeta>>,
    pub reason: CompactionReason,
    /// The only input moves down unchanged: nothing overlaps it below.
    pub trivial_move: bool,
    /// No level below the output level holds any key of the inputs, so
    /// tombstones may be dropped.
    pub bottommost: bool,
    /// The score that made this level the most urgent (>= 1 unless manual).
    pub score: f64,
}

impl CompactionTask {
    /// Every input file.
    pub fn all_inputs(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        self.inputs.iter().chain(self.overlapping.iter())
    }

    /// Bytes read.
    pub fn input_bytes(&self) -> u64 {
        self.all_inputs().map(|f| f.size).sum()
    }
}

/// The urgency of each level: level 0 by file count over its trigger,
/// deeper levels by bytes over their budget. The last level has no score.
pub fn level_scores(version: &Version, opts: &KeyspaceOptions) -> Vec<f64> {
    let n = version.num_levels();
    let mut scores = vec![0.0; n];
    let l0_files = version.levels[0]
        .iter()
        .filter(|f| !f.is_being_compacted())
        .count();
    scores[0] = l0_files as f64 / opts.level0_compaction_trigger as f64;
    for (level, score) in scores.iter_mut().enumerate().take(n - 1).skip(1) {
        let bytes: u64 = version.levels[level]
            .iter()
            .filter(|f| !f.is_being_compacted())
            .map(|f| f.size)
            .sum();
        *score = bytes as f64 / opts.level_max_bytes(level) as f64;
    }
    scores
}

/// User-key range covered by `files`.
fn key_range(files: &[Arc<FileMeta>]) -> Option<(Vec<u8>, Vec<u8>)> {
    let lo = files.iter().map(|f| f.smallest_user_key()).min()?;
    let hi = files.iter().map(|f| f.largest_user_key()).max()?;
    Some((lo.to_vec(), hi.to_vec()))
}

/// True if no level deeper than `output_level` holds keys in `[lo, hi]`.
fn is_bottommost(version: &Version, output_level: usize, lo: &[u8], hi: &[u8]) -> bool {
    (output_level + 1..version.num_levels())
        .all(|l| version.overlapping(l, Some(lo), Some(hi)).is_empty())
}

/// Builds the task that merges `inputs` at `level` into `level + 1`, or
/// `None` if any file it would touch is already being compacted.
pub fn task_for_inputs(
    version: &Version,
    level: usize,
    inputs: Vec<Arc<FileMeta>>,
    reason: CompactionReason,
    score: f64,
) -> Option<CompactionTask> {
    let output_level = level + 1;
    if output_level >= version.num_levels() || inputs.is_empty() {
        return None;
    }
    if inputs.iter().any(|f| f.is_being_compacted()) {
        return None;
    }
    let (lo, hi) = key_range(&inputs)?;
    let overlapping = version.overlapping(output_level, Some(&lo), Some(&hi));
    if overlapping.iter().any(|f| f.is_being_compacted()) {
        return None;
    }
    let all: Vec<_> = inputs.iter().chain(overlapping.iter()).cloned().collect();
    let (lo, hi) = key_range(&all)?;
    let trivial_move = level > 0 && inputs.len() == 1 && overlapping.is_empty();
    let bottommost = is_bottommost(version, output_level, &lo, &hi);
    Some(CompactionTask {
        level,
        output_level,
        inputs,
        overlapping,
        reason,
        trivial_move,
        bottommost,
        score,
    })
}

/// A file as the picker sees it: smallest and largest user key, bytes.
pub type FileSpan<'a> = (&'a [u8], &'a [u8], u64);

/// The order in which to try the files of a level `>= 1`: by the bytes of
/// the next level they overlap per byte of their own, smallest first (what
/// RocksDB's default `kMinOverlappingRatio` does); ties in round-robin
/// order from the first file past `cursor` (the largest key compacted last
/// time at this level). Pushing down the file with the least overlap
/// rewrites the fewest bytes of the next level per byte moved. `next` must
/// be sorted and non-overlapping (a level `>= 1`).
pub fn file_order(files: &[FileSpan<'_>], next: &[FileSpan<'_>], cursor: &[u8]) -> Vec<usize> {
    let overlap = |lo: &[u8], hi: &[u8]| -> u64 {
        let first = next.partition_point(|(_, h, _)| *h < lo);
        next[first..]
            .iter()
            .take_while(|(l, _, _)| *l <= hi)
            .map(|(_, _, size)| size)
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

/// Picks the most urgent compaction of a version, if any level is over its
/// budget: all of level 0, or one file of a deeper level chosen by
/// [`file_order`] (`cursor[level]` breaks ties round-robin).
pub fn pick_compaction(
    version: &Version,
    opts: &KeyspaceOptions,
    cursor: &[Vec<u8>],
) -> Option<CompactionTask> {
    let scores = level_scores(version, opts);
    let mut order: Vec<usize> = (0..scores.len()).filter(|&l| scores[l] >= 1.0).collect();
    order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]));
    for level in order {
        let score = scores[level];
        if level == 0 {
            let inputs: Vec<_> = version.levels[0].to_vec();
            if let Some(t) =
                task_for_inputs(version, 0, inputs, CompactionReason::Level0FileCount, score)
            {
                return Some(t);
            }
            continue;
        }
        let files = &version.levels[level];
        fn span(f: &Arc<FileMeta>) -> FileSpan<'_> {
            (f.smallest_user_key(), f.largest_user_key(), f.size)
        }
        let spans: Vec<FileSpan<'_>> = files.iter().map(span).collect();
        let next: Vec<FileSpan<'_>> = version
            .levels
            .get(level + 1)
            .map(|l| l.iter().map(span).collect())
            .unwrap_or_default();
        let after = cursor.get(level).map(Vec::as_slice).unwrap_or(&[]);
        for i in file_order(&spans, &next, after) {
            if let Some(t) = task_for_inputs(
                version,
                level,
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

/// The stripe of a sequence number: the index of the oldest snapshot that
/// sees it, or `snapshots.len()` when only the latest state does. Two
/// versions in the same stripe are seen by exactly the same readers.
fn stripe(snapshots: &[SeqNo], seqno: SeqNo) -> usize {
    snapshots.partition_point(|&s| s < seqno)
}

/// One version of a key, as borrowed from a buffer.
struct Version1<'a> {
    seqno: SeqNo,
    kind: ValueKind,
    value: &'a [u8],
}

/// Reduces the versions of one user key (newest first) to those some reader
/// can still see, calling `emit(internal_key, value)` for each survivor in
/// order.
fn reduce_key(
    ukey: &[u8],
    versions: &[Version1<'_>],
    policy: &DropPolicy<'_>,
    stats: &mut DropStats,
    key_buf: &mut Vec<u8>,
    emit: &mut EmitFn<'_>,
) -> Result<()> {
    let mut out = |seqno: SeqNo, kind: ValueKind, value: &[u8], key_buf: &mut Vec<u8>| {
        key_buf.clear();
        append_internal_key(key_buf, ukey, seqno, kind as u8);
        stats.entries_out += 1;
        emit(key_buf, value)
    };
    let mut i = 0;
    while i < versions.len() {
        let s = stripe(policy.snapshots, versions[i].seqno);
        let end = i + versions[i..]
            .iter()
            .take_while(|v| stripe(policy.snapshots, v.seqno) == s)
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
                out(v.seqno, v.kind, v.value, key_buf)?;
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
                    .merge(ukey, None, &operands)
                    .ok()
                    .map(|v| (ValueKind::Merge, v)),
                _ => None,
            };
            match folded {
                Some((kind, value)) => {
                    stats.merges_folded += merges as u64;
                    out(top.seqno, kind, &value, key_buf)?;
                }
                None => {
                    // No operator, or it failed: keep every operand and the base.
                    for v in group.iter().take(merges + usize::from(base.is_some())) {
                        out(v.seqno, v.kind, v.value, key_buf)?;
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
    let mut stats = DropStats::default();
    // Versions of the current user key: their bytes in `buf`, their spans in
    // `spans`. Reused across keys so the loop does not allocate per entry.
    let mut buf: Vec<u8> = Vec::new();
    let mut spans: Vec<(u64, usize, usize)> = Vec::new(); // (trailer, value start, value end)
    let mut cur_key: Vec<u8> = Vec::new();
    let mut key_buf = Vec::new();
    let mut have_key = false;
    input.seek_to_first();
    let mut n: u64 = 0;
    loop {
        let valid = input.valid();
        let same_key = valid && have_key && user_key(input.key()) == cur_key.as_slice();
        if !same_key && have_key {
            let versions: Vec<Version1<'_>> = spans
                .iter()
                .map(|&(t, s, e)| Version1 {
                    seqno: t >> 8,
                    kind: ValueKind::from_u8((t & 0xff) as u8).unwrap_or(ValueKind::Put),
                    value: &buf[s..e],
                })
                .collect();
            reduce_key(&cur_key, &versions, policy, &mut stats, &mut key_buf, emit)?;
            buf.clear();
            spans.clear();
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
        buf.extend_from_slice(input.value());
        spans.push((trailer(ikey), start, buf.len()));
        stats.entries_in += 1;
        input.next();
    }
    input.status()?;
    Ok(stats)
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
        };
        let mut out = Vec::new();
        compact_entries(
            &mut it,
            &policy,
            &mut |k, v| {
                let p = parse_internal_key(k).expect("valid key");
                out.push((p.user_key.to_vec(), p.seqno, p.kind, v.to_vec()));
                Ok(())
            },
            &|| false,
        )
        .expect("compaction");
        out
    }

    use ValueKind::{Delete, Merge, Put};

    #[test]
    fn files_with_the_least_overlap_below_go_first() {
        let files: Vec<FileSpan<'_>> = vec![(b"a", b"c", 10), (b"d", b"f", 10), (b"g", b"i", 20)];
        let next: Vec<FileSpan<'_>> = vec![(b"a", b"b", 100), (b"e", b"e", 5), (b"h", b"z", 50)];
        // Overlap per byte: a-c 100/10, d-f 5/10, g-i 50/20.
        assert_eq!(file_order(&files, &next, b""), vec![1, 2, 0]);
        // A file that overlaps nothing below (a trivial move) comes first.
        let next: Vec<FileSpan<'_>> = vec![(b"a", b"b", 100), (b"h", b"z", 50)];
        assert_eq!(file_order(&files, &next, b"")[0], 1);
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
        let out = run(&[(b"a", 1, Put, b"1"), (b"a", 5, Put, b"5")], &[3], false);
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
        let out = run(e, &[3], true);
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
        let out = run(e, &[2], false);
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
