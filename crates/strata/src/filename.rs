//! Names of the files in a database directory.
//!
//! ```text
//! CURRENT            name of the live manifest, one line
//! LOCK               held (flock) by the process that has the database open
//! MANIFEST-000001    version edits (record log)
//! 000002.log         write-ahead log (record log of write batches)
//! 000003.sst         table file
//! *.tmp              temporary files, removed at open
//! ```

use std::path::{Path, PathBuf};

use crate::ids::FileNumber;

/// The largest file number the engine hands out or accepts. Far beyond any
/// real database (a file a microsecond for two thousand years), it leaves
/// room above it so that counting on from a number read from disk cannot
/// overflow; a manifest naming a larger one is corrupt, and a file named
/// with a larger one is not the engine's.
pub const MAX_FILE_NUMBER: FileNumber = FileNumber(1 << 56);

/// What a file in the database directory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Current,
    Lock,
    Manifest(FileNumber),
    Log(FileNumber),
    Table(FileNumber),
    Temp,
}

pub fn log_path(dir: &Path, n: FileNumber) -> PathBuf {
    dir.join(format!("{n}.log"))
}

pub fn table_path(dir: &Path, n: FileNumber) -> PathBuf {
    dir.join(format!("{n}.sst"))
}

pub fn manifest_name(n: FileNumber) -> String {
    format!("MANIFEST-{n}")
}

pub fn current_path(dir: &Path) -> PathBuf {
    dir.join("CURRENT")
}

pub fn lock_path(dir: &Path) -> PathBuf {
    dir.join("LOCK")
}

/// Classifies a directory entry; `None` for files that are not the engine's.
pub fn parse(name: &str) -> Option<FileKind> {
    let number = |n: &str| {
        n.parse::<u64>()
            .ok()
            .map(FileNumber)
            .filter(|&n| n <= MAX_FILE_NUMBER)
    };
    match name {
        "CURRENT" => return Some(FileKind::Current),
        "LOCK" => return Some(FileKind::Lock),
        _ => {}
    }
    if name.ends_with(".tmp") {
        return Some(FileKind::Temp);
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return number(n).map(FileKind::Manifest);
    }
    if let Some(n) = name.strip_suffix(".log") {
        return number(n).map(FileKind::Log);
    }
    if let Some(n) = name.strip_suffix(".sst") {
        return number(n).map(FileKind::Table);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_past_the_largest_are_not_ours() {
        let max = MAX_FILE_NUMBER;
        assert_eq!(parse(&format!("{max}.sst")), Some(FileKind::Table(max)));
        assert_eq!(parse(&format!("{}.sst", max + 1)), None);
        assert_eq!(parse(&format!("{}.log", u64::MAX)), None);
        assert_eq!(parse(&format!("MANIFEST-{}", u64::MAX)), None);
    }

    #[test]
    fn names_round_trip() {
        let d = Path::new("/db");
        let name = |p: PathBuf| p.file_name().and_then(|n| n.to_str()).map(str::to_string);
        assert_eq!(
            parse(&name(log_path(d, FileNumber(7))).unwrap_or_default()),
            Some(FileKind::Log(FileNumber(7)))
        );
        assert_eq!(
            parse(&name(table_path(d, FileNumber(1234567))).unwrap_or_default()),
            Some(FileKind::Table(FileNumber(1234567)))
        );
        assert_eq!(
            parse(&manifest_name(FileNumber(3))),
            Some(FileKind::Manifest(FileNumber(3)))
        );
        assert_eq!(parse("CURRENT.tmp"), Some(FileKind::Temp));
        assert_eq!(parse("notes.txt"), None);
        assert_eq!(parse("abc.sst"), None);
    }
}
