//! Every option common to the engines and workloads, in one struct that is
//! stored with each result.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Block compression, as each engine names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompressionKind {
    #[default]
    None,
    Lz4,
    Zstd,
}

impl fmt::Display for CompressionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CompressionKind::None => "none",
            CompressionKind::Lz4 => "lz4",
            CompressionKind::Zstd => "zstd",
        })
    }
}

impl FromStr for CompressionKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "none" => Ok(CompressionKind::None),
            "lz4" => Ok(CompressionKind::Lz4),
            "zstd" => Ok(CompressionKind::Zstd),
            _ => Err(Error(format!(
                "unknown compression {s:?} (expected none, lz4 or zstd)"
            ))),
        }
    }
}

/// How YCSB workloads choose existing keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    Uniform,
    /// YCSB's scrambled zipfian, theta 0.99 (YCSB's default).
    #[default]
    Zipfian,
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Distribution::Uniform => "uniform",
            Distribution::Zipfian => "zipfian",
        })
    }
}

impl FromStr for Distribution {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "uniform" => Ok(Distribution::Uniform),
            "zipfian" => Ok(Distribution::Zipfian),
            _ => Err(Error(format!(
                "unknown distribution {s:?} (expected uniform or zipfian)"
            ))),
        }
    }
}

/// Prefix length (bytes) strata-bench gives the hash memtables (and the
/// adaptive kind, which may pick one) when `--prefix-len` is not set: the
/// memory-buffer study's in-memory experiment hashed on 6-byte prefixes.
///
/// In the `memtable` suite keys are 8-byte big-endian images of uniformly
/// random u64s, so 6-byte prefixes are all but unique (744K keys among 2^48
/// prefixes): a bucket holds the keys whose prefixes hash to it, a handful
/// each with the study's 100,000 buckets, and point reads walk one short
/// bucket. The other workloads' keys are big-endian *indexes* (`0..num`),
/// whose 6-byte prefixes group 2^16 (8-byte keys) consecutive keys: their
/// hash buckets are long, which is the honest cost of that key shape; pass
/// `--prefix-len` to change it. The library itself has no default and
/// refuses a hash kind without an extractor (the `strata` CLI keeps that
/// error).
pub const DEFAULT_PREFIX_LEN: usize = 6;

/// Every common option of a benchmark run. Engines map what they can and
/// record what they cannot in their notes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchSettings {
    /// Keys in the key space (fill workloads write each once).
    pub num: u64,
    /// Operations of read and YCSB workloads.
    pub reads: u64,
    /// Operations of overwrite and deleterandom.
    pub writes: u64,
    /// Bytes per key (at least 8: a big-endian u64, zero padded).
    pub key_size: usize,
    /// Bytes per value.
    pub value_size: usize,
    /// Fraction of each value that is random bytes; the rest repeats them
    /// (db_bench's `--compression_ratio`).
    pub value_random_fraction: f64,
    /// Memtable bytes before a flush.
    pub write_buffer_size: u64,
    /// Size ratio `T` between adjacent levels.
    pub size_ratio: u64,
    /// Bloom filter bits per key (0: no filter).
    pub bloom_bits: u32,
    /// Data block size in bytes.
    pub block_size: usize,
    /// Block cache bytes.
    pub cache_size: u64,
    /// Block compression.
    pub compression: CompressionKind,
    /// Skip the write-ahead log.
    pub disable_wal: bool,
    /// fsync the log on every write.
    pub sync: bool,
    /// Client threads.
    pub threads: usize,
    /// Seed of every random choice.
    pub seed: u64,
    /// Strata memtable kind (None: the engine's default).
    pub memtable: Option<String>,
    /// `next` calls after each seek in seekrandom (db_bench's `--seek_nexts`).
    pub scan_length: usize,
    /// Fraction of readrandom lookups that target absent keys.
    pub miss_ratio: f64,
    /// Key distribution of YCSB workloads.
    pub distribution: Distribution,
    /// Fixed prefix (bytes) the hash memtables hash on; `None`: for the
    /// hash kinds and `adaptive`, [`DEFAULT_PREFIX_LEN`]; other kinds none.
    #[serde(default)]
    pub prefix_len: Option<usize>,
    /// Buckets of the hash memtables (`None`: the engine's default).
    #[serde(default)]
    pub hash_buckets: Option<usize>,
    /// Entries after which a hash-linklist bucket becomes a skiplist
    /// (`None`: the engine's default, 256 in both).
    #[serde(default)]
    pub linklist_threshold: Option<usize>,
    /// The memtables' whole-key Bloom filter as a fraction of the write
    /// buffer (`None`: the engine's default, 1/64 in Strata and in the
    /// matched RocksDB; 0: no filter).
    #[serde(default)]
    pub memtable_filter: Option<f64>,
    /// Table files read through memory mappings (Strata's
    /// `Options::mmap_reads`, the matched RocksDB's `allow_mmap_reads`).
    #[serde(default = "yes")]
    pub mmap_reads: bool,
    /// With zstd: the dictionary trained per table file (Strata's
    /// `zstd_dictionary_bytes`, the matched RocksDB's `max_dict_bytes`).
    #[serde(default)]
    pub zstd_dict_bytes: usize,
    /// The matched RocksDB trains a dictionary of `zstd_dict_bytes` too.
    #[serde(default)]
    pub rocksdb_zstd_dict: bool,
    /// Strata: keep flushed memtables to serve their level-0 files
    /// (`KeyspaceOptions::retain_flushed_memtables`; the `shortrange`
    /// suite's `retention` and `both` variants).
    #[serde(default)]
    pub retain_memtables: bool,
    /// Strata: skip levels a scan cannot draw from
    /// (`KeyspaceOptions::iterator_reduction`, on by default; the
    /// shortrange suite's `reduction` and `both` variants). Records older
    /// than the field ran without it, which is what a missing field reads as.
    #[serde(default)]
    pub iterator_reduction: bool,
    /// Strata: byte budget of the level filter table
    /// (`KeyspaceOptions::level_filter_bytes`; `None`: the engine's default).
    #[serde(default)]
    pub level_filter_bytes: Option<usize>,
    /// Strata: whether the parts of iterator reduction may idle while they
    /// do not pay (`KeyspaceOptions::reduction_gates`). Records older than
    /// the field ran with the gates (or without reduction).
    #[serde(default = "gates_on")]
    pub reduction_gates: bool,
}

fn gates_on() -> bool {
    true
}

impl Default for BenchSettings {
    fn default() -> Self {
        BenchSettings {
            num: 1_000_000,
            reads: 1_000_000,
            writes: 1_000_000,
            key_size: 16,
            value_size: 100,
            value_random_fraction: 0.5,
            write_buffer_size: 64 << 20,
            size_ratio: 10,
            bloom_bits: 10,
            block_size: 4096,
            cache_size: 64 << 20,
            compression: CompressionKind::None,
            disable_wal: false,
            sync: false,
            threads: 1,
            seed: 42,
            memtable: None,
            scan_length: 10,
            miss_ratio: 0.0,
            distribution: Distribution::Zipfian,
            prefix_len: None,
            hash_buckets: None,
            linklist_threshold: None,
            memtable_filter: None,
            mmap_reads: true,
            zstd_dict_bytes: strata::KeyspaceOptions::default().zstd_dictionary_bytes,
            rocksdb_zstd_dict: false,
            retain_memtables: false,
            iterator_reduction: strata::KeyspaceOptions::default().iterator_reduction,
            level_filter_bytes: None,
            reduction_gates: true,
        }
    }
}

fn yes() -> bool {
    true
}

impl BenchSettings {
    /// Rejects settings no engine could run with.
    pub fn validate(&self) -> Result<()> {
        let bad = |s: String| Err(Error(s));
        if self.num == 0 {
            return bad("--num must be at least 1".into());
        }
        if self.key_size < 8 || self.key_size > 1024 {
            return bad(format!(
                "--key-size {} must be between 8 and 1024 (keys are a big-endian u64, padded)",
                self.key_size
            ));
        }
        if self.value_size > (64 << 20) {
            return bad("--value-size must be at most 64 MiB".into());
        }
        if !(0.0..=1.0).contains(&self.value_random_fraction) {
            return bad("--value-random-fraction must be between 0 and 1".into());
        }
        if !(0.0..=1.0).contains(&self.miss_ratio) {
            return bad("--miss-ratio must be between 0 and 1".into());
        }
        if self.threads == 0 || self.threads > 1024 {
            return bad("--threads must be between 1 and 1024".into());
        }
        if self.size_ratio < 2 {
            return bad("--size-ratio must be at least 2".into());
        }
        if self.write_buffer_size < 64 << 10 {
            return bad("--write-buffer-size must be at least 64 KiB".into());
        }
        if self.block_size < 256 || self.block_size > (16 << 20) {
            return bad("--block-size must be between 256 bytes and 16 MiB".into());
        }
        if self.sync && self.disable_wal {
            return bad(
                "--sync and --disable-wal cannot be combined: there is no log to sync \
                 (RocksDB rejects the combination too)"
                    .into(),
            );
        }
        if self.scan_length == 0 {
            return bad("--scan-length must be at least 1".into());
        }
        if let Some(p) = self.prefix_len
            && (p == 0 || p > self.key_size)
        {
            return bad(format!(
                "--prefix-len {p} must be between 1 and --key-size {} \
                 (a key shorter than its prefix is refused)",
                self.key_size
            ));
        }
        if self.hash_buckets == Some(0) {
            return bad("--hash-buckets must be at least 1".into());
        }
        if self.linklist_threshold == Some(0) {
            return bad("--linklist-threshold must be at least 1".into());
        }
        if let Some(r) = self.memtable_filter
            && !(0.0..=0.25).contains(&r)
        {
            return bad(format!(
                "--memtable-filter {r} must be between 0 (no filter) and 0.25 of the write buffer"
            ));
        }
        Ok(())
    }

    /// The prefix length the hash memtables use: `--prefix-len`, else
    /// [`DEFAULT_PREFIX_LEN`] (capped at the key size) when `kind` hashes
    /// on prefixes (the hash kinds, and `adaptive`, which may pick
    /// `hash-skiplist`); `None` for the other kinds without `--prefix-len`.
    pub fn effective_prefix_len(&self, kind: &str) -> Option<usize> {
        let hashing = matches!(kind, "hash-skiplist" | "hash-linklist" | "adaptive");
        self.prefix_len
            .or_else(|| hashing.then_some(DEFAULT_PREFIX_LEN.min(self.key_size)))
    }

    /// Bytes of one key plus one value.
    pub fn entry_bytes(&self) -> u64 {
        (self.key_size + self.value_size) as u64
    }
}

/// Parses sizes such as `4096`, `64k`, `64KiB`, `64M`, `1g` (powers of 1024).
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '_')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| format!("invalid size {s:?} (examples: 4096, 64k, 64MiB, 1g)"))?;
    let mult: u64 = match unit.trim() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("invalid size unit in {s:?} (use k, m or g)")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size {s:?} is too large"))
}

/// Parses counts such as `1000000`, `1_000_000`, `5m`, `50k` (powers of 1000).
pub fn parse_count(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim().to_ascii_lowercase().replace('_', "");
    let (num, mult) = match t.strip_suffix('k') {
        Some(n) => (n.to_string(), 1_000),
        None => match t.strip_suffix('m') {
            Some(n) => (n.to_string(), 1_000_000),
            None => (t.clone(), 1),
        },
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("invalid count {s:?} (examples: 200000, 50k, 5m)"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("count {s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_counts_parse() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert!(parse_size("12q").is_err());
        assert_eq!(parse_count("5m"), Ok(5_000_000));
        assert_eq!(parse_count("50k"), Ok(50_000));
        assert_eq!(parse_count("1_000"), Ok(1000));
        assert!(parse_count("x").is_err());
    }

    #[test]
    fn defaults_validate() {
        assert!(BenchSettings::default().validate().is_ok());
        let s = BenchSettings {
            key_size: 4,
            ..BenchSettings::default()
        };
        assert!(s.validate().is_err());
        let s = BenchSettings {
            sync: true,
            disable_wal: true,
            ..BenchSettings::default()
        };
        assert!(s.validate().is_err());
        for (p, b, t) in [
            (Some(0), None, None),
            (Some(17), None, None),
            (None, Some(0), None),
            (None, None, Some(0)),
        ] {
            let s = BenchSettings {
                prefix_len: p,
                hash_buckets: b,
                linklist_threshold: t,
                ..BenchSettings::default()
            };
            assert!(s.validate().is_err(), "{p:?} {b:?} {t:?}");
        }
    }

    #[test]
    fn hash_kinds_get_the_default_prefix() {
        let s = BenchSettings::default();
        assert_eq!(
            s.effective_prefix_len("hash-skiplist"),
            Some(DEFAULT_PREFIX_LEN)
        );
        assert_eq!(s.effective_prefix_len("adaptive"), Some(DEFAULT_PREFIX_LEN));
        assert_eq!(s.effective_prefix_len("skiplist"), None);
        let s = BenchSettings {
            prefix_len: Some(4),
            ..BenchSettings::default()
        };
        assert_eq!(s.effective_prefix_len("hash-linklist"), Some(4));
        assert_eq!(s.effective_prefix_len("vector"), Some(4));
    }
}
