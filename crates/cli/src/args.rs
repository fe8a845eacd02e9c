//! The `strata` command line's arguments: the commands and the flags
//! every command takes (clap), and the database options they give.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use strata::{
    Compression, Error, FixedPrefix, MemTableKind, Options, WalRecoveryMode, WriteOptions,
};

use crate::encoding::decode_token;
use crate::filter::FilterArgs;
use crate::table::TableCommand;

/// Inspect and edit a Strata database.
///
/// Keys and values starting with 0x are hex (0x alone is the empty string);
/// on output, a key or value that is not printable UTF-8 without whitespace
/// (or that starts with 0x, or is empty) is printed as 0x + lowercase hex.
#[derive(Debug, Parser)]
#[command(name = "strata", version)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: CliCommand,
}

/// Flags accepted by every command.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Directory of the database.
    #[arg(long, global = true, value_name = "PATH", default_value = "./data")]
    pub db: PathBuf,
    /// Bytes a memtable holds before it is flushed (suffixes K, M, G allowed).
    #[arg(long, global = true, value_name = "BYTES", value_parser = parse_size)]
    pub write_buffer_size: Option<u64>,
    /// Byte budget of the block cache, 0 for none (suffixes K, M, G allowed).
    #[arg(long, global = true, value_name = "BYTES", value_parser = parse_size)]
    pub block_cache_size: Option<u64>,
    /// Block compression of new table files: none, lz4 or zstd.
    #[arg(long, global = true, value_name = "CODEC", value_parser = parse_compression)]
    pub compression: Option<Compression>,
    /// fsync the write-ahead log before acknowledging each write.
    #[arg(long, global = true)]
    pub sync: bool,
    /// Memtable representation: skiplist, vector, vector-static,
    /// vector-sorted, vector-unsorted, hash-skiplist, hash-linklist or
    /// adaptive. The hash kinds need --prefix-len.
    #[arg(long, global = true, value_name = "KIND", value_parser = parse_memtable)]
    pub memtable: Option<MemTableKind>,
    /// Hash memtables (and adaptive): hash on the first N bytes of each key
    /// (a fixed prefix extractor; shorter keys are refused).
    #[arg(long, global = true, value_name = "N")]
    pub prefix_len: Option<usize>,
    /// Hash memtables: number of buckets (default: one per 4 entries that
    /// fit the write buffer).
    #[arg(long, global = true, value_name = "N")]
    pub hash_buckets: Option<usize>,
    /// hash-linklist: entries after which a bucket becomes a skiplist
    /// (default 256).
    #[arg(long, global = true, value_name = "N")]
    pub linklist_threshold: Option<usize>,
    /// Fail instead of creating a database when PATH holds none.
    #[arg(long, global = true)]
    pub no_create: bool,
    /// Salvage mode: at open, verify every table file and move the corrupt
    /// ones to PATH/lost/ instead of failing; each one is reported on
    /// standard error with the key range whose data may be lost or stale.
    /// The rest of the database stays readable and writable. A missing
    /// CURRENT is rebuilt from the newest readable manifest. Exits 1 when
    /// anything was set aside.
    #[arg(long, global = true)]
    pub salvage: bool,
    /// Open without changing anything on disk (no lock, no log replay into
    /// files, no cleanup): works on read-only storage and while another
    /// process has the database open. `get`, `scan`, `stats`, `check` and
    /// `table get|scan|describe|list|advise` always open this way (unless
    /// --salvage).
    #[arg(long, global = true)]
    pub read_only: bool,
    /// Read table files with a system call per block instead of through
    /// memory mappings: slower, but a failing disk then gives read errors
    /// instead of ending the process. The `check` command always reads this
    /// way (the shell's `check` reads the session's database as it was
    /// opened).
    #[arg(long, global = true)]
    pub no_mmap: bool,
    /// What recovery does with damage in a write-ahead log: torn-tail (the
    /// default: drop only an incomplete last record; refuse any other
    /// damage), absolute (refuse any damage), point-in-time (stop at the
    /// first damage) or skip-damaged (skip damaged records). The last two
    /// keep the damaged log in PATH/lost/ and report what they dropped.
    #[arg(long, global = true, value_name = "MODE", value_parser = parse_wal_recovery)]
    pub wal_recovery: Option<WalRecoveryMode>,
    /// Store the default keyspace's values dictionary-encoded in new table
    /// files: each file keeps its distinct values once, sorted, and a code
    /// per entry (when few enough are distinct, see --max-distinct-ratio).
    /// Filters then run on codes.
    #[arg(long, global = true)]
    pub value_dictionary: bool,
    /// With --value-dictionary: the largest share of distinct values among
    /// a file's values for which it gets a dictionary (default 0.25).
    #[arg(
        long,
        global = true,
        value_name = "RATIO",
        requires = "value_dictionary"
    )]
    pub max_distinct_ratio: Option<f64>,
}

/// A key or value given on the command line, already decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bytes(pub Vec<u8>);

fn parse_bytes(s: &str) -> Result<Bytes, String> {
    decode_token(s).map(Bytes)
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum CliCommand {
    /// Set KEY to VALUE.
    Put {
        #[arg(allow_hyphen_values = true, value_parser = parse_bytes)]
        key: Bytes,
        #[arg(allow_hyphen_values = true, value_parser = parse_bytes)]
        value: Bytes,
    },
    /// Print the value of KEY; prints (not found) and exits 1 when absent.
    Get {
        #[arg(allow_hyphen_values = true, value_parser = parse_bytes)]
        key: Bytes,
    },
    /// Delete KEY.
    Delete {
        #[arg(allow_hyphen_values = true, value_parser = parse_bytes)]
        key: Bytes,
    },
    /// Print KEY<TAB>VALUE lines for keys in [FROM, TO), in key order.
    Scan {
        /// Inclusive lower bound (default: the first key).
        #[arg(long, value_name = "KEY", allow_hyphen_values = true, value_parser = parse_bytes)]
        from: Option<Bytes>,
        /// Exclusive upper bound (default: past the last key).
        #[arg(long, value_name = "KEY", allow_hyphen_values = true, value_parser = parse_bytes)]
        to: Option<Bytes>,
        /// Print at most N entries.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
    },
    /// Read KEY<TAB>VALUE lines from standard input and write them in batches.
    ///
    /// The key ends at the first tab; the value is the rest of the line (it
    /// may hold spaces). Either is hex when it starts with 0x. Blank lines
    /// are skipped; the first malformed line stops the load (batches before
    /// it stay written) with exit code 1.
    Load,
    /// Flush memtables to table files.
    Flush,
    /// Compact the whole key range.
    Compact,
    /// Print KEY<TAB>VALUE lines for the keys in [--from, --to) whose value
    /// matches a predicate (--eq, --range, --prefix or --in), in key order.
    /// In a keyspace created with --value-dictionary the predicate runs on
    /// dictionary codes.
    Filter(FilterArgs),
    /// Print statistics.
    Stats,
    /// Verify the checksums of every table file (never creates a database).
    Check,
    /// Read commands from standard input, one per line (try `help`).
    Shell,
    /// A tour of what Strata is for: creates a table whose layout changes
    /// as data ages, loads it, reads it by key and by scan, updates a
    /// column, and asks the layout advisor (replaces an earlier demo's
    /// `readings` table).
    Demo {
        /// Rows to load.
        #[arg(long, default_value_t = 1_000_000)]
        rows: u64,
    },
    /// Tables: create, import CSV, get, scan, update, delete, describe,
    /// list, advise, set-layout, drop (try `strata table --help`).
    Table {
        #[command(flatten)]
        cells: crate::cells::CellArgs,
        #[command(subcommand)]
        command: TableCommand,
    },
    /// Secondary indexes: create, drop, describe, lookup (try
    /// `strata index --help`).
    Index {
        #[command(flatten)]
        cells: crate::cells::CellArgs,
        #[command(subcommand)]
        command: crate::index::IndexCommand,
    },
    /// Join two tables on a column each: LEFT.COL RIGHT.COL, with the
    /// planner's method or --method; --explain shows the plan.
    Join(crate::join::JoinArgs),
    /// SQL on the database's tables: an interactive shell with line
    /// editing and history (`\?` for help), or the statements of
    /// -c QUERY or of standard input. Exits 1 when a statement fails.
    Sql {
        /// Run these statements (separated by `;`) and exit.
        #[arg(short = 'c', long = "command", value_name = "QUERY")]
        command: Option<String>,
        /// Memory the queries may hold at once (hash tables, sorts, rows
        /// gathered for a write); a query needing more fails (suffixes K,
        /// M, G allowed; default 1G).
        #[arg(long, value_name = "BYTES", value_parser = parse_size)]
        memory_limit: Option<u64>,
    },
    /// Serve the database over the PostgreSQL wire protocol, for psql,
    /// psycopg, JDBC and BI tools; stops cleanly on SIGINT or SIGTERM.
    Serve(crate::serve::ServeArgs),
}

/// Parses a byte count such as 4096, 64K or 16MiB (for flags of other
/// modules).
pub(crate) fn parse_size_arg(s: &str) -> Result<u64, String> {
    parse_size(s)
}

fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let lower = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let (digits, mult): (&str, u64) = match lower.char_indices().last() {
        Some((i, 'k')) => (&lower[..i], 1 << 10),
        Some((i, 'm')) => (&lower[..i], 1 << 20),
        Some((i, 'g')) => (&lower[..i], 1 << 30),
        Some((i, 't')) => (&lower[..i], 1 << 40),
        _ => (lower, 1),
    };
    let too_large = || format!("{s:?} is too large (at most {} bytes)", u64::MAX);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        let n: u64 = digits.parse().map_err(|_| too_large())?;
        return n.checked_mul(mult).ok_or_else(too_large);
    }
    Err(format!(
        "{s:?} is not a byte count (examples: 4096, 64K, 64MiB, 1G)"
    ))
}

fn parse_wal_recovery(s: &str) -> Result<WalRecoveryMode, String> {
    s.parse::<WalRecoveryMode>()
}

/// Library option names as the user typed them: the flags that set them.
const OPTION_FLAGS: &[(&str, &str)] = &[
    ("memtable_options.prefix_extractor", "--prefix-len"),
    ("memtable_options.hash_buckets", "--hash-buckets"),
    (
        "memtable_options.linklist_threshold",
        "--linklist-threshold",
    ),
    ("write_buffer_size", "--write-buffer-size"),
    ("block_cache_bytes", "--block-cache-size"),
];

/// An option error from the library, in the flags' words.
fn flag_error(message: &str) -> String {
    let mut m = message.to_string();
    for (option, flag) in OPTION_FLAGS {
        m = m.replace(option, flag);
    }
    if m.contains("prefix extractor") && !m.contains("set --prefix-len") {
        m.push_str(" (set --prefix-len N)");
    }
    format!("invalid option value: {m}")
}

fn parse_compression(s: &str) -> Result<Compression, String> {
    s.parse::<Compression>().map_err(|e| e.to_string())
}

fn parse_memtable(s: &str) -> Result<MemTableKind, String> {
    s.parse::<MemTableKind>().map_err(|e| e.to_string())
}

impl GlobalArgs {
    /// Database options from the flags, validated.
    pub fn options(&self) -> Result<Options, String> {
        let mut o = Options {
            create_if_missing: !self.no_create,
            skip_corrupt_tables: self.salvage,
            read_only: self.read_only,
            mmap_reads: !self.no_mmap,
            ..Options::default()
        };
        if self.read_only && self.salvage {
            return Err("--read-only and --salvage cannot be combined: salvage moves files".into());
        }
        if let Some(m) = self.wal_recovery {
            o.wal_recovery = m;
        }
        if let Some(b) = self.block_cache_size {
            o.block_cache_bytes = b;
        }
        let ks = &mut o.default_keyspace;
        if let Some(w) = self.write_buffer_size {
            ks.write_buffer_size = usize::try_from(w)
                .map_err(|_| format!("--write-buffer-size {w} does not fit this machine"))?;
        }
        if let Some(c) = self.compression {
            ks.compression = c;
        }
        if let Some(m) = self.memtable {
            ks.memtable = m;
        }
        if self.value_dictionary {
            let r = self
                .max_distinct_ratio
                .unwrap_or(strata::ValueDictionaryLayout::DEFAULT_MAX_DISTINCT_RATIO);
            let layout = strata::ValueDictionaryLayout::new(r)
                .map_err(|e| format!("invalid option value: --max-distinct-ratio: {e}"))?;
            ks.layout = Arc::new(layout);
        }
        // No default prefix: a hash kind without --prefix-len gets the
        // library's own error (it names the prefix extractor it needs).
        let mo = &mut ks.memtable_options;
        if let Some(n) = self.prefix_len {
            if n == 0 {
                return Err("invalid option value: --prefix-len must be at least 1".into());
            }
            mo.prefix_extractor = Some(Arc::new(FixedPrefix::new(n)));
        }
        if let Some(n) = self.hash_buckets {
            if n == 0 {
                return Err("invalid option value: --hash-buckets must be at least 1".into());
            }
            mo.hash_buckets = n;
        }
        if let Some(n) = self.linklist_threshold {
            mo.linklist_threshold = n;
        }
        o.validate().map_err(|e| match e {
            Error::InvalidArgument(s) => flag_error(&s),
            e => e.to_string(),
        })?;
        Ok(o)
    }

    /// Write options from the flags.
    pub fn write_options(&self) -> WriteOptions {
        WriteOptions {
            sync: self.sync,
            ..WriteOptions::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn global(args: &[&str]) -> GlobalArgs {
        let argv = ["strata"].iter().chain(args).chain(&["stats"]);
        match Cli::try_parse_from(argv) {
            Ok(cli) => cli.global,
            Err(e) => panic!("{args:?}: {e}"),
        }
    }

    #[test]
    fn memtable_parameter_flags_map_onto_memtable_options() {
        let o = global(&[
            "--memtable",
            "hash-linklist",
            "--prefix-len",
            "6",
            "--hash-buckets",
            "100000",
            "--linklist-threshold",
            "64",
        ])
        .options()
        .unwrap_or_else(|e| panic!("{e}"));
        let ks = &o.default_keyspace;
        assert_eq!(ks.memtable, MemTableKind::HashLinkList);
        let mo = &ks.memtable_options;
        assert_eq!(mo.hash_buckets, 100_000);
        assert_eq!(mo.linklist_threshold, 64);
        let x = mo.prefix_extractor.as_ref().map(|x| x.name().to_string());
        assert_eq!(x.as_deref(), Some("fixed:6"));
        // Defaults stay the library's.
        let d = global(&[]).options().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            d.default_keyspace
                .memtable_options
                .prefix_extractor
                .is_none()
        );
        assert_eq!(d.default_keyspace.memtable_options.hash_buckets, 0);
    }

    #[test]
    fn hash_kind_without_prefix_len_keeps_the_library_error() {
        for kind in ["hash-skiplist", "hash-linklist"] {
            let e = global(&["--memtable", kind])
                .options()
                .expect_err("needs a prefix extractor");
            assert!(e.contains("prefix extractor"), "{e}");
            assert!(e.starts_with("invalid option value"), "{e}");
        }
        let e = global(&["--memtable", "hash-skiplist", "--prefix-len", "0"])
            .options()
            .expect_err("zero prefix");
        assert!(e.contains("--prefix-len"), "{e}");
        let e = global(&[
            "--memtable",
            "hash-linklist",
            "--prefix-len",
            "4",
            "--linklist-threshold",
            "0",
        ])
        .options()
        .expect_err("zero threshold");
        assert!(e.contains("--linklist-threshold"), "{e}");
    }
}
