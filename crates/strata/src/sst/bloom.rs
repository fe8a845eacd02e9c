//! The whole-file Bloom filter over user keys.
//!
//! ```text
//! +------------------------------------------+---------+-------------+
//! | bit array: m/8 bytes                     | k: u8   | layout: u8  |
//! | bit j = byte[j / 8] >> (j % 8) & 1       | probes  |             |
//! +------------------------------------------+---------+-------------+
//!   m = 8 * (block length - 2)
//! ```
//!
//! Both layouts hash the user key with `h = xxh3_64(user_key)` (XXH3 64-bit,
//! seed 0); a key may be present only if all `k` of its bits are set.
//!
//! - Layout 2 (written since issue 24), cache-local: the array is a whole
//!   number of 64-byte lines; the key's line is `((h >> 32) * lines) >> 32`
//!   and its `k` bits lie in that line: with `g = h as u32`, probe `i`
//!   takes bit `g >> 23` of the line, then `g = g * 0x9e37_79b9 (mod 2^32)`.
//!   One cache miss per probe of a file instead of `k`, for a slightly
//!   higher false-positive rate (RocksDB's "fast local Bloom" makes the
//!   same trade).
//! - Layout 1 (read only), plain: `h1 = h & 0xffff_ffff`, `h2 = h >> 32`; the
//!   key sets bits `(h1 + i * h2) mod m` for `i = 0..k` (computed in 64-bit
//!   arithmetic, which cannot overflow).
//!
//! The writer uses `m = max(512, n * bits_per_key)` rounded up to a multiple
//! of 512 (capped so the block stays under the 64 MiB block limit) and
//! `k = clamp(bits_per_key * 69 / 100, 1, 30)`.

use xxhash_rust::xxh3::xxh3_64;

use super::format::MAX_BLOCK_SIZE;

/// Layout byte of the plain double-hashed XXH3 Bloom filter (read only).
pub const BLOOM_LAYOUT_PLAIN_XXH3: u8 = 1;

/// Layout byte of the cache-local XXH3 Bloom filter (the one written).
pub const BLOOM_LAYOUT_LOCAL_XXH3: u8 = 2;

/// Bytes of one line of a cache-local filter: a cache line.
const LINE_BYTES: usize = 64;

/// The multiplier that mixes a cache-local filter's probe hash between
/// probes (2^32 divided by the golden ratio, odd).
const LOCAL_PROBE_MIX: u32 = 0x9e37_79b9;

/// Most probes a filter may ask for.
pub const MAX_PROBES: u8 = 30;

/// The hash every filter probe sequence starts from.
#[inline]
pub fn bloom_hash(user_key: &[u8]) -> u64 {
    xxh3_64(user_key)
}

/// Collects key hashes and builds a filter block.
#[derive(Debug, Clone)]
pub struct BloomFilterBuilder {
    bits_per_key: u32,
    hashes: Vec<u64>,
}

impl BloomFilterBuilder {
    /// A builder for `bits_per_key` bits per added key (at least 1).
    pub fn new(bits_per_key: u32) -> Self {
        BloomFilterBuilder {
            bits_per_key: bits_per_key.max(1),
            hashes: Vec::new(),
        }
    }

    /// Adds a user key. The caller skips consecutive duplicates.
    pub fn add_key(&mut self, user_key: &[u8]) {
        self.hashes.push(bloom_hash(user_key));
    }

    /// Number of keys added.
    pub fn num_keys(&self) -> usize {
        self.hashes.len()
    }

    /// The number of probes used for `bits_per_key`.
    pub fn probes(bits_per_key: u32) -> u8 {
        (u64::from(bits_per_key) * 69 / 100).clamp(1, u64::from(MAX_PROBES)) as u8
    }

    /// Builds the filter block contents (layout 2, cache-local).
    pub fn finish(&self) -> Vec<u8> {
        // Whole lines, at most the block limit.
        let max_lines = (MAX_BLOCK_SIZE as usize - 2) / LINE_BYTES;
        let bits = (self.hashes.len() as u64)
            .saturating_mul(u64::from(self.bits_per_key))
            .max(8 * LINE_BYTES as u64);
        let lines = (bits.div_ceil(8 * LINE_BYTES as u64) as usize).min(max_lines);
        let num_bytes = lines * LINE_BYTES;
        let k = Self::probes(self.bits_per_key);
        let mut out = vec![0u8; num_bytes + 2];
        for &h in &self.hashes {
            let line = local_line(h, lines) * LINE_BYTES;
            for bit in local_probe_bits(h, k) {
                out[line + bit / 8] |= 1 << (bit % 8);
            }
        }
        out[num_bytes] = k;
        out[num_bytes + 1] = BLOOM_LAYOUT_LOCAL_XXH3;
        out
    }

    /// Builds a layout-1 (plain) filter block: what files written before
    /// layout 2 hold. Kept to test that they are still read.
    #[cfg(test)]
    fn finish_plain(&self) -> Vec<u8> {
        let max_bytes = MAX_BLOCK_SIZE - 2;
        let bits = (self.hashes.len() as u64)
            .saturating_mul(u64::from(self.bits_per_key))
            .max(64);
        let num_bytes = bits.div_ceil(8).min(max_bytes) as usize;
        let num_bits = num_bytes as u64 * 8;
        let k = Self::probes(self.bits_per_key);
        let mut out = vec![0u8; num_bytes + 2];
        for &h in &self.hashes {
            for bit in probe_bits(h, k, num_bits) {
                out[(bit / 8) as usize] |= 1 << (bit % 8);
            }
        }
        out[num_bytes] = k;
        out[num_bytes + 1] = BLOOM_LAYOUT_PLAIN_XXH3;
        out
    }
}

/// The line of a cache-local filter of `lines` lines that a key of hash `h`
/// sets its bits in: the high half of `h` scaled onto `0..lines` (a
/// multiply and a shift instead of a division).
#[inline]
fn local_line(h: u64, lines: usize) -> usize {
    (((h >> 32) * lines as u64) >> 32) as usize
}

/// The `k` bits (`0..512`) within its line that a key of hash `h` sets in a
/// cache-local filter: the top 9 bits of the low half of `h`, remixed by a
/// multiplication between probes.
#[inline]
fn local_probe_bits(h: u64, k: u8) -> impl Iterator<Item = usize> {
    let mut g = h as u32;
    (0..k).map(move |_| {
        let bit = (g >> 23) as usize;
        g = g.wrapping_mul(LOCAL_PROBE_MIX);
        bit
    })
}

/// The `k` bits a key of hash `h` sets in a filter of `num_bits` bits
/// (`> 0`): bit `i` is `(h1 + i * h2) mod num_bits`, with `h1` and `h2` the
/// low and high halves of `h` (double hashing; see docs/format/sst.md).
/// Computed by adding `h2 mod num_bits` to the previous bit and wrapping,
/// which gives the same bits with two divisions instead of `k`: a probe
/// that ruled a key out cost a few divisions before anything else, and
/// point-first scans probe the filters of several files per seek.
fn probe_bits(h: u64, k: u8, num_bits: u64) -> impl Iterator<Item = u64> {
    let step = (h >> 32) % num_bits;
    let mut bit = (h & 0xffff_ffff) % num_bits;
    (0..k).map(move |_| {
        let b = bit;
        bit += step;
        if bit >= num_bits {
            bit -= num_bits;
        }
        b
    })
}

/// A filter read back from a filter block.
#[derive(Debug, Clone)]
pub struct BloomFilter {
    data: Vec<u8>,
    num_bits: u64,
    k: u8,
    /// [`BLOOM_LAYOUT_LOCAL_XXH3`] or [`BLOOM_LAYOUT_PLAIN_XXH3`].
    layout: u8,
}

impl BloomFilter {
    /// Whether a file with `filter` (or none) may hold `user_key`; counts a
    /// key the filter rules out in `bloom_useful`.
    pub fn admits(
        filter: Option<&BloomFilter>,
        user_key: &[u8],
        stats: &crate::stats::Statistics,
    ) -> bool {
        let hit = filter.is_none_or(|f| f.may_contain(user_key));
        if !hit {
            crate::stats::Statistics::add(&stats.bloom_useful, 1);
        }
        hit
    }

    /// Parses a filter block. Errors are corruption reasons.
    pub fn from_block(mut data: Vec<u8>) -> Result<BloomFilter, String> {
        if data.len() < 3 {
            return Err(format!("filter block of {} bytes is too short", data.len()));
        }
        let layout = data[data.len() - 1];
        let k = data[data.len() - 2];
        match layout {
            BLOOM_LAYOUT_PLAIN_XXH3 => {}
            BLOOM_LAYOUT_LOCAL_XXH3 => {
                let len = data.len() - 2;
                if len == 0 || !len.is_multiple_of(LINE_BYTES) {
                    return Err(format!(
                        "cache-local filter of {len} bytes is not a whole number of {LINE_BYTES}-byte lines"
                    ));
                }
            }
            _ => return Err(format!("unknown filter layout {layout}")),
        }
        if k == 0 || k > MAX_PROBES {
            return Err(format!(
                "filter asks for {k} probes (allowed 1..={MAX_PROBES})"
            ));
        }
        data.truncate(data.len() - 2);
        Ok(BloomFilter {
            num_bits: data.len() as u64 * 8,
            data,
            k,
            layout,
        })
    }

    /// False only if `user_key` was certainly not added.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(bloom_hash(user_key))
    }

    /// As [`BloomFilter::may_contain`] for a precomputed [`bloom_hash`].
    pub fn may_contain_hash(&self, h: u64) -> bool {
        if self.layout == BLOOM_LAYOUT_LOCAL_XXH3 {
            let start = local_line(h, self.data.len() / LINE_BYTES) * LINE_BYTES;
            let line = &self.data[start..start + LINE_BYTES];
            local_probe_bits(h, self.k).all(|bit| line[bit / 8] & (1 << (bit % 8)) != 0)
        } else {
            probe_bits(h, self.k, self.num_bits)
                .all(|bit| self.data[(bit / 8) as usize] & (1 << (bit % 8)) != 0)
        }
    }

    /// The filter's layout byte.
    pub fn layout(&self) -> u8 {
        self.layout
    }

    /// Number of probes per key.
    pub fn probes(&self) -> u8 {
        self.k
    }

    /// Size of the bit array in bits.
    pub fn num_bits(&self) -> u64 {
        self.num_bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32) -> Vec<u8> {
        format!("user-key-{i:08}").into_bytes()
    }

    #[test]
    fn probe_bits_are_the_double_hashing_formula() {
        // The format's definition, one division per probe.
        let reference = |h: u64, k: u8, n: u64| -> Vec<u64> {
            let (h1, h2) = (h & 0xffff_ffff, h >> 32);
            (0..u64::from(k)).map(|i| (h1 + i * h2) % n).collect()
        };
        let mut h = 0x9e37_79b9_7f4a_7c15u64;
        for n in [64u64, 72, 1000, 8 * 4093, 1 << 20, (1 << 24) + 8] {
            for k in [1u8, 6, MAX_PROBES] {
                for _ in 0..200 {
                    h = h
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    assert_eq!(
                        probe_bits(h, k, n).collect::<Vec<_>>(),
                        reference(h, k, n),
                        "h {h:#x} k {k} n {n}"
                    );
                }
                let top = u64::MAX;
                assert_eq!(
                    probe_bits(top, k, n).collect::<Vec<_>>(),
                    reference(top, k, n)
                );
            }
        }
    }

    #[test]
    fn no_false_negatives_and_low_false_positive_rate() {
        let mut b = BloomFilterBuilder::new(10);
        for i in 0..10_000 {
            b.add_key(&key(i));
        }
        for (layout, block) in [
            (BLOOM_LAYOUT_LOCAL_XXH3, b.finish()),
            (BLOOM_LAYOUT_PLAIN_XXH3, b.finish_plain()),
        ] {
            let f = BloomFilter::from_block(block).expect("valid filter");
            assert_eq!(f.layout(), layout);
            assert_eq!(f.probes(), 6);
            let expected_bits = if layout == BLOOM_LAYOUT_LOCAL_XXH3 {
                100_000u64.div_ceil(512) * 512
            } else {
                100_000
            };
            assert_eq!(f.num_bits(), expected_bits);
            for i in 0..10_000 {
                assert!(
                    f.may_contain(&key(i)),
                    "layout {layout}: false negative for {i}"
                );
            }
            let fp = (10_000..110_000)
                .filter(|&i| f.may_contain(&key(i)))
                .count();
            let rate = fp as f64 / 100_000.0;
            // About 0.8 % for the plain layout at 10 bits per key, a little
            // more for the cache-local one.
            assert!(rate < 0.015, "layout {layout}: false-positive rate {rate}");
            assert!(
                rate > 0.0,
                "layout {layout}: a filter that admits nothing absent is suspect"
            );
        }
    }

    #[test]
    fn tiny_filters_work() {
        let mut b = BloomFilterBuilder::new(10);
        b.add_key(b"");
        let f = BloomFilter::from_block(b.finish()).expect("valid filter");
        assert_eq!(f.num_bits(), 512);
        assert!(f.may_contain(b""));
        let fp = (0..1000u32).filter(|i| f.may_contain(&key(*i))).count();
        assert!(fp < 100, "{fp} false positives for a one-key filter");
    }

    #[test]
    fn plain_probe_sequence_matches_the_documented_formula() {
        let mut b = BloomFilterBuilder::new(4);
        b.add_key(b"hello");
        let block = b.finish_plain();
        let k = BloomFilterBuilder::probes(4);
        assert_eq!(k, 2);
        assert_eq!(&block[block.len() - 2..], &[k, 1]);
        let m = ((block.len() - 2) * 8) as u64;
        let h = xxh3_64(b"hello");
        let mut expected = vec![0u8; block.len() - 2];
        for i in 0..u64::from(k) {
            let bit = ((h & 0xffff_ffff) + i * (h >> 32)) % m;
            expected[(bit / 8) as usize] |= 1 << (bit % 8);
        }
        assert_eq!(&block[..block.len() - 2], &expected[..]);
    }

    #[test]
    fn local_probe_sequence_matches_the_documented_formula() {
        let mut b = BloomFilterBuilder::new(10);
        let keys: Vec<Vec<u8>> = (0..300).map(key).collect();
        for k in &keys {
            b.add_key(k);
        }
        let block = b.finish();
        let k = BloomFilterBuilder::probes(10);
        assert_eq!(&block[block.len() - 2..], &[k, 2]);
        let bytes = block.len() - 2;
        assert_eq!(bytes % 64, 0);
        let lines = (bytes / 64) as u64;
        assert_eq!(lines, 6, "3,000 bits round up to 6 lines");
        // The format's words, computed independently of the writer.
        let mut expected = vec![0u8; bytes];
        for key in &keys {
            let h = xxh3_64(key);
            let line = (((h >> 32) * lines) >> 32) as usize;
            let mut g = (h & 0xffff_ffff) as u32;
            for _ in 0..k {
                let bit = line * 512 + (g >> 23) as usize;
                expected[bit / 8] |= 1 << (bit % 8);
                g = g.wrapping_mul(0x9e37_79b9);
            }
        }
        assert_eq!(&block[..bytes], &expected[..]);
    }

    /// The test vectors printed in docs/format/sst.md.
    #[test]
    fn documented_test_vectors() {
        assert_eq!(xxh3_64(b""), 0x2d06_8005_38d3_94c2);
        let mut b = BloomFilterBuilder::new(10);
        for k in [&b"a"[..], b"b", b"c"] {
            b.add_key(k);
        }
        assert_eq!(xxh3_64(b"a"), 0xe6c6_32b6_1e96_4e1f);
        let hex = |block: &[u8]| block.iter().map(|x| format!("{x:02x}")).collect::<String>();
        assert_eq!(hex(&b.finish_plain()), "0a8828a800a2a0800601");
        let local = b.finish();
        assert_eq!(local.len(), 66);
        let set: Vec<usize> = (0..512)
            .filter(|bit| local[bit / 8] & (1 << (bit % 8)) != 0)
            .collect();
        assert_eq!(set, LOCAL_VECTOR_BITS);
        assert_eq!(&local[64..], &[6, 2]);
    }

    /// The bits set by keys `a`, `b`, `c` in a one-line filter, as listed
    /// in docs/format/sst.md.
    const LOCAL_VECTOR_BITS: &[usize] = &[
        5, 32, 61, 70, 81, 93, 101, 122, 137, 141, 197, 283, 287, 392, 407, 418, 500,
    ];

    #[test]
    fn malformed_filter_blocks_are_rejected() {
        assert!(BloomFilter::from_block(vec![]).is_err());
        assert!(BloomFilter::from_block(vec![0xff, 6]).is_err());
        assert!(
            BloomFilter::from_block(vec![0xff, 6, 3]).is_err(),
            "unknown layout"
        );
        assert!(
            BloomFilter::from_block(vec![0xff, 6, 2]).is_err(),
            "a cache-local filter of part of a line"
        );
        let mut two_lines_less_one = vec![0xff; 127];
        two_lines_less_one.extend([6, 2]);
        assert!(BloomFilter::from_block(two_lines_less_one).is_err());
        let mut one_line = vec![0xff; 64];
        one_line.extend([6, 2]);
        assert!(
            BloomFilter::from_block(one_line)
                .expect("valid")
                .may_contain(b"x")
        );
        assert!(
            BloomFilter::from_block(vec![0xff, 0, 1]).is_err(),
            "zero probes"
        );
        assert!(
            BloomFilter::from_block(vec![0xff, 31, 1]).is_err(),
            "too many probes"
        );
        let f = BloomFilter::from_block(vec![0xff, 3, 1]).expect("valid");
        assert!(f.may_contain(b"anything"));
    }
}
