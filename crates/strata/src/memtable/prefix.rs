//! Prefix extractors: which leading bytes of a user key the hash
//! representations hash on.
//!
//! An extractor returns a *length*, never a slice, so it cannot hand out
//! bytes outside the key. A key whose extractor answer is `None`, or a length
//! longer than the key, is *outside the extractor's domain*:
//!
//! * the write path refuses such a key with [`crate::Error::InvalidArgument`]
//!   before anything is logged, for every keyspace whose memtable kind hashes
//!   on prefixes (see [`super::MemTableOptions::check_key`]);
//! * the memtable itself never panics on one: a key that still reaches it
//!   (for example replayed from a log written under another extractor) goes to
//!   a dedicated overflow bucket, and the representation counts it
//!   ([`super::RepCounters::out_of_domain`]).
//!
//! Point lookups only visit the bucket of the seek key's prefix, so keys
//! sharing a prefix must form a contiguous range in bytewise order (true of
//! every fixed-length or capped prefix); this is RocksDB's contract too.

use std::fmt;

/// Chooses the prefix of a user key.
pub trait PrefixExtractor: Send + Sync {
    /// A stable name, for options dumps and errors.
    fn name(&self) -> &str;
    /// The length of `user_key`'s prefix; `None` (or a length longer than the
    /// key) when the key is outside the extractor's domain.
    fn prefix_len(&self, user_key: &[u8]) -> Option<usize>;
}

impl fmt::Debug for dyn PrefixExtractor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PrefixExtractor({})", self.name())
    }
}

/// The prefix of `user_key`, or `None` when the key is outside the domain.
#[inline]
pub(crate) fn extract<'a>(x: &dyn PrefixExtractor, user_key: &'a [u8]) -> Option<&'a [u8]> {
    match x.prefix_len(user_key) {
        Some(n) if n <= user_key.len() => Some(&user_key[..n]),
        _ => None,
    }
}

/// The first `n` bytes; keys shorter than `n` are outside the domain (and
/// refused by the write path), like RocksDB's `NewFixedPrefixTransform`.
#[derive(Clone, Debug)]
pub struct FixedPrefix {
    len: usize,
    name: String,
}

impl FixedPrefix {
    /// A fixed prefix of `len` bytes.
    pub fn new(len: usize) -> Self {
        FixedPrefix {
            len,
            name: format!("fixed:{len}"),
        }
    }
}

impl PrefixExtractor for FixedPrefix {
    fn name(&self) -> &str {
        &self.name
    }
    fn prefix_len(&self, _user_key: &[u8]) -> Option<usize> {
        Some(self.len)
    }
}

/// The first `min(n, key length)` bytes; every key is in the domain, like
/// RocksDB's `NewCappedPrefixTransform`.
#[derive(Clone, Debug)]
pub struct CappedPrefix {
    len: usize,
    name: String,
}

impl CappedPrefix {
    /// A prefix of at most `len` bytes.
    pub fn new(len: usize) -> Self {
        CappedPrefix {
            len,
            name: format!("capped:{len}"),
        }
    }
}

impl PrefixExtractor for CappedPrefix {
    fn name(&self) -> &str {
        &self.name
    }
    fn prefix_len(&self, user_key: &[u8]) -> Option<usize> {
        Some(self.len.min(user_key.len()))
    }
}

/// A prefix chosen by a user function returning the prefix length.
pub struct FnPrefix<F> {
    name: String,
    f: F,
}

impl<F: Fn(&[u8]) -> Option<usize> + Send + Sync> FnPrefix<F> {
    /// An extractor named `name` that calls `f`.
    pub fn new(name: impl Into<String>, f: F) -> Self {
        FnPrefix {
            name: name.into(),
            f,
        }
    }
}

impl<F: Fn(&[u8]) -> Option<usize> + Send + Sync> PrefixExtractor for FnPrefix<F> {
    fn name(&self) -> &str {
        &self.name
    }
    fn prefix_len(&self, user_key: &[u8]) -> Option<usize> {
        (self.f)(user_key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_domain_keys_yield_none_not_a_panic() {
        let fixed = FixedPrefix::new(4);
        assert_eq!(extract(&fixed, b"abcdef"), Some(&b"abcd"[..]));
        assert_eq!(extract(&fixed, b"ab"), None);
        let capped = CappedPrefix::new(4);
        assert_eq!(extract(&capped, b"ab"), Some(&b"ab"[..]));
        let liar = FnPrefix::new("liar", |_k: &[u8]| Some(usize::MAX));
        assert_eq!(extract(&liar, b"abc"), None);
        let until_dot = FnPrefix::new("dot", |k: &[u8]| k.iter().position(|&b| b == b'.'));
        assert_eq!(extract(&until_dot, b"user.1"), Some(&b"user"[..]));
        assert_eq!(extract(&until_dot, b"nodot"), None);
    }
}
