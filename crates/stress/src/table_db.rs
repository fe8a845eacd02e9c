//! The table mode's database side: settings ([`TableConfig`]), opening the
//! database with its tables ([`open_tables`]), rows as Arrow batches and
//! back, projections, and descriptions of what was read.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use strata::index::{Consistency, IndexKind, IndexSpec};
use strata::table::{Schema, Table, TableLayout, TableOptions, Value};
use strata::vfs::Vfs;
use strata::{Db, Keyspace};

use crate::config::DbConfig;
use crate::table_model::{
    COLUMN_NAMES, KEY_COLUMN, NCOLS, RowState, TableSpace, cell, decode_cell, schema, table_name,
};

/// The table mode's settings.
#[derive(Clone, Debug)]
pub struct TableConfig {
    pub tables: u32,
    pub rows: u32,
    /// Layout presets, given to the tables in turn.
    pub layouts: Vec<String>,
    pub write_buffer_size: usize,
    pub level1_max_bytes: u64,
    /// Whether the workload changes layouts (`Table::set_layout`) while it
    /// runs; off by default: compactions after a layout change lose data
    /// (see docs/RELIABILITY.md, engine bug 4).
    pub layout_changes: bool,
}

impl TableConfig {
    /// The rows' shape.
    pub fn space(&self) -> TableSpace {
        TableSpace {
            tables: self.tables,
            rows: self.rows,
        }
    }

    /// The layout preset table `t` starts with.
    pub fn layout_of(&self, t: u32) -> &str {
        &self.layouts[t as usize % self.layouts.len()]
    }

    /// Options of table `t`: a small tree (4 levels, size ratio 4, level 1
    /// of `level1_max_bytes`, files of a quarter of it, 2 KiB blocks, a
    /// level-0 trigger of 2) and its layout.
    pub fn table_options(&self, t: u32) -> TableOptions {
        TableOptions {
            layout: self.layout_of(t).to_string(),
            num_levels: 4,
            size_ratio: 4,
            level1_max_bytes: self.level1_max_bytes,
            write_buffer_size: self.write_buffer_size,
            target_file_size: (self.level1_max_bytes / 4).max(4096),
            block_size: 2048,
            level0_compaction_trigger: 2,
            // The string column's values are all distinct: a threshold of
            // 1 still gives every column-group file a dictionary, so crash
            // rounds cover dictionary blocks and compaction on codes.
            max_distinct_ratio: 1.0,
            ..TableOptions::default()
        }
    }

    /// Checks the settings (each layout must parse for the schema).
    pub fn validate(&self) -> Result<(), String> {
        if self.tables == 0 || self.rows == 0 {
            return Err("--tables and --table-rows must be at least 1".into());
        }
        if self.layouts.is_empty() {
            return Err("--table-layouts names no layout".into());
        }
        for l in &self.layouts {
            TableLayout::parse(l, &schema(), 4).map_err(|e| format!("--table-layouts: {e}"))?;
        }
        Ok(())
    }
}

/// An open database with the stressed tables.
#[derive(Clone)]
pub struct TableHandles {
    pub db: Db,
    pub tables: Vec<Table>,
    /// The default keyspace, which receives the synced marker writes.
    pub marker: Keyspace,
}

/// The key of the marker write that makes a table write durable.
pub(crate) const MARKER_KEY: &[u8] = b"table-stress/sync";

/// Opens (or creates) the database and its tables (creating missing ones).
pub fn open_tables(
    path: &Path,
    db_cfg: &DbConfig,
    tcfg: &TableConfig,
    vfs: Option<Arc<dyn Vfs>>,
) -> strata::Result<TableHandles> {
    let db = Db::open(path, db_cfg.options(vfs))?;
    let mut tables = Vec::with_capacity(tcfg.tables as usize);
    for t in 0..tcfg.tables {
        let name = table_name(t);
        let table = match db.table(&name) {
            Ok(x) => x,
            Err(strata::Error::TableNotFound(_)) => {
                db.create_table(&name, schema(), tcfg.table_options(t))?
            }
            Err(e) => return Err(e),
        };
        if !db.is_read_only() {
            ensure_indexes(&table, t)?;
        }
        tables.push(table);
    }
    let marker = db.default_keyspace();
    Ok(TableHandles { db, tables, marker })
}

/// The secondary indexes of table `t`: one on `c0` covering `c1` (its kind
/// and strategy varying with `t`, so that three tables cover every kind
/// and both strategies) and a synchronous one on the string column `s`.
pub fn index_specs(t: u32) -> Vec<IndexSpec> {
    let kinds = [IndexKind::Eager, IndexKind::Lazy, IndexKind::Composite];
    let consistency = if t.is_multiple_of(2) {
        Consistency::Synchronous
    } else {
        Consistency::Validation
    };
    vec![
        IndexSpec::new("i_c0", COLUMN_NAMES[0])
            .kind(kinds[t as usize % 3])
            .consistency(consistency)
            .covering(&[COLUMN_NAMES[1]]),
        IndexSpec::new("i_s", COLUMN_NAMES[NCOLS - 1]).kind(kinds[(t as usize + 2) % 3]),
    ]
}

/// Creates table `t`'s indexes if it lacks them, and finishes builds a
/// crash interrupted.
fn ensure_indexes(table: &Table, t: u32) -> strata::Result<()> {
    for spec in index_specs(t) {
        let exists = table.indexes().iter().any(|s| s.name == spec.name);
        let building = exists && table.describe_index(&spec.name).is_ok_and(|d| d.building);
        if !exists || building {
            table.create_index(spec)?;
        }
    }
    Ok(())
}

/// Per table, the files of each level and, below level 0, the column
/// groups and files: `t0[L0=2 L1=7g/9 L2=7g/21]` (7 groups in 9 files).
pub fn table_shape_line(h: &TableHandles) -> String {
    h.tables
        .iter()
        .enumerate()
        .map(|(t, table)| match table.describe() {
            Ok(d) => {
                let levels: Vec<String> = d
                    .levels
                    .iter()
                    .map(|l| {
                        let files: usize = l.groups.iter().map(|g| g.files).sum();
                        if l.level == 0 {
                            format!("L0={files}")
                        } else {
                            format!("L{}={}g/{files}", l.level, l.groups.len())
                        }
                    })
                    .collect();
                format!("t{t}[{}]", levels.join(" "))
            }
            Err(e) => format!("t{t}[describe failed: {e}]"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Builds a record batch of rows of table `t`: the key column and value
/// columns `cols` (value-column numbers), each row `(k, state)`.
pub fn rows_batch(
    space: &TableSpace,
    t: u32,
    cols: &[usize],
    rows: &[(u32, RowState)],
) -> Result<RecordBatch, String> {
    let schema: Schema = schema();
    let mut indices = vec![0usize];
    indices.extend(cols.iter().map(|&c| c + 1));
    let mut arrays: Vec<ArrayRef> = vec![Arc::new(Int64Array::from_iter_values(
        rows.iter().map(|(k, _)| space.row_id(*k)),
    ))];
    for &c in cols {
        let vals: Vec<Value> = rows
            .iter()
            .map(|(k, s)| cell(t, *k, c, s.gens[c]))
            .collect();
        let a: ArrayRef = if c < NCOLS - 1 {
            Arc::new(Int32Array::from_iter(vals.iter().map(|v| match v {
                Value::Int32(x) => Some(*x),
                _ => None,
            })))
        } else {
            Arc::new(StringArray::from_iter(vals.iter().map(|v| match v {
                Value::Utf8(x) => Some(x.as_str()),
                _ => None,
            })))
        };
        arrays.push(a);
    }
    RecordBatch::try_new(schema.arrow_projection(&indices), arrays).map_err(|e| e.to_string())
}

/// The rows of a record batch as values (Int64, Int32 and Utf8 columns).
pub fn batch_values(b: &RecordBatch) -> Result<Vec<Vec<Value>>, String> {
    let mut rows = vec![Vec::with_capacity(b.num_columns()); b.num_rows()];
    for (ci, col) in b.columns().iter().enumerate() {
        let any = col.as_any();
        for (i, row) in rows.iter_mut().enumerate() {
            let v = if col.is_null(i) {
                Value::Null
            } else if let Some(a) = any.downcast_ref::<Int64Array>() {
                Value::Int64(a.value(i))
            } else if let Some(a) = any.downcast_ref::<Int32Array>() {
                Value::Int32(a.value(i))
            } else if let Some(a) = any.downcast_ref::<StringArray>() {
                Value::Utf8(a.value(i).to_string())
            } else {
                return Err(format!(
                    "column {ci} has the unexpected type {}",
                    col.data_type()
                ));
            };
            row.push(v);
        }
    }
    Ok(rows)
}

/// Projects a full row (key first, schema order) onto schema columns `proj`.
pub fn project(row: &[Value], proj: &[usize]) -> Vec<Value> {
    proj.iter().map(|&i| row[i].clone()).collect()
}

/// The names of schema columns `proj`.
pub fn names_of(proj: &[usize]) -> Vec<&'static str> {
    proj.iter()
        .map(|&i| {
            if i == 0 {
                KEY_COLUMN
            } else {
                COLUMN_NAMES[i - 1]
            }
        })
        .collect()
}

/// A random non-empty projection (schema column indices, shuffled), the
/// key among them with `key_p`.
pub fn random_projection(rng: &mut StdRng, key_p: f64) -> Vec<usize> {
    let mut p: Vec<usize> = (1..=NCOLS).filter(|_| rng.random_bool(0.4)).collect();
    if rng.random_bool(key_p) || p.is_empty() {
        p.push(0);
    }
    p.shuffle(rng);
    p
}

/// A projected row as read, each value column with the generation it
/// belongs to: `(id 5000015, c3=g4, s=NULL, c0=g?(1234))`.
pub fn describe_read(t: u32, k: u32, proj: &[usize], row: Option<&Vec<Value>>) -> String {
    let Some(row) = row else {
        return "no row".into();
    };
    let parts: Vec<String> = proj
        .iter()
        .zip(row)
        .map(|(&i, v)| {
            if i == 0 {
                return format!("id {v}");
            }
            let c = i - 1;
            match (v, decode_cell(t, k, c, v)) {
                (Value::Null, _) => format!("{}=NULL", COLUMN_NAMES[c]),
                (_, Some(g)) => format!("{}=g{g}", COLUMN_NAMES[c]),
                (_, None) => format!("{}=g?({v})", COLUMN_NAMES[c]),
            }
        })
        .collect();
    format!("({})", parts.join(", "))
}

/// Values of the candidate states of a row, for matching.
pub fn candidate_values(
    space: &TableSpace,
    t: u32,
    k: u32,
    c: &[RowState],
) -> Vec<Option<Vec<Value>>> {
    c.iter().map(|s| s.values(space, t, k)).collect()
}
