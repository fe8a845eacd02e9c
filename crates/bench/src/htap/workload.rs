//! The HTAP workload of seed 001 (LASER, section 7.2, Table 3), scaled:
//! a table of `columns` 4-byte integer columns and an 8-byte key, loaded,
//! then a mix of
//!
//! | query | projection | keys | count |
//! |---|---|---|---|
//! | Q1 insert | all | new, uniform | `inserts`, at a steady rate |
//! | Q2a point read | all columns | time since insert ~ N(0.98, 0.02) | `points / 2` |
//! | Q2b point read | columns 16-30 | time since insert ~ N(0.85, 0.02) | `points / 2` |
//! | Q3 update | one random column | a recent key (the newest 1 %) | 1 per 100 inserts |
//! | Q4 sum | columns 21-30 | a key range of 5 % of the key space | `q4` |
//! | Q5 max | columns 28-30 | a key range of 50 % | `q5` |
//! | J join | column 1 | every key of a second table | `joins` |
//!
//! J is not LASER's: it joins the table on its key with a second table
//! holding every 100th loaded key and a weight (see [`side`]), returning
//! the count of matches and the sum of `a1` and the weight over them. The
//! `sql` suite runs it (two tables through SQL); the `htap` suite sets
//! `joins` to 0.
//!
//! Every engine gets the same rows and queries from the same seed. Keys
//! are uniform 62-bit integers; column values are uniform 31-bit integers.
//! For the wide table (100 columns) the projections keep their share of the
//! columns (Q2b the second half, Q4 the last third, Q5 the last tenth).

use std::ops::Range;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The key space: keys are in `0..KEY_SPACE`.
pub const KEY_SPACE: i64 = 1 << 62;

/// Column ranges (0-based) of the queries for a table of `c` columns.
#[derive(Clone, Debug)]
pub struct Projections {
    /// Q2a: every column.
    pub q2a: Range<usize>,
    /// Q2b: columns 16-30 of 30.
    pub q2b: Range<usize>,
    /// Q4: columns 21-30 of 30.
    pub q4: Range<usize>,
    /// Q5: columns 28-30 of 30.
    pub q5: Range<usize>,
}

impl Projections {
    /// The paper's projections for 30 columns, scaled to `c`.
    pub fn for_columns(c: usize) -> Projections {
        let at = |fraction_of_30: usize| (c * fraction_of_30).div_ceil(30);
        Projections {
            q2a: 0..c,
            q2b: at(15)..c,
            q4: at(20)..c,
            q5: at(27)..c,
        }
    }
}

/// One operation of the mix.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Q1: insert row `index` of the insert stream.
    Insert(usize),
    /// Q3: set column `col` of the row at insert position `pos` to `value`.
    Update { pos: f64, col: usize, value: i32 },
    /// Q2a / Q2b: read the row at `pos` (0 = oldest, 1 = newest row).
    Point { pos: f64, wide: bool },
    /// Q4: sum over `[lo, hi)`.
    Sum { lo: i64, hi: i64 },
    /// Q5: max over `[lo, hi)`.
    Max { lo: i64, hi: i64 },
    /// J: the table joined with the side table.
    Join,
}

/// The scale of one run.
#[derive(Clone, Debug)]
pub struct Scale {
    pub columns: usize,
    pub load_rows: usize,
    pub inserts: usize,
    pub points: usize,
    pub q4: usize,
    pub q5: usize,
    pub joins: usize,
    pub seed: u64,
}

/// Loaded rows per row of the join's side table.
pub const SIDE_EVERY: usize = 100;

/// The join's side table: the key of every [`SIDE_EVERY`]th loaded row and
/// a weight.
pub fn side(s: &Scale) -> Vec<(i64, i32)> {
    (0..s.load_rows)
        .step_by(SIDE_EVERY)
        .map(|i| (key(s.seed, i, s.columns), (i / SIDE_EVERY % 1000) as i32))
        .collect()
}

/// A deterministic row: its key and values.
pub fn row(seed: u64, index: usize, columns: usize, out: &mut Vec<i32>) -> i64 {
    let mut rng = StdRng::seed_from_u64(seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    out.clear();
    out.extend((0..columns).map(|_| rng.random_range(0..i32::MAX)));
    rng.random_range(0..KEY_SPACE)
}

/// The key of row `index` (the same as [`row`] returns).
pub fn key(seed: u64, index: usize, columns: usize) -> i64 {
    let mut scratch = Vec::with_capacity(columns);
    row(seed, index, columns, &mut scratch)
}

/// Where Q2a's keys are, as a position in insertion order (0 the first row
/// loaded, 1 the newest): mean and standard deviation (LASER's Table 3).
pub const Q2A_POSITION: (f64, f64) = (0.98, 0.02);
/// Where Q2b's keys are, as [`Q2A_POSITION`].
pub const Q2B_POSITION: (f64, f64) = (0.85, 0.02);

/// A draw from N(`mean`, `sd`), clamped to [0, 1]: a key's position in
/// insertion order.
pub fn normal(rng: &mut StdRng, mean: f64, sd: f64) -> f64 {
    // Box-Muller.
    let u1: f64 = rng.random_range(f64::EPSILON..1.0);
    let u2: f64 = rng.random();
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    (mean + sd * z).clamp(0.0, 1.0)
}

/// The writer's stream (Q1 and Q3) and the reader's stream (Q2a, Q2b,
/// then Q4, Q5 and J at the end).
pub fn plan(s: &Scale) -> (Vec<Op>, Vec<Op>) {
    let mut rng = StdRng::seed_from_u64(s.seed ^ 0x5EED);
    let mut writer = Vec::with_capacity(s.inserts + s.inserts / 100);
    for i in 0..s.inserts {
        writer.push(Op::Insert(i));
        if i % 100 == 99 {
            writer.push(Op::Update {
                pos: rng.random_range(0.99..1.0),
                col: rng.random_range(0..s.columns),
                value: rng.random_range(0..i32::MAX),
            });
        }
    }
    let mut reader = Vec::with_capacity(s.points + s.q4 + s.q5);
    for i in 0..s.points {
        let wide = i % 2 == 0;
        let (mean, sd) = if wide { Q2A_POSITION } else { Q2B_POSITION };
        reader.push(Op::Point {
            pos: normal(&mut rng, mean, sd),
            wide,
        });
    }
    let range = |rng: &mut StdRng, share: f64| {
        let len = (KEY_SPACE as f64 * share) as i64;
        let lo = rng.random_range(0..KEY_SPACE - len);
        (lo, lo + len)
    };
    for _ in 0..s.q4 {
        let (lo, hi) = range(&mut rng, 0.05);
        reader.push(Op::Sum { lo, hi });
    }
    for _ in 0..s.q5 {
        let (lo, hi) = range(&mut rng, 0.5);
        reader.push(Op::Max { lo, hi });
    }
    reader.extend(std::iter::repeat_n(Op::Join, s.joins));
    (writer, reader)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_plans_are_deterministic_and_shaped_like_the_paper() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        assert_eq!(row(1, 7, 30, &mut a), row(1, 7, 30, &mut b));
        assert_eq!(a, b);
        assert_ne!(key(1, 7, 30), key(1, 8, 30));
        let s = Scale {
            columns: 30,
            load_rows: 100,
            inserts: 1000,
            points: 200,
            q4: 3,
            q5: 2,
            joins: 1,
            seed: 9,
        };
        let (w, r) = plan(&s);
        assert_eq!(
            w.iter().filter(|o| matches!(o, Op::Update { .. })).count(),
            10
        );
        assert_eq!(plan(&s), (w.clone(), r.clone()));
        assert_eq!(r.last(), Some(&Op::Join));
        let side = side(&s);
        assert_eq!(side.len(), 1);
        assert_eq!(side[0].0, key(9, 0, 30));
        let recent: Vec<f64> = r
            .iter()
            .filter_map(|o| match o {
                Op::Point { pos, wide: true } => Some(*pos),
                _ => None,
            })
            .collect();
        let mean = recent.iter().sum::<f64>() / recent.len() as f64;
        assert!((mean - 0.98).abs() < 0.01, "{mean}");
        let p = Projections::for_columns(30);
        assert_eq!((p.q2b.start, p.q4.start, p.q5.start), (15, 20, 27));
        let p = Projections::for_columns(100);
        assert_eq!((p.q2b.start, p.q4.start, p.q5.start), (50, 67, 90));
    }
}
