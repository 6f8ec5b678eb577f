//! The HTTP API (`docs/http-api.md`).

// Handler helpers return a ready `Response` as their error; it is moved once, never stored.
#![allow(clippy::result_large_err)]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use graphmind_protocol::control::{
    ApiError, ForgetRequest, Principal, RememberedList, ResumeRequest,
};
use graphmind_protocol::{BreakpointMatcher, Mode, ResumeAction};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::security::{bearer, is_json};
use super::state::breakpoint_bounds::Refusal;
use super::state::{HubState, MAX_BREAKPOINTS, Need, Outcome};

/// The API routes (and `/health`).
pub fn routes() -> Router<Arc<HubState>> {
    Router::new()
        .route("/health", get(health))
        .route("/api/runs", get(runs))
        .route("/api/runs/{run_id}", get(run))
        .route("/api/runs/{run_id}/events", get(events))
        .route("/api/pauses", get(pauses))
        .route("/api/runs/{run_id}/pauses/{pause_id}", get(pause))
        .route("/api/runs/{run_id}/pauses/{pause_id}/resume", post(resume))
        .route("/api/runs/{run_id}/remembered", get(remembered))
        .route("/api/runs/{run_id}/remembered/clear", post(forget))
        .route("/api/debug", get(debug).post(debug_replace))
        .route("/api/debug/breakpoints/set", post(breakpoint_set))
        .route("/api/debug/breakpoints/clear", post(breakpoint_clear))
        .route("/api/debug/mode", post(mode_set))
}

fn error(status: StatusCode, msg: impl Into<String>) -> Response {
    (status, axum::Json(ApiError::new(msg))).into_response()
}

/// A read's preamble, as an extractor: reads expose every tool input and output, so they
/// take the viewer or the agent token (`401` otherwise).
struct Reader;

impl FromRequestParts<Arc<HubState>> for Reader {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        hub: &Arc<HubState>,
    ) -> Result<Self, Self::Rejection> {
        hub.authorize_reader(bearer(&parts.headers))
            .map(|()| Reader)
            .map_err(|o| error(StatusCode::UNAUTHORIZED, o.message().unwrap_or_default()))
    }
}

/// A debug mutation's preamble, as an extractor: `Content-Type: application/json` first (a
/// cross-site form cannot send JSON, `415`), then the agent token with the right to debug
/// (`401` / `403`), then the body, a JSON object (`400`), read as `T`.
struct Debugging<T = Map<String, Value>>(T);

impl<T: DeserializeOwned> FromRequest<Arc<HubState>> for Debugging<T> {
    type Rejection = Response;

    async fn from_request(req: Request, hub: &Arc<HubState>) -> Result<Self, Self::Rejection> {
        gate(hub, req.headers(), Need::Debug)?;
        let body = read_body(req, hub).await?;
        let object = body_json(&body)?;
        serde_json::from_value(Value::Object(object))
            .map(Debugging)
            .map_err(|e| error(StatusCode::BAD_REQUEST, format!("bad request: {e}")))
    }
}

/// Reads a request's body (the token was checked from the headers first): at most
/// [`crate::MAX_BODY_BYTES`] (`413`), within the hub's body timeout (`408`), so a client that
/// trickles its body cannot hold a connection.
async fn read_body(req: Request, hub: &Arc<HubState>) -> Result<Bytes, Response> {
    let limit = hub.cfg.body_timeout;
    match tokio::time::timeout(limit, Bytes::from_request(req, hub)).await {
        Ok(read) => read.map_err(IntoResponse::into_response),
        Err(_) => {
            let mut r = error(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within {} ms",
                    limit.as_millis()
                ),
            );
            r.headers_mut().insert(
                header::CONNECTION,
                header::HeaderValue::from_static("close"),
            );
            Err(r)
        }
    }
}

async fn health(State(hub): State<Arc<HubState>>) -> Response {
    axum::Json(hub.health()).into_response()
}

#[derive(Deserialize)]
struct LimitQuery {
    limit: Option<usize>,
}

async fn runs(
    State(hub): State<Arc<HubState>>,
    _: Reader,
    Query(q): Query<LimitQuery>,
) -> Response {
    let limit = q.limit.unwrap_or(200).min(1000);
    // Runs evicted from memory are listed from storage.
    let stored = match hub.stored_runs(limit).await {
        Ok(s) => s,
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e),
    };
    axum::Json(json!({"runs": hub.runs(limit, &stored)})).into_response()
}

async fn run(State(hub): State<Arc<HubState>>, _: Reader, Path(run_id): Path<String>) -> Response {
    match hub.run_anywhere(&run_id).await {
        Ok(Some(r)) => axum::Json(r).into_response(),
        Ok(None) => error(StatusCode::NOT_FOUND, format!("no run {run_id}")),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EventsQuery {
    after_seq: Option<u64>,
    limit: Option<usize>,
    /// Envelopes without `gm` and `runId` (the page names the run once; [`crate::lean`]).
    #[serde(default)]
    lean: bool,
}

/// Bytes of event bodies in one events page at most (a single larger event still comes, alone):
/// past it the page ends early with `more` and `nextAfterSeq`.
pub const PAGE_BYTES: usize = 8 * 1024 * 1024;
/// How long an events page waits for a read permit before it is answered `503`.
const READ_WAIT: Duration = Duration::from_secs(5);
/// Size of the pieces an events page is handed to the connection in.
const BODY_CHUNK: usize = 64 * 1024;

async fn events(
    State(hub): State<Arc<HubState>>,
    _: Reader,
    Path(run_id): Path<String>,
    Query(q): Query<EventsQuery>,
) -> Response {
    // `total`, as the reference names it: the run's stored events, whatever the page.
    let total = match hub.run_anywhere(&run_id).await {
        Ok(Some(r)) => r.get("eventCount").and_then(Value::as_u64).unwrap_or(0),
        Ok(None) => return error(StatusCode::NOT_FOUND, format!("no run {run_id}")),
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e),
    };
    let limit = q.limit.unwrap_or(1000).clamp(1, 10_000);
    // The permit is held until the page has been handed over to the connection in full, so
    // the pages in memory at once are bounded however slowly their clients read.
    let Ok(Ok(permit)) =
        tokio::time::timeout(READ_WAIT, Arc::clone(&hub.reads).acquire_owned()).await
    else {
        hub.stats.reads_busy.fetch_add(1, Ordering::Relaxed);
        let mut r = error(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many event reads at once: retry shortly",
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        return r;
    };
    hub.writer.barrier().await;
    let reader = Arc::clone(&hub.reader);
    let rid = run_id;
    let after = q.after_seq;
    let lean = q.lean;
    // The page is read straight into the body (no copy per event).
    let read = move || {
        let mut body = String::with_capacity(limit.saturating_mul(256).min(PAGE_BYTES) + 128);
        body.push_str(r#"{"runId":"#);
        body.push_str(&Value::from(rid.as_str()).to_string());
        body.push_str(&format!(r#","total":{total},"events":["#));
        let (seqs, more) =
            reader.append_events_within(&rid, after, limit, PAGE_BYTES, lean, &mut body)?;
        let next = if more { seqs.last().copied() } else { None };
        body.push_str(&format!(
            r#"],"more":{more},"nextAfterSeq":{}}}"#,
            next.map_or_else(|| "null".to_owned(), |n| n.to_string())
        ));
        Ok::<_, String>((body, next))
    };
    let (body, next) = match tokio::task::spawn_blocking(read).await {
        Ok(Ok(read)) => read,
        Ok(Err(e)) => return error(StatusCode::INTERNAL_SERVER_ERROR, e),
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let len = body.len();
    let chunks = futures_util::stream::unfold(
        (Bytes::from(body), Some(permit)),
        |(mut rest, mut permit)| async move {
            if rest.is_empty() {
                drop(permit.take());
                return None;
            }
            let chunk = rest.split_to(rest.len().min(BODY_CHUNK));
            Some((Ok::<_, std::convert::Infallible>(chunk), (rest, permit)))
        },
    );
    let mut r = (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json".to_owned()),
            (header::CONTENT_LENGTH, len.to_string()),
        ],
        axum::body::Body::from_stream(chunks),
    )
        .into_response();
    // `nextAfterSeq` before the body: a reader can ask for the next page while this one is
    // still arriving (the viewer does).
    if let Some(n) = next {
        r.headers_mut()
            .insert(NEXT_AFTER_SEQ, header::HeaderValue::from(n));
    }
    r
}

/// The header that repeats the body's `nextAfterSeq` (absent on the last page).
const NEXT_AFTER_SEQ: header::HeaderName =
    header::HeaderName::from_static("x-graphmind-next-after-seq");

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PausesQuery {
    run_id: Option<String>,
    wait: Option<f64>,
}

async fn pauses(
    State(hub): State<Arc<HubState>>,
    _: Reader,
    Query(q): Query<PausesQuery>,
) -> Response {
    let list = match q.wait.filter(|w| w.is_finite() && *w > 0.0) {
        Some(w) => {
            hub.wait_pauses(q.run_id.as_deref(), Duration::from_secs_f64(w.min(600.0)))
                .await
        }
        None => hub.pauses(q.run_id.as_deref()),
    };
    axum::Json(json!({"pauses": list})).into_response()
}

async fn pause(
    State(hub): State<Arc<HubState>>,
    _: Reader,
    Path((run_id, pause_id)): Path<(String, String)>,
) -> Response {
    match hub.pause(&run_id, &pause_id) {
        Some(p) => axum::Json(with_reference_pause(p)).into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            format!("no pause {pause_id} in run {run_id}"),
        ),
    }
}

/// A pause's details with the reference's shape beside ours: `pause` holds them again, with
/// the held node's `kind`, `name`, `instanceId`, `input`, `output` and `error` under `node`
/// (GraphMind 0.6 clients read `pause.node.input`).
fn with_reference_pause(mut p: Value) -> Value {
    let Some(fields) = p.as_object() else {
        return p;
    };
    let mut node = Map::new();
    for k in ["kind", "name", "instanceId", "input", "output", "error"] {
        if let Some(v) = fields.get(k).filter(|v| !v.is_null()) {
            node.insert(k.to_owned(), v.clone());
        }
    }
    let mut nested = fields.clone();
    nested.insert("node".to_owned(), Value::Object(node));
    if let Some(m) = p.as_object_mut() {
        m.insert("pause".to_owned(), Value::Object(nested));
    }
    p
}

/// The status of a resume outcome.
fn outcome_status(o: &Outcome) -> StatusCode {
    match o {
        Outcome::Resumed { .. } => StatusCode::OK,
        Outcome::Sent => StatusCode::ACCEPTED,
        Outcome::Refused { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        Outcome::Taken(_) => StatusCode::CONFLICT,
        Outcome::Gone(_) => StatusCode::GONE,
        Outcome::Invalid(_) => StatusCode::BAD_REQUEST,
        Outcome::Unauthorized(_) => StatusCode::UNAUTHORIZED,
        Outcome::Forbidden(_) => StatusCode::FORBIDDEN,
    }
}

fn outcome_response(
    run_id: &str,
    pause_id: &str,
    o: &Outcome,
    request_id: Option<String>,
) -> Response {
    (
        outcome_status(o),
        axum::Json(o.answer(run_id, pause_id, request_id)),
    )
        .into_response()
}

/// Content type first (a cross-site form cannot send JSON), then the token.
fn gate(hub: &HubState, headers: &HeaderMap, need: Need) -> Result<(), Response> {
    if !is_json(headers) {
        return Err(error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "mutations take Content-Type: application/json",
        ));
    }
    hub.authorize_agent(bearer(headers), need).map_err(|o| {
        let status = if matches!(o, Outcome::Forbidden(_)) {
            StatusCode::FORBIDDEN
        } else {
            StatusCode::UNAUTHORIZED
        };
        error(status, o.message().unwrap_or_default())
    })
}

fn body_json(body: &Bytes) -> Result<Map<String, Value>, Response> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err(error(
            StatusCode::BAD_REQUEST,
            "the body must be a JSON object",
        )),
        Err(e) => Err(error(
            StatusCode::BAD_REQUEST,
            format!("the body is not JSON: {e}"),
        )),
    }
}

async fn resume(
    State(hub): State<Arc<HubState>>,
    Path((run_id, pause_id)): Path<(String, String)>,
    req: Request,
) -> Response {
    let fail = |o: Outcome| outcome_response(&run_id, &pause_id, &o, None);
    let headers = req.headers().clone();
    if !is_json(&headers) {
        let mut r = fail(Outcome::Invalid(
            "mutations take Content-Type: application/json".into(),
        ));
        *r.status_mut() = StatusCode::UNSUPPORTED_MEDIA_TYPE;
        return r;
    }
    // Token validity first, from the headers: a caller without a token learns nothing else,
    // and none of its body is read.
    if let Err(o) = hub.authorize_agent(bearer(&headers), Need::Token) {
        return fail(o);
    }
    let body = match read_body(req, &hub).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let req = match serde_json::from_slice::<Value>(&body) {
        Ok(v @ Value::Object(_)) => match serde_json::from_value::<ResumeRequest>(v) {
            Ok(r) => r,
            Err(e) => return fail(Outcome::Invalid(format!("bad resume request: {e}"))),
        },
        _ => return fail(Outcome::Invalid("the body must be a JSON object".into())),
    };
    let Some(action) = ResumeAction::from_str(&req.action) else {
        return fail(Outcome::Invalid(
            "action must be continue, retry, inject, abort or reject".into(),
        ));
    };
    if let Err(o) = hub.authorize_agent(bearer(&headers), Need::Resume(action)) {
        return fail(o);
    }
    if req.input.is_some()
        && let Err(o) = hub.authorize_agent(bearer(&headers), Need::Edit)
    {
        return fail(o);
    }
    let (o, request_id) = hub.resume(&run_id, &pause_id, req, Principal::Agent).await;
    outcome_response(&run_id, &pause_id, &o, request_id)
}

async fn remembered(
    State(hub): State<Arc<HubState>>,
    _: Reader,
    Path(run_id): Path<String>,
) -> Response {
    axum::Json(RememberedList {
        remembered: hub.remembered(Some(&run_id)),
    })
    .into_response()
}

async fn forget(
    State(hub): State<Arc<HubState>>,
    Path(run_id): Path<String>,
    Debugging(which): Debugging<ForgetRequest>,
) -> Response {
    hub.forget(&run_id, &which);
    axum::Json(RememberedList {
        remembered: hub.remembered(Some(&run_id)),
    })
    .into_response()
}

async fn debug(State(hub): State<Arc<HubState>>) -> Response {
    axum::Json(hub.debug_json()).into_response()
}

fn matcher_of(v: Option<&Value>) -> Result<BreakpointMatcher, Response> {
    let Some(v) = v else {
        return Err(error(StatusCode::BAD_REQUEST, "needs a matcher"));
    };
    serde_json::from_value(v.clone())
        .map_err(|e| error(StatusCode::BAD_REQUEST, format!("bad matcher: {e}")))
}

async fn debug_replace(State(hub): State<Arc<HubState>>, Debugging(body): Debugging) -> Response {
    let bps = match body.get("breakpoints") {
        None => None,
        Some(v) => match serde_json::from_value::<Vec<BreakpointMatcher>>(v.clone()) {
            Ok(b) => Some(b),
            Err(e) => return error(StatusCode::BAD_REQUEST, format!("bad breakpoints: {e}")),
        },
    };
    let mode = match body.get("mode") {
        None => None,
        Some(v) => match v.as_str().and_then(Mode::from_str) {
            Some(m) => Some(m),
            None => return error(StatusCode::BAD_REQUEST, "mode must be run or step"),
        },
    };
    match hub.replace_debug(bps, mode) {
        Ok(d) => axum::Json(d).into_response(),
        Err(e) => breakpoint_refused(e),
    }
}

/// A refused breakpoint: `409 Conflict` when the list is full (the answer names the cap in
/// `maxBreakpoints`), `413 Payload Too Large` when a matcher or the list is over its byte
/// limit (the message names it).
fn breakpoint_refused(r: Refusal) -> Response {
    match r {
        Refusal::TooMany => (
            StatusCode::CONFLICT,
            axum::Json(ApiError {
                max_breakpoints: Some(MAX_BREAKPOINTS),
                ..ApiError::new(r.message())
            }),
        )
            .into_response(),
        Refusal::TooLarge(m) => error(StatusCode::PAYLOAD_TOO_LARGE, m),
    }
}

async fn breakpoint_set(State(hub): State<Arc<HubState>>, Debugging(body): Debugging) -> Response {
    match matcher_of(body.get("matcher")) {
        Ok(m) => match hub.set_breakpoint(m) {
            Ok(d) => axum::Json(d).into_response(),
            Err(e) => breakpoint_refused(e),
        },
        Err(r) => r,
    }
}

async fn breakpoint_clear(
    State(hub): State<Arc<HubState>>,
    Debugging(body): Debugging,
) -> Response {
    if body.get("all").and_then(Value::as_bool) == Some(true) {
        return axum::Json(hub.clear_breakpoints(None)).into_response();
    }
    match matcher_of(body.get("matcher")) {
        Ok(m) => axum::Json(hub.clear_breakpoints(Some(m))).into_response(),
        Err(r) => r,
    }
}

async fn mode_set(State(hub): State<Arc<HubState>>, Debugging(body): Debugging) -> Response {
    match body
        .get("mode")
        .and_then(Value::as_str)
        .and_then(Mode::from_str)
    {
        Some(m) => axum::Json(hub.set_mode(m)).into_response(),
        None => error(StatusCode::BAD_REQUEST, "mode must be run or step"),
    }
}
