//! `/ingest`: the apps' WebSocket. Handshake, then every frame is parsed, shrunk if its
//! payload is over budget, deduped and stored; bad frames are counted and ignored.
//!
//! An app whose `hello` lists the `hub-ack` capability gets `hub.ack {"upTo": seq}` frames:
//! every frame it sent up to `seq` was handled — stored and committed to SQLite, or a
//! duplicate of a stored one, or refused and counted — so its replay ring may stop keeping
//! it for this hub. Acks are sent after the commit and batched: one per writer barrier.

use std::sync::atomic::AtomicU64;
use tokio::sync::Notify;

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message as WsMessage, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures_util::{FutureExt, SinkExt, StreamExt};
use graphmind_protocol::hub_auth::{self, ChannelKey};
use graphmind_protocol::{Envelope, Message, PAYLOAD_BUDGET, Parsed, parse, shrink_payload};
use serde_json::Value;
use tokio::sync::mpsc;

use super::quick_parse::Spans;
use super::state::{AppOut, HubState, Incoming, Load, MAX_RUN_ID_CHARS, Pending};
use super::tokens::{Token, random_id};

/// Largest frame an app may send (close 1009 above it).
pub const MAX_FRAME: usize = 16 * 1024 * 1024;
/// Frames larger than this are parsed (and shrunk) on the blocking pool, not on the runtime's
/// workers: a 15 MiB frame takes a worker for tens of milliseconds, which every other
/// connection (`/health`, handshakes, gate controls) would otherwise wait out.
pub const OFFLOAD_FRAME: usize = 64 * 1024;
/// Largest frame taken for a `hello`; a larger one before the handshake is ignored unparsed.
pub const MAX_HELLO_FRAME: usize = 1024 * 1024;
/// Most frames taken in together: the frames the socket holds already when one arrives (read
/// without waiting) share one send to the writer. Each frame is decoded and taken in (one
/// round of the state lock) before the next is decoded, so what a frame allocates is freed
/// before the next allocates (decoding a whole batch first cost more in `malloc` / `free` than
/// it saved).
const BATCH_FRAMES: usize = 16;
/// Most bytes of frames taken in together (a batch stops at the frame that passes it).
const BATCH_BYTES: usize = 1024 * 1024;

/// Upgrades to the app protocol.
pub async fn handler(ws: WebSocketUpgrade, State(hub): State<Arc<HubState>>) -> Response {
    ws.max_message_size(MAX_FRAME)
        .max_frame_size(MAX_FRAME)
        .on_upgrade(move |socket| serve_app(hub, socket))
}

/// Whether a socket error is the frame-size limit.
pub fn is_capacity_error(e: &axum::Error) -> bool {
    let s = e.to_string();
    s.contains("Space limit exceeded") || s.contains("too long") || s.contains("too big")
}

async fn serve_app(hub: Arc<HubState>, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<AppOut>();
    // Set by the handshake of an app that sent a `hubNonce`, before its `hello.ack` is queued:
    // from then on every frame to it is signed (see `graphmind_protocol::hub_auth`).
    let channel: Arc<OnceLock<ChannelKey>> = Arc::default();
    let signing = Arc::clone(&channel);
    let writer = tokio::spawn(async move {
        let mut counter = 0_u64;
        while let Some(out) = rx.recv().await {
            match out {
                AppOut::Text(mut s) => {
                    if let Some(key) = signing.get() {
                        counter += 1;
                        key.sign_in_place(counter, &mut s);
                    }
                    if sink.send(WsMessage::Text(s.into())).await.is_err() {
                        break;
                    }
                }
                AppOut::Close(code, reason) => {
                    let _ = sink
                        .send(WsMessage::Close(Some(CloseFrame {
                            code,
                            reason: reason.into(),
                        })))
                        .await;
                    break;
                }
            }
        }
        let _ = sink.close().await;
    });
    let mut conn: Option<u64> = None;
    let mut acks: Option<(Arc<Acks>, tokio::task::JoinHandle<()>)> = None;
    // A socket that never says hello holds a connection and a task: close it after a while.
    let hello_deadline = tokio::time::Instant::now() + hub.cfg.hello_timeout;
    // Frames read from the socket after the handshake, taken in together, and what they
    // store (both kept between batches).
    let mut batch: Vec<Utf8Bytes> = Vec::with_capacity(BATCH_FRAMES);
    let mut to_store = Pending::default();
    // What ended reading a batch (not a text frame), handled once the batch is taken in.
    let mut pending = None;
    loop {
        let next = if let Some(p) = pending.take() {
            p
        } else if conn.is_some() {
            stream.next().await
        } else if let Ok(next) = tokio::time::timeout_at(hello_deadline, stream.next()).await {
            next
        } else {
            hub.stats.hello_timeouts.fetch_add(1, Ordering::Relaxed);
            let _ = tx.send(AppOut::Close(
                1008,
                format!(
                    "no hello within {} ms: the first frame must be hello",
                    hub.cfg.hello_timeout.as_millis()
                ),
            ));
            break;
        };
        let Some(msg) = next else {
            break;
        };
        let msg = match msg {
            Ok(m) => m,
            Err(e) => {
                if is_capacity_error(&e) {
                    let _ = tx.send(AppOut::Close(
                        1009,
                        format!("frame too large: the limit is {MAX_FRAME} bytes"),
                    ));
                }
                break;
            }
        };
        match msg {
            WsMessage::Text(frame) => {
                let text = frame.as_str();
                hub.stats.frames_in.fetch_add(1, Ordering::Relaxed);
                let keep_going = match conn {
                    // A hello is small: a large frame before it is not parsed on the path
                    // that serves other connections.
                    None if text.len() > MAX_HELLO_FRAME => {
                        hub.stats
                            .ignored_before_hello
                            .fetch_add(1, Ordering::Relaxed);
                        true
                    }
                    None => match handshake(&hub, text, &tx, &channel).await {
                        Handshake::Done(c, wants_acks) => {
                            conn = Some(c);
                            if wants_acks {
                                let shared = Arc::new(Acks::default());
                                let task = tokio::spawn(ack_loop(
                                    Arc::clone(&hub),
                                    Arc::clone(&shared),
                                    tx.clone(),
                                ));
                                acks = Some((shared, task));
                            }
                            true
                        }
                        Handshake::Ignored => true,
                        Handshake::Close => false,
                    },
                    Some(c) => {
                        // The frames the socket holds already join this one, so that a burst
                        // costs one round of the state lock and one writer send, not one per
                        // frame. Anything else read meanwhile waits until they are taken in.
                        let mut bytes = frame.len();
                        batch.push(frame);
                        while batch.len() < BATCH_FRAMES && bytes < BATCH_BYTES {
                            match stream.next().now_or_never() {
                                Some(Some(Ok(WsMessage::Text(f)))) => {
                                    hub.stats.frames_in.fetch_add(1, Ordering::Relaxed);
                                    bytes += f.len();
                                    batch.push(f);
                                }
                                Some(Some(Ok(WsMessage::Binary(_)))) => {
                                    hub.stats.binary_frames.fetch_add(1, Ordering::Relaxed);
                                }
                                Some(Some(Ok(WsMessage::Ping(_) | WsMessage::Pong(_)))) => {}
                                None => break,
                                Some(end) => {
                                    pending = Some(end);
                                    break;
                                }
                            }
                        }
                        let (go, seq) = events(&hub, c, &mut batch, &mut to_store, &tx).await;
                        if let (Some((shared, _)), Some(seq)) = (&acks, seq) {
                            shared.handled(seq);
                        }
                        go
                    }
                };
                if !keep_going {
                    break;
                }
            }
            WsMessage::Binary(_) => {
                hub.stats.binary_frames.fetch_add(1, Ordering::Relaxed);
            }
            WsMessage::Close(_) => break,
            WsMessage::Ping(_) | WsMessage::Pong(_) => {}
        }
    }
    if let Some((_, task)) = acks {
        task.abort();
    }
    if let Some(c) = conn {
        hub.app_disconnected(c);
    }
    drop(tx);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
}

/// What an acking connection handled so far.
#[derive(Default)]
struct Acks {
    /// One more than the highest seq handled (0: none yet).
    below: AtomicU64,
    changed: Notify,
}

impl Acks {
    fn handled(&self, seq: u64) {
        self.below
            .fetch_max(seq.saturating_add(1), Ordering::Relaxed);
        self.changed.notify_one();
    }
}

/// Sends `hub.ack` once what was handled is committed: a barrier on the writer per round, so
/// a burst of frames costs one ack.
async fn ack_loop(hub: Arc<HubState>, acks: Arc<Acks>, tx: mpsc::UnboundedSender<AppOut>) {
    let mut sent = 0;
    loop {
        acks.changed.notified().await;
        let below = acks.below.load(Ordering::Relaxed);
        if below <= sent {
            continue;
        }
        hub.writer.barrier().await;
        let frame = hub.control_frame(
            graphmind_protocol::RUN_ANY,
            Message::Unknown {
                kind: "hub.ack".into(),
                payload: serde_json::json!({ "upTo": below - 1 }),
            },
        );
        if tx.send(AppOut::Text(frame)).is_err() {
            return;
        }
        hub.stats.acks_sent.fetch_add(1, Ordering::Relaxed);
        sent = below;
    }
}

/// The capability an app announces to get `hub.ack` frames.
pub const HUB_ACK: &str = "hub-ack";

enum Handshake {
    /// The connection, and whether it wants `hub.ack` frames.
    Done(u64, bool),
    Ignored,
    Close,
}

fn version_mismatch(tx: &mpsc::UnboundedSender<AppOut>, gm: &Value) {
    let _ = tx.send(AppOut::Close(
        1002,
        format!("unsupported protocol version gm={gm}; this hub speaks gm 1"),
    ));
}

struct HelloInfo {
    app: Option<String>,
    capabilities: Vec<String>,
    resume_token: Option<String>,
    /// The app's `hubNonce`, to which the hub answers with a nonce of its own and a signed
    /// channel.
    hub_nonce: Option<String>,
}

/// The `hubNonce` of a hello payload, if it is a string of a sane length.
fn hub_nonce(payload: &serde_json::Map<String, Value>) -> Option<String> {
    payload
        .get(hub_auth::NONCE_FIELD)
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty() && n.len() <= hub_auth::MAX_NONCE_LEN)
        .map(str::to_owned)
}

/// A hello that does not fit the strict schema (e.g. no `versions.client`) is still a hello.
fn loose_hello(text: &str) -> Option<HelloInfo> {
    let v: Value = serde_json::from_str(text).ok()?;
    let o = v.as_object()?;
    if o.get("type")?.as_str()? != "hello" || o.get("gm")?.as_u64()? != 1 {
        return None;
    }
    let p = o.get("payload")?.as_object()?;
    Some(HelloInfo {
        app: p.get("app").and_then(Value::as_str).map(str::to_owned),
        capabilities: p
            .get("capabilities")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        resume_token: p
            .get("resumeToken")
            .and_then(Value::as_str)
            .map(str::to_owned),
        hub_nonce: hub_nonce(p),
    })
}

async fn handshake(
    hub: &HubState,
    text: &str,
    tx: &mpsc::UnboundedSender<AppOut>,
    channel: &OnceLock<ChannelKey>,
) -> Handshake {
    let info = match parse(text) {
        Parsed::Ok(Envelope {
            message: Message::Hello(h),
            ..
        }) => HelloInfo {
            app: h.app,
            capabilities: h.capabilities,
            resume_token: h.resume_token,
            hub_nonce: hub_nonce(&h.extra),
        },
        Parsed::VersionMismatch(gm) => {
            version_mismatch(tx, &gm);
            return Handshake::Close;
        }
        Parsed::Invalid(_) => match loose_hello(text) {
            Some(h) => h,
            None => {
                hub.stats
                    .ignored_before_hello
                    .fetch_add(1, Ordering::Relaxed);
                return Handshake::Ignored;
            }
        },
        _ => {
            hub.stats
                .ignored_before_hello
                .fetch_add(1, Ordering::Relaxed);
            return Handshake::Ignored;
        }
    };
    let wants_acks = info.capabilities.iter().any(|c| c == HUB_ACK);
    // The app's nonce gets one of the hub's, and the channel is keyed from both before
    // anything (the ack first) is queued to the app.
    let hub_nonce = info.hub_nonce.map(|app_nonce| {
        let hub_nonce =
            Token::generate().map_or_else(|_| random_id("n"), |t| t.as_str().to_owned());
        let _ = channel.set(ChannelKey::derive(
            hub.cfg.hub_secret.as_str(),
            &app_nonce,
            &hub_nonce,
        ));
        hub_nonce
    });
    let (conn, _identity, ack, reclaimed) = hub.app_hello(
        tx.clone(),
        info.app,
        info.capabilities,
        info.resume_token.as_deref().filter(|t| !t.is_empty()),
        hub_nonce,
    );
    let _ = tx.send(AppOut::Text(ack));
    for row in reclaimed {
        hub.writer.run(row).await;
    }
    Handshake::Done(conn, wants_acks)
}

/// Shrinks an envelope whose payload is over budget. Returns the envelope to account with
/// and the text to store.
fn shrink(env: Box<Envelope>, text: &str) -> (Box<Envelope>, Arc<str>, bool) {
    if text.len() <= PAYLOAD_BUDGET {
        return (env, Arc::from(text), false);
    }
    let Value::Object(mut payload) = env.message.payload_value() else {
        return (env, Arc::from(text), false);
    };
    let report = shrink_payload(&mut payload, PAYLOAD_BUDGET);
    if !report.shrunk {
        return (env, Arc::from(text), false);
    }
    let shrunk = Envelope {
        message: Message::Unknown {
            kind: env.message.type_name().to_owned(),
            payload: Value::Object(payload),
        },
        ..(*env).clone()
    };
    let body = shrunk.to_json();
    let typed = match parse(&body) {
        Parsed::Ok(e) | Parsed::UnknownType(e) => Box::new(e),
        _ => env,
    };
    (typed, Arc::from(body), true)
}

/// Replaces lone UTF-16 surrogate escapes (`\ud800` without its pair), which the Python client
/// writes for unpaired surrogates in its strings but which are not valid JSON text for serde,
/// with `\ufffd`. Returns `None` when there is none.
fn mend_lone_surrogates(text: &str) -> Option<String> {
    mend_lone_surrogates_with(text, "\\ufffd")
}

/// [`mend_lone_surrogates`] with another replacement escape.
fn mend_lone_surrogates_with(text: &str, replacement: &str) -> Option<String> {
    fn hex4(b: &[u8]) -> Option<u16> {
        let s = std::str::from_utf8(b.get(..4)?).ok()?;
        u16::from_str_radix(s, 16).ok()
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut i = 0;
    let mut changed = false;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        if b.get(i + 1) != Some(&b'u') {
            i += 2; // an escaped character, e.g. \\ or \"
            continue;
        }
        let Some(unit) = hex4(&b[i + 2..]) else {
            i += 2;
            continue;
        };
        let paired = (0xD800..0xDC00).contains(&unit)
            && b.get(i + 6) == Some(&b'\\')
            && b.get(i + 7) == Some(&b'u')
            && hex4(&b[(i + 8).min(b.len())..]).is_some_and(|lo| (0xDC00..0xE000).contains(&lo));
        if paired {
            i += 12;
        } else if (0xD800..0xE000).contains(&unit) {
            out.push_str(&text[last..i]);
            out.push_str(replacement);
            i += 6;
            last = i;
            changed = true;
        } else {
            i += 6;
        }
    }
    if !changed {
        return None;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// Whether a frame's run id may be taken in; counts the refusals. `raw` is the frame as
/// received, `text` as parsed (equal unless lone surrogates were mended).
///
/// A lone surrogate in a run id is refused rather than mended (as the TypeScript parser
/// refuses it): mended, `run_\ud800` and `run_\udfff` of two apps would become one run.
/// Whether the run id held one is told by mending a second time with another replacement:
/// only a run id that held one comes out different.
fn run_id_allowed(hub: &HubState, run_id: &str, raw: &str, text: &str) -> bool {
    if run_id.chars().count() > MAX_RUN_ID_CHARS {
        hub.stats.run_ids_too_long.fetch_add(1, Ordering::Relaxed);
        return false;
    }
    if raw != text {
        let other = mend_lone_surrogates_with(raw, "\\u0000")
            .and_then(|t| serde_json::from_str::<Value>(&t).ok());
        let probe = other
            .as_ref()
            .and_then(|v| v.get("runId"))
            .and_then(Value::as_str);
        if probe != Some(run_id) {
            hub.stats.run_ids_invalid.fetch_add(1, Ordering::Relaxed);
            return false;
        }
    }
    true
}

/// What a frame after the handshake holds, once parsed, checked and shrunk.
enum Decoded {
    /// An event of a run: the envelope to account with, the text to store, where in it a
    /// quickly read node frame holds its input / output, and the events the app announced
    /// lost.
    Event(Box<Envelope>, Arc<str>, Spans, Option<u64>),
    /// Nothing to take in; the frame's seq when it counts as handled (run-independent, or
    /// refused and counted).
    Skip(Option<u64>),
    /// The connection must close (the close frame is queued).
    Close,
}

/// Parses, checks and shrinks one frame after the handshake: the CPU-bound part of taking in
/// an event, run off the runtime's workers for a large frame ([`OFFLOAD_FRAME`]).
fn decode(hub: &HubState, raw: &str, tx: &mpsc::UnboundedSender<AppOut>) -> Decoded {
    let mended;
    let mut text = raw;
    // The frames most traffic is made of are read without building the whole frame.
    let mut spans = Spans::default();
    // The envelope is boxed as it is built and moved only as a box from here on: it is
    // large, and each move of it by value is a copy.
    let env: Box<Envelope> = if let Some((env, s)) = crate::quick_parse::quick_parse(text) {
        spans = s;
        env
    } else {
        let mut parsed = parse(text);
        if let Parsed::Invalid(why) = &parsed
            && why.starts_with("not JSON")
            && let Some(m) = mend_lone_surrogates(text)
        {
            mended = m;
            text = &mended;
            parsed = parse(text);
        }
        match parsed {
            Parsed::Ok(env) => Box::new(env),
            Parsed::UnknownType(env) => {
                hub.stats.unknown_types.fetch_add(1, Ordering::Relaxed);
                Box::new(env)
            }
            Parsed::VersionMismatch(gm) => {
                version_mismatch(tx, &gm);
                return Decoded::Close;
            }
            Parsed::Invalid(_) => {
                hub.stats.invalid_frames.fetch_add(1, Ordering::Relaxed);
                return Decoded::Skip(None);
            }
        }
    };
    // Run-independent frames and hub → app types carry no event of a run.
    if env.run_id == graphmind_protocol::RUN_ANY
        || env.run_id.is_empty()
        || matches!(
            env.message,
            Message::Hello(_)
                | Message::HelloAck(_)
                | Message::ExecResume(_)
                | Message::BreakpointSet(_)
                | Message::BreakpointClear(_)
                | Message::ModeSet(_)
        )
    {
        return Decoded::Skip(Some(env.seq));
    }
    if !run_id_allowed(hub, &env.run_id, raw, text) {
        // Refused and counted: handled, so acknowledged.
        return Decoded::Skip(Some(env.seq));
    }
    // Events the app's replay ring lost before it could send them (the client announces the
    // count on the next frame it sends; counted once, not again when that frame is replayed).
    let dropped = env.extra.get("dropped").and_then(Value::as_u64);
    let (env, body, shrunk) = shrink(env, text);
    if shrunk {
        hub.stats.shrunk.fetch_add(1, Ordering::Relaxed);
        // The shrunk envelope is parsed from its new text the full way: no spans.
        spans = Spans::default();
    }
    Decoded::Event(env, body, spans, dropped)
}

/// Decodes one frame after the handshake, a large one on the blocking pool.
async fn decode_frame(
    hub: &Arc<HubState>,
    frame: Utf8Bytes,
    tx: &mpsc::UnboundedSender<AppOut>,
) -> Decoded {
    if frame.len() > OFFLOAD_FRAME {
        let (h, t) = (Arc::clone(hub), tx.clone());
        tokio::task::spawn_blocking(move || decode(&h, frame.as_str(), &t))
            .await
            .unwrap_or_else(|_| {
                // A panic while parsing one frame costs that frame, counted, not the hub.
                hub.stats.invalid_frames.fetch_add(1, Ordering::Relaxed);
                Decoded::Skip(None)
            })
    } else {
        decode(hub, frame.as_str(), tx)
    }
}

/// Handles the frames read together after the handshake, in order (`frames` is left empty):
/// each is taken in as it is decoded, and what they store goes to the writer in one send.
/// Returns false when the connection must close (the frames before the one that closes it are
/// taken in, none after it), and the highest seq handled (stored, deduped, or refused and
/// counted) once every frame of the batch was.
async fn events(
    hub: &Arc<HubState>,
    conn: u64,
    frames: &mut Vec<Utf8Bytes>,
    pending: &mut Pending,
    tx: &mpsc::UnboundedSender<AppOut>,
) -> (bool, Option<u64>) {
    let mut go = true;
    let mut handled: Option<u64> = None;
    for frame in frames.drain(..) {
        match decode_frame(hub, frame, tx).await {
            Decoded::Event(env, body, spans, dropped) => {
                // The shrunk envelope keeps the frame's seq.
                handled = handled.max(Some(env.seq));
                let inc = Incoming {
                    env,
                    body,
                    spans,
                    dropped,
                };
                if let Some(inc) = hub.take_in_quick(conn, inc, pending) {
                    // It needs something first: what came before it is queued before it.
                    hub.flush(pending).await;
                    event(hub, conn, inc).await;
                }
            }
            Decoded::Skip(seq) => handled = handled.max(seq),
            Decoded::Close => {
                go = false;
                break;
            }
        }
    }
    frames.clear();
    hub.flush(pending).await;
    (go, handled)
}

/// Takes in one event that may announce lost runs or need its run read from storage first.
async fn event(hub: &Arc<HubState>, conn: u64, inc: Incoming) {
    let Incoming {
        env,
        body,
        spans,
        dropped,
    } = inc;
    // Runs with events the app lost (taken from every copy: a replayed frame is deduped, its
    // announcement is idempotent). Bounded like any frame: by the frame cap.
    if let Some(Value::Array(runs)) = env.extra.get("lostRuns") {
        let runs: Vec<String> = runs
            .iter()
            .filter_map(Value::as_str)
            .filter(|r| !r.is_empty() && r.chars().count() <= MAX_RUN_ID_CHARS)
            .map(str::to_owned)
            .collect();
        if !runs.is_empty() {
            hub.mark_incomplete(conn, runs).await;
        }
    }
    let load = hub.needs_load(&env.run_id);
    if load != Load::Nothing {
        // A run missing from memory was evicted after everything of it was committed; one in
        // memory may have writes queued.
        if load == Load::Seqs {
            hub.writer.barrier().await;
        }
        let reader = Arc::clone(&hub.reader);
        let run = env.run_id.clone();
        // The row too: the run may leave memory while its seqs are read (then it comes back
        // as stored); a run that is in storage neither is new.
        let loaded = tokio::task::spawn_blocking(move || {
            let row = reader.run(&run)?;
            let seqs = if row.is_some() {
                reader.seqs(&run)?
            } else {
                Default::default()
            };
            Ok::<_, String>((row, seqs))
        })
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
        hub.install_seqs(&env.run_id, loaded.0, loaded.1);
    }
    if hub.app_event(conn, *env, body, &spans).await
        && let Some(n) = dropped
    {
        hub.stats.client_dropped.fetch_add(n, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::mend_lone_surrogates;

    #[test]
    fn lone_surrogates_are_mended_pairs_kept() {
        assert_eq!(
            mend_lone_surrogates(r#"{"s":"a\ud800b"}"#).as_deref(),
            Some(r#"{"s":"a\ufffdb"}"#)
        );
        assert_eq!(
            mend_lone_surrogates(r#"{"s":"\udc00\ud83d"}"#).as_deref(),
            Some(r#"{"s":"\ufffd\ufffd"}"#)
        );
        assert_eq!(mend_lone_surrogates(r#"{"s":"\ud83d\ude00 \u00e9"}"#), None);
        assert_eq!(mend_lone_surrogates(r#"{"s":"\\ud800"}"#), None);
        assert_eq!(mend_lone_surrogates(r#"{"s":"\u12"}"#), None);
    }
}
