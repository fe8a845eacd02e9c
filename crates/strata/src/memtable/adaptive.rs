//! The adaptive representation: a memtable that watches its operation mix
//! and, at the memtable switch, picks the representation of the next buffer.
//!
//! The first buffer is a skiplist. Once it holds `first_buffer_fraction` of
//! the write buffer (default an eighth) and has seen `min_ops` operations,
//! [`decide`] runs once on what it saw: if that picks another
//! representation, its entries move into one then
//! ([`super::MemTable::rehomed`]: same log, no flush) rather than after a
//! whole buffer in the wrong one (with a point-read-heavy mix, a whole first
//! buffer as a skiplist cost about a tenth of the best fixed kind's
//! throughput); otherwise it fills up as usual. While mutable, an adaptive
//! memtable
//! counts inserts, point reads ([`super::MemTable::get`]) and range reads
//! (iterator creations, [`super::MemTable::iter`]); reads of immutable
//! memtables (which every kind serves from sorted data) are not counted. At
//! the switch, [`decide`] applies the memory-buffer study's findings
//! (seed 003, "Anatomy of LSM Memory Buffer"):
//!
//! 1. fewer than `min_ops` operations: keep the current representation;
//! 2. (almost) insert-only, reads at most `max_read_share_for_vector`:
//!    `vector` ("vector is 10x faster than skip-list for an insert-only
//!    workload");
//! 3. range reads at least `min_range_share_for_skiplist`: `skiplist`
//!    ("skip-list outperforms for workloads with range queries"; every other
//!    kind copies and sorts for an iterator);
//! 4. point reads at least `min_point_share_for_hash`: a hash buffer when
//!    the keyspace has a prefix extractor ("hash buffers are 2-3x faster
//!    than skip-list for point queries"), else `skiplist`. The hash kind
//!    follows the bucket load (the entries a full buffer puts in a bucket
//!    on average): at most `max_bucket_load_for_linklist`, `hash-linklist`
//!    (a short sorted list is walked faster than a bucket skiplist's tower,
//!    and costs less memory); above it, `hash-skiplist`. A skewed prefix
//!    distribution that overfills some lists costs at most one conversion
//!    per bucket: a list converts to a skiplist past its threshold;
//! 5. otherwise `skiplist`, the all-rounder.
//!
//! Vectors are "the worst choice for workloads with point queries": a read
//! of a mutable vector copies and sorts it, so even 200 reads among 140K
//! inserts tip the balance, hence the tiny default read share for rule 2.

use std::fmt;

use super::MemTableKind;

/// Thresholds of the adaptive choice; shares are fractions of the
/// operations observed in one buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct AdaptivePolicy {
    /// Below this many operations the sample is too small to act on
    /// (default 1,000).
    pub min_ops: u64,
    /// Largest read share (point + range) still treated as insert-only
    /// (default 0.0001: one read in 10,000 operations).
    pub max_read_share_for_vector: f64,
    /// Range-read share from which a skiplist is chosen (default 0.001).
    pub min_range_share_for_skiplist: f64,
    /// Point-read share from which a hash buffer is chosen (default 0.05).
    pub min_point_share_for_hash: f64,
    /// Largest average bucket load (entries of a full buffer per bucket)
    /// for which the hash buffer is `hash-linklist` rather than
    /// `hash-skiplist` (default 16). Not negative.
    pub max_bucket_load_for_linklist: f64,
    /// Fraction of the write buffer after which the first buffer (nothing
    /// observed before it) changes representation early, once it has seen
    /// `min_ops` operations and if they call for another representation
    /// (default 0.125; 1.0: never early). Greater than 0.
    pub first_buffer_fraction: f64,
}

impl Default for AdaptivePolicy {
    fn default() -> Self {
        AdaptivePolicy {
            min_ops: 1000,
            max_read_share_for_vector: 0.0001,
            min_range_share_for_skiplist: 0.001,
            min_point_share_for_hash: 0.05,
            max_bucket_load_for_linklist: 16.0,
            first_buffer_fraction: 0.125,
        }
    }
}

impl AdaptivePolicy {
    /// Checks that the shares are fractions.
    pub(crate) fn validate(&self) -> Result<(), String> {
        for (name, v) in [
            ("max_read_share_for_vector", self.max_read_share_for_vector),
            (
                "min_range_share_for_skiplist",
                self.min_range_share_for_skiplist,
            ),
            ("min_point_share_for_hash", self.min_point_share_for_hash),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!(
                    "adaptive policy {name} must be between 0 and 1, not {v}"
                ));
            }
        }
        let l = self.max_bucket_load_for_linklist;
        // NaN is refused too.
        if l.is_nan() || l < 0.0 {
            return Err(format!(
                "adaptive policy max_bucket_load_for_linklist must not be negative, not {l}"
            ));
        }
        let f = self.first_buffer_fraction;
        if !(f > 0.0 && f <= 1.0) {
            return Err(format!(
                "adaptive policy first_buffer_fraction must be above 0 and at most 1, not {f}"
            ));
        }
        Ok(())
    }
}

/// Operations one memtable saw while mutable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCounts {
    pub inserts: u64,
    pub point_reads: u64,
    pub range_reads: u64,
}

impl OpCounts {
    /// All operations.
    pub fn total(&self) -> u64 {
        self.inserts + self.point_reads + self.range_reads
    }
}

/// What the adaptive memtable chose for a buffer, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct AdaptiveDecision {
    /// The representation chosen.
    pub kind: MemTableKind,
    /// What the previous buffer observed.
    pub observed: OpCounts,
    /// Why, in words.
    pub reason: String,
    /// Entries moved in from the previous buffer when the first buffer
    /// changed representation early (`None`: a switch at a full buffer).
    pub moved: Option<u64>,
}

impl fmt::Display for AdaptiveDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.observed;
        write!(
            f,
            "{}: {} (previous buffer: {} inserts, {} point reads, {} range reads)",
            self.kind, self.reason, o.inserts, o.point_reads, o.range_reads
        )?;
        if let Some(n) = self.moved {
            write!(
                f,
                "; first buffer changed representation early, {n} entries moved"
            )?;
        }
        Ok(())
    }
}

fn pct(x: f64) -> String {
    format!("{:.3}%", x * 100.0)
}

/// Picks the next buffer's representation from what the current one (of
/// kind `current`) observed. `bucket_load` is the average number of entries
/// a full buffer would put in each hash bucket (`None`: the keyspace has no
/// prefix extractor, so no hash buffer is possible).
pub fn decide(
    policy: &AdaptivePolicy,
    observed: OpCounts,
    bucket_load: Option<f64>,
    current: MemTableKind,
) -> AdaptiveDecision {
    let total = observed.total();
    let made = |kind: MemTableKind, reason: String| AdaptiveDecision {
        kind,
        observed,
        reason,
        moved: None,
    };
    if total < policy.min_ops {
        return made(
            current,
            format!(
                "too few operations ({total} < {}) to change; keeping {current}",
                policy.min_ops
            ),
        );
    }
    let t = total as f64;
    let reads = (observed.point_reads + observed.range_reads) as f64 / t;
    let range = observed.range_reads as f64 / t;
    let point = observed.point_reads as f64 / t;
    if reads <= policy.max_read_share_for_vector {
        return made(
            MemTableKind::Vector,
            format!(
                "insert-only (reads {} <= {}): appends beat skiplist inserts",
                pct(reads),
                pct(policy.max_read_share_for_vector)
            ),
        );
    }
    if range >= policy.min_range_share_for_skiplist {
        return made(
            MemTableKind::SkipList,
            format!(
                "range reads {} >= {}: the skiplist iterates without a copy",
                pct(range),
                pct(policy.min_range_share_for_skiplist)
            ),
        );
    }
    if point >= policy.min_point_share_for_hash {
        let heavy = format!(
            "point-read heavy ({} >= {}), few range reads",
            pct(point),
            pct(policy.min_point_share_for_hash)
        );
        return match bucket_load {
            Some(load) if load <= policy.max_bucket_load_for_linklist => made(
                MemTableKind::HashLinkList,
                format!(
                    "{heavy}: hashing on the prefix shortens lookups; buckets would hold {load:.1} entries on average (<= {}), short enough for sorted lists",
                    policy.max_bucket_load_for_linklist
                ),
            ),
            Some(load) => made(
                MemTableKind::HashSkipList,
                format!(
                    "{heavy}: hashing on the prefix shortens lookups; buckets would hold {load:.1} entries on average (> {}), so each is a skiplist",
                    policy.max_bucket_load_for_linklist
                ),
            ),
            None => made(
                MemTableKind::SkipList,
                format!("{heavy}, but no prefix extractor for a hash buffer"),
            ),
        };
    }
    made(
        MemTableKind::SkipList,
        format!(
            "mixed (point reads {}, range reads {}): the skiplist is the all-rounder",
            pct(point),
            pct(range)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(inserts: u64, point_reads: u64, range_reads: u64) -> OpCounts {
        OpCounts {
            inserts,
            point_reads,
            range_reads,
        }
    }

    #[test]
    fn decisions_follow_the_study() {
        let p = AdaptivePolicy::default();
        // A prefix extractor with light buckets.
        let light = Some(0.5);
        let d = |o, x: Option<f64>| decide(&p, o, x, MemTableKind::SkipList).kind;
        assert_eq!(
            d(ops(10, 0, 0), light),
            MemTableKind::SkipList,
            "too few ops"
        );
        assert_eq!(d(ops(100_000, 0, 0), light), MemTableKind::Vector);
        assert_eq!(d(ops(100_000, 5, 0), light), MemTableKind::Vector);
        assert_eq!(
            d(ops(100_000, 200, 0), light),
            MemTableKind::SkipList,
            "200 reads are not insert-only"
        );
        assert_eq!(
            d(ops(100_000, 50_000, 0), light),
            MemTableKind::HashLinkList
        );
        assert_eq!(
            d(
                ops(100_000, 50_000, 0),
                Some(p.max_bucket_load_for_linklist)
            ),
            MemTableKind::HashLinkList
        );
        assert_eq!(
            d(
                ops(100_000, 50_000, 0),
                Some(p.max_bucket_load_for_linklist + 1.0)
            ),
            MemTableKind::HashSkipList,
            "crowded buckets are skiplists"
        );
        assert_eq!(d(ops(100_000, 50_000, 0), None), MemTableKind::SkipList);
        assert_eq!(
            d(ops(100_000, 50_000, 1_000), light),
            MemTableKind::SkipList
        );
        assert_eq!(d(ops(100_000, 0, 200), light), MemTableKind::SkipList);
        let kept = decide(&p, ops(3, 0, 0), light, MemTableKind::Vector);
        assert_eq!(kept.kind, MemTableKind::Vector);
        assert!(kept.to_string().contains("too few"), "{kept}");
    }

    #[test]
    fn policy_shares_must_be_fractions() {
        let p = AdaptivePolicy {
            min_point_share_for_hash: 1.5,
            ..AdaptivePolicy::default()
        };
        assert!(p.validate().is_err());
        let p = AdaptivePolicy {
            max_read_share_for_vector: f64::NAN,
            ..AdaptivePolicy::default()
        };
        assert!(p.validate().is_err());
        for f in [0.0, -0.5, 1.5, f64::NAN] {
            let p = AdaptivePolicy {
                first_buffer_fraction: f,
                ..AdaptivePolicy::default()
            };
            assert!(p.validate().is_err(), "{f}");
        }
        for l in [-1.0, f64::NAN] {
            let p = AdaptivePolicy {
                max_bucket_load_for_linklist: l,
                ..AdaptivePolicy::default()
            };
            assert!(p.validate().is_err(), "{l}");
        }
        assert!(AdaptivePolicy::default().validate().is_ok());
    }
}
