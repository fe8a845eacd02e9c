//! The block cache: decompressed table blocks shared by every table reader,
//! of the core's format and of any format a layout plugs in.
//!
//! ```text
//!   key                                  value
//! +---------------------+-------------+  +------------------------------+
//! | cache_id: u64       | offset: u64 |->| Arc<Block> (decompressed)    |
//! | (one per reader,    | (block      |  | or another format's decoded  |
//! |  BlockCache::new_id)|  handle)    |  | block; weight = alloc + 96   |
//! +---------------------+-------------+  +------------------------------+
//! ```
//!
//! Backed by `quick_cache::sync::Cache` (sharded CLOCK-Pro) with a byte
//! weighter (a block weighs the bytes its buffer holds allocated, which a
//! recycled buffer may hold beyond its contents). Evicted blocks' buffers
//! go back to `sst::buffers` for the next read: the core's, and those of
//! other formats' blocks that say how to give theirs up ([`Recyclable`]).
//! Without that, a scan reading blocks past the cache's capacity took a
//! fresh allocation for each, and fresh pages from the kernel for many
//! (page faults were a tenth of a Q4-shaped table scan). A capacity of 0
//! disables caching: lookups miss, inserts are
//! dropped. Ids come from a process-wide counter, so a file reopened by a new
//! reader never sees another reader's blocks.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use quick_cache::sync::Cache;
use quick_cache::{DefaultHashBuilder, Lifecycle, Weighter};

use crate::sst::block::Block;
use crate::sst::buffers;

/// Bookkeeping bytes charged per cached block on top of its contents.
pub const BLOCK_OVERHEAD_BYTES: u64 = 96;

static NEXT_CACHE_ID: AtomicU64 = AtomicU64::new(1);

/// A block of another table format: it can give up its buffer (read from
/// the file and checked) for the next read once the cache has evicted it
/// and no reader holds it.
pub trait Recyclable: Any + Send + Sync {
    /// The block's buffer.
    fn into_buffer(self) -> Vec<u8>;
}

/// Hands an evicted block of another format back as its buffer.
type Recycler = fn(Arc<dyn Any + Send + Sync>);

/// [`Recycler`] for blocks of type `T`.
fn recycle_as<T: Recyclable>(block: Arc<dyn Any + Send + Sync>) {
    if let Ok(block) = block.downcast::<T>()
        && let Ok(block) = Arc::try_unwrap(block)
    {
        buffers::give(block.into_buffer());
    }
}

/// A cached block: the core's, or another format's with the bytes it holds
/// and, if it can give up its buffer, how.
#[derive(Clone)]
enum Cached {
    Sst(Arc<Block>),
    Other(Arc<dyn Any + Send + Sync>, u64, Option<Recycler>),
}

#[derive(Clone, Copy, Debug)]
struct BlockWeighter;

impl Weighter<(u64, u64), Cached> for BlockWeighter {
    fn weight(&self, _key: &(u64, u64), block: &Cached) -> u64 {
        let bytes = match block {
            Cached::Sst(b) => b.allocated() as u64,
            Cached::Other(_, bytes, _) => *bytes,
        };
        bytes + BLOCK_OVERHEAD_BYTES
    }
}

/// Hands the buffers of evicted blocks back for reuse (`sst::buffers`),
/// after the cache's shard lock is released. Blocks of other formats that
/// cannot give theirs up are dropped there.
#[derive(Clone, Copy, Debug, Default)]
struct RecycleEvicted;

impl Lifecycle<(u64, u64), Cached> for RecycleEvicted {
    // One insert of a block evicts one or two blocks of about its size;
    // any more are dropped under the lock, as quick_cache's default does.
    type RequestState = [Option<Cached>; 2];

    #[inline]
    fn begin_request(&self) -> Self::RequestState {
        [None, None]
    }

    #[inline]
    fn on_evict(&self, state: &mut Self::RequestState, _key: (u64, u64), val: Cached) {
        if let Some(slot) = state.iter_mut().find(|s| s.is_none()) {
            *slot = Some(val);
        }
    }

    fn end_request(&self, state: Self::RequestState) {
        for cached in state.into_iter().flatten() {
            match cached {
                Cached::Sst(block) => buffers::recycle_block(block),
                Cached::Other(block, _, Some(recycle)) => recycle(block),
                Cached::Other(_, _, None) => {}
            }
        }
    }
}

type Inner = Cache<(u64, u64), Cached, BlockWeighter, DefaultHashBuilder, RecycleEvicted>;

/// A byte-bounded cache of decompressed blocks.
pub struct BlockCache {
    inner: Option<Inner>,
    capacity: u64,
}

impl fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity_bytes", &self.capacity)
            .field("usage_bytes", &self.usage_bytes())
            .finish()
    }
}

impl BlockCache {
    /// A cache holding up to `capacity_bytes` of blocks (0 = no caching).
    pub fn new(capacity_bytes: u64) -> Self {
        let inner = (capacity_bytes > 0).then(|| {
            let items = (capacity_bytes / 4096).clamp(1, 1 << 20) as usize;
            Inner::with(
                items,
                capacity_bytes,
                BlockWeighter,
                DefaultHashBuilder::default(),
                RecycleEvicted,
            )
        });
        BlockCache {
            inner,
            capacity: capacity_bytes,
        }
    }

    /// A fresh id for a table reader's blocks.
    pub fn new_id() -> u64 {
        NEXT_CACHE_ID.fetch_add(1, Ordering::Relaxed)
    }

    /// The cached block at `offset` of reader `id`.
    pub fn get(&self, id: u64, offset: u64) -> Option<Arc<Block>> {
        match self.inner.as_ref()?.get(&(id, offset))? {
            Cached::Sst(b) => Some(b),
            Cached::Other(..) => None,
        }
    }

    /// Caches a block (dropped when the capacity is 0 or the block is larger
    /// than a cache shard).
    pub fn insert(&self, id: u64, offset: u64, block: Arc<Block>) {
        if let Some(c) = &self.inner {
            c.insert((id, offset), Cached::Sst(block));
        }
    }

    /// The cached block of another table format at `offset` of reader `id`
    /// (downcast it to the format's block type).
    pub fn get_other(&self, id: u64, offset: u64) -> Option<Arc<dyn Any + Send + Sync>> {
        match self.inner.as_ref()?.get(&(id, offset))? {
            Cached::Other(b, ..) => Some(b),
            Cached::Sst(_) => None,
        }
    }

    /// Caches a block of another table format that holds `bytes` bytes.
    pub fn insert_other(
        &self,
        id: u64,
        offset: u64,
        block: Arc<dyn Any + Send + Sync>,
        bytes: usize,
    ) {
        if let Some(c) = &self.inner {
            c.insert((id, offset), Cached::Other(block, bytes as u64, None));
        }
    }

    /// Block `offset` of reader `id` of another table format: from the
    /// cache, or `load`ed and cached with its `weight` in bytes (its buffer
    /// reused once it is evicted). Counts the hit or miss in `stats`.
    /// Without a cache, loads every time.
    pub fn get_or_load<T: Recyclable>(
        cache: Option<&BlockCache>,
        id: u64,
        offset: u64,
        stats: &crate::stats::Statistics,
        load: impl FnOnce() -> crate::error::Result<T>,
        weight: impl Fn(&T) -> usize,
    ) -> crate::error::Result<Arc<T>> {
        use crate::stats::Statistics;
        if let Some(b) = cache
            .and_then(|c| c.get_other(id, offset))
            .and_then(|b| b.downcast::<T>().ok())
        {
            Statistics::add(&stats.block_cache_hits, 1);
            return Ok(b);
        }
        Statistics::add(&stats.block_cache_misses, 1);
        let block = Arc::new(load()?);
        if let Some(inner) = cache.and_then(|c| c.inner.as_ref()) {
            let bytes = weight(&block) as u64;
            let recycle: Recycler = recycle_as::<T>;
            inner.insert(
                (id, offset),
                Cached::Other(block.clone(), bytes, Some(recycle)),
            );
        }
        Ok(block)
    }

    /// Bytes currently charged to cached blocks.
    pub fn usage_bytes(&self) -> u64 {
        self.inner.as_ref().map_or(0, |c| c.weight())
    }

    /// The configured capacity in bytes.
    pub fn capacity_bytes(&self) -> u64 {
        self.capacity
    }

    /// Number of cached blocks.
    pub fn num_blocks(&self) -> usize {
        self.inner.as_ref().map_or(0, |c| c.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(n: usize) -> Arc<Block> {
        // A real block of at least `n` bytes.
        let mut b = crate::sst::block::BlockBuilder::new(16);
        let mut i = 0u32;
        while b.current_size_estimate() < n {
            let k = crate::key::make_internal_key(&i.to_be_bytes(), 1, crate::key::ValueKind::Put);
            b.add(&k, &[0u8; 50]);
            i += 1;
        }
        Arc::new(Block::new(b.finish().to_vec()).expect("valid block"))
    }

    #[test]
    fn evicted_blocks_no_reader_holds_return_their_buffers_for_reuse() {
        // Tests run on their own threads, so the pool starts empty here.
        assert_eq!(buffers::pooled(), 0);
        let c = BlockCache::new(16 * 1024);
        let id = BlockCache::new_id();
        let held = block(4000);
        let contents = held.data().to_vec();
        c.insert(id, 0, held.clone());
        // Three times what the cache holds: most are evicted.
        for off in 1..12u64 {
            c.insert(id, off * 4096, block(4000));
        }
        assert!(c.num_blocks() < 12);
        let pooled = buffers::pooled();
        assert!(pooled > 0, "no evicted block's buffer came back");
        // The block a reader still holds stayed whole.
        assert_eq!(held.data(), &contents[..]);
        // A read's next buffer comes from the pool.
        let again = buffers::take(4000);
        assert!(again.capacity() >= 4000);
        assert_eq!(buffers::pooled(), pooled - 1);
    }

    /// A block of another format: its buffer.
    struct Other(Vec<u8>);

    impl Recyclable for Other {
        fn into_buffer(self) -> Vec<u8> {
            self.0
        }
    }

    /// Empties this thread's pool of 4,000-byte buffers, returning them.
    fn drain_pool() -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while buffers::pooled() > 0 {
            let before = buffers::pooled();
            out.push(buffers::take(4000));
            assert_eq!(buffers::pooled(), before - 1, "a pooled buffer did not fit");
        }
        out
    }

    #[test]
    fn evicted_blocks_of_other_formats_return_their_buffers_too() {
        // Tests run on their own threads, so the pool starts empty here.
        assert_eq!(buffers::pooled(), 0);
        let c = BlockCache::new(16 * 1024);
        let id = BlockCache::new_id();
        let stats = crate::stats::Statistics::default();
        let load = |off: u64| {
            BlockCache::get_or_load(
                Some(&c),
                id,
                off,
                &stats,
                || Ok(Other(vec![off as u8; 4000])),
                |b| b.0.capacity(),
            )
            .expect("load")
        };
        // A block a reader holds while the cache evicts it: its buffer must
        // not come back. The pool is drained after each load, so that a full
        // pool cannot hide one that did. (The first blocks fill the cache's
        // hot part, from which churn does not evict: the held block comes
        // after them.)
        for off in 1..4u64 {
            load(off * 4096);
        }
        let held = load(0);
        let held_at = held.0.as_ptr();
        let mut back = drain_pool();
        let mut off = 4u64;
        while c.inner.as_ref().is_some_and(|i| i.contains_key(&(id, 0))) {
            assert!(off < 1000, "block 0 was never evicted");
            load(off * 4096);
            back.extend(drain_pool());
            off += 1;
        }
        for _ in 0..4 {
            load(off * 4096);
            back.extend(drain_pool());
            off += 1;
        }
        assert!(!back.is_empty(), "no evicted block's buffer came back");
        assert!(
            back.iter().all(|b| b.as_ptr() != held_at),
            "the buffer of a block a reader holds came back"
        );
        assert!(held.0.iter().all(|&b| b == 0), "the held block changed");
        let last = c
            .get_other(id, (off - 1) * 4096)
            .expect("the last block is cached");
        assert!(last.downcast::<Other>().is_ok());
        // Blocks inserted without a way to give up their buffers are dropped
        // when evicted: nothing comes back.
        let c = BlockCache::new(16 * 1024);
        for off in 0..30u64 {
            c.insert_other(id, off * 4096, Arc::new(vec![0u8; 4000]), 4000);
        }
        assert!(c.num_blocks() < 30);
        assert_eq!(buffers::pooled(), 0);
    }

    #[test]
    fn hits_misses_and_byte_bound() {
        let cap = 64 * 1024;
        let c = BlockCache::new(cap);
        assert_eq!(c.capacity_bytes(), cap);
        let id = BlockCache::new_id();
        assert!(c.get(id, 0).is_none());
        let b = block(4000);
        c.insert(id, 0, b.clone());
        let got = c.get(id, 0).expect("just inserted");
        assert!(Arc::ptr_eq(&got, &b));
        assert_eq!(c.usage_bytes(), b.allocated() as u64 + BLOCK_OVERHEAD_BYTES);
        // Another id does not see it.
        assert!(c.get(BlockCache::new_id(), 0).is_none());
        // Overfill: usage stays within the capacity and old blocks go.
        for off in 1..200u64 {
            c.insert(id, off * 4096, block(4000));
            assert!(c.usage_bytes() <= cap, "usage {} > {cap}", c.usage_bytes());
        }
        assert!(c.num_blocks() < 200);
        assert!(c.usage_bytes() > cap / 2);
    }

    #[test]
    fn zero_capacity_caches_nothing() {
        let c = BlockCache::new(0);
        let id = BlockCache::new_id();
        c.insert(id, 0, block(100));
        assert!(c.get(id, 0).is_none());
        assert_eq!(c.usage_bytes(), 0);
        assert_eq!(c.num_blocks(), 0);
        assert_eq!(c.capacity_bytes(), 0);
    }

    #[test]
    fn ids_are_unique() {
        let a = BlockCache::new_id();
        let b = BlockCache::new_id();
        assert_ne!(a, b);
    }
}
