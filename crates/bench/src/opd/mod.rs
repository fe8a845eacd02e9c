//! `strata-bench suite --suite opd`: computing on compressed values (seed
//! 002, LSM-OPD), scaled to this machine.
//!
//! Keys of 16 bytes with one string value of 128 bytes (`--value-size`),
//! `--distinct` of them distinct (1 %), drawn uniformly or (`--zipf`)
//! Zipfian; loaded in random order with compaction running, then:
//! a full compaction (time and bytes written), the space on disk, filters
//! selecting 1 % of the distinct values (`--filters` of them, the median
//! reported), point reads, scans of up to 100 entries, and the HTAP mix
//! (50 % updates, 40 % point reads, 10 % scans) with filters running
//! alongside. Engines (`--opd-engines`): Strata with dictionaries (the
//! default threshold), Strata without (plain values), and through the
//! `rocksdb` crate RocksDB without compression, with LZ4, with Zstd and its
//! dictionary compression, and BlobDB (values in blob files). A sweep over
//! shares of distinct values (`--sweep`, at `--sweep-num` entries) finds
//! the break-even of dictionaries and draws filter throughput against the
//! share. The filter kernel is measured against a plain loop over 4-byte
//! codes (this machine's single-core streaming limit) in the same run.

mod measure;
mod table;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use measure::{Dataset, EngineResult, KernelResult};

use crate::cli::SuiteArgs;
use crate::engine::{Engine, dir_usage};
use crate::report::{human_bytes, thousands};
use crate::settings::BenchSettings;
use crate::{Error, Result};

/// The suite's defaults.
pub fn apply_defaults(a: &mut crate::cli::BenchArgs, given: crate::cli::Given<'_>) {
    if !given("num") {
        a.num = 2_000_000;
    }
    if !given("reads") {
        a.reads = Some(200_000);
    }
    if !given("key_size") {
        a.key_size = 16;
    }
    if !given("value_size") {
        a.value_size = 128;
    }
    if !given("write_buffer_size") {
        a.write_buffer_size = 64 << 20;
    }
    if !given("cache_size") {
        a.cache_size = 64 << 20;
    }
    if !given("bloom_bits") {
        a.bloom_bits = 10;
    }
}

/// One engine configuration of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Strata, values dictionary-encoded (the default threshold).
    StrataDict,
    /// Strata, every file with a dictionary whatever its share of distinct
    /// values (the sweep's break-even).
    StrataDictAlways,
    /// Strata, plain values.
    StrataPlain,
    RocksNone,
    RocksLz4,
    RocksZstdDict,
    BlobDb,
}

impl Variant {
    const ALL: &'static [Variant] = &[
        Variant::StrataDict,
        Variant::StrataDictAlways,
        Variant::StrataPlain,
        Variant::RocksNone,
        Variant::RocksLz4,
        Variant::RocksZstdDict,
        Variant::BlobDb,
    ];

    /// The variant's name (in `--opd-engines` and reports).
    pub fn name(self) -> &'static str {
        match self {
            Variant::StrataDict => "strata-dict",
            Variant::StrataDictAlways => "strata-dict-always",
            Variant::StrataPlain => "strata-plain",
            Variant::RocksNone => "rocksdb-none",
            Variant::RocksLz4 => "rocksdb-lz4",
            Variant::RocksZstdDict => "rocksdb-zstd-dict",
            Variant::BlobDb => "blobdb",
        }
    }

    fn is_rocksdb(self) -> bool {
        !matches!(
            self,
            Variant::StrataDict | Variant::StrataDictAlways | Variant::StrataPlain
        )
    }

    /// Parses a comma-separated list.
    pub fn parse_list(s: &str) -> Result<Vec<Variant>> {
        s.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| {
                Variant::ALL
                    .iter()
                    .copied()
                    .find(|v| v.name() == p)
                    .ok_or_else(|| {
                        Error(format!(
                            "unknown opd engine {p:?} (known: {})",
                            Variant::ALL
                                .iter()
                                .map(|v| v.name())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })
            })
            .collect()
    }

    fn open(self, s: &BenchSettings, dir: &Path) -> Result<Arc<dyn Engine>> {
        use crate::engines::strata::StrataEngine;
        use crate::settings::CompressionKind;
        let plain = BenchSettings {
            compression: CompressionKind::None,
            ..s.clone()
        };
        Ok(match self {
            Variant::StrataDict => Arc::new(StrataEngine::open_value_dictionary(
                &plain,
                dir,
                strata::ValueDictionaryLayout::DEFAULT_MAX_DISTINCT_RATIO,
            )?),
            Variant::StrataDictAlways => {
                Arc::new(StrataEngine::open_value_dictionary(&plain, dir, 1.0)?)
            }
            Variant::StrataPlain => Arc::new(StrataEngine::open(&plain, dir)?),
            #[cfg(feature = "rocksdb")]
            v => rocks(v, s, dir)?,
            #[cfg(not(feature = "rocksdb"))]
            v => {
                return Err(Error(format!(
                    "{} needs the rocksdb feature: cargo run --release -p strata-bench \
                     --features rocksdb -- suite --suite opd",
                    v.name()
                )));
            }
        })
    }
}

/// The RocksDB variants: Strata's tree shape (`engines::rocksdb`) with the
/// variant's value storage.
#[cfg(feature = "rocksdb")]
fn rocks(v: Variant, s: &BenchSettings, dir: &Path) -> Result<Arc<dyn Engine>> {
    use crate::engines::rocksdb::RocksEngine;
    use crate::settings::CompressionKind;
    use rocksdb::DBCompressionType;
    let with = |c: CompressionKind| BenchSettings {
        compression: c,
        ..s.clone()
    };
    Ok(Arc::new(match v {
        Variant::RocksNone => RocksEngine::open(&with(CompressionKind::None), dir)?,
        Variant::RocksLz4 => RocksEngine::open(&with(CompressionKind::Lz4), dir)?,
        Variant::RocksZstdDict => {
            RocksEngine::open_tuned(&with(CompressionKind::Zstd), dir, &|o, notes| {
                // A 16 KiB dictionary per file, trained on up to 100× as
                // much sampled data (RocksDB's recommended setup).
                o.set_compression_options(-14, 3, 0, 16 << 10);
                o.set_zstd_max_train_bytes(100 * (16 << 10));
                o.set_bottommost_compression_type(DBCompressionType::Zstd);
                o.set_bottommost_compression_options(-14, 3, 0, 16 << 10, true);
                o.set_bottommost_zstd_max_train_bytes(100 * (16 << 10), true);
                notes.push(
                    "rocksdb-zstd-dict: Zstd level 3 with a 16 KiB dictionary per file \
                     (max_dict_bytes), trained on 1.6 MiB of samples (zstd_max_train_bytes)"
                        .into(),
                );
            })?
        }
        Variant::BlobDb => {
            RocksEngine::open_tuned(&with(CompressionKind::None), dir, &|o, notes| {
                o.set_enable_blob_files(true);
                o.set_min_blob_size(0);
                o.set_blob_file_size(256 << 20);
                o.set_enable_blob_gc(true);
                notes.push(
                    "blobdb: every value in blob files (enable_blob_files, min_blob_size 0, \
                 256 MiB blob files, blob GC on), uncompressed"
                        .into(),
                );
            })?
        }
        other => return Err(Error(format!("{} is not a RocksDB variant", other.name()))),
    }))
}

/// The suite's settings.
struct Config {
    settings: BenchSettings,
    share: f64,
    zipf: bool,
    variants: Vec<Variant>,
    filters: usize,
    mix_ops: u64,
    sweep: Vec<f64>,
    sweep_num: u64,
    table_rows: u64,
    db: PathBuf,
}

fn parse_shares(s: &str) -> Result<Vec<f64>> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.parse::<f64>()
                .ok()
                .filter(|x| *x > 0.0 && *x <= 1.0)
                .ok_or_else(|| Error(format!("--sweep: {p:?} is not a share in (0, 1]")))
        })
        .collect()
}

/// Runs one engine through every phase.
fn run_engine(v: Variant, c: &Config, d: &Arc<Dataset>) -> Result<(EngineResult, Vec<String>)> {
    let dir = c.db.join(v.name());
    let _ = std::fs::remove_dir_all(&dir);
    let s = &c.settings;
    let e = v.open(s, &dir)?;
    let mut r = EngineResult {
        label: v.name().into(),
        ..Default::default()
    };
    r.load_secs = measure::load(&*e, d, s.seed)?;
    r.dictionary_build_secs = e
        .stats()
        .extra
        .get("dictionary_build_micros")
        .and_then(|v| v.as_u64())
        .unwrap_or(0) as f64
        / 1e6;
    println!("opd: {}: loaded in {:.1} s", v.name(), r.load_secs);
    let before = measure::compaction_written(&*e);
    let t = std::time::Instant::now();
    e.compact_all()?;
    r.compact_secs = t.elapsed().as_secs_f64();
    r.compact_bytes = measure::compaction_written(&*e).saturating_sub(before);
    r.disk_bytes = dir_usage(&dir).allocated;
    // The filters read every file's dictionary once (the cache holds
    // them): what they load is the dictionaries' memory.
    let loaded = e.dictionary_bytes();
    (r.filter_secs, r.filter_matches) = measure::filters(&*e, d, c.filters, s.seed)?;
    r.dictionary_bytes = e.dictionary_bytes() - loaded;
    (r.read_mean_us, r.read_p99_us) = measure::point_reads(&*e, d, s.reads, s.seed)?;
    (r.scan_mean_us, r.scan_p99_us) = measure::scans(&*e, d, s.reads / 10, s.seed)?;
    (r.mix_ops_s, r.mix_filters) = measure::mix(&e, d, c.mix_ops, s.seed)?;
    println!(
        "opd: {}: compaction {:.1} s, {} on disk, filter {:.3} s ({} entries/s), read {:.1} us, scan {:.1} us, mix {} ops/s with {} filters",
        v.name(),
        r.compact_secs,
        human_bytes(r.disk_bytes),
        r.filter_secs,
        thousands(r.filter_entries_s(d.num)),
        r.read_mean_us,
        r.scan_mean_us,
        thousands(r.mix_ops_s),
        r.mix_filters
    );
    let notes = e.notes();
    e.close()?;
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
    Ok((r, notes))
}

/// One point of the sweep: a share of distinct values and per engine what
/// it measured.
struct SweepPoint {
    share: f64,
    results: Vec<(Variant, SweepResult)>,
}

/// One engine at one share.
#[derive(Clone, Copy, Debug, Default)]
struct SweepResult {
    /// Entries a filter passes over per second.
    filter: f64,
    /// Bytes on disk after a full compaction.
    disk: u64,
    /// Entries loaded per second.
    load: f64,
    /// Seconds of the full compaction.
    compact: f64,
}

fn run_sweep(c: &Config) -> Result<Vec<SweepPoint>> {
    let mut out = Vec::new();
    let variants: Vec<Variant> = [
        Variant::StrataDictAlways,
        Variant::StrataPlain,
        Variant::RocksNone,
    ]
    .into_iter()
    .filter(|v| cfg!(feature = "rocksdb") || !v.is_rocksdb())
    .collect();
    for &share in &c.sweep {
        let d = Dataset::new(
            c.sweep_num,
            share,
            c.settings.value_size,
            c.settings.key_size,
            c.zipf,
            c.settings.seed,
        );
        let mut results = Vec::new();
        let mut matches: Option<Vec<u64>> = None;
        for &v in &variants {
            let dir = c.db.join(format!("sweep-{}", v.name()));
            let _ = std::fs::remove_dir_all(&dir);
            let e = v.open(&c.settings, &dir)?;
            let load = measure::load(&*e, &d, c.settings.seed)?;
            let t = std::time::Instant::now();
            e.compact_all()?;
            let compact = t.elapsed().as_secs_f64();
            let disk = dir_usage(&dir).allocated;
            let (secs, m) = measure::filters(&*e, &d, 3, c.settings.seed)?;
            check_matches(&mut matches, &m, v.name())?;
            results.push((
                v,
                SweepResult {
                    filter: d.num as f64 / secs.max(1e-9),
                    disk,
                    load: d.num as f64 / load.max(1e-9),
                    compact,
                },
            ));
            e.close()?;
            drop(e);
            let _ = std::fs::remove_dir_all(&dir);
        }
        println!(
            "opd sweep: {:.1} % distinct: {}",
            share * 100.0,
            results
                .iter()
                .map(|(v, r)| format!(
                    "{} filter {} entries/s, {}, load {} entries/s, compaction {:.2} s",
                    v.name(),
                    thousands(r.filter),
                    human_bytes(r.disk),
                    thousands(r.load),
                    r.compact
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
        out.push(SweepPoint { share, results });
    }
    Ok(out)
}

/// Every engine must find the same matches: the filters are the same.
fn check_matches(first: &mut Option<Vec<u64>>, m: &[u64], who: &str) -> Result<()> {
    match first {
        None => *first = Some(m.to_vec()),
        Some(f) if f.as_slice() != m => {
            return Err(Error(format!(
                "{who}'s filters matched {m:?} entries, another engine's {f:?}: the engines disagree"
            )));
        }
        Some(_) => {}
    }
    Ok(())
}

/// Runs the suite.
pub fn run(sa: &SuiteArgs) -> Result<()> {
    let settings = crate::cli::settings_from_args(&sa.args)?;
    settings.validate()?;
    let c = Config {
        share: sa.distinct,
        zipf: sa.zipf,
        variants: Variant::parse_list(&sa.opd_engines)?,
        filters: sa.filters,
        mix_ops: sa.mix_ops,
        sweep: parse_shares(&sa.sweep)?,
        sweep_num: sa.sweep_num.unwrap_or(settings.num / 4).max(1000),
        table_rows: sa.opd_table_rows.unwrap_or(settings.num),
        db: sa.args.db.clone(),
        settings,
    };
    if !(c.share > 0.0 && c.share <= 1.0) {
        return Err(Error::msg("--distinct must be a share in (0, 1]"));
    }
    if !cfg!(feature = "rocksdb")
        && let Some(v) = c.variants.iter().find(|v| v.is_rocksdb())
    {
        return Err(Error(format!(
            "{} needs the rocksdb feature: cargo run --release -p strata-bench --features rocksdb \
             -- suite --suite opd (or --opd-engines strata-dict,strata-plain)",
            v.name()
        )));
    }
    let s = &c.settings;
    let d = Arc::new(Dataset::new(
        s.num,
        c.share,
        s.value_size,
        s.key_size,
        c.zipf,
        s.seed,
    ));
    println!(
        "opd: {} entries, {} distinct values of {} bytes ({}), {} engines",
        s.num,
        d.values.len(),
        s.value_size,
        if c.zipf { "zipfian" } else { "uniform" },
        c.variants.len()
    );
    // Codes of a file of the target size at this share: its width.
    let per_file = (64u64 << 20) / (s.key_size + s.value_size) as u64;
    let width = strata::dict::bitpack::width_for(((per_file as f64 * c.share) as u32).max(1));
    let k = measure::kernel(width, 1 << 25, 10);
    println!(
        "opd kernel: {} at {} bits: {:.2} G codes/s streaming ({:.2} G 4-byte codes/s plain loop), {:.2} G/s in cache",
        k.kernel,
        k.width,
        k.packed_codes_s / 1e9,
        k.u32_codes_s / 1e9,
        k.packed_in_cache_s / 1e9
    );
    let mut results = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut matches: Option<Vec<u64>> = None;
    for &v in &c.variants {
        let (r, n) = run_engine(v, &c, &d)?;
        check_matches(&mut matches, &r.filter_matches, v.name())?;
        for n in n {
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
        results.push(r);
    }
    let tables = if c.table_rows > 0 {
        table::run(&d, c.table_rows, c.filters, s.seed, &c.db, s.cache_size)?
    } else {
        Vec::new()
    };
    let sweep = run_sweep(&c)?;
    let chart = match &sa.args.plot {
        Some(dir) => Some(sweep_chart(&sweep, dir)?),
        None => None,
    };
    let mut text = report(&c, &d, &k, &results, &sweep, &notes, chart.as_deref());
    if !tables.is_empty() {
        text.push('\n');
        text.push_str(&table::report(&tables, c.table_rows, c.filters));
    }
    println!("{text}");
    if let Some(path) = &sa.report {
        crate::report::write_report(path, &text)?;
    }
    Ok(())
}

fn sweep_chart(sweep: &[SweepPoint], dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| Error(format!("{}: {e}", dir.display())))?;
    let path = dir.join("filter-vs-distinct.svg");
    let groups: Vec<String> = sweep.iter().map(|p| share_label(p.share)).collect();
    let series: Vec<String> = sweep
        .first()
        .map(|p| {
            p.results
                .iter()
                .map(|(v, _)| v.name().to_string())
                .collect()
        })
        .unwrap_or_default();
    crate::plot::plot_grouped_bars(
        &path,
        "Filter throughput against the share of distinct values",
        "entries filtered per second",
        &groups,
        &series,
        true,
        |g, s| {
            sweep
                .iter()
                .find(|p| share_label(p.share) == g)
                .and_then(|p| p.results.iter().find(|(v, _)| v.name() == s))
                .map(|(_, r)| r.filter)
        },
    )?;
    Ok(path)
}

fn share_label(share: f64) -> String {
    format!("{} % distinct", share * 100.0)
}

/// The break-even share: the smallest swept share at which dictionaries
/// (forced on every file) stop beating plain values on `metric` (larger
/// is better), or `None` if they never do.
fn break_even(sweep: &[SweepPoint], metric: impl Fn(&SweepResult) -> f64) -> Option<f64> {
    sweep.iter().find_map(|p| {
        let get = |want: Variant| {
            p.results
                .iter()
                .find(|(v, _)| *v == want)
                .map(|(_, r)| metric(r))
        };
        match (get(Variant::StrataDictAlways), get(Variant::StrataPlain)) {
            (Some(d), Some(plain)) if d <= plain => Some(p.share),
            _ => None,
        }
    })
}

fn report(
    c: &Config,
    d: &Dataset,
    k: &KernelResult,
    results: &[EngineResult],
    sweep: &[SweepPoint],
    notes: &[String],
    chart: Option<&Path>,
) -> String {
    let s = &c.settings;
    let m = crate::sysinfo::machine();
    let mut t = String::new();
    t.push_str(&format!(
        "### opd suite, {}\n\n```sh\n{}\n```\n\nMachine: {} CPUs ({}), {}. {} entries of a {}-byte key and a {}-byte value, {} distinct values ({} % of the entries, drawn {}); write buffer {}, block cache {}, 4 KiB blocks, 10 Bloom bits per key; filters select 1 % of the distinct values (the median of {} filters); {} point reads, {} scans of 1-100 entries; the mix is {} operations (50 % updates, 40 % reads, 10 % scans) on one thread with filters back to back on another.\n\n",
        crate::sysinfo::iso8601(crate::sysinfo::unix_seconds()),
        crate::sysinfo::command_line(),
        m.cpus,
        m.cpu_model,
        human_bytes(m.memory_bytes),
        s.num,
        s.key_size,
        s.value_size,
        d.values.len(),
        c.share * 100.0,
        if c.zipf { "Zipfian" } else { "uniformly" },
        human_bytes(s.write_buffer_size),
        human_bytes(s.cache_size),
        c.filters,
        s.reads,
        s.reads / 10,
        c.mix_ops,
    ));
    t.push_str("| engine | load entries/s | full compaction | compaction writes | on disk | filter entries/s | filter | read mean / p99 | scan mean / p99 | mix ops/s | filters during mix | dictionaries loaded by the filters |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for r in results {
        t.push_str(&format!(
            "| {} | {} | {:.2} s | {} | {} | {} | {:.1} ms | {:.1} / {:.1} us | {:.1} / {:.1} us | {} | {} | {} |\n",
            r.label,
            thousands(d.num as f64 / r.load_secs.max(1e-9)),
            r.compact_secs,
            human_bytes(r.compact_bytes),
            human_bytes(r.disk_bytes),
            thousands(r.filter_entries_s(d.num)),
            r.filter_secs * 1e3,
            r.read_mean_us,
            r.read_p99_us,
            r.scan_mean_us,
            r.scan_p99_us,
            thousands(r.mix_ops_s),
            r.mix_filters,
            human_bytes(r.dictionary_bytes),
        ));
    }
    for r in results.iter().filter(|r| r.dictionary_build_secs > 0.0) {
        t.push_str(&format!(
            "\n{}: the load's flushes and compactions spent {:.2} s building dictionaries ({:.1} % of the load's wall time).\n",
            r.label,
            r.dictionary_build_secs,
            100.0 * r.dictionary_build_secs / r.load_secs.max(1e-9)
        ));
    }
    t.push_str(&format!(
        "\nFilter kernel ({}, {}-bit codes, {} codes, larger than the last-level cache): {:.2} G codes/s; a plain loop range-testing as many 4-byte codes (this machine's single-core streaming limit for them): {:.2} G codes/s; ratio {:.2}. One 4,096-code block in cache: {:.2} G codes/s.\n",
        k.kernel,
        k.width,
        k.codes,
        k.packed_codes_s / 1e9,
        k.u32_codes_s / 1e9,
        k.packed_codes_s / k.u32_codes_s,
        k.packed_in_cache_s / 1e9
    ));
    let find = |name: &str| results.iter().find(|r| r.label == name);
    if let Some(dict) = find("strata-dict") {
        t.push_str("\nRatios of this run:\n\n");
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
        if let Some(r) = find("rocksdb-none") {
            t.push_str(&format!(
                "- filter throughput: {:.1}× RocksDB's full-scan filter (no compression)\n- full compaction time: {:.2}× RocksDB's (no compression)\n- load throughput: {:.2}× RocksDB's (no compression)\n",
                ratio(r.filter_secs, dict.filter_secs),
                ratio(dict.compact_secs, r.compact_secs),
                ratio(r.load_secs, dict.load_secs),
            ));
        }
        if let Some(r) = find("rocksdb-lz4") {
            t.push_str(&format!(
                "- bytes on disk: {:.2}× RocksDB with LZ4\n",
                ratio(dict.disk_bytes as f64, r.disk_bytes as f64)
            ));
        }
        if let Some(p) = find("strata-plain") {
            t.push_str(&format!(
                "- point reads: mean {:.2}× Strata without dictionaries (p99 {:.2}×); filter {:.1}× its throughput\n",
                ratio(dict.read_mean_us, p.read_mean_us),
                ratio(dict.read_p99_us, p.read_p99_us),
                ratio(p.filter_secs, dict.filter_secs),
            ));
        }
    }
    if !sweep.is_empty() {
        t.push_str(&format!(
            "\nSweep ({} entries per point, dictionaries on every file for `strata-dict-always`; filter entries/s, bytes on disk, load entries/s, full compaction):\n\n| distinct values |",
            c.sweep_num
        ));
        let names: Vec<&str> = sweep[0].results.iter().map(|(v, _)| v.name()).collect();
        for n in &names {
            t.push_str(&format!(" {n} |"));
        }
        t.push_str("\n|---|");
        t.push_str(&"---|".repeat(names.len()));
        t.push('\n');
        for p in sweep {
            t.push_str(&format!("| {} % |", p.share * 100.0));
            for (_, r) in &p.results {
                t.push_str(&format!(
                    " {} / {} / {} / {:.2} s |",
                    thousands(r.filter),
                    human_bytes(r.disk),
                    thousands(r.load),
                    r.compact
                ));
            }
            t.push('\n');
        }
        let say = |x: Option<f64>| match x {
            Some(s) => format!("{} % distinct values", s * 100.0),
            None => "none of the swept shares".into(),
        };
        t.push_str(&format!(
            "\nBreak-even of dictionaries against plain values: filters stop being faster at {}; files stop being smaller at {}; loads stop being faster at {}; full compactions stop being faster at {}.\n",
            say(break_even(sweep, |r| r.filter)),
            say(break_even(sweep, |r| -(r.disk as f64))),
            say(break_even(sweep, |r| r.load)),
            say(break_even(sweep, |r| -r.compact)),
        ));
    }
    crate::report::notes_section(&mut t, notes);
    if let Some(chart) = chart {
        t.push_str(&format!(
            "\n![filter throughput against the share of distinct values]({})\n",
            chart.display()
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_parse_and_refuse_unknown_names() {
        assert_eq!(
            Variant::parse_list("strata-dict, rocksdb-lz4").unwrap(),
            vec![Variant::StrataDict, Variant::RocksLz4]
        );
        assert!(Variant::parse_list("strata-dict,nope").is_err());
        assert!(parse_shares("0.01,2").is_err());
    }

    #[test]
    fn filters_select_about_the_asked_share_of_values() {
        use rand::SeedableRng;
        let d = Dataset::new(10_000, 0.1, 16, 16, false, 3);
        assert_eq!(d.values.len(), 1000);
        assert!(d.values.windows(2).all(|w| w[0] < w[1]));
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let (lo, hi) = d.filter_range(0.01, &mut rng);
        let inside = d
            .values
            .iter()
            .filter(|v| v.as_slice() >= lo && v.as_slice() < hi)
            .count();
        assert_eq!(inside, 10);
    }

    #[test]
    fn the_break_even_is_the_first_share_where_dictionaries_stop_paying() {
        let r = |filter| SweepResult {
            filter,
            ..Default::default()
        };
        let p = |share, dict: f64, plain: f64| SweepPoint {
            share,
            results: vec![
                (Variant::StrataDictAlways, r(dict)),
                (Variant::StrataPlain, r(plain)),
            ],
        };
        let sweep = [p(0.01, 10.0, 1.0), p(0.1, 3.0, 2.0), p(0.5, 1.0, 2.0)];
        assert_eq!(break_even(&sweep, |r| r.filter), Some(0.5));
        assert_eq!(break_even(&sweep[..2], |r| r.filter), None);
    }
}
