//! `strata-bench`: db_bench- and YCSB-style benchmarks of Strata, optionally
//! against RocksDB (feature `rocksdb`) and fjall (feature `fjall`).
//!
//! - [`settings`]: [`settings::BenchSettings`], every common option.
//! - [`engine`]: the [`engine::Engine`] trait and the engine registry.
//! - [`engines`]: one adapter per engine.
//! - [`keys`]: fixed-size keys and compressible values.
//! - [`generators`]: uniform, zipfian (YCSB's scrambled zipfian) and
//!   skewed-latest key choosers.
//! - [`workload`]: the workloads (db_bench names and YCSB A-F).
//! - [`runner`]: runs workloads over engines, variants and rounds.
//! - [`memsuite`]: the `memtable` suite (the memory-buffer study's
//!   in-memory experiment and the adaptive mixes).
//! - [`shortsuite`]: the `shortrange` suite (short scans with and without
//!   memtable retention and iterator reduction).
//! - [`htap`]: the `htap` suite (seed 001's HTAP mix over table layouts).
//! - [`advisorsuite`]: the `advisor` suite (the layout advisor's running time).
//! - [`opd`]: the `opd` suite (seed 002's dictionary-encoded values:
//!   compaction, filters on codes, against RocksDB and BlobDB).
//! - [`record`]: the JSON record of one result.
//! - [`report`]: terminal tables and the markdown report.
//! - [`plot`]: SVG charts.
//! - [`sysinfo`]: peak RSS, machine description, process I/O.
//! - [`cli`]: flags, suites and validation.

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod advisorsuite;
pub mod cli;
pub mod engine;
pub mod engines;
pub mod generators;
pub mod htap;
pub mod joins;
pub mod keys;
pub mod memsuite;
pub mod opd;
pub mod plot;
pub mod prodsuite;
pub mod record;
pub mod report;
pub mod runner;
pub mod settings;
pub mod shortsuite;
pub mod sysinfo;
pub mod workload;

use std::fmt;

/// The error of every fallible operation of the harness: a message meant for
/// a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl Error {
    /// An error with this message.
    pub fn msg(s: impl Into<String>) -> Error {
        Error(s.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

macro_rules! from_error {
    ($t:ty, $prefix:expr) => {
        impl From<$t> for Error {
            fn from(e: $t) -> Error {
                Error(format!("{}{}", $prefix, e))
            }
        }
    };
}

from_error!(std::io::Error, "I/O error: ");
from_error!(strata::Error, "strata: ");
from_error!(serde_json::Error, "JSON: ");
#[cfg(feature = "fjall")]
from_error!(fjall::Error, "fjall: ");
#[cfg(feature = "rocksdb")]
from_error!(rocksdb::Error, "rocksdb: ");

/// The harness's result type.
pub type Result<T> = std::result::Result<T, Error>;
