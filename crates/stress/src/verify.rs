//! Whole-database verification against the expected state (after a crash,
//! a power cut, or at the start of a run).
//!
//! The rule, per key:
//! - value keys: the key must hold one of its *settled* states (the
//!   committed one; after a power cut, any state acknowledged since the
//!   key's last synced write) or its pending state (a write in flight at the
//!   crash). A value is accepted only if it regenerates byte for byte from
//!   the `(key, generation)` in its head; absence is accepted when one of
//!   those states is absent (never written or deleted);
//! - counter keys: the counter must equal one of its settled states or the
//!   pending operation applied to the newest one;
//! - batches: the keys still pending with the same batch tag must all show
//!   the batch applied or all show it not applied (keys where both readings
//!   coincide are ambiguous and skipped);
//! - a full forward scan, a full backward scan and a point get of every key
//!   must agree, scans must return keys in order and only keys of the key
//!   space, and every live table must pass its checksum verification.
//!
//! With `resolve`, each key's expected state is then set to what the
//! database holds (nothing pending), so the next run starts exact.

use std::collections::BTreeMap;

use strata::{Keyspace, ReadOptions};

use crate::check::{Failures, match_counter, match_value};
use crate::config::Handles;
use crate::expected::{DEL, ExpectedState, VState, vstate_absent};
use crate::values::{
    check_value, counter_key, decode_counter, parse_counter_key, parse_value_key, value_key,
};

/// What a verification saw.
#[derive(Clone, Debug, Default)]
pub struct VerifyReport {
    pub value_keys: u64,
    pub counter_keys: u64,
    /// Keys present in the database.
    pub present: u64,
    /// Keys that had a pending operation.
    pub pending: u64,
    /// Of those, keys where the pending operation had landed.
    pub pending_applied: u64,
    /// Batches (tags) checked for atomicity.
    pub batches_checked: u64,
    /// Failed checks in this verification.
    pub failures: u64,
}

impl VerifyReport {
    pub fn line(&self) -> String {
        format!(
            "checked {} value keys and {} counters ({} present); {} pending, {} of them landed; \
             {} batches checked; {} failures",
            self.value_keys,
            self.counter_keys,
            self.present,
            self.pending,
            self.pending_applied,
            self.batches_checked,
            self.failures
        )
    }
}

/// Reads a whole keyspace forward and backward; reports disagreement and
/// order problems; returns the forward entries.
fn full_scan(ks: &Keyspace, name: &str, failures: &Failures) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    let read = |reverse: bool| -> strata::Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut it = ks.iter(ReadOptions::default())?;
        let mut out = Vec::new();
        if reverse {
            it.seek_to_last();
        } else {
            it.seek_to_first();
        }
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        it.status()?;
        if reverse {
            out.reverse();
        }
        Ok(out)
    };
    let fwd = match read(false) {
        Ok(v) => v,
        Err(e) => {
            failures.report(format!("full forward scan of {name} failed: {e}"));
            return None;
        }
    };
    for w in fwd.windows(2) {
        if w[0].0 >= w[1].0 {
            failures.report(format!(
                "full scan of {name}: key {:?} is followed by {:?}",
                String::from_utf8_lossy(&w[0].0),
                String::from_utf8_lossy(&w[1].0)
            ));
        }
    }
    match read(true) {
        Ok(bwd) if bwd != fwd => {
            let at = fwd.iter().zip(&bwd).position(|(a, b)| a != b);
            failures.report(format!(
                "{name}: a backward scan returned {} entries, a forward one {} (first difference at {at:?})",
                bwd.len(),
                fwd.len()
            ));
        }
        Ok(_) => {}
        Err(e) => failures.report(format!("full backward scan of {name} failed: {e}")),
    }
    Some(fwd)
}

/// Per batch tag: keys showing the batch applied, and keys showing it not applied.
pub(crate) type TagMap = BTreeMap<u32, (Vec<String>, Vec<String>)>;

/// Notes whether `key`, written by the batch `tag` (0: no batch), shows
/// the batch applied (`None`: cannot tell).
pub(crate) fn note_tag(tags: &mut TagMap, tag: u32, key: String, applied: Option<bool>) {
    if tag == 0 {
        return;
    }
    let e = tags.entry(tag).or_default();
    match applied {
        Some(true) => e.0.push(key),
        Some(false) => e.1.push(key),
        None => {}
    }
}

/// Reports each batch of `tags` that landed on some of its keys but not on
/// others (`what` names a batch in the message); returns how many batches
/// were checked.
pub(crate) fn report_partial_batches(tags: &TagMap, what: &str, failures: &Failures) -> u64 {
    for (tag, (yes, no)) in tags {
        if !yes.is_empty() && !no.is_empty() {
            failures.report(format!(
                "{what} {tag} was applied partially: landed on {yes:?}, not on {no:?}"
            ));
        }
    }
    tags.len() as u64
}

/// Verifies the database against `state`; see the module documentation.
pub fn verify_db(
    h: &Handles,
    state: &ExpectedState,
    resolve: bool,
    failures: &Failures,
) -> VerifyReport {
    let before = failures.count();
    let l = state.layout();
    let mut rep = VerifyReport {
        value_keys: u64::from(l.value_keys),
        counter_keys: u64::from(l.counter_keys),
        ..VerifyReport::default()
    };
    let mut tags = TagMap::new();

    // Value keys.
    let mut scanned: Vec<Option<Vec<u8>>> = vec![None; l.value_keys as usize];
    if let Some(entries) = full_scan(&h.values, "the values keyspace", failures) {
        for (k, v) in entries {
            match parse_value_key(&k).filter(|&i| i < l.value_keys) {
                Some(i) => scanned[i as usize] = Some(v),
                None => failures.report(format!(
                    "values keyspace holds a key outside the key space: {:?}",
                    String::from_utf8_lossy(&k)
                )),
            }
        }
    }
    for i in 0..l.value_keys {
        let from_scan = scanned[i as usize].take();
        let found = match h.values.get(&value_key(i)) {
            Ok(f) => f,
            Err(e) => {
                failures.report(format!("value key {i}: get failed: {e}"));
                continue;
            }
        };
        if found != from_scan {
            failures.report(format!(
                "value key {i}: get returned {:?} bytes, the full scan {:?}",
                found.as_ref().map(Vec::len),
                from_scan.as_ref().map(Vec::len)
            ));
        }
        if found.is_some() {
            rep.present += 1;
        }
        let settled = state.value_settled(i);
        let pending = state.value_pending(i);
        let mut ok: Vec<VState> = settled.clone();
        if pending != 0 {
            ok.push(pending);
            rep.pending += 1;
        }
        let matched = match match_value(&l, i, found.as_deref(), &ok) {
            Ok(s) => Some(s),
            Err(m) => {
                failures.report(format!("verify: {m}"));
                None
            }
        };
        if pending != 0 {
            let applied = match &found {
                Some(_) => matched.map(|s| s == pending),
                None if vstate_absent(pending) => {
                    if settled.iter().any(|&s| vstate_absent(s)) {
                        None
                    } else {
                        Some(true)
                    }
                }
                None => Some(false),
            };
            if applied == Some(true) {
                rep.pending_applied += 1;
            }
            if matched.is_some() {
                note_tag(
                    &mut tags,
                    state.value_tag(i),
                    format!("value key {i}"),
                    applied,
                );
            }
        }
        if resolve {
            let st = matched.or_else(|| match &found {
                Some(v) => check_value(i, v, l.value_min as usize, l.value_max as usize).ok(),
                None => Some(state.value_view(i).max_gen | DEL),
            });
            if let Some(st) = st {
                state.resolve_value(i, st);
            }
        }
    }

    // Counter keys.
    let mut scanned: Vec<Option<Vec<u8>>> = vec![None; l.counter_keys as usize];
    if let Some(entries) = full_scan(&h.counters, "the counters keyspace", failures) {
        for (k, v) in entries {
            match parse_counter_key(&k).filter(|&c| c < l.counter_keys) {
                Some(c) => scanned[c as usize] = Some(v),
                None => failures.report(format!(
                    "counters keyspace holds a key outside the key space: {:?}",
                    String::from_utf8_lossy(&k)
                )),
            }
        }
    }
    for c in 0..l.counter_keys {
        let from_scan = scanned[c as usize].take();
        let found = match h.counters.get(&counter_key(c)) {
            Ok(f) => f,
            Err(e) => {
                failures.report(format!("counter {c}: get failed: {e}"));
                continue;
            }
        };
        if found != from_scan {
            failures.report(format!(
                "counter {c}: get returned {:?}, the full scan {:?}",
                found, from_scan
            ));
        }
        if found.is_some() {
            rep.present += 1;
        }
        let settled = state.counter_settled(c);
        let mut ok = settled.clone();
        let pending = state.counter_pending(c);
        let new = pending.map(|op| op.apply(settled.last().copied().flatten()));
        if let Some(n) = new {
            ok.push(n);
            rep.pending += 1;
        }
        let matched = match match_counter(c, found.as_deref(), &ok) {
            Ok(s) => Some(s),
            Err(m) => {
                failures.report(format!("verify: {m}"));
                None
            }
        };
        if let (Some(n), Some(m)) = (new, matched) {
            let applied = match (m == n, settled.contains(&m)) {
                (true, false) => Some(true),
                (false, true) => Some(false),
                _ => None,
            };
            if applied == Some(true) {
                rep.pending_applied += 1;
            }
            note_tag(
                &mut tags,
                state.counter_tag(c),
                format!("counter {c}"),
                applied,
            );
        }
        if resolve {
            let st = matched.or_else(|| match &found {
                Some(v) => decode_counter(v).ok().map(Some),
                None => Some(None),
            });
            if let Some(st) = st {
                state.resolve_counter(c, st);
            }
        }
    }

    rep.batches_checked += report_partial_batches(&tags, "batch", failures);

    // Table checksums.
    for (path, e) in h.db.verify() {
        failures.report(format!("table {} fails verification: {e}", path.display()));
    }

    rep.failures = failures.count() - before;
    rep
}
