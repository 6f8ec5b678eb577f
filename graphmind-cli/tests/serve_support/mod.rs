//! Shared helpers of the hub's integration tests: start the real `graphmind serve` binary on
//! a free port with a private home, talk HTTP to it over a raw socket, and play an app or a
//! viewer over WebSocket.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

/// A private temporary directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let p = std::env::temp_dir().join(format!(
            "gm-{tag}-{}-{nanos}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).expect("temp dir");
        Self(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `graphmind serve`.
pub struct Serve {
    pub child: Child,
    pub port: u16,
    pub line: Value,
    pub home: PathBuf,
    pub agent_token: String,
    pub viewer_token: String,
}

impl Serve {
    /// Starts `graphmind serve --port 0 --json --no-open` with `GRAPHMIND_HOME=home` and the
    /// extra flags.
    pub fn start_in(home: &std::path::Path, extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_graphmind"))
            .args(["serve", "--port", "0", "--json", "--no-open"])
            .args(extra)
            .env("GRAPHMIND_HOME", home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn graphmind serve");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("serve printed no line in 20 s");
        let line: Value = serde_json::from_str(line.trim()).expect("the --json line is JSON");
        let port = u16::try_from(line["port"].as_u64().expect("port")).expect("port fits");
        let run_file = home.join("run").join(format!("serve-{port}.json"));
        let run: Value =
            serde_json::from_str(&std::fs::read_to_string(&run_file).expect("run file"))
                .expect("run file is JSON");
        let agent_token = run["token"].as_str().expect("token").to_owned();
        let viewer_url = line["viewerUrl"].as_str().expect("viewerUrl");
        let viewer_token = viewer_url
            .split_once("#token=")
            .expect("token in fragment")
            .1
            .to_owned();
        Self {
            child,
            port,
            line,
            home: home.to_path_buf(),
            agent_token,
            viewer_token,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("ws://127.0.0.1:{}{path}", self.port)
    }

    pub fn run_file(&self) -> PathBuf {
        self.home
            .join("run")
            .join(format!("serve-{}.json", self.port))
    }

    /// Sends SIGINT and waits for the exit (at most 10 s).
    pub fn interrupt(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                return s;
            }
            assert!(Instant::now() < deadline, "serve did not exit on SIGINT");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn get(&self, path: &str) -> Response {
        http(self.port, "GET", path, &[], None)
    }

    pub fn get_json(&self, path: &str) -> Value {
        let r = self.get(path);
        assert_eq!(r.status, 200, "GET {path}: {}", r.body);
        r.json()
    }

    /// POST JSON with the agent token.
    pub fn post(&self, path: &str, body: &Value) -> Response {
        let auth = format!("Bearer {}", self.agent_token);
        http(
            self.port,
            "POST",
            path,
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            Some(&body.to_string()),
        )
    }

    /// The runs list.
    pub fn runs(&self) -> Vec<Value> {
        self.get_json("/api/runs")["runs"]
            .as_array()
            .expect("runs")
            .clone()
    }

    /// All stored events of a run (paged); empty while the run is unknown.
    pub fn events(&self, run: &str) -> Vec<Value> {
        Self::events_on(self.port, run)
    }

    /// All stored events of a run of the hub on `port` (paged); empty while it is unknown.
    pub fn events_on(port: u16, run: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let mut after: Option<u64> = None;
        loop {
            let q = after.map_or_else(String::new, |a| format!("&afterSeq={a}"));
            let r = http(
                port,
                "GET",
                &format!("/api/runs/{run}/events?limit=10000{q}"),
                &[],
                None,
            );
            if r.status == 404 {
                return out; // the run is not known (yet)
            }
            assert_eq!(r.status, 200, "events of {run}: {}", r.body);
            let page = r.json();
            out.extend(page["events"].as_array().expect("events").iter().cloned());
            if page["more"] != json!(true) {
                return out;
            }
            after = page["nextAfterSeq"].as_u64();
        }
    }

    /// The stored seqs of a run.
    pub fn seqs(&self, run: &str) -> Vec<u64> {
        self.events(run)
            .iter()
            .map(|e| e["seq"].as_u64().expect("seq"))
            .collect()
    }

    pub fn health(&self) -> Value {
        self.get_json("/health")
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A hub in its own temporary home.
pub struct TestHub {
    pub serve: Serve,
    pub dir: TempDir,
}

impl std::ops::Deref for TestHub {
    type Target = Serve;
    fn deref(&self) -> &Serve {
        &self.serve
    }
}

impl std::ops::DerefMut for TestHub {
    fn deref_mut(&mut self) -> &mut Serve {
        &mut self.serve
    }
}

pub fn hub(extra: &[&str]) -> TestHub {
    let dir = TempDir::new("hub");
    let serve = Serve::start_in(&dir.0, extra);
    TestHub { serve, dir }
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Response {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// A header value (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }
}

/// One HTTP/1.1 request over a fresh connection. `Host: 127.0.0.1:<port>` is added unless
/// the headers carry a Host (an empty value means: send no Host at all).
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Response {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("host") && v.is_empty() {
            continue;
        }
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    req.push_str("\r\n");
    if let Some(b) = body {
        req.push_str(b);
    }
    s.write_all(req.as_bytes()).expect("write");
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Response {
        status,
        head: head.to_owned(),
        body,
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Polls `f` until it returns `Some`, for at most `secs` seconds.
pub fn wait_for<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A WebSocket peer (fake app or fake viewer).
pub struct Peer {
    pub ws: Ws,
}

/// What a receive produced.
#[derive(Debug)]
pub enum Got {
    Json(Value),
    Closed(Option<u16>),
    Timeout,
}

impl Peer {
    pub async fn connect(port: u16, path: &str) -> Self {
        Self::connect_with(port, path, &[]).await.expect("upgrade")
    }

    /// Connects with extra request headers; `Err` holds the HTTP status of a refused upgrade.
    pub async fn connect_with(
        port: u16,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Result<Self, u16> {
        let mut req = format!("ws://127.0.0.1:{port}{path}")
            .into_client_request()
            .expect("request");
        for (k, v) in headers {
            let name: tokio_tungstenite::tungstenite::http::HeaderName =
                k.parse().expect("header name");
            req.headers_mut()
                .insert(name, HeaderValue::from_str(v).expect("header value"));
        }
        match tokio_tungstenite::connect_async(req).await {
            Ok((ws, _)) => Ok(Self { ws }),
            Err(tokio_tungstenite::tungstenite::Error::Http(r)) => Err(r.status().as_u16()),
            Err(e) => panic!("connect failed: {e}"),
        }
    }

    pub async fn send(&mut self, v: &Value) {
        self.ws
            .send(Message::text(v.to_string()))
            .await
            .expect("send");
    }

    pub async fn send_text(&mut self, s: &str) {
        self.ws
            .send(Message::text(s.to_owned()))
            .await
            .expect("send");
    }

    /// Sends, ignoring errors (the hub may have closed already).
    pub async fn try_send_text(&mut self, s: String) -> bool {
        self.ws.send(Message::text(s)).await.is_ok()
    }

    pub async fn recv(&mut self, ms: u64) -> Got {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(ms);
        loop {
            match tokio::time::timeout_at(deadline, self.ws.next()).await {
                Err(_) => return Got::Timeout,
                Ok(None) | Ok(Some(Err(_))) => return Got::Closed(None),
                Ok(Some(Ok(Message::Text(t)))) => {
                    return Got::Json(serde_json::from_str(t.as_str()).expect("hub sends JSON"));
                }
                Ok(Some(Ok(Message::Close(f)))) => {
                    return Got::Closed(f.map(|f| u16::from(f.code)));
                }
                Ok(Some(Ok(_))) => {}
            }
        }
    }

    /// The next JSON frame (panics on close or timeout).
    pub async fn next_json(&mut self, ms: u64) -> Value {
        match self.recv(ms).await {
            Got::Json(v) => v,
            other => panic!("expected a frame, got {other:?}"),
        }
    }

    /// Skips frames until one satisfies `pred`.
    pub async fn until(&mut self, ms: u64, mut pred: impl FnMut(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(ms);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let v = self
                .next_json(u64::try_from(left.as_millis()).unwrap_or(0).max(1))
                .await;
            if pred(&v) {
                return v;
            }
        }
    }

    /// The close code the hub ends with (skipping frames), within `ms`.
    pub async fn close_code(&mut self, ms: u64) -> Option<u16> {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(ms);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self
                .recv(u64::try_from(left.as_millis()).unwrap_or(0).max(1))
                .await
            {
                Got::Json(_) => {}
                Got::Closed(c) => return c,
                Got::Timeout => panic!("no close within {ms} ms"),
            }
        }
    }
}

/// An envelope.
pub fn env(seq: u64, run: &str, kind: &str, payload: Value) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    json!({"gm": 1, "seq": seq, "ts": now, "runId": run, "type": kind, "payload": payload})
}

pub fn hello(seq: u64, resume_token: Option<&str>) -> Value {
    let mut p = json!({
        "versions": {"protocol": 1, "client": "0.1.0"},
        "capabilities": ["pause", "step", "inject", "retry", "abort", "run-claim"],
        "app": "test-app",
        "sdk": {"name": "rust", "version": "0.1.0"},
    });
    if let Some(t) = resume_token {
        p["resumeToken"] = json!(t);
    }
    env(seq, "*", "hello", p)
}

/// A fake app that completed the handshake.
pub struct App {
    pub peer: Peer,
    pub ack: Value,
    pub seq: u64,
}

impl App {
    pub async fn connect(port: u16) -> Self {
        Self::connect_resuming(port, None, 0).await
    }

    pub async fn connect_resuming(port: u16, token: Option<&str>, seq: u64) -> Self {
        let mut peer = Peer::connect(port, "/ingest").await;
        peer.send(&hello(seq, token)).await;
        let ack = peer.until(5000, |v| v["type"] == "hello.ack").await;
        Self {
            peer,
            ack,
            seq: seq + 1,
        }
    }

    pub fn session_token(&self) -> String {
        self.ack["payload"]["sessionToken"]
            .as_str()
            .expect("sessionToken")
            .to_owned()
    }

    /// Sends an event with the next seq; returns the seq.
    pub async fn emit(&mut self, run: &str, kind: &str, payload: Value) -> u64 {
        let seq = self.seq;
        self.seq += 1;
        self.peer.send(&env(seq, run, kind, payload)).await;
        seq
    }

    pub async fn start_run(&mut self, run: &str, name: &str) -> u64 {
        self.emit(
            run,
            "run.started",
            json!({"app": "test-app", "sdk": {"name": "rust", "version": "0.1.0"}, "meta": {"name": name}}),
        )
        .await
    }
}

/// Runs an async test body on a fresh runtime.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

/// POST a resume with `token`, off the async runtime.
pub async fn resume_async(
    port: u16,
    token: String,
    run: String,
    pause: String,
    body: Value,
) -> Response {
    tokio::task::spawn_blocking(move || {
        let auth = format!("Bearer {token}");
        http(
            port,
            "POST",
            &format!("/api/runs/{run}/pauses/{pause}/resume"),
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            Some(&body.to_string()),
        )
    })
    .await
    .expect("join")
}

/// GET off the async runtime.
pub async fn get_async(port: u16, path: String) -> Response {
    tokio::task::spawn_blocking(move || http(port, "GET", &path, &[], None))
        .await
        .expect("join")
}

impl App {
    /// Opens a held gate on `node` (`tool:<name>`) of `run`: node.started then exec.paused.
    pub async fn pause_at(
        &mut self,
        run: &str,
        name: &str,
        pause_id: &str,
        point: &str,
        input: Value,
    ) {
        self.emit(
            run,
            "node.started",
            json!({"nodeId": format!("tool:{name}"), "kind": "tool", "name": name, "instanceId": format!("call_{pause_id}"), "input": input}),
        )
        .await;
        self.emit(
            run,
            "exec.paused",
            json!({"pauseId": pause_id, "nodeId": format!("tool:{name}"), "point": point}),
        )
        .await;
    }

    /// Waits for the next `exec.resume` frame.
    pub async fn expect_resume(&mut self, ms: u64) -> Value {
        self.peer.until(ms, |v| v["type"] == "exec.resume").await
    }
}

impl Peer {
    pub async fn send_binary(&mut self, b: Vec<u8>) {
        self.ws.send(Message::binary(b)).await.expect("send");
    }
}
