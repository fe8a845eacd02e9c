//! The key section of columnar data blocks: a block's row count, its user
//! keys stored once (fixed-length, or with an offset array) and its
//! trailers as a `u64` array. Column-group files (`table::cgfile`) and
//! dictionary-encoded key-value files (`dictfile`) both start their data
//! blocks with it and add their values after it.
//!
//! ```text
//!   rows: varint64
//!   flags: u8            bit 1 FIXED_KEYS: every user key has the same
//!                        length; the other bits belong to the format
//!   keys                 FIXED_KEYS: varint length, then rows × length bytes
//!                        otherwise:  (rows + 1) × u32 offsets, then the bytes
//!   trailers             rows × u64 (sequence number << 8 | kind)
//! ```
//!
//! Integers are little-endian. Specified in `docs/format/cgfile.md`
//! ("Data blocks").

use crate::coding::{get_varint64, prefetch_at, put_varint64};
use crate::key::{SeqNo, ValueKind};

/// Block flag: every user key has the same length.
pub const FIXED_KEYS: u8 = 2;

/// Why a block does not parse (the caller adds the file and offset).
pub type BlockError = String;

/// A byte range `[start, end)` of a block.
pub type Span = (usize, usize);

/// Reads a block front to back, every step bounds-checked.
pub struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at `pos` of `data`.
    pub fn new(data: &'a [u8], pos: usize) -> Cursor<'a> {
        Cursor { data, pos }
    }

    /// The position of the next unread byte.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The range of the next `n` bytes, consumed.
    pub fn take(&mut self, n: usize, what: &str) -> Result<(usize, usize), BlockError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| format!("block too short for its {what}"))?;
        let r = (self.pos, end);
        self.pos = end;
        Ok(r)
    }

    /// A varint64, consumed.
    pub fn varint(&mut self, what: &str) -> Result<u64, BlockError> {
        let mut s = &self.data[self.pos..];
        let before = s.len();
        let v = get_varint64(&mut s).ok_or_else(|| format!("bad varint for {what}"))?;
        self.pos += before - s.len();
        Ok(v)
    }

    /// One byte, consumed.
    pub fn byte(&mut self, what: &str) -> Result<u8, BlockError> {
        let (a, _) = self.take(1, what)?;
        Ok(self.data[a])
    }

    /// An offset array of `n + 1` entries and the byte area it indexes,
    /// checked (starts at 0, never decreases, ends at the area's end):
    /// the ranges of the array and of the area.
    pub fn offsets_and_bytes(&mut self, n: usize, what: &str) -> Result<(Span, Span), BlockError> {
        let offs = self.take(
            n.checked_add(1)
                .and_then(|m| m.checked_mul(4))
                .ok_or("offsets overflow")?,
            what,
        )?;
        let last = u32_at(self.data, offs.1 - 4) as usize;
        let bytes = self.take(last, what)?;
        let mut prev = 0u32;
        for i in 0..=n {
            let o = u32_at(self.data, offs.0 + i * 4);
            if (i == 0 && o != 0) || o < prev {
                return Err(format!(
                    "{what} offsets are not increasing within the block"
                ));
            }
            prev = o;
        }
        Ok((offs, bytes))
    }
}

/// The little-endian `u32` at `at` (in bounds: checked by the parser).
#[inline]
pub fn u32_at(d: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&d[at..at + 4]);
    u32::from_le_bytes(b)
}

/// The first eight bytes of `key` as a big-endian integer, zero-padded.
#[inline]
pub fn prefix_of(key: &[u8]) -> u64 {
    // Keys of eight bytes or more (the common case) load directly: a copy
    // of a variable length would be a call to `memmove` per key.
    if let Some(head) = key.first_chunk::<8>() {
        return u64::from_be_bytes(*head);
    }
    let mut b = [0u8; 8];
    b[..key.len()].copy_from_slice(key);
    u64::from_be_bytes(b)
}

/// `a` against `b` in byte order, given their [`prefix_of`]s `pa` and
/// `pb`: the prefixes decide when they differ, without a call to
/// `memcmp` (keys are mostly short encodings, for which the call costs
/// more than the comparison).
#[inline]
pub fn cmp_prefixed(a: &[u8], pa: u64, b: &[u8], pb: u64) -> std::cmp::Ordering {
    match pa.cmp(&pb) {
        std::cmp::Ordering::Equal => a.cmp(b),
        o => o,
    }
}

/// The prefixes ([`prefix_of`]) of a file's blocks' last keys, for finding
/// a key's block: a binary search over the blocks' index entries touched
/// two cache lines a step (the entry, then its key's heap bytes) and was a
/// tenth of a column-group point read; over the prefixes it touches few,
/// and whole keys are compared only among blocks whose prefixes tie.
///
/// The prefixes are searched in two steps: first `top`, the last prefix of
/// every run of `PREFIX_RUN` (one sixteenth of the array, small enough
/// to stay in the CPU caches across reads), then the one run of 16 (two
/// cache lines) it points at. A plain binary search over the whole array
/// of a large file missed the caches at most of its deep steps: with data
/// 100 times the block cache, it was 8 % of an LZ4 point read.
#[derive(Clone, Debug, Default)]
pub struct LastKeys {
    prefixes: Vec<u64>,
    top: Vec<u64>,
}

/// Prefixes per run under one entry of [`LastKeys`]'s top level.
const PREFIX_RUN: usize = 16;

impl LastKeys {
    /// The search over blocks whose last keys are `keys`, in block order.
    pub fn new<'a>(keys: impl Iterator<Item = &'a [u8]>) -> LastKeys {
        let prefixes: Vec<u64> = keys.map(prefix_of).collect();
        let top = prefixes
            .chunks(PREFIX_RUN)
            .filter_map(|run| run.last().copied())
            .collect();
        LastKeys { prefixes, top }
    }

    /// The first position whose prefix is at least `p` (the array's length
    /// if none is): the first run whose last prefix is, then the position
    /// inside it. Equal to `prefixes.partition_point(|&x| x < p)`.
    #[inline]
    fn lower_bound(&self, p: u64) -> usize {
        let run = self.top.partition_point(|&x| x < p);
        let start = run * PREFIX_RUN;
        match self.prefixes.get(start..) {
            Some(rest) if !rest.is_empty() => {
                let rest = &rest[..rest.len().min(PREFIX_RUN)];
                start + rest.partition_point(|&x| x < p)
            }
            _ => self.prefixes.len(),
        }
    }

    /// The first block whose last key (`last_key(i)` for block `i`) is at
    /// or after `key`; the number of blocks if none is.
    pub fn block_for<'a>(&self, key: &[u8], last_key: impl Fn(usize) -> &'a [u8]) -> usize {
        self.first_not_before(prefix_of(key), |i| last_key(i) < key)
    }

    /// The first key (by position) that is not before a sought key whose
    /// [`prefix_of`] is `p`; `before(i)` says whether key `i` is before the
    /// sought key, and is asked only of keys whose prefixes equal `p`.
    /// The keys must be in order and their prefixes taken from the same
    /// bytes as `p` (the prefixes' order then agrees with the keys').
    pub fn first_not_before(&self, p: u64, mut before: impl FnMut(usize) -> bool) -> usize {
        let lo = self.lower_bound(p);
        let ties = self.prefixes[lo..].partition_point(|&x| x == p);
        // Among keys whose prefixes equal `p`, whole keys decide.
        let (mut a, mut b) = (lo, lo + ties);
        while a < b {
            let mid = a + (b - a) / 2;
            if before(mid) {
                a = mid + 1;
            } else {
                b = mid;
            }
        }
        a
    }
}

/// A parsed key section: ranges into the block's bytes, which every
/// accessor takes. Rows are in strict internal-key order and their kinds
/// are known (checked by [`KeyRows::parse`]).
#[derive(Clone, Debug)]
pub struct KeyRows {
    rows: usize,
    key_len: Option<usize>,
    keys: (usize, usize),
    key_offsets: (usize, usize),
    trailers: (usize, usize),
}

impl KeyRows {
    /// Parses the key section at the start of `data`: the section, the
    /// block flags (the format checks its own bits; FIXED_KEYS is
    /// consumed) and the cursor after the trailers.
    pub fn parse(data: &[u8]) -> Result<(KeyRows, u8, Cursor<'_>), BlockError> {
        let mut c = Cursor::new(data, 0);
        let rows = usize::try_from(c.varint("row count")?).map_err(|_| "row count")?;
        if rows > data.len() {
            return Err(format!("block claims {rows} rows in {} bytes", data.len()));
        }
        let flags = c.byte("flags")?;
        let (key_len, keys, key_offsets) = if flags & FIXED_KEYS != 0 {
            let l = usize::try_from(c.varint("key length")?).map_err(|_| "key length")?;
            let n = l.checked_mul(rows).ok_or("key bytes overflow")?;
            (Some(l), c.take(n, "keys")?, (0, 0))
        } else {
            let (offs, keys) = c.offsets_and_bytes(rows, "key")?;
            (None, keys, offs)
        };
        let trailers = c.take(rows * 8, "trailers")?;
        let k = KeyRows {
            rows,
            key_len,
            keys,
            key_offsets,
            trailers,
        };
        for r in 0..rows {
            let t = k.trailer(data, r);
            if ValueKind::from_u8((t & 0xff) as u8).is_none() {
                return Err(format!("row {r} has an unknown kind {}", t & 0xff));
            }
            if r > 0 && !k.row_before(data, r - 1, r) {
                return Err(format!("rows {} and {r} are out of order", r - 1));
            }
        }
        Ok((k, flags & !FIXED_KEYS, c))
    }

    fn row_before(&self, d: &[u8], a: usize, b: usize) -> bool {
        // Keys of at most eight bytes, all one length: the prefix is the key.
        let keys = match self.key_len {
            Some(l) if l <= 8 => self.key_prefix(d, a).cmp(&self.key_prefix(d, b)),
            // Most neighbours differ in their first eight bytes.
            Some(_) => self
                .key_prefix(d, a)
                .cmp(&self.key_prefix(d, b))
                .then_with(|| self.user_key(d, a).cmp(self.user_key(d, b))),
            None => self.user_key(d, a).cmp(self.user_key(d, b)),
        };
        match keys {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Equal => self.trailer(d, a) > self.trailer(d, b),
            std::cmp::Ordering::Greater => false,
        }
    }

    /// Number of rows.
    #[inline]
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Row `r`'s user key.
    #[inline]
    pub fn user_key<'d>(&self, d: &'d [u8], r: usize) -> &'d [u8] {
        match self.key_len {
            Some(l) => &d[self.keys.0 + r * l..self.keys.0 + (r + 1) * l],
            None => {
                let a = u32_at(d, self.key_offsets.0 + r * 4) as usize;
                let b = u32_at(d, self.key_offsets.0 + (r + 1) * 4) as usize;
                &d[self.keys.0 + a..self.keys.0 + b]
            }
        }
    }

    /// Row `r`'s trailer (sequence number << 8 | kind).
    #[inline]
    pub fn trailer(&self, d: &[u8], r: usize) -> u64 {
        let mut b = [0u8; 8];
        let at = self.trailers.0 + r * 8;
        b.copy_from_slice(&d[at..at + 8]);
        u64::from_le_bytes(b)
    }

    /// Row `r`'s sequence number.
    pub fn seqno(&self, d: &[u8], r: usize) -> SeqNo {
        SeqNo(self.trailer(d, r) >> 8)
    }

    /// Row `r`'s kind (checked at parse).
    pub fn kind(&self, d: &[u8], r: usize) -> ValueKind {
        ValueKind::from_u8((self.trailer(d, r) & 0xff) as u8).unwrap_or(ValueKind::Put)
    }

    /// The first row at or after (`user_key`, `trailer`) in internal-key
    /// order (`rows()` if none).
    pub fn lower_bound(&self, d: &[u8], user_key: &[u8], trailer: u64) -> usize {
        let prefix = prefix_of(user_key);
        let (mut lo, mut hi) = (0, self.rows);
        while lo < hi {
            let mid = (lo + hi) / 2;
            // The search's loads depend on each other, and in a block not
            // read lately most of them miss: ask for both possible next
            // probes while this one is compared.
            self.prefetch_key(d, (lo + mid) / 2);
            self.prefetch_key(d, (mid + 1 + hi) / 2);
            let before = match self.cmp_row(d, mid, user_key, prefix) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Equal => self.trailer(d, mid) > trailer,
                std::cmp::Ordering::Greater => false,
            };
            if before {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Asks for the cache line of row `r`'s key (its offset, for keys of
    /// varying length).
    #[inline]
    fn prefetch_key(&self, d: &[u8], r: usize) {
        match self.key_len {
            Some(l) => prefetch_at(d, self.keys.0 + r * l),
            None => prefetch_at(d, self.key_offsets.0 + r * 4),
        }
    }

    /// The first row whose user key is after `user_key` (`rows()` if none).
    pub fn upper_bound_key(&self, d: &[u8], user_key: &[u8]) -> usize {
        let prefix = prefix_of(user_key);
        let (mut lo, mut hi) = (0, self.rows);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.cmp_row(d, mid, user_key, prefix) != std::cmp::Ordering::Greater {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Row `r`'s user key against `user_key`, whose [`prefix_of`] is
    /// `prefix` (a scan's window searches compare mostly short keys).
    #[inline]
    fn cmp_row(&self, d: &[u8], r: usize, user_key: &[u8], prefix: u64) -> std::cmp::Ordering {
        cmp_prefixed(self.user_key(d, r), self.key_prefix(d, r), user_key, prefix)
    }

    /// The length of every user key, when all have the same.
    pub fn fixed_key_len(&self) -> Option<usize> {
        self.key_len
    }

    /// The first eight bytes of row `r`'s user key as a big-endian integer
    /// (zero-padded): keys with smaller prefixes sort first, so a merge
    /// compares whole keys only when prefixes tie.
    #[inline]
    pub fn key_prefix(&self, d: &[u8], r: usize) -> u64 {
        if let Some(l) = self.key_len
            && l >= 8
        {
            let at = self.keys.0 + r * l;
            let mut b = [0u8; 8];
            b.copy_from_slice(&d[at..at + 8]);
            return u64::from_be_bytes(b);
        }
        prefix_of(self.user_key(d, r))
    }
}

/// Collects the key section of one block.
#[derive(Debug)]
pub struct KeyRowsBuilder {
    keys: Vec<u8>,
    key_offsets: Vec<u32>,
    key_len: Option<usize>,
    trailers: Vec<u64>,
}

impl Default for KeyRowsBuilder {
    fn default() -> Self {
        KeyRowsBuilder {
            keys: Vec::new(),
            key_offsets: vec![0],
            key_len: None,
            trailers: Vec::new(),
        }
    }
}

impl KeyRowsBuilder {
    /// Adds a row's user key and trailer.
    pub fn add(&mut self, user_key: &[u8], trailer: u64) {
        self.key_len = match (self.trailers.len(), self.key_len) {
            (0, _) => Some(user_key.len()),
            (_, Some(l)) if l == user_key.len() => Some(l),
            _ => None,
        };
        self.keys.extend_from_slice(user_key);
        self.key_offsets.push(self.keys.len() as u32);
        self.trailers.push(trailer);
    }

    /// Rows added since the last reset.
    pub fn rows(&self) -> usize {
        self.trailers.len()
    }

    /// Approximate encoded size.
    pub fn size_estimate(&self) -> usize {
        self.keys.len() + self.key_offsets.len() * 4 + self.trailers.len() * 8
    }

    /// The last user key added.
    pub fn last_key(&self) -> &[u8] {
        let n = self.key_offsets.len();
        if n < 2 {
            return &[];
        }
        &self.keys[self.key_offsets[n - 2] as usize..self.key_offsets[n - 1] as usize]
    }

    /// Appends the section with the format's `flags` (FIXED_KEYS is added
    /// when it applies) and resets the builder.
    pub fn finish(&mut self, flags: u8, out: &mut Vec<u8>) {
        put_varint64(out, self.rows() as u64);
        match self.key_len {
            Some(l) => {
                out.push(flags | FIXED_KEYS);
                put_varint64(out, l as u64);
            }
            None => {
                out.push(flags & !FIXED_KEYS);
                for o in &self.key_offsets {
                    out.extend_from_slice(&o.to_le_bytes());
                }
            }
        }
        out.extend_from_slice(&self.keys);
        for t in &self.trailers {
            out.extend_from_slice(&t.to_le_bytes());
        }
        self.keys.clear();
        self.key_offsets.clear();
        self.key_offsets.push(0);
        self.key_len = None;
        self.trailers.clear();
    }
}

mod rows;
pub use rows::{RowIter, RowSource, find_rows, get_rows, verify_rows};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{SeqNo, ValueKind, pack_trailer};

    /// A parsed key section, the bytes it indexes, and its rows as
    /// (user key, trailer).
    type Section = (KeyRows, Vec<u8>, Vec<(Vec<u8>, u64)>);

    /// Builds a key section of `keys` (sorted, each with trailers `seqs`,
    /// newest first) and parses it back.
    fn section(keys: &[&[u8]], seqs: &[u64]) -> Section {
        let mut b = KeyRowsBuilder::default();
        let mut rows = Vec::new();
        for k in keys {
            for &s in seqs {
                let t = pack_trailer(SeqNo(s), ValueKind::Put as u8);
                b.add(k, t);
                rows.push((k.to_vec(), t));
            }
        }
        let mut data = Vec::new();
        b.finish(0, &mut data);
        let (kr, _, _) = KeyRows::parse(&data).expect("parse");
        (kr, data, rows)
    }

    /// The searches decide on eight-byte prefixes first: they must agree
    /// with plain byte order where keys share prefixes, differ in length,
    /// hold zero bytes or are all eight bytes long.
    #[test]
    fn searches_agree_with_byte_order() {
        let varied: [&[u8]; 9] = [
            b"",
            b"\0",
            b"ab",
            b"ab\0",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefghij",
            b"abcdefgi",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        ];
        let fixed: [&[u8]; 4] = [
            b"\0\0\0\0\0\0\0\x01",
            b"\x7f\xff\xff\xff\xff\xff\xff\xff",
            b"\x80\0\0\0\0\0\0\0",
            b"\xff\xff\xff\xff\xff\xff\xff\xfe",
        ];
        let mut probes: Vec<Vec<u8>> = varied.iter().chain(&fixed).map(|k| k.to_vec()).collect();
        probes.extend([b"a".to_vec(), b"abcdefgg\xff".to_vec(), b"zz".to_vec()]);
        for keys in [&varied[..], &fixed[..]] {
            let (kr, data, rows) = section(keys, &[9, 4]);
            for p in &probes {
                let upper = rows.iter().filter(|(k, _)| k <= p).count();
                assert_eq!(kr.upper_bound_key(&data, p), upper, "upper bound of {p:?}");
                for t in [u64::MAX, pack_trailer(SeqNo(5), 0), 0] {
                    // Internal-key order: key ascending, trailer descending.
                    let lower = rows
                        .iter()
                        .filter(|(k, rt)| k < p || (k == p && *rt > t))
                        .count();
                    assert_eq!(
                        kr.lower_bound(&data, p, t),
                        lower,
                        "lower bound of {p:?}, {t}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_blocks_last_keys_find_the_first_block_at_or_after_a_key() {
        // Last keys in byte order, with runs whose prefixes tie.
        let last: [&[u8]; 10] = [
            b"\0",
            b"ab",
            b"ab\0",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefgh\x01",
            b"abcdefghij",
            b"abcdefgi",
            b"b",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        ];
        let probes: [&[u8]; 12] = [
            b"",
            b"\0",
            b"a",
            b"ab",
            b"ab\0\0",
            b"abcdefgh",
            b"abcdefgh\0\0",
            b"abcdefghi",
            b"abcdefghz",
            b"abcdefgi",
            b"c",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        ];
        for n in 0..=last.len() {
            let keys = &last[..n];
            let search = LastKeys::new(keys.iter().copied());
            for p in probes {
                let want = keys.partition_point(|k| *k < p);
                assert_eq!(
                    search.block_for(p, |i| keys[i]),
                    want,
                    "{p:?} in {n} blocks"
                );
            }
        }
    }

    proptest::proptest! {
        /// The two-step search over the prefixes lands where one binary
        /// search over all of them does: arrays shorter than a run, of
        /// whole runs and with a partial last run, with long runs of equal
        /// prefixes, probed at, between and beyond their values.
        #[test]
        fn the_two_step_prefix_search_agrees_with_a_binary_search(
            steps in proptest::collection::vec(0u64..4, 0..100),
            probes in proptest::collection::vec(0u64..300, 1..40),
        ) {
            let mut prefix = 0u64;
            let mut keys = Vec::new();
            for s in &steps {
                prefix += s * 3;
                keys.push(prefix.to_be_bytes());
            }
            let search = LastKeys::new(keys.iter().map(|k| &k[..]));
            for p in probes.iter().chain(&[0, prefix, prefix + 1, u64::MAX]) {
                let want = search.prefixes.partition_point(|&x| x < *p);
                proptest::prop_assert_eq!(search.lower_bound(*p), want, "{} in {:?}", p, &search.prefixes);
            }
        }
    }
}
