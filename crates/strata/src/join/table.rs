//! The in-memory hash table of a hash join: tuples copied into arena
//! chunks, an entry array, and an open-addressing slot array.
//!
//! A map of `Vec<u8>` keys to vectors of rows costs several cache misses
//! per probe (the bucket, the key's heap block, the rows' blocks) and an
//! allocation per tuple; on a million probes that was most of a join's
//! time. Here a probe reads one slot (which holds the hash's high half, so
//! most mismatches stop there), one entry and the arena bytes of a match.
//! Every byte the table allocates (arena chunks, entries, slots) is charged
//! to the join's budget before it is allocated.

use xxhash_rust::xxh3::xxh3_64;

use super::spill::Budget;

/// Bytes of one arena chunk (tuples larger than this get their own).
const CHUNK: usize = 256 << 10;
const NO_ENTRY: u32 = u32::MAX;
/// Keys [`HashTable::warm`] reads ahead at once: enough for their misses to
/// overlap, few enough that the lines stay cached until their probes.
pub(crate) const PROBE_GROUP: usize = 16;

#[derive(Clone, Copy)]
struct Entry {
    hash: u64,
    chunk: u32,
    off: u32,
    klen: u32,
    rlen: u32,
    /// The previous entry of the same key.
    next: u32,
}

/// A hash table of (key, row) tuples under a byte cap and a budget.
pub(crate) struct HashTable<'b> {
    /// Per slot: the hash's high 32 bits and the entry index + 1 (0: empty).
    slots: Vec<u64>,
    entries: Vec<Entry>,
    chunks: Vec<Vec<u8>>,
    charged: usize,
    budget: &'b Budget,
    cap: usize,
}

impl<'b> HashTable<'b> {
    pub(crate) fn new(budget: &'b Budget, cap: usize) -> HashTable<'b> {
        HashTable {
            slots: Vec::new(),
            entries: Vec::new(),
            chunks: Vec::new(),
            charged: 0,
            budget,
            cap,
        }
    }

    /// Charges `n` more bytes if they fit the cap and the budget.
    fn charge(&mut self, n: usize) -> bool {
        if self.charged + n > self.cap || !self.budget.try_charge(n) {
            return false;
        }
        self.charged += n;
        true
    }

    fn release(&mut self, n: usize) {
        self.budget.release(n);
        self.charged -= n;
    }

    /// The budget the table charges.
    pub(crate) fn budget(&self) -> &'b Budget {
        self.budget
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn key(&self, e: &Entry) -> &[u8] {
        let c = &self.chunks[e.chunk as usize];
        &c[e.off as usize..e.off as usize + e.klen as usize]
    }

    fn row(&self, e: &Entry) -> &[u8] {
        let c = &self.chunks[e.chunk as usize];
        let at = e.off as usize + e.klen as usize;
        &c[at..at + e.rlen as usize]
    }

    /// Doubles the slot array (rehashing every entry).
    fn grow_slots(&mut self) -> bool {
        let n = (self.slots.len() * 2).max(1024);
        if !self.charge(n * 8) {
            return false;
        }
        let old = std::mem::replace(&mut self.slots, vec![0u64; n]);
        let mask = n - 1;
        for &s in old.iter().filter(|&&s| s != 0) {
            let idx = (s & 0xffff_ffff) as usize - 1;
            let mut at = self.entries[idx].hash as usize & mask;
            while self.slots[at] != 0 {
                at = (at + 1) & mask;
            }
            self.slots[at] = s;
        }
        self.release(old.len() * 8);
        true
    }

    /// Copies a tuple in; whether it fit (nothing changes when not).
    pub(crate) fn try_insert(&mut self, key: &[u8], row: &[u8]) -> bool {
        self.try_insert_hashed(key, row, xxh3_64(key))
    }

    /// [`Self::try_insert`] for a key whose hash is known (from
    /// [`Self::warm`]).
    pub(crate) fn try_insert_hashed(&mut self, key: &[u8], row: &[u8], hash: u64) -> bool {
        let len = key.len() + row.len();
        if len > u32::MAX as usize || self.entries.len() >= NO_ENTRY as usize - 1 {
            return false;
        }
        if (self.entries.len() + 1) * 10 > self.slots.len() * 7 && !self.grow_slots() {
            return false;
        }
        let need_chunk = self
            .chunks
            .last()
            .is_none_or(|c| c.capacity() - c.len() < len);
        let chunk_bytes = len.max(CHUNK.min(self.cap / 8).max(4096));
        if need_chunk && !self.charge(chunk_bytes) {
            return false;
        }
        if self.entries.len() == self.entries.capacity() {
            let more = (self.entries.len() / 4).max(1024);
            if !self.charge(more * std::mem::size_of::<Entry>()) {
                if need_chunk {
                    self.release(chunk_bytes);
                }
                return false;
            }
            self.entries.reserve_exact(more);
        }
        if need_chunk {
            self.chunks.push(Vec::with_capacity(chunk_bytes));
        }
        let chunk = self.chunks.len() - 1;
        let c = &mut self.chunks[chunk];
        let off = c.len();
        c.extend_from_slice(key);
        c.extend_from_slice(row);
        let mask = self.slots.len() - 1;
        let idx = self.entries.len() as u32;
        let mut at = hash as usize & mask;
        let mut next = NO_ENTRY;
        loop {
            let s = self.slots[at];
            if s == 0 {
                break;
            }
            if s >> 32 == hash >> 32 {
                let e = self.entries[(s & 0xffff_ffff) as usize - 1];
                if e.hash == hash && self.key(&e) == key {
                    next = (s & 0xffff_ffff) as u32 - 1;
                    break;
                }
            }
            at = (at + 1) & mask;
        }
        self.entries.push(Entry {
            hash,
            chunk: chunk as u32,
            off: off as u32,
            klen: key.len() as u32,
            rlen: row.len() as u32,
            next,
        });
        self.slots[at] = (hash & !0xffff_ffff) | u64::from(idx + 1);
        true
    }

    /// Calls `f` with each row stored under `key`.
    pub(crate) fn for_each_match<E>(
        &self,
        key: &[u8],
        f: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        self.for_each_match_hashed(key, xxh3_64(key), f)
    }

    /// [`Self::for_each_match`] for a key whose hash is known (from
    /// [`Self::warm`]).
    pub(crate) fn for_each_match_hashed<E>(
        &self,
        key: &[u8],
        hash: u64,
        mut f: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.slots.is_empty() {
            return Ok(());
        }
        let mask = self.slots.len() - 1;
        let mut at = hash as usize & mask;
        loop {
            let s = self.slots[at];
            if s == 0 {
                return Ok(());
            }
            if s >> 32 == hash >> 32 {
                let mut i = (s & 0xffff_ffff) as u32 - 1;
                let e = self.entries[i as usize];
                if e.hash == hash && self.key(&e) == key {
                    while i != NO_ENTRY {
                        let e = self.entries[i as usize];
                        f(self.row(&e))?;
                        i = e.next;
                    }
                    return Ok(());
                }
            }
            at = (at + 1) & mask;
        }
    }

    /// Hashes `keys` into `hashes` and reads, for every key before any is
    /// compared, the lines its probe will read first: its slot, the entry
    /// the slot names and that entry's key bytes. The reads of different
    /// keys do not depend on each other, so their cache misses overlap
    /// instead of following one another; the probes that follow
    /// ([`Self::for_each_match_hashed`]) then find those lines cached. A
    /// table larger than the cache, or probed while a scan pushes it out
    /// between probes, otherwise costs each probe three misses in turn.
    pub(crate) fn warm(&self, keys: &[&[u8]], hashes: &mut [u64]) {
        for (h, k) in hashes.iter_mut().zip(keys) {
            *h = xxh3_64(k);
        }
        if self.slots.is_empty() {
            return;
        }
        let mask = self.slots.len() - 1;
        let n = keys.len().min(hashes.len()).min(PROBE_GROUP);
        let mut found = [0u64; PROBE_GROUP];
        for i in 0..n {
            found[i] = self.slots[hashes[i] as usize & mask];
        }
        let mut entries = [None; PROBE_GROUP];
        for i in 0..n {
            let s = found[i];
            if s != 0 && s >> 32 == hashes[i] >> 32 {
                entries[i] = self.entries.get((s & 0xffff_ffff) as usize - 1).copied();
            }
        }
        let mut touched = 0u8;
        for e in entries.iter().take(n).flatten() {
            touched ^= self.chunks[e.chunk as usize]
                .get(e.off as usize)
                .copied()
                .unwrap_or(0);
        }
        // Keeps the reads above from being optimized away.
        std::hint::black_box(touched);
    }

    /// Calls `f` with every tuple.
    pub(crate) fn for_each<E>(
        &self,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        for e in &self.entries {
            f(self.key(e), self.row(e))?;
        }
        Ok(())
    }

    /// Empties the table, releasing its memory.
    pub(crate) fn clear(&mut self) {
        self.slots = Vec::new();
        self.entries = Vec::new();
        self.chunks = Vec::new();
        let n = self.charged;
        self.release(n);
    }
}

impl Drop for HashTable<'_> {
    fn drop(&mut self) {
        self.budget.release(self.charged);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `warm` hashes as a probe does, and probes given its hashes find
    /// what probes that hash for themselves find, present keys or not.
    #[test]
    fn warmed_probes_find_what_plain_probes_find() {
        let budget = Budget::new(1 << 20);
        let mut t = HashTable::new(&budget, 1 << 20);
        for i in 0..3000u32 {
            assert!(t.try_insert(&(i % 700).to_be_bytes(), &i.to_le_bytes()));
        }
        let keys: Vec<[u8; 4]> = (690..690 + PROBE_GROUP as u32)
            .map(u32::to_be_bytes)
            .collect();
        let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let mut hashes = [0u64; PROBE_GROUP];
        t.warm(&refs, &mut hashes);
        for ((k, &h), key) in refs.iter().zip(&hashes).zip(&keys) {
            assert_eq!(h, xxh3_64(k));
            let (mut a, mut b) = (Vec::new(), Vec::new());
            t.for_each_match_hashed::<()>(k, h, |r| {
                a.push(r.to_vec());
                Ok(())
            })
            .expect("probe");
            t.for_each_match::<()>(k, |r| {
                b.push(r.to_vec());
                Ok(())
            })
            .expect("probe");
            assert_eq!(a, b);
            let k = u32::from_be_bytes(*key);
            let copies = (0..3000u32).filter(|i| i % 700 == k).count();
            assert_eq!(a.len(), copies, "{k}");
        }
    }

    #[test]
    fn matches_every_row_of_a_key_and_refuses_what_does_not_fit() {
        let budget = Budget::new(1 << 20);
        let mut t = HashTable::new(&budget, 1 << 20);
        for i in 0..5000u32 {
            let k = (i % 1000).to_be_bytes();
            assert!(t.try_insert(&k, &i.to_le_bytes()));
        }
        let mut rows = Vec::new();
        t.for_each_match::<()>(&7u32.to_be_bytes(), |r| {
            rows.push(u32::from_le_bytes(r.try_into().expect("4 bytes")));
            Ok(())
        })
        .expect("probe");
        rows.sort_unstable();
        assert_eq!(rows, vec![7, 1007, 2007, 3007, 4007]);
        let mut none = 0;
        t.for_each_match::<()>(&5000u32.to_be_bytes(), |_| {
            none += 1;
            Ok(())
        })
        .expect("probe");
        assert_eq!(none, 0);
        assert!(budget.used() <= 1 << 20 && budget.used() > 0);
        // A small cap refuses, leaving the table as it was.
        let small = Budget::new(64 << 10);
        let mut s = HashTable::new(&small, 64 << 10);
        let mut n = 0;
        while s.try_insert(&(n as u64).to_be_bytes(), &[0u8; 100]) {
            n += 1;
        }
        assert!(n > 10 && small.used() <= 64 << 10);
        let mut count = 0;
        s.for_each::<()>(|_, _| {
            count += 1;
            Ok(())
        })
        .expect("walk");
        assert_eq!(count, n);
        s.clear();
        assert_eq!(small.used(), 0);
        drop(t);
        assert_eq!(budget.used(), 0);
    }
}
