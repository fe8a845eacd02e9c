//! Retained tables: a flushed memtable's entries, kept read-only in a
//! layout made for reads (memtable retention, seed 004).
//!
//! A retained memtable serves the reads of its level-0 file for as long as
//! the file lives. Kept as the skiplist it was written into, it saved
//! nothing: a seek in a 64 MiB skiplist chases about twenty nodes spread
//! over the whole arena, and every step of a scan another one, which costs
//! about what a seek into the file through the block cache does (the
//! `shortrange` suite measured retention at 0.6-1.0× of reading the files;
//! docs/BENCHMARKS.md). Once the memtable is immutable nothing needs the
//! skiplist's links, so the flush copies its entries, in order, into:
//!
//! - `data`: every entry's internal key and value back to back, so a scan
//!   steps through memory sequentially;
//! - `slots`: where each entry starts and how long its key and value are;
//! - `prefixes`: for each entry, 8 bytes of its user key taken just past the
//!   prefix that every key in the table shares, as a big-endian `u64`.
//!
//! A seek binary-searches a sample of every 64th prefix (small enough to
//! stay in cache), then the one run of 64 prefixes the sample points to, and
//! compares whole keys only among the entries whose prefix equals the
//! target's. Because all keys share the skipped
//! prefix, the 8 bytes after it order the keys: for user keys `a < b`,
//! `prefix(a) <= prefix(b)` (bytes past a short key count as zero), so a
//! prefix smaller than the target's means a smaller key and a larger one a
//! larger key.
//!
//! Slots hold 32-bit offsets: a memtable whose entries take 4 GiB or more is
//! not retained in this form (see [`RetainedTable::build`]).

use std::cmp::Ordering;
use std::sync::Arc;

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{compare_internal, user_key};

/// One prefix in this many is copied into the samples (64: a run of
/// prefixes is 512 bytes, eight cache lines).
const SAMPLE_EVERY: usize = 64;

/// Where one entry lives in `data`.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// Offset of the internal key; the value follows it.
    offset: u32,
    key_len: u32,
    value_len: u32,
}

/// A flushed memtable's entries in a read-only, read-optimized layout.
pub struct RetainedTable {
    data: Vec<u8>,
    slots: Vec<Slot>,
    prefixes: Vec<u64>,
    /// Every `SAMPLE_EVERY`th prefix: small enough to stay in cache, so a
    /// seek misses it only for the one run of `prefixes` it then searches.
    samples: Vec<u64>,
    /// The user-key prefix every entry shares.
    common: Vec<u8>,
}

impl std::fmt::Debug for RetainedTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetainedTable")
            .field("entries", &self.slots.len())
            .field("data_bytes", &self.data.len())
            .field("common_prefix_len", &self.common.len())
            .finish()
    }
}

/// The 8 bytes of `ukey` after its first `skip`, big-endian, zero-padded.
#[inline]
fn prefix_after(ukey: &[u8], skip: usize) -> u64 {
    let rest = ukey.get(skip..).unwrap_or(&[]);
    let mut b = [0u8; 8];
    let n = rest.len().min(8);
    b[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(b)
}

impl RetainedTable {
    /// Copies every entry of `it` (positioned anywhere; it is rewound) in
    /// order. `entry_bytes` is a capacity hint (the memtable's key and value
    /// bytes). `Ok(None)` when the entries take 4 GiB or more, which 32-bit
    /// slots cannot address; errors are the iterator's.
    pub fn build(it: &mut dyn InternalIterator, entry_bytes: usize) -> Result<Option<Self>> {
        let mut b = RetainedTableBuilder::new(entry_bytes);
        it.seek_to_first();
        while it.valid() && b.add(it.key(), it.value()) {
            it.next();
        }
        it.status()?;
        Ok(b.finish())
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Bytes held: entries, slots, prefixes and the struct.
    pub fn memory_bytes(&self) -> usize {
        self.data.capacity()
            + self.slots.capacity() * std::mem::size_of::<Slot>()
            + (self.prefixes.capacity() + self.samples.capacity()) * std::mem::size_of::<u64>()
            + self.common.capacity()
            + std::mem::size_of::<Self>()
    }

    #[inline]
    fn key_of(&self, s: Slot) -> &[u8] {
        let start = s.offset as usize;
        &self.data[start..start + s.key_len as usize]
    }

    #[inline]
    fn value_of(&self, s: Slot) -> &[u8] {
        let start = s.offset as usize + s.key_len as usize;
        &self.data[start..start + s.value_len as usize]
    }

    #[inline]
    fn key(&self, i: usize) -> &[u8] {
        self.key_of(self.slots[i])
    }

    /// Index of the first entry whose internal key is `>= target`
    /// (`len()` when there is none).
    pub fn lower_bound(&self, target: &[u8]) -> usize {
        let n = self.slots.len();
        let tu = user_key(target);
        let skip = self.common.len();
        // Outside the shared prefix the prefixes do not order the target
        // against the entries; the shared prefix alone does.
        let head = &tu[..tu.len().min(skip)];
        match head.cmp(&self.common[..head.len()]) {
            Ordering::Less => return 0,
            Ordering::Greater => return n,
            Ordering::Equal if tu.len() < skip => return 0,
            Ordering::Equal => {}
        }
        let tp = prefix_after(tu, skip);
        // The samples narrow the search to one run of SAMPLE_EVERY prefixes
        // (the sample before it is < tp, the one after it >= tp).
        let j = self.samples.partition_point(|&p| p < tp);
        let start = j.saturating_sub(1) * SAMPLE_EVERY;
        let end = (j * SAMPLE_EVERY).min(n);
        let lo = start + self.prefixes[start..end].partition_point(|&p| p < tp);
        // Entries whose prefix equals the target's are few (often none):
        // gallop to their end, then compare whole keys among them.
        let mut step = 1;
        let mut hi = lo;
        while hi < n && self.prefixes[hi] == tp {
            hi = (hi + step).min(n);
            step *= 2;
        }
        let hi = lo + self.prefixes[lo..hi].partition_point(|&p| p == tp);
        lo + self.slots[lo..hi]
            .partition_point(|s| compare_internal(self.key_of(*s), target) == Ordering::Less)
    }

    /// Calls `f` on entries from the first one `>= seek_key` in order,
    /// until it returns false or the entries end.
    pub fn get(&self, seek_key: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) {
        for &s in &self.slots[self.lower_bound(seek_key)..] {
            if !f(self.key_of(s), self.value_of(s)) {
                return;
            }
        }
    }

    /// An iterator over every entry.
    pub fn iter(self: &Arc<Self>) -> RetainedTableIter {
        RetainedTableIter {
            pos: self.slots.len(),
            table: Arc::clone(self),
        }
    }
}

/// Collects entries, in order, into a [`RetainedTable`]. The flush feeds it
/// each entry it writes to the level-0 file, so the copy costs no second
/// walk of the skiplist and holds exactly the file's entries.
pub struct RetainedTableBuilder {
    data: Vec<u8>,
    slots: Vec<Slot>,
    /// Set once the entries outgrow 32-bit offsets; the copy is then given
    /// up and its memory freed.
    too_large: bool,
}

impl RetainedTableBuilder {
    /// `entry_bytes` is a capacity hint for the entries' key and value
    /// bytes; a hint of 4 GiB or more gives up at once.
    pub fn new(entry_bytes: usize) -> Self {
        let too_large = u32::try_from(entry_bytes).is_err();
        RetainedTableBuilder {
            data: Vec::with_capacity(if too_large { 0 } else { entry_bytes }),
            slots: Vec::new(),
            too_large,
        }
    }

    /// Appends one entry; keys must come in internal-key order. False once
    /// the copy has been given up (the entries take 4 GiB or more), after
    /// which further entries are ignored.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> bool {
        if self.too_large {
            return false;
        }
        let end = self.data.len() + key.len() + value.len();
        let (Ok(offset), Ok(key_len), Ok(value_len), Ok(_)) = (
            u32::try_from(self.data.len()),
            u32::try_from(key.len()),
            u32::try_from(value.len()),
            u32::try_from(end),
        ) else {
            self.too_large = true;
            self.data = Vec::new();
            self.slots = Vec::new();
            return false;
        };
        debug_assert!(
            self.slots.last().is_none_or(|s| compare_internal(
                &self.data[s.offset as usize..][..s.key_len as usize],
                key
            ) == Ordering::Less),
            "retained entries must come in order"
        );
        self.data.extend_from_slice(key);
        self.data.extend_from_slice(value);
        self.slots.push(Slot {
            offset,
            key_len,
            value_len,
        });
        true
    }

    /// The finished table; `None` if the copy was given up.
    pub fn finish(self) -> Option<RetainedTable> {
        if self.too_large {
            return None;
        }
        let (mut data, mut slots) = (self.data, self.slots);
        // `data` was sized from the hint; the slots grew by doubling.
        data.shrink_to_fit();
        slots.shrink_to_fit();
        let mut table = RetainedTable {
            data,
            slots,
            prefixes: Vec::new(),
            samples: Vec::new(),
            common: Vec::new(),
        };
        if let (Some(first), Some(last)) = (table.slots.first(), table.slots.last()) {
            let a = user_key(table.key_of(*first));
            let b = user_key(table.key_of(*last));
            let n = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            table.common = a[..n].to_vec();
        }
        let skip = table.common.len();
        table.prefixes = table
            .slots
            .iter()
            .map(|s| prefix_after(user_key(table.key_of(*s)), skip))
            .collect();
        table.samples = table
            .prefixes
            .iter()
            .step_by(SAMPLE_EVERY)
            .copied()
            .collect();
        Some(table)
    }
}

/// A cursor over a [`RetainedTable`]; `pos == len()` when unpositioned.
pub struct RetainedTableIter {
    table: Arc<RetainedTable>,
    pos: usize,
}

impl InternalIterator for RetainedTableIter {
    fn valid(&self) -> bool {
        self.pos < self.table.slots.len()
    }
    fn seek_to_first(&mut self) {
        self.pos = 0;
    }
    fn seek_to_last(&mut self) {
        let n = self.table.slots.len();
        self.pos = if n == 0 { 0 } else { n - 1 };
    }
    fn seek(&mut self, target: &[u8]) {
        self.pos = self.table.lower_bound(target);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let n = self.table.slots.len();
        let lb = self.table.lower_bound(target);
        self.pos = if lb < n && compare_internal(self.table.key(lb), target) == Ordering::Equal {
            lb
        } else if lb == 0 {
            n
        } else {
            lb - 1
        };
    }
    fn next(&mut self) {
        self.pos += 1;
    }
    fn prev(&mut self) {
        self.pos = if self.pos == 0 {
            self.table.slots.len()
        } else {
            self.pos - 1
        };
    }
    fn key(&self) -> &[u8] {
        self.table.key(self.pos)
    }
    fn value(&self) -> &[u8] {
        self.table.value_of(self.table.slots[self.pos])
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, make_internal_key, make_seek_key};
    use crate::memtable::{MemTable, MemTableKind};
    use proptest::prelude::*;

    /// A skiplist memtable holding `entries` (user key, seqno, is_delete).
    fn memtable(entries: &[(Vec<u8>, u64, bool)]) -> MemTable {
        let m = MemTable::new(MemTableKind::SkipList, 1, crate::ids::FileNumber(1));
        for (uk, seq, del) in entries {
            let kind = if *del {
                ValueKind::Delete
            } else {
                ValueKind::Put
            };
            let v = format!("v{seq}").into_bytes();
            m.add(&make_internal_key(uk, *seq, kind), &v, *seq, *del);
        }
        m
    }

    fn retained(m: &MemTable) -> Arc<RetainedTable> {
        let t = RetainedTable::build(m.iter().as_mut(), m.memory_usage().entry_bytes)
            .expect("build")
            .expect("fits");
        Arc::new(t)
    }

    /// Where `it` stands: its entry, or None.
    fn at(it: &dyn InternalIterator) -> Option<(Vec<u8>, Vec<u8>)> {
        it.valid().then(|| (it.key().to_vec(), it.value().to_vec()))
    }

    /// A point-read visitor that keeps the first three entries it sees.
    /// A point lookup's visitor: up to three versions of `uk`, stopping at
    /// another user key (a memtable's whole-key filter may end a lookup
    /// of a key it does not hold before any entry).
    fn first_three<'a>(
        uk: &'a [u8],
        out: &'a mut Vec<(Vec<u8>, Vec<u8>)>,
    ) -> impl FnMut(&[u8], &[u8]) -> bool + 'a {
        move |k, v| {
            if crate::key::user_key(k) != uk {
                return false;
            }
            out.push((k.to_vec(), v.to_vec()));
            out.len() < 3
        }
    }

    /// Keys drawn so that many share long prefixes, some are prefixes of
    /// others, and some are shorter than the prefix the table shares.
    fn user_key_strategy() -> impl Strategy<Value = Vec<u8>> {
        (
            prop::sample::select(vec![&b""[..], b"user", b"user:0000000", b"user:0000001"]),
            prop::collection::vec(
                prop::sample::select(vec![0u8, b'0', b'5', b'9', 0xff]),
                0..12,
            ),
        )
            .prop_map(|(head, tail)| [head, &tail[..]].concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        /// Every seek, step and point read agrees with the skiplist the
        /// table was copied from.
        #[test]
        fn reads_match_the_memtable_it_was_copied_from(
            keys in prop::collection::vec((user_key_strategy(), 1u64..6, any::<bool>()), 0..400),
            probes in prop::collection::vec((user_key_strategy(), 0u64..8), 1..24),
        ) {
            // Distinct (user key, seqno) pairs: an internal key is unique.
            let mut seen = std::collections::HashSet::new();
            let keys: Vec<_> = keys.into_iter().filter(|(k, s, _)| seen.insert((k.clone(), *s))).collect();
            let m = memtable(&keys);
            let t = retained(&m);
            prop_assert_eq!(t.len(), keys.len());
            prop_assert_eq!(t.is_empty(), keys.is_empty());

            // Forward and backward walks.
            let (mut a, mut b) = (m.iter(), t.iter());
            a.seek_to_first();
            b.seek_to_first();
            loop {
                prop_assert_eq!(at(a.as_ref()), at(&b));
                if !a.valid() { break; }
                a.next();
                b.next();
            }
            a.seek_to_last();
            b.seek_to_last();
            loop {
                prop_assert_eq!(at(a.as_ref()), at(&b));
                if !a.valid() { break; }
                a.prev();
                b.prev();
            }

            for (uk, seq) in probes {
                for target in [make_seek_key(&uk, seq), make_internal_key(&uk, seq, ValueKind::Put)] {
                    a.seek(&target);
                    b.seek(&target);
                    prop_assert_eq!(at(a.as_ref()), at(&b));
                    if a.valid() {
                        a.next();
                        b.next();
                        prop_assert_eq!(at(a.as_ref()), at(&b));
                    }
                    a.seek_for_prev(&target);
                    b.seek_for_prev(&target);
                    prop_assert_eq!(at(a.as_ref()), at(&b));

                    let (mut want, mut got) = (Vec::new(), Vec::new());
                    m.get(&target, &mut first_three(&uk, &mut want));
                    t.get(&target, &mut first_three(&uk, &mut got));
                    prop_assert_eq!(want, got);
                }
            }
        }
    }

    #[test]
    fn keys_sharing_all_eight_prefix_bytes_are_ordered_by_whole_key() {
        // Every key shares "k" and then 8 equal bytes, so the prefixes
        // cannot tell them apart; the search must compare whole keys.
        let keys: Vec<_> = (0u64..300)
            .map(|i| (format!("k00000000{i:05}").into_bytes(), 1, false))
            .chain([(b"a".to_vec(), 1, false), (b"zz".to_vec(), 1, false)])
            .collect();
        let m = memtable(&keys);
        let t = retained(&m);
        let mut it = t.iter();
        for i in [0u64, 1, 150, 299] {
            let uk = format!("k00000000{i:05}").into_bytes();
            it.seek(&make_seek_key(&uk, 9));
            assert!(it.valid());
            assert_eq!(user_key(it.key()), &uk[..]);
        }
        // Just past key 149 lies key 150; just past key 299, "zz".
        it.seek(&make_seek_key(b"k0000000000149\x00", 9));
        assert_eq!(user_key(it.key()), b"k0000000000150");
        it.seek(&make_seek_key(b"k0000000000299\x00", 9));
        assert_eq!(user_key(it.key()), b"zz");
    }

    #[test]
    fn memory_counts_every_entry_byte() {
        let keys: Vec<_> = (0u64..1000)
            .map(|i| (format!("key{i:06}").into_bytes(), i + 1, false))
            .collect();
        let m = memtable(&keys);
        let t = retained(&m);
        assert!(t.memory_bytes() >= m.memory_usage().entry_bytes);
        // Slots, prefixes and samples: about 20 bytes an entry beyond the
        // entries.
        assert!(t.memory_bytes() <= m.memory_usage().entry_bytes + 21 * 1000 + 4096);
    }

    #[test]
    fn entries_past_32_bit_offsets_are_not_retained() {
        // A hint past what 32-bit offsets address gives up before copying.
        let mut b = RetainedTableBuilder::new(1 << 32);
        assert!(!b.add(b"k", b"v"));
        assert!(b.finish().is_none());
        // A builder given a small hint still takes entries past it.
        let m = memtable(&[(b"a".to_vec(), 1, false), (b"b".to_vec(), 2, false)]);
        let t = RetainedTable::build(m.iter().as_mut(), 1).expect("build");
        assert_eq!(t.map(|t| t.len()), Some(2));
    }
}
