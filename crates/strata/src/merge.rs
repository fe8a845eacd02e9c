//! The user-supplied merge operator: read-modify-write without a read.
//!
//! A merge entry stores an *operand*; reads, flushes and compactions combine
//! the operands of a key with its older value. The operator must be
//! associative — `merge(merge(base, [a, b]), [c]) == merge(base, [a, merge(None,
//! [b, c])])` — because compaction folds runs of operands into one operand
//! without the base value (counters, appends, set unions all qualify).

use std::fmt;

/// Combines merge operands with an existing value.
pub trait MergeOperator: Send + Sync {
    /// A stable name, recorded so that a database is not reopened with a
    /// different operator by mistake.
    fn name(&self) -> &str;

    /// Applies `operands` (oldest first) to `existing` (`None` when the key has
    /// no older value or was deleted). An `Err` is reported to the reader as a
    /// merge failure; compaction keeps the operands unmerged in that case.
    fn merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>, String>;

    /// Combines `operands` (oldest first) into one operand, for a
    /// compaction that has not reached the key's oldest version: the result
    /// is stored as a merge operand and later applied to whatever lies
    /// below. The default, `merge(key, None, operands)`, is right for
    /// operators whose operands combine as values do (counters, appends);
    /// an operator whose operands can undo older values (removals) keeps
    /// them in the combined operand instead.
    fn merge_operands(&self, key: &[u8], operands: &[&[u8]]) -> Result<Vec<u8>, String> {
        self.merge(key, None, operands)
    }
}

impl fmt::Debug for dyn MergeOperator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MergeOperator({})", self.name())
    }
}

/// A ready-made operator: values are little-endian `u64` counters and
/// operands are added (wrapping). Malformed values count as zero-padded.
#[derive(Debug, Default, Clone, Copy)]
pub struct U64AddOperator;

fn decode_u64_lossy(b: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    let n = b.len().min(8);
    buf[..n].copy_from_slice(&b[..n]);
    u64::from_le_bytes(buf)
}

impl MergeOperator for U64AddOperator {
    fn name(&self) -> &str {
        "strata.u64add"
    }

    fn merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>, String> {
        let mut sum = existing.map(decode_u64_lossy).unwrap_or(0);
        for op in operands {
            sum = sum.wrapping_add(decode_u64_lossy(op));
        }
        Ok(sum.to_le_bytes().to_vec())
    }
}

/// A ready-made operator: operands are appended to the value, separated by
/// one delimiter byte.
#[derive(Debug, Clone, Copy)]
pub struct AppendOperator {
    /// The byte written between the value and each operand.
    pub delimiter: u8,
}

impl MergeOperator for AppendOperator {
    fn name(&self) -> &str {
        "strata.append"
    }

    fn merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>, String> {
        let mut out = existing.map(<[u8]>::to_vec).unwrap_or_default();
        for (i, op) in operands.iter().enumerate() {
            // A delimiter before every operand but a first one with no value
            // under it, whatever it holds: an empty operand is still one, so
            // operands combined first (compaction without the key's base)
            // and applied later give what applying them one by one does.
            if existing.is_some() || i > 0 {
                out.push(self.delimiter);
            }
            out.extend_from_slice(op);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_is_associative() {
        let op = AppendOperator { delimiter: b',' };
        let whole = op
            .merge(b"k", Some(b"x"), &[b"a", b"b", b"c"])
            .expect("merge");
        let folded = op.merge(b"k", None, &[b"b", b"c"]).expect("merge");
        let two_step = op.merge(b"k", Some(b"x"), &[b"a", &folded]).expect("merge");
        assert_eq!(whole, b"x,a,b,c");
        assert_eq!(whole, two_step);
        // Empty operands and values too: every split of the operands,
        // combined first and applied later, gives the whole merge.
        let ops: [&[u8]; 4] = [b"", b"b", b"", b""];
        for base in [None, Some(&b"x"[..]), Some(&b""[..])] {
            let whole = op.merge(b"k", base, &ops).expect("merge");
            for cut in 0..ops.len() {
                let rest = op.merge(b"k", None, &ops[cut..]).expect("merge");
                let mut first: Vec<&[u8]> = ops[..cut].to_vec();
                first.push(&rest);
                let two_step = op.merge(b"k", base, &first).expect("merge");
                assert_eq!(whole, two_step, "base {base:?}, cut at {cut}");
            }
        }
        assert_eq!(op.merge(b"k", Some(b"x"), &ops).expect("merge"), b"x,,b,,");
    }

    #[test]
    fn counter_adds() {
        let op = U64AddOperator;
        let one = 1u64.to_le_bytes();
        let two = 2u64.to_le_bytes();
        let r = op
            .merge(b"k", Some(&5u64.to_le_bytes()), &[&one, &two])
            .expect("merge");
        assert_eq!(decode_u64_lossy(&r), 8);
    }
}
