//! The one error type of the engine.
//!
//! Every fallible call returns [`Result`]. Errors that come from bytes read
//! off disk are always [`Error::Corruption`] and name the file and offset, so a
//! user (or `strata check`) can find the damage; they never panic.

use std::fmt;
use std::path::PathBuf;

/// Result alias used throughout the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O call failed. `context` says which call and on
    /// which file.
    Io {
        /// The call and the file.
        context: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Bytes read from disk are not what the engine wrote: a checksum does not
    /// match, a length points past the end, a field holds an impossible value.
    Corruption {
        /// The damaged file.
        file: PathBuf,
        /// Where in it the damage was found.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// The caller passed something the engine refuses; nothing was written.
    InvalidArgument(String),
    /// Another process (or another `Db` in this one) holds the database lock.
    Locked {
        /// The database directory.
        path: PathBuf,
    },
    /// A write or sync failed earlier; the database refuses writes until it
    /// is closed and reopened, so that no acknowledged write is lost.
    ReadOnly {
        /// The failure that caused it.
        cause: String,
    },
    /// The file was written by a format version this build does not know.
    UnsupportedVersion {
        /// The file.
        file: PathBuf,
        /// The version it records.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// The path holds no database and `create_if_missing` is off.
    NotFound {
        /// The directory.
        path: PathBuf,
    },
    /// The database was opened read-only ([`crate::Options::read_only`]);
    /// the operation would change it.
    OpenedReadOnly {
        /// What was refused.
        operation: &'static str,
    },
    /// The database has been closed.
    Closed,
    /// No table has this name.
    TableNotFound(String),
    /// A table of this name exists already.
    TableExists(String),
    /// An insert named a key the table holds already (or named it twice);
    /// nothing of the insert was written.
    DuplicateKey {
        /// The table.
        table: String,
        /// The key's values, as text.
        key: String,
    },
    /// An operation with a memory budget (a join, [`crate::join::Join::memory`])
    /// needs more than the budget holds; it stopped and released what it
    /// held, and wrote nothing to the database (a streamed join may have
    /// handed out batches before it). A larger budget, or where `what`
    /// says so another method, runs it.
    MemoryBudget {
        /// The budget, in bytes.
        limit: usize,
        /// What did not fit, what was in use beside it, and what to do.
        what: String,
    },
    /// A write would put a null in a column that is not nullable; nothing
    /// of it was written.
    NotNull {
        /// The column.
        column: String,
        /// What held the null, if more is known (for example "the batch
        /// holds 3 nulls in it").
        detail: Option<String>,
    },
}

impl Error {
    /// Builds an [`Error::Corruption`].
    pub fn corruption(file: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Self {
        Error::Corruption {
            file: file.into(),
            offset,
            reason: reason.into(),
        }
    }

    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// True for errors caused by damaged on-disk data.
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }

    /// A copy good enough to hand to several waiters (I/O errors keep their
    /// kind and message, not their source chain).
    pub fn duplicate(&self) -> Error {
        match self {
            Error::Io { context, source } => Error::Io {
                context: context.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            Error::Corruption {
                file,
                offset,
                reason,
            } => Error::Corruption {
                file: file.clone(),
                offset: *offset,
                reason: reason.clone(),
            },
            Error::InvalidArgument(s) => Error::InvalidArgument(s.clone()),
            Error::Locked { path } => Error::Locked { path: path.clone() },
            Error::ReadOnly { cause } => Error::ReadOnly {
                cause: cause.clone(),
            },
            Error::UnsupportedVersion {
                file,
                found,
                supported,
            } => Error::UnsupportedVersion {
                file: file.clone(),
                found: *found,
                supported: *supported,
            },
            Error::NotFound { path } => Error::NotFound { path: path.clone() },
            Error::OpenedReadOnly { operation } => Error::OpenedReadOnly { operation },
            Error::Closed => Error::Closed,
            Error::TableNotFound(n) => Error::TableNotFound(n.clone()),
            Error::TableExists(n) => Error::TableExists(n.clone()),
            Error::MemoryBudget { limit, what } => Error::MemoryBudget {
                limit: *limit,
                what: what.clone(),
            },
            Error::NotNull { column, detail } => Error::NotNull {
                column: column.clone(),
                detail: detail.clone(),
            },
            Error::DuplicateKey { table, key } => Error::DuplicateKey {
                table: table.clone(),
                key: key.clone(),
            },
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { context, source } => write!(f, "I/O error: {context}: {source}"),
            Error::Corruption {
                file,
                offset,
                reason,
            } => write!(
                f,
                "corruption in {} at offset {offset}: {reason}",
                file.display()
            ),
            Error::InvalidArgument(s) => write!(f, "invalid argument: {s}"),
            Error::Locked { path } => write!(
                f,
                "database at {} is locked by another process (or another open handle in this one)",
                path.display()
            ),
            Error::ReadOnly { cause } => write!(
                f,
                "database is read-only after an earlier failure ({cause}); close and reopen it"
            ),
            Error::UnsupportedVersion {
                file,
                found,
                supported,
            } => write!(
                f,
                "{} has format version {found}, this build reads versions up to {supported}",
                file.display()
            ),
            Error::NotFound { path } => write!(
                f,
                "no database at {} (set create_if_missing to create one)",
                path.display()
            ),
            Error::Closed => write!(f, "database is closed"),
            Error::TableNotFound(n) => write!(f, "no table named {n:?}"),
            Error::TableExists(n) => write!(f, "a table named {n:?} exists already"),
            Error::MemoryBudget { limit, what } => {
                write!(f, "the memory budget of {limit} bytes cannot hold {what}")
            }
            Error::NotNull { column, detail } => {
                write!(f, "column {column:?} is not nullable")?;
                match detail {
                    Some(d) => write!(f, "; {d}"),
                    None => Ok(()),
                }
            }
            Error::DuplicateKey { table, key } => write!(
                f,
                "table {table:?} has a row with key ({key}) already; nothing was inserted"
            ),
            Error::OpenedReadOnly { operation } => write!(
                f,
                "cannot {operation}: the database was opened read-only (open it without \
                 read_only / --read-only to change it)"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
