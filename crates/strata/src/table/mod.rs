//! The table layer: column-group layouts chosen by the LASER cost model.

pub mod advisor;
pub mod cost;
