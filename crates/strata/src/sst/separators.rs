//! Finding a key's data block among a table's index entries by the 8-byte
//! prefixes of their separator keys.
//!
//! A point read of a table searches its index block for the first
//! separator at or after the sought key. Binary search over the block
//! reads, at each step, a restart offset and then the entry it points at:
//! two cache lines a step, and with thousands of entries per index most
//! of the deep steps miss the CPU caches (in a `readrandom` with every
//! block cached, decoding those entries was 14 % of a read). Here the
//! separators' user-key prefixes sit in one array of `u64`s, searched
//! without touching the block; whole keys are compared only among
//! separators whose prefixes tie with the sought key's.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::key::{compare_internal, user_key};
use crate::keyblock::{LastKeys, prefix_of};

use super::block::{Block, BlockIter};

/// The prefixes of an index block's separators, in entry order.
#[derive(Debug)]
pub(crate) struct SeparatorSearch {
    prefixes: LastKeys,
}

impl SeparatorSearch {
    /// The search over `index`, or `None` when some entry of it is not a
    /// restart point (a block written with a restart interval above 1,
    /// which Strata's index blocks never are) or it does not decode: the
    /// reader then falls back to the block's own binary search, which
    /// reports the damage.
    pub(crate) fn new(index: &Arc<Block>) -> Option<SeparatorSearch> {
        let n = index.num_restarts();
        // Restart points are entry boundaries holding whole keys, and every
        // entry is one exactly when there are as many entries as restarts.
        if index.check_restarts().ok()? != n {
            return None;
        }
        let keys: Vec<&[u8]> = (0..n)
            .map(|i| index.restart_key(i))
            .collect::<Result<_, _>>()
            .ok()?;
        Some(SeparatorSearch {
            prefixes: LastKeys::new(keys.into_iter().map(user_key)),
        })
    }

    /// Positions `it`, an iterator over `index` (the block this search
    /// was built from), on the first entry whose separator is at or after
    /// `target`, an internal key; past the last entry if none is.
    pub(crate) fn seek(&self, index: &Block, it: &mut BlockIter, target: &[u8]) {
        let i = self
            .prefixes
            .first_not_before(prefix_of(user_key(target)), |i| {
                // A restart key that does not decode was caught by `new`.
                index
                    .restart_key(i)
                    .is_ok_and(|k| compare_internal(k, target) == Ordering::Less)
            });
        it.seek_to_restart_entry(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, make_internal_key};
    use crate::sst::block::BlockBuilder;
    use proptest::prelude::*;

    fn block_of(keys: &[Vec<u8>], restart_interval: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(restart_interval);
        for (i, k) in keys.iter().enumerate() {
            b.add(k, &(i as u32).to_le_bytes());
        }
        Arc::new(Block::new(b.finish().to_vec()).expect("block"))
    }

    /// Internal keys in order: user keys from a small alphabet (so that
    /// many share 8-byte prefixes, some are prefixes of others, some are
    /// shorter than 8 bytes), each with one or more sequence numbers.
    fn sorted_keys() -> impl Strategy<Value = Vec<Vec<u8>>> {
        prop::collection::btree_map(
            prop::collection::vec(prop::sample::select(vec![0u8, 1, b'a', 0xff]), 0..12),
            prop::collection::btree_set(1u64..50, 1..3),
            1..60,
        )
        .prop_map(|m| {
            let mut keys = Vec::new();
            for (u, seqs) in m {
                // Newer versions sort first.
                for s in seqs.into_iter().rev() {
                    keys.push(make_internal_key(&u, s, ValueKind::Put));
                }
            }
            keys
        })
    }

    proptest! {
        /// The prefix search lands where the block's own binary search
        /// does, for sought keys present, absent, between and beyond.
        #[test]
        fn seeks_agree_with_the_blocks_search(
            keys in sorted_keys(),
            probes in prop::collection::vec(
                (prop::collection::vec(prop::sample::select(vec![0u8, 1, b'a', 0xff]), 0..12), 0u64..60),
                1..40,
            ),
        ) {
            let index = block_of(&keys, 1);
            let search = SeparatorSearch::new(&index).expect("every entry is a restart");
            let mut probe_keys: Vec<Vec<u8>> = keys.clone();
            probe_keys.extend(
                probes.iter().map(|(u, s)| make_internal_key(u, *s, ValueKind::Put)),
            );
            for target in &probe_keys {
                let mut want = index.iter();
                want.seek(target);
                let mut got = index.iter();
                search.seek(&index, &mut got, target);
                prop_assert_eq!(got.valid(), want.valid());
                if want.valid() {
                    prop_assert_eq!(got.key(), want.key());
                    prop_assert_eq!(got.value(), want.value());
                    // The iterator steps on from there like the block's.
                    got.next();
                    want.next();
                    prop_assert_eq!(got.valid(), want.valid());
                    if want.valid() {
                        prop_assert_eq!(got.key(), want.key());
                    }
                }
            }
        }
    }

    #[test]
    fn blocks_with_entries_between_restarts_are_left_to_their_own_search() {
        let keys: Vec<Vec<u8>> = (0..40u32)
            .map(|i| make_internal_key(&i.to_be_bytes(), 1, ValueKind::Put))
            .collect();
        assert!(SeparatorSearch::new(&block_of(&keys, 1)).is_some());
        assert!(SeparatorSearch::new(&block_of(&keys, 16)).is_none());
        assert!(SeparatorSearch::new(&block_of(&keys[..1], 16)).is_some());
    }
}
