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
    // The repaired targets take the same input format as the plain ones.
    if let Some(plain) = target.strip_suffix("_repaired") {
        dirs.extend([format!("corpus-kept/{plain}"), format!("seeds/{plain}")]);
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

#[test]
fn dict_file_corpus() {
    corpus("dict_file");
}

#[test]
fn dict_file_repaired_corpus() {
    corpus("dict_file_repaired");
}

#[test]
fn cg_file_corpus() {
    corpus("cg_file");
}

#[test]
fn cg_file_repaired_corpus() {
    corpus("cg_file_repaired");
}

type Seed = (
    PathBuf,
    std::sync::Arc<dyn strata::vfs::RandomAccessFile>,
    PathBuf,
    strata::table_format::OpenContext,
);

/// `target`'s seeds, each written to an in-memory file system: the seed's
/// path, the file opened there, its path there, and a context without a
/// cache to open it in.
fn seeds_in_memory(target: &str) -> Vec<Seed> {
    use std::sync::Arc;
    use strata::vfs::Vfs;
    let vfs = strata::vfs_mem::MemVfs::new();
    files_under(&fuzz_dir().join("seeds").join(target))
        .into_iter()
        .enumerate()
        .map(|(i, f)| {
            let data = std::fs::read(&f).expect("read seed");
            let path = PathBuf::from(format!("/seed{i}.sst"));
            let mut w = vfs.create(&path).expect("create");
            w.append(&data).expect("append");
            w.sync().expect("sync");
            let ctx = strata::table_format::OpenContext {
                file_number: strata::FileNumber(1),
                cache: None,
                stats: Arc::new(strata::stats::Statistics::default()),
            };
            let file = vfs.open(&path).expect("open");
            (f, file, path, ctx)
        })
        .collect()
}

/// The `cg_file` seeds open and pass `verify`; some have columns of codes
/// and some not, and some several blocks.
#[test]
fn cg_seeds_are_valid() {
    use strata::table::cgfile::CgReader;
    use strata::table_format::TableSource;

    let (mut coded, mut plain, mut multi) = (0, 0, 0);
    for (f, file, path, ctx) in seeds_in_memory("cg_file") {
        let r = CgReader::open(file, path, fuzz_targets::cg_shape(), &ctx)
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        TableSource::verify(&r).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let columns = r.columns().len();
        if (0..columns).any(|c| r.is_coded(c)) {
            coded += 1;
        }
        if (0..columns).any(|c| !r.is_coded(c)) {
            plain += 1;
        }
        multi += usize::from(r.blocks().len() > 1);
    }
    assert!(
        coded >= 3 && plain >= 2 && multi >= 3,
        "seeds: {coded} with a dictionary, {plain} with plain columns, {multi} of several blocks"
    );
}

#[test]
fn dictionary_corpus() {
    corpus("dictionary");
}

/// The `dict_file` seeds are what they are for: files that open and pass
/// `verify`, with and without a dictionary, of one block and of several;
/// and the `dictionary` seeds decode.
#[test]
fn dict_seeds_are_valid() {
    use strata::dictfile::DictReader;
    use strata::table_format::TableSource;

    let (mut coded, mut plain, mut multi) = (0, 0, 0);
    for (f, file, path, ctx) in seeds_in_memory("dict_file") {
        let r =
            DictReader::open(file, path, &ctx).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        TableSource::verify(&r).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        if r.has_dictionary() {
            coded += 1;
        } else {
            plain += 1;
        }
        multi += usize::from(r.blocks().len() > 1);
    }
    assert!(
        coded >= 3 && plain >= 1 && multi >= 3,
        "seeds: {coded} with a dictionary, {plain} without, {multi} of several blocks"
    );
    for f in files_under(&fuzz_dir().join("seeds/dictionary")) {
        let data = std::fs::read(&f).expect("read seed");
        strata::dict::Dictionary::decode(&data).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    }
}

/// Crash reproducers found by fuzzing (`fuzz/artifacts-kept/<target>/`),
/// ignored while the engine bugs they show are open.
#[test]
fn kept_crash_artifacts() {
    for t in fuzz_targets::TARGETS {
        replay(t, &[format!("artifacts-kept/{t}")]);
    }
}
