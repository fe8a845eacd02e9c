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
use crate::error::Result;
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
    /// The id of each group of each level of `layout`.
    ids: Vec<Vec<GroupId>>,
    cg: Arc<dyn TableFormat>,
    reducer: Arc<TableReducer>,
    descriptor: String,
}

impl TableKvLayout {
    /// The core layout for `layout` over `shape`, its groups named `ids`
    /// (checked against the registry).
    pub(crate) fn new(
        shape: Arc<TableShape>,
        layout: TableLayout,
        ids: Vec<Vec<GroupId>>,
        max_distinct_ratio: f64,
    ) -> Result<TableKvLayout> {
        shape.check_ids(&layout, &ids)?;
        let mut descriptor = String::from("strata.table/1:");
        for (l, level) in ids.iter().enumerate() {
            if l > 0 {
                descriptor.push(';');
            }
            let names: Vec<String> = level.iter().map(|g| g.0.to_string()).collect();
            descriptor.push_str(&names.join(","));
        }
        Ok(TableKvLayout {
            cg: Arc::new(CgFormat::new(Arc::clone(&shape), max_distinct_ratio)),
            reducer: Arc::new(TableReducer::new(shape.pieces.clone())),
            shape,
            layout,
            ids,
            descriptor,
        })
    }

    fn weight(&self, group: &[usize]) -> u32 {
        let bytes: usize = KEY_WEIGHT_BYTES
            + group
                .iter()
                .map(|&v| self.shape.pieces.ty(v).nominal_width())
                .sum::<usize>();
        bytes.clamp(1, u32::MAX as usize) as u32
    }

    fn format_of(&self, columns: &[usize]) -> Arc<dyn TableFormat> {
        if columns.len() == self.shape.pieces.len() {
            Arc::new(SstFormat)
        } else {
            Arc::clone(&self.cg)
        }
    }

    fn ids(&self, level: usize) -> &[GroupId] {
        &self.ids[level.min(self.ids.len() - 1)]
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
        let l = level.index();
        if l == 0 || self.shape.pieces.is_empty() {
            return vec![GroupSpec::whole()];
        }
        self.layout
            .groups(l)
            .iter()
            .zip(self.ids(l))
            .map(|(g, &id)| {
                let parent = self
                    .layout
                    .parent_of(l, g)
                    .map_or(GroupId::WHOLE, |i| self.ids(l - 1)[i]);
                GroupSpec {
                    id,
                    parent,
                    weight: self.weight(g),
                    format: self.format_of(g),
                }
            })
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

    fn retired_children(&self, _level: Level, group: GroupId, num_levels: usize) -> Vec<GroupSpec> {
        let Ok(columns) = self.shape.group_columns(group) else {
            return Vec::new();
        };
        // Straight to the last level (see `compaction::destinations`): into
        // the current groups holding its columns, merged with them by
        // sequence number. Never into a run above the bottom, which the
        // current layout feeds with newer data from elsewhere (shape.rs).
        let l = num_levels.saturating_sub(1);
        self.layout
            .groups(l)
            .iter()
            .zip(self.ids(l))
            .filter(|(g, _)| g.iter().any(|c| columns.binary_search(c).is_ok()))
            .map(|(g, &id)| GroupSpec {
                id,
                parent: group,
                weight: self.weight(g),
                format: self.format_of(g),
            })
            .collect()
    }
}
