#![no_main]
//! Fuzz target `cg_file`: the check lives in `strata_stress::fuzz_targets::cg_file`
//! so that `crates/stress/tests/fuzz_corpus.rs` replays the kept corpus
//! through the same code.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    strata_stress::fuzz_targets::cg_file(data);
});
