//! Key/value blocks (data and index blocks) with prefix-compressed keys and
//! restart points.
//!
//! ```text
//! +---------+---------+-----+-------------+-------------+-----+-------------+---------+
//! | entry 0 | entry 1 | ... | restart[0]  | restart[1]  | ... | restart[n-1]| n       |
//! |         |         |     | u32 LE      | u32 LE      |     | u32 LE      | u32 LE  |
//! +---------+---------+-----+-------------+-------------+-----+-------------+---------+
//!
//! entry:
//! +------------------+--------------------+-----------------+-----------+-------+
//! | shared: varint32 | unshared: varint32 | value_len: var32| key delta | value |
//! +------------------+--------------------+-----------------+-----------+-------+
//!   key = previous key[..shared] ++ key delta (unshared bytes)
//! ```
//!
//! Every `restart_interval`-th entry is a restart point: it stores its whole
//! key (`shared == 0`) and its offset is listed in the restart array, so a
//! seek can binary-search the restart keys and scan forward from there.
//! Keys are internal keys ordered by [`crate::key::compare_internal`].
//!
//! Decoding checks every length against the block: `n >= 1`,
//! `4 * n + 4 <= len`, restart offsets strictly increasing from 0 and inside
//! the entry area, varints complete, `shared <= previous key length`,
//! `shared == 0` at restart points, and key/value bytes inside the entry area.

use std::cmp::Ordering;
use std::sync::{Arc, LazyLock};

use crate::coding::{decode_fixed32, get_varint32, put_fixed32, put_varint32};
use crate::key::compare_internal;

/// Builds one block.
#[derive(Debug)]
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    counter: usize,
    num_entries: usize,
    last_key: Vec<u8>,
    finished: bool,
}

impl BlockBuilder {
    /// A builder that starts a restart point every `restart_interval`
    /// entries (at least 1).
    pub fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            restart_interval: restart_interval.max(1),
            counter: 0,
            num_entries: 0,
            last_key: Vec::new(),
            finished: false,
        }
    }

    /// Clears the builder for the next block (keeps allocations).
    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.num_entries = 0;
        self.last_key.clear();
        self.finished = false;
    }

    /// Appends an entry. Keys must be added in increasing order. The block
    /// must stay below 4 GiB (the table builder keeps it under 64 MiB).
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        debug_assert!(!self.finished, "add after finish");
        debug_assert!(
            self.num_entries == 0 || compare_internal(&self.last_key, key) == Ordering::Less,
            "block keys out of order"
        );
        let mut shared = 0;
        if self.counter < self.restart_interval {
            shared = self
                .last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count();
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
        }
        let unshared = key.len() - shared;
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, unshared as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.counter += 1;
        self.num_entries += 1;
    }

    /// Appends the restart array and returns the finished block bytes.
    pub fn finish(&mut self) -> &[u8] {
        if !self.finished {
            for &r in &self.restarts {
                put_fixed32(&mut self.buf, r);
            }
            put_fixed32(&mut self.buf, self.restarts.len() as u32);
            self.finished = true;
        }
        &self.buf
    }

    /// Size of the block if it were finished now.
    pub fn current_size_estimate(&self) -> usize {
        if self.finished {
            self.buf.len()
        } else {
            self.buf.len() + self.restarts.len() * 4 + 4
        }
    }

    /// Number of entries added since the last reset.
    pub fn num_entries(&self) -> usize {
        self.num_entries
    }

    /// True when no entry was added since the last reset.
    pub fn is_empty(&self) -> bool {
        self.num_entries == 0
    }

    /// The last key added.
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }
}

/// A decoded (decompressed) block whose restart array has been validated.
#[derive(Debug)]
pub struct Block {
    data: Vec<u8>,
    restarts_offset: usize,
    num_restarts: usize,
}

static EMPTY_BLOCK: LazyLock<Arc<Block>> = LazyLock::new(|| {
    let mut b = BlockBuilder::new(1);
    let data = b.finish().to_vec();
    Arc::new(Block {
        restarts_offset: 0,
        num_restarts: 1,
        data,
    })
});

impl Block {
    /// Validates the restart array of `data`. Errors are corruption reasons.
    pub fn new(data: Vec<u8>) -> Result<Block, String> {
        let len = data.len();
        let n = decode_fixed32(data.get(len.wrapping_sub(4)..).unwrap_or(&[]))
            .ok_or_else(|| format!("block of {len} bytes is too short for a restart count"))?
            as usize;
        if n == 0 {
            return Err("block has a restart count of 0".to_string());
        }
        let restarts_offset = n
            .checked_mul(4)
            .and_then(|x| x.checked_add(4))
            .and_then(|x| len.checked_sub(x))
            .ok_or_else(|| format!("restart count {n} does not fit in a block of {len} bytes"))?;
        let mut prev = 0usize;
        for i in 0..n {
            let r = decode_fixed32(&data[restarts_offset + 4 * i..]).unwrap_or(u32::MAX) as usize;
            if i == 0 {
                if r != 0 {
                    return Err(format!("first restart point is {r}, expected 0"));
                }
            } else if r <= prev {
                return Err(format!(
                    "restart point {i} ({r}) is not after the previous ({prev})"
                ));
            }
            // Only the single restart of an empty block may sit at the end.
            if r >= restarts_offset && !(n == 1 && restarts_offset == 0) {
                return Err(format!(
                    "restart point {i} ({r}) is outside the entry area ({restarts_offset} bytes)"
                ));
            }
            prev = r;
        }
        Ok(Block {
            data,
            restarts_offset,
            num_restarts: n,
        })
    }

    /// A valid block without entries.
    pub fn empty() -> Arc<Block> {
        EMPTY_BLOCK.clone()
    }

    /// Size of the block contents in bytes.
    pub fn size(&self) -> usize {
        self.data.len()
    }

    /// The bytes its buffer holds allocated (at least [`Block::size`]).
    pub fn allocated(&self) -> usize {
        self.data.capacity()
    }

    /// Its buffer, for reuse.
    pub(crate) fn into_data(self) -> Vec<u8> {
        self.data
    }

    /// The raw block contents.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Number of restart points.
    pub fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    /// The whole key stored at restart point `i`, or why it cannot be
    /// read: the entry there is malformed, or shares bytes with a previous
    /// key (a restart entry never does). REQUIRES: `i < num_restarts()`.
    #[inline]
    pub(crate) fn restart_key(&self, i: usize) -> Result<&[u8], String> {
        let off = self.restart_point(i);
        match decode_entry_header(&self.data, off, self.restarts_offset) {
            Some((0, unshared, _, key_start)) => Ok(&self.data[key_start..key_start + unshared]),
            header => Err(bad_restart_entry(off, header.map(|h| h.0))),
        }
    }

    /// An iterator over the block's entries (unpositioned).
    pub fn iter(self: &Arc<Self>) -> BlockIter {
        BlockIter::new(self.clone())
    }

    #[inline]
    /// Checks that every restart point is an entry boundary whose entry
    /// stores its whole key (`shared == 0`), by walking the entries from
    /// the start. Seeks and backward steps start decoding at restart
    /// points, so a block that fails this would read wrong there; forward
    /// iteration alone does not notice. Returns the number of entries;
    /// errors are corruption reasons.
    pub fn check_restarts(&self) -> Result<usize, String> {
        let limit = self.restarts_offset;
        let mut p = 0usize;
        let mut next_restart = 0usize;
        let mut entries = 0usize;
        while p < limit {
            let (shared, unshared, vlen, key_start) = decode_entry_header(&self.data, p, limit)
                .ok_or_else(|| format!("malformed entry at block offset {p}"))?;
            entries += 1;
            if next_restart < self.num_restarts && self.restart_point(next_restart) < p {
                return Err(format!(
                    "restart point {next_restart} (offset {}) is inside an entry",
                    self.restart_point(next_restart)
                ));
            }
            if next_restart < self.num_restarts && self.restart_point(next_restart) == p {
                if shared != 0 {
                    return Err(format!(
                        "entry at restart point {next_restart} (offset {p}) shares {shared} key bytes"
                    ));
                }
                next_restart += 1;
            }
            p = key_start + unshared + vlen;
        }
        if next_restart < self.num_restarts && limit > 0 {
            return Err(format!(
                "restart point {next_restart} (offset {}) is past the last entry",
                self.restart_point(next_restart)
            ));
        }
        Ok(entries)
    }

    fn restart_point(&self, i: usize) -> usize {
        let p = self.restarts_offset + 4 * i;
        u32::from_le_bytes([
            self.data[p],
            self.data[p + 1],
            self.data[p + 2],
            self.data[p + 3],
        ]) as usize
    }
}

/// Why the entry at restart offset `off` cannot be read: its header does
/// not decode (`None`), or it shares `Some(n)` bytes with a previous key.
#[cold]
fn bad_restart_entry(off: usize, shared: Option<usize>) -> String {
    match shared {
        None => format!("bad restart entry header at block offset {off}"),
        Some(n) => format!("restart entry at block offset {off} has a shared prefix of {n}"),
    }
}

/// Header of one entry: (shared, unshared, value_len, offset of key delta).
#[inline]
fn decode_entry_header(
    data: &[u8],
    p: usize,
    limit: usize,
) -> Option<(usize, usize, usize, usize)> {
    let mut cur = data.get(p..limit)?;
    // Most entries have three one-byte lengths (keys and values under 128
    // bytes, and restart entries share nothing): take them in one test, as
    // LevelDB's DecodeEntry does.
    if let [s, u, v, ..] = *cur
        && (s | u | v) < 0x80
    {
        let (shared, unshared, vlen) = (usize::from(s), usize::from(u), usize::from(v));
        let key_start = p + 3;
        if key_start + unshared + vlen > limit {
            return None;
        }
        return Some((shared, unshared, vlen, key_start));
    }
    let before = cur.len();
    let shared = get_varint32(&mut cur)? as usize;
    let unshared = get_varint32(&mut cur)? as usize;
    let vlen = get_varint32(&mut cur)? as usize;
    let key_start = p + (before - cur.len());
    let end = key_start.checked_add(unshared)?.checked_add(vlen)?;
    if end > limit {
        return None;
    }
    Some((shared, unshared, vlen, key_start))
}

/// A cursor over one block. Reuses its key buffer across entries and blocks.
#[derive(Debug)]
pub struct BlockIter {
    block: Arc<Block>,
    /// Offset of the current entry.
    current: usize,
    /// Offset just past the current entry (where the next one starts).
    next: usize,
    /// Index of the last restart point at or before `current`.
    restart_index: usize,
    /// The offsets of restart points `restart_index` and the one after it
    /// (`usize::MAX` past the last), so that a step forward compares
    /// offsets instead of reading the restart array. An unpositioned
    /// iterator holds 0 for the next one, so its first step reads them.
    restart_at: usize,
    next_restart_at: usize,
    key: Vec<u8>,
    value_start: usize,
    value_len: usize,
    valid: bool,
    err: Option<String>,
}

impl BlockIter {
    /// An unpositioned iterator over `block`.
    pub fn new(block: Arc<Block>) -> Self {
        BlockIter {
            block,
            current: 0,
            next: 0,
            restart_index: 0,
            restart_at: 0,
            next_restart_at: 0,
            key: Vec::new(),
            value_start: 0,
            value_len: 0,
            valid: false,
            err: None,
        }
    }

    /// Switches to another block, keeping the key buffer. Unpositioned.
    pub fn reset(&mut self, block: Arc<Block>) {
        self.block = block;
        self.key.clear();
        self.valid = false;
        self.err = None;
        self.current = 0;
        self.next = 0;
        self.restart_index = 0;
        self.restart_at = 0;
        self.next_restart_at = 0;
    }

    /// The block iterated.
    pub fn block(&self) -> &Arc<Block> {
        &self.block
    }

    /// True when positioned on an entry.
    #[inline]
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// Leaves the iterator unpositioned.
    pub fn invalidate(&mut self) {
        self.valid = false;
    }

    /// The corruption found, if any (the iterator is then invalid).
    pub fn error(&self) -> Option<&str> {
        self.err.as_deref()
    }

    /// Offset inside the block of the current entry.
    pub fn entry_offset(&self) -> usize {
        self.current
    }

    /// The current key. REQUIRES: `valid()`.
    #[inline]
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The current value. REQUIRES: `valid()`.
    #[inline]
    pub fn value(&self) -> &[u8] {
        &self.block.data[self.value_start..self.value_start + self.value_len]
    }

    fn corrupt(&mut self, reason: String) -> bool {
        self.valid = false;
        if self.err.is_none() {
            self.err = Some(reason);
        }
        false
    }

    fn seek_to_restart(&mut self, i: usize) {
        self.key.clear();
        self.restart_index = i;
        self.next = self.block.restart_point(i);
        self.restart_at = self.next;
        self.next_restart_at = self.restart_after(i);
        self.valid = false;
    }

    /// The offset of the restart point after `i` (`usize::MAX` if none).
    fn restart_after(&self, i: usize) -> usize {
        if i + 1 < self.block.num_restarts {
            self.block.restart_point(i + 1)
        } else {
            usize::MAX
        }
    }

    /// Decodes the entry at `self.next`; false at the end or on corruption.
    fn parse_next(&mut self) -> bool {
        if self.err.is_some() {
            self.valid = false;
            return false;
        }
        let p = self.next;
        let limit = self.block.restarts_offset;
        if p >= limit {
            self.valid = false;
            self.current = limit;
            return false;
        }
        let Some((shared, unshared, vlen, key_start)) =
            decode_entry_header(&self.block.data, p, limit)
        else {
            return self.corrupt(format!("bad entry header at block offset {p}"));
        };
        if shared > self.key.len() {
            return self.corrupt(format!(
                "entry at block offset {p} shares {shared} bytes with a previous key of {} bytes",
                self.key.len()
            ));
        }
        if p >= self.next_restart_at {
            while self.restart_index + 1 < self.block.num_restarts
                && self.block.restart_point(self.restart_index + 1) <= p
            {
                self.restart_index += 1;
            }
            self.restart_at = self.block.restart_point(self.restart_index);
            self.next_restart_at = self.restart_after(self.restart_index);
        }
        if shared != 0 && self.restart_at == p {
            return self.corrupt(format!(
                "restart entry at block offset {p} has a shared prefix of {shared}"
            ));
        }
        let key_end = key_start + unshared;
        self.key.truncate(shared);
        self.key
            .extend_from_slice(&self.block.data[key_start..key_end]);
        self.value_start = key_end;
        self.value_len = vlen;
        self.current = p;
        self.next = key_end + vlen;
        self.valid = true;
        true
    }

    /// Positions on the entry at restart point `i`; past the last entry
    /// when `i` is the number of restart points.
    pub(crate) fn seek_to_restart_entry(&mut self, i: usize) {
        if self.err.is_some() {
            return;
        }
        if i >= self.block.num_restarts {
            self.valid = false;
            self.current = self.block.restarts_offset;
            return;
        }
        self.seek_to_restart(i);
        self.parse_next();
    }

    /// Positions on the first entry.
    pub fn seek_to_first(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.seek_to_restart(0);
        self.parse_next();
    }

    /// Positions on the last entry.
    pub fn seek_to_last(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.seek_to_restart(self.block.num_restarts - 1);
        while self.parse_next() && self.next < self.block.restarts_offset {}
    }

    /// Moves to the next entry. REQUIRES: `valid()`.
    pub fn next(&mut self) {
        debug_assert!(self.valid);
        self.parse_next();
    }

    /// Moves to the previous entry. REQUIRES: `valid()`.
    pub fn prev(&mut self) {
        debug_assert!(self.valid);
        if !self.valid {
            return;
        }
        let original = self.current;
        while self.block.restart_point(self.restart_index) >= original {
            if self.restart_index == 0 {
                self.valid = false;
                self.current = self.block.restarts_offset;
                return;
            }
            self.restart_index -= 1;
        }
        self.seek_to_restart(self.restart_index);
        while self.parse_next() && self.next < original {}
    }

    /// Positions on the first entry whose key is `>= target`.
    pub fn seek(&mut self, target: &[u8]) {
        if self.err.is_some() {
            return;
        }
        let limit = self.block.restarts_offset;
        // Invariant: restart keys before `left` are < target; restart keys after
        // `right` are >= target.
        let mut left = 0usize;
        let mut right = self.block.num_restarts - 1;
        while left < right {
            let mid = left + (right - left).div_ceil(2);
            // Decoded here rather than through `Block::restart_key`: the
            // release build does not inline that call, and this loop is in
            // every point read.
            let off = self.block.restart_point(mid);
            let Some((shared, unshared, _, key_start)) =
                decode_entry_header(&self.block.data, off, limit)
            else {
                self.corrupt(bad_restart_entry(off, None));
                return;
            };
            if shared != 0 {
                self.corrupt(bad_restart_entry(off, Some(shared)));
                return;
            }
            let k = &self.block.data[key_start..key_start + unshared];
            if compare_internal(k, target) == Ordering::Less {
                left = mid;
            } else {
                right = mid - 1;
            }
        }
        self.seek_to_restart(left);
        while self.parse_next() {
            if compare_internal(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }

    /// Positions on the last entry whose key is `<= target`.
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if self.err.is_some() {
            return;
        }
        if !self.valid {
            self.seek_to_last();
            return;
        }
        while self.valid && compare_internal(&self.key, target) == Ordering::Greater {
            self.prev();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, make_internal_key, make_seek_key};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn random_entries(rng: &mut StdRng, n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut v: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
            .map(|_| {
                let klen = rng.random_range(0..12);
                // Small alphabet: many shared prefixes and repeated user keys.
                let uk: Vec<u8> = (0..klen)
                    .map(|_| b"abc\xff"[rng.random_range(0..4)])
                    .collect();
                let seq = rng.random_range(0..1000);
                let kind = if rng.random_bool(0.2) {
                    ValueKind::Delete
                } else {
                    ValueKind::Put
                };
                let vlen = rng.random_range(0..20);
                let val: Vec<u8> = (0..vlen).map(|_| rng.random()).collect();
                (make_internal_key(&uk, seq, kind), val)
            })
            .collect();
        v.sort_by(|a, b| compare_internal(&a.0, &b.0));
        v.dedup_by(|a, b| a.0 == b.0);
        v
    }

    fn build(entries: &[(Vec<u8>, Vec<u8>)], interval: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(interval);
        for (k, v) in entries {
            b.add(k, v);
        }
        let est = b.current_size_estimate();
        let data = b.finish().to_vec();
        assert_eq!(est, data.len());
        Arc::new(Block::new(data).expect("valid block"))
    }

    fn lower_bound(entries: &[(Vec<u8>, Vec<u8>)], t: &[u8]) -> usize {
        entries.partition_point(|(k, _)| compare_internal(k, t) == Ordering::Less)
    }

    #[test]
    fn block_round_trip_random() {
        let mut rng = StdRng::seed_from_u64(7);
        for round in 0..60 {
            let n = if round == 0 {
                0
            } else {
                rng.random_range(1..300)
            };
            let entries = random_entries(&mut rng, n);
            let interval = rng.random_range(1..20);
            let block = build(&entries, interval);
            let mut it = block.iter();

            // Forward.
            it.seek_to_first();
            for (k, v) in &entries {
                assert!(it.valid());
                assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
                it.next();
            }
            assert!(!it.valid());
            assert!(it.error().is_none());

            // Backward.
            it.seek_to_last();
            for (k, v) in entries.iter().rev() {
                assert!(it.valid());
                assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
                it.prev();
            }
            assert!(!it.valid());

            // Seek to every key, and between keys.
            for (i, (k, _)) in entries.iter().enumerate() {
                it.seek(k);
                assert!(it.valid());
                assert_eq!(it.key(), &k[..]);
                it.seek_for_prev(k);
                assert_eq!(it.key(), &k[..]);
                // A seek key for the same user key at a higher seqno lands at or
                // before this entry.
                let uk = crate::key::user_key(k);
                let t = make_seek_key(uk, crate::key::seqno(k));
                let want = lower_bound(&entries, &t);
                it.seek(&t);
                assert!(want <= i);
                assert!(it.valid());
                assert_eq!(it.key(), &entries[want].0[..]);
                if i > 0 {
                    // Step back from i with prev.
                    it.seek(k);
                    it.prev();
                    assert_eq!(it.key(), &entries[i - 1].0[..]);
                    it.next();
                    assert_eq!(it.key(), &k[..]);
                }
            }
            for _ in 0..100 {
                let klen = rng.random_range(0..12);
                let uk: Vec<u8> = (0..klen)
                    .map(|_| b"abc\xff"[rng.random_range(0..4)])
                    .collect();
                let t = make_seek_key(&uk, rng.random_range(0..1100));
                let want = lower_bound(&entries, &t);
                it.seek(&t);
                match entries.get(want) {
                    Some((k, v)) => {
                        assert!(it.valid());
                        assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
                    }
                    None => assert!(!it.valid()),
                }
                it.seek_for_prev(&t);
                let le =
                    entries.partition_point(|(k, _)| compare_internal(k, &t) != Ordering::Greater);
                if le == 0 {
                    assert!(!it.valid());
                } else {
                    assert!(it.valid());
                    assert_eq!(it.key(), &entries[le - 1].0[..]);
                }
            }
        }
    }

    #[test]
    fn prefix_compression_shrinks_blocks() {
        let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..100u32)
            .map(|i| {
                (
                    make_internal_key(
                        format!("common/prefix/{i:05}").as_bytes(),
                        1,
                        ValueKind::Put,
                    ),
                    vec![],
                )
            })
            .collect();
        let full: usize = entries.iter().map(|(k, _)| k.len() + 3).sum();
        let compressed = build(&entries, 16).size();
        let uncompressed = build(&entries, 1).size();
        assert!(compressed < full * 6 / 10, "{compressed} vs {full}");
        assert!(uncompressed > full);
    }

    #[test]
    fn bad_restart_arrays_are_rejected() {
        assert!(Block::new(vec![]).is_err());
        assert!(Block::new(vec![1, 0, 0]).is_err());
        assert!(Block::new(vec![0, 0, 0, 0]).is_err(), "zero restarts");
        assert!(
            Block::new(vec![0xff, 0xff, 0xff, 0xff]).is_err(),
            "huge count"
        );
        let mut b = BlockBuilder::new(2);
        for i in 0..6u8 {
            b.add(&make_internal_key(&[i], 1, ValueKind::Put), b"v");
        }
        let good = b.finish().to_vec();
        assert!(Block::new(good.clone()).is_ok());
        let n = good.len();
        let ro = n - 4 - 3 * 4;
        // Restart count larger than the block.
        let mut bad = good.clone();
        bad[n - 4..].copy_from_slice(&100u32.to_le_bytes());
        assert!(Block::new(bad).is_err());
        // A restart pointing past the entries.
        let mut bad = good.clone();
        bad[ro + 4..ro + 8].copy_from_slice(&(ro as u32).to_le_bytes());
        assert!(Block::new(bad).is_err());
        // An empty entry area with more than one restart.
        let mut bad = vec![];
        for r in [0u32, 5, 2] {
            bad.extend_from_slice(&r.to_le_bytes());
        }
        assert!(Block::new(bad).is_err());
        // Restarts out of order.
        let mut bad = good.clone();
        bad[ro + 8..ro + 12].copy_from_slice(&1u32.to_le_bytes());
        assert!(Block::new(bad).is_err());
        // First restart not 0.
        let mut bad = good;
        bad[ro..ro + 4].copy_from_slice(&1u32.to_le_bytes());
        assert!(Block::new(bad).is_err());
    }

    #[test]
    fn corrupt_entries_never_panic() {
        let mut rng = StdRng::seed_from_u64(99);
        let entries = random_entries(&mut rng, 80);
        let mut b = BlockBuilder::new(4);
        for (k, v) in &entries {
            b.add(k, v);
        }
        let good = b.finish().to_vec();
        let mut saw_error = false;
        for pos in 0..good.len() {
            for bit in [0x01u8, 0x80] {
                let mut d = good.clone();
                d[pos] ^= bit;
                let Ok(block) = Block::new(d) else { continue };
                let block = Arc::new(block);
                let mut it = block.iter();
                it.seek_to_first();
                let mut n = 0;
                while it.valid() && n < 10_000 {
                    n += 1;
                    it.next();
                }
                it.seek_to_last();
                while it.valid() && n < 20_000 {
                    n += 1;
                    it.prev();
                }
                for (k, _) in entries.iter().step_by(7) {
                    it.seek(k);
                    it.seek_for_prev(k);
                }
                saw_error |= it.error().is_some();
            }
        }
        assert!(saw_error, "no flip was detected as corruption");
    }

    #[test]
    fn shared_prefix_longer_than_previous_key_is_corruption() {
        // Hand-made block: one entry claiming 5 shared bytes with no previous key.
        let mut d = vec![5u8, 1, 0, b'x'];
        d.extend_from_slice(&0u32.to_le_bytes());
        d.extend_from_slice(&1u32.to_le_bytes());
        let block = Arc::new(Block::new(d).expect("restart array is fine"));
        let mut it = block.iter();
        it.seek_to_first();
        assert!(!it.valid());
        assert!(it.error().is_some());
        // An entry whose value runs past the entry area.
        let mut d = vec![0u8, 1, 9, b'x', b'v'];
        d.extend_from_slice(&0u32.to_le_bytes());
        d.extend_from_slice(&1u32.to_le_bytes());
        let block = Arc::new(Block::new(d).expect("restart array is fine"));
        let mut it = block.iter();
        it.seek_to_last();
        assert!(!it.valid());
        assert!(it.error().is_some());
    }

    #[test]
    fn empty_block_iterates_nothing() {
        let b = Block::empty();
        let mut it = b.iter();
        it.seek_to_first();
        assert!(!it.valid());
        it.seek_to_last();
        assert!(!it.valid());
        it.seek(b"anything");
        assert!(!it.valid());
        it.seek_for_prev(b"anything");
        assert!(!it.valid());
        assert!(it.error().is_none());
    }
}
