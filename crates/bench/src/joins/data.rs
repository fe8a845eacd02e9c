//! The joins suite's datasets, generated as the study's artifact does.
//!
//! Two tables, R(id, a, pad) and S(id, b, pad): `id` the primary key, `a`
//! and `b` the join attributes (i64), `pad` bytes filling each row to the
//! entry size. A side of N rows with duplication d, matching rate m and
//! skew θ draws `m·N` join values from a shared domain of `N/d` values
//! (Zipfian with θ, uniform when θ is 0) and the rest from a domain of its
//! own that the other side never draws from. The synthetic datasets (Unif,
//! Zipf) and the stand-ins for the study's real ones (User, Movie, Face,
//! Wiki) take their duplication, matching and skew from the study's
//! Table 5.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::generators::{Zipfian, zeta_from};

/// One side's shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SideShape {
    pub duplication: f64,
    pub matching: f64,
    pub skew: f64,
}

/// A dataset: R's and S's shapes.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    pub name: String,
    pub r: SideShape,
    pub s: SideShape,
}

fn shape(duplication: f64, matching: f64, skew: f64) -> SideShape {
    SideShape {
        duplication,
        matching,
        skew,
    }
}

impl Dataset {
    /// The study's datasets by name (Table 5), and `zipf:THETA` for the
    /// skew sweep.
    pub fn named(name: &str) -> Option<Dataset> {
        let (r, s) = match name {
            "unif" => (shape(4.0, 0.8, 0.0), shape(4.0, 0.8, 0.0)),
            "zipf" => (shape(2.6, 1.0, 0.5), shape(2.6, 1.0, 0.5)),
            "user" => (shape(4.2, 0.42, 0.93), shape(3.9, 0.40, 0.92)),
            "movie" => (shape(4.1, 0.72, 0.89), shape(5.6, 0.99, 0.85)),
            "face" => (shape(1.0, 1.0, 0.0), shape(1.0, 1.0, 0.0)),
            "wiki" => (shape(1.1, 1.0, 0.2), shape(1.1, 1.0, 0.2)),
            _ => {
                let theta: f64 = name.strip_prefix("zipf:")?.parse().ok()?;
                if !(0.0..1.0).contains(&theta) {
                    return None;
                }
                (shape(2.6, 1.0, theta), shape(2.6, 1.0, theta))
            }
        };
        Some(Dataset {
            name: name.to_string(),
            r,
            s,
        })
    }
}

/// Draws one side's join values.
pub struct ValueDraw {
    shared: u64,
    matching: f64,
    zipf: Option<Zipfian>,
    /// Values outside the shared domain start here (R and S apart).
    private_base: u64,
    private_next: u64,
    rng: StdRng,
}

impl ValueDraw {
    /// For one side (0 or 1); `shared` values are common to both sides.
    pub fn new(shape: SideShape, shared: u64, side: u64, seed: u64) -> ValueDraw {
        let zipf = (shape.skew > 0.0).then(|| {
            let n = shared.max(2);
            Zipfian::with_zetan(0, n - 1, shape.skew, zeta_from(0, n, shape.skew, 0.0))
        });
        ValueDraw {
            shared: shared.max(1),
            matching: shape.matching,
            zipf,
            private_base: (1 << 40) * (side + 1),
            private_next: 0,
            rng: StdRng::seed_from_u64(seed ^ (side.wrapping_mul(0x9e37_79b9))),
        }
    }

    /// The next row's join value.
    pub fn next_value(&mut self, dup: f64) -> i64 {
        if self.rng.random::<f64>() >= self.matching {
            // An unmatched value, repeated about `dup` times.
            let v = self.private_base + (self.private_next as f64 / dup.max(1.0)) as u64;
            self.private_next += 1;
            return v as i64;
        }
        let k = match &mut self.zipf {
            Some(z) => z.next(&mut self.rng),
            None => self.rng.random_range(0..self.shared),
        };
        // Scatter popular values over the domain.
        (crate::generators::fnv_hash64(k) % self.shared) as i64
    }
}

/// The shared domain's size for a dataset of `rows` rows per side: the
/// larger side's distinct values.
pub fn shared_domain(d: &Dataset, rows: u64) -> u64 {
    ((rows as f64 / d.r.duplication.min(d.s.duplication)).max(1.0)) as u64
}

/// The pad of a row of `entry` bytes (id and join value take 16).
pub fn pad(entry: usize, id: u64) -> Vec<u8> {
    let n = entry.saturating_sub(16);
    let mut p = vec![b'x'; n];
    let tag = id.to_le_bytes();
    for (i, b) in p.iter_mut().enumerate().take(8) {
        *b = b'a' + tag[i] % 26;
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_match_at_about_their_rates_and_skew_repeats_values() {
        let d = Dataset::named("unif").expect("unif");
        let rows = 20_000;
        let shared = shared_domain(&d, rows);
        let mut r = ValueDraw::new(d.r, shared, 0, 1);
        let vals: Vec<i64> = (0..rows).map(|_| r.next_value(d.r.duplication)).collect();
        let in_shared = vals.iter().filter(|&&v| (v as u64) < shared).count() as f64;
        assert!((in_shared / rows as f64 - 0.8).abs() < 0.03);
        let z = Dataset::named("zipf:0.9").expect("zipf");
        let mut s = ValueDraw::new(z.s, shared, 1, 1);
        let mut counts = std::collections::HashMap::new();
        for _ in 0..rows {
            *counts.entry(s.next_value(z.s.duplication)).or_insert(0u32) += 1;
        }
        assert!(counts.values().copied().max().unwrap_or(0) > 200);
        assert!(Dataset::named("zipf:1.5").is_none());
        assert!(Dataset::named("nope").is_none());
        assert_eq!(pad(64, 7).len(), 48);
    }
}
