//! Dictionary-encoded key-value files (seed 002, LSM-OPD, in the paper's
//! own setting: keys with one string value). Keys are stored as in the
//! column-group files' key section; values are stored key-value separated,
//! as a per-file sorted dictionary of the distinct values plus one
//! bit-packed code per entry. The byte layout is specified in
//! `docs/format/dictfile.md`; the encoding itself is [`crate::dict`].
//!
//! ```text
//! +--------------+-----+------------+----------+--------+-------+------------+--------+
//! | data block 0 | ... | data block | dictio-  | filter | index | properties | footer |
//! |  + 5B trailer|     |  n + 5B    | nary + 5B| + 5B   | + 5B  | + 5B       | 64 B   |
//! +--------------+-----+------------+----------+--------+-------+------------+--------+
//! ```
//!
//! - [`block`]: data blocks (the key section, then codes or plain values).
//! - [`meta`]: the index (the dictionary's handle, each block's handle,
//!   rows, last key and smallest and largest code) and the footer's magic.
//! - [`writer`]: collects a file's entries, sorts its distinct values and
//!   writes codes; plain values when too many values are distinct.
//! - [`reader`]: lookups, iteration and verification through
//!   `crate::keyblock::rows`, and blocks and dictionary for filters.
//! - [`slot`]: where an open file keeps a dictionary (pinned, or in the
//!   block cache); column-group files keep theirs there too.
//!
//! A keyspace stores its values this way when its layout is a
//! [`ValueDictionaryLayout`] (`KeyspaceOptions::with_value_dictionary`).

pub mod block;
pub mod meta;
pub mod reader;
pub mod slot;
pub mod writer;

use std::path::PathBuf;
use std::sync::Arc;

pub use reader::DictReader;

use crate::error::{Error, Result};
use crate::ids::Level;
use crate::layout::{GroupSpec, Layout};
use crate::sst::TableBuilderOptions;
use crate::table_format::{
    GroupId, OpenContext, TableFormat, TableSource, TableWriter, WriterContext,
};
use crate::vfs::{RandomAccessFile, WritableFile};

/// The name dictionary-encoded files are recorded under in the manifest.
pub const DICT_FORMAT: &str = "strata.dict1";

/// The default largest share of distinct values among a file's values for
/// which the file gets a dictionary.
pub const DEFAULT_MAX_DISTINCT_RATIO: f64 = 0.25;

/// The dictionary-encoded format. Reading needs no option; writing needs
/// the threshold above which a file stores its values plainly.
#[derive(Clone, Copy, Debug)]
pub struct DictFormat {
    /// The largest share of distinct values among a file's values for which
    /// the file gets a dictionary (0 to 1).
    pub max_distinct_ratio: f64,
}

impl Default for DictFormat {
    fn default() -> Self {
        DictFormat {
            max_distinct_ratio: DEFAULT_MAX_DISTINCT_RATIO,
        }
    }
}

impl TableFormat for DictFormat {
    fn name(&self) -> &str {
        DICT_FORMAT
    }

    fn writer(
        &self,
        file: Box<dyn WritableFile>,
        path: PathBuf,
        ctx: &WriterContext<'_>,
    ) -> Result<Box<dyn TableWriter>> {
        Ok(Box::new(writer::DictWriter::new(
            file,
            path,
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
        Ok(Arc::new(DictReader::open(file, path, ctx)?))
    }
}

/// The layout of a keyspace whose values are dictionary-encoded at every
/// level (the core's table options otherwise).
#[derive(Clone, Copy, Debug, Default)]
pub struct ValueDictionaryLayout {
    format: DictFormat,
}

impl ValueDictionaryLayout {
    /// The threshold [`KeyspaceOptions::with_value_dictionary`] uses.
    ///
    /// [`KeyspaceOptions::with_value_dictionary`]: crate::KeyspaceOptions::with_value_dictionary
    pub const DEFAULT_MAX_DISTINCT_RATIO: f64 = DEFAULT_MAX_DISTINCT_RATIO;

    /// Files get a dictionary when at most `max_distinct_ratio` (0 to 1)
    /// of their values are distinct, and store values plainly otherwise.
    pub fn new(max_distinct_ratio: f64) -> Result<ValueDictionaryLayout> {
        if !(0.0..=1.0).contains(&max_distinct_ratio) {
            return Err(Error::InvalidArgument(format!(
                "max_distinct_ratio {max_distinct_ratio} is not between 0 and 1"
            )));
        }
        Ok(ValueDictionaryLayout {
            format: DictFormat { max_distinct_ratio },
        })
    }
}

impl Layout for ValueDictionaryLayout {
    fn name(&self) -> &str {
        "value-dictionary"
    }
    fn descriptor(&self) -> String {
        // The threshold changes which files get dictionaries, not how any
        // file is read: it is not part of the keyspace's identity.
        self.name().to_string()
    }
    fn table_options(&self, _level: Level, base: &TableBuilderOptions) -> TableBuilderOptions {
        base.clone()
    }
    fn groups(&self, _level: Level) -> Vec<GroupSpec> {
        vec![GroupSpec {
            id: GroupId::WHOLE,
            parent: GroupId::WHOLE,
            weight: 1,
            format: Arc::new(self.format),
        }]
    }
}
