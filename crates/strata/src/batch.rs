//! Write batches: a group of updates applied atomically, possibly across
//! keyspaces. The encoded batch is also the write-ahead log record.
//!
//! ```text
//! +-----------------+---------------+---------------------------+
//! | seqno: u64 LE   | count: u32 LE | record * count            |
//! +-----------------+---------------+---------------------------+
//! record := kind: u8 | keyspace: varint32 | key: varint len + bytes
//!           | value: varint len + bytes      (absent for kind 0, delete)
//! ```
//! The i-th record gets sequence number `seqno + i`.

use crate::coding::{get_length_prefixed, get_varint32, put_length_prefixed, put_varint32};
use crate::ids::KeyspaceId;
use crate::key::{SeqNo, ValueKind};

const HEADER_LEN: usize = 12;

/// An atomic group of puts, deletes and merges.
#[derive(Clone, Debug)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

/// One update of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchEntry<'a> {
    pub kind: ValueKind,
    pub keyspace: KeyspaceId,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        WriteBatch {
            rep: vec![0; HEADER_LEN],
            count: 0,
        }
    }

    /// An empty batch with room for one record of a `key_len`-byte key and
    /// a `value_len`-byte value without reallocating (the single-operation
    /// writes: one allocation per write instead of three).
    pub fn for_one(key_len: usize, value_len: usize) -> Self {
        // kind + keyspace varint + two length varints (at most 5 bytes each).
        let mut rep = Vec::with_capacity(HEADER_LEN + 1 + 5 + 5 + key_len + 5 + value_len);
        rep.resize(HEADER_LEN, 0);
        WriteBatch { rep, count: 0 }
    }

    fn push(&mut self, kind: ValueKind, keyspace: KeyspaceId, key: &[u8], value: Option<&[u8]>) {
        self.rep.push(kind as u8);
        put_varint32(&mut self.rep, keyspace.get());
        put_length_prefixed(&mut self.rep, key);
        if let Some(v) = value {
            put_length_prefixed(&mut self.rep, v);
        }
        self.count += 1;
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
    }

    /// Sets `key` to `value` in keyspace `keyspace` (see `Keyspace::id`).
    pub fn put_in(&mut self, keyspace: KeyspaceId, key: &[u8], value: &[u8]) {
        self.push(ValueKind::Put, keyspace, key, Some(value));
    }

    /// Deletes `key` in keyspace `keyspace`.
    pub fn delete_in(&mut self, keyspace: KeyspaceId, key: &[u8]) {
        self.push(ValueKind::Delete, keyspace, key, None);
    }

    /// Adds a merge operand for `key` in keyspace `keyspace`.
    pub fn merge_in(&mut self, keyspace: KeyspaceId, key: &[u8], operand: &[u8]) {
        self.push(ValueKind::Merge, keyspace, key, Some(operand));
    }

    /// Sets `key` in the default keyspace.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.put_in(KeyspaceId::DEFAULT, key, value);
    }

    /// Deletes `key` in the default keyspace.
    pub fn delete(&mut self, key: &[u8]) {
        self.delete_in(KeyspaceId::DEFAULT, key);
    }

    /// Adds a merge operand for `key` in the default keyspace.
    pub fn merge(&mut self, key: &[u8], operand: &[u8]) {
        self.merge_in(KeyspaceId::DEFAULT, key, operand);
    }

    /// Number of updates.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True when the batch holds no update.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Removes every update.
    pub fn clear(&mut self) {
        self.rep.clear();
        self.rep.resize(HEADER_LEN, 0);
        self.count = 0;
    }

    /// Bytes of the encoded batch.
    pub fn encoded_len(&self) -> usize {
        self.rep.len()
    }

    pub(crate) fn set_seqno(&mut self, seq: impl Into<SeqNo>) {
        let seq = seq.into();
        self.rep[..8].copy_from_slice(&seq.get().to_le_bytes());
    }

    pub(crate) fn encoded(&self) -> &[u8] {
        &self.rep
    }

    /// Appends the records of `other` to this batch.
    pub(crate) fn append(&mut self, other: &WriteBatch) {
        self.rep.extend_from_slice(&other.rep[HEADER_LEN..]);
        self.count += other.count;
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
    }

    /// The updates in order.
    pub fn iter(&self) -> BatchIter<'_> {
        BatchIter {
            rest: &self.rep[HEADER_LEN..],
            remaining: self.count,
        }
    }
}

/// A batch decoded from a log record.
#[derive(Debug)]
pub(crate) struct DecodedBatch<'a> {
    pub seqno: SeqNo,
    pub count: u32,
    pub records: &'a [u8],
}

impl<'a> DecodedBatch<'a> {
    /// Parses the header; the records are checked as they are iterated.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, String> {
        if bytes.len() < HEADER_LEN {
            return Err(format!(
                "write batch of {} bytes is shorter than its header",
                bytes.len()
            ));
        }
        let seqno = SeqNo(u64::from_le_bytes(
            bytes[..8].try_into().map_err(|_| "header")?,
        ));
        let count = u32::from_le_bytes(bytes[8..12].try_into().map_err(|_| "header")?);
        // Every update's sequence number must be a valid one.
        if seqno.saturating_add(u64::from(count)) > crate::key::MAX_SEQNO + 1 {
            return Err(format!(
                "write batch of {count} updates at sequence number {seqno} runs past the largest, {}",
                crate::key::MAX_SEQNO
            ));
        }
        Ok(DecodedBatch {
            seqno,
            count,
            records: &bytes[HEADER_LEN..],
        })
    }

    pub fn iter(&self) -> BatchIter<'a> {
        BatchIter {
            rest: self.records,
            remaining: self.count,
        }
    }
}

/// Iterates the updates of a batch; yields an error for malformed bytes.
pub struct BatchIter<'a> {
    rest: &'a [u8],
    remaining: u32,
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Result<BatchEntry<'a>, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            if !self.rest.is_empty() {
                let n = self.rest.len();
                self.rest = &[];
                return Some(Err(format!(
                    "{n} bytes after the last record of a write batch"
                )));
            }
            return None;
        }
        self.remaining -= 1;
        let r = decode_record(&mut self.rest);
        if r.is_err() {
            self.remaining = 0;
            self.rest = &[];
        }
        Some(r)
    }
}

fn decode_record<'a>(src: &mut &'a [u8]) -> Result<BatchEntry<'a>, String> {
    let (&tag, rest) = src
        .split_first()
        .ok_or("write batch ends before its record count")?;
    *src = rest;
    let kind = ValueKind::from_u8(tag).ok_or_else(|| format!("unknown record kind {tag}"))?;
    let keyspace = get_varint32(src).ok_or("bad keyspace id")?;
    let key = get_length_prefixed(src).ok_or("bad key length")?;
    let value = if kind == ValueKind::Delete {
        &[][..]
    } else {
        get_length_prefixed(src).ok_or("bad value length")?
    };
    Ok(BatchEntry {
        kind,
        keyspace: KeyspaceId(keyspace),
        key,
        value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Decodes every update of `bytes` as replay does; returns how many
    /// decoded before the first error, if any.
    fn decode_all(bytes: &[u8]) -> Option<usize> {
        let b = DecodedBatch::parse(bytes).ok()?;
        let mut n = 0usize;
        for e in b.iter() {
            if e.is_err() {
                break;
            }
            n += 1;
            assert!(n <= b.count as usize, "more updates than the header counts");
        }
        Some(n)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Arbitrary bytes, and damaged valid batches, decode to an error or
        /// to at most the header's count of updates, never a panic.
        #[test]
        fn damaged_batches_never_panic(
            raw in prop::collection::vec(any::<u8>(), 0..200),
            flips in prop::collection::vec((any::<usize>(), any::<u8>()), 0..4),
            cut in any::<usize>(),
        ) {
            decode_all(&raw);
            let mut b = WriteBatch::new();
            b.put(b"key", b"value");
            b.merge_in(KeyspaceId(7), b"counter", b"+1");
            b.delete(b"gone");
            b.set_seqno(42);
            let mut bytes = b.encoded().to_vec();
            prop_assert_eq!(decode_all(&bytes), Some(3));
            for (at, x) in flips {
                let i = at % bytes.len();
                bytes[i] ^= x;
            }
            bytes.truncate(cut % (bytes.len() + 1));
            decode_all(&bytes);
        }
    }

    #[test]
    fn a_batch_running_past_the_largest_sequence_number_is_refused() {
        let header = |seqno: SeqNo, count: u32| {
            let mut b = seqno.get().to_le_bytes().to_vec();
            b.extend_from_slice(&count.to_le_bytes());
            b
        };
        let max = crate::key::MAX_SEQNO;
        assert!(DecodedBatch::parse(&header(max, 1)).is_ok(), "last valid");
        let Err(e) = DecodedBatch::parse(&header(max, 2)) else {
            panic!("a batch past the largest sequence number must be refused");
        };
        assert!(e.contains("runs past the largest"), "{e}");
        assert!(DecodedBatch::parse(&header(SeqNo(u64::MAX), 2)).is_err());
    }

    #[test]
    fn encoded_batch_decodes_to_same_records() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"1");
        b.delete_in(KeyspaceId(3), b"b");
        b.merge_in(KeyspaceId(7), b"", b"op");
        b.set_seqno(99);
        let d = DecodedBatch::parse(b.encoded()).expect("parse");
        assert_eq!((d.seqno, d.count), (SeqNo(99), 3));
        let recs: Vec<_> = d.iter().collect::<Result<_, _>>().expect("records");
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[1].kind, ValueKind::Delete);
        assert_eq!(recs[1].keyspace, KeyspaceId(3));
        assert_eq!(recs[2].value, b"op");
    }

    #[test]
    fn truncated_batch_is_an_error_not_a_panic() {
        let mut b = WriteBatch::new();
        b.put(b"key", b"value");
        b.put(b"key2", b"value2");
        let bytes = b.encoded().to_vec();
        for cut in 0..bytes.len() {
            match DecodedBatch::parse(&bytes[..cut]) {
                Err(_) => {}
                Ok(d) => assert!(d.iter().any(|r| r.is_err()), "cut at {cut} decoded cleanly"),
            }
        }
    }
}
