//! Strata: an embedded LSM-tree storage engine for real-time analytics.
//!
//! ```
//! use strata::{Db, Options, ReadOptions, WriteBatch, WriteOptions, KeyspaceOptions};
//!
//! let dir = tempfile::tempdir()?;
//! let db = Db::open(dir.path(), Options::default())?;
//! db.put(b"user:1", b"ada")?;
//! let index = db.keyspace("index", KeyspaceOptions::default())?;
//!
//! // One atomic batch across keyspaces, fsynced before it returns.
//! let mut batch = WriteBatch::new();
//! batch.put(b"user:2", b"grace");
//! batch.put_in(index.id(), b"name:grace", b"user:2");
//! db.write(WriteOptions { sync: true, ..Default::default() }, batch)?;
//!
//! let snapshot = db.snapshot();
//! db.delete(b"user:1")?;
//! assert_eq!(db.default_keyspace().get_at(b"user:1", &snapshot)?, Some(b"ada".to_vec()));
//!
//! let mut it = db.default_keyspace().iter(ReadOptions::default())?;
//! it.seek_to_first();
//! assert_eq!(it.key(), b"user:2");
//! db.close()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

// The public surface: what an application or an extension (a merge
// operator, a layout, a table format, a file system) names.
pub mod ids;
pub mod key;
pub mod layout;
pub mod merge;
pub mod options;
pub mod stats;
pub mod table;
pub mod table_format;
pub mod vfs;

mod database;
mod db;
mod db_iter;
mod error;
mod stitch;

/// Declares the engine's internal modules: crate-private, or public (and
/// hidden from the documentation) with the `testing` feature, for the
/// stress tool, the fuzzers, the benchmarks and the integration tests,
/// which reach the log, table and manifest formats directly. Nothing in
/// them is a stable interface.
macro_rules! internal_modules {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "testing")]
        #[doc(hidden)]
        #[allow(missing_docs)]
        pub mod $name;
        #[cfg(not(feature = "testing"))]
        #[allow(dead_code, unused_imports)]
        mod $name;
    )*};
}

internal_modules!(
    batch,
    cache,
    coding,
    compaction,
    filename,
    gate,
    iter,
    level_filter,
    log,
    lookup,
    manifest,
    memtable,
    recovery,
    retained,
    sst,
    version,
    vfs_fault,
    vfs_mem,
);

pub use arrow_array;
pub use arrow_schema;
pub use batch::WriteBatch;
pub use cache::BlockCache;
pub use database::Db;
pub use db::{DEFAULT_KEYSPACE, DbStats, Keyspace, KeyspaceStats, Snapshot};
pub use db_iter::DbIter;
pub use error::{Error, Result};
pub use ids::{FileNumber, KeyspaceId, Level};
pub use iter::InternalIterator;
pub use key::SeqNo;
pub use layout::{GroupPlan, GroupSpec, Layout, TieredCompressionLayout, UniformLayout};
pub use memtable::{
    CappedPrefix, FixedPrefix, FnPrefix, MemTableKind, MemTableOptions, PrefixExtractor,
};
pub use merge::MergeOperator;
pub use options::{KeyspaceOptions, Options, ReadOptions, WriteOptions};
pub use recovery::{DbId, LostTable, RecoveryReport, WalDamage, WalRecoveryMode};
pub use sst::{Compression, TableBuilderOptions, TableSummary};
pub use table_format::GroupId;
