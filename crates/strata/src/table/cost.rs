//! The LASER cost model (seed 001, section 5: Table 2 and equations 2-7;
//! section 6.2: equations 8-9) as pure functions of a layout and a workload.
//!
//! A *layout* gives, per LSM level, a partition of the table's non-key
//! columns `0..c` into column groups; every group stores the key beside its
//! columns. The model counts block I/Os per level (equation 9):
//!
//! ```text
//! cost_i = w·T·k·g_i/(B·c)                       inserts (W)
//!        + Σ_points  count · E^g                 point reads (P)
//!        + Σ_scans   count · entries · E^G/(c·B) range scans (Q)
//!        + Σ_updates count · T · E^G/(c·B)       updates (U)
//! ```
//!
//! where `g_i` is the number of groups at level `i`, `E^g` the number of
//! groups of the level an operation's projection touches and `E^G` the sum
//! of those groups' [sizes](ModelParams::size_units).
//!
//! **Sizes in bytes.** The paper measures a group in units of `dt_size`,
//! "the average datatype size of the columns, which includes the column
//! value and the key", so a group of `n` columns has size `1 + n` (its key
//! and its columns). To let columns have different widths this module takes
//! `dt_size` literally as the mean width over the key and the `c` columns,
//! `dt_size = (key_bytes + Σ column_bytes) / (c + 1)`, and measures a group
//! as `size_units(g) = (key_bytes + Σ_{j∈g} column_bytes[j]) / dt_size`.
//! A whole row is then always `c + 1` units, so `B` (whole-row entries per
//! block) keeps the paper's meaning (`D = B·(1 + c)·dt_size`). The key's
//! share of each group, `k = key_bytes / dt_size`, multiplies the insert
//! term: the paper's `w·T·g_i/(B·c)` is the key copies that splitting a row
//! into `g_i` groups adds (section 5, "the overhead of storing keys along
//! with CG values"), and a key `k` units wide costs `k` per copy. When every
//! width equals `key_bytes`, `dt_size` is that width, `size_units(g)` is
//! `1 + |g|`, `k = 1`, and every formula here is exactly the paper's.
//!
//! Like equation 9, the layout-independent part of the insert cost
//! (`T·L/B` per insert) is left out: it is the same for every layout.
//!
//! The per-level cost is a sum over the level's groups (each group adds its
//! insert share, and `E^g` and `E^G` add up group by group), so the cost of
//! a level splits over any partition of its columns: [`level_cost`] of the
//! groups inside one parent group is that parent's share. The layout
//! advisor relies on this.

use std::iter::Sum;
use std::ops::{Add, AddAssign};

/// Column indices 0..c (non-key columns), sorted ascending, no duplicates.
pub type ColumnSet = Vec<u32>;

/// A partition of a level's (or a parent group's) columns into groups.
pub type Partition = Vec<ColumnSet>;

/// What kind of operation a workload statistic counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// A read of an existing key, projected (`read(key, Π)`): costs one
    /// I/O per group holding projected columns (`E^g`).
    Point,
    /// A range scan (`scan(lo, hi, Π)`): reads `entries` entries of every
    /// group holding projected columns (`s_i·E^G/(c·B)`).
    Scan,
    /// A partial-row update of the columns in `Π`: rewritten `T` times per
    /// level in every group holding updated columns (`T·E^G/(c·B)`).
    Update,
}

/// One recorded operation class at one level: `count` operations of `kind`
/// with projection `columns` (for updates: the updated columns), each
/// touching `entries` entries at this level (scans: `s_i`; points/updates:
/// 1, and the model ignores `entries` for them, as equation 9 does).
///
/// Counts and entries are expected to be non-negative. Columns that the
/// partition being costed does not hold (for example columns outside the
/// parent group when costing one parent's share) are ignored.
#[derive(Clone, Debug, PartialEq)]
pub struct OpStat {
    /// The kind of operation.
    pub kind: OpKind,
    /// The projected (or updated) columns.
    pub columns: ColumnSet,
    /// How many such operations the workload holds.
    pub count: f64,
    /// Entries each operation touches at this level (scans only).
    pub entries: f64,
}

impl OpStat {
    /// `count` point reads of `columns`.
    pub fn point(columns: ColumnSet, count: f64) -> Self {
        OpStat {
            kind: OpKind::Point,
            columns,
            count,
            entries: 1.0,
        }
    }

    /// `count` scans of `columns`, each reading `entries` entries at the
    /// level.
    pub fn scan(columns: ColumnSet, count: f64, entries: f64) -> Self {
        OpStat {
            kind: OpKind::Scan,
            columns,
            count,
            entries,
        }
    }

    /// `count` updates of `columns`.
    pub fn update(columns: ColumnSet, count: f64) -> Self {
        OpStat {
            kind: OpKind::Update,
            columns,
            count,
            entries: 1.0,
        }
    }
}

/// The tree and the table, as the model sees them.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelParams {
    /// `c`: the number of non-key columns.
    pub columns: usize,
    /// `T`: the size ratio between adjacent levels.
    pub size_ratio: f64,
    /// `B`: whole-row entries per block.
    pub entries_per_block: f64,
    /// The width of each column in bytes (`len() == columns`); the paper's
    /// case is all equal (and equal to `key_bytes`).
    pub column_bytes: Vec<f64>,
    /// The width of the key stored beside every group, in bytes.
    pub key_bytes: f64,
}

impl ModelParams {
    /// The paper's case: `columns` columns and the key, all `width` bytes
    /// wide.
    pub fn uniform(columns: usize, size_ratio: f64, entries_per_block: f64, width: f64) -> Self {
        ModelParams {
            columns,
            size_ratio,
            entries_per_block,
            column_bytes: vec![width; columns],
            key_bytes: width,
        }
    }

    /// Checks that the parameters describe a table the model can cost: at
    /// least one column, one width per column, finite non-negative widths
    /// with a positive total, and positive finite `T` and `B`.
    pub fn validate(&self) -> Result<(), String> {
        if self.columns == 0 {
            return Err("the model needs at least one column".into());
        }
        if self.column_bytes.len() != self.columns {
            return Err(format!(
                "{} column widths for {} columns",
                self.column_bytes.len(),
                self.columns
            ));
        }
        let finite_non_negative = |x: f64| x.is_finite() && x >= 0.0;
        if !self.column_bytes.iter().all(|&x| finite_non_negative(x))
            || !finite_non_negative(self.key_bytes)
        {
            return Err("widths must be finite and non-negative".into());
        }
        if self.row_bytes() <= 0.0 {
            return Err("a row must have a positive width".into());
        }
        if !(self.size_ratio.is_finite() && self.size_ratio > 0.0) {
            return Err(format!("size ratio {} is not positive", self.size_ratio));
        }
        if !(self.entries_per_block.is_finite() && self.entries_per_block > 0.0) {
            return Err(format!(
                "entries per block {} is not positive",
                self.entries_per_block
            ));
        }
        Ok(())
    }

    /// Panics with the reason if [`validate`](Self::validate) fails.
    pub(crate) fn assert_valid(&self) {
        if let Err(e) = self.validate() {
            panic!("invalid model parameters: {e}");
        }
    }

    /// The bytes of a whole row: the key and every column.
    pub fn row_bytes(&self) -> f64 {
        self.key_bytes + self.column_bytes.iter().sum::<f64>()
    }

    /// The paper's `dt_size`: the mean width over the key and the `c`
    /// columns, `row_bytes / (c + 1)`.
    pub fn dt_size(&self) -> f64 {
        self.row_bytes() / (self.columns as f64 + 1.0)
    }

    /// The key's width in units of [`dt_size`](Self::dt_size) (1 in the
    /// paper's case).
    pub fn key_units(&self) -> f64 {
        self.key_bytes / self.dt_size()
    }

    /// A column's width in units of [`dt_size`](Self::dt_size) (1 in the
    /// paper's case). Panics if `column >= columns`.
    pub fn column_units(&self, column: u32) -> f64 {
        self.column_bytes[column as usize] / self.dt_size()
    }

    /// A group's size in units of [`dt_size`](Self::dt_size): its key and
    /// its columns, the paper's `1 + cg_size`. Panics if the group names a
    /// column `>= columns`.
    pub fn size_units(&self, group: &[u32]) -> f64 {
        let bytes = self.key_bytes
            + group
                .iter()
                .map(|&c| self.column_bytes[c as usize])
                .sum::<f64>();
        bytes / self.dt_size()
    }

    /// All columns, `0..c`: the single group of level 0 (a whole row).
    pub fn whole_row(&self) -> ColumnSet {
        (0..self.columns as u32).collect()
    }

    /// The insert cost one group adds at a level receiving `inserts`
    /// inserts: `inserts·T·k/(B·c)` with `k` the [key
    /// units](Self::key_units).
    pub fn insert_cost_per_group(&self, inserts: f64) -> f64 {
        inserts * self.size_ratio * self.key_units()
            / (self.entries_per_block * self.columns as f64)
    }

    /// The I/O cost per unit of `E^G` of one operation of `kind` touching
    /// `entries` entries: `entries/(c·B)` for scans, `T/(c·B)` for updates,
    /// 0 for point reads (which pay per group, not per unit).
    pub fn per_unit_cost(&self, kind: OpKind, entries: f64) -> f64 {
        let cb = self.columns as f64 * self.entries_per_block;
        match kind {
            OpKind::Point => 0.0,
            OpKind::Scan => entries / cb,
            OpKind::Update => self.size_ratio / cb,
        }
    }
}

/// Per-level workload: inserts are global (`w`), the rest per level.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Workload {
    /// `w`: inserts, each of which reaches every level.
    pub inserts: f64,
    /// The operations served at each level; index = level.
    pub levels: Vec<Vec<OpStat>>,
}

impl Workload {
    /// The operations recorded at `level` (none past the last recorded
    /// level).
    pub fn level(&self, level: usize) -> &[OpStat] {
        self.levels.get(level).map_or(&[], |ops| ops.as_slice())
    }
}

/// A cost split by operation kind: predicted `W`, `P`, `Q` and `U`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CostBreakdown {
    /// Insert cost (the layout-dependent part of `W`: key copies).
    pub insert: f64,
    /// Point-read cost (`P`).
    pub point: f64,
    /// Range-scan cost (`Q`).
    pub scan: f64,
    /// Update cost (`U`).
    pub update: f64,
    /// `insert + point + scan + update`.
    pub total: f64,
}

impl Add for CostBreakdown {
    type Output = CostBreakdown;

    fn add(mut self, rhs: CostBreakdown) -> CostBreakdown {
        self += rhs;
        self
    }
}

impl AddAssign for CostBreakdown {
    fn add_assign(&mut self, rhs: CostBreakdown) {
        self.insert += rhs.insert;
        self.point += rhs.point;
        self.scan += rhs.scan;
        self.update += rhs.update;
        self.total += rhs.total;
    }
}

impl Sum for CostBreakdown {
    fn sum<I: Iterator<Item = CostBreakdown>>(iter: I) -> CostBreakdown {
        iter.fold(CostBreakdown::default(), Add::add)
    }
}

impl<'a> Sum<&'a CostBreakdown> for CostBreakdown {
    fn sum<I: Iterator<Item = &'a CostBreakdown>>(iter: I) -> CostBreakdown {
        iter.copied().sum()
    }
}

/// For each column `0..c`, the index of the group holding it (`u32::MAX`
/// for columns the partition does not hold).
fn group_of(p: &ModelParams, groups: &[ColumnSet]) -> Vec<u32> {
    let mut of = vec![u32::MAX; p.columns];
    for (g, cols) in groups.iter().enumerate() {
        for &c in cols {
            of[c as usize] = g as u32;
        }
    }
    of
}

/// Marks the groups `projection` touches in `touched` (cleared first) and
/// returns how many it touches.
fn mark_touched(of: &[u32], projection: &[u32], touched: &mut [bool]) -> usize {
    touched.fill(false);
    let mut n = 0;
    for &c in projection {
        if let Some(&g) = of.get(c as usize)
            && g != u32::MAX
            && !touched[g as usize]
        {
            touched[g as usize] = true;
            n += 1;
        }
    }
    n
}

/// `E^g`: how many of `groups` hold at least one column of `projection`.
pub fn touched_groups(groups: &[ColumnSet], projection: &[u32]) -> usize {
    groups
        .iter()
        .filter(|g| g.iter().any(|c| projection.contains(c)))
        .count()
}

/// `E^G`: the summed [sizes](ModelParams::size_units) of the groups
/// holding at least one column of `projection`.
pub fn touched_units(p: &ModelParams, groups: &[ColumnSet], projection: &[u32]) -> f64 {
    groups
        .iter()
        .filter(|g| g.iter().any(|c| projection.contains(c)))
        .map(|g| p.size_units(g))
        .sum()
}

/// The cost of one level (equation 9) split by operation kind: `groups`
/// partition the level's columns (or one parent group's columns, giving
/// that parent's share), the level receives `inserts` inserts and serves
/// `ops`. Panics if `p` is invalid or a group names a column `>= c`.
pub fn level_breakdown(
    p: &ModelParams,
    groups: &[ColumnSet],
    inserts: f64,
    ops: &[OpStat],
) -> CostBreakdown {
    p.assert_valid();
    let of = group_of(p, groups);
    let units: Vec<f64> = groups.iter().map(|g| p.size_units(g)).collect();
    let mut touched = vec![false; groups.len()];
    let mut b = CostBreakdown {
        insert: groups.len() as f64 * p.insert_cost_per_group(inserts),
        ..CostBreakdown::default()
    };
    for op in ops {
        let e_g = mark_touched(&of, &op.columns, &mut touched);
        if e_g == 0 {
            continue;
        }
        let e_big_g: f64 = units
            .iter()
            .zip(&touched)
            .filter(|(_, t)| **t)
            .map(|(u, _)| u)
            .sum();
        match op.kind {
            OpKind::Point => b.point += op.count * e_g as f64,
            OpKind::Scan => {
                b.scan += op.count * e_big_g * p.per_unit_cost(OpKind::Scan, op.entries)
            }
            OpKind::Update => {
                b.update += op.count * e_big_g * p.per_unit_cost(OpKind::Update, op.entries)
            }
        }
    }
    b.total = b.insert + b.point + b.scan + b.update;
    b
}

/// The cost of one level (equation 9); see [`level_breakdown`].
pub fn level_cost(p: &ModelParams, groups: &[ColumnSet], inserts: f64, ops: &[OpStat]) -> f64 {
    level_breakdown(p, groups, inserts, ops).total
}

/// The cost of a layout per level: `layout[i]` is level `i`'s partition.
///
/// The result has one entry per level up to the deeper of the layout and
/// the workload: like the engine's layouts, levels past the last one the
/// layout describes repeat it (each such level also receives every
/// insert). An empty layout is a whole row at every level. Level 0 is
/// costed with whatever `layout[0]` says; a valid layout has the whole row
/// there. Sum the entries (`iter().sum()`) for the total.
pub fn layout_breakdown(p: &ModelParams, layout: &[Partition], w: &Workload) -> Vec<CostBreakdown> {
    p.assert_valid();
    let whole = vec![p.whole_row()];
    let levels = layout.len().max(w.levels.len()).max(1);
    (0..levels)
        .map(|i| {
            let groups = layout.get(i).or(layout.last()).unwrap_or(&whole);
            level_breakdown(p, groups, w.inserts, w.level(i))
        })
        .collect()
}

/// The total cost of a layout: the sum over levels of [`level_cost`] (see
/// [`layout_breakdown`] for how levels are counted).
pub fn layout_cost(p: &ModelParams, layout: &[Partition], w: &Workload) -> f64 {
    layout_breakdown(p, layout, w).iter().map(|b| b.total).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn paper_examples_of_e_g_and_e_big_g() {
        // Section 5: groups <A,B>, <C,D>. Π = {A,C}: two groups, sizes
        // (1+2)+(1+2) = 6. Π = {A,B}: one group of size 3.
        let p = ModelParams::uniform(4, 10.0, 100.0, 4.0);
        let groups = vec![vec![0, 1], vec![2, 3]];
        assert_eq!(touched_groups(&groups, &[0, 2]), 2);
        assert!(close(touched_units(&p, &groups, &[0, 2]), 6.0));
        assert_eq!(touched_groups(&groups, &[0, 1]), 1);
        assert!(close(touched_units(&p, &groups, &[0, 1]), 3.0));
        // The level cost agrees: one point read of {A,C} pays E^g = 2, one
        // scan of {A,B} over 40 entries pays 40·3/(4·100) = 0.3.
        let ops = [
            OpStat::point(vec![0, 2], 1.0),
            OpStat::scan(vec![0, 1], 1.0, 40.0),
        ];
        let b = level_breakdown(&p, &groups, 0.0, &ops);
        assert!(close(b.point, 2.0), "{b:?}");
        assert!(close(b.scan, 0.3), "{b:?}");
    }

    /// c = 4 columns, all widths (and the key) 8 bytes, T = 10, B = 4,
    /// w = 100 inserts. One level serves 3 point reads of {0,2}, 2 scans of
    /// {1} over s = 40 entries, and 5 updates of {3}.
    ///
    /// Pure row (g = 1, one group of size 1 + c = 5):
    ///   W = w·T·g/(B·c)          = 100·10·1/16  = 62.5
    ///   P = 3·1                  = 3
    ///   Q = 2·s·(1+c)/(c·B)      = 2·40·5/16    = 25
    ///   U = 5·T·(1+c)/(c·B)      = 5·10·5/16    = 15.625
    /// Pure column (g = c, groups of size 2):
    ///   W = w·T·c/(B·c) = w·T/B  = 100·10/4     = 250
    ///   P = 3·|Π|                = 3·2          = 6
    ///   Q = 2·s·|Π|·2/(c·B)      = 2·40·1·2/16  = 10
    ///   U = 5·T·|Π|·2/(c·B)      = 5·10·1·2/16  = 6.25
    #[test]
    fn reduces_to_the_closed_forms_for_pure_row_and_pure_column() {
        let p = ModelParams::uniform(4, 10.0, 4.0, 8.0);
        let ops = [
            OpStat::point(vec![0, 2], 3.0),
            OpStat::scan(vec![1], 2.0, 40.0),
            OpStat::update(vec![3], 5.0),
        ];
        let row = level_breakdown(&p, &[vec![0, 1, 2, 3]], 100.0, &ops);
        assert!(close(row.insert, 62.5), "{row:?}");
        assert!(close(row.point, 3.0), "{row:?}");
        assert!(close(row.scan, 25.0), "{row:?}");
        assert!(close(row.update, 15.625), "{row:?}");
        assert!(close(row.total, 62.5 + 3.0 + 25.0 + 15.625), "{row:?}");

        let column: Partition = (0..4).map(|c| vec![c]).collect();
        let col = level_breakdown(&p, &column, 100.0, &ops);
        assert!(close(col.insert, 250.0), "{col:?}");
        assert!(close(col.point, 6.0), "{col:?}");
        assert!(close(col.scan, 10.0), "{col:?}");
        assert!(close(col.update, 6.25), "{col:?}");
        assert!(close(
            level_cost(&p, &column, 100.0, &ops),
            250.0 + 6.0 + 10.0 + 6.25
        ));
    }

    #[test]
    fn widths_are_measured_in_mean_units() {
        // Key 8 bytes, columns 4, 4, 12: dt_size = 28/4 = 7.
        let p = ModelParams {
            columns: 3,
            size_ratio: 2.0,
            entries_per_block: 10.0,
            column_bytes: vec![4.0, 4.0, 12.0],
            key_bytes: 8.0,
        };
        assert!(close(p.dt_size(), 7.0));
        assert!(close(p.size_units(&p.whole_row()), 4.0)); // always c + 1
        assert!(close(p.size_units(&[2]), 20.0 / 7.0));
        assert!(close(p.key_units(), 8.0 / 7.0));
        // Insert share per group: w·T·k/(B·c) = 21·2·(8/7)/(10·3) = 1.6.
        let b = level_breakdown(&p, &[vec![0, 1], vec![2]], 21.0, &[]);
        assert!(close(b.insert, 2.0 * 1.6), "{b:?}");
        // An update of column 2 pays T·E^G/(c·B) = 2·(20/7)/30.
        let b = level_breakdown(
            &p,
            &[vec![0, 1], vec![2]],
            0.0,
            &[OpStat::update(vec![2], 1.0)],
        );
        assert!(close(b.update, 2.0 * (20.0 / 7.0) / 30.0), "{b:?}");
    }

    #[test]
    fn level_cost_splits_over_parent_groups() {
        let p = ModelParams::uniform(6, 4.0, 16.0, 4.0);
        let ops = [
            OpStat::point(vec![0, 1, 4], 7.0),
            OpStat::scan(vec![2, 5], 3.0, 1000.0),
            OpStat::update(vec![1, 3], 2.0),
        ];
        let left = vec![vec![0], vec![1, 2]];
        let right = vec![vec![3, 4], vec![5]];
        let whole: Partition = left.iter().chain(&right).cloned().collect();
        let sum = level_cost(&p, &left, 50.0, &ops) + level_cost(&p, &right, 50.0, &ops);
        assert!(close(level_cost(&p, &whole, 50.0, &ops), sum));
    }

    #[test]
    fn layouts_sum_levels_and_repeat_the_last() {
        let p = ModelParams::uniform(2, 2.0, 8.0, 4.0);
        let w = Workload {
            inserts: 16.0,
            levels: vec![
                vec![OpStat::point(vec![0, 1], 1.0)],
                vec![],
                vec![OpStat::scan(vec![1], 1.0, 64.0)],
            ],
        };
        let layout = vec![vec![vec![0, 1]], vec![vec![0], vec![1]]];
        let per_level = layout_breakdown(&p, &layout, &w);
        assert_eq!(per_level.len(), 3);
        // Level 0: insert 16·2/(8·2) = 2, one point read.
        assert!(close(per_level[0].insert, 2.0) && close(per_level[0].point, 1.0));
        // Levels 1 and 2 are split: two key copies each; level 2 (the
        // repeated last partition) scans 64 entries of a group of size 2.
        assert!(close(per_level[1].total, 4.0));
        assert!(
            close(per_level[2].scan, 64.0 * 2.0 / 16.0),
            "{:?}",
            per_level[2]
        );
        let total: CostBreakdown = per_level.iter().sum();
        assert!(close(total.total, layout_cost(&p, &layout, &w)));
        assert!(close(
            total.total,
            total.insert + total.point + total.scan + total.update
        ));
        // An empty layout is all whole rows.
        let row = vec![vec![vec![0, 1]]];
        assert!(close(layout_cost(&p, &[], &w), layout_cost(&p, &row, &w)));
    }

    #[test]
    fn validation_rejects_bad_parameters() {
        assert!(ModelParams::uniform(3, 2.0, 8.0, 4.0).validate().is_ok());
        assert!(ModelParams::uniform(0, 2.0, 8.0, 4.0).validate().is_err());
        assert!(ModelParams::uniform(3, 0.0, 8.0, 4.0).validate().is_err());
        assert!(
            ModelParams::uniform(3, 2.0, f64::NAN, 4.0)
                .validate()
                .is_err()
        );
        let mut p = ModelParams::uniform(3, 2.0, 8.0, 4.0);
        p.column_bytes.pop();
        assert!(p.validate().is_err());
    }
}
