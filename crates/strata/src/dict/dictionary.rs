//! One file's order-preserving dictionary: the sorted distinct values of a
//! column, each value's code being its rank.
//!
//! On disk a dictionary is front-coded (each value stores only what differs
//! from the one before it, with a full value every [`RESTART_INTERVAL`]
//! values); in memory it is decoded once into one byte area and an offset
//! array, so a code's value is two loads and a predicate's code range is a
//! binary search. The byte layout is specified in `docs/format/dictfile.md`.

use std::cmp::Ordering;

use crate::coding::{get_varint64, put_varint64};

/// Values between two fully stored values in the front-coded form: a
/// reader never needs to go back more than this many values, and the
/// restart points bound the damage one bad length can do.
pub const RESTART_INTERVAL: usize = 16;

/// The most values one dictionary may hold: codes must fit the widest
/// packing the filters vectorise (25 bits) with room to spare.
pub const MAX_VALUES: usize = 1 << 24;

/// A decoded dictionary. Values are distinct and strictly ascending in
/// byte order (unsigned, a prefix before its extensions).
#[derive(Clone, PartialEq, Eq)]
pub struct Dictionary {
    /// `offsets[c]..offsets[c + 1]` is code `c`'s value in `bytes`.
    offsets: Vec<u32>,
    bytes: Vec<u8>,
}

impl Default for Dictionary {
    /// The empty dictionary.
    fn default() -> Self {
        Dictionary {
            offsets: vec![0],
            bytes: Vec::new(),
        }
    }
}

impl std::fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Dictionary({} values, {} bytes)",
            self.len(),
            self.bytes.len()
        )
    }
}

impl Dictionary {
    /// A dictionary of `values`, which must be strictly ascending; `None`
    /// if they are not, or if there are more than [`MAX_VALUES`] of them or
    /// more than 4 GiB of value bytes.
    pub fn from_sorted<'a, I>(values: I) -> Option<Dictionary>
    where
        I: IntoIterator<Item = &'a [u8]>,
    {
        let mut d = Dictionary {
            offsets: vec![0],
            bytes: Vec::new(),
        };
        for v in values {
            if let Some(last) = d.last()
                && last >= v
            {
                return None;
            }
            d.push(v)?;
        }
        Some(d)
    }

    fn last(&self) -> Option<&[u8]> {
        self.len().checked_sub(1).map(|c| self.value(c as u32))
    }

    fn push(&mut self, v: &[u8]) -> Option<()> {
        if self.len() >= MAX_VALUES {
            return None;
        }
        self.bytes.extend_from_slice(v);
        self.offsets.push(u32::try_from(self.bytes.len()).ok()?);
        Some(())
    }

    /// Number of values (the code domain is `0..len`).
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// True when the dictionary has no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Code `code`'s value. Panics if `code >= len`: codes are checked
    /// against the dictionary when a block is parsed.
    #[inline]
    pub fn value(&self, code: u32) -> &[u8] {
        let c = code as usize;
        &self.bytes[self.offsets[c] as usize..self.offsets[c + 1] as usize]
    }

    /// Code `code`'s value, or `None` past the end.
    pub fn try_value(&self, code: u32) -> Option<&[u8]> {
        ((code as usize) < self.len()).then(|| self.value(code))
    }

    /// Every value in code order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        (0..self.len() as u32).map(move |c| self.value(c))
    }

    /// Bytes this dictionary occupies in memory (what a cache charges).
    pub fn memory_bytes(&self) -> usize {
        self.bytes.capacity() + self.offsets.capacity() * 4
    }

    /// Total length of the values.
    pub fn value_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The number of codes whose value is below `v`: the code `v` has if
    /// present, else the code of the first value after it.
    pub fn lower_bound(&self, v: &[u8]) -> u32 {
        self.partition(|x| x < v)
    }

    /// The number of codes whose value is at most `v`.
    pub fn upper_bound(&self, v: &[u8]) -> u32 {
        self.partition(|x| x <= v)
    }

    /// The code of `v`, if the dictionary holds it.
    pub fn code_of(&self, v: &[u8]) -> Option<u32> {
        let c = self.lower_bound(v);
        (self.try_value(c) == Some(v)).then_some(c)
    }

    /// The first code whose value is not `pred`-true, values being
    /// partitioned (all true before all false).
    fn partition(&self, pred: impl Fn(&[u8]) -> bool) -> u32 {
        self.partition_from(0, pred)
    }

    /// The first code from `start` on whose value is not `pred`-true,
    /// values from `start` on being partitioned.
    pub fn partition_from(&self, start: u32, pred: impl Fn(&[u8]) -> bool) -> u32 {
        let (mut lo, mut hi) = (start as usize, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.value(mid as u32)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo as u32
    }

    /// Appends the front-coded form (`docs/format/dictfile.md`).
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.len() as u64);
        let mut prev: &[u8] = &[];
        for (i, v) in self.values().enumerate() {
            let shared = if i % RESTART_INTERVAL == 0 {
                0
            } else {
                common_prefix(prev, v)
            };
            put_varint64(dst, shared as u64);
            put_varint64(dst, (v.len() - shared) as u64);
            dst.extend_from_slice(&v[shared..]);
            prev = v;
        }
    }

    /// Parses the front-coded form; `Err(reason)` if it is malformed
    /// (lengths past the end, a shared prefix longer than the previous
    /// value or at a restart point, values not strictly ascending, bytes
    /// left over).
    pub fn decode(mut src: &[u8]) -> Result<Dictionary, String> {
        let count = get_varint64(&mut src).ok_or("dictionary count is malformed")?;
        // Every value takes at least two bytes (its two lengths).
        if count > MAX_VALUES as u64 || count > src.len() as u64 / 2 {
            return Err(format!("dictionary count {count} is impossible"));
        }
        let count = count as usize;
        let mut d = Dictionary {
            offsets: Vec::with_capacity(count + 1),
            bytes: Vec::with_capacity(src.len()),
        };
        d.offsets.push(0);
        let mut prev_start = 0usize;
        for i in 0..count {
            let shared = get_varint64(&mut src).ok_or("dictionary entry is malformed")?;
            let rest = get_varint64(&mut src).ok_or("dictionary entry is malformed")?;
            let prev_len = d.bytes.len() - prev_start;
            if (i % RESTART_INTERVAL == 0 && shared != 0) || shared > prev_len as u64 {
                return Err(format!("dictionary value {i} shares {shared} bytes"));
            }
            if rest > src.len() as u64 {
                return Err(format!("dictionary value {i} runs past the end"));
            }
            let (shared, rest) = (shared as usize, rest as usize);
            let start = d.bytes.len();
            d.bytes.extend_from_within(prev_start..prev_start + shared);
            d.bytes.extend_from_slice(&src[..rest]);
            src = &src[rest..];
            if i > 0 && d.bytes[prev_start..start].cmp(&d.bytes[start..]) != Ordering::Less {
                return Err(format!("dictionary value {i} is not above the one before"));
            }
            let end = u32::try_from(d.bytes.len()).map_err(|_| "dictionary over 4 GiB")?;
            d.offsets.push(end);
            prev_start = start;
        }
        if !src.is_empty() {
            return Err(format!("{} bytes after the dictionary", src.len()));
        }
        Ok(d)
    }
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Builds a file's dictionary while its entries stream in: each distinct
/// value is kept once, in arrival order, with a provisional id; `finish`
/// sorts the distinct values only (not the entries) and says each
/// provisional id's final code.
#[derive(Default)]
pub struct DictionaryBuilder {
    ids: std::collections::HashMap<Box<[u8]>, u32, BytesHash>,
    bytes: usize,
}

/// Hashes values with xxh3: every entry a flush writes is looked up here,
/// and the standard hasher (SipHash) costs several times more per byte.
#[derive(Clone, Copy, Default)]
struct BytesHash;

impl std::hash::BuildHasher for BytesHash {
    type Hasher = BytesHasher;
    fn build_hasher(&self) -> BytesHasher {
        BytesHasher(0)
    }
}

/// See [`BytesHash`]: each write is hashed whole, seeded by the state.
struct BytesHasher(u64);

impl std::hash::Hasher for BytesHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = self.0.rotate_left(17) ^ n as u64;
    }
}

impl DictionaryBuilder {
    /// An empty builder.
    pub fn new() -> DictionaryBuilder {
        DictionaryBuilder::default()
    }

    /// The provisional id of `v`, adding it if new.
    pub fn intern(&mut self, v: &[u8]) -> u32 {
        if let Some(&id) = self.ids.get(v) {
            return id;
        }
        let id = self.ids.len() as u32;
        self.bytes += v.len();
        self.ids.insert(v.into(), id);
        id
    }

    /// Distinct values so far.
    pub fn distinct(&self) -> usize {
        self.ids.len()
    }

    /// Bytes of the distinct values so far.
    pub fn value_bytes(&self) -> usize {
        self.bytes
    }

    /// The distinct values indexed by provisional id, unsorted (for a file
    /// with too many of them for a dictionary).
    pub fn into_values(self) -> Vec<Box<[u8]>> {
        let mut v: Vec<(Box<[u8]>, u32)> = self.ids.into_iter().collect();
        v.sort_unstable_by_key(|e| e.1);
        v.into_iter().map(|e| e.0).collect()
    }

    /// The sorted dictionary and, indexed by provisional id, each id's
    /// code. `None` past [`MAX_VALUES`] values or 4 GiB.
    pub fn finish(self) -> Option<(Dictionary, Vec<u32>)> {
        let mut entries: Vec<(Box<[u8]>, u32)> = self.ids.into_iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut remap = vec![0u32; entries.len()];
        for (code, (_, id)) in entries.iter().enumerate() {
            remap[*id as usize] = code as u32;
        }
        let d = Dictionary::from_sorted(entries.iter().map(|(v, _)| &v[..]))?;
        Some((d, remap))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dict(values: &[&[u8]]) -> Dictionary {
        Dictionary::from_sorted(values.iter().copied()).expect("sorted")
    }

    #[test]
    fn codes_are_ranks_and_bounds_bracket_missing_values() {
        let d = dict(&[b"", b"a", b"ab", b"b\0", b"b\xff"]);
        assert_eq!(d.len(), 5);
        assert_eq!(d.code_of(b"ab"), Some(2));
        assert_eq!(d.code_of(b"aa"), None);
        assert_eq!(d.lower_bound(b"aa"), 2);
        assert_eq!(d.upper_bound(b"ab"), 3);
        assert_eq!(d.lower_bound(b"c"), 5);
        assert_eq!(d.value(3), b"b\0");
        assert_eq!(d.try_value(5), None);
    }

    #[test]
    fn the_default_dictionary_is_empty() {
        let d = Dictionary::default();
        assert!(d.is_empty());
        assert_eq!(d.lower_bound(b"x"), 0);
        assert_eq!(d.try_value(0), None);
    }

    #[test]
    fn unsorted_or_repeated_values_are_refused() {
        assert!(Dictionary::from_sorted([&b"b"[..], b"a"]).is_none());
        assert!(Dictionary::from_sorted([&b"a"[..], b"a"]).is_none());
    }

    #[test]
    fn malformed_encodings_are_refused_with_a_reason() {
        let d = dict(&[b"apple", b"apricot", b"banana"]);
        let mut enc = Vec::new();
        d.encode_to(&mut enc);
        // Cut anywhere: refused, never a panic.
        for cut in 0..enc.len() {
            assert!(Dictionary::decode(&enc[..cut]).is_err(), "cut at {cut}");
        }
        // A trailing byte.
        let mut long = enc.clone();
        long.push(0);
        assert!(Dictionary::decode(&long).is_err());
        // The second value claims to share more than the first has.
        let mut bad = enc.clone();
        let second = 1 + 2 + 5; // count, shared+len of "apple", its bytes
        bad[second] = 9;
        let err = Dictionary::decode(&bad).expect_err("shares too much");
        assert!(err.contains("shares"), "{err}");
        // Out of order: "banana" rewritten as "aaaaaa".
        let mut disorder = enc.clone();
        let n = disorder.len();
        disorder[n - 6..].copy_from_slice(b"aaaaaa");
        let err = Dictionary::decode(&disorder).expect_err("out of order");
        assert!(err.contains("not above"), "{err}");
    }

    #[test]
    fn the_builder_sorts_distinct_values_and_remaps_provisional_ids() {
        let mut b = DictionaryBuilder::new();
        let ids: Vec<u32> = [&b"pear"[..], b"fig\0", b"pear", b"apple"]
            .iter()
            .map(|v| b.intern(v))
            .collect();
        assert_eq!(ids, [0, 1, 0, 2]);
        assert_eq!(b.distinct(), 3);
        let (d, remap) = b.finish().expect("small");
        assert_eq!(
            d.values().collect::<Vec<_>>(),
            [&b"apple"[..], b"fig\0", b"pear"]
        );
        assert_eq!(remap, [2, 1, 0]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn front_coding_round_trips_and_bounds_agree_with_a_sorted_list(
            mut values in proptest::collection::vec(
                proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a'), Just(0xff), any::<u8>()], 0..40),
                0..80),
            probe in proptest::collection::vec(any::<u8>(), 0..6),
        ) {
            // Long shared prefixes: half the values extend the one before.
            for i in 1..values.len() {
                if i % 2 == 1 {
                    let mut v = values[i - 1].clone();
                    v.extend_from_slice(&values[i]);
                    values[i] = v;
                }
            }
            values.sort();
            values.dedup();
            let d = Dictionary::from_sorted(values.iter().map(|v| &v[..])).expect("sorted");
            let mut enc = Vec::new();
            d.encode_to(&mut enc);
            let back = Dictionary::decode(&enc).expect("round trip");
            prop_assert_eq!(&back, &d);
            let below = values.iter().filter(|v| v.as_slice() < probe.as_slice()).count();
            let at_most = values.iter().filter(|v| v.as_slice() <= probe.as_slice()).count();
            prop_assert_eq!(d.lower_bound(&probe) as usize, below);
            prop_assert_eq!(d.upper_bound(&probe) as usize, at_most);
        }
    }
}
