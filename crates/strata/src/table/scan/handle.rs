//! The public face of a scan: what it reads ([`ScanOptions`]) and the
//! iterator of batches it returns ([`TableScan`]), which records what the
//! scan did in the table's statistics when it ends.

use std::ops::Bound as RangeBound;
use std::sync::Arc;

use arrow_array::RecordBatch;

use super::{ParallelScan, ScanCounters, Scanner};
use crate::db::Snapshot;
use crate::error::Result;
use crate::table::predicate::Predicate;
use crate::table::stats::TableStats;
use crate::table::table::TableInner;
use crate::table::value::Value;

/// What a scan reads.
#[derive(Clone, Debug)]
pub struct ScanOptions {
    /// Column names to return, in order; `None` for every column.
    pub columns: Option<Vec<String>>,
    /// Rows must satisfy it.
    pub predicate: Option<Predicate>,
    /// Lower bound on the key: values of the first key columns (a prefix
    /// of the key).
    pub lower: RangeBound<Vec<Value>>,
    /// Upper bound on the key, likewise.
    pub upper: RangeBound<Vec<Value>>,
    /// Read at this snapshot's sequence number instead of the latest state.
    /// A snapshot at it must be live when the scan opens (the scan then
    /// holds its own until it has pinned what it reads); a number no live
    /// snapshot holds is [`Error::InvalidArgument`](crate::Error), since
    /// compaction may have dropped versions a read at it needs.
    pub snapshot: Option<crate::key::SeqNo>,
    /// Rows per batch (default 8192).
    pub batch_rows: usize,
    /// Let the scan read through a secondary index when the predicate
    /// requires an indexed column to equal one or a few values (default
    /// true); see [`ScanCounters::index`].
    pub use_index: bool,
    /// Read the range as up to this many key ranges, each on a thread of
    /// its own (default 1). Batches then arrive as the parts produce them:
    /// each part's in key order, the parts interleaved, so a caller that
    /// needs key order across the whole scan keeps 1. The range is cut at
    /// file boundaries of the table's largest sorted run; a range that
    /// does not span several files, and a scan answered through an index,
    /// is read by one scan ([`TableScan::parts`] says which happened).
    pub threads: usize,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            columns: None,
            predicate: None,
            lower: RangeBound::Unbounded,
            upper: RangeBound::Unbounded,
            snapshot: None,
            batch_rows: 8192,
            use_index: true,
            threads: 1,
        }
    }
}

impl ScanOptions {
    /// Returns only the named columns.
    pub fn columns(mut self, names: &[&str]) -> Self {
        self.columns = Some(names.iter().map(|s| s.to_string()).collect());
        self
    }

    /// Keeps only rows satisfying `p`.
    pub fn filter(mut self, p: Predicate) -> Self {
        self.predicate = Some(p);
        self
    }

    /// Keys from `lo` (inclusive) to `hi` (exclusive), each a prefix of the
    /// key columns' values.
    pub fn range(mut self, lo: Vec<Value>, hi: Vec<Value>) -> Self {
        self.lower = RangeBound::Included(lo);
        self.upper = RangeBound::Excluded(hi);
        self
    }

    /// Reads the range on up to `n` threads ([`ScanOptions::threads`]):
    /// batches are then not in key order across the scan.
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n.max(1);
        self
    }

    /// Reads at `snapshot`.
    pub fn at(mut self, snapshot: &Snapshot) -> Self {
        self.snapshot = Some(snapshot.seqno());
        self
    }
}

/// A running scan: an iterator of Arrow record batches of the projected
/// columns. Holds the files it reads until dropped.
pub struct TableScan {
    /// The table scan, or `None` when an index answered (`rows`) or the
    /// scan runs in parts (`parallel`).
    pub(in crate::table) scanner: Option<Scanner>,
    pub(in crate::table) parallel: Option<ParallelScan>,
    pub(in crate::table) rows: Option<std::vec::IntoIter<RecordBatch>>,
    /// The counters of a scan an index answered.
    pub(in crate::table) counters: ScanCounters,
    pub(in crate::table) inner: Arc<TableInner>,
    pub(in crate::table) want: Vec<usize>,
    pub(in crate::table) finished: bool,
}

impl TableScan {
    /// What the scan has done so far.
    pub fn counters(&self) -> &ScanCounters {
        match (&self.scanner, &self.parallel) {
            (Some(s), _) => &s.counters,
            (None, Some(p)) => &p.counters,
            (None, None) => &self.counters,
        }
    }

    /// How many key ranges the scan was cut into, read by up to
    /// [`ScanOptions::threads`] threads in turn: 1 for a single scan (also
    /// when more threads were asked for but the range could not be cut).
    pub fn parts(&self) -> usize {
        self.parallel.as_ref().map_or(1, ParallelScan::parts)
    }

    fn finish(&mut self) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        // (A parallel scan ended early counts the parts that finished.)
        if self.scanner.is_none() && self.parallel.is_none() {
            // The index's point reads were counted as such.
            TableStats::bump(&self.inner.stats.scans, 1);
            TableStats::bump(&self.inner.stats.scan_rows_read, self.counters.rows_read);
            TableStats::bump(
                &self.inner.stats.scan_rows_returned,
                self.counters.rows_returned,
            );
            return;
        }
        let c = self.counters();
        let s = &self.inner.stats;
        TableStats::bump(&s.scans, 1);
        TableStats::bump(&s.scan_rows_read, c.rows_read);
        TableStats::bump(&s.scan_rows_returned, c.rows_returned);
        TableStats::bump(&s.scan_blocks_read, c.blocks_read);
        TableStats::bump(&s.scan_blocks_skipped, c.blocks_skipped);
        s.record_scan(&c.entries_per_level, &self.want);
    }
}

impl Iterator for TableScan {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        if self.finished {
            return None;
        }
        let next = match (&mut self.scanner, &mut self.parallel, &mut self.rows) {
            (Some(s), _, _) => s.next_batch(),
            (None, Some(p), _) => p.next_batch(),
            (None, None, Some(rows)) => Ok(rows.next()),
            (None, None, None) => Ok(None),
        };
        match next {
            Ok(Some(b)) => Some(Ok(b)),
            Ok(None) => {
                self.finish();
                None
            }
            Err(e) => {
                self.finish();
                Some(Err(e))
            }
        }
    }
}

impl Drop for TableScan {
    fn drop(&mut self) {
        self.finish();
    }
}
