//! Options of a table, stored with its definition in the catalog.

use serde::{Deserialize, Serialize};

use super::layout::TableLayout;
use super::schema::Schema;
use crate::error::{Error, Result};
use crate::options::KeyspaceOptions;
use crate::sst::Compression;

/// How a table is stored. The defaults suit a table read by key and
/// scanned now and then; set `layout` for analytics.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct TableOptions {
    /// The initial layout: a preset (`row`, `column`, `groups:N`,
    /// `row-then-column:L`) or explicit groups per level from level 1
    /// (`a,b | c ; a | b | c`, see [`TableLayout::parse`]). Default `row`.
    pub layout: String,
    /// Levels of the table's tree (default 7).
    pub num_levels: usize,
    /// Size ratio between adjacent levels (default 10).
    pub size_ratio: u64,
    /// Byte budget of level 1 (default 256 MiB).
    pub level1_max_bytes: u64,
    /// Memtable size (default 64 MiB).
    pub write_buffer_size: usize,
    /// Target size of files written by compaction (default 64 MiB).
    pub target_file_size: u64,
    /// Target size of uncompressed blocks (default 16 KiB: column-group
    /// blocks hold one vector per column, so larger blocks amortise the
    /// per-column header).
    pub block_size: usize,
    /// Bloom filter bits per key (default 10).
    pub bloom_bits_per_key: u32,
    /// Block compression: `none`, `lz4` or `zstd` (default none).
    pub compression: String,
    /// A string column of a column-group file gets a dictionary of its
    /// distinct values and stores codes (seed 002) when at most this share
    /// of its values in the file are distinct (default 0.25; 0 never).
    pub max_distinct_ratio: f64,
    /// Level-0 files that trigger a compaction (default 4).
    pub level0_compaction_trigger: usize,
    /// Re-run the layout advisor as the workload drifts and switch to its
    /// layout when the predicted cost falls by more than this fraction
    /// (for example 0.2); `None` (the default) keeps the layout fixed.
    pub auto_layout_threshold: Option<f64>,
    /// How often the automatic layout asks the advisor, in milliseconds
    /// (default 5000).
    pub auto_layout_interval_ms: u64,
}

impl Default for TableOptions {
    fn default() -> Self {
        let k = KeyspaceOptions::default();
        TableOptions {
            layout: "row".into(),
            num_levels: k.num_levels,
            size_ratio: k.size_ratio,
            level1_max_bytes: k.level1_max_bytes,
            write_buffer_size: k.write_buffer_size,
            target_file_size: k.target_file_size,
            block_size: 16 << 10,
            bloom_bits_per_key: k.bloom_bits_per_key,
            compression: "none".into(),
            max_distinct_ratio: crate::dictfile::DEFAULT_MAX_DISTINCT_RATIO,
            level0_compaction_trigger: k.level0_compaction_trigger,
            auto_layout_threshold: None,
            auto_layout_interval_ms: 5000,
        }
    }
}

impl TableOptions {
    /// Options with the layout `layout` (a preset name or explicit text).
    pub fn with_layout(layout: impl Into<String>) -> TableOptions {
        TableOptions {
            layout: layout.into(),
            ..Default::default()
        }
    }

    /// Checks the options.
    pub fn validate(&self) -> Result<()> {
        self.keyspace_options().validate()?;
        self.compression()?;
        if !(0.0..=1.0).contains(&self.max_distinct_ratio) {
            return Err(Error::InvalidArgument(format!(
                "max_distinct_ratio must be between 0 and 1; {} given",
                self.max_distinct_ratio
            )));
        }
        if let Some(t) = self.auto_layout_threshold
            && !(t > 0.0 && t < 1.0)
        {
            return Err(Error::InvalidArgument(format!(
                "auto_layout_threshold must be between 0 and 1 (exclusive); {t} given"
            )));
        }
        Ok(())
    }

    fn compression(&self) -> Result<Compression> {
        self.compression.parse()
    }

    /// The layout the table starts with.
    pub(crate) fn initial_layout(&self, schema: &Schema) -> Result<TableLayout> {
        TableLayout::parse(&self.layout, schema, self.num_levels)
    }

    /// The options of the table's keyspace (the table layer adds its layout).
    pub(crate) fn keyspace_options(&self) -> KeyspaceOptions {
        KeyspaceOptions {
            num_levels: self.num_levels,
            size_ratio: self.size_ratio,
            level1_max_bytes: self.level1_max_bytes,
            write_buffer_size: self.write_buffer_size,
            target_file_size: self.target_file_size,
            block_size: self.block_size,
            bloom_bits_per_key: self.bloom_bits_per_key,
            compression: self.compression().unwrap_or_default(),
            level0_compaction_trigger: self.level0_compaction_trigger,
            level0_slowdown_trigger: self.level0_compaction_trigger.max(20),
            level0_stop_trigger: self.level0_compaction_trigger.max(36),
            // Tables scan through their own resolving iterators, not the
            // key-value iterator that iterator reduction serves.
            iterator_reduction: false,
            ..Default::default()
        }
    }
}
