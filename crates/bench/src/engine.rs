//! The engine abstraction every workload runs against, and the registry of
//! engines compiled into this build.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use crate::settings::BenchSettings;
use crate::{Error, Result};

/// One operation of a write batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchOp {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
}

/// What an engine reports about itself; `None` where it cannot tell.
#[derive(Clone, Debug, Default)]
pub struct EngineStats {
    /// Bytes written by flushes and compactions (the numerator of write
    /// amplification; the harness divides by the user bytes it wrote).
    pub background_write_bytes: Option<u64>,
    /// The engine's own figure of write amplification, when it has one.
    pub write_amp: Option<f64>,
    /// The engine's own figure of its size on disk, when it has one.
    pub reported_disk_bytes: Option<u64>,
    /// Further engine-specific counters, stored with the result.
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// The state of an engine's memtables, for the `memtable` suite.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemProbe {
    /// Bytes the memtables hold as the engine counts them (Strata: the
    /// mutable memtable's `KeyspaceStats::memtable_bytes`; RocksDB:
    /// `rocksdb.cur-size-all-mem-tables`, mutable and unflushed immutable).
    pub bytes: u64,
    /// Entries in those memtables, when the engine reports them (RocksDB:
    /// `rocksdb.num-entries-active-mem-table` + `-imm-mem-tables`).
    pub entries: Option<u64>,
    /// Immutable memtables waiting for their flush.
    pub immutable: u64,
    /// Flushes since the database was opened.
    pub flushes: u64,
    /// The representation of the mutable memtable (Strata's
    /// `memtable_rep`: differs from the kind for `adaptive`).
    pub rep: Option<String>,
    /// Why the adaptive kind chose `rep`.
    pub decision: Option<String>,
}

/// A key-value engine under test. Every method may be called from many
/// threads at once.
pub trait Engine: Send + Sync {
    /// The engine's name (`strata`, `rocksdb`, `fjall`).
    fn name(&self) -> &'static str;

    /// Sets `key` to `value`.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;

    /// Reads `key`; returns the value's length when found.
    fn get(&self, key: &[u8]) -> Result<Option<usize>>;

    /// Deletes `key`.
    fn delete(&self, key: &[u8]) -> Result<()>;

    /// Applies the operations atomically.
    fn write_batch(&self, ops: &[BatchOp]) -> Result<()>;

    /// Visits entries in key order from the first key `>= start` until `f`
    /// returns false or the keys run out; returns the entries visited.
    fn iterate(&self, start: &[u8], f: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<u64>;

    /// Seeks to `start` and reads up to `n` entries; returns the entries
    /// and the key and value bytes read.
    fn scan(&self, start: &[u8], n: usize) -> Result<(u64, u64)> {
        let mut bytes = 0u64;
        let mut seen = 0usize;
        let count = self.iterate(start, &mut |k, v| {
            bytes += (k.len() + v.len()) as u64;
            seen += 1;
            seen < n
        })?;
        Ok((count, bytes))
    }

    /// Writes memtables out to table files and waits for it.
    fn flush(&self) -> Result<()>;

    /// Waits until pending flushes and compactions are done, leaving the
    /// mutable memtable alone; returns `false` if the engine cannot tell
    /// (then it returns at once).
    fn wait_for_background(&self) -> Result<bool> {
        Ok(false)
    }

    /// Compacts the whole key range into the last level and waits for it.
    fn compact_all(&self) -> Result<()> {
        Err(crate::Error(format!(
            "{} cannot compact on request here",
            self.name()
        )))
    }

    /// Counts the entries whose value lies in `[lo, hi)` (bytewise): by
    /// default a full scan comparing every value, what a key-value store
    /// without value filters offers.
    fn filter_values(&self, lo: &[u8], hi: &[u8]) -> Result<u64> {
        let mut matches = 0u64;
        self.iterate(&[], &mut |_, v| {
            matches += u64::from(v >= lo && v < hi);
            true
        })?;
        Ok(matches)
    }

    /// Bytes of value dictionaries the engine has decoded so far.
    fn dictionary_bytes(&self) -> u64 {
        0
    }

    /// Counters the engine can report.
    fn stats(&self) -> EngineStats;

    /// The state of the memtables (`None` where the engine cannot tell).
    fn memtable_probe(&self) -> Option<MemProbe> {
        None
    }

    /// Settings the engine could not express faithfully.
    fn notes(&self) -> Vec<String>;

    /// Where the engine keeps its files (walked for the space on disk).
    fn data_dir(&self) -> &Path;

    /// Stops background work and releases the database.
    fn close(&self) -> Result<()>;
}

/// The engines this harness knows, compiled in or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EngineKind {
    Strata,
    RocksDb,
    /// RocksDB with its own defaults for the tree's shape (dynamic level
    /// sizing on), rather than the settings mapped from Strata's.
    RocksDbDefaults,
    Fjall,
}

impl EngineKind {
    /// Every engine, compiled in or not.
    pub const ALL: &'static [EngineKind] = &[
        EngineKind::Strata,
        EngineKind::RocksDb,
        EngineKind::RocksDbDefaults,
        EngineKind::Fjall,
    ];

    /// The name used in flags and results.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Strata => "strata",
            EngineKind::RocksDb => "rocksdb",
            EngineKind::RocksDbDefaults => "rocksdb-defaults",
            EngineKind::Fjall => "fjall",
        }
    }

    /// True when this build can run the engine.
    pub fn compiled(self) -> bool {
        match self {
            EngineKind::Strata => true,
            EngineKind::RocksDb | EngineKind::RocksDbDefaults => cfg!(feature = "rocksdb"),
            EngineKind::Fjall => cfg!(feature = "fjall"),
        }
    }

    /// The cargo feature that compiles the engine in.
    pub fn feature(self) -> Option<&'static str> {
        match self {
            EngineKind::Strata => None,
            EngineKind::RocksDb | EngineKind::RocksDbDefaults => Some("rocksdb"),
            EngineKind::Fjall => Some("fjall"),
        }
    }

    /// The engines this build can run.
    pub fn compiled_in() -> Vec<EngineKind> {
        EngineKind::ALL
            .iter()
            .copied()
            .filter(|e| e.compiled())
            .collect()
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EngineKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim().to_ascii_lowercase();
        EngineKind::ALL
            .iter()
            .copied()
            .find(|e| e.name() == t)
            .ok_or_else(|| {
                Error(format!(
                    "unknown engine {s:?} (known: {})",
                    EngineKind::ALL
                        .iter()
                        .map(|e| e.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }
}

/// Parses `--engines`: a comma-separated list of compiled-in engines, no
/// repeats. Asking for an engine that is not compiled in tells which
/// feature to build with.
pub fn parse_engines(list: &str) -> Result<Vec<EngineKind>> {
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let e: EngineKind = part.parse()?;
        if !e.compiled() {
            let feature = e.feature().unwrap_or("?");
            return Err(Error(format!(
                "engine {e} is not compiled into this build; rebuild with \
                 `--features {feature}` (or `--features peers` for every peer), e.g. \
                 cargo run --release -p strata-bench --features {feature} -- --engines {e}"
            )));
        }
        if out.contains(&e) {
            return Err(Error(format!("engine {e} is listed twice in --engines")));
        }
        out.push(e);
    }
    if out.is_empty() {
        return Err(Error("--engines names no engine".into()));
    }
    Ok(out)
}

/// Opens `kind` in `dir` with `settings`.
pub fn open_engine(
    kind: EngineKind,
    settings: &BenchSettings,
    dir: &Path,
) -> Result<Arc<dyn Engine>> {
    match kind {
        EngineKind::Strata => Ok(Arc::new(crate::engines::strata::StrataEngine::open(
            settings, dir,
        )?)),
        #[cfg(feature = "rocksdb")]
        EngineKind::RocksDb => Ok(Arc::new(crate::engines::rocksdb::RocksEngine::open(
            settings, dir,
        )?)),
        #[cfg(feature = "rocksdb")]
        EngineKind::RocksDbDefaults => Ok(Arc::new(
            crate::engines::rocksdb::RocksEngine::open_with_shipped_shape(settings, dir)?,
        )),
        #[cfg(feature = "fjall")]
        EngineKind::Fjall => Ok(Arc::new(crate::engines::fjall::FjallEngine::open(
            settings, dir,
        )?)),
        #[allow(unreachable_patterns)]
        other => Err(Error(format!(
            "engine {other} is not compiled into this build; rebuild with --features {}",
            other.feature().unwrap_or("?")
        ))),
    }
}

/// Space the files under a directory take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskUsage {
    /// Bytes allocated on disk (`st_blocks * 512`, as `du`): sparse,
    /// preallocated-by-`set_len` files count only what they hold.
    pub allocated: u64,
    /// Sum of file lengths (`du --apparent-size`).
    pub apparent: u64,
}

/// The space of every file under `dir` (zero if it does not exist).
pub fn dir_usage(dir: &Path) -> DiskUsage {
    use std::os::unix::fs::MetadataExt;
    let mut u = DiskUsage::default();
    let mut stack: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in rd.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                u.allocated += meta.blocks() * 512;
                u.apparent += meta.len();
            }
        }
    }
    u
}

/// Bytes on disk of every file under `dir` (see [`DiskUsage::allocated`]).
pub fn dir_size(dir: &Path) -> u64 {
    dir_usage(dir).allocated
}

/// Checks an engine's semantics (shared by every adapter's tests): puts,
/// gets, deletes, batches, scans, iteration, flush and close.
#[cfg(test)]
pub(crate) fn check_engine(e: &dyn Engine) {
    use crate::keys::make_key;
    for i in 0..100u64 {
        e.put(&make_key(i, 16), b"value").unwrap();
    }
    assert_eq!(e.get(&make_key(5, 16)).unwrap(), Some(5));
    assert_eq!(e.get(&make_key(1000, 16)).unwrap(), None);
    e.delete(&make_key(5, 16)).unwrap();
    assert_eq!(e.get(&make_key(5, 16)).unwrap(), None);
    e.write_batch(&[
        BatchOp::Put(make_key(200, 16), b"x".to_vec()),
        BatchOp::Delete(make_key(6, 16)),
    ])
    .unwrap();
    assert_eq!(e.get(&make_key(200, 16)).unwrap(), Some(1));
    assert_eq!(e.get(&make_key(6, 16)).unwrap(), None);
    // Keys 0..100 less 5 and 6, then 200.
    let (n, bytes) = e.scan(&make_key(0, 16), 10).unwrap();
    assert_eq!(n, 10);
    assert_eq!(bytes, 10 * 21);
    let (n, _) = e.scan(&make_key(98, 16), 10).unwrap();
    assert_eq!(n, 3);
    let mut keys = Vec::new();
    e.iterate(&[], &mut |k, _| {
        keys.push(crate::keys::decode_key(k).unwrap());
        true
    })
    .unwrap();
    assert_eq!(keys.len(), 99);
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
    assert!(!keys.contains(&5) && !keys.contains(&6) && keys.contains(&200));
    e.flush().unwrap();
    assert_eq!(e.get(&make_key(7, 16)).unwrap(), Some(5));
    assert!(dir_size(e.data_dir()) > 0);
    e.close().unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_parse_and_validate() {
        assert_eq!(parse_engines("strata"), Ok(vec![EngineKind::Strata]));
        let e = parse_engines("strata,leveldb").unwrap_err();
        assert!(e.0.contains("unknown engine"), "{e}");
        assert!(e.0.contains("leveldb"), "{e}");
        assert!(parse_engines("strata,strata").is_err());
        assert!(parse_engines("").is_err());
        if !cfg!(feature = "rocksdb") {
            let e = parse_engines("strata,rocksdb").unwrap_err();
            assert!(e.0.contains("--features rocksdb"), "{e}");
        }
        if !cfg!(feature = "fjall") {
            let e = parse_engines("fjall").unwrap_err();
            assert!(e.0.contains("--features fjall"), "{e}");
        }
    }

    #[test]
    fn dir_size_walks_subdirectories() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), [0u8; 100]).unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/b"), [0u8; 23]).unwrap();
        let u = dir_usage(d.path());
        assert_eq!(u.apparent, 123);
        assert!(u.allocated >= 123, "{u:?}");
        assert_eq!(dir_usage(&d.path().join("missing")), DiskUsage::default());
    }
}
