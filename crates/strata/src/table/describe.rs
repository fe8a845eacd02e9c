//! What a table reports of itself: its description (schema, layout, what
//! each level stores), its counters and the layout advisor's proposal.

use std::fmt;

use crate::table::cost::CostBreakdown;
use crate::table::layout::TableLayout;
use crate::table::options::TableOptions;
use crate::table::schema::Schema;

/// What the layout advisor proposes, with the cost model's prediction for
/// the current and the proposed layout under the recorded workload.
#[derive(Clone, Debug)]
pub struct LayoutAdvice {
    /// The layout in use.
    pub current: TableLayout,
    /// Its predicted cost (block I/Os of the recorded workload).
    pub current_cost: CostBreakdown,
    /// The advisor's layout.
    pub proposed: TableLayout,
    /// Its predicted cost.
    pub proposed_cost: CostBreakdown,
}

impl LayoutAdvice {
    /// The fraction of the current cost the proposal saves (0 when none).
    pub fn gain(&self) -> f64 {
        if self.current_cost.total <= 0.0 {
            return 0.0;
        }
        ((self.current_cost.total - self.proposed_cost.total) / self.current_cost.total).max(0.0)
    }
}

/// A table's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableStatistics {
    /// Point reads.
    pub gets: u64,
    /// Table files the point reads probed.
    pub get_files: u64,
    /// Blocks the point reads read.
    pub get_blocks: u64,
    /// Scans finished.
    pub scans: u64,
    /// Rows the scans resolved.
    pub scan_rows_read: u64,
    /// Rows the scans returned.
    pub scan_rows_returned: u64,
    /// Column-group blocks the scans read.
    pub scan_blocks_read: u64,
    /// Column-group blocks the scans skipped by their statistics.
    pub scan_blocks_skipped: u64,
    /// Rows inserted or upserted.
    pub rows_written: u64,
    /// Partial updates.
    pub updates: u64,
    /// Deletes.
    pub deletes: u64,
    /// Layout changes (by `set_layout` or the automatic advisor).
    pub layout_changes: u64,
    /// Of those, the automatic layout's.
    pub auto_switches: u64,
}

/// One level of a table as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelDescription {
    /// The level.
    pub level: usize,
    /// Per column group with files on the level.
    pub groups: Vec<GroupDescription>,
}

/// One column group's run on one level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupDescription {
    /// Its columns (names).
    pub columns: Vec<String>,
    /// Its files.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Per string column (name), the files that store it as codes into a
    /// dictionary; columns no file does are left out.
    pub dictionary_files: Vec<(String, usize)>,
}

/// What `describe` shows of a table.
#[derive(Clone, Debug)]
pub struct TableDescription {
    /// The table's name.
    pub name: String,
    /// Its schema.
    pub schema: Schema,
    /// Its layout.
    pub layout: TableLayout,
    /// Its options.
    pub options: TableOptions,
    /// What each level holds.
    pub levels: Vec<LevelDescription>,
    /// Its counters.
    pub stats: TableStatistics,
    /// Its secondary indexes (details: `Table::describe_index`).
    pub indexes: Vec<crate::index::IndexSpec>,
}

impl fmt::Display for TableDescription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "table {}", self.name)?;
        writeln!(f, "schema: {}", self.schema)?;
        writeln!(f, "layout:")?;
        for line in self.layout.describe(&self.schema).lines() {
            writeln!(f, "  {line}")?;
        }
        let r = self.options.max_distinct_ratio;
        if r > 0.0 {
            writeln!(
                f,
                "dictionaries: a string column of a columnar file gets one when at most {}% of its values there are distinct",
                r * 100.0
            )?;
        } else {
            writeln!(f, "dictionaries: off")?;
        }
        for i in &self.indexes {
            write!(
                f,
                "index {} on {}: {}, {}",
                i.name, i.column, i.kind, i.consistency
            )?;
            if !i.covering.is_empty() {
                write!(f, ", covering {}", i.covering.join(","))?;
            }
            writeln!(f)?;
        }
        writeln!(f, "stored:")?;
        for l in &self.levels {
            for g in &l.groups {
                write!(
                    f,
                    "  L{}: <{}> {} files, {} bytes",
                    l.level,
                    g.columns.join(","),
                    g.files,
                    g.bytes
                )?;
                for (c, n) in &g.dictionary_files {
                    write!(f, ", {c} dictionary-encoded in {n}")?;
                }
                writeln!(f)?;
            }
        }
        let s = &self.stats;
        writeln!(
            f,
            "counters: {} rows written, {} updates, {} deletes, {} gets ({} files, {} blocks), \
             {} scans ({} rows read, {} returned, {} blocks read, {} skipped), {} layout changes",
            s.rows_written,
            s.updates,
            s.deletes,
            s.gets,
            s.get_files,
            s.get_blocks,
            s.scans,
            s.scan_rows_read,
            s.scan_rows_returned,
            s.scan_blocks_read,
            s.scan_blocks_skipped,
            s.layout_changes
        )
    }
}
