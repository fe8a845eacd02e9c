//! The `opd` suite's data and measurements: distinct values and their
//! draws, the phases run on each engine, and the filter kernel against this
//! machine's streaming limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::Result;
use crate::engine::{BatchOp, Engine};
use crate::generators::Zipfian;
use crate::keys::{make_key, permutation};

/// The distinct values of a run, sorted (a filter's range is a slice of
/// them), and how entries draw from them.
pub struct Dataset {
    /// Sorted, distinct, printable values.
    pub values: Vec<Vec<u8>>,
    zipf: Option<std::sync::Mutex<Zipfian>>,
    /// Entries loaded.
    pub num: u64,
    /// Bytes of each key.
    pub key_size: usize,
}

impl Dataset {
    /// `max(1, num × share)` distinct values of `value_size` random
    /// printable bytes, drawn uniformly or (`zipf`) Zipfian.
    pub fn new(
        num: u64,
        share: f64,
        value_size: usize,
        key_size: usize,
        zipf: bool,
        seed: u64,
    ) -> Dataset {
        let n = ((num as f64 * share).round() as usize).max(1);
        let mut rng = StdRng::seed_from_u64(seed ^ 0x0bd0_0d1c);
        let mut values: Vec<Vec<u8>> = Vec::with_capacity(n);
        let mut seen = std::collections::HashSet::with_capacity(n);
        while values.len() < n {
            let v: Vec<u8> = (0..value_size)
                .map(|_| rng.random_range(b'!'..=b'~'))
                .collect();
            if seen.insert(v.clone()) {
                values.push(v);
            }
        }
        values.sort();
        Dataset {
            zipf: zipf.then(|| std::sync::Mutex::new(Zipfian::new(0, n as u64 - 1))),
            values,
            num,
            key_size,
        }
    }

    /// A value's index, drawn.
    pub fn draw(&self, rng: &mut StdRng) -> usize {
        match &self.zipf {
            // The Zipfian chooser favours small indices; scattering them
            // keeps the popular values spread over the sorted order.
            Some(z) => {
                let i = z.lock().map_or(0, |mut z| z.next(rng)) as usize;
                (i.wrapping_mul(2_654_435_761) ^ (i >> 7)) % self.values.len()
            }
            None => rng.random_range(0..self.values.len()),
        }
    }

    /// The `i`-th filter's value range `[lo, hi)`: `selectivity` of the
    /// distinct values, from a random start.
    pub fn filter_range(&self, selectivity: f64, rng: &mut StdRng) -> (&[u8], &[u8]) {
        let n = self.values.len();
        let width =
            ((n as f64 * selectivity).round() as usize).clamp(1, n.saturating_sub(1).max(1));
        let start = if n > width {
            rng.random_range(0..n - width)
        } else {
            0
        };
        let hi = self
            .values
            .get(start + width)
            .map_or(&[0xffu8; 1][..], |v| v);
        (&self.values[start], hi)
    }
}

/// What one engine did.
#[derive(Clone, Debug, Default)]
pub struct EngineResult {
    /// The engine's label in the report.
    pub label: String,
    pub load_secs: f64,
    pub compact_secs: f64,
    /// Bytes the full compaction wrote.
    pub compact_bytes: u64,
    /// Bytes on disk after it (allocated).
    pub disk_bytes: u64,
    /// Median seconds of one filter over every entry.
    pub filter_secs: f64,
    /// Matches of each filter (the same on every engine).
    pub filter_matches: Vec<u64>,
    pub read_mean_us: f64,
    pub read_p99_us: f64,
    pub scan_mean_us: f64,
    pub scan_p99_us: f64,
    /// HTAP mix: operations per second, and filters that ran alongside.
    pub mix_ops_s: f64,
    pub mix_filters: u64,
    pub dictionary_bytes: u64,
    /// Seconds the load's flushes and compactions spent building
    /// dictionaries (sorting distinct values, merging input dictionaries).
    pub dictionary_build_secs: f64,
}

impl EngineResult {
    /// Entries a filter passes over per second.
    pub fn filter_entries_s(&self, num: u64) -> f64 {
        num as f64 / self.filter_secs.max(1e-9)
    }
}

/// Bytes an engine's compactions have written (Strata's and RocksDB's own
/// counters).
pub fn compaction_written(e: &dyn Engine) -> u64 {
    let st = e.stats();
    ["compaction_bytes_written", "compact_write_bytes"]
        .iter()
        .find_map(|k| st.extra.get(*k).and_then(|v| v.as_u64()))
        .unwrap_or(0)
}

/// Loads the dataset in random key order, batches of 1,000.
pub fn load(e: &dyn Engine, d: &Dataset, seed: u64) -> Result<f64> {
    let order = permutation(d.num, seed);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x10ad);
    let t = Instant::now();
    for chunk in order.chunks(1000) {
        let ops: Vec<BatchOp> = chunk
            .iter()
            .map(|&i| BatchOp::Put(make_key(i, d.key_size), d.values[d.draw(&mut rng)].clone()))
            .collect();
        e.write_batch(&ops)?;
    }
    e.flush()?;
    e.wait_for_background()?;
    Ok(t.elapsed().as_secs_f64())
}

/// Runs `n` filters of 1 % of the distinct values; their median time and
/// their matches.
pub fn filters(e: &dyn Engine, d: &Dataset, n: usize, seed: u64) -> Result<(f64, Vec<u64>)> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0xf11e);
    let mut secs = Vec::with_capacity(n);
    let mut matches = Vec::with_capacity(n);
    for _ in 0..n.max(1) {
        let (lo, hi) = d.filter_range(0.01, &mut rng);
        let t = Instant::now();
        matches.push(e.filter_values(lo, hi)?);
        secs.push(t.elapsed().as_secs_f64());
    }
    secs.sort_by(f64::total_cmp);
    Ok((secs[secs.len() / 2], matches))
}

fn mean_p99(mut ns: Vec<u64>) -> (f64, f64) {
    if ns.is_empty() {
        return (0.0, 0.0);
    }
    ns.sort_unstable();
    let mean = ns.iter().sum::<u64>() as f64 / ns.len() as f64;
    let p99 = ns[(ns.len() * 99 / 100).min(ns.len() - 1)];
    (mean / 1e3, p99 as f64 / 1e3)
}

/// `n` point reads of random loaded keys: mean and p99 latency (µs).
pub fn point_reads(e: &dyn Engine, d: &Dataset, n: u64, seed: u64) -> Result<(f64, f64)> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x9e7);
    let mut ns = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let k = make_key(rng.random_range(0..d.num), d.key_size);
        let t = Instant::now();
        if e.get(&k)?.is_none() {
            return Err(crate::Error(format!(
                "{}: a loaded key is missing",
                e.name()
            )));
        }
        ns.push(t.elapsed().as_nanos() as u64);
    }
    Ok(mean_p99(ns))
}

/// `n` scans of 1 to 100 entries from random keys: mean and p99 (µs).
pub fn scans(e: &dyn Engine, d: &Dataset, n: u64, seed: u64) -> Result<(f64, f64)> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5ca9);
    let mut ns = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let k = make_key(rng.random_range(0..d.num), d.key_size);
        let len = rng.random_range(1..=100);
        let t = Instant::now();
        e.scan(&k, len)?;
        ns.push(t.elapsed().as_nanos() as u64);
    }
    Ok(mean_p99(ns))
}

/// The HTAP mix: `ops` operations (50 % updates, 40 % point reads, 10 %
/// scans of up to 100 entries) on one thread while another runs filters
/// back to back. Operations per second, and the filters completed.
pub fn mix(e: &Arc<dyn Engine>, d: &Arc<Dataset>, ops: u64, seed: u64) -> Result<(f64, u64)> {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let filter_thread = {
        let (e, d, stop, done) = (
            Arc::clone(e),
            Arc::clone(d),
            Arc::clone(&stop),
            Arc::clone(&done),
        );
        std::thread::spawn(move || -> Result<()> {
            let mut rng = StdRng::seed_from_u64(seed ^ 0xa1f);
            while !stop.load(Ordering::Relaxed) {
                let (lo, hi) = d.filter_range(0.01, &mut rng);
                e.filter_values(lo, hi)?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })
    };
    let mut rng = StdRng::seed_from_u64(seed ^ 0x717);
    let t = Instant::now();
    let mut r: Result<()> = Ok(());
    for _ in 0..ops {
        let k = make_key(rng.random_range(0..d.num), d.key_size);
        let dice = rng.random_range(0..100);
        let step = if dice < 50 {
            e.put(&k, &d.values[d.draw(&mut rng)])
        } else if dice < 90 {
            e.get(&k).map(|_| ())
        } else {
            e.scan(&k, rng.random_range(1..=100)).map(|_| ())
        };
        if let Err(err) = step {
            r = Err(err);
            break;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let joined = filter_thread
        .join()
        .map_err(|_| crate::Error::msg("the filter thread panicked"))?;
    r?;
    joined?;
    Ok((ops as f64 / secs.max(1e-9), done.load(Ordering::Relaxed)))
}

/// Codes of `raw` in `base..=base + span`: the plain loop over 4-byte
/// codes, written so the compiler vectorises it (16 lanes of counts,
/// summed once per chunk), as fast as such a scan goes on one core.
fn count_in_range(raw: &[u32], base: u32, span: u32) -> usize {
    let mut total = 0usize;
    for chunk in raw.chunks(1 << 12) {
        let mut lanes = [0u32; 16];
        let mut it = chunk.chunks_exact(16);
        for c in &mut it {
            for (l, &x) in lanes.iter_mut().zip(c) {
                *l += u32::from(x.wrapping_sub(base) <= span);
            }
        }
        total += lanes.iter().map(|&l| l as usize).sum::<usize>();
        total += it
            .remainder()
            .iter()
            .filter(|&&x| x.wrapping_sub(base) <= span)
            .count();
    }
    total
}

/// The filter kernel against the machine's streaming limit.
#[derive(Clone, Debug)]
pub struct KernelResult {
    /// The kernel `dict::select` chose.
    pub kernel: &'static str,
    /// Bits per code.
    pub width: u8,
    /// Codes in the vectors (larger than the last-level cache).
    pub codes: usize,
    /// Packed codes tested per second (best of the rounds).
    pub packed_codes_s: f64,
    /// 4-byte codes range-tested per second by a plain loop: this
    /// machine's single-core streaming limit for 4-byte codes.
    pub u32_codes_s: f64,
    /// Packed codes per second on one 4,096-code block in cache.
    pub packed_in_cache_s: f64,
}

/// Measures the selection over `codes` random codes of `width` bits, and
/// a plain range test over as many 4-byte codes.
pub fn kernel(width: u8, codes: usize, rounds: usize) -> KernelResult {
    use strata::dict::bitpack;
    use strata::dict::select::{CodeSet, Kernel, select};
    let mut rng = StdRng::seed_from_u64(7);
    let top = bitpack::mask(width) as u32;
    let raw: Vec<u32> = (0..codes).map(|_| rng.random_range(0..=top)).collect();
    let mut packed = Vec::new();
    bitpack::pack(&raw, width, &mut packed);
    // A 1 % range, as the filters.
    let lo = top / 3;
    let set = CodeSet::Range {
        lo,
        hi: lo + (top / 100).max(1),
    };
    let (span, base) = (top / 100, lo);
    let mut bitmap = Vec::new();
    let mut best_packed = f64::INFINITY;
    let mut best_u32 = f64::INFINITY;
    let mut sink = 0usize;
    for _ in 0..rounds.max(1) {
        let t = Instant::now();
        sink += select(&packed, width, codes, &set, &mut bitmap);
        best_packed = best_packed.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        sink += count_in_range(&raw, base, span);
        best_u32 = best_u32.min(t.elapsed().as_secs_f64());
    }
    let block = 4096usize;
    let small = &packed[..bitpack::packed_len(block, width)];
    let reps = 20_000;
    let t = Instant::now();
    for _ in 0..reps {
        sink += select(small, width, block, &set, &mut bitmap);
    }
    let in_cache = (block * reps) as f64 / t.elapsed().as_secs_f64();
    std::hint::black_box(sink);
    KernelResult {
        kernel: Kernel::best().name(),
        width,
        codes,
        packed_codes_s: codes as f64 / best_packed,
        u32_codes_s: codes as f64 / best_u32,
        packed_in_cache_s: in_cache,
    }
}
