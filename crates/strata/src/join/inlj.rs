//! Index nested loop join: scan the outer side, look each value up on the
//! inner side (by primary key or through an index).
//!
//! Outer tuples are taken a chunk at a time and sorted by value, so each
//! distinct value is looked up once and neighbouring lookups touch the same
//! blocks. With several threads a chunk's distinct values are split into
//! contiguous ranges, one per thread; pairs are still emitted in the
//! chunk's order.

use std::cell::Cell;

use super::hash::{Source, tuple_bytes};
use super::output::Emit;
use super::side::Side;
use super::spill::{Budget, SpillSpace};
use crate::error::{Error, Result};
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
    outer.for_each(&space.budget, &mut |k, r| {
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
    budget: &Budget,
    emit: &mut Emit<'_>,
) -> Result<()> {
    let mut at = 0; // the first chunk tuple of the next round's first key
    let mut rounds: Vec<&[&[u8]]> = keys.chunks(KEYS_PER_ROUND * threads.max(1)).rev().collect();
    while let Some(round) = rounds.pop() {
        let Some((found, held)) = look_up(inner, index, round, snapshot, threads, budget)? else {
            if round.len() > 1 {
                let (a, b) = round.split_at(round.len() / 2);
                rounds.push(b);
                rounds.push(a);
                continue;
            }
            return Err(budget.refusal(format!(
                "the inner rows of one value in an index nested loop join ({} bytes in use); \
                 give the join more memory, or use a hash or sort-merge join, which spill such \
                 a value",
                budget.used()
            )));
        };
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

/// Inner rows per key, and the bytes charged for them.
type Found = (Vec<Vec<Vec<u8>>>, usize);

/// The inner rows of each of `keys` (sorted, distinct), each charged to
/// `budget` as it is read; `None` (with nothing left charged) when the
/// budget cannot hold them all.
fn look_up(
    inner: &Side,
    index: Option<&Index>,
    keys: &[&[u8]],
    snapshot: SeqNo,
    threads: usize,
    budget: &Budget,
) -> Result<Option<Found>> {
    let one = |keys: &[&[u8]]| -> Result<Option<Found>> {
        let mut out = vec![Vec::new(); keys.len()];
        let charged = Cell::new(0usize);
        let full = Cell::new(false);
        let take = |rows: &mut Vec<Vec<u8>>, row: Vec<u8>| {
            let n = tuple_bytes(&[], &row);
            if !budget.try_charge(n) {
                full.set(true);
                return false;
            }
            charged.set(charged.get() + n);
            rows.push(row);
            true
        };
        let read = match index {
            // Point reads by primary key share one read plan; a row that
            // does not fit stops them (by an error the caller never sees).
            None => {
                inner
                    .table
                    .get_many_encoded(keys, &inner.cols, Some(snapshot), &mut |n, row| match row {
                        Some(row) if !take(&mut out[n], inner.row_bytes(&row)?) => {
                            Err(Error::InvalidArgument("the budget is full".into()))
                        }
                        _ => Ok(()),
                    })
            }
            Some(_) => keys.iter().zip(out.iter_mut()).try_for_each(|(k, rows)| {
                if full.get() {
                    return Ok(());
                }
                inner.for_each_match(k, index, snapshot, &mut |row| Ok(take(rows, row)))?;
                Ok(())
            }),
        };
        let charged = charged.get();
        if full.get() {
            budget.release(charged);
            return Ok(None);
        }
        if let Err(e) = read {
            budget.release(charged);
            return Err(e);
        }
        Ok(Some((out, charged)))
    };
    if threads <= 1 || keys.len() < 2 * threads {
        return one(keys);
    }
    let per = keys.len().div_ceil(threads);
    let parts: Vec<Result<Option<Found>>> = std::thread::scope(|s| {
        let handles: Vec<_> = keys
            .chunks(per)
            .map(|part| s.spawn(move || one(part)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::InvalidArgument("a lookup thread panicked".into()))
                })
            })
            .collect()
    });
    // Every part's charge goes back unless all of them fit.
    let mut out = Vec::with_capacity(keys.len());
    let (mut charged, mut fits, mut err) = (0usize, true, None);
    for part in parts {
        match part {
            Ok(Some((rows, n))) => {
                charged += n;
                out.extend(rows);
            }
            Ok(None) => fits = false,
            Err(e) => err = Some(e),
        }
    }
    if err.is_some() || !fits {
        budget.release(charged);
    }
    match err {
        Some(e) => Err(e),
        None => Ok(fits.then_some((out, charged))),
    }
}
