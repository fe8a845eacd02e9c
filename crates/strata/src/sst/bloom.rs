//! The whole-file Bloom filter over user keys.
//!
//! ```text
//! +------------------------------------------+---------+-------------+
//! | bit array: m/8 bytes                     | k: u8   | layout: u8  |
//! | bit j = byte[j / 8] >> (j % 8) & 1       | probes  | 1 = plain   |
//! +------------------------------------------+---------+-------------+
//!   m = 8 * (block length - 2)
//! ```
//!
//! Layout 1 (the only one): `h = xxh3_64(user_key)` (XXH3 64-bit, seed 0),
//! `h1 = h & 0xffff_ffff`, `h2 = h >> 32`; the key sets bits
//! `(h1 + i * h2) mod m` for `i = 0..k` (computed in 64-bit arithmetic, which
//! cannot overflow). A key may be present only if all `k` bits are set.
//!
//! The writer uses `m = max(64, n * bits_per_key)` rounded up to a multiple of
//! 8 (capped so the block stays under the 64 MiB block limit) and
//! `k = clamp(bits_per_key * 69 / 100, 1, 30)`.

use xxhash_rust::xxh3::xxh3_64;

use super::format::MAX_BLOCK_SIZE;

/// Layout byte of the plain double-hashed XXH3 Bloom filter.
pub const BLOOM_LAYOUT_PLAIN_XXH3: u8 = 1;

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

    /// Builds the filter block contents.
    pub fn finish(&self) -> Vec<u8> {
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
        if layout != BLOOM_LAYOUT_PLAIN_XXH3 {
            return Err(format!("unknown filter layout {layout}"));
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
        })
    }

    /// False only if `user_key` was certainly not added.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(bloom_hash(user_key))
    }

    /// As [`BloomFilter::may_contain`] for a precomputed [`bloom_hash`].
    pub fn may_contain_hash(&self, h: u64) -> bool {
        probe_bits(h, self.k, self.num_bits)
            .all(|bit| self.data[(bit / 8) as usize] & (1 << (bit % 8)) != 0)
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
        let f = BloomFilter::from_block(b.finish()).expect("valid filter");
        assert_eq!(f.probes(), 6);
        assert_eq!(f.num_bits(), 100_000);
        for i in 0..10_000 {
            assert!(f.may_contain(&key(i)), "false negative for {i}");
        }
        let fp = (10_000..20_000).filter(|&i| f.may_contain(&key(i))).count();
        let rate = fp as f64 / 10_000.0;
        assert!(rate < 0.02, "false-positive rate {rate}");
        // And the filter does filter: something absent was rejected.
        assert!(fp < 10_000 / 4);
    }

    #[test]
    fn tiny_filters_work() {
        let mut b = BloomFilterBuilder::new(10);
        b.add_key(b"");
        let f = BloomFilter::from_block(b.finish()).expect("valid filter");
        assert_eq!(f.num_bits(), 64);
        assert!(f.may_contain(b""));
        let fp = (0..1000u32).filter(|i| f.may_contain(&key(*i))).count();
        assert!(fp < 100, "{fp} false positives for a one-key filter");
    }

    #[test]
    fn probe_sequence_matches_the_documented_formula() {
        let mut b = BloomFilterBuilder::new(4);
        b.add_key(b"hello");
        let block = b.finish();
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

    /// The test vector printed in docs/format/sst.md.
    #[test]
    fn documented_test_vector() {
        assert_eq!(xxh3_64(b""), 0x2d06_8005_38d3_94c2);
        let mut b = BloomFilterBuilder::new(10);
        for k in [&b"a"[..], b"b", b"c"] {
            b.add_key(k);
        }
        let block = b.finish();
        let hex: String = block.iter().map(|x| format!("{x:02x}")).collect();
        assert_eq!(xxh3_64(b"a"), 0xe6c6_32b6_1e96_4e1f);
        assert_eq!(hex, "0a8828a800a2a0800601");
    }

    #[test]
    fn malformed_filter_blocks_are_rejected() {
        assert!(BloomFilter::from_block(vec![]).is_err());
        assert!(BloomFilter::from_block(vec![0xff, 6]).is_err());
        assert!(
            BloomFilter::from_block(vec![0xff, 6, 2]).is_err(),
            "unknown layout"
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
