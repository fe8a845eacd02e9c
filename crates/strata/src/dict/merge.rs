//! Merging dictionaries: the dictionary of a compaction's output is the
//! k-way merge of its inputs' dictionaries, restricted to the values its
//! entries still reference, and each input code maps to an output code
//! through a table. Values are compared once per distinct value and
//! input, never once per entry.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::dictionary::Dictionary;

/// One input of a merge: a dictionary and which of its codes are still
/// referenced (bit `c % 64` of word `c / 64`; `None`: all of them).
pub struct MergeInput<'a> {
    /// The input's dictionary.
    pub dictionary: &'a Dictionary,
    /// Its referenced codes.
    pub referenced: Option<&'a [u64]>,
}

impl MergeInput<'_> {
    fn is_referenced(&self, code: u32) -> bool {
        match self.referenced {
            None => true,
            Some(bits) => bits
                .get(code as usize / 64)
                .is_some_and(|w| w >> (code % 64) & 1 == 1),
        }
    }

    /// The first referenced code at or after `from`.
    fn next_referenced(&self, mut from: u32) -> Option<u32> {
        while (from as usize) < self.dictionary.len() {
            if self.is_referenced(from) {
                return Some(from);
            }
            from += 1;
        }
        None
    }
}

/// The merged dictionary and, per input, the output code of each of its
/// codes (`u32::MAX` for codes not referenced). `None` if the output
/// would exceed a dictionary's limits.
pub fn merge(inputs: &[MergeInput<'_>]) -> Option<(Dictionary, Vec<Vec<u32>>)> {
    let mut remaps: Vec<Vec<u32>> = inputs
        .iter()
        .map(|i| vec![u32::MAX; i.dictionary.len()])
        .collect();
    // One input whose codes are all referenced: a copy.
    if let [only] = inputs
        && (0..only.dictionary.len() as u32).all(|c| only.is_referenced(c))
    {
        for (c, slot) in remaps[0].iter_mut().enumerate() {
            *slot = c as u32;
        }
        return Some((only.dictionary.clone(), remaps));
    }
    let mut heap: BinaryHeap<Reverse<(&[u8], usize, u32)>> = BinaryHeap::new();
    for (i, input) in inputs.iter().enumerate() {
        if let Some(c) = input.next_referenced(0) {
            heap.push(Reverse((input.dictionary.value(c), i, c)));
        }
    }
    let mut values: Vec<&[u8]> = Vec::new();
    while let Some(Reverse((v, i, c))) = heap.pop() {
        if values.last() != Some(&v) {
            values.push(v);
        }
        remaps[i][c as usize] = (values.len() - 1) as u32;
        if let Some(next) = inputs[i].next_referenced(c + 1) {
            heap.push(Reverse((inputs[i].dictionary.value(next), i, next)));
        }
    }
    let dict = Dictionary::from_sorted(values)?;
    Some((dict, remaps))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dict(values: &[Vec<u8>]) -> Dictionary {
        let mut v = values.to_vec();
        v.sort();
        v.dedup();
        Dictionary::from_sorted(v.iter().map(|x| &x[..])).expect("sorted")
    }

    #[test]
    fn a_single_fully_referenced_input_is_copied() {
        let d = dict(&[b"a".to_vec(), b"b".to_vec()]);
        let (out, remap) = merge(&[MergeInput {
            dictionary: &d,
            referenced: None,
        }])
        .expect("merge");
        assert_eq!(out, d);
        assert_eq!(remap, vec![vec![0, 1]]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn merging_equals_sorting_the_referenced_values(
            inputs in proptest::collection::vec(
                (proptest::collection::vec(proptest::collection::vec(0u8..4, 0..4), 0..12),
                 any::<u64>()),
                1..5),
        ) {
            let dicts: Vec<Dictionary> = inputs.iter().map(|(v, _)| dict(v)).collect();
            let bits: Vec<Vec<u64>> = inputs.iter().map(|(_, b)| vec![*b]).collect();
            let merge_inputs: Vec<MergeInput<'_>> = dicts
                .iter()
                .zip(&bits)
                .map(|(d, b)| MergeInput { dictionary: d, referenced: Some(b) })
                .collect();
            let (out, remaps) = merge(&merge_inputs).expect("merge");
            let mut want: Vec<Vec<u8>> = Vec::new();
            for (d, b) in dicts.iter().zip(&bits) {
                for c in 0..d.len() {
                    if b[0] >> c & 1 == 1 {
                        want.push(d.value(c as u32).to_vec());
                    }
                }
            }
            want.sort();
            want.dedup();
            prop_assert_eq!(out.values().map(<[u8]>::to_vec).collect::<Vec<_>>(), want);
            for (i, d) in dicts.iter().enumerate() {
                for c in 0..d.len() as u32 {
                    if bits[i][0] >> c & 1 == 1 {
                        prop_assert_eq!(out.value(remaps[i][c as usize]), d.value(c));
                    } else {
                        prop_assert_eq!(remaps[i][c as usize], u32::MAX);
                    }
                }
            }
        }
    }
}
