//! `strata sql`: SQL on a Strata database, interactively (line editing,
//! history, `\timing`) or from `-c QUERY` and standard input.
//!
//! ```text
//! strata=> SELECT count(*) FROM orders WHERE customer = 7;
//! strata=> \d              tables        \d NAME   a table's columns
//! strata=> \timing         toggle times  \q        quit
//! ```
//!
//! Statements end with `;` (a line without one continues the statement);
//! `-c` and standard input may hold several.

use std::io::{IsTerminal, Read, Write};
use std::sync::Arc;
use std::time::Instant;

use strata::Db;
use strata_sql::datafusion::arrow::array::{Array, ArrayRef, RecordBatch, StringArray};
use strata_sql::datafusion::arrow::util::pretty::pretty_format_batches;

use crate::tabular::escape;
use strata_sql::{Output, SqlEngine, SqlOptions};

/// What a backslash command or a statement asked for.
#[derive(Debug, PartialEq, Eq)]
enum Meta {
    Quit,
    Timing,
    Tables,
    Describe(String),
    Help,
    Unknown(String),
}

fn parse_meta(line: &str) -> Meta {
    let mut words = line.split_whitespace();
    match (words.next().unwrap_or(""), words.next()) {
        ("\\q", _) => Meta::Quit,
        ("\\timing", _) => Meta::Timing,
        ("\\d", None) | ("\\dt", None) => Meta::Tables,
        ("\\d", Some(t)) => Meta::Describe(t.trim_end_matches(';').to_string()),
        ("\\?", _) | ("\\h", _) => Meta::Help,
        (other, _) => Meta::Unknown(other.to_string()),
    }
}

const HELP: &str = "\
  \\d          list tables        \\d NAME   a table's columns, key and indexes
  \\timing     print each statement's time
  \\q          quit
  Statements end with ';'. CREATE TABLE t (id BIGINT PRIMARY KEY, ...) WITH (layout = 'row-then-column:2')";

/// Runs `strata sql`. Returns the exit code: 0, or 1 when a statement of
/// `-c` or of standard input failed.
pub fn run(db: Db, command: Option<&str>, memory_limit: Option<u64>) -> i32 {
    let opts = SqlOptions {
        memory_limit: memory_limit.map(|m| m as usize),
        ..SqlOptions::default()
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the query runtime: {e}");
            return 1;
        }
    };
    let engine = match SqlEngine::with_options(db, opts) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let mut shell = Shell {
        engine,
        timing: false,
    };
    if let Some(sql) = command {
        return rt.block_on(shell.script(sql));
    }
    if !std::io::stdin().is_terminal() {
        let mut sql = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut sql) {
            eprintln!("error: reading standard input: {e}");
            return 1;
        }
        return rt.block_on(shell.script(&sql));
    }
    shell.interactive(&rt)
}

struct Shell {
    engine: SqlEngine,
    timing: bool,
}

/// Why a statement or meta-command stopped: the SQL failed (reported, the
/// script stops with exit code 1), or writing its output did (a closed pipe
/// ends quietly; others are reported).
enum Fail {
    Sql(String),
    Output(std::io::Error),
}

impl From<std::io::Error> for Fail {
    fn from(e: std::io::Error) -> Self {
        Fail::Output(e)
    }
}

/// The exit code of a script that stopped on `f`, after saying why. Output
/// errors were printing panics, or ignored with exit 0 (found in review,
/// 2026-12-01).
fn failed(f: Fail) -> i32 {
    match f {
        Fail::Sql(e) => {
            eprintln!("ERROR: {e}");
            1
        }
        Fail::Output(e) => crate::app::output_failed(&e),
    }
}

impl Shell {
    /// Runs `sql` (from `-c` or standard input) in order: statements, and
    /// meta-commands where they stand (`\q` stops the script, as in psql).
    /// Stops at the first error (exit code 1).
    async fn script(&mut self, sql: &str) -> i32 {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        match self
            .script_to(sql, &mut out)
            .await
            .and_then(|()| Ok(out.flush()?))
        {
            Ok(()) => 0,
            Err(f) => failed(f),
        }
    }

    async fn script_to(&mut self, sql: &str, out: &mut impl Write) -> Result<(), Fail> {
        let mut body = String::new();
        for line in sql.lines() {
            if !line.trim_start().starts_with('\\') {
                body.push_str(line);
                body.push('\n');
                continue;
            }
            self.run_body(&mut body, out).await?;
            match parse_meta(line.trim()) {
                Meta::Quit => return Ok(()),
                Meta::Timing => self.timing = !self.timing,
                Meta::Tables => self.list_tables(out)?,
                Meta::Describe(t) => self.describe(&t, out)?,
                Meta::Help => writeln!(out, "{HELP}")?,
                Meta::Unknown(m) => return Err(Fail::Sql(format!("unknown command {m}"))),
            }
        }
        self.run_body(&mut body, out).await
    }

    /// Runs the statements gathered in `body`, and empties it.
    async fn run_body(&self, body: &mut String, out: &mut impl Write) -> Result<(), Fail> {
        let text = std::mem::take(body);
        if text.trim().is_empty() {
            return Ok(());
        }
        self.statements(&text, out).await
    }

    async fn statements(&self, sql: &str, out: &mut impl Write) -> Result<(), Fail> {
        let stmts = SqlEngine::parse(sql).map_err(|e| Fail::Sql(e.to_string()))?;
        for stmt in stmts {
            let start = Instant::now();
            let result = self
                .engine
                .run(stmt)
                .await
                .map_err(|e| Fail::Sql(e.to_string()))?;
            print_output(&result, out)?;
            if self.timing {
                writeln!(out, "Time: {:.3} ms", start.elapsed().as_secs_f64() * 1e3)?;
            }
        }
        Ok(())
    }

    fn interactive(&mut self, rt: &tokio::runtime::Runtime) -> i32 {
        let mut editor = match rustyline::DefaultEditor::new() {
            Ok(e) => e,
            Err(e) => {
                eprintln!("error: cannot start line editing: {e}");
                return 1;
            }
        };
        let history = std::env::var_os("HOME")
            .map(|h| std::path::PathBuf::from(h).join(".strata_sql_history"));
        if let Some(h) = &history {
            let _ = editor.load_history(h);
        }
        let code = self.repl(rt, &mut editor, &mut std::io::stdout());
        if let Some(h) = &history {
            let _ = editor.save_history(h);
        }
        code
    }

    /// Reads lines until `\q` or the end of input; an error in a statement
    /// is reported and the session goes on, an output error ends it.
    fn repl(
        &mut self,
        rt: &tokio::runtime::Runtime,
        editor: &mut rustyline::DefaultEditor,
        out: &mut impl Write,
    ) -> i32 {
        let said = writeln!(
            out,
            "strata sql on {} (\\? for help, \\q to quit)",
            self.engine.db().path().display()
        );
        if let Err(e) = said {
            return failed(Fail::Output(e));
        }
        let mut buffer = String::new();
        loop {
            let prompt = if buffer.is_empty() {
                "strata=> "
            } else {
                "strata-> "
            };
            let line = match editor.readline(prompt) {
                Ok(l) => l,
                Err(rustyline::error::ReadlineError::Interrupted) => {
                    buffer.clear();
                    continue;
                }
                Err(rustyline::error::ReadlineError::Eof) => break,
                Err(e) => {
                    eprintln!("error: {e}");
                    break;
                }
            };
            let _ = editor.add_history_entry(line.as_str());
            let done: Result<(), Fail> = if buffer.is_empty() && line.trim_start().starts_with('\\')
            {
                match parse_meta(line.trim()) {
                    Meta::Quit => break,
                    Meta::Timing => {
                        self.timing = !self.timing;
                        let state = if self.timing { "on" } else { "off" };
                        writeln!(out, "Timing is {state}.").map_err(Fail::Output)
                    }
                    Meta::Tables => self.list_tables(out),
                    Meta::Describe(t) => self.describe(&t, out),
                    Meta::Help => writeln!(out, "{HELP}").map_err(Fail::Output),
                    Meta::Unknown(m) => {
                        Err(Fail::Sql(format!("unknown command {m}; \\? lists them")))
                    }
                }
            } else {
                buffer.push_str(&line);
                buffer.push('\n');
                if !line.trim_end().ends_with(';') {
                    continue;
                }
                let sql = std::mem::take(&mut buffer);
                rt.block_on(self.statements(&sql, out))
            };
            match done.and_then(|()| Ok(out.flush()?)) {
                Ok(()) => {}
                Err(Fail::Sql(e)) => eprintln!("ERROR: {e}"),
                Err(f) => return failed(f),
            }
        }
        0
    }

    fn list_tables(&self, out: &mut impl Write) -> Result<(), Fail> {
        let db = self.engine.db();
        let names = db.table_names();
        if names.is_empty() {
            writeln!(out, "No tables.")?;
        }
        for n in names {
            let rows = db
                .table(&n)
                .and_then(|t| t.estimated_rows())
                .map_or(String::from("?"), |r| format!("{r:.0}"));
            writeln!(out, "{n}  (about {rows} rows)")?;
        }
        Ok(())
    }

    /// Prints table `name`'s columns, layout and indexes; an error when
    /// there is no such table.
    fn describe(&self, name: &str, out: &mut impl Write) -> Result<(), Fail> {
        let t = self
            .engine
            .db()
            .table(name)
            .map_err(|e| Fail::Sql(e.to_string()))?;
        let s = t.schema();
        writeln!(out, "Table {name}")?;
        for (i, c) in s.columns().iter().enumerate() {
            let key = if s.is_key(i) { "  primary key" } else { "" };
            let null = if c.nullable { "" } else { "  not null" };
            writeln!(out, "  {:<24} {:<10}{null}{key}", c.name, c.ty.name())?;
        }
        writeln!(out, "Layout: {}", t.layout().summary(s))?;
        for ix in t.indexes() {
            writeln!(
                out,
                "Index {} on ({}) {} {}",
                ix.name, ix.column, ix.kind, ix.consistency
            )?;
        }
        Ok(())
    }
}

/// `batches` with control characters in their text cells escaped (as the
/// `table` commands print them): a newline or a terminal escape sequence
/// in a value broke the table's layout or reached the terminal.
fn escaped(batches: &[RecordBatch]) -> Vec<RecordBatch> {
    batches
        .iter()
        .map(|b| {
            let columns: Vec<ArrayRef> = b
                .columns()
                .iter()
                .map(|c| match c.as_any().downcast_ref::<StringArray>() {
                    Some(s) if s.iter().flatten().any(|v| v.chars().any(char::is_control)) => {
                        let e: StringArray = s.iter().map(|v| v.map(escape)).collect();
                        Arc::new(e) as ArrayRef
                    }
                    _ => Arc::clone(c),
                })
                .collect();
            RecordBatch::try_new(b.schema(), columns).unwrap_or_else(|_| b.clone())
        })
        .collect()
}

/// Prints a statement's result: rows as an aligned table and a count, or
/// the command tag.
fn print_output(out: &Output, w: &mut impl Write) -> std::io::Result<()> {
    let rows_returned = out.tag.starts_with("SELECT");
    if rows_returned && !out.schema.fields().is_empty() {
        match pretty_format_batches(&escaped(&out.batches)) {
            Ok(t) if !out.batches.is_empty() => writeln!(w, "{t}")?,
            _ => {
                let names: Vec<&str> = out
                    .schema
                    .fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect();
                writeln!(w, "{}", names.join(" | "))?;
            }
        }
        let n = out.num_rows();
        writeln!(w, "({n} row{})", if n == 1 { "" } else { "s" })
    } else {
        writeln!(w, "{}", out.tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backslash_commands() {
        assert_eq!(parse_meta("\\q"), Meta::Quit);
        assert_eq!(parse_meta("\\d"), Meta::Tables);
        assert_eq!(parse_meta("\\d orders"), Meta::Describe("orders".into()));
        assert_eq!(parse_meta("\\timing"), Meta::Timing);
        assert_eq!(parse_meta("\\x"), Meta::Unknown("\\x".into()));
    }
}
