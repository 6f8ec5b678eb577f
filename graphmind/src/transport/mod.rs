//! The WebSocket client. It runs on its own thread with its own single-threaded tokio
//! runtime, so a busy or blocked app runtime can delay neither disconnect detection nor the
//! release of held gates.
//!
//! Life of a connection: connect (300 ms budget for TCP + upgrade) → `hello` (seq from the
//! session counter, `resumeToken` once a `hello.ack` gave a `sessionToken`) → wait up to 1 s
//! for `hello.ack`, ignoring anything else → adopt breakpoints and mode (replace) → rewind
//! the replay ring so the whole ring is sent again, oldest first, with the original seqs →
//! attached. While attached it sends what the app recorded, applies control frames, and
//! pings every second; three seconds without hearing anything, a socket error or a close
//! ends the connection, and every held gate is released right away from this thread (the
//! liveness budget: `Config::liveness`, `GRAPHMIND_PING_INTERVAL_MS`,
//! `GRAPHMIND_HUB_DEAD_AFTER_MS`).
//! Then it retries after 200, 400 and 800 ms, then every 10 s (10 s also while it never
//! attached); `ready()` asks for an attempt at once. An ack with another protocol version is
//! warned about once and the client stays detached until the next regular retry.
//!
//! Hub authentication (see `graphmind_protocol::hub_auth`): every `hello` carries a fresh
//! random `hubNonce`; the hub answers with a nonce of its own and signs every frame it sends
//! from the ack on under a key derived from its secret and both nonces. The secret comes from
//! the hub's run file for the URL's port — used only when the socket's peer is the very
//! address that run file names — or from the config. A hub that proves nothing is attached to
//! in observe mode: events flow as usual, but its breakpoints and mode are not adopted, gates
//! never hold and its control frames are ignored and counted. On a proven connection a frame
//! whose signature does not check out (a relay between the app and its hub adding or changing
//! frames) is ignored and counted the same way. A warning says so once per session.
//!
//! Events lost from the ring before they were confirmed are announced with extra envelope
//! fields `"dropped": n, "lost": [[from, to], …]` on the next new frame sent (the hub keeps
//! unknown fields). Confirmed: acknowledged by a `hub.ack {upTo}` frame when the hub's
//! `hello.ack` lists `hub-ack` in `hubCapabilities` (the client announces `hub-ack` in its
//! capabilities); with another hub, written to its socket, which is all such a hub tells.

mod ring;
mod shared;
pub(crate) use shared::Shared;

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::{Either, select};
use futures_util::{SinkExt, StreamExt};
use graphmind_protocol::hub_auth::{self, ChannelCheck, ChannelError, ChannelKey};
use graphmind_protocol::{
    BreakpointMatcher, ClientVersions, Envelope, Extra, Hello, Message, Mode, PROTOCOL_VERSION,
    Parsed, RUN_ANY, SdkInfo,
};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::sync::{oneshot, watch};
use tokio::time::{Instant, timeout, timeout_at};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Bytes, Message as Ws};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub(crate) use ring::Ring;

use crate::breakpoints::Breakpoints;
use crate::breakpoints::DebugState;
use crate::clock::now_ms;
use crate::config::TrustHub;
use crate::gate::ReleaseReason;

/// Fast retries after an established connection dropped.
const FAST_RETRIES: [Duration; 3] = [
    Duration::from_millis(200),
    Duration::from_millis(400),
    Duration::from_millis(800),
];
/// How long `dispose` lets queued frames drain.
const FLUSH_BUDGET: Duration = Duration::from_millis(200);
/// How long a shutdown lets a connection attempt already under way finish, so the events
/// recorded before it are still delivered (a local debugger answers in milliseconds; a hung
/// one costs `dispose` this much, not the whole handshake budget).
const SHUTDOWN_GRACE: Duration = Duration::from_millis(200);
/// How long a wake-up by new events waits for more before sending (see `connected`).
const COALESCE: Duration = Duration::from_micros(200);
/// Events taken per lock of the ring and written per flush (one `send` per batch: fewer
/// syscalls and fewer wake-ups of the reader on the other end).
const BATCH: usize = 256;
/// About this many estimated bytes per batch.
const BATCH_BYTES: usize = 64 * 1024;
/// Largest frame accepted from the debugger (the protocol's cap).
const MAX_FRAME: usize = 16 * 1024 * 1024;
/// The transport thread's name (a close never waits for the thread it runs on).
pub(crate) const THREAD_NAME: &str = "graphmind-transport";
/// Capabilities announced in `hello`.
/// `request-id`: the `requestId` of an `exec.resume` is echoed in its `exec.resumed`.
/// `hub-ack`: the client relies on `hub.ack` from a hub that announces it.
/// `reject`: the client understands `action: "reject"` (a graphmind extension).
pub(crate) const CAPABILITIES: [&str; 9] = [
    "pause",
    "step",
    "inject",
    "retry",
    "abort",
    "run-claim",
    "request-id",
    HUB_ACK,
    "reject",
];
/// The capability of running a held call with an edited input (GraphMind 0.6), announced
/// unless `GRAPHMIND_DISABLE_EDIT_INPUT=1`; honoured only from a hub that announces it too.
pub(crate) const EDIT_INPUT: &str = "edit-input";
/// The capability of a hub that acknowledges stored events with `hub.ack`.
pub(crate) const HUB_ACK: &str = "hub-ack";

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Whether the session is attached, as seen by `ready` waiters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Link {
    Detached,
    Attached,
    /// Disposed or shut down: waiters give up.
    Closed,
}

/// The session's handle on its transport thread.
pub(crate) struct Handle {
    link: Arc<watch::Sender<Link>>,
    /// Connection attempts that ended without attaching, so far (`ready` gives up on one).
    failures: Arc<watch::Sender<u64>>,
    rt: tokio::runtime::Handle,
    done: Mutex<Option<oneshot::Receiver<()>>>,
    /// Set once the transport thread has finished, for waiters outside any runtime (a
    /// guard dropped in synchronous code, or on an app runtime that must not be blocked on).
    finished: Arc<(Mutex<bool>, std::sync::Condvar)>,
}

impl Handle {
    pub(crate) fn subscribe(&self) -> watch::Receiver<Link> {
        self.link.subscribe()
    }

    /// The count of failed connection attempts; it changes when one more fails.
    pub(crate) fn subscribe_failures(&self) -> watch::Receiver<u64> {
        self.failures.subscribe()
    }

    pub(crate) fn set_link(&self, link: Link) {
        self.link.send_replace(link);
    }

    /// Resolves when the transport thread has finished (taken once).
    pub(crate) fn take_done(&self) -> Option<oneshot::Receiver<()>> {
        self.done
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Blocks this thread until the transport thread has finished, for at most `limit`;
    /// `true` if it finished. Never touches a runtime, so it is safe inside one.
    pub(crate) fn wait_finished(&self, limit: Duration) -> bool {
        let (lock, cvar) = &*self.finished;
        let done = lock.lock().unwrap_or_else(PoisonError::into_inner);
        let (done, _) = cvar
            .wait_timeout_while(done, limit, |finished| !*finished)
            .unwrap_or_else(PoisonError::into_inner);
        *done
    }

    /// Runs `f` for at most `limit`, timed by the transport runtime so it works on any
    /// executor (or none). `None` on timeout.
    pub(crate) async fn deadline<F: Future>(&self, limit: Duration, f: F) -> Option<F::Output> {
        let (tx, rx) = oneshot::channel::<()>();
        let timer = self.rt.spawn(async move {
            tokio::time::sleep(limit).await;
            let _ = tx.send(());
        });
        let out = match select(std::pin::pin!(f), rx).await {
            Either::Left((v, _)) => Some(v),
            Either::Right(_) => None,
        };
        timer.abort();
        out
    }
}

/// Starts the transport thread for the session that owns `owner`'s shared state. `None` if the runtime or thread cannot be made
/// (the session then simply stays detached).
pub(crate) fn start(owner: Arc<dyn AsRef<Shared> + Send + Sync>) -> Option<Handle> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let handle = rt.handle().clone();
    let (link, _) = watch::channel(Link::Detached);
    let link = Arc::new(link);
    let failures = Arc::new(watch::channel(0u64).0);
    let (done_tx, done_rx) = oneshot::channel();
    let thread_link = Arc::clone(&link);
    let thread_failures = Arc::clone(&failures);
    let finished = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let thread_finished = Arc::clone(&finished);
    // The first attempt starts at once: `ready` calls from now on share it.
    (*owner).as_ref().set_attempting(true);
    std::thread::Builder::new()
        .name(THREAD_NAME.into())
        .spawn(move || {
            let shared: &Shared = (*owner).as_ref();
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
                rt.block_on(run(shared, &thread_link, &thread_failures));
            }));
            if outcome.is_err() {
                // Fail open even if something in here panicked.
                shared.set_attached(false);
                shared.gates().release_all(ReleaseReason::Disconnect);
            }
            thread_link.send_replace(Link::Closed);
            drop(rt);
            let _ = done_tx.send(());
            let (lock, cvar) = &*thread_finished;
            *lock.lock().unwrap_or_else(PoisonError::into_inner) = true;
            cvar.notify_all();
        })
        .ok()?;
    Some(Handle {
        link,
        failures,
        rt: handle,
        done: Mutex::new(Some(done_rx)),
        finished,
    })
}

enum Attempt {
    /// The socket, and the check the hub's frames must pass (on a signed channel).
    Attached(Box<(Socket, Option<ChannelCheck>)>),
    Failed,
    VersionMismatch,
}

enum End {
    /// Closed, reset, errored, or went quiet: reconnect.
    Lost,
    /// The session is shutting down.
    Shutdown,
}

async fn run(shared: &Shared, link: &watch::Sender<Link>, failures: &watch::Sender<u64>) {
    let mut token: Option<String> = None;
    let mut delay = Duration::ZERO;
    let mut fast: Option<usize> = None;
    let mut tried = false;
    loop {
        // A session disposed before its first attempt still makes that one (under the
        // shutdown grace): the events that started the transport are on their way out.
        if shared.is_shutdown() && tried {
            break;
        }
        tried = true;
        if !delay.is_zero() && !wait_or_kick(shared, delay).await {
            break;
        }
        shared.set_attempting(true);
        let outcome = {
            let mut pending = std::pin::pin!(attempt(shared, &mut token));
            tokio::select! {
                outcome = &mut pending => outcome,
                () = until_shutdown(shared) => {
                    // A connection on its way still carries what was recorded before the
                    // shutdown (a short program disposes right after its run): let it finish
                    // within a short grace, then flush and close as usual.
                    match timeout(SHUTDOWN_GRACE, pending).await {
                        Ok(outcome @ Attempt::Attached(_)) => outcome,
                        _ => break,
                    }
                }
            }
        };
        shared.set_attempting(false);
        if !matches!(outcome, Attempt::Attached(_)) {
            failures.send_modify(|n| *n += 1);
        }
        match outcome {
            Attempt::Attached(attached) => {
                let (ws, check) = *attached;
                if !shared.is_shutdown() {
                    // Attached only to flush on the way out is not attached for `ready`.
                    link.send_replace(Link::Attached);
                }
                let end = connected(shared, ws, check).await;
                // Detach first so no new gate is registered behind release_all.
                shared.set_attached(false);
                link.send_replace(Link::Detached);
                shared.gates().release_all(ReleaseReason::Disconnect);
                if matches!(end, End::Shutdown) {
                    break;
                }
                fast = Some(0);
                delay = FAST_RETRIES[0];
            }
            Attempt::Failed => match fast {
                Some(i) if i + 1 < FAST_RETRIES.len() => {
                    fast = Some(i + 1);
                    delay = FAST_RETRIES[i + 1];
                }
                _ => {
                    fast = None;
                    delay = shared.config().retry_interval;
                }
            },
            Attempt::VersionMismatch => {
                fast = None;
                delay = shared.config().retry_interval;
            }
        }
    }
    shared.set_attached(false);
    link.send_replace(Link::Closed);
}

/// Resolves once the session shuts down (so `dispose` need not wait out a handshake).
async fn until_shutdown(shared: &Shared) {
    loop {
        let woken = shared.stopped();
        if shared.is_shutdown() {
            return;
        }
        woken.await;
    }
}

/// Sleeps `delay` unless `ready()` kicks first. False when the session shuts down.
async fn wait_or_kick(shared: &Shared, delay: Duration) -> bool {
    let sleep = tokio::time::sleep(delay);
    let mut sleep = std::pin::pin!(sleep);
    loop {
        if shared.is_shutdown() {
            return false;
        }
        if shared.kicked() {
            return true;
        }
        tokio::select! {
            () = &mut sleep => return !shared.is_shutdown(),
            () = shared.woken() => {}
        }
    }
}

fn hello_frame(shared: &Shared, token: Option<&String>, nonce: Option<&str>) -> String {
    let cfg = shared.config();
    let mut extra = Extra::new();
    if let Some(nonce) = nonce {
        extra.insert(hub_auth::NONCE_FIELD.to_owned(), nonce.into());
    }
    let hello = Hello {
        versions: ClientVersions {
            protocol: PROTOCOL_VERSION,
            client: env!("CARGO_PKG_VERSION").to_owned(),
            extra: Extra::new(),
        },
        capabilities: CAPABILITIES
            .iter()
            .copied()
            .chain((!shared.gates().edits_killed()).then_some(EDIT_INPUT))
            .map(str::to_owned)
            .collect(),
        app: Some(cfg.app.clone()),
        sdk: Some(SdkInfo {
            name: cfg.sdk_name.clone(),
            version: cfg.sdk_version.clone(),
            extra: Extra::new(),
        }),
        resume_token: token.cloned(),
        extra,
    };
    Envelope::new(shared.next_seq(), now_ms(), RUN_ANY, Message::Hello(hello)).to_json()
}

async fn attempt(shared: &Shared, token: &mut Option<String>) -> Attempt {
    let cfg = shared.config();
    let ws_config = WebSocketConfig::default()
        .max_message_size(Some(MAX_FRAME))
        .max_frame_size(Some(MAX_FRAME));
    if !is_websocket_url(shared.url()) {
        // Said before connecting: whether anything listens there is beside the point.
        shared.warn_once(
            "bad-url",
            &bad_url_message(shared.url(), "not a ws:// or wss:// URL"),
        );
        return Attempt::Failed;
    }
    let connect = tokio_tungstenite::connect_async_with_config(shared.url(), Some(ws_config), true);
    let mut ws: Socket = match timeout(cfg.connect_timeout, connect).await {
        Ok(Ok((ws, _))) => ws,
        Ok(Err(tokio_tungstenite::tungstenite::Error::Url(e))) => {
            shared.warn_once("bad-url", &bad_url_message(shared.url(), &e.to_string()));
            return Attempt::Failed;
        }
        Ok(Err(tokio_tungstenite::tungstenite::Error::Http(answer))) => {
            shared.warn_once(
                "not-websocket",
                &format!(
                    "{} answered HTTP {} instead of a WebSocket upgrade: is it a GraphMind debugger, \
                     and is the path right (`graphmind serve` listens on ws://127.0.0.1:4747/ingest)?",
                    shared.url(),
                    answer.status()
                ),
            );
            return Attempt::Failed;
        }
        _ => {
            if shared.url_from_env() {
                shared.warn_no_debugger("GRAPHMIND_URL");
            }
            return Attempt::Failed;
        }
    };
    let deadline = Instant::now() + cfg.handshake_timeout;
    // The address actually dialled (a name such as `localhost` may resolve to several).
    let peer = match ws.get_ref() {
        MaybeTlsStream::Plain(tcp) => tcp.peer_addr().ok(),
        _ => None,
    };
    // Fresh for every attempt, so an old proof cannot be replayed.
    let nonce = fresh_nonce();
    let hello = hello_frame(shared, token.as_ref(), nonce.as_deref());
    if !matches!(
        timeout_at(deadline, ws.send(Ws::text(hello))).await,
        Ok(Ok(()))
    ) {
        return Attempt::Failed;
    }
    loop {
        let frame = match timeout_at(deadline, ws.next()).await {
            Ok(Some(Ok(frame))) => frame,
            Ok(Some(Err(tokio_tungstenite::tungstenite::Error::Capacity(_)))) => {
                shared.warn_once(
                    "frame-too-large",
                    &frame_too_large(shared.url(), "hello.ack"),
                );
                return Attempt::Failed;
            }
            // Timed out, closed or broken: give up this attempt.
            _ => {
                let _ = timeout(Duration::from_millis(50), ws.close(None)).await;
                return Attempt::Failed;
            }
        };
        let Ws::Text(text) = frame else {
            continue;
        };
        match read_ack(text.as_str()) {
            AckRead::NotAck => {}
            AckRead::Mismatch(seen) => {
                shared.warn_once(
                    "version-mismatch",
                    &format!(
                        "the debugger at {} speaks GraphMind protocol {seen}, this client speaks {PROTOCOL_VERSION}: staying detached",
                        shared.url()
                    ),
                );
                let _ = timeout(
                    Duration::from_millis(100),
                    ws.close(Some(CloseFrame {
                        code: CloseCode::Protocol,
                        reason: "protocol version mismatch".into(),
                    })),
                )
                .await;
                return Attempt::VersionMismatch;
            }
            AckRead::Ack(ack) => {
                if let Some(t) = ack.session_token {
                    *token = Some(t);
                }
                let hub = Proof {
                    app_nonce: nonce.as_deref(),
                    hub_nonce: ack.hub_nonce.as_deref(),
                    ack: text.as_str(),
                    peer,
                };
                let mut check = None;
                match trust_verdict(shared, &hub) {
                    Ok(channel) => {
                        check = channel;
                        shared.set_trusted(true);
                        shared.set_debug_state(DebugState {
                            breakpoints: Breakpoints::from_list(ack.breakpoints),
                            mode: ack.mode,
                        });
                    }
                    Err(reason) => {
                        shared.set_trusted(false);
                        shared.set_debug_state(DebugState::default());
                        shared
                            .warn_once("untrusted-hub", &untrusted_message(shared.url(), &reason));
                    }
                }
                shared.gates().set_hub_edits(ack.edit_input);
                {
                    let mut ring = shared.ring();
                    ring.set_acking(ack.acking);
                    ring.rewind();
                }
                shared.set_attached(true);
                // Any pending `ready()` kick is satisfied by this attach.
                shared.clear_kick();
                return Attempt::Attached(Box::new((ws, check)));
            }
        }
    }
}

/// 32 random bytes as hex, or `None` without OS randomness (then no hub can prove itself).
fn fresh_nonce() -> Option<String> {
    use std::fmt::Write;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    }))
}

/// What a hub shows of itself in its handshake.
struct Proof<'a> {
    /// The nonce this app sent (`None` without system randomness).
    app_nonce: Option<&'a str>,
    /// The nonce the hub answered with.
    hub_nonce: Option<&'a str>,
    /// The `hello.ack` as received, signed by a hub that holds the secret.
    ack: &'a str,
    /// The address the socket is connected to.
    peer: Option<std::net::SocketAddr>,
}

/// Whether the debugger that answered the handshake may control the app, and the check its
/// later frames must pass (`None`: trusted without one, by `TrustHub::Any`); the error says
/// why not.
fn trust_verdict(shared: &Shared, hub: &Proof<'_>) -> Result<Option<ChannelCheck>, String> {
    let secret = match shared.config().resolved_trust() {
        TrustHub::Any => return Ok(None),
        TrustHub::Secret(secret) => secret,
        TrustHub::SameUser => same_user_secret(shared, hub.peer)?,
    };
    let Some(app_nonce) = hub.app_nonce else {
        return Err("no system randomness for a handshake nonce".to_owned());
    };
    let Some(hub_nonce) = hub.hub_nonce else {
        return Err(format!(
            "its hello.ack carries no {} (another GraphMind hub, or a process squatting on the \
             port?)",
            hub_auth::NONCE_FIELD
        ));
    };
    let mut check = ChannelCheck::new(ChannelKey::derive(&secret, app_nonce, hub_nonce));
    match check.accept(hub.ack) {
        Ok(_) => Ok(Some(check)),
        Err(ChannelError::Unsigned) => Err(format!(
            "its hello.ack carries no {} (another GraphMind hub, or a process squatting on the \
             port?)",
            hub_auth::MAC_FIELD
        )),
        Err(_) => Err(format!(
            "its {} does not match the hub's secret (another process squatting on the port?)",
            hub_auth::MAC_FIELD
        )),
    }
}

/// The secret of this user's `graphmind serve` at the URL's port, if the socket is connected
/// to the very address its run file names (a process on another loopback address — a relay
/// on `127.0.0.2` or `[::1]` at the same port — gets nothing).
fn same_user_secret(shared: &Shared, peer: Option<std::net::SocketAddr>) -> Result<String, String> {
    let Some(port) = loopback_port(shared.url()) else {
        return Err("it is not on a loopback address".to_owned());
    };
    let Some(home) = shared.config().resolved_hub_home() else {
        return Err(
            "no home to find its run file in (GRAPHMIND_HOME and HOME are unset)".to_owned(),
        );
    };
    let file = home.join("run").join(format!("serve-{port}.json"));
    let run = read_run_file(&file).ok_or_else(|| {
        format!(
            "no graphmind serve of this user wrote {} (no such file, unreadable, or without {})",
            file.display(),
            hub_auth::SECRET_KEY
        )
    })?;
    match (run.address, peer) {
        (Some(hub), Some(peer)) if hub == peer => Ok(run.secret),
        (Some(hub), Some(peer)) => Err(format!(
            "it answered at {peer}, while this user's graphmind serve listens at {hub} \
             ({}): another process on a loopback address, perhaps relaying",
            file.display()
        )),
        (None, _) => Err(format!(
            "{} names no address to check the connection against",
            file.display()
        )),
        (_, None) => Err("the address it answered at is unknown".to_owned()),
    }
}

/// The warning for a frame from the debugger over the client's limit (`what`: the frame).
fn frame_too_large(url: &str, what: &str) -> String {
    format!(
        "the debugger at {url} sent a {what} over this client's {} MiB frame limit, so the \
         connection was dropped (with graphmind serve, its breakpoints are the likely cause: \
         list them with `graphmind break list`, remove them with `graphmind break clear`); the app runs \
         detached meanwhile",
        MAX_FRAME / (1024 * 1024)
    )
}

/// The warning for a debugger that is only reported to.
fn untrusted_message(url: &str, reason: &str) -> String {
    format!(
        "the debugger at {url} did not prove it is this user's graphmind serve ({reason}): \
         reporting to it only; its breakpoints, step mode, inject, retry, edited inputs and \
         abort are ignored and gates do not hold. To let it control this app, set \
         GRAPHMIND_TRUST_HUB=1 or use Config::trust_hub(TrustHub::Any) (or \
         TrustHub::Secret(<its hubSecret>))"
    )
}

/// The port of `url` if its host is a loopback address (`localhost`, `127.0.0.0/8`, `::1`).
fn loopback_port(url: &str) -> Option<u16> {
    let uri: tokio_tungstenite::tungstenite::http::Uri = url.parse().ok()?;
    let host = uri.host()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if !loopback {
        return None;
    }
    uri.port_u16().or_else(|| match uri.scheme_str() {
        Some(s) if s.eq_ignore_ascii_case("wss") => Some(443),
        _ => Some(80),
    })
}

/// The one live `graphmind serve` of this user, found by its run file in `<home>/run` (as
/// the CLI finds a hub started with `--port 0`): `Ok(Some((url, run file)))` when exactly one
/// run file names an address that accepts a connection, `Ok(None)` when none does, and
/// `Err(ports)` when several do (choosing one would be a guess). Only a run file whose name,
/// `port` and `url` agree on one loopback port counts; the trust rules are unchanged, since
/// the app then dials the very address that run file names.
pub(crate) fn discover_hub(
    home: &std::path::Path,
) -> Result<Option<(String, std::path::PathBuf)>, Vec<u16>> {
    let Ok(dir) = std::fs::read_dir(home.join("run")) else {
        return Ok(None);
    };
    let mut live: Vec<(u16, std::path::PathBuf)> = dir
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter_map(|file| {
            let named: u16 = file
                .file_name()?
                .to_str()?
                .strip_prefix("serve-")?
                .strip_suffix(".json")?
                .parse()
                .ok()?;
            let address = read_run_file(&file)?.address?;
            (named != 0 && address.port() == named && address.ip().is_loopback()).then_some(())?;
            std::net::TcpStream::connect_timeout(&address, std::time::Duration::from_millis(200))
                .ok()?;
            Some((named, file))
        })
        .collect();
    live.sort();
    match live.as_slice() {
        [] => Ok(None),
        [(port, file)] => Ok(Some((
            format!("ws://127.0.0.1:{port}/ingest"),
            file.clone(),
        ))),
        several => Err(several.iter().map(|(p, _)| *p).collect()),
    }
}

/// What the app takes from a hub's run file.
struct RunFile {
    /// `hubSecret`.
    secret: String,
    /// The address in its `url` (`http://127.0.0.1:<port>`), the one the hub listens at.
    address: Option<std::net::SocketAddr>,
}

/// The `hubSecret` and address of a hub's run file (read at most 64 KiB of it).
fn read_run_file(file: &std::path::Path) -> Option<RunFile> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(file)
        .ok()?
        .take(64 * 1024)
        .read_to_string(&mut text)
        .ok()?;
    let doc: Value = serde_json::from_str(&text).ok()?;
    let secret = doc
        .get(hub_auth::SECRET_KEY)?
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)?;
    let address = doc.get("url").and_then(Value::as_str).and_then(url_address);
    Some(RunFile { secret, address })
}

/// The IP address and port an `http://` or `ws://` URL with a literal IP host names.
fn url_address(url: &str) -> Option<std::net::SocketAddr> {
    let uri: tokio_tungstenite::tungstenite::http::Uri = url.parse().ok()?;
    let host = uri.host()?.trim_start_matches('[').trim_end_matches(']');
    let ip: std::net::IpAddr = host.parse().ok()?;
    Some(std::net::SocketAddr::new(ip, uri.port_u16()?))
}

/// Whether `url` has a WebSocket scheme (any case).
fn is_websocket_url(url: &str) -> bool {
    url.split_once("://")
        .is_some_and(|(s, _)| s.eq_ignore_ascii_case("ws") || s.eq_ignore_ascii_case("wss"))
}

/// The warning for a debugger URL that cannot be used, with what to write instead.
fn bad_url_message(url: &str, error: &str) -> String {
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("http" | "https") => format!(
            "cannot use {url}: a GraphMind debugger is reached over WebSocket — use ws:// \
             (wss://) and the ingest path, e.g. ws://127.0.0.1:4747/ingest"
        ),
        _ => format!(
            "cannot use {url}: {error} (a debugger URL looks like ws://127.0.0.1:4747/ingest)"
        ),
    }
}

struct Ack {
    breakpoints: Vec<BreakpointMatcher>,
    mode: Mode,
    session_token: Option<String>,
    /// The hub acknowledges what it stored (`hubCapabilities` lists `hub-ack`).
    acking: bool,
    /// The hub announced `edit-input`.
    edit_input: bool,
    /// The hub's half of the channel key (`hubNonce`).
    hub_nonce: Option<String>,
}

enum AckRead {
    NotAck,
    /// The `gm` or `versions.protocol` seen.
    Mismatch(String),
    Ack(Ack),
}

/// Reads a handshake frame leniently, like the reference client: only `gm` and
/// `payload.versions.protocol` are required of an ack; bad matchers are skipped and a
/// missing or unknown mode means `run`.
fn read_ack(text: &str) -> AckRead {
    let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(text) else {
        return AckRead::NotAck;
    };
    match obj.get("gm") {
        Some(Value::Number(n)) if n.as_u64() == Some(PROTOCOL_VERSION) => {}
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => {
            return AckRead::Mismatch(n.to_string());
        }
        _ => return AckRead::NotAck,
    }
    if obj.get("type").and_then(Value::as_str) != Some("hello.ack") {
        return AckRead::NotAck;
    }
    let Some(Value::Object(payload)) = obj.get("payload") else {
        return AckRead::NotAck;
    };
    match payload.get("versions").and_then(|v| v.get("protocol")) {
        Some(Value::Number(n)) if n.as_u64() == Some(PROTOCOL_VERSION) => {}
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => {
            return AckRead::Mismatch(n.to_string());
        }
        _ => return AckRead::NotAck,
    }
    let breakpoints = payload
        .get("breakpoints")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|m| serde_json::from_value(m.clone()).ok())
                .collect()
        })
        .unwrap_or_default();
    let mode = payload
        .get("mode")
        .and_then(Value::as_str)
        .and_then(Mode::from_str)
        .unwrap_or(Mode::Run);
    let session_token = payload
        .get("sessionToken")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_owned);
    let hub_caps = payload.get("hubCapabilities").and_then(Value::as_array);
    let announces =
        |cap: &str| hub_caps.is_some_and(|caps| caps.iter().any(|c| c.as_str() == Some(cap)));
    let acking = announces(HUB_ACK);
    let edit_input = announces(EDIT_INPUT);
    let hub_nonce = payload
        .get(hub_auth::NONCE_FIELD)
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty() && n.len() <= hub_auth::MAX_NONCE_LEN)
        .map(str::to_owned);
    AckRead::Ack(Ack {
        breakpoints,
        mode,
        session_token,
        acking,
        edit_input,
        hub_nonce,
    })
}

async fn connected(shared: &Shared, ws: Socket, mut check: Option<ChannelCheck>) -> End {
    let cfg = shared.config();
    let (mut sink, mut stream) = ws.split();
    let mut ping = tokio::time::interval_at(Instant::now() + cfg.ping_interval, cfg.ping_interval);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_heard = Instant::now();
    let write_budget = cfg.pong_timeout.max(Duration::from_millis(200));
    loop {
        if shared.is_shutdown() {
            let _ = timeout(FLUSH_BUDGET, send_pending(shared, &mut sink)).await;
            let bye = Ws::Close(Some(CloseFrame {
                code: CloseCode::Normal,
                reason: "session disposed".into(),
            }));
            let _ = timeout(Duration::from_millis(100), sink.send(bye)).await;
            return End::Shutdown;
        }
        // A write stuck on a hung debugger ends the connection after the liveness budget;
        // when the session shuts down meanwhile, it gets only the flush budget.
        let sent = {
            let mut write = std::pin::pin!(timeout(write_budget, send_pending(shared, &mut sink)));
            let first = tokio::select! {
                sent = &mut write => Some(matches!(sent, Ok(Ok(())))),
                () = until_shutdown(shared) => None,
            };
            match first {
                Some(ok) => ok,
                None => {
                    if !matches!(timeout(FLUSH_BUDGET, write).await, Ok(Ok(Ok(())))) {
                        return End::Shutdown;
                    }
                    true
                }
            }
        };
        if !sent {
            return End::Lost;
        }
        tokio::select! {
            biased;
            frame = stream.next() => match frame {
                Some(Ok(frame)) => {
                    last_heard = Instant::now();
                    match frame {
                        Ws::Text(text) => handle_control(shared, text.as_str(), check.as_mut()),
                        Ws::Close(_) => return End::Lost,
                        _ => {}
                    }
                }
                Some(Err(tokio_tungstenite::tungstenite::Error::Capacity(_))) => {
                    shared.warn_once("frame-too-large", &frame_too_large(shared.url(), "frame"));
                    return End::Lost;
                }
                None | Some(Err(_)) => return End::Lost,
            },
            () = shared.woken() => {
                // Woken by the first of what is often a burst of events: let the burst gather
                // for a moment and send it as one batch, instead of waking this thread (a
                // syscall on the app's side) and writing to the socket once per event.
                if shared.ring().has_pending() {
                    std::thread::sleep(COALESCE);
                }
            }
            _ = ping.tick() => {
                if last_heard.elapsed() >= cfg.pong_timeout {
                    return End::Lost;
                }
                if !matches!(timeout(write_budget, sink.send(Ws::Ping(Bytes::new()))).await, Ok(Ok(()))) {
                    return End::Lost;
                }
            }
        }
    }
}

/// Sends everything at or after the ring's cursor, in batches.
async fn send_pending<S>(shared: &Shared, sink: &mut S) -> Result<(), S::Error>
where
    S: futures_util::Sink<Ws> + Unpin,
{
    loop {
        shared.taking_events();
        let (batch, last) = shared.ring().take_batch(BATCH, BATCH_BYTES);
        let Some(last) = last else {
            return Ok(());
        };
        for item in batch {
            if let Some(text) = item.into_text() {
                sink.feed(Ws::text(text)).await?;
            }
        }
        sink.flush().await?;
        shared.ring().delivered(last + 1);
    }
}

/// Applies one frame from the debugger. Anything unknown, invalid or unexpected is ignored;
/// on a signed channel, so is (counted, warned about once) a frame whose signature does not
/// check out.
fn handle_control(shared: &Shared, text: &str, check: Option<&mut ChannelCheck>) {
    let body;
    let text = match check.map(|c| c.accept(text)) {
        None => text,
        Some(Ok(accepted)) => {
            body = accepted;
            &body
        }
        Some(Err(why)) => {
            shared.ignored_control();
            shared.warn_once(
                "unsigned-control",
                &format!(
                    "ignored a frame from the debugger at {} because {why}: something between \
                     this app and its graphmind serve (a relaying process?) sent or changed it; \
                     such frames are ignored and counted in Stats::ignored_controls",
                    shared.url()
                ),
            );
            return;
        }
    };
    let apply = || {
        let env = match graphmind_protocol::parse(text) {
            Parsed::Ok(env) => env,
            Parsed::UnknownType(env) => {
                if let Message::Unknown { kind, payload } = &env.message
                    && kind == "hub.ack"
                    && let Some(up_to) = payload.get("upTo").and_then(Value::as_u64)
                {
                    shared.ring().acked(up_to.saturating_add(1));
                }
                return;
            }
            _ => return,
        };
        if !shared.is_controlled()
            && matches!(
                env.message,
                Message::ExecResume(_)
                    | Message::BreakpointSet(_)
                    | Message::BreakpointClear(_)
                    | Message::ModeSet(_)
            )
        {
            // Observe mode: nothing is held, and nothing from this debugger may change what
            // the app runs.
            shared.ignored_control();
            return;
        }
        match env.message {
            Message::ExecResume(resume) => shared.gates().resolve(resume, &env.run_id),
            Message::BreakpointSet(change) => {
                shared.update_debug_state(|s| s.breakpoints.set(change.matcher));
            }
            Message::BreakpointClear(change) => {
                shared.update_debug_state(|s| s.breakpoints.clear(&change.matcher));
            }
            Message::ModeSet(set) => shared.update_debug_state(|s| s.mode = set.mode),
            _ => {}
        }
    };
    // A bug on the execution side must not end the transport.
    let _ = std::panic::catch_unwind(AssertUnwindSafe(apply));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_ack_is_accepted() {
        let ack = r#"{"gm":1,"seq":0,"ts":0,"runId":"*","type":"hello.ack","payload":{"versions":{"protocol":1},"hubNonce":"ab"}}"#;
        let AckRead::Ack(a) = read_ack(ack) else {
            panic!("not an ack")
        };
        assert_eq!(a.hub_nonce.as_deref(), Some("ab"));
        assert!(a.breakpoints.is_empty());
        assert_eq!(a.mode, Mode::Run);
        assert_eq!(a.session_token, None);
    }

    #[test]
    fn ack_reading_sorts_mismatch_from_noise() {
        assert!(matches!(read_ack("junk"), AckRead::NotAck));
        assert!(matches!(
            read_ack(
                r#"{"gm":1,"seq":0,"ts":0,"runId":"*","type":"mode.set","payload":{"mode":"step"}}"#
            ),
            AckRead::NotAck
        ));
        assert!(matches!(
            read_ack(r#"{"gm":2,"seq":0,"ts":0,"runId":"*","type":"hello.ack","payload":{}}"#),
            AckRead::Mismatch(v) if v == "2"
        ));
        assert!(matches!(
            read_ack(r#"{"gm":1,"seq":0,"ts":0,"runId":"*","type":"hello.ack","payload":{"versions":{"protocol":2,"viewer":"x"}}}"#),
            AckRead::Mismatch(v) if v == "2"
        ));
        let AckRead::Ack(a) = read_ack(
            r#"{"gm":1,"seq":0,"ts":0,"runId":"*","type":"hello.ack","payload":{"versions":{"protocol":1},"breakpoints":[{"kind":"tool"},{"kind":"nope"},5],"mode":"step","sessionToken":"t"}}"#,
        ) else {
            panic!("not an ack")
        };
        assert_eq!(a.breakpoints.len(), 1);
        assert_eq!(a.mode, Mode::Step);
        assert_eq!(a.session_token.as_deref(), Some("t"));
        assert_eq!(a.hub_nonce, None);
    }

    #[test]
    fn only_loopback_urls_can_be_proven_by_a_run_file() {
        assert_eq!(loopback_port("ws://127.0.0.1:4747/ingest"), Some(4747));
        assert_eq!(loopback_port("ws://127.3.2.1:9/ingest"), Some(9));
        assert_eq!(loopback_port("WS://LOCALHOST:4748/ingest"), Some(4748));
        assert_eq!(loopback_port("ws://[::1]:4749/ingest"), Some(4749));
        assert_eq!(loopback_port("ws://localhost/ingest"), Some(80));
        assert_eq!(loopback_port("wss://127.0.0.1/ingest"), Some(443));
        assert_eq!(loopback_port("ws://10.0.0.5:4747/ingest"), None);
        assert_eq!(loopback_port("ws://debugger.example:4747/ingest"), None);
        assert_eq!(loopback_port("ws://localhost.example:4747/ingest"), None);
        assert_eq!(loopback_port("not a url"), None);
    }

    #[test]
    fn the_secret_and_address_are_read_from_the_run_file_only() {
        let dir = std::env::temp_dir().join(format!("gm-run-file-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("serve-1.json");
        std::fs::write(
            &file,
            r#"{"port":1,"url":"http://127.0.0.1:1","hubSecret":"s3cret"}"#,
        )
        .expect("write");
        let run = read_run_file(&file).expect("read");
        assert_eq!(run.secret, "s3cret");
        assert_eq!(run.address, Some(([127, 0, 0, 1], 1).into()));
        std::fs::write(&file, r#"{"port":1,"hubSecret":"s3cret"}"#).expect("write");
        assert_eq!(read_run_file(&file).expect("read").address, None);
        std::fs::write(&file, r#"{"port":1,"hubSecret":""}"#).expect("write");
        assert!(read_run_file(&file).is_none());
        std::fs::write(&file, r#"{"port":1}"#).expect("write");
        assert!(read_run_file(&file).is_none());
        std::fs::write(&file, "not json").expect("write");
        assert!(read_run_file(&file).is_none());
        assert!(read_run_file(&dir.join("missing.json")).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_run_file_names_one_exact_address() {
        assert_eq!(
            url_address("http://127.0.0.1:4747"),
            Some(([127, 0, 0, 1], 4747).into())
        );
        assert_eq!(
            url_address("ws://[::1]:9/ingest"),
            Some("[::1]:9".parse().expect("addr"))
        );
        // A name is not an address: it could resolve anywhere.
        assert_eq!(url_address("http://localhost:4747"), None);
        assert_eq!(url_address("http://127.0.0.1"), None);
        assert_eq!(url_address("nonsense"), None);
    }

    /// A session whose run files live in `home` and whose URL is `url`.
    fn session_at(url: &str, home: &std::path::Path) -> crate::Session {
        crate::Session::new(
            crate::Config::new("unit")
                .url(url)
                .hub_home(home)
                .env_vars(std::iter::empty::<(String, String)>()),
        )
    }

    #[test]
    fn a_run_file_secret_is_used_only_at_the_address_it_names() {
        let home = std::env::temp_dir().join(format!("gm-run-addr-unit-{}", std::process::id()));
        std::fs::create_dir_all(home.join("run")).expect("dir");
        std::fs::write(
            home.join("run").join("serve-4799.json"),
            r#"{"port":4799,"url":"http://127.0.0.1:4799","hubSecret":"s3cret"}"#,
        )
        .expect("write");
        let ok = session_at("ws://localhost:4799/ingest", &home);
        let hub: std::net::SocketAddr = ([127, 0, 0, 1], 4799).into();
        assert_eq!(
            same_user_secret(&ok.inner().shared, Some(hub)).as_deref(),
            Ok("s3cret"),
            "a name that resolved to the run file's address"
        );
        for relay in ["127.0.0.2:4799", "[::1]:4799", "127.0.0.1:4800"] {
            let relay: std::net::SocketAddr = relay.parse().expect("addr");
            let err = same_user_secret(&ok.inner().shared, Some(relay)).expect_err("refused");
            assert!(
                err.contains(&relay.to_string()) && err.contains("127.0.0.1:4799"),
                "{err}"
            );
        }
        assert!(same_user_secret(&ok.inner().shared, None).is_err());
        let _ = std::fs::remove_dir_all(&home);
    }

    #[test]
    fn a_non_loopback_hub_is_untrusted_even_with_a_right_proof() {
        let session = crate::Session::new(
            crate::Config::new("remote")
                .url("ws://10.0.0.5:4747/ingest")
                .env_vars(std::iter::empty::<(String, String)>()),
        );
        let shared = &session.inner().shared;
        let ack = ChannelKey::derive("s", "n", "h").sign(1, r#"{"type":"hello.ack"}"#);
        let hub = Proof {
            app_nonce: Some("n"),
            hub_nonce: Some("h"),
            ack: &ack,
            peer: Some(([10, 0, 0, 5], 4747).into()),
        };
        let err = trust_verdict(shared, &hub).expect_err("untrusted");
        assert!(err.contains("loopback"), "{err}");
        let trusting = crate::Session::new(
            crate::Config::new("remote")
                .url("ws://10.0.0.5:4747/ingest")
                .env_vars([("GRAPHMIND_TRUST_HUB", "true")]),
        );
        let unsigned = Proof {
            app_nonce: Some("n"),
            hub_nonce: None,
            ack: r#"{"type":"hello.ack"}"#,
            peer: None,
        };
        assert!(matches!(
            trust_verdict(&trusting.inner().shared, &unsigned),
            Ok(None)
        ));
    }

    #[test]
    fn an_explicit_secret_checks_the_signed_ack() {
        let session = crate::Session::new(
            crate::Config::new("secret")
                .url("ws://127.0.0.1:1/ingest")
                .trust_hub(TrustHub::Secret("s".into()))
                .env_vars(std::iter::empty::<(String, String)>()),
        );
        let shared = &session.inner().shared;
        let ack = ChannelKey::derive("s", "n", "h").sign(1, r#"{"type":"hello.ack"}"#);
        let proof = |hub_nonce, ack| Proof {
            app_nonce: Some("n"),
            hub_nonce,
            ack,
            peer: None,
        };
        let mut check = trust_verdict(shared, &proof(Some("h"), &ack))
            .expect("proven")
            .expect("a check for later frames");
        // Later frames must continue the count.
        assert!(check.accept(&ack).is_err(), "the ack again is a replay");
        let err = trust_verdict(shared, &proof(Some("other"), &ack)).expect_err("wrong nonce");
        assert!(err.contains("does not match"), "{err}");
        let err = trust_verdict(shared, &proof(None, &ack)).expect_err("no nonce");
        assert!(err.contains("no hubNonce"), "{err}");
        let err = trust_verdict(shared, &proof(Some("h"), r#"{"type":"hello.ack"}"#))
            .expect_err("unsigned");
        assert!(err.contains("no hubMac"), "{err}");
    }
}
