//! Database options of a stress run and opening the database with them.

use std::path::Path;
use std::sync::Arc;

use strata::memtable::MemTableOptions;
use strata::merge::U64AddOperator;
use strata::sst::Compression;
use strata::vfs::Vfs;
use strata::{Db, Keyspace, KeyspaceOptions, MemTableKind, Options};

use crate::values::COUNTER_KEYSPACE;

/// The engine options a stress run varies (small defaults, so that flushes
/// and compactions run all the time on a small key space).
#[derive(Clone, Debug)]
pub struct DbConfig {
    pub write_buffer_size: usize,
    pub level0_trigger: usize,
    pub target_file_size: u64,
    pub level1_max_bytes: u64,
    pub memtable: MemTableKind,
    pub compression: Compression,
    pub block_size: usize,
    pub block_cache_bytes: u64,
    /// Fixed prefix length for the memtable's prefix extractor (0: none;
    /// hashed memtable kinds then get 6, which groups 100 keys per prefix).
    pub prefix_len: usize,
    /// With the adaptive memtable: range reads never call for a skiplist,
    /// so the first buffer after every open moves its entries to a hash
    /// kind while the workload reads it (and a prefix of 6 is the default).
    pub adaptive_churn: bool,
    /// Memtable retention, with a budget of two write buffers (so that
    /// the budget releases some before compaction does).
    pub retain_memtables: bool,
}

impl Default for DbConfig {
    fn default() -> Self {
        DbConfig {
            write_buffer_size: 256 << 10,
            level0_trigger: 4,
            target_file_size: 256 << 10,
            level1_max_bytes: 1 << 20,
            memtable: MemTableKind::default(),
            compression: Compression::None,
            block_size: 4096,
            block_cache_bytes: 8 << 20,
            prefix_len: 0,
            adaptive_churn: false,
            retain_memtables: false,
        }
    }
}

impl DbConfig {
    /// Options of both keyspaces (the counters keyspace adds the merge
    /// operator).
    pub fn keyspace_options(&self) -> KeyspaceOptions {
        let d = KeyspaceOptions::default();
        let prefix = match self.prefix_len {
            0 if self.memtable.is_hashed() || self.adaptive_churn => 6,
            n => n,
        };
        let mut memtable_options = if prefix > 0 {
            MemTableOptions::fixed_prefix(prefix)
        } else {
            d.memtable_options.clone()
        };
        if self.adaptive_churn {
            memtable_options.adaptive.min_range_share_for_skiplist = 1.0;
        }
        KeyspaceOptions {
            memtable_options,
            write_buffer_size: self.write_buffer_size,
            memtable: self.memtable,
            compression: self.compression,
            block_size: self.block_size,
            level0_compaction_trigger: self.level0_trigger,
            level0_slowdown_trigger: d.level0_slowdown_trigger.max(self.level0_trigger),
            level0_stop_trigger: d
                .level0_stop_trigger
                .max(d.level0_slowdown_trigger.max(self.level0_trigger)),
            target_file_size: self.target_file_size,
            level1_max_bytes: self.level1_max_bytes,
            // The operator is set on both keyspaces: the default keyspace
            // never receives merges, but a batch may mix keyspaces and
            // the operator is harmless there.
            merge_operator: Some(Arc::new(U64AddOperator)),
            retain_flushed_memtables: self.retain_memtables,
            retained_memtable_bytes: if self.retain_memtables {
                2 * self.write_buffer_size as u64
            } else {
                0
            },
            ..d
        }
    }

    /// Database options, over `vfs` (the real file system when `None`).
    pub fn options(&self, vfs: Option<Arc<dyn Vfs>>) -> Options {
        let mut o = Options {
            block_cache_bytes: self.block_cache_bytes,
            default_keyspace: self.keyspace_options(),
            ..Options::default()
        };
        if let Some(v) = vfs {
            o.vfs = v;
        }
        o
    }
}

/// An open database with the two keyspaces of a stress run.
#[derive(Clone)]
pub struct Handles {
    pub db: Db,
    /// The default keyspace: value keys.
    pub values: Keyspace,
    /// The `counters` keyspace: counter keys (merge operator `U64AddOperator`).
    pub counters: Keyspace,
}

/// Opens (or creates) the stressed database.
pub fn open_db(path: &Path, cfg: &DbConfig, vfs: Option<Arc<dyn Vfs>>) -> strata::Result<Handles> {
    let db = Db::open(path, cfg.options(vfs))?;
    let values = db.default_keyspace();
    let counters = db.keyspace(COUNTER_KEYSPACE, cfg.keyspace_options())?;
    Ok(Handles {
        db,
        values,
        counters,
    })
}
