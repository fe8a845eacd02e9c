//! The layout seam carries column groups (issue 19): a keyspace whose
//! layout splits each value into two groups from level 1 on, one of them
//! in a second table format written only here, is read, compacted and
//! recovered like any other, with partial updates (merge operands) and
//! deletes on top.
//!
//! Values are rows `a=<text>;b=<text>` (either column may be missing). The
//! test format, `plain`, keeps only its group's column of each value; from
//! level 3 on, group `b` is stored in the core's own format instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::iter::InternalIterator;
use strata::key::{ValueKind, compare_internal, parse_internal_key};
use strata::layout::{GroupPlan, GroupSpec, Layout};
use strata::log::{LogReader, TailPolicy};
use strata::manifest::{TableFile, VersionEdit};
use strata::merge::MergeOperator;
use strata::sst::{TableBuilderOptions, TableSummary};
use strata::table_format::{
    GroupId, OpenContext, SstFormat, TableFormat, TableSource, TableWriter, WriterContext,
};
use strata::vfs::{RandomAccessFile, StdVfs, WritableFile};
use strata::{Db, KeyspaceOptions, Level, Options, ReadOptions};
use strata::{Error, Result};

// ----- rows -------------------------------------------------------------

type Row = BTreeMap<String, String>;

fn parse_row(v: &[u8]) -> Row {
    String::from_utf8_lossy(v)
        .split(';')
        .filter_map(|c| c.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn encode_row(r: &Row) -> Vec<u8> {
    r.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(";")
        .into_bytes()
}

/// Operands set the columns they name; newer ones win.
struct SetColumns;

impl MergeOperator for SetColumns {
    fn name(&self) -> &str {
        "test.set-columns"
    }
    fn merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> std::result::Result<Vec<u8>, String> {
        let mut row = existing.map(parse_row).unwrap_or_default();
        for op in operands {
            row.extend(parse_row(op));
        }
        Ok(encode_row(&row))
    }
}

// ----- the `plain` format -------------------------------------------------

const MAGIC: &[u8; 8] = b"PLAINTBL";

/// Writes `[u32 key len][key][u32 value len][value]` per entry, then a
/// footer: entry count (u64), group (u32), CRC-32C of all before (u32),
/// magic. Keeps only the column of its group (`a` for group 1, `b` for 2).
struct PlainFormat;

fn column_of(group: GroupId) -> &'static str {
    if group == GroupId(1) { "a" } else { "b" }
}

struct PlainWriter {
    file: Box<dyn WritableFile>,
    column: &'static str,
    group: GroupId,
    buf: Vec<u8>,
    summary: TableSummary,
}

impl TableFormat for PlainFormat {
    fn name(&self) -> &str {
        "plain"
    }
    fn writer(
        &self,
        file: Box<dyn WritableFile>,
        _path: PathBuf,
        ctx: &WriterContext<'_>,
    ) -> Result<Box<dyn TableWriter>> {
        Ok(Box::new(PlainWriter {
            file,
            column: column_of(ctx.group),
            group: ctx.group,
            buf: Vec::new(),
            summary: TableSummary {
                file_size: 0,
                num_entries: 0,
                num_deletions: 0,
                smallest: Vec::new(),
                largest: Vec::new(),
                smallest_seqno: strata::SeqNo(u64::MAX),
                largest_seqno: strata::SeqNo::ZERO,
            },
        }))
    }
    fn open(
        &self,
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        _ctx: &OpenContext,
    ) -> Result<Arc<dyn TableSource>> {
        let mut data = vec![0u8; file.len() as usize];
        file.read_exact_at(&mut data, 0)?;
        let bad = |why: &str| Error::corruption(&path, 0, why.to_string());
        if data.len() < 24 || &data[data.len() - 8..] != MAGIC {
            return Err(bad("not a plain table"));
        }
        let f = data.len() - 24;
        let count = u64::from_le_bytes(data[f..f + 8].try_into().expect("8"));
        let crc = u32::from_le_bytes(data[f + 12..f + 16].try_into().expect("4"));
        if crc32c::crc32c(&data[..f + 12]) != crc {
            return Err(bad("checksum mismatch"));
        }
        let mut entries = Vec::new();
        let mut p = 0;
        let take = |p: &mut usize| -> Option<Vec<u8>> {
            let n = u32::from_le_bytes(data.get(*p..*p + 4)?.try_into().ok()?) as usize;
            let v = data.get(*p + 4..*p + 4 + n)?.to_vec();
            *p += 4 + n;
            Some(v)
        };
        while p < f {
            let k = take(&mut p).ok_or_else(|| bad("truncated key"))?;
            let v = take(&mut p).ok_or_else(|| bad("truncated value"))?;
            entries.push((k, v));
        }
        if entries.len() as u64 != count {
            return Err(bad("entry count mismatch"));
        }
        Ok(Arc::new(PlainTable { entries }))
    }
}

impl TableWriter for PlainWriter {
    fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let p = parse_internal_key(ikey).expect("internal key");
        let value = match p.kind {
            ValueKind::Delete => Vec::new(),
            _ => {
                let mut row = parse_row(value);
                row.retain(|k, _| k == self.column);
                encode_row(&row)
            }
        };
        for part in [ikey, &value[..]] {
            self.buf
                .extend_from_slice(&(part.len() as u32).to_le_bytes());
            self.buf.extend_from_slice(part);
        }
        let s = &mut self.summary;
        if s.num_entries == 0 {
            s.smallest = ikey.to_vec();
        }
        s.largest = ikey.to_vec();
        s.num_entries += 1;
        s.num_deletions += u64::from(p.kind == ValueKind::Delete);
        s.smallest_seqno = s.smallest_seqno.min(p.seqno);
        s.largest_seqno = s.largest_seqno.max(p.seqno);
        Ok(())
    }
    fn num_entries(&self) -> u64 {
        self.summary.num_entries
    }
    fn estimated_file_size(&self) -> u64 {
        self.buf.len() as u64 + 24
    }
    fn finish(mut self: Box<Self>) -> Result<TableSummary> {
        let n = self.summary.num_entries;
        self.buf.extend_from_slice(&n.to_le_bytes());
        self.buf.extend_from_slice(&self.group.0.to_le_bytes());
        let crc = crc32c::crc32c(&self.buf);
        self.buf.extend_from_slice(&crc.to_le_bytes());
        self.buf.extend_from_slice(MAGIC);
        self.file.append(&self.buf)?;
        self.file.sync()?;
        self.summary.file_size = self.buf.len() as u64;
        Ok(self.summary.clone())
    }
}

struct PlainTable {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
}

impl PlainTable {
    fn lower_bound(&self, target: &[u8]) -> usize {
        self.entries
            .partition_point(|(k, _)| compare_internal(k, target) == std::cmp::Ordering::Less)
    }
}

impl TableSource for PlainTable {
    fn get(
        &self,
        user_key: &[u8],
        seek_key: &[u8],
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<bool> {
        for (k, v) in &self.entries[self.lower_bound(seek_key)..] {
            if parse_internal_key(k).map(|p| p.user_key) != Some(user_key) || !f(k, v) {
                break;
            }
        }
        Ok(true)
    }
    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
        let end = self.entries.len();
        Box::new(PlainIter {
            table: self,
            pos: end,
        })
    }
    fn may_contain(&self, _user_key: &[u8]) -> bool {
        true
    }
    fn verify(&self) -> Result<()> {
        Ok(())
    }
}

struct PlainIter {
    table: Arc<PlainTable>,
    pos: usize,
}

impl InternalIterator for PlainIter {
    fn valid(&self) -> bool {
        self.pos < self.table.entries.len()
    }
    fn seek_to_first(&mut self) {
        self.pos = 0;
    }
    fn seek_to_last(&mut self) {
        self.pos = self
            .table
            .entries
            .len()
            .checked_sub(1)
            .unwrap_or(usize::MAX);
    }
    fn seek(&mut self, target: &[u8]) {
        self.pos = self.table.lower_bound(target);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let n = self.table.entries.len();
        let lb = self.table.lower_bound(target);
        self.pos = if lb < n && self.table.entries[lb].0 == target {
            lb
        } else {
            lb.checked_sub(1).unwrap_or(usize::MAX)
        };
    }
    fn next(&mut self) {
        self.pos += 1;
    }
    fn prev(&mut self) {
        self.pos = self.pos.checked_sub(1).unwrap_or(usize::MAX);
    }
    fn key(&self) -> &[u8] {
        &self.table.entries[self.pos].0
    }
    fn value(&self) -> &[u8] {
        &self.table.entries[self.pos].1
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

// ----- the layout -----------------------------------------------------------

/// Level 0 whole rows; from level 1 on, group 1 (column `a`, plain) and
/// group 2 (column `b`: plain on levels 1-2, the core's format below).
struct SplitLayout;

impl Layout for SplitLayout {
    fn name(&self) -> &str {
        "test-split"
    }
    fn table_options(&self, _level: Level, base: &TableBuilderOptions) -> TableBuilderOptions {
        base.clone()
    }
    fn groups(&self, level: Level) -> Vec<GroupSpec> {
        if level == Level::ZERO {
            return vec![GroupSpec::whole()];
        }
        let parent = |g: u32| {
            if level == Level(1) {
                GroupId::WHOLE
            } else {
                GroupId(g)
            }
        };
        let b_format: Arc<dyn TableFormat> = if level >= Level(3) {
            Arc::new(SstFormat)
        } else {
            Arc::new(PlainFormat)
        };
        vec![
            GroupSpec {
                id: GroupId(1),
                parent: parent(1),
                weight: 1,
                format: Arc::new(PlainFormat),
            },
            GroupSpec {
                id: GroupId(2),
                parent: parent(2),
                weight: 1,
                format: b_format,
            },
        ]
    }
    /// Column `a` from the first lineage, `b` from the second.
    fn stitch(
        &self,
        _key: &[u8],
        parts: &[Option<&[u8]>],
    ) -> std::result::Result<Option<Vec<u8>>, String> {
        if parts.iter().all(Option::is_none) {
            return Ok(None);
        }
        let mut row = Row::new();
        for (part, column) in parts.iter().zip(["a", "b"]) {
            if let Some(v) = part.and_then(|p| parse_row(p).remove(column)) {
                row.insert(column.to_string(), v);
            }
        }
        Ok(Some(encode_row(&row)))
    }
}

fn rows_options() -> KeyspaceOptions {
    KeyspaceOptions {
        write_buffer_size: 16 << 10,
        level1_max_bytes: 4 << 10,
        target_file_size: 4 << 10,
        level0_compaction_trigger: 2,
        size_ratio: 4,
        num_levels: 5,
        merge_operator: Some(Arc::new(SetColumns)),
        layout: Arc::new(SplitLayout),
        ..KeyspaceOptions::default()
    }
}

// ----- helpers ------------------------------------------------------------

/// The live files of keyspace `id`, read from the manifest CURRENT names.
fn live_files(dir: &Path, id: strata::KeyspaceId) -> BTreeMap<u64, (Level, TableFile)> {
    let name = std::fs::read_to_string(dir.join("CURRENT")).expect("CURRENT");
    let mut reader =
        LogReader::open(&StdVfs, &dir.join(name.trim_end()), TailPolicy::Strict).expect("open");
    let mut files = BTreeMap::new();
    while let Some(rec) = reader.next_record().expect("record") {
        let e = VersionEdit::decode(&rec).expect("edit");
        for (ks, _, n) in &e.deleted_files {
            if *ks == id {
                files.remove(&n.get());
            }
        }
        for f in e.new_files {
            if f.keyspace == id {
                files.insert(f.number.get(), (f.level, f.file));
            }
        }
    }
    files
}

fn key(i: u32) -> Vec<u8> {
    format!("row{i:05}").into_bytes()
}

/// Writes rows, partial updates and deletes, mirrored in `model`.
fn write_round(ks: &strata::Keyspace, model: &mut BTreeMap<Vec<u8>, Row>, round: u32) {
    for i in 0..1500u32 {
        let k = key((i * 7 + round * 13) % 1200);
        match (i + round) % 10 {
            0..=5 => {
                let row: Row = [
                    ("a".to_string(), format!("{round}.{i}")),
                    ("b".to_string(), format!("{}", i * 31 + round)),
                ]
                .into();
                ks.put(&k, &encode_row(&row)).expect("put");
                model.insert(k, row);
            }
            6 | 7 => {
                let col = if i % 2 == 0 { "a" } else { "b" };
                let op: Row = [(col.to_string(), format!("m{round}.{i}"))].into();
                ks.merge(&k, &encode_row(&op)).expect("merge");
                model.entry(k).or_default().extend(op);
            }
            _ => {
                ks.delete(&k).expect("delete");
                model.remove(&k);
            }
        }
    }
}

/// Every key by point read, and the whole keyspace by forward and backward
/// scans, against the model.
fn check(ks: &strata::Keyspace, model: &BTreeMap<Vec<u8>, Row>) {
    for i in 0..1200u32 {
        let k = key(i);
        let got = ks.get(&k).expect("get").map(|v| parse_row(&v));
        assert_eq!(
            got.as_ref(),
            model.get(&k),
            "get {}",
            String::from_utf8_lossy(&k)
        );
    }
    let want: Vec<(Vec<u8>, Row)> = model.iter().map(|(k, r)| (k.clone(), r.clone())).collect();
    let mut it = ks.iter(ReadOptions::default()).expect("iter");
    it.seek_to_first();
    let mut forward = Vec::new();
    while it.valid() {
        forward.push((it.key().to_vec(), parse_row(it.value())));
        it.next();
    }
    it.status().expect("scan");
    assert_eq!(forward.len(), want.len(), "forward scan length");
    assert!(forward == want, "forward scan differs from the model");
    it.seek_to_last();
    let mut backward = Vec::new();
    while it.valid() {
        backward.push((it.key().to_vec(), parse_row(it.value())));
        it.prev();
    }
    it.status().expect("scan");
    backward.reverse();
    assert!(backward == want, "backward scan differs from the model");
    // A seek into the middle, then both directions from there.
    let mid = key(600);
    it.seek(&mid);
    let first = model.range(mid.clone()..).next().map(|(k, _)| k.clone());
    assert_eq!(it.valid().then(|| it.key().to_vec()), first);
    if it.valid() {
        it.prev();
        let before = model.range(..mid).next_back().map(|(k, _)| k.clone());
        assert_eq!(it.valid().then(|| it.key().to_vec()), before);
    }
}

// ----- the tests ------------------------------------------------------------

#[test]
fn the_plan_refuses_a_layout_that_breaks_containment() {
    struct Orphan;
    impl Layout for Orphan {
        fn name(&self) -> &str {
            "orphan"
        }
        fn table_options(&self, _l: Level, b: &TableBuilderOptions) -> TableBuilderOptions {
            b.clone()
        }
        fn groups(&self, level: Level) -> Vec<GroupSpec> {
            let mut g = GroupSpec::whole();
            if level == Level(2) {
                g.parent = GroupId(9);
            }
            vec![g]
        }
    }
    match GroupPlan::new(&Orphan, 4) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("parent g9"), "{m}"),
        Err(e) => panic!("expected InvalidArgument, got {e}"),
        Ok(_) => panic!("a group without its parent must be refused"),
    }
    let plan = GroupPlan::new(&SplitLayout, 5).expect("plan");
    assert_eq!(plan.lineages().len(), 2);
    assert_eq!(plan.lineage_group(1, Level(4)), GroupId(2));
    assert_eq!(plan.lineage_group(1, Level::ZERO), GroupId::WHOLE);
}

#[test]
fn two_groups_per_level_are_read_compacted_and_recovered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut model: BTreeMap<Vec<u8>, Row> = BTreeMap::new();
    let id = {
        let db = Db::open(dir.path(), Options::default()).expect("open");
        let rows = db.keyspace("rows", rows_options()).expect("keyspace");
        for round in 0..6 {
            write_round(&rows, &mut model, round);
            check(&rows, &model);
        }
        db.wait_for_background_work().expect("background");
        check(&rows, &model);
        rows.compact_range(None, None).expect("compact");
        check(&rows, &model);
        // More on top, some of it only in the log when the database closes.
        write_round(&rows, &mut model, 6);
        let id = rows.id();
        db.close().expect("close");
        id
    };

    // What the manifest holds: both groups on deeper levels, in the
    // formats the layout gives them, and whole rows on level 0 only.
    let files = live_files(dir.path(), id);
    let mut seen = BTreeMap::new();
    for (n, (level, f)) in &files {
        if *level == Level::ZERO {
            assert_eq!(f.group, GroupId::WHOLE, "table {n}");
            assert_eq!(f.format, "", "table {n}");
            continue;
        }
        let want = if f.group == GroupId(2) && *level >= Level(3) {
            ""
        } else {
            "plain"
        };
        assert_eq!(
            f.format, want,
            "table {n}: group {} on level {level}",
            f.group
        );
        *seen.entry((f.group, f.format.clone())).or_insert(0) += 1;
        // A plain file of a group holds that group's column only.
        if f.format == "plain" {
            let bytes = std::fs::read(dir.path().join(format!("{n:06}.sst"))).expect("read");
            let other = if f.group == GroupId(1) { "b=" } else { "a=" };
            assert!(
                !bytes.windows(2).any(|w| w == other.as_bytes()),
                "table {n} of group {} holds another group's column",
                f.group
            );
        }
    }
    for g in [
        (GroupId(1), "plain"),
        (GroupId(2), "plain"),
        (GroupId(2), ""),
    ] {
        assert!(
            seen.contains_key(&(g.0, g.1.to_string())),
            "no file of {g:?}: {seen:?}"
        );
    }

    // Recovery: the manifest's files and the log's tail come back.
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    let rows = db.keyspace("rows", rows_options()).expect("register");
    check(&rows, &model);
    write_round(&rows, &mut model, 7);
    rows.compact_range(None, None).expect("compact");
    check(&rows, &model);
    assert!(db.verify().is_empty(), "verify: {:?}", db.verify());
}

#[test]
fn files_of_a_plugged_in_format_wait_for_their_keyspace_to_be_registered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut model: BTreeMap<Vec<u8>, Row> = BTreeMap::new();
    let id = {
        let db = Db::open(dir.path(), Options::default()).expect("open");
        let rows = db.keyspace("rows", rows_options()).expect("keyspace");
        for round in 0..3 {
            write_round(&rows, &mut model, round);
        }
        rows.compact_range(None, None).expect("compact");
        write_round(&rows, &mut model, 3);
        let id = rows.id();
        db.close().expect("close");
        id
    };
    let before = live_files(dir.path(), id);
    assert!(before.values().any(|(_, f)| f.format == "plain"));

    // Without the layout, the database opens; the keyspace's plain files
    // stay unopened and untouched while other work runs.
    {
        let db = Db::open(dir.path(), Options::default()).expect("reopen");
        for i in 0..3000u32 {
            db.put(format!("d{i:05}").as_bytes(), &[b'x'; 40])
                .expect("put");
        }
        db.flush().expect("flush");
        db.wait_for_background_work().expect("background");
        assert_eq!(live_files(dir.path(), id), before);
        db.close().expect("close");
    }

    // A layout that does not supply the format is refused at registration.
    let db = Db::open(dir.path(), Options::default()).expect("reopen");
    let wrong = KeyspaceOptions {
        layout: Arc::new(strata::options::UniformLayout),
        ..rows_options()
    };
    assert!(matches!(
        db.keyspace("rows", wrong),
        Err(Error::InvalidArgument(_))
    ));
    let rows = db.keyspace("rows", rows_options()).expect("register");
    check(&rows, &model);
    write_round(&rows, &mut model, 4);
    db.wait_for_background_work().expect("background");
    check(&rows, &model);
}
