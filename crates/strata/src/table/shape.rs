//! What the storage formats of one table need to know: the types of its
//! value columns and what each group id stands for.
//!
//! A group id names a column set *in a lineage*: the set and the id of the
//! group above it that its data came through. Id 0 is every value column
//! under level 0 (whole rows: level 0, and every level of a pure-row
//! lineage). The registry only grows, so a file keeps meaning what it meant
//! after the layout changes.
//!
//! Ids are per lineage, not per column set, because a layout change must
//! not let one run receive data through two paths. If a column set kept its
//! id whatever its parent, a group of the old layout would move its (older)
//! data into that run while the new layout's path moved newer data into it
//! and on down, leaving old data above new: a later tombstone dropped at the
//! bottom would then uncover it. With lineage ids a changed path means a new
//! group: the old layout's groups (*retired*) move down only into their own
//! old children, and only at the last level is old data rewritten into the
//! current groups, merged with them by sequence number.

use serde::{Deserialize, Serialize};

use super::layout::{Group, TableLayout};
use super::piece::PieceSchema;
use crate::error::{Error, Result};
use crate::table_format::GroupId;

/// One registered group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupEntry {
    /// Its value columns, ascending.
    pub columns: Group,
    /// The group its data comes through.
    pub parent: u32,
    /// The level on which it splits off its parent (a group that does not
    /// split further keeps its id on the levels below).
    pub level: u32,
    /// The layout generation that registered it (1 for the first layout).
    pub generation: u32,
}

/// A table's value-column types and group registry.
#[derive(Clone, Debug)]
pub struct TableShape {
    /// The value columns' types.
    pub pieces: PieceSchema,
    /// `groups[id]` is group `id`.
    groups: Vec<GroupEntry>,
}

impl TableShape {
    /// A shape whose registry holds only the whole-row group.
    pub fn new(pieces: PieceSchema) -> TableShape {
        let all: Group = (0..pieces.len()).collect();
        TableShape {
            pieces,
            groups: vec![GroupEntry {
                columns: all,
                parent: 0,
                level: 0,
                generation: 0,
            }],
        }
    }

    /// A shape with a registry read back from the catalog; the first entry
    /// must be the whole row and every parent an earlier entry.
    pub fn with_groups(pieces: PieceSchema, groups: Vec<GroupEntry>) -> Result<TableShape> {
        let all: Group = (0..pieces.len()).collect();
        let bad = |why: String| Err(Error::InvalidArgument(format!("group registry: {why}")));
        if groups.first().map(|g| &g.columns) != Some(&all) {
            return bad("the first group must be every value column".into());
        }
        for (i, g) in groups.iter().enumerate() {
            if g.columns.iter().any(|&c| c >= pieces.len())
                || g.columns.windows(2).any(|w| w[0] >= w[1])
            {
                return bad(format!(
                    "{:?} is not an ascending set of value columns",
                    g.columns
                ));
            }
            if i > 0 && g.parent as usize >= i {
                return bad(format!(
                    "group {i} names a later group {} as parent",
                    g.parent
                ));
            }
        }
        Ok(TableShape { pieces, groups })
    }

    /// Registers `layout` as generation `generation` and returns the id of
    /// each group of each level. `current` is the layout in force before
    /// (its ids), `None` for a table's first layout.
    ///
    /// A group keeps the id it has in `current` on that level (its run goes
    /// on as before). Any other group gets a new id, even a column set and
    /// parent seen before: a run the layout retired holds data older than
    /// what later went through the layout that replaced it, and must not
    /// become current again (old data would sit above newer data below). A
    /// group with its parent's columns is its parent continued when that
    /// keeps the run.
    pub fn register_layout(
        &mut self,
        layout: &TableLayout,
        generation: u32,
        current: Option<&[Vec<GroupId>]>,
    ) -> Vec<Vec<GroupId>> {
        let mut out: Vec<Vec<GroupId>> = Vec::with_capacity(layout.num_levels());
        // Ids first given out by this call hold no data yet anywhere.
        let first_new = self.groups.len();
        for (l, groups) in layout.levels().iter().enumerate() {
            let mut ids = Vec::with_capacity(groups.len());
            for g in groups {
                if l == 0 {
                    ids.push(GroupId::WHOLE);
                    continue;
                }
                let parent = layout
                    .parent_of(l, g)
                    .map_or(GroupId::WHOLE, |above| out[l - 1][above]);
                let keeps = |id: GroupId| {
                    id.0 as usize >= first_new
                        || current.is_none_or(|c| c[l.min(c.len() - 1)].contains(&id))
                };
                let continued = self
                    .groups
                    .get(parent.0 as usize)
                    .is_some_and(|p| p.columns == *g)
                    .then_some(parent);
                let known = || {
                    self.groups
                        .iter()
                        .enumerate()
                        .rev()
                        .filter(|(_, e)| {
                            e.columns == *g && e.parent == parent.0 && e.level as usize == l
                        })
                        .map(|(i, _)| GroupId(i as u32))
                        .find(|&id| keeps(id))
                };
                let id = match continued.filter(|&id| keeps(id)).or_else(known) {
                    Some(id) => id,
                    None => {
                        self.groups.push(GroupEntry {
                            columns: g.clone(),
                            parent: parent.0,
                            level: l as u32,
                            generation,
                        });
                        GroupId((self.groups.len() - 1) as u32)
                    }
                };
                ids.push(id);
            }
            out.push(ids);
        }
        out
    }

    /// Checks that `ids` name, level by level, groups of `layout`'s column
    /// sets.
    pub fn check_ids(&self, layout: &TableLayout, ids: &[Vec<GroupId>]) -> Result<()> {
        let ok = ids.len() == layout.num_levels()
            && layout
                .levels()
                .iter()
                .zip(ids)
                .enumerate()
                .all(|(l, (groups, ids))| {
                    groups.len() == ids.len()
                        && groups.iter().zip(ids).all(|(g, id)| {
                            (l == 0 && *id == GroupId::WHOLE)
                                || self
                                    .groups
                                    .get(id.0 as usize)
                                    .is_some_and(|e| e.columns == *g)
                        })
                });
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidArgument(
                "the layout's group ids do not match its groups".into(),
            ))
        }
    }

    /// The columns of group `id`.
    pub fn group_columns(&self, id: GroupId) -> Result<&[usize]> {
        self.groups
            .get(id.0 as usize)
            .map(|g| g.columns.as_slice())
            .ok_or_else(|| {
                Error::InvalidArgument(format!("group {id} is not in the table's registry"))
            })
    }

    /// Every registered group, by id.
    pub fn groups(&self) -> &[GroupEntry] {
        &self.groups
    }

    /// The newest generation registered.
    pub fn generation(&self) -> u32 {
        self.groups.iter().map(|g| g.generation).max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::schema::ColumnType;

    #[test]
    fn runs_keep_their_ids_only_while_their_layout_keeps_them() {
        let pieces = PieceSchema::from_types(vec![ColumnType::Int32; 4]);
        let mut s = TableShape::new(pieces);
        let layout = |levels: Vec<Vec<Vec<usize>>>| TableLayout::new(levels, 4).expect("layout");
        let a = layout(vec![
            vec![vec![0, 1, 2, 3]],
            vec![vec![0, 1], vec![2, 3]],
            vec![vec![0], vec![1], vec![2, 3]],
        ]);
        let ids_a = s.register_layout(&a, 1, None);
        s.check_ids(&a, &ids_a).expect("ids");
        // {2,3} continues its parent on level 2: one run, one id.
        assert_eq!(ids_a[2][2], ids_a[1][1]);
        // Level 2 changes under an unchanged level 1: level 1 keeps its ids.
        let b = layout(vec![
            vec![vec![0, 1, 2, 3]],
            vec![vec![0, 1], vec![2, 3]],
            vec![vec![0, 1], vec![2], vec![3]],
        ]);
        let ids_b = s.register_layout(&b, 2, Some(&ids_a));
        assert_eq!(ids_a[1], ids_b[1]);
        // {2} and {3} split off {2,3} on level 2: new groups.
        assert!(!ids_a[2].contains(&ids_b[2][1]));
        // Going back to a: the groups b retired come back as new runs.
        let ids_a2 = s.register_layout(&a, 3, Some(&ids_b));
        assert_eq!(ids_a2[1], ids_a[1]);
        assert_ne!(ids_a2[2][0], ids_a[2][0]);
        // Row, then column, then row: whole rows below level 0 are a new
        // run the second time.
        let row = TableLayout::row(4, 3);
        let ids_r = s.register_layout(&row, 4, Some(&ids_a2));
        let col = TableLayout::column(4, 3);
        let ids_c = s.register_layout(&col, 5, Some(&ids_r));
        let ids_r2 = s.register_layout(&row, 6, Some(&ids_c));
        assert_ne!(ids_r2[1][0], ids_r[1][0]);
        // ... one run down the levels (new ids continue themselves).
        assert_eq!(ids_r2[2][0], ids_r2[1][0]);
        assert_eq!(ids_r2[0][0], GroupId::WHOLE);
        assert!(s.check_ids(&col, &ids_r2).is_err());
    }
}
