//! The write path: validation, group commit, the write-ahead log,
//! memtable switches and the stalls that make room for writes.

use super::*;

/// How long a writer waiting for its group spins before it sleeps.
pub(super) const WRITER_SPIN: Duration = Duration::from_micros(20);

pub(super) fn check_key_value(key: &[u8], value: Option<&[u8]>) -> Result<()> {
    if key.len() > MAX_KEY_BYTES {
        return Err(Error::InvalidArgument(format!(
            "key of {} bytes exceeds the limit of {MAX_KEY_BYTES}",
            key.len()
        )));
    }
    if let Some(v) = value
        && v.len() > MAX_VALUE_BYTES
    {
        return Err(Error::InvalidArgument(format!(
            "value of {} bytes exceeds the limit of {MAX_VALUE_BYTES}",
            v.len()
        )));
    }
    Ok(())
}

impl DbInner {
    pub(super) fn write(&self, opts: WriteOptions, batch: WriteBatch) -> Result<()> {
        self.write_as(opts, batch, false)
    }

    /// Writes `batch`; `application`: it comes from the application,
    /// which may not write to the engine's own keyspaces.
    pub(super) fn write_as(
        &self,
        opts: WriteOptions,
        batch: WriteBatch,
        application: bool,
    ) -> Result<()> {
        self.check_open()?;
        self.check_writable("write")?;
        if batch.is_empty() {
            return Ok(());
        }
        // The log takes a batch as one record: one too large for it is
        // refused here, where refusing it changes nothing (in the write
        // group the log's refusal would end writing until a reopen).
        if batch.encoded_len() > crate::log::MAX_RECORD_LEN {
            return Err(Error::InvalidArgument(format!(
                "a write batch of {} bytes is larger than the log's largest record, {} bytes: \
                 split it",
                batch.encoded_len(),
                crate::log::MAX_RECORD_LEN
            )));
        }
        {
            let st = self.state.lock();
            Self::bg_error(&st)?;
            for e in batch.iter() {
                let e = e.map_err(Error::InvalidArgument)?;
                check_key_value(e.key, (e.kind != ValueKind::Delete).then_some(e.value))?;
                let Some(ks) = st.keyspaces.get(&e.keyspace) else {
                    return Err(Error::InvalidArgument(format!(
                        "no keyspace with id {}",
                        e.keyspace
                    )));
                };
                if application && ks.name.starts_with("__") {
                    return Err(Error::InvalidArgument(format!(
                        "keyspace {:?} (id {}) belongs to the engine: write to a table \
                         through its Table handle",
                        ks.name, e.keyspace
                    )));
                }
                if !ks.registered {
                    return Err(Error::InvalidArgument(format!(
                        "keyspace {:?} needs options only the application can give (its merge \
                         operator or layout): open it with Db::keyspace before writing to it",
                        ks.name
                    )));
                }
                ks.opts
                    .memtable_options
                    .check_key(ks.opts.memtable, e.key)?;
                if e.kind == ValueKind::Merge
                    && ks.opts.merge_operator.is_none()
                    && ks.plan.reducer().is_none()
                {
                    return Err(Error::InvalidArgument(format!(
                        "keyspace {} has no merge operator",
                        ks.name
                    )));
                }
            }
        }
        Statistics::add(&self.stats.writes, 1);
        self.submit(Request::Batch {
            batch,
            sync: opts.sync,
            no_wal: opts.disable_wal,
        })
    }

    /// Queues a request and waits until a leader (possibly this thread) has
    /// carried it out.
    pub(super) fn submit(&self, req: Request) -> Result<()> {
        // A waiting writer first spins for `WRITER_SPIN`, re-checking under
        // the lock between short pauses, and only then sleeps: the leader
        // usually finishes a group within a few microseconds, and a futex
        // sleep and wake-up costs more than that (perf of a two-thread
        // fillrandom: a third of the CPU in the kernel's wait and wake-up
        // paths). RocksDB's writers spin and yield the same way. While the
        // leader is in an fsync, which takes about `SyncPace::sync`, they
        // keep yielding for up to a few of those instead: on this
        // two-vCPU machine waking a sleeping writer took tens of
        // microseconds, dead time between one fsync and the next.
        let mut q = self.writers.lock();
        let ticket = q.next_ticket;
        q.next_ticket += 1;
        if let Request::Batch {
            sync: true,
            no_wal: false,
            ..
        } = req
        {
            q.pace.arrived(Instant::now());
        }
        q.pending.push_back((ticket, req));
        let mut waiting_since: Option<Instant> = None;
        loop {
            if let Some(r) = q.finished.remove(&ticket) {
                return r;
            }
            if !q.leader_active && q.pending.front().is_some_and(|(t, _)| *t == ticket) {
                break;
            }
            let since = *waiting_since.get_or_insert_with(Instant::now);
            let syncing = q.syncing;
            let patience = if syncing {
                q.pace.waiter_patience().max(WRITER_SPIN)
            } else {
                WRITER_SPIN
            };
            if since.elapsed() < patience {
                MutexGuard::unlocked(&mut q, || {
                    if syncing {
                        std::thread::yield_now();
                    } else {
                        for _ in 0..64 {
                            std::hint::spin_loop();
                        }
                    }
                });
                continue;
            }
            self.writers_cv.wait(&mut q);
        }
        // This thread leads: take its request and, for batches, the batches
        // queued behind it, up to the group byte limit.
        q.leader_active = true;
        let Some((_, first)) = q.pending.pop_front() else {
            q.leader_active = false;
            return Err(Error::Closed);
        };
        let mut group: Vec<u64> = Vec::new();
        let result = match first {
            Request::Switch(ids) => {
                drop(q);
                self.switch_memtables(&ids)
            }
            Request::Batch {
                mut batch,
                mut sync,
                no_wal,
            } => {
                if sync && !no_wal && q.pending.is_empty() {
                    Self::gather_companion(&mut q, self.opts.max_sync_gather_wait, &self.stats);
                }
                let limit = self.opts.max_write_group_bytes;
                while batch.encoded_len() < limit {
                    match q.pending.front() {
                        Some((
                            _,
                            Request::Batch {
                                batch: b,
                                no_wal: nw,
                                ..
                            },
                        )) if *nw == no_wal && batch.encoded_len() + b.encoded_len() <= limit => {}
                        _ => break,
                    }
                    if let Some((
                        t,
                        Request::Batch {
                            batch: b, sync: s, ..
                        },
                    )) = q.pending.pop_front()
                    {
                        batch.append(&b);
                        sync |= s;
                        group.push(t);
                    }
                }
                q.syncing = sync && !no_wal;
                drop(q);
                let started = Instant::now();
                let r = self.write_group(batch, sync, no_wal);
                if sync && !no_wal {
                    // Unsynced groups take the queue's lock once, below.
                    let mut q = self.writers.lock();
                    if r.is_ok() {
                        q.pace.synced(started.elapsed());
                    }
                    q.syncing = false;
                }
                r
            }
        };
        let mut q = self.writers.lock();
        for t in group {
            q.finished
                .insert(t, result.as_ref().map(|_| ()).map_err(Error::duplicate));
        }
        q.leader_active = false;
        self.writers_cv.notify_all();
        result
    }

    /// As the leader of a synced group that holds only its own write: when
    /// the pace says other synced writers are active, yields (releasing the
    /// queue) until one more request is queued or [`SyncPace::gather_wait`]
    /// has passed, so that one fsync carries both. It yields rather than
    /// sleeps: the wait is a fraction of an fsync, shorter than a wake-up.
    fn gather_companion(q: &mut MutexGuard<'_, WriteQueue>, max: Duration, stats: &Statistics) {
        let Some(wait) = q.pace.gather_wait(max) else {
            return;
        };
        let deadline = Instant::now() + wait;
        while q.pending.is_empty() && Instant::now() < deadline {
            MutexGuard::unlocked(q, std::thread::yield_now);
        }
        if !q.pending.is_empty() {
            Statistics::add(&stats.sync_gathers, 1);
        }
    }

    /// Fsyncs the logs closed since the last synced write (see
    /// [`WalState::closed_unsynced`]), oldest first.
    pub(super) fn sync_closed_logs(closed: &mut Vec<(FileNumber, LogWriter)>) -> Result<()> {
        for (_, log) in closed.iter_mut() {
            log.sync()?;
        }
        closed.clear();
        Ok(())
    }

    /// Writes one group: makes room, logs, inserts, publishes.
    /// REQUIRES: this thread is the write leader.
    pub(super) fn write_group(
        &self,
        mut batch: WriteBatch,
        sync: bool,
        no_wal: bool,
    ) -> Result<()> {
        Statistics::add(&self.stats.write_groups, 1);
        let mut touched: Vec<KeyspaceId> = batch
            .iter()
            .filter_map(|e| e.ok().map(|e| e.keyspace))
            .collect();
        touched.sort_unstable();
        touched.dedup();
        let (mems, skip_wal) = self.make_room_for_write(&touched)?;
        let base = self.last_seqno() + 1;
        batch.set_seqno(base);
        if !(no_wal || skip_wal) {
            let mut wal = self.wal.lock();
            let WalState { writer, .. } = &mut *wal;
            let Some(w) = writer.as_mut() else {
                return Err(Error::Closed);
            };
            let r = w.add_record(batch.encoded()).and_then(|()| {
                if sync {
                    Statistics::add(&self.stats.wal_syncs, 1);
                    Self::sync_closed_logs(&mut self.closed_unsynced.lock())?;
                    w.sync()
                } else {
                    w.flush()
                }
            });
            if let Err(e) = r {
                // The log may now hold a partial record; nothing after it can
                // be trusted to recover, so refuse writes until reopen.
                wal.writer = None;
                drop(wal);
                self.set_bg_error(e.duplicate());
                return Err(e);
            }
            Statistics::add(&self.stats.bytes_written_wal, batch.encoded_len() as u64);
            self.current_wal_bytes
                .fetch_add(batch.encoded_len() as u64, Ordering::AcqRel);
        }
        let mut key_buf = Vec::with_capacity(64);
        let mut user_bytes = 0u64;
        let mut n = 0u64;
        for e in batch.iter() {
            let e = e.map_err(Error::InvalidArgument)?;
            let seq = base + n;
            n += 1;
            key_buf.clear();
            append_internal_key(&mut key_buf, e.key, seq, e.kind as u8);
            if let Some((_, m)) = mems.iter().find(|(id, _)| *id == e.keyspace) {
                m.add(&key_buf, e.value, seq, e.kind == ValueKind::Delete);
            }
            user_bytes += (e.key.len() + e.value.len()) as u64;
        }
        Statistics::add(&self.stats.user_bytes_written, user_bytes);
        self.last_seqno
            .store((base + n - 1).get(), Ordering::Release);
        Ok(())
    }

    /// Waits while the tree is too far behind, switches full memtables, and
    /// returns the memtables to insert into. Also reports whether every
    /// touched keyspace skips the log.
    /// REQUIRES: this thread is the write leader.
    #[allow(clippy::type_complexity)]
    pub(super) fn make_room_for_write(
        &self,
        touched: &[KeyspaceId],
    ) -> Result<(Vec<(KeyspaceId, Arc<MemTable>)>, bool)> {
        let mut slowed = false;
        let mut st = self.state.lock();
        loop {
            Self::bg_error(&st)?;
            if st.closed {
                return Err(Error::Closed);
            }
            let mut wait = false;
            let mut behind_compaction = false;
            let mut switch = Vec::new();
            let mut rehome = Vec::new();
            let mut slow = false;
            for id in touched {
                let Some(ks) = st.keyspaces.get(id) else {
                    continue;
                };
                let l0 = ks.version.levels[0].len();
                let due = ks.mem.switch_due(ks.opts.write_buffer_size);
                if due == Some(SwitchDue::Representation) {
                    rehome.push(*id);
                }
                let full = due == Some(SwitchDue::Full);
                let too_many_memtables = full && ks.imms.len() + 1 >= ks.opts.max_write_buffers;
                if l0 >= ks.opts.level0_stop_trigger || too_many_memtables {
                    wait = true;
                    behind_compaction |= l0 >= ks.opts.level0_stop_trigger;
                } else if full {
                    switch.push(*id);
                } else if l0 >= ks.opts.level0_slowdown_trigger {
                    slow = true;
                }
            }
            if !rehome.is_empty() {
                // Needs no room in the tree: the entries stay in memory.
                drop(st);
                self.rehome_memtables(&rehome);
                st = self.state.lock();
                continue;
            }
            if slow && !slowed && !wait && switch.is_empty() {
                // Delay this group a little so compaction keeps up, once.
                slowed = true;
                drop(st);
                let t = Instant::now();
                std::thread::sleep(Duration::from_millis(1));
                Statistics::add(&self.stats.slowdown_micros, t.elapsed().as_micros() as u64);
                st = self.state.lock();
                continue;
            }
            if wait {
                // Room on level 0 comes only from compaction. When the last
                // compactions failed and none is running (each is retried
                // after a pause; a full disk, a failing device), the write
                // fails with their error instead of waiting for room that
                // may never come; the database stays writable, and writes
                // go through again once a compaction succeeds. (A stall for
                // want of memtables ends with a flush, whose failure is
                // sticky and already returned above.)
                if behind_compaction
                    && st.running_compactions == 0
                    && let Some(e) = &st.compaction_error
                {
                    return Err(e.duplicate());
                }
                let t = Instant::now();
                self.bg_cv.notify_all();
                self.bg_cv.wait_for(&mut st, Duration::from_millis(100));
                Statistics::add(&self.stats.stall_micros, t.elapsed().as_micros() as u64);
                continue;
            }
            if switch.is_empty() {
                switch = self.keyspaces_pinning_old_logs(&st);
            }
            if !switch.is_empty() {
                drop(st);
                self.switch_memtables(&switch)?;
                st = self.state.lock();
                continue;
            }
            let mut mems = Vec::with_capacity(touched.len());
            let mut all_skip = true;
            for id in touched {
                if let Some(ks) = st.keyspaces.get(id) {
                    mems.push((*id, Arc::clone(&ks.mem)));
                    all_skip &= ks.opts.disable_wal;
                }
            }
            return Ok((mems, all_skip));
        }
    }

    /// When the logs on disk exceed their budget, the keyspaces whose
    /// unflushed entries hold the oldest log (and have a non-empty memtable)
    /// are due for a flush, so that the log can go.
    /// REQUIRES: the state lock is held.
    pub(super) fn keyspaces_pinning_old_logs(&self, st: &State) -> Vec<KeyspaceId> {
        let limit = match self.opts.max_total_wal_bytes {
            0 => st
                .keyspaces
                .values()
                .map(|k| k.opts.write_buffer_size as u64)
                .sum::<u64>()
                .saturating_mul(4),
            n => n,
        };
        let total: u64 = st.closed_logs.iter().map(|(_, b)| b).sum::<u64>()
            + self.current_wal_bytes.load(Ordering::Acquire);
        if total <= limit || st.closed_logs.is_empty() {
            return Vec::new();
        }
        let Some(oldest) = st.keyspaces.values().map(|k| k.log_number).min() else {
            return Vec::new();
        };
        st.keyspaces
            .iter()
            .filter(|(_, k)| {
                k.registered && k.log_number == oldest && !k.mem.is_empty() && k.imms.is_empty()
            })
            .map(|(id, _)| *id)
            .collect()
    }

    /// Moves the entries of each memtable of `ids` into the representation
    /// its adaptive policy picked ([`MemTable::rehomed`]) and installs the
    /// copy in its place. The copy is made without the state lock: only the
    /// write leader changes a keyspace's mutable memtable.
    /// REQUIRES: this thread is the write leader.
    pub(super) fn rehome_memtables(&self, ids: &[KeyspaceId]) {
        let current: Vec<(KeyspaceId, Arc<MemTable>, Arc<KeyspaceOptions>)> = {
            let st = self.state.lock();
            ids.iter()
                .filter_map(|id| {
                    let ks = st.keyspaces.get(id)?;
                    Some((*id, Arc::clone(&ks.mem), Arc::clone(&ks.opts)))
                })
                .collect()
        };
        let copies: Vec<_> = current
            .into_iter()
            .map(|(id, old, opts)| {
                let mem_id = self.next_memtable_id.fetch_add(1, Ordering::Relaxed);
                let copy = Arc::new(old.rehomed(&opts, mem_id));
                (id, old, copy)
            })
            .collect();
        let mut st = self.state.lock();
        for (id, old, copy) in copies {
            if let Some(ks) = st.keyspaces.get_mut(&id)
                && Arc::ptr_eq(&ks.mem, &old)
            {
                ks.mem = copy;
                publish(ks);
            }
        }
    }

    /// Starts a new log and moves the memtables of `ids` (those not empty)
    /// to the immutable queue.
    /// REQUIRES: this thread is the write leader.
    pub(super) fn switch_memtables(&self, ids: &[KeyspaceId]) -> Result<()> {
        {
            let st = self.state.lock();
            if st.closed {
                return Err(Error::Closed);
            }
            Self::bg_error(&st)?;
            if !ids
                .iter()
                .any(|id| st.keyspaces.get(id).is_some_and(|k| !k.mem.is_empty()))
            {
                return Ok(());
            }
        }
        let new_log = self.allocate_file_number()?;
        let writer = match create_wal(&*self.vfs, &self.path, new_log, &self.db_id) {
            Ok(w) => w,
            Err(e) => {
                self.set_bg_error(e.duplicate());
                return Err(e);
            }
        };
        if let Err(e) = self.vfs.sync_dir(&self.path) {
            self.set_bg_error(e.duplicate());
            return Err(e);
        }
        let old_log = {
            let mut wal = self.wal.lock();
            // No log writer: a close took it since the check above (it
            // owns the directory's last word, so no new writer goes in
            // after it; the empty log just made is replayed as empty by
            // the next open), or a failed append dropped it and set the
            // background error.
            if wal.writer.is_none() {
                drop(wal);
                Self::bg_error(&self.state.lock())?;
                return Err(Error::Closed);
            }
            // The old log's bytes go to the OS now; the next synced write
            // fsyncs it before its own (found by strata-stress; test
            // engine_regressions::synced_write_after_a_log_switch_keeps_earlier_acknowledged_writes).
            let old_number = std::mem::replace(&mut wal.number, new_log);
            if let Some(mut old) = wal.writer.replace(writer) {
                if let Err(e) = old.flush() {
                    wal.writer = None;
                    drop(wal);
                    self.set_bg_error(e.duplicate());
                    return Err(e);
                }
                self.closed_unsynced.lock().push((old_number, old));
            }
            old_number
        };
        let mut st = self.state.lock();
        let old_log_bytes = self.current_wal_bytes.swap(0, Ordering::AcqRel);
        st.closed_logs.push((old_log, old_log_bytes));
        for ks in st.keyspaces.values_mut() {
            let id = ks.shared.id;
            let mem_id = self.next_memtable_id.fetch_add(1, Ordering::Relaxed);
            let fresh = Arc::new(ks.mem.successor(&ks.opts, mem_id, new_log));
            if ids.contains(&id) && !ks.mem.is_empty() {
                let old = std::mem::replace(&mut ks.mem, fresh);
                old.freeze();
                ks.imms.push(old);
                publish(ks);
            } else if ks.mem.is_empty() {
                // An empty memtable holds nothing of the old logs; let it
                // stop pinning them.
                ks.mem = fresh;
                if ks.imms.is_empty() {
                    ks.log_number = new_log;
                }
                publish(ks);
            }
        }
        self.bg_cv.notify_all();
        Ok(())
    }

    pub(super) fn flush_keyspaces(&self, ids: Vec<KeyspaceId>) -> Result<()> {
        self.check_open()?;
        self.check_writable("flush")?;
        self.submit(Request::Switch(ids.clone()))?;
        let mut st = self.state.lock();
        loop {
            Self::bg_error(&st)?;
            if st.closed {
                return Err(Error::Closed);
            }
            // A flush still running may be attaching its retained copy
            // (`retain_flushed`); waiting for it makes a retained table
            // visible once `flush` returns.
            let pending = ids.iter().any(|id| {
                st.keyspaces
                    .get(id)
                    .is_some_and(|k| !k.imms.is_empty() || k.flushing)
            });
            if !pending {
                return Ok(());
            }
            self.bg_cv.notify_all();
            self.bg_cv.wait_for(&mut st, Duration::from_millis(100));
        }
    }

    // ----- reads --------------------------------------------------------
}

/// How fast synced writes arrive and how long their fsyncs take, as
/// moving averages: what a synced group's leader decides from whether to
/// wait for a companion (PostgreSQL's `commit_delay` and MySQL's
/// `binlog_group_commit_sync_delay` wait unconditionally when set; this
/// waits only when the arrivals show that several writers are active).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct SyncPace {
    /// Moving average of the time between synced requests' arrivals.
    gap: Option<Duration>,
    /// Moving average of a synced group's write (log append, fsync,
    /// memtable insert).
    sync: Option<Duration>,
    last_arrival: Option<Instant>,
}

impl SyncPace {
    /// Weight of a new sample: 1/8.
    const SHIFT: u32 = 3;

    fn average(old: Option<Duration>, sample: Duration) -> Duration {
        match old {
            None => sample,
            Some(old) => {
                let (o, s) = (old.as_nanos() as i128, sample.as_nanos() as i128);
                let n = o + ((s - o) >> Self::SHIFT);
                Duration::from_nanos(n.clamp(0, u64::MAX as i128) as u64)
            }
        }
    }

    /// Records a synced request arriving at `now`. A gap longer than two
    /// fsyncs counts as two fsyncs: after an idle spell the average
    /// should say "one writer" at once, not stay high for many writes.
    pub(super) fn arrived(&mut self, now: Instant) {
        if let Some(last) = self.last_arrival {
            let mut gap = now.saturating_duration_since(last);
            if let Some(sync) = self.sync {
                gap = gap.min(sync * 2);
            }
            self.gap = Some(Self::average(self.gap, gap));
        }
        self.last_arrival = Some(now);
    }

    /// Records a synced group's write time.
    pub(super) fn synced(&mut self, took: Duration) {
        self.sync = Some(Self::average(self.sync, took));
    }

    /// How long a synced group with no companion should wait for one:
    /// only when requests arrive more often than one per three quarters of
    /// a group's write (one writer alone arrives about once per write), and
    /// then at most half a write's time, capped at `max`.
    pub(super) fn gather_wait(&self, max: Duration) -> Option<Duration> {
        let (gap, sync) = (self.gap?, self.sync?);
        if max.is_zero() || sync.is_zero() || gap * 4 >= sync * 3 {
            return None;
        }
        Some((sync / 2).min(max))
    }

    /// How long a writer waiting while the leader syncs keeps yielding
    /// before it sleeps: two and a half group writes (the rest of the
    /// leader's and, when it does not lead the next group, that one's),
    /// at most 2 ms; nothing until a synced group has been timed.
    pub(super) fn waiter_patience(&self) -> Duration {
        self.sync.map_or(Duration::ZERO, |s| {
            (s * 5 / 2).min(Duration::from_millis(2))
        })
    }
}

#[cfg(test)]
mod sync_pace_tests {
    use super::*;

    fn paced(arrival_gap_us: u64, sync_us: u64, writes: u32) -> SyncPace {
        let mut p = SyncPace::default();
        let mut t = Instant::now();
        for _ in 0..writes {
            p.arrived(t);
            p.synced(Duration::from_micros(sync_us));
            t += Duration::from_micros(arrival_gap_us);
        }
        p
    }

    #[test]
    fn one_writer_never_waits() {
        // One writer arrives once per fsync (plus its own work).
        let p = paced(110, 100, 100);
        assert_eq!(p.gather_wait(Duration::from_millis(1)), None);
        assert_eq!(
            SyncPace::default().gather_wait(Duration::from_millis(1)),
            None
        );
    }

    #[test]
    fn several_writers_wait_at_most_half_an_fsync_and_the_cap() {
        let p = paced(50, 100, 100);
        assert_eq!(
            p.gather_wait(Duration::from_millis(1)),
            Some(Duration::from_micros(50))
        );
        assert_eq!(
            p.gather_wait(Duration::from_micros(20)),
            Some(Duration::from_micros(20))
        );
        assert_eq!(p.gather_wait(Duration::ZERO), None, "zero turns it off");
    }

    #[test]
    fn waiters_yield_for_a_few_group_writes_at_most_two_milliseconds() {
        assert_eq!(SyncPace::default().waiter_patience(), Duration::ZERO);
        assert_eq!(
            paced(50, 100, 10).waiter_patience(),
            Duration::from_micros(250)
        );
        assert_eq!(
            paced(50, 5_000, 10).waiter_patience(),
            Duration::from_millis(2)
        );
    }

    #[test]
    fn an_idle_spell_ends_the_waiting_quickly() {
        let mut p = paced(40, 100, 100);
        assert!(p.gather_wait(Duration::from_millis(1)).is_some());
        // Then one writer, after a pause of a second.
        let mut t = Instant::now() + Duration::from_secs(1);
        let mut waited = 0;
        for _ in 0..20 {
            p.arrived(t);
            p.synced(Duration::from_micros(100));
            if p.gather_wait(Duration::from_millis(1)).is_some() {
                waited += 1;
            }
            t += Duration::from_micros(110);
        }
        assert!(waited <= 8, "waited on {waited} of 20 lone writes");
    }
}
