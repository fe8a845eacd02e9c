//! The catalog: every table's definition, stored durably in the system
//! keyspace `__catalog`, and the open tables.
//!
//! A table's record (key `table/<name>`) holds its schema, options, layout
//! and group registry as JSON with a format number (`docs/format/catalog.md`).
//! Each table's rows live in their own keyspace, `__table/<id>`, whose layout
//! the table layer supplies; the catalog registers those keyspaces when the
//! database opens, before their background work may run.
//!
//! Creating a table writes its record (synced) and then creates its
//! keyspace; dropping one deletes the record (synced) and then drops the
//! keyspace. An open repairs what a crash between the two steps left: a
//! record without a keyspace gets one, and a table keyspace without a
//! record is dropped.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

use super::Table;
use super::layout::{Group, TableLayout};
use super::options::TableOptions;
use super::schema::{Column, ColumnType, Schema};
use super::shape::GroupEntry;
use super::stats::StoredLog;
use super::table::TableInner;
use crate::batch::WriteBatch;
use crate::db::{DbCore, Keyspace};
use crate::error::{Error, Result};
use crate::options::{KeyspaceOptions, WriteOptions};

/// The name of the system keyspace holding the catalog.
pub const CATALOG_KEYSPACE: &str = "__catalog";

/// The catalog keyspace's options: its records and workload logs are a
/// few kilobytes, so a small memtable. The default (64 MiB) would add
/// 256 MiB to the write-ahead log budget (four times the write buffers,
/// `Options::max_total_wal_bytes`) and let hundreds of logs wait for it.
fn catalog_options() -> KeyspaceOptions {
    KeyspaceOptions {
        write_buffer_size: 1 << 20,
        ..KeyspaceOptions::default()
    }
}

/// The prefix of table keyspaces' names.
pub const TABLE_KEYSPACE_PREFIX: &str = "__table/";

/// The catalog record format this build writes and reads.
pub const CATALOG_FORMAT: u32 = 2;

const RECORD_PREFIX: &str = "table/";
const STATS_PREFIX: &str = "stats/";
/// The key of the next table id (decimal), written with each new table's
/// record: without it the highest id would be given again after its table
/// was dropped and the database reopened.
const NEXT_ID_KEY: &str = "next_id";

/// One table's durable definition.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct TableRecord {
    pub format: u32,
    pub id: u64,
    pub name: String,
    pub columns: Vec<ColumnRecord>,
    pub primary_key: Vec<String>,
    /// Per level, groups of value-column numbers (level 0 first).
    pub layout: Vec<Vec<Group>>,
    /// The group registry: group id → its columns and lineage.
    pub groups: Vec<GroupEntry>,
    /// The id of each group of each level of `layout`.
    pub ids: Vec<Vec<u32>>,
    pub options: TableOptions,
    /// Secondary indexes (catalog format 2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indexes: Vec<crate::index::IndexRecord>,
    /// The largest index id given so far (ids are not reused).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub next_index: u32,
}

fn is_zero(x: &u32) -> bool {
    *x == 0
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct ColumnRecord {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    pub nullable: bool,
}

impl TableRecord {
    pub(crate) fn schema(&self) -> Result<Schema> {
        let columns = self
            .columns
            .iter()
            .map(|c| {
                Ok(Column {
                    name: c.name.clone(),
                    ty: ColumnType::parse(&c.ty)?,
                    nullable: c.nullable,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let key: Vec<&str> = self.primary_key.iter().map(String::as_str).collect();
        Schema::new(columns, &key)
    }

    pub(crate) fn new(
        id: u64,
        name: &str,
        schema: &Schema,
        layout: &TableLayout,
        groups: Vec<GroupEntry>,
        options: TableOptions,
    ) -> TableRecord {
        TableRecord {
            format: 1,
            id,
            name: name.to_string(),
            columns: schema
                .columns()
                .iter()
                .map(|c| ColumnRecord {
                    name: c.name.clone(),
                    ty: c.ty.name().to_string(),
                    nullable: c.nullable,
                })
                .collect(),
            primary_key: schema
                .key_indices()
                .iter()
                .map(|&i| schema.columns()[i].name.clone())
                .collect(),
            layout: layout.levels().to_vec(),
            groups,
            ids: Vec::new(),
            options,
            indexes: Vec::new(),
            next_index: 0,
        }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        // A table with indexes is written as format 2, which builds that
        // know no indexes refuse (they would write rows without index
        // entries); one without stays readable by them.
        let mut r = self.clone();
        let needed = if r.indexes.is_empty() && r.next_index == 0 {
            1
        } else {
            2
        };
        r.format = r.format.max(needed);
        // Serialising plain data to JSON cannot fail.
        serde_json::to_vec(&r).unwrap_or_default()
    }

    fn decode(bytes: &[u8]) -> Result<TableRecord> {
        let bad =
            |why: String| Error::corruption(CATALOG_KEYSPACE, 0, format!("catalog record: {why}"));
        let r: TableRecord = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
        if r.format == 0 {
            return Err(bad(format!("table {:?} has catalog format 0", r.name)));
        }
        if r.format > CATALOG_FORMAT {
            return Err(bad(format!(
                "table {:?} was written by a newer build (catalog format {}, this build reads {CATALOG_FORMAT})",
                r.name, r.format
            )));
        }
        Ok(r)
    }

    pub(crate) fn keyspace_name(&self) -> String {
        keyspace_name(self.id)
    }
}

/// The name of the keyspace holding the rows of table `id`.
pub(crate) fn keyspace_name(id: u64) -> String {
    format!("{TABLE_KEYSPACE_PREFIX}{id}")
}

fn record_key(name: &str) -> Vec<u8> {
    format!("{RECORD_PREFIX}{name}").into_bytes()
}

fn stats_key(name: &str) -> Vec<u8> {
    format!("{STATS_PREFIX}{name}").into_bytes()
}

/// Checks a table name: 1 to 200 bytes, no control characters.
pub fn check_table_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > 200 || name.chars().any(char::is_control) {
        return Err(Error::InvalidArgument(format!(
            "table name {name:?}: names are 1 to 200 bytes without control characters"
        )));
    }
    Ok(())
}

/// The open tables of a database and the keyspace recording them.
pub(crate) struct Catalog {
    core: DbCore,
    /// Created with the first table, so that a database that never had one
    /// keeps the manifest a key-value database has.
    keyspace: Mutex<Option<Keyspace>>,
    tables: RwLock<BTreeMap<String, Arc<TableInner>>>,
    /// The next table id; its lock serialises creating and dropping tables.
    ddl: Mutex<u64>,
    /// Stops the automatic layout's thread.
    pub(crate) auto_stop: Arc<super::auto::Stop>,
}

impl Drop for Catalog {
    fn drop(&mut self) {
        self.auto_stop.stop();
    }
}

impl Catalog {
    /// Loads every table of the database and registers its keyspace.
    pub(crate) fn open(core: DbCore) -> Result<Catalog> {
        let exists = core.keyspace_names().iter().any(|n| n == CATALOG_KEYSPACE);
        if !core.is_read_only() {
            // Spill files a join of this database left when its process died.
            crate::join::spill::sweep(&*core.vfs(), core.path(), &core.id())?;
        }
        let mut catalog = Catalog {
            core,
            keyspace: Mutex::new(None),
            tables: RwLock::new(BTreeMap::new()),
            ddl: Mutex::new(1),
            auto_stop: Arc::default(),
        };
        if !exists {
            return Ok(catalog);
        }
        let keyspace = catalog
            .core
            .system_keyspace(CATALOG_KEYSPACE, catalog_options())?;
        let mut records = Vec::new();
        let mut it = keyspace.iter(Default::default())?;
        it.seek(RECORD_PREFIX.as_bytes());
        while it.valid() && it.key().starts_with(RECORD_PREFIX.as_bytes()) {
            records.push(TableRecord::decode(it.value())?);
            it.next();
        }
        it.status()?;
        drop(it);
        let mut next_id = 1;
        let mut tables = BTreeMap::new();
        let keyspaces = catalog.core.keyspace_names();
        for r in records {
            let after = r.id.checked_add(1).ok_or_else(|| {
                Error::corruption(
                    CATALOG_KEYSPACE,
                    0,
                    format!(
                        "catalog record of table {:?}: id {} is out of range",
                        r.name, r.id
                    ),
                )
            })?;
            next_id = next_id.max(after);
            if catalog.core.is_read_only() && !keyspaces.contains(&r.keyspace_name()) {
                // Created by a process that died before making its
                // keyspace (so it holds no row); a writable open makes it.
                continue;
            }
            let t = TableInner::open(&catalog.core, &keyspace, r)?;
            tables.insert(t.name().to_string(), Arc::new(t));
        }
        for t in tables.values() {
            if let Some(v) = keyspace.get(&stats_key(t.name()))?
                && let Ok(log) = serde_json::from_slice::<StoredLog>(&v)
            {
                t.stats.workload.lock().absorb(&log);
            }
        }
        if let Some(v) = keyspace.get(NEXT_ID_KEY.as_bytes())? {
            let stored = std::str::from_utf8(&v)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or_else(|| {
                    Error::corruption(
                        CATALOG_KEYSPACE,
                        0,
                        format!("catalog key {NEXT_ID_KEY:?} is not a decimal number"),
                    )
                })?;
            next_id = next_id.max(stored);
        }
        catalog.tables = RwLock::new(tables);
        catalog.ddl = Mutex::new(next_id);
        *catalog.keyspace.get_mut() = Some(keyspace);
        if !catalog.core.is_read_only() {
            catalog.drop_orphan_keyspaces()?;
        }
        Ok(catalog)
    }

    /// The catalog's keyspace, created if this is the first table.
    fn catalog_keyspace(&self) -> Result<Keyspace> {
        let mut k = self.keyspace.lock();
        if let Some(k) = k.as_ref() {
            return Ok(k.clone());
        }
        self.core.check_writable("create a table")?;
        let ks = self
            .core
            .system_keyspace(CATALOG_KEYSPACE, catalog_options())?;
        *k = Some(ks.clone());
        Ok(ks)
    }

    /// Drops table and index keyspaces no record names (a crash between
    /// dropping a table's or an index's record and its keyspace).
    fn drop_orphan_keyspaces(&self) -> Result<()> {
        let mut live: Vec<String> = Vec::new();
        for t in self.tables.read().values() {
            live.push(t.keyspace_name());
            for i in &t.indexes.read().indexes {
                live.push(i.keyspace.name().to_string());
            }
        }
        for name in self.core.keyspace_names() {
            let owned = name.starts_with(TABLE_KEYSPACE_PREFIX)
                || name.starts_with(crate::index::INDEX_KEYSPACE_PREFIX);
            if owned && !live.contains(&name) {
                self.core.drop_keyspace(&name)?;
            }
        }
        Ok(())
    }

    pub(crate) fn create(
        &self,
        name: &str,
        schema: Schema,
        options: TableOptions,
    ) -> Result<Table> {
        check_table_name(name)?;
        options.validate()?;
        let mut next_id = self.ddl.lock();
        if self.tables.read().contains_key(name) {
            return Err(Error::TableExists(name.to_string()));
        }
        if schema.num_values() == 0 {
            // Scans decide a row's existence from its value columns' pieces
            // (see `scan::Scanner::new`); a key-only table has none.
            return Err(Error::InvalidArgument(format!(
                "table {name:?} needs at least one column outside its primary key"
            )));
        }
        let layout = options.initial_layout(&schema)?;
        let id = *next_id;
        let record = TableRecord::new(id, name, &schema, &layout, Vec::new(), options);
        let record = TableInner::with_registry(record, &schema, &layout)?;
        let catalog = self.catalog_keyspace()?;
        let after = id
            .checked_add(1)
            .ok_or_else(|| Error::InvalidArgument("every table id has been given out".into()))?;
        write_catalog(&self.core, &catalog, name, Some(&record), Some(after))?;
        *next_id = after;
        let t = Arc::new(TableInner::open(&self.core, &catalog, record)?);
        self.tables.write().insert(name.to_string(), Arc::clone(&t));
        Ok(Table::new(t, self.core.clone()))
    }

    /// The open table `name`.
    fn find(&self, name: &str) -> Result<Arc<TableInner>> {
        self.tables
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::TableNotFound(name.to_string()))
    }

    pub(crate) fn get(&self, name: &str) -> Result<Table> {
        Ok(Table::new(self.find(name)?, self.core.clone()))
    }

    /// The tables whose layout the advisor may change.
    pub(crate) fn tables_with_auto(&self) -> Vec<Table> {
        self.tables
            .read()
            .values()
            .filter(|t| t.record().options.auto_layout_threshold.is_some())
            .map(|t| Table::new(Arc::clone(t), self.core.clone()))
            .collect()
    }

    /// Saves every table's workload log (not synced: it is advice, and a
    /// lost update only makes the advisor see less).
    pub(crate) fn save_workloads(&self) -> Result<()> {
        let Some(ks) = self.keyspace.lock().clone() else {
            return Ok(());
        };
        if self.core.is_read_only() {
            return Ok(());
        }
        // Held so that no table is dropped between reading its log and
        // writing it: the write would bring back the log the drop deleted,
        // for a later table of the name to inherit.
        let _ddl = self.ddl.lock();
        let mut b = WriteBatch::new();
        for t in self.tables.read().values() {
            let log = t.stats.workload.lock().to_stored();
            b.put_in(
                ks.id(),
                &stats_key(t.name()),
                &serde_json::to_vec(&log).unwrap_or_default(),
            );
        }
        self.core.write(WriteOptions::default(), b)
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.tables.read().keys().cloned().collect()
    }

    pub(crate) fn drop_table(&self, name: &str) -> Result<()> {
        let _ddl = self.ddl.lock();
        let t = self.find(name)?;
        let ks = self.catalog_keyspace()?;
        t.drop_record(|| write_record(&self.core, &ks, name, None))?;
        self.tables.write().remove(name);
        self.core.drop_keyspace(&t.keyspace_name())?;
        for name in self.core.keyspace_names() {
            if crate::index::is_index_keyspace_of(&name, t.id) {
                self.core.drop_keyspace(&name)?;
            }
        }
        Ok(())
    }
}

/// Writes (or with `None` deletes) table `name`'s record, synced.
pub(crate) fn write_record(
    core: &DbCore,
    catalog: &Keyspace,
    name: &str,
    record: Option<&TableRecord>,
) -> Result<()> {
    write_catalog(core, catalog, name, record, None)
}

/// [`write_record`], and with a new table's record the next id, in the
/// same synced batch.
fn write_catalog(
    core: &DbCore,
    catalog: &Keyspace,
    name: &str,
    record: Option<&TableRecord>,
    next_id: Option<u64>,
) -> Result<()> {
    core.check_writable("change the table catalog")?;
    let mut b = WriteBatch::new();
    if let Some(n) = next_id {
        b.put_in(
            catalog.id(),
            NEXT_ID_KEY.as_bytes(),
            n.to_string().as_bytes(),
        );
    }
    match record {
        Some(r) => b.put_in(catalog.id(), &record_key(name), &r.encode()),
        None => {
            // The workload log goes with the record, so that a later table
            // of the name cannot inherit it.
            b.delete_in(catalog.id(), &record_key(name));
            b.delete_in(catalog.id(), &stats_key(name));
        }
    }
    core.write(
        WriteOptions {
            sync: true,
            ..Default::default()
        },
        b,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_newer_formats_are_refused() {
        let schema = Schema::new(
            vec![
                Column::new("k", ColumnType::Int64),
                Column::nullable("v", ColumnType::Utf8),
            ],
            &["k"],
        )
        .expect("schema");
        let layout = TableLayout::row(1, 3);
        let r = TableRecord::new(
            7,
            "t",
            &schema,
            &layout,
            vec![GroupEntry {
                columns: vec![0],
                parent: 0,
                level: 0,
                generation: 0,
            }],
            TableOptions::default(),
        );
        let back = TableRecord::decode(&r.encode()).expect("decode");
        assert_eq!(back, r);
        assert_eq!(back.schema().expect("schema"), schema);
        let mut newer = r.clone();
        newer.format = CATALOG_FORMAT + 1;
        assert!(TableRecord::decode(&newer.encode()).is_err());
        let mut zero = r.clone();
        zero.format = 0;
        assert!(TableRecord::decode(&serde_json::to_vec(&zero).expect("json")).is_err());
        let mut indexed = r.clone();
        indexed.next_index = 1;
        assert_eq!(
            TableRecord::decode(&indexed.encode())
                .expect("decode")
                .format,
            2
        );
        assert!(TableRecord::decode(b"{not json").is_err());
        assert!(check_table_name("").is_err());
        assert!(check_table_name("a\nb").is_err());
    }
}
