//! One open table: its definition, its keyspace, its current layout.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Mutex, RwLock};

use super::catalog::{TableRecord, write_record};
use super::layout::TableLayout;
use super::piece::PieceSchema;
use super::schema::Schema;
use super::seam::TableKvLayout;
use super::shape::TableShape;
use super::stats::TableStats;
use super::view::ReadPlan;
use crate::db::{DbCore, Keyspace};
use crate::error::{Error, Result};
use crate::options::KeyspaceOptions;
use crate::table_format::GroupId;

/// The layout a table's reads and writes go by, with the registry that
/// names its groups. Replaced whole when the layout changes.
pub(crate) struct LayoutState {
    pub layout: TableLayout,
    pub shape: Arc<TableShape>,
    /// The id of each group of each level of `layout`.
    pub ids: Vec<Vec<GroupId>>,
}

impl LayoutState {
    fn new(
        layout: TableLayout,
        shape: Arc<TableShape>,
        ids: Vec<Vec<GroupId>>,
    ) -> Result<LayoutState> {
        shape
            .check_ids(&layout, &ids)
            .map_err(|e| Error::corruption(super::catalog::CATALOG_KEYSPACE, 0, e.to_string()))?;
        Ok(LayoutState { layout, shape, ids })
    }

    /// Whether `id` is one of the layout's groups on `level`.
    pub(crate) fn has(&self, level: usize, id: GroupId) -> bool {
        self.ids[level.min(self.ids.len() - 1)].contains(&id)
    }
}

/// A table's shared state; [`super::Table`] handles point at it.
pub(crate) struct TableInner {
    pub id: u64,
    pub name: String,
    pub schema: Arc<Schema>,
    pub pieces: PieceSchema,
    pub keyspace: Keyspace,
    /// The catalog's keyspace, where layout changes are recorded.
    catalog: Keyspace,
    core: DbCore,
    /// The durable definition; its lock also serialises layout changes.
    record: Mutex<TableRecord>,
    state: RwLock<Arc<LayoutState>>,
    /// The read plan of the last version read (see [`ReadPlan`]).
    read_plan: Mutex<Option<Arc<ReadPlan>>>,
    pub stats: TableStats,
    dropped: AtomicBool,
    /// Serialises checked inserts (read, then write).
    pub insert_lock: Mutex<()>,
    /// The table's secondary indexes. Writers hold a read lock from
    /// computing their index entries until their batch is written, so that
    /// creating or dropping an index (a write lock) sees no write in flight.
    pub indexes: RwLock<Arc<crate::index::IndexSet>>,
    /// Serialises writes that read before they write index entries (see
    /// [`crate::index::IndexSet::needs_lock`]) and an index build's chunks.
    pub index_lock: Mutex<()>,
    /// Join statistics recently gathered with this table on the left,
    /// by what they depend on (see `join::Join::statistics`).
    pub join_stats: Mutex<Vec<(String, crate::join::PlanStats)>>,
    /// When the automatic layout last asked the advisor.
    auto_checked: Mutex<Option<std::time::Instant>>,
    /// The automatic layout's proposal awaiting confirmation.
    pub auto_pending: Mutex<Option<super::layout::TableLayout>>,
}

impl TableInner {
    /// Fills `record`'s group registry from `layout`.
    pub(crate) fn with_registry(
        mut record: TableRecord,
        schema: &Schema,
        layout: &TableLayout,
    ) -> Result<TableRecord> {
        let mut shape = TableShape::new(PieceSchema::new(schema));
        let ids = shape.register_layout(layout, 1, None);
        record.groups = shape.groups().to_vec();
        record.ids = ids
            .iter()
            .map(|l| l.iter().map(|g| g.0).collect())
            .collect();
        Ok(record)
    }

    /// Opens the table `record` describes, registering (or creating) its
    /// keyspace with the table's layout.
    pub(crate) fn open(
        core: &DbCore,
        catalog: &Keyspace,
        record: TableRecord,
    ) -> Result<TableInner> {
        let bad = |e: Error| {
            Error::corruption(
                super::catalog::CATALOG_KEYSPACE,
                0,
                format!("catalog record of table {:?}: {e}", record.name),
            )
        };
        record.options.validate().map_err(bad)?;
        let schema = Arc::new(record.schema()?);
        let pieces = PieceSchema::new(&schema);
        let shape = Arc::new(TableShape::with_groups(
            pieces.clone(),
            record.groups.clone(),
        )?);
        let layout = TableLayout::new(record.layout.clone(), pieces.len())?
            .with_levels(record.options.num_levels);
        let ids: Vec<Vec<GroupId>> = record
            .ids
            .iter()
            .map(|l| l.iter().map(|&g| GroupId(g)).collect())
            .collect();
        let state = LayoutState::new(layout, Arc::clone(&shape), ids)?;
        let keyspace =
            core.system_keyspace(&record.keyspace_name(), keyspace_options(&record, &state)?)?;
        let keyspaces = core.keyspace_names();
        let indexes = record
            .indexes
            .iter()
            // A build the process died in before it made the index's
            // keyspace: nothing is indexed yet, and only a writable open
            // may make the keyspace (a later create_index resumes it).
            .filter(|r| {
                !(core.is_read_only()
                    && r.building
                    && !keyspaces.contains(&crate::index::keyspace_name(record.id, r.id)))
            })
            .map(|r| {
                crate::index::Index::open(
                    core,
                    record.id,
                    &schema,
                    r,
                    crate::index::keyspace_options(&record.options),
                )
                .map(Arc::new)
            })
            .collect::<Result<Vec<_>>>()
            .map_err(bad)?;
        Ok(TableInner {
            id: record.id,
            name: record.name.clone(),
            pieces,
            schema,
            keyspace,
            catalog: catalog.clone(),
            core: core.clone(),
            record: Mutex::new(record),
            state: RwLock::new(Arc::new(state)),
            read_plan: Mutex::new(None),
            stats: TableStats::default(),
            dropped: AtomicBool::new(false),
            insert_lock: Mutex::new(()),
            indexes: RwLock::new(Arc::new(crate::index::IndexSet { indexes })),
            index_lock: Mutex::new(()),
            join_stats: Mutex::new(Vec::new()),
            auto_checked: Mutex::new(None),
            auto_pending: Mutex::new(None),
        })
    }

    /// Whether `interval_ms` passed since the automatic layout last looked
    /// at this table (and if so, starts a new interval).
    pub(crate) fn auto_due(&self, interval_ms: u64) -> bool {
        let now = std::time::Instant::now();
        let mut last = self.auto_checked.lock();
        match *last {
            Some(t) if now.duration_since(t).as_millis() < u128::from(interval_ms) => false,
            Some(_) => {
                *last = Some(now);
                true
            }
            None => {
                // The first interval starts now.
                *last = Some(now);
                false
            }
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn keyspace_name(&self) -> String {
        super::catalog::keyspace_name(self.id)
    }

    /// Drops the table's definition: `delete` removes its durable record,
    /// and the table then counts as dropped. The record's lock is held
    /// throughout, so that no change of the definition (a layout, an
    /// index) runs between the two: one that passed its liveness check
    /// before the delete wrote the record back after it, and the dropped
    /// table came back at the next open (found in review, 2026-12-01).
    pub(crate) fn drop_record(&self, delete: impl FnOnce() -> Result<()>) -> Result<()> {
        let _record = self.record.lock();
        self.check_live()?;
        delete()?;
        self.dropped.store(true, Ordering::Release);
        Ok(())
    }

    pub(crate) fn check_live(&self) -> Result<()> {
        if self.dropped.load(Ordering::Acquire) {
            return Err(Error::TableNotFound(self.name.clone()));
        }
        Ok(())
    }

    /// The current layout and registry.
    pub(crate) fn layout_state(&self) -> Arc<LayoutState> {
        Arc::clone(&self.state.read())
    }

    /// The durable definition.
    pub(crate) fn record(&self) -> TableRecord {
        self.record.lock().clone()
    }

    /// Changes the durable definition: `f` edits a copy, which is written
    /// to the catalog (synced) and then becomes the definition.
    pub(crate) fn update_record(
        &self,
        f: impl FnOnce(&mut TableRecord) -> Result<()>,
    ) -> Result<TableRecord> {
        self.core.check_writable("change the table catalog")?;
        let mut record = self.record.lock();
        self.check_live()?;
        let mut next = record.clone();
        f(&mut next)?;
        write_record(&self.core, &self.catalog, &next.name, Some(&next))?;
        *record = next.clone();
        Ok(next)
    }

    /// The cached read plan if it is for `version_no` and `state`.
    pub(crate) fn cached_plan(
        &self,
        version_no: u64,
        state: &Arc<LayoutState>,
    ) -> Option<Arc<ReadPlan>> {
        self.read_plan
            .lock()
            .as_ref()
            .filter(|p| p.version_no == version_no && Arc::ptr_eq(&p.state, state))
            .cloned()
    }

    pub(crate) fn cache_plan(&self, plan: Arc<ReadPlan>) {
        *self.read_plan.lock() = Some(plan);
    }

    /// Changes the layout: recorded durably in the catalog, then handed to
    /// the keyspace, whose compactions rewrite each level into it; reads
    /// stay correct throughout (groups of the old layout are read until
    /// compaction has moved their data).
    pub(crate) fn set_layout(&self, layout: TableLayout) -> Result<()> {
        self.core.check_writable("change a table's layout")?;
        let mut record = self.record.lock();
        self.check_live()?;
        let layout = TableLayout::new(layout.levels().to_vec(), self.pieces.len())?
            .with_levels(record.options.num_levels);
        let old = self.layout_state();
        let mut shape = (*old.shape).clone();
        let generation = shape.generation().checked_add(1).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "table {:?} has had as many layouts as it can record",
                self.name
            ))
        })?;
        let ids = shape.register_layout(&layout, generation, Some(&old.ids));
        let shape = Arc::new(shape);
        let state = LayoutState::new(layout, Arc::clone(&shape), ids)?;
        let mut next = record.clone();
        next.layout = state.layout.levels().to_vec();
        next.groups = shape.groups().to_vec();
        next.ids = state
            .ids
            .iter()
            .map(|l| l.iter().map(|g| g.0).collect())
            .collect();
        let opts = keyspace_options(&next, &state)?;
        write_record(&self.core, &self.catalog, &next.name, Some(&next))?;
        // Readers get the new registry before the keyspace may compact into
        // the new groups: a read pairing files of a new group with the old
        // registry would find no columns in them and miss their rows. The
        // new state reads the old files correctly (their groups count as
        // retired).
        *self.state.write() = Arc::new(state);
        self.core.system_keyspace(&next.keyspace_name(), opts)?;
        *record = next;
        Ok(())
    }
}

/// The keyspace options of a table: its stored options with its layout.
fn keyspace_options(record: &TableRecord, state: &LayoutState) -> Result<KeyspaceOptions> {
    let mut opts = record.options.keyspace_options();
    opts.layout = Arc::new(TableKvLayout::new(
        Arc::clone(&state.shape),
        state.layout.clone(),
        state.ids.clone(),
        record.options.max_distinct_ratio,
    )?);
    Ok(opts)
}
