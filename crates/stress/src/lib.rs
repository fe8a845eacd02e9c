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
//! - The table mode (`--tables N`): [`table_model`] (rows, cells and their
//!   expected state), [`table_db`] (settings, opening the tables, rows as
//!   Arrow batches), [`tables`] (the table workload and `run`),
//!   [`table_verify`] (verification and the table crash drivers).
//! - [`fuzz_targets`]: one function per fuzz target; [`seeds`]: seed corpora.

pub mod check;
pub mod config;
pub mod crash;
pub mod expected;
pub mod fuzz_targets;
pub mod seeds;
pub mod table_db;
pub mod table_model;
pub mod table_verify;
pub mod tables;
pub mod values;
pub mod verify;
pub mod workload;
