//! The read path: point reads and iterators over a super-version.

use super::*;

/// A retained memtable read in place of its level-0 file. The file's point
/// filter answers for it: the copy holds exactly the file's entries.
pub(super) struct RetainedIter {
    inner: RetainedTableIter,
    table: TableHandle,
}

impl InternalIterator for RetainedIter {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.inner.seek_to_first()
    }
    fn seek_to_last(&mut self) {
        self.inner.seek_to_last()
    }
    fn seek(&mut self, target: &[u8]) {
        self.inner.seek(target)
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.inner.seek_for_prev(target)
    }
    fn next(&mut self) {
        self.inner.next()
    }
    fn prev(&mut self) {
        self.inner.prev()
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn may_contain_user_key(&self, user_key: &[u8]) -> bool {
        self.table.may_contain(user_key)
    }
    fn status(&self) -> Result<()> {
        self.inner.status()
    }
}

impl DbInner {
    /// Reads `key` into `out` (cleared first); whether it has a value.
    pub(super) fn get(
        &self,
        ks: &KeyspaceShared,
        key: &[u8],
        snapshot: Option<SeqNo>,
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        self.check_open()?;
        // A guard, not a counted reference: see `KeyspaceShared::sv`.
        let sv = ks.sv.load();
        let snap = snapshot.unwrap_or_else(|| self.last_seqno());
        if sv.plan.single_lineage() {
            return get_in_lineage(&sv, key, snap, 0, out);
        }
        // Each lineage resolves on its own (its groups hold only older
        // data deeper down); the layout joins the parts.
        let n = sv.plan.lineages().len();
        let mut parts: Vec<Option<Vec<u8>>> = Vec::with_capacity(n);
        for lineage in 0..n {
            let mut buf = Vec::new();
            let found = get_in_lineage(&sv, key, snap, lineage, &mut buf)?;
            parts.push(found.then_some(buf));
        }
        let refs: Vec<Option<&[u8]>> = parts.iter().map(|p| p.as_deref()).collect();
        out.clear();
        match sv.opts.layout.stitch(key, &refs) {
            Ok(Some(v)) => {
                *out = v;
                Ok(true)
            }
            Ok(None) => Ok(false),
            Err(e) => Err(crate::stitch::stitch_error(&*sv.opts.layout, &e)),
        }
    }

    /// The keys in `[lo, hi)` whose value at `snapshot` (the latest state
    /// if `None`) matches `pred`, with their values, in key order.
    pub(super) fn filter(
        &self,
        ks: &KeyspaceShared,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        pred: &crate::dict::ValuePredicate,
        snapshot: Option<SeqNo>,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        self.check_open()?;
        let sv = ks.sv.load_full();
        if !sv.plan.single_lineage() {
            return Err(Error::InvalidArgument(
                "filter reads keyspaces whose values are whole; this one's layout splits them \
                 (use the table's scan with a predicate)"
                    .into(),
            ));
        }
        let snap = snapshot.unwrap_or_else(|| self.last_seqno());
        super::filter::FilterRun::new(&sv, snap, lo, hi, pred, &self.stats).run(self, ks)
    }

    pub(super) fn iter(&self, ks: &Arc<KeyspaceShared>, opts: ReadOptions) -> Result<DbIter> {
        self.check_open()?;
        let sv = ks.sv.load_full();
        let snap = opts.snapshot.unwrap_or_else(|| self.last_seqno());
        if !sv.plan.single_lineage() {
            Statistics::add(&self.stats.iterators_created, 1);
            return Ok(stitched_iter(&sv, snap, opts));
        }
        let lo = opts.lower_bound.as_deref();
        let hi = opts.upper_bound.as_deref();
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        let mut levels: Vec<Option<Level>> = Vec::new();
        children.push(sv.mem.iter());
        for m in &sv.imms {
            children.push(m.iter());
        }
        let in_range = |f: &Arc<FileMeta>| {
            !(hi.is_some_and(|h| f.smallest_user_key() >= h)
                || lo.is_some_and(|l| f.largest_user_key() < l))
        };
        for f in sv.version.levels[0].iter().filter(|f| in_range(f)) {
            match f.retained() {
                Some(t) => children.push(Box::new(RetainedIter {
                    inner: t.iter(),
                    table: f.table.clone(),
                })),
                None => children.push(Box::new(f.table.iter())),
            }
        }
        levels.resize(children.len(), None);
        for level in (1..sv.version.num_levels()).map(Level::from_index) {
            let run = sv.version.run(level, sv.plan.lineage_group(0, level));
            let files: Vec<_> = run.iter().filter(|f| in_range(f)).cloned().collect();
            if !files.is_empty() {
                // Part of iterator reduction: a seek into the gap before a
                // file is answered from the file's smallest key, and a scan
                // that ends before it never reads the file.
                children.push(Box::new(if sv.opts.iterator_reduction {
                    LevelIter::new_lazy(files)
                } else {
                    LevelIter::new(files)
                }));
                levels.push(Some(level));
            }
        }
        Statistics::add(&self.stats.iterators_created, 1);
        Statistics::add(&self.stats.iterator_children, children.len() as u64);
        // The levels (>= 1) this scan could leave out; with none, reduction
        // has nothing to do.
        let level_mask: LevelMask = levels.iter().flatten().fold(0, |m, l| m | level_bit(*l));
        let mut merging = MergingIterator::with_levels(children, levels);
        // Each part of iterator reduction is used while it pays, and by one
        // scan in IDLE_SAMPLE_EVERY otherwise (so it notices when it would).
        let sampled = sv.opts.iterator_reduction && gate::idle_sample();
        let gated = sv.opts.reduction_gates;
        let point_first =
            sv.opts.iterator_reduction && (!gated || ks.point_first_gate.admits(sampled));
        if point_first {
            merging.set_point_first(snap);
        }
        let reduction = sv.opts.iterator_reduction
            && level_mask != 0
            && (!gated || ks.filter_gate.admits(sampled));
        let version_no = sv.version_no;
        if reduction {
            let shared = Arc::clone(ks);
            // The filter is a cache: when another scan holds it, this one
            // reads every level (always correct) rather than waiting; on two
            // cores a parked thread costs more than the seeks it would save.
            merging.set_reducer(Box::new(move |start| {
                shared.filter.try_lock()?.lookup(start, version_no)
            }));
        }
        let shared = Arc::clone(ks);
        let stats = Arc::clone(&self.stats);
        let on_drop = Box::new(
            move |merged: &MergingIterator, upper: Option<&[u8]>, healthy: bool| {
                Statistics::add(&stats.iterator_child_seeks, merged.child_seeks());
                if let Some(saved) = merged.point_first_saved() {
                    shared.point_first_gate.record(saved);
                }
                let levels = healthy.then(|| merged.observed_levels(upper)).flatten();
                if let Some(levels) = levels {
                    let unused = level_mask & !levels;
                    Statistics::add(&stats.scan_levels_unused, u64::from(unused.count_ones()));
                }
                if !reduction {
                    return;
                }
                let skipped = merged.filter_skips() > 0;
                // The gate counts a scan as saved only when a level it
                // skipped would have been read: skipping a lazy level whose
                // seek lands before a file spares nothing.
                shared.filter_gate.record(merged.filter_saved_reads() > 0);
                // A scan a record answered leaves that record in place; storing
                // its observation again would cost two key copies and a map
                // insert per repeated scan for no new claim.
                if skipped {
                    return;
                }
                // A record claiming every level this scan had saves no
                // later seek: not stored (nor built).
                if levels.is_none_or(|l| l & level_mask == level_mask) {
                    return;
                }
                let Some(o) = merged.observation(upper) else {
                    return;
                };
                // Dropping an observation loses a hint, never a result.
                if let Some(mut f) = shared.filter.try_lock() {
                    f.insert(o.lo, o.hi, o.levels, version_no);
                }
            },
        );
        Ok(DbIter::new(
            merging,
            snap,
            sv.opts.merge_operator.clone(),
            opts.lower_bound,
            opts.upper_bound,
            Box::new(sv),
            Some(on_drop),
        ))
    }

    // ----- background work ----------------------------------------------
}

/// Resolves `key` at `snap` in lineage `lineage` of the keyspace's layout
/// (the only one of a plain key-value keyspace): memtables, level 0, then
/// on each deeper level the lineage's group, newest first, until a value
/// or tombstone ends the search.
fn get_in_lineage(
    sv: &SuperVersion,
    key: &[u8],
    snap: SeqNo,
    lineage: usize,
    out: &mut Vec<u8>,
) -> Result<bool> {
    let seek = SeekKey::new(key, snap);
    let seek = seek.as_slice();
    let mut lookup = Lookup::new(key, snap, out);
    let mut visit = |k: &[u8], v: &[u8]| lookup.visit(k, v);
    sv.mem.get(seek, &mut visit);
    for imm in &sv.imms {
        if lookup.is_done() {
            break;
        }
        let mut visit = |k: &[u8], v: &[u8]| lookup.visit(k, v);
        imm.get(seek, &mut visit);
    }
    let merge = sv.opts.merge_operator.as_deref();
    if lookup.is_done() {
        return lookup.finish(merge, "memtable");
    }
    let v = &sv.version;
    for f in &v.levels[0] {
        if lookup.is_done() {
            break;
        }
        if key < f.smallest_user_key() || key > f.largest_user_key() {
            continue;
        }
        let mut visit = |k: &[u8], val: &[u8]| lookup.visit(k, val);
        match f.retained() {
            // The file's filter answers for its retained entries (the
            // same user keys): a probe is cheaper than a search.
            Some(t) => {
                if f.table.may_contain(key) {
                    t.get(seek, &mut visit);
                }
            }
            None => {
                f.table.get(key, seek, &mut visit)?;
            }
        }
    }
    for level in (1..v.num_levels()).map(Level::from_index) {
        if lookup.is_done() {
            break;
        }
        let group = sv.plan.lineage_group(lineage, level);
        if let Some(f) = v.find_file(level, group, key) {
            let mut visit = |k: &[u8], val: &[u8]| lookup.visit(k, val);
            f.table.get(key, seek, &mut visit)?;
        }
    }
    lookup.finish(merge, "table")
}

/// A scan of a keyspace whose layout has several lineages: one resolving
/// iterator per lineage, joined key by key by the layout. Iterator
/// reduction is not used on such keyspaces (its level filter records
/// levels, not groups).
fn stitched_iter(sv: &Arc<SuperVersion>, snap: SeqNo, opts: ReadOptions) -> DbIter {
    let lo = opts.lower_bound.as_deref();
    let hi = opts.upper_bound.as_deref();
    let in_range = |f: &&Arc<FileMeta>| {
        !(hi.is_some_and(|h| f.smallest_user_key() >= h)
            || lo.is_some_and(|l| f.largest_user_key() < l))
    };
    let parts = (0..sv.plan.lineages().len())
        .map(|lineage| {
            let mut children: Vec<Box<dyn InternalIterator>> = vec![sv.mem.iter()];
            children.extend(sv.imms.iter().map(|m| m.iter()));
            for f in sv.version.levels[0].iter().filter(in_range) {
                children.push(Box::new(f.table.iter()));
            }
            for level in (1..sv.version.num_levels()).map(Level::from_index) {
                let run = sv.version.run(level, sv.plan.lineage_group(lineage, level));
                let files: Vec<_> = run.iter().filter(in_range).cloned().collect();
                if !files.is_empty() {
                    children.push(Box::new(LevelIter::new(files)));
                }
            }
            DbIter::new(
                MergingIterator::new(children),
                snap,
                sv.opts.merge_operator.clone(),
                opts.lower_bound.clone(),
                opts.upper_bound.clone(),
                Box::new(Arc::clone(sv)),
                None,
            )
        })
        .collect();
    DbIter::stitched(parts, Arc::clone(&sv.opts.layout))
}
