//! What the process and machine report about themselves (Linux `/proc`).

use std::time::{SystemTime, UNIX_EPOCH};

/// Reads `field` (e.g. `VmHWM`) of `/proc/self/status`, in bytes.
fn status_kib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':').map(str::trim))
        .and_then(|v| v.trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
}

/// Peak resident memory of this process (`VmHWM`), in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    status_kib("VmHWM")
}

/// Current resident memory (`VmRSS`), in bytes.
pub fn rss_bytes() -> Option<u64> {
    status_kib("VmRSS")
}

/// Resets the peak resident memory to the current one (writes 5 to
/// `/proc/self/clear_refs`, Linux 4.0+), so each engine's run gets its own
/// peak. Returns false where that is not possible.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Bytes this process caused to be written to storage so far
/// (`write_bytes` of `/proc/self/io`), less writes cancelled by truncation.
pub fn io_write_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/io").ok()?;
    let get = |k: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(k)?.trim().parse::<u64>().ok())
    };
    let w = get("write_bytes:")?;
    let c = get("cancelled_write_bytes:").unwrap_or(0);
    Some(w.saturating_sub(c))
}

/// The machine, as the report describes it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Machine {
    /// Online CPUs (`nproc`).
    pub cpus: usize,
    /// `model name` of `/proc/cpuinfo`.
    pub cpu_model: String,
    /// `MemTotal` of `/proc/meminfo`, in bytes.
    pub memory_bytes: u64,
    /// `/proc/sys/kernel/osrelease` (`uname -r`).
    pub kernel: String,
}

/// Describes this machine.
pub fn machine() -> Machine {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let memory_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map(|k| k * 1024)
        .unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    Machine {
        cpus,
        cpu_model,
        memory_bytes,
        kernel,
    }
}

/// Seconds since the Unix epoch.
pub fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `secs` since the epoch as an ISO 8601 UTC timestamp.
pub fn iso8601(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// The command line of this process, quoted for a shell where needed.
pub fn command_line() -> String {
    std::env::args()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=,:+@%".contains(c))
            {
                a
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_formats_known_instants() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso8601(1_700_000_000), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn proc_figures_are_read() {
        assert!(peak_rss_bytes().unwrap_or(0) > 0);
        assert!(rss_bytes().unwrap_or(0) > 0);
        let m = machine();
        assert!(m.cpus >= 1);
        assert!(m.memory_bytes > 0);
    }
}
