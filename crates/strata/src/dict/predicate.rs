//! Predicates on string values, evaluated either on the values themselves
//! (memtables, plainly encoded files) or, through one file's dictionary, as
//! a set of codes. Both evaluations agree: a value matches exactly when its
//! code is in the predicate's code set (dictionary order is byte order, so
//! every range and every prefix is a contiguous run of codes).

use std::ops::Bound;

use super::dictionary::Dictionary;
use super::select::CodeSet;

/// A predicate on one value, compared as bytes (unsigned, a prefix before
/// its extensions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValuePredicate {
    /// The value equals this.
    Eq(Vec<u8>),
    /// The value lies between the bounds.
    Range {
        /// The lower bound.
        start: Bound<Vec<u8>>,
        /// The upper bound.
        end: Bound<Vec<u8>>,
    },
    /// The value starts with this (every value starts with the empty
    /// prefix).
    Prefix(Vec<u8>),
    /// The value equals one of these.
    In(Vec<Vec<u8>>),
}

impl ValuePredicate {
    /// True if `v` matches.
    pub fn matches(&self, v: &[u8]) -> bool {
        match self {
            ValuePredicate::Eq(x) => v == x.as_slice(),
            ValuePredicate::Range { start, end } => {
                let above = match start {
                    Bound::Included(s) => v >= s.as_slice(),
                    Bound::Excluded(s) => v > s.as_slice(),
                    Bound::Unbounded => true,
                };
                let below = match end {
                    Bound::Included(e) => v <= e.as_slice(),
                    Bound::Excluded(e) => v < e.as_slice(),
                    Bound::Unbounded => true,
                };
                above && below
            }
            ValuePredicate::Prefix(p) => v.starts_with(p),
            ValuePredicate::In(list) => list.iter().any(|x| x.as_slice() == v),
        }
    }

    /// The codes of `dict` whose values match: a binary search or two
    /// per bound, one per listed value.
    pub fn codes(&self, dict: &Dictionary) -> CodeSet {
        match self {
            ValuePredicate::Eq(x) => match dict.code_of(x) {
                Some(c) => CodeSet::Range { lo: c, hi: c },
                None => CodeSet::Empty,
            },
            ValuePredicate::Range { start, end } => {
                let lo = match start {
                    Bound::Included(s) => dict.lower_bound(s),
                    Bound::Excluded(s) => dict.upper_bound(s),
                    Bound::Unbounded => 0,
                };
                let hi = match end {
                    Bound::Included(e) => dict.upper_bound(e),
                    Bound::Excluded(e) => dict.lower_bound(e),
                    Bound::Unbounded => dict.len() as u32,
                };
                CodeSet::half_open(lo, hi)
            }
            ValuePredicate::Prefix(p) => {
                // Values with the prefix follow `p` contiguously.
                let lo = dict.lower_bound(p);
                let hi = dict.partition_from(lo, |v| v.starts_with(p));
                CodeSet::half_open(lo, hi)
            }
            ValuePredicate::In(list) => {
                let codes: Vec<u32> = list.iter().filter_map(|x| dict.code_of(x)).collect();
                CodeSet::of(&codes)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![Just(0u8), Just(b'a'), Just(b'b'), Just(0xff)],
            0..5,
        )
    }

    fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
        prop_oneof![
            value().prop_map(Bound::Included),
            value().prop_map(Bound::Excluded),
            Just(Bound::Unbounded),
        ]
    }

    fn predicate() -> impl Strategy<Value = ValuePredicate> {
        prop_oneof![
            value().prop_map(ValuePredicate::Eq),
            (bound(), bound()).prop_map(|(start, end)| ValuePredicate::Range { start, end }),
            value().prop_map(ValuePredicate::Prefix),
            proptest::collection::vec(value(), 0..4).prop_map(ValuePredicate::In),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn code_sets_select_exactly_the_matching_values(
            mut values in proptest::collection::vec(value(), 0..30),
            pred in predicate(),
        ) {
            values.sort();
            values.dedup();
            let dict = Dictionary::from_sorted(values.iter().map(|v| &v[..])).expect("sorted");
            let set = pred.codes(&dict);
            for (code, v) in values.iter().enumerate() {
                prop_assert_eq!(set.contains(code as u32), pred.matches(v), "{:?} on {:?}", pred, v);
            }
        }
    }

    #[test]
    fn a_prefix_of_ff_bytes_has_no_successor_but_still_selects() {
        let values: [&[u8]; 4] = [b"a", b"\xff", b"\xff\xff", b"\xff\xff\x00"];
        let dict = Dictionary::from_sorted(values).expect("sorted");
        let set = ValuePredicate::Prefix(b"\xff\xff".to_vec()).codes(&dict);
        assert_eq!(set, CodeSet::Range { lo: 2, hi: 3 });
    }
}
