//! Strata: an embedded LSM-tree storage engine for real-time analytics.

pub mod cache;
pub mod coding;
pub mod error;
pub mod iter;
pub mod key;
pub mod log;
pub mod sst;
pub mod stats;
pub mod vfs;
pub mod vfs_mem;

pub use error::{Error, Result};
pub mod batch;
pub mod compaction;
pub mod db;
pub mod db_iter;
pub mod filename;
pub mod lookup;
pub mod manifest;
pub mod memtable;
pub mod merge;
pub mod options;
pub mod version;

pub use batch::WriteBatch;
pub use db::{Db, DbStats, Keyspace, KeyspaceStats, RecoveryReport, Snapshot};
pub use db_iter::DbIter;
pub use memtable::MemTableKind;
pub use merge::MergeOperator;
pub use options::{KeyspaceOptions, Options, ReadOptions, WriteOptions};
