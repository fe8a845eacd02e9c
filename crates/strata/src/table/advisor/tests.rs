//! Tests of the layout advisor: known cases, brute force on small
//! instances and randomized workloads.

use super::partition::Local;
use super::*;
use crate::table::cost::{layout_cost, level_cost};

/// xorshift64*: a small seeded generator for randomized tests.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn subset(&mut self, c: usize) -> ColumnSet {
        loop {
            let s: ColumnSet = match self.below(3) {
                // A contiguous range, as real projections often are.
                0 => {
                    let a = self.below(c as u64) as u32;
                    let b = self.below(c as u64) as u32;
                    (a.min(b)..=a.max(b)).collect()
                }
                // A sparse random subset.
                1 => (0..c as u32).filter(|_| self.below(4) == 0).collect(),
                // A dense random subset.
                _ => (0..c as u32).filter(|_| self.below(4) != 0).collect(),
            };
            if !s.is_empty() {
                return s;
            }
        }
    }
}

fn random_workload(rng: &mut Rng, c: usize, levels: usize, per_level: usize) -> Workload {
    let mut w = Workload {
        inserts: (rng.below(2000) as f64) * rng.unit(),
        levels: Vec::new(),
    };
    for i in 0..levels {
        let n = rng.below(per_level as u64 + 1) as usize;
        let ops = (0..n)
            .map(|_| {
                let cols = rng.subset(c);
                let count = 1.0 + rng.below(100) as f64;
                match rng.below(3) {
                    0 => OpStat::point(cols, count * 10.0),
                    1 => OpStat::scan(cols, count / 10.0, (10u64 << i) as f64 * rng.unit()),
                    _ => OpStat::update(cols, count),
                }
            })
            .collect();
        w.levels.push(ops);
    }
    w
}

fn random_params(rng: &mut Rng, c: usize) -> ModelParams {
    if rng.below(2) == 0 {
        ModelParams::uniform(
            c,
            2.0 + rng.below(9) as f64,
            4.0 + rng.below(60) as f64,
            4.0,
        )
    } else {
        ModelParams {
            columns: c,
            size_ratio: 2.0 + rng.below(9) as f64,
            entries_per_block: 4.0 + rng.below(60) as f64,
            column_bytes: (0..c).map(|_| 1.0 + rng.below(16) as f64).collect(),
            key_bytes: 1.0 + rng.below(16) as f64,
        }
    }
}

fn pure_row(c: usize, levels: usize) -> Vec<Partition> {
    vec![vec![(0..c as u32).collect()]; levels]
}

fn pure_column(c: usize, levels: usize) -> Vec<Partition> {
    let mut layout = vec![(0..c as u32).map(|x| vec![x]).collect::<Partition>(); levels];
    layout[0] = vec![(0..c as u32).collect()];
    layout
}

fn not_worse(a: f64, b: f64) -> bool {
    a <= b + 1e-9 * b.abs().max(1.0)
}

#[test]
fn fragments_follow_the_papers_split_example() {
    // R = {a1..a4} = {0..3}, Π1 = {a2,a3,a4}, Π2 = {a1,a2}, Π3 = R.
    let projections = vec![vec![1, 2, 3], vec![0, 1], vec![0, 1, 2, 3]];
    assert_eq!(
        fragments(&[0, 1, 2, 3], &projections),
        vec![vec![0], vec![1], vec![2, 3]]
    );
    // Untouched columns form one fragment of their own.
    assert_eq!(
        fragments(&[0, 1, 2, 3, 4, 5], &[vec![1, 3]]),
        vec![vec![0, 2, 4, 5], vec![1, 3]]
    );
}

#[test]
fn whole_row_point_reads_keep_one_group_per_level() {
    let p = ModelParams::uniform(8, 10.0, 32.0, 4.0);
    let all: ColumnSet = (0..8).collect();
    let w = Workload {
        inserts: 1000.0,
        levels: (0..5)
            .map(|_| vec![OpStat::point(all.clone(), 500.0)])
            .collect(),
    };
    let advice = advise(&p, &w, 5);
    assert_eq!(advice.layout, pure_row(8, 5));
    assert_eq!(check_containment(&advice.layout, 8), Ok(()));
}

#[test]
fn single_column_scans_split_into_columns() {
    let c = 6;
    let p = ModelParams::uniform(c, 10.0, 32.0, 4.0);
    // Level 2 scans each column alone over many entries; levels 1 and 3
    // record nothing.
    let scans = (0..c as u32)
        .map(|x| OpStat::scan(vec![x], 1.0, 1e6))
        .collect();
    let w = Workload {
        inserts: 100.0,
        levels: vec![vec![], vec![], scans, vec![]],
    };
    let advice = advise(&p, &w, 4);
    let columns: Partition = (0..c as u32).map(|x| vec![x]).collect();
    assert_eq!(
        advice.layout[1],
        vec![(0..c as u32).collect::<ColumnSet>()],
        "no evidence at 1"
    );
    assert_eq!(advice.layout[2], columns);
    assert_eq!(
        advice.layout[3], columns,
        "level 3 keeps its parent's grouping"
    );
}

#[test]
fn containment_checks_catch_bad_layouts() {
    let ok = vec![
        vec![vec![0, 1, 2, 3]],
        vec![vec![0, 1], vec![2, 3]],
        vec![vec![0], vec![1], vec![2, 3]],
    ];
    assert_eq!(check_containment(&ok, 4), Ok(()));
    let bad: Vec<Vec<Partition>> = vec![
        vec![],
        vec![vec![vec![0, 1], vec![2, 3]]], // level 0 split
        vec![vec![vec![0, 1, 2, 3]], vec![vec![0, 1], vec![3]]], // column 2 missing
        vec![vec![vec![0, 1, 2, 3]], vec![vec![0, 1], vec![1, 2, 3]]], // column 1 twice
        vec![vec![vec![0, 1, 2, 3]], vec![vec![1, 0], vec![2, 3]]], // unsorted
        vec![vec![vec![0, 1, 2, 3]], vec![vec![0, 1], vec![2, 3], vec![]]], // empty group
        vec![vec![vec![0, 1, 2, 3, 4]]],    // column 4 out of range
        vec![
            ok[0].clone(),
            ok[1].clone(),
            vec![vec![0], vec![1, 2], vec![3]],
        ], // straddles
    ];
    for layout in &bad {
        assert!(check_containment(layout, 4).is_err(), "{layout:?}");
    }
}

/// All partitions of `items`, for brute force on small instances.
fn all_partitions(items: &[u32]) -> Vec<Partition> {
    let Some((&first, rest)) = items.split_first() else {
        return vec![vec![]];
    };
    let mut out = Vec::new();
    for partition in all_partitions(rest) {
        for i in 0..partition.len() {
            let mut with = partition.clone();
            with[i].insert(0, first);
            out.push(with);
        }
        let mut alone = partition;
        alone.insert(0, vec![first]);
        out.push(alone);
    }
    out
}

#[test]
fn one_level_advice_is_the_brute_force_optimum() {
    // With one free level the advice must be the cheapest of all
    // Bell(c) partitions of the columns: fragments lose nothing and the
    // exact search finds the best partition of the fragments.
    let mut rng = Rng(0x5eed_0001);
    for _ in 0..60 {
        let c = 1 + rng.below(7) as usize;
        let p = random_params(&mut rng, c);
        let w = random_workload(&mut rng, c, 2, 6);
        let advice = advise(&p, &w, 2);
        let whole: ColumnSet = (0..c as u32).collect();
        let brute = all_partitions(&whole)
            .iter()
            .map(|part| level_cost(&p, part, w.inserts, w.level(1)))
            .fold(f64::INFINITY, f64::min);
        let got = level_cost(&p, &advice.layout[1], w.inserts, w.level(1));
        assert!(
            (got - brute).abs() <= 1e-9 * brute.abs().max(1.0),
            "{got} vs {brute}: {w:?}"
        );
    }
}

#[test]
fn greedy_is_never_better_than_exact_nor_worse_than_fragments() {
    let mut rng = Rng(0x5eed_0002);
    for _ in 0..100 {
        let c = 2 + rng.below(14) as usize;
        let p = random_params(&mut rng, c);
        let w = random_workload(&mut rng, c, 2, 8);
        let search = Search::new(&p, &w, 2);
        let whole: ColumnSet = (0..c as u32).collect();
        let local = Local::new(&search, 1, &whole);
        let n = local.fragments.len();
        if n == 0 || n > EXACT_MAX_FRAGMENTS {
            continue;
        }
        let (_, exact) = local.exact();
        let (groups, greedy) = local.greedy();
        let singles: f64 = (0..n).map(|f| local.cost_of(&[f])).sum();
        let mut covered: Vec<usize> = groups.concat();
        covered.sort_unstable();
        assert_eq!(
            covered,
            (0..n).collect::<Vec<_>>(),
            "greedy covers every fragment once"
        );
        assert!(not_worse(exact, greedy), "exact {exact} > greedy {greedy}");
        assert!(
            not_worse(greedy, singles),
            "greedy {greedy} > fragments {singles}"
        );
    }
}

#[test]
fn random_workloads_respect_containment_and_beat_row_and_column() {
    let mut rng = Rng(0x5eed_0003);
    for round in 0..150 {
        // Some rounds are wide enough for the greedy search.
        let c = if round % 5 == 0 {
            20 + rng.below(30)
        } else {
            1 + rng.below(16)
        } as usize;
        let levels = 1 + rng.below(7) as usize;
        let recorded = rng.below(levels as u64 + 2) as usize;
        let p = random_params(&mut rng, c);
        let w = random_workload(&mut rng, c, recorded, 10);
        let advice = advise(&p, &w, levels);
        assert_eq!(advice.layout.len(), levels);
        assert_eq!(
            check_containment(&advice.layout, c),
            Ok(()),
            "{:?}",
            advice.layout
        );
        let cost = layout_cost(&p, &advice.layout, &w);
        assert!((cost - advice.cost).abs() <= 1e-9 * cost.max(1.0));
        let total: f64 = advice.breakdown.iter().map(|b| b.total).sum();
        assert!((total - advice.cost).abs() <= 1e-9 * cost.max(1.0));
        let row = layout_cost(&p, &pure_row(c, levels), &w);
        let column = layout_cost(&p, &pure_column(c, levels), &w);
        assert!(
            not_worse(advice.cost, row),
            "round {round}: {} > row {row}",
            advice.cost
        );
        assert!(
            not_worse(advice.cost, column),
            "round {round}: {} > column {column}",
            advice.cost
        );
    }
}

/// The paper's HW benchmark (section 7, `laser.md`): 30 4-byte columns
/// and an 8-byte key, T = 2, 8 levels, 4 KiB blocks (B = 4096/128 =
/// 32). Inserts at 10,000/s; point reads of all columns hit the top
/// levels, along with updates of one random column; point reads of
/// columns 16-30 hit the middle levels; scans of 21-30 (5 % of keys)
/// and 28-30 (50 % of keys) reach the bottom levels, whose levels hold
/// 10^6·2^i entries.
#[test]
fn htap_workload_rows_on_top_and_narrow_groups_at_the_bottom() {
    let c = 30;
    let p = ModelParams {
        columns: c,
        size_ratio: 2.0,
        entries_per_block: 32.0,
        column_bytes: vec![4.0; c],
        key_bytes: 8.0,
    };
    let range = |a: u32, b: u32| -> ColumnSet { (a - 1..b).collect() }; // 1-based, inclusive
    let entries = |i: usize| 1e6 * f64::powi(2.0, i as i32);
    let mut levels = Vec::new();
    for i in 0..8 {
        let mut ops = Vec::new();
        if i <= 1 {
            ops.push(OpStat::point(range(1, 30), 5000.0));
            ops.extend((1..=30).map(|x| OpStat::update(range(x, x), 100.0 / 30.0)));
        }
        if (2..=5).contains(&i) {
            ops.push(OpStat::point(range(16, 30), 5000.0));
        }
        if i >= 4 {
            ops.push(OpStat::scan(range(21, 30), 1.0, 0.05 * entries(i)));
        }
        if i >= 6 {
            ops.push(OpStat::scan(range(28, 30), 0.1, 0.5 * entries(i)));
        }
        levels.push(ops);
    }
    let w = Workload {
        inserts: 10_000.0,
        levels,
    };
    let advice = advise(&p, &w, 8);
    for (i, level) in advice.layout.iter().enumerate() {
        eprintln!(
            "level {i}: {:?}",
            level
                .iter()
                .map(|g| (g[0] + 1, g[g.len() - 1] + 1))
                .collect::<Vec<_>>()
        );
    }
    assert_eq!(check_containment(&advice.layout, c), Ok(()));
    // Top levels: whole rows.
    assert_eq!(advice.layout[0].len(), 1);
    assert_eq!(advice.layout[1].len(), 1);
    // Middle levels: a point read of 16-30 finds its columns in one
    // group.
    for i in 2..=3 {
        assert!(
            advice.layout[i]
                .iter()
                .any(|g| range(16, 30).iter().all(|x| g.contains(x)))
        );
    }
    // Bottom levels: 21-27 and 28-30 are groups of their own, and
    // columns 1-15 share no group with them.
    for i in 6..=7 {
        let level = &advice.layout[i];
        assert!(level.contains(&range(28, 30)), "level {i}: {level:?}");
        assert!(level.contains(&range(21, 27)), "level {i}: {level:?}");
        assert!(
            level
                .iter()
                .all(|g| g.iter().all(|&x| x < 15) || g.iter().all(|&x| x >= 15))
        );
    }
    // Never worse than the design the paper reports.
    let paper: Vec<Partition> = [
        vec![(1, 30)],
        vec![(1, 30)],
        vec![(1, 15), (16, 30)],
        vec![(1, 15), (16, 30)],
        vec![(1, 15), (16, 20), (21, 30)],
        vec![(1, 15), (16, 20), (21, 30)],
        vec![(1, 15), (16, 20), (21, 27), (28, 30)],
        vec![(1, 15), (16, 20), (21, 27), (28, 30)],
    ]
    .iter()
    .map(|level| level.iter().map(|&(a, b)| range(a, b)).collect())
    .collect();
    assert!(not_worse(advice.cost, layout_cost(&p, &paper, &w)));
    assert!(not_worse(advice.cost, layout_cost(&p, &pure_row(c, 8), &w)));
    assert!(not_worse(
        advice.cost,
        layout_cost(&p, &pure_column(c, 8), &w)
    ));
}

#[test]
fn a_hundred_columns_and_eight_levels() {
    let c = 100;
    let mut rng = Rng(0x5eed_0004);
    let p = ModelParams::uniform(c, 10.0, 32.0, 8.0);
    let mut w = Workload {
        inserts: 50_000.0,
        levels: Vec::new(),
    };
    for i in 0..8 {
        let ops = (0..15)
            .map(|k| {
                let cols = rng.subset(c);
                match k % 3 {
                    0 => OpStat::point(cols, 1000.0 / (i + 1) as f64),
                    1 => OpStat::scan(cols, 1.0, 1e4 * f64::powi(10.0, i)),
                    _ => OpStat::update(cols, 50.0),
                }
            })
            .collect();
        w.levels.push(ops);
    }
    let start = std::time::Instant::now();
    let advice = advise(&p, &w, 8);
    eprintln!(
        "100 columns x 8 levels: {:?}, groups per level {:?}",
        start.elapsed(),
        advice.layout.iter().map(Vec::len).collect::<Vec<_>>()
    );
    assert_eq!(check_containment(&advice.layout, c), Ok(()));
    assert!(not_worse(advice.cost, layout_cost(&p, &pure_row(c, 8), &w)));
    assert!(not_worse(
        advice.cost,
        layout_cost(&p, &pure_column(c, 8), &w)
    ));
}
