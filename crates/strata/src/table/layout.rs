//! Table layouts: for each level, a partition of the value columns into
//! column groups (seed 001, LASER).
//!
//! Level 0 (and the memtables) always holds whole rows. Each deeper level
//! divides the value columns into groups, each stored as its own sorted
//! run; a group of level `i` must lie inside one group of level `i - 1`
//! (*containment*), so data only ever splits as compaction moves it down.
//! A layout describes as many levels as the table's tree has; [`presets`]
//! build the paper's named designs.
//!
//! [`presets`]: TableLayout::row

use std::fmt;

use super::schema::Schema;
use crate::error::{Error, Result};

/// A column group: value-column numbers, ascending.
pub type Group = Vec<usize>;

/// A checked layout: `levels[i]` partitions the value columns of level `i`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableLayout {
    levels: Vec<Vec<Group>>,
}

fn invalid(why: impl fmt::Display) -> Error {
    Error::InvalidArgument(format!("layout: {why}"))
}

impl TableLayout {
    /// Checks `levels` (one partition per level, level 0 first) for a table
    /// with `columns` value columns: level 0 is one group of every column,
    /// every level partitions `0..columns` into non-empty groups, and every
    /// group lies inside one group of the level above.
    pub fn new(levels: Vec<Vec<Group>>, columns: usize) -> Result<TableLayout> {
        if levels.is_empty() {
            return Err(invalid("no levels"));
        }
        let mut levels = levels;
        for groups in &mut levels {
            for g in groups.iter_mut() {
                g.sort_unstable();
            }
            groups.sort();
        }
        let all: Group = (0..columns).collect();
        if columns > 0 && levels[0] != vec![all.clone()] {
            return Err(invalid("level 0 must be one group of every column"));
        }
        for (l, groups) in levels.iter().enumerate() {
            let mut seen = vec![false; columns];
            for g in groups {
                if g.is_empty() && columns > 0 {
                    return Err(invalid(format!("level {l} has an empty group")));
                }
                for &c in g {
                    if c >= columns {
                        return Err(invalid(format!(
                            "level {l} names column {c}; the table has {columns} value columns"
                        )));
                    }
                    if std::mem::replace(&mut seen[c], true) {
                        return Err(invalid(format!("level {l} puts column {c} in two groups")));
                    }
                }
            }
            if let Some(c) = seen.iter().position(|s| !s) {
                return Err(invalid(format!("level {l} leaves column {c} out")));
            }
            if l > 0 {
                for g in groups {
                    let inside = levels[l - 1]
                        .iter()
                        .any(|p| g.iter().all(|c| p.binary_search(c).is_ok()));
                    if !inside {
                        return Err(invalid(format!(
                            "group {g:?} of level {l} is not inside one group of level {} \
                             (containment: data only splits as it moves down)",
                            l - 1
                        )));
                    }
                }
            }
        }
        Ok(TableLayout { levels })
    }

    /// Pure row: every level one group.
    pub fn row(columns: usize, num_levels: usize) -> TableLayout {
        Self::uniform(columns, num_levels, 0, columns.max(1))
    }

    /// Pure column below level 0: one group per column.
    pub fn column(columns: usize, num_levels: usize) -> TableLayout {
        Self::uniform(columns, num_levels, 1, 1)
    }

    /// Groups of `size` consecutive columns below level 0 (the last group
    /// may be smaller).
    pub fn fixed(columns: usize, num_levels: usize, size: usize) -> Result<TableLayout> {
        if size == 0 {
            return Err(invalid("a group size must be at least 1"));
        }
        Ok(Self::uniform(columns, num_levels, 1, size))
    }

    /// Row on top, columnar at the bottom: whole rows on levels above
    /// `columnar_from`, one group per column from it down (the paper's
    /// "HTAP-simple").
    pub fn row_then_column(
        columns: usize,
        num_levels: usize,
        columnar_from: usize,
    ) -> Result<TableLayout> {
        if columnar_from == 0 {
            return Err(invalid("level 0 always holds whole rows"));
        }
        Ok(Self::uniform(columns, num_levels, columnar_from, 1))
    }

    fn uniform(columns: usize, num_levels: usize, split_from: usize, size: usize) -> TableLayout {
        let whole: Vec<Group> = vec![(0..columns).collect()];
        let split: Vec<Group> = (0..columns)
            .collect::<Vec<_>>()
            .chunks(size.max(1))
            .map(<[usize]>::to_vec)
            .collect();
        let levels = (0..num_levels.max(1))
            .map(|l| {
                if l < split_from || columns == 0 {
                    whole.clone()
                } else {
                    split.clone()
                }
            })
            .collect();
        TableLayout { levels }
    }

    /// Builds a named preset for `schema`: `row`, `column`, `groups:N`
    /// (fixed groups of N columns) or `row-then-column:L` (columnar from
    /// level L).
    pub fn preset(name: &str, schema: &Schema, num_levels: usize) -> Result<TableLayout> {
        let n = schema.num_values();
        let arg = |s: &str| -> Result<usize> {
            s.parse()
                .map_err(|_| invalid(format!("{name:?}: {s:?} is not a number")))
        };
        match name.split_once(':') {
            None if name == "row" => Ok(Self::row(n, num_levels)),
            None if name == "column" => Ok(Self::column(n, num_levels)),
            Some(("groups", k)) => Self::fixed(n, num_levels, arg(k)?),
            Some(("row-then-column", l)) => Self::row_then_column(n, num_levels, arg(l)?),
            _ => Err(invalid(format!(
                "unknown preset {name:?}; the presets are row, column, groups:N, row-then-column:L"
            ))),
        }
    }

    /// Parses an explicit layout for `schema`: levels from 1 down separated
    /// by `;`, groups by `|`, column names by `,`. Example:
    /// `a,b,c ; a,b | c ; a | b | c`. Missing levels repeat the last one
    /// given; a preset name is accepted too.
    pub fn parse(text: &str, schema: &Schema, num_levels: usize) -> Result<TableLayout> {
        let text = text.trim();
        if !text.contains([';', '|', ',']) && !schema.columns().iter().any(|c| c.name == text) {
            return Self::preset(text, schema, num_levels);
        }
        let n = schema.num_values();
        let mut levels: Vec<Vec<Group>> = vec![vec![(0..n).collect()]];
        for level in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let mut groups = Vec::new();
            for g in level.split('|') {
                let mut group = Vec::new();
                for name in g.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    let i = schema.index_of(name)?;
                    let v = schema.value_number(i).ok_or_else(|| {
                        invalid(format!(
                            "{name:?} is a key column; layouts place value columns"
                        ))
                    })?;
                    group.push(v);
                }
                groups.push(group);
            }
            levels.push(groups);
        }
        if levels.len() > num_levels {
            return Err(invalid(format!(
                "{} levels given; the table's tree has {num_levels}",
                levels.len()
            )));
        }
        while levels.len() < num_levels {
            let last = levels.last().cloned().unwrap_or_default();
            levels.push(last);
        }
        TableLayout::new(levels, n)
    }

    /// Number of levels described.
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// The groups of `level` (levels past the last described repeat it).
    pub fn groups(&self, level: usize) -> &[Group] {
        &self.levels[level.min(self.levels.len() - 1)]
    }

    /// Every level's groups, level 0 first.
    pub fn levels(&self) -> &[Vec<Group>] {
        &self.levels
    }

    /// The index among the groups of `level - 1` of the group that holds
    /// `group` of `level` (containment: there is one for a group of the
    /// layout).
    pub(crate) fn parent_of(&self, level: usize, group: &[usize]) -> Option<usize> {
        self.groups(level - 1)
            .iter()
            .position(|p| group.iter().all(|c| p.binary_search(c).is_ok()))
    }

    /// The group of `level` that holds value column `v`.
    pub fn group_of(&self, level: usize, v: usize) -> Option<&Group> {
        self.groups(level)
            .iter()
            .find(|g| g.binary_search(&v).is_ok())
    }

    /// The layout with `num_levels` levels: extra levels repeat the last,
    /// surplus ones are dropped.
    pub fn with_levels(&self, num_levels: usize) -> TableLayout {
        let levels = (0..num_levels.max(1))
            .map(|l| self.groups(l).to_vec())
            .collect();
        TableLayout { levels }
    }

    /// Renders the layout with column names, one level a line.
    pub fn describe(&self, schema: &Schema) -> String {
        let mut out = String::new();
        for (l, groups) in self.levels.iter().enumerate() {
            out.push_str(&format!("L{l}: {}\n", groups_text(groups, schema)));
        }
        out
    }

    /// The layout on one line, levels alike run together and numbered
    /// names as ranges: `L0-L2: <a1..a30>; L3-L7: <a1..a27> <a28..a30>`.
    pub fn summary(&self, schema: &Schema) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut start = 0;
        for l in 1..=self.levels.len() {
            if l < self.levels.len() && self.levels[l] == self.levels[start] {
                continue;
            }
            let span = if l - 1 == start {
                format!("L{start}")
            } else {
                format!("L{start}-L{}", l - 1)
            };
            parts.push(format!(
                "{span}: {}",
                groups_text(&self.levels[start], schema)
            ));
            start = l;
        }
        parts.join("; ")
    }

    /// The layout as text [`TableLayout::parse`] reads back (levels from 1
    /// down, by column name).
    pub fn to_text(&self, schema: &Schema) -> String {
        self.levels[1.min(self.levels.len() - 1)..]
            .iter()
            .map(|groups| {
                groups
                    .iter()
                    .map(|g| {
                        g.iter()
                            .map(|&v| schema.value_column(v).name.as_str())
                            .collect::<Vec<_>>()
                            .join(",")
                    })
                    .collect::<Vec<_>>()
                    .join(" | ")
            })
            .collect::<Vec<_>>()
            .join(" ; ")
    }
}

/// A level's groups by column name: `<a1..a27> <a28,a29>`.
fn groups_text(groups: &[Group], schema: &Schema) -> String {
    groups
        .iter()
        .map(|g| {
            let names: Vec<&str> = g
                .iter()
                .map(|&v| schema.value_column(v).name.as_str())
                .collect();
            format!("<{}>", compress_names(&names))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `a1, a2, a3, b` → `a1..a3, b` where names share a prefix and number on.
fn compress_names(names: &[&str]) -> String {
    fn split(n: &str) -> Option<(&str, u64)> {
        let digits = n.len() - n.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 || digits == n.len() {
            return None;
        }
        let (p, d) = n.split_at(n.len() - digits);
        Some((p, d.parse().ok()?))
    }
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < names.len() {
        let mut j = i;
        if let Some((p, start)) = split(names[i]) {
            while j + 1 < names.len()
                && split(names[j + 1]) == Some((p, start + (j + 1 - i) as u64))
            {
                j += 1;
            }
        }
        if j >= i + 2 {
            out.push(format!("{}..{}", names[i], names[j]));
        } else {
            out.extend(names[i..=j].iter().map(|s| s.to_string()));
        }
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::schema::{Column, ColumnType};

    fn schema(n: usize) -> Schema {
        let mut cols = vec![Column::new("k", ColumnType::Int64)];
        cols.extend((1..=n).map(|i| Column::new(format!("c{i}"), ColumnType::Int32)));
        Schema::new(cols, &["k"]).expect("schema")
    }

    #[test]
    fn presets_partition_every_level_and_keep_containment() {
        for l in [
            TableLayout::row(30, 8),
            TableLayout::column(30, 8),
            TableLayout::fixed(30, 8, 6).expect("fixed"),
            TableLayout::row_then_column(30, 8, 6).expect("htap"),
        ] {
            TableLayout::new(l.levels().to_vec(), 30).expect("checked");
            assert_eq!(l.num_levels(), 8);
            assert_eq!(l.groups(0).len(), 1);
        }
        assert_eq!(TableLayout::column(30, 8).groups(3).len(), 30);
        assert_eq!(TableLayout::fixed(30, 8, 7).expect("f").groups(1).len(), 5);
        let h = TableLayout::row_then_column(30, 8, 6).expect("htap");
        assert_eq!(h.groups(5).len(), 1);
        assert_eq!(h.groups(6).len(), 30);
    }

    #[test]
    fn containment_and_partition_errors_name_the_problem() {
        let err = |levels: Vec<Vec<Group>>| {
            TableLayout::new(levels, 4)
                .expect_err("refused")
                .to_string()
        };
        let all = vec![vec![0, 1, 2, 3]];
        assert!(
            err(vec![
                all.clone(),
                vec![vec![0, 1], vec![2, 3]],
                vec![vec![1, 2], vec![0], vec![3]]
            ])
            .contains("containment")
        );
        assert!(err(vec![all.clone(), vec![vec![0, 1], vec![2]]]).contains("leaves column 3 out"));
        assert!(err(vec![all.clone(), vec![vec![0, 1], vec![1, 2, 3]]]).contains("two groups"));
        assert!(err(vec![vec![vec![0, 1], vec![2, 3]]]).contains("level 0"));
        assert!(err(vec![all, vec![vec![0, 1, 2, 3, 9]]]).contains("names column 9"));
    }

    #[test]
    fn text_layouts_parse_by_name_and_round_trip() {
        let s = schema(4);
        let l = TableLayout::parse("c1,c2,c3,c4 ; c1,c2 | c3,c4 ; c1 | c2 | c3,c4", &s, 5)
            .expect("parse");
        assert_eq!(l.num_levels(), 5);
        assert_eq!(l.groups(4), l.groups(3));
        assert_eq!(l.groups(2), &[vec![0, 1], vec![2, 3]]);
        assert_eq!(l.groups(3), &[vec![0], vec![1], vec![2, 3]]);
        let back = TableLayout::parse(&l.to_text(&s), &s, 5).expect("reparse");
        assert_eq!(back, l);
        assert!(TableLayout::parse("k | c1,c2,c3,c4", &s, 5).is_err());
        assert!(TableLayout::parse("nope", &s, 5).is_err());
        assert_eq!(
            TableLayout::parse("groups:2", &s, 3)
                .expect("preset")
                .groups(1)
                .len(),
            2
        );
    }

    #[test]
    fn summary_runs_alike_levels_together() {
        let s = schema(3);
        let l = TableLayout::parse("row-then-column:2", &s, 5).expect("preset");
        assert_eq!(l.summary(&s), "L0-L1: <c1..c3>; L2-L4: <c1> <c2> <c3>");
        let l = TableLayout::parse("c1,c2 | c3 ; c1 | c2 | c3", &s, 4).expect("explicit");
        assert_eq!(
            l.summary(&s),
            "L0: <c1..c3>; L1: <c1,c2> <c3>; L2-L3: <c1> <c2> <c3>"
        );
    }

    #[test]
    fn describe_compresses_runs_of_numbered_names() {
        let s = schema(30);
        let d = TableLayout::fixed(30, 2, 15).expect("f").describe(&s);
        assert!(d.contains("<c1..c15> <c16..c30>"), "{d}");
    }
}
