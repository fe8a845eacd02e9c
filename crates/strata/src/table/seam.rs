//! How a table plugs into the key-value core: the [`Layout`] of its
//! keyspace. It tells the core, per level, which column groups exist and in
//! which format each is written (whole rows in the core's own table format,
//! smaller groups as column-group files), how versions of a row combine in
//! flushes and compactions ([`TableReducer`]), and where the data of a
//! group the current layout no longer has goes when compaction moves it.

use std::sync::Arc;

use super::cgfile::CgFormat;
use super::layout::TableLayout;
use super::reduce::TableReducer;
use super::shape::TableShape;
use crate::ids::Level;
use crate::layout::{GroupSpec, Layout, VersionReducer};
use crate::sst::TableBuilderOptions;
use crate::table_format::{GroupId, SstFormat, TableFormat};

/// Bytes a key adds to every entry of every group, for the groups' weights
/// (the share of a level's byte budget each group gets).
const KEY_WEIGHT_BYTES: usize = 8;

/// The layout of one table's keyspace.
pub(crate) struct TableKvLayout {
    shape: Arc<TableShape>,
    layout: TableLayout,
    cg: Arc<dyn TableFormat>,
    reducer: Arc<TableReducer>,
    descriptor: String,
}

impl TableKvLayout {
    /// The core layout for `layout` over `shape` (whose registry holds
    /// every group of `layout`).
    pub(crate) fn new(shape: Arc<TableShape>, layout: TableLayout) -> TableKvLayout {
        let mut descriptor = String::from("strata.table/1:");
        for (l, groups) in layout.levels().iter().enumerate() {
            if l > 0 {
                descriptor.push(';');
            }
            let ids: Vec<String> = groups
                .iter()
                .map(|g| {
                    shape
                        .id_of(g)
                        .map_or_else(|| "?".into(), |id| id.0.to_string())
                })
                .collect();
            descriptor.push_str(&ids.join(","));
        }
        TableKvLayout {
            cg: Arc::new(CgFormat::new(Arc::clone(&shape))),
            reducer: Arc::new(TableReducer::new(shape.pieces.clone())),
            shape,
            layout,
            descriptor,
        }
    }

    fn weight(&self, group: &[usize]) -> u32 {
        let bytes: usize = KEY_WEIGHT_BYTES
            + group
                .iter()
                .map(|&v| self.shape.pieces.ty(v).nominal_width())
                .sum::<usize>();
        bytes.clamp(1, u32::MAX as usize) as u32
    }

    fn spec(&self, level: usize, group: &[usize]) -> GroupSpec {
        let id = self.shape.id_of(group).unwrap_or(GroupId::WHOLE);
        let parent = if level == 0 {
            GroupId::WHOLE
        } else {
            self.layout
                .groups(level - 1)
                .iter()
                .find(|p| group.iter().all(|c| p.binary_search(c).is_ok()))
                .and_then(|p| self.shape.id_of(p))
                .unwrap_or(GroupId::WHOLE)
        };
        let whole = group.len() == self.shape.pieces.len();
        GroupSpec {
            id,
            parent,
            weight: self.weight(group),
            format: if whole || level == 0 {
                Arc::new(SstFormat)
            } else {
                Arc::clone(&self.cg)
            },
        }
    }
}

impl Layout for TableKvLayout {
    fn name(&self) -> &str {
        "strata.table"
    }

    fn descriptor(&self) -> String {
        self.descriptor.clone()
    }

    fn table_options(&self, _level: Level, base: &TableBuilderOptions) -> TableBuilderOptions {
        base.clone()
    }

    fn groups(&self, level: Level) -> Vec<GroupSpec> {
        let level = level.index();
        if level == 0 || self.shape.pieces.is_empty() {
            return vec![GroupSpec::whole()];
        }
        self.layout
            .groups(level)
            .iter()
            .map(|g| self.spec(level, g))
            .collect()
    }

    fn extra_formats(&self) -> Vec<Arc<dyn TableFormat>> {
        vec![Arc::clone(&self.cg)]
    }

    fn stitch(
        &self,
        _key: &[u8],
        _parts: &[Option<&[u8]>],
    ) -> std::result::Result<Option<Vec<u8>>, String> {
        Err("table keyspaces are read through their table, not as key-value pairs".into())
    }

    fn reducer(&self) -> Option<Arc<dyn VersionReducer>> {
        Some(Arc::clone(&self.reducer) as Arc<dyn VersionReducer>)
    }

    fn retired_children(&self, level: Level, group: GroupId, num_levels: usize) -> Vec<GroupId> {
        let level = level.index();
        let Ok(columns) = self.shape.group_columns(group) else {
            return Vec::new();
        };
        // The last level has nowhere further down: its retired groups are
        // rewritten into the level's current groups.
        let target = if level + 1 >= num_levels {
            level
        } else {
            level + 1
        };
        self.layout
            .groups(target)
            .iter()
            .filter(|g| g.iter().any(|c| columns.binary_search(c).is_ok()))
            .filter_map(|g| self.shape.id_of(g))
            .collect()
    }
}
