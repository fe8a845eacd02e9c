//! Point-lookup resolution: walks the versions of one user key from newest
//! to oldest across sources, collecting merge operands until a value or a
//! tombstone ends the search.

use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueKind, parse_internal_key};
use crate::merge::MergeOperator;

/// State of a point lookup as it visits sources newest first.
pub(crate) struct Lookup<'a> {
    user_key: &'a [u8],
    snapshot: SeqNo,
    /// Merge operands, newest first.
    operands: Vec<Vec<u8>>,
    /// `Some(Some(v))`: a value was found; `Some(None)`: a tombstone.
    base: Option<Option<Vec<u8>>>,
    corrupt_key: bool,
    /// Entries seen for the key (counts whether a filter was a false positive).
    pub matched: bool,
}

impl<'a> Lookup<'a> {
    pub fn new(user_key: &'a [u8], snapshot: SeqNo) -> Self {
        Lookup {
            user_key,
            snapshot,
            operands: Vec::new(),
            base: None,
            corrupt_key: false,
            matched: false,
        }
    }

    /// True once a value or tombstone has ended the search.
    pub fn is_done(&self) -> bool {
        self.base.is_some() || self.corrupt_key
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
        self.matched = true;
        match p.kind {
            ValueKind::Put => {
                self.base = Some(Some(value.to_vec()));
                false
            }
            ValueKind::Delete => {
                self.base = Some(None);
                false
            }
            ValueKind::Merge => {
                self.operands.push(value.to_vec());
                true
            }
        }
    }

    /// The value the key has at the snapshot.
    pub fn finish(
        self,
        merge: Option<&dyn MergeOperator>,
        source: &str,
    ) -> Result<Option<Vec<u8>>> {
        if self.corrupt_key {
            return Err(Error::corruption(source, 0, "malformed internal key"));
        }
        let base = self.base.flatten();
        if self.operands.is_empty() {
            return Ok(base);
        }
        let op = merge.ok_or_else(|| {
            Error::InvalidArgument(
                "key has merge operands but the keyspace has no merge operator".into(),
            )
        })?;
        let operands: Vec<&[u8]> = self.operands.iter().rev().map(Vec::as_slice).collect();
        op.merge(self.user_key, base.as_deref(), &operands)
            .map(Some)
            .map_err(|e| {
                Error::InvalidArgument(format!("merge operator {} failed: {e}", op.name()))
            })
    }
}
