//! Sorted-table (SST) files: immutable, sorted runs of internal keys.
//!
//! ```text
//! +----------------+----------------+-----+--------+-------+------------+--------+
//! | data block 0   | data block 1   | ... | filter | index | properties | footer |
//! | + trailer (5B) | + trailer (5B) |     | + 5B   | + 5B  | + 5B       | 64 B   |
//! +----------------+----------------+-----+--------+-------+------------+--------+
//! ```
//!
//! - [`block`]: prefix-compressed key/value blocks with restart points (data
//!   and index blocks).
//! - [`bloom`]: the whole-file Bloom filter over user keys.
//! - `buffers`: block buffers recycled within a thread.
//! - [`format`](mod@format): block handles, trailers (compression type + CRC-32C),
//!   compression and the footer.
//! - [`builder`]: [`TableBuilder`] writes a table.
//! - `compression_dict`: the per-file zstd dictionary, trained on the file's
//!   first data blocks.
//! - [`reader`]: [`TableReader`] opens, looks up, iterates and verifies one.
//! - `separators`: finds a key's data block by its index entries' key
//!   prefixes.
//!
//! The byte-level format is specified in `docs/format/sst.md`.

pub mod block;
pub mod bloom;
pub(crate) mod buffers;
pub mod builder;
pub(crate) mod compression_dict;
pub mod format;
pub mod properties;
pub mod reader;
mod separators;
pub mod table_iter;

pub use block::Block;
pub use builder::{TableBuilder, TableBuilderOptions, TableSummary};
pub use format::Compression;
pub use properties::TableProperties;
pub use reader::TableReader;
pub use table_iter::TableIter;
