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

/// A file's number: the name of a table (`000012.sst`), write-ahead log
/// (`000013.log`) or manifest (`MANIFEST-000014`). One counter numbers all
/// three; a number is never reused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FileNumber(pub u64);

impl FileNumber {
    /// The number as stored.
    #[inline]
    pub fn get(self) -> u64 {
        self.0
    }
}

impl std::ops::Add<u64> for FileNumber {
    type Output = FileNumber;
    fn add(self, n: u64) -> FileNumber {
        FileNumber(self.0 + n)
    }
}

impl std::ops::AddAssign<u64> for FileNumber {
    fn add_assign(&mut self, n: u64) {
        self.0 += n;
    }
}

impl fmt::Display for FileNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:06}", self.0)
    }
}

/// A level of a keyspace's tree: 0 holds freshly flushed files, each deeper
/// level about `size_ratio` times the bytes of the one above. A keyspace
/// has `num_levels` of them (at most 32; the manifest refuses a file at
/// level 64 or deeper).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Level(pub u8);

impl Level {
    /// Level 0, where flushes write.
    pub const ZERO: Level = Level(0);

    /// The level as stored.
    #[inline]
    pub fn get(self) -> u8 {
        self.0
    }

    /// The level as an index into per-level vectors.
    #[inline]
    pub fn index(self) -> usize {
        usize::from(self.0)
    }

    /// The level below this one (levels are far below 255, so this cannot
    /// wrap).
    #[inline]
    pub fn next(self) -> Level {
        Level(self.0 + 1)
    }

    /// The level at `index` of per-level vectors.
    ///
    /// # Panics
    /// If `index` is past any level (255).
    #[inline]
    pub fn from_index(index: usize) -> Level {
        Level(u8::try_from(index).expect("a level index is below 256"))
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
