//! Block buffers recycled within a thread.
//!
//! A point read that misses the block cache allocates two buffers: one for
//! the block's stored bytes and one for its decompressed contents, which
//! the cache keeps until it evicts the block. Blocks are 4 KiB and more,
//! past glibc's per-thread caches, so each allocation and free took an
//! arena lock, and a block read by one thread was usually freed by
//! another, whose frees then contended with the reader's allocations
//! (malloc, free and the futex waits behind them were about an eighth of
//! an LZ4 `readrandom` with a cache of 1 % of the data).
//!
//! Here a thread keeps up to [`POOLED`] buffers: the block cache hands
//! back the buffer of every block it evicts that no reader still holds,
//! and the stored bytes of a decompressed block return once it is
//! decompressed. A read takes a buffer from the pool and allocates only
//! when none fits. Buffers in the pool are not charged to the block cache;
//! they are at most `POOLED` × [`MAX_POOLED_BYTES`] per thread.

use std::cell::RefCell;
use std::sync::Arc;

use super::block::Block;

/// Buffers kept per thread.
const POOLED: usize = 8;
/// Larger buffers are freed rather than kept.
const MAX_POOLED_BYTES: usize = 256 << 10;

thread_local! {
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Whether a buffer of `capacity` bytes suits a request for `len`: large
/// enough, and not so large that a small block would hold (and the cache
/// would be charged for) a big allocation.
fn fits(capacity: usize, len: usize) -> bool {
    capacity >= len && capacity <= len.saturating_mul(2).max(4096)
}

/// A buffer with room for `len` bytes, from the pool when one fits. Its
/// length and contents are whatever it last held (initialised bytes): the
/// caller overwrites or clears them.
pub(crate) fn take(len: usize) -> Vec<u8> {
    let pooled = POOL
        .try_with(|pool| {
            let mut pool = pool.borrow_mut();
            let i = pool.iter().rposition(|b| fits(b.capacity(), len))?;
            Some(pool.swap_remove(i))
        })
        .ok()
        .flatten();
    pooled.unwrap_or_else(|| Vec::with_capacity(len))
}

/// Returns `buf` to this thread's pool (freed when the pool is full, the
/// buffer is too large or the thread is exiting).
pub(crate) fn give(buf: Vec<u8>) {
    if buf.capacity() == 0 || buf.capacity() > MAX_POOLED_BYTES {
        return;
    }
    let _ = POOL.try_with(|pool| {
        let mut pool = pool.borrow_mut();
        if pool.len() < POOLED {
            pool.push(buf);
        }
    });
}

/// Returns the buffer of a block leaving the cache, if no reader holds it.
pub(crate) fn recycle_block(block: Arc<Block>) {
    if let Ok(block) = Arc::try_unwrap(block) {
        give(block.into_data());
    }
}

/// Buffers in this thread's pool.
#[cfg(test)]
pub(crate) fn pooled() -> usize {
    POOL.with(|p| p.borrow().len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_buffer_is_taken_again_when_it_fits_and_not_otherwise() {
        // The pool is per thread, so this test sees only its own buffers.
        let buf = Vec::<u8>::with_capacity(5000);
        let ptr = buf.as_ptr();
        give(buf);
        assert_eq!(pooled(), 1);
        // Too large a request: a fresh buffer, and the pooled one stays.
        let big = take(20_000);
        assert!(big.capacity() >= 20_000);
        assert_eq!(pooled(), 1);
        // Far smaller: it would waste the pooled buffer's bytes.
        let small = take(100);
        assert_ne!(small.as_ptr(), ptr);
        assert_eq!(pooled(), 1);
        // A fitting request gets the very allocation back.
        let again = take(4000);
        assert_eq!(again.as_ptr(), ptr);
        assert_eq!(pooled(), 0);
    }

    #[test]
    fn the_pool_is_bounded_in_count_and_buffer_size() {
        for _ in 0..POOLED + 5 {
            give(Vec::with_capacity(4096));
        }
        assert_eq!(pooled(), POOLED);
        POOL.with(|p| p.borrow_mut().clear());
        give(Vec::with_capacity(MAX_POOLED_BYTES + 1));
        give(Vec::new());
        assert_eq!(pooled(), 0);
    }

    #[test]
    fn a_block_still_held_by_a_reader_is_not_recycled() {
        let mut b = super::super::block::BlockBuilder::new(16);
        b.add(
            &crate::key::make_internal_key(b"k", 1, crate::key::ValueKind::Put),
            b"v",
        );
        let block = Arc::new(Block::new(b.finish().to_vec()).expect("block"));
        let held = Arc::clone(&block);
        recycle_block(block);
        assert_eq!(pooled(), 0);
        recycle_block(held);
        assert_eq!(pooled(), 1);
    }
}
