//! Helpers of the tests that run the real `graphmind` Rust client against the real hub: a
//! session pointed at a hub, a hub on a fixed port (so it can be restarted where the client
//! looks for it), a relay that records every frame the client sent, and small waits.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

use crate::serve_support::Serve;

/// A config for the app `app` that reports to the hub on `port`: switched on whatever the
/// environment says (no process variables are read), warnings kept quiet.
pub fn config(port: u16, app: &str) -> graphmind::Config {
    graphmind::Config::new(app)
        .url(format!("ws://127.0.0.1:{port}/ingest"))
        .enabled(true)
        .env_vars(Vec::<(String, String)>::new())
        .on_warning(|_| {})
}

/// A session of the app `app` attached to the hub on `port` (panics if it does not attach).
pub async fn attached(port: u16, app: &str) -> graphmind::Session {
    let gm = graphmind::Session::new(config(port, app));
    assert!(
        gm.ready(Duration::from_secs(5)).await,
        "the Rust client did not attach to the hub on port {port}"
    );
    gm
}

/// `graphmind serve --port <port> --db <db> --json --no-open <extra>` with
/// `GRAPHMIND_HOME=home` (a fixed port, so a restarted hub is found by the same client).
pub fn serve_on(home: &Path, port: u16, db: &Path, extra: &[&str]) -> Result<Serve, String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_graphmind"))
        .args(["serve", "--json", "--no-open", "--port", &port.to_string()])
        .arg("--db")
        .arg(db)
        .args(extra)
        .env("GRAPHMIND_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn graphmind serve: {e}"))?;
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_default();
    let Ok(line) = serde_json::from_str::<Value>(line.trim()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!("serve on port {port} did not start"));
    };
    assert_eq!(line["port"].as_u64(), Some(u64::from(port)));
    let run: Value = serde_json::from_str(
        &std::fs::read_to_string(home.join("run").join(format!("serve-{port}.json")))
            .expect("run file"),
    )
    .expect("run file JSON");
    let viewer_token = line["viewerUrl"]
        .as_str()
        .and_then(|u| u.split_once("#token="))
        .map(|(_, t)| t.to_owned())
        .expect("viewer token");
    Ok(Serve {
        child,
        port,
        agent_token: run["token"].as_str().expect("token").to_owned(),
        viewer_token,
        line,
        home: home.to_path_buf(),
    })
}

/// A hub on a port picked here (retried if another process takes it first).
pub fn serve_on_free_port(home: &Path, db: &Path, extra: &[&str]) -> Serve {
    let mut last = String::new();
    for _ in 0..5 {
        match serve_on(home, crate::cli_support::free_port(), db, extra) {
            Ok(s) => return s,
            Err(e) => last = e,
        }
    }
    panic!("no free port for the hub: {last}");
}

/// Kills the hub at once (SIGKILL: no close frame, no cleanup) and reaps it.
pub fn kill_hard(serve: &mut Serve) {
    let _ = serve.child.kill();
    let _ = serve.child.wait();
}

/// Every text frame an app sent through a [`Relay`], in order.
pub type Recorded = Arc<Mutex<Vec<Value>>>;

/// A WebSocket relay between an app and the hub's `/ingest` that records the app's frames:
/// the ground truth of what the client emitted.
pub struct Relay {
    /// The port the app dials.
    pub port: u16,
    /// The app's frames, parsed.
    pub frames: Recorded,
    open: Arc<std::sync::atomic::AtomicBool>,
    conns: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Relay {
    /// Listens on a free port and relays every connection to `/ingest` on `hub_port`.
    pub async fn start(hub_port: u16) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let frames: Recorded = Arc::default();
        let open = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let conns: Arc<Mutex<Vec<tokio::task::AbortHandle>>> = Arc::default();
        let task = tokio::spawn({
            let (rec, open, conns) = (Arc::clone(&frames), Arc::clone(&open), Arc::clone(&conns));
            async move {
                while let Ok((tcp, _)) = listener.accept().await {
                    if !open.load(std::sync::atomic::Ordering::SeqCst) {
                        continue; // refused: the socket is dropped at once
                    }
                    let rec = Arc::clone(&rec);
                    let conn = tokio::spawn(relay_one(tcp, hub_port, rec));
                    conns.lock().expect("lock").push(conn.abort_handle());
                }
            }
        });
        Self {
            port,
            frames,
            open,
            conns,
            task,
        }
    }

    /// Cuts every relayed connection (both sockets dropped, no close frame) and refuses new
    /// ones until [`Relay::reopen`]: to the app, the hub is gone.
    pub fn cut(&self) {
        self.open.store(false, std::sync::atomic::Ordering::SeqCst);
        for c in self.conns.lock().expect("lock").drain(..) {
            c.abort();
        }
    }

    /// Relays new connections again.
    pub fn reopen(&self) {
        self.open.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The recorded frames of one run, in the order sent.
    pub fn frames_of(&self, run: &str) -> Vec<Value> {
        self.frames
            .lock()
            .expect("lock")
            .iter()
            .filter(|f| f["runId"] == run)
            .cloned()
            .collect()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
        for c in self.conns.lock().expect("lock").drain(..) {
            c.abort();
        }
    }
}

async fn relay_one(tcp: tokio::net::TcpStream, hub_port: u16, rec: Recorded) {
    let _ = tcp.set_nodelay(true);
    let Ok(app) = tokio_tungstenite::accept_async(tcp).await else {
        return;
    };
    let Ok((hub, _)) =
        tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{hub_port}/ingest")).await
    else {
        return;
    };
    let (mut app_tx, mut app_rx) = app.split();
    let (mut hub_tx, mut hub_rx) = hub.split();
    let up = async {
        while let Some(Ok(m)) = app_rx.next().await {
            if let Message::Text(t) = &m
                && let Ok(v) = serde_json::from_str::<Value>(t.as_str())
            {
                rec.lock().expect("lock").push(v);
            }
            let close = m.is_close();
            if hub_tx.send(m).await.is_err() || close {
                break;
            }
        }
    };
    let down = async {
        while let Some(Ok(m)) = hub_rx.next().await {
            let close = m.is_close();
            if app_tx.send(m).await.is_err() || close {
                break;
            }
        }
    };
    tokio::select! {
        () = up => {}
        () = down => {}
    }
}

/// The `type` of each envelope.
pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// `type nodeId` of each envelope (`type` alone when it has no nodeId).
pub fn labels(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let t = e["type"].as_str().unwrap_or("?");
            match e["payload"]["nodeId"].as_str() {
                Some(n) => format!("{t} {n}"),
                None => t.to_owned(),
            }
        })
        .collect()
}

/// Polls `f` off the runtime's worker threads until it returns `Some`, for at most `secs`.
pub async fn wait_async<T: Send + 'static>(
    secs: u64,
    what: &'static str,
    f: impl FnMut() -> Option<T> + Send + 'static,
) -> T {
    tokio::task::spawn_blocking(move || crate::serve_support::wait_for(secs, what, f))
        .await
        .expect("join")
}
