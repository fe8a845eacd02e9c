//! Matching what the database returns against the expected state, and
//! collecting failures.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::expected::{CState, Layout, VState, describe_vstate, vstate_absent, vstate_gen};
use crate::values::{check_value, decode_counter};

/// Failed checks: counted, printed to stderr as `FAILURE: ...` lines (the
/// crash driver counts these lines in a child's output), the first ones kept.
#[derive(Default)]
pub struct Failures {
    count: AtomicU64,
    kept: Mutex<Vec<String>>,
}

/// How many failure lines are printed; later ones are only counted.
const PRINTED: u64 = 1000;

impl Failures {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one failed check.
    pub fn report(&self, msg: impl Into<String>) {
        let msg = msg.into();
        let n = self.count.fetch_add(1, Ordering::SeqCst);
        if n < PRINTED {
            eprintln!("FAILURE: {msg}");
        } else if n == PRINTED {
            eprintln!("FAILURE: (further failures are counted, not printed)");
        }
        let mut k = self.kept.lock();
        if k.len() < 100 {
            k.push(msg);
        }
    }

    /// Failed checks so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }

    /// The first failures' messages.
    pub fn kept(&self) -> Vec<String> {
        self.kept.lock().clone()
    }
}

fn list_vstates(states: &[VState]) -> String {
    states
        .iter()
        .map(|s| describe_vstate(*s))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Checks value key `i`, found holding `found`, against the acceptable
/// states; returns the state it matched.
pub fn match_value(
    layout: &Layout,
    i: u32,
    found: Option<&[u8]>,
    acceptable: &[VState],
) -> Result<VState, String> {
    let (min, max) = (layout.value_min as usize, layout.value_max as usize);
    match found {
        Some(v) => {
            let g = check_value(i, v, min, max).map_err(|e| format!("value key {i}: {e}"))?;
            if acceptable
                .iter()
                .any(|&s| !vstate_absent(s) && vstate_gen(s) == g)
            {
                Ok(g)
            } else {
                Err(format!(
                    "value key {i}: holds generation {g}, expected {}",
                    list_vstates(acceptable)
                ))
            }
        }
        None => acceptable
            .iter()
            .copied()
            .find(|&s| vstate_absent(s))
            .ok_or_else(|| {
                format!(
                    "value key {i}: absent, expected {}",
                    list_vstates(acceptable)
                )
            }),
    }
}

/// Checks counter `c`, found holding `found`, against the acceptable
/// states; returns the state it matched.
pub fn match_counter(
    c: u32,
    found: Option<&[u8]>,
    acceptable: &[CState],
) -> Result<CState, String> {
    let st = match found {
        Some(v) => Some(decode_counter(v).map_err(|e| format!("counter {c}: {e}"))?),
        None => None,
    };
    if acceptable.contains(&st) {
        Ok(st)
    } else {
        Err(format!(
            "counter {c}: holds {st:?}, expected one of {acceptable:?}"
        ))
    }
}
