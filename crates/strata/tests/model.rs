//! Model-based test: random operations against the database and against a
//! `BTreeMap` per keyspace; every read must agree with the model.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use strata::merge::AppendOperator;
use strata::{Db, KeyspaceOptions, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Clone, Debug)]
enum Op {
    Put(u8, u8, Vec<u8>),
    Delete(u8, u8),
    Merge(u8, u8, Vec<u8>),
    Batch(Vec<(u8, u8, Option<Vec<u8>>)>),
    Get(u8, u8),
    TakeSnapshot,
    ReleaseSnapshot(usize),
    GetAtSnapshot(usize, u8, u8),
    Scan(u8, Option<u8>, Option<u8>, bool),
    Walk(u8, u8, Vec<bool>),
    ShortScan(u8, u8, u8),
    Flush,
    Compact,
    Reopen,
}

fn key(k: u8) -> Vec<u8> {
    format!("key{k:03}").into_bytes()
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let ks = 0u8..2;
    let k = 0u8..60;
    let val = proptest::collection::vec(any::<u8>(), 0..40);
    prop_oneof![
        20 => (ks.clone(), k.clone(), val.clone()).prop_map(|(s, k, v)| Op::Put(s, k, v)),
        6 => (ks.clone(), k.clone()).prop_map(|(s, k)| Op::Delete(s, k)),
        6 => (ks.clone(), k.clone(), proptest::collection::vec(b'a'..=b'y', 1..4)).prop_map(|(s, k, v)| Op::Merge(s, k, v)),
        4 => proptest::collection::vec((ks.clone(), k.clone(), proptest::option::of(val.clone())), 1..8).prop_map(Op::Batch),
        10 => (ks.clone(), k.clone()).prop_map(|(s, k)| Op::Get(s, k)),
        2 => Just(Op::TakeSnapshot),
        1 => (0usize..4).prop_map(Op::ReleaseSnapshot),
        4 => (0usize..4, ks.clone(), k.clone()).prop_map(|(i, s, k)| Op::GetAtSnapshot(i, s, k)),
        4 => (ks.clone(), proptest::option::of(k.clone()), proptest::option::of(k.clone()), any::<bool>())
            .prop_map(|(s, a, b, rev)| Op::Scan(s, a, b, rev)),
        3 => (ks.clone(), k.clone(), proptest::collection::vec(any::<bool>(), 1..12)).prop_map(|(s, k, m)| Op::Walk(s, k, m)),
        6 => (ks.clone(), k.clone(), 1u8..12).prop_map(|(s, k, n)| Op::ShortScan(s, k, n)),
        2 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
    ]
}

thread_local! {
    /// Whether this thread's cases run with memtable retention and iterator
    /// reduction on, with budgets small enough to force evictions.
    static SHORT_RANGE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn options() -> Options {
    let merge = Arc::new(AppendOperator { delimiter: b',' });
    let mut o = Options {
        default_keyspace: keyspace_options(),
        block_cache_bytes: 64 * 1024,
        ..Options::default()
    };
    o.default_keyspace.merge_operator = Some(merge);
    o
}

fn keyspace_options() -> KeyspaceOptions {
    let short_range = SHORT_RANGE.with(|c| c.get());
    KeyspaceOptions {
        retain_flushed_memtables: short_range,
        retained_memtable_bytes: 12 * 1024,
        iterator_reduction: short_range,
        level_filter_bytes: 2048,
        write_buffer_size: 4096,
        target_file_size: 4096,
        level1_max_bytes: 8192,
        level0_compaction_trigger: 2,
        block_size: 256,
        merge_operator: Some(Arc::new(AppendOperator { delimiter: b',' })),
        ..KeyspaceOptions::default()
    }
}

struct Harness {
    dir: tempfile::TempDir,
    db: Option<Db>,
    models: [Model; 2],
    snapshots: Vec<(Snapshot, [Model; 2])>,
}

impl Harness {
    fn db(&self) -> &Db {
        self.db.as_ref().expect("open")
    }

    fn ks(&self, s: u8) -> strata::Keyspace {
        if s == 0 {
            self.db().default_keyspace()
        } else {
            self.db()
                .keyspace("second", keyspace_options())
                .expect("keyspace")
        }
    }

    fn merge_model(&mut self, s: u8, k: u8, v: &[u8]) {
        let m = &mut self.models[s as usize];
        match m.get_mut(&key(k)) {
            Some(old) => {
                old.push(b',');
                old.extend_from_slice(v);
            }
            None => {
                m.insert(key(k), v.to_vec());
            }
        }
    }

    fn run(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match op {
            Op::Put(s, k, v) => {
                self.ks(*s).put(&key(*k), v).map_err(fail)?;
                self.models[*s as usize].insert(key(*k), v.clone());
            }
            Op::Delete(s, k) => {
                self.ks(*s).delete(&key(*k)).map_err(fail)?;
                self.models[*s as usize].remove(&key(*k));
            }
            Op::Merge(s, k, v) => {
                self.ks(*s).merge(&key(*k), v).map_err(fail)?;
                self.merge_model(*s, *k, v);
            }
            Op::Batch(entries) => {
                let mut b = WriteBatch::new();
                let ids = [self.ks(0).id(), self.ks(1).id()];
                for (s, k, v) in entries {
                    match v {
                        Some(v) => b.put_in(ids[*s as usize], &key(*k), v),
                        None => b.delete_in(ids[*s as usize], &key(*k)),
                    }
                }
                self.db().write(WriteOptions::default(), b).map_err(fail)?;
                for (s, k, v) in entries {
                    match v {
                        Some(v) => self.models[*s as usize].insert(key(*k), v.clone()),
                        None => self.models[*s as usize].remove(&key(*k)),
                    };
                }
            }
            Op::Get(s, k) => {
                let got = self.ks(*s).get(&key(*k)).map_err(fail)?;
                prop_assert_eq!(
                    got.as_ref(),
                    self.models[*s as usize].get(&key(*k)),
                    "get {:?}",
                    op
                );
                // The buffer-reusing read agrees, whatever the buffer held.
                let mut buf = b"left over from an earlier read".to_vec();
                let found = self.ks(*s).get_into(&key(*k), &mut buf).map_err(fail)?;
                prop_assert_eq!(found, got.is_some(), "get_into {:?}", op);
                prop_assert_eq!(
                    buf.as_slice(),
                    got.as_deref().unwrap_or_default(),
                    "get_into {:?}",
                    op
                );
            }
            Op::TakeSnapshot => {
                if self.snapshots.len() < 4 {
                    let snap = self.db().snapshot();
                    self.snapshots.push((snap, self.models.clone()));
                }
            }
            Op::ReleaseSnapshot(i) => {
                if *i < self.snapshots.len() {
                    self.snapshots.remove(*i);
                }
            }
            Op::GetAtSnapshot(i, s, k) => {
                if let Some((snap, models)) = self.snapshots.get(*i) {
                    let got = self.ks(*s).get_at(&key(*k), snap).map_err(fail)?;
                    prop_assert_eq!(
                        got.as_ref(),
                        models[*s as usize].get(&key(*k)),
                        "snapshot get {:?}",
                        op
                    );
                    let snapshot_iter = || {
                        self.ks(*s).iter(ReadOptions {
                            snapshot: Some(snap.seqno()),
                            ..Default::default()
                        })
                    };
                    let mut it = snapshot_iter().map_err(fail)?;
                    it.seek_to_first();
                    let mut all = Vec::new();
                    while it.valid() {
                        all.push((it.key().to_vec(), it.value().to_vec()));
                        it.next();
                    }
                    it.status().map_err(fail)?;
                    let want: Vec<_> = models[*s as usize].clone().into_iter().collect();
                    prop_assert_eq!(all, want, "snapshot scan {:?}", op);
                    // Short scans from the key at the snapshot: newer
                    // versions of it must not stop a point-first seek.
                    for n in [1usize, 4] {
                        let mut it = snapshot_iter().map_err(fail)?;
                        it.seek(&key(*k));
                        let mut got = Vec::new();
                        while it.valid() && got.len() < n {
                            got.push((it.key().to_vec(), it.value().to_vec()));
                            it.next();
                        }
                        it.status().map_err(fail)?;
                        let want: Vec<_> = models[*s as usize]
                            .range(key(*k)..)
                            .take(n)
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect();
                        prop_assert_eq!(got, want, "snapshot short scan {:?}", op);
                    }
                }
            }
            Op::Scan(s, lo, hi, rev) => {
                let lo_k = lo.map(key);
                let hi_k = hi.map(key);
                let mut it = self
                    .ks(*s)
                    .iter(ReadOptions {
                        snapshot: None,
                        lower_bound: lo_k.clone(),
                        upper_bound: hi_k.clone(),
                    })
                    .map_err(fail)?;
                let want: Vec<(Vec<u8>, Vec<u8>)> = self.models[*s as usize]
                    .iter()
                    .filter(|(k, _)| {
                        lo_k.as_ref().is_none_or(|l| *k >= l)
                            && hi_k.as_ref().is_none_or(|h| *k < h)
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let mut got = Vec::new();
                if *rev {
                    it.seek_to_last();
                    while it.valid() {
                        got.push((it.key().to_vec(), it.value().to_vec()));
                        it.prev();
                    }
                    got.reverse();
                } else {
                    it.seek_to_first();
                    while it.valid() {
                        got.push((it.key().to_vec(), it.value().to_vec()));
                        it.next();
                    }
                }
                it.status().map_err(fail)?;
                prop_assert_eq!(got, want, "scan {:?}", op);
            }
            Op::Walk(s, k, moves) => {
                let model: Vec<(Vec<u8>, Vec<u8>)> = self.models[*s as usize]
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let mut it = self.ks(*s).iter(ReadOptions::default()).map_err(fail)?;
                it.seek(&key(*k));
                let mut pos = model.partition_point(|(mk, _)| mk.as_slice() < key(*k).as_slice());
                for forward in moves {
                    if pos >= model.len() {
                        prop_assert!(!it.valid(), "walk past end {:?}", op);
                        break;
                    }
                    prop_assert!(it.valid(), "walk {:?} at {}", op, pos);
                    prop_assert_eq!(it.key(), model[pos].0.as_slice());
                    prop_assert_eq!(it.value(), model[pos].1.as_slice());
                    if *forward {
                        it.next();
                        pos += 1;
                    } else {
                        it.prev();
                        if pos == 0 {
                            prop_assert!(!it.valid());
                            break;
                        }
                        pos -= 1;
                    }
                }
                it.status().map_err(fail)?;
            }
            Op::ShortScan(s, k, n) => {
                let mut it = self.ks(*s).iter(ReadOptions::default()).map_err(fail)?;
                it.seek(&key(*k));
                let mut got = Vec::new();
                while it.valid() && got.len() < *n as usize {
                    got.push((it.key().to_vec(), it.value().to_vec()));
                    it.next();
                }
                it.status().map_err(fail)?;
                let want: Vec<_> = self.models[*s as usize]
                    .range(key(*k)..)
                    .take(*n as usize)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                prop_assert_eq!(got, want, "short scan {:?}", op);
            }
            Op::Flush => self.db().flush().map_err(fail)?,
            Op::Compact => self.db().compact().map_err(fail)?,
            Op::Reopen => {
                self.snapshots.clear();
                if let Some(db) = self.db.take() {
                    db.close().map_err(fail)?;
                }
                self.db = Some(Db::open(self.dir.path(), options()).map_err(fail)?);
            }
        }
        Ok(())
    }
}

fn fail(e: strata::Error) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

fn run_model(ops: &[Op], short_range: bool) -> Result<(), TestCaseError> {
    SHORT_RANGE.with(|c| c.set(short_range));
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), options()).expect("open");
    let mut h = Harness {
        dir,
        db: Some(db),
        models: [Model::new(), Model::new()],
        snapshots: Vec::new(),
    };
    for op in ops {
        h.run(op)?;
    }
    // Final full check, after a reopen.
    h.run(&Op::Reopen)?;
    for s in 0..2u8 {
        h.run(&Op::Scan(s, None, None, false))?;
        h.run(&Op::Scan(s, None, None, true))?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    #[test]
    fn database_agrees_with_btreemap_model(ops in proptest::collection::vec(op_strategy(), 1..250)) {
        run_model(&ops, false)?;
    }

    /// The same, with memtable retention and iterator reduction on and
    /// budgets small enough that retained memtables and filter records are
    /// evicted.
    #[test]
    fn database_agrees_with_model_with_short_range_optimisations(ops in proptest::collection::vec(op_strategy(), 1..250)) {
        run_model(&ops, true)?;
    }
}
