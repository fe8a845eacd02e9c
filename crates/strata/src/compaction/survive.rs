//! Which entries survive a merge: a pure function of the versions of one
//! key, the live snapshots and whether deeper levels may hold the key.

use std::sync::Arc;

use crate::dict::{CodedValue, Codes, Dictionary};
use crate::error::Result;
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::{
    SeqNo, TRAILER_LEN, ValueKind, append_internal_key, parse_internal_key, trailer, user_key,
};
use crate::layout::{EmitVersion, KeyVersion, ReduceContext, VersionReducer};
use crate::merge::MergeOperator;

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
    for (run, s) in ctx.stripes(versions) {
        let is_last_group = run.end == versions.len();
        let group = &versions[run];
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
/// store values as dictionary codes,
/// [`CompactionTask::may_carry_codes`](super::CompactionTask::may_carry_codes)),
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
