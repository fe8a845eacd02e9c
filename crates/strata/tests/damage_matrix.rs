//! The damage matrix: every metadata and data file kind of a database,
//! damaged every way we could think of, must either open with the
//! acknowledged data or be refused with an error naming the file, and a
//! refused open must leave every file as it was.
//!
//! Kinds: CURRENT, the manifest, the write-ahead log, a table, the lock file
//! and a temporary file (a `CURRENT.NNNNNN.tmp` left by a crash). Damages:
//! missing, empty, truncated at four points, one byte flipped at four
//! points, replaced by a directory, by a symbolic link (to a copy of the
//! original bytes elsewhere), and by a foreign file of the same name.
//!
//! What counts as "the acknowledged data": the fixture's writes are not
//! synced, so losing a suffix of the writes in the write-ahead log is within
//! the durability contract (a power cut may do it) when the log is cut or
//! its tail damaged; any other loss, any wrong value, and any read error
//! that does not name the damaged file fail the case. `DAMAGE_MATRIX_PRINT=1`
//! prints the outcome table (docs/RELIABILITY.md holds it).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use strata::{Db, Options};

mod common;
use common::snapshot;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Current,
    Manifest,
    Wal,
    Table,
    Lock,
    Temp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Damage {
    Missing,
    Empty,
    /// Cut to this many quarters of its length (1..=3), or to its length
    /// less one byte (4).
    Truncated(u8),
    /// One byte flipped at the first byte (0), a third (1), a half (2) or
    /// the last byte (3).
    Flipped(u8),
    Directory,
    Symlink,
    Foreign,
}

const DAMAGES: [Damage; 13] = [
    Damage::Missing,
    Damage::Empty,
    Damage::Truncated(1),
    Damage::Truncated(2),
    Damage::Truncated(3),
    Damage::Truncated(4),
    Damage::Flipped(0),
    Damage::Flipped(1),
    Damage::Flipped(2),
    Damage::Flipped(3),
    Damage::Directory,
    Damage::Symlink,
    Damage::Foreign,
];

const KINDS: [Kind; 6] = [
    Kind::Current,
    Kind::Manifest,
    Kind::Wal,
    Kind::Table,
    Kind::Lock,
    Kind::Temp,
];

/// Keys flushed to the table, then keys left in the log.
const TABLE_KEYS: u32 = 300;
const LOG_KEYS: u32 = 300;

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i}-{}", "v".repeat((i % 13) as usize)).into_bytes()
}

fn options() -> Options {
    let mut o = Options::default();
    o.default_keyspace.write_buffer_size = 1 << 20;
    o.block_cache_bytes = 0;
    o
}

/// A database with one table (keys `0..TABLE_KEYS`), a log holding keys
/// `TABLE_KEYS..TABLE_KEYS + LOG_KEYS` one write each, and a temporary file
/// a crash left behind.
fn fixture(dir: &Path) {
    let db = Db::open(dir, options()).expect("open");
    for i in 0..TABLE_KEYS {
        db.put(&key(i), &value(i)).expect("put");
    }
    db.flush().expect("flush");
    for i in TABLE_KEYS..TABLE_KEYS + LOG_KEYS {
        db.put(&key(i), &value(i)).expect("put");
    }
    db.close().expect("close");
    let current = fs::read(dir.join("CURRENT")).expect("CURRENT");
    fs::write(dir.join("CURRENT.000001.tmp"), current).expect("temp");
    fs::write(dir.join("LOCK"), b"").expect("lock file");
}

fn target(dir: &Path, kind: Kind) -> PathBuf {
    let find = |suffix: &str| {
        let mut v: Vec<PathBuf> = fs::read_dir(dir)
            .expect("list")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(suffix))
            .collect();
        v.sort();
        v.pop()
            .unwrap_or_else(|| panic!("no {suffix} in {}", dir.display()))
    };
    match kind {
        Kind::Current => dir.join("CURRENT"),
        Kind::Manifest => {
            let name = fs::read_to_string(dir.join("CURRENT")).expect("CURRENT");
            dir.join(name.trim_end())
        }
        Kind::Wal => find(".log"),
        Kind::Table => find(".sst"),
        Kind::Lock => dir.join("LOCK"),
        Kind::Temp => dir.join("CURRENT.000001.tmp"),
    }
}

/// Applies `damage` to `path`; `outside` is a directory for link targets.
/// Returns the link target when one was made.
fn damage(path: &Path, d: Damage, outside: &Path) -> Option<PathBuf> {
    let bytes = fs::read(path).unwrap_or_default();
    let len = bytes.len();
    match d {
        Damage::Missing => fs::remove_file(path).expect("remove"),
        Damage::Empty => fs::write(path, b"").expect("write"),
        Damage::Truncated(q) => {
            let to = if q == 4 {
                len.saturating_sub(1)
            } else {
                len * q as usize / 4
            };
            fs::write(path, &bytes[..to]).expect("write");
        }
        Damage::Flipped(at) => {
            let mut b = bytes;
            if !b.is_empty() {
                let i = match at {
                    0 => 0,
                    1 => len / 3,
                    2 => len / 2,
                    _ => len - 1,
                };
                b[i] ^= 0x10;
            }
            fs::write(path, b).expect("write");
        }
        Damage::Directory => {
            fs::remove_file(path).expect("remove");
            fs::create_dir(path).expect("mkdir");
            fs::write(path.join("inside"), b"x").expect("write inside");
        }
        Damage::Symlink => {
            let copy = outside.join("moved-here");
            fs::write(&copy, &bytes).expect("copy");
            fs::remove_file(path).expect("remove");
            std::os::unix::fs::symlink(&copy, path).expect("symlink");
            return Some(copy);
        }
        Damage::Foreign => fs::write(path, b"a file that is not the engine's").expect("write"),
    }
    None
}

/// How one case ended.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    /// Opened with every acknowledged write.
    Intact,
    /// Opened without a suffix of the log's unsynced writes (as a power cut
    /// may leave it).
    LogSuffixLost,
    /// Opened; reads of the damaged table fail naming it, no wrong value.
    ReadsFailNamingFile,
    /// Refused, naming the file, with every file left as it was.
    Refused,
}

fn run_case(kind: Kind, d: Damage) -> Result<Outcome, String> {
    let t = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    let dir = t.path().join("db");
    fixture(&dir);
    let path = target(&dir, kind);
    let name = path
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let link_target = damage(&path, d, outside.path());
    let target_bytes = link_target.as_ref().map(|p| fs::read(p).expect("read"));
    let mut before = snapshot(&dir);
    if kind != Kind::Lock {
        // Opening may create the lock file; it holds nothing.
        before.remove(&dir.join("LOCK"));
    }
    let check_link = || -> Result<(), String> {
        if let (Some(p), Some(b)) = (&link_target, &target_bytes)
            && &fs::read(p).map_err(|e| e.to_string())? != b
        {
            return Err(format!("the link's target {} was modified", p.display()));
        }
        Ok(())
    };
    // A read-only open (what `strata check` does) changes nothing, whether
    // it opens or refuses; when it opens, what it reads is checked like the
    // writable open's.
    let everything = snapshot(&dir);
    if let Ok(db) = Db::open_read_only(&dir, options()) {
        check_data(&db, kind, &name).map_err(|e| format!("read-only open: {e}"))?;
    }
    if snapshot(&dir) != everything {
        return Err("a read-only open changed files".into());
    }
    let outcome = match Db::open(&dir, options()) {
        Err(e) => {
            let msg = e.to_string();
            if !msg.contains(&name) {
                return Err(format!("refused without naming {name}: {msg}"));
            }
            let mut after = snapshot(&dir);
            if kind != Kind::Lock {
                after.remove(&dir.join("LOCK"));
            }
            if after != before {
                let changed: Vec<_> = before
                    .keys()
                    .chain(after.keys())
                    .filter(|p| before.get(*p) != after.get(*p))
                    .collect();
                return Err(format!("a refused open changed {changed:?}: {msg}"));
            }
            Outcome::Refused
        }
        Ok(db) => {
            let o = check_data(&db, kind, &name)?;
            db.close().map_err(|e| e.to_string())?;
            // What opened once opens again, the same.
            let db = Db::open(&dir, options()).map_err(|e| format!("second open: {e}"))?;
            let again = check_data(&db, kind, &name)?;
            if again != o && o != Outcome::ReadsFailNamingFile {
                return Err(format!("second open read {again:?}, first {o:?}"));
            }
            o
        }
    };
    check_link()?;
    Ok(outcome)
}

/// Reads every key back: each is right, or (for a damaged table) an error
/// naming it; missing keys must be a suffix of the log's writes.
fn check_data(db: &Db, kind: Kind, name: &str) -> Result<Outcome, String> {
    let mut missing = Vec::new();
    let mut read_errors = 0;
    for i in 0..TABLE_KEYS + LOG_KEYS {
        match db.get(&key(i)) {
            Ok(Some(v)) if v == value(i) => {}
            Ok(Some(_)) => return Err(format!("key {i}: wrong value")),
            Ok(None) => missing.push(i),
            Err(e) if kind == Kind::Table && e.to_string().contains(name) => read_errors += 1,
            Err(e) => return Err(format!("key {i}: {e}")),
        }
    }
    if read_errors > 0 {
        if !missing.is_empty() {
            return Err(format!("keys {missing:?} missing beside read errors"));
        }
        return Ok(Outcome::ReadsFailNamingFile);
    }
    if missing.is_empty() {
        return Ok(Outcome::Intact);
    }
    let suffix = missing.first().is_some_and(|&f| f >= TABLE_KEYS)
        && missing.windows(2).all(|w| w[1] == w[0] + 1)
        && missing.last() == Some(&(TABLE_KEYS + LOG_KEYS - 1));
    if kind == Kind::Wal && suffix {
        return Ok(Outcome::LogSuffixLost);
    }
    Err(format!(
        "{} keys silently missing (first {:?})",
        missing.len(),
        missing.first()
    ))
}

#[test]
fn every_damage_to_every_file_kind_opens_intact_or_is_refused_naming_the_file() {
    let mut failures = Vec::new();
    let mut table: BTreeMap<(Kind, Damage), Outcome> = BTreeMap::new();
    for kind in KINDS {
        for d in DAMAGES {
            match run_case(kind, d) {
                Ok(o) => {
                    table.insert((kind, d), o);
                }
                Err(e) => failures.push(format!("{kind:?} / {d:?}: {e}")),
            }
        }
    }
    if std::env::var_os("DAMAGE_MATRIX_PRINT").is_some() {
        print_table(&table);
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        KINDS.len() * DAMAGES.len(),
        failures.join("\n")
    );
    // The cases the design pins down, beyond "intact or refused".
    use Damage::*;
    use Kind::*;
    use Outcome::*;
    for (case, want) in [
        ((Current, Missing), Refused),
        ((Manifest, Missing), Refused),
        ((Wal, Missing), Refused),
        ((Wal, Foreign), Refused),
        ((Wal, Flipped(1)), Refused),
        ((Table, Missing), Refused),
        ((Lock, Symlink), Refused),
        ((Temp, Foreign), Intact),
    ] {
        assert_eq!(table.get(&case), Some(&want), "{case:?}");
    }
}

fn print_table(table: &BTreeMap<(Kind, Damage), Outcome>) {
    let short = |o: &Outcome| match o {
        Outcome::Intact => "intact",
        Outcome::LogSuffixLost => "log suffix",
        Outcome::ReadsFailNamingFile => "reads fail",
        Outcome::Refused => "refused",
    };
    let mut header = String::from("| damage |");
    let mut rule = String::from("|---|");
    for k in KINDS {
        header.push_str(&format!(" {k:?} |"));
        rule.push_str("---|");
    }
    println!("{header}\n{rule}");
    for d in DAMAGES {
        let mut row = format!("| {d:?} |");
        for k in KINDS {
            row.push_str(&format!(
                " {} |",
                table.get(&(k, d)).map_or("FAILED", short)
            ));
        }
        println!("{row}");
    }
}
