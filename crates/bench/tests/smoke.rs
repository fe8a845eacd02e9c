//! Runs the built `strata-bench` binary end to end. No timing assertions:
//! only that it runs, writes parseable records and rejects bad flags.

use std::process::Command;

const QUICK_WORKLOADS: &[&str] = &[
    "fillrandom",
    "readrandom",
    "seekrandom",
    "readseq",
    "ycsb-a",
];

fn bench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strata-bench"))
}

#[test]
fn quick_suite_runs_and_writes_json_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("quick.json");
    let db = dir.path().join("db");
    let report = dir.path().join("report.md");
    let out = bench()
        .args(["suite", "--suite", "quick", "--no-progress", "--db"])
        .arg(&db)
        .arg("--json")
        .arg(&json)
        .arg("--report")
        .arg(&report)
        .output()
        .expect("run strata-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );

    let text = std::fs::read_to_string(&json).expect("read JSON");
    let records: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON record per line"))
        .collect();
    assert!(!records.is_empty());
    for w in QUICK_WORKLOADS {
        let r = records
            .iter()
            .find(|r| r["engine"] == "strata" && r["workload"] == *w)
            .unwrap_or_else(|| panic!("no strata record for {w}"));
        let ops_per_sec = r["ops_per_sec"].as_f64().expect("ops_per_sec");
        let p50 = r["p50_us"].as_f64().expect("p50_us");
        let p99 = r["p99_us"].as_f64().expect("p99_us");
        let p999 = r["p999_us"].as_f64().expect("p999_us");
        assert!(ops_per_sec > 0.0, "{w}: ops_per_sec {ops_per_sec}");
        assert!(p99 >= p50, "{w}: p99 {p99} < p50 {p50}");
        assert!(p999 >= p99, "{w}: p99.9 {p999} < p99 {p99}");
        assert_eq!(r["variant"], "default");
        assert!(r["ops"].as_u64().unwrap_or(0) > 0);
        assert!(r["disk_bytes"].as_u64().unwrap_or(0) > 0);
        assert!(r["settings"]["num"].as_u64().is_some());
        assert!(r["notes"].is_array());
        assert!(r["round"].as_u64().is_some());
        assert!(r["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
        assert!(r.get("write_amp").is_some());
        assert!(r.get("peak_rss_bytes").is_some());
    }
    // The markdown report and its charts.
    let md = std::fs::read_to_string(&report).expect("report");
    assert!(md.contains("#### fillrandom"), "{md}");
    assert!(md.contains("nproc"));
    let charts = dir.path().join("quick-charts");
    assert!(charts.join("ops_per_sec.svg").exists());
    assert!(charts.join("latency_cdf_readrandom.svg").exists());
    // Every quick workload is in the terminal table.
    for w in QUICK_WORKLOADS {
        assert!(stdout.contains(&format!("== {w} ==")), "{stdout}");
    }
}

#[test]
fn unknown_workload_is_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = bench()
        .args([
            "--workloads",
            "fillrandom,nosuchload",
            "--num",
            "10",
            "--no-progress",
            "--db",
        ])
        .arg(dir.path())
        .output()
        .expect("run strata-bench");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown workload \"nosuchload\""),
        "{stderr}"
    );
    assert!(
        stderr.contains("readrandom"),
        "lists the known workloads: {stderr}"
    );
}

#[test]
fn unknown_or_missing_engine_is_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = bench()
        .args([
            "--engines",
            "strata,leveldb",
            "--num",
            "10",
            "--no-progress",
            "--db",
        ])
        .arg(dir.path())
        .output()
        .expect("run strata-bench");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown engine \"leveldb\""), "{stderr}");

    if !cfg!(feature = "rocksdb") {
        let out = bench()
            .args([
                "--engines",
                "rocksdb",
                "--num",
                "10",
                "--no-progress",
                "--db",
            ])
            .arg(dir.path())
            .output()
            .expect("run strata-bench");
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--features rocksdb"), "{stderr}");
    }
}

#[test]
fn unknown_suite_is_rejected() {
    let out = bench()
        .args(["suite", "--suite", "nosuch"])
        .output()
        .expect("run strata-bench");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown suite"));
}

/// The memtable suite at a tiny scale: a record for every kind and phase
/// (both orders) and every mix, each with a throughput and a footprint.
#[test]
fn memtable_suite_runs_every_kind_and_phase() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("memtable.json");
    let report = dir.path().join("memtable.md");
    let out = bench()
        .args([
            "suite",
            "--suite",
            "memtable",
            "--num",
            "20000",
            "--mix-rounds",
            "2",
            "--no-progress",
            "--db",
        ])
        .arg(dir.path().join("db"))
        .arg("--json")
        .arg(&json)
        .arg("--report")
        .arg(&report)
        .output()
        .expect("run strata-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    let text = std::fs::read_to_string(&json).expect("read JSON");
    let records: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON record per line"))
        .collect();
    const KINDS: [&str; 8] = [
        "skiplist",
        "vector",
        "vector-static",
        "vector-sorted",
        "vector-unsorted",
        "hash-skiplist",
        "hash-linklist",
        "adaptive",
    ];
    let mut workloads = Vec::new();
    for p in ["mem-insert", "mem-get-miss", "mem-get-hit", "mem-range"] {
        workloads.push(p.to_string());
        workloads.push(format!("{p}-interleaved"));
    }
    for m in ["mix-insert-only", "mix-point-heavy", "mix-range-heavy"] {
        workloads.push(m.to_string());
    }
    for kind in KINDS {
        for w in &workloads {
            let r = records
                .iter()
                .find(|r| r["engine"] == "strata" && r["variant"] == kind && r["workload"] == *w)
                .unwrap_or_else(|| panic!("no record for {kind} {w}"));
            let ops_per_sec = r["ops_per_sec"].as_f64().expect("ops_per_sec");
            let bpe = r["bytes_per_entry"].as_f64().expect("bytes_per_entry");
            assert!(ops_per_sec > 0.0, "{kind} {w}: ops_per_sec {ops_per_sec}");
            assert!(bpe > 0.0, "{kind} {w}: bytes_per_entry {bpe}");
            assert!(r["flushes"].as_u64().is_some(), "{kind} {w}: flushes");
            assert!(r["p99_us"].as_f64() >= r["p50_us"].as_f64(), "{kind} {w}");
        }
        // 20,000 entries stay in one memtable.
        let ins = records
            .iter()
            .find(|r| r["variant"] == kind && r["workload"] == "mem-insert")
            .expect("insert record");
        assert_eq!(ins["flushes"], 0, "{kind}");
        assert_eq!(ins["extra"]["memtable_switches"], 0, "{kind}");
    }
    // The adaptive kind switched memtables and recorded its choices.
    let ad = records
        .iter()
        .find(|r| r["variant"] == "adaptive" && r["workload"] == "mix-insert-only")
        .expect("adaptive mix record");
    assert!(ad["extra"]["memtable_switches"].as_u64().unwrap_or(0) >= 1);
    assert!(ad["extra"]["memtable_reps"].is_array());
    // Two rounds of each mix, then the median.
    let rounds = records
        .iter()
        .filter(|r| r["variant"] == "skiplist" && r["workload"] == "mix-point-heavy")
        .count();
    assert_eq!(rounds, 3, "two rounds and their median");
    let md = std::fs::read_to_string(&report).expect("report");
    for needle in [
        "#### mem-insert",
        "#### mem-range-interleaved",
        "#### mix-point-heavy",
        "vector / skiplist",
        "hash-linklist / skiplist",
        "adaptive / best fixed",
        "bytes/entry",
        "Load average",
    ] {
        assert!(md.contains(needle), "report lacks {needle:?}:\n{md}");
    }
    let charts = dir.path().join("memtable-charts");
    assert!(charts.join("memtable_sequential_ops.svg").exists());
    assert!(charts.join("memtable_mixes_ops.svg").exists());
}

#[test]
fn memtable_suite_rejects_bad_flags() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (args, needle) in [
        (&["--parts", "nosuch"][..], "unknown part"),
        (&["--prefix-len", "9"][..], "--prefix-len"),
        (&["--memtable", "btree"][..], "unknown memtable kind"),
    ] {
        let out = bench()
            .args(["suite", "--suite", "memtable", "--num", "100", "--db"])
            .arg(dir.path())
            .args(args)
            .output()
            .expect("run strata-bench");
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}
