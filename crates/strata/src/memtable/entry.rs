//! Pieces shared by the representations: the arena entry that vector and
//! hash representations store (so that a sorted snapshot copies pointers,
//! not bytes), the allocator model used for memory accounting, and the
//! iterator over a sorted snapshot.

use std::cmp::Ordering;
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use parking_lot::Mutex;

use super::arena::Arena;

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::compare_internal;

/// Bytes the allocator is assumed to hand out for a request of `n` bytes.
///
/// A glibc-malloc-like model: an 8-byte chunk header, 16-byte granularity
/// and a 32-byte minimum chunk. Other allocators differ by a few bytes per
/// allocation; the model is the same for every representation, so buffers
/// are compared on an equal footing.
#[inline]
pub(crate) const fn alloc_size(n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    let s = (n + 8 + 15) & !15;
    if s < 32 { 32 } else { s }
}

/// One entry in an [`Arena`]:
///
/// ```text
///   key_len: u32 LE | value_len: u32 LE | internal key | value
/// ```
///
/// A handle is a pointer: copying it copies 8 bytes, so sorted snapshots and
/// bucket nodes share the bytes. The bytes are written once, before the
/// handle is published, and live as long as their arena; whoever holds a
/// handle keeps that arena alive (a representation owns its arena, and
/// iterators hold an `Arc` of it).
#[derive(Clone, Copy)]
pub(crate) struct SharedEntry(NonNull<u8>);

// SAFETY: the bytes behind a handle never change after it is created and are
// freed only with their arena, which every holder keeps alive.
unsafe impl Send for SharedEntry {}
unsafe impl Sync for SharedEntry {}

impl SharedEntry {
    /// Bytes before the key.
    pub(crate) const HEADER: usize = 8;

    /// Bytes an entry of these lengths takes.
    #[inline]
    pub(crate) const fn size(ikey_len: usize, value_len: usize) -> usize {
        Self::HEADER + ikey_len + value_len
    }

    /// Copies an entry into the arena.
    pub(crate) fn new_in(arena: &Arena, ikey: &[u8], value: &[u8]) -> Self {
        let p = arena.alloc(Self::size(ikey.len(), value.len()));
        // SAFETY: the piece is exactly `size` bytes and not shared yet.
        unsafe { Self::write(p.as_ptr(), ikey, value) }
    }

    /// Writes an entry at `p`.
    ///
    /// # Safety
    ///
    /// `p` must be valid for writes of [`SharedEntry::size`] bytes, unshared
    /// until the handle is published, and outlive every copy of the handle.
    pub(crate) unsafe fn write(p: *mut u8, ikey: &[u8], value: &[u8]) -> Self {
        // Keys are at most 64 KiB plus the trailer and values 1 GiB
        // (MAX_KEY_BYTES, MAX_VALUE_BYTES, checked at the write path).
        // SAFETY: the caller's contract covers every byte written.
        unsafe {
            ptr::copy_nonoverlapping((ikey.len() as u32).to_le_bytes().as_ptr(), p, 4);
            ptr::copy_nonoverlapping((value.len() as u32).to_le_bytes().as_ptr(), p.add(4), 4);
            ptr::copy_nonoverlapping(ikey.as_ptr(), p.add(Self::HEADER), ikey.len());
            ptr::copy_nonoverlapping(
                value.as_ptr(),
                p.add(Self::HEADER + ikey.len()),
                value.len(),
            );
            SharedEntry(NonNull::new_unchecked(p))
        }
    }

    /// The handle of the entry written at `p`.
    ///
    /// # Safety
    ///
    /// An entry must have been written at `p` with [`SharedEntry::write`].
    #[inline]
    pub(crate) unsafe fn from_raw(p: NonNull<u8>) -> Self {
        SharedEntry(p)
    }

    #[inline]
    fn lens(self) -> (usize, usize) {
        // SAFETY: the 8-byte header was written before the handle existed.
        let h = unsafe { ptr::read(self.0.as_ptr() as *const [u8; Self::HEADER]) };
        let k = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
        let v = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
        (k, v)
    }

    /// The key and value, with a lifetime the caller picks.
    ///
    /// # Safety
    ///
    /// The entry's arena must outlive `'a`.
    #[inline]
    pub(crate) unsafe fn parts<'a>(self) -> (&'a [u8], &'a [u8]) {
        let (k, v) = self.lens();
        let p = self.0.as_ptr();
        // SAFETY: `k + v` bytes follow the header, written before the handle
        // existed and never changed; the caller keeps the arena alive.
        unsafe {
            (
                std::slice::from_raw_parts(p.add(Self::HEADER), k),
                std::slice::from_raw_parts(p.add(Self::HEADER + k), v),
            )
        }
    }

    /// The internal key.
    #[inline]
    pub(crate) fn key(&self) -> &[u8] {
        // SAFETY: whoever holds `self` keeps its arena alive (type contract).
        unsafe { self.parts().0 }
    }

    /// The value.
    #[inline]
    pub(crate) fn value(&self) -> &[u8] {
        // SAFETY: as for `key`.
        unsafe { self.parts().1 }
    }
}

/// Arena bytes beyond the entries' own `entry_bytes` (key and value bytes):
/// entry headers, nodes, alignment and abandoned block tails.
#[inline]
pub(crate) fn arena_overhead(arena: &Arena, entry_bytes: usize) -> usize {
    // Callers read `entry_bytes` first, with Acquire: it is added to (with
    // Release) only after the arena handed out the entry's piece, so the
    // arena read here covers every entry counted in it.
    arena.used().saturating_sub(entry_bytes)
}

/// Orders entries by [`compare_internal`] on their keys.
#[inline]
pub(crate) fn cmp_entries(a: &SharedEntry, b: &SharedEntry) -> Ordering {
    compare_internal(a.key(), b.key())
}

/// A sorted copy of a representation's entries, tagged with the entry count
/// it was built at: a read uses it only while the count still matches, so an
/// insert never has to clear it for correctness, only to free it early.
/// Shared by the kinds that sort a copy for reads (vector, hash).
pub(crate) struct SortedCache {
    slot: Mutex<Option<(usize, Arc<Vec<SharedEntry>>)>>,
    /// Set when `slot` may hold a copy, so inserts skip the lock otherwise.
    present: AtomicBool,
}

impl SortedCache {
    pub(crate) fn new() -> Self {
        SortedCache {
            slot: Mutex::new(None),
            present: AtomicBool::new(false),
        }
    }

    /// The copy built at `count` entries, if that is the one held.
    pub(crate) fn get(&self, count: usize) -> Option<Arc<Vec<SharedEntry>>> {
        match &*self.slot.lock() {
            Some((tag, snap)) if *tag == count => Some(Arc::clone(snap)),
            _ => None,
        }
    }

    /// Holds `snap`, built at `count` entries.
    pub(crate) fn put(&self, count: usize, snap: &Arc<Vec<SharedEntry>>) {
        *self.slot.lock() = Some((count, Arc::clone(snap)));
        self.present.store(true, AtomicOrdering::Release);
    }

    /// Frees the copy, if any. Without one this is a single load, so the
    /// insert path pays no lock. A copy put after the check stays until the
    /// next call; its count no longer matches, so no read uses it.
    pub(crate) fn clear(&self) {
        if self.present.load(AtomicOrdering::Acquire) {
            self.present.store(false, AtomicOrdering::Relaxed);
            *self.slot.lock() = None;
        }
    }
}

/// An iterator over a sorted snapshot of entries.
pub(crate) struct SnapshotIter {
    entries: Arc<Vec<SharedEntry>>,
    pos: Option<usize>,
    // Keeps the entries' bytes alive.
    _arena: Arc<Arena>,
}

impl SnapshotIter {
    /// `entries` must be sorted by [`cmp_entries`] and live in `arena`.
    pub(crate) fn new(entries: Arc<Vec<SharedEntry>>, arena: Arc<Arena>) -> Self {
        SnapshotIter {
            entries,
            pos: None,
            _arena: arena,
        }
    }
}

impl InternalIterator for SnapshotIter {
    fn valid(&self) -> bool {
        self.pos.is_some()
    }
    fn seek_to_first(&mut self) {
        self.pos = (!self.entries.is_empty()).then_some(0);
    }
    fn seek_to_last(&mut self) {
        self.pos = self.entries.len().checked_sub(1);
    }
    fn seek(&mut self, target: &[u8]) {
        let i = self
            .entries
            .partition_point(|e| compare_internal(e.key(), target) == Ordering::Less);
        self.pos = (i < self.entries.len()).then_some(i);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let i = self
            .entries
            .partition_point(|e| compare_internal(e.key(), target) != Ordering::Greater);
        self.pos = i.checked_sub(1);
    }
    fn next(&mut self) {
        self.pos = self
            .pos
            .and_then(|p| (p + 1 < self.entries.len()).then_some(p + 1));
    }
    fn prev(&mut self) {
        self.pos = self.pos.and_then(|p| p.checked_sub(1));
    }
    fn key(&self) -> &[u8] {
        self.pos.map_or(&[][..], |p| self.entries[p].key())
    }
    fn value(&self) -> &[u8] {
        self.pos.map_or(&[][..], |p| self.entries[p].value())
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

/// Visits `entries` (sorted) from the first one `>= seek_key`.
pub(crate) fn visit_sorted(
    entries: &[SharedEntry],
    seek_key: &[u8],
    f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
) {
    let start = entries.partition_point(|e| compare_internal(e.key(), seek_key) == Ordering::Less);
    for e in &entries[start..] {
        if !f(e.key(), e.value()) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_model_rounds_up_with_header() {
        assert_eq!(alloc_size(0), 0);
        assert_eq!(alloc_size(1), 32);
        assert_eq!(alloc_size(24), 32);
        assert_eq!(alloc_size(25), 48);
        assert_eq!(alloc_size(40), 48);
        assert_eq!(alloc_size(41), 64);
    }

    #[test]
    fn shared_entry_round_trips() {
        let arena = Arena::new(4096);
        let e = SharedEntry::new_in(&arena, b"key\0\0\0\0\0\0\0\0", b"value");
        let empty = SharedEntry::new_in(&arena, b"", b"");
        assert_eq!(e.key(), b"key\0\0\0\0\0\0\0\0");
        assert_eq!(e.value(), b"value");
        assert!(empty.key().is_empty() && empty.value().is_empty());
        assert_eq!(
            arena.used(),
            SharedEntry::size(11, 5).next_multiple_of(8) + 8
        );
    }
}
