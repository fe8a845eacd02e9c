//! A harness for profiling the join operators: loads R(id, a, pad) and
//! SP(id, pad) as the `joins` suite does for its `unif` dataset (64-byte
//! entries unless `--entry` says otherwise, join values drawn uniformly,
//! about 80 % of R's matching; `--layout` and `--pread` vary the tables'
//! layout and how their files are read), and
//! S(id, b, pad) with a composite synchronous index on `b`, then times one
//! method's join `R.a = SP.id` (or `R.a = S.b` with `--secondary`), counting
//! rows as the suite does, and prints the median and the fastest.
//!
//! ```sh
//! cargo run --release -p strata-bench --example join_prof -- \
//!     --method hybrid-hash --reps 20
//! ```

use std::error::Error;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch};
use strata::index::{IndexKind, IndexSpec};
use strata::join::{Join, JoinMethod};
use strata::table::{Column, ColumnType, Schema, Table, TableOptions};
use strata::{Db, Options};
use strata_bench::joins::pad;

#[derive(Parser)]
struct Args {
    /// The join method (as `strata join --method` takes it).
    #[arg(long, default_value = "hybrid-hash")]
    method: String,
    /// Join R.a with S.b (through S's index where the method reads one)
    /// instead of SP's primary key.
    #[arg(long)]
    secondary: bool,
    /// Rows per table.
    #[arg(long, default_value_t = 200_000)]
    rows: usize,
    /// Threads the join may use (`Join::threads`).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Joins timed.
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// The tables' layout (a preset or levels, as `strata table
    /// set-layout` takes them).
    #[arg(long, default_value = "row")]
    layout: String,
    /// Bytes per entry (the key, the join value and the padding).
    #[arg(long, default_value_t = 64)]
    entry: usize,
    /// Read table files with `pread` instead of through mappings.
    #[arg(long)]
    pread: bool,
    /// Print the planner's candidates and their predicted costs first.
    #[arg(long)]
    explain: bool,
    /// The database directory (made anew).
    #[arg(long, default_value = "./data/join-prof")]
    dir: PathBuf,
}

const BATCH: usize = 10_000;

fn schema(join: Option<&str>) -> Result<Schema, Box<dyn Error>> {
    let mut cols = vec![Column::new("id", ColumnType::Int64)];
    if let Some(j) = join {
        cols.push(Column::new(j, ColumnType::Int64));
    }
    cols.push(Column::new("pad", ColumnType::Binary));
    Ok(Schema::new(cols, &["id"])?)
}

fn load(t: &Table, ids: &[i64], joins: Option<&[i64]>, entry: usize) -> Result<(), Box<dyn Error>> {
    for (n, chunk) in ids.chunks(BATCH).enumerate() {
        let mut cols: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(chunk.to_vec()))];
        if let Some(j) = joins {
            cols.push(Arc::new(Int64Array::from(
                j[n * BATCH..n * BATCH + chunk.len()].to_vec(),
            )));
        }
        // Tagged per row as the suite's are, so that a columnar layout
        // stores them as values, not as one dictionary entry.
        cols.push(Arc::new(BinaryArray::from_iter_values(
            chunk.iter().map(|&id| pad(entry, id as u64)),
        )));
        t.upsert(&RecordBatch::try_new(t.schema().arrow_schema(), cols)?)?;
    }
    t.flush()?;
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = Args::parse();
    let method = JoinMethod::parse(&args.method)?;
    let _ = std::fs::remove_dir_all(&args.dir);
    let db = Db::open(
        &args.dir,
        Options {
            mmap_reads: !args.pread,
            ..Options::default()
        },
    )?;
    let opts = TableOptions {
        write_buffer_size: 16 << 20,
        size_ratio: 5,
        block_size: 4096,
        layout: args.layout.clone(),
        ..TableOptions::default()
    };
    let r = db.create_table("r", schema(Some("a"))?, opts.clone())?;
    let s = db.create_table("s", schema(Some("b"))?, opts.clone())?;
    let sp = db.create_table("sp", schema(None)?, opts)?;
    let n = args.rows;
    let domain = (n as f64 * 1.25) as i64;
    let mut rng = StdRng::seed_from_u64(42);
    let ids: Vec<i64> = (0..n as i64).collect();
    let a: Vec<i64> = (0..n).map(|_| rng.random_range(0..domain)).collect();
    let b: Vec<i64> = (0..n).map(|_| rng.random_range(0..domain)).collect();
    load(&r, &ids, Some(&a), args.entry)?;
    load(&s, &ids, Some(&b), args.entry)?;
    load(&sp, &b, None, args.entry)?;
    s.create_index(IndexSpec::new("b_comp", "b").kind(IndexKind::Composite))?;
    db.wait_for_background_work()?;

    let join = if args.secondary {
        Join::new(&r, "a", &s, "b")
    } else {
        Join::new(&r, "a", &sp, "id")
    }
    .method(method)
    .threads(args.threads)
    .memory(16 << 20)
    .columns(&["left.id", "right.id"]);
    if args.explain {
        println!("{}\n{:?}", join.explain()?, join.statistics()?);
    }
    let mut times = Vec::with_capacity(args.reps);
    let mut rows = 0;
    for _ in 0..args.reps {
        let t = Instant::now();
        rows = join.count()?.rows;
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{} {}: {rows} rows, median {:.4} s, fastest {:.4} s over {} joins",
        args.method,
        if args.secondary {
            "R.a = S.b"
        } else {
            "R.a = SP.id"
        },
        times[times.len() / 2],
        times[0],
        times.len()
    );
    Ok(())
}
