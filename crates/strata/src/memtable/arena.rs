//! A bump allocator for memtable nodes: memory is taken from the system in
//! blocks and handed out in 8-byte-aligned pieces that are never freed one by
//! one; everything goes back when the arena drops (with its memtable).
//!
//! Why: a per-entry heap allocation costs an allocator call per insert and
//! 16-32 bytes of allocator header and rounding per entry, and scatters
//! neighbouring entries over the heap. RocksDB's memtables draw from an arena
//! for the same reasons.
//!
//! Allocation takes a short mutex (the write path inserts from one leader at
//! a time, so it is uncontended); reading allocated memory needs nothing.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

/// Alignment of every piece handed out.
pub(crate) const ALIGN: usize = 8;

/// Smallest and largest regular block.
const MIN_BLOCK: usize = 4 << 10;
const MAX_BLOCK: usize = 1 << 20;

/// Block size for a buffer of `write_buffer_size` bytes: an eighth of it,
/// between 4 KiB and 1 MiB (RocksDB's default `arena_block_size` rule), so
/// the unfilled tail of the current block is a small part of the buffer.
pub(crate) fn block_size_for(write_buffer_size: usize) -> usize {
    (write_buffer_size / 8).clamp(MIN_BLOCK, MAX_BLOCK) / ALIGN * ALIGN
}

struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
}

struct Inner {
    blocks: Vec<Block>,
    /// Next free byte of the current block.
    cur: *mut u8,
    /// Bytes left in the current block.
    left: usize,
}

/// See the module documentation.
pub(crate) struct Arena {
    inner: Mutex<Inner>,
    block_size: usize,
    /// Bytes handed out (with alignment padding) plus the unused tails of
    /// blocks that were left for a new one: memory no other entry can use.
    /// The free tail of the current block is not counted.
    used: AtomicUsize,
}

// SAFETY: the raw pointers in `Inner` point into blocks the arena owns and
// are only touched under the mutex; pieces handed out are owned by callers.
unsafe impl Send for Arena {}
unsafe impl Sync for Arena {}

impl Arena {
    /// An empty arena taking blocks of `block_size` bytes (rounded to the
    /// alignment) from the system.
    pub(crate) fn new(block_size: usize) -> Self {
        Arena {
            inner: Mutex::new(Inner {
                blocks: Vec::new(),
                cur: std::ptr::null_mut(),
                left: 0,
            }),
            block_size: block_size.max(MIN_BLOCK) / ALIGN * ALIGN,
            used: AtomicUsize::new(0),
        }
    }

    /// Memory in use; see the `used` field.
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Bytes reserved from the system.
    #[cfg(test)]
    pub(crate) fn reserved(&self) -> usize {
        self.inner
            .lock()
            .blocks
            .iter()
            .map(|b| b.layout.size())
            .sum()
    }

    /// A piece of `n` bytes (`n` rounded up to the alignment), aligned to
    /// [`ALIGN`], uninitialised. It stays valid until the arena drops.
    pub(crate) fn alloc(&self, n: usize) -> NonNull<u8> {
        let n = n.max(1).next_multiple_of(ALIGN);
        let mut inner = self.inner.lock();
        if n > inner.left {
            if n > self.block_size / 4 {
                // A large piece gets a block of its own so that the current
                // block's tail is not wasted on it.
                let p = Self::new_block(&mut inner.blocks, n);
                self.add_used(n);
                return p;
            }
            let abandoned = inner.left;
            let p = Self::new_block(&mut inner.blocks, self.block_size);
            inner.cur = p.as_ptr();
            inner.left = self.block_size;
            self.add_used(abandoned);
        }
        let p = inner.cur;
        // SAFETY: `n <= left`, so `cur + n` stays inside the current block.
        inner.cur = unsafe { p.add(n) };
        inner.left -= n;
        self.add_used(n);
        // SAFETY: `cur` points into an allocated block, so it is not null.
        unsafe { NonNull::new_unchecked(p) }
    }

    /// Adds to `used`. Only called under the mutex, so a plain load and
    /// store suffice (a locked read-modify-write costs as much as the rest of
    /// an allocation).
    #[inline]
    fn add_used(&self, n: usize) {
        self.used
            .store(self.used.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    }

    fn new_block(blocks: &mut Vec<Block>, size: usize) -> NonNull<u8> {
        let layout = Layout::from_size_align(size, ALIGN).expect("block layout");
        // SAFETY: `size` is at least `ALIGN`, so the layout is not zero-sized.
        let raw = unsafe { alloc(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            handle_alloc_error(layout)
        };
        blocks.push(Block { ptr, layout });
        ptr
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for b in self.inner.get_mut().blocks.drain(..) {
            // SAFETY: allocated in `new_block` with this layout, freed once.
            unsafe { dealloc(b.ptr.as_ptr(), b.layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_aligned_disjoint_and_counted() {
        let arena = Arena::new(4096);
        let mut pieces = Vec::new();
        for n in [1usize, 7, 8, 9, 100, 1000, 3000, 5000, 24] {
            let p = arena.alloc(n);
            assert_eq!(p.as_ptr() as usize % ALIGN, 0);
            // SAFETY: the piece is `n` bytes long and ours.
            unsafe { std::ptr::write_bytes(p.as_ptr(), n as u8, n) };
            pieces.push((p, n));
        }
        for (p, n) in &pieces {
            // SAFETY: as above; nothing else wrote into the piece.
            let s = unsafe { std::slice::from_raw_parts(p.as_ptr(), *n) };
            assert!(s.iter().all(|&b| b == *n as u8), "piece of {n} overwritten");
        }
        let rounded: usize = pieces.iter().map(|(_, n)| n.next_multiple_of(ALIGN)).sum();
        // 3000 and 5000 are over a quarter block and got blocks of their
        // own; the rest shared the first block (1,168 bytes of it).
        assert_eq!(arena.used(), rounded);
        assert_eq!(arena.reserved(), 4096 + 3000 + 5000);
        // Two more 1000-byte pieces fit in the first block's 2,928 free
        // bytes; the third does not, so the 928-byte tail is abandoned and
        // counted.
        for _ in 0..3 {
            arena.alloc(1000);
        }
        assert_eq!(arena.used(), rounded + 3000 + 928);
        assert_eq!(arena.reserved(), 2 * 4096 + 3000 + 5000);
    }

    #[test]
    fn block_size_follows_the_buffer_within_bounds() {
        assert_eq!(block_size_for(0), MIN_BLOCK);
        assert_eq!(block_size_for(64 << 20), MAX_BLOCK);
        assert_eq!(block_size_for(1 << 20), 128 << 10);
    }
}
