//! Every engine I/O call site fails at least once (issue 6).
//!
//! `sites()` lists each call the engine makes through the [`Vfs`] or a file
//! handle it returned, named by the chain of engine functions that reaches
//! it (down from the one that decides what a failure there means). For each site and each
//! fault kind that fits the operation, a case runs a small workload over a
//! [`MemVfs`] with one rule that fails exactly that call: the rule's `when`
//! predicate captures the call stack and accepts only calls whose engine
//! frames (the `strata::` frames outside the VFS modules, innermost first)
//! match the site, and `after(nth)` picks the nth such call. The case then
//! checks the outcome the design promises (the operation fails with an
//! error, the database turns read-only where it should, the previous version
//! still reads back), clears the faults, reopens, and checks that nothing
//! acknowledged is lost and that no file is left behind. A case fails if its
//! fault never fired, so every listed site is proven reachable and failed.
//!
//! `every_engine_call_of_a_full_workload_is_a_listed_site` checks the list
//! the other way: every VFS call of a workload using every feature with I/O
//! must match a listed site. `site_table_in_reliability_doc` checks that
//! docs/RELIABILITY.md lists the same sites (`FAULT_SITES_PRINT=1` prints
//! the table).
//!
//! Matching needs symbolized backtraces: the test profile's debug info.

use std::backtrace::Backtrace;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use strata::vfs::Vfs;
use strata::vfs_mem::{FaultKind, FaultRule, MemVfs, VfsOp};
use strata::{Db, Error, KeyspaceOptions, Options, WriteOptions};

const DIR: &str = "/db";

// ---------------------------------------------------------------------------
// Call stacks
// ---------------------------------------------------------------------------

/// The engine frames of the current call stack, innermost first: symbols in
/// `strata::` outside `strata::vfs` and `strata::vfs_mem`, with closure
/// suffixes removed and repeats merged.
fn engine_frames() -> Vec<String> {
    let bt = Backtrace::force_capture().to_string();
    let mut out = Vec::new();
    for line in bt.lines() {
        let line = line.trim_start();
        let Some((idx, sym)) = line.split_once(": ") else {
            continue;
        };
        if idx.is_empty() || !idx.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let sym = sym.trim();
        let bare = sym.trim_start_matches('<');
        if !bare.starts_with("strata::") || bare.starts_with("strata::vfs") {
            continue;
        }
        let mut s = sym;
        while let Some(t) = s.strip_suffix("::{{closure}}") {
            s = t;
        }
        // A method in an `impl` block of a submodule is named
        // `strata::db::write::<impl strata::db::DbInner>::write_group`;
        // name it by its type, as one in the type's own module is.
        let owned;
        if let Some(at) = s.find("<impl ")
            && let Some(end) = s[at..].find('>')
        {
            owned = format!("{}{}", &s[at + 6..at + end], &s[at + end + 1..]);
            s = &owned;
        }
        // A closure and the function it is in count as one frame.
        if out.last().is_none_or(|l: &String| l != s) {
            out.push(s.to_string());
        }
    }
    out
}

fn frame_is(sym: &str, name: &str) -> bool {
    sym == name || sym.ends_with(&format!("::{name}"))
}

/// Whether `frames` (innermost first) match `spec`: the first name is the
/// innermost engine frame and each next name is the next frame, except after
/// `".."`, which skips any number of frames. Frames outside the spec (the
/// callers of its last name) are not constrained.
fn stack_matches(frames: &[String], spec: &[&str]) -> bool {
    fn go(frames: &[String], spec: &[&str]) -> bool {
        match spec.split_first() {
            None => true,
            Some((&"..", rest)) => (0..=frames.len()).any(|i| go(&frames[i..], rest)),
            Some((name, rest)) => frames
                .first()
                .is_some_and(|f| frame_is(f, name) && go(&frames[1..], rest)),
        }
    }
    go(frames, spec)
}

// ---------------------------------------------------------------------------
// The sites
// ---------------------------------------------------------------------------

/// The workload a site's fault is injected into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Scenario {
    /// A `put` (`sync` or not) on an open database.
    Put { sync: bool },
    /// A flush of another keyspace while the default keyspace's unflushed
    /// writes share its log: the flush syncs that log first.
    FlushBesideUnflushed,
    /// `Db::flush` of a memtable (memtable switch, then the flush job).
    FlushJob,
    /// `Db::flush` with `max_manifest_bytes` so small that its manifest
    /// edit rolls the manifest over.
    Roll,
    /// Creating a keyspace (a manifest edit).
    NewKeyspace,
    /// `Db::compact` of three level-0 tables.
    Compact,
    /// Opening a database that has one table and unflushed log entries.
    Reopen,
    /// Opening a database that does not exist yet.
    CreateDb,
    /// Opening in salvage mode (`skip_corrupt_tables`) a database with one
    /// sound and one corrupt table.
    Salvage,
    /// `get` of a key in a table.
    Get,
    /// A full scan over a table.
    Scan,
    /// `Db::verify`.
    Verify,
    /// Closing the database.
    Close,
}

impl Scenario {
    /// The test (in this file) that runs the scenario's cases.
    fn test_name(self) -> &'static str {
        match self {
            Scenario::Put { .. } => "write_path_sites",
            Scenario::FlushJob | Scenario::FlushBesideUnflushed => "flush_sites",
            Scenario::Roll | Scenario::NewKeyspace => "manifest_sites",
            Scenario::Compact => "compaction_sites",
            Scenario::Reopen | Scenario::CreateDb => "open_sites",
            Scenario::Salvage => "salvage_sites",
            Scenario::Get | Scenario::Scan | Scenario::Verify => "read_sites",
            Scenario::Close => "close_sites",
        }
    }
}

/// When the table files a failed operation left behind must be gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cleanup {
    /// At once: the table files are the same as before the operation.
    AtOnce,
    /// At the next open (the files are complete, or their removal failed).
    AtReopen,
}

/// What a fault at the site must lead to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// The operation fails with an error; writes fail with
    /// `Error::ReadOnly` until reopen (for a write, flush, compaction or
    /// manifest edit), the open fails (for an open), or only that read fails
    /// (for a read).
    Fails(Cleanup),
    /// The engine ignores the failure (a best-effort removal or a flush at
    /// close): the operation succeeds; with `leftover`, a file it would have
    /// removed stays until the next open.
    Ignored { leftover: bool },
}

/// A second fault that must fire first to reach a site (the removal of a
/// table whose writing failed).
#[derive(Clone, Copy, Debug)]
struct Trigger {
    op: VfsOp,
    path: &'static str,
    frames: &'static [&'static str],
}

/// One engine I/O call site.
#[derive(Clone, Copy, Debug)]
struct Site {
    /// Where the call is made: the chain of engine functions reaching it,
    /// outermost first (`file:function → function → file:function`).
    at: &'static str,
    /// What the call does.
    what: &'static str,
    op: VfsOp,
    /// A fragment of the path (or either path, for a rename) of the call.
    path: &'static str,
    /// The engine frames of the call (see [`stack_matches`]).
    frames: &'static [&'static str],
    /// Which of the calls matching `op`, `path` and `frames` during the
    /// scenario's operation fails (0: the first).
    nth: u64,
    scenario: Scenario,
    expect: Expect,
    trigger: Option<Trigger>,
    /// Existing tests (other files) that also fail this site.
    also: &'static str,
}

const FLUSH: &str = "DbInner::flush_memtable";
const OPEN: &str = "DbInner::open";
const OUTPUTS: &str = "DbInner::write_compaction_outputs";
const RUN_COMPACTION: &str = "DbInner::run_compaction";

const fn site(
    at: &'static str,
    what: &'static str,
    op: VfsOp,
    path: &'static str,
    frames: &'static [&'static str],
    scenario: Scenario,
    expect: Expect,
) -> Site {
    Site {
        at,
        what,
        op,
        path,
        frames,
        nth: 0,
        scenario,
        expect,
        trigger: None,
        also: "",
    }
}

impl Site {
    const fn nth(mut self, n: u64) -> Self {
        self.nth = n;
        self
    }

    const fn after(mut self, t: Trigger) -> Self {
        self.trigger = Some(t);
        self
    }

    const fn also(mut self, tests: &'static str) -> Self {
        self.also = tests;
        self
    }

    /// The fault kinds injected at this site.
    fn kinds(&self) -> Vec<FaultKind> {
        match self.op {
            VfsOp::Append => vec![FaultKind::ShortWrite, FaultKind::NoSpace],
            VfsOp::Create | VfsOp::Flush => vec![FaultKind::NoSpace],
            _ => vec![FaultKind::IoError],
        }
    }
}

const FAILS: Expect = Expect::Fails(Cleanup::AtReopen);
const FAILS_CLEAN: Expect = Expect::Fails(Cleanup::AtOnce);

use Scenario::*;
use VfsOp::*;

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn frames(parts: &[&[&'static str]]) -> &'static [&'static str] {
    Box::leak(parts.concat().into_boxed_slice())
}

/// The sites of writing one table: its creation by `chain` (with the
/// frames `create`), the TableBuilder's appends, flush and sync (called
/// from the frames `caller`), and the removal of the file when writing it
/// fails (after a failed footer append; frames `remove`).
fn table_builder_sites(
    scenario: Scenario,
    chain: &'static str,
    create: &'static [&'static str],
    remove: &'static [&'static str],
    caller: &'static [&'static str],
) -> Vec<Site> {
    let b = |inner: &str| leak(format!("{chain} → sst/builder.rs:{inner}"));
    let fr = |inner: &[&'static str]| frames(&[inner, &[".."], caller]);
    vec![
        site(
            chain,
            "create the table file",
            Create,
            ".sst",
            create,
            scenario,
            FAILS_CLEAN,
        ),
        site(
            b("TableBuilder::flush_data_block → write_data_block → write_block"),
            "append a data block and its trailer (also the blocks held back to train the zstd dictionary)",
            Append,
            ".sst",
            fr(&["write_block", "TableBuilder::write_data_block"]),
            scenario,
            FAILS_CLEAN,
        ),
        site(
            b("TableBuilder::finish → write_meta_block → write_block"),
            "append the filter block, the properties block",
            Append,
            ".sst",
            fr(&[
                "write_block",
                "TableBuilder::write_meta_block",
                "TableBuilder::finish",
            ]),
            scenario,
            FAILS_CLEAN,
        ),
        site(
            b("TableBuilder::finish → write_block"),
            "append the index block",
            Append,
            ".sst",
            fr(&["write_block", "TableBuilder::finish"]),
            scenario,
            FAILS_CLEAN,
        ),
        site(
            b("TableBuilder::finish → Footer::write_and_sync"),
            "append the footer",
            Append,
            ".sst",
            fr(&["Footer::write_and_sync", "TableBuilder::finish"]),
            scenario,
            FAILS_CLEAN,
        ),
        site(
            b("TableBuilder::finish → Footer::write_and_sync"),
            "flush the table file",
            Flush,
            ".sst",
            fr(&["Footer::write_and_sync", "TableBuilder::finish"]),
            scenario,
            FAILS_CLEAN,
        ),
        site(
            b("TableBuilder::finish → Footer::write_and_sync"),
            "fsync the table file",
            Sync,
            ".sst",
            fr(&["Footer::write_and_sync", "TableBuilder::finish"]),
            scenario,
            FAILS_CLEAN,
        ),
        site(
            chain,
            "remove the table file after a failed footer append",
            Remove,
            ".sst",
            remove,
            scenario,
            FAILS,
        )
        .after(Trigger {
            op: Append,
            path: ".sst",
            frames: fr(&["Footer::write_and_sync", "TableBuilder::finish"]),
        }),
    ]
}

/// The sites of opening a table (from the frame `caller`, described by
/// `chain`): open the file, read the footer, then the first `blocks` of the
/// properties, index and filter blocks. `first` tables were opened before
/// in the same operation.
fn table_open_sites(
    scenario: Scenario,
    chain: &'static str,
    caller: &'static [&'static str],
    label: &'static str,
    first: u64,
    blocks: usize,
) -> Vec<Site> {
    let open = frames(&[&["open_table_meta"], caller]);
    let mut v = vec![
        site(
            leak(format!("{chain} → open_table_meta")),
            label,
            Open,
            ".sst",
            open,
            scenario,
            FAILS,
        )
        .nth(first),
        site(
            leak(format!(
                "{chain} → open_table_meta → sst/reader.rs:TableReader::open → Footer::read"
            )),
            "read the footer",
            Read,
            ".sst",
            frames(&[&["Footer::read", "TableReader::open"], open]),
            scenario,
            FAILS,
        )
        .nth(first),
    ];
    let what = [
        "read the properties block",
        "read the index block",
        "read the filter block",
    ];
    for (i, w) in what.iter().enumerate().take(blocks) {
        v.push(
            site(
                leak(format!(
                    "{chain} → open_table_meta → sst/reader.rs:TableReader::open → read_block_contents"
                )),
                w,
                Read,
                ".sst",
                frames(&[&["read_block_contents", "TableReader::open"], open]),
                scenario,
                FAILS,
            )
            .nth(first * 3 + i as u64),
        );
    }
    v
}

/// The sites of `write_new_manifest` called from the frame `caller`
/// (described by `chain`).
fn new_manifest_sites(scenario: Scenario, chain: &'static str, caller: &'static str) -> Vec<Site> {
    let at = leak(format!("{chain} → db/version_set.rs:write_new_manifest"));
    let f = frames(&[&["write_new_manifest", caller]]);
    let cur = leak(format!("{at} → write_current"));
    let fc = frames(&[&["write_current", "write_new_manifest", caller]]);
    vec![
        site(
            at,
            "create the new manifest",
            Create,
            "MANIFEST",
            f,
            scenario,
            FAILS,
        ),
        site(
            leak(format!("{at} → log/writer.rs:LogWriter::add_record")),
            "append the snapshot to the new manifest",
            Append,
            "MANIFEST",
            frames(&[&["LogWriter::append", ".."], f]),
            scenario,
            FAILS,
        ),
        site(
            leak(format!("{at} → log/writer.rs:LogWriter::sync")),
            "fsync the new manifest",
            Sync,
            "MANIFEST",
            frames(&[&["LogWriter::sync"], f]),
            scenario,
            FAILS,
        ),
        site(
            cur,
            "create CURRENT.NNNNNN.tmp",
            Create,
            ".tmp",
            fc,
            scenario,
            FAILS,
        ),
        site(
            cur,
            "write CURRENT.NNNNNN.tmp",
            Append,
            ".tmp",
            fc,
            scenario,
            FAILS,
        ),
        site(
            cur,
            "fsync CURRENT.NNNNNN.tmp",
            Sync,
            ".tmp",
            fc,
            scenario,
            FAILS,
        ),
        site(
            cur,
            "rename CURRENT.NNNNNN.tmp to CURRENT",
            Rename,
            "CURRENT",
            fc,
            scenario,
            FAILS,
        ),
        site(
            cur,
            "sync the directory after the rename",
            SyncDir,
            DIR,
            fc,
            scenario,
            FAILS,
        ),
    ]
}

/// The sites of creating a write-ahead log (`create_wal`, called by the
/// frame `caller`): the file, its header record, and handing the header to
/// the OS.
fn new_log_sites(scenario: Scenario, chain: &'static str, caller: &'static str) -> Vec<Site> {
    let at = leak(format!("{chain} → db/version_set.rs:create_wal"));
    let f = frames(&[&["create_wal", caller]]);
    vec![
        site(
            at,
            "create the new write-ahead log",
            Create,
            ".log",
            f,
            scenario,
            FAILS,
        ),
        site(
            leak(format!("{at} → log/writer.rs:LogWriter::add_record")),
            "write the log's header record",
            Append,
            ".log",
            frames(&[&["LogWriter::append", ".."], f]),
            scenario,
            FAILS,
        ),
        site(
            leak(format!("{at} → log/writer.rs:LogWriter::flush")),
            "hand the header to the OS",
            Flush,
            ".log",
            frames(&[&["LogWriter::flush"], f]),
            scenario,
            FAILS,
        ),
    ]
}

/// The sites of a manifest edit (`log_edit`) made by the frame `caller`.
fn log_edit_sites(scenario: Scenario, chain: &'static str, caller: &'static str) -> Vec<Site> {
    vec![
        site(
            leak(format!(
                "{chain} → log_edit → log/writer.rs:LogWriter::add_record"
            )),
            "append the edit to the manifest",
            Append,
            "MANIFEST",
            frames(&[&["LogWriter::append", "..", "DbInner::log_edit", caller]]),
            scenario,
            FAILS,
        ),
        site(
            leak(format!(
                "{chain} → log_edit → log/writer.rs:LogWriter::sync"
            )),
            "fsync the manifest",
            Sync,
            "MANIFEST",
            frames(&[&["LogWriter::sync", "DbInner::log_edit", caller]]),
            scenario,
            FAILS,
        ),
    ]
}

/// Every engine I/O call site, grouped by operation.
fn sites() -> Vec<Site> {
    let mut v: Vec<Site> = Vec::new();

    // --- write path ---------------------------------------------------------
    v.extend([
        site(
            "db/write.rs:DbInner::write_group → log/writer.rs:LogWriter::add_record",
            "append the batch to the write-ahead log",
            Append,
            ".log",
            &["LogWriter::append", "..", "DbInner::write_group"],
            Put { sync: false },
            FAILS,
        )
        .also("faults::failed_wal_append_fails_that_write_and_every_later_one_until_reopen"),
        site(
            "db/write.rs:DbInner::write_group → log/writer.rs:LogWriter::flush",
            "flush the write-ahead log (write without sync)",
            Flush,
            ".log",
            &["LogWriter::flush", "DbInner::write_group"],
            Put { sync: false },
            FAILS,
        ),
        site(
            "db/write.rs:DbInner::write_group → log/writer.rs:LogWriter::sync",
            "fsync the write-ahead log (write with sync)",
            Sync,
            ".log",
            &["LogWriter::sync", "DbInner::write_group"],
            Put { sync: true },
            FAILS,
        )
        .also("faults::failed_wal_fsync_fails_the_sync_write_and_later_writes"),
    ]);

    // --- memtable switch and flush ------------------------------------------
    v.extend(new_log_sites(
        FlushJob,
        "db/write.rs:DbInner::switch_memtables",
        "DbInner::switch_memtables",
    ));
    let i = v.len() - 3;
    v[i].also = "faults::failed_log_creation_at_memtable_switch_is_reported";
    v.extend([
        site(
            "db/write.rs:DbInner::switch_memtables",
            "sync the directory after creating the log",
            SyncDir,
            DIR,
            &["DbInner::switch_memtables"],
            FlushJob,
            FAILS,
        ),
        site(
            "db/write.rs:DbInner::switch_memtables → log/writer.rs:LogWriter::flush",
            "flush the old write-ahead log to the OS",
            Flush,
            ".log",
            &["LogWriter::flush", "DbInner::switch_memtables"],
            FlushJob,
            FAILS,
        ),
    ]);
    // (A synced write fsyncs the same logs, through the same function,
    // when one comes before the flush has: its failure is the synced
    // write's own fsync failure, above.)
    v.push(site(
        "db/flush.rs:DbInner::flush_memtable → sync_closed_logs → log/writer.rs:LogWriter::sync",
        "fsync the logs a switch closed, which another keyspace's unflushed writes share (also before a synced write's own log)",
        Sync,
        ".log",
        &["LogWriter::sync", "DbInner::sync_closed_logs"],
        FlushBesideUnflushed,
        FAILS,
    ));
    v.extend(table_builder_sites(
        FlushJob,
        "db/flush.rs:DbInner::flush_memtable → build_table",
        &["TableOutput::create", "build_table", FLUSH],
        &["build_table", FLUSH],
        &["build_table", FLUSH],
    ));
    let i = v.len() - 7;
    v[i].also = "faults::failed_flush_keeps_the_previous_version_and_loses_nothing";
    v.push(site(
        "db/flush.rs:DbInner::flush_memtable",
        "sync the directory after writing the table",
        SyncDir,
        DIR,
        &[FLUSH],
        FlushJob,
        FAILS,
    ));
    v.extend(table_open_sites(
        FlushJob,
        "db/flush.rs:DbInner::flush_memtable → open_new_table",
        &["DbInner::open_new_table", FLUSH],
        "open the new table",
        0,
        3,
    ));
    v.extend(log_edit_sites(
        FlushJob,
        "db/flush.rs:DbInner::flush_memtable",
        FLUSH,
    ));
    let i = v.len() - 1;
    v[i].also = "faults::failed_manifest_write_makes_the_database_read_only_and_reopen_recovers";
    v.push(site(
        "db/flush.rs:DbInner::flush_memtable",
        "remove the obsolete write-ahead log",
        Remove,
        ".log",
        &[FLUSH],
        FlushJob,
        Expect::Ignored { leftover: true },
    ));

    // --- manifest rollover and keyspace creation ----------------------------
    v.extend(new_manifest_sites(
        Roll,
        "db/version_set.rs:DbInner::log_edit → roll_manifest",
        "DbInner::roll_manifest",
    ));
    v.push(site(
        "db/version_set.rs:DbInner::log_edit → roll_manifest",
        "remove the old manifest",
        Remove,
        "MANIFEST",
        &["DbInner::roll_manifest"],
        Roll,
        Expect::Ignored { leftover: true },
    ));
    v.extend(log_edit_sites(
        NewKeyspace,
        "db/version_set.rs:DbInner::open_keyspace",
        "DbInner::open_keyspace",
    ));

    // --- compaction ---------------------------------------------------------
    v.push(site(
        "db/compact.rs:DbInner::run_compaction → write_compaction_outputs → sst/table_iter.rs:TableIter::load_block → TableReader::read_data_block",
        "read an input data block",
        Read,
        ".sst",
        &[
            "read_block_contents",
            "TableReader::read_uncached",
            "TableReader::read_data_block",
            "TableIter::load_block",
            "..",
            OUTPUTS,
        ],
        Compact,
        FAILS_CLEAN,
    ));
    v.extend(table_builder_sites(
        Compact,
        "db/compact.rs:DbInner::run_compaction → write_compaction_outputs",
        &["TableOutput::create", OUTPUTS, "..", RUN_COMPACTION],
        &["DbInner::remove_tables", OUTPUTS, "..", RUN_COMPACTION],
        &[OUTPUTS],
    ));
    let i = v.len() - 7;
    v[i].also =
        "faults::full_disk_during_compaction_keeps_data_and_space_is_reclaimed_after_recovery";
    v.extend(table_open_sites(
        Compact,
        "db/compact.rs:DbInner::run_compaction → db/flush.rs:open_new_table",
        &["DbInner::open_new_table", RUN_COMPACTION],
        "open the output table",
        0,
        1,
    ));
    v.push(site(
        "db/compact.rs:DbInner::run_compaction",
        "sync the directory after writing the outputs",
        SyncDir,
        DIR,
        &[RUN_COMPACTION],
        Compact,
        FAILS,
    ));
    v.extend(log_edit_sites(
        Compact,
        "db/compact.rs:DbInner::run_compaction",
        RUN_COMPACTION,
    ));
    v.push(site(
        "version.rs:FileMeta::drop",
        "remove an obsolete input table",
        Remove,
        ".sst",
        &["FileMeta as core::ops::drop::Drop>::drop"],
        Compact,
        Expect::Ignored { leftover: true },
    ));

    // --- open ---------------------------------------------------------------
    v.extend([
        site(
            "db/open.rs:DbInner::open",
            "create the database directory",
            CreateDir,
            DIR,
            &[OPEN],
            CreateDb,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open",
            "take the LOCK file",
            Lock,
            "LOCK",
            &[OPEN],
            Reopen,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open → recovery/mod.rs:read_current",
            "open CURRENT",
            Open,
            "CURRENT",
            &["read_current", OPEN],
            Reopen,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open → recovery/mod.rs:read_current",
            "read CURRENT",
            Read,
            "CURRENT",
            &["read_current", OPEN],
            Reopen,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open → recovery/manifest_replay.rs:replay_manifest → log/reader.rs:LogReader::open",
            "open the manifest",
            Open,
            "MANIFEST",
            &["LogReader::open", "replay_manifest", OPEN],
            Reopen,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open → recovery/manifest_replay.rs:replay_manifest → log/reader.rs:LogReader::open",
            "read the manifest",
            Read,
            "MANIFEST",
            &["LogReader::open", "replay_manifest", OPEN],
            Reopen,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open",
            "list the directory (logs to replay)",
            List,
            DIR,
            &[OPEN],
            Reopen,
            FAILS,
        ),
    ]);
    v.extend(table_open_sites(
        Reopen,
        "db/open.rs:DbInner::open",
        &[OPEN],
        "open a table of the manifest",
        0,
        3,
    ));
    v.extend([
        site(
            "db/open.rs:DbInner::open → recovery/wal_replay.rs:logs_to_replay → recovery/cleanup.rs:first_record",
            "open a write-ahead log to read its header",
            Open,
            ".log",
            &["first_record", "logs_to_replay", OPEN],
            Reopen,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open → recovery/wal_replay.rs:logs_to_replay → recovery/cleanup.rs:first_record",
            "read a write-ahead log's header",
            Read,
            ".log",
            &["first_record", "logs_to_replay", OPEN],
            Reopen,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open → recovery/wal_replay.rs:replay_logs → log/reader.rs:LogReader::open",
            "open a write-ahead log to replay",
            Open,
            ".log",
            &["LogReader::open", "replay_logs", OPEN],
            Reopen,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open → recovery/wal_replay.rs:replay_logs → log/reader.rs:LogReader::open",
            "read a write-ahead log to replay",
            Read,
            ".log",
            &["LogReader::open", "replay_logs", OPEN],
            Reopen,
            FAILS,
        ),
    ]);
    v.extend(table_builder_sites(
        Reopen,
        "db/open.rs:DbInner::open → db/flush.rs:build_table",
        &["TableOutput::create", "build_table", OPEN],
        &["build_table", OPEN],
        &["build_table", OPEN],
    ));
    v.extend(table_open_sites(
        Reopen,
        "db/open.rs:DbInner::open",
        &[OPEN],
        "open the table written from the replayed log",
        1,
        1,
    ));
    v.push(site(
        "db/open.rs:DbInner::open",
        "sync the directory after writing the replayed tables",
        SyncDir,
        DIR,
        &[OPEN],
        Reopen,
        FAILS,
    ));
    v.extend(new_log_sites(Reopen, "db/open.rs:DbInner::open", OPEN));
    v.push(
        site(
            "db/open.rs:DbInner::open",
            "sync the directory after creating the log",
            SyncDir,
            DIR,
            &[OPEN],
            Reopen,
            FAILS,
        )
        .nth(1),
    );
    v.extend(new_manifest_sites(Reopen, "db/open.rs:DbInner::open", OPEN));
    v.extend([
        site(
            "db/open.rs:DbInner::open → db/open_files.rs:Sweep::run",
            "list the directory (obsolete files)",
            List,
            DIR,
            &["Sweep::run", OPEN],
            Reopen,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open → db/open_files.rs:Sweep::run",
            "remove an obsolete file (old log or manifest)",
            Remove,
            DIR,
            &["Sweep::run", OPEN],
            Reopen,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open",
            "sync the directory after the removals",
            SyncDir,
            DIR,
            &[OPEN],
            Reopen,
            FAILS,
        )
        .nth(2),
    ]);

    // --- salvage mode -------------------------------------------------------
    v.extend([
        site(
            "db/open.rs:DbInner::open → table_format.rs:TableHandle::verify → sst/reader.rs:TableReader::verify",
            "read a block of a sound table",
            Read,
            ".sst",
            &[
                "read_block_contents",
                "TableReader::read_uncached",
                "TableReader::verify",
                "TableHandle::verify",
                OPEN,
            ],
            Salvage,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open → db/open_files.rs:set_aside_table → recovery/mod.rs:set_aside",
            "create lost/",
            CreateDir,
            "lost",
            &["set_aside", "set_aside_table", OPEN],
            Salvage,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open → db/open_files.rs:set_aside_table → recovery/mod.rs:set_aside",
            "move the corrupt table to lost/",
            Rename,
            "lost",
            &["set_aside", "set_aside_table", OPEN],
            Salvage,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open → db/open_files.rs:set_aside_table → recovery/mod.rs:set_aside",
            "sync lost/ after the move",
            SyncDir,
            "lost",
            &["set_aside", "set_aside_table", OPEN],
            Salvage,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open → db/open_files.rs:set_aside_table → recovery/mod.rs:set_aside",
            "sync the directory after the move",
            SyncDir,
            DIR,
            &["set_aside", "set_aside_table", OPEN],
            Salvage,
            FAILS,
        )
        .nth(1),
        site(
            "db/open.rs:DbInner::open → recovery/mod.rs:log_report",
            "create lost/ for the recovery record",
            CreateDir,
            "lost",
            &["log_report", OPEN],
            Salvage,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open → recovery/mod.rs:log_report",
            "create lost/recovery-NNNNNN.txt",
            Create,
            ".txt",
            &["log_report", OPEN],
            Salvage,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open → recovery/mod.rs:log_report",
            "write the recovery record",
            Append,
            ".txt",
            &["log_report", OPEN],
            Salvage,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open → recovery/mod.rs:log_report",
            "fsync the recovery record",
            Sync,
            ".txt",
            &["log_report", OPEN],
            Salvage,
            FAILS,
        ),
        site(
            "db/open.rs:DbInner::open → recovery/mod.rs:log_report",
            "sync lost/ after writing the record",
            SyncDir,
            "lost",
            &["log_report", OPEN],
            Salvage,
            FAILS,
        ),
    ]);

    // --- reads --------------------------------------------------------------
    v.extend([
        site(
            "db/read.rs:DbInner::get → get_in_lineage → table_format.rs:TableHandle::get → sst/reader.rs:TableReader::get → read_data_block",
            "read a data block",
            Read,
            ".sst",
            &[
                "read_block_contents",
                "TableReader::read_uncached",
                "TableReader::read_data_block",
                "TableReader::get",
                "TableHandle::get",
                "get_in_lineage",
                "DbInner::get",
            ],
            Get,
            FAILS,
        ),
        site(
            "db_iter.rs:DbIter → sst/table_iter.rs:TableIter::load_block → TableReader::read_data_block",
            "read a data block",
            Read,
            ".sst",
            &[
                "read_block_contents",
                "TableReader::read_uncached",
                "TableReader::read_data_block",
                "TableIter::load_block",
                "..",
                "Keyspace::scan",
            ],
            Scan,
            FAILS,
        ),
        site(
            "db/handle.rs:DbCore::verify → table_format.rs:TableHandle::verify → sst/reader.rs:TableReader::verify",
            "read a block",
            Read,
            ".sst",
            &[
                "read_block_contents",
                "TableReader::read_uncached",
                "TableReader::verify",
                "TableHandle::verify",
                "DbCore::verify",
            ],
            Verify,
            FAILS,
        ),
    ]);

    // --- close --------------------------------------------------------------
    v.extend([site(
        "db/mod.rs:DbInner::shutdown → log/writer.rs:LogWriter::flush",
        "flush the write-ahead log",
        Flush,
        ".log",
        &["LogWriter::flush", "DbInner::shutdown"],
        Close,
        Expect::Ignored { leftover: false },
    )]);
    v
}

// ---------------------------------------------------------------------------
// Running a case
// ---------------------------------------------------------------------------

/// Panics in the engine's background threads (`strata-*`), which would
/// otherwise only be printed.
static BACKGROUND_PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_background_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current()
                .name()
                .is_some_and(|n| n.starts_with("strata-"))
            {
                BACKGROUND_PANICS.fetch_add(1, Ordering::SeqCst);
            }
            prev(info);
        }));
    });
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("value-{round}-{i}-{:0>40}", i).into_bytes()
}

/// Acknowledged state: key -> value.
type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Options over `vfs` with no block cache (reads reach the files, so read
/// faults hit them) and compactions only when a test asks for one.
fn base_options(vfs: &MemVfs) -> Options {
    let ks = KeyspaceOptions {
        level0_compaction_trigger: 100,
        level0_slowdown_trigger: 100,
        level0_stop_trigger: 100,
        ..KeyspaceOptions::default()
    };
    Options {
        vfs: Arc::new(vfs.clone()),
        block_cache_bytes: 0,
        default_keyspace: ks,
        ..Options::default()
    }
}

struct Case {
    site: Site,
    kind: FaultKind,
    vfs: MemVfs,
    label: String,
}

/// A rule failing the `nth` call of `op` on `path` whose stack matches
/// `frames`, once.
fn site_rule(
    op: VfsOp,
    path: &str,
    frames: &'static [&'static str],
    nth: u64,
    kind: FaultKind,
) -> FaultRule {
    FaultRule::new(kind)
        .op(op)
        .path_contains(path)
        .when(move |_, _| stack_matches(&engine_frames(), frames))
        .after(nth)
        .count(1)
}

impl Case {
    fn new(site: Site, kind: FaultKind) -> Case {
        let label = format!(
            "[{} | {:?} {} | {} | nth {} | {:?}]",
            site.at, site.op, site.path, site.what, site.nth, kind
        );
        Case {
            site,
            kind,
            vfs: MemVfs::new(),
            label,
        }
    }

    fn options(&self) -> Options {
        let mut o = base_options(&self.vfs);
        match self.site.scenario {
            Scenario::Roll => o.max_manifest_bytes = 1,
            Scenario::Salvage => o.skip_corrupt_tables = true,
            _ => {}
        }
        o
    }

    fn open(&self) -> Db {
        let mut o = self.options();
        o.skip_corrupt_tables = false;
        Db::open(DIR, o).unwrap_or_else(|e| panic!("{}: open before the fault: {e}", self.label))
    }

    /// Installs the fault (and its trigger).
    fn arm(&self) {
        assert_eq!(self.vfs.injected_count(self.site.op), 0);
        if let Some(t) = self.site.trigger {
            self.vfs
                .add_fault(site_rule(t.op, t.path, t.frames, 0, FaultKind::IoError));
        }
        self.vfs.add_fault(site_rule(
            self.site.op,
            self.site.path,
            self.site.frames,
            self.site.nth,
            self.kind.clone(),
        ));
    }

    /// The fault (and its trigger) fired. Waits a little: a background job
    /// may still be on its way to the site (the flush removes the old log
    /// after `Db::flush` has seen the flush installed).
    fn assert_fired(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.vfs.injected_count(self.site.op) == 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        if let Some(t) = self.site.trigger {
            assert_eq!(
                self.vfs.injected_count(t.op),
                1,
                "{}: the triggering {:?} fault did not fire",
                self.label,
                t.op
            );
        }
        assert_eq!(
            self.vfs.injected_count(self.site.op),
            1,
            "{}: the fault did not fire: the site was not reached",
            self.label
        );
    }

    /// Clears the faults and opens the database again.
    fn reopen(&self) -> Db {
        self.vfs.clear_faults();
        Db::open(DIR, self.options())
            .unwrap_or_else(|e| panic!("{}: reopen with faults cleared: {e}", self.label))
    }

    fn names(&self) -> Vec<String> {
        self.vfs
            .mem_fs()
            .list(Path::new(DIR))
            .unwrap_or_else(|e| panic!("{}: list: {e}", self.label))
    }

    fn tables_on_disk(&self) -> BTreeSet<String> {
        self.names()
            .into_iter()
            .filter(|n| n.ends_with(".sst"))
            .collect()
    }

    /// Why the directory holds more than the open database needs: a
    /// temporary file, a second manifest or log, or a table no version
    /// references (the live tables' count and bytes are compared).
    fn unclean(&self, db: &Db) -> Option<String> {
        let names = self.names();
        let count = |f: &dyn Fn(&str) -> bool| names.iter().filter(|n| f(n)).count();
        if let Some(n) = names.iter().find(|n| {
            !(n.ends_with(".sst")
                || n.ends_with(".log")
                || n.starts_with("MANIFEST-")
                || ["CURRENT", "LOCK", "lost"].contains(&n.as_str()))
        }) {
            return Some(format!("unexpected file {n}"));
        }
        let manifests = count(&|n| n.starts_with("MANIFEST-"));
        if manifests != 1 {
            return Some(format!("{manifests} manifests: {names:?}"));
        }
        let logs = count(&|n| n.ends_with(".log"));
        if logs != 1 {
            return Some(format!("{logs} logs: {names:?}"));
        }
        let stats = db.stats();
        let live: usize = stats
            .keyspaces
            .iter()
            .flat_map(|k| k.levels.iter().map(|(n, _)| *n))
            .sum();
        let live_bytes: u64 = stats
            .keyspaces
            .iter()
            .flat_map(|k| k.levels.iter().map(|(_, b)| *b))
            .sum();
        let tables = self.tables_on_disk();
        let bytes: u64 = tables
            .iter()
            .map(|n| {
                self.vfs
                    .mem_fs()
                    .file_size(&Path::new(DIR).join(n))
                    .unwrap_or(0)
            })
            .sum();
        if tables.len() != live || bytes != live_bytes {
            return Some(format!(
                "{} tables ({bytes} bytes) on disk, {live} ({live_bytes} bytes) live: {tables:?}",
                tables.len()
            ));
        }
        None
    }

    fn assert_clean(&self, db: &Db) {
        if let Some(why) = self.unclean(db) {
            panic!("{}: files left behind after reopen: {why}", self.label);
        }
    }

    /// Every acknowledged write reads back (point reads and a full scan).
    fn check(&self, db: &Db, model: &Model, when: &str) {
        for (k, v) in model {
            let got = db.get(k).unwrap_or_else(|e| {
                panic!(
                    "{}: {when}: get {}: {e}",
                    self.label,
                    String::from_utf8_lossy(k)
                )
            });
            assert_eq!(
                got.as_deref(),
                Some(v.as_slice()),
                "{}: {when}: key {}",
                self.label,
                String::from_utf8_lossy(k)
            );
        }
        let scan = db
            .default_keyspace()
            .scan(None, None, usize::MAX)
            .unwrap_or_else(|e| panic!("{}: {when}: scan: {e}", self.label));
        let want: Vec<(Vec<u8>, Vec<u8>)> =
            model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert!(
            scan == want,
            "{}: {when}: scan returned {} entries, {} acknowledged",
            self.label,
            scan.len(),
            want.len()
        );
    }

    fn put_range(&self, db: &Db, model: &mut Model, keys: std::ops::Range<u32>, round: u32) {
        let ks = db.default_keyspace();
        for i in keys {
            let opts = WriteOptions {
                sync: matches!(self.site.scenario, Scenario::Put { sync: true }),
                ..Default::default()
            };
            ks.put_opt(opts, &key(i), &value(i, round))
                .unwrap_or_else(|e| panic!("{}: put before the fault: {e}", self.label));
            model.insert(key(i), value(i, round));
        }
    }

    fn flush(&self, db: &Db) {
        db.flush()
            .unwrap_or_else(|e| panic!("{}: flush before the fault: {e}", self.label));
    }

    /// The operation failed; later writes must fail with `ReadOnly`.
    fn expect_failed_write(&self, db: &Db, r: strata::Result<()>) {
        match r {
            Err(Error::Io { .. } | Error::ReadOnly { .. }) => {}
            other => panic!(
                "{}: expected an I/O or read-only error, got {other:?}",
                self.label
            ),
        }
        match db.put(b"after-the-fault", b"x") {
            Err(Error::ReadOnly { .. }) => {}
            other => panic!(
                "{}: a later write returned {other:?}, not ReadOnly",
                self.label
            ),
        }
        assert!(
            db.stats().background_error.is_some(),
            "{}: no background error recorded",
            self.label
        );
    }

    fn expect_io<T: std::fmt::Debug>(&self, r: strata::Result<T>, what: &str) {
        match r {
            Err(Error::Io { .. }) => {}
            other => panic!(
                "{}: {what}: expected an I/O error, got {other:?}",
                self.label
            ),
        }
    }

    /// After reopen: everything acknowledged is there, no file is left
    /// behind, and writes, a flush and a compaction work.
    fn after_reopen(&self, db: &Db, model: &mut Model) {
        self.check(db, model, "after reopen");
        self.assert_clean(db);
        self.put_range(db, model, 1000..1020, 9);
        db.flush()
            .unwrap_or_else(|e| panic!("{}: flush after reopen: {e}", self.label));
        db.compact()
            .unwrap_or_else(|e| panic!("{}: compact after reopen: {e}", self.label));
        self.check(db, model, "after reopen, flush and compaction");
    }
}

fn run_case(site: Site, kind: FaultKind) {
    let case = Case::new(site, kind);
    match site.scenario {
        Scenario::Put { sync } => put_case(&case, sync),
        Scenario::FlushJob | Scenario::Roll | Scenario::FlushBesideUnflushed => flush_case(&case),
        Scenario::NewKeyspace => keyspace_case(&case),
        Scenario::Compact => compact_case(&case),
        Scenario::Reopen => reopen_case(&case),
        Scenario::CreateDb => create_case(&case),
        Scenario::Salvage => salvage_case(&case),
        Scenario::Get | Scenario::Scan | Scenario::Verify => read_case(&case),
        Scenario::Close => close_case(&case),
    }
}

fn put_case(case: &Case, sync: bool) {
    let db = case.open();
    let mut model = Model::new();
    case.put_range(&db, &mut model, 0..50, 0);
    case.arm();
    let victim = b"victim".to_vec();
    let r = db.default_keyspace().put_opt(
        WriteOptions {
            sync,
            ..Default::default()
        },
        &victim,
        b"v",
    );
    case.assert_fired();
    case.expect_io(r, "the put");
    case.expect_failed_write(
        &db,
        Err(Error::ReadOnly {
            cause: String::new(),
        }),
    );
    case.check(&db, &model, "after the failed put");
    drop(db);
    let db = case.reopen();
    // A failed write was not acknowledged: it may or may not be there,
    // except that a record the log did not take (fully) must not be.
    match db.get(&victim).expect("get") {
        None => {}
        Some(v) => {
            assert_ne!(
                case.site.op,
                VfsOp::Append,
                "{}: torn record replayed",
                case.label
            );
            assert_eq!(v, b"v", "{}", case.label);
            model.insert(victim, v);
        }
    }
    case.after_reopen(&db, &mut model);
}

fn flush_case(case: &Case) {
    let db = case.open();
    let mut model = Model::new();
    case.put_range(&db, &mut model, 0..200, 0);
    let before = case.tables_on_disk();
    // Flushing only another keyspace switches the log; the default
    // keyspace's unflushed entries keep the old one alive, so the flush
    // syncs it first.
    let other = (case.site.scenario == Scenario::FlushBesideUnflushed).then(|| {
        let other = db
            .keyspace("other", KeyspaceOptions::default())
            .unwrap_or_else(|e| panic!("{}: keyspace: {e}", case.label));
        other
            .put(b"o", b"1")
            .unwrap_or_else(|e| panic!("{}: put: {e}", case.label));
        other
    });
    case.arm();
    let r = match &other {
        Some(o) => o.flush(),
        None => db.flush(),
    };
    drop(other);
    case.assert_fired();
    match case.site.expect {
        Expect::Fails(cleanup) => {
            case.expect_failed_write(&db, r);
            case.check(&db, &model, "after the failed flush");
            if cleanup == Cleanup::AtOnce {
                assert_eq!(
                    case.tables_on_disk(),
                    before,
                    "{}: partial table left behind",
                    case.label
                );
            }
        }
        Expect::Ignored { leftover } => {
            r.unwrap_or_else(|e| panic!("{}: flush: {e}", case.label));
            case.put_range(&db, &mut model, 500..510, 1);
            case.check(&db, &model, "after the flush");
            if leftover {
                assert!(
                    case.unclean(&db).is_some(),
                    "{}: nothing left over",
                    case.label
                );
            }
        }
    }
    drop(db);
    let db = case.reopen();
    case.after_reopen(&db, &mut model);
}

fn keyspace_case(case: &Case) {
    let db = case.open();
    let mut model = Model::new();
    case.put_range(&db, &mut model, 0..50, 0);
    case.arm();
    let r = db.keyspace("extra", KeyspaceOptions::default()).map(|_| ());
    case.assert_fired();
    case.expect_io(r, "keyspace creation");
    case.expect_failed_write(
        &db,
        Err(Error::ReadOnly {
            cause: String::new(),
        }),
    );
    case.check(&db, &model, "after the failed keyspace creation");
    drop(db);
    let db = case.reopen();
    case.after_reopen(&db, &mut model);
}

fn compact_case(case: &Case) {
    let db = case.open();
    let mut model = Model::new();
    for round in 0..3 {
        case.put_range(&db, &mut model, 0..200, round);
        case.flush(&db);
    }
    let before = case.tables_on_disk();
    assert_eq!(before.len(), 3, "{}", case.label);
    case.arm();
    let r = db.compact();
    case.assert_fired();
    match case.site.expect {
        Expect::Fails(cleanup) if case.site.frames.contains(&"DbInner::log_edit") => {
            // A failed manifest write is sticky.
            case.expect_failed_write(&db, r);
            case.check(&db, &model, "after the failed compaction");
            if cleanup == Cleanup::AtOnce {
                assert_eq!(
                    case.tables_on_disk(),
                    before,
                    "{}: partial compaction output left behind",
                    case.label
                );
            }
        }
        Expect::Fails(cleanup) => {
            // An I/O failure of the compaction itself is not: the inputs
            // are live and the log has room, so writes go on and the
            // failure is reported until a compaction succeeds.
            case.expect_io(r, "the compaction");
            case.put_range(&db, &mut model, 300..310, 1);
            assert!(
                db.stats().background_error.is_none(),
                "{}: a compaction failure made the database read-only",
                case.label
            );
            case.expect_io(db.wait_for_background_work(), "the pending failure");
            case.check(&db, &model, "after the failed compaction");
            if cleanup == Cleanup::AtOnce {
                assert_eq!(
                    case.tables_on_disk(),
                    before,
                    "{}: partial compaction output left behind",
                    case.label
                );
            }
        }
        Expect::Ignored { leftover } => {
            r.unwrap_or_else(|e| panic!("{}: compact: {e}", case.label));
            case.put_range(&db, &mut model, 500..510, 1);
            case.check(&db, &model, "after the compaction");
            if leftover {
                assert!(
                    case.unclean(&db).is_some(),
                    "{}: nothing left over",
                    case.label
                );
            }
        }
    }
    drop(db);
    let db = case.reopen();
    case.after_reopen(&db, &mut model);
}

/// A database with one table (keys 0..100) and unflushed log entries
/// (keys 100..200), closed.
fn closed_database(case: &Case) -> Model {
    let db = case.open();
    let mut model = Model::new();
    case.put_range(&db, &mut model, 0..100, 0);
    case.flush(&db);
    case.put_range(&db, &mut model, 100..200, 0);
    db.close()
        .unwrap_or_else(|e| panic!("{}: close: {e}", case.label));
    model
}

fn reopen_case(case: &Case) {
    let mut model = closed_database(case);
    let before = case.tables_on_disk();
    case.arm();
    let r = Db::open(DIR, case.options()).map(drop);
    case.assert_fired();
    case.expect_io(r, "the open");
    if case.site.expect == FAILS_CLEAN {
        assert_eq!(
            case.tables_on_disk(),
            before,
            "{}: partial table left behind",
            case.label
        );
    }
    let db = case.reopen();
    case.after_reopen(&db, &mut model);
}

fn create_case(case: &Case) {
    case.arm();
    let r = Db::open(DIR, case.options()).map(drop);
    case.assert_fired();
    case.expect_io(r, "the open");
    let db = case.reopen();
    let mut model = Model::new();
    case.after_reopen(&db, &mut model);
}

fn salvage_case(case: &Case) {
    let db = case.open();
    let mut model = Model::new();
    case.put_range(&db, &mut model, 0..100, 0);
    case.flush(&db);
    let mut lost = Model::new();
    case.put_range(&db, &mut lost, 100..200, 0);
    case.flush(&db);
    db.close()
        .unwrap_or_else(|e| panic!("{}: close: {e}", case.label));
    // Damage the second table's first data block.
    let tables: Vec<String> = case.tables_on_disk().into_iter().collect();
    assert_eq!(tables.len(), 2, "{}", case.label);
    let bad = Path::new(DIR).join(&tables[1]);
    let fs = case.vfs.mem_fs();
    let mut bytes = fs.read_all(&bad).expect("read table");
    bytes[20] ^= 0x40;
    fs.remove(&bad).expect("remove");
    let mut f = fs.create(&bad).expect("rewrite table");
    f.append(&bytes).expect("append");
    f.sync().expect("sync");
    fs.sync_dir(Path::new(DIR)).expect("sync dir");

    case.arm();
    let r = Db::open(DIR, case.options()).map(drop);
    case.assert_fired();
    case.expect_io(r, "the salvage open");
    let db = case.reopen();
    let report = db.recovery_report().lost_tables.clone();
    assert_eq!(report.len(), 1, "{}: lost tables {report:?}", case.label);
    assert_eq!(
        report[0].file, bad,
        "{}: a sound table was set aside",
        case.label
    );
    let moved = report[0].moved_to.clone();
    assert!(
        moved.as_ref().is_some_and(|p| fs.exists(p)),
        "{}: not moved to lost/: {moved:?}",
        case.label
    );
    for k in lost.keys() {
        assert_eq!(db.get(k).expect("get"), None, "{}", case.label);
    }
    case.after_reopen(&db, &mut model);
}

fn read_case(case: &Case) {
    let db = case.open();
    let mut model = Model::new();
    case.put_range(&db, &mut model, 0..200, 0);
    case.flush(&db);
    case.arm();
    match case.site.scenario {
        Scenario::Get => {
            let r = db.get(&key(7));
            case.assert_fired();
            case.expect_io(r, "the get");
        }
        Scenario::Scan => {
            let r = db.default_keyspace().scan(None, None, usize::MAX);
            case.assert_fired();
            case.expect_io(r, "the scan");
        }
        _ => {
            let errs = db.verify();
            case.assert_fired();
            assert_eq!(errs.len(), 1, "{}: verify returned {errs:?}", case.label);
            assert!(
                matches!(errs[0].1, Error::Io { .. }),
                "{}: verify returned {errs:?}",
                case.label
            );
        }
    }
    // A failed read does not make the database read-only.
    assert!(db.stats().background_error.is_none(), "{}", case.label);
    case.vfs.clear_faults();
    case.put_range(&db, &mut model, 500..510, 1);
    case.check(&db, &model, "after the failed read");
    assert!(db.verify().is_empty(), "{}", case.label);
    drop(db);
    let db = case.reopen();
    case.after_reopen(&db, &mut model);
}

fn close_case(case: &Case) {
    let db = case.open();
    let mut model = Model::new();
    case.put_range(&db, &mut model, 0..50, 0);
    case.arm();
    db.close()
        .unwrap_or_else(|e| panic!("{}: close: {e}", case.label));
    case.assert_fired();
    let db = case.reopen();
    case.after_reopen(&db, &mut model);
}

/// Runs every case of the sites whose scenario belongs to `test`.
fn run_sites(test: &str) {
    count_background_panics();
    let sites: Vec<Site> = sites()
        .into_iter()
        .filter(|s| s.scenario.test_name() == test)
        .collect();
    assert!(!sites.is_empty(), "no site for {test}");
    let mut failed = Vec::new();
    let mut cases = 0;
    for s in &sites {
        for kind in s.kinds() {
            cases += 1;
            let label = format!("{} {:?} {} nth {} {kind:?}", s.at, s.op, s.what, s.nth);
            if std::panic::catch_unwind(|| run_case(*s, kind)).is_err() {
                failed.push(label);
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {cases} cases failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
    assert_eq!(
        BACKGROUND_PANICS.load(Ordering::SeqCst),
        0,
        "a background thread panicked"
    );
}

#[test]
fn write_path_sites() {
    run_sites("write_path_sites");
}

#[test]
fn flush_sites() {
    run_sites("flush_sites");
}

#[test]
fn manifest_sites() {
    run_sites("manifest_sites");
}

#[test]
fn compaction_sites() {
    run_sites("compaction_sites");
}

#[test]
fn open_sites() {
    run_sites("open_sites");
}

#[test]
fn salvage_sites() {
    run_sites("salvage_sites");
}

#[test]
fn read_sites() {
    run_sites("read_sites");
}

#[test]
fn close_sites() {
    run_sites("close_sites");
}

// ---------------------------------------------------------------------------
// The list itself
// ---------------------------------------------------------------------------

#[test]
fn stack_specs_match_innermost_frames_in_order() {
    let f: Vec<String> = [
        "strata::sst::builder::write_block",
        "strata::sst::builder::TableBuilder::flush_data_block",
        "strata::sst::builder::TableBuilder::finish",
        "strata::db::finish_table",
        "strata::db::build_table",
        "strata::db::DbInner::flush_memtable",
        "strata::db::DbInner::flush_loop",
    ]
    .map(String::from)
    .to_vec();
    assert!(stack_matches(&f, &["write_block"]));
    assert!(stack_matches(
        &f,
        &["write_block", "TableBuilder::flush_data_block", "..", FLUSH]
    ));
    assert!(stack_matches(
        &f,
        &["write_block", "..", "build_table", FLUSH]
    ));
    // The first name must be the innermost frame, and names without ".."
    // between them must be adjacent.
    assert!(!stack_matches(&f, &["TableBuilder::finish"]));
    assert!(!stack_matches(&f, &["write_block", "TableBuilder::finish"]));
    assert!(!stack_matches(&f, &["write_block", "..", OPEN]));
    // A name matches a whole path segment, not a prefix of one.
    assert!(!stack_matches(&f, &["block"]));
    assert!(!stack_matches(
        &["strata::db::DbInner::open_keyspace".to_string()],
        &[OPEN]
    ));
}

#[test]
fn site_list_is_consistent() {
    let all = sites();
    let mut seen = BTreeSet::new();
    for s in &all {
        assert!(!s.kinds().is_empty());
        assert!(!s.frames.is_empty() && s.frames[0] != "..", "{s:?}");
        let key = format!(
            "{:?} {} {:?} {} {:?}",
            s.op, s.path, s.frames, s.nth, s.scenario
        );
        assert!(seen.insert(key), "site listed twice: {s:?}");
    }
    // Every operation of the Vfs and its files has sites, except
    // `file_size`, which the engine never calls (checked by
    // `every_engine_call_of_a_full_workload_is_a_listed_site`).
    let ops: BTreeSet<String> = all.iter().map(|s| format!("{:?}", s.op)).collect();
    for op in [
        Create, Open, Read, Append, Flush, Sync, Rename, Remove, List, SyncDir, Lock, CreateDir,
    ] {
        assert!(ops.contains(&format!("{op:?}")), "no site for {op:?}");
    }
}

/// Runs a workload touching every engine feature with I/O (writes with and
/// without sync, keyspace creation, manifest rollover, flushes, compaction,
/// reads, verify, close, recovery, salvage) and records the engine frames
/// of every VFS call; each call must be one of the listed sites, so a new
/// call site cannot go unlisted (and untested).
/// A recorded VFS call: op, paths, engine frames.
type Call = (VfsOp, Vec<String>, Vec<String>);

#[test]
fn every_engine_call_of_a_full_workload_is_a_listed_site() {
    let vfs = MemVfs::new();
    let calls: Arc<Mutex<Vec<Call>>> = Arc::default();
    let rec = Arc::clone(&calls);
    vfs.set_fault(FaultRule::new(FaultKind::IoError).when(move |op, paths| {
        let paths = paths.iter().map(|p| p.display().to_string()).collect();
        let frames = engine_frames();
        rec.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((op, paths, frames));
        false
    }));
    let o = Options {
        max_manifest_bytes: 1,
        ..base_options(&vfs)
    };

    let db = Db::open(DIR, o.clone()).expect("create");
    let ks = db.default_keyspace();
    let sync = WriteOptions {
        sync: true,
        ..Default::default()
    };
    for i in 0..100 {
        ks.put(&key(i), &value(i, 0)).expect("put");
    }
    ks.put_opt(sync, b"synced", b"yes").expect("sync put");
    let extra = db
        .keyspace("extra", KeyspaceOptions::default())
        .expect("keyspace");
    // A switch by another keyspace's flush, then a synced write: the log
    // closed at the switch is fsynced first.
    extra.put(b"e", b"1").expect("put");
    extra.flush().expect("flush extra");
    ks.put_opt(sync, b"synced2", b"yes").expect("sync put");
    db.flush().expect("flush");
    for round in 1..3 {
        for i in 0..100 {
            ks.put(&key(i), &value(i, round)).expect("put");
        }
        db.flush().expect("flush");
    }
    assert_eq!(db.get(&key(5)).expect("get"), Some(value(5, 2)));
    assert_eq!(ks.scan(None, None, usize::MAX).expect("scan").len(), 102);
    assert!(db.verify().is_empty());
    db.compact().expect("compact");
    for i in 100..200 {
        ks.put(&key(i), &value(i, 0)).expect("put");
    }
    drop(ks);
    db.close().expect("close");
    let db = Db::open(DIR, o.clone()).expect("reopen");
    db.put(b"second", b"table").expect("put");
    db.flush().expect("flush");
    db.close().expect("close");
    // Damage the newest table, then open in salvage mode.
    let fs = vfs.mem_fs();
    let newest = fs
        .list(Path::new(DIR))
        .expect("list")
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .max()
        .expect("a table");
    let bad = Path::new(DIR).join(newest);
    let mut bytes = fs.read_all(&bad).expect("read");
    bytes[3] ^= 1;
    fs.remove(&bad).expect("remove");
    let mut f = fs.create(&bad).expect("rewrite");
    f.append(&bytes).expect("append");
    f.sync().expect("sync");
    let mut salvage = o.clone();
    salvage.skip_corrupt_tables = true;
    let db = Db::open(DIR, salvage).expect("salvage open");
    assert_eq!(db.recovery_report().lost_tables.len(), 1);
    drop(db);
    vfs.clear_faults();

    let calls = std::mem::take(&mut *calls.lock().unwrap_or_else(|e| e.into_inner()));
    assert!(calls.len() > 500, "only {} calls recorded", calls.len());
    assert_eq!(
        vfs.op_count(VfsOp::FileSize),
        0,
        "the engine calls file_size"
    );
    let all = sites();
    let mut unlisted = BTreeSet::new();
    let mut used = BTreeSet::new();
    for (op, paths, frames) in &calls {
        let hit = all.iter().position(|s| {
            s.op == *op
                && paths.iter().any(|p| p.contains(s.path))
                && stack_matches(frames, s.frames)
        });
        match hit {
            Some(i) => {
                used.insert(i);
            }
            None => {
                unlisted.insert(format!("{op:?} {paths:?} from {frames:?}"));
            }
        }
    }
    assert!(
        unlisted.is_empty(),
        "engine I/O calls that no site lists:\n{}",
        unlisted.into_iter().collect::<Vec<_>>().join("\n")
    );
    // The workload reaches most sites without faults (the rest are only
    // reached after a failure, e.g. removing a partly written table).
    assert!(
        used.len() * 10 >= all.len() * 8,
        "{} of {}",
        used.len(),
        all.len()
    );
}

// ---------------------------------------------------------------------------
// Regression tests for the engine bugs these cases found
// ---------------------------------------------------------------------------

/// Three level-0 tables, compactions only on request.
fn three_tables(vfs: &MemVfs) -> (Db, Options) {
    let o = base_options(vfs);
    let db = Db::open(DIR, o.clone()).expect("open");
    for round in 0..3 {
        for i in 0..300 {
            db.put(&key(i), &value(i, round)).expect("put");
        }
        db.flush().expect("flush");
    }
    (db, o)
}

fn table_names(vfs: &MemVfs) -> Vec<String> {
    vfs.mem_fs()
        .list(Path::new(DIR))
        .expect("list")
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .collect()
}

/// Bug: when the manifest fsync failed after a compaction's edit was
/// appended, the compaction deleted its outputs although the manifest (whose
/// bytes usually reach the disk anyway) named them, and the inputs it
/// dropped: the database no longer opened ("table file named by the manifest
/// is missing"). The outputs now stay until the next open decides.
#[test]
fn failed_manifest_fsync_after_a_compaction_edit_keeps_the_database_openable() {
    let vfs = MemVfs::new();
    let (db, o) = three_tables(&vfs);
    vfs.set_fault(
        FaultRule::new(FaultKind::IoError)
            .op(VfsOp::Sync)
            .path_contains("MANIFEST")
            .count(1),
    );
    assert!(matches!(db.compact(), Err(Error::Io { .. })));
    assert_eq!(vfs.injected_count(VfsOp::Sync), 1);
    assert!(matches!(db.put(b"x", b"y"), Err(Error::ReadOnly { .. })));
    drop(db);
    vfs.clear_faults();
    let db = Db::open(DIR, o).expect("reopen after a failed manifest fsync");
    for i in 0..300 {
        assert_eq!(db.get(&key(i)).expect("get"), Some(value(i, 2)), "key {i}");
    }
    // The edit was in the manifest: the compaction's output is the tree.
    assert_eq!(table_names(&vfs).len(), 1);
    assert_eq!(db.stats().keyspaces[0].levels[1].0, 1);
}

/// Bug: a compaction output whose finishing write (index, footer, flush or
/// fsync) failed was not removed with the other partial outputs; on a full
/// disk it kept its space until the next open.
#[test]
fn compaction_output_that_fails_to_finish_is_removed_at_once() {
    let vfs = MemVfs::new();
    let (db, o) = three_tables(&vfs);
    let before = table_names(&vfs);
    vfs.set_fault(
        FaultRule::new(FaultKind::NoSpace)
            .op(VfsOp::Sync)
            .path_contains(".sst")
            .count(1),
    );
    assert!(db.compact().is_err());
    assert_eq!(vfs.injected_count(VfsOp::Sync), 1);
    assert_eq!(table_names(&vfs), before, "partial output left behind");
    drop(db);
    vfs.clear_faults();
    let db = Db::open(DIR, o).expect("reopen");
    for i in 0..300 {
        assert_eq!(db.get(&key(i)).expect("get"), Some(value(i, 2)), "key {i}");
    }
}

// ---------------------------------------------------------------------------
// The table in docs/RELIABILITY.md
// ---------------------------------------------------------------------------

fn outcome(s: &Site) -> String {
    let cleanup = |c: Cleanup| match c {
        Cleanup::AtOnce => "; the partial table is removed at once",
        Cleanup::AtReopen => "",
    };
    match (s.scenario, s.expect) {
        (_, Expect::Ignored { leftover: true }) => {
            "ignored: the operation succeeds; the file is removed at the next open".into()
        }
        (_, Expect::Ignored { leftover: false }) => {
            "ignored: close succeeds; reopen loses nothing".into()
        }
        (Put { .. }, _) => {
            let torn = if s.op == Append {
                "; the torn record is dropped at reopen"
            } else {
                ""
            };
            format!("the write fails (I/O error), then `ReadOnly` until reopen{torn}")
        }
        (FlushJob | Roll | FlushBesideUnflushed, Expect::Fails(c)) => format!(
            "`flush` fails, then `ReadOnly` until reopen; reads see the previous state{}",
            cleanup(c)
        ),
        (NewKeyspace, _) => "keyspace creation fails (I/O error), then `ReadOnly` until reopen".into(),
        (Compact, Expect::Fails(c)) if s.frames.contains(&"DbInner::log_edit") => format!(
            "`compact` fails, then `ReadOnly` until reopen; reads see the previous state{}",
            cleanup(c)
        ),
        (Compact, Expect::Fails(c)) => format!(
            "`compact` fails (I/O error) and is retried later; writes go on; reads see the previous state{}",
            cleanup(c)
        ),
        (Reopen | CreateDb, Expect::Fails(c)) => {
            format!("open fails (I/O error){}", cleanup(c))
        }
        (Salvage, _) => {
            "open fails (I/O error, not taken for damage); the next open sets aside only the corrupt table".into()
        }
        (Get | Scan | Verify, _) => {
            "that read fails (I/O error); the database stays writable".into()
        }
        (Close, _) => unreachable!("close sites are ignored"),
    }
}

fn doc_row(s: &Site) -> String {
    let kinds: Vec<&str> = s
        .kinds()
        .iter()
        .map(|k| match k {
            FaultKind::ShortWrite => "short write",
            FaultKind::NoSpace => "ENOSPC",
            FaultKind::IoError => "I/O error",
        })
        .collect();
    let mut test = format!("`fault_sites::{}`", s.scenario.test_name());
    if !s.also.is_empty() {
        test.push_str(&format!(", `{}`", s.also));
    }
    format!(
        "| `{}` | {:?} `{}`: {} | {} | {} | {} |",
        s.at,
        s.op,
        s.path,
        s.what,
        kinds.join(", "),
        outcome(s),
        test
    )
}

/// docs/RELIABILITY.md lists every site with the test that fails it.
/// `FAULT_SITES_PRINT=1` prints the rows.
#[test]
fn site_table_in_reliability_doc() {
    let rows: Vec<String> = sites().iter().map(doc_row).collect();
    if std::env::var_os("FAULT_SITES_PRINT").is_some() {
        println!("{}", rows.join("\n"));
    }
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/RELIABILITY.md");
    let doc = std::fs::read_to_string(&doc_path).expect("read docs/RELIABILITY.md");
    let missing: Vec<&String> = rows.iter().filter(|r| !doc.contains(r.as_str())).collect();
    assert!(
        missing.is_empty(),
        "{} of {} site rows missing from docs/RELIABILITY.md (FAULT_SITES_PRINT=1 prints them):\n{}",
        missing.len(),
        rows.len(),
        missing
            .iter()
            .map(|r| r.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}
