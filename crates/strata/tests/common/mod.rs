//! Helpers shared by the integration tests.

// Each test crate includes this module and uses only some of it.
#![allow(dead_code)]

pub mod counting;

/// A join test's table: (id, `join_col`, `payload`), keyed by id, the
/// join column an i64 and the payload text, both nullable.
pub fn join_schema(join_col: &str, payload: &str) -> strata::table::Schema {
    use strata::table::{Column, ColumnType, Schema};
    Schema::new(
        vec![
            Column::new("id", ColumnType::Int64),
            Column::nullable(join_col, ColumnType::Int64),
            Column::nullable(payload, ColumnType::Utf8),
        ],
        &["id"],
    )
    .expect("schema")
}

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// What is at a path, for before/after comparisons.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    File(Vec<u8>),
    Dir,
    Link(PathBuf),
}

/// Every entry under `dir`, recursively, with its bytes (links are not
/// followed: their target path is recorded).
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).expect("read dir") {
            let p = e.expect("entry").path();
            let meta = fs::symlink_metadata(&p).expect("stat");
            let entry = if meta.file_type().is_symlink() {
                Entry::Link(fs::read_link(&p).expect("readlink"))
            } else if meta.is_dir() {
                stack.push(p.clone());
                Entry::Dir
            } else {
                Entry::File(fs::read(&p).expect("read"))
            };
            out.insert(p, entry);
        }
    }
    out
}

/// [`snapshot`] without the lock file, which opening a database creates.
pub fn snapshot_except_lock(dir: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut s = snapshot(dir);
    s.retain(|p, _| p.file_name().is_none_or(|n| n != "LOCK"));
    s
}
