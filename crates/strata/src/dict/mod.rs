//! Order-preserving dictionary encoding (seed 002, LSM-OPD): computing on
//! compressed values.
//!
//! A file's value domain is fixed when the file is written, so a file can
//! carry a dictionary of its distinct values, sorted, and store each value
//! as its rank (its *code*), bit-packed to the fewest bits per block. Since
//! the order of codes is the order of values, a comparison with a constant
//! becomes a comparison of codes with a code range found by binary search
//! in the dictionary, and a filter becomes a vectorised integer test over
//! packed codes; compaction can merge dictionaries instead of values.
//!
//! - [`dictionary`]: the sorted distinct values, front-coded on disk,
//!   decoded once in memory; the builder that collects a file's distinct
//!   values as its entries stream in.
//! - [`mod@column`]: one column's values while its file is written, settled
//!   into a dictionary and codes, or kept plain.
//! - [`merge`]: the k-way merge of dictionaries a compaction's output
//!   takes, restricted to the values still referenced, with code remaps.
//! - [`bitpack`]: codes packed to the minimum width.
//! - [`select`]: selection bitmaps from packed codes, with AVX-512 and AVX2
//!   kernels chosen at run time and a scalar fallback.
//! - [`predicate`]: equality, range, prefix and IN-list predicates, on
//!   values and as code sets.
//!
//! Byte layouts: `docs/format/dictfile.md`.

pub mod bitpack;
pub mod column;
pub mod dictionary;
pub mod merge;
pub mod predicate;
pub mod select;

pub use dictionary::{Dictionary, DictionaryBuilder};

use std::sync::Arc;

/// A value stored as a code into a file's dictionary: what a
/// dictionary-encoded file's iterator offers besides the value's bytes, so
/// that compaction can move codes instead of values.
#[derive(Clone, Copy, Debug)]
pub struct CodedValue<'a> {
    /// The file's dictionary.
    pub dictionary: &'a Arc<Dictionary>,
    /// The value's code in it.
    pub code: u32,
}
/// The codes an entry's value has in its source file's dictionaries, as
/// compaction hands a surviving entry to an output's writer: the whole
/// value's (a dictionary-encoded key-value file), or some columns' (the
/// string columns of a column-group file stored as codes).
#[derive(Clone, Copy, Debug, Default)]
pub struct Codes<'a> {
    /// The whole value's code.
    pub value: Option<CodedValue<'a>>,
    /// (value column, index into `dictionaries`, code), per column stored
    /// as codes.
    pub columns: &'a [(usize, usize, u32)],
    /// The dictionaries `columns` refers to.
    pub dictionaries: &'a [Arc<Dictionary>],
}

impl<'a> Codes<'a> {
    /// Value column `v`'s code, if the source gave one.
    pub fn column(&self, v: usize) -> Option<CodedValue<'a>> {
        let &(_, d, code) = self.columns.iter().find(|c| c.0 == v)?;
        Some(CodedValue {
            dictionary: self.dictionaries.get(d)?,
            code,
        })
    }

    /// Whether there is no code at all.
    pub fn is_empty(&self) -> bool {
        self.value.is_none() && self.columns.is_empty()
    }
}

pub use predicate::ValuePredicate;
pub use select::{CodeSet, Kernel};
