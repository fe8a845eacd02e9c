//! Internal keys: a user key followed by an 8-byte trailer.
//!
//! ```text
//! +----------------------+--------------------------------------+
//! | user key (n bytes)   | trailer: u64 little-endian           |
//! |                      |   = (sequence number << 8) | kind    |
//! +----------------------+--------------------------------------+
//! ```
//!
//! Internal keys sort by user key ascending (bytewise), then by trailer
//! descending, so the newest version of a key comes first. A lookup for a key
//! at snapshot `s` seeks to `(key, s, KIND_SEEK)`, which lands on the newest
//! version with sequence number `<= s`.

use std::cmp::Ordering;

/// A sequence number: every write gets the next one; a snapshot is one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SeqNo(pub u64);

impl SeqNo {
    /// The sequence number before any write.
    pub const ZERO: SeqNo = SeqNo(0);

    /// The number as stored (in trailers, batches and the manifest).
    #[inline]
    pub fn get(self) -> u64 {
        self.0
    }

    /// `self + n`, or `None` past `u64::MAX`.
    #[inline]
    pub fn checked_add(self, n: u64) -> Option<SeqNo> {
        self.0.checked_add(n).map(SeqNo)
    }

    /// `self + n`, stopping at `u64::MAX`.
    #[inline]
    pub fn saturating_add(self, n: u64) -> SeqNo {
        SeqNo(self.0.saturating_add(n))
    }
}

impl From<u64> for SeqNo {
    fn from(n: u64) -> SeqNo {
        SeqNo(n)
    }
}

impl std::ops::Add<u64> for SeqNo {
    type Output = SeqNo;
    #[inline]
    fn add(self, n: u64) -> SeqNo {
        SeqNo(self.0 + n)
    }
}

impl std::ops::Sub<u64> for SeqNo {
    type Output = SeqNo;
    #[inline]
    fn sub(self, n: u64) -> SeqNo {
        SeqNo(self.0 - n)
    }
}

impl std::fmt::Display for SeqNo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The largest sequence number (56 bits: the trailer keeps 8 bits for the kind).
pub const MAX_SEQNO: SeqNo = SeqNo((1 << 56) - 1);

/// Length of the trailer appended to every user key.
pub const TRAILER_LEN: usize = 8;

/// The kind byte used in seek keys; larger than every stored kind so that a
/// seek key sorts before all stored entries with the same sequence number.
pub const KIND_SEEK: u8 = 0xff;

/// What an entry means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ValueKind {
    /// A tombstone: the key is deleted as of this sequence number.
    Delete = 0,
    /// A full value.
    Put = 1,
    /// A merge operand, combined with older versions by the merge operator.
    Merge = 2,
}

impl ValueKind {
    /// Decodes a stored kind byte.
    #[inline]
    pub fn from_u8(b: u8) -> Option<ValueKind> {
        match b {
            0 => Some(ValueKind::Delete),
            1 => Some(ValueKind::Put),
            2 => Some(ValueKind::Merge),
            _ => None,
        }
    }
}

/// An internal key split into its parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    /// The key the application wrote.
    pub user_key: &'a [u8],
    /// The write's sequence number.
    pub seqno: SeqNo,
    /// Put, delete or merge operand.
    pub kind: ValueKind,
}

/// Packs a sequence number and kind byte into a trailer.
#[inline]
pub fn pack_trailer(seqno: SeqNo, kind: u8) -> u64 {
    debug_assert!(seqno <= MAX_SEQNO);
    (seqno.0 << 8) | u64::from(kind)
}

/// Appends `user_key` and its trailer to `dst`.
#[inline]
pub fn append_internal_key(dst: &mut Vec<u8>, user_key: &[u8], seqno: impl Into<SeqNo>, kind: u8) {
    let seqno = seqno.into();
    dst.extend_from_slice(user_key);
    dst.extend_from_slice(&pack_trailer(seqno, kind).to_le_bytes());
}

/// Builds an owned internal key.
#[inline]
pub fn make_internal_key(user_key: &[u8], seqno: impl Into<SeqNo>, kind: ValueKind) -> Vec<u8> {
    let seqno = seqno.into();
    let mut v = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    append_internal_key(&mut v, user_key, seqno, kind as u8);
    v
}

/// Builds the key that a lookup of `user_key` at snapshot `seqno` seeks to.
#[inline]
pub fn make_seek_key(user_key: &[u8], seqno: impl Into<SeqNo>) -> Vec<u8> {
    let seqno = seqno.into();
    let mut v = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    append_internal_key(&mut v, user_key, seqno, KIND_SEEK);
    v
}

/// A seek key that lives on the stack when the user key is short (most
/// are), so a point read allocates nothing to build it.
pub(crate) struct SeekKey {
    inline: [u8; SeekKey::INLINE],
    len: usize,
    heap: Vec<u8>,
}

impl SeekKey {
    /// Longest seek key (user key plus trailer) kept inline.
    const INLINE: usize = 64;

    /// The key a lookup of `user_key` at snapshot `seqno` seeks to.
    #[inline]
    pub(crate) fn new(user_key: &[u8], seqno: impl Into<SeqNo>) -> Self {
        let seqno = seqno.into();
        let len = user_key.len() + TRAILER_LEN;
        if len > Self::INLINE {
            return SeekKey {
                inline: [0; Self::INLINE],
                len,
                heap: make_seek_key(user_key, seqno),
            };
        }
        let mut inline = [0; Self::INLINE];
        inline[..user_key.len()].copy_from_slice(user_key);
        inline[user_key.len()..len].copy_from_slice(&pack_trailer(seqno, KIND_SEEK).to_le_bytes());
        SeekKey {
            inline,
            len,
            heap: Vec::new(),
        }
    }

    /// The encoded internal key.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[u8] {
        if self.len > Self::INLINE {
            &self.heap
        } else {
            &self.inline[..self.len]
        }
    }
}

/// The user-key part of an internal key. Internal keys shorter than the
/// trailer are only produced by corrupt input, which decoders reject before
/// calling this; for robustness such a key yields an empty user key.
#[inline]
pub fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(TRAILER_LEN)]
}

/// The trailer of an internal key (0 if the key is too short).
#[inline]
pub fn trailer(ikey: &[u8]) -> u64 {
    if ikey.len() < TRAILER_LEN {
        return 0;
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(&ikey[ikey.len() - TRAILER_LEN..]);
    u64::from_le_bytes(b)
}

/// The sequence number of an internal key.
#[inline]
pub fn seqno(ikey: &[u8]) -> SeqNo {
    SeqNo(trailer(ikey) >> 8)
}

/// Splits an internal key; `None` if it is too short or has an unknown kind.
#[inline]
pub fn parse_internal_key(ikey: &[u8]) -> Option<ParsedKey<'_>> {
    if ikey.len() < TRAILER_LEN {
        return None;
    }
    let t = trailer(ikey);
    let kind = ValueKind::from_u8((t & 0xff) as u8)?;
    Some(ParsedKey {
        user_key: user_key(ikey),
        seqno: SeqNo(t >> 8),
        kind,
    })
}

/// Orders internal keys: user key ascending, then trailer descending.
#[inline]
pub fn compare_internal(a: &[u8], b: &[u8]) -> Ordering {
    match user_key(a).cmp(user_key(b)) {
        Ordering::Equal => trailer(b).cmp(&trailer(a)),
        o => o,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_versions_sort_first() {
        let old = make_internal_key(b"k", 5, ValueKind::Put);
        let new = make_internal_key(b"k", 9, ValueKind::Put);
        assert_eq!(compare_internal(&new, &old), Ordering::Less);
        let other = make_internal_key(b"l", 100, ValueKind::Put);
        assert_eq!(compare_internal(&old, &other), Ordering::Less);
    }

    #[test]
    fn seek_key_lands_on_newest_visible_version() {
        let seek = make_seek_key(b"k", 7);
        let v9 = make_internal_key(b"k", 9, ValueKind::Put);
        let v7 = make_internal_key(b"k", 7, ValueKind::Merge);
        assert_eq!(compare_internal(&v9, &seek), Ordering::Less);
        assert_eq!(compare_internal(&seek, &v7), Ordering::Less);
    }

    #[test]
    fn stack_seek_keys_match_heap_ones_at_every_length() {
        // Around the inline limit: user keys of 0 to 70 bytes.
        for n in 0..=70usize {
            let uk: Vec<u8> = (0..n).map(|i| i as u8 ^ 0x5a).collect();
            let seqno = (n as u64) << 20 | 7;
            assert_eq!(
                SeekKey::new(&uk, seqno).as_slice(),
                make_seek_key(&uk, seqno).as_slice(),
                "user key of {n} bytes"
            );
        }
    }

    #[test]
    fn parse_rejects_short_keys_and_unknown_kinds() {
        assert!(parse_internal_key(b"short").is_none());
        let mut k = make_internal_key(b"a", 1, ValueKind::Put);
        let n = k.len();
        k[n - TRAILER_LEN] = 7;
        assert!(parse_internal_key(&k).is_none());
        let k = make_internal_key(b"", 42, ValueKind::Delete);
        let p = parse_internal_key(&k).expect("valid key");
        assert_eq!(
            (p.user_key, p.seqno, p.kind),
            (&b""[..], SeqNo(42), ValueKind::Delete)
        );
    }
}
