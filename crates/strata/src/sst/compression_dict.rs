//! Zstd compression dictionaries, one per table file.
//!
//! A 4 KiB block compressed on its own makes zstd describe its entropy
//! tables (Huffman for literals, FSE for sequences) in every block, and
//! the reader rebuilds them for every block it decompresses: with a block
//! cache much smaller than the data, building those tables was about a
//! quarter of a `readrandom`'s time. A dictionary trained on the file's
//! own blocks carries tables the blocks can refer to ("repeat" modes),
//! and a reader digests it once, when it opens the file, so a block
//! decompresses without building its tables. On blocks like the
//! benchmarks' (16-byte keys, 100-byte values half random), a 16 KiB
//! dictionary made decompression about 1.4× faster and the blocks about
//! 4 % smaller (`docs/design.md`, Compression dictionaries).
//!
//! The builder holds back the first data blocks of a file, raw, until
//! [`release_now`] says they are enough to train on (or too many to hold,
//! or the file ends), trains on them ([`train`]), then writes them and
//! every later block compressed with the dictionary. The dictionary is stored once
//! in the file as a meta block (`docs/format/sst.md`).

/// How many times the dictionary's size the held-back blocks (their raw
/// contents) must reach before training: 16 KiB trains on 256 KiB, 64
/// blocks of 4 KiB, in about 20 ms here. Files smaller than that get no
/// dictionary.
pub(crate) const TRAINING_FACTOR: usize = 16;

/// Fewest blocks worth training on: zstd's trainer takes each block as a
/// sample and needs several. Large blocks are held until there are this
/// many, up to [`MAX_HELD_FACTOR`] times the dictionary's size.
pub(crate) const MIN_SAMPLES: usize = 8;

/// The most raw bytes held back, in dictionary sizes: past it the blocks
/// are written without a dictionary (blocks so large that eight of them
/// pass it gain little from one).
pub(crate) const MAX_HELD_FACTOR: usize = 64;

/// The smallest and largest dictionary a file may have. zstd trains none
/// below 256 bytes; a reader refuses one above 1 MiB (a digested dictionary
/// stays in memory for as long as its file is open).
pub(crate) const MIN_DICT_BYTES: usize = 256;
pub(crate) const MAX_DICT_BYTES: usize = 1 << 20;

/// The dictionary size a builder asked for `requested` bytes uses: none
/// below zstd's minimum, at most [`MAX_DICT_BYTES`].
pub(crate) fn dictionary_size(requested: usize) -> usize {
    if requested < MIN_DICT_BYTES {
        0
    } else {
        requested.min(MAX_DICT_BYTES)
    }
}

/// Whether `blocks` held-back blocks of `bytes` raw bytes in all are enough
/// to train a dictionary of `dict_bytes` on ([`train`] would try), or so
/// many that holding more is pointless: either way they are released.
pub(crate) fn release_now(blocks: usize, bytes: usize, dict_bytes: usize) -> bool {
    enough_to_train(blocks, bytes, dict_bytes) || bytes >= dict_bytes * MAX_HELD_FACTOR
}

/// Whether `blocks` samples of `bytes` in all are enough to train a
/// dictionary of `dict_bytes` on.
fn enough_to_train(blocks: usize, bytes: usize, dict_bytes: usize) -> bool {
    blocks >= MIN_SAMPLES && bytes >= dict_bytes.saturating_mul(TRAINING_FACTOR)
}

/// Trains a dictionary of at most `max_bytes` on `blocks`; `None` when there
/// is too little to learn from or zstd cannot train one (the file is then
/// written without a dictionary).
pub(crate) fn train(blocks: &[Vec<u8>], max_bytes: usize) -> Option<Vec<u8>> {
    let held: usize = blocks.iter().map(Vec::len).sum();
    if max_bytes < MIN_DICT_BYTES || !enough_to_train(blocks.len(), held, max_bytes) {
        return None;
    }
    zstd::dict::from_samples(blocks, max_bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(n: usize, size: usize) -> Vec<Vec<u8>> {
        // Text-like blocks: a small alphabet in varying runs, so zstd has
        // something to learn.
        (0..n)
            .map(|b| {
                (0..size)
                    .map(|i| b"abcdefghij klmnop"[(i * 7 + b * 13 + i / 5) % 17])
                    .collect()
            })
            .collect()
    }

    #[test]
    fn trains_only_on_enough_samples() {
        assert!(train(&blocks(4, 4096), 1024).is_none(), "too few blocks");
        assert!(train(&blocks(64, 4096), 0).is_none(), "dictionaries off");
        assert!(
            train(&blocks(16, 1024), 4096).is_none(),
            "less than the factor"
        );
        assert!(
            train(&blocks(64, 4096), 100).is_none(),
            "below zstd's minimum"
        );
        let d = train(&blocks(64, 4096), 4096).expect("enough samples");
        assert!(!d.is_empty() && d.len() <= 4096, "{} bytes", d.len());
    }

    #[test]
    fn blocks_are_held_until_enough_samples_or_too_many_bytes() {
        let d = 1024;
        // Small blocks: released at 16 times the dictionary's size.
        assert!(!release_now(15, 15 * 1024, d));
        assert!(release_now(16, 16 * 1024, d));
        // Large blocks: held until there are eight of them...
        assert!(!release_now(2, 32 * 1024, d));
        assert!(release_now(8, 32 * 1024 * 4, d));
        // ...but never past 64 times the dictionary's size.
        assert!(!release_now(3, 63 * 1024, d));
        assert!(release_now(3, 64 * 1024, d));
        assert_eq!(dictionary_size(100), 0);
        assert_eq!(dictionary_size(16 << 10), 16 << 10);
        assert_eq!(dictionary_size(usize::MAX), MAX_DICT_BYTES);
    }
}
