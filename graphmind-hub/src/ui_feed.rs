//! `/ws/ui`: the viewer's live feed (`docs/dev/ui-feed.md`): the run list, a replay of the
//! subscribed run followed by its live tail, the debug state, open pauses, and control frames
//! in (checked against the viewer token).

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use graphmind_protocol::control::{
    ControlResult, ForgetRequest, Principal, ResumeAnswer, ResumeRequest,
};
use graphmind_protocol::feed::FeedFrame;
use graphmind_protocol::{BreakpointMatcher, Mode};
use serde_json::Value;
use tokio::sync::mpsc;

use super::ingest::is_capacity_error;
use super::state::{HELLO_RUNS, HubState, Outcome, VIEWER_QUEUE, ViewerOut, ViewerQueue};

/// Largest frame a viewer may send.
pub const MAX_VIEWER_FRAME: usize = 1024 * 1024;
/// Events per replay frame at most.
const REPLAY_PAGE: usize = 1000;
/// Live events batched into one frame at most.
const LIVE_BATCH: usize = 512;
/// Bytes of event bodies in one `events` frame at most (replay or live; a single larger
/// event still goes out, alone): what one frame in flight to a viewer costs.
pub const FRAME_BYTES: usize = 4 * 1024 * 1024;
/// How long a viewer may take to accept one frame before it is closed: a viewer that stopped
/// reading holds at most one frame, and at most this long.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);

type Sink = SplitSink<WebSocket, WsMessage>;

/// Upgrades to the viewer feed.
pub async fn handler(ws: WebSocketUpgrade, State(hub): State<Arc<HubState>>) -> Response {
    ws.max_message_size(MAX_VIEWER_FRAME)
        .max_frame_size(MAX_VIEWER_FRAME)
        .on_upgrade(move |socket| serve_viewer(hub, socket))
}

struct Sub {
    run: Arc<str>,
    replayed: HashSet<u64>,
}

/// Sends one frame; `false` when the socket is gone or did not take it within
/// [`SEND_TIMEOUT`].
async fn send(sink: &mut Sink, text: String) -> bool {
    matches!(
        tokio::time::timeout(SEND_TIMEOUT, sink.send(WsMessage::Text(text.into()))).await,
        Ok(Ok(()))
    )
}

fn events_frame(run: &str, bodies: &[Arc<str>], replay: bool) -> String {
    let mut s = String::with_capacity(64 + bodies.iter().map(|b| b.len() + 1).sum::<usize>());
    s.push_str(r#"{"type":"events","runId":"#);
    s.push_str(&Value::from(run).to_string());
    s.push_str(r#","events":["#);
    for (i, b) in bodies.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(b);
    }
    s.push_str(r#"],"replay":"#);
    s.push_str(if replay { "true" } else { "false" });
    s.push('}');
    s
}

/// Why a viewer socket was not let in.
enum Denied {
    /// No auth frame in time.
    Timeout,
    /// A first frame without a valid token.
    Rejected(String),
    /// The socket went away.
    Gone,
}

/// Waits for the viewer's first frame, `{"type":"auth","token":…}` with the viewer or the
/// agent token, within the handshake budget. The token is not taken from the URL: query
/// strings end up in logs and browser history.
async fn authenticate(hub: &HubState, stream: &mut SplitStream<WebSocket>) -> Result<(), Denied> {
    let deadline = tokio::time::Instant::now() + hub.cfg.ui_auth_timeout;
    loop {
        let text = match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => return Err(Denied::Timeout),
            Ok(Some(Ok(WsMessage::Text(t)))) => t,
            Ok(Some(Ok(WsMessage::Ping(_) | WsMessage::Pong(_)))) => continue,
            Ok(Some(Ok(WsMessage::Binary(_)))) => {
                return Err(Denied::Rejected(
                    "the first frame must be {\"type\":\"auth\",\"token\":…}".into(),
                ));
            }
            Ok(_) => return Err(Denied::Gone),
        };
        let frame = serde_json::from_str::<Value>(text.as_str()).unwrap_or(Value::Null);
        if frame.get("type").and_then(Value::as_str) != Some("auth") {
            return Err(Denied::Rejected(
                "the first frame must be {\"type\":\"auth\",\"token\":…}".into(),
            ));
        }
        return hub
            .authorize_reader(frame.get("token").and_then(Value::as_str))
            .map_err(|o| Denied::Rejected(o.message().unwrap_or_default()));
    }
}

async fn serve_viewer(hub: Arc<HubState>, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    if let Err(d) = authenticate(&hub, &mut stream).await {
        let reason = match d {
            Denied::Gone => return,
            Denied::Timeout => {
                hub.stats.ui_auth_timeouts.fetch_add(1, Ordering::Relaxed);
                format!(
                    "no auth frame within {} ms",
                    hub.cfg.ui_auth_timeout.as_millis()
                )
            }
            Denied::Rejected(why) => {
                hub.stats.ui_auth_rejected.fetch_add(1, Ordering::Relaxed);
                let _ = send(
                    &mut sink,
                    FeedFrame::Unauthorized {
                        message: why.clone(),
                    }
                    .to_text(),
                )
                .await;
                why
            }
        };
        // A close reason is at most 123 bytes.
        let mut reason = reason;
        while reason.len() > 123 {
            reason.pop();
        }
        let _ = sink
            .send(WsMessage::Close(Some(CloseFrame {
                code: 1008,
                reason: reason.into(),
            })))
            .await;
        let _ = sink.close().await;
        return;
    }
    let (tx, rx) = mpsc::channel(VIEWER_QUEUE);
    let queue = Arc::new(ViewerQueue::default());
    // Runs evicted from memory are listed from storage.
    let stored = hub.stored_runs(HELLO_RUNS).await.unwrap_or_default();
    let (id, hello) = hub.viewer_connected(tx, Arc::clone(&queue), &stored);
    let slow = if send(&mut sink, hello).await {
        // The hub's close signal wins over a send stuck on a socket nobody reads: the session
        // (and with it the frame in flight and everything queued) is dropped.
        tokio::select! {
            done = session(&hub, id, &queue, &mut sink, stream, rx) => !done || queue.is_closed(),
            () = queue.closed() => true,
        }
    } else {
        false
    };
    hub.viewer_disconnected(id);
    if slow {
        hub.stats
            .viewers_closed_slow
            .fetch_add(1, Ordering::Relaxed);
        // No closing handshake with a viewer that does not read: dropping the socket closes it.
        return;
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), sink.close()).await;
}

/// Serves one viewer until it leaves (`true`) or fails to take a frame in time (`false`).
async fn session(
    hub: &Arc<HubState>,
    id: u64,
    queue: &ViewerQueue,
    sink: &mut Sink,
    mut stream: SplitStream<WebSocket>,
    mut rx: mpsc::Receiver<ViewerOut>,
) -> bool {
    let (res_tx, mut res_rx) = mpsc::unbounded_channel::<String>();
    let mut sub: Option<Sub> = None;
    loop {
        tokio::select! {
            incoming = stream.next() => {
                let text = match incoming {
                    Some(Ok(WsMessage::Text(t))) => t,
                    Some(Ok(WsMessage::Close(_))) | None => return true,
                    Some(Ok(_)) => continue,
                    Some(Err(e)) => {
                        if is_capacity_error(&e) {
                            let _ = sink.send(WsMessage::Close(Some(CloseFrame {
                                code: 1009,
                                reason: "frame too large: the limit is 1 MiB".into(),
                            }))).await;
                        }
                        return true;
                    }
                };
                if !control(hub, id, text.as_str(), &mut sub, sink, &res_tx).await {
                    return false;
                }
            }
            out = rx.recv() => {
                let Some(first) = out else { return true }; // dropped by the hub
                queue.taken(&first);
                let mut items = vec![first];
                while items.len() < LIVE_BATCH {
                    match rx.try_recv() {
                        Ok(x) => {
                            queue.taken(&x);
                            items.push(x);
                        }
                        Err(_) => break,
                    }
                }
                if !forward(sink, &mut sub, items).await {
                    return false;
                }
            }
            Some(r) = res_rx.recv() => {
                if !send(sink, r).await {
                    return false;
                }
            }
        }
    }
}

async fn forward(sink: &mut Sink, sub: &mut Option<Sub>, items: Vec<ViewerOut>) -> bool {
    let mut batch: Vec<Arc<str>> = Vec::new();
    let mut bytes = 0;
    for item in items {
        match item {
            ViewerOut::Frame(f) => {
                if !flush(sink, sub.as_ref(), &mut batch, &mut bytes).await
                    || !send(sink, f.to_string()).await
                {
                    return false;
                }
            }
            ViewerOut::Removed { frame, runs } => {
                if !flush(sink, sub.as_ref(), &mut batch, &mut bytes).await
                    || !send(sink, frame.to_string()).await
                {
                    return false;
                }
                // The hub ended the subscription already; nothing more of it is forwarded.
                if sub.as_ref().is_some_and(|s| runs.contains(&*s.run)) {
                    *sub = None;
                }
            }
            ViewerOut::Event { run_id, seq, body } => {
                if let Some(s) = sub.as_mut()
                    && s.run == run_id
                    && !s.replayed.contains(&seq)
                {
                    if !batch.is_empty()
                        && bytes + body.len() > FRAME_BYTES
                        && !flush(sink, sub.as_ref(), &mut batch, &mut bytes).await
                    {
                        return false;
                    }
                    bytes += body.len();
                    batch.push(body);
                }
            }
        }
    }
    flush(sink, sub.as_ref(), &mut batch, &mut bytes).await
}

/// Sends the live events batched so far (of the subscribed run).
async fn flush(
    sink: &mut Sink,
    sub: Option<&Sub>,
    batch: &mut Vec<Arc<str>>,
    bytes: &mut usize,
) -> bool {
    *bytes = 0;
    match sub {
        Some(s) if !batch.is_empty() => {
            let frame = events_frame(&s.run, batch, false);
            batch.clear();
            send(sink, frame).await
        }
        _ => {
            batch.clear();
            true
        }
    }
}

/// One replay page, read as a whole `events` frame, with the permit it was read under.
struct Page {
    frame: String,
    seqs: Vec<u64>,
    more: bool,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

/// Reads the page of `run` after `after` (under one of the hub's read permits) into a replay
/// frame; `None` when the hub is closing. A failed read is an empty last page.
fn read_page(
    hub: &Arc<HubState>,
    run: &Arc<str>,
    after: Option<u64>,
) -> tokio::task::JoinHandle<Option<Page>> {
    let reads = Arc::clone(&hub.reads);
    let reader = Arc::clone(&hub.reader);
    let run = Arc::clone(run);
    tokio::spawn(async move {
        let permit = reads.acquire_owned().await.ok()?;
        tokio::task::spawn_blocking(move || {
            let mut frame = String::with_capacity(FRAME_PAGE_CAPACITY);
            frame.push_str(r#"{"type":"events","runId":"#);
            frame.push_str(&Value::from(&*run).to_string());
            frame.push_str(r#","events":["#);
            let (seqs, more) = reader
                .append_events_within(&run, after, REPLAY_PAGE, FRAME_BYTES, false, &mut frame)
                .unwrap_or_default();
            frame.push_str(r#"],"replay":true}"#);
            Page {
                frame,
                seqs,
                more,
                _permit: permit,
            }
        })
        .await
        .ok()
    })
}

/// What a replay frame of small events takes: allocated once per page.
const FRAME_PAGE_CAPACITY: usize = 256 * 1024;

/// Sends the stored events of `run` (those after seq `after`, when given), in frames of at
/// most [`REPLAY_PAGE`] events and about
/// [`FRAME_BYTES`], then `replayed`. Each page is read (straight into its frame) and sent
/// under one of the hub's read permits, so pages in memory at once are bounded across all
/// viewers; the next page is read while one is sent (two permits of a viewer at most).
/// `None` when the socket is gone (or too slow).
async fn replay(
    hub: &Arc<HubState>,
    run: &Arc<str>,
    after: Option<u64>,
    sink: &mut Sink,
) -> Option<HashSet<u64>> {
    hub.writer.barrier().await;
    let mut seen = HashSet::new();
    let mut next = Some(read_page(hub, run, after));
    while let Some(pending) = next.take() {
        let Some(page) = pending.await.ok().flatten() else {
            break;
        };
        let Some(&last) = page.seqs.last() else { break };
        if page.more {
            next = Some(read_page(hub, run, Some(last)));
        }
        seen.extend(page.seqs.iter().copied());
        let sent = send(sink, page.frame).await;
        if !sent {
            if let Some(n) = next {
                n.abort();
            }
            return None;
        }
    }
    let done = FeedFrame::Replayed {
        run_id: run.to_string(),
    };
    if !send(sink, done.to_text()).await {
        return None;
    }
    Some(seen)
}

fn result(request_id: &Value, outcome: &Outcome) -> String {
    control_result(request_id, outcome, None)
}

/// The `result` frame of a control frame; `resume`: the answer of a resume request.
fn control_result(request_id: &Value, outcome: &Outcome, resume: Option<ResumeAnswer>) -> String {
    let frame = ControlResult {
        kind: "result".into(),
        request_id: request_id.clone(),
        ok: outcome.ok(),
        outcome: outcome.name().to_owned(),
        message: outcome.message(),
        code: match outcome {
            Outcome::Refused { code, .. } => Some(code.clone()),
            _ => None,
        },
        action: match outcome {
            Outcome::Resumed { action, .. } => Some(action.clone()),
            _ => None,
        },
        resume,
        debug: None,
    };
    serde_json::to_string(&frame).unwrap_or_default()
}

fn ok_result(request_id: &Value, debug: Value) -> String {
    let frame = ControlResult {
        kind: "result".into(),
        request_id: request_id.clone(),
        ok: true,
        outcome: "ok".into(),
        message: None,
        code: None,
        action: None,
        resume: None,
        debug: Some(debug),
    };
    serde_json::to_string(&frame).unwrap_or_default()
}

/// Handles one frame from the viewer. Returns false when the socket is gone.
async fn control(
    hub: &Arc<HubState>,
    id: u64,
    text: &str,
    sub: &mut Option<Sub>,
    sink: &mut Sink,
    res_tx: &mpsc::UnboundedSender<String>,
) -> bool {
    let Ok(Value::Object(frame)) = serde_json::from_str::<Value>(text) else {
        return send(
            sink,
            result(&Value::Null, &Outcome::Invalid("not a JSON object".into())),
        )
        .await;
    };
    let request_id = frame.get("requestId").cloned().unwrap_or(Value::Null);
    let kind = frame.get("type").and_then(Value::as_str).unwrap_or("");
    let str_field = |k: &str| frame.get(k).and_then(Value::as_str);
    match kind {
        "subscribe" => {
            let Some(run) = str_field("runId") else {
                return send(
                    sink,
                    result(
                        &request_id,
                        &Outcome::Invalid("subscribe needs runId".into()),
                    ),
                )
                .await;
            };
            let run: Arc<str> = Arc::from(run);
            hub.viewer_subscribe(id, Some(Arc::clone(&run)));
            // The run as listed first: a deep link may name a run older than the `hello`'s
            // list (or one no longer in memory), which the viewer then lists too.
            if let Ok(Some(summary)) = hub.run_anywhere(&run).await
                && !send(
                    sink,
                    serde_json::json!({"type": "run", "run": summary}).to_string(),
                )
                .await
            {
                return false;
            }
            // Live events queue up in the channel while the replay is sent; the seqs of the
            // replay filter out the overlap.
            *sub = None;
            // `afterSeq`: the viewer has the stored events up to it already (read over
            // `GET /api/runs/{runId}/events`); only later ones are replayed.
            let after = frame.get("afterSeq").and_then(Value::as_u64);
            match replay(hub, &run, after, sink).await {
                Some(replayed) => {
                    *sub = Some(Sub { run, replayed });
                    true
                }
                None => false,
            }
        }
        "unsubscribe" => {
            hub.viewer_subscribe(id, None);
            *sub = None;
            true
        }
        "resume" | "remember.clear" | "breakpoint.set" | "breakpoint.clear" | "mode.set" => {
            if let Err(o) = hub.authorize_viewer(str_field("token")) {
                return send(sink, result(&request_id, &o)).await;
            }
            let answer = match kind {
                "resume" => {
                    let (Some(run), Some(pause)) = (str_field("runId"), str_field("pauseId"))
                    else {
                        return send(
                            sink,
                            result(
                                &request_id,
                                &Outcome::Invalid("resume needs runId and pauseId".into()),
                            ),
                        )
                        .await;
                    };
                    let req =
                        match serde_json::from_value::<ResumeRequest>(Value::Object(frame.clone()))
                        {
                            Ok(r) => r,
                            Err(e) => {
                                return send(
                                    sink,
                                    result(
                                        &request_id,
                                        &Outcome::Invalid(format!("bad resume request: {e}")),
                                    ),
                                )
                                .await;
                            }
                        };
                    let (hub, run, pause, tx) = (
                        Arc::clone(hub),
                        run.to_owned(),
                        pause.to_owned(),
                        res_tx.clone(),
                    );
                    tokio::spawn(async move {
                        let (o, sent_as) = hub.resume(&run, &pause, req, Principal::Viewer).await;
                        let answer = o.answer(&run, &pause, sent_as);
                        let _ = tx.send(control_result(&request_id, &o, Some(answer)));
                    });
                    return true;
                }
                "remember.clear" => {
                    let Some(run) = str_field("runId") else {
                        return send(
                            sink,
                            result(
                                &request_id,
                                &Outcome::Invalid("remember.clear needs runId".into()),
                            ),
                        )
                        .await;
                    };
                    match serde_json::from_value::<ForgetRequest>(Value::Object(frame.clone())) {
                        Ok(which) => {
                            hub.forget(run, &which);
                            ok_result(
                                &request_id,
                                serde_json::to_value(hub.remembered(None)).unwrap_or_default(),
                            )
                        }
                        Err(e) => result(
                            &request_id,
                            &Outcome::Invalid(format!("bad remember.clear: {e}")),
                        ),
                    }
                }
                "mode.set" => match str_field("mode").and_then(Mode::from_str) {
                    Some(m) => ok_result(&request_id, hub.set_mode(m)),
                    None => result(
                        &request_id,
                        &Outcome::Invalid("mode must be run or step".into()),
                    ),
                },
                _ => {
                    let all = frame.get("all").and_then(Value::as_bool) == Some(true);
                    let matcher = frame
                        .get("matcher")
                        .cloned()
                        .map(serde_json::from_value::<BreakpointMatcher>);
                    match (kind, matcher) {
                        ("breakpoint.clear", None) if all => {
                            ok_result(&request_id, hub.clear_breakpoints(None))
                        }
                        ("breakpoint.set", Some(Ok(m))) => match hub.set_breakpoint(m) {
                            Ok(d) => ok_result(&request_id, d),
                            Err(e) => result(&request_id, &Outcome::Invalid(e.message())),
                        },
                        ("breakpoint.clear", Some(Ok(m))) => {
                            ok_result(&request_id, hub.clear_breakpoints(Some(m)))
                        }
                        (_, Some(Err(e))) => {
                            result(&request_id, &Outcome::Invalid(format!("bad matcher: {e}")))
                        }
                        _ => result(&request_id, &Outcome::Invalid("needs a matcher".into())),
                    }
                }
            };
            send(sink, answer).await
        }
        _ => {
            send(
                sink,
                result(
                    &request_id,
                    &Outcome::Invalid(format!("unknown frame type {kind:?}")),
                ),
            )
            .await
        }
    }
}
