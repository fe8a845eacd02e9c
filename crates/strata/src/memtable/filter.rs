//! A whole-key Bloom filter over a memtable's user keys (RocksDB's
//! `memtable_whole_key_filtering`): a point read of a key the buffer does
//! not hold returns before searching it.
//!
//! Without it every point read searched the memtable first: with a 64 MiB
//! write buffer part full, the skiplist search was 38 % of a `readrandom`
//! whose blocks were all cached, since most keys read live in the files
//! below. The filter is blocked in single words: a key's six probes fall in
//! one 64-bit word, so a lookup is one load and an insert at most one
//! atomic OR. (The files' format-2 filter spreads its probes over a 64-byte
//! line; a first version here did too, and its inserts took an atomic OR
//! per probe.) At the default 20-odd bits a key, about 1 % of absent keys
//! pass.
//!
//! Concurrency: a word that already holds a key's bits is left alone (a
//! load, no locked read-modify-write); otherwise they are set with
//! `fetch_or`, so concurrent inserts lose nothing. Readers load
//! relaxed. A reader
//! needs a key's bits only when its snapshot can see the key's entry, and
//! the write path publishes a sequence number (release) only after the
//! entries it covers are inserted, bits included, so such a reader has
//! loaded that sequence (acquire) after the bits were stored.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::sst::bloom::bloom_hash;

/// Probes per key, all in one 64-bit word.
const PROBES: u32 = 6;
/// The smallest filter, in words, so that tiny write buffers still get a
/// useful one.
const MIN_WORDS: usize = 128;

/// The filter of one memtable.
pub(crate) struct KeyFilter {
    words: Box<[AtomicU64]>,
    /// Words minus one (the word count is a power of two).
    mask: u64,
}

impl KeyFilter {
    /// A filter of about `bytes` bytes (rounded down to a power of two
    /// words, at least [`MIN_WORDS`]).
    pub(crate) fn with_bytes(bytes: usize) -> KeyFilter {
        let words = (bytes / 8).max(MIN_WORDS);
        let words = if words.is_power_of_two() {
            words
        } else {
            words.next_power_of_two() / 2
        };
        KeyFilter {
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
            mask: words as u64 - 1,
        }
    }

    /// Bytes the filter holds.
    pub(crate) fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// `h`'s word and the bits its probes set in it: the word from the
    /// hash's high half, each probe's bit from six bits of the low half.
    #[inline]
    fn probe(&self, h: u64) -> (usize, u64) {
        let word = (h >> 32) & self.mask;
        let bits = (0..PROBES).fold(0u64, |m, i| m | 1 << ((h >> (6 * i)) & 63));
        (word as usize, bits)
    }

    /// Adds `user_key`.
    #[inline]
    pub(crate) fn insert(&self, user_key: &[u8]) {
        let (word, bits) = self.probe(bloom_hash(user_key));
        let w = &self.words[word];
        if w.load(Ordering::Relaxed) & bits != bits {
            w.fetch_or(bits, Ordering::Relaxed);
        }
    }

    /// False only if `user_key` was never inserted.
    #[inline]
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        let (word, bits) = self.probe(bloom_hash(user_key));
        self.words[word].load(Ordering::Relaxed) & bits == bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserted_keys_are_found_and_most_others_are_not() {
        let f = KeyFilter::with_bytes(16 << 10);
        assert_eq!(f.bytes(), 16 << 10);
        let key = |i: u32| format!("key{i:08}").into_bytes();
        for i in 0..10_000 {
            f.insert(&key(i));
        }
        assert!((0..10_000).all(|i| f.may_contain(&key(i))));
        // 13 bits a key: six probes in one word pass about 1 %.
        let passed = (10_000..110_000)
            .filter(|&i| f.may_contain(&key(i)))
            .count();
        assert!(passed < 2_500, "{passed} of 100,000 absent keys passed");
        assert!(f.may_contain(b"") == f.may_contain(b""), "empty keys hash");
    }

    #[test]
    fn sizes_round_to_whole_lines_with_a_floor() {
        assert_eq!(KeyFilter::with_bytes(0).bytes(), MIN_WORDS * 8);
        assert_eq!(KeyFilter::with_bytes(100_000).bytes(), 65_536);
        assert_eq!(KeyFilter::with_bytes(1 << 20).bytes(), 1 << 20);
    }

    #[test]
    fn an_empty_filter_admits_nothing() {
        let f = KeyFilter::with_bytes(4096);
        assert!(!f.may_contain(b"anything"));
        f.insert(b"anything");
        assert!(f.may_contain(b"anything"));
    }
}
