//! `strata-bench suite --suite joins`: seed 000's study of joins over
//! LSM-trees, on Strata's indexes and join operators, with SQLite and
//! DuckDB on the same data in the same run.
//!
//! Tables R(id, a, pad) and S(id, b, pad) of `--num` rows each, from the
//! datasets of `data.rs`; SP(id, pad) holds S's rows keyed by their join
//! value (S with its join attribute as primary key, the study's "P"
//! side). The study's settings: 4 KiB blocks, 16 MiB write buffers, size
//! ratio 5, no compression, 16 MiB of join memory. Each join counts its
//! rows and a checksum (R's and S's ids); every method must agree.
//!
//! Parts (`--join-parts`):
//! - `datasets`: every dataset at 64-byte entries: the primary-key joins
//!   R.a = SP.id (INLJ-P, SJ-P, HJ-P, hybrid) and the secondary joins
//!   R.a = S.b through each index kind and strategy (INLJ-NS), sort-merge
//!   (SJ-N), index walks (SJ-SS) and hash (HJ-N), each index's build time,
//!   the planner's choice, SQLite (with and without indexes) and DuckDB;
//! - `entry`: Unif at entry sizes from 32 to 4,096 bytes, primary-key joins,
//!   then INLJ-P and HH-P again on the tables stored with a group per
//!   column below level 0 (where a scan of R reads `a` without the
//!   padding);
//! - `frequency`: User and Wiki loaded in F parts with a join after each
//!   (index maintenance included in the load), F = 1, 4, 16;
//! - `skew`: Zipf at θ from 0 to 0.99, index nested loops under each
//!   strategy and the hash join.

mod data;
mod peers;
mod report;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use strata::arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch};
use strata::index::{Consistency, IndexKind, IndexSpec};
use strata::join::{Join, JoinMethod};
use strata::table::{Column, ColumnType, Schema, Table, TableOptions};
use strata::{Db, Options};

pub use self::data::pad;
use self::data::{Dataset, ValueDraw, shared_domain};
use self::report::{JoinRow, Report};
use crate::cli::{BenchArgs, Given, SuiteArgs};
use crate::{Error, Result};

/// Rows per load batch.
const BATCH: usize = 10_000;
/// The suite's defaults.
pub fn apply_defaults(a: &mut BenchArgs, given: Given<'_>) {
    if !given("num") {
        a.num = 200_000;
    }
}

fn err(e: strata::Error) -> Error {
    Error(e.to_string())
}

/// The study's table settings, with whole rows on every level.
fn table_options() -> TableOptions {
    TableOptions {
        write_buffer_size: 16 << 20,
        size_ratio: 5,
        block_size: 4096,
        level1_max_bytes: 80 << 20,
        target_file_size: 16 << 20,
        ..TableOptions::default()
    }
}

/// The layout of the entry part's second run: a group per column (level 0
/// holds whole rows under every layout), the layout an analytical user
/// picks for a table whose padding no join reads; the study stores whole
/// rows.
const COLUMNS_BELOW: &str = "column";

/// The suffix of the methods run on the tables stored with a group per column.
pub const COLUMNS_SUFFIX: &str = " (columns below L0)";

fn schema(join: Option<&str>) -> Schema {
    let mut cols = vec![Column::new("id", ColumnType::Int64)];
    if let Some(j) = join {
        cols.push(Column::new(j, ColumnType::Int64));
    }
    cols.push(Column::new("pad", ColumnType::Binary));
    Schema::new(cols, &["id"]).unwrap_or_else(|_| unreachable!("a valid schema"))
}

/// The rows of one dataset: R's and S's join values by row.
pub struct Rows {
    pub r: Vec<i64>,
    pub s: Vec<i64>,
}

impl Rows {
    fn new(d: &Dataset, n: u64, seed: u64) -> Rows {
        let shared = shared_domain(d, n);
        let mut r = ValueDraw::new(d.r, shared, 0, seed);
        let mut s = ValueDraw::new(d.s, shared, 1, seed);
        Rows {
            r: (0..n).map(|_| r.next_value(d.r.duplication)).collect(),
            s: (0..n).map(|_| s.next_value(d.s.duplication)).collect(),
        }
    }
}

fn batch(t: &Table, ids: &[i64], joins: Option<&[i64]>, entry: usize) -> Result<RecordBatch> {
    let mut cols: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(ids.to_vec()))];
    if let Some(j) = joins {
        cols.push(Arc::new(Int64Array::from(j.to_vec())));
    }
    let pads: Vec<Vec<u8>> = ids.iter().map(|&i| pad(entry, i as u64)).collect();
    cols.push(Arc::new(BinaryArray::from_iter_values(pads.iter())));
    RecordBatch::try_new(t.schema().arrow_schema(), cols).map_err(|e| Error(e.to_string()))
}

/// Strata's database for one configuration.
struct Tables {
    db: Db,
    r: Table,
    s: Table,
    sp: Table,
}

impl Tables {
    fn create(dir: &Path) -> Result<Tables> {
        Tables::create_with(dir, table_options())
    }

    fn create_with(dir: &Path, opts: TableOptions) -> Result<Tables> {
        let _ = std::fs::remove_dir_all(dir);
        let db = Db::open(dir, Options::default()).map_err(err)?;
        let r = db
            .create_table("r", schema(Some("a")), opts.clone())
            .map_err(err)?;
        let s = db
            .create_table("s", schema(Some("b")), opts.clone())
            .map_err(err)?;
        let sp = db.create_table("sp", schema(None), opts).map_err(err)?;
        Ok(Tables { db, r, s, sp })
    }

    /// Loads rows `range` of R, S and SP.
    fn load(&self, rows: &Rows, range: std::ops::Range<usize>, entry: usize) -> Result<()> {
        for start in range.clone().step_by(BATCH) {
            let end = (start + BATCH).min(range.end);
            let ids: Vec<i64> = (start as i64..end as i64).collect();
            self.r
                .upsert(&batch(&self.r, &ids, Some(&rows.r[start..end]), entry)?)
                .map_err(err)?;
            self.s
                .upsert(&batch(&self.s, &ids, Some(&rows.s[start..end]), entry)?)
                .map_err(err)?;
            self.sp
                .upsert(&batch(&self.sp, &rows.s[start..end], None, entry)?)
                .map_err(err)?;
        }
        Ok(())
    }

    fn settle(&self) -> Result<()> {
        for t in [&self.r, &self.s, &self.sp] {
            t.flush().map_err(err)?;
        }
        self.db.wait_for_background_work().map_err(err)
    }
}

/// The index variants of the study: kind × strategy.
fn variants() -> Vec<(IndexKind, Consistency)> {
    let mut v = Vec::new();
    for k in [IndexKind::Eager, IndexKind::Lazy, IndexKind::Composite] {
        for c in [Consistency::Synchronous, Consistency::Validation] {
            v.push((k, c));
        }
    }
    v
}

fn variant_name(k: IndexKind, c: Consistency) -> String {
    let c = if c == Consistency::Synchronous {
        "S"
    } else {
        "V"
    };
    format!(
        "{}/{c}",
        match k {
            IndexKind::Eager => "Eager",
            IndexKind::Lazy => "Lazy",
            IndexKind::Composite => "Comp",
        }
    )
}

fn index_name(k: IndexKind, c: Consistency) -> String {
    format!("{}_{}", k.name(), c.name())
}

/// Times each join is run at least; the median is reported.
const ROUNDS: usize = 3;
/// Joins faster than this much time over their rounds run more rounds (up
/// to [`MAX_ROUNDS`]): single runs of a 0.05 s join differ by 20 % and more
/// here, more than the 10 % the planner is judged by, and a median of more
/// rounds steadies them at little cost.
const ROUNDS_SECS: f64 = 0.6;
const MAX_ROUNDS: usize = 15;

/// The rounds to run of a join whose first run took `first` seconds.
fn rounds_for(first: f64) -> usize {
    if first <= 0.0 {
        return MAX_ROUNDS;
    }
    ((ROUNDS_SECS / first).ceil() as usize).clamp(ROUNDS, MAX_ROUNDS)
}

/// What every part of a run shares: where its databases go, the seed of
/// its rows, the peers, and the threads and memory each Strata join may
/// use.
#[derive(Clone, Copy)]
struct Part<'a> {
    base: &'a Path,
    seed: u64,
    peers: &'a [&'a str],
    threads: usize,
    memory: usize,
}

impl Part<'_> {
    /// `j` with the suite's settings: its memory, threads and output
    /// columns.
    fn configured(&self, j: Join) -> Join {
        j.memory(self.memory)
            .threads(self.threads)
            .columns(&["left.id", "right.id"])
    }

    /// Runs joins in turns, each [`rounds_for`] times, returning their report
    /// rows (the median times; rows and checksum must agree between rounds).
    /// Round `i` of every join that has one runs before round `i + 1` of any,
    /// so a change in the host's speed during a part (other tenants, the page
    /// cache, compactions settling) falls on every method alike instead of on
    /// whichever ran then: the planner is judged by differences of 10 %,
    /// which such drift exceeds here.
    fn run_joins(&self, joins: Vec<(String, Join)>) -> Result<Vec<JoinRow>> {
        let labels: Vec<String> = joins.iter().map(|(l, _)| l.clone()).collect();
        self.run_or_refuse(joins)?
            .into_iter()
            .zip(labels)
            .map(|(r, label)| r.map_err(|why| Error(format!("{label}: {why}"))))
            .collect()
    }

    /// As [`Part::run_joins`], but a join that refuses its memory budget
    /// ([`strata::Error::MemoryBudget`]) is reported by why, not as an
    /// error of the run.
    fn run_or_refuse(
        &self,
        joins: Vec<(String, Join)>,
    ) -> Result<Vec<std::result::Result<JoinRow, String>>> {
        let mut timed: Vec<Timed> = joins
            .into_iter()
            .map(|(label, j)| Timed {
                label,
                join: self.configured(j),
                times: Vec::with_capacity(MAX_ROUNDS),
                rounds: ROUNDS,
                summary: None,
                refused: None,
            })
            .collect();
        for round in 0..MAX_ROUNDS {
            for t in timed.iter_mut().filter(|t| round < t.rounds) {
                t.round()?;
            }
        }
        timed
            .into_iter()
            .map(|mut t| {
                if let Some(why) = t.refused {
                    return Ok(Err(why));
                }
                let s = t
                    .summary
                    .ok_or_else(|| Error(format!("{}: no round ran", t.label)))?;
                t.times.sort_by(f64::total_cmp);
                Ok(Ok(JoinRow {
                    method: t.label,
                    secs: t.times[t.times.len() / 2],
                    rows: s.rows,
                    checksum: s.checksum,
                    peak_memory: s.peak_memory_bytes,
                    spilled: s.spilled_bytes,
                    ran: ran(&s),
                }))
            })
            .collect()
    }

    /// The planner's pick for a join, as the method it would run.
    fn planned(&self, j: &Join) -> Result<JoinMethod> {
        Ok(self.configured(j.clone()).explain().map_err(err)?.chosen)
    }

    /// The primary-key joins R.a = SP.id.
    fn primary_joins(
        &self,
        t: &Tables,
        with_index_walk: bool,
    ) -> Result<(Vec<JoinRow>, JoinMethod)> {
        let base = Join::new(&t.r, "a", &t.sp, "id");
        let mut joins: Vec<(String, Join)> = [
            ("INLJ-P", JoinMethod::NestedLoopPrimaryRight),
            ("SJ-P", JoinMethod::SortMerge),
            ("HJ-P", JoinMethod::GraceHash),
            ("HH-P", JoinMethod::HybridHash),
        ]
        .into_iter()
        .map(|(label, m)| (label.to_string(), base.clone().method(m)))
        .collect();
        if with_index_walk {
            joins.push((
                "SJ-PS".into(),
                base.clone().method(JoinMethod::SortMergeIndex),
            ));
        }
        joins.push(("auto-P".into(), base.clone()));
        let chosen = self.planned(&base)?;
        Ok((self.run_joins(joins)?, chosen))
    }
}

/// The method a join ran, with the indexes it read (`sort-merge-index
/// (composite_synchronous, eager_synchronous)`).
fn ran(s: &strata::join::JoinSummary) -> String {
    let names: Vec<&str> = [&s.indexes.0, &s.indexes.1]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    if names.is_empty() {
        s.method.name().to_string()
    } else {
        format!("{} ({})", s.method.name(), names.join(", "))
    }
}

/// One join of a part being measured: its rounds so far.
struct Timed {
    label: String,
    join: Join,
    times: Vec<f64>,
    rounds: usize,
    summary: Option<strata::join::JoinSummary>,
    /// Why the join refused its memory budget, if it did (it then runs no
    /// more rounds).
    refused: Option<String>,
}

impl Timed {
    fn round(&mut self) -> Result<()> {
        let t = Instant::now();
        let s = match self.join.count() {
            Ok(s) => s,
            Err(e @ strata::Error::MemoryBudget { .. }) => {
                self.refused = Some(e.to_string());
                self.rounds = 0;
                return Ok(());
            }
            Err(e) => return Err(err(e)),
        };
        self.times.push(t.elapsed().as_secs_f64());
        if self.times.len() == 1 {
            self.rounds = rounds_for(self.times[0]);
        }
        if let Some(p) = &self.summary
            && (s.rows, s.checksum) != (p.rows, p.checksum)
        {
            return Err(Error(format!(
                "{}: rounds of one join disagree",
                self.label
            )));
        }
        self.summary = Some(s);
        Ok(())
    }
}

/// Runs the suite.
pub fn run(s: &SuiteArgs) -> Result<()> {
    let a = &s.args;
    let n = a.num;
    let base: PathBuf = a.db.join("joins");
    let parts: Vec<&str> = s
        .join_parts
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let peers: Vec<&str> = s
        .join_peers
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let threads = usize::try_from(s.join_threads).unwrap_or(1).max(1);
    let memory = usize::try_from(s.join_memory)
        .map_err(|_| Error(format!("--join-memory {} is too large", s.join_memory)))?;
    if memory < strata::join::MIN_JOIN_MEMORY {
        return Err(Error(format!(
            "--join-memory {memory} is below a join's least budget, {} bytes",
            strata::join::MIN_JOIN_MEMORY
        )));
    }
    let mut rep = Report::new(n, &peers, threads, memory);
    let p = Part {
        base: &base,
        seed: a.seed,
        peers: &peers,
        threads,
        memory,
    };
    for part in parts {
        match part {
            "datasets" => datasets(&mut rep, p, n, &s.join_datasets)?,
            "entry" => entry(&mut rep, p, n)?,
            "frequency" => frequency(&mut rep, p, n / 2)?,
            "skew" => skew(&mut rep, p, n)?,
            other => {
                return Err(Error(format!(
                    "unknown joins part {other:?}: datasets, entry, frequency, skew"
                )));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&base);
    rep.finish(s)
}

fn datasets(rep: &mut Report, p: Part<'_>, n: u64, names: &str) -> Result<()> {
    let Part {
        base, seed, peers, ..
    } = p;
    for name in names.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        let d = Dataset::named(name).ok_or_else(|| Error(format!("unknown dataset {name:?}")))?;
        eprintln!("joins: dataset {name}, {n} rows per table");
        let rows = Rows::new(&d, n, seed);
        let t = Tables::create(&base.join(name))?;
        let load = Instant::now();
        t.load(&rows, 0..n as usize, 64)?;
        t.settle()?;
        let load_secs = load.elapsed().as_secs_f64();
        let (mut joins, chosen_p) = p.primary_joins(&t, false)?;
        // Index builds: every variant on S.b, a composite synchronous one
        // on R.a for the index walk.
        let mut builds = Vec::new();
        for (k, c) in variants() {
            let spec = IndexSpec::new(index_name(k, c), "b").kind(k).consistency(c);
            let tb = Instant::now();
            t.s.create_index(spec).map_err(err)?;
            builds.push((variant_name(k, c), tb.elapsed().as_secs_f64()));
        }
        let tb = Instant::now();
        t.r.create_index(IndexSpec::new("composite_synchronous", "a").kind(IndexKind::Composite))
            .map_err(err)?;
        builds.push(("R.a Comp/S".into(), tb.elapsed().as_secs_f64()));
        t.settle()?;
        let sec = Join::new(&t.r, "a", &t.s, "b");
        let mut n_joins: Vec<(String, Join)> = variants()
            .into_iter()
            .map(|(k, c)| {
                (
                    format!("INLJ-NS {}", variant_name(k, c)),
                    sec.clone()
                        .method(JoinMethod::NestedLoopIndexRight)
                        .right_index(&index_name(k, c)),
                )
            })
            .collect();
        n_joins.extend([
            (
                "SJ-N".to_string(),
                sec.clone().method(JoinMethod::SortMerge),
            ),
            (
                "SJ-SS Comp/S".to_string(),
                sec.clone()
                    .method(JoinMethod::SortMergeIndex)
                    .left_index("composite_synchronous")
                    .right_index("composite_synchronous"),
            ),
            // S's other synchronous indexes walked (R has one index): the
            // planner prices each.
            (
                "SJ-SS Eager/S".to_string(),
                sec.clone()
                    .method(JoinMethod::SortMergeIndex)
                    .left_index("composite_synchronous")
                    .right_index("eager_synchronous"),
            ),
            (
                "SJ-SS Lazy/S".to_string(),
                sec.clone()
                    .method(JoinMethod::SortMergeIndex)
                    .left_index("composite_synchronous")
                    .right_index("lazy_synchronous"),
            ),
            (
                "HJ-N".to_string(),
                sec.clone().method(JoinMethod::GraceHash),
            ),
            (
                "HH-N".to_string(),
                sec.clone().method(JoinMethod::HybridHash),
            ),
            (
                "INLJ-NR Comp/S".to_string(),
                sec.clone()
                    .method(JoinMethod::NestedLoopIndexLeft)
                    .left_index("composite_synchronous"),
            ),
            ("auto-N".to_string(), sec.clone()),
        ]);
        joins.extend(p.run_joins(n_joins)?);
        let chosen_n = p.planned(&sec)?;
        let peer_rows = peers::run(peers, &base.join(format!("{name}-peers")), &rows, n, 64)?;
        rep.dataset(
            name,
            load_secs,
            joins,
            builds,
            (chosen_p, chosen_n),
            peer_rows,
        );
        drop(t);
        let _ = std::fs::remove_dir_all(base.join(name));
    }
    Ok(())
}

fn entry(rep: &mut Report, p: Part<'_>, n: u64) -> Result<()> {
    let Part {
        base, seed, peers, ..
    } = p;
    let d = Dataset::named("unif").ok_or_else(|| Error("unif".into()))?;
    let rows = Rows::new(&d, n, seed);
    for entry in [32usize, 256, 1024, 4096] {
        eprintln!("joins: unif at {entry}-byte entries");
        let t = Tables::create(&base.join(format!("entry-{entry}")))?;
        t.load(&rows, 0..n as usize, entry)?;
        t.settle()?;
        let (mut joins, chosen) = p.primary_joins(&t, false)?;
        drop(t);
        // The same tables with their columns apart below level 0 (made
        // anew in the same directory): a scan of R reads `a` alone, not
        // the padding. These methods are timed in turns with each other,
        // after the whole-row ones.
        let t = Tables::create_with(
            &base.join(format!("entry-{entry}")),
            TableOptions {
                layout: COLUMNS_BELOW.to_string(),
                ..table_options()
            },
        )?;
        t.load(&rows, 0..n as usize, entry)?;
        t.settle()?;
        let base_join = Join::new(&t.r, "a", &t.sp, "id");
        joins.extend(
            p.run_joins(
                [
                    ("INLJ-P", JoinMethod::NestedLoopPrimaryRight),
                    ("HH-P", JoinMethod::HybridHash),
                ]
                .into_iter()
                .map(|(label, m)| {
                    (
                        format!("{label}{COLUMNS_SUFFIX}"),
                        base_join.clone().method(m),
                    )
                })
                .collect(),
            )?,
        );
        let peer_rows = peers::run(
            peers,
            &base.join(format!("entry-{entry}-peers")),
            &rows,
            n,
            entry,
        )?;
        rep.entry(entry, joins, chosen, peer_rows);
        drop(t);
        let _ = std::fs::remove_dir_all(base.join(format!("entry-{entry}")));
    }
    Ok(())
}

/// A configuration of the frequency part: what index the load maintains
/// and which join runs after each part.
struct FreqConfig {
    label: String,
    index: Option<(&'static str, IndexKind, Consistency)>,
    join: fn(&Tables, Option<&str>) -> Join,
}

fn frequency(rep: &mut Report, p: Part<'_>, n: u64) -> Result<()> {
    let Part { base, seed, .. } = p;
    let mut configs = vec![
        FreqConfig {
            label: "HJ-P".into(),
            index: None,
            join: |t, _| Join::new(&t.r, "a", &t.sp, "id").method(JoinMethod::GraceHash),
        },
        FreqConfig {
            label: "SJ-P".into(),
            index: None,
            join: |t, _| Join::new(&t.r, "a", &t.sp, "id").method(JoinMethod::SortMerge),
        },
        FreqConfig {
            label: "INLJ-P".into(),
            index: None,
            join: |t, _| {
                Join::new(&t.r, "a", &t.sp, "id").method(JoinMethod::NestedLoopPrimaryRight)
            },
        },
        FreqConfig {
            label: "SJ-PS Comp/S".into(),
            index: Some(("r", IndexKind::Composite, Consistency::Synchronous)),
            join: |t, i| {
                let j = Join::new(&t.r, "a", &t.sp, "id").method(JoinMethod::SortMergeIndex);
                match i {
                    Some(i) => j.left_index(i),
                    None => j,
                }
            },
        },
    ];
    for (k, c) in variants() {
        configs.push(FreqConfig {
            label: format!("INLJ-NS {}", variant_name(k, c)),
            index: Some(("s", k, c)),
            join: |t, i| {
                let j = Join::new(&t.r, "a", &t.s, "b").method(JoinMethod::NestedLoopIndexRight);
                match i {
                    Some(i) => j.right_index(i),
                    None => j,
                }
            },
        });
    }
    for name in ["user", "wiki"] {
        let d = Dataset::named(name).ok_or_else(|| Error(name.into()))?;
        let rows = Rows::new(&d, n, seed);
        for f in [1usize, 4, 16, 32] {
            eprintln!("joins: {name} at join frequency {f}");
            for c in &configs {
                let t = Tables::create(&base.join(format!("freq-{name}-{f}")))?;
                let idx_name = c.index.map(|(table, k, cons)| {
                    let tab = if table == "r" { &t.r } else { &t.s };
                    let col = if table == "r" { "a" } else { "b" };
                    let name = index_name(k, cons);
                    tab.create_index(IndexSpec::new(&name, col).kind(k).consistency(cons))
                        .map(|_| name)
                });
                let idx_name = idx_name.transpose().map_err(err)?;
                let (mut load_secs, mut join_secs) = (0.0, 0.0);
                let (mut last, mut refused) = (None, None);
                for i in 0..f {
                    let lo = n as usize * i / f;
                    let hi = n as usize * (i + 1) / f;
                    let tl = Instant::now();
                    t.load(&rows, lo..hi, 64)?;
                    t.settle()?;
                    load_secs += tl.elapsed().as_secs_f64();
                    let join = (c.join)(&t, idx_name.as_deref());
                    let row = p.run_or_refuse(vec![(c.label.clone(), join)])?.pop();
                    match row.ok_or_else(|| Error("no join ran".into()))? {
                        Ok(row) => {
                            join_secs += row.secs;
                            last = Some(row);
                        }
                        // A method that cannot run in the budget is
                        // reported as such; the part goes on.
                        Err(why) => {
                            refused = Some(why);
                            break;
                        }
                    }
                }
                rep.frequency(name, f, &c.label, (load_secs, join_secs), last, refused);
                drop(t);
                let _ = std::fs::remove_dir_all(base.join(format!("freq-{name}-{f}")));
            }
        }
    }
    Ok(())
}

fn skew(rep: &mut Report, p: Part<'_>, n: u64) -> Result<()> {
    let Part { base, seed, .. } = p;
    for theta in ["0", "0.5", "0.9", "0.99"] {
        let name = format!("zipf:{theta}");
        let d = Dataset::named(&name).ok_or_else(|| Error(name.clone()))?;
        eprintln!("joins: zipf at θ {theta}");
        let rows = Rows::new(&d, n, seed);
        let t = Tables::create(&base.join(format!("skew-{theta}")))?;
        t.load(&rows, 0..n as usize, 64)?;
        for c in [Consistency::Synchronous, Consistency::Validation] {
            t.s.create_index(IndexSpec::new(index_name(IndexKind::Eager, c), "b").consistency(c))
                .map_err(err)?;
        }
        t.settle()?;
        let sec = Join::new(&t.r, "a", &t.s, "b");
        let mut joins: Vec<(String, Join)> = [Consistency::Synchronous, Consistency::Validation]
            .into_iter()
            .map(|c| {
                (
                    format!("INLJ-NS {}", variant_name(IndexKind::Eager, c)),
                    sec.clone()
                        .method(JoinMethod::NestedLoopIndexRight)
                        .right_index(&index_name(IndexKind::Eager, c)),
                )
            })
            .collect();
        joins.push(("SJ-N".into(), sec.clone().method(JoinMethod::SortMerge)));
        joins.push(("HJ-N".into(), sec.clone().method(JoinMethod::GraceHash)));
        let joins = p.run_joins(joins)?;
        rep.skew(theta, joins);
        drop(t);
        let _ = std::fs::remove_dir_all(base.join(format!("skew-{theta}")));
    }
    Ok(())
}
