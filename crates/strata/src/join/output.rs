//! Where joined pairs go: Arrow batches streamed to the caller, or a count
//! and an order-independent checksum for benchmarks.

use std::sync::Arc;
use std::sync::mpsc::SyncSender;

use arrow_array::RecordBatch;
use arrow_schema::Schema as ArrowSchema;
use xxhash_rust::xxh3::xxh3_64;

use super::side::Side;
use crate::error::{Error, Result};
use crate::table::Value;
use crate::table::arrowio::rows_to_batch;

/// Receives each joined pair: the left and the right row's output columns
/// as tuple payloads.
pub(crate) trait Sink {
    fn emit(&mut self, left: &[u8], right: &[u8]) -> Result<()>;

    /// A sink of the same output for another thread (a hash join joins
    /// its partitions on several), or `None` when pairs must all reach
    /// this one. A fork is ended with [`Sink::close`] and what it returns
    /// is given back to this sink's [`Sink::absorb`].
    fn fork(&self) -> Option<Box<dyn Sink + Send + '_>> {
        None
    }

    /// Ends a fork: sends what it holds, and says what it did.
    fn close(&mut self) -> Result<Forked> {
        Ok(Forked::default())
    }

    /// Counts a closed fork's pairs as this sink's.
    fn absorb(&mut self, _fork: Forked) {}
}

/// What a closed fork did, for its parent sink.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Forked {
    pub rows: u64,
    pub checksum: u64,
}

/// Orders pairs for the sink: operators name their inputs build and probe
/// (or outer and inner); `swapped` says the first is the right side.
pub(crate) struct Emit<'a> {
    pub sink: &'a mut dyn Sink,
    pub swapped: bool,
}

impl Emit<'_> {
    pub(crate) fn pair(&mut self, first: &[u8], second: &[u8]) -> Result<()> {
        if self.swapped {
            self.sink.emit(second, first)
        } else {
            self.sink.emit(first, second)
        }
    }
}

/// Counts pairs and sums a hash of each: the same multiset of rows gives
/// the same checksum whatever the method and order.
#[derive(Default)]
pub(crate) struct CountSink {
    pub rows: u64,
    pub checksum: u64,
}

impl Sink for CountSink {
    fn emit(&mut self, left: &[u8], right: &[u8]) -> Result<()> {
        self.rows += 1;
        self.checksum = self
            .checksum
            .wrapping_add(xxh3_64(left) ^ xxh3_64(right).rotate_left(17));
        Ok(())
    }

    fn fork(&self) -> Option<Box<dyn Sink + Send + '_>> {
        Some(Box::new(CountSink::default()))
    }

    fn close(&mut self) -> Result<Forked> {
        Ok(Forked {
            rows: self.rows,
            checksum: self.checksum,
        })
    }

    // The checksum is a sum, so the forks' add up to the whole join's.
    fn absorb(&mut self, fork: Forked) {
        self.rows += fork.rows;
        self.checksum = self.checksum.wrapping_add(fork.checksum);
    }
}

/// Builds Arrow batches of the output columns and sends each full one.
pub(crate) struct BatchSink<'a> {
    left: &'a Side,
    right: &'a Side,
    schema: Arc<ArrowSchema>,
    /// Per output column, its position in a left-then-right row.
    order: Vec<usize>,
    rows: Vec<Vec<Value>>,
    batch_rows: usize,
    sent: u64,
    tx: SyncSender<Result<RecordBatch>>,
}

impl<'a> BatchSink<'a> {
    pub(crate) fn new(
        left: &'a Side,
        right: &'a Side,
        schema: Arc<ArrowSchema>,
        order: Vec<usize>,
        batch_rows: usize,
        tx: SyncSender<Result<RecordBatch>>,
    ) -> BatchSink<'a> {
        BatchSink {
            left,
            right,
            schema,
            order,
            rows: Vec::new(),
            batch_rows: batch_rows.max(1),
            sent: 0,
            tx,
        }
    }

    /// Rows sent so far.
    pub(crate) fn rows_sent(&self) -> u64 {
        self.sent
    }

    /// Sends the rows gathered so far as one batch.
    pub(crate) fn flush(&mut self) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let types: Vec<_> = self
            .left
            .types
            .iter()
            .chain(self.right.types.iter())
            .copied()
            .collect();
        let columns: Vec<_> = self.order.iter().map(|&c| (c, types[c])).collect();
        let batch = rows_to_batch(Arc::clone(&self.schema), &columns, &self.rows)?;
        self.sent += self.rows.len() as u64;
        self.rows.clear();
        self.tx.send(Ok(batch)).map_err(|_| closed())
    }
}

/// The error a join stops with when its reader went away.
pub(crate) fn closed() -> Error {
    Error::InvalidArgument("the join's result stream was dropped".into())
}

impl Sink for BatchSink<'_> {
    fn emit(&mut self, left: &[u8], right: &[u8]) -> Result<()> {
        let mut row = self.left.decode(left)?;
        row.extend(self.right.decode(right)?);
        self.rows.push(row);
        if self.rows.len() >= self.batch_rows {
            self.flush()?;
        }
        Ok(())
    }

    fn fork(&self) -> Option<Box<dyn Sink + Send + '_>> {
        Some(Box::new(BatchSink::new(
            self.left,
            self.right,
            Arc::clone(&self.schema),
            self.order.clone(),
            self.batch_rows,
            self.tx.clone(),
        )))
    }

    fn close(&mut self) -> Result<Forked> {
        self.flush()?;
        Ok(Forked {
            rows: self.sent,
            checksum: 0,
        })
    }

    fn absorb(&mut self, fork: Forked) {
        self.sent += fork.rows;
    }
}
