//! Strata: an embedded LSM-tree storage engine for real-time analytics.

pub mod coding;
pub mod error;
pub mod iter;
pub mod key;
pub mod stats;
pub mod vfs;

pub use error::{Error, Result};
