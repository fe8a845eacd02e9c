//! Identifiers that would otherwise be bare integers.

use std::fmt;

/// A keyspace's id: chosen when the keyspace is created, recorded in the
/// manifest and in every write batch that names the keyspace. The default
/// keyspace is [`KeyspaceId::DEFAULT`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyspaceId(pub u32);

impl KeyspaceId {
    /// The default keyspace.
    pub const DEFAULT: KeyspaceId = KeyspaceId(0);

    /// The id as stored.
    #[inline]
    pub fn get(self) -> u32 {
        self.0
    }

    /// The id after this one (ids are at most 2^30, so this cannot wrap).
    pub(crate) fn next(self) -> KeyspaceId {
        KeyspaceId(self.0 + 1)
    }
}

impl fmt::Display for KeyspaceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
