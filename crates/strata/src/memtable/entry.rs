//! Pieces shared by the representations: the reference-counted entry that
//! vector and hash representations store (so that a sorted snapshot copies
//! pointers, not bytes), the allocator model used for memory accounting, and
//! the iterator over a sorted snapshot.

use std::cmp::Ordering;
use std::sync::Arc;

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

/// Bytes of an `Arc<[u8]>` allocation's header (strong and weak counts).
const ARC_HEADER: usize = 2 * std::mem::size_of::<usize>();
/// Bytes of the key-length prefix of an encoded entry.
const LEN_PREFIX: usize = 4;

/// One entry, `key_len: u32 LE | internal key | value`, in one shared
/// allocation. Cloning copies a pointer.
#[derive(Clone)]
pub(crate) struct SharedEntry(Arc<[u8]>);

impl SharedEntry {
    pub(crate) fn new(ikey: &[u8], value: &[u8]) -> Self {
        // Keys are at most 64 KiB plus the trailer (checked at the write path).
        let len = (ikey.len() as u32).to_le_bytes();
        SharedEntry(
            len.iter()
                .chain(ikey.iter())
                .chain(value.iter())
                .copied()
                .collect(),
        )
    }

    #[inline]
    fn key_len(&self) -> usize {
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.0[..LEN_PREFIX]);
        u32::from_le_bytes(b) as usize
    }

    /// The internal key.
    #[inline]
    pub(crate) fn key(&self) -> &[u8] {
        &self.0[LEN_PREFIX..LEN_PREFIX + self.key_len()]
    }

    /// The value.
    #[inline]
    pub(crate) fn value(&self) -> &[u8] {
        &self.0[LEN_PREFIX + self.key_len()..]
    }

    /// Metadata bytes of the entry's own allocation for a key and value of
    /// `payload` bytes together: the Arc header, the length prefix, the
    /// allocator header and rounding. The pointer that holds the entry is
    /// counted by its container.
    #[inline]
    pub(crate) fn overhead(payload: usize) -> usize {
        alloc_size(ARC_HEADER + LEN_PREFIX + payload) - payload
    }
}

/// Orders entries by [`compare_internal`] on their keys.
#[inline]
pub(crate) fn cmp_entries(a: &SharedEntry, b: &SharedEntry) -> Ordering {
    compare_internal(a.key(), b.key())
}

/// An iterator over a sorted snapshot of entries.
pub(crate) struct SnapshotIter {
    entries: Arc<Vec<SharedEntry>>,
    pos: Option<usize>,
}

impl SnapshotIter {
    /// `entries` must be sorted by [`cmp_entries`].
    pub(crate) fn new(entries: Arc<Vec<SharedEntry>>) -> Self {
        SnapshotIter { entries, pos: None }
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
        let e = SharedEntry::new(b"key\0\0\0\0\0\0\0\0", b"value");
        assert_eq!(e.key(), b"key\0\0\0\0\0\0\0\0");
        assert_eq!(e.value(), b"value");
        let e = SharedEntry::new(b"", b"");
        assert!(e.key().is_empty() && e.value().is_empty());
        assert!(SharedEntry::overhead(0) >= ARC_HEADER + LEN_PREFIX);
    }
}
