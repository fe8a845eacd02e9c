//! Point-lookup resolution: walks the versions of one user key from newest
//! to oldest across sources, collecting merge operands until a value or a
//! tombstone ends the search.
//!
//! The value goes straight into a buffer the caller owns, so a caller that
//! reads many keys (`Keyspace::get_into`) reuses one allocation; `get`
//! passes a fresh, empty buffer and costs what it did before.

use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueKind, parse_internal_key};
use crate::merge::MergeOperator;

/// What the newest visible version that ends the search was.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Base {
    /// Not found yet.
    Pending,
    /// A value, copied into the output buffer.
    Value,
    /// A tombstone.
    Deleted,
}

/// State of a point lookup as it visits sources newest first.
pub(crate) struct Lookup<'a> {
    user_key: &'a [u8],
    snapshot: SeqNo,
    /// Merge operands, newest first.
    operands: Vec<Vec<u8>>,
    base: Base,
    /// Receives the base value (and, at `finish`, the merged value).
    out: &'a mut Vec<u8>,
    corrupt_key: bool,
}

impl<'a> Lookup<'a> {
    pub fn new(user_key: &'a [u8], snapshot: SeqNo, out: &'a mut Vec<u8>) -> Self {
        out.clear();
        Lookup {
            user_key,
            snapshot,
            operands: Vec::new(),
            base: Base::Pending,
            out,
            corrupt_key: false,
        }
    }

    /// True once a value or tombstone has ended the search.
    pub fn is_done(&self) -> bool {
        self.base != Base::Pending || self.corrupt_key
    }

    /// Visits one entry; returns whether to continue with the next.
    pub fn visit(&mut self, ikey: &[u8], value: &[u8]) -> bool {
        let Some(p) = parse_internal_key(ikey) else {
            self.corrupt_key = true;
            return false;
        };
        if p.user_key != self.user_key {
            return false;
        }
        if p.seqno > self.snapshot {
            return true;
        }
        match p.kind {
            ValueKind::Put => {
                self.out.extend_from_slice(value);
                self.base = Base::Value;
                false
            }
            ValueKind::Delete => {
                self.base = Base::Deleted;
                false
            }
            ValueKind::Merge => {
                self.operands.push(value.to_vec());
                true
            }
        }
    }

    /// Whether the key has a value at the snapshot; if so it is in the
    /// output buffer (which is left empty otherwise).
    pub fn finish(self, merge: Option<&dyn MergeOperator>, source: &str) -> Result<bool> {
        if self.corrupt_key {
            self.out.clear();
            return Err(Error::corruption(source, 0, "malformed internal key"));
        }
        if self.operands.is_empty() {
            return Ok(self.base == Base::Value);
        }
        let Some(op) = merge else {
            self.out.clear();
            return Err(Error::InvalidArgument(
                "key has merge operands but the keyspace has no merge operator".into(),
            ));
        };
        let operands: Vec<&[u8]> = self.operands.iter().rev().map(Vec::as_slice).collect();
        let base = (self.base == Base::Value).then_some(self.out.as_slice());
        match op.merge(self.user_key, base, &operands) {
            Ok(merged) => {
                *self.out = merged;
                Ok(true)
            }
            Err(e) => {
                self.out.clear();
                Err(Error::InvalidArgument(format!(
                    "merge operator {} failed: {e}",
                    op.name()
                )))
            }
        }
    }
}
