//! Running the `strata` binary from the integration tests.

// Each test crate includes this module and uses only some of it.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_strata");

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
}

pub fn finish(out: Output) -> Run {
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `strata --db DIR ARGS...` with `stdin` as standard input.
pub fn strata_in(dir: &Path, args: &[&str], stdin: &str) -> Run {
    let mut child = Command::new(BIN)
        .arg("--db")
        .arg(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn strata");
    let mut input = child.stdin.take().expect("stdin");
    let data = stdin.as_bytes().to_vec();
    let writer = std::thread::spawn(move || {
        // The child may exit early (quit); a broken pipe is fine.
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().expect("wait strata");
    writer.join().expect("writer thread");
    finish(out)
}

pub fn strata(dir: &Path, args: &[&str]) -> Run {
    strata_in(dir, args, "")
}

pub fn assert_ok(r: &Run, what: &str) {
    assert_eq!(
        r.code, 0,
        "{what}: exit {}\nstdout:\n{}\nstderr:\n{}",
        r.code, r.stdout, r.stderr
    );
}

pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

pub fn db_dir(t: &tempfile::TempDir) -> PathBuf {
    t.path().join("db")
}

/// A child process that is killed when the test ends, even by a panic.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `strata --db DIR shell` with piped standard streams.
pub fn spawn_shell(dir: &Path) -> KillOnDrop {
    KillOnDrop(
        Command::new(BIN)
            .arg("--db")
            .arg(dir)
            .arg("shell")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn"),
    )
}
