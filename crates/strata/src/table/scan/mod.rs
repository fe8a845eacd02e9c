//! Projected range scans (LASER's scan(lo, hi, Π)) streaming Arrow batches.
//!
//! A scan opens a source for each memtable and level-0 file (whole rows)
//! and, on each deeper level, for each group holding a projected or
//! filtered column (its sorted run of files): LASER's level-merging and
//! column-merging iterators. Rather than merging them row by row, the scan
//! proceeds in *windows* ([`window`]): every source presents its rows as
//! columnar chunks ([`source`]: column-group blocks as stored, whole-row
//! entries staged into the same form), a window takes each source's rows
//! up to the smallest last key among the chunks, merges them by key and
//! resolves each key to references into the blocks, and the batch is then
//! filled column by column from those references.
//!
//! A predicate skips a column-group block without reading it when the
//! block's statistics show no row can match and no other source holds a
//! key at or before the block's last key (so no newer version elsewhere
//! could make one of its rows match); rows are then tested on their
//! resolved values before they are output. Memory is bounded by one chunk
//! per source and one batch.

mod filter;
mod gather;
mod handle;
mod parallel;
mod source;
mod window;

pub use self::handle::{ScanOptions, TableScan};
pub(crate) use self::parallel::ParallelScan;

use std::sync::Arc;

use arrow_array::builder::PrimitiveBuilder;
use arrow_array::{ArrowPrimitiveType, RecordBatch};
use arrow_schema::Schema as ArrowSchema;

use self::source::{CgRun, Chunk, PieceRun, at_or_after, is_cg};
use self::window::Window;
use super::arrowio::ColumnBuilder;
use super::keycodec::KeyDecoder;
use super::predicate::Bound;
use super::schema::{ColumnType, Schema};
use super::view::{OwnedCell, ReadPlan, Resolver};
use crate::db::SuperVersion;
use crate::error::{Error, Result};
use crate::ids::Level;
use crate::key::{MAX_SEQNO, SeqNo, make_seek_key};
use crate::version::{FileMeta, LevelIter};

/// What a scan reads.
pub(crate) struct ScanSpec {
    /// Schema indices of the output columns, in output order.
    pub projection: Vec<usize>,
    pub predicate: Option<Bound>,
    /// Encoded keys: inclusive lower, exclusive upper.
    pub lower: Option<Vec<u8>>,
    pub upper: Option<Vec<u8>>,
    pub snap: SeqNo,
    pub batch_rows: usize,
}

/// What a scan did, for statistics and the layout advisor.
#[derive(Clone, Debug, Default)]
pub struct ScanCounters {
    /// Rows resolved (before the predicate).
    pub rows_read: u64,
    /// Rows returned.
    pub rows_returned: u64,
    /// Column-group blocks read.
    pub blocks_read: u64,
    /// Column-group blocks skipped by their statistics.
    pub blocks_skipped: u64,
    /// Entries consumed per level (index 0: memtables and level 0).
    pub entries_per_level: Vec<u64>,
    /// The secondary index the scan read through instead of the table
    /// (its rows were point reads), if one did.
    pub index: Option<String>,
}

enum Source {
    Cg(CgRun),
    Piece(PieceRun),
}

/// One source and its position: rows `row..` of `chunk` are unread.
struct Cursor {
    source: Source,
    chunk: Option<Chunk>,
    row: usize,
    /// 0 for memtables and level 0, else the level.
    level: usize,
}

impl Cursor {
    fn has_rows(&self) -> bool {
        self.chunk
            .as_ref()
            .is_some_and(|c| self.row < c.block.rows())
    }

    /// Whether anything follows the current chunk.
    fn more(&self) -> bool {
        match &self.source {
            Source::Cg(c) => !c.exhausted(),
            Source::Piece(p) => !p.exhausted(),
        }
    }

    fn current_key(&self) -> Option<&[u8]> {
        let c = self.chunk.as_ref()?;
        (self.row < c.block.rows()).then(|| c.block.user_key(self.row))
    }

    fn last_key(&self) -> Option<&[u8]> {
        let c = self.chunk.as_ref()?;
        let n = c.block.rows();
        (n > 0).then(|| c.block.user_key(n - 1))
    }
}

/// Where an output column comes from.
#[derive(Clone, Copy)]
enum Output {
    /// A value column's slot in the window.
    Value(usize),
    /// A key column's position in the key.
    Key(usize),
}

/// Appends the keys of output rows `from..to` of `w`, each one integer
/// read by `part`, to `b`.
fn append_keys<T: ArrowPrimitiveType>(
    w: &Window,
    from: usize,
    to: usize,
    b: &mut PrimitiveBuilder<T>,
    part: impl Fn(&mut KeyDecoder<'_>) -> Result<T::Native>,
) -> Result<()> {
    for i in from..to {
        b.append_value(part(&mut KeyDecoder::new(w.key(i)))?);
    }
    Ok(())
}

/// A running scan; yields Arrow batches.
pub(crate) struct Scanner {
    spec: ScanSpec,
    schema: Arc<Schema>,
    out_schema: Arc<ArrowSchema>,
    cursors: Vec<Cursor>,
    window: Window,
    resolver: Resolver,
    /// Per value column: its slot in the window, if the scan reads it.
    slot_of: Vec<Option<usize>>,
    outputs: Vec<Output>,
    builders: Vec<ColumnBuilder>,
    key_cells: Vec<OwnedCell>,
    /// The predicate reads a key column.
    predicate_needs_key: bool,
    /// The predicate is evaluated over whole windows (it reads value
    /// columns only).
    predicate_vectorized: bool,
    keep: Vec<bool>,
    bound: Vec<u8>,
    pub counters: ScanCounters,
    done: bool,
    // Keeps the files of the scan alive.
    _sv: Arc<SuperVersion>,
}

impl Scanner {
    /// Opens the sources of a scan of `sv` under `plan`.
    pub(crate) fn new(
        sv: Arc<SuperVersion>,
        plan: &ReadPlan,
        schema: Arc<Schema>,
        spec: ScanSpec,
    ) -> Result<Scanner> {
        let pieces = plan.state.shape.pieces.clone();
        let mut needed: Vec<usize> = spec.projection.clone();
        let mut predicate_cols = Vec::new();
        if let Some(p) = &spec.predicate {
            p.columns(&mut predicate_cols);
            needed.extend_from_slice(&predicate_cols);
        }
        let mut want: Vec<usize> = needed
            .iter()
            .filter_map(|&i| schema.value_number(i))
            .collect();
        want.sort_unstable();
        want.dedup();
        // The lineage read for existence when no value column is wanted.
        let event_cols: Vec<usize> = if want.is_empty() {
            (0..pieces.len().min(1)).collect()
        } else {
            want.clone()
        };
        let lo = spec.lower.as_deref();
        let hi = spec.upper.as_deref();
        let in_range = |f: &Arc<FileMeta>| {
            !(hi.is_some_and(|h| f.smallest_user_key() >= h)
                || lo.is_some_and(|l| f.largest_user_key() < l))
        };
        let piece = |it: Box<dyn crate::iter::InternalIterator>| {
            Source::Piece(PieceRun::new(it, &pieces, &event_cols, hi))
        };
        let mut sources: Vec<(Source, usize)> = vec![(piece(sv.mem.iter()), 0)];
        for m in &sv.imms {
            sources.push((piece(m.iter()), 0));
        }
        for f in sv.version.levels[0].iter().filter(|f| in_range(f)) {
            sources.push((piece(Box::new(f.table.iter())), 0));
        }
        for (l, groups) in plan.levels.iter().enumerate().skip(1) {
            for (g, cols) in groups {
                if !cols.iter().any(|c| event_cols.contains(c)) {
                    continue;
                }
                let files: Vec<Arc<FileMeta>> = sv
                    .version
                    .run(Level::from_index(l), *g)
                    .iter()
                    .filter(|f| in_range(f))
                    .cloned()
                    .collect();
                let Some(first) = files.first() else {
                    continue;
                };
                let source = if is_cg(first) {
                    Source::Cg(CgRun::new(files, &pieces)?)
                } else {
                    piece(Box::new(LevelIter::new(files)))
                };
                sources.push((source, l));
            }
        }
        let seek = lo.map(|l| make_seek_key(l, MAX_SEQNO));
        let mut cursors = Vec::with_capacity(sources.len());
        for (mut source, level) in sources {
            match &mut source {
                Source::Cg(c) => c.seek(lo)?,
                Source::Piece(p) => p.seek(seek.as_deref())?,
            }
            cursors.push(Cursor {
                source,
                chunk: None,
                row: 0,
                level,
            });
        }
        let mut slot_of = vec![None; pieces.len()];
        for (s, &v) in want.iter().enumerate() {
            slot_of[v] = Some(s);
        }
        let keys = schema.key_indices();
        let outputs = spec
            .projection
            .iter()
            .map(|&i| match schema.value_number(i) {
                Some(v) => Output::Value(slot_of[v].unwrap_or(0)),
                None => Output::Key(keys.iter().position(|&k| k == i).unwrap_or(0)),
            })
            .collect();
        let builders = spec
            .projection
            .iter()
            .map(|&i| ColumnBuilder::new(schema.columns()[i].ty, spec.batch_rows))
            .collect();
        Ok(Scanner {
            out_schema: schema.arrow_projection(&spec.projection),
            resolver: Resolver::new(pieces.len(), &want),
            window: Window::new(&want, &event_cols),
            counters: ScanCounters {
                entries_per_level: vec![0; sv.version.num_levels()],
                ..Default::default()
            },
            key_cells: vec![OwnedCell::Null; keys.len()],
            predicate_needs_key: predicate_cols.iter().any(|&i| schema.is_key(i)),
            predicate_vectorized: spec
                .predicate
                .as_ref()
                .is_some_and(|p| filter::vectorizable(p, &schema, &slot_of)),
            keep: Vec::new(),
            bound: Vec::new(),
            slot_of,
            outputs,
            builders,
            cursors,
            schema,
            spec,
            done: false,
            _sv: sv,
        })
    }

    /// The smallest current key of the cursors other than `i`, or `None`
    /// when some other cursor's position is not known (it needs a chunk):
    /// `Some(None)` when no other cursor has rows left.
    fn others_min(&self, i: usize) -> Option<Option<&[u8]>> {
        let mut min: Option<&[u8]> = None;
        for (j, c) in self.cursors.iter().enumerate() {
            if j == i {
                continue;
            }
            match c.current_key() {
                Some(k) if min.is_none_or(|m| k < m) => min = Some(k),
                Some(_) => {}
                None if c.more() => return None,
                None => {}
            }
        }
        Some(min)
    }

    /// Whether cursor `i`'s next block can be passed over unread.
    fn can_skip(&self, i: usize) -> bool {
        let Some(p) = &self.spec.predicate else {
            return false;
        };
        let Source::Cg(run) = &self.cursors[i].source else {
            return false;
        };
        let Some(meta) = run.pending() else {
            return false;
        };
        let alone = match self.others_min(i) {
            None => false,
            Some(None) => true,
            Some(Some(k)) => k > meta.last_key.as_slice(),
        };
        // Statistics of a column of codes are codes, and the predicate is
        // rewritten to compare codes (`CgRun::prepare`).
        alone
            && !run.predicate(p).may_match(&|idx| {
                let v = self.schema.value_number(idx)?;
                let i = run.cols.iter().position(|&(c, _)| c == v)?;
                let s = &meta.stats[i];
                let ty = if s.codes {
                    ColumnType::Int32
                } else {
                    run.cols[i].1
                };
                Some((ty, s.clone()))
            })
    }

    /// Gives cursor `i` its next chunk (passing over blocks the predicate
    /// rules out); leaves it without one at its end.
    fn fill(&mut self, i: usize) -> Result<()> {
        loop {
            if let (Some(p), Source::Cg(run)) = (&self.spec.predicate, &mut self.cursors[i].source)
            {
                run.prepare(p, &self.schema)?;
            }
            if self.can_skip(i) {
                if let Source::Cg(run) = &mut self.cursors[i].source {
                    run.skip()?;
                }
                self.counters.blocks_skipped += 1;
                continue;
            }
            let c = &mut self.cursors[i];
            let next = match &mut c.source {
                Source::Cg(run) => {
                    let next = run.load()?;
                    if next.is_some() {
                        self.counters.blocks_read += 1;
                    }
                    next
                }
                Source::Piece(p) => p.load()?.map(|chunk| (chunk, 0)),
            };
            match next {
                Some((chunk, row)) => {
                    c.chunk = Some(chunk);
                    c.row = row;
                    if c.has_rows() {
                        return Ok(());
                    }
                }
                None => {
                    c.chunk = None;
                    c.row = 0;
                    return Ok(());
                }
            }
        }
    }

    /// Takes cursor `i`'s rows up to `bound` (inclusive) and before the
    /// scan's upper bound into the window.
    fn take(&mut self, i: usize, bound: Option<&[u8]>) {
        let c = &mut self.cursors[i];
        let Some(chunk) = &c.chunk else { return };
        let b = &chunk.block;
        let n = b.rows();
        // (The chunk's last key decides most chunks without a search: the
        // one that sets the bound ends at it, and most end before the
        // scan's upper bound.)
        let mut end = match bound {
            Some(w) if n > 0 && at_or_after(w, b.user_key(n - 1)) => n,
            Some(w) => b.upper_bound_key(w),
            None => n,
        };
        if let Some(u) = self.spec.upper.as_deref()
            && n > 0
            && at_or_after(b.user_key(n - 1), u)
        {
            end = end.min(b.lower_bound(u, u64::MAX));
        }
        if end > c.row {
            self.counters.entries_per_level[c.level] += (end - c.row) as u64;
            self.window.push(chunk.clone(), c.row, end, c.level);
            c.row = end;
        }
    }

    /// Builds and resolves the next window; `Ok(false)` at the end.
    fn next_window(&mut self) -> Result<bool> {
        self.window.clear();
        // Sources without a predicate-skippable next block first, so that
        // the others see where they are.
        for pass in 0..2 {
            for i in 0..self.cursors.len() {
                let c = &self.cursors[i];
                let cg = matches!(c.source, Source::Cg(_));
                if c.has_rows() || !c.more() || (pass == 0) == cg {
                    continue;
                }
                self.fill(i)?;
            }
        }
        // The window ends at the smallest last key of a chunk that more
        // rows follow: every version of every key up to it is loaded.
        let mut bound: Option<&[u8]> = None;
        for c in &self.cursors {
            if c.has_rows()
                && c.more()
                && let Some(k) = c.last_key()
                && bound.is_none_or(|b| !at_or_after(k, b))
            {
                bound = Some(k);
            }
        }
        let mut bound_buf = std::mem::take(&mut self.bound);
        bound_buf.clear();
        let bound = bound.map(|b| {
            bound_buf.extend_from_slice(b);
            bound_buf.as_slice()
        });
        // (Writers never split a key's versions across blocks or files,
        // and whole-row chunks end between keys, so the next chunk of a
        // source starts after the bound.)
        for i in 0..self.cursors.len() {
            self.take(i, bound);
        }
        self.bound = bound_buf;
        if self.window.segs.is_empty() {
            return Ok(false);
        }

        match self.window.lone_lead(self.spec.snap) {
            // Rows at rest on one level: the predicate picks them from the
            // blocks' columns before they are made rows.
            Some(s) => {
                let selected = match &self.spec.predicate {
                    Some(p) if self.predicate_vectorized => Some(filter::select_lead(
                        p,
                        &self.window,
                        s,
                        &self.schema,
                        &self.slot_of,
                    )),
                    _ => None,
                };
                self.counters.rows_read += self.window.segment_rows(s) as u64;
                self.window.take_lead_rows(s, selected.as_deref());
                if self.spec.predicate.is_some() && selected.is_none() {
                    self.filter()?;
                }
            }
            None => {
                self.window.resolve(self.spec.snap, &mut self.resolver);
                self.counters.rows_read += self.window.rows as u64;
                if self.spec.predicate.is_some() {
                    self.filter()?;
                }
            }
        }
        Ok(true)
    }

    /// Drops the window's rows the predicate does not accept.
    fn filter(&mut self) -> Result<()> {
        let mut keep = std::mem::take(&mut self.keep);
        keep.clear();
        if let Some(p) = &self.spec.predicate
            && self.predicate_vectorized
        {
            filter::evaluate(p, &self.window, &self.schema, &self.slot_of, &mut keep);
            self.window.retain(&keep);
            self.keep = keep;
            return Ok(());
        }
        for i in 0..self.window.rows {
            if self.predicate_needs_key {
                self.decode_key(i)?;
            }
            let ok = self.spec.predicate.as_ref().is_some_and(|p| {
                p.eval(&|idx| match self.schema.value_number(idx) {
                    Some(v) => match self.slot_of[v] {
                        Some(s) => self.window.value(s, i),
                        None => super::piece::Cell::Null,
                    },
                    None => {
                        let k = self.schema.key_indices().iter().position(|&k| k == idx);
                        k.map_or(super::piece::Cell::Null, |k| self.key_cells[k].as_cell())
                    }
                }) == Some(true)
            });
            keep.push(ok);
        }
        self.window.retain(&keep);
        self.keep = keep;
        Ok(())
    }

    /// Decodes output row `i`'s key into `key_cells`.
    fn decode_key(&mut self, i: usize) -> Result<()> {
        let mut d = KeyDecoder::new(self.window.key(i));
        for (slot, &k) in self.schema.key_indices().iter().enumerate() {
            let ty = self.schema.columns()[k].ty;
            let cell = match ty {
                ColumnType::Int32 => OwnedCell::Int32(d.i32()?),
                ColumnType::Int64 | ColumnType::Timestamp => OwnedCell::Int64(d.i64()?),
                ColumnType::Float64 => OwnedCell::Float64(d.f64()?),
                ColumnType::Bool => OwnedCell::Bool(d.bool()?),
                ColumnType::Utf8 | ColumnType::Binary => {
                    let mut buf =
                        match std::mem::replace(&mut self.key_cells[slot], OwnedCell::Null) {
                            OwnedCell::Bytes(b) => b,
                            _ => Vec::new(),
                        };
                    buf.clear();
                    d.bytes_into(&mut buf)?;
                    OwnedCell::Bytes(buf)
                }
            };
            self.key_cells[slot] = cell;
        }
        Ok(())
    }

    /// Appends the window's output rows `from..to` to the builders.
    fn gather(&mut self, from: usize, to: usize) -> Result<()> {
        for (o, b) in self.outputs.iter().zip(self.builders.iter_mut()) {
            if let Output::Value(slot) = *o {
                gather::append_slot(&self.window, slot, &self.window.refs(slot)[from..to], b)?;
            }
        }
        if self.outputs.iter().any(|o| matches!(o, Output::Key(_)))
            && !self.gather_int_keys(from, to)?
        {
            for i in from..to {
                self.decode_key(i)?;
                for (o, b) in self.outputs.iter().zip(self.builders.iter_mut()) {
                    if let Output::Key(k) = *o {
                        b.append(self.key_cells[k].as_cell())?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Appends output rows `from..to`'s keys to the key outputs' builders
    /// straight from the key bytes when the key is one integer column (the
    /// common primary key), without decoding each key into cells; false,
    /// having appended nothing, for any other key.
    fn gather_int_keys(&mut self, from: usize, to: usize) -> Result<bool> {
        let keys = self.schema.key_indices();
        if keys.len() != 1 {
            return Ok(false);
        }
        let ty = self.schema.columns()[keys[0]].ty;
        for (o, b) in self.outputs.iter().zip(self.builders.iter_mut()) {
            if !matches!(o, Output::Key(_)) {
                continue;
            }
            let w = &self.window;
            match (ty, b) {
                (ColumnType::Int64, ColumnBuilder::I64(b)) => {
                    append_keys(w, from, to, b, |d| d.i64())?
                }
                (ColumnType::Timestamp, ColumnBuilder::Ts(b)) => {
                    append_keys(w, from, to, b, |d| d.i64())?
                }
                (ColumnType::Int32, ColumnBuilder::I32(b)) => {
                    append_keys(w, from, to, b, |d| d.i32())?
                }
                // (Every key output has the key column's builder, so this
                // is decided at the first and nothing has been appended.)
                _ => return Ok(false),
            }
        }
        Ok(true)
    }

    /// The next batch, or `None` when the scan is done.
    pub(crate) fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let mut rows = 0;
        while rows < self.spec.batch_rows && !self.done {
            if self.window.taken == self.window.rows {
                if !self.next_window()? {
                    self.done = true;
                }
                continue;
            }
            let from = self.window.taken;
            let n = (self.window.rows - from).min(self.spec.batch_rows - rows);
            self.gather(from, from + n)?;
            self.window.taken += n;
            rows += n;
        }
        self.counters.rows_returned += rows as u64;
        if rows == 0 {
            return Ok(None);
        }
        // Fresh builders with room for a whole batch: a finished arrow
        // builder starts over with no capacity and would grow by doubling.
        let columns = self
            .builders
            .iter_mut()
            .zip(&self.spec.projection)
            .map(|(b, &i)| {
                let ty = self.schema.columns()[i].ty;
                std::mem::replace(b, ColumnBuilder::new(ty, self.spec.batch_rows)).finish()
            })
            .collect();
        RecordBatch::try_new(Arc::clone(&self.out_schema), columns)
            .map(Some)
            .map_err(|e| Error::InvalidArgument(format!("building a scan batch: {e}")))
    }
}
