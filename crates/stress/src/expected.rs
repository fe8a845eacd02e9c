//! The expected state: what every key of the stressed database must hold.
//!
//! ## Model
//!
//! *Value keys* (default keyspace) hold self-verifying values (see
//! [`crate::values`]). Each write of value key `i` takes the next
//! *generation* of that key (generations only grow, across runs and
//! crashes), and a key's state is a [`VState`]: `0` (never written, absent),
//! `g` (put of generation `g`), or `g | DEL` (deleted by generation `g`).
//!
//! *Counter keys* (`counters` keyspace, `U64AddOperator`) hold a
//! [`CState`]: absent or a `u64`. They receive merges (adds), puts and
//! deletes ([`CounterOp`]).
//!
//! Per key the state keeps the *committed* state (that of the last
//! acknowledged write) and the *pending* operation (set before a write is
//! handed to the database, cleared when it is acknowledged). Writers hold the
//! key's stripe lock across "set pending → write → commit", so at most one
//! operation per key is in flight and the expected state is exact under the
//! lock. After a crash, a key must hold its committed state or the result of
//! its pending operation.
//!
//! Operations of one write batch carry the same nonzero *tag*, so that after
//! a crash the verifier can check the batch was applied all or nothing.
//!
//! For power cuts (in-process, [`ExpectedState::in_memory`] with history),
//! each key also keeps the list of states acknowledged since its last
//! write acknowledged with `sync = true` (that state first): a power cut may
//! lose unsynced acknowledged writes, so any state in that list (or the
//! pending one) is acceptable.
//!
//! ## File format (mmap-free; updated with `pwrite`, one record per call)
//!
//! ```text
//! 0     header (4096 bytes): magic "STRSTEX1", value_keys u32, counter_keys u32,
//!       value_min u32, value_max u32 (all LE)
//! 4096  value records, 16 bytes each: committed u32 | pending u32 | max_gen u32 | tag u32
//! C     counter records (C = the end of the value records rounded up to 4096),
//!       32 bytes each: committed u64 | present u32 | tag u32 | pending_kind u32
//!       | 0 u32 | pending_arg u64
//! ```
//!
//! "Set pending" is one `pwrite` of bytes 4..16 (value) or 12..32 (counter)
//! of the record; "commit" is one `pwrite` of the whole record. Records never
//! straddle a page, so a SIGKILL leaves each record either before or after
//! each call: the file stays consistent at per-key granularity.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};

use parking_lot::Mutex;

/// Bit of a [`VState`] marking a delete.
pub const DEL: u32 = 1 << 31;

/// State of a value key: `0` never written, `g` put of generation `g`,
/// `g | DEL` deleted by generation `g`.
pub type VState = u32;

/// State of a counter key.
pub type CState = Option<u64>;

/// True when a value key in state `s` has no value.
pub fn vstate_absent(s: VState) -> bool {
    s == 0 || s & DEL != 0
}

/// The generation of a value-key state (0 for "never written").
pub fn vstate_gen(s: VState) -> u32 {
    s & !DEL
}

/// Human-readable form of a value-key state.
pub fn describe_vstate(s: VState) -> String {
    if s == 0 {
        "absent (never written)".to_string()
    } else if s & DEL != 0 {
        format!("absent (deleted by generation {})", s & !DEL)
    } else {
        format!("generation {s}")
    }
}

/// An operation on a counter key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterOp {
    /// A merge operand of the `U64AddOperator`.
    Add(u64),
    Put(u64),
    Delete,
}

impl CounterOp {
    /// The state after applying the operation to `s`.
    pub fn apply(self, s: CState) -> CState {
        match self {
            CounterOp::Add(d) => Some(s.unwrap_or(0).wrapping_add(d)),
            CounterOp::Put(v) => Some(v),
            CounterOp::Delete => None,
        }
    }

    fn encode(op: Option<CounterOp>) -> (u32, u64) {
        match op {
            None => (0, 0),
            Some(CounterOp::Add(d)) => (1, d),
            Some(CounterOp::Put(v)) => (2, v),
            Some(CounterOp::Delete) => (3, 0),
        }
    }

    fn decode(kind: u32, arg: u64) -> Option<CounterOp> {
        match kind {
            1 => Some(CounterOp::Add(arg)),
            2 => Some(CounterOp::Put(arg)),
            3 => Some(CounterOp::Delete),
            _ => None,
        }
    }
}

/// Shape of the key space, stored in the file header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub value_keys: u32,
    pub counter_keys: u32,
    pub value_min: u32,
    pub value_max: u32,
}

const MAGIC: &[u8; 8] = b"STRSTEX1";
const HEADER: u64 = 4096;
const VREC: u64 = 16;
const CREC: u64 = 32;

impl Layout {
    fn counter_base(&self) -> u64 {
        let end = HEADER + VREC * u64::from(self.value_keys);
        end.div_ceil(4096) * 4096
    }

    fn file_len(&self) -> u64 {
        self.counter_base() + CREC * u64::from(self.counter_keys)
    }
}

#[derive(Default)]
struct VSlot {
    committed: AtomicU32,
    pending: AtomicU32,
    max_gen: AtomicU32,
    tag: AtomicU32,
    changes: AtomicU32,
}

#[derive(Default)]
struct CSlot {
    committed: AtomicU64,
    present: AtomicU32,
    tag: AtomicU32,
    pending_kind: AtomicU32,
    pending_arg: AtomicU64,
    changes: AtomicU32,
}

/// A lock-free reading of a value key's expected state, for readers that do
/// not hold the key's lock (scans): if `changes_before` of a reading taken
/// before the read equals `changes_after` of one taken after it and neither
/// shows a pending operation, the key did not change in between.
#[derive(Clone, Copy, Debug)]
pub struct ValueView {
    pub changes_before: u32,
    pub committed: VState,
    pub pending: VState,
    pub max_gen: u32,
    pub changes_after: u32,
}

/// Like [`ValueView`], for counter keys.
#[derive(Clone, Copy, Debug)]
pub struct CounterView {
    pub changes_before: u32,
    pub committed: CState,
    pub pending: Option<CounterOp>,
    pub changes_after: u32,
}

/// The expected state of every key; see the module documentation.
pub struct ExpectedState {
    layout: Layout,
    file: Option<File>,
    path: Option<PathBuf>,
    vals: Vec<VSlot>,
    ctrs: Vec<CSlot>,
    vhist: Option<Vec<Mutex<Vec<VState>>>>,
    chist: Option<Vec<Mutex<Vec<CState>>>>,
    next_tag: AtomicU32,
}

pub(crate) fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Creates (or truncates) an expected-state file of `len` bytes starting
/// with `header`, and makes it durable before any record is written.
pub(crate) fn create_state_file(path: &Path, len: u64, header: &[u8]) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    file.set_len(len)?;
    file.write_all_at(header, 0)?;
    file.sync_all()?;
    Ok(file)
}

fn le64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

impl ExpectedState {
    fn blank(layout: Layout, history: bool) -> ExpectedState {
        let vals = (0..layout.value_keys).map(|_| VSlot::default()).collect();
        let ctrs = (0..layout.counter_keys).map(|_| CSlot::default()).collect();
        ExpectedState {
            layout,
            file: None,
            path: None,
            vals,
            ctrs,
            vhist: history.then(|| {
                (0..layout.value_keys)
                    .map(|_| Mutex::new(vec![0]))
                    .collect()
            }),
            chist: history.then(|| {
                (0..layout.counter_keys)
                    .map(|_| Mutex::new(vec![None]))
                    .collect()
            }),
            next_tag: AtomicU32::new(1),
        }
    }

    /// An in-memory state (no file). With `history`, keys remember the
    /// states acknowledged since their last synced write (power-cut mode).
    pub fn in_memory(layout: Layout, history: bool) -> ExpectedState {
        ExpectedState::blank(layout, history)
    }

    /// Creates (or truncates) the file at `path` with every key absent.
    pub fn create(path: &Path, layout: Layout) -> io::Result<ExpectedState> {
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(MAGIC);
        for x in [
            layout.value_keys,
            layout.counter_keys,
            layout.value_min,
            layout.value_max,
        ] {
            h.extend_from_slice(&x.to_le_bytes());
        }
        let file = create_state_file(path, layout.file_len(), &h)?;
        let mut s = ExpectedState::blank(layout, false);
        s.file = Some(file);
        s.path = Some(path.to_path_buf());
        Ok(s)
    }

    /// Opens an existing file.
    pub fn open(path: &Path) -> io::Result<ExpectedState> {
        let bad = |m: String| io::Error::new(io::ErrorKind::InvalidData, m);
        let data = std::fs::read(path)?;
        if data.len() < 24 || &data[..8] != MAGIC {
            return Err(bad(format!(
                "{} is not an expected-state file",
                path.display()
            )));
        }
        let layout = Layout {
            value_keys: le32(&data, 8),
            counter_keys: le32(&data, 12),
            value_min: le32(&data, 16),
            value_max: le32(&data, 20),
        };
        if (data.len() as u64) < layout.file_len() {
            return Err(bad(format!(
                "{} is {} bytes, its layout needs {}",
                path.display(),
                data.len(),
                layout.file_len()
            )));
        }
        let mut s = ExpectedState::blank(layout, false);
        for (i, slot) in s.vals.iter().enumerate() {
            let at = (HEADER + VREC * i as u64) as usize;
            slot.committed.store(le32(&data, at), SeqCst);
            slot.pending.store(le32(&data, at + 4), SeqCst);
            slot.max_gen.store(le32(&data, at + 8), SeqCst);
            slot.tag.store(le32(&data, at + 12), SeqCst);
        }
        let base = layout.counter_base();
        for (c, slot) in s.ctrs.iter().enumerate() {
            let at = (base + CREC * c as u64) as usize;
            slot.committed.store(le64(&data, at), SeqCst);
            slot.present.store(le32(&data, at + 8), SeqCst);
            slot.tag.store(le32(&data, at + 12), SeqCst);
            slot.pending_kind.store(le32(&data, at + 16), SeqCst);
            slot.pending_arg.store(le64(&data, at + 24), SeqCst);
        }
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        s.file = Some(file);
        s.path = Some(path.to_path_buf());
        Ok(s)
    }

    /// Opens `path` if it exists (its layout must be `layout`), else creates it.
    pub fn open_or_create(path: &Path, layout: Layout) -> io::Result<ExpectedState> {
        if !path.exists() {
            return ExpectedState::create(path, layout);
        }
        let s = ExpectedState::open(path)?;
        if s.layout != layout {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} was made for {:?}, this run asks for {:?}; use the same --keys and \
                     value sizes or start afresh",
                    path.display(),
                    s.layout,
                    layout
                ),
            ));
        }
        Ok(s)
    }

    /// The key-space shape.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The backing file, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// True when keys keep their unsynced history (power-cut mode).
    pub fn has_history(&self) -> bool {
        self.vhist.is_some()
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

    fn pwrite(&self, buf: &[u8], at: u64) {
        if let Some(f) = &self.file
            && let Err(e) = f.write_all_at(buf, at)
        {
            panic!(
                "expected-state file: pwrite of {} bytes at {at} failed: {e}",
                buf.len()
            );
        }
    }

    fn write_value_record(&self, i: u32, from: usize) {
        let s = &self.vals[i as usize];
        let mut r = [0u8; 16];
        r[0..4].copy_from_slice(&s.committed.load(SeqCst).to_le_bytes());
        r[4..8].copy_from_slice(&s.pending.load(SeqCst).to_le_bytes());
        r[8..12].copy_from_slice(&s.max_gen.load(SeqCst).to_le_bytes());
        r[12..16].copy_from_slice(&s.tag.load(SeqCst).to_le_bytes());
        self.pwrite(&r[from..], HEADER + VREC * u64::from(i) + from as u64);
    }

    fn write_counter_record(&self, c: u32, from: usize) {
        let s = &self.ctrs[c as usize];
        let mut r = [0u8; 32];
        r[0..8].copy_from_slice(&s.committed.load(SeqCst).to_le_bytes());
        r[8..12].copy_from_slice(&s.present.load(SeqCst).to_le_bytes());
        r[12..16].copy_from_slice(&s.tag.load(SeqCst).to_le_bytes());
        r[16..20].copy_from_slice(&s.pending_kind.load(SeqCst).to_le_bytes());
        r[24..32].copy_from_slice(&s.pending_arg.load(SeqCst).to_le_bytes());
        let at = self.layout.counter_base() + CREC * u64::from(c) + from as u64;
        self.pwrite(&r[from..], at);
    }

    // ---- value keys (mutations: the caller holds the key's lock) ----

    /// Records a put (or delete) of value key `i` as pending, before it is
    /// handed to the database; returns the new state (its generation is the
    /// key's highest so far plus one).
    pub fn begin_value(&self, i: u32, delete: bool, tag: u32) -> VState {
        let s = &self.vals[i as usize];
        let g = s.max_gen.load(SeqCst) + 1;
        assert!(g < DEL, "value key {i} ran out of generations");
        let st = if delete { g | DEL } else { g };
        s.pending.store(st, SeqCst);
        s.max_gen.store(g, SeqCst);
        s.tag.store(tag, SeqCst);
        s.changes.fetch_add(1, SeqCst);
        self.write_value_record(i, 4);
        st
    }

    /// Records that the pending write of value key `i` was acknowledged.
    pub fn commit_value(&self, i: u32, synced: bool) {
        let s = &self.vals[i as usize];
        let st = s.pending.load(SeqCst);
        s.committed.store(st, SeqCst);
        s.pending.store(0, SeqCst);
        s.tag.store(0, SeqCst);
        s.changes.fetch_add(1, SeqCst);
        self.write_value_record(i, 0);
        if let Some(h) = &self.vhist {
            let mut h = h[i as usize].lock();
            if synced {
                h.clear();
            }
            h.push(st);
        }
    }

    /// Sets value key `i` to `st` with nothing pending (after verification
    /// found it holding `st`).
    pub fn resolve_value(&self, i: u32, st: VState) {
        let s = &self.vals[i as usize];
        s.committed.store(st, SeqCst);
        s.pending.store(0, SeqCst);
        s.tag.store(0, SeqCst);
        if vstate_gen(st) > s.max_gen.load(SeqCst) {
            s.max_gen.store(vstate_gen(st), SeqCst);
        }
        s.changes.fetch_add(1, SeqCst);
        self.write_value_record(i, 0);
        if let Some(h) = &self.vhist {
            *h[i as usize].lock() = vec![st];
        }
    }

    /// The committed state of value key `i`.
    pub fn value_committed(&self, i: u32) -> VState {
        self.vals[i as usize].committed.load(SeqCst)
    }

    /// The pending state of value key `i` (0: none).
    pub fn value_pending(&self, i: u32) -> VState {
        self.vals[i as usize].pending.load(SeqCst)
    }

    /// The batch tag of value key `i`'s pending write (0: none).
    pub fn value_tag(&self, i: u32) -> u32 {
        self.vals[i as usize].tag.load(SeqCst)
    }

    /// Overwrites the committed state of value key `i` without touching
    /// anything else (used by tests to corrupt the expected state).
    pub fn force_value_committed(&self, i: u32, st: VState) {
        self.vals[i as usize].committed.store(st, SeqCst);
        self.write_value_record(i, 0);
    }

    /// States value key `i` may hold after a crash, excluding its pending
    /// one: the committed state, or, in power-cut mode, every state
    /// acknowledged since the last synced write.
    pub fn value_settled(&self, i: u32) -> Vec<VState> {
        match &self.vhist {
            Some(h) => h[i as usize].lock().clone(),
            None => vec![self.value_committed(i)],
        }
    }

    /// A lock-free reading (see [`ValueView`]).
    pub fn value_view(&self, i: u32) -> ValueView {
        let s = &self.vals[i as usize];
        let changes_before = s.changes.load(SeqCst);
        let committed = s.committed.load(SeqCst);
        let pending = s.pending.load(SeqCst);
        let max_gen = s.max_gen.load(SeqCst);
        let changes_after = s.changes.load(SeqCst);
        ValueView {
            changes_before,
            committed,
            pending,
            max_gen,
            changes_after,
        }
    }

    // ---- counter keys (mutations: the caller holds the key's lock) ----

    /// Records a counter operation as pending.
    pub fn begin_counter(&self, c: u32, op: CounterOp, tag: u32) {
        let s = &self.ctrs[c as usize];
        let (k, a) = CounterOp::encode(Some(op));
        s.pending_kind.store(k, SeqCst);
        s.pending_arg.store(a, SeqCst);
        s.tag.store(tag, SeqCst);
        s.changes.fetch_add(1, SeqCst);
        self.write_counter_record(c, 12);
    }

    fn set_counter(&self, c: u32, st: CState) {
        let s = &self.ctrs[c as usize];
        s.committed.store(st.unwrap_or(0), SeqCst);
        s.present.store(u32::from(st.is_some()), SeqCst);
        s.pending_kind.store(0, SeqCst);
        s.pending_arg.store(0, SeqCst);
        s.tag.store(0, SeqCst);
        s.changes.fetch_add(1, SeqCst);
        self.write_counter_record(c, 0);
    }

    /// Records that the pending operation of counter `c` was acknowledged.
    pub fn commit_counter(&self, c: u32, synced: bool) {
        let st = match self.counter_pending(c) {
            Some(op) => op.apply(self.counter_committed(c)),
            None => self.counter_committed(c),
        };
        self.set_counter(c, st);
        if let Some(h) = &self.chist {
            let mut h = h[c as usize].lock();
            if synced {
                h.clear();
            }
            h.push(st);
        }
    }

    /// Sets counter `c` to `st` with nothing pending.
    pub fn resolve_counter(&self, c: u32, st: CState) {
        self.set_counter(c, st);
        if let Some(h) = &self.chist {
            *h[c as usize].lock() = vec![st];
        }
    }

    /// The committed state of counter `c`.
    pub fn counter_committed(&self, c: u32) -> CState {
        let s = &self.ctrs[c as usize];
        (s.present.load(SeqCst) != 0).then(|| s.committed.load(SeqCst))
    }

    /// The pending operation of counter `c`.
    pub fn counter_pending(&self, c: u32) -> Option<CounterOp> {
        let s = &self.ctrs[c as usize];
        CounterOp::decode(s.pending_kind.load(SeqCst), s.pending_arg.load(SeqCst))
    }

    /// The batch tag of counter `c`'s pending operation (0: none).
    pub fn counter_tag(&self, c: u32) -> u32 {
        self.ctrs[c as usize].tag.load(SeqCst)
    }

    /// States counter `c` may hold after a crash, excluding the pending
    /// operation's result (see [`ExpectedState::value_settled`]).
    pub fn counter_settled(&self, c: u32) -> Vec<CState> {
        match &self.chist {
            Some(h) => h[c as usize].lock().clone(),
            None => vec![self.counter_committed(c)],
        }
    }

    /// A lock-free reading (see [`CounterView`]).
    pub fn counter_view(&self, c: u32) -> CounterView {
        let s = &self.ctrs[c as usize];
        let changes_before = s.changes.load(SeqCst);
        let committed = (s.present.load(SeqCst) != 0).then(|| s.committed.load(SeqCst));
        let pending = CounterOp::decode(s.pending_kind.load(SeqCst), s.pending_arg.load(SeqCst));
        let changes_after = s.changes.load(SeqCst);
        CounterView {
            changes_before,
            committed,
            pending,
            changes_after,
        }
    }

    /// Number of keys with a pending operation.
    pub fn pending_count(&self) -> usize {
        let v = (0..self.layout.value_keys)
            .filter(|&i| self.value_pending(i) != 0)
            .count();
        let c = (0..self.layout.counter_keys)
            .filter(|&c| self.counter_pending(c).is_some())
            .count();
        v + c
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

    fn layout() -> Layout {
        Layout {
            value_keys: 300,
            counter_keys: 40,
            value_min: 8,
            value_max: 64,
        }
    }

    #[test]
    fn file_round_trips_pending_and_committed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("exp");
        let s = ExpectedState::create(&p, layout()).expect("create");
        let a = s.begin_value(5, false, 0);
        s.commit_value(5, false);
        let b = s.begin_value(5, true, 9);
        s.begin_counter(3, CounterOp::Add(7), 9);
        s.begin_counter(4, CounterOp::Put(70), 0);
        s.commit_counter(4, false);
        drop(s);
        let s = ExpectedState::open(&p).expect("open");
        assert_eq!(s.layout(), layout());
        assert_eq!(s.value_committed(5), a);
        assert_eq!(s.value_pending(5), b);
        assert_eq!(b, 2 | DEL);
        assert_eq!(s.value_tag(5), 9);
        assert_eq!(s.counter_pending(3), Some(CounterOp::Add(7)));
        assert_eq!(s.counter_committed(3), None);
        assert_eq!(s.counter_committed(4), Some(70));
        assert_eq!(s.pending_count(), 2);
        // Generations keep growing after a resolve to an older state.
        s.resolve_value(5, a);
        assert_eq!(s.begin_value(5, false, 0), 3);
    }

    #[test]
    fn history_keeps_unsynced_states() {
        let s = ExpectedState::in_memory(layout(), true);
        s.begin_value(1, false, 0);
        s.commit_value(1, true);
        s.begin_value(1, false, 0);
        s.commit_value(1, false);
        s.begin_value(1, true, 0);
        s.commit_value(1, false);
        assert_eq!(s.value_settled(1), vec![1, 2, 3 | DEL]);
        s.begin_value(1, false, 0);
        s.commit_value(1, true);
        assert_eq!(s.value_settled(1), vec![4]);
    }
}
