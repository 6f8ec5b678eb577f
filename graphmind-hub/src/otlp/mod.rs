//! OpenTelemetry export: finished runs go to an OTLP/HTTP collector (`POST /v1/traces`,
//! protobuf) as traces with the GenAI semantic conventions.
//!
//! The app pays nothing: the hub already has every event in order. While a run that started
//! in this hub is taken in, the ingest path keeps its stored texts for the exporter (shared,
//! not copied; at most [`OPEN_RUNS`] runs and [`OPEN_BYTES`] in all, and a run past
//! [`MAX_RUN_EVENTS`] / [`MAX_RUN_BYTES`] is let go). When a run finishes, the ingest path
//! offers it — its kept events, or only its id when they were not kept whole (a run of an
//! earlier start, or one let go) — to a bounded queue ([`OtlpConfig::queue`] runs; a full
//! queue drops the run and counts it). The exporter task, on its own, builds the spans of a
//! kept run from its events, or waits for a run offered by id to be committed and reads it
//! back from storage ([`spans`]), and sends runs in batches, retried with backoff ([`send`]).
//! While ingest is busy it yields the CPU to it: after each request it pauses for
//! [`BUSY_PAUSE`] times what building it took, unless its queue is filling ([`FILLING`]).
//! A collector that is down therefore never slows ingest nor grows memory: at most the kept
//! events, the queue and one batch are held. `/health` reports the counters under `otlp`.
//!
//! Only `http://` endpoints are supported (no TLS stack in the hub): point it at a local
//! collector (the OpenTelemetry Collector, Jaeger, Tempo, …) that forwards over TLS.

pub mod names;
pub mod send;
pub mod spans;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::ResourceSpans;
use prost::Message as _;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::storage::{Reader, Writer};
pub use send::{Delivery, Sender};
pub use spans::{MapOptions, run_spans, trace_id};

/// Most events of one run read for its spans (a larger run is exported cut, counted).
pub const MAX_RUN_EVENTS: usize = 200_000;
/// Most bytes of event bodies of one run read for its spans.
pub const MAX_RUN_BYTES: usize = 64 * 1024 * 1024;
/// Most runs sent in one request.
pub const BATCH_RUNS: usize = 64;
/// A request goes out once its encoded spans reach this many bytes (one larger run goes
/// alone), so the exporter holds about this much besides the run it is reading.
pub const BATCH_BYTES: usize = 4 * 1024 * 1024;
/// How long the exporter waits, once a finished run came, for more to fill the request
/// (up to [`BATCH_RUNS`] runs or [`BATCH_BYTES`] of kept events): runs that finish close
/// together go out in one request instead of one each, which costs the hub (and the
/// collector) far less per run. A run reaches the collector at most this much later.
pub const GATHER: Duration = Duration::from_millis(50);

/// While ingest is busy (events were taken in while a request was built), the exporter takes
/// at most about 1/(1 + [`BUSY_PAUSE`]) of a core's time: after building a request in `t` it
/// waits `t × BUSY_PAUSE` (at most [`MAX_PAUSE`]) before building the next, so a hub short of
/// CPU spends it on ingest first and exports in the gaps, in fuller requests. Not while the
/// queue is [`FILLING`] full or more: then it works through the queue at full speed, so a
/// steady load is exported as before (and drops stay what a full queue gives).
pub const BUSY_PAUSE: u32 = 9;
/// Longest pause between two requests while ingest is busy.
pub const MAX_PAUSE: Duration = Duration::from_millis(500);
/// The queue's fill (runs waiting / capacity, in percent) from which the exporter no longer
/// pauses for a busy ingest.
pub const FILLING: usize = 75;

/// Most open runs whose events the exporter keeps at once; a run that starts beyond it lets
/// the one that has waited longest go (read back from storage when it finishes).
pub const OPEN_RUNS: usize = 1024;
/// Most bytes of event texts the exporter keeps for open runs in all (shared with storage's
/// queue and the viewers, so mostly not extra memory); beyond it the longest-waiting runs
/// are let go.
pub const OPEN_BYTES: usize = 64 * 1024 * 1024;
/// Most bytes of event texts of finished runs waiting in the export queue; a run that would
/// go past it is queued by id only (read back from storage when its turn comes).
pub const QUEUED_BYTES: usize = 64 * 1024 * 1024;

/// Where and how finished runs are exported.
#[derive(Debug, Clone)]
pub struct OtlpConfig {
    /// The traces URL: `http://host:port/v1/traces` (an endpoint given without a path gets
    /// `/v1/traces`).
    pub endpoint: String,
    /// Extra request headers (API keys of hosted backends).
    pub headers: Vec<(String, String)>,
    /// Export message content (inputs and outputs); off by default.
    pub content: bool,
    /// Most finished runs waiting for export; beyond it runs are dropped and counted (1024).
    pub queue: usize,
    /// Tries per batch, the first included (5).
    pub attempts: u32,
    /// The first retry's wait; doubles each retry, at most 8 s (500 ms).
    pub backoff: Duration,
    /// Connect and request timeout of one try (10 s).
    pub timeout: Duration,
}

impl OtlpConfig {
    /// The defaults for `endpoint`, which must be an `http://` URL. An endpoint without a
    /// path (`http://127.0.0.1:4318`) gets `/v1/traces`.
    pub fn new(endpoint: &str) -> Result<Self, String> {
        let endpoint = endpoint.trim();
        let Some(rest) = endpoint.strip_prefix("http://") else {
            if endpoint.starts_with("https://") {
                return Err(format!(
                    "{endpoint}: https endpoints are not supported; point --otlp at a local \
                     collector (http://127.0.0.1:4318) that forwards over TLS"
                ));
            }
            return Err(format!(
                "{endpoint}: the OTLP endpoint must be an http:// URL"
            ));
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if authority.is_empty() {
            return Err(format!("{endpoint}: the OTLP endpoint has no host"));
        }
        let path = if path.is_empty() || path == "/" {
            "/v1/traces"
        } else {
            path
        };
        let endpoint = format!("http://{authority}{path}");
        endpoint
            .parse::<hyper::Uri>()
            .map_err(|e| format!("{endpoint}: {e}"))?;
        Ok(Self {
            endpoint,
            headers: Vec::new(),
            content: false,
            queue: 1024,
            attempts: 5,
            backoff: Duration::from_millis(500),
            timeout: Duration::from_secs(10),
        })
    }

    /// Adds a header from `K=V` (as `--otlp-header` takes it).
    pub fn header(&mut self, pair: &str) -> Result<(), String> {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| format!("{pair}: a header is NAME=VALUE"))?;
        let k = k.trim();
        hyper::header::HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| format!("{k}: not a valid header name"))?;
        hyper::header::HeaderValue::from_str(v)
            .map_err(|_| format!("{k}: not a valid header value"))?;
        self.headers.push((k.to_owned(), v.to_owned()));
        Ok(())
    }

    fn map_options(&self) -> MapOptions {
        MapOptions {
            content: self.content,
        }
    }
}

/// The export counters (`/health` → `otlp`).
#[derive(Debug, Default)]
pub struct OtlpStats {
    /// Finished runs offered to the queue.
    pub runs_queued: AtomicU64,
    /// Runs the collector took.
    pub runs_exported: AtomicU64,
    /// Spans the collector took.
    pub spans_exported: AtomicU64,
    /// Runs dropped because the queue was full (the collector slow or down).
    pub runs_dropped: AtomicU64,
    /// Runs dropped because their batch failed every try (or was refused).
    pub runs_failed: AtomicU64,
    /// Requests the collector took.
    pub batches_sent: AtomicU64,
    /// Retries made.
    pub retries: AtomicU64,
    /// Runs whose events could not be read from storage.
    pub read_errors: AtomicU64,
    /// Runs exported cut at [`MAX_RUN_EVENTS`] / [`MAX_RUN_BYTES`].
    pub runs_cut: AtomicU64,
    /// Runs taken off the queue and not yet exported, failed or given up (at most
    /// [`BATCH_RUNS`]): with the queue's, all the runs the exporter holds.
    pub runs_in_flight: AtomicU64,
    /// Runs still queued or in flight when the hub stopped and the drain ([`DRAIN`]) ended:
    /// never sent.
    pub runs_unsent: AtomicU64,
    /// Runs offered to the queue and not yet settled (sent, failed or given up): what a
    /// stopping hub waits for.
    pub runs_outstanding: AtomicU64,
}

/// How long a stopping hub waits for the export queue to drain (runs queued and in flight
/// sent or given up); what is left is counted ([`OtlpStats::runs_unsent`]) and reported.
pub const DRAIN: Duration = Duration::from_secs(3);

/// A finished run offered for export.
#[derive(Debug)]
enum Job {
    /// Only its id: read it back from storage once committed.
    Stored(String),
    /// Its events as taken in, in seq order, and whether it has a gap.
    Kept {
        run_id: String,
        bodies: Vec<Arc<str>>,
        /// Their bytes, counted in [`QUEUED_BYTES`].
        bytes: usize,
        incomplete: bool,
    },
}

/// The events of one open run the exporter keeps.
#[derive(Debug)]
struct Kept {
    /// (seq, stored text).
    events: Vec<(u64, Arc<str>)>,
    bytes: usize,
    /// When it started keeping it (a counter): the smallest waited longest.
    since: u64,
}

/// The open runs whose events are kept.
#[derive(Debug, Default)]
struct OpenRuns {
    runs: HashMap<String, Kept>,
    bytes: usize,
    started: u64,
}

impl OpenRuns {
    /// Starts keeping a run's events (letting the longest-waiting run go at [`OPEN_RUNS`]).
    fn begin(&mut self, run_id: &str) {
        if self.runs.contains_key(run_id) {
            return;
        }
        if self.runs.len() >= OPEN_RUNS {
            self.let_go_oldest();
        }
        self.started += 1;
        let since = self.started;
        self.runs.insert(
            run_id.to_owned(),
            Kept {
                events: Vec::new(),
                bytes: 0,
                since,
            },
        );
    }

    /// Keeps an event if its run is kept; lets the run go past [`MAX_RUN_EVENTS`] /
    /// [`MAX_RUN_BYTES`], and the longest-waiting runs past [`OPEN_BYTES`] in all.
    fn event(&mut self, run_id: &str, seq: u64, body: &Arc<str>) {
        let Some(kept) = self.runs.get_mut(run_id) else {
            return;
        };
        let len = body.len();
        if kept.events.len() >= MAX_RUN_EVENTS || kept.bytes + len > MAX_RUN_BYTES {
            // Too large to keep: read back (and cut) when it finishes.
            self.take(run_id);
            return;
        }
        kept.events.push((seq, Arc::clone(body)));
        kept.bytes += len;
        self.bytes += len;
        while self.bytes > OPEN_BYTES && !self.runs.is_empty() {
            self.let_go_oldest();
        }
    }

    /// Stops keeping a run; its kept events.
    fn take(&mut self, run_id: &str) -> Option<Kept> {
        let kept = self.runs.remove(run_id)?;
        self.bytes -= kept.bytes;
        Some(kept)
    }

    /// Lets go of the run that has waited longest.
    fn let_go_oldest(&mut self) {
        let oldest = self
            .runs
            .iter()
            .min_by_key(|(_, k)| k.since)
            .map(|(id, _)| id.clone());
        if let Some(id) = oldest {
            self.take(&id);
        }
    }
}

/// The live exporter of a hub: the ingest side's handle.
#[derive(Debug)]
pub struct Exporter {
    tx: mpsc::Sender<Job>,
    endpoint: String,
    /// Events of open runs, kept for their export.
    open: Mutex<OpenRuns>,
    /// Bytes of event texts in the queue ([`QUEUED_BYTES`]).
    queued_bytes: Arc<AtomicUsize>,
    /// Events taken in so far (whether ingest is busy, for the exporter's pauses).
    taken: Arc<AtomicU64>,
    /// Its counters.
    pub stats: Arc<OtlpStats>,
}

impl Exporter {
    /// Starts the exporter task of a hub over its storage. Must be called within a tokio
    /// runtime.
    pub(crate) fn start(
        config: OtlpConfig,
        writer: Writer,
        reader: Arc<Reader>,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::channel(config.queue.max(1));
        let stats = Arc::new(OtlpStats::default());
        let endpoint = config.endpoint.clone();
        let queued_bytes = Arc::new(AtomicUsize::new(0));
        let taken = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn(worker(
            config,
            writer,
            reader,
            rx,
            Arc::clone(&stats),
            Arc::clone(&queued_bytes),
            Arc::clone(&taken),
        ));
        (
            Self {
                tx,
                endpoint,
                open: Mutex::new(OpenRuns::default()),
                queued_bytes,
                taken,
                stats,
            },
            task,
        )
    }

    fn open_runs(&self) -> std::sync::MutexGuard<'_, OpenRuns> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A run new to this hub started (with its `run.started`): its events are kept from now
    /// on, so that its export needs no read back from storage.
    pub fn begin(&self, run_id: &str) {
        self.open_runs().begin(run_id);
    }

    /// An event of a run was taken in (stored as `body`): kept if the run is.
    pub fn event(&self, run_id: &str, seq: u64, body: &Arc<str>) {
        self.taken.fetch_add(1, Ordering::Relaxed);
        self.open_runs().event(run_id, seq, body);
    }

    /// Offers a finished run for export; never waits (a full queue drops it, counted).
    /// `incomplete`: its app announced events of it lost.
    pub fn finished(&self, run_id: &str, incomplete: bool) {
        self.stats.runs_queued.fetch_add(1, Ordering::Relaxed);
        let kept = self.open_runs().take(run_id);
        // Kept events wait in the queue within a byte budget; past it, the run goes by id.
        let kept = kept.filter(|k| {
            let before = self.queued_bytes.fetch_add(k.bytes, Ordering::Relaxed);
            if before + k.bytes > QUEUED_BYTES {
                self.queued_bytes.fetch_sub(k.bytes, Ordering::Relaxed);
                return false;
            }
            true
        });
        let job = match kept {
            Some(mut k) => {
                // Taken in as sent; a reconnect's replay may have come out of order.
                k.events.sort_by_key(|(seq, _)| *seq);
                Job::Kept {
                    run_id: run_id.to_owned(),
                    bodies: k.events.into_iter().map(|(_, b)| b).collect(),
                    bytes: k.bytes,
                    incomplete,
                }
            }
            None => Job::Stored(run_id.to_owned()),
        };
        // Counted before it can be taken off the queue; taken back if it never got on.
        self.stats.runs_outstanding.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = self.tx.try_send(job) {
            self.stats.runs_outstanding.fetch_sub(1, Ordering::Relaxed);
            if let Job::Kept { bytes, .. } = e.into_inner() {
                self.queued_bytes.fetch_sub(bytes, Ordering::Relaxed);
            }
            self.stats.runs_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Waits (at most `within`) until every run offered so far is sent or given up, for a
    /// hub that stops; returns how many were not, counted in [`OtlpStats::runs_unsent`].
    pub async fn drain(&self, within: Duration) -> u64 {
        let deadline = tokio::time::Instant::now() + within;
        while self.stats.runs_outstanding.load(Ordering::Relaxed) > 0
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let left = self.stats.runs_outstanding.load(Ordering::Relaxed);
        self.stats.runs_unsent.fetch_add(left, Ordering::Relaxed);
        left
    }

    /// Runs whose events are kept now, and their bytes.
    #[must_use]
    pub fn kept(&self) -> (usize, usize) {
        let open = self.open_runs();
        (open.runs.len(), open.bytes)
    }

    /// The `/health` document's `otlp` part.
    pub fn health(&self) -> Value {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let s = &self.stats;
        let (kept_runs, kept_bytes) = self.kept();
        json!({
            "endpoint": self.endpoint,
            "queued": self.tx.max_capacity() - self.tx.capacity(),
            "queueCapacity": self.tx.max_capacity(),
            "runsQueued": g(&s.runs_queued),
            "runsExported": g(&s.runs_exported),
            "spansExported": g(&s.spans_exported),
            "runsDropped": g(&s.runs_dropped),
            "runsFailed": g(&s.runs_failed),
            "batchesSent": g(&s.batches_sent),
            "retries": g(&s.retries),
            "readErrors": g(&s.read_errors),
            "runsCut": g(&s.runs_cut),
            "runsInFlight": g(&s.runs_in_flight),
            "runsUnsent": g(&s.runs_unsent),
            "keptRuns": kept_runs,
            "keptBytes": kept_bytes,
            "queuedBytes": self.queued_bytes.load(Ordering::Relaxed),
        })
    }
}

/// Reads one run's stored events (bounded by [`MAX_RUN_EVENTS`] / [`MAX_RUN_BYTES`]) and
/// builds its spans. Blocking (SQLite). `Ok(None)`: no such run. The flag says it was cut.
fn read_run(
    reader: &Reader,
    run_id: &str,
    opts: MapOptions,
) -> Result<Option<(ResourceSpans, bool)>, String> {
    let Some(row) = reader.run(run_id)? else {
        return Ok(None);
    };
    let mut bodies = Vec::new();
    let mut bytes = 0usize;
    let mut after = None;
    let mut cut = false;
    loop {
        let (page, more) = reader.events_within(run_id, after, 2_000, 8 * 1024 * 1024)?;
        let Some(last) = page.last().map(|(seq, _)| *seq) else {
            break;
        };
        after = Some(last);
        for (_, body) in page {
            bytes += body.len();
            bodies.push(body);
        }
        if !more {
            break;
        }
        if bodies.len() >= MAX_RUN_EVENTS || bytes >= MAX_RUN_BYTES {
            cut = true;
            break;
        }
    }
    Ok(Some((
        run_spans(run_id, &bodies, row.incomplete, opts),
        cut,
    )))
}

/// The request of a batch of runs, encoded.
pub fn encode(resource_spans: Vec<ResourceSpans>) -> Bytes {
    Bytes::from(ExportTraceServiceRequest { resource_spans }.encode_to_vec())
}

fn span_count(rs: &[ResourceSpans]) -> u64 {
    rs.iter()
        .flat_map(|r| &r.scope_spans)
        .map(|s| s.spans.len() as u64)
        .sum()
}

/// The bytes of kept events a job holds.
fn job_bytes(job: &Job) -> usize {
    match job {
        Job::Kept { bytes, .. } => *bytes,
        Job::Stored(_) => 0,
    }
}

/// A request being built: the encoded `ExportTraceServiceRequest` so far, and what it holds.
#[derive(Debug, Default)]
struct Batch {
    body: Vec<u8>,
    runs: u64,
    spans: u64,
}

impl Batch {
    /// Appends one run's spans to the request (each is encoded once, straight into the
    /// request's bytes, and dropped).
    fn push(&mut self, rs: &ResourceSpans) {
        // `ExportTraceServiceRequest.resource_spans` is field 1.
        prost::encoding::message::encode(1, rs, &mut self.body);
        self.runs += 1;
        self.spans += span_count(std::slice::from_ref(rs));
    }
}

/// Builds the spans of `jobs` in order until the encoded request reaches [`BATCH_BYTES`] (so
/// what is held stays bounded whatever the runs' sizes). Blocking (SQLite for runs offered by
/// id). Returns the batch and how many jobs it used.
fn build_batch(
    reader: &Reader,
    jobs: &mut std::collections::VecDeque<Job>,
    opts: MapOptions,
    stats: &OtlpStats,
) -> (Batch, u64) {
    let mut batch = Batch::default();
    let mut used = 0;
    while let Some(job) = jobs.pop_front() {
        used += 1;
        let built = match job {
            Job::Stored(id) => read_run(reader, &id, opts),
            Job::Kept {
                run_id,
                bodies,
                incomplete,
                ..
            } => Ok(Some((run_spans(&run_id, &bodies, incomplete, opts), false))),
        };
        match built {
            Ok(Some((rs, cut))) => {
                if cut {
                    stats.runs_cut.fetch_add(1, Ordering::Relaxed);
                }
                batch.push(&rs);
            }
            // Deleted meanwhile (retention): nothing to export.
            Ok(None) => {}
            Err(_) => {
                stats.read_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        if batch.body.len() >= BATCH_BYTES {
            break;
        }
    }
    (batch, used)
}

async fn worker(
    config: OtlpConfig,
    writer: Writer,
    reader: Arc<Reader>,
    mut rx: mpsc::Receiver<Job>,
    stats: Arc<OtlpStats>,
    queued_bytes: Arc<AtomicUsize>,
    taken: Arc<AtomicU64>,
) {
    let sender = Sender::new(config.clone());
    let opts = config.map_options();
    let mut got = Vec::with_capacity(BATCH_RUNS);
    let mut open = true;
    while open {
        got.clear();
        if rx.recv_many(&mut got, BATCH_RUNS).await == 0 {
            return;
        }
        // Gather: runs finishing close together go out in one request.
        let deadline = tokio::time::Instant::now() + GATHER;
        let mut kept: usize = got.iter().map(job_bytes).sum();
        while got.len() < BATCH_RUNS && kept < BATCH_BYTES {
            let room = BATCH_RUNS - got.len();
            let before = got.len();
            match tokio::time::timeout_at(deadline, rx.recv_many(&mut got, room)).await {
                Ok(0) => {
                    open = false;
                    break;
                }
                Ok(_) => kept += got[before..].iter().map(job_bytes).sum::<usize>(),
                Err(_) => break,
            }
        }
        // Off the queue: the jobs' bytes no longer count against it; they are in flight.
        queued_bytes.fetch_sub(kept, Ordering::Relaxed);
        stats
            .runs_in_flight
            .store(got.len() as u64, Ordering::Relaxed);
        // Everything of the runs offered by id was queued for storage before their ids were:
        // once the writer committed up to here, storage holds them whole.
        if got.iter().any(|j| matches!(j, Job::Stored(_))) {
            writer.barrier().await;
        }
        let mut jobs: std::collections::VecDeque<Job> = got.drain(..).collect();
        while !jobs.is_empty() {
            let before = jobs.len() as u64;
            let taken_before = taken.load(Ordering::Relaxed);
            let started = std::time::Instant::now();
            // One blocking task per request, not per run.
            let built = {
                let reader = Arc::clone(&reader);
                let stats = Arc::clone(&stats);
                tokio::task::spawn_blocking(move || {
                    let (batch, used) = build_batch(&reader, &mut jobs, opts, &stats);
                    (batch, used, jobs)
                })
                .await
            };
            let Ok((batch, used, rest)) = built else {
                // The build panicked: the runs it held are lost, counted.
                stats.read_errors.fetch_add(1, Ordering::Relaxed);
                stats.runs_outstanding.fetch_sub(before, Ordering::Relaxed);
                break;
            };
            jobs = rest;
            let build = started.elapsed();
            deliver(&sender, batch, &stats).await;
            stats.runs_in_flight.fetch_sub(used, Ordering::Relaxed);
            stats.runs_outstanding.fetch_sub(used, Ordering::Relaxed);
            let busy = taken.load(Ordering::Relaxed) != taken_before;
            if let Some(pause) = busy_pause(busy, build, rx.len(), rx.max_capacity()) {
                tokio::time::sleep(pause).await;
            }
        }
        stats.runs_in_flight.store(0, Ordering::Relaxed);
    }
}

/// How long the exporter waits before its next request, having built the last one in
/// `build`: [`BUSY_PAUSE`] times as long while ingest is `busy`, unless the queue (`queued`
/// of `capacity` runs) is [`FILLING`] full.
fn busy_pause(busy: bool, build: Duration, queued: usize, capacity: usize) -> Option<Duration> {
    if !busy || queued * 100 >= capacity * FILLING {
        return None;
    }
    Some((build * BUSY_PAUSE).min(MAX_PAUSE))
}

/// Sends one batch and counts the outcome.
async fn deliver(sender: &Sender, batch: Batch, stats: &OtlpStats) {
    if batch.runs == 0 {
        return;
    }
    let Batch { body, runs, spans } = batch;
    match sender.send(Bytes::from(body)).await {
        Delivery::Sent { retries } => {
            stats
                .retries
                .fetch_add(u64::from(retries), Ordering::Relaxed);
            stats.batches_sent.fetch_add(1, Ordering::Relaxed);
            stats.runs_exported.fetch_add(runs, Ordering::Relaxed);
            stats.spans_exported.fetch_add(spans, Ordering::Relaxed);
        }
        Delivery::Failed { retries, reason } => {
            stats
                .retries
                .fetch_add(u64::from(retries), Ordering::Relaxed);
            stats.runs_failed.fetch_add(runs, Ordering::Relaxed);
            eprintln!("graphmind: OTLP export of {runs} run(s) failed: {reason}");
        }
    }
}

/// What [`export_stored`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportSummary {
    /// Runs found and exported (or written).
    pub runs: usize,
    /// Spans in them.
    pub spans: u64,
    /// Run ids not in the database.
    pub missing: Vec<String>,
}

/// Builds the export request of stored runs from the database at `db` (read only; a hub may
/// be running on it). Returns the encoded `ExportTraceServiceRequest` and the summary.
pub async fn encode_stored(
    db: &Path,
    run_ids: &[String],
    opts: MapOptions,
) -> Result<(Bytes, ExportSummary), String> {
    if !db.exists() {
        return Err(format!("{}: no such database", db.display()));
    }
    let reader = Reader::at(db);
    let ids = run_ids.to_vec();
    let (batch, missing) = tokio::task::spawn_blocking(move || {
        let mut batch = Vec::new();
        let mut missing = Vec::new();
        for id in ids {
            match read_run(&reader, &id, opts)? {
                Some((rs, _)) => batch.push(rs),
                None => missing.push(id),
            }
        }
        Ok::<_, String>((batch, missing))
    })
    .await
    .map_err(|e| e.to_string())??;
    let summary = ExportSummary {
        runs: batch.len(),
        spans: span_count(&batch),
        missing,
    };
    Ok((encode(batch), summary))
}

/// Exports stored runs of the database at `db` to `config`'s endpoint in one request (with
/// the same retries as the live export). `graphmind export` is a thin layer over it.
pub async fn export_stored(
    db: &Path,
    run_ids: &[String],
    config: &OtlpConfig,
) -> Result<ExportSummary, String> {
    let (body, summary) = encode_stored(db, run_ids, config.map_options()).await?;
    if summary.runs == 0 {
        return Ok(summary);
    }
    match Sender::new(config.clone()).send(body).await {
        Delivery::Sent { .. } => Ok(summary),
        Delivery::Failed { reason, .. } => Err(format!("{}: {reason}", config.endpoint)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(len: usize) -> Arc<str> {
        Arc::from("x".repeat(len))
    }

    #[test]
    fn the_exporter_pauses_only_for_a_busy_ingest_and_a_queue_not_filling() {
        let ms = Duration::from_millis;
        // Idle ingest: no pause.
        assert_eq!(busy_pause(false, ms(10), 0, 1024), None);
        // Busy ingest: 9 times the build, at most MAX_PAUSE.
        assert_eq!(busy_pause(true, ms(10), 0, 1024), Some(ms(90)));
        assert_eq!(busy_pause(true, ms(100), 10, 1024), Some(MAX_PAUSE));
        // A queue 3/4 full is worked through at full speed, busy or not.
        assert_eq!(busy_pause(true, ms(10), 767, 1024), Some(ms(90)));
        assert_eq!(busy_pause(true, ms(10), 768, 1024), None);
        assert_eq!(busy_pause(true, ms(10), 1, 1), None);
    }

    #[test]
    fn open_runs_keep_only_started_runs_and_stay_within_their_bounds() {
        let mut open = OpenRuns::default();
        // A run not begun here (of an earlier start) is not kept.
        open.event("run_old", 1, &body(10));
        assert!(open.take("run_old").is_none());

        open.begin("run_a");
        open.event("run_a", 2, &body(10));
        open.event("run_a", 1, &body(5));
        assert_eq!(open.bytes, 15);
        let kept = open.take("run_a").expect("kept");
        assert_eq!(kept.events.len(), 2);
        assert_eq!(open.bytes, 0);

        // Past OPEN_RUNS the run that waited longest is let go.
        for i in 0..=OPEN_RUNS {
            open.begin(&format!("run_{i}"));
        }
        assert_eq!(open.runs.len(), OPEN_RUNS);
        assert!(!open.runs.contains_key("run_0"));
        assert!(open.runs.contains_key(&format!("run_{OPEN_RUNS}")));

        // Past OPEN_BYTES in all, the longest-waiting runs go until it fits.
        let mut open = OpenRuns::default();
        let big = body(OPEN_BYTES / 4 + 1);
        for i in 0..4 {
            open.begin(&format!("run_{i}"));
            open.event(&format!("run_{i}"), 1, &big);
        }
        assert!(open.bytes <= OPEN_BYTES);
        assert!(!open.runs.contains_key("run_0"));
        assert!(open.runs.contains_key("run_3"));

        // One run past MAX_RUN_BYTES is let go whole.
        let mut open = OpenRuns::default();
        open.begin("run_big");
        let chunk = body(MAX_RUN_BYTES / 2 + 1);
        open.event("run_big", 1, &chunk);
        open.event("run_big", 2, &chunk);
        assert!(open.take("run_big").is_none());
        assert_eq!(open.bytes, 0);
    }
}
