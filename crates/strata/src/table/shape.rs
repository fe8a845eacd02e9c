//! What the storage formats of one table need to know: the types of its
//! value columns and the column set behind each group id.
//!
//! Group ids name column sets for the table's lifetime: id 0 is every value
//! column (whole rows, the only group of level 0), and every other set gets
//! the next id the first time a layout uses it. The registry only grows, so
//! a file keeps meaning what it meant after the layout changes.

use super::layout::{Group, TableLayout};
use super::piece::PieceSchema;
use crate::error::{Error, Result};
use crate::table_format::GroupId;

/// A table's value-column types and group registry.
#[derive(Clone, Debug)]
pub struct TableShape {
    /// The value columns' types.
    pub pieces: PieceSchema,
    /// `groups[id]` is the column set of group id `id`.
    groups: Vec<Group>,
}

impl TableShape {
    /// A shape whose registry holds only the whole-row group.
    pub fn new(pieces: PieceSchema) -> TableShape {
        let all: Group = (0..pieces.len()).collect();
        TableShape {
            pieces,
            groups: vec![all],
        }
    }

    /// A shape with a registry read back from the catalog; the first entry
    /// must be the whole row.
    pub fn with_groups(pieces: PieceSchema, groups: Vec<Group>) -> Result<TableShape> {
        let all: Group = (0..pieces.len()).collect();
        if groups.first() != Some(&all) {
            return Err(Error::InvalidArgument(
                "group registry: the first group must be every value column".into(),
            ));
        }
        for g in &groups {
            if g.iter().any(|&c| c >= pieces.len()) || g.windows(2).any(|w| w[0] >= w[1]) {
                return Err(Error::InvalidArgument(format!(
                    "group registry: {g:?} is not an ascending set of value columns"
                )));
            }
        }
        Ok(TableShape { pieces, groups })
    }

    /// The id of `group`, registering it if new.
    pub fn register(&mut self, group: &[usize]) -> GroupId {
        match self.groups.iter().position(|g| g == group) {
            Some(i) => GroupId(i as u32),
            None => {
                self.groups.push(group.to_vec());
                GroupId((self.groups.len() - 1) as u32)
            }
        }
    }

    /// Registers every group of `layout`.
    pub fn register_layout(&mut self, layout: &TableLayout) {
        for level in layout.levels() {
            for g in level {
                self.register(g);
            }
        }
    }

    /// The id of `group` if registered.
    pub fn id_of(&self, group: &[usize]) -> Option<GroupId> {
        self.groups
            .iter()
            .position(|g| g == group)
            .map(|i| GroupId(i as u32))
    }

    /// The columns of group `id`.
    pub fn group_columns(&self, id: GroupId) -> Result<&[usize]> {
        self.groups
            .get(id.0 as usize)
            .map(Vec::as_slice)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("group {id} is not in the table's registry"))
            })
    }

    /// Every registered group, by id.
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }
}
