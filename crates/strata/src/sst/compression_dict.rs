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
//! [`TRAINING_FACTOR`] times the dictionary size is held (or the file
//! ends), trains on them ([`train`]), then writes them and every later
//! block compressed with the dictionary. The dictionary is stored once
//! in the file as a meta block (`docs/format/sst.md`).

/// How many times the dictionary's size the held-back blocks must reach
/// before training: 16 KiB trains on 256 KiB, 64 blocks of 4 KiB, in about
/// 20 ms here. Files smaller than that get no dictionary.
pub(crate) const TRAINING_FACTOR: usize = 16;

/// Fewest blocks worth training on; zstd's trainer needs several samples.
const MIN_SAMPLES: usize = 8;

/// Trains a dictionary of at most `max_bytes` on `blocks`; `None` when there
/// is too little to learn from or zstd cannot train one (the file is then
/// written without a dictionary).
pub(crate) fn train(blocks: &[Vec<u8>], max_bytes: usize) -> Option<Vec<u8>> {
    let held: usize = blocks.iter().map(Vec::len).sum();
    if max_bytes == 0 || blocks.len() < MIN_SAMPLES || held < max_bytes * TRAINING_FACTOR {
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
        let d = train(&blocks(64, 4096), 4096).expect("enough samples");
        assert!(!d.is_empty() && d.len() <= 4096, "{} bytes", d.len());
    }
}
