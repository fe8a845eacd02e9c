//! Table-mode verification after a crash, a power cut or at the start of a
//! run, and the table mode's crash drivers.
//!
//! Per table: one full scan (every column; rows must come in key order and
//! be rows of the table's key space), the same scan in parts on three
//! threads (which must return the same rows, each once), then for every
//! row two projected
//! `get`s on random column subsets (sometimes every column), which must
//! agree with the scan. The row the scan returned must be one of the row's
//! acceptable states ([`TableState::candidates`]): its committed state
//! (after a power cut: any state acknowledged since its last synced write)
//! or its pending write applied — whole: a partial update in flight shows
//! all its columns or none. Rows still pending with one tag (a multi-row
//! write) must all show the write applied or all not. Every live file must
//! pass `Db::verify`. A failure names the table, the row (and its key) and
//! each column that differs from the committed state, with the generation
//! each value belongs to. With `resolve`, each row's expected state is then
//! set to what the database holds (nothing pending).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::ops::Bound;

use strata::index::{Consistency, IndexQuery};
use strata::table::{ScanOptions, Value};
use strata::vfs::Vfs;

use crate::check::Failures;
use crate::config::DbConfig;
use crate::crash::{
    CrashConfig, CrashSummary, power_cut_rounds_with, run_then_cut, sigkill_rounds_with,
};
use crate::table_db::{
    TableConfig, TableHandles, batch_values, names_of, open_tables, project, random_projection,
    table_shape_line,
};
use crate::table_model::{
    COLUMN_NAMES, KEY_COLUMN, NCOLS, RowState, TableSpace, TableState, decode_cell, describe_cell,
    table_name,
};
use crate::tables::{TableRunStats, TableWorkload};
use crate::values::mix64;
use crate::verify::{TagMap, note_tag, report_partial_batches};

/// What a verification saw.
#[derive(Clone, Debug, Default)]
pub struct TableVerifyReport {
    pub tables: u64,
    pub rows: u64,
    /// Rows present in the database.
    pub present: u64,
    /// Projected gets made.
    pub gets: u64,
    /// Rows that had a pending write.
    pub pending: u64,
    /// Of those, rows where the pending write had landed.
    pub pending_applied: u64,
    /// Multi-row writes (tags) checked for atomicity.
    pub batches_checked: u64,
    /// Secondary indexes checked against the table.
    pub index_checks: u64,
    /// Failed checks in this verification.
    pub failures: u64,
}

impl TableVerifyReport {
    pub fn line(&self) -> String {
        format!(
            "checked {} rows of {} tables ({} present, {} projected gets); {} pending, {} of \
             them landed; {} batches checked; {} indexes checked; {} failures",
            self.rows,
            self.tables,
            self.present,
            self.gets,
            self.pending,
            self.pending_applied,
            self.batches_checked,
            self.index_checks,
            self.failures
        )
    }
}

/// The columns of `held` (a present row) that differ from `expected`.
fn column_diff(space: &TableSpace, t: u32, k: u32, held: &[Value], expected: &RowState) -> String {
    let Some(want) = expected.values(space, t, k) else {
        return "present, expected absent".into();
    };
    let mut out = Vec::new();
    for c in 0..NCOLS {
        if held.get(c + 1) != want.get(c + 1) {
            out.push(format!(
                "column {} holds {}, expected {} (generation {})",
                COLUMN_NAMES[c],
                held.get(c + 1)
                    .map(|v| describe_cell(t, k, c, v))
                    .unwrap_or_else(|| "nothing".into()),
                want[c + 1],
                expected.gens[c]
            ));
        }
    }
    if held.first() != want.first() {
        out.push(format!("key {:?}, expected {:?}", held.first(), want[0]));
    }
    out.join("; ")
}

/// Describes a row that matches none of its acceptable states.
fn mismatch(
    space: &TableSpace,
    t: u32,
    k: u32,
    held: Option<&Vec<Value>>,
    settled: &[RowState],
    pending: Option<RowState>,
) -> String {
    let committed = settled.last().copied().unwrap_or_default();
    let what = match held {
        None => format!(
            "absent: lost acknowledged write (committed: {})",
            committed.describe()
        ),
        Some(row) => {
            let d = column_diff(space, t, k, row, &committed);
            format!("{d} (committed: {})", committed.describe())
        }
    };
    let mut also = Vec::new();
    if settled.len() > 1 {
        also.push(format!(
            "unsynced states since the last synced write: {}",
            settled
                .iter()
                .map(RowState::describe)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(p) = pending {
        also.push(format!("write in flight: {}", p.describe()));
        if let Some(row) = held
            && p.present
        {
            also.push(format!("against it: {}", column_diff(space, t, k, row, &p)));
        }
    }
    let also = if also.is_empty() {
        String::new()
    } else {
        format!("; {}", also.join("; "))
    };
    format!(
        "{} row {k} (id {}): {what}{also}",
        table_name(t),
        space.row_id(k)
    )
}

/// Reads a whole table (every column) on `threads` threads; reports
/// key-space problems, rows out of order (one thread) or returned twice
/// (in parts, whose ranges interleave); returns each row by index, `None`
/// if the scan failed.
fn full_scan(
    h: &TableHandles,
    space: &TableSpace,
    t: u32,
    threads: usize,
    failures: &Failures,
) -> Option<Vec<Option<Vec<Value>>>> {
    let name = if threads > 1 {
        format!("{} in parts", table_name(t))
    } else {
        table_name(t)
    };
    let mut rows: Vec<Option<Vec<Value>>> = vec![None; space.rows as usize];
    let scan = match h.tables[t as usize].scan(ScanOptions::default().threads(threads)) {
        Ok(s) => s,
        Err(e) => {
            failures.report(format!("full scan of {name} failed: {e}"));
            return None;
        }
    };
    let mut prev: Option<i64> = None;
    for b in scan {
        let b = match b {
            Ok(b) => b,
            Err(e) => {
                failures.report(format!("full scan of {name} failed: {e}"));
                return None;
            }
        };
        let vals = match batch_values(&b) {
            Ok(v) => v,
            Err(m) => {
                failures.report(format!("full scan of {name}: {m}"));
                return None;
            }
        };
        for row in vals {
            let id = match row.first() {
                Some(Value::Int64(id)) if row.len() == NCOLS + 1 => *id,
                _ => {
                    failures.report(format!("full scan of {name}: malformed row {row:?}"));
                    continue;
                }
            };
            if threads == 1 && prev.is_some_and(|p| p >= id) {
                failures.report(format!(
                    "full scan of {name}: key {id} follows key {prev:?}: out of order"
                ));
            }
            prev = Some(id);
            match space.parse_row_id(id) {
                Some(k) => {
                    // (One thread's duplicate is reported as out of order.)
                    if rows[k as usize].replace(row).is_some() && threads > 1 {
                        failures.report(format!("full scan of {name}: key {id} returned twice"));
                    }
                }
                None => failures.report(format!(
                    "full scan of {name}: key {id} is no row of the table"
                )),
            }
        }
    }
    Some(rows)
}

/// Reads table `t` whole again in parts on three threads and reports the
/// first row that differs from `rows`, what the one-thread scan returned.
fn check_scan_in_parts(
    h: &TableHandles,
    space: &TableSpace,
    t: u32,
    rows: &[Option<Vec<Value>>],
    failures: &Failures,
) {
    let Some(seen) = full_scan(h, space, t, 3, failures) else {
        return;
    };
    if let Some(k) = (0..rows.len()).find(|&k| seen[k] != rows[k]) {
        failures.report(format!(
            "full scan of {} in parts differs from the one-thread scan at row {k}: \
             {:?} against {:?}",
            table_name(t),
            seen[k],
            rows[k]
        ));
    }
}

/// Checks each index of table `t` against the rows a full scan returned:
/// a lookup of every value returns exactly the rows holding one (id, the
/// indexed column and the covered one), and a synchronous index holds one
/// entry per such row. Returns the indexes checked.
fn verify_indexes(
    table: &strata::table::Table,
    t: u32,
    rows: &[Option<Vec<Value>>],
    failures: &Failures,
) -> u64 {
    let name = table_name(t);
    let schema = table.schema();
    let mut checked = 0;
    for spec in crate::table_db::index_specs(t) {
        let col = schema.index_of(&spec.column).unwrap_or(0);
        let mut cols: Vec<&str> = vec![KEY_COLUMN, &spec.column];
        let mut positions = vec![0, col];
        for c in &spec.covering {
            cols.push(c);
            positions.push(schema.index_of(c).unwrap_or(0));
        }
        let want: Vec<Vec<Value>> = rows
            .iter()
            .flatten()
            .filter(|r| !r[col].is_null())
            .map(|r| positions.iter().map(|&p| r[p].clone()).collect())
            .collect();
        let query = IndexQuery::range(Bound::Unbounded, Bound::Unbounded);
        match table.lookup_rows(&spec.name, &query, Some(&cols)) {
            Ok(got) if got == want => {}
            Ok(got) => {
                let first = got
                    .iter()
                    .zip(&want)
                    .position(|(a, b)| a != b)
                    .unwrap_or(got.len().min(want.len()));
                failures.report(format!(
                    "{name} index {}: a lookup of every value returned {} rows, the table holds {} with a value; first difference at {first}: index {:?}, table {:?}",
                    spec.name,
                    got.len(),
                    want.len(),
                    got.get(first),
                    want.get(first)
                ));
            }
            Err(e) => failures.report(format!("{name} index {}: lookup failed: {e}", spec.name)),
        }
        if spec.consistency == Consistency::Synchronous {
            match table.describe_index(&spec.name) {
                Ok(d) if d.entries == want.len() as u64 => {}
                Ok(d) => failures.report(format!(
                    "{name} index {} (synchronous): {} entries for {} rows with a value",
                    spec.name,
                    d.entries,
                    want.len()
                )),
                Err(e) => {
                    failures.report(format!("{name} index {}: describe failed: {e}", spec.name))
                }
            }
        }
        checked += 1;
    }
    checked
}

/// Verifies every table against `state`; see the module documentation.
pub fn verify_tables(
    h: &TableHandles,
    state: &TableState,
    resolve: bool,
    failures: &Failures,
    seed: u64,
) -> TableVerifyReport {
    let before = failures.count();
    let space = state.space();
    let mut rng = StdRng::seed_from_u64(mix64(seed ^ 0x7ab1e));
    let mut rep = TableVerifyReport {
        tables: u64::from(space.tables),
        rows: u64::from(space.tables) * u64::from(space.rows),
        ..TableVerifyReport::default()
    };
    let mut tags = TagMap::new();
    for t in 0..space.tables {
        let name = table_name(t);
        let table = &h.tables[t as usize];
        let mut scanned = full_scan(h, &space, t, 1, failures);
        if let Some(rows) = &scanned {
            check_scan_in_parts(h, &space, t, rows, failures);
            rep.index_checks += verify_indexes(table, t, rows, failures);
        }
        for k in 0..space.rows {
            let id = Value::Int64(space.row_id(k));
            // The row as the scan returned it (or, if the scan failed, as
            // a get of every column does).
            let row = match scanned.as_mut() {
                Some(s) => s[k as usize].take(),
                None => match table.get(std::slice::from_ref(&id), None) {
                    Ok(r) => r,
                    Err(e) => {
                        failures.report(format!("{name} row {k}: get failed: {e}"));
                        continue;
                    }
                },
            };
            for i in 0..2 {
                let all = i == 1 && rng.random_bool(0.2);
                let proj: Vec<usize> = if all {
                    (0..=NCOLS).collect()
                } else {
                    random_projection(&mut rng, 0.3)
                };
                let names = names_of(&proj);
                rep.gets += 1;
                match table.get(std::slice::from_ref(&id), (!all).then_some(&names[..])) {
                    Ok(got) => {
                        let want = row.as_ref().map(|r| project(r, &proj));
                        if got != want {
                            failures.report(format!(
                                "{name} row {k} (id {}): a get of columns {names:?} returned \
                                 {got:?}, the full scan {want:?}",
                                space.row_id(k)
                            ));
                        }
                    }
                    Err(e) => failures.report(format!(
                        "{name} row {k}: get of columns {names:?} failed: {e}"
                    )),
                }
            }
            if row.is_some() {
                rep.present += 1;
            }
            let settled = state.settled(t, k);
            let (cands, pending) = state.candidates(t, k);
            let matched = cands
                .iter()
                .copied()
                .find(|c| c.values(&space, t, k) == row);
            if matched.is_none() {
                failures.report(format!(
                    "verify: {}",
                    mismatch(&space, t, k, row.as_ref(), &settled, pending)
                ));
            }
            if let Some(p) = pending {
                rep.pending += 1;
                // By values: where the write changes nothing a reader sees
                // (a cell null before and after), it cannot be told apart.
                let new = p.values(&space, t, k);
                let old = settled.iter().any(|s| s.values(&space, t, k) == row);
                let applied = match (matched.is_some(), row == new, old) {
                    (true, true, false) => Some(true),
                    (true, false, true) => Some(false),
                    _ => None,
                };
                if applied == Some(true) {
                    rep.pending_applied += 1;
                }
                let who = match state.pending(t, k) {
                    Some(op) => format!(
                        "{name} row {k} ({:?} of columns {:#09b}, generation {})",
                        op.kind, op.mask, op.generation
                    ),
                    None => format!("{name} row {k}"),
                };
                note_tag(&mut tags, state.tag(t, k), who, applied);
            }
            if resolve {
                let st = matched.unwrap_or_else(|| match &row {
                    None => RowState::default(),
                    Some(r) => {
                        let mut s = RowState {
                            present: true,
                            ..RowState::default()
                        };
                        for c in 0..NCOLS {
                            s.gens[c] = r
                                .get(c + 1)
                                .and_then(|v| decode_cell(t, k, c, v))
                                .unwrap_or(0);
                        }
                        s
                    }
                });
                state.resolve(t, k, st);
            }
        }
    }
    rep.batches_checked += report_partial_batches(&tags, "multi-row write", failures);
    for (path, e) in h.db.verify() {
        failures.report(format!("table {} fails verification: {e}", path.display()));
    }
    rep.failures = failures.count() - before;
    rep
}

/// Opens the database in this process, verifies its tables against the
/// expected-state file (resolving pending rows), and closes it.
pub fn verify_on_disk(
    db: &Path,
    expected: &Path,
    db_cfg: &DbConfig,
    tcfg: &TableConfig,
    resolve: bool,
    failures: &Failures,
    seed: u64,
) -> Result<String, String> {
    let state = TableState::open(expected)
        .map_err(|e| format!("cannot open the expected state {}: {e}", expected.display()))?;
    if state.space() != tcfg.space() {
        return Err(format!(
            "the expected state {} is for {:?}, not {:?}",
            expected.display(),
            state.space(),
            tcfg.space()
        ));
    }
    let h = open_tables(db, db_cfg, tcfg, None)
        .map_err(|e| format!("cannot open the database: {e}"))?;
    let rep = verify_tables(&h, &state, resolve, failures, seed);
    state
        .sync()
        .map_err(|e| format!("fsync of the expected state: {e}"))?;
    let shape = table_shape_line(&h);
    drop(h);
    Ok(format!("{}; tables: {shape}", rep.line()))
}

/// SIGKILL rounds of `strata-stress run --tables N` children.
pub fn sigkill_rounds(cfg: &CrashConfig, tcfg: &TableConfig) -> CrashSummary {
    sigkill_rounds_with(cfg, |failures, round| {
        verify_on_disk(
            &cfg.db,
            &cfg.expected_state,
            &cfg.db_cfg,
            tcfg,
            true,
            failures,
            cfg.seed.wrapping_add(round),
        )
    })
}

/// Power-cut rounds of the table workload, in process over one `MemVfs`.
pub fn power_cut_rounds(cfg: &CrashConfig, tcfg: &TableConfig) -> CrashSummary {
    let state = TableState::in_memory(tcfg.space(), true);
    power_cut_rounds_with::<TableRunStats>(cfg, |r, stats, cut_after| {
        let dynvfs: Arc<dyn Vfs> = Arc::new(r.vfs.clone());
        let h = open_tables(r.path, &cfg.db_cfg, tcfg, Some(dynvfs))
            .map_err(|e| format!("open after power cut {} failed: {e}", r.round))?;
        let wl = cfg.round_workload(r.round);
        let rep = verify_tables(&h, &state, true, r.failures, wl.seed);
        if r.last {
            return Ok(rep.line());
        }
        let stop = AtomicBool::new(false);
        let expect_errors = AtomicBool::new(false);
        let w = TableWorkload::new(
            &h,
            &state,
            &wl,
            tcfg,
            r.run_failures,
            stats,
            &stop,
            &expect_errors,
        );
        *cut_after = run_then_cut(r.vfs, r.run_for, &stop, &expect_errors, || w.run());
        let shape = table_shape_line(&h);
        drop(h);
        Ok(format!("{}; tables before the cut: {shape}", rep.line()))
    })
}
