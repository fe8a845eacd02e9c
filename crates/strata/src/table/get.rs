//! Projected point reads (LASER's read(key, Π)): the memtables and level 0
//! hold whole rows; on each deeper level only the groups that hold a wanted
//! column are probed (every wanted column's group until the row's newest
//! insert or delete is found, then only those of unresolved columns), and
//! the read stops as soon as every wanted column has its value and that
//! event is known (see `view.rs` for how columns resolve).

use std::sync::Arc;

use super::cgfile::block::CgBlock;
use super::cgfile::{CgReader, snap_trailer};
use super::view::{ReadPlan, Resolver, offer_piece};
use crate::db::SuperVersion;
use crate::error::Result;
use crate::ids::Level;
use crate::key::{SeekKey, SeqNo, ValueKind, parse_internal_key};
use crate::table::piece::PieceSchema;

/// One entry of the row being read.
enum Src {
    Piece(Vec<u8>),
    Row(Arc<CgBlock>, usize),
}

struct Entry {
    seq: SeqNo,
    kind: ValueKind,
    src: Src,
}

/// What a point read touched.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct GetCost {
    /// Table files probed (past their key range check).
    pub files: u64,
    /// Data blocks read (column-group blocks; a whole-row file's probe
    /// counts one).
    pub blocks: u64,
    /// The deepest level probed.
    pub deepest: usize,
}

/// Collects the versions of `key` visible at `snap` from a callback source.
fn collect_pieces<'a>(
    out: &'a mut Vec<Entry>,
    key: &'a [u8],
    snap: SeqNo,
) -> impl FnMut(&[u8], &[u8]) -> bool + 'a {
    move |ikey: &[u8], value: &[u8]| {
        let Some(p) = parse_internal_key(ikey) else {
            return false;
        };
        if p.user_key != key {
            return false;
        }
        if p.seqno <= snap {
            out.push(Entry {
                seq: p.seqno,
                kind: p.kind,
                src: Src::Piece(value.to_vec()),
            });
        }
        true
    }
}

/// Collects the versions of `key` visible at `snap` from a column-group
/// file (one block: a key's versions never span two). The cells of the
/// newest version that `wanted` names are asked for ahead: they are read
/// after every group's versions are collected, so their loads overlap with
/// the other groups' searches.
fn collect_rows(
    out: &mut Vec<Entry>,
    reader: &CgReader,
    key: &[u8],
    snap: SeqNo,
    wanted: impl Fn(usize) -> bool,
) -> Result<()> {
    if let Some((block, rows)) = reader.find(key, snap_trailer(snap))? {
        block.prefetch_row(rows.start, wanted);
        out.extend(rows.map(|row| Entry {
            seq: block.seqno(row),
            kind: block.kind(row),
            src: Src::Row(Arc::clone(&block), row),
        }));
    }
    Ok(())
}

fn offer_all(r: &mut Resolver, schema: &PieceSchema, entries: &mut Vec<Entry>) -> Result<()> {
    // Entries of one tier may come from several groups: newest first.
    entries.sort_by_key(|e| std::cmp::Reverse(e.seq));
    for e in entries.drain(..) {
        match &e.src {
            Src::Piece(p) => offer_piece(r, schema, e.seq, e.kind, p)?,
            Src::Row(b, row) => {
                let (b, row) = (b.as_ref(), *row);
                r.offer_group(e.seq, e.kind, b.value_columns(), &|i| b.cell(i, row));
            }
        }
    }
    Ok(())
}

/// Reads `key` at `snap` into `r` (reset first): afterwards `r.exists()`
/// and `r.value(v)` for the wanted columns.
pub(crate) fn get(
    sv: &SuperVersion,
    plan: &ReadPlan,
    key: &[u8],
    snap: SeqNo,
    want: &[usize],
    r: &mut Resolver,
) -> Result<GetCost> {
    r.reset();
    let schema = &plan.state.shape.pieces;
    let mut cost = GetCost::default();
    // The lineage consulted when no column is wanted (an existence check).
    let probe_cols: &[usize] = match want {
        [] if schema.is_empty() => &[],
        [] => &[0],
        want => want,
    };
    let ambiguous = probe_cols.iter().any(|&v| plan.ambiguous[v]);
    let seek = SeekKey::new(key, snap);
    let seek = seek.as_slice();
    let mut entries: Vec<Entry> = Vec::new();

    // Memtables, newest first: whole rows and updates.
    {
        let mut visit = collect_pieces(&mut entries, key, snap);
        sv.mem.get(seek, &mut visit);
        for imm in &sv.imms {
            imm.get(seek, &mut visit);
        }
    }
    if !ambiguous {
        offer_all(r, schema, &mut entries)?;
        if r.settled() {
            return Ok(cost);
        }
    }
    // Level 0, newest file first.
    for f in &sv.version.levels[0] {
        if key < f.smallest_user_key() || key > f.largest_user_key() {
            continue;
        }
        cost.files += 1;
        let mut visit = collect_pieces(&mut entries, key, snap);
        if f.table.get(key, seek, &mut visit)? {
            cost.blocks += 1;
        }
    }
    if !ambiguous {
        offer_all(r, schema, &mut entries)?;
        if r.settled() {
            return Ok(cost);
        }
    }
    for l in 1..sv.version.num_levels() {
        let groups = &plan.levels[l];
        if groups.is_empty() {
            continue;
        }
        let level = Level::from_index(l);
        for (g, cols) in groups {
            // Until the row's insert or delete is found, every wanted
            // column's lineage is followed without a gap: the event sits in
            // every lineage, at a different depth in each, and only a
            // lineage read from the top shows its newest event first. Once
            // it is known, a group is probed only for a column still
            // unresolved. (`r` changes only after the level's groups.)
            let probed = cols.iter().any(|&v| {
                if ambiguous || r.event.is_none() {
                    probe_cols.contains(&v)
                } else {
                    r.needs(v)
                }
            });
            if !probed {
                continue;
            }
            let Some(f) = sv.version.find_file(level, *g, key) else {
                continue;
            };
            cost.files += 1;
            cost.deepest = l;
            match CgReader::of_listed(f)? {
                Some(reader) => {
                    if !reader.may_contain(key) {
                        continue;
                    }
                    cost.blocks += 1;
                    collect_rows(&mut entries, reader, key, snap, |v| r.needs(v))?;
                }
                None => {
                    let mut visit = collect_pieces(&mut entries, key, snap);
                    if f.table.get(key, seek, &mut visit)? {
                        cost.blocks += 1;
                    }
                }
            }
        }
        if !ambiguous {
            offer_all(r, schema, &mut entries)?;
            if r.settled() {
                return Ok(cost);
            }
        }
    }
    if ambiguous {
        offer_all(r, schema, &mut entries)?;
    }
    Ok(cost)
}

/// Every version of `key` in every source, for debugging: memtables, level
/// 0, and each run of each level, newest first.
#[cfg(feature = "testing")]
pub(crate) fn debug_versions(sv: &SuperVersion, plan: &ReadPlan, key: &[u8]) -> String {
    use std::fmt::Write;
    let schema = &plan.state.shape.pieces;
    let mut out = String::new();
    let describe = |e: &Entry| -> String {
        match &e.src {
            Src::Piece(p) if e.kind != ValueKind::Delete => {
                let v = super::piece::PieceView::parse(schema, p);
                match v {
                    Ok(v) => format!(
                        "cols {:?}",
                        (0..schema.len()).filter(|&c| v.has(c)).collect::<Vec<_>>()
                    ),
                    Err(e) => format!("bad piece {e}"),
                }
            }
            Src::Row(b, r) => format!(
                "cols {:?}",
                b.value_columns()
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| b.cell(i, *r).is_some())
                    .map(|(_, &v)| v)
                    .collect::<Vec<_>>()
            ),
            _ => String::new(),
        }
    };
    let snap = SeqNo(crate::key::MAX_SEQNO.get());
    let seek = SeekKey::new(key, snap);
    let mut entries = Vec::new();
    {
        let mut visit = collect_pieces(&mut entries, key, snap);
        sv.mem.get(seek.as_slice(), &mut visit);
        for imm in &sv.imms {
            imm.get(seek.as_slice(), &mut visit);
        }
    }
    for e in &entries {
        let _ = writeln!(out, "mem: {} {:?} {}", e.seq.get(), e.kind, describe(e));
    }
    entries.clear();
    for f in &sv.version.levels[0] {
        {
            let mut visit = collect_pieces(&mut entries, key, snap);
            let _ = f.table.get(key, seek.as_slice(), &mut visit);
        }
        for e in entries.drain(..) {
            let _ = writeln!(
                out,
                "L0 #{}: {} {:?} {}",
                f.number,
                e.seq.get(),
                e.kind,
                describe(&e)
            );
        }
    }
    if let Err(e) = sv.version.check_invariants() {
        let _ = writeln!(out, "VERSION INVARIANT BROKEN: {e}");
    }
    for l in 1..sv.version.num_levels() {
        for (g, cols) in &plan.levels[l] {
            let n = sv
                .version
                .run(Level::from_index(l), *g)
                .iter()
                .filter(|f| f.overlaps(Some(key), Some(key)))
                .count();
            if n > 1 {
                let _ = writeln!(out, "L{l} g{}: {n} files overlap the key", g.0);
            }
            let Some(f) = sv.version.find_file(Level::from_index(l), *g, key) else {
                continue;
            };
            match CgReader::of(f) {
                Some(reader) => {
                    let _ = collect_rows(&mut entries, reader, key, snap, |_| false);
                }
                None => {
                    let mut visit = collect_pieces(&mut entries, key, snap);
                    let _ = f.table.get(key, seek.as_slice(), &mut visit);
                }
            }
            for e in entries.drain(..) {
                let _ = writeln!(
                    out,
                    "L{l} g{} {cols:?} #{}: {} {:?} {}",
                    g.0,
                    f.number,
                    e.seq.get(),
                    e.kind,
                    describe(&e)
                );
            }
        }
    }
    out
}
