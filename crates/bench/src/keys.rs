//! Keys and values.
//!
//! A key is the big-endian u64 index followed by zero bytes up to the key
//! size, so byte order equals numeric order and every key has the same size.
//! Values come from a pool in the manner of db_bench's `RandomGenerator`:
//! each 100-byte stretch holds `fraction * 100` random bytes and repeats them
//! for the rest, so a compressor shrinks values to about `fraction`.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// Writes the key of `index` into `buf` (resized to `key_size`).
pub fn encode_key(index: u64, key_size: usize, buf: &mut Vec<u8>) {
    buf.clear();
    buf.extend_from_slice(&index.to_be_bytes());
    buf.resize(key_size.max(8), 0);
}

/// The key of `index`.
pub fn make_key(index: u64, key_size: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(key_size);
    encode_key(index, key_size, &mut v);
    v
}

/// The index a key was made from.
pub fn decode_key(key: &[u8]) -> Option<u64> {
    let b: [u8; 8] = key.get(..8)?.try_into().ok()?;
    Some(u64::from_be_bytes(b))
}

/// The indices `0..n` in a random order fixed by `seed` (fillrandom).
pub fn permutation(n: u64, seed: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).collect();
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed_f111);
    v.shuffle(&mut rng);
    v
}

/// Bytes of the shared value pool.
const POOL_BYTES: usize = 1 << 20;

/// Hands out values of one size, slices of a compressible pool.
pub struct ValueGen {
    pool: Vec<u8>,
    pos: usize,
    size: usize,
}

impl ValueGen {
    /// A generator of `size`-byte values of which about `random_fraction` is
    /// incompressible.
    pub fn new(size: usize, random_fraction: f64, seed: u64) -> ValueGen {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x0a1_7e55);
        let pool_len = POOL_BYTES.max(size * 2);
        let mut pool = Vec::with_capacity(pool_len + 100);
        while pool.len() < pool_len {
            let random = ((100.0 * random_fraction).round() as usize).clamp(1, 100);
            let piece: Vec<u8> = (0..random).map(|_| rng.random_range(b' '..=b'~')).collect();
            let mut filled = 0;
            while filled < 100 {
                let take = piece.len().min(100 - filled);
                pool.extend_from_slice(&piece[..take]);
                filled += take;
            }
        }
        let start = rng.random_range(0..pool_len / 2);
        ValueGen {
            pool,
            pos: start,
            size,
        }
    }

    /// The next value.
    pub fn next_value(&mut self) -> &[u8] {
        if self.pos + self.size > self.pool.len() {
            self.pos = 0;
        }
        let at = self.pos;
        self.pos += self.size.max(1);
        &self.pool[at..at + self.size]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_fixed_size_distinct_and_sorted_numerically() {
        for &size in &[8usize, 16, 24] {
            let idx: Vec<u64> = vec![0, 1, 2, 255, 256, 65_535, 65_536, 1 << 40, u64::MAX - 1];
            let keys: Vec<Vec<u8>> = idx.iter().map(|&i| make_key(i, size)).collect();
            assert!(keys.iter().all(|k| k.len() == size));
            for w in keys.windows(2) {
                assert!(w[0] < w[1], "byte order must follow numeric order");
            }
            let mut dedup = keys.clone();
            dedup.dedup();
            assert_eq!(dedup.len(), keys.len());
            for (k, i) in keys.iter().zip(&idx) {
                assert_eq!(decode_key(k), Some(*i));
            }
        }
        // A large random sample sorts the same either way.
        let p = permutation(10_000, 7);
        let mut by_num = p.clone();
        by_num.sort_unstable();
        let mut by_bytes: Vec<Vec<u8>> = p.iter().map(|&i| make_key(i, 16)).collect();
        by_bytes.sort();
        let back: Vec<u64> = by_bytes.iter().filter_map(|k| decode_key(k)).collect();
        assert_eq!(back, by_num);
    }

    #[test]
    fn permutation_is_a_permutation_fixed_by_seed() {
        let a = permutation(1000, 1);
        let b = permutation(1000, 1);
        let c = permutation(1000, 2);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut s = a.clone();
        s.sort_unstable();
        assert_eq!(s, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn values_have_the_size_and_compressibility() {
        let mut g = ValueGen::new(100, 0.25, 3);
        for _ in 0..50_000 {
            assert_eq!(g.next_value().len(), 100);
        }
        // A quarter random: each 100-byte stretch has at most 25 distinct
        // positions before repeating.
        let v = g.next_value().to_vec();
        let distinct: std::collections::HashSet<u8> = v.iter().copied().collect();
        assert!(distinct.len() <= 50);
        let mut z = ValueGen::new(0, 0.5, 3);
        assert!(z.next_value().is_empty());
    }
}
