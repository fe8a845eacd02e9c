//! Index nested loop join: scan the outer side, look each value up on the
//! inner side (by primary key or through an index).
//!
//! Outer tuples are taken a chunk at a time and sorted by value, so each
//! distinct value is looked up once and neighbouring lookups touch the same
//! blocks. With several threads a chunk's distinct values are split into
//! contiguous ranges, one per thread; pairs are still emitted in the
//! chunk's order.

use super::hash::{Source, tuple_bytes};
use super::output::Emit;
use super::side::Side;
use super::spill::SpillSpace;
use crate::error::Result;
use crate::index::Index;
use crate::key::SeqNo;

/// Outer tuples per chunk.
const CHUNK: usize = 4096;

/// Joins `outer` with `inner`, looking inner rows up through `index` (or
/// the primary key when `None`); emits (outer row, inner row) pairs.
pub(crate) fn nested_loop(
    outer: &Source<'_>,
    inner: &Side,
    index: Option<&Index>,
    snapshot: SeqNo,
    threads: usize,
    space: &SpillSpace,
    emit: &mut Emit<'_>,
) -> Result<()> {
    let budget = &*space.budget;
    // Half of what is free when the join starts (a chain's step shares the
    // budget with the spill file it writes).
    let cap = budget.limit().saturating_sub(budget.used()) / 2;
    let mut chunk: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(CHUNK);
    let mut charged = 0usize;
    let mut run = |chunk: &mut Vec<(Vec<u8>, Vec<u8>)>, charged: &mut usize| -> Result<()> {
        chunk.sort_by(|a, b| a.0.cmp(&b.0));
        let mut keys: Vec<&[u8]> = chunk.iter().map(|(k, _)| k.as_slice()).collect();
        keys.dedup();
        let result = emit_chunk(chunk, &keys, inner, index, snapshot, threads, budget, emit);
        chunk.clear();
        budget.release(*charged);
        *charged = 0;
        result
    };
    outer.for_each(&mut |k, r| {
        let n = tuple_bytes(k, r);
        if chunk.len() >= CHUNK || charged + n > cap || !budget.try_charge(n) {
            run(&mut chunk, &mut charged)?;
            budget.charge(n, "one join tuple")?;
        }
        charged += n;
        chunk.push((k.to_vec(), r.to_vec()));
        Ok(())
    })?;
    if !chunk.is_empty() {
        run(&mut chunk, &mut charged)?;
    }
    Ok(())
}

/// Distinct values looked up together (per thread).
const KEYS_PER_ROUND: usize = 256;

/// Looks up the chunk's distinct `keys` a round at a time and emits each
/// outer tuple with its inner rows. A round's inner rows are charged while
/// they are held; a round that does not fit is split down to single
/// values, and one value whose rows do not fit fails the join (the hash
/// and sort-merge joins spill such a value).
#[allow(clippy::too_many_arguments)]
fn emit_chunk(
    chunk: &[(Vec<u8>, Vec<u8>)],
    keys: &[&[u8]],
    inner: &Side,
    index: Option<&Index>,
    snapshot: SeqNo,
    threads: usize,
    budget: &super::spill::Budget,
    emit: &mut Emit<'_>,
) -> Result<()> {
    let mut at = 0; // the first chunk tuple of the next round's first key
    let mut rounds: Vec<&[&[u8]]> = keys.chunks(KEYS_PER_ROUND * threads.max(1)).rev().collect();
    while let Some(round) = rounds.pop() {
        let found = look_up(inner, index, round, snapshot, threads)?;
        let held: usize = found.iter().flatten().map(|r| tuple_bytes(&[], r)).sum();
        if !budget.try_charge(held) {
            if round.len() > 1 {
                let (a, b) = round.split_at(round.len() / 2);
                rounds.push(b);
                rounds.push(a);
                continue;
            }
            budget.charge(
                held,
                "the inner rows of one value in an index nested loop join",
            )?;
        }
        let result = (|| {
            for (key, rows) in round.iter().zip(&found) {
                while at < chunk.len() && chunk[at].0.as_slice() == *key {
                    for inner_row in rows {
                        emit.pair(&chunk[at].1, inner_row)?;
                    }
                    at += 1;
                }
            }
            Ok(())
        })();
        budget.release(held);
        result?;
    }
    Ok(())
}

/// The inner rows of each of `keys` (sorted, distinct).
fn look_up(
    inner: &Side,
    index: Option<&Index>,
    keys: &[&[u8]],
    snapshot: SeqNo,
    threads: usize,
) -> Result<Vec<Vec<Vec<u8>>>> {
    let one = |keys: &[&[u8]]| -> Result<Vec<Vec<Vec<u8>>>> {
        match index {
            // Point reads by primary key share one read plan.
            None => {
                let mut out = vec![Vec::new(); keys.len()];
                inner.table.get_many_encoded(
                    keys,
                    &inner.cols,
                    Some(snapshot),
                    &mut |n, row| {
                        if let Some(row) = row {
                            out[n].push(inner.row_bytes(&row)?);
                        }
                        Ok(())
                    },
                )?;
                Ok(out)
            }
            Some(_) => keys
                .iter()
                .map(|k| {
                    let mut rows = Vec::new();
                    inner.lookup(k, index, snapshot, &mut rows)?;
                    Ok(rows)
                })
                .collect(),
        }
    };
    if threads <= 1 || keys.len() < 2 * threads {
        return one(keys);
    }
    let per = keys.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = keys
            .chunks(per)
            .map(|part| s.spawn(move || one(part)))
            .collect();
        let mut out = Vec::with_capacity(keys.len());
        for h in handles {
            let part = h.join().map_err(|_| {
                crate::error::Error::InvalidArgument("a lookup thread panicked".into())
            })??;
            out.extend(part);
        }
        Ok(out)
    })
}
