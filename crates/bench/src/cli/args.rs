//! `strata-bench`'s arguments (clap): the commands, a suite's flags and
//! the benchmark flags every run takes.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::engine::EngineKind;
use crate::memsuite;
use crate::settings::{parse_count, parse_size};
use crate::workload::Workload;

/// db_bench- and YCSB-style benchmarks of Strata, optionally against
/// RocksDB (feature `rocksdb`) and fjall (feature `fjall`).
#[derive(Parser, Debug)]
#[command(name = "strata-bench", version, args_conflicts_with_subcommands = true)]
#[command(after_help = after_help())]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub args: BenchArgs,
}

fn after_help() -> String {
    let ws: Vec<String> = Workload::ALL
        .iter()
        .map(|w| format!("  {:<17} {}", w.name(), w.describe()))
        .collect();
    let engines: Vec<String> = EngineKind::ALL
        .iter()
        .map(|e| {
            format!(
                "  {:<8} {}",
                e.name(),
                if e.compiled() {
                    "compiled in".to_string()
                } else {
                    format!(
                        "not compiled in (build with --features {})",
                        e.feature().unwrap_or("?")
                    )
                }
            )
        })
        .collect();
    format!(
        "Workloads:\n{}\n\nEngines:\n{}\n\nSuites:\n  quick  50k keys, fillrandom,readrandom,seekrandom,readseq,ycsb-a (seconds)\n  \
         kv     5M keys 16B/100B, 2 threads: fillrandom,readrandom,seekrandom,ycsb-a,ycsb-b over every compiled engine\n  \
         memtable  the memory-buffer study's in-memory experiment over every memtable kind (and RocksDB's four\n            \
         with --engines strata,rocksdb): 744K inserts of 8B/120B into a 192 MiB buffer, 50K empty and 50K\n            \
         non-empty point queries, 1,000 range queries of selectivity 0.1%, sequential and interleaved; then\n            \
         the adaptive kind on three workload mixes (--num scales everything; --max-phase-secs, --max-stream-secs, --parts)\n  \
         shortrange  5M keys loaded by fillrandom, then scans of --scan-lengths 1,10,50,100 entries with uniform\n            \
         and zipfian start keys and 50/50 scan/overwrite mixes; Strata as --variants none,retention,reduction,both,\n            \
         peers as default; each workload --reads (250,000) operations, at most --max-phase-secs (60) s",
        ws.join("\n"),
        engines.join("\n")
    )
}

/// Subcommands.
#[derive(Subcommand, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Runs a named suite (quick, kv, memtable, shortrange); flags given override the
    /// suite's.
    Suite(SuiteArgs),
    /// Draws charts from a JSON results file.
    Plot(PlotArgs),
}

/// `suite` flags.
#[derive(Args, Debug)]
pub struct SuiteArgs {
    /// The suite: quick, kv, memtable, shortrange, htap, advisor, opd,
    /// production or joins.
    #[arg(long)]
    pub suite: String,
    /// memtable suite: the longest one phase may run (seconds); a phase that
    /// runs out stops and reports the operations it did.
    #[arg(long, default_value_t = memsuite::DEFAULT_BUDGET_SECS)]
    pub max_phase_secs: f64,
    /// memtable suite: the longest the interleaved stream of one kind may
    /// run (seconds).
    #[arg(long, default_value_t = memsuite::DEFAULT_STREAM_BUDGET_SECS)]
    pub max_stream_secs: f64,
    /// memtable suite: the parts to run, comma-separated: experiment (the
    /// study's sequential and interleaved runs), mixes (the adaptive
    /// comparison).
    #[arg(long, default_value = "experiment,mixes")]
    pub parts: String,
    /// memtable suite: rounds of each adaptive mix and kind (the median by
    /// ops/s is reported).
    #[arg(long, default_value_t = 3)]
    pub mix_rounds: u32,
    /// shortrange suite: Strata's variants, comma-separated: none,
    /// retention, reduction, both.
    #[arg(long, default_value = "none,retention,reduction,both")]
    pub variants: String,
    /// shortrange suite: the scan lengths (entries per scan).
    #[arg(long, default_value = "1,10,50,100")]
    pub scan_lengths: String,
    /// htap suite: Strata's designs, comma-separated: layout presets
    /// (row, column, groups:N, row-then-column:L), `advisor` (the advice
    /// from the row design's run; needs row first) and `auto`.
    #[arg(
        long,
        default_value = "row,column,groups:6,row-then-column:6,advisor,auto"
    )]
    pub designs: String,
    /// htap suite: the peers, comma-separated: strata-sql (Strata through
    /// SQL, prepared statements, on the first design's layout),
    /// strata-sql-text (the same, statements sent as text), sqlite (needs
    /// --features sqlite or peers), duckdb (the duckdb Python package).
    /// The sql suite's default: strata-sql,strata-sql-text,sqlite,duckdb.
    #[arg(long, default_value = "")]
    pub htap_peers: String,
    /// htap suite: the 100-column table instead of 30 columns.
    #[arg(long)]
    pub wide: bool,
    /// htap suite: inserts of the mix (default: --num / 20).
    #[arg(long, value_parser = count_arg)]
    pub mix_inserts: Option<u64>,
    /// htap suite: inserts per second of the mix.
    #[arg(long, default_value_t = 10_000.0)]
    pub insert_rate: f64,
    /// htap suite: Q4 queries (sums over 5 % of the keys).
    #[arg(long, default_value_t = 12)]
    pub q4: usize,
    /// htap suite: Q5 queries (maxima over 50 % of the keys).
    #[arg(long, default_value_t = 12)]
    pub q5: usize,
    /// htap suite: J queries (the table joined with a second table of
    /// every 100th key); the sql suite's default is 6.
    #[arg(long, default_value_t = 0)]
    pub joins: usize,
    /// htap suite: threads each Strata scan (Q4, Q5) reads its key range
    /// on (`ScanOptions::threads`); DuckDB uses every core.
    #[arg(long, default_value_t = 1)]
    pub scan_threads: usize,
    /// opd suite: the engines, comma-separated: strata-dict, strata-plain,
    /// strata-dict-always, rocksdb-none, rocksdb-lz4, rocksdb-zstd-dict,
    /// blobdb (the RocksDB ones need --features rocksdb or peers).
    #[arg(
        long,
        default_value = "strata-dict,strata-plain,rocksdb-none,rocksdb-lz4,rocksdb-zstd-dict,blobdb"
    )]
    pub opd_engines: String,
    /// opd suite: the share of distinct values among the entries.
    #[arg(long, default_value_t = 0.01)]
    pub distinct: f64,
    /// opd suite: draw values Zipfian instead of uniformly.
    #[arg(long)]
    pub zipf: bool,
    /// opd suite: filters per engine (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub filters: usize,
    /// opd suite: operations of the HTAP mix.
    #[arg(long, default_value_t = 200_000)]
    pub mix_ops: u64,
    /// opd suite: the shares of distinct values of the sweep (empty: no
    /// sweep).
    #[arg(long, default_value = "0.001,0.01,0.05,0.1,0.2,0.5,1")]
    pub sweep: String,
    /// opd suite: entries of each sweep point (default: --num / 4).
    #[arg(long, value_parser = count_arg)]
    pub sweep_num: Option<u64>,
    /// opd suite: rows of the table phase (dictionary-encoded string
    /// columns of a table against plain ones, SQLite and DuckDB; default
    /// --num, 0 skips it).
    #[arg(long, value_parser = count_arg)]
    pub opd_table_rows: Option<u64>,
    /// joins suite: the parts to run, comma-separated: datasets, entry,
    /// frequency, skew.
    #[arg(long, default_value = "datasets,entry,frequency,skew")]
    pub join_parts: String,
    /// joins suite: threads each Strata join may use (`Join::threads`: a
    /// nested loop's lookups, scans in parts, hash partitions joined at
    /// once).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub join_threads: u64,
    /// joins suite: each Strata join's memory budget (the study's 16 MiB).
    /// A smaller one brings the study's proportion of data to memory (10
    /// million tuples against 16 MB) to this scale, where hash joins and
    /// sorts spill.
    #[arg(long, default_value = "16MiB", value_parser = size_arg)]
    pub join_memory: u64,
    /// joins suite: the datasets of the datasets part.
    #[arg(long, default_value = "unif,zipf,user,movie,face,wiki")]
    pub join_datasets: String,
    /// joins suite: the peers, comma-separated: sqlite (needs --features
    /// sqlite or peers), duckdb (the duckdb Python package).
    #[arg(long, default_value = "sqlite,duckdb")]
    pub join_peers: String,
    /// Writes a markdown section (machine, command, tables, ratios, charts)
    /// for docs/BENCHMARKS.md to this file.
    #[arg(long)]
    pub report: Option<PathBuf>,
    #[command(flatten)]
    pub args: BenchArgs,
}

/// `plot` flags.
#[derive(Args, Debug)]
pub struct PlotArgs {
    /// The JSON results file.
    #[arg(long)]
    pub json: PathBuf,
    /// Where the SVG charts go.
    #[arg(long)]
    pub plot: PathBuf,
}

fn size_arg(s: &str) -> std::result::Result<u64, String> {
    parse_size(s)
}

fn count_arg(s: &str) -> std::result::Result<u64, String> {
    parse_count(s)
}

/// Flags of a run (top level and `suite`).
#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// Comma-separated workloads, run in order on the same database.
    #[arg(long, default_value = "fillrandom,readrandom")]
    pub workloads: String,
    /// Comma-separated engines (only those compiled in).
    #[arg(long, default_value = "strata")]
    pub engines: String,
    /// Keys in the key space.
    #[arg(long, default_value = "1000000", value_parser = count_arg)]
    pub num: u64,
    /// Operations of read and YCSB workloads (default: --num).
    #[arg(long, value_parser = count_arg)]
    pub reads: Option<u64>,
    /// Operations of overwrite and deleterandom (default: --num).
    #[arg(long, value_parser = count_arg)]
    pub writes: Option<u64>,
    /// Client threads (the operations are split across them).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Bytes per value.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Bytes per key (at least 8).
    #[arg(long, default_value_t = 16)]
    pub key_size: usize,
    /// Fraction of each value that is random (db_bench's compression ratio).
    #[arg(long, visible_alias = "compression-ratio", default_value_t = 0.5)]
    pub value_random_fraction: f64,
    /// Nexts after each seek in seekrandom (db_bench's --seek_nexts).
    #[arg(long, default_value_t = 10)]
    pub scan_length: usize,
    /// Fraction of readrandom lookups of absent keys.
    #[arg(long, default_value_t = 0.0)]
    pub miss_ratio: f64,
    /// Key distribution of YCSB workloads: uniform or zipfian (D always
    /// reads the latest keys).
    #[arg(long, default_value = "zipfian")]
    pub distribution: String,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Memtable bytes before a flush (e.g. 64MiB).
    #[arg(long, default_value = "64MiB", value_parser = size_arg)]
    pub write_buffer_size: u64,
    /// Size ratio T between adjacent levels.
    #[arg(long, default_value_t = 10)]
    pub size_ratio: u64,
    /// Bloom filter bits per key (0: none).
    #[arg(long, default_value_t = 10)]
    pub bloom_bits: u32,
    /// Data block size.
    #[arg(long, default_value = "4096", value_parser = size_arg)]
    pub block_size: u64,
    /// Block cache size.
    #[arg(long, default_value = "64MiB", value_parser = size_arg)]
    pub cache_size: u64,
    /// Block compression: none, lz4 or zstd.
    #[arg(long, default_value = "none")]
    pub compression: String,
    /// Skip the write-ahead log.
    #[arg(long)]
    pub disable_wal: bool,
    /// fsync the log on every write.
    #[arg(long)]
    pub sync: bool,
    /// Strata memtable kind(s), comma-separated or `all`; each is a variant.
    #[arg(long)]
    pub memtable: Option<String>,
    /// Hash memtables (and adaptive): hash on the first N key bytes (a fixed
    /// prefix extractor). Default for those kinds: 6, the memory-buffer
    /// study's prefix length (see settings::DEFAULT_PREFIX_LEN).
    #[arg(long, value_name = "N")]
    pub prefix_len: Option<usize>,
    /// Hash memtables: buckets (default: the engine's; the memtable suite
    /// uses the study's 100,000).
    #[arg(long, value_name = "N")]
    pub hash_buckets: Option<usize>,
    /// hash-linklist: entries after which a bucket becomes a skiplist
    /// (default 256).
    #[arg(long, value_name = "N")]
    pub linklist_threshold: Option<usize>,
    /// Memtables' whole-key Bloom filter, as a fraction of the write buffer
    /// (default: the engine's, 1/64 in Strata and the matched RocksDB;
    /// 0: none; the memtable suite runs without one).
    #[arg(long, value_name = "RATIO")]
    pub memtable_filter: Option<f64>,
    /// Read table files through memory mappings (default true: Strata's
    /// `Options::mmap_reads`, and `allow_mmap_reads` in the matched RocksDB;
    /// `rocksdb-defaults` keeps RocksDB's `pread`).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub mmap_reads: bool,
    /// With zstd: Strata's dictionary trained per table file, in bytes
    /// (`zstd_dictionary_bytes`; default 16384, Strata's default; 0: none).
    #[arg(long, value_name = "BYTES", default_value_t = 16384)]
    pub zstd_dict_bytes: usize,
    /// With zstd: give the matched RocksDB a dictionary per file too, of
    /// `--zstd-dict-bytes` (`max_dict_bytes`, trained on 16 times that,
    /// `zstd_max_train_bytes`). Off by default: RocksDB read 0.67-0.75x as
    /// fast with one (docs/BENCHMARKS.md), so the matched RocksDB keeps its
    /// faster setting.
    #[arg(long, value_name = "BOOL", default_value_t = false, action = clap::ArgAction::Set)]
    pub rocksdb_zstd_dict: bool,
    /// Strata: keep flushed memtables to serve their level-0 files
    /// (`retain_flushed_memtables`; the shortrange suite sets it per variant).
    #[arg(long)]
    pub retain_memtables: bool,
    /// Strata: iterator reduction (`iterator_reduction`, on by default as in
    /// the engine; the shortrange suite sets it per variant).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub iterator_reduction: bool,
    /// Strata: byte budget of the level filter table (`level_filter_bytes`;
    /// default: the engine's, 1 MiB).
    #[arg(long, value_name = "BYTES")]
    pub level_filter_bytes: Option<usize>,
    /// Strata: let each part of iterator reduction idle while it does not
    /// pay (`reduction_gates`); false keeps them in use by every scan.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub reduction_gates: bool,
    /// Root directory of the databases (each engine gets a subdirectory).
    #[arg(long, default_value = "./data/bench")]
    pub db: PathBuf,
    /// Keep existing databases instead of wiping them.
    #[arg(long)]
    pub use_existing: bool,
    /// Before a workload that only reads, wait until every engine has
    /// finished the flushes and compactions of the writes before it
    /// (db_bench's waitforcompaction). On in the production suite.
    #[arg(long)]
    pub settle_reads: bool,
    /// Rounds; engines alternate order each round; the median is reported.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Appends one JSON object per line per (engine, variant, workload, round).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Draws SVG charts into this directory (from --json when given).
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// No progress bars.
    #[arg(long)]
    pub no_progress: bool,
}
