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
    let cap = budget.limit() / 2;
    let mut chunk: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(CHUNK);
    let mut charged = 0usize;
    let mut run = |chunk: &mut Vec<(Vec<u8>, Vec<u8>)>, charged: &mut usize| -> Result<()> {
        chunk.sort_by(|a, b| a.0.cmp(&b.0));
        let mut keys: Vec<&[u8]> = chunk.iter().map(|(k, _)| k.as_slice()).collect();
        keys.dedup();
        let found = look_up(inner, index, &keys, snapshot, threads)?;
        // The inner rows are held while the chunk's pairs are emitted.
        let held: usize = found.iter().flatten().map(|r| tuple_bytes(&[], r)).sum();
        budget.charge(
            held,
            "the inner rows of one chunk of an index nested loop join",
        )?;
        let mut at = 0;
        let result = (|| {
            for (i, (k, r)) in chunk.iter().enumerate() {
                if i > 0 && chunk[i - 1].0 != *k {
                    at += 1;
                }
                for inner_row in &found[at] {
                    emit.pair(r, inner_row)?;
                }
            }
            Ok(())
        })();
        budget.release(held);
        chunk.clear();
        budget.release(*charged);
        *charged = 0;
        result
    };
    outer.for_each(&mut |k, r| {
        let n = tuple_bytes(&k, &r);
        if chunk.len() >= CHUNK || charged + n > cap || !budget.try_charge(n) {
            run(&mut chunk, &mut charged)?;
            budget.charge(n, "one join tuple")?;
        }
        charged += n;
        chunk.push((k, r));
        Ok(())
    })?;
    if !chunk.is_empty() {
        run(&mut chunk, &mut charged)?;
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
