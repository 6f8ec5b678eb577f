//! A fake app or viewer over WebSocket, speaking the wire protocol by hand.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use super::{get_async, now_ms};

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

    /// A viewer of `/ws/ui` that sent its auth frame with the viewer token of the hub on
    /// `port` (started here).
    pub async fn viewer(port: u16) -> Self {
        let (_, viewer) = super::tokens_of(port).expect("a hub started by the tests");
        Self::viewer_with(port, Some(&viewer)).await
    }

    /// A viewer of `/ws/ui` whose first frame is `{"type":"auth","token":token}`.
    pub async fn viewer_with(port: u16, token: Option<&str>) -> Self {
        let mut p = Self::connect(port, "/ws/ui").await;
        p.send(&json!({"type": "auth", "token": token})).await;
        p
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

    pub async fn send_binary(&mut self, b: Vec<u8>) {
        self.ws.send(Message::binary(b)).await.expect("send");
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
    json!({"gm": 1, "seq": seq, "ts": now_ms(), "runId": run, "type": kind, "payload": payload})
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

    /// Connects and starts `run`, named `name`.
    pub async fn running(port: u16, run: &str, name: &str) -> Self {
        let mut app = Self::connect(port).await;
        app.start_run(run, name).await;
        app
    }

    /// Connects, starts `run` (named `name`) and opens a held gate on its tool `tool`
    /// ([`App::pause_at`]): the setup of every test of a pause.
    pub async fn holding(
        port: u16,
        run: &str,
        name: &str,
        tool: &str,
        pause_id: &str,
        point: &str,
        input: Value,
    ) -> Self {
        let mut app = Self::running(port, run, name).await;
        app.pause_at(run, tool, pause_id, point, input).await;
        app
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

    /// Like [`App::emit`], stamped `ts` (ms since the epoch) instead of now.
    pub async fn emit_at(&mut self, ts: u64, run: &str, kind: &str, payload: Value) -> u64 {
        let seq = self.seq;
        self.seq += 1;
        let mut f = env(seq, run, kind, payload);
        f["ts"] = json!(ts);
        self.peer.send(&f).await;
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

    /// Sends `exec.resumed` of `pause_id` with `action`: the app confirms a release.
    pub async fn confirm(&mut self, run: &str, pause_id: &str, action: &str) -> u64 {
        self.emit(
            run,
            "exec.resumed",
            json!({"pauseId": pause_id, "action": action}),
        )
        .await
    }

    /// Waits for the next `exec.resume` frame.
    pub async fn expect_resume(&mut self, ms: u64) -> Value {
        self.peer.until(ms, |v| v["type"] == "exec.resume").await
    }
}

/// Long-polls `/api/pauses?wait=5` of the hub on `port`: the open pauses (at least one).
pub async fn wait_for_pause(port: u16) -> Vec<Value> {
    let r = get_async(port, "/api/pauses?wait=5".into()).await;
    let list = r.json()["pauses"].as_array().cloned().unwrap_or_default();
    assert!(!list.is_empty(), "no pause opened");
    list
}
