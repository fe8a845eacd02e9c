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

pub mod cache;
pub mod coding;
pub mod error;
pub mod gate;
pub mod iter;
pub mod key;
pub mod layout;
pub mod level_filter;
pub mod log;
pub mod sst;
pub mod stats;
pub(crate) mod stitch;
pub mod table_format;
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
pub mod recovery;
pub mod retained;
pub mod version;

pub use batch::WriteBatch;
pub use db::{Db, DbStats, Keyspace, KeyspaceStats, Snapshot};
pub use db_iter::DbIter;
pub use memtable::MemTableKind;
pub use merge::MergeOperator;
pub use options::{KeyspaceOptions, Options, ReadOptions, WriteOptions};
pub use recovery::{LostTable, RecoveryReport, WalDamage, WalRecoveryMode};
