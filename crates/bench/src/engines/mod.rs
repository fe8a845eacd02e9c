//! One adapter per engine. Strata is always built; the peers only with
//! their cargo features (`fjall`, `rocksdb`, or both with `peers`).

pub mod strata;

#[cfg(feature = "fjall")]
pub mod fjall;

#[cfg(feature = "rocksdb")]
pub mod rocksdb;
