use super::render::{find, median_f64, paired_ratios, reps_summary, truncated};
use super::run::Data;
use super::*;
use crate::settings::Distribution;

fn tiny(dir: &Path) -> MemSuite {
    let settings = BenchSettings {
        num: 3000,
        reads: 200,
        key_size: 8,
        value_size: 120,
        disable_wal: true,
        distribution: Distribution::Uniform,
        ..BenchSettings::default()
    };
    MemSuite {
        engines: vec![EngineKind::Strata],
        kinds: vec!["skiplist".into(), "vector".into(), "adaptive".into()],
        rocksdb_kinds: vec![],
        settings,
        inserts: 3000,
        point_queries: 200,
        range_queries: 10,
        buckets: 1000,
        buffer: 8 << 20,
        mix_buffer: 256 << 10,
        mix_inserts: 6000,
        mix_rounds: 1,
        experiment: true,
        mixes: true,
        budget: Duration::from_secs(60),
        stream_budget: Duration::from_secs(60),
        db_root: dir.to_path_buf(),
        json: None,
    }
}

#[test]
fn rounds_pair_by_number() {
    let r = paired_ratios(&[90.0, 120.0, 100.0], &[100.0, 100.0, 50.0]);
    assert_eq!(r, vec![0.9, 1.2, 2.0]);
    assert_eq!(median_f64(&r), 1.2);
    assert_eq!(median_f64(&[1.0, 3.0]), 2.0);
    // A kind that stopped at the budget ran one round: no pairs.
    assert!(paired_ratios(&[90.0], &[100.0, 100.0]).is_empty());
    assert!(paired_ratios(&[1.0], &[0.0]).is_empty());
}

#[test]
fn data_is_shared_and_complete() {
    let d = tempfile::tempdir().unwrap();
    let s = tiny(d.path());
    let a = Data::new(&s);
    let b = Data::new(&s);
    assert_eq!(a.keys, b.keys);
    assert_eq!(a.stream, b.stream);
    let set: HashSet<u64> = a.keys.iter().copied().collect();
    assert_eq!(set.len(), 3000);
    assert!(a.misses.iter().all(|m| !set.contains(m)));
    assert_eq!(a.warmup, 300);
    assert_eq!(a.stream.len(), 2700 + 200 + 200 + 10);
}

#[test]
fn runs_measure_every_phase_and_the_memtable() {
    let d = tempfile::tempdir().unwrap();
    let s = tiny(d.path());
    let recs = run(&s).unwrap();
    for k in &s.kinds {
        for p in PHASES {
            for w in [p.to_string(), interleaved(p)] {
                let r = find(&recs, "strata", k, &w).unwrap_or_else(|| panic!("{k} {w}"));
                assert!(r.ops > 0 && r.ops_per_sec > 0.0, "{k} {w}");
                assert!(r.bytes_per_entry.unwrap_or(0.0) > 128.0, "{k} {w}");
                assert_eq!(r.flushes, Some(0), "{k} {w}");
                assert!(!truncated(r));
            }
        }
        let hit = find(&recs, "strata", k, "mem-get-hit").unwrap();
        assert_eq!(hit.extra["found"], json!(200));
        let miss = find(&recs, "strata", k, "mem-get-miss").unwrap();
        assert_eq!(miss.extra["found"], json!(0));
        let range = find(&recs, "strata", k, "mem-range").unwrap();
        let per = range.extra["entries_per_range"].as_f64().unwrap();
        assert!(per > 0.5 && per < 12.0, "{per}");
    }
    // The insert-only mix switches memtables and the adaptive kind moves
    // to a vector.
    let ad = find(&recs, "strata", "adaptive", "mix-insert-only").unwrap();
    assert!(
        ad.extra["memtable_switches"].as_u64().unwrap() >= 2,
        "{:?}",
        ad.extra
    );
    assert!(reps_summary(ad).contains("vector"), "{}", reps_summary(ad));
    let md = ratios(&recs);
    assert!(md.contains("vector / skiplist"), "{md}");
    assert!(md.contains("adaptive / best fixed"), "{md}");
    let v = verification(&recs);
    assert!(v.contains("every run"), "{v}");
    let files = charts(&recs, &d.path().join("charts")).unwrap();
    assert_eq!(files.len(), 4);
}
