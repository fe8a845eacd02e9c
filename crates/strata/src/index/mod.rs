//! Secondary indexes on table columns (seed 000, "Are Joins over
//! LSM-trees Ready").
//!
//! An index maps a column's values to the primary keys of the rows holding
//! them. Each index lives in its own keyspace, `__index/<table>/<index>`,
//! and every table write puts its index entries in the same write batch as
//! the row, so the log recovers both or neither.
//!
//! The study's configuration space, all of it selectable per index:
//!
//! | kind | stored as | a write | a lookup |
//! |---|---|---|---|
//! | [`IndexKind::Eager`] | value → posting list | reads the list, changes it, writes it back | one get |
//! | [`IndexKind::Lazy`] | value → add/remove operands | one blind merge operand | gathers operands from every level |
//! | [`IndexKind::Composite`] | value ‖ primary key → payload | one blind put or delete | a prefix range |
//!
//! and per index a [`Consistency`]: `Synchronous` reads the old row on each
//! update and removes its stale entry; `Validation` writes blindly and has
//! each lookup check the primary keys it finds against the table. A
//! covering index stores chosen columns in its entries so that lookups
//! under synchronous consistency need not read the table.
//!
//! ```text
//!   index/mod.rs      definitions (IndexSpec, IndexRecord), the open set
//!   index/codec.rs    key, posting-list, operand and payload encodings
//!   index/maintain.rs the entries a table write adds and removes
//!   index/lookup.rs   equality and range lookups, validation
//!   index/build.rs    building an index over existing rows
//!   index/scan.rs     table scans that read through an index
//!   index/api.rs      the Table methods
//! ```

mod api;
mod build;
pub(crate) mod codec;
pub(crate) mod lookup;
pub(crate) mod maintain;
pub(crate) mod scan;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

pub use api::{IndexDescription, IndexQuery};

use crate::db::{DbCore, Keyspace};
use crate::error::{Error, Result};
use crate::key::SeqNo;
use crate::table::{ColumnType, Schema};

/// How an index stores its entries (the study's three index types).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexKind {
    /// One posting list per value, read and rewritten on every change.
    Eager,
    /// Posting-list changes written as merge operands, merged on read and
    /// in compaction.
    Lazy,
    /// One key per row: the value followed by the primary key.
    Composite,
}

/// How an index stays consistent with its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Consistency {
    /// Each update reads the old row and removes its stale entry.
    Synchronous,
    /// Writes are blind; lookups check each primary key against the table
    /// and drop the stale ones.
    Validation,
}

impl IndexKind {
    /// The kind's name: `eager`, `lazy` or `composite`.
    pub fn name(self) -> &'static str {
        match self {
            IndexKind::Eager => "eager",
            IndexKind::Lazy => "lazy",
            IndexKind::Composite => "composite",
        }
    }

    /// Parses a kind's name.
    pub fn parse(s: &str) -> Result<IndexKind> {
        match s {
            "eager" => Ok(IndexKind::Eager),
            "lazy" => Ok(IndexKind::Lazy),
            "composite" => Ok(IndexKind::Composite),
            _ => Err(Error::InvalidArgument(format!(
                "unknown index kind {s:?}: eager, lazy or composite"
            ))),
        }
    }
}

impl Consistency {
    /// The strategy's name: `synchronous` or `validation`.
    pub fn name(self) -> &'static str {
        match self {
            Consistency::Synchronous => "synchronous",
            Consistency::Validation => "validation",
        }
    }

    /// Parses a strategy's name (`sync` is accepted for `synchronous`).
    pub fn parse(s: &str) -> Result<Consistency> {
        match s {
            "synchronous" | "sync" => Ok(Consistency::Synchronous),
            "validation" => Ok(Consistency::Validation),
            _ => Err(Error::InvalidArgument(format!(
                "unknown index consistency {s:?}: synchronous or validation"
            ))),
        }
    }
}

impl fmt::Display for IndexKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Consistency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a user declares to create an index.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexSpec {
    /// The index's name, unique within its table.
    pub name: String,
    /// The indexed column.
    pub column: String,
    /// How entries are stored (default eager).
    pub kind: IndexKind,
    /// How the index stays consistent (default synchronous).
    pub consistency: Consistency,
    /// Columns carried in the entries (a covering index); empty for none.
    pub covering: Vec<String>,
}

impl IndexSpec {
    /// An eager, synchronous, non-covering index named `name` on `column`.
    pub fn new(name: impl Into<String>, column: impl Into<String>) -> IndexSpec {
        IndexSpec {
            name: name.into(),
            column: column.into(),
            kind: IndexKind::Eager,
            consistency: Consistency::Synchronous,
            covering: Vec::new(),
        }
    }

    /// The same index with `kind`.
    pub fn kind(mut self, kind: IndexKind) -> IndexSpec {
        self.kind = kind;
        self
    }

    /// The same index with `consistency`.
    pub fn consistency(mut self, consistency: Consistency) -> IndexSpec {
        self.consistency = consistency;
        self
    }

    /// The same index carrying `columns` in its entries.
    pub fn covering(mut self, columns: &[&str]) -> IndexSpec {
        self.covering = columns.iter().map(|c| (*c).to_string()).collect();
        self
    }
}

/// An index's durable definition, kept in its table's catalog record
/// (`docs/format/catalog.md`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct IndexRecord {
    pub id: u32,
    pub name: String,
    pub column: String,
    pub kind: String,
    pub consistency: String,
    #[serde(default)]
    pub covering: Vec<String>,
    /// Set while the index is being built over existing rows: writes
    /// maintain it, lookups do not use it yet.
    #[serde(default)]
    pub building: bool,
    /// The sequence number from which every row is in the index (set when
    /// its build finished): a read at an older snapshot sees rows whose
    /// entries the build wrote later, so lookups refuse it there. Records
    /// from before this field read as 0.
    #[serde(default)]
    pub complete_at: u64,
}

impl IndexRecord {
    pub(crate) fn spec(&self) -> Result<IndexSpec> {
        Ok(IndexSpec {
            name: self.name.clone(),
            column: self.column.clone(),
            kind: IndexKind::parse(&self.kind)?,
            consistency: Consistency::parse(&self.consistency)?,
            covering: self.covering.clone(),
        })
    }
}

/// Checks `spec` against `schema` and the table's other indexes.
pub(crate) fn check_spec(spec: &IndexSpec, schema: &Schema, others: &[IndexRecord]) -> Result<()> {
    if spec.name.is_empty() || spec.name.len() > 200 || spec.name.chars().any(char::is_control) {
        return Err(Error::InvalidArgument(format!(
            "index name {:?}: names are 1 to 200 bytes without control characters",
            spec.name
        )));
    }
    if others.iter().any(|r| r.name == spec.name) {
        return Err(Error::InvalidArgument(format!(
            "the table has an index named {:?} already",
            spec.name
        )));
    }
    schema.index_of(&spec.column)?;
    let mut seen = std::collections::HashSet::new();
    for c in &spec.covering {
        let i = schema.index_of(c)?;
        if c == &spec.column || schema.is_key(i) {
            return Err(Error::InvalidArgument(format!(
                "covered column {c:?} is the indexed column or part of the primary key, \
                 which every entry holds already"
            )));
        }
        if !seen.insert(c) {
            return Err(Error::InvalidArgument(format!(
                "covered column {c:?} is named twice"
            )));
        }
    }
    Ok(())
}

/// The options of an index keyspace: its table's, with the default layout
/// (index entries are plain key-value pairs).
pub(crate) fn keyspace_options(
    table: &crate::table::TableOptions,
) -> crate::options::KeyspaceOptions {
    table.keyspace_options()
}

/// The prefix of index keyspaces' names.
pub(crate) const INDEX_KEYSPACE_PREFIX: &str = "__index/";

/// The keyspace name of index `index` of table `table`.
pub(crate) fn keyspace_name(table: u64, index: u32) -> String {
    format!("{INDEX_KEYSPACE_PREFIX}{table}/{index}")
}

/// Whether keyspace `name` belongs to an index of table `table`.
pub(crate) fn is_index_keyspace_of(name: &str, table: u64) -> bool {
    name.strip_prefix(INDEX_KEYSPACE_PREFIX)
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(t, _)| t == table.to_string())
}

/// One open index.
pub(crate) struct Index {
    pub id: u32,
    pub name: String,
    pub kind: IndexKind,
    pub consistency: Consistency,
    /// The indexed column (schema position) and its type.
    pub column: usize,
    pub ty: ColumnType,
    /// The covered columns (schema positions).
    pub covering: Vec<usize>,
    pub keyspace: Keyspace,
    /// [`IndexRecord::complete_at`], or [`BUILDING`] while being built.
    complete_at: AtomicU64,
}

/// [`Index::complete_at`] of an index being built.
const BUILDING: u64 = u64::MAX;

impl Index {
    pub(crate) fn open(
        core: &DbCore,
        table_id: u64,
        schema: &Schema,
        record: &IndexRecord,
        opts: crate::options::KeyspaceOptions,
    ) -> Result<Index> {
        let spec = record.spec()?;
        let column = schema.index_of(&spec.column)?;
        let covering = spec
            .covering
            .iter()
            .map(|c| schema.index_of(c))
            .collect::<Result<Vec<_>>>()?;
        let mut opts = opts;
        if spec.kind == IndexKind::Lazy {
            opts.merge_operator = Some(Arc::new(codec::PostingMerge));
        }
        let keyspace = core.system_keyspace(&keyspace_name(table_id, record.id), opts)?;
        Ok(Index {
            id: record.id,
            name: spec.name,
            kind: spec.kind,
            consistency: spec.consistency,
            column,
            ty: schema.columns()[column].ty,
            covering,
            keyspace,
            complete_at: AtomicU64::new(if record.building {
                BUILDING
            } else {
                record.complete_at
            }),
        })
    }

    /// Whether the index is still being built (writes maintain it; lookups
    /// refuse it).
    pub(crate) fn is_building(&self) -> bool {
        self.complete_at.load(Ordering::Acquire) == BUILDING
    }

    /// Whether a read at `snapshot` finds every row through the index: it
    /// is built, and was complete at or before `snapshot`.
    pub(crate) fn serves(&self, snapshot: SeqNo) -> bool {
        snapshot.0 >= self.complete_at.load(Ordering::Acquire)
    }

    /// Marks the build finished: complete from `seqno` on.
    pub(crate) fn set_built(&self, seqno: SeqNo) {
        self.complete_at.store(seqno.0, Ordering::Release);
    }

    /// Fails with a clear error unless the index serves reads at
    /// `snapshot` ([`Self::serves`]).
    pub(crate) fn check_serves(&self, snapshot: SeqNo) -> Result<()> {
        if self.is_building() {
            return Err(Error::InvalidArgument(format!(
                "index {:?} is still being built; call create_index again to finish it",
                self.name
            )));
        }
        if !self.serves(snapshot) {
            return Err(Error::InvalidArgument(format!(
                "index {:?} was completed at sequence number {}, after the snapshot ({}); \
                 read the table at that snapshot instead",
                self.name,
                self.complete_at.load(Ordering::Acquire),
                snapshot.0
            )));
        }
        Ok(())
    }

    /// Whether a write must read the old row to maintain this index.
    pub(crate) fn reads_old_rows(&self) -> bool {
        self.consistency == Consistency::Synchronous
    }

    /// Whether an entry gives back column `c`'s stored value: a covered
    /// column (its payload keeps every bit), or the indexed column unless
    /// it is a double, whose entry key holds -0.0 as 0.0 and every NaN as
    /// one (the key codec's canonical form) and so does not say which the
    /// row holds.
    pub(crate) fn entry_holds(&self, schema: &Schema, c: usize) -> bool {
        self.covering.contains(&c)
            || (c == self.column && schema.columns()[c].ty != ColumnType::Float64)
    }

    /// The covered columns' types.
    pub(crate) fn covered_types(&self, schema: &Schema) -> Vec<ColumnType> {
        self.covering
            .iter()
            .map(|&c| schema.columns()[c].ty)
            .collect()
    }
}

/// A table's open indexes. Replaced whole when one is created or dropped.
#[derive(Default)]
pub(crate) struct IndexSet {
    pub indexes: Vec<Arc<Index>>,
}

impl IndexSet {
    pub(crate) fn is_empty(&self) -> bool {
        self.indexes.is_empty()
    }

    /// Whether table writes must be serialised while they maintain the
    /// indexes: a synchronous index reads the old row before writing, an
    /// eager one reads its posting list, and a building one must not
    /// interleave with the builder's chunks.
    pub(crate) fn needs_lock(&self) -> bool {
        self.indexes
            .iter()
            .any(|i| i.kind == IndexKind::Eager || i.reads_old_rows() || i.is_building())
    }

    /// The schema positions of every column some index reads: indexed and
    /// covered columns, sorted and without repeats.
    pub(crate) fn relevant_columns(&self) -> Vec<usize> {
        let mut out: Vec<usize> = self
            .indexes
            .iter()
            .flat_map(|i| std::iter::once(i.column).chain(i.covering.iter().copied()))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    pub(crate) fn find(&self, name: &str) -> Result<&Arc<Index>> {
        self.indexes
            .iter()
            .find(|i| i.name == name)
            .ok_or_else(|| Error::InvalidArgument(format!("the table has no index named {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Column;

    #[test]
    fn specs_are_checked_against_the_schema() {
        let schema = Schema::new(
            vec![
                Column::new("id", ColumnType::Int64),
                Column::nullable("a", ColumnType::Utf8),
                Column::nullable("b", ColumnType::Int32),
            ],
            &["id"],
        )
        .expect("schema");
        assert!(check_spec(&IndexSpec::new("i", "a"), &schema, &[]).is_ok());
        assert!(check_spec(&IndexSpec::new("", "a"), &schema, &[]).is_err());
        assert!(check_spec(&IndexSpec::new("i", "zz"), &schema, &[]).is_err());
        assert!(check_spec(&IndexSpec::new("i", "a").covering(&["a"]), &schema, &[]).is_err());
        assert!(check_spec(&IndexSpec::new("i", "a").covering(&["id"]), &schema, &[]).is_err());
        assert!(
            check_spec(
                &IndexSpec::new("i", "a").covering(&["b", "b"]),
                &schema,
                &[]
            )
            .is_err()
        );
        let existing = IndexRecord {
            id: 1,
            name: "i".into(),
            column: "b".into(),
            kind: "lazy".into(),
            consistency: "validation".into(),
            covering: vec![],
            building: false,
            complete_at: 0,
        };
        assert!(
            check_spec(
                &IndexSpec::new("i", "a"),
                &schema,
                std::slice::from_ref(&existing)
            )
            .is_err()
        );
        assert_eq!(
            existing.spec().expect("spec"),
            IndexSpec::new("i", "b")
                .kind(IndexKind::Lazy)
                .consistency(Consistency::Validation)
        );
        assert!(IndexKind::parse("hash").is_err());
        assert!(Consistency::parse("eventual").is_err());
        assert!(is_index_keyspace_of(&keyspace_name(12, 3), 12));
        assert!(!is_index_keyspace_of(&keyspace_name(12, 3), 1));
        assert!(!is_index_keyspace_of("__table/12", 12));
    }
}
