//! Compaction: which files to merge (`pick`: a pure function of a
//! version, the options and the layout's groups) and which entries survive
//! the merge (`survive`: a pure function of the versions of one key, the
//! live snapshots and whether deeper levels may hold the key).

mod pick;
mod survive;

use std::sync::Arc;

use crate::ids::Level;
use crate::table_format::{GroupId, TableFormat};
use crate::version::FileMeta;

pub use self::pick::{
    FileSpan, RunScore, compaction_order, destinations, file_order, pick_compaction, run_scores,
    task_for_inputs,
};
pub use self::survive::{
    DropPolicy, DropStats, EmitFn, FanoutEmitFn, compact_entries, compact_entries_fanout,
};

/// Why a compaction was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactionReason {
    /// Level 0 reached its file-count trigger.
    Level0FileCount,
    /// A level exceeded its byte budget.
    LevelSize,
    /// `compact_range` asked for it.
    Manual,
}

/// One output of a compaction: a child group of the input group on the
/// output level, and the files of its run that the inputs overlap.
#[derive(Clone, Debug)]
pub struct OutputRun {
    pub group: GroupId,
    /// The format the group's files are written in.
    pub format: Arc<dyn TableFormat>,
    pub overlapping: Vec<Arc<FileMeta>>,
}

/// A key range a running compaction is writing into one run: no other
/// compaction may write that run's files over it, or the run would hold
/// overlapping files. (With one source run per destination run this cannot
/// happen: files taken from one sorted run have disjoint ranges. A layout
/// change gives a run a second source, the group the layout retired.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputClaim {
    pub level: Level,
    pub group: GroupId,
    /// Smallest and largest user key, inclusive.
    pub lo: Vec<u8>,
    pub hi: Vec<u8>,
}

/// A chosen compaction: merge `inputs` (column group `group` at `level`)
/// into each child group of it at `output_level`, each child's output
/// merged with the files of that child's run the inputs overlap. With one
/// group per level (a plain key-value keyspace) there is one output run.
#[derive(Clone, Debug)]
pub struct CompactionTask {
    pub level: Level,
    pub group: GroupId,
    pub output_level: Level,
    pub inputs: Vec<Arc<FileMeta>>,
    pub outputs: Vec<OutputRun>,
    pub reason: CompactionReason,
    /// The only input moves down unchanged: nothing overlaps it below, and
    /// its group and format continue unchanged on the output level.
    pub trivial_move: bool,
    /// No level below the output level holds any key of the inputs, so
    /// tombstones may be dropped.
    pub bottommost: bool,
    /// The score that made this run the most urgent (>= 1 unless manual).
    pub score: f64,
    /// The user-key range the outputs cover (inputs and overlapping files).
    pub range: (Vec<u8>, Vec<u8>),
}

impl CompactionTask {
    /// The files of the output level that the task rewrites.
    pub fn overlapping(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        self.outputs.iter().flat_map(|o| o.overlapping.iter())
    }

    /// Whether some file the task reads is in a format other than the
    /// core's (dictionary-encoded or column-group files), whose entries may
    /// come with dictionary codes. Core tables never do, so compacting only
    /// them skips asking each entry for codes.
    pub fn may_carry_codes(&self) -> bool {
        self.inputs
            .iter()
            .chain(self.overlapping())
            .any(|f| !f.file.format.is_empty())
    }

    /// What the task claims while it runs.
    pub fn claims(&self) -> Vec<OutputClaim> {
        self.outputs
            .iter()
            .map(|o| OutputClaim {
                level: self.output_level,
                group: o.group,
                lo: self.range.0.clone(),
                hi: self.range.1.clone(),
            })
            .collect()
    }

    /// Every input file.
    pub fn all_inputs(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        self.inputs.iter().chain(self.overlapping())
    }

    /// Bytes read: the inputs and the overlapping files, once each (one
    /// pass feeds every output run).
    pub fn input_bytes(&self) -> u64 {
        self.all_inputs().map(|f| f.size).sum()
    }
}
