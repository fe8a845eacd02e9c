//! Running the suite: the data, the phases and their timing, each order
//! (sequential, interleaved) and the adaptive mixes.

use super::render::truncated;
use super::*;

/// The keys and the order shared by every kind and engine.
pub(super) struct Data {
    /// Distinct uniformly random keys, in insert order.
    pub(super) keys: Vec<u64>,
    /// Keys never inserted.
    pub(super) misses: Vec<u64>,
    /// The interleaved stream after the warm-up: one tag per operation.
    pub(super) stream: Vec<OpTag>,
    pub(super) warmup: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OpTag {
    Insert = 0,
    Miss = 1,
    Hit = 2,
    Range = 3,
}

impl Data {
    pub(super) fn new(s: &MemSuite) -> Data {
        let mut rng = StdRng::seed_from_u64(s.settings.seed ^ 0x03e3_7ab1);
        let n = s.inserts as usize;
        let mut set: HashSet<u64> = HashSet::with_capacity(n);
        let mut keys = Vec::with_capacity(n);
        while keys.len() < n {
            let k: u64 = rng.random();
            if set.insert(k) {
                keys.push(k);
            }
        }
        let mut misses = Vec::with_capacity(s.point_queries as usize);
        while misses.len() < s.point_queries as usize {
            let k: u64 = rng.random();
            if !set.contains(&k) {
                misses.push(k);
            }
        }
        let warmup = ((n as f64 * STUDY_WARMUP).round() as usize).min(n);
        let mut stream: Vec<OpTag> = Vec::new();
        stream.extend(std::iter::repeat_n(OpTag::Insert, n - warmup));
        stream.extend(std::iter::repeat_n(OpTag::Miss, s.point_queries as usize));
        stream.extend(std::iter::repeat_n(OpTag::Hit, s.point_queries as usize));
        stream.extend(std::iter::repeat_n(OpTag::Range, s.range_queries as usize));
        stream.shuffle(&mut rng);
        Data {
            keys,
            misses,
            stream,
            warmup,
        }
    }
}

/// What one phase (or one operation type of a stream) measured.
struct Phase {
    hist: Histogram<u64>,
    ops: u64,
    bytes: u64,
    /// Sum of the operations' latencies.
    busy: Duration,
    /// Wall time of the phase, less memtable probes.
    wall: Duration,
    planned: u64,
    truncated: bool,
    found: u64,
    entries: u64,
}

impl Phase {
    fn new(planned: u64) -> Phase {
        Phase {
            hist: new_hist(),
            ops: 0,
            bytes: 0,
            busy: Duration::ZERO,
            wall: Duration::ZERO,
            planned,
            truncated: false,
            found: 0,
            entries: 0,
        }
    }

    #[inline]
    fn record(&mut self, d: Duration, bytes: u64) {
        self.hist.saturating_record(d.as_nanos().max(1) as u64);
        self.ops += 1;
        self.bytes += bytes;
        self.busy += d;
    }

    /// Whether the phase has used up `budget` since `start` (marking it
    /// truncated if so), `last` being the operation just recorded. The clock
    /// is read only every 64 operations, or after a slow one: a clock read
    /// is a visible part of a sub-microsecond operation, and a phase may
    /// overrun by at most 63 fast ones.
    #[inline]
    fn out_of_time(&mut self, start: Instant, budget: Duration, last: Duration) -> bool {
        if !self.ops.is_multiple_of(64) && last < Duration::from_micros(20) {
            return false;
        }
        if start.elapsed() <= budget {
            return false;
        }
        self.truncated = self.ops < self.planned;
        true
    }
}

/// Follows the memtables through periodic probes.
struct Tracker {
    every: u64,
    since: u64,
    in_current: u64,
    last_bytes: u64,
    switches: u64,
    probe_time: Duration,
    last: Option<MemProbe>,
    /// Bytes per entry of the last memtable seen before a switch (at the
    /// probe before it).
    full: Option<f64>,
    /// The representation of each memtable seen, in order.
    reps: Vec<String>,
}

impl Tracker {
    fn new(engine: &dyn Engine, buffer: u64, entry_bytes: u64) -> Tracker {
        // At least 16 probes per memtable, so a switch shows as a drop.
        let per_buffer = buffer / (entry_bytes + 64).max(1);
        let mut t = Tracker {
            every: (per_buffer / 16).clamp(8, 1024),
            since: 0,
            in_current: 0,
            last_bytes: 0,
            switches: 0,
            probe_time: Duration::ZERO,
            last: None,
            full: None,
            reps: Vec::new(),
        };
        t.probe(engine);
        if let Some(r) = t.last.as_ref().and_then(|p| p.rep.clone()) {
            t.reps.push(r);
        }
        t
    }

    #[inline]
    fn inserted(&mut self, engine: &dyn Engine) {
        self.since += 1;
        if self.since >= self.every {
            self.probe(engine);
        }
    }

    fn probe(&mut self, engine: &dyn Engine) {
        let t0 = Instant::now();
        if let Some(p) = engine.memtable_probe() {
            if p.bytes < self.last_bytes {
                // A switch: the new memtable holds at most the inserts since
                // the last probe.
                self.switches += 1;
                if self.in_current > 0 {
                    self.full = Some(self.last_bytes as f64 / self.in_current as f64);
                }
                self.in_current = self.since;
                if let Some(r) = &p.rep {
                    self.reps.push(r.clone());
                }
            } else {
                self.in_current += self.since;
            }
            self.last_bytes = p.bytes;
            self.last = Some(p);
        } else {
            self.in_current += self.since;
        }
        self.since = 0;
        self.probe_time += t0.elapsed();
    }

    fn take_probe_time(&mut self) -> Duration {
        std::mem::take(&mut self.probe_time)
    }

    fn entries(&self) -> Option<u64> {
        match &self.last {
            Some(MemProbe {
                entries: Some(n), ..
            }) => Some(*n),
            _ => Some(self.in_current),
        }
    }

    /// Memtable bytes per entry: of the current memtable(s) when the
    /// engine counts entries or no switch happened; else of the last full
    /// memtable before a switch (the current one may be nearly empty, its
    /// fixed costs spread over few entries).
    fn bytes_per_entry(&self) -> Option<f64> {
        let p = self.last.as_ref()?;
        if p.entries.is_none()
            && let Some(f) = self.full
        {
            return Some(f);
        }
        let n = self.entries()?;
        (n > 0 && p.bytes > 0).then(|| p.bytes as f64 / n as f64)
    }

    fn exact(&self) -> bool {
        self.switches == 0 || self.last.as_ref().is_some_and(|p| p.entries.is_some())
    }

    fn extra(&self, extra: &mut serde_json::Map<String, serde_json::Value>) {
        if let Some(p) = &self.last {
            extra.insert("memtable_bytes".into(), json!(p.bytes));
            extra.insert("immutable_memtables".into(), json!(p.immutable));
            if let Some(r) = &p.rep {
                extra.insert("memtable_rep".into(), json!(r));
            }
            if let Some(d) = &p.decision {
                extra.insert("memtable_decision".into(), json!(d));
            }
        }
        extra.insert("memtable_entries".into(), json!(self.entries()));
        extra.insert("memtable_switches".into(), json!(self.switches));
        extra.insert("bytes_per_entry_exact".into(), json!(self.exact()));
        if !self.reps.is_empty() {
            extra.insert("memtable_reps".into(), json!(self.reps));
        }
    }
}

/// One run (engine, kind, order) in progress.
struct Run<'a> {
    suite: &'a MemSuite,
    target: Target,
    settings: BenchSettings,
    engine: Arc<dyn Engine>,
    dir: PathBuf,
    notes: Vec<String>,
    state: RunState,
    tracker: Tracker,
    values: ValueGen,
    key: Vec<u8>,
    run_id: &'a str,
}

impl<'a> Run<'a> {
    fn open(
        suite: &'a MemSuite,
        target: Target,
        settings: BenchSettings,
        label: &str,
        buffer: u64,
        run_id: &'a str,
    ) -> Result<Run<'a>> {
        let dir = suite
            .db_root
            .join(format!("memtable-{}-{label}", target.dir_name()));
        crate::runner::fresh_dir(&dir, false)?;
        sysinfo::reset_peak_rss();
        let engine = open_engine(target.engine, &settings, &dir)
            .map_err(|e| Error(format!("{}/{}: {e}", target.engine, target.variant())))?;
        let notes = engine.notes();
        let tracker = Tracker::new(engine.as_ref(), buffer, settings.entry_bytes());
        let values = ValueGen::new(
            settings.value_size,
            settings.value_random_fraction,
            settings.seed,
        );
        Ok(Run {
            suite,
            target,
            state: RunState::new(settings.num),
            key: Vec::with_capacity(settings.key_size),
            settings,
            engine,
            dir,
            notes,
            tracker,
            values,
            run_id,
        })
    }

    #[inline]
    fn put(&mut self, k: u64) -> Result<Duration> {
        encode_key(k, self.settings.key_size, &mut self.key);
        let v = self.values.next_value();
        let t0 = Instant::now();
        self.engine.put(&self.key, v)?;
        let d = t0.elapsed();
        self.state
            .user_bytes_written
            .fetch_add((self.key.len() + v.len()) as u64, Ordering::Relaxed);
        self.tracker.inserted(self.engine.as_ref());
        Ok(d)
    }

    #[inline]
    fn get(&mut self, k: u64) -> Result<(Duration, Option<usize>)> {
        encode_key(k, self.settings.key_size, &mut self.key);
        let t0 = Instant::now();
        let got = self.engine.get(&self.key)?;
        Ok((t0.elapsed(), got))
    }

    /// A range query over `[start, start + width)` of the key domain.
    #[inline]
    fn range(&mut self, start: u64, width: u64) -> Result<(Duration, u64, u64)> {
        let end = start.saturating_add(width);
        encode_key(start, self.settings.key_size, &mut self.key);
        let mut n = 0u64;
        let mut bytes = 0u64;
        let t0 = Instant::now();
        self.engine.iterate(&self.key, &mut |k, v| {
            if decode_key(k).is_none_or(|i| i >= end) {
                return false;
            }
            n += 1;
            bytes += (k.len() + v.len()) as u64;
            true
        })?;
        Ok((t0.elapsed(), n, bytes))
    }

    /// A scan of `n` entries from `start`.
    #[inline]
    fn scan(&mut self, start: u64, n: usize) -> Result<(Duration, u64)> {
        encode_key(start, self.settings.key_size, &mut self.key);
        let t0 = Instant::now();
        let (_, bytes) = self.engine.scan(&self.key, n)?;
        Ok((t0.elapsed(), bytes))
    }

    fn record(
        &mut self,
        workload: &str,
        description: &str,
        ph: &Phase,
        elapsed: Duration,
        mut extra: serde_json::Map<String, serde_json::Value>,
        by_kind: BTreeMap<&'static str, Histogram<u64>>,
    ) -> Record {
        self.tracker.probe(self.engine.as_ref());
        self.tracker.take_probe_time();
        extra.insert("planned_ops".into(), json!(ph.planned));
        extra.insert("truncated".into(), json!(ph.truncated));
        extra.insert("budget_secs".into(), json!(self.suite.budget.as_secs_f64()));
        extra.insert("busy_seconds".into(), json!(ph.busy.as_secs_f64()));
        if ph.found > 0 || workload.contains("get") {
            extra.insert("found".into(), json!(ph.found));
        }
        if ph.entries > 0 || workload.contains("range") {
            extra.insert("entries_scanned".into(), json!(ph.entries));
            extra.insert(
                "entries_per_range".into(),
                json!(ph.entries as f64 / ph.ops.max(1) as f64),
            );
        }
        self.tracker.extra(&mut extra);
        let o = Outcome {
            hist: ph.hist.clone(),
            ops: ph.ops,
            bytes: ph.bytes,
            elapsed,
            by_kind,
            extra,
        };
        let mut r = make_named_record(
            &self.target,
            workload,
            description,
            &o,
            self.engine.as_ref(),
            &self.settings,
            &self.state,
            None,
            &self.notes,
            1,
            1,
            Some("memtable"),
            self.run_id,
        );
        if ph.ops == 0 {
            r.ops_per_sec = 0.0;
        }
        r.bytes_per_entry = self.tracker.bytes_per_entry();
        r.flushes = self.tracker.last.as_ref().map(|p| p.flushes);
        r
    }

    fn close(self) -> Result<()> {
        self.engine.close()?;
        drop(self.engine);
        // Scratch databases: keep the disk free for the next run.
        let _ = std::fs::remove_dir_all(&self.dir);
        Ok(())
    }
}

/// The settings of one run.
fn run_settings(
    suite: &MemSuite,
    kind: &str,
    buffer: u64,
    buckets: Option<usize>,
) -> BenchSettings {
    BenchSettings {
        memtable: Some(kind.to_string()),
        write_buffer_size: buffer,
        hash_buckets: buckets,
        ..suite.settings.clone()
    }
}

fn range_width() -> u64 {
    (u64::MAX as f64 * STUDY_SELECTIVITY) as u64
}

fn sequential(suite: &MemSuite, data: &Data, target: &Target, run_id: &str) -> Result<Vec<Record>> {
    let kind = target.variant();
    let settings = run_settings(suite, &kind, suite.buffer, Some(suite.buckets));
    let mut run = Run::open(suite, target.clone(), settings, "seq", suite.buffer, run_id)?;
    let budget = suite.budget;
    let mut out = Vec::new();

    // Inserts.
    let mut ph = Phase::new(data.keys.len() as u64);
    let entry = run.settings.entry_bytes();
    let start = Instant::now();
    for &k in &data.keys {
        let d = run.put(k)?;
        ph.record(d, entry);
        if ph.out_of_time(start, budget, d) {
            break;
        }
    }
    ph.wall = start
        .elapsed()
        .saturating_sub(run.tracker.take_probe_time());
    let inserted = ph.ops as usize;
    out.push(sequential_record(&mut run, "mem-insert", &ph));

    // Empty point queries.
    let mut ph = Phase::new(data.misses.len() as u64);
    let start = Instant::now();
    for &k in &data.misses {
        let (d, got) = run.get(k)?;
        ph.record(d, 0);
        ph.found += u64::from(got.is_some());
        if ph.out_of_time(start, budget, d) {
            break;
        }
    }
    ph.wall = start.elapsed();
    out.push(sequential_record(&mut run, "mem-get-miss", &ph));

    // Non-empty point queries, uniform among the inserted keys.
    let mut rng = StdRng::seed_from_u64(suite.settings.seed ^ 0x417);
    let mut ph = Phase::new(suite.point_queries);
    let start = Instant::now();
    for _ in 0..suite.point_queries {
        let k = data.keys[rng.random_range(0..inserted.max(1))];
        let (d, got) = run.get(k)?;
        ph.record(d, got.map_or(0, |l| (run.settings.key_size + l) as u64));
        ph.found += u64::from(got.is_some());
        if ph.out_of_time(start, budget, d) {
            break;
        }
    }
    ph.wall = start.elapsed();
    out.push(sequential_record(&mut run, "mem-get-hit", &ph));

    // Range queries.
    let mut rng = StdRng::seed_from_u64(suite.settings.seed ^ 0x4a7e);
    let width = range_width();
    let mut ph = Phase::new(suite.range_queries);
    let start = Instant::now();
    for _ in 0..suite.range_queries {
        let s: u64 = rng.random_range(0..u64::MAX - width);
        let (d, n, bytes) = run.range(s, width)?;
        ph.record(d, bytes);
        ph.entries += n;
        if ph.out_of_time(start, budget, d) {
            break;
        }
    }
    ph.wall = start.elapsed();
    out.push(sequential_record(&mut run, "mem-range", &ph));
    run.close()?;
    Ok(out)
}

/// The record of one phase of the sequential run.
fn sequential_record(run: &mut Run, workload: &str, ph: &Phase) -> Record {
    run.record(
        workload,
        describe_phase(workload),
        ph,
        ph.wall,
        order_extra("sequential"),
        BTreeMap::new(),
    )
}

fn order_extra(order: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("order".into(), json!(order));
    m.insert(
        "throughput_basis".into(),
        json!(if order == "sequential" {
            "wall time of the phase"
        } else {
            "sum of the latencies of this operation type"
        }),
    );
    m
}

fn interleaved_run(
    suite: &MemSuite,
    data: &Data,
    target: &Target,
    run_id: &str,
) -> Result<Vec<Record>> {
    let kind = target.variant();
    let settings = run_settings(suite, &kind, suite.buffer, Some(suite.buckets));
    let mut run = Run::open(suite, target.clone(), settings, "int", suite.buffer, run_id)?;
    let budget = suite.stream_budget;
    // Warm-up: not measured.
    for &k in &data.keys[..data.warmup] {
        run.put(k)?;
    }
    let mut inserted = data.warmup;
    let mut misses = 0usize;
    let mut hit_rng = StdRng::seed_from_u64(suite.settings.seed ^ 0x4171);
    let mut range_rng = StdRng::seed_from_u64(suite.settings.seed ^ 0x4a7e1);
    let width = range_width();
    let planned = |t: OpTag| data.stream.iter().filter(|x| **x == t).count() as u64;
    let mut phases = [
        Phase::new(planned(OpTag::Insert)),
        Phase::new(planned(OpTag::Miss)),
        Phase::new(planned(OpTag::Hit)),
        Phase::new(planned(OpTag::Range)),
    ];
    let entry = run.settings.entry_bytes();
    let key_size = run.settings.key_size as u64;
    let start = Instant::now();
    let mut draining = false;
    for &op in &data.stream {
        let ph = &mut phases[op as usize];
        match op {
            OpTag::Insert => {
                let d = run.put(data.keys[inserted])?;
                inserted += 1;
                ph.record(d, entry);
            }
            OpTag::Miss => {
                let (d, got) = run.get(data.misses[misses])?;
                misses += 1;
                ph.record(d, 0);
                ph.found += u64::from(got.is_some());
            }
            OpTag::Hit => {
                let k = data.keys[hit_rng.random_range(0..inserted.max(1))];
                let (d, got) = run.get(k)?;
                ph.record(d, got.map_or(0, |l| key_size + l as u64));
                ph.found += u64::from(got.is_some());
            }
            OpTag::Range => {
                let s: u64 = range_rng.random_range(0..u64::MAX - width);
                let (d, n, bytes) = run.range(s, width)?;
                ph.record(d, bytes);
                ph.entries += n;
            }
        }
        let now = start.elapsed();
        if !draining && now > budget {
            draining = true;
        }
        if draining
            && (now > budget + budget / 4
                || phases
                    .iter()
                    .all(|p| p.ops >= p.planned.min(MIN_DRAIN_SAMPLES)))
        {
            break;
        }
    }
    let wall = start
        .elapsed()
        .saturating_sub(run.tracker.take_probe_time());
    let mut out = Vec::new();
    for (i, ph) in phases.iter_mut().enumerate() {
        ph.truncated = ph.ops < ph.planned;
        ph.wall = wall;
        let name = interleaved(PHASES[i]);
        let mut extra = order_extra("interleaved");
        extra.insert("warmup_inserts".into(), json!(data.warmup));
        extra.insert("stream_wall_seconds".into(), json!(wall.as_secs_f64()));
        let busy = ph.busy;
        out.push(run.record(
            &name,
            describe_phase(&name),
            ph,
            busy.max(Duration::from_nanos(1)),
            extra,
            BTreeMap::new(),
        ));
    }
    run.close()?;
    Ok(out)
}

/// Buckets for a mix buffer: the given count when its array fits half the
/// buffer, else automatic (noted).
fn mix_buckets(suite: &MemSuite) -> (Option<usize>, Option<String>) {
    match suite.settings.hash_buckets {
        Some(b) if (b as u64) * 8 > suite.mix_buffer / 2 => (
            None,
            Some(format!(
                "mixes: --hash-buckets {b} does not fit the {} mix buffer; automatic bucket count used",
                report::human_bytes(suite.mix_buffer)
            )),
        ),
        b => (b, None),
    }
}

fn mix_run(suite: &MemSuite, mix: &Mix, kind: &str, run_id: &str) -> Result<Record> {
    let target = Target {
        engine: EngineKind::Strata,
        memtable: Some(kind.to_string()),
    };
    let (buckets, note) = mix_buckets(suite);
    let settings = run_settings(suite, kind, suite.mix_buffer, buckets);
    let label = mix.name.trim_start_matches("mix-").to_string();
    let mut run = Run::open(suite, target, settings, &label, suite.mix_buffer, run_id)?;
    if let Some(n) = note {
        run.notes.push(n);
    }
    let total = (suite.mix_inserts as f64 / mix.insert).round() as u64;
    let per_buffer = suite.mix_buffer / (run.settings.entry_bytes() + 64);
    let window = (per_buffer / 2).max(64) as usize;
    let mut rng = StdRng::seed_from_u64(suite.settings.seed ^ 0x31c5 ^ (mix.name.len() as u64));
    let mut inserted: Vec<u64> = Vec::with_capacity(suite.mix_inserts as usize + 16);
    let mut ph = Phase::new(total);
    let mut by_kind: BTreeMap<&'static str, Histogram<u64>> = BTreeMap::new();
    let mut counts: BTreeMap<&'static str, u64> = BTreeMap::new();
    let entry = run.settings.entry_bytes();
    let budget = suite.budget;
    let start = Instant::now();
    for _ in 0..total {
        let r: f64 = rng.random();
        let recent = |rng: &mut StdRng, v: &[u64]| {
            let w = window.min(v.len());
            v[v.len() - 1 - rng.random_range(0..w)]
        };
        let (what, d, bytes) = if r < mix.insert || inserted.is_empty() {
            let k: u64 = rng.random();
            let d = run.put(k)?;
            inserted.push(k);
            ("insert", d, entry)
        } else if r < mix.insert + mix.point {
            let k = recent(&mut rng, &inserted);
            let (d, got) = run.get(k)?;
            ph.found += u64::from(got.is_some());
            (
                "get",
                d,
                got.map_or(0, |l| (run.settings.key_size + l) as u64),
            )
        } else {
            let k = recent(&mut rng, &inserted);
            let (d, bytes) = run.scan(k, MIX_SCAN_ENTRIES)?;
            ("scan", d, bytes)
        };
        ph.record(d, bytes);
        by_kind
            .entry(what)
            .or_insert_with(new_hist)
            .saturating_record(d.as_nanos().max(1) as u64);
        *counts.entry(what).or_insert(0) += 1;
        if ph.out_of_time(start, budget, d) {
            break;
        }
    }
    ph.wall = start
        .elapsed()
        .saturating_sub(run.tracker.take_probe_time());
    let mut extra = serde_json::Map::new();
    extra.insert("order".into(), json!("mix"));
    extra.insert("mix".into(), json!(mix.describe));
    extra.insert(
        "shares".into(),
        json!({"insert": mix.insert, "point": mix.point, "range": mix.range}),
    );
    extra.insert("op_counts".into(), json!(counts));
    extra.insert("mix_buffer_bytes".into(), json!(suite.mix_buffer));
    extra.insert("recent_window".into(), json!(window));
    extra.insert("throughput_basis".into(), json!("wall time of the mix"));
    let r = run.record(mix.name, mix.describe, &ph, ph.wall, extra, by_kind);
    run.close()?;
    Ok(r)
}

fn emit(json: Option<&Path>, r: &Record) -> Result<()> {
    let mut line = summary_line(r);
    if let Some(b) = r.bytes_per_entry {
        let _ = write!(line, "  {b:.1} B/entry");
    }
    if let Some(f) = r.flushes {
        let _ = write!(line, "  {f} flushes");
    }
    if r.extra.get("truncated").and_then(|v| v.as_bool()) == Some(true) {
        line.push_str("  (stopped at the time budget)");
    }
    println!("{line}");
    if let Some(p) = json {
        append(p, std::slice::from_ref(r))?;
    }
    Ok(())
}

/// Runs the suite; prints a line per record, appends them to the JSON file
/// and returns them.
pub fn run(suite: &MemSuite) -> Result<Vec<Record>> {
    let run_id = format!("{}-{}", sysinfo::unix_seconds(), std::process::id());
    let data = Data::new(suite);
    let mut targets: Vec<Target> = suite
        .kinds
        .iter()
        .map(|k| Target {
            engine: EngineKind::Strata,
            memtable: Some(k.clone()),
        })
        .collect();
    targets.extend(suite.rocksdb_kinds.iter().map(|k| Target {
        engine: EngineKind::RocksDb,
        memtable: Some(k.clone()),
    }));
    let json = suite.json.as_deref();
    let mut out = Vec::new();
    for t in targets.iter().filter(|_| suite.experiment) {
        for r in sequential(suite, &data, t, &run_id)? {
            emit(json, &r)?;
            out.push(r);
        }
        for r in interleaved_run(suite, &data, t, &run_id)? {
            emit(json, &r)?;
            out.push(r);
        }
    }
    if suite.mixes {
        for mix in &MIXES {
            out.extend(mix_rounds(suite, mix, &run_id)?);
        }
    }
    Ok(out)
}

/// Runs `mix` over every kind for `mix_rounds` rounds (the kinds in
/// alternating order) and returns the median record of each kind by ops/s.
/// A kind whose first round stopped at the budget is not run again.
fn mix_rounds(suite: &MemSuite, mix: &Mix, run_id: &str) -> Result<Vec<Record>> {
    let json = suite.json.as_deref();
    let rounds = suite.mix_rounds.max(1);
    let mut per_kind: Vec<Vec<Record>> = vec![Vec::new(); suite.kinds.len()];
    for round in 0..rounds {
        let mut order: Vec<usize> = (0..suite.kinds.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            if per_kind[i].first().is_some_and(truncated) {
                continue;
            }
            let mut r = mix_run(suite, mix, &suite.kinds[i], run_id)?;
            r.round = round + 1;
            r.rounds = rounds;
            r.median = rounds == 1;
            emit(json, &r)?;
            per_kind[i].push(r);
        }
    }
    let mut out = Vec::new();
    for recs in per_kind {
        let Some(mut m) = median_of(&recs) else {
            continue;
        };
        m.rounds = recs.len() as u32;
        let all: Vec<f64> = recs.iter().map(|r| r.ops_per_sec).collect();
        m.extra.insert("rounds_ops_per_sec".into(), json!(all));
        if rounds > 1
            && let Some(p) = json
        {
            append(p, std::slice::from_ref(&m))?;
        }
        out.push(m);
    }
    Ok(out)
}

// ---------------------------------------------------------------------
// Report
