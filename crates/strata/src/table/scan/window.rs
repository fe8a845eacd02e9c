//! One window of a scan: the rows of every source up to a common key,
//! merged and resolved into references to the values to output.
//!
//! The sources' rows in the window (segments of their chunks) are merged
//! by (user key ascending, trailer descending) on the first eight bytes of
//! the key, comparing whole keys only when those tie. Each key's entries
//! then become one output row, described per wanted column by a [`Ref`] to
//! the block row that holds its value. Rows whose entries are all inserts
//! (the common case: a key held by one source, or by the groups of one
//! level that its insert was split into) are resolved here without copying
//! a value; keys with partial updates or deletes go through the general
//! [`Resolver`] and their values are kept in the window.
//!
//! Segments of one level's groups that hold the same rows are zipped: the
//! first (the lead) is merged, the others (its partners) are read through
//! its rows, so a scan of many groups of a level merges one run per level,
//! not one per group. A reference to a lead's row then reaches a partner's
//! column through the window's holders (segment and row shift per slot).

use std::cmp::Ordering;

use super::source::Chunk;
use crate::key::{SeqNo, ValueKind};
use crate::table::piece::Cell;
use crate::table::view::{OwnedCell, Resolver};

/// Where one output value is: a segment's row, a resolved row, or nowhere
/// (null).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Ref(u64);

const NULL_SEG: u32 = u32::MAX;
const RESOLVED_SEG: u32 = u32::MAX - 1;

impl Ref {
    pub const NULL: Ref = Ref((NULL_SEG as u64) << 32);

    #[inline]
    fn at(seg: u32, row: u32) -> Ref {
        Ref((u64::from(seg) << 32) | u64::from(row))
    }

    #[inline]
    pub fn parts(self) -> (u32, u32) {
        ((self.0 >> 32) as u32, self.0 as u32)
    }
}

/// Rows `start..end` of one source's chunk.
pub(super) struct Segment {
    pub chunk: Chunk,
    pub start: usize,
    pub end: usize,
    /// The length of every key, when all are this long and at most eight
    /// bytes: the prefix is then the whole key.
    short: Option<usize>,
    /// Whether every row carries an event column (`None`: row by row).
    events: Option<bool>,
    /// The slots every row carries, as bits (`None`: row by row, or more
    /// than 64 slots).
    slots: Option<u64>,
    /// The slots its group holds, as bits (`None`: more than 64 slots).
    group_slots: Option<u64>,
    /// Whether its group holds an event column.
    holds_event: bool,
    /// Whether some row lacks some of the group's columns.
    partial: bool,
    level: usize,
    /// Segments of other groups of the same level holding the same rows
    /// (keys and trailers, row for row): LASER's column-merging iterator,
    /// they are read through this one instead of being merged.
    partners: Vec<u32>,
    /// Read through another segment's `partners`.
    follower: bool,
    /// Its partners' columns are read through its rows: an entry that is
    /// a whole insert in it and every partner stands for theirs without
    /// being expanded, and [`Window::holder`] says where each slot is.
    merged: bool,
}

/// Where segment rows' values of one slot are: in segment `seg`, `shift`
/// rows further on (a zipped partner's rows are aligned with its lead's
/// but may start elsewhere in its block).
#[derive(Clone, Copy)]
pub(super) struct Holder {
    pub seg: u32,
    pub shift: i32,
}

/// Whether a segment's lone insert of a key is a row by itself.
#[derive(Clone, Copy)]
enum Simple {
    Always,
    IfEvent,
    /// A merged lead some of whose rows lack columns: if the row is whole
    /// in it and every partner.
    IfWhole,
    Never,
}

/// A row of a segment in the merge: its key's prefix and its trailer.
#[derive(Clone, Copy)]
struct Item {
    prefix: u64,
    trailer: u64,
    seg: u32,
    row: u32,
}

impl Item {
    const EMPTY: Item = Item {
        prefix: 0,
        trailer: 0,
        seg: 0,
        row: 0,
    };
}

/// A window's segments and its resolved rows.
pub(super) struct Window {
    /// Slot `s` holds value column `want[s]`.
    want: Vec<usize>,
    /// The value columns whose carriers decide whether a row exists.
    event_cols: Vec<usize>,
    pub segs: Vec<Segment>,
    /// Per slot, per output row; unused while `uniform` (see [`Self::refs`]).
    cols: Vec<Vec<Ref>>,
    /// Per output row: where its key is.
    pub keys: Vec<Ref>,
    /// Every output row so far takes every slot from the row its key is
    /// in (rows that are one entry each: the common case), so `keys` stands
    /// for every slot's references and none are written per slot.
    uniform: bool,
    /// Per segment and slot (`seg * want.len() + slot`): where the values
    /// are.
    holders: Vec<Holder>,
    /// Per slot: the values of rows the resolver produced.
    resolved: Vec<Vec<OwnedCell>>,
    resolved_rows: usize,
    /// Output rows, and how many have been handed out.
    pub rows: usize,
    pub taken: usize,
    items: Vec<Item>,
    /// Per segment: whether its entries resolve alone (see `resolve`).
    simple: Vec<Simple>,
    scratch: Vec<Item>,
    runs: Vec<usize>,
    expanded: Vec<Item>,
    /// Whether the segments have been zipped (once per window).
    zipped: bool,
}

impl Window {
    pub fn new(want: &[usize], event_cols: &[usize]) -> Window {
        Window {
            want: want.to_vec(),
            event_cols: event_cols.to_vec(),
            segs: Vec::new(),
            cols: vec![Vec::new(); want.len()],
            keys: Vec::new(),
            holders: Vec::new(),
            resolved: vec![Vec::new(); want.len()],
            resolved_rows: 0,
            rows: 0,
            taken: 0,
            items: Vec::new(),
            simple: Vec::new(),
            scratch: Vec::new(),
            runs: Vec::new(),
            expanded: Vec::new(),
            zipped: false,
            uniform: true,
        }
    }

    /// Empties the window for the next one.
    pub fn clear(&mut self) {
        self.segs.clear();
        for c in &mut self.cols {
            c.clear();
        }
        for r in &mut self.resolved {
            r.clear();
        }
        self.keys.clear();
        self.resolved_rows = 0;
        self.rows = 0;
        self.taken = 0;
        self.zipped = false;
        self.uniform = true;
    }

    /// Slot `slot`'s reference of every output row.
    #[inline]
    pub fn refs(&self, slot: usize) -> &[Ref] {
        if self.uniform {
            &self.keys
        } else {
            &self.cols[slot]
        }
    }

    /// Writes the per-slot references of the rows so far, before a row
    /// whose slots come from other rows than its key's.
    fn materialize(&mut self) {
        if self.uniform {
            for c in &mut self.cols {
                c.clear();
                c.extend_from_slice(&self.keys);
            }
            self.uniform = false;
        }
    }

    /// Adds an output row whose every slot and key are segment row `r`.
    #[inline]
    fn push_whole(&mut self, r: Ref) {
        if !self.uniform {
            for c in &mut self.cols {
                c.push(r);
            }
        }
        self.keys.push(r);
        self.rows += 1;
    }

    /// Adds rows `start..end` of a chunk from `level` (0 for the sources
    /// above level 1, which hold whole rows).
    pub fn push(&mut self, chunk: Chunk, start: usize, end: usize, level: usize) {
        if start < end {
            let short = chunk.block.fixed_key_len().filter(|&l| l <= 8);
            let holds_event = self.event_cols.iter().any(|&v| chunk.map[v].is_some());
            let events = match (holds_event, chunk.block.partial()) {
                (false, _) => Some(false),
                (true, false) => Some(true),
                (true, true) => None,
            };
            let group_slots = (self.want.len() <= 64).then(|| {
                self.want
                    .iter()
                    .enumerate()
                    .filter(|&(_, &v)| chunk.map[v].is_some())
                    .fold(0u64, |m, (slot, _)| m | (1 << slot))
            });
            let partial = chunk.block.partial();
            self.segs.push(Segment {
                chunk,
                start,
                end,
                short,
                events,
                slots: group_slots.filter(|_| !partial),
                group_slots,
                holds_event,
                partial,
                level,
                partners: Vec::new(),
                follower: false,
                merged: false,
            });
        }
    }

    /// The value column of slot `slot`.
    pub fn want_column(&self, slot: usize) -> usize {
        self.want[slot]
    }

    /// Output row `i`'s user key.
    pub fn key(&self, i: usize) -> &[u8] {
        let (s, r) = self.keys[i].parts();
        self.segs[s as usize].chunk.block.user_key(r as usize)
    }

    /// Output row `i`'s value of slot `slot`.
    #[inline]
    pub fn value(&self, slot: usize, i: usize) -> Cell<'_> {
        self.cell(slot, self.refs(slot)[i])
    }

    /// Where segment `seg`'s rows' values of slot `slot` are.
    #[inline]
    pub fn holder(&self, seg: usize, slot: usize) -> Holder {
        self.holders[seg * self.want.len() + slot]
    }

    /// The value a reference of slot `slot` points at.
    #[inline]
    pub fn cell(&self, slot: usize, r: Ref) -> Cell<'_> {
        match r.parts() {
            (NULL_SEG, _) => Cell::Null,
            (RESOLVED_SEG, i) => self.resolved[slot][i as usize].as_cell(),
            (s, row) => {
                let h = self.holder(s as usize, slot);
                self.segs[h.seg as usize]
                    .chunk
                    .cell(
                        self.want[slot],
                        (i64::from(row) + i64::from(h.shift)) as usize,
                    )
                    .unwrap_or(Cell::Null)
            }
        }
    }

    fn item_key(&self, it: Item) -> &[u8] {
        self.segs[it.seg as usize]
            .chunk
            .block
            .user_key(it.row as usize)
    }

    /// Whether two items' keys are equal, given equal prefixes.
    #[inline]
    fn same_key(&self, a: Item, b: Item) -> bool {
        match (
            self.segs[a.seg as usize].short,
            self.segs[b.seg as usize].short,
        ) {
            (Some(x), Some(y)) => x == y,
            _ => self.item_key(a) == self.item_key(b),
        }
    }

    /// Merge order: key ascending, then trailer descending (newest first).
    #[inline]
    fn order(&self, a: Item, b: Item) -> Ordering {
        match a.prefix.cmp(&b.prefix) {
            Ordering::Equal => {
                let keys = match (
                    self.segs[a.seg as usize].short,
                    self.segs[b.seg as usize].short,
                ) {
                    (Some(x), Some(y)) => x.cmp(&y),
                    _ => self.item_key(a).cmp(self.item_key(b)),
                };
                keys.then_with(|| b.trailer.cmp(&a.trailer))
            }
            o => o,
        }
    }

    /// Merges the segments and resolves every key visible at `snap`.
    pub fn resolve(&mut self, snap: SeqNo, resolver: &mut Resolver) {
        let mut items = std::mem::take(&mut self.items);
        let mut runs = std::mem::take(&mut self.runs);
        items.clear();
        runs.clear();
        runs.push(0);
        self.zip();
        for (s, seg) in self.segs.iter().enumerate() {
            if seg.follower {
                continue;
            }
            let b = &seg.chunk.block;
            items.extend((seg.start..seg.end).map(|r| Item {
                prefix: b.key_prefix(r),
                trailer: b.trailer(r),
                seg: s as u32,
                row: r as u32,
            }));
            runs.push(items.len());
        }
        self.merge_runs(&mut items, &mut runs);
        self.runs = runs;
        // Per segment, whether a key's lone insert there is a row by
        // itself: always (every row carries an event column, and a merged
        // lead's rows are whole), if the row is whole in the lead and its
        // partners (a merged lead's rows may lack columns), never (its lone
        // inserts are no rows), or if it carries an event column.
        let mut simple = std::mem::take(&mut self.simple);
        simple.clear();
        // A lead whose partners could not be merged into it (more than 64
        // wanted slots) never stands for their columns: its keys expand.
        simple.extend(self.segs.iter().map(|s| match s.events {
            _ if !s.partners.is_empty() && !s.merged => Simple::Never,
            Some(true) if !(s.merged && s.partial) => Simple::Always,
            Some(true) => Simple::IfWhole,
            None if !s.merged => Simple::IfEvent,
            _ => Simple::Never,
        }));
        let mut i = 0;
        while i < items.len() {
            let first = items[i];
            let mut j = i + 1;
            while j < items.len()
                && items[j].prefix == first.prefix
                && self.same_key(items[j], first)
            {
                j += 1;
            }
            // The common case, a key with one version, an insert: the row
            // is that entry, read in place.
            if j == i + 1
                && first.trailer & 0xff == ValueKind::Put as u64
                && SeqNo(first.trailer >> 8) <= snap
                && match simple[first.seg as usize] {
                    Simple::Always => true,
                    Simple::IfEvent => self.carries_event(first),
                    Simple::IfWhole => self.whole(first),
                    Simple::Never => false,
                }
            {
                self.push_whole(Ref::at(first.seg, first.row));
            } else if !self.split_insert(&items[i..j], snap) {
                self.resolve_key(&items[i..j], snap, resolver);
            }
            i = j;
        }
        self.simple = simple;
        self.items = items;
    }

    /// [`Self::zip_groups`], once per window.
    fn zip(&mut self) {
        if !self.zipped {
            self.zip_groups();
            self.zipped = true;
        }
    }

    /// `Some(s)` when segment `s` is the window's only segment to merge
    /// (any other is its zipped partner) and each of its rows is a visible
    /// insert of a key of its own, whole in it and its partners: the
    /// common window of a scan of data at rest on one level. The window's
    /// rows are then its rows, one for one, with no merge or resolution,
    /// and a predicate can be tested on its columns before any row is
    /// made ([`Self::take_lead_rows`]).
    pub fn lone_lead(&mut self, snap: SeqNo) -> Option<usize> {
        self.zip();
        let mut leads = self.segs.iter().enumerate().filter(|(_, s)| !s.follower);
        let (s, seg) = leads.next()?;
        if leads.next().is_some()
            || seg.events != Some(true)
            || (!seg.partners.is_empty() && !seg.merged)
        {
            return None;
        }
        let check_whole = seg.merged && seg.partial;
        let b = &seg.chunk.block;
        for r in seg.start..seg.end {
            let t = b.trailer(r);
            if t & 0xff != ValueKind::Put as u64 || SeqNo(t >> 8) > snap {
                return None;
            }
            if check_whole && !self.row_whole(s, r) {
                return None;
            }
            if r > seg.start
                && b.key_prefix(r) == b.key_prefix(r - 1)
                && (seg.short.is_some() || b.user_key(r) == b.user_key(r - 1))
            {
                return None;
            }
        }
        Some(s)
    }

    /// The rows of segment `s` (from its start).
    pub fn segment_rows(&self, s: usize) -> usize {
        self.segs[s].end - self.segs[s].start
    }

    /// Makes lone lead `s`'s rows the window's rows: those whose bit is set
    /// in `selected` (bit `i` is the segment's `i`-th row), or all.
    pub fn take_lead_rows(&mut self, s: usize, selected: Option<&[u64]>) {
        let (start, end) = (self.segs[s].start, self.segs[s].end);
        let mut push = |r: usize| self.push_whole(Ref::at(s as u32, r as u32));
        match selected {
            None => (start..end).for_each(&mut push),
            Some(bits) => {
                for (w, &word) in bits.iter().enumerate() {
                    let mut m = word;
                    while m != 0 {
                        let i = w * 64 + m.trailing_zeros() as usize;
                        m &= m - 1;
                        if start + i < end {
                            push(start + i);
                        }
                    }
                }
            }
        }
    }

    /// Pairs the segments of one level's groups that hold the same rows,
    /// and says per segment and slot where the values are.
    fn zip_groups(&mut self) {
        let n = self.want.len();
        self.holders.clear();
        for s in 0..self.segs.len() {
            self.holders.extend((0..n).map(|_| Holder {
                seg: s as u32,
                shift: 0,
            }));
        }
        for i in 0..self.segs.len() {
            if self.segs[i].level == 0 || self.segs[i].follower {
                continue;
            }
            for j in i + 1..self.segs.len() {
                if self.segs[j].level == self.segs[i].level
                    && !self.segs[j].follower
                    && self.aligned(i, j)
                {
                    self.segs[j].follower = true;
                    self.segs[i].partners.push(j as u32);
                }
            }
            self.merge_partners(i);
        }
    }

    /// Lets lead `i`'s rows carry its partners' columns, so that an
    /// insert's entries need not be expanded: the lead's row then stands
    /// for the whole rows of all their groups (rows that lack a column,
    /// updates and tombstones, are still expanded: [`Self::whole`]).
    fn merge_partners(&mut self, i: usize) {
        let lead = &self.segs[i];
        if lead.partners.is_empty() || lead.group_slots.is_none() {
            return;
        }
        let mut slots = lead.group_slots.unwrap_or(0);
        let mut events = lead.holds_event;
        let mut partial = lead.partial;
        let n = self.want.len();
        for k in 0..lead.partners.len() {
            let p = self.segs[i].partners[k] as usize;
            let partner = &self.segs[p];
            // The first segment of the key's entries that holds a column
            // supplies it, as `stitch` would choose.
            let new = partner.group_slots.unwrap_or(0) & !slots;
            slots |= new;
            events |= partner.holds_event;
            partial |= partner.partial;
            let shift = partner.start as i64 - self.segs[i].start as i64;
            for slot in (0..n).filter(|&slot| new & (1 << slot) != 0) {
                self.holders[i * n + slot] = Holder {
                    seg: p as u32,
                    shift: shift as i32,
                };
            }
        }
        let lead = &mut self.segs[i];
        lead.slots = Some(slots);
        lead.events = Some(events);
        lead.partial = partial;
        lead.merged = true;
    }

    /// Whether a merged lead's entry `e` is an insert whose row is whole
    /// in the lead and every partner (so the lead's row stands for all).
    fn whole(&self, e: Item) -> bool {
        (e.trailer & 0xff) as u8 == ValueKind::Put as u8
            && self.row_whole(e.seg as usize, e.row as usize)
    }

    /// Whether merged lead `seg`'s row `row` carries every column in the
    /// lead and every partner.
    fn row_whole(&self, seg: usize, row: usize) -> bool {
        let lead = &self.segs[seg];
        if !lead.partial {
            return true;
        }
        lead.chunk.block.row_whole(row)
            && lead.partners.iter().all(|&p| {
                let p = &self.segs[p as usize];
                p.chunk.block.row_whole(row - lead.start + p.start)
            })
    }

    /// Whether segments `i` and `j` hold the same keys and trailers, row
    /// for row.
    fn aligned(&self, i: usize, j: usize) -> bool {
        let (a, b) = (&self.segs[i], &self.segs[j]);
        if a.end - a.start != b.end - b.start {
            return false;
        }
        let (ba, bb) = (&a.chunk.block, &b.chunk.block);
        let short = a.short.is_some() && a.short == b.short;
        (a.start..a.end).zip(b.start..b.end).all(|(ra, rb)| {
            ba.trailer(ra) == bb.trailer(rb)
                && if short {
                    ba.key_prefix(ra) == bb.key_prefix(rb)
                } else {
                    ba.user_key(ra) == bb.user_key(rb)
                }
        })
    }

    /// Merges the sorted runs `items[runs[i]..runs[i + 1]]` into one, in
    /// rounds of two-way merges (stable: of equal items, the earlier run's
    /// first).
    fn merge_runs(&mut self, items: &mut Vec<Item>, runs: &mut Vec<usize>) {
        let mut out = std::mem::take(&mut self.scratch);
        let mut next_runs = Vec::with_capacity(runs.len());
        while runs.len() > 2 {
            // Every round writes every position, so the buffer needs no
            // filling once it has the items' length (after the first round
            // it and `items` trade places at that length).
            if out.len() != items.len() {
                out.clear();
                out.resize(items.len(), Item::EMPTY);
            }
            next_runs.clear();
            next_runs.push(0);
            let m = runs.len() - 1;
            for k in (0..m).step_by(2) {
                let (a, b) = (runs[k], runs[k + 1]);
                let c = if k + 2 <= m { runs[k + 2] } else { b };
                let (mut i, mut j, mut o) = (a, b, a);
                while i < b && j < c {
                    let (x, y) = (items[i], items[j]);
                    // Keys are rarely equal: the common case is one
                    // comparison whose result selects, without a branch
                    // on the (unpredictable) outcome.
                    let take_y = if x.prefix != y.prefix {
                        y.prefix < x.prefix
                    } else {
                        self.order(y, x) == Ordering::Less
                    };
                    out[o] = if take_y { y } else { x };
                    o += 1;
                    j += usize::from(take_y);
                    i += usize::from(!take_y);
                }
                out[o..o + (b - i)].copy_from_slice(&items[i..b]);
                o += b - i;
                out[o..o + (c - j)].copy_from_slice(&items[j..c]);
                next_runs.push(c);
            }
            std::mem::swap(items, &mut out);
            std::mem::swap(runs, &mut next_runs);
        }
        self.scratch = out;
    }

    fn push_row(&mut self, key: Item) {
        self.keys.push(Ref::at(key.seg, key.row));
        self.rows += 1;
    }

    /// Whether entry `e` carries a column that decides the row's existence.
    #[inline]
    fn carries_event(&self, e: Item) -> bool {
        let seg = &self.segs[e.seg as usize];
        seg.events.unwrap_or_else(|| {
            let row = e.row as usize;
            // Most rows of a partial block carry every column of it: one
            // bit says so.
            (seg.holds_event && seg.chunk.block.row_whole(row))
                || self.event_cols.iter().any(|&v| seg.chunk.carries(v, row))
        })
    }

    /// A key whose entries are the pieces of one visible insert, each from
    /// a segment without partners whose rows all carry its group's columns:
    /// the common key of a scan over groups that compaction moved down
    /// apart (their segments hold different rows, so they do not zip). Its
    /// row is stitched from the pieces' slots directly, as
    /// [`Self::resolve_entries`] would stitch it; false, having done
    /// nothing, for any other key.
    fn split_insert(&mut self, entries: &[Item], snap: SeqNo) -> bool {
        let t = entries[0].trailer;
        if t & 0xff != ValueKind::Put as u64 || SeqNo(t >> 8) > snap || self.want.len() > 64 {
            return false;
        }
        let mut event = None;
        for &e in entries {
            let seg = &self.segs[e.seg as usize];
            // (`slots` is known only for segments without partial rows,
            // whose `events` is then known too.)
            if e.trailer != t || !seg.partners.is_empty() || seg.slots.is_none() {
                return false;
            }
            if event.is_none() && seg.events == Some(true) {
                event = Some(e);
            }
        }
        let Some(first) = event else {
            return false;
        };
        self.materialize();
        self.stitch(entries, t >> 8);
        self.push_row(first);
        true
    }

    /// Resolves one key from its entries, newest first.
    fn resolve_key(&mut self, entries: &[Item], snap: SeqNo, resolver: &mut Resolver) {
        // A merged lead's entry claims its partners' columns. Where that
        // does not hold (the row is not a whole insert), or where the key
        // needs the general resolver (which reads each entry's own block),
        // its partners' entries are expanded and the key resolved in full.
        let non_put = entries
            .iter()
            .any(|e| (e.trailer & 0xff) as u8 != ValueKind::Put as u8);
        let (mut unmerged, mut general) = (false, false);
        for &e in entries {
            let seg = &self.segs[e.seg as usize];
            if seg.partners.is_empty() {
                continue;
            }
            if !seg.merged {
                unmerged = true;
            } else if non_put || !self.whole(e) {
                general = true;
            }
        }
        if unmerged || general {
            // Each entry of a zipped segment stands for its partners' rows
            // too.
            let mut all = std::mem::take(&mut self.expanded);
            all.clear();
            for &e in entries {
                all.push(e);
                let lead = &self.segs[e.seg as usize];
                if lead.merged && !general {
                    continue;
                }
                for &p in &lead.partners {
                    let row = e.row as usize - lead.start + self.segs[p as usize].start;
                    all.push(Item {
                        seg: p,
                        row: row as u32,
                        ..e
                    });
                }
            }
            if general {
                self.resolve_general(&all, snap, resolver);
            } else {
                self.resolve_entries(&all, snap, resolver);
            }
            self.expanded = all;
        } else {
            self.resolve_entries(entries, snap, resolver);
        }
    }

    fn resolve_entries(&mut self, entries: &[Item], snap: SeqNo, resolver: &mut Resolver) {
        // Inserts only (the common case): the newest insert that carries an
        // event column is the row, and its columns come from the entries of
        // that insert (the groups it was split into). A lone update has no
        // insert below it and a lone delete hides nothing.
        let mut event: Option<Item> = None;
        for &e in entries {
            if SeqNo(e.trailer >> 8) > snap {
                continue;
            }
            if (e.trailer & 0xff) as u8 != ValueKind::Put as u8 {
                return self.resolve_general(entries, snap, resolver);
            }
            if event.is_none() && self.carries_event(e) {
                event = Some(e);
            }
        }
        let Some(first) = event else { return };
        if let [e] = entries {
            let r = Ref::at(e.seg, e.row);
            if !self.uniform {
                for c in &mut self.cols {
                    c.push(r);
                }
            } else if first.seg != e.seg || first.row != e.row {
                self.materialize();
                for c in &mut self.cols {
                    c.push(r);
                }
            }
        } else {
            self.materialize();
            self.stitch(entries, first.trailer >> 8);
        }
        self.push_row(first);
    }

    /// Takes each wanted column from the first entry of insert `seq` that
    /// carries it.
    fn stitch(&mut self, entries: &[Item], seq: u64) {
        let Window {
            segs, cols, want, ..
        } = self;
        let same = entries.iter().filter(|e| e.trailer >> 8 == seq);
        if want.len() <= 64 && same.clone().all(|e| segs[e.seg as usize].slots.is_some()) {
            let mut assigned = 0u64;
            for e in same {
                let mut new = segs[e.seg as usize].slots.unwrap_or(0) & !assigned;
                assigned |= new;
                while new != 0 {
                    let slot = new.trailing_zeros() as usize;
                    cols[slot].push(Ref::at(e.seg, e.row));
                    new &= new - 1;
                }
            }
            let mut missing = !assigned & (u64::MAX >> (64 - want.len().max(1)));
            if want.is_empty() {
                missing = 0;
            }
            while missing != 0 {
                let slot = missing.trailing_zeros() as usize;
                cols[slot].push(Ref::NULL);
                missing &= missing - 1;
            }
            return;
        }
        for (slot, &v) in want.iter().enumerate() {
            // Where a segment's slots are known (as for a merged lead,
            // whose partners hold some), they say; else its row does.
            let r = same
                .clone()
                .find(|e| {
                    let seg = &segs[e.seg as usize];
                    match seg.slots {
                        Some(bits) if slot < 64 => bits & (1 << slot) != 0,
                        _ => seg.chunk.carries(v, e.row as usize),
                    }
                })
                .map_or(Ref::NULL, |e| Ref::at(e.seg, e.row));
            cols[slot].push(r);
        }
    }

    /// Keys with updates or deletes: the general resolver.
    fn resolve_general(&mut self, entries: &[Item], snap: SeqNo, resolver: &mut Resolver) {
        resolver.reset();
        let mut first = None;
        for &e in entries {
            let seq = SeqNo(e.trailer >> 8);
            if seq > snap {
                continue;
            }
            first.get_or_insert(e);
            let kind = ValueKind::from_u8((e.trailer & 0xff) as u8).unwrap_or(ValueKind::Put);
            let chunk = &self.segs[e.seg as usize].chunk;
            resolver.offer(seq, kind, &|v| chunk.cell(v, e.row as usize));
            if resolver.settled() {
                break;
            }
        }
        let Some(first) = first else { return };
        if !resolver.exists() {
            return;
        }
        self.materialize();
        let idx = self.resolved_rows as u32;
        self.resolved_rows += 1;
        for slot in 0..self.want.len() {
            let mut cell = OwnedCell::Null;
            cell.set(resolver.value(self.want[slot]));
            self.resolved[slot].push(cell);
            self.cols[slot].push(Ref::at(RESOLVED_SEG, idx));
        }
        self.push_row(first);
    }

    /// Keeps the output rows `keep` says yes to.
    pub fn retain(&mut self, keep: &[bool]) {
        let mut w = 0;
        for (i, &k) in keep.iter().enumerate() {
            if k {
                self.keys[w] = self.keys[i];
                if !self.uniform {
                    for c in &mut self.cols {
                        c[w] = c[i];
                    }
                }
                w += 1;
            }
        }
        self.keys.truncate(w);
        if !self.uniform {
            for c in &mut self.cols {
                c.truncate(w);
            }
        }
        self.rows = w;
    }
}
