//! End-to-end tests across graphmind crates (the files under `tests/`), and the
//! [`FakeDebugger`] they run against.
//!
//! # The fake debugger
//! A real WebSocket server on `127.0.0.1:0` that plays the hub's side of GraphMind wire
//! protocol v1, scripted from the test:
//!
//! - it records every frame the client sends ([`FakeDebugger::frames`]) and validates EACH
//!   one against `wire-v1.schema.json` and the protocol crate's parser; an invalid frame
//!   fails the test (in [`FakeDebugger::wait_for`], in [`FakeDebugger::assert_valid`], and
//!   when the fake is dropped at the end of the test);
//! - it answers `hello` as told by [`Handshake`] (ack with the breakpoints, mode and session
//!   token set beforehand, never ack, ack with another protocol version, a raw payload) and
//!   can send junk before the ack ([`FakeDebugger::set_before_ack`]);
//! - it proves itself the way `graphmind serve` does: at start it writes a run file with a
//!   random `hubSecret` and its address into a private temporary home ([`FakeDebugger::home`],
//!   which [`FakeDebugger::config`] points the client at), answers each `hello`'s `hubNonce`
//!   with one of its own and signs every later frame on that connection
//!   (`graphmind_protocol::hub_auth`); [`FakeDebugger::set_proof`] makes it a squatter that
//!   signs nothing or signs under a wrong secret, and [`FakeDebugger::send_forged`] sends a
//!   frame unsigned, as a process relaying the connection would add one;
//! - it pushes controls to the newest connection: [`FakeDebugger::resume`],
//!   [`FakeDebugger::breakpoint_set`], [`FakeDebugger::breakpoint_clear`],
//!   [`FakeDebugger::mode_set`], or anything with [`FakeDebugger::send`] /
//!   [`FakeDebugger::send_raw`];
//! - it can die abruptly ([`FakeDebugger::kill`]: every socket dropped, no close frame, the
//!   port closed), come back on the same port ([`FakeDebugger::restart`]), or hang
//!   ([`FakeDebugger::freeze`]: sockets stay open but nothing is read, so pings go
//!   unanswered).
//!
//! ```no_run
//! use std::time::Duration;
//! use graphmind_tests::FakeDebugger;
//!
//! # async fn demo() {
//! let hub = FakeDebugger::start().await;
//! hub.set_breakpoints(vec![serde_json::json!({"kind": "tool"})]);
//! let session = graphmind::Session::new(hub.config("my-test"));
//! assert!(session.ready(Duration::from_secs(2)).await);
//! let hello = hub.wait_for_kind("hello", Duration::from_secs(1)).await;
//! assert_eq!(hello.payload()["app"], "my-test");
//! # }
//! ```
//!
//! The server's tasks run on the test's tokio runtime (a `#[tokio::test]` current-thread
//! runtime is fine: the client's transport has its own thread), so do not block that
//! runtime's thread while you expect the fake to answer.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use graphmind_protocol::{Parsed, parse};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message as Ws;

pub mod adapter;
mod expect;
pub use expect::{Expect, any_frame, assert_frames, first_divergence, frame, of_expected_kinds};

const SCHEMA: &str = include_str!("../../graphmind-protocol/fixtures/wire-v1.schema.json");

/// A loopback port that refuses connections while this is held: bound, so that no other
/// test's server can be handed it, and never listening. (A port read from a listener that is
/// then closed can go to the next server that binds port 0, in a test running beside.)
pub struct RefusingPort {
    _socket: tokio::net::TcpSocket,
    /// The port.
    pub port: u16,
}

impl RefusingPort {
    /// Binds a socket on 127.0.0.1 without listening on it.
    #[must_use]
    pub fn bind() -> Self {
        let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
        socket
            .bind(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
            .expect("bind");
        let port = socket.local_addr().expect("addr").port();
        Self {
            _socket: socket,
            port,
        }
    }
}

/// The compiled wire-v1 schema.
pub fn schema() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| {
        let schema: Value = serde_json::from_str(SCHEMA).expect("the wire schema is JSON");
        jsonschema::validator_for(&schema).expect("the wire schema compiles")
    })
}

/// Checks one client frame: JSON, valid against the wire schema, and parsed `Ok` by
/// `graphmind_protocol::parse`. The error says what is wrong.
///
/// # Errors
/// A description of the first problem found.
pub fn validate_frame(text: &str) -> Result<Value, String> {
    let json: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e}): {text}"))?;
    if let Err(e) = schema().validate(&json) {
        return Err(format!("fails the wire schema ({e}): {text}"));
    }
    match parse(text) {
        Parsed::Ok(_) => Ok(json),
        other => Err(format!("protocol parse gave {other:?}: {text}")),
    }
}

/// How the fake answers a `hello`.
#[derive(Debug, Clone, PartialEq)]
pub enum Handshake {
    /// A full `hello.ack` (protocol 1) with the configured breakpoints, mode and token.
    Ack,
    /// Accept the WebSocket, read `hello`, never answer.
    Never,
    /// A `hello.ack` whose `versions.protocol` is this number.
    Protocol(u64),
    /// A `hello.ack` envelope whose `gm` is this number.
    Gm(u64),
    /// A `hello.ack` with this payload (plus the `hubNonce` the [`Proof`] setting calls for).
    Payload(Value),
}

/// How the fake answers the `hello`'s `hubNonce` and signs its frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proof {
    /// A nonce of its own, and every frame signed under the secret of its run file (the
    /// default).
    Right,
    /// No `hubNonce` and nothing signed (another GraphMind hub, or a squatter that knows
    /// nothing of it).
    Missing,
    /// Well-formed signatures under another secret (a squatter guessing).
    Wrong,
}

/// One frame the client sent.
#[derive(Debug, Clone)]
pub struct Frame {
    /// Which connection it came on (1 = the first accepted WebSocket).
    pub conn: usize,
    /// When it arrived.
    pub at: Instant,
    /// The raw text.
    pub text: String,
    /// The parsed JSON (`Null` if it was not JSON).
    pub json: Value,
}

impl Frame {
    /// The `type`.
    #[must_use]
    pub fn kind(&self) -> &str {
        self.json["type"].as_str().unwrap_or("")
    }

    /// The `seq` (`u64::MAX` if missing).
    #[must_use]
    pub fn seq(&self) -> u64 {
        self.json["seq"].as_u64().unwrap_or(u64::MAX)
    }

    /// The `runId`.
    #[must_use]
    pub fn run_id(&self) -> &str {
        self.json["runId"].as_str().unwrap_or("")
    }

    /// The `payload`.
    #[must_use]
    pub fn payload(&self) -> &Value {
        &self.json["payload"]
    }
}

struct Script {
    handshake: Handshake,
    breakpoints: Vec<Value>,
    mode: String,
    /// `None`: no sessionToken; `Some("")`: `tok-<conn>`; else this token.
    session_token: Option<String>,
    before_ack: Vec<String>,
    proof: Proof,
    /// `hubCapabilities` sent in the ack (absent when empty).
    hub_capabilities: Vec<String>,
}

/// A frame for a connection to send: signed on a proven channel, or not (forged).
struct Out {
    text: String,
    sign: bool,
}

struct Conn {
    tx: mpsc::UnboundedSender<Out>,
    task: JoinHandle<()>,
}

struct Shared {
    script: Mutex<Script>,
    frames: Mutex<Vec<Frame>>,
    invalid: Mutex<Vec<String>>,
    conns: Mutex<Vec<Conn>>,
    closes: Mutex<Vec<(usize, Option<u16>)>>,
    tcp_accepts: AtomicUsize,
    ws_accepts: AtomicUsize,
    seq: AtomicU64,
    frozen: watch::Sender<bool>,
    secret: String,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A scripted GraphMind hub on `127.0.0.1`. See the [crate docs](crate).
pub struct FakeDebugger {
    port: u16,
    home: std::path::PathBuf,
    shared: Arc<Shared>,
    acceptor: Mutex<Option<JoinHandle<()>>>,
}

impl FakeDebugger {
    /// Starts on a free port, answering `hello` with a full ack: no breakpoints, mode `run`,
    /// sessionToken `tok-<connection number>`.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let (frozen, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            script: Mutex::new(Script {
                handshake: Handshake::Ack,
                breakpoints: Vec::new(),
                mode: "run".into(),
                session_token: Some(String::new()),
                before_ack: Vec::new(),
                proof: Proof::Right,
                hub_capabilities: Vec::new(),
            }),
            frames: Mutex::new(Vec::new()),
            invalid: Mutex::new(Vec::new()),
            conns: Mutex::new(Vec::new()),
            closes: Mutex::new(Vec::new()),
            tcp_accepts: AtomicUsize::new(0),
            ws_accepts: AtomicUsize::new(0),
            seq: AtomicU64::new(0),
            frozen,
            secret: random_hex(),
        });
        let home = write_run_file(port, &shared.secret);
        let acceptor = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        Self {
            port,
            home,
            shared,
            acceptor: Mutex::new(Some(acceptor)),
        }
    }

    /// The port it listens on (kept across [`FakeDebugger::restart`]).
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `ws://127.0.0.1:<port>/ingest`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("ws://127.0.0.1:{}/ingest", self.port)
    }

    /// A client config pointed at this fake, isolated from the process environment (no
    /// switch variables apply), finding the fake's run file in [`FakeDebugger::home`].
    #[must_use]
    pub fn config(&self, app: &str) -> graphmind::Config {
        graphmind::Config::new(app)
            .url(self.url())
            .env_vars(std::iter::empty::<(String, String)>())
            .hub_home(&self.home)
    }

    /// The private home holding this fake's run file (`run/serve-<port>.json`).
    #[must_use]
    pub fn home(&self) -> &std::path::Path {
        &self.home
    }

    /// The secret in the run file (what a correct `hubProof` is keyed with).
    #[must_use]
    pub fn secret(&self) -> &str {
        &self.shared.secret
    }

    /// How later `hello`s are answered in `hubProof` (default [`Proof::Right`]).
    pub fn set_proof(&self, proof: Proof) {
        lock(&self.shared.script).proof = proof;
    }

    /// How later `hello`s are answered.
    pub fn set_handshake(&self, handshake: Handshake) {
        lock(&self.shared.script).handshake = handshake;
    }

    /// Breakpoints sent in later acks (matcher objects as JSON).
    pub fn set_breakpoints(&self, matchers: Vec<Value>) {
        lock(&self.shared.script).breakpoints = matchers;
    }

    /// `hubCapabilities` sent in later acks (e.g. `["pause-registry", "edit-input"]`); none
    /// by default.
    pub fn set_hub_capabilities(&self, caps: &[&str]) {
        lock(&self.shared.script).hub_capabilities = caps.iter().map(|c| (*c).to_owned()).collect();
    }

    /// Mode sent in later acks (`run` or `step`).
    pub fn set_mode(&self, mode: &str) {
        lock(&self.shared.script).mode = mode.to_owned();
    }

    /// Session token sent in later acks: `Some(token)`, or `None` for no token. The default
    /// is `tok-<connection number>`.
    pub fn set_session_token(&self, token: Option<&str>) {
        lock(&self.shared.script).session_token = token.map(str::to_owned);
    }

    /// Raw text frames sent right after `hello`, before the ack.
    pub fn set_before_ack(&self, frames: Vec<String>) {
        lock(&self.shared.script).before_ack = frames;
    }

    /// Every frame received so far, in arrival order, across connections.
    #[must_use]
    pub fn frames(&self) -> Vec<Frame> {
        lock(&self.shared.frames).clone()
    }

    /// The received frames of one `type`.
    #[must_use]
    pub fn frames_of(&self, kind: &str) -> Vec<Frame> {
        lock(&self.shared.frames)
            .iter()
            .filter(|f| f.kind() == kind)
            .cloned()
            .collect()
    }

    /// TCP connections accepted (before any WebSocket upgrade).
    #[must_use]
    pub fn tcp_accepts(&self) -> usize {
        self.shared.tcp_accepts.load(Ordering::SeqCst)
    }

    /// WebSocket connections accepted.
    #[must_use]
    pub fn connections(&self) -> usize {
        self.shared.ws_accepts.load(Ordering::SeqCst)
    }

    /// WebSocket connections still open.
    #[must_use]
    pub fn open_connections(&self) -> usize {
        lock(&self.shared.conns)
            .iter()
            .filter(|c| !c.task.is_finished())
            .count()
    }

    /// Close frames received: `(connection, code)`.
    #[must_use]
    pub fn closes(&self) -> Vec<(usize, Option<u16>)> {
        lock(&self.shared.closes).clone()
    }

    /// Frames that failed validation, with the reason.
    #[must_use]
    pub fn invalid(&self) -> Vec<String> {
        lock(&self.shared.invalid).clone()
    }

    /// Panics if any received frame was invalid.
    pub fn assert_valid(&self) {
        let bad = self.invalid();
        assert!(
            bad.is_empty(),
            "the client sent invalid frames:\n{}",
            bad.join("\n")
        );
    }

    /// Waits until `pred` holds for the frames received so far; returns them. Panics with
    /// `what` and a summary of the frames on timeout, or at once if a frame was invalid.
    pub async fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&[Frame]) -> bool,
    ) -> Vec<Frame> {
        match self.try_wait_for(timeout, pred).await {
            Some(frames) => frames,
            None => panic!(
                "timed out after {timeout:?} waiting for {what}; received: {}",
                summary(&self.frames())
            ),
        }
    }

    /// Like [`FakeDebugger::wait_for`] but `None` on timeout.
    pub async fn try_wait_for(
        &self,
        timeout: Duration,
        pred: impl Fn(&[Frame]) -> bool,
    ) -> Option<Vec<Frame>> {
        let deadline = Instant::now() + timeout;
        loop {
            self.assert_valid();
            {
                let frames = lock(&self.shared.frames);
                if pred(&frames) {
                    return Some(frames.clone());
                }
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Waits for the first frame of `kind` and returns it.
    pub async fn wait_for_kind(&self, kind: &str, timeout: Duration) -> Frame {
        let frames = self
            .wait_for(&format!("a {kind} frame"), timeout, |fs| {
                fs.iter().any(|f| f.kind() == kind)
            })
            .await;
        frames
            .into_iter()
            .find(|f| f.kind() == kind)
            .expect("present")
    }

    /// Waits until `n` frames of `kind` arrived; returns those frames, in order.
    pub async fn wait_count(&self, kind: &str, n: usize, timeout: Duration) -> Vec<Frame> {
        let frames = self
            .wait_for(&format!("{n} {kind} frame(s)"), timeout, |fs| {
                fs.iter().filter(|f| f.kind() == kind).count() >= n
            })
            .await;
        frames.into_iter().filter(|f| f.kind() == kind).collect()
    }

    /// Waits for the first frame that matches `expected` (type and fields) and returns it.
    pub async fn wait_match(&self, expected: &Expect, timeout: Duration) -> Frame {
        let frames = self
            .wait_for(&format!("{expected:?}"), timeout, |fs| {
                fs.iter().any(|f| expected.matches(f))
            })
            .await;
        frames
            .into_iter()
            .find(|f| expected.matches(f))
            .expect("present")
    }

    /// Waits until at least `n` frames match `expected`; returns every frame received so far
    /// (a snapshot taken when the `n`-th matched), so the caller can look at the rest too.
    pub async fn wait_matches(&self, expected: &Expect, n: usize, timeout: Duration) -> Vec<Frame> {
        self.wait_for(
            &format!("{n} frame(s) matching {expected:?}"),
            timeout,
            |fs| fs.iter().filter(|f| expected.matches(f)).count() >= n,
        )
        .await
    }

    /// Waits until as many frames of the expected types arrived as are expected, then asserts
    /// they are the expected ones in order (the panic names the first divergence: frame index,
    /// frame, field). Frames of other types in between are ignored. Returns the matched frames.
    #[track_caller]
    pub fn wait_frames<'a>(
        &'a self,
        expected: &'a [Expect],
        timeout: Duration,
    ) -> impl Future<Output = Vec<Frame>> + 'a {
        let caller = std::panic::Location::caller();
        async move {
            let frames = self
                .wait_for(
                    &format!("{} frame(s) of types {:?}", expected.len(), kinds(expected)),
                    timeout,
                    |fs| of_expected_kinds(fs, expected).len() >= expected.len(),
                )
                .await;
            let seen = of_expected_kinds(&frames, expected);
            if let Some(why) = first_divergence(&seen, expected) {
                panic!("{caller}: frames differ from the expectation at {why}");
            }
            seen
        }
    }

    /// Waits until `n` WebSocket connections were accepted in total.
    pub async fn wait_connections(&self, n: usize, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.connections() < n {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {n} connections (have {})",
                self.connections()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// A control frame from this fake: `{"gm":1,"seq":N,"ts":…,"runId":…,"type":…,"payload":…}`.
    #[must_use]
    pub fn control(&self, kind: &str, run_id: &str, payload: Value) -> Value {
        envelope(&self.shared, kind, run_id, payload)
    }

    /// Sends a JSON frame to the newest open connection. False if none is open.
    pub fn send(&self, frame: &Value) -> bool {
        self.send_raw(&frame.to_string())
    }

    /// Sends a raw text frame to the newest open connection (signed there, as the hub signs
    /// every frame on a proven connection). False if none is open.
    pub fn send_raw(&self, text: &str) -> bool {
        self.send_out(text, true)
    }

    /// Sends a raw text frame to the newest open connection without signing it, as a process
    /// relaying the connection would add one. False if none is open.
    pub fn send_forged(&self, text: &str) -> bool {
        self.send_out(text, false)
    }

    fn send_out(&self, text: &str, sign: bool) -> bool {
        let conns = lock(&self.shared.conns);
        conns
            .iter()
            .rev()
            .find(|c| !c.task.is_finished())
            .is_some_and(|c| {
                c.tx.send(Out {
                    text: text.to_owned(),
                    sign,
                })
                .is_ok()
            })
    }

    /// Sends `exec.resume {pauseId, action}` on `run_id`.
    pub fn resume(&self, run_id: &str, pause_id: &str, action: &str) -> bool {
        self.send(&self.control(
            "exec.resume",
            run_id,
            json!({"pauseId": pause_id, "action": action}),
        ))
    }

    /// Sends `exec.resume {pauseId, action: "inject", output}` on `run_id`.
    pub fn inject(&self, run_id: &str, pause_id: &str, output: Value) -> bool {
        self.send(&self.control(
            "exec.resume",
            run_id,
            json!({"pauseId": pause_id, "action": "inject", "output": output}),
        ))
    }

    /// Sends `breakpoint.set {matcher}`.
    pub fn breakpoint_set(&self, matcher: Value) -> bool {
        self.send(&self.control("breakpoint.set", "*", json!({ "matcher": matcher })))
    }

    /// Sends `breakpoint.clear {matcher}`.
    pub fn breakpoint_clear(&self, matcher: Value) -> bool {
        self.send(&self.control("breakpoint.clear", "*", json!({ "matcher": matcher })))
    }

    /// Sends `mode.set {mode}`.
    pub fn mode_set(&self, mode: &str) -> bool {
        self.send(&self.control("mode.set", "*", json!({ "mode": mode })))
    }

    /// Hangs (`true`) or wakes (`false`) every connection: while hung nothing is read, so
    /// pings go unanswered and frames pile up in the socket.
    pub fn freeze(&self, on: bool) {
        self.shared.frozen.send_replace(on);
    }

    /// Dies abruptly: stops accepting (the port is closed) and drops every socket without a
    /// close frame.
    pub fn kill(&self) {
        if let Some(acceptor) = lock(&self.acceptor).take() {
            acceptor.abort();
        }
        for conn in lock(&self.shared.conns).drain(..) {
            conn.task.abort();
        }
    }

    /// Drops every open WebSocket abruptly but keeps listening.
    pub fn drop_connections(&self) {
        for conn in lock(&self.shared.conns).drain(..) {
            conn.task.abort();
        }
    }

    /// Listens again on the same port after [`FakeDebugger::kill`] (recorded frames are
    /// kept). Retries the bind for up to 2 s.
    pub async fn restart(&self) {
        self.kill();
        self.shared.frozen.send_replace(false);
        let deadline = Instant::now() + Duration::from_secs(2);
        let listener = loop {
            match TcpListener::bind(("127.0.0.1", self.port)).await {
                Ok(l) => break l,
                Err(e) => {
                    assert!(
                        Instant::now() < deadline,
                        "cannot rebind port {}: {e}",
                        self.port
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        };
        let acceptor = tokio::spawn(accept_loop(listener, Arc::clone(&self.shared)));
        *lock(&self.acceptor) = Some(acceptor);
    }
}

impl Drop for FakeDebugger {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.home);
        if !std::thread::panicking() {
            self.assert_valid();
        }
    }
}

/// Attaches `session` once the fake acks again: a `ready` joins a connection attempt in flight
/// (which may be one the fake never acked), so this asks up to four times, `timeout` each.
/// Returns whether it attached.
pub async fn attach(session: &graphmind::Session, timeout: Duration) -> bool {
    for _ in 0..4 {
        if session.ready(timeout).await {
            return true;
        }
    }
    false
}

/// Polls `cond` every 5 ms until it holds; panics with `what` after `timeout`. Returns how
/// long it took.
pub async fn eventually(what: &str, timeout: Duration, cond: impl Fn() -> bool) -> Duration {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    start.elapsed()
}

/// A small event for `Session::emit`: a `node.token` of `node_id` carrying `text`.
#[must_use]
pub fn token_event(node_id: &str, text: &str) -> graphmind::protocol::Message {
    use graphmind::protocol::{DeltaKind, Extra, Message, NodeToken, TokenDelta};
    Message::NodeToken(NodeToken {
        node_id: node_id.to_owned(),
        deltas: vec![TokenDelta {
            t: DeltaKind::Text,
            v: text.to_owned(),
            extra: Extra::new(),
        }],
        extra: Extra::new(),
    })
}

fn kinds(expected: &[Expect]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for e in expected {
        if !out.contains(&e.kind()) {
            out.push(e.kind());
        }
    }
    out
}

/// `type@seq` of each frame, for failure messages.
#[must_use]
pub fn summary(frames: &[Frame]) -> String {
    frames
        .iter()
        .map(|f| format!("{}@{}#{}", f.kind(), f.seq(), f.conn))
        .collect::<Vec<_>>()
        .join(", ")
}

/// 32 random bytes as hex (the hub's secret), from the OS.
fn random_hex() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("OS randomness");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `<tmp home>/run/serve-<port>.json` holding `hubSecret`, private like the hub's.
fn write_run_file(port: u16, secret: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    static N: AtomicUsize = AtomicUsize::new(0);
    let home = std::env::temp_dir().join(format!(
        "gm-fake-hub-{}-{port}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let run = home.join("run");
    std::fs::create_dir_all(&run).expect("fake hub home");
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let file = run.join(format!("serve-{port}.json"));
    let doc = json!({
        "port": port,
        "url": format!("http://127.0.0.1:{port}"),
        graphmind_protocol::hub_auth::SECRET_KEY: secret,
    });
    std::fs::write(&file, format!("{doc}\n")).expect("fake run file");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    home
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn envelope(shared: &Shared, kind: &str, run_id: &str, payload: Value) -> Value {
    json!({
        "gm": 1,
        "seq": shared.seq.fetch_add(1, Ordering::SeqCst),
        "ts": now_ms(),
        "runId": run_id,
        "type": kind,
        "payload": payload,
    })
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        shared.tcp_accepts.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = mpsc::unbounded_channel();
        let conn_shared = Arc::clone(&shared);
        // Register before the task runs so kill() always finds it.
        let mut conns = lock(&shared.conns);
        let task = tokio::spawn(serve(tcp, conn_shared, rx));
        conns.push(Conn { tx, task });
    }
}

async fn serve(tcp: TcpStream, shared: Arc<Shared>, mut out: mpsc::UnboundedReceiver<Out>) {
    let _ = tcp.set_nodelay(true);
    let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
        return;
    };
    let conn = shared.ws_accepts.fetch_add(1, Ordering::SeqCst) + 1;
    let mut frozen = shared.frozen.subscribe();
    let mut acked = false;
    // The proven channel's key and the last counter used.
    let mut channel: Option<(graphmind_protocol::hub_auth::ChannelKey, u64)> = None;
    loop {
        let is_frozen = *frozen.borrow_and_update();
        tokio::select! {
            frame = ws.next(), if !is_frozen => match frame {
                Some(Ok(Ws::Text(text))) => {
                    let text = text.as_str().to_owned();
                    let json = match validate_frame(&text) {
                        Ok(v) => v,
                        Err(e) => {
                            lock(&shared.invalid).push(e);
                            serde_json::from_str(&text).unwrap_or(Value::Null)
                        }
                    };
                    let is_hello = json["type"] == "hello";
                    let caps = json["payload"]["capabilities"].clone();
                    let nonce = json["payload"]["hubNonce"].as_str().map(str::to_owned);
                    lock(&shared.frames).push(Frame { conn, at: Instant::now(), text, json });
                    if is_hello && !acked {
                        acked = true;
                        let (before, ack, key) =
                            handshake_replies(&shared, conn, caps, nonce.as_deref());
                        for reply in before {
                            if ws.send(Ws::text(reply)).await.is_err() {
                                return;
                            }
                        }
                        channel = key.map(|k| (k, 0));
                        if let Some(ack) = ack {
                            let ack = sign(&mut channel, ack);
                            if ws.send(Ws::text(ack)).await.is_err() {
                                return;
                            }
                        }
                    }
                }
                Some(Ok(Ws::Binary(_))) => {
                    lock(&shared.invalid).push("a binary frame".to_owned());
                }
                Some(Ok(Ws::Close(frame))) => {
                    let code = frame.map(|f| u16::from(f.code));
                    lock(&shared.closes).push((conn, code));
                    return;
                }
                None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            },
            text = out.recv() => match text {
                Some(Out { text, sign: signed }) => {
                    let text = if signed { sign(&mut channel, text) } else { text };
                    if ws.send(Ws::text(text)).await.is_err() {
                        return;
                    }
                }
                None => return,
            },
            _ = frozen.changed() => {}
        }
    }
}

/// `text` signed as the next frame of a proven channel, or as it is without one.
fn sign(
    channel: &mut Option<(graphmind_protocol::hub_auth::ChannelKey, u64)>,
    text: String,
) -> String {
    match channel {
        Some((key, counter)) => {
            *counter += 1;
            key.sign(*counter, &text)
        }
        None => text,
    }
}

/// What the fake sends after a `hello`: the frames before the ack (unsigned), the ack (signed
/// by the caller), and the channel key the ack and every later frame are signed with.
fn handshake_replies(
    shared: &Shared,
    conn: usize,
    caps: Value,
    nonce: Option<&str>,
) -> (
    Vec<String>,
    Option<String>,
    Option<graphmind_protocol::hub_auth::ChannelKey>,
) {
    use graphmind_protocol::hub_auth::{ChannelKey, NONCE_FIELD};
    let script = lock(&shared.script);
    let hub_nonce = random_hex();
    let key = match (script.proof, nonce) {
        (Proof::Right, Some(n)) => Some(ChannelKey::derive(&shared.secret, n, &hub_nonce)),
        (Proof::Wrong, Some(n)) => Some(ChannelKey::derive("not-the-secret", n, &hub_nonce)),
        _ => None,
    };
    let replies = script.before_ack.clone();
    let caps = if caps.is_array() { caps } else { json!([]) };
    let full = |protocol: u64| {
        let mut payload = json!({
            "versions": {"protocol": protocol, "viewer": "fake-debugger"},
            "capabilities": caps,
            "breakpoints": script.breakpoints,
            "mode": script.mode,
        });
        match script.session_token.as_deref() {
            None => {}
            Some("") => payload["sessionToken"] = json!(format!("tok-{conn}")),
            Some(t) => payload["sessionToken"] = json!(t),
        }
        if key.is_some() {
            payload[NONCE_FIELD] = json!(hub_nonce);
        }
        if !script.hub_capabilities.is_empty() {
            payload["hubCapabilities"] = json!(script.hub_capabilities);
        }
        payload
    };
    let ack = match &script.handshake {
        Handshake::Never => return (replies, None, None),
        Handshake::Ack => envelope(shared, "hello.ack", "*", full(1)),
        Handshake::Protocol(p) => envelope(shared, "hello.ack", "*", full(*p)),
        Handshake::Gm(gm) => {
            let mut e = envelope(shared, "hello.ack", "*", full(1));
            e["gm"] = json!(gm);
            e
        }
        Handshake::Payload(p) => {
            let mut p = p.clone();
            if let (Some(_), Some(obj)) = (&key, p.as_object_mut()) {
                obj.entry(NONCE_FIELD).or_insert_with(|| json!(hub_nonce));
            }
            envelope(shared, "hello.ack", "*", p)
        }
    };
    (replies, Some(ack.to_string()), key)
}
