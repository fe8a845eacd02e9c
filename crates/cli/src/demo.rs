//! `strata demo`: what Strata is for, on the database at `--db`.
//!
//! Creates a table of sensor readings whose layout changes as data ages
//! (whole rows in level 0, one column per group from level 1 down), loads it from
//! Arrow batches, and then reads it the two ways an analytics engine must:
//! by key (a projected point read that probes only the groups it needs)
//! and by scan (an aggregate over a few columns with a predicate, which
//! reads only those columns' blocks and skips blocks by their statistics).
//! A second scan filters on a string column, which the column-group files
//! store as codes into per-file dictionaries (seed 002), so the predicate
//! runs on the codes. It updates one column of some rows (partial
//! updates), shows what each level stores, and asks the layout advisor what it would change for the
//! workload it has just seen, then builds a secondary index over the rows,
//! reads through it, and joins the table with a small `sensors` table by
//! the cost model's choice of method, and ends with a SQL query (a join
//! and an aggregate through DataFusion, its filter pushed into Strata's
//! scans). Each step prints what it did and how long it took. Tables
//! `readings` and `sensors` left by an earlier demo are replaced; the demo
//! knows its own by the ids it recorded in the keyspace `strata-demo`, so a
//! user's table of one of these names is never touched, whatever its schema.
//! (Tables of a demo from before those records, or of one killed between
//! creating a table and recording it, are refused like a user's: drop
//! them with `strata table drop`.)

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use strata::Db;
use strata::arrow_array::{
    Array, ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use strata::index::{IndexKind, IndexQuery, IndexSpec};
use strata::join::Join;
use strata::table::{
    CmpOp, Column, ColumnType, Predicate, ScanOptions, Schema, Table, TableOptions, Value,
};

use crate::app::Failure;

const TABLE: &str = "readings";
const SITES: [&str; 4] = ["north", "south", "east", "west"];

fn schema() -> Result<Schema, Failure> {
    Ok(Schema::new(
        vec![
            Column::new("id", ColumnType::Int64),
            Column::new("sensor", ColumnType::Int32),
            Column::new("site", ColumnType::Utf8),
            Column::new("ts", ColumnType::Timestamp),
            Column::new("temp", ColumnType::Float64),
            Column::new("humidity", ColumnType::Float64),
            Column::new("pressure", ColumnType::Float64),
            Column::new("battery", ColumnType::Int32),
            Column::nullable("status", ColumnType::Utf8),
        ],
        &["id"],
    )?)
}

/// A deterministic pseudo-random number for row `i`, field `f`.
fn mix(i: u64, f: u64) -> u64 {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ f.wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^ (x >> 29)
}

fn batch(t: &Table, rows: std::ops::Range<u64>) -> Result<RecordBatch, Failure> {
    let n = (rows.end - rows.start) as usize;
    let ids: Vec<i64> = rows.clone().map(|i| i as i64).collect();
    let sensor: Vec<i32> = rows.clone().map(|i| (mix(i, 1) % 100) as i32).collect();
    let site: Vec<&str> = rows
        .clone()
        .map(|i| SITES[(mix(i, 2) % 4) as usize])
        .collect();
    let ts: Vec<i64> = rows
        .clone()
        .map(|i| 1_767_225_600_000_000 + i as i64 * 1_000_000)
        .collect();
    let temp: Vec<f64> = rows
        .clone()
        .map(|i| 15.0 + (mix(i, 3) % 2000) as f64 / 100.0)
        .collect();
    let humidity: Vec<f64> = rows
        .clone()
        .map(|i| 30.0 + (mix(i, 4) % 5000) as f64 / 100.0)
        .collect();
    let pressure: Vec<f64> = rows
        .clone()
        .map(|i| 990.0 + (mix(i, 5) % 4000) as f64 / 100.0)
        .collect();
    let battery: Vec<i32> = rows.clone().map(|i| (mix(i, 6) % 101) as i32).collect();
    let status: Vec<Option<&str>> = rows
        .map(|i| mix(i, 7).is_multiple_of(50).then_some("check"))
        .collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ids)),
        Arc::new(Int32Array::from(sensor)),
        Arc::new(StringArray::from(site)),
        Arc::new(TimestampMicrosecondArray::from(ts)),
        Arc::new(Float64Array::from(temp)),
        Arc::new(Float64Array::from(humidity)),
        Arc::new(Float64Array::from(pressure)),
        Arc::new(Int32Array::from(battery)),
        Arc::new(StringArray::from(status)),
    ];
    debug_assert_eq!(columns[0].len(), n);
    RecordBatch::try_new(t.schema().arrow_schema(), columns)
        .map_err(|e| Failure::Other(format!("building a demo batch: {e}")))
}

fn ms(t: Instant) -> String {
    let d = t.elapsed().as_secs_f64();
    if d < 1e-3 {
        format!("{:.0} µs", d * 1e6)
    } else if d < 1.0 {
        format!("{:.1} ms", d * 1e3)
    } else {
        format!("{d:.2} s")
    }
}

/// The keyspace in which the demo records the id of each table it makes,
/// under the table's name (decimal).
const MARKS: &str = "strata-demo";

/// Drops table `name` if an earlier demo made it; whether it did. A table
/// of that name that the demo did not make is the user's: the demo refuses
/// to touch it.
fn replace_demo_table(db: &Db, name: &str, schema: &Schema) -> Result<bool, Failure> {
    if !demo_table_exists(db, name, schema)? {
        return Ok(false);
    }
    db.drop_table(name)?;
    Ok(true)
}

/// Whether table `name` exists and an earlier demo made it (its id is the
/// one the demo recorded, and it has the demo's `schema`); an error if it
/// is the user's.
fn demo_table_exists(db: &Db, name: &str, schema: &Schema) -> Result<bool, Failure> {
    let Ok(t) = db.table(name) else {
        return Ok(false);
    };
    let recorded = if db.keyspace_names().iter().any(|n| n == MARKS) {
        db.keyspace(MARKS, Default::default())?
            .get(name.as_bytes())?
    } else {
        None
    };
    let made = recorded.is_some_and(|id| id == t.id().to_string().as_bytes());
    if !made || t.schema() != schema {
        return Err(Failure::Other(format!(
            "this database has a table {name:?} that the demo did not make ({}); the demo \
             would replace it: run it on another database (--db DIR)",
            t.schema()
        )));
    }
    Ok(true)
}

/// Creates the demo's table `name` and records that the demo made it.
fn create_demo_table(
    db: &Db,
    name: &str,
    schema: Schema,
    opts: TableOptions,
) -> Result<Table, Failure> {
    let t = db.create_table(name, schema, opts)?;
    db.keyspace(MARKS, Default::default())?
        .put(name.as_bytes(), t.id().to_string().as_bytes())?;
    Ok(t)
}

/// The schema of the demo's table of sensors.
fn sensors_schema() -> Result<Schema, Failure> {
    Ok(Schema::new(
        vec![
            Column::new("sensor", ColumnType::Int32),
            Column::new("model", ColumnType::Utf8),
        ],
        &["sensor"],
    )?)
}

/// Runs the demo with `rows` rows.
pub(crate) fn run(db: &Db, rows: u64, out: &mut impl Write) -> Result<i32, Failure> {
    writeln!(
        out,
        "Strata demo: a table of sensor readings in this database"
    )?;
    // Both tables' names are checked before anything is written.
    demo_table_exists(db, SENSORS, &sensors_schema()?)?;
    if replace_demo_table(db, TABLE, &schema()?)? {
        writeln!(out, "(replaced the table {TABLE:?} of an earlier demo)")?;
    }
    let opts = TableOptions {
        layout: "row-then-column:1".into(),
        num_levels: 4,
        size_ratio: 4,
        write_buffer_size: 4 << 20,
        level1_max_bytes: 8 << 20,
        target_file_size: 4 << 20,
        ..TableOptions::default()
    };
    let t = create_demo_table(db, TABLE, schema()?, opts)?;
    writeln!(
        out,
        "\n1. create table {TABLE} ({})\n   layout: whole rows in the memtables and level 0; one column per group from level 1 down",
        t.schema()
    )?;

    let start = Instant::now();
    let chunk = 8192;
    let mut i = 0;
    while i < rows {
        let end = (i + chunk).min(rows);
        t.insert(&batch(&t, i..end)?)?;
        i = end;
    }
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    writeln!(
        out,
        "\n2. insert {rows} rows as Arrow batches of {chunk}: {} ({:.0} rows/s)",
        ms(start),
        rows as f64 / secs
    )?;
    let start = Instant::now();
    t.flush()?;
    db.wait_for_background_work()?;
    writeln!(
        out,
        "   flush and background compaction: {} (older rows now sit in column groups)",
        ms(start)
    )?;

    let key = (rows / 2) as i64;
    let start = Instant::now();
    let row = t.get(&[Value::Int64(key)], Some(&["temp", "status", "site"]))?;
    let took = ms(start);
    let shown = row.map_or("(none)".to_string(), |r| {
        r.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    });
    writeln!(
        out,
        "\n3. point read of id = {key}, columns temp, status, site: [{shown}] in {took} \
         ({} table files probed)",
        t.statistics().get_files
    )?;

    let sensor = 7;
    let before = t.statistics();
    let start = Instant::now();
    let scan = ScanOptions {
        columns: Some(vec!["temp".into(), "pressure".into()]),
        predicate: Some(Predicate::cmp("sensor", CmpOp::Eq, Value::Int32(sensor))),
        ..ScanOptions::default()
    };
    let (mut n, mut sum, mut max) = (0u64, 0.0f64, f64::MIN);
    for b in t.scan(scan)? {
        let b = b?;
        let temp = b.column(0).as_any().downcast_ref::<Float64Array>();
        let pressure = b.column(1).as_any().downcast_ref::<Float64Array>();
        if let (Some(temp), Some(pressure)) = (temp, pressure) {
            n += b.num_rows() as u64;
            sum += temp.values().iter().sum::<f64>();
            max = pressure.values().iter().copied().fold(max, f64::max);
        }
    }
    let took = ms(start);
    let after = t.statistics();
    writeln!(
        out,
        "\n4. scan: avg(temp), max(pressure) where sensor = {sensor}: {n} rows, avg {:.2}, max {max:.2} in {took}\n   \
         read columns sensor, temp and pressure only: {} rows resolved, {} column blocks read",
        sum / n.max(1) as f64,
        after.scan_rows_read - before.scan_rows_read,
        after.scan_blocks_read - before.scan_blocks_read,
    )?;

    let before = t.statistics();
    let start = Instant::now();
    let scan = ScanOptions {
        columns: Some(vec!["id".into()]),
        predicate: Some(Predicate::In {
            column: "site".into(),
            values: vec![Value::from("north"), Value::from("east")],
        }),
        ..ScanOptions::default()
    };
    let mut n = 0u64;
    for b in t.scan(scan)? {
        n += b?.num_rows() as u64;
    }
    let after = t.statistics();
    writeln!(
        out,
        "   scan: count where site in ('north', 'east'): {n} rows in {}\n   \
         site is stored as codes into per-file dictionaries from level 1 down: the predicate ran on \
         the codes ({} rows tested)",
        ms(start),
        after.scan_rows_read - before.scan_rows_read,
    )?;

    let start = Instant::now();
    let updates = (rows / 100).max(1);
    for k in 0..updates {
        let id = (mix(k, 9) % rows) as i64;
        t.update_row(&[Value::Int64(id)], &[("status", Value::from("serviced"))])?;
    }
    writeln!(
        out,
        "\n5. update the status of {updates} rows (partial updates: only that column is written): {}",
        ms(start)
    )?;

    writeln!(out, "\n6. what each level stores now:")?;
    let d = t.describe()?;
    for l in &d.levels {
        let groups = l.groups.len();
        let files: usize = l.groups.iter().map(|g| g.files).sum();
        let bytes: u64 = l.groups.iter().map(|g| g.bytes).sum();
        let coded: Vec<String> = l
            .groups
            .iter()
            .flat_map(|g| &g.dictionary_files)
            .map(|(c, n)| format!("{c} in {n} file(s)"))
            .collect();
        write!(
            out,
            "   L{}: {groups} group(s), {files} file(s), {:.1} MiB",
            l.level,
            bytes as f64 / (1 << 20) as f64
        )?;
        if !coded.is_empty() {
            write!(out, "; dictionary-encoded: {}", coded.join(", "))?;
        }
        writeln!(out)?;
    }

    let a = t.advise()?;
    writeln!(
        out,
        "\n7. the layout advisor on the workload above: predicted cost {:.0} now, {:.0} with its layout:",
        a.current_cost.total, a.proposed_cost.total
    )?;
    for line in a.proposed.describe(t.schema()).lines() {
        writeln!(out, "   {line}")?;
    }
    index_and_join(db, &t, sensor, out)?;
    sql(db, out)?;
    writeln!(
        out,
        "\nThe tables stay in this database. Try:\n  \
         strata sql   (then: SELECT site, count(*) FROM {TABLE} GROUP BY site;)\n  \
         strata table scan {TABLE} --columns id,temp,status --where 'sensor = 7' --limit 5\n  \
         strata table describe {TABLE}\n  strata table advise {TABLE}\n  \
         strata index lookup {TABLE} by_sensor --eq 7\n  \
         strata join {TABLE}.sensor {SENSORS}.sensor --explain"
    )?;
    Ok(0)
}

const SENSORS: &str = "sensors";

/// Step 9: SQL through DataFusion over the same tables, the filter and the
/// columns pushed into Strata's scans (EXPLAIN shows them).
fn sql(db: &Db, out: &mut impl Write) -> Result<(), Failure> {
    use strata_sql::datafusion::arrow::util::pretty::pretty_format_batches;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Other(format!("starting the query runtime: {e}")))?;
    let engine =
        strata_sql::SqlEngine::new(db.clone()).map_err(|e| Failure::Other(e.to_string()))?;
    let query = format!(
        "SELECT s.model, count(*) AS readings, round(avg(r.temp), 2) AS avg_temp \
         FROM {TABLE} r JOIN {SENSORS} s ON r.sensor = s.sensor \
         WHERE r.site = 'north' AND r.battery < 20 GROUP BY s.model ORDER BY s.model"
    );
    let start = Instant::now();
    let batches = rt
        .block_on(engine.query(&query))
        .map_err(|e| Failure::Other(e.to_string()))?;
    let took = ms(start);
    let table = pretty_format_batches(&batches).map_err(|e| Failure::Other(e.to_string()))?;
    writeln!(
        out,
        "\n9. SQL (DataFusion over Strata tables), in {took}:\n   {query}"
    )?;
    for line in table.to_string().lines() {
        writeln!(out, "   {line}")?;
    }
    let plan = rt
        .block_on(engine.query(&format!("EXPLAIN {query}")))
        .map_err(|e| Failure::Other(e.to_string()))?;
    let text = pretty_format_batches(&plan).map_err(|e| Failure::Other(e.to_string()))?;
    for line in text
        .to_string()
        .lines()
        .filter(|l| l.contains("StrataScanExec"))
    {
        let scan = line.trim_matches(|c: char| c == '|' || c.is_whitespace());
        writeln!(out, "   pushed into Strata: {scan}")?;
    }
    Ok(())
}

/// Step 8: a secondary index built over the loaded rows, a lookup through
/// it, and a join with a small table of sensors, planned by the cost model.
fn index_and_join(db: &Db, t: &Table, sensor: i32, out: &mut impl Write) -> Result<(), Failure> {
    let schema = sensors_schema()?;
    replace_demo_table(db, SENSORS, &schema)?;
    let sensors = create_demo_table(db, SENSORS, schema, TableOptions::default())?;
    for s in 0..100 {
        let model = ["alpha", "beta", "gamma"][s as usize % 3];
        sensors.insert_row(&[Value::Int32(s), Value::from(model)])?;
    }
    let start = Instant::now();
    let d = t.create_index(
        IndexSpec::new("by_sensor", "sensor")
            .kind(IndexKind::Composite)
            .covering(&["temp"]),
    )?;
    writeln!(
        out,
        "\n8. create index by_sensor on {TABLE}(sensor), composite, synchronous, covering temp: \
         {} entries for {} values in {}",
        d.entries,
        d.values,
        ms(start)
    )?;
    let start = Instant::now();
    let rows = t.lookup_rows("by_sensor", &IndexQuery::eq(sensor), Some(&["id", "temp"]))?;
    let avg = rows
        .iter()
        .filter_map(|r| match r[1] {
            Value::Float64(x) => Some(x),
            _ => None,
        })
        .sum::<f64>()
        / rows.len().max(1) as f64;
    writeln!(
        out,
        "   avg(temp) where sensor = {sensor} through the index: {} rows, avg {avg:.2} in {} \
         (the covering entries answer it without reading the table)",
        rows.len(),
        ms(start)
    )?;
    let join =
        Join::new(t, "sensor", &sensors, "sensor").columns(&["readings.id", "sensors.model"]);
    let plan = join.explain()?;
    let start = Instant::now();
    let s = join.count()?;
    writeln!(
        out,
        "   join {TABLE}.sensor = {SENSORS}.sensor: {} rows in {} by {} (the planner's choice; \
         peak memory {:.1} MiB of 16)",
        s.rows,
        ms(start),
        plan.chosen.name(),
        s.peak_memory_bytes as f64 / (1 << 20) as f64
    )?;
    Ok(())
}
