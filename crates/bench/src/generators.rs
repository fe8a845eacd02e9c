//! Key choosers, after YCSB's generators: uniform, zipfian (Gray et al.,
//! "Quickly Generating Billion-Record Synthetic Databases", as YCSB codes
//! it), scrambled zipfian (zipfian over 10^10 items, hashed into the key
//! range, so the popular keys are spread out) and skewed-latest (zipfian
//! distance back from the newest key, for YCSB D).

use rand::Rng;

/// YCSB's zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// Items of the zipfian underlying the scrambled zipfian.
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;
/// zeta(10^10, 0.99), precomputed as in YCSB.
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// YCSB's 64-bit FNV-1 hash of the 8 bytes of `val`, made non-negative.
pub fn fnv_hash64(mut val: u64) -> u64 {
    let mut h = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        let octet = val & 0xff;
        val >>= 8;
        h ^= octet;
        h = h.wrapping_mul(FNV_PRIME_64);
    }
    (h as i64).unsigned_abs()
}

/// zeta(n, theta) = sum over i in 1..=n of 1 / i^theta, summed from item
/// `from` (exclusive) with `initial` the sum up to it.
pub fn zeta_from(from: u64, n: u64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in from..n {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

/// The zipfian generator: item `base + k` with probability proportional to
/// `1 / (k+1)^theta`, so `base` is the most popular.
#[derive(Clone, Debug)]
pub struct Zipfian {
    items: u64,
    base: u64,
    theta: f64,
    zeta2theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    count_for_zeta: u64,
}

impl Zipfian {
    /// Over `[min, max]` with YCSB's constant; computes zeta(n) (O(n)).
    pub fn new(min: u64, max: u64) -> Zipfian {
        let items = max - min + 1;
        let zetan = zeta_from(0, items, ZIPFIAN_CONSTANT, 0.0);
        Zipfian::with_zetan(min, max, ZIPFIAN_CONSTANT, zetan)
    }

    /// Over `[min, max]` with a precomputed zeta(n).
    pub fn with_zetan(min: u64, max: u64, theta: f64, zetan: f64) -> Zipfian {
        let items = max - min + 1;
        let zeta2theta = zeta_from(0, 2, theta, 0.0);
        let mut z = Zipfian {
            items,
            base: min,
            theta,
            zeta2theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: 0.0,
            count_for_zeta: items,
        };
        z.eta = z.compute_eta(items);
        z
    }

    fn compute_eta(&self, items: u64) -> f64 {
        (1.0 - (2.0 / items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2theta / self.zetan)
    }

    /// Items the generator draws from.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The next item of `[base, base + item_count)`; a larger count than
    /// before extends zeta incrementally (YCSB's `nextLong(itemcount)`).
    pub fn next_with_count<R: Rng + ?Sized>(&mut self, rng: &mut R, item_count: u64) -> u64 {
        let item_count = item_count.max(1);
        if item_count != self.count_for_zeta {
            if item_count > self.count_for_zeta {
                self.zetan = zeta_from(self.count_for_zeta, item_count, self.theta, self.zetan);
            } else {
                self.zetan = zeta_from(0, item_count, self.theta, 0.0);
            }
            self.count_for_zeta = item_count;
            self.eta = self.compute_eta(item_count);
        }
        let u: f64 = rng.random();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        let k = (item_count as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        self.base + k.min(item_count - 1)
    }

    /// The next item of the whole range.
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R) -> u64 {
        let n = self.items;
        self.next_with_count(rng, n)
    }
}

/// YCSB's scrambled zipfian over `[min, max]`: popular items are spread
/// over the range by hashing.
#[derive(Clone, Debug)]
pub struct ScrambledZipfian {
    zipf: Zipfian,
    min: u64,
    items: u64,
}

impl ScrambledZipfian {
    /// Over `[min, max]` (constant time to build).
    pub fn new(min: u64, max: u64) -> ScrambledZipfian {
        ScrambledZipfian {
            zipf: Zipfian::with_zetan(0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN),
            min,
            items: max - min + 1,
        }
    }

    /// The next item.
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R) -> u64 {
        let v = self.zipf.next(rng);
        self.min + fnv_hash64(v) % self.items
    }
}

/// YCSB's skewed-latest: the newest key is the most popular, then the one
/// before it, and so on along a zipfian.
#[derive(Clone, Debug)]
pub struct SkewedLatest {
    zipf: Zipfian,
}

impl SkewedLatest {
    /// For a key space that starts with `count` keys (O(count) to build).
    pub fn new(count: u64) -> SkewedLatest {
        SkewedLatest {
            zipf: Zipfian::new(0, count.max(1) - 1),
        }
    }

    /// A key index below `count` (the current number of keys), skewed
    /// towards `count - 1`.
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R, count: u64) -> u64 {
        let count = count.max(1);
        let back = self.zipf.next_with_count(rng, count);
        count - 1 - back.min(count - 1)
    }
}

/// A key chooser for existing keys `[0, count)`.
#[derive(Clone, Debug)]
pub enum KeyChooser {
    Uniform,
    Zipfian(ScrambledZipfian),
    Latest(SkewedLatest),
}

impl KeyChooser {
    /// Chooses a key index below `count`. The scrambled zipfian is built
    /// over a range that may exceed `count` (to leave room for inserts);
    /// choices past `count` are redrawn, as YCSB does.
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R, count: u64) -> u64 {
        let count = count.max(1);
        match self {
            KeyChooser::Uniform => rng.random_range(0..count),
            KeyChooser::Zipfian(z) => {
                for _ in 0..64 {
                    let v = z.next(rng);
                    if v < count {
                        return v;
                    }
                }
                rng.random_range(0..count)
            }
            KeyChooser::Latest(l) => l.next(rng, count),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn median(mut v: Vec<u64>) -> u64 {
        v.sort_unstable();
        v[v.len() / 2]
    }

    #[test]
    fn zipfian_is_skewed_and_in_range() {
        let n = 1000u64;
        let mut rng = StdRng::seed_from_u64(1);
        let mut z = Zipfian::new(0, n - 1);
        let mut hits = vec![0u64; n as usize];
        for _ in 0..200_000 {
            let v = z.next(&mut rng);
            assert!(v < n, "{v} out of range");
            hits[v as usize] += 1;
        }
        let max = *hits.iter().max().unwrap_or(&0);
        // The head is item 0 and gets far more than the median item.
        assert_eq!(hits[0], max);
        assert!(max > 50 * median(hits.clone()).max(1), "max {max}");
        // Frequencies fall with rank.
        assert!(hits[0] > hits[1] && hits[1] > hits[10] && hits[10] > hits[500]);
    }

    #[test]
    fn scrambled_zipfian_is_skewed_spread_and_in_range() {
        let n = 10_000u64;
        let mut rng = StdRng::seed_from_u64(2);
        let mut z = ScrambledZipfian::new(0, n - 1);
        let mut hits = vec![0u64; n as usize];
        for _ in 0..500_000 {
            let v = z.next(&mut rng);
            assert!(v < n);
            hits[v as usize] += 1;
        }
        let max = *hits.iter().max().unwrap_or(&0);
        let med = median(hits.clone()).max(1);
        assert!(max > 20 * med, "max {max} median {med}");
        // The most popular item is not simply the first key.
        let top = hits.iter().position(|&h| h == max).unwrap_or(0);
        assert_ne!(top, 0);
        // With an offset range, values stay inside it.
        let mut z = ScrambledZipfian::new(100, 199);
        for _ in 0..10_000 {
            let v = z.next(&mut rng);
            assert!((100..=199).contains(&v));
        }
    }

    #[test]
    fn skewed_latest_prefers_new_keys_and_follows_growth() {
        let mut rng = StdRng::seed_from_u64(3);
        let mut l = SkewedLatest::new(1000);
        let mut newest = 0;
        for _ in 0..10_000 {
            let v = l.next(&mut rng, 1000);
            assert!(v < 1000);
            if v == 999 {
                newest += 1;
            }
        }
        assert!(newest > 1000, "newest drawn {newest} times");
        for count in 1000..1100 {
            let v = l.next(&mut rng, count);
            assert!(v < count);
        }
    }

    #[test]
    fn chooser_stays_below_count() {
        let mut rng = StdRng::seed_from_u64(4);
        let mut c = KeyChooser::Zipfian(ScrambledZipfian::new(0, 1999));
        for _ in 0..10_000 {
            assert!(c.next(&mut rng, 1000) < 1000);
        }
        let mut u = KeyChooser::Uniform;
        for _ in 0..1000 {
            assert!(u.next(&mut rng, 10) < 10);
        }
    }

    #[test]
    fn fnv_is_non_negative_and_mixes() {
        let hs: Vec<u64> = (0..1000).map(fnv_hash64).collect();
        assert!(hs.iter().all(|&h| h <= i64::MAX as u64));
        let mut d = hs.clone();
        d.sort_unstable();
        d.dedup();
        assert_eq!(d.len(), hs.len());
    }
}
