//! The `strata` command line's commands (their arguments: [`crate::args`]).
//!
//! Exit codes: 0 success; 1 a database error (an unknown table among them),
//! a key or row not found (`get`, `table get`, `table update`), a bad input
//! line (`load`, `table import`) or corruption found (`check`); 2 a usage
//! error (bad flag or argument value: also an unknown column, a value not
//! of its column's type, a bad predicate or layout).

use std::io::{self, BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};

use strata::{Db, Error, Options, ReadOptions, WriteBatch, WriteOptions};

pub(crate) use crate::args::parse_size_arg;
pub use crate::args::{Bytes, Cli, CliCommand, GlobalArgs};
use crate::encoding::{decode_token_bytes, encode_bytes};
use crate::shell::{self, Command};
use crate::table;

/// Exit code of a database error, a failed check or a missing key.
pub const EXIT_FAILURE: i32 = 1;
/// Exit code of a usage error.
pub const EXIT_USAGE: i32 = 2;

/// Updates written per batch by `load`.
pub const LOAD_BATCH_ENTRIES: usize = 1000;
/// A `load` batch is also written once it holds this many bytes.
pub const LOAD_BATCH_BYTES: usize = 4 << 20;

/// Why a command failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A usage problem: exit 2.
    Usage(String),
    /// A database error: exit 1.
    Db(Error),
    /// Writing the output failed.
    Output(io::Error),
    /// Anything else that is the input's or the environment's fault: exit 1.
    Other(String),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Db(e)
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Output(e)
    }
}

/// Opens the database, turning a missing one into a message that names the
/// flag responsible.
fn open_db(path: &Path, opts: Options, why_no_create: &str) -> Result<Db, Failure> {
    match Db::open(path, opts) {
        Ok(db) => {
            report_lost_tables(&db);
            Ok(db)
        }
        Err(Error::NotFound { path }) => Err(Failure::Other(format!(
            "no database at {} ({why_no_create})",
            path.display()
        ))),
        Err(e) => Err(Failure::Db(e)),
    }
}

/// Tells, on standard error, which tables salvage mode left out and which
/// keys they held (nothing without `--salvage`).
fn report_lost_tables(db: &Db) {
    for t in &db.recovery_report().lost_tables {
        let moved = t.moved_to.as_ref().map_or_else(
            || "left in place".to_string(),
            |p| format!("moved to {}", p.display()),
        );
        eprintln!(
            "salvage: table {} (keyspace {}, level {}, {} entries) is corrupt: {}; {moved}; \
             keys in [{}, {}] may be missing or show older values",
            t.file.display(),
            t.keyspace,
            t.level,
            t.entries,
            t.error,
            encode_bytes(&t.smallest_key),
            encode_bytes(&t.largest_key),
        );
    }
}

/// Runs a parsed command line; returns the exit code.
pub fn run(cli: Cli) -> i32 {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let result = run_command(&cli, &mut out).and_then(|code| {
        out.flush()?;
        Ok(code)
    });
    match result {
        Ok(code) => code,
        Err(Failure::Usage(m)) => {
            let _ = out.flush();
            eprintln!("error: {m}");
            EXIT_USAGE
        }
        Err(Failure::Db(e)) => {
            let _ = out.flush();
            eprintln!("error: {e}");
            EXIT_FAILURE
        }
        Err(Failure::Other(m)) => {
            let _ = out.flush();
            eprintln!("error: {m}");
            EXIT_FAILURE
        }
        Err(Failure::Output(e)) => output_failed(&e),
    }
}

/// The exit code after writing the output failed with `e`, said on
/// standard error: 0 when the reader went away (`strata scan | head`: not
/// an error of ours), else 1.
pub(crate) fn output_failed(e: &io::Error) -> i32 {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return 0;
    }
    eprintln!("error: writing the output: {e}");
    EXIT_FAILURE
}

/// Commands that never change the database.
fn is_read_command(c: &CliCommand) -> bool {
    match c {
        CliCommand::Get { .. }
        | CliCommand::Scan { .. }
        | CliCommand::Filter(_)
        | CliCommand::Stats
        | CliCommand::Check => true,
        CliCommand::Table { command, .. } => command.is_read(),
        CliCommand::Index { command, .. } => command.is_read(),
        CliCommand::Join(_) => true,
        _ => false,
    }
}

/// The options `cli`'s command opens the database with, and what to say
/// if it finds none there.
fn command_options(cli: &Cli) -> Result<(Options, &'static str), Failure> {
    let g = &cli.global;
    let mut opts = g.options().map_err(Failure::Usage)?;
    let mut why = "--no-create is set";
    if matches!(cli.command, CliCommand::Check) {
        // A checker must not create what it is asked to check.
        opts.create_if_missing = false;
        why = "check never creates a database";
        // A checker reports a device error as an error, which a read
        // through a mapping cannot.
        opts.mmap_reads = false;
    }
    // Commands that only read change nothing: no replay into new files, no
    // cleanup, no compaction, no lock (another process may have it open).
    // Salvage is the one mode that moves things.
    if is_read_command(&cli.command) && !g.salvage {
        opts.read_only = true;
    }
    if opts.read_only && !g.no_create && why == "--no-create is set" {
        why = "commands that only read never create a database";
    }
    Ok((opts, why))
}

fn run_command(cli: &Cli, out: &mut impl Write) -> Result<i32, Failure> {
    let g = &cli.global;
    let (opts, why) = command_options(cli)?;
    let wopts = g.write_options();

    if matches!(cli.command, CliCommand::Shell) {
        let db = open_db(&g.db, opts.clone(), why)?;
        let mut session = Session {
            path: g.db.clone(),
            opts,
            wopts,
            db: Some(db),
            failed: false,
        };
        let stdin = io::stdin();
        let code = session.run(stdin.lock(), out)?;
        if let Some(db) = session.db.take() {
            db.close()?;
        }
        return Ok(code);
    }

    let db = match open_db(&g.db, opts, why) {
        Ok(db) => db,
        // Damage that stops the database from opening is a finding of
        // `check`, reported like a corrupt table file.
        Err(Failure::Db(e))
            if matches!(cli.command, CliCommand::Check)
                && matches!(
                    e,
                    Error::Corruption { .. } | Error::UnsupportedVersion { .. }
                ) =>
        {
            writeln!(out, "corrupt: cannot open database: {e}")?;
            return Ok(EXIT_FAILURE);
        }
        Err(f) => return Err(f),
    };
    let code = match &cli.command {
        CliCommand::Put { key, value } => {
            db.default_keyspace().put_opt(wopts, &key.0, &value.0)?;
            writeln!(out, "OK")?;
            0
        }
        CliCommand::Get { key } => match db.get(&key.0)? {
            Some(v) => {
                writeln!(out, "{}", encode_bytes(&v))?;
                0
            }
            None => {
                writeln!(out, "(not found)")?;
                EXIT_FAILURE
            }
        },
        CliCommand::Delete { key } => {
            let mut b = WriteBatch::new();
            b.delete_in(db.default_keyspace().id(), &key.0);
            db.write(wopts, b)?;
            writeln!(out, "OK")?;
            0
        }
        CliCommand::Scan { from, to, limit } => {
            let mut it = db.default_keyspace().iter(ReadOptions {
                lower_bound: from.as_ref().map(|b| b.0.clone()),
                upper_bound: to.as_ref().map(|b| b.0.clone()),
                ..ReadOptions::default()
            })?;
            it.seek_to_first();
            let limit = limit.unwrap_or(usize::MAX);
            let mut n = 0usize;
            while n < limit && it.valid() {
                writeln!(
                    out,
                    "{}\t{}",
                    encode_bytes(it.key()),
                    encode_bytes(it.value())
                )?;
                n += 1;
                // (Not past the limit: the entry after the last one asked
                // for may fail to read, and is no concern of this scan.)
                if n < limit {
                    it.next();
                }
            }
            it.status()?;
            0
        }
        CliCommand::Filter(args) => {
            crate::filter::run(&db, args, out)?;
            0
        }
        CliCommand::Load => {
            let stdin = io::stdin();
            let n = load(&db, wopts, stdin.lock())?;
            writeln!(out, "loaded {n} entries")?;
            0
        }
        CliCommand::Flush => {
            db.flush()?;
            writeln!(out, "OK")?;
            0
        }
        CliCommand::Compact => {
            db.compact()?;
            writeln!(out, "OK")?;
            0
        }
        CliCommand::Stats => {
            write!(out, "{}", db.stats().render())?;
            0
        }
        CliCommand::Check => {
            let code = check(&db, out)?;
            if g.salvage && salvage_set_aside(&db, out)? {
                EXIT_FAILURE
            } else {
                code
            }
        }
        CliCommand::Table { command, cells } => {
            table::run(&db, command, &cells.nulls(), g.sync, out)?
        }
        CliCommand::Index { command, cells } => {
            crate::index::run(&db, command, &cells.nulls(), out)?
        }
        CliCommand::Join(args) => crate::join::run(&db, args, out)?,
        CliCommand::Sql {
            command,
            memory_limit,
        } => {
            out.flush().map_err(|e| Failure::Other(e.to_string()))?;
            crate::sql::run(
                db.clone(),
                command.as_deref(),
                Some(memory_limit.unwrap_or(1 << 30)),
            )
        }
        CliCommand::Serve(args) => crate::serve::run(&db, args).map_err(Failure::Other)?,
        CliCommand::Demo { rows } => {
            if *rows == 0 {
                return Err(Failure::Usage("--rows must be at least 1".into()));
            }
            crate::demo::run(&db, *rows, out)?
        }
        // Handled above, before the database was opened a second way.
        CliCommand::Shell => return Err(Failure::Other("internal: shell".into())),
    };
    db.close()?;
    Ok(code)
}

/// Reads `KEY<TAB>VALUE` lines and writes them in batches; returns the
/// number of entries written. Blank lines are skipped; a trailing `\r` is
/// dropped. Stops at the first bad line (entries before it stay written).
fn load(db: &Db, wopts: WriteOptions, mut input: impl BufRead) -> Result<u64, Failure> {
    let ks = db.default_keyspace().id();
    let mut batch = WriteBatch::new();
    let mut written = 0u64;
    let mut line = Vec::new();
    let mut lineno = 0u64;
    let mut batch_start = 0u64;
    loop {
        line.clear();
        let n = input
            .read_until(b'\n', &mut line)
            .map_err(|e| Failure::Other(format!("reading standard input: {e}")))?;
        if n == 0 {
            break;
        }
        lineno += 1;
        let mut l: &[u8] = &line;
        if let Some(s) = l.strip_suffix(b"\n") {
            l = s;
        }
        if let Some(s) = l.strip_suffix(b"\r") {
            l = s;
        }
        if l.is_empty() {
            continue;
        }
        let parsed = match l.iter().position(|&b| b == b'\t') {
            None => Err("expected KEY<TAB>VALUE".to_string()),
            Some(tab) => decode_token_bytes(&l[..tab])
                .and_then(|k| Ok((k, decode_token_bytes(&l[tab + 1..])?))),
        };
        let (key, value) = match parsed {
            Ok(kv) => kv,
            Err(m) => {
                // The lines before this one are written, the batch being
                // built included, so that the load resumes at this line
                // (the batch was dropped, and the count left it out).
                let len = batch.len() as u64;
                db.write(wopts, std::mem::take(&mut batch))
                    .map_err(|e| load_failed(e, written, batch_start))?;
                written += len;
                return Err(Failure::Other(format!(
                    "line {lineno}: {m} ({written} entries written, every line before it; \
                     none from it on)"
                )));
            }
        };
        if batch.is_empty() {
            batch_start = lineno;
        }
        batch.put_in(ks, &key, &value);
        if batch.len() >= LOAD_BATCH_ENTRIES || batch.encoded_len() >= LOAD_BATCH_BYTES {
            let len = batch.len() as u64;
            db.write(wopts, std::mem::take(&mut batch))
                .map_err(|e| load_failed(e, written, batch_start))?;
            written += len;
        }
    }
    let len = batch.len() as u64;
    db.write(wopts, batch)
        .map_err(|e| load_failed(e, written, batch_start))?;
    written += len;
    Ok(written)
}

/// A database error in the middle of `load`: says where to resume. Each
/// batch is atomic, so the entries before the failed batch are written and
/// none of it is.
fn load_failed(e: Error, written: u64, first_line_of_batch: u64) -> Failure {
    Failure::Other(format!(
        "{e}; {written} entries were written, none from line {first_line_of_batch} on: resume \
         the load from that line"
    ))
}

/// Prints what salvage set aside; whether it set anything aside.
fn salvage_set_aside(db: &Db, out: &mut impl Write) -> Result<bool, Failure> {
    let r = db.recovery_report();
    if let Some(name) = &r.current_rebuilt {
        writeln!(out, "salvage: CURRENT was missing; rebuilt naming {name}")?;
    }
    for (from, to) in &r.logs_set_aside {
        writeln!(
            out,
            "salvage: log {} was not fully applied; kept as {}",
            from.display(),
            to.display()
        )?;
    }
    let n = r.lost_tables.len() + r.logs_set_aside.len();
    if n > 0 {
        writeln!(out, "salvage set aside {n} files")?;
    }
    Ok(n > 0 || r.current_rebuilt.is_some())
}

/// Verifies every live table file. Prints one line per corrupt file and a
/// summary; returns the exit code (1 if anything is corrupt).
fn check(db: &Db, out: &mut impl Write) -> Result<i32, Failure> {
    let report = db.recovery_report();
    let mut damaged = false;
    if let Some((log, offset, bytes, reason)) = &report.wal_tail_dropped {
        // A crash in the middle of an append leaves this; it held no
        // acknowledged write.
        writeln!(
            out,
            "note: the newest log ends in a torn record: {bytes} bytes at offset {offset} of {} \
             ({reason}) are not a complete record",
            log.display()
        )?;
    }
    if let Some((m, offset, bytes, reason)) = &report.manifest_tail_dropped {
        writeln!(
            out,
            "note: the manifest ends in a torn record: {bytes} bytes at offset {offset} of {} \
             ({reason}); every log the earlier records need is present",
            m.display()
        )?;
    }
    for d in &report.wal_damage {
        damaged = true;
        writeln!(
            out,
            "corrupt: {}: damaged at offset {} ({}), {} bytes {}, {} valid records after it",
            d.file.display(),
            d.offset,
            d.reason,
            d.bytes,
            d.action,
            d.records_after
        )?;
    }
    for (p, why) in &report.left_in_place {
        writeln!(out, "note: {} is not the database's: {why}", p.display())?;
    }
    let files: usize = db
        .stats()
        .keyspaces
        .iter()
        .flat_map(|k| k.levels.iter().map(|(n, _)| *n))
        .sum();
    let bad = db.verify();
    for (path, e) in &bad {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        writeln!(out, "corrupt: {name}: {e}")?;
    }
    if bad.is_empty() {
        writeln!(out, "all {files} table files OK")?;
        Ok(if damaged { EXIT_FAILURE } else { 0 })
    } else {
        writeln!(out, "{} of {files} table files corrupt", bad.len())?;
        Ok(EXIT_FAILURE)
    }
}

/// The state of `strata shell`.
struct Session {
    path: PathBuf,
    opts: Options,
    wopts: WriteOptions,
    /// `None` after a failed reopen; commands then report the error until a
    /// `reopen` succeeds.
    db: Option<Db>,
    /// Whether a command answered `error:` or `check` found damage: the
    /// shell then exits 1, so a script piped into it fails as a whole
    /// (it exited 0 whatever happened).
    failed: bool,
}

impl Session {
    /// Answers commands until `quit` or the end of input. Output errors end
    /// the shell (a closed pipe quietly, with exit code 0).
    fn run(&mut self, mut input: impl BufRead, out: &mut impl Write) -> Result<i32, Failure> {
        let mut line = Vec::new();
        loop {
            line.clear();
            let code = i32::from(self.failed);
            match input.read_until(b'\n', &mut line) {
                Ok(0) => return Ok(code),
                Ok(_) => {}
                Err(e) => return Err(Failure::Other(format!("reading standard input: {e}"))),
            }
            let cmd = match std::str::from_utf8(&line) {
                Ok(s) => shell::parse_line(s),
                Err(_) => Err("line is not valid UTF-8 (write such bytes in 0x hex)".to_string()),
            };
            let r = match cmd {
                Ok(Command::Nop) => continue,
                Ok(Command::Quit) => return Ok(code),
                Ok(c) => self.execute(c, out),
                Err(e) => {
                    self.failed = true;
                    writeln!(out, "error: {e}")
                }
            };
            match r.and_then(|()| out.flush()) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(0),
                Err(e) => return Err(Failure::Output(e)),
            }
        }
    }

    fn db(&self) -> Result<&Db, Error> {
        self.db.as_ref().ok_or(Error::Closed)
    }

    /// Runs one command and writes its answer; database errors become an
    /// `error:` answer.
    fn execute(&mut self, cmd: Command, out: &mut impl Write) -> io::Result<()> {
        match self.answer(cmd, out) {
            Ok(()) => Ok(()),
            Err(AnswerError::Db(e)) => {
                self.failed = true;
                writeln!(out, "error: {e}")
            }
            Err(AnswerError::Output(e)) => Err(e),
        }
    }

    fn answer(&mut self, cmd: Command, out: &mut impl Write) -> Result<(), AnswerError> {
        match cmd {
            Command::Nop | Command::Quit => {}
            Command::Put { key, value } => {
                self.db()?
                    .default_keyspace()
                    .put_opt(self.wopts, &key, &value)?;
                writeln!(out, "OK")?;
            }
            Command::Get { key } => match self.db()?.get(&key)? {
                Some(v) => writeln!(out, "{}", encode_bytes(&v))?,
                None => writeln!(out, "(not found)")?,
            },
            Command::Delete { key } => {
                let db = self.db()?;
                let mut b = WriteBatch::new();
                b.delete_in(db.default_keyspace().id(), &key);
                db.write(self.wopts, b)?;
                writeln!(out, "OK")?;
            }
            Command::Merge { key, operand } => {
                let db = self.db()?;
                let mut b = WriteBatch::new();
                b.merge_in(db.default_keyspace().id(), &key, &operand);
                db.write(self.wopts, b)?;
                writeln!(out, "OK")?;
            }
            Command::Scan { from, to, limit } => {
                // Collected first, so a read error answers `error:` alone
                // instead of following some entries.
                let entries = self.db()?.default_keyspace().scan(
                    from.as_deref(),
                    to.as_deref(),
                    limit.unwrap_or(usize::MAX),
                )?;
                for (k, v) in &entries {
                    writeln!(out, "{}\t{}", encode_bytes(k), encode_bytes(v))?;
                }
                writeln!(out, "({} entries)", entries.len())?;
            }
            Command::Flush => {
                self.db()?.flush()?;
                writeln!(out, "OK")?;
            }
            Command::Compact => {
                self.db()?.compact()?;
                writeln!(out, "OK")?;
            }
            Command::Reopen => {
                if let Some(db) = self.db.take() {
                    db.close()?;
                }
                let db = Db::open(&self.path, self.opts.clone())?;
                report_lost_tables(&db);
                self.db = Some(db);
                writeln!(out, "OK")?;
            }
            Command::Stats => {
                write!(out, "{}", self.db()?.stats().render())?;
            }
            Command::Check => {
                let db = self.db()?;
                match check(db, out) {
                    Ok(code) => self.failed |= code != 0,
                    Err(Failure::Output(e)) => return Err(AnswerError::Output(e)),
                    Err(Failure::Db(e)) => return Err(AnswerError::Db(e)),
                    Err(Failure::Usage(m) | Failure::Other(m)) => {
                        return Err(AnswerError::Db(Error::InvalidArgument(m)));
                    }
                }
            }
            Command::Help => writeln!(out, "{}", shell::HELP)?,
        }
        Ok(())
    }
}

/// A failed shell answer: database errors are answered, output errors end
/// the shell.
enum AnswerError {
    Db(Error),
    Output(io::Error),
}

impl From<Error> for AnswerError {
    fn from(e: Error) -> Self {
        AnswerError::Db(e)
    }
}

impl From<io::Error> for AnswerError {
    fn from(e: io::Error) -> Self {
        AnswerError::Output(e)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn table_files_are_mapped_unless_no_mmap_or_check() {
        let opts = |args: &[&str]| {
            let argv = ["strata"].iter().chain(args);
            let cli = Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            match command_options(&cli) {
                Ok((o, _)) => o,
                Err(_) => panic!("{args:?}: no options"),
            }
        };
        assert!(opts(&["stats"]).mmap_reads);
        assert!(opts(&["put", "k", "v"]).mmap_reads);
        assert!(!opts(&["--no-mmap", "stats"]).mmap_reads);
        assert!(!opts(&["--no-mmap", "put", "k", "v"]).mmap_reads);
        let check = opts(&["check"]);
        assert!(!check.mmap_reads && !check.create_if_missing);
    }
}
