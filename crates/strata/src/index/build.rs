//! Building an index over the rows a table holds already, without
//! stopping writes.
//!
//! The index is first registered as building: from then on every table
//! write maintains it (and takes the table's index lock). The builder then
//! walks the table in key order, a chunk of rows at a time; for each chunk
//! it takes the index lock, reads the chunk's rows as they are now and
//! adds their entries in one write batch. A write to a row in a chunk
//! already built maintains the entry like any write; a write to a row not
//! built yet may add an entry the builder adds again, which posting lists
//! and composite keys absorb (adds are idempotent). Writers wait at most
//! one chunk.

use std::ops::Bound;

use super::Index;
use super::maintain;
use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::options::WriteOptions;
use crate::table::keycodec;
use crate::table::{ScanOptions, Table, Value, array_to_values};

/// Rows a build reads and indexes under one hold of the index lock.
const CHUNK_ROWS: usize = 4096;

/// Adds the entries of every row of `table` to `index`; calls `progress`
/// with the rows done so far after each chunk. Returns the rows indexed.
pub(crate) fn build(table: &Table, index: &Index, progress: &mut dyn FnMut(u64)) -> Result<u64> {
    let schema = table.schema().clone();
    let key_cols = schema.key_indices().to_vec();
    let mut relevant: Vec<usize> = std::iter::once(index.column)
        .chain(index.covering.iter().copied())
        .collect();
    relevant.sort_unstable();
    relevant.dedup();
    // Scan the key columns, then the index's columns.
    let mut cols: Vec<usize> = key_cols.clone();
    cols.extend(relevant.iter().copied());
    let names: Vec<&str> = cols
        .iter()
        .map(|&c| schema.columns()[c].name.as_str())
        .collect();
    let mut after: Option<Vec<Value>> = None;
    let mut done = 0u64;
    // `drop_index` of the index being built removes it from the set and
    // drops its keyspace: the build stops with an error that says so.
    let dropped = || {
        (!table.index_set().indexes.iter().any(|i| i.id == index.id)).then(|| {
            Error::InvalidArgument(format!(
                "index {:?} was dropped while it was being built",
                index.name
            ))
        })
    };
    loop {
        if let Some(e) = dropped() {
            return Err(e);
        }
        let _lock = table.inner().index_lock.lock();
        let opts = ScanOptions {
            columns: Some(names.iter().map(|s| s.to_string()).collect()),
            lower: after.clone().map_or(Bound::Unbounded, Bound::Excluded),
            batch_rows: CHUNK_ROWS,
            ..ScanOptions::default()
        };
        let mut scan = table.scan(opts)?;
        let Some(batch) = scan.next().transpose()?.filter(|b| b.num_rows() > 0) else {
            break;
        };
        drop(scan);
        let columns = cols
            .iter()
            .zip(batch.columns())
            .map(|(&c, a)| array_to_values(a.as_ref(), schema.columns()[c].ty))
            .collect::<Result<Vec<_>>>()?;
        let n = batch.num_rows();
        let mut rows = Vec::with_capacity(n);
        for r in 0..n {
            let mut row = columns.iter().map(|c| c[r].clone());
            let key: Vec<Value> = row.by_ref().take(key_cols.len()).collect();
            let pk = keycodec::encode_key(&schema, &key)?;
            rows.push((pk, row.collect::<Vec<Value>>()));
            if r + 1 == n {
                after = Some(key);
            }
        }
        let mut wb = WriteBatch::new();
        maintain::add_rows(index, &schema, &relevant, &rows, &mut wb)?;
        if let Err(e) = table.core().write(WriteOptions::default(), wb) {
            return Err(dropped().unwrap_or(e));
        }
        done += n as u64;
        progress(done);
    }
    Ok(done)
}
