//! An OTLP/HTTP receiver for the export tests: axum on a loopback port, `POST /v1/traces`
//! decoded with the official proto types; it can answer the first requests with 503, and
//! lookups of what arrived (spans by name, attributes by key).
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, Span};
use prost::Message as _;

#[derive(Default)]
struct Inner {
    got: Mutex<Vec<(HeaderMap, ExportTraceServiceRequest, Instant)>>,
    fail_first: AtomicUsize,
    hits: AtomicUsize,
    hit_times: Mutex<Vec<Instant>>,
    /// Milliseconds each request waits before it is answered.
    delay_ms: AtomicUsize,
}

/// A receiver listening on 127.0.0.1.
pub struct Receiver {
    pub port: u16,
    inner: Arc<Inner>,
    task: tokio::task::JoinHandle<()>,
}

async fn traces(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> StatusCode {
    inner.hits.fetch_add(1, Ordering::SeqCst);
    inner.hit_times.lock().unwrap().push(Instant::now());
    let delay = inner.delay_ms.load(Ordering::SeqCst) as u64;
    tokio::time::sleep(Duration::from_millis(delay)).await;
    if inner
        .fail_first
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    match ExportTraceServiceRequest::decode(body.as_ref()) {
        Ok(req) => {
            inner
                .got
                .lock()
                .unwrap()
                .push((headers, req, Instant::now()));
            StatusCode::OK
        }
        Err(_) => StatusCode::BAD_REQUEST,
    }
}

impl Receiver {
    /// Starts a receiver that answers the first `fail_first` requests with 503.
    pub async fn start(fail_first: usize) -> Self {
        let inner = Arc::new(Inner::default());
        inner.fail_first.store(fail_first, Ordering::SeqCst);
        let app = axum::Router::new()
            .route("/v1/traces", post(traces))
            .with_state(Arc::clone(&inner));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { port, inner, task }
    }

    /// `http://127.0.0.1:<port>` (the exporter adds `/v1/traces`).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Makes each request wait `d` before it is answered (a slow collector).
    pub fn set_delay(&self, d: Duration) {
        self.inner
            .delay_ms
            .store(d.as_millis() as usize, Ordering::SeqCst);
    }

    /// Requests received (failed ones too).
    pub fn hits(&self) -> usize {
        self.inner.hits.load(Ordering::SeqCst)
    }

    /// When each request arrived.
    pub fn hit_times(&self) -> Vec<Instant> {
        self.inner.hit_times.lock().unwrap().clone()
    }

    /// Every request taken, with its headers.
    pub fn requests(&self) -> Vec<(HeaderMap, ExportTraceServiceRequest)> {
        self.inner
            .got
            .lock()
            .unwrap()
            .iter()
            .map(|(h, r, _)| (h.clone(), r.clone()))
            .collect()
    }

    /// Every resource-spans taken (one per run).
    pub fn runs(&self) -> Vec<ResourceSpans> {
        self.requests()
            .into_iter()
            .flat_map(|(_, r)| r.resource_spans)
            .collect()
    }

    /// Waits up to `secs` for `n` runs; returns them.
    pub async fn wait_runs(&self, n: usize, secs: u64) -> Vec<ResourceSpans> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let runs = self.runs();
            if runs.len() >= n {
                return runs;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {n} runs arrived within {secs} s",
                runs.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The spans of one run.
pub fn spans(rs: &ResourceSpans) -> Vec<Span> {
    rs.scope_spans
        .iter()
        .flat_map(|s| s.spans.clone())
        .collect()
}

/// The run id a resource-spans is of (its spans' `graphmind.run.id`).
pub fn run_of(rs: &ResourceSpans) -> String {
    spans(rs)
        .first()
        .and_then(|s| str_attr(&s.attributes, "graphmind.run.id"))
        .unwrap_or_default()
}

pub fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attrs
        .iter()
        .find(|k| k.key == key)
        .and_then(|k| k.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

pub fn str_attr(attrs: &[KeyValue], key: &str) -> Option<String> {
    match attr(attrs, key)? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        _ => None,
    }
}

pub fn int_attr(attrs: &[KeyValue], key: &str) -> Option<i64> {
    match attr(attrs, key)? {
        any_value::Value::IntValue(i) => Some(*i),
        _ => None,
    }
}

pub fn bool_attr(attrs: &[KeyValue], key: &str) -> Option<bool> {
    match attr(attrs, key)? {
        any_value::Value::BoolValue(b) => Some(*b),
        _ => None,
    }
}

pub fn double_attr(attrs: &[KeyValue], key: &str) -> Option<f64> {
    match attr(attrs, key)? {
        any_value::Value::DoubleValue(d) => Some(*d),
        _ => None,
    }
}

pub fn strings_attr(attrs: &[KeyValue], key: &str) -> Option<Vec<String>> {
    match attr(attrs, key)? {
        any_value::Value::ArrayValue(a) => Some(
            a.values
                .iter()
                .filter_map(|v: &AnyValue| match &v.value {
                    Some(any_value::Value::StringValue(s)) => Some(s.clone()),
                    _ => None,
                })
                .collect(),
        ),
        _ => None,
    }
}

/// The attribute keys of a span, sorted.
pub fn keys(span: &Span) -> Vec<String> {
    let mut k: Vec<String> = span.attributes.iter().map(|a| a.key.clone()).collect();
    k.sort();
    k
}

/// The span tree as indented lines `name (kind)`, children in start order.
pub fn tree(spans: &[Span]) -> Vec<String> {
    fn walk(spans: &[Span], parent: &[u8], depth: usize, out: &mut Vec<String>) {
        let mut kids: Vec<&Span> = spans
            .iter()
            .filter(|s| s.parent_span_id == parent)
            .collect();
        kids.sort_by_key(|s| (s.start_time_unix_nano, s.end_time_unix_nano));
        for k in kids {
            let kind = match k.kind {
                1 => "INTERNAL",
                2 => "SERVER",
                3 => "CLIENT",
                _ => "OTHER",
            };
            out.push(format!("{}{} ({kind})", "  ".repeat(depth), k.name));
            walk(spans, &k.span_id, depth + 1, out);
        }
    }
    let mut out = Vec::new();
    walk(spans, &[], 0, &mut out);
    out
}
