//! Replays the kept fuzz corpora (`fuzz/corpus-kept/<target>/`, minimized
//! with `cargo fuzz cmin`) and the seeds (`fuzz/seeds/<target>/`) through
//! the same checks as the fuzz targets (`strata_stress::fuzz_targets`),
//! asserting that none panics.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use strata_stress::fuzz_targets;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Runs every input of `dirs` (relative to `fuzz/`) through `target`'s
/// check; returns how many ran.
fn replay(target: &str, dirs: &[String]) -> usize {
    let check = fuzz_targets::by_name(target).expect("known target");
    let mut failed = Vec::new();
    let mut n = 0;
    for d in dirs {
        for f in files_under(&fuzz_dir().join(d)) {
            let data = std::fs::read(&f).expect("read corpus file");
            n += 1;
            if catch_unwind(AssertUnwindSafe(|| check(&data))).is_err() {
                failed.push(f);
            }
        }
    }
    assert!(failed.is_empty(), "{target}: inputs that panic: {failed:?}");
    n
}

fn corpus(target: &str) {
    let mut dirs = vec![format!("corpus-kept/{target}"), format!("seeds/{target}")];
    if target == "sst_table_repaired" {
        // Same input format as sst_table.
        dirs.extend([
            "corpus-kept/sst_table".to_string(),
            "seeds/sst_table".to_string(),
        ]);
    }
    let n = replay(target, &dirs);
    assert!(
        n > 0,
        "{target}: no corpus found under {}",
        fuzz_dir().display()
    );
}

#[test]
fn sst_table_corpus() {
    corpus("sst_table");
}

#[test]
fn sst_table_repaired_corpus() {
    corpus("sst_table_repaired");
}

#[test]
fn sst_block_corpus() {
    corpus("sst_block");
}

#[test]
fn wal_reader_corpus() {
    corpus("wal_reader");
}

#[test]
fn manifest_corpus() {
    corpus("manifest");
}

#[test]
fn shell_parser_corpus() {
    corpus("shell_parser");
}

/// Crash reproducers found by fuzzing (`fuzz/artifacts-kept/<target>/`),
/// ignored while the engine bugs they show are open.
#[test]
fn kept_crash_artifacts() {
    for t in fuzz_targets::TARGETS {
        replay(t, &[format!("artifacts-kept/{t}")]);
    }
}
