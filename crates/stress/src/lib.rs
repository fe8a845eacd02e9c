//! `strata-stress`: randomized, self-verifying stress testing of Strata in
//! the spirit of RocksDB's `db_stress`, with a SIGKILL crash driver and an
//! in-process power-cut driver, plus the shared logic of the fuzz targets
//! under `fuzz/` (so that the regression test replays corpora through the
//! same code).
//!
//! - [`values`]: keys and self-verifying values.
//! - [`expected`]: the expected-state model and its pwrite-updated file.
//! - [`workload`]: the multi-threaded operation mix, checking every read.
//! - [`verify`]: whole-database verification after a crash or power cut.
//! - [`crash`]: the SIGKILL and power-cut drivers.
//! - [`fuzz_targets`]: one function per fuzz target; [`seeds`]: seed corpora.

pub mod check;
pub mod config;
pub mod crash;
pub mod expected;
pub mod fuzz_targets;
pub mod seeds;
pub mod values;
pub mod verify;
pub mod workload;
