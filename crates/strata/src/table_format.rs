//! Pluggable table formats: how one sorted run's files are written and read.
//!
//! The core writes and reads table files only through these traits. Its own
//! block-based format ([`SstFormat`], `docs/format/sst.md`) is one
//! implementation; the table layer adds columnar ones by handing a
//! [`crate::layout::Layout`] whose column groups name them. A format sees every
//! entry of the run it writes (internal key, value) and decides what of the
//! value it stores: a column-group format keeps its group's columns.
//!
//! A file's format is recorded with it in the manifest, so a file keeps
//! being read with the format that wrote it after a layout changes.
//!
//! Reads of the core's own format do not go through a virtual call per
//! step: `TableHandle` and `TableHandleIter` dispatch on an enum whose
//! first arm is the concrete reader (the `kv` suite's scans step through
//! millions of entries; a second indirection per step was measurable in
//! the merge loop).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cache::BlockCache;
use crate::error::{Error, Result};
use crate::ids::{FileNumber, Level};
use crate::iter::InternalIterator;
use crate::sst::{TableBuilder, TableBuilderOptions, TableIter, TableReader, TableSummary};
use crate::stats::Statistics;
use crate::vfs::{RandomAccessFile, WritableFile};

/// The name under which the core's own format is recorded (an empty name in
/// an older manifest means the same).
pub const SST_FORMAT: &str = "sst";

/// A column group's id within a keyspace's layout. Group 0 is the whole
/// value: the only group of level 0 and of every level of a plain
/// key-value keyspace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupId(pub u32);

impl GroupId {
    /// The whole-value group.
    pub const WHOLE: GroupId = GroupId(0);
}

impl fmt::Display for GroupId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "g{}", self.0)
    }
}

/// What a writer is told about the file it writes.
pub struct WriterContext<'a> {
    /// The keyspace's table options for this level (block size, filter,
    /// compression), as its layout adjusted them.
    pub options: &'a TableBuilderOptions,
    /// The level the file is written to.
    pub level: Level,
    /// The column group the file belongs to.
    pub group: GroupId,
    /// The database that owns the file (recorded by formats that can, so
    /// recovery can tell the engine's files from look-alikes).
    pub owner_db_id: &'a [u8],
    /// The file's number.
    pub file_number: FileNumber,
    /// Counters shared with the database.
    pub stats: &'a Arc<Statistics>,
}

/// What a reader is given when a file is opened.
pub struct OpenContext {
    /// The file's number.
    pub file_number: FileNumber,
    /// The shared block cache, if any.
    pub cache: Option<Arc<BlockCache>>,
    /// Counters shared with the database.
    pub stats: Arc<Statistics>,
}

/// A table file format.
pub trait TableFormat: Send + Sync {
    /// The name recorded with every file of this format. Stable: a file
    /// whose format name no registered format answers to cannot be read.
    fn name(&self) -> &str;
    /// Starts a file written to `file` (named `path` in errors).
    fn writer(
        &self,
        file: Box<dyn WritableFile>,
        path: PathBuf,
        ctx: &WriterContext<'_>,
    ) -> Result<Box<dyn TableWriter>>;
    /// Opens a file this format wrote.
    fn open(
        &self,
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        ctx: &OpenContext,
    ) -> Result<Arc<dyn TableSource>>;
}

impl fmt::Debug for dyn TableFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TableFormat({})", self.name())
    }
}

/// Writes one table file. Entries arrive in internal-key order, every
/// version of a user key consecutively.
pub trait TableWriter: Send {
    /// Adds an entry.
    fn add(&mut self, internal_key: &[u8], value: &[u8]) -> Result<()>;
    /// Adds an entry whose value, or some of whose columns, an input file
    /// stored as codes into its dictionaries (`value` holds the same
    /// values' bytes). A writer with dictionaries keeps the codes and
    /// remaps them when the file is finished; the default ignores them.
    fn add_coded(
        &mut self,
        internal_key: &[u8],
        value: &[u8],
        codes: crate::dict::Codes<'_>,
    ) -> Result<()> {
        let _ = codes;
        self.add(internal_key, value)
    }
    /// Entries added so far.
    fn num_entries(&self) -> u64;
    /// Bytes the file would have if finished now (output files are split
    /// on it).
    fn estimated_file_size(&self) -> u64;
    /// Completes the file, syncs it and says what it holds. The summary's
    /// keys and counts go into the manifest and must be exact. Nothing may
    /// write the file once this returns: readers may map it into memory
    /// (`Options::mmap_reads`).
    fn finish(self: Box<Self>) -> Result<TableSummary>;
}

/// A readable table file: the operations the read path, compaction and
/// verification need.
pub trait TableSource: Send + Sync {
    /// Point lookup: calls `f(internal_key, value)` for each entry at or
    /// after `seek_key` whose user key is `user_key`, in order, until `f`
    /// returns false. `Ok(false)` when a filter ruled the key out.
    fn get(
        &self,
        user_key: &[u8],
        seek_key: &[u8],
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<bool>;
    /// An iterator over every entry.
    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator>;
    /// False only if the file certainly holds no entry of `user_key`.
    fn may_contain(&self, user_key: &[u8]) -> bool;
    /// Reads the whole file and checks it; the first problem found.
    fn verify(&self) -> Result<()>;
    /// The source as `Any`, for a layer that knows the format and reads its
    /// files directly (the table layer reads column-group blocks as
    /// vectors). Default: not offered.
    fn as_any(&self) -> Option<&(dyn std::any::Any + Send + Sync)> {
        None
    }
}

/// The core's block-based format (`docs/format/sst.md`).
#[derive(Debug, Default, Clone, Copy)]
pub struct SstFormat;

impl TableFormat for SstFormat {
    fn name(&self) -> &str {
        SST_FORMAT
    }
    fn writer(
        &self,
        file: Box<dyn WritableFile>,
        path: PathBuf,
        ctx: &WriterContext<'_>,
    ) -> Result<Box<dyn TableWriter>> {
        let mut b = TableBuilder::new(file, path, ctx.options.clone());
        b.set_owner(ctx.owner_db_id, ctx.file_number.get());
        Ok(Box::new(b))
    }
    fn open(
        &self,
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        ctx: &OpenContext,
    ) -> Result<Arc<dyn TableSource>> {
        let t = TableReader::open(
            file,
            path,
            ctx.file_number.get(),
            ctx.cache.clone(),
            Arc::clone(&ctx.stats),
        )?;
        Ok(Arc::new(t))
    }
}

impl TableWriter for TableBuilder {
    fn add(&mut self, internal_key: &[u8], value: &[u8]) -> Result<()> {
        TableBuilder::add(self, internal_key, value)
    }
    fn num_entries(&self) -> u64 {
        TableBuilder::num_entries(self)
    }
    fn estimated_file_size(&self) -> u64 {
        TableBuilder::estimated_file_size(self)
    }
    fn finish(self: Box<Self>) -> Result<TableSummary> {
        TableBuilder::finish(*self)
    }
}

impl TableSource for TableReader {
    fn get(
        &self,
        user_key: &[u8],
        seek_key: &[u8],
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<bool> {
        TableReader::get(self, user_key, seek_key, f)
    }
    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
        Box::new(TableReader::iter(&self))
    }
    fn may_contain(&self, user_key: &[u8]) -> bool {
        TableReader::may_contain(self, user_key)
    }
    fn verify(&self) -> Result<()> {
        TableReader::verify(self)
    }
}

/// An open table file of a version, of whatever format.
#[derive(Clone)]
pub(crate) enum TableHandle {
    /// The core's own format, called without a virtual call.
    Sst(Arc<TableReader>),
    /// A format the keyspace's layout supplied.
    Plugin(Arc<dyn TableSource>),
    /// A file of a format not available yet: its keyspace waits for the
    /// application to register it with the layout that supplies the format.
    /// Nothing reads or compacts such a keyspace before that.
    Unopened(String),
}

impl TableHandle {
    fn unopened(format: &str) -> Error {
        Error::InvalidArgument(format!(
            "table format {format:?} is not available until the keyspace is registered \
             with a layout that supplies it"
        ))
    }

    pub(crate) fn get(
        &self,
        user_key: &[u8],
        seek_key: &[u8],
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<bool> {
        match self {
            TableHandle::Sst(t) => t.get(user_key, seek_key, f),
            TableHandle::Plugin(t) => t.get(user_key, seek_key, f),
            TableHandle::Unopened(format) => Err(Self::unopened(format)),
        }
    }

    pub(crate) fn iter(&self) -> TableHandleIter {
        self.iter_filling(true)
    }

    /// [`Self::iter`]; with `fill_cache` false, a core table's blocks read
    /// from the file are not added to the block cache
    /// ([`TableReader::iter_without_filling_cache`]). Other formats fill as
    /// they choose.
    pub(crate) fn iter_filling(&self, fill_cache: bool) -> TableHandleIter {
        match self {
            TableHandle::Sst(t) if fill_cache => TableHandleIter::Sst(t.iter()),
            TableHandle::Sst(t) => TableHandleIter::Sst(t.iter_without_filling_cache()),
            TableHandle::Plugin(t) => TableHandleIter::Plugin(Arc::clone(t).iter()),
            TableHandle::Unopened(format) => TableHandleIter::Failed(Self::unopened(format)),
        }
    }

    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        match self {
            TableHandle::Sst(t) => t.may_contain(user_key),
            TableHandle::Plugin(t) => t.may_contain(user_key),
            TableHandle::Unopened(_) => true,
        }
    }

    pub(crate) fn verify(&self) -> Result<()> {
        match self {
            TableHandle::Sst(t) => t.verify(),
            TableHandle::Plugin(t) => t.verify(),
            TableHandle::Unopened(format) => Err(Self::unopened(format)),
        }
    }

    /// Keys where the file's data can be cut, each with the bytes up to
    /// the next ([`TableReader::anchors`]); none for other formats (the
    /// table layer reads its own files' block indexes).
    pub(crate) fn anchors(
        &self,
        smallest: &[u8],
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
    ) -> Result<Vec<(Vec<u8>, u64)>> {
        match self {
            TableHandle::Sst(t) => t.anchors(smallest, lower, upper),
            _ => Ok(Vec::new()),
        }
    }

    /// The file's reader as `Any`, if its format offers it (see
    /// [`TableSource::as_any`]).
    pub(crate) fn source_any(&self) -> Option<&(dyn std::any::Any + Send + Sync)> {
        match self {
            TableHandle::Plugin(t) => t.as_any(),
            _ => None,
        }
    }

    pub(crate) fn is_opened(&self) -> bool {
        !matches!(self, TableHandle::Unopened(_))
    }
}

/// An iterator over one table file (see [`TableHandle`]). The core's own
/// iterator is held inline, as before the formats were pluggable: boxing it
/// would cost an allocation each time a scan enters a file.
#[allow(clippy::large_enum_variant)]
pub(crate) enum TableHandleIter {
    Sst(TableIter),
    Plugin(Box<dyn InternalIterator>),
    /// Never valid; reports the error.
    Failed(Error),
}

macro_rules! each {
    ($self:expr, $it:ident => $e:expr, $failed:expr) => {
        match $self {
            TableHandleIter::Sst($it) => $e,
            TableHandleIter::Plugin($it) => $e,
            TableHandleIter::Failed(_) => $failed,
        }
    };
}

impl InternalIterator for TableHandleIter {
    fn valid(&self) -> bool {
        each!(self, it => it.valid(), false)
    }
    fn seek_to_first(&mut self) {
        each!(self, it => it.seek_to_first(), ())
    }
    fn seek_to_last(&mut self) {
        each!(self, it => it.seek_to_last(), ())
    }
    fn seek(&mut self, target: &[u8]) {
        each!(self, it => it.seek(target), ())
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        each!(self, it => it.seek_for_prev(target), ())
    }
    fn next(&mut self) {
        each!(self, it => it.next(), ())
    }
    fn prev(&mut self) {
        each!(self, it => it.prev(), ())
    }
    fn key(&self) -> &[u8] {
        each!(self, it => it.key(), &[])
    }
    fn value(&self) -> &[u8] {
        each!(self, it => it.value(), &[])
    }
    fn value_code(&self) -> Option<crate::dict::CodedValue<'_>> {
        each!(self, it => it.value_code(), None)
    }
    fn column_codes(&self, f: &mut dyn FnMut(usize, crate::dict::CodedValue<'_>)) {
        each!(self, it => it.column_codes(f), ())
    }
    fn may_contain_user_key(&self, user_key: &[u8]) -> bool {
        each!(self, it => it.may_contain_user_key(user_key), true)
    }
    fn settle(&mut self) {
        each!(self, it => it.settle(), ())
    }
    fn visit_forward(&mut self, f: &mut dyn FnMut(&[u8], &[u8]) -> bool) {
        each!(self, it => it.visit_forward(f), ())
    }
    fn seek_reads(&self, target: &[u8]) -> bool {
        each!(self, it => it.seek_reads(target), false)
    }
    fn status(&self) -> Result<()> {
        match self {
            TableHandleIter::Sst(it) => it.status(),
            TableHandleIter::Plugin(it) => it.status(),
            TableHandleIter::Failed(e) => Err(e.duplicate()),
        }
    }
}

/// How cleanup at open learns which database wrote a file of one of the
/// engine's own formats: the footer that marks the format, and a decoder of
/// the owner field of its properties block. The core knows its two formats'
/// ([`CORE_OWNER_PROBES`]); the table layer hands its column-group format's
/// to the core when a database opens, since the core does not know that
/// format. A file of a format without a probe (a user's [`TableFormat`])
/// counts as unmarked, and cleanup judges it by its number alone.
pub(crate) struct OwnerProbe {
    pub footer: &'static crate::sst::format::FooterKind,
    /// The owner's database id from the raw properties block at `offset` of
    /// `path` (empty when the file records none).
    pub owner: fn(properties: &[u8], path: &Path, offset: u64) -> Result<Vec<u8>>,
}

/// The probes of the core's block-based tables and dictionary-encoded files,
/// whose properties are the same block.
pub(crate) const CORE_OWNER_PROBES: [OwnerProbe; 2] = [
    OwnerProbe {
        footer: &crate::sst::format::TABLE_FOOTER,
        owner: core_properties_owner,
    },
    OwnerProbe {
        footer: &crate::dictfile::meta::DICT_FOOTER,
        owner: core_properties_owner,
    },
];

fn core_properties_owner(properties: &[u8], path: &Path, offset: u64) -> Result<Vec<u8>> {
    Ok(crate::sst::TableProperties::decode(properties, path, offset)?.owner_db_id)
}

/// The owner a file records, read from its footer and properties block
/// only, with the probe whose footer magic the file ends with: `Ok(None)`
/// when no probe's magic matches (not a file of a format the probes know),
/// an error when the footer or properties are damaged or unreadable.
pub(crate) fn recorded_owner<'p>(
    file: &dyn RandomAccessFile,
    path: &Path,
    probes: impl IntoIterator<Item = &'p OwnerProbe>,
) -> Result<Option<(&'static str, Vec<u8>)>> {
    use crate::sst::format::{FOOTER_LEN, Footer};
    let Some(offset) = file.len().checked_sub(FOOTER_LEN as u64) else {
        return Ok(None);
    };
    let mut footer = [0u8; FOOTER_LEN];
    file.read_exact_at(&mut footer, offset)?;
    let mut magic = [0u8; 8];
    magic.copy_from_slice(&footer[FOOTER_LEN - 8..]);
    let magic = u64::from_le_bytes(magic);
    let Some(probe) = probes.into_iter().find(|p| p.footer.magic == magic) else {
        return Ok(None);
    };
    let decoded = Footer::decode_as(probe.footer, &footer, path, offset)?;
    let raw =
        crate::sst::reader::read_block_contents(file, path, decoded.properties, offset, None)?;
    let owner = (probe.owner)(&raw, path, decoded.properties.offset)?;
    Ok(Some((probe.footer.name, owner)))
}
