//! The table mode's expected state: what every row of every stressed table
//! must hold.
//!
//! ## Tables, rows and cells
//!
//! Table `t` (named `stress_t<t>`) has the schema `id int64` (the key),
//! `c0..c5 int32`, `s utf8`, every value column nullable. Row `k` (`0 <= k <
//! rows`) has key `id = (k - rows/2) * 1_000_003` (negative and positive,
//! far apart). Each write of a row takes the row's next *generation* `g`
//! (generations only grow, across runs and crashes), and every cell it
//! writes is a pure function of `(t, k, column, g)` ([`cell`]): an int32
//! holds the low 20 bits of `g` and 12 check bits of `(t, k, column)`, XORed
//! with a mask of `(t, k, column)` — so a cell of another row, table or
//! column decodes only by a 1-in-4096 chance — and `s` is `t<t>k<k>g<g>.`
//! followed by filler; about one cell in 16 (one `s` in 8) is null instead.
//! A cell read back is decoded to its generation ([`decode_cell`]) for the
//! reports.
//!
//! A row's state ([`RowState`]) is "absent" or "present with the generation
//! of each column's last write". Writes ([`PendingOp`]): an upsert sets
//! every column to its generation; a partial update sets only the columns of
//! its mask (and changes nothing when the row is absent, as
//! `Table::update_row` documents); a delete makes the row absent.
//!
//! ## Model
//!
//! As for the key-value mode ([`crate::expected`]): per row, the
//! *committed* state (that of the last acknowledged write) and the *pending*
//! operation (set before a write is handed to the database, cleared when it
//! is acknowledged), under the row's stripe lock, so at most one write per
//! row is in flight. After a crash a row must hold its committed state or
//! its pending operation applied to it — per whole write: a partial update
//! in flight may have landed or not, but not some of its columns. Rows of
//! one multi-row write carry the same nonzero tag (atomicity check). In
//! power-cut mode ([`TableState::in_memory`] with history) each row also
//! keeps the states acknowledged since its last synced write.
//!
//! ## File format (updated with `pwrite`, one record per call)
//!
//! ```text
//! 0     header (4096 bytes): magic "STRSTTB1", tables u32, rows u32 (LE)
//! 4096  row records (table-major), 64 bytes each:
//!       present u32 | gens 7 x u32 | max_gen u32 | pending kind u32 |
//!       pending mask u32 | pending gen u32 | tag u32 | 12 zero bytes
//! ```
//!
//! "Set pending" is one `pwrite` of bytes 32..52 of the record, "commit" one
//! of the whole record; records never straddle a page.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

use parking_lot::Mutex;
use strata::table::{Column, ColumnType, Schema, Value};

use crate::expected::{create_state_file, le32};
use crate::values::mix64;

/// Value columns per table: `c0..c5` and `s`.
pub const NCOLS: usize = 7;

/// The value columns' names, in schema order (after the key `id`).
pub const COLUMN_NAMES: [&str; NCOLS] = ["c0", "c1", "c2", "c3", "c4", "c5", "s"];

/// The key column's name.
pub const KEY_COLUMN: &str = "id";

/// Every value column, as an update mask.
pub const ALL_COLUMNS: u32 = (1 << NCOLS) - 1;

/// Distance between the keys of adjacent rows.
const ID_STEP: i64 = 1_000_003;

/// The name of stressed table `t`.
pub fn table_name(t: u32) -> String {
    format!("stress_t{t}")
}

/// The schema of every stressed table.
pub fn schema() -> Schema {
    let mut cols = vec![Column::new(KEY_COLUMN, ColumnType::Int64)];
    for name in &COLUMN_NAMES[..NCOLS - 1] {
        cols.push(Column::nullable(*name, ColumnType::Int32));
    }
    cols.push(Column::nullable(COLUMN_NAMES[NCOLS - 1], ColumnType::Utf8));
    // The schema is fixed and valid.
    Schema::new(cols, &[KEY_COLUMN]).unwrap_or_else(|e| panic!("stress schema: {e}"))
}

/// Shape of the tables, stored in the file header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableSpace {
    pub tables: u32,
    pub rows: u32,
}

impl TableSpace {
    /// The key of row `k`.
    pub fn row_id(&self, k: u32) -> i64 {
        (i64::from(k) - i64::from(self.rows / 2)) * ID_STEP
    }

    /// The row whose key is `id`, `None` if `id` is no row's key.
    pub fn parse_row_id(&self, id: i64) -> Option<u32> {
        if id % ID_STEP != 0 {
            return None;
        }
        let k = id / ID_STEP + i64::from(self.rows / 2);
        u32::try_from(k).ok().filter(|&k| k < self.rows)
    }

    fn slots(&self) -> usize {
        self.tables as usize * self.rows as usize
    }
}

fn cell_hash(t: u32, k: u32, c: usize, g: u32) -> u64 {
    mix64(mix64((u64::from(t) << 32) | u64::from(k)) ^ ((c as u64) << 40) ^ u64::from(g))
}

/// Generation bits of an int32 cell; the other 12 bits check the cell's
/// place.
const GEN_BITS: u32 = 20;

/// The mask and the check bits of an int32 cell of `(t, k, c)`.
fn int_mask(t: u32, k: u32, c: usize) -> (u32, u32) {
    let h = mix64(mix64((u64::from(t) << 32) | u64::from(k)).wrapping_add(c as u64 + 1));
    (h as u32, ((h >> 32) as u32) >> GEN_BITS)
}

/// The value of column `c` (0-based value column) of row `k` of table `t`
/// written by generation `g`; generation 0 (never written) is null.
pub fn cell(t: u32, k: u32, c: usize, g: u32) -> Value {
    let h = cell_hash(t, k, c, g);
    if c < NCOLS - 1 {
        if g == 0 || h.is_multiple_of(16) {
            return Value::Null;
        }
        let (mask, check) = int_mask(t, k, c);
        let low = g & ((1 << GEN_BITS) - 1);
        return Value::Int32(((low | (check << GEN_BITS)) ^ mask) as i32);
    }
    if g == 0 || h.is_multiple_of(8) {
        return Value::Null;
    }
    let mut s = format!("t{t}k{k}g{g}.");
    let mut x = h;
    for _ in 0..(h >> 8) % 40 {
        x = mix64(x);
        s.push((b'a' + (x % 26) as u8) as char);
    }
    Value::Utf8(s)
}

/// The generation that wrote `v` into column `c` of row `k` of table `t`
/// (of an int32 cell: its low 20 bits): `Some(0)` for null (every null
/// reads alike), `None` when no generation writes `v` there (a value of
/// another row or column, or damage).
pub fn decode_cell(t: u32, k: u32, c: usize, v: &Value) -> Option<u32> {
    let g = match v {
        Value::Null => return Some(0),
        Value::Int32(x) if c < NCOLS - 1 => {
            let (mask, check) = int_mask(t, k, c);
            let x = (*x as u32) ^ mask;
            if x >> GEN_BITS != check {
                return None;
            }
            x & ((1 << GEN_BITS) - 1)
        }
        Value::Utf8(s) if c == NCOLS - 1 => {
            let rest = s.strip_prefix(&format!("t{t}k{k}g"))?;
            rest.split('.').next()?.parse().ok()?
        }
        _ => return None,
    };
    (cell(t, k, c, g) == *v).then_some(g)
}

/// A short description of what column `c` of row `k` holds.
pub fn describe_cell(t: u32, k: u32, c: usize, v: &Value) -> String {
    match (v, decode_cell(t, k, c, v)) {
        (Value::Null, _) => "NULL".into(),
        (_, Some(g)) => format!("{v} (generation {g})"),
        (_, None) => format!("{v} (written by no generation of this cell)"),
    }
}

/// A row's state: absent, or present with each column's generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RowState {
    pub present: bool,
    pub gens: [u32; NCOLS],
}

/// The state of a row never written (or deleted).
pub const ABSENT: RowState = RowState {
    present: false,
    gens: [0; NCOLS],
};

impl RowState {
    /// Every column of the row in schema order (key first), `None` when
    /// absent.
    pub fn values(&self, space: &TableSpace, t: u32, k: u32) -> Option<Vec<Value>> {
        self.present.then(|| {
            let mut v = Vec::with_capacity(NCOLS + 1);
            v.push(Value::Int64(space.row_id(k)));
            v.extend((0..NCOLS).map(|c| cell(t, k, c, self.gens[c])));
            v
        })
    }

    /// Human-readable form.
    pub fn describe(&self) -> String {
        if !self.present {
            return "absent".into();
        }
        let g: Vec<String> = (0..NCOLS)
            .map(|c| format!("{}@{}", COLUMN_NAMES[c], self.gens[c]))
            .collect();
        format!("present [{}]", g.join(" "))
    }
}

/// What a write does to a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    Upsert,
    /// A partial update of the columns in the mask.
    Update,
    Delete,
}

/// A write of a row, of generation `gen`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingOp {
    pub kind: OpKind,
    /// Columns a partial update sets (bit `c` for value column `c`).
    pub mask: u32,
    pub generation: u32,
}

impl PendingOp {
    /// The row's state after the write.
    pub fn apply(&self, s: RowState) -> RowState {
        match self.kind {
            OpKind::Upsert => RowState {
                present: true,
                gens: [self.generation; NCOLS],
            },
            OpKind::Update if s.present => {
                let mut n = s;
                for c in 0..NCOLS {
                    if self.mask & (1 << c) != 0 {
                        n.gens[c] = self.generation;
                    }
                }
                n
            }
            OpKind::Update => s,
            OpKind::Delete => ABSENT,
        }
    }

    fn encode(op: Option<PendingOp>) -> [u32; 3] {
        match op {
            None => [0, 0, 0],
            Some(p) => {
                let k = match p.kind {
                    OpKind::Upsert => 1,
                    OpKind::Update => 2,
                    OpKind::Delete => 3,
                };
                [k, p.mask, p.generation]
            }
        }
    }

    fn decode(w: [u32; 3]) -> Option<PendingOp> {
        let kind = match w[0] {
            1 => OpKind::Upsert,
            2 => OpKind::Update,
            3 => OpKind::Delete,
            _ => return None,
        };
        Some(PendingOp {
            kind,
            mask: w[1],
            generation: w[2],
        })
    }
}

#[derive(Clone, Default)]
struct Slot {
    committed: RowState,
    max_gen: u32,
    pending: Option<PendingOp>,
    tag: u32,
    /// Power-cut mode: states acknowledged since the last synced write.
    history: Vec<RowState>,
}

const MAGIC: &[u8; 8] = b"STRSTTB1";
const HEADER: u64 = 4096;
const REC: u64 = 64;

/// The expected state of every row; see the module documentation.
pub struct TableState {
    space: TableSpace,
    file: Option<File>,
    history: bool,
    slots: Vec<Mutex<Slot>>,
    next_tag: AtomicU32,
}

impl TableState {
    fn blank(space: TableSpace, history: bool) -> TableState {
        let slot = Slot {
            history: if history { vec![ABSENT] } else { Vec::new() },
            ..Slot::default()
        };
        TableState {
            space,
            file: None,
            history,
            slots: (0..space.slots())
                .map(|_| Mutex::new(slot.clone()))
                .collect(),
            next_tag: AtomicU32::new(1),
        }
    }

    /// An in-memory state (no file); with `history`, rows remember the
    /// states acknowledged since their last synced write (power cuts).
    pub fn in_memory(space: TableSpace, history: bool) -> TableState {
        TableState::blank(space, history)
    }

    /// Creates (or truncates) the file at `path` with every row absent.
    pub fn create(path: &Path, space: TableSpace) -> io::Result<TableState> {
        let mut h = MAGIC.to_vec();
        h.extend_from_slice(&space.tables.to_le_bytes());
        h.extend_from_slice(&space.rows.to_le_bytes());
        let file = create_state_file(path, HEADER + REC * space.slots() as u64, &h)?;
        let mut s = TableState::blank(space, false);
        s.file = Some(file);
        Ok(s)
    }

    /// Opens an existing file.
    pub fn open(path: &Path) -> io::Result<TableState> {
        let bad = |m: String| io::Error::new(io::ErrorKind::InvalidData, m);
        let data = std::fs::read(path)?;
        if data.len() < 16 || &data[..8] != MAGIC {
            return Err(bad(format!(
                "{} is not a table-mode expected-state file",
                path.display()
            )));
        }
        let space = TableSpace {
            tables: le32(&data, 8),
            rows: le32(&data, 12),
        };
        let need = HEADER + REC * space.slots() as u64;
        if (data.len() as u64) < need {
            return Err(bad(format!(
                "{} is {} bytes, its shape needs {need}",
                path.display(),
                data.len()
            )));
        }
        let mut s = TableState::blank(space, false);
        for (i, slot) in s.slots.iter_mut().enumerate() {
            let at = (HEADER + REC * i as u64) as usize;
            let r = &data[at..at + REC as usize];
            let slot = slot.get_mut();
            slot.committed.present = le32(r, 0) != 0;
            for c in 0..NCOLS {
                slot.committed.gens[c] = le32(r, 4 + 4 * c);
            }
            slot.max_gen = le32(r, 32);
            slot.pending = PendingOp::decode([le32(r, 36), le32(r, 40), le32(r, 44)]);
            slot.tag = le32(r, 48);
        }
        s.file = Some(OpenOptions::new().read(true).write(true).open(path)?);
        Ok(s)
    }

    /// Opens `path` if it exists (its shape must be `space`), else creates it.
    pub fn open_or_create(path: &Path, space: TableSpace) -> io::Result<TableState> {
        if !path.exists() {
            return TableState::create(path, space);
        }
        let s = TableState::open(path)?;
        if s.space != space {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} was made for {:?}, this run asks for {:?}; use the same --tables and \
                     --table-rows or start afresh",
                    path.display(),
                    s.space,
                    space
                ),
            ));
        }
        Ok(s)
    }

    /// The tables' shape.
    pub fn space(&self) -> TableSpace {
        self.space
    }

    /// A fresh batch tag.
    pub fn next_tag(&self) -> u32 {
        loop {
            let t = self.next_tag.fetch_add(1, SeqCst);
            if t != 0 {
                return t;
            }
        }
    }

    fn index(&self, t: u32, k: u32) -> usize {
        t as usize * self.space.rows as usize + k as usize
    }

    /// Writes bytes `from..52` of row `i`'s record.
    fn write_record(&self, i: usize, s: &Slot, from: usize) {
        let Some(f) = &self.file else { return };
        let mut r = [0u8; REC as usize];
        r[0..4].copy_from_slice(&u32::from(s.committed.present).to_le_bytes());
        for c in 0..NCOLS {
            r[4 + 4 * c..8 + 4 * c].copy_from_slice(&s.committed.gens[c].to_le_bytes());
        }
        r[32..36].copy_from_slice(&s.max_gen.to_le_bytes());
        for (j, w) in PendingOp::encode(s.pending).iter().enumerate() {
            r[36 + 4 * j..40 + 4 * j].copy_from_slice(&w.to_le_bytes());
        }
        r[48..52].copy_from_slice(&s.tag.to_le_bytes());
        let to = if from == 0 { REC as usize } else { 52 };
        let at = HEADER + REC * i as u64 + from as u64;
        if let Err(e) = f.write_all_at(&r[from..to], at) {
            panic!("expected-state file: pwrite at {at} failed: {e}");
        }
    }

    // ---- mutations (the caller holds the row's stripe lock) ----

    /// Records a write of row `k` of table `t` as pending, before it is
    /// handed to the database; returns it (its generation is the row's
    /// highest so far plus one).
    pub fn begin(&self, t: u32, k: u32, kind: OpKind, mask: u32, tag: u32) -> PendingOp {
        let i = self.index(t, k);
        let mut s = self.slots[i].lock();
        // Power-cut mode: an earlier write of the row still pending failed
        // (a partial update whose marker sync failed after the cut, say),
        // yet its record may have reached the log before the failure and
        // survive the cut. Its result stays among the states the row may
        // hold, rather than being forgotten under the new pending write.
        if self.history
            && let Some(prev) = s.pending
        {
            let newest = s.history.last().copied().unwrap_or(s.committed);
            s.history.push(prev.apply(newest));
        }
        let generation = s.max_gen + 1;
        let op = PendingOp {
            kind,
            mask: if kind == OpKind::Update { mask } else { 0 },
            generation,
        };
        s.max_gen = generation;
        s.pending = Some(op);
        s.tag = tag;
        self.write_record(i, &s, 32);
        op
    }

    /// Records that the pending write of the row was acknowledged (with
    /// `synced`: durably).
    pub fn commit(&self, t: u32, k: u32, synced: bool) {
        let i = self.index(t, k);
        let mut s = self.slots[i].lock();
        let st = match s.pending.take() {
            Some(op) => op.apply(s.committed),
            None => s.committed,
        };
        s.committed = st;
        s.tag = 0;
        self.write_record(i, &s, 0);
        if self.history {
            if synced {
                s.history.clear();
            }
            s.history.push(st);
        }
    }

    /// Sets the row to `st` with nothing pending (after verification found
    /// it holding `st`).
    pub fn resolve(&self, t: u32, k: u32, st: RowState) {
        let i = self.index(t, k);
        let mut s = self.slots[i].lock();
        let st = if st.present { st } else { ABSENT };
        s.committed = st;
        s.pending = None;
        s.tag = 0;
        let top = st.gens.iter().copied().filter(|&g| g < 1 << 30).max();
        s.max_gen = s.max_gen.max(top.unwrap_or(0));
        self.write_record(i, &s, 0);
        if self.history {
            s.history = vec![st];
        }
    }

    /// Overwrites the committed state without touching anything else (tests
    /// corrupt the expected state with it).
    pub fn force_committed(&self, t: u32, k: u32, st: RowState) {
        let i = self.index(t, k);
        let mut s = self.slots[i].lock();
        s.committed = st;
        self.write_record(i, &s, 0);
    }

    // ---- readings ----

    /// The committed state of the row.
    pub fn committed(&self, t: u32, k: u32) -> RowState {
        self.slots[self.index(t, k)].lock().committed
    }

    /// The row's pending write, if any.
    pub fn pending(&self, t: u32, k: u32) -> Option<PendingOp> {
        self.slots[self.index(t, k)].lock().pending
    }

    /// The batch tag of the row's pending write (0: none).
    pub fn tag(&self, t: u32, k: u32) -> u32 {
        self.slots[self.index(t, k)].lock().tag
    }

    /// The highest generation the row has used.
    pub fn max_gen(&self, t: u32, k: u32) -> u32 {
        self.slots[self.index(t, k)].lock().max_gen
    }

    /// States the row may hold after a crash, excluding its pending write's
    /// result: the committed state, or, in power-cut mode, every state
    /// acknowledged since the last synced write (oldest first).
    pub fn settled(&self, t: u32, k: u32) -> Vec<RowState> {
        let s = self.slots[self.index(t, k)].lock();
        if self.history {
            s.history.clone()
        } else {
            vec![s.committed]
        }
    }

    /// Every state the row may hold now: its settled states and its
    /// pending write applied to the newest of them (a write acknowledged
    /// after a later one cannot survive without it: the log is a prefix).
    /// The second value is the pending write's result, if any.
    pub fn candidates(&self, t: u32, k: u32) -> (Vec<RowState>, Option<RowState>) {
        let mut v = self.settled(t, k);
        let newest = v.last().copied().unwrap_or(ABSENT);
        let pending = self.pending(t, k).map(|op| op.apply(newest));
        if let Some(p) = pending
            && !v.contains(&p)
        {
            v.push(p);
        }
        (v, pending)
    }

    /// Rows with a pending write.
    pub fn pending_count(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.lock().pending.is_some())
            .count()
    }

    /// Makes the file durable (fsync).
    pub fn sync(&self) -> io::Result<()> {
        match &self.file {
            Some(f) => f.sync_all(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPACE: TableSpace = TableSpace {
        tables: 3,
        rows: 100,
    };

    #[test]
    fn cells_decode_to_their_generation_and_nowhere_else() {
        let (mut nulls, mut elsewhere) = (0, 0);
        for g in 1..500 {
            for c in 0..NCOLS {
                let v = cell(2, 17, c, g);
                if v.is_null() {
                    nulls += 1;
                    assert_eq!(decode_cell(2, 17, c, &v), Some(0));
                    continue;
                }
                assert_eq!(decode_cell(2, 17, c, &v), Some(g), "{v}");
                // Elsewhere an int32 decodes by a 1-in-4096 chance, a
                // string never.
                for (t, k, c2) in [(2, 18, c), (1, 17, c), (2, 17, (c + 1) % (NCOLS - 1))] {
                    if decode_cell(t, k, c2, &v).is_some() {
                        assert!(c < NCOLS - 1, "{v} decodes in row {k} of table {t}");
                        elsewhere += 1;
                    }
                }
            }
        }
        assert!(nulls > 100 && nulls < 600, "{nulls} nulls");
        assert!(elsewhere < 10, "{elsewhere} cells decode elsewhere");
        // Generations past 2^20 keep their low bits.
        assert_eq!(decode_cell(0, 1, 0, &cell(0, 1, 0, (1 << 20) + 5)), Some(5));
        for k in 0..SPACE.rows {
            assert_eq!(SPACE.parse_row_id(SPACE.row_id(k)), Some(k));
        }
        assert_eq!(SPACE.parse_row_id(SPACE.row_id(3) + 1), None);
        assert_eq!(
            SPACE.parse_row_id(SPACE.row_id(SPACE.rows - 1) + ID_STEP),
            None
        );
        assert!(SPACE.row_id(0) < 0 && SPACE.row_id(99) > 0);
    }

    #[test]
    fn partial_updates_change_only_their_columns_and_need_a_row() {
        let up = PendingOp {
            kind: OpKind::Upsert,
            mask: 0,
            generation: 4,
        };
        let upd = PendingOp {
            kind: OpKind::Update,
            mask: 0b100_0010,
            generation: 5,
        };
        assert_eq!(upd.apply(ABSENT), ABSENT);
        let r = upd.apply(up.apply(ABSENT));
        assert_eq!(r.gens, [4, 5, 4, 4, 4, 4, 5]);
        let del = PendingOp {
            kind: OpKind::Delete,
            mask: 0,
            generation: 6,
        };
        assert_eq!(del.apply(r), ABSENT);
    }

    #[test]
    fn file_round_trips_pending_and_committed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("exp");
        let s = TableState::create(&p, SPACE).expect("create");
        s.begin(1, 5, OpKind::Upsert, 0, 0);
        s.commit(1, 5, false);
        let upd = s.begin(1, 5, OpKind::Update, 0b11, 9);
        s.begin(2, 99, OpKind::Delete, 0, 0);
        drop(s);
        let s = TableState::open(&p).expect("open");
        assert_eq!(s.space(), SPACE);
        assert_eq!(s.committed(1, 5).gens, [1; NCOLS]);
        assert_eq!(s.pending(1, 5), Some(upd));
        assert_eq!(s.tag(1, 5), 9);
        assert_eq!(s.pending_count(), 2);
        let (c, p) = s.candidates(1, 5);
        assert_eq!(c.len(), 2);
        assert_eq!(p.map(|r| r.gens), Some([2, 2, 1, 1, 1, 1, 1]));
        s.resolve(1, 5, ABSENT);
        assert_eq!(s.begin(1, 5, OpKind::Upsert, 0, 0).generation, 3);
    }

    #[test]
    fn history_keeps_unsynced_states() {
        let s = TableState::in_memory(SPACE, true);
        s.begin(0, 1, OpKind::Upsert, 0, 0);
        s.commit(0, 1, true);
        s.begin(0, 1, OpKind::Update, 1, 0);
        s.commit(0, 1, false);
        s.begin(0, 1, OpKind::Delete, 0, 0);
        s.commit(0, 1, false);
        assert_eq!(s.settled(0, 1).len(), 3);
        s.begin(0, 1, OpKind::Upsert, 0, 0);
        s.commit(0, 1, true);
        assert_eq!(s.settled(0, 1).len(), 1);
    }

    /// A write that failed stays possible when the next write of the row
    /// begins: in power-cut mode its record may have reached the log.
    #[test]
    fn a_failed_write_stays_a_candidate_under_the_next_one() {
        let s = TableState::in_memory(SPACE, true);
        s.begin(0, 1, OpKind::Upsert, 0, 0);
        s.commit(0, 1, true);
        let committed = s.committed(0, 1);
        // An update of column 0 that failed (never committed), then one of
        // column 2.
        let failed = s.begin(0, 1, OpKind::Update, 1, 0);
        let next = s.begin(0, 1, OpKind::Update, 1 << 2, 0);
        let (cands, pending) = s.candidates(0, 1);
        let failed_state = failed.apply(committed);
        assert!(cands.contains(&committed), "{cands:?}");
        assert!(cands.contains(&failed_state), "{cands:?}");
        assert_eq!(pending, Some(next.apply(failed_state)));
    }
}
