//! Column-group files: one column group's sorted run on one level, stored
//! PAX-style (seed 001's column groups, with real column vectors instead of
//! LASER's delimiter-joined strings). The byte layout is specified in
//! `docs/format/cgfile.md`.
//!
//! ```text
//! +--------------+-----+--------------+--------+-------+------------+--------+
//! | data block 0 | ... | data block n | filter | index | properties | footer |
//! |  + 5B trailer|     |  + 5B trailer| + 5B   | + 5B  | + 5B       | 64 B   |
//! +--------------+-----+--------------+--------+-------+------------+--------+
//! ```
//!
//! - Data blocks ([`block`]) hold the keys once and then each column of the
//!   group as a typed vector with its null bitmap.
//! - The filter is the core's whole-file Bloom filter over user keys.
//! - The index has one entry per data block: its handle, row count, last
//!   user key and, per column, the present and null counts and the minimum
//!   and maximum, so scans skip blocks without reading them.
//! - Every block carries the core's trailer (compression type and CRC-32C,
//!   `docs/format/sst.md`); blocks are compressed as the level's table
//!   options say.
//! - The footer has the core table footer's shape with its own magic
//!   (`SRTATSCG`), so neither reader mistakes the other's files.

pub mod block;
pub mod block_builder;
pub mod meta;
mod reader;
mod writer;

pub use block::ColumnStats;
pub use meta::BlockMeta;
pub use reader::{CgReader, snap_trailer};
pub use writer::CgWriter;

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::Result;
use crate::table::shape::TableShape;
use crate::table_format::{OpenContext, TableFormat, TableSource, TableWriter, WriterContext};
use crate::vfs::{RandomAccessFile, WritableFile};

/// The name column-group files are recorded under in the manifest.
pub const CG_FORMAT: &str = "strata.cg1";

/// The column-group format of one table: it knows the table's value
/// columns and which columns each group id stands for.
#[derive(Clone)]
pub struct CgFormat {
    shape: Arc<TableShape>,
    max_distinct_ratio: f64,
}

impl CgFormat {
    /// The format for a table of `shape`, whose files give a string column
    /// a dictionary when at most `max_distinct_ratio` of its values are
    /// distinct (0: never).
    pub fn new(shape: Arc<TableShape>, max_distinct_ratio: f64) -> CgFormat {
        CgFormat {
            shape,
            max_distinct_ratio,
        }
    }
}

impl TableFormat for CgFormat {
    fn name(&self) -> &str {
        CG_FORMAT
    }

    fn writer(
        &self,
        file: Box<dyn WritableFile>,
        path: PathBuf,
        ctx: &WriterContext<'_>,
    ) -> Result<Box<dyn TableWriter>> {
        let columns = self.shape.group_columns(ctx.group)?;
        Ok(Box::new(CgWriter::new(
            file,
            path,
            Arc::clone(&self.shape),
            ctx.group,
            columns,
            ctx,
            self.max_distinct_ratio,
        )))
    }

    fn open(
        &self,
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        ctx: &OpenContext,
    ) -> Result<Arc<dyn TableSource>> {
        Ok(Arc::new(CgReader::open(
            file,
            path,
            Arc::clone(&self.shape),
            ctx,
        )?))
    }
}
