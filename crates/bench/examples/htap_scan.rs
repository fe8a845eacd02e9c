//! A harness for profiling the table scan path: loads the `htap` suite's
//! table (30 `i32` columns, an `i64` key, the suite's tree shape) under a
//! layout, leaves it as a mix leaves it (inserts of new keys, an update
//! every 100), then times scans shaped like Q4 (columns 21-30 over 5 % of
//! the keys) and Q5 (columns 28-30 over 50 %), printing the median and the
//! fastest. A second call on the same directory reuses the table, so
//! `perf record` sees scans only.
//!
//! ```sh
//! cargo run --release -p strata-bench --example htap_scan -- \
//!     --layout advisor --dir /tmp/htap-scan --reps 30 --threads 1
//! ```
//!
//! `--queries q2a-mix` draws point reads of every column as the suite's Q2a
//! does (recent keys) and says how many blocks each took: one for a level
//! of whole rows, two for a level split into two groups.
//!
//! `--layout` takes a layout (a preset or levels as `strata table
//! set-layout` takes them) or `advisor`: whole rows on levels 0-2 and
//! `<a1..a27> <a28..a30>` below, the layout the advisor chose in the
//! recorded `htap` runs.

use std::error::Error;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use strata::arrow_array::{Array, ArrayRef, Int32Array, Int64Array, RecordBatch};
use strata::table::{Column, ColumnType, ScanOptions, Schema, Table, TableOptions, Value};
use strata::{Db, Options};
use strata_bench::htap::workload::{KEY_SPACE, row};

#[derive(Parser)]
struct Args {
    /// The table's layout when the directory is new.
    #[arg(long, default_value = "row")]
    layout: String,
    /// Rows loaded when the directory is new.
    #[arg(long, default_value_t = 1_000_000)]
    rows: usize,
    /// Scans of each shape.
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// Which shapes, comma-separated: q2a, q2b, q2a-mix, q4, q5.
    #[arg(long, default_value = "q4,q5")]
    queries: String,
    /// Threads per scan (`ScanOptions::threads`).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// The block cache, in MiB.
    #[arg(long, default_value_t = 64)]
    cache_mib: u64,
    /// The database directory.
    #[arg(long, default_value = "/tmp/htap-scan")]
    dir: PathBuf,
    /// Q4 scans 1/N of the key space (the suite's: 5 %).
    #[arg(long, default_value_t = 20)]
    q4_share: i64,
    /// Q5 scans 1/N of the key space (the suite's: 50 %).
    #[arg(long, default_value_t = 2)]
    q5_share: i64,
}

const COLUMNS: usize = 30;
const WRITE_BUFFER: usize = 4 << 20;
/// Point reads per timed round.
const POINTS: usize = 10_000;

fn names() -> Vec<String> {
    (0..COLUMNS).map(|i| format!("a{}", i + 1)).collect()
}

fn load(db: &Db, layout: &str, rows: usize) -> Result<Table, Box<dyn Error>> {
    let names = names();
    let mut cols = vec![Column::new("k", ColumnType::Int64)];
    cols.extend(names.iter().map(|n| Column::new(n, ColumnType::Int32)));
    let layout = if layout == "advisor" {
        let all = names.join(",");
        format!(
            "{all};{all};{} | {}",
            names[..27].join(","),
            names[27..].join(",")
        )
    } else {
        layout.to_string()
    };
    let opts = TableOptions {
        layout,
        num_levels: 8,
        size_ratio: 2,
        level1_max_bytes: 2 * WRITE_BUFFER as u64,
        write_buffer_size: WRITE_BUFFER,
        target_file_size: WRITE_BUFFER as u64,
        ..Default::default()
    };
    let t = db.create_table("htap", Schema::new(cols, &["k"])?, opts)?;
    let arrow = t.schema().arrow_schema();
    let mut values = Vec::with_capacity(COLUMNS);
    for start in (0..rows).step_by(4096) {
        let end = (start + 4096).min(rows);
        let mut keys = Vec::with_capacity(end - start);
        let mut columns: Vec<Vec<i32>> = (0..COLUMNS)
            .map(|_| Vec::with_capacity(end - start))
            .collect();
        for i in start..end {
            keys.push(row(1, i, COLUMNS, &mut values));
            for (c, v) in columns.iter_mut().zip(&values) {
                c.push(*v);
            }
        }
        let mut arrays: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(keys))];
        arrays.extend(
            columns
                .into_iter()
                .map(|c| Arc::new(Int32Array::from(c)) as ArrayRef),
        );
        t.upsert(&RecordBatch::try_new(Arc::clone(&arrow), arrays)?)?;
    }
    // As a mix leaves the table: new keys, and an update every 100.
    let started = Instant::now();
    for i in 0..rows / 20 {
        let k = row(2, i, COLUMNS, &mut values);
        let mut r = vec![Value::Int64(k)];
        r.extend(values.iter().map(|&v| Value::Int32(v)));
        t.upsert_row(&r)?;
        if i % 100 == 0 {
            let old = row(1, (i * 7919) % rows, COLUMNS, &mut values);
            t.update_row(
                &[Value::Int64(old)],
                &[(&names[i % COLUMNS], Value::Int32(5))],
            )?;
        }
    }
    let spent = started.elapsed();
    println!(
        "mix inserts: {} rows, {:.2} µs each (with the updates)",
        rows / 20,
        spent.as_secs_f64() * 1e6 / (rows / 20) as f64
    );
    db.wait_for_background_work()?;
    Ok(t)
}

/// Point reads of every column of keys drawn as the suite's Q2a draws
/// them (the key at position ~ N(0.98, 0.02) of the rows in insertion
/// order: the load's, then the mix's), timed, with how many blocks each
/// read took (one: a level of whole rows; two: the two groups of a
/// columnar level), from the table's counters.
fn mix_reads(t: &Table, rows: usize, reps: usize) -> Result<(), Box<dyn Error>> {
    use rand::SeedableRng;
    use strata_bench::htap::workload::{Q2A_POSITION, normal};
    let n = rows + rows / 20;
    let wanted = names();
    let wanted: Vec<&str> = wanted.iter().map(String::as_str).collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut times = Vec::with_capacity(reps);
    let mut by_blocks = [0u64; 4];
    let mut time_by_blocks = [0f64; 4];
    for _ in 0..reps.max(1) {
        let keys: Vec<i64> = (0..POINTS)
            .map(|_| {
                let (mean, sd) = Q2A_POSITION;
                let pos = normal(&mut rng, mean, sd);
                let i = ((pos * (n - 1) as f64) as usize).min(n - 1);
                if i < rows {
                    strata_bench::htap::workload::key(1, i, COLUMNS)
                } else {
                    strata_bench::htap::workload::key(2, i - rows, COLUMNS)
                }
            })
            .collect();
        let started = Instant::now();
        for &k in &keys {
            std::hint::black_box(t.get(&[Value::Int64(k)], Some(&wanted))?);
        }
        times.push(started.elapsed().as_secs_f64() * 1e6 / POINTS as f64);
        // The same reads again, one at a time, for their block counts.
        for &k in &keys {
            let before = t.statistics().get_blocks;
            let started = Instant::now();
            t.get(&[Value::Int64(k)], Some(&wanted))?;
            let spent = started.elapsed().as_secs_f64() * 1e6;
            let blocks = (t.statistics().get_blocks - before) as usize;
            by_blocks[blocks.min(3)] += 1;
            time_by_blocks[blocks.min(3)] += spent;
        }
    }
    times.sort_by(f64::total_cmp);
    let total = by_blocks.iter().sum::<u64>().max(1) as f64;
    print!(
        "q2a-mix: median {:.2} µs, fastest {:.2} µs a read; by blocks read (share, mean time timed one by one):",
        times[times.len() / 2],
        times[0],
    );
    for (b, (&count, &spent)) in by_blocks.iter().zip(&time_by_blocks).enumerate() {
        if count > 0 {
            let label = if b == 3 {
                "3+".to_string()
            } else {
                b.to_string()
            };
            print!(
                " {label}: {:.1} % {:.2} µs;",
                count as f64 * 100.0 / total,
                spent / count as f64
            );
        }
    }
    println!();
    Ok(())
}

/// Scans `cols` over `[lo, hi)`; the rows read and the entries each level
/// supplied (index 0: memtables and level 0).
fn scan(
    t: &Table,
    lo: i64,
    hi: i64,
    cols: Range<usize>,
    threads: usize,
) -> Result<(usize, Vec<u64>), Box<dyn Error>> {
    let names = names();
    let cols: Vec<&str> = names[cols].iter().map(String::as_str).collect();
    let opts = ScanOptions::default()
        .columns(&cols)
        .range(vec![Value::Int64(lo)], vec![Value::Int64(hi)])
        .threads(threads);
    let mut rows = 0;
    let mut s = t.scan(opts)?;
    for b in s.by_ref() {
        let b = b?;
        rows += b.num_rows();
        for c in b.columns() {
            let a = c
                .as_any()
                .downcast_ref::<Int32Array>()
                .ok_or("a column that is not i32")?;
            std::hint::black_box(a.values().iter().max());
        }
    }
    Ok((rows, s.counters().entries_per_level.clone()))
}

fn main() -> Result<(), Box<dyn Error>> {
    let a = Args::parse();
    let fresh = !a.dir.exists();
    let db = Db::open(
        &a.dir,
        Options {
            block_cache_bytes: a
                .cache_mib
                .checked_mul(1 << 20)
                .ok_or("--cache-mib too large")?,
            ..Default::default()
        },
    )?;
    let t = if fresh {
        let started = Instant::now();
        let t = load(&db, &a.layout, a.rows)?;
        println!("loaded in {:.1} s", started.elapsed().as_secs_f64());
        t
    } else {
        db.table("htap")?
    };
    // Point reads as the mix's: every column of keys it inserted (Q2a),
    // columns 16-30 of keys the load wrote (Q2b).
    for (name, seed, count, cols) in [
        ("q2a", 2, a.rows / 20, 0..COLUMNS),
        ("q2b", 1, a.rows, 15..COLUMNS),
    ] {
        if !a.queries.split(',').any(|q| q == name) {
            continue;
        }
        let names = names();
        let wanted: Vec<&str> = names[cols].iter().map(String::as_str).collect();
        let mut times = Vec::with_capacity(a.reps);
        let mut found = 0;
        for r in 0..a.reps.max(1) {
            let keys: Vec<i64> = (0..POINTS)
                .map(|i| {
                    strata_bench::htap::workload::key(seed, (i * 7919 + r * 13) % count, COLUMNS)
                })
                .collect();
            let started = Instant::now();
            for k in keys {
                found += usize::from(t.get(&[Value::Int64(k)], Some(&wanted))?.is_some());
            }
            times.push(started.elapsed().as_secs_f64() * 1e6 / POINTS as f64);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{name}: median {:.2} µs, fastest {:.2} µs a read, {found} of {} found",
            times[times.len() / 2],
            times[0],
            POINTS * a.reps.max(1)
        );
    }
    if a.queries.split(',').any(|q| q == "q2a-mix") {
        mix_reads(&t, a.rows, a.reps)?;
    }
    for (name, share, cols) in [("q4", a.q4_share, 20..30), ("q5", a.q5_share, 27..30)] {
        if !a.queries.split(',').any(|q| q == name) {
            continue;
        }
        let mut times = Vec::with_capacity(a.reps);
        let mut rows = 0;
        let mut levels = Vec::new();
        for r in 0..a.reps.max(1) {
            let lo = KEY_SPACE / 97 * (r as i64 % 40);
            let started = Instant::now();
            (rows, levels) = scan(&t, lo, lo + KEY_SPACE / share, cols.clone(), a.threads)?;
            times.push(started.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        println!(
            "{name}: median {median:.2} ms, fastest {:.2} ms, {rows} rows, {:.1} ns a row",
            times[0],
            median * 1e6 / rows.max(1) as f64
        );
        println!(
            "{name}: entries per level in the last scan (0: memtables and level 0): {levels:?}"
        );
    }
    Ok(())
}
