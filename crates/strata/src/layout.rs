//! The layout seam: how each level of a keyspace is stored.
//!
//! A level holds one or more *column groups*, each its own sorted run of
//! files in a format the layout names. A plain key-value keyspace has one
//! group, the whole value, at every level. The table layer plugs in layouts
//! whose deeper levels split a row's columns into groups (seed 001,
//! LASER): level 0 and the memtables always hold whole values, and each
//! group of a level lies inside one group of the level above (its
//! *parent*), so data only splits as it moves down.
//!
//! The core knows nothing of columns. What it needs of a layout is:
//! - the groups of each level, their parents, weights and formats
//!   ([`GroupSpec`]); compaction moves one group of a level into that
//!   group's children on the next level, each child written by its own
//!   format's writer, which stores what of the value belongs to it;
//! - how to join what a key has in each *lineage* (the chain of groups from
//!   level 0 down to one group of the deepest level) into the value a read
//!   returns ([`Layout::stitch`]). Each lineage is resolved like a plain
//!   keyspace (newest put or tombstone, merge operands on top), because the
//!   groups of one lineage only ever hold older data deeper down; lineages
//!   move independently, so a row's columns may sit at different levels.
//!
//! [`GroupPlan`] is the checked, precomputed form the core works from.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::ids::Level;
use crate::key::{SeqNo, ValueKind};
use crate::sst::{Compression, TableBuilderOptions};
use crate::table_format::{GroupId, SST_FORMAT, SstFormat, TableFormat};

/// The most lineages (groups of the deepest level) a layout may have: a
/// point read resolves the key once per lineage.
pub const MAX_LINEAGES: usize = 1024;

/// Chooses how each level of a keyspace is stored. The key-value core uses
/// one column group per level and varies only the table options (for
/// example LZ4 on hot levels and Zstd on cold ones); the table layer plugs in
/// column-group layouts through the same seam.
pub trait Layout: Send + Sync {
    /// A stable name for stats and logs.
    fn name(&self) -> &str;
    /// The name and every parameter that changes what files it writes;
    /// recorded in the manifest as part of the keyspace's identity.
    fn descriptor(&self) -> String {
        self.name().to_string()
    }
    /// Table options for files written to `level`.
    fn table_options(&self, level: Level, base: &TableBuilderOptions) -> TableBuilderOptions;
    /// The column groups of `level`. Level 0 must be exactly one group,
    /// [`GroupId::WHOLE`]; every group of a deeper level names a group of
    /// the level above as its parent, and every group has at least one
    /// child below it. Levels past the last one the layout describes
    /// repeat it. Default: the whole value in the core's format.
    fn groups(&self, _level: Level) -> Vec<GroupSpec> {
        vec![GroupSpec::whole()]
    }
    /// Formats of files the keyspace may still hold that no current group
    /// names (after a layout change). The core's own format is always
    /// available.
    fn extra_formats(&self) -> Vec<Arc<dyn TableFormat>> {
        Vec::new()
    }
    /// Joins what `key` has in each lineage (in [`GroupPlan::lineages`]
    /// order; `None` where the lineage has no value) into the value a read
    /// returns, or `None` for no value. Called only for layouts with more
    /// than one lineage; the default refuses, so a layout that splits
    /// groups must say how its parts join.
    fn stitch(
        &self,
        _key: &[u8],
        _parts: &[Option<&[u8]>],
    ) -> std::result::Result<Option<Vec<u8>>, String> {
        Err(format!(
            "layout {} splits values into groups but does not say how to join them",
            self.name()
        ))
    }
    /// How the versions of one key combine in flushes and compactions,
    /// when the core's rule (the newest put or tombstone of each snapshot
    /// stripe hides older versions, merge operands fold into it through the
    /// merge operator) does not fit the layout's values. Default: the core's
    /// rule.
    fn reducer(&self) -> Option<Arc<dyn VersionReducer>> {
        None
    }
    /// Where compaction moves the files of `group` on `level` when the
    /// layout no longer has that group there (it changed since they were
    /// written): the current groups of the last of `num_levels` levels that
    /// take their data, merged there with theirs by sequence number. Empty
    /// (the default): such files stay where they are.
    fn retired_children(
        &self,
        _level: Level,
        _group: GroupId,
        _num_levels: usize,
    ) -> Vec<GroupSpec> {
        Vec::new()
    }
}

/// One version of a key, as a flush or compaction hands it to a
/// [`VersionReducer`].
#[derive(Clone, Copy, Debug)]
pub struct KeyVersion<'a> {
    /// The version's sequence number.
    pub seqno: SeqNo,
    /// Put, tombstone or merge operand.
    pub kind: ValueKind,
    /// Its value (empty for a tombstone).
    pub value: &'a [u8],
}

/// What a [`VersionReducer`] needs to know besides the versions.
#[derive(Clone, Copy, Debug)]
pub struct ReduceContext<'a> {
    /// Sequence numbers of live snapshots, ascending: every snapshot must
    /// still read what it read before.
    pub snapshots: &'a [SeqNo],
    /// No deeper level holds the key (in any group), so what hides nothing
    /// may go.
    pub bottommost: bool,
}

impl ReduceContext<'_> {
    /// The stripe of `seqno`: the index of the oldest snapshot that sees it,
    /// or `snapshots.len()` when only the latest state does. Two versions
    /// in the same stripe are seen by exactly the same readers, so a
    /// reducer may combine them; across stripes it must keep both.
    pub fn stripe(&self, seqno: SeqNo) -> usize {
        self.snapshots.partition_point(|&s| s < seqno)
    }

    /// `versions` (newest first) cut into runs that share a stripe: each
    /// run's range and stripe, newest first.
    pub fn stripes<'v>(
        &'v self,
        versions: &'v [KeyVersion<'_>],
    ) -> impl Iterator<Item = (std::ops::Range<usize>, usize)> + 'v {
        let mut i = 0;
        std::iter::from_fn(move || {
            let first = versions.get(i)?;
            let s = self.stripe(first.seqno);
            let end = i + versions[i..]
                .iter()
                .take_while(|v| self.stripe(v.seqno) == s)
                .count();
            let run = i..end;
            i = end;
            Some((run, s))
        })
    }
}

/// Receives each version a [`VersionReducer`] keeps: sequence number, kind
/// and value.
pub type EmitVersion<'a> = dyn FnMut(SeqNo, ValueKind, &[u8]) -> Result<()> + 'a;

/// Decides which versions of a key a flush or compaction writes.
pub trait VersionReducer: Send + Sync {
    /// Reduces `versions` of `user_key` (newest first, all of them within
    /// the job's inputs) by calling `emit(seqno, kind, value)` for each
    /// survivor, newest first. Every survivor's sequence number must be one
    /// of the inputs'.
    fn reduce(
        &self,
        user_key: &[u8],
        versions: &[KeyVersion<'_>],
        ctx: &ReduceContext<'_>,
        emit: &mut EmitVersion<'_>,
    ) -> Result<()>;
}

/// One column group of a level.
#[derive(Clone)]
pub struct GroupSpec {
    /// The group's id, unique within its level. A group keeps its id on
    /// every level where it is not split further.
    pub id: GroupId,
    /// The group of the level above that holds this one's data (ignored
    /// on level 0).
    pub parent: GroupId,
    /// The group's share of its level's byte budget, relative to its
    /// siblings' (for example its columns' width); at least 1.
    pub weight: u32,
    /// The format of the group's files.
    pub format: Arc<dyn TableFormat>,
}

impl GroupSpec {
    /// The whole value, in the core's format.
    pub fn whole() -> GroupSpec {
        GroupSpec {
            id: GroupId::WHOLE,
            parent: GroupId::WHOLE,
            weight: 1,
            format: Arc::new(SstFormat),
        }
    }
}

impl fmt::Debug for GroupSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}(parent {}, weight {}, {})",
            self.id,
            self.parent,
            self.weight,
            self.format.name()
        )
    }
}

/// The default layout: the keyspace's table options at every level.
#[derive(Debug, Default, Clone, Copy)]
pub struct UniformLayout;

impl Layout for UniformLayout {
    fn name(&self) -> &str {
        "uniform"
    }
    fn table_options(&self, _level: Level, base: &TableBuilderOptions) -> TableBuilderOptions {
        base.clone()
    }
}

/// A layout that compresses levels from `cold_from_level` on with a
/// different codec (for example Zstd below LZ4).
#[derive(Debug, Clone, Copy)]
pub struct TieredCompressionLayout {
    /// The codec of levels above `cold_from_level`.
    pub hot: Compression,
    /// The codec from `cold_from_level` down.
    pub cold: Compression,
    /// The first level compressed with `cold`.
    pub cold_from_level: Level,
}

impl Layout for TieredCompressionLayout {
    fn name(&self) -> &str {
        "tiered-compression"
    }
    fn descriptor(&self) -> String {
        format!(
            "tiered-compression:hot={},cold={},from={}",
            self.hot, self.cold, self.cold_from_level
        )
    }
    fn table_options(&self, level: Level, base: &TableBuilderOptions) -> TableBuilderOptions {
        let mut o = base.clone();
        o.compression = if level >= self.cold_from_level {
            self.cold
        } else {
            self.hot
        };
        o
    }
}

/// A layout, checked and precomputed for `num_levels` levels: what the core
/// reads of it, and what a layout's `stitch` can consult for the order of
/// its lineages.
pub struct GroupPlan {
    /// The groups of each level.
    levels: Vec<Vec<GroupSpec>>,
    /// For each group of the deepest level, its ancestor on every level.
    lineages: Vec<Vec<GroupId>>,
    formats: HashMap<String, Arc<dyn TableFormat>>,
    /// [`Layout::reducer`], asked once: the write path consults it for
    /// every merge operand.
    reducer: Option<Arc<dyn VersionReducer>>,
}

impl GroupPlan {
    /// Checks `layout`'s groups on `num_levels` levels.
    pub fn new(layout: &dyn Layout, num_levels: usize) -> Result<GroupPlan> {
        let bad = |why: String| {
            Err(Error::InvalidArgument(format!(
                "layout {}: {why}",
                layout.name()
            )))
        };
        let num_levels = num_levels.max(1);
        if num_levels > usize::from(u8::MAX) + 1 {
            return bad(format!("{num_levels} levels; a level is at most 255"));
        }
        let levels: Vec<Vec<GroupSpec>> = (0..num_levels)
            .map(|l| layout.groups(Level::from_index(l)))
            .collect();
        if levels[0].len() != 1 || levels[0][0].id != GroupId::WHOLE {
            return bad("level 0 must be exactly one group, the whole value (group 0)".into());
        }
        let mut formats: HashMap<String, Arc<dyn TableFormat>> = HashMap::new();
        formats.insert(SST_FORMAT.to_string(), Arc::new(SstFormat));
        for (level, groups) in levels.iter().enumerate() {
            if groups.is_empty() {
                return bad(format!("level {level} has no group"));
            }
            for (i, g) in groups.iter().enumerate() {
                if groups[..i].iter().any(|o| o.id == g.id) {
                    return bad(format!("level {level} names group {} twice", g.id));
                }
                if g.weight == 0 {
                    return bad(format!("group {} of level {level} has weight 0", g.id));
                }
                if level > 0 && !levels[level - 1].iter().any(|p| p.id == g.parent) {
                    return bad(format!(
                        "group {} of level {level} has parent {}, which level {} does not have",
                        g.id,
                        g.parent,
                        level - 1
                    ));
                }
                let name = g.format.name().to_string();
                if name.is_empty() {
                    return bad(format!(
                        "group {} of level {level}: a format needs a name",
                        g.id
                    ));
                }
                formats.entry(name).or_insert_with(|| Arc::clone(&g.format));
            }
            if level > 0 {
                for p in &levels[level - 1] {
                    if !groups.iter().any(|g| g.parent == p.id) {
                        return bad(format!(
                            "group {} of level {} has no child on level {level}",
                            p.id,
                            level - 1
                        ));
                    }
                }
            }
        }
        for f in layout.extra_formats() {
            formats.entry(f.name().to_string()).or_insert(f);
        }
        // Dictionary-encoded files need no option to be read: a keyspace
        // opened without its dictionary layout still reads them.
        formats
            .entry(crate::dictfile::DICT_FORMAT.to_string())
            .or_insert_with(|| Arc::new(crate::dictfile::DictFormat::default()));
        let deepest = &levels[num_levels - 1];
        if deepest.len() > MAX_LINEAGES {
            return bad(format!(
                "{} groups on the deepest level; at most {MAX_LINEAGES}",
                deepest.len()
            ));
        }
        let lineages = deepest
            .iter()
            .map(|leaf| {
                let mut chain = vec![GroupId::WHOLE; num_levels];
                let mut id = leaf.id;
                for level in (0..num_levels).rev() {
                    chain[level] = id;
                    if let Some(g) = levels[level].iter().find(|g| g.id == id) {
                        id = g.parent;
                    }
                }
                chain
            })
            .collect();
        Ok(GroupPlan {
            levels,
            lineages,
            formats,
            reducer: layout.reducer(),
        })
    }

    /// The layout's own rule for which versions of a key survive, if it
    /// has one ([`Layout::reducer`]).
    pub fn reducer(&self) -> Option<&dyn VersionReducer> {
        self.reducer.as_deref()
    }

    fn level(&self, level: Level) -> &[GroupSpec] {
        &self.levels[level.index().min(self.levels.len() - 1)]
    }

    /// The groups of `level`.
    pub fn groups(&self, level: Level) -> &[GroupSpec] {
        self.level(level)
    }

    /// Group `id` of `level`.
    pub fn group(&self, level: Level, id: GroupId) -> Option<&GroupSpec> {
        self.level(level).iter().find(|g| g.id == id)
    }

    /// The groups of the next level that hold the data of group `id` of
    /// `level`.
    pub fn children(&self, level: Level, id: GroupId) -> Vec<&GroupSpec> {
        if level.index() + 1 >= self.levels.len() {
            // Past the described levels a group continues as itself.
            return self.group(level, id).into_iter().collect();
        }
        self.levels[level.next().index()]
            .iter()
            .filter(|g| g.parent == id)
            .collect()
    }

    /// The share of `level`'s byte budget that group `id` may hold.
    pub fn share(&self, level: Level, id: GroupId) -> f64 {
        let groups = self.level(level);
        let total: u64 = groups.iter().map(|g| u64::from(g.weight)).sum();
        let mine = groups
            .iter()
            .find(|g| g.id == id)
            .map_or(0, |g| u64::from(g.weight));
        if total == 0 {
            return 1.0;
        }
        mine as f64 / total as f64
    }

    /// Whether every read resolves in one lineage (no stitching).
    pub fn single_lineage(&self) -> bool {
        self.lineages.len() == 1
    }

    /// For each group of the deepest level, its ancestor on every level.
    pub fn lineages(&self) -> &[Vec<GroupId>] {
        &self.lineages
    }

    /// Lineage `i`'s group on `level`.
    pub fn lineage_group(&self, i: usize, level: Level) -> GroupId {
        let chain = &self.lineages[i];
        chain[level.index().min(chain.len() - 1)]
    }

    /// The format recorded under `name` (an empty name is the core's own).
    pub fn format(&self, name: &str) -> Option<&Arc<dyn TableFormat>> {
        let name = if name.is_empty() { SST_FORMAT } else { name };
        self.formats.get(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_cut_into_runs_of_one_stripe() {
        let v = |s: u64| KeyVersion {
            seqno: SeqNo(s),
            kind: ValueKind::Put,
            value: b"",
        };
        let versions = [v(9), v(7), v(5), v(2), v(1)];
        let ctx = ReduceContext {
            snapshots: &[SeqNo(3), SeqNo(6)],
            bottommost: false,
        };
        let runs: Vec<_> = ctx.stripes(&versions).collect();
        assert_eq!(runs, vec![(0..2, 2), (2..3, 1), (3..5, 0)]);
        let none = ReduceContext {
            snapshots: &[],
            bottommost: true,
        };
        assert_eq!(none.stripes(&versions).collect::<Vec<_>>(), vec![(0..5, 0)]);
        assert_eq!(none.stripes(&[]).count(), 0);
    }
}
