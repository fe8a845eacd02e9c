//! Projected range scans (LASER's scan(lo, hi, Π)) streaming Arrow batches.
//!
//! A scan opens a source for each memtable and level-0 file (whole rows)
//! and, on each deeper level, for each group holding a projected or
//! filtered column (its sorted run of files): LASER's level-merging and
//! column-merging iterators become one merge of every source by key, with
//! each key's entries resolved column by column ([`Resolver`]). Column-group
//! runs are read block by block as column vectors, never turned back into
//! row pieces.
//!
//! A predicate skips a column-group block without reading it when the
//! block's statistics show no row can match and no other source holds a
//! key in the block's range (so no newer version elsewhere could make one
//! of its rows match); rows are then tested on their resolved values
//! before they are appended to the batch. Memory is bounded by one block
//! per source and one batch.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::Schema as ArrowSchema;

use super::arrowio::ColumnBuilder;
use super::cgfile::block::CgBlock;
use super::cgfile::{BlockMeta, CgReader};
use super::keycodec::KeyDecoder;
use super::piece::{Cell, PieceSchema, PieceView};
use super::predicate::Bound;
use super::schema::{ColumnType, Schema};
use super::view::{OwnedCell, ReadPlan, Resolver};
use crate::db::SuperVersion;
use crate::error::{Error, Result};
use crate::ids::Level;
use crate::iter::InternalIterator;
use crate::key::{KIND_SEEK, MAX_SEQNO, SeqNo, ValueKind, make_seek_key, user_key};
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
}

/// A run of column-group files read block by block.
struct CgRun {
    files: Vec<Arc<FileMeta>>,
    file: usize,
    block: usize,
    row: usize,
    /// The loaded block of `files[file]`, `None` at a block not yet read.
    cur: Option<Arc<CgBlock>>,
    /// Per value column: its index among the group's columns.
    col_index: Vec<Option<usize>>,
    /// Group columns in group order, with their types (for statistics).
    cols: Vec<(usize, ColumnType)>,
}

fn reader(f: &FileMeta) -> Result<&CgReader> {
    f.table
        .source_any()
        .and_then(|a| a.downcast_ref::<CgReader>())
        .ok_or_else(|| {
            Error::corruption(
                &f.path,
                0,
                "a column-group run holds a file that is not a column-group file",
            )
        })
}

impl CgRun {
    fn new(files: Vec<Arc<FileMeta>>, pieces: &PieceSchema) -> Result<CgRun> {
        let mut col_index = vec![None; pieces.len()];
        let mut cols = Vec::new();
        if let Some(f) = files.first() {
            for (i, &v) in reader(f)?.columns().iter().enumerate() {
                col_index[v] = Some(i);
                cols.push((v, pieces.ty(v)));
            }
        }
        Ok(CgRun {
            files,
            file: 0,
            block: 0,
            row: 0,
            cur: None,
            col_index,
            cols,
        })
    }

    fn exhausted(&self) -> bool {
        self.file >= self.files.len()
    }

    /// The index entry of the block the cursor is at (not yet read).
    fn pending(&self) -> Option<&BlockMeta> {
        if self.cur.is_some() {
            return None;
        }
        let f = self.files.get(self.file)?;
        reader(f).ok()?.blocks().get(self.block)
    }

    fn next_block(&mut self) -> Result<()> {
        self.cur = None;
        self.row = 0;
        self.block += 1;
        while let Some(f) = self.files.get(self.file) {
            if self.block < reader(f)?.blocks().len() {
                return Ok(());
            }
            self.file += 1;
            self.block = 0;
        }
        Ok(())
    }

    fn load(&mut self) -> Result<()> {
        if self.cur.is_none()
            && let Some(f) = self.files.get(self.file)
        {
            self.cur = Some(reader(f)?.block(self.block)?);
            self.row = 0;
        }
        Ok(())
    }

    /// Positions at the first row of `lower` (or the start).
    fn seek(&mut self, lower: Option<&[u8]>) -> Result<()> {
        let Some(lower) = lower else {
            self.file = 0;
            self.block = 0;
            self.cur = None;
            if self
                .files
                .first()
                .is_some_and(|f| reader(f).is_ok_and(|r| r.blocks().is_empty()))
            {
                self.block = usize::MAX;
                self.next_block()?;
            }
            return Ok(());
        };
        self.file = self.files.partition_point(|f| f.largest_user_key() < lower);
        self.cur = None;
        let Some(f) = self.files.get(self.file) else {
            return Ok(());
        };
        let r = reader(f)?;
        self.block = r.block_for(lower);
        if self.block >= r.blocks().len() {
            self.block = usize::MAX;
            return self.next_block();
        }
        self.load()?;
        if let Some(b) = &self.cur {
            self.row = b.lower_bound(lower, u64::MAX);
            if self.row >= b.rows() {
                self.next_block()?;
            }
        }
        Ok(())
    }

    fn advance(&mut self) -> Result<()> {
        self.row += 1;
        if self.cur.as_ref().is_some_and(|b| self.row >= b.rows()) {
            self.next_block()?;
        }
        Ok(())
    }
}

enum Source {
    /// Whole-row pieces: a memtable, a level-0 file or a whole-row run.
    Piece(Box<dyn InternalIterator>),
    Cg(CgRun),
}

struct Cursor {
    source: Source,
    /// 0 for memtables and level 0, else the level.
    level: usize,
}

impl Cursor {
    fn valid(&self) -> bool {
        match &self.source {
            Source::Piece(it) => it.valid(),
            Source::Cg(c) => c.cur.is_some() && !c.exhausted(),
        }
    }

    fn key(&self) -> (&[u8], u64) {
        match &self.source {
            Source::Piece(it) => {
                let k = it.key();
                (user_key(k), crate::key::trailer(k))
            }
            Source::Cg(c) => match &c.cur {
                Some(b) => (b.user_key(c.row), b.trailer(c.row)),
                None => (&[], 0),
            },
        }
    }

    fn offer(&self, r: &mut Resolver, pieces: &PieceSchema) -> Result<()> {
        let (_, t) = self.key();
        let seq = SeqNo(t >> 8);
        let kind = ValueKind::from_u8((t & 0xff) as u8).unwrap_or(ValueKind::Put);
        match &self.source {
            Source::Piece(it) => {
                if kind == ValueKind::Delete {
                    r.offer(seq, kind, &|_| None);
                } else {
                    let view = PieceView::parse(pieces, it.value())?;
                    r.offer(seq, kind, &|v| view.get(pieces, v));
                }
            }
            Source::Cg(c) => {
                if let Some(b) = &c.cur {
                    let (b, row) = (b.as_ref(), c.row);
                    r.offer(seq, kind, &|v| c.col_index[v].and_then(|i| b.cell(i, row)));
                }
            }
        }
        Ok(())
    }

    fn status(&self) -> Result<()> {
        match &self.source {
            Source::Piece(it) => it.status(),
            Source::Cg(_) => Ok(()),
        }
    }
}

/// A min-heap of cursor indices by (user key ascending, trailer descending,
/// index ascending).
struct Heap {
    items: Vec<usize>,
}

fn before(cs: &[Cursor], a: usize, b: usize) -> bool {
    let (ka, ta) = cs[a].key();
    let (kb, tb) = cs[b].key();
    match ka.cmp(kb) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => ta > tb || (ta == tb && a < b),
    }
}

impl Heap {
    fn push(&mut self, cs: &[Cursor], i: usize) {
        self.items.push(i);
        let mut c = self.items.len() - 1;
        while c > 0 {
            let p = (c - 1) / 2;
            if before(cs, self.items[c], self.items[p]) {
                self.items.swap(c, p);
                c = p;
            } else {
                break;
            }
        }
    }

    fn peek(&self) -> Option<usize> {
        self.items.first().copied()
    }

    fn pop(&mut self, cs: &[Cursor]) -> Option<usize> {
        let n = self.items.len();
        if n == 0 {
            return None;
        }
        self.items.swap(0, n - 1);
        let top = self.items.pop();
        let n = self.items.len();
        let mut p = 0;
        loop {
            let (l, r) = (2 * p + 1, 2 * p + 2);
            let mut m = p;
            if l < n && before(cs, self.items[l], self.items[m]) {
                m = l;
            }
            if r < n && before(cs, self.items[r], self.items[m]) {
                m = r;
            }
            if m == p {
                break;
            }
            self.items.swap(p, m);
            p = m;
        }
        top
    }
}

/// A running scan; yields Arrow batches.
pub(crate) struct Scanner {
    spec: ScanSpec,
    schema: Arc<Schema>,
    pieces: PieceSchema,
    out_schema: Arc<ArrowSchema>,
    cursors: Vec<Cursor>,
    heap: Heap,
    resolver: Resolver,
    builders: Vec<ColumnBuilder>,
    key_cells: Vec<OwnedCell>,
    needs_key: bool,
    cur_key: Vec<u8>,
    pub counters: ScanCounters,
    done: bool,
    /// Every cursor has been positioned (block skipping may begin).
    positioned: bool,
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
        if let Some(p) = &spec.predicate {
            p.columns(&mut needed);
        }
        let mut want: Vec<usize> = needed
            .iter()
            .filter_map(|&i| schema.value_number(i))
            .collect();
        want.sort_unstable();
        want.dedup();
        let needs_key = needed.iter().any(|&i| schema.is_key(i));
        // The lineage read for existence when no value column is wanted.
        let lineage_cols: Vec<usize> = if want.is_empty() {
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
        let mut cursors: Vec<Cursor> = Vec::new();
        cursors.push(Cursor {
            source: Source::Piece(sv.mem.iter()),
            level: 0,
        });
        for m in &sv.imms {
            cursors.push(Cursor {
                source: Source::Piece(m.iter()),
                level: 0,
            });
        }
        for f in sv.version.levels[0].iter().filter(|f| in_range(f)) {
            cursors.push(Cursor {
                source: Source::Piece(Box::new(f.table.iter())),
                level: 0,
            });
        }
        for (l, groups) in plan.levels.iter().enumerate().skip(1) {
            for (g, cols) in groups {
                if !cols.iter().any(|c| lineage_cols.contains(c)) {
                    continue;
                }
                let files: Vec<Arc<FileMeta>> = sv
                    .version
                    .run(Level::from_index(l), *g)
                    .iter()
                    .filter(|f| in_range(f))
                    .cloned()
                    .collect();
                if files.is_empty() {
                    continue;
                }
                let cg = files[0]
                    .table
                    .source_any()
                    .is_some_and(|a| a.is::<CgReader>());
                let source = if cg {
                    Source::Cg(CgRun::new(files, &pieces)?)
                } else {
                    Source::Piece(Box::new(LevelIter::new(files)))
                };
                cursors.push(Cursor { source, level: l });
            }
        }
        let out_schema = schema.arrow_projection(&spec.projection);
        let builders = spec
            .projection
            .iter()
            .map(|&i| ColumnBuilder::new(schema.columns()[i].ty, spec.batch_rows))
            .collect();
        let n_key = schema.key_indices().len();
        let mut s = Scanner {
            resolver: Resolver::new(pieces.len(), &want),
            counters: ScanCounters {
                entries_per_level: vec![0; sv.version.num_levels()],
                ..Default::default()
            },
            key_cells: vec![OwnedCell::Null; n_key],
            heap: Heap { items: Vec::new() },
            cursors,
            builders,
            out_schema,
            needs_key,
            pieces,
            schema,
            spec,
            cur_key: Vec::new(),
            done: false,
            positioned: false,
            _sv: sv,
        };
        s.position()?;
        Ok(s)
    }

    fn position(&mut self) -> Result<()> {
        let seek = self
            .spec
            .lower
            .as_ref()
            .map(|l| make_seek_key(l, MAX_SEQNO));
        for i in 0..self.cursors.len() {
            match &mut self.cursors[i].source {
                Source::Piece(it) => match &seek {
                    Some(k) => it.seek(k),
                    None => it.seek_to_first(),
                },
                Source::Cg(c) => {
                    c.seek(self.spec.lower.as_deref())?;
                }
            }
            self.settle(i)?;
            if self.cursors[i].valid() {
                self.heap.push(&self.cursors, i);
            }
            self.cursors[i].status()?;
        }
        self.positioned = true;
        Ok(())
    }

    /// Brings cursor `i` onto a row: reads its next block, or skips blocks
    /// the predicate rules out while no other cursor holds keys within them.
    /// (Only once every cursor is positioned: before that the heap does not
    /// yet show where the others are.)
    fn settle(&mut self, i: usize) -> Result<()> {
        loop {
            if !self.positioned {
                if let Source::Cg(c) = &mut self.cursors[i].source
                    && c.pending().is_some()
                {
                    self.counters.blocks_read += 1;
                    c.load()?;
                }
                return Ok(());
            }
            let other_min: Option<Vec<u8>> =
                self.heap.peek().map(|t| self.cursors[t].key().0.to_vec());
            let Source::Cg(c) = &mut self.cursors[i].source else {
                return Ok(());
            };
            let Some(meta) = c.pending() else {
                return Ok(());
            };
            let skip = match &self.spec.predicate {
                Some(p) => {
                    let alone = other_min
                        .as_deref()
                        .is_none_or(|k| k > meta.last_key.as_slice());
                    let schema = &self.schema;
                    alone
                        && !p.may_match(&|idx| {
                            let v = schema.value_number(idx)?;
                            let i = c.col_index[v]?;
                            Some((c.cols[i].1, meta.stats[i].clone()))
                        })
                }
                None => false,
            };
            if skip {
                self.counters.blocks_skipped += 1;
                c.next_block()?;
            } else {
                self.counters.blocks_read += 1;
                c.load()?;
                return Ok(());
            }
        }
    }

    fn advance(&mut self, i: usize) -> Result<()> {
        match &mut self.cursors[i].source {
            Source::Piece(it) => it.next(),
            Source::Cg(c) => c.advance()?,
        }
        self.settle(i)?;
        self.cursors[i].status()?;
        if self.cursors[i].valid() {
            self.heap.push(&self.cursors, i);
        }
        Ok(())
    }

    /// Resolves the next key; `Ok(false)` at the end of the range.
    fn next_row(&mut self) -> Result<bool> {
        let Some(top) = self.heap.peek() else {
            return Ok(false);
        };
        self.cur_key.clear();
        self.cur_key.extend_from_slice(self.cursors[top].key().0);
        if self
            .spec
            .upper
            .as_deref()
            .is_some_and(|u| self.cur_key.as_slice() >= u)
        {
            return Ok(false);
        }
        self.resolver.reset();
        while let Some(top) = self.heap.peek() {
            let (k, t) = self.cursors[top].key();
            if k != self.cur_key.as_slice() {
                break;
            }
            self.heap.pop(&self.cursors);
            if SeqNo(t >> 8) <= self.spec.snap && t & 0xff != u64::from(KIND_SEEK) {
                self.cursors[top].offer(&mut self.resolver, &self.pieces)?;
            }
            let level = self.cursors[top].level;
            self.counters.entries_per_level[level] += 1;
            self.advance(top)?;
        }
        self.counters.rows_read += 1;
        Ok(true)
    }

    fn decode_key(&mut self) -> Result<()> {
        let mut d = KeyDecoder::new(&self.cur_key);
        for (slot, &i) in self.schema.key_indices().iter().enumerate() {
            let ty = self.schema.columns()[i].ty;
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

    fn cell(&self, schema_index: usize) -> Cell<'_> {
        match self.schema.value_number(schema_index) {
            Some(v) => self.resolver.value(v),
            None => {
                let slot = self
                    .schema
                    .key_indices()
                    .iter()
                    .position(|&k| k == schema_index)
                    .unwrap_or(0);
                self.key_cells[slot].as_cell()
            }
        }
    }

    /// The next batch, or `None` when the scan is done.
    pub(crate) fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.done {
            return Ok(None);
        }
        let mut rows = 0;
        while rows < self.spec.batch_rows {
            if !self.next_row()? {
                self.done = true;
                break;
            }
            if !self.resolver.exists() {
                continue;
            }
            if self.needs_key {
                self.decode_key()?;
            }
            if let Some(p) = &self.spec.predicate
                && p.eval(&|i| self.cell(i)) != Some(true)
            {
                continue;
            }
            for (b, &i) in self.builders.iter_mut().zip(&self.spec.projection) {
                // Split borrows: the builder is mutated, the cell is read.
                let cell = match self.schema.value_number(i) {
                    Some(v) => self.resolver.value(v),
                    None => {
                        let slot = self
                            .schema
                            .key_indices()
                            .iter()
                            .position(|&k| k == i)
                            .unwrap_or(0);
                        self.key_cells[slot].as_cell()
                    }
                };
                b.append(cell)?;
            }
            rows += 1;
        }
        self.counters.rows_returned += rows as u64;
        if rows == 0 {
            return Ok(None);
        }
        let columns = self
            .builders
            .iter_mut()
            .map(ColumnBuilder::finish)
            .collect();
        RecordBatch::try_new(Arc::clone(&self.out_schema), columns)
            .map(Some)
            .map_err(|e| Error::InvalidArgument(format!("building a scan batch: {e}")))
    }
}
