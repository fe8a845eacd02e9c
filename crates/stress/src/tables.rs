//! The table mode: a randomized multi-threaded workload on tables (whole-row
//! upserts, partial updates, deletes, multi-row batches, projected gets and
//! range scans checked against [`TableState`], flushes, compactions and
//! layout changes), run by `strata-stress run --tables N` and by the crash
//! drivers.
//!
//! Each table has small-tree options ([`TableConfig::table_options`]) so that
//! rows reach the column-group levels within a round, and a layout preset
//! taken in turn from `--table-layouts` (`column`, `groups:2`,
//! `row-then-column:2` by default); with `--table-layout-changes`, a layout
//! change moves a table to the next preset while the workload runs.
//!
//! Operation mix (per 10 000): upsert of one row 2 500, multi-row upsert
//! (one `upsert_opt` batch of 2-6 rows) 700, partial update of one or two
//! columns (`update_row`) 2 200, multi-row partial update (`Table::update`
//! with a batch of 2-5 rows setting the same one or two columns) 500, delete
//! 800, projected get 1 800, range scan 1 470 (1-32 rows, projected, every
//! returned row and every missing one checked), flush 20, compaction 7,
//! layout change 3 (with `--table-layout-changes`; a get otherwise).
//!
//! Writers hold the stripe locks of their rows (sorted) across "set pending
//! → write → commit", so the expected state is exact under the lock; gets
//! and scans take the locks of the rows they read and are checked exactly.
//! A write with `sync` (`--sync-ratio`) is an `upsert_opt(batch, true)` for
//! upserts; partial updates and deletes (whose table methods write without
//! sync) are followed by a synced write of a marker key in the default
//! keyspace, which makes every write acknowledged before it durable, and
//! the row is committed as synced once that write is acknowledged.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::{Mutex, MutexGuard};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::WriteOptions;
use strata::table::{ScanOptions, TableLayout, Value};

use crate::check::Failures;
use crate::config::DbConfig;
use crate::crash::RoundStats;
use crate::table_db::{
    MARKER_KEY, TableConfig, TableHandles, batch_values, candidate_values, describe_read, names_of,
    open_tables, project, random_projection, rows_batch, table_shape_line,
};
use crate::table_model::{
    ALL_COLUMNS, COLUMN_NAMES, NCOLS, OpKind, RowState, TableState, cell, table_name,
};
use crate::table_verify::verify_tables;
use crate::values::mix64;
use crate::workload::{WorkloadConfig, with_progress};

/// Operation counters of a table run.
#[derive(Default, Debug)]
pub struct TableRunStats {
    pub ops: AtomicU64,
    pub upserts: AtomicU64,
    pub batch_upserts: AtomicU64,
    pub updates: AtomicU64,
    pub batch_updates: AtomicU64,
    pub deletes: AtomicU64,
    pub gets: AtomicU64,
    pub scans: AtomicU64,
    pub flushes: AtomicU64,
    pub compactions: AtomicU64,
    pub layout_changes: AtomicU64,
    pub synced_writes: AtomicU64,
    /// Operations that failed after `expect_errors` was raised (power cut).
    pub expected_errors: AtomicU64,
}

impl RoundStats for TableRunStats {
    fn ops(&self) -> u64 {
        self.ops.load(Ordering::Relaxed)
    }

    fn expected_errors(&self) -> u64 {
        self.expected_errors.load(Ordering::Relaxed)
    }

    fn line(&self) -> String {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "ops={} upserts={} batch_upserts={} updates={} batch_updates={} deletes={} gets={} \
             scans={} table_flushes={} table_compactions={} layout_changes={} synced_writes={}",
            g(&self.ops),
            g(&self.upserts),
            g(&self.batch_upserts),
            g(&self.updates),
            g(&self.batch_updates),
            g(&self.deletes),
            g(&self.gets),
            g(&self.scans),
            g(&self.flushes),
            g(&self.compactions),
            g(&self.layout_changes),
            g(&self.synced_writes)
        )
    }
}

/// Number of lock stripes.
const STRIPES: usize = 1024;

/// The thread must stop (an error was met).
struct Halt;

type OpResult = Result<(), Halt>;

/// Everything the worker threads share.
pub struct TableWorkload<'a> {
    pub h: &'a TableHandles,
    pub state: &'a TableState,
    pub cfg: &'a WorkloadConfig,
    pub tcfg: &'a TableConfig,
    pub failures: &'a Failures,
    pub stats: &'a TableRunStats,
    /// Raised to stop the threads.
    pub stop: &'a AtomicBool,
    /// Raised before a simulated power cut: errors after it are expected.
    pub expect_errors: &'a AtomicBool,
    locks: Vec<Mutex<()>>,
    /// Serialises layout changes (each moves a table to the next preset).
    layout_turn: Mutex<Vec<usize>>,
}

impl<'a> TableWorkload<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        h: &'a TableHandles,
        state: &'a TableState,
        cfg: &'a WorkloadConfig,
        tcfg: &'a TableConfig,
        failures: &'a Failures,
        stats: &'a TableRunStats,
        stop: &'a AtomicBool,
        expect_errors: &'a AtomicBool,
    ) -> Self {
        TableWorkload {
            h,
            state,
            cfg,
            tcfg,
            failures,
            stats,
            stop,
            expect_errors,
            locks: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            layout_turn: Mutex::new(vec![0; tcfg.tables as usize]),
        }
    }

    /// Runs the worker threads to completion (ops done, deadline, stop, or
    /// every thread halted by errors).
    pub fn run(&self) {
        self.cfg
            .run_threads(|t, quota, deadline| self.worker(t, quota, deadline));
    }

    fn lock(&self, t: u32, rows: &[u32]) -> Vec<MutexGuard<'_, ()>> {
        let n = self.state.space().rows as usize;
        let mut stripes: Vec<usize> = rows
            .iter()
            .map(|&k| (t as usize * n + k as usize) % STRIPES)
            .collect();
        stripes.sort_unstable();
        stripes.dedup();
        stripes.into_iter().map(|s| self.locks[s].lock()).collect()
    }

    fn fail(&self, msg: String) {
        if !self.expect_errors.load(Ordering::SeqCst) {
            self.failures.report(msg);
        }
    }

    fn error(&self, what: &str, e: strata::Error) -> Halt {
        if self.expect_errors.load(Ordering::SeqCst) {
            self.stats.expected_errors.fetch_add(1, Ordering::Relaxed);
        } else {
            self.failures.report(format!("{what} failed: {e}"));
        }
        Halt
    }

    fn worker(&self, w: usize, quota: Option<u64>, deadline: Option<Instant>) {
        let mut rng = StdRng::seed_from_u64(mix64(self.cfg.seed ^ mix64(w as u64 + 101)));
        let mut done = 0u64;
        loop {
            if self.stop.load(Ordering::Relaxed)
                || quota.is_some_and(|q| done >= q)
                || deadline.is_some_and(|d| Instant::now() >= d)
            {
                break;
            }
            let res = match rng.random_range(0..10_000u32) {
                0..2500 => self.upsert(&mut rng),
                2500..3200 => self.batch_write(&mut rng, OpKind::Upsert),
                3200..5400 => self.update(&mut rng),
                5400..5900 => self.batch_write(&mut rng, OpKind::Update),
                5900..6700 => self.delete(&mut rng),
                6700..8500 => self.get(&mut rng),
                8500..9970 => self.scan(&mut rng),
                9970..9990 => self.maintain(&mut rng, 0),
                9990..9997 => self.maintain(&mut rng, 1),
                _ if self.tcfg.layout_changes => self.maintain(&mut rng, 2),
                _ => self.get(&mut rng),
            };
            if res.is_err() {
                break;
            }
            done += 1;
            self.stats.ops.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn pick_table(&self, rng: &mut StdRng) -> u32 {
        rng.random_range(0..self.state.space().tables)
    }

    fn pick_rows(&self, rng: &mut StdRng, n: usize) -> Vec<u32> {
        let rows = self.state.space().rows;
        let mut v: Vec<u32> = Vec::with_capacity(n);
        while v.len() < n.min(rows as usize) {
            let k = rng.random_range(0..rows);
            if !v.contains(&k) {
                v.push(k);
            }
        }
        v
    }

    fn want_sync(&self, rng: &mut StdRng) -> bool {
        let r = self.cfg.sync_ratio;
        let sync = r >= 1.0 || (r > 0.0 && rng.random_bool(r));
        if sync {
            self.stats.synced_writes.fetch_add(1, Ordering::Relaxed);
        }
        sync
    }

    /// One or two distinct value columns, as a mask.
    fn pick_columns(rng: &mut StdRng) -> u32 {
        let a = rng.random_range(0..NCOLS);
        let mut m = 1u32 << a;
        if rng.random_bool(0.4) {
            m |= 1 << rng.random_range(0..NCOLS);
        }
        m
    }

    /// The synced marker write that makes the preceding writes durable.
    fn sync_marker(&self) -> strata::Result<()> {
        let opts = WriteOptions {
            sync: true,
            disable_wal: false,
        };
        let n = self.stats.synced_writes.load(Ordering::Relaxed);
        self.h.marker.put_opt(opts, MARKER_KEY, &n.to_le_bytes())
    }

    fn upsert(&self, rng: &mut StdRng) -> OpResult {
        let t = self.pick_table(rng);
        let k = self.pick_rows(rng, 1)[0];
        let sync = self.want_sync(rng);
        let _g = self.lock(t, &[k]);
        let op = self.state.begin(t, k, OpKind::Upsert, ALL_COLUMNS, 0);
        let space = self.state.space();
        let row = op.apply(RowState::default());
        let table = &self.h.tables[t as usize];
        let r = if sync {
            let all: Vec<usize> = (0..NCOLS).collect();
            match rows_batch(&space, t, &all, &[(k, row)]) {
                Ok(b) => table.upsert_opt(&b, true),
                Err(e) => Err(strata::Error::InvalidArgument(e)),
            }
        } else {
            // `values` of a present state is always Some.
            table.upsert_row(&row.values(&space, t, k).unwrap_or_default())
        };
        match r {
            Ok(()) => {
                self.state.commit(t, k, sync);
                self.stats.upserts.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => Err(self.error(&format!("upsert of {} row {k}", table_name(t)), e)),
        }
    }

    fn update(&self, rng: &mut StdRng) -> OpResult {
        let t = self.pick_table(rng);
        let k = self.pick_rows(rng, 1)[0];
        let mask = Self::pick_columns(rng);
        let sync = self.want_sync(rng);
        let _g = self.lock(t, &[k]);
        let op = self.state.begin(t, k, OpKind::Update, mask, 0);
        let set: Vec<(&str, Value)> = (0..NCOLS)
            .filter(|c| mask & (1 << c) != 0)
            .map(|c| (COLUMN_NAMES[c], cell(t, k, c, op.generation)))
            .collect();
        let space = self.state.space();
        let table = &self.h.tables[t as usize];
        let mut r = table.update_row(&[Value::Int64(space.row_id(k))], &set);
        if r.is_ok() && sync {
            r = self.sync_marker();
        }
        match r {
            Ok(()) => {
                self.state.commit(t, k, sync);
                self.stats.updates.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => Err(self.error(&format!("update of {} row {k}", table_name(t)), e)),
        }
    }

    fn delete(&self, rng: &mut StdRng) -> OpResult {
        let t = self.pick_table(rng);
        let k = self.pick_rows(rng, 1)[0];
        let sync = self.want_sync(rng);
        let _g = self.lock(t, &[k]);
        self.state.begin(t, k, OpKind::Delete, 0, 0);
        let space = self.state.space();
        let table = &self.h.tables[t as usize];
        let mut r = table.delete_row(&[Value::Int64(space.row_id(k))]);
        if r.is_ok() && sync {
            r = self.sync_marker();
        }
        match r {
            Ok(()) => {
                self.state.commit(t, k, sync);
                self.stats.deletes.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => Err(self.error(&format!("delete of {} row {k}", table_name(t)), e)),
        }
    }

    /// One multi-row write (atomic: one write batch): an upsert of 2-6 whole
    /// rows, or a partial update of 2-5 rows setting the same columns.
    fn batch_write(&self, rng: &mut StdRng, kind: OpKind) -> OpResult {
        let t = self.pick_table(rng);
        let n = if kind == OpKind::Upsert {
            rng.random_range(2..=6)
        } else {
            rng.random_range(2..=5)
        };
        let ks = self.pick_rows(rng, n);
        let mask = if kind == OpKind::Upsert {
            ALL_COLUMNS
        } else {
            Self::pick_columns(rng)
        };
        let cols: Vec<usize> = (0..NCOLS).filter(|c| mask & (1 << c) != 0).collect();
        let sync = self.want_sync(rng);
        let space = self.state.space();
        let _g = self.lock(t, &ks);
        let tag = self.state.next_tag();
        let rows: Vec<(u32, RowState)> = ks
            .iter()
            .map(|&k| {
                let op = self.state.begin(t, k, kind, mask, tag);
                // The written cells: every column of `mask` at the new
                // generation (for an update, whether or not the row exists).
                let present = RowState {
                    present: true,
                    gens: [op.generation; NCOLS],
                };
                (k, present)
            })
            .collect();
        let table = &self.h.tables[t as usize];
        let r = match rows_batch(&space, t, &cols, &rows) {
            Err(e) => Err(strata::Error::InvalidArgument(e)),
            Ok(b) if kind == OpKind::Upsert => table.upsert_opt(&b, sync),
            Ok(b) => table
                .update(&b)
                .and_then(|()| if sync { self.sync_marker() } else { Ok(()) }),
        };
        match r {
            Ok(()) => {
                for &k in &ks {
                    self.state.commit(t, k, sync);
                }
                let c = if kind == OpKind::Upsert {
                    &self.stats.batch_upserts
                } else {
                    &self.stats.batch_updates
                };
                c.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => Err(self.error(&format!("batch write of {} rows {ks:?}", table_name(t)), e)),
        }
    }

    /// A projected get of one row, under its lock: exact.
    fn get(&self, rng: &mut StdRng) -> OpResult {
        let t = self.pick_table(rng);
        let k = self.pick_rows(rng, 1)[0];
        let all = rng.random_bool(0.1);
        let proj = if all {
            (0..=NCOLS).collect()
        } else {
            random_projection(rng, 0.2)
        };
        let names = names_of(&proj);
        let space = self.state.space();
        let _g = self.lock(t, &[k]);
        let table = &self.h.tables[t as usize];
        let got = table
            .get(
                &[Value::Int64(space.row_id(k))],
                if all { None } else { Some(&names) },
            )
            .map_err(|e| self.error(&format!("get of {} row {k}", table_name(t)), e))?;
        let (cands, _) = self.state.candidates(t, k);
        let ok = candidate_values(&space, t, k, &cands)
            .iter()
            .any(|c| c.as_ref().map(|r| project(r, &proj)) == got);
        if !ok {
            // Read again (still under the lock), and read every column: a
            // second read that agrees and a whole-row read that does not
            // tell a wrong read of this projection from lost data.
            let key = [Value::Int64(space.row_id(k))];
            let again = table
                .get(&key, if all { None } else { Some(&names) })
                .map(|r| describe_read(t, k, &proj, r.as_ref()))
                .unwrap_or_else(|e| format!("failed: {e}"));
            let every: Vec<usize> = (0..=NCOLS).collect();
            let whole = table
                .get(&key, None)
                .map(|r| describe_read(t, k, &every, r.as_ref()))
                .unwrap_or_else(|e| format!("failed: {e}"));
            let versions = table
                .debug_versions(&key)
                .unwrap_or_else(|e| format!("failed: {e}"));
            self.fail(format!(
                "get of {} row {k} (id {}), columns {names:?}: returned {} (read again: {again}; \
                 every column: {whole}), expected {}\nversions:\n{versions}",
                table_name(t),
                space.row_id(k),
                describe_read(t, k, &proj, got.as_ref()),
                cands
                    .iter()
                    .map(RowState::describe)
                    .collect::<Vec<_>>()
                    .join(" or ")
            ));
        }
        self.stats.gets.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// A projected range scan of 1-32 rows, holding their locks: every row
    /// returned and every row missing is checked exactly.
    fn scan(&self, rng: &mut StdRng) -> OpResult {
        let t = self.pick_table(rng);
        let space = self.state.space();
        let len = rng.random_range(1..=32u32).min(space.rows);
        let lo = rng.random_range(0..=space.rows - len);
        let hi = lo + len;
        let mut proj = random_projection(rng, 0.0);
        proj.retain(|&c| c != 0);
        proj.insert(0, 0);
        let names = names_of(&proj);
        let ks: Vec<u32> = (lo..hi).collect();
        let _g = self.lock(t, &ks);
        let table = &self.h.tables[t as usize];
        let mut opts = ScanOptions::default().columns(&names).range(
            vec![Value::Int64(space.row_id(lo))],
            vec![Value::Int64(space.row_id(hi))],
        );
        if rng.random_bool(0.3) {
            opts.batch_rows = rng.random_range(1..8);
        }
        let what = format!(
            "scan of {} rows [{lo}, {hi}) columns {names:?}",
            table_name(t)
        );
        let mut got: Vec<Vec<Value>> = Vec::new();
        let scan = table.scan(opts).map_err(|e| self.error(&what, e))?;
        for b in scan {
            let b = b.map_err(|e| self.error(&what, e))?;
            match batch_values(&b) {
                Ok(rows) => got.extend(rows),
                Err(m) => self.fail(format!("{what}: {m}")),
            }
        }
        let mut next = lo;
        for row in &got {
            let k = match row.first() {
                Some(Value::Int64(id)) => space.parse_row_id(*id),
                _ => None,
            };
            let Some(k) = k.filter(|k| (next..hi).contains(k)) else {
                self.fail(format!(
                    "{what}: returned the row {row:?} out of order or out of the range \
                     (next row expected at or after {next})"
                ));
                continue;
            };
            for missing in next..k {
                self.check_scanned(&what, t, missing, None, &proj);
            }
            self.check_scanned(&what, t, k, Some(row), &proj);
            next = k + 1;
        }
        for missing in next..hi {
            self.check_scanned(&what, t, missing, None, &proj);
        }
        self.stats.scans.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn check_scanned(&self, what: &str, t: u32, k: u32, row: Option<&Vec<Value>>, proj: &[usize]) {
        let space = self.state.space();
        let (cands, _) = self.state.candidates(t, k);
        let ok = candidate_values(&space, t, k, &cands)
            .iter()
            .any(|c| c.as_ref().map(|r| project(r, proj)).as_ref() == row);
        if !ok {
            self.fail(format!(
                "{what}: row {k} (id {}) read as {}, expected {}",
                space.row_id(k),
                describe_read(t, k, proj, row),
                cands
                    .iter()
                    .map(RowState::describe)
                    .collect::<Vec<_>>()
                    .join(" or ")
            ));
        }
    }

    /// 0: flush a table; 1: compact a table; 2: move a table to the next
    /// layout preset.
    fn maintain(&self, rng: &mut StdRng, what: u32) -> OpResult {
        let t = self.pick_table(rng);
        let table = &self.h.tables[t as usize];
        let name = table_name(t);
        match what {
            0 => {
                table
                    .flush()
                    .map_err(|e| self.error(&format!("flush of {name}"), e))?;
                self.stats.flushes.fetch_add(1, Ordering::Relaxed);
            }
            1 => {
                table
                    .compact()
                    .map_err(|e| self.error(&format!("compaction of {name}"), e))?;
                self.stats.compactions.fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                let mut turn = self.layout_turn.lock();
                let i = &mut turn[t as usize];
                *i += 1;
                let preset = &self.tcfg.layouts[(t as usize + *i) % self.tcfg.layouts.len()];
                let layout = TableLayout::parse(preset, table.schema(), 4)
                    .map_err(|e| self.error(&format!("layout {preset:?}"), e))?;
                table
                    .set_layout(layout)
                    .map_err(|e| self.error(&format!("layout change of {name} to {preset}"), e))?;
                self.stats.layout_changes.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}

/// `strata-stress run --tables N`: opens the database and its tables, checks
/// them against the expected state (resolving it), runs the workload, and
/// prints a summary. Exit code 2 when a check failed. `tcfg` must be
/// validated ([`TableConfig::validate`], as `strata-stress` does).
pub fn run(
    db: &Path,
    exp: &Path,
    db_cfg: &DbConfig,
    tcfg: &TableConfig,
    wl: &WorkloadConfig,
    progress_ms: u64,
) -> Result<u8, String> {
    let state = TableState::open_or_create(exp, tcfg.space()).map_err(|e| e.to_string())?;
    let h =
        open_tables(db, db_cfg, tcfg, None).map_err(|e| format!("open {}: {e}", db.display()))?;
    let failures = Failures::new();
    let rep = verify_tables(&h, &state, true, &failures, wl.seed);
    eprintln!("initial verification: {}", rep.line());
    eprintln!("seed {}; {tcfg:?}; {db_cfg:?}; {wl:?}", wl.seed);
    let stats = TableRunStats::default();
    let stop = AtomicBool::new(false);
    let no_errors = AtomicBool::new(false);
    let t0 = Instant::now();
    let progress = || {
        let st = h.db.stats();
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "ops={} flushes={} compactions={} failures={} updates={}",
            g(&stats.ops),
            st.flushes,
            st.compactions,
            failures.count(),
            g(&stats.updates) + g(&stats.batch_updates)
        )
    };
    let w = TableWorkload::new(&h, &state, wl, tcfg, &failures, &stats, &stop, &no_errors);
    with_progress(progress_ms, progress, || w.run());
    let st = h.db.stats();
    println!(
        "{} in {:.1} s; flushes {}, compactions {}, tables {}; failures: {}",
        stats.line(),
        t0.elapsed().as_secs_f64(),
        st.flushes,
        st.compactions,
        table_shape_line(&h),
        failures.count()
    );
    drop(h);
    state.sync().map_err(|e| e.to_string())?;
    Ok(if failures.count() > 0 { 2 } else { 0 })
}
