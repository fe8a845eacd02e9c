//! Running the `strata-stress` binary from the crash tests.

use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

pub const BIN: &str = env!("CARGO_BIN_EXE_strata-stress");

/// The campaigns use both cores; run them one at a time.
pub static SERIAL: Mutex<()> = Mutex::new(());

/// STRATA_STRESS_SEED if set (to replay a run), else one from the clock.
pub fn seed() -> String {
    std::env::var("STRATA_STRESS_SEED").unwrap_or_else(|_| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            .to_string()
    })
}

/// Runs `strata-stress ARGS...`, echoing the command and its output.
pub fn run(args: &[&str]) -> Output {
    let out = Command::new(BIN)
        .args(args)
        .output()
        .expect("start strata-stress");
    eprintln!("$ strata-stress {}", args.join(" "));
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    out
}

pub fn last_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string()
}

/// Sums `name=N` over the driver's output (`N` may be followed by `,`, `;`
/// or `)`).
pub fn total(out: &Output, name: &str) -> u64 {
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| {
            w.strip_prefix(name)?
                .trim_end_matches([',', ';', ')'])
                .parse::<u64>()
                .ok()
        })
        .sum()
}
