//! Where an open file finds one of its dictionaries: decoded at open and
//! kept when there is no block cache, else in the block cache under its
//! block's offset, so the cache's byte budget bounds dictionaries as it
//! bounds blocks. Dictionary-encoded files and column-group files (one
//! dictionary per string column) both keep theirs here.

use std::path::Path;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use crate::cache::BlockCache;
use crate::dict::Dictionary;
use crate::error::{Error, Result};
use crate::sst::format::BlockHandle;
use crate::sst::reader::read_block_contents;
use crate::stats::Statistics;
use crate::vfs::RandomAccessFile;

/// What a slot reads its dictionary from: the file and how it is cached.
pub struct SlotFile<'a> {
    /// The file.
    pub file: &'a dyn RandomAccessFile,
    /// Its path, for errors.
    pub path: &'a Path,
    /// Where its footer starts (no block lies past it).
    pub footer_offset: u64,
    /// The block cache and the file's id in it.
    pub cache: Option<&'a BlockCache>,
    pub cache_id: u64,
    /// Where loads and hits are counted.
    pub stats: &'a Statistics,
}

/// One dictionary of an open file.
pub enum DictionarySlot {
    /// Decoded at open and kept (no block cache).
    Pinned(Arc<Dictionary>),
    /// In the block cache under its block's offset; `live` finds a copy
    /// the cache evicted but a cached data block still holds, so a
    /// dictionary is never decoded twice while one copy is alive.
    Cached {
        handle: BlockHandle,
        values: u64,
        live: Mutex<Weak<Dictionary>>,
    },
}

impl DictionarySlot {
    /// The slot of the dictionary at `handle`, of `values` values: loaded
    /// now if `src` has no cache, else on first use.
    pub fn open(src: &SlotFile<'_>, handle: BlockHandle, values: u64) -> Result<DictionarySlot> {
        Ok(match src.cache {
            None => DictionarySlot::Pinned(Arc::new(load(src, handle, values)?)),
            Some(_) => DictionarySlot::Cached {
                handle,
                values,
                live: Mutex::new(Weak::new()),
            },
        })
    }

    /// The dictionary: from the cache, or read, checked, decoded and
    /// cached.
    pub fn get(&self, src: &SlotFile<'_>) -> Result<Arc<Dictionary>> {
        let (handle, values, live) = match self {
            DictionarySlot::Pinned(d) => return Ok(Arc::clone(d)),
            DictionarySlot::Cached {
                handle,
                values,
                live,
            } => (*handle, *values, live),
        };
        if let Some(d) = src
            .cache
            .and_then(|c| c.get_other(src.cache_id, handle.offset))
            .and_then(|d| d.downcast::<Dictionary>().ok())
        {
            Statistics::add(&src.stats.dictionary_cache_hits, 1);
            return Ok(d);
        }
        let mut live = live.lock();
        let d = match live.upgrade() {
            Some(d) => d,
            None => {
                let d = Arc::new(load(src, handle, values)?);
                *live = Arc::downgrade(&d);
                d
            }
        };
        if let Some(c) = src.cache {
            c.insert_other(src.cache_id, handle.offset, d.clone(), d.memory_bytes());
        }
        Ok(d)
    }
}

/// Reads, checks and decodes the dictionary block at `h` (of `values`
/// values).
fn load(src: &SlotFile<'_>, h: BlockHandle, values: u64) -> Result<Dictionary> {
    let raw = read_block_contents(src.file, src.path, h, src.footer_offset, None)?;
    let d = Dictionary::decode(&raw)
        .map_err(|r| Error::corruption(src.path, h.offset, format!("dictionary: {r}")))?;
    if d.len() as u64 != values {
        return Err(Error::corruption(
            src.path,
            h.offset,
            format!(
                "the dictionary has {} values; the index says {values}",
                d.len()
            ),
        ));
    }
    Statistics::add(&src.stats.dictionary_loads, 1);
    Statistics::add(&src.stats.dictionary_load_bytes, d.memory_bytes() as u64);
    Ok(d)
}
