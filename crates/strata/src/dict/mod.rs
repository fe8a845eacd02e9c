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
//! - [`bitpack`]: codes packed to the minimum width.
//! - [`select`]: selection bitmaps from packed codes, with AVX-512 and AVX2
//!   kernels chosen at run time and a scalar fallback.
//! - [`predicate`]: equality, range, prefix and IN-list predicates, on
//!   values and as code sets.
//!
//! Byte layouts: `docs/format/dict.md`.

pub mod bitpack;
pub mod dictionary;
pub mod predicate;
pub mod select;

pub use dictionary::{Dictionary, DictionaryBuilder};
pub use predicate::ValuePredicate;
pub use select::{CodeSet, Kernel};
