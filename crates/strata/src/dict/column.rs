//! The values of one column of a file being written, kept until the file's
//! dictionary can be settled.
//!
//! A value's code is its rank among the file's distinct values, which is
//! known only once every value has arrived, so a writer keeps one small
//! reference per row here and writes its blocks at the end. Values arrive
//! two ways:
//! - as bytes (a flush, or a compaction of plain files): each distinct
//!   value is interned once, and [`ValueColumn::settle`] sorts the distinct
//!   values, not the rows;
//! - as codes into an input file's dictionary (a compaction of
//!   dictionary-encoded files): the code is marked referenced and kept,
//!   touching no value bytes; `settle` merges the input dictionaries,
//!   restricted to the referenced values, with the interned values
//!   ([`super::merge`]) and remaps every code through a table.
//!
//! When the share of distinct values passes the threshold the column is
//! stored plainly instead. The decision waits for the last row: values
//! drawn from a fixed domain look mostly distinct early in a file and
//! repeat later (20,000 values drawn uniformly: 11,000 distinct after
//! 16,000 rows, 20,000 after 400,000), so no early share predicts the
//! file's. A threshold of 0 keeps bytes from the start. Both users, key-value files (`dictfile`) and column-group files
//! (`table::cgfile`), keep their values here.

use std::sync::Arc;

use super::merge::{MergeInput, merge};
use super::{CodedValue, Dictionary, DictionaryBuilder};

/// Whether `values` values, `distinct` of them distinct, get a dictionary
/// under `max_distinct_ratio`.
pub fn use_dictionary(values: u64, distinct: u64, max_distinct_ratio: f64) -> bool {
    values > 0
        && distinct as usize <= super::dictionary::MAX_VALUES
        && (distinct as f64) <= max_distinct_ratio * values as f64
}

/// A row's value: (source, code). Source 0 is the interned values (the code
/// is a provisional id), source `s > 0` the dictionary of input `s - 1`,
/// [`PLAIN`] the kept bytes (the code is their index); [`NO_VALUE`]: the row
/// has none.
type ValueRef = (u32, u32);

const NO_VALUE: u32 = u32::MAX;
const PLAIN: u32 = u32::MAX - 1;

/// The input dictionaries whose codes a column's rows reference.
#[derive(Default)]
struct CodedInputs {
    dictionaries: Vec<Arc<Dictionary>>,
    /// Per dictionary, its referenced codes as a bitmap.
    referenced: Vec<Vec<u64>>,
    /// Distinct values referenced in all (a value two inputs hold counts
    /// twice), and per dictionary with their bytes.
    distinct: u64,
    per_input: Vec<(u64, u64)>,
}

impl CodedInputs {
    /// The source number of `dictionary` (adding it if new) after marking
    /// `code` referenced.
    fn reference(&mut self, dictionary: &Arc<Dictionary>, code: u32) -> u32 {
        // A file's rows come from a few inputs, one at a time: the last
        // dictionary is almost always the one.
        let i = match self
            .dictionaries
            .iter()
            .rposition(|d| Arc::ptr_eq(d, dictionary))
        {
            Some(i) => i,
            None => {
                self.dictionaries.push(Arc::clone(dictionary));
                self.referenced.push(vec![0; dictionary.len().div_ceil(64)]);
                self.per_input.push((0, 0));
                self.dictionaries.len() - 1
            }
        };
        let word = &mut self.referenced[i][code as usize / 64];
        let bit = 1u64 << (code % 64);
        if *word & bit == 0 {
            *word |= bit;
            let len = dictionary.value(code).len() as u64;
            self.distinct += 1;
            self.per_input[i].0 += 1;
            self.per_input[i].1 += len;
        }
        i as u32 + 1
    }

    /// What the merged dictionary will likely hold, in distinct values and
    /// bytes: the inputs of a compaction mostly share their values (each
    /// file's dictionary holds the values its key range uses), so the
    /// largest input's referenced values, not their sum, which would count
    /// a value once per input and cut outputs into many small files, each
    /// with its own copy of the dictionary.
    fn merged_estimate(&self) -> (u64, u64) {
        let distinct = self.per_input.iter().map(|p| p.0).max().unwrap_or(0);
        let bytes = self.per_input.iter().map(|p| p.1).max().unwrap_or(0);
        (distinct, bytes)
    }
}

/// Bytes kept as they came, end to end.
#[derive(Default)]
struct PlainValues {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl PlainValues {
    fn push(&mut self, v: &[u8]) -> u32 {
        self.bytes.extend_from_slice(v);
        self.ends.push(self.bytes.len());
        (self.ends.len() - 1) as u32
    }

    fn get(&self, i: u32) -> &[u8] {
        let i = i as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }
}

/// One column's values while its file is written.
pub struct ValueColumn {
    max_distinct_ratio: f64,
    refs: Vec<ValueRef>,
    interned: DictionaryBuilder,
    coded: CodedInputs,
    /// Set when the column keeps bytes (dictionaries off, or too many
    /// distinct values for one).
    plain: Option<PlainValues>,
    values: u64,
    value_bytes: u64,
}

impl ValueColumn {
    /// A column that gets a dictionary when at most `max_distinct_ratio`
    /// (0 to 1) of its values are distinct; 0 stores values plainly.
    pub fn new(max_distinct_ratio: f64) -> ValueColumn {
        ValueColumn {
            max_distinct_ratio,
            refs: Vec::new(),
            interned: DictionaryBuilder::new(),
            coded: CodedInputs::default(),
            plain: (max_distinct_ratio <= 0.0).then(PlainValues::default),
            values: 0,
            value_bytes: 0,
        }
    }

    /// Rows so far (with a value or not).
    pub fn len(&self) -> usize {
        self.refs.len()
    }

    /// Whether no row has been added.
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    /// Adds a row without a value (a tombstone, or a null or absent cell).
    pub fn push_none(&mut self) {
        self.refs.push((NO_VALUE, 0));
    }

    /// Adds a row whose value is `v`.
    pub fn push_bytes(&mut self, v: &[u8]) {
        self.note(v.len());
        let r = match &mut self.plain {
            Some(p) => (PLAIN, p.push(v)),
            None => (0, self.interned.intern(v)),
        };
        self.refs.push(r);
    }

    /// Adds a row whose value is a code into an input file's dictionary.
    pub fn push_coded(&mut self, c: CodedValue<'_>) {
        let v = c.dictionary.value(c.code);
        self.note(v.len());
        let r = match &mut self.plain {
            Some(p) => (PLAIN, p.push(v)),
            None => (self.coded.reference(c.dictionary, c.code), c.code),
        };
        self.refs.push(r);
    }

    fn note(&mut self, len: usize) {
        self.values += 1;
        self.value_bytes += len as u64;
    }

    /// Distinct values, estimated while codes from inputs are merged.
    fn distinct_estimate(&self) -> u64 {
        self.interned.distinct() as u64 + self.coded.merged_estimate().0
    }

    /// Rewrites every reference to kept bytes.
    fn switch_to_plain(&mut self) {
        let interned = std::mem::take(&mut self.interned).into_values();
        let coded = std::mem::take(&mut self.coded);
        let mut plain = PlainValues::default();
        plain.bytes.reserve(self.value_bytes as usize);
        for r in &mut self.refs {
            let v: &[u8] = match r.0 {
                NO_VALUE | PLAIN => continue,
                0 => &interned[r.1 as usize],
                s => coded.dictionaries[s as usize - 1].value(r.1),
            };
            *r = (PLAIN, plain.push(v));
        }
        self.plain = Some(plain);
    }

    /// Values taken from input dictionaries as codes, so far.
    pub fn carried_as_codes(&self) -> usize {
        self.refs
            .iter()
            .filter(|&&(s, _)| s != 0 && s != NO_VALUE && s != PLAIN)
            .count()
    }

    /// Bytes the column will likely take: about two bytes of code per row
    /// and the distinct values when it would get a dictionary, else every
    /// value.
    pub fn estimated_bytes(&self) -> u64 {
        if self.plain.is_none()
            && use_dictionary(
                self.values,
                self.distinct_estimate(),
                self.max_distinct_ratio,
            )
        {
            self.interned.value_bytes() as u64
                + self.coded.merged_estimate().1
                + 2 * self.refs.len() as u64
        } else {
            self.value_bytes
        }
    }

    /// Settles the column: a dictionary of its distinct values if few
    /// enough are, else its values as they are. `None` if the distinct
    /// values exceed 4 GiB.
    pub fn settle(mut self) -> Option<SettledColumn> {
        if let Some(plain) = self.plain.take() {
            return Some(SettledColumn {
                refs: self.refs,
                values: Values::Plain(plain),
            });
        }
        // An upper bound: a value in two sources counts twice.
        let bound = self.interned.distinct() as u64 + self.coded.distinct;
        // Lower bounds: each source's own distinct values. When even those
        // rule a dictionary out, or the distinct values' bytes might pass
        // what one dictionary holds (4 GiB), the values go plain without
        // being sorted and merged first (a mostly distinct column of more
        // than 4 GiB failed to write; found in review, 2026-12-01).
        let lower = (self.interned.distinct() as u64).max(self.coded.merged_estimate().0);
        let bytes = self.interned.value_bytes() as u64
            + self.coded.per_input.iter().map(|p| p.1).sum::<u64>();
        if bound > super::dictionary::MAX_VALUES as u64
            || bytes > u64::from(u32::MAX)
            || !use_dictionary(self.values, lower, self.max_distinct_ratio)
        {
            self.switch_to_plain();
            return self.settle();
        }
        let (interned, interned_remap) = std::mem::take(&mut self.interned).finish()?;
        let coded = std::mem::take(&mut self.coded);
        let mut inputs = vec![MergeInput {
            dictionary: &interned,
            referenced: None,
        }];
        for (d, r) in coded.dictionaries.iter().zip(&coded.referenced) {
            inputs.push(MergeInput {
                dictionary: d,
                referenced: Some(r),
            });
        }
        let inputs = if interned.is_empty() {
            &inputs[1..]
        } else {
            &inputs[..]
        };
        let (dict, mut remaps) = if inputs.is_empty() {
            (Dictionary::default(), Vec::new())
        } else {
            merge(inputs)?
        };
        if interned.is_empty() {
            remaps.insert(0, Vec::new());
        }
        // Source 0's codes are provisional ids: compose with the sort.
        remaps[0] = interned_remap
            .iter()
            .map(|&rank| remaps[0][rank as usize])
            .collect();
        if use_dictionary(self.values, dict.len() as u64, self.max_distinct_ratio) {
            return Some(SettledColumn {
                refs: self.refs,
                values: Values::Coded { dict, remaps },
            });
        }
        // Too many distinct values after all: each row's bytes, found
        // through the merged dictionary.
        let mut plain = PlainValues::default();
        plain.bytes.reserve(self.value_bytes as usize);
        for r in &mut self.refs {
            if r.0 != NO_VALUE {
                *r = (
                    PLAIN,
                    plain.push(dict.value(remaps[r.0 as usize][r.1 as usize])),
                );
            }
        }
        Some(SettledColumn {
            refs: self.refs,
            values: Values::Plain(plain),
        })
    }
}

/// Where a settled column's values are.
enum Values {
    /// The file's dictionary and, per source, each code's code in it.
    Coded {
        dict: Dictionary,
        remaps: Vec<Vec<u32>>,
    },
    /// Every value's bytes.
    Plain(PlainValues),
}

/// A row's value in a settled column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot<'a> {
    /// The row has no value.
    None,
    /// Its code in the column's dictionary.
    Code(u32),
    /// Its bytes (the column is stored plainly).
    Bytes(&'a [u8]),
}

/// A column whose storage is decided: codes into a dictionary, or plain.
pub struct SettledColumn {
    refs: Vec<ValueRef>,
    values: Values,
}

impl SettledColumn {
    /// The column's dictionary, if its values are codes.
    pub fn dictionary(&self) -> Option<&Dictionary> {
        match &self.values {
            Values::Coded { dict, .. } => Some(dict),
            Values::Plain(_) => None,
        }
    }

    /// Row `i`'s value.
    pub fn slot(&self, i: usize) -> Slot<'_> {
        let (s, c) = self.refs[i];
        match (&self.values, s) {
            (_, NO_VALUE) => Slot::None,
            (Values::Coded { remaps, .. }, s) => Slot::Code(remaps[s as usize][c as usize]),
            (Values::Plain(p), _) => Slot::Bytes(p.get(c)),
        }
    }

    /// Rows.
    pub fn len(&self) -> usize {
        self.refs.len()
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(c: &SettledColumn) -> Vec<Option<Vec<u8>>> {
        (0..c.len())
            .map(|i| match c.slot(i) {
                Slot::None => None,
                Slot::Code(code) => Some(c.dictionary().expect("dict").value(code).to_vec()),
                Slot::Bytes(b) => Some(b.to_vec()),
            })
            .collect()
    }

    #[test]
    fn bytes_and_codes_settle_into_one_sorted_dictionary() {
        let input = Arc::new(Dictionary::from_sorted([&b"a"[..], b"m", b"z"]).expect("dict"));
        let mut c = ValueColumn::new(1.0);
        c.push_bytes(b"q");
        c.push_coded(CodedValue {
            dictionary: &input,
            code: 2,
        });
        c.push_none();
        c.push_bytes(b"q");
        c.push_coded(CodedValue {
            dictionary: &input,
            code: 0,
        });
        assert_eq!(c.carried_as_codes(), 2);
        let s = c.settle().expect("settle");
        let d = s.dictionary().expect("coded");
        assert_eq!(d.values().collect::<Vec<_>>(), [&b"a"[..], b"q", b"z"]);
        assert_eq!(s.slot(0), Slot::Code(1));
        assert_eq!(s.slot(2), Slot::None);
        assert_eq!(
            values(&s),
            [
                Some(b"q".to_vec()),
                Some(b"z".to_vec()),
                None,
                Some(b"q".to_vec()),
                Some(b"a".to_vec())
            ]
        );
    }

    /// Values drawn from a fixed domain are mostly distinct early in a file
    /// and repeat later: the decision is the whole file's share.
    #[test]
    fn a_file_whose_early_rows_are_mostly_distinct_still_gets_a_dictionary() {
        let mut c = ValueColumn::new(0.25);
        let mut x: u64 = 7;
        for _ in 0..200_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            c.push_bytes(format!("value-{}", (x >> 33) % 10_000).as_bytes());
        }
        let s = c.settle().expect("settle");
        assert_eq!(s.dictionary().map(Dictionary::len), Some(10_000));
    }

    #[test]
    fn too_many_distinct_values_are_kept_plain_with_the_same_contents() {
        // Under the threshold, past it, far past it, and dictionaries
        // switched off.
        for (ratio, n, distinct) in [
            (0.5, 100usize, 10usize),
            (0.1, 100, 50),
            (0.1, 50_000, 50_000),
            (0.0, 100, 10),
        ] {
            let input = Arc::new(Dictionary::from_sorted([&b"in0"[..], b"in1"]).expect("dict"));
            let mut c = ValueColumn::new(ratio);
            let mut want = Vec::new();
            for i in 0..n {
                if i % 7 == 3 {
                    c.push_none();
                    want.push(None);
                } else if i % 5 == 1 {
                    c.push_coded(CodedValue {
                        dictionary: &input,
                        code: (i % 2) as u32,
                    });
                    want.push(Some(format!("in{}", i % 2).into_bytes()));
                } else {
                    let v = format!("v{}", i % distinct).into_bytes();
                    c.push_bytes(&v);
                    want.push(Some(v));
                }
            }
            let s = c.settle().expect("settle");
            assert_eq!(values(&s), want, "ratio {ratio} n {n}");
            let coded = s.dictionary().is_some();
            assert_eq!(coded, ratio == 0.5, "ratio {ratio} n {n}");
        }
    }
}
