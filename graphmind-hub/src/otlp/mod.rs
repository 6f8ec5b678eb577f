//! OpenTelemetry export: finished runs go to an OTLP/HTTP collector (`POST /v1/traces`,
//! protobuf) as traces with the GenAI semantic conventions.
//!
//! The app pays nothing: the hub already has every event in order. When a run finishes, the
//! ingest path only offers its id to a bounded queue ([`OtlpConfig::queue`] runs; a full queue
//! drops the run and counts it). The exporter task, on its own, waits for the run to be
//! committed, reads it back from storage, builds its spans ([`spans`]), and sends runs in
//! batches, retried with backoff ([`send`]). A collector that is down therefore never slows
//! ingest nor grows memory: at most the queue of run ids and one batch are held. `/health`
//! reports the counters under `otlp`.
//!
//! Only `http://` endpoints are supported (no TLS stack in the hub): point it at a local
//! collector (the OpenTelemetry Collector, Jaeger, Tempo, …) that forwards over TLS.

pub mod names;
pub mod send;
pub mod spans;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
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
}

/// The live exporter of a hub: the ingest side's handle.
#[derive(Debug)]
pub struct Exporter {
    tx: mpsc::Sender<String>,
    endpoint: String,
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
        let task = tokio::spawn(worker(config, writer, reader, rx, Arc::clone(&stats)));
        (
            Self {
                tx,
                endpoint,
                stats,
            },
            task,
        )
    }

    /// Offers a finished run for export; never waits (a full queue drops it, counted).
    pub fn finished(&self, run_id: &str) {
        self.stats.runs_queued.fetch_add(1, Ordering::Relaxed);
        if self.tx.try_send(run_id.to_owned()).is_err() {
            self.stats.runs_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The `/health` document's `otlp` part.
    pub fn health(&self) -> Value {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let s = &self.stats;
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

async fn worker(
    config: OtlpConfig,
    writer: Writer,
    reader: Arc<Reader>,
    mut rx: mpsc::Receiver<String>,
    stats: Arc<OtlpStats>,
) {
    let sender = Sender::new(config.clone());
    let opts = config.map_options();
    let mut ids = Vec::with_capacity(BATCH_RUNS);
    loop {
        ids.clear();
        if rx.recv_many(&mut ids, BATCH_RUNS).await == 0 {
            return;
        }
        // Everything of these runs was queued for storage before their ids were: once the
        // writer committed up to here, storage holds them whole.
        writer.barrier().await;
        // Runs are read one at a time, and a batch goes out once it holds BATCH_BYTES of
        // encoded spans: what the exporter holds stays bounded whatever the runs' sizes.
        let mut batch = Vec::new();
        let mut bytes = 0usize;
        for id in ids.drain(..) {
            let read = {
                let reader = Arc::clone(&reader);
                tokio::task::spawn_blocking(move || read_run(&reader, &id, opts)).await
            };
            match read {
                Ok(Ok(Some((rs, cut)))) => {
                    if cut {
                        stats.runs_cut.fetch_add(1, Ordering::Relaxed);
                    }
                    bytes += rs.encoded_len();
                    batch.push(rs);
                }
                // Deleted meanwhile (retention): nothing to export.
                Ok(Ok(None)) => {}
                Ok(Err(_)) | Err(_) => {
                    stats.read_errors.fetch_add(1, Ordering::Relaxed);
                }
            }
            if bytes >= BATCH_BYTES {
                deliver(&sender, std::mem::take(&mut batch), &stats).await;
                bytes = 0;
            }
        }
        deliver(&sender, batch, &stats).await;
    }
}

/// Sends one batch and counts the outcome.
async fn deliver(sender: &Sender, batch: Vec<ResourceSpans>, stats: &OtlpStats) {
    if batch.is_empty() {
        return;
    }
    let runs = batch.len() as u64;
    let spans = span_count(&batch);
    let body = encode(batch);
    match sender.send(body).await {
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
