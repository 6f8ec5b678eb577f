//! The real `graphmind` Rust client against the real hub: a session pointed at a hub, a
//! relay that records every frame the client sent, and labels of what it sent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

/// What a client dialling a port needs to check the hub's proof: the home of the hub's run
/// file, or (for a relay) the port of the hub behind it.
#[derive(Clone)]
enum Behind {
    Hub(PathBuf),
    Relay(u16),
}

fn ports() -> std::sync::MutexGuard<'static, BTreeMap<u16, Behind>> {
    static PORTS: Mutex<BTreeMap<u16, Behind>> = Mutex::new(BTreeMap::new());
    PORTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Remembers that the hub on `port` keeps its run file in `home` (called by every hub start).
pub fn hub_started(port: u16, home: &Path) {
    ports().insert(port, Behind::Hub(home.to_path_buf()));
}

/// A config for the app `app` that reports to the hub on `port`: switched on whatever the
/// environment says (no process variables are read), warnings kept quiet. The hub proves
/// itself the real way: the client reads the run file of a hub started by these tests in that
/// hub's home; behind a [`Relay`] (whose port has no run file) it is given the secret of the
/// hub's run file instead.
pub fn config(port: u16, app: &str) -> graphmind::Config {
    let base = graphmind::Config::new(app)
        .url(format!("ws://127.0.0.1:{port}/ingest"))
        .enabled(true)
        .env_vars(Vec::<(String, String)>::new())
        .on_warning(|_| {});
    let behind = ports().get(&port).cloned();
    match behind {
        Some(Behind::Hub(home)) => base.hub_home(home),
        Some(Behind::Relay(hub_port)) => match ports().get(&hub_port).cloned() {
            Some(Behind::Hub(home)) => {
                base.trust_hub(graphmind::TrustHub::Secret(hub_secret(&home, hub_port)))
            }
            _ => base,
        },
        None => base,
    }
}

/// The `hubSecret` in the run file of the hub on `port` in `home`.
pub fn hub_secret(home: &Path, port: u16) -> String {
    let file = home.join("run").join(format!("serve-{port}.json"));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).expect("run file"))
        .expect("run file is JSON");
    doc["hubSecret"].as_str().expect("hubSecret").to_owned()
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
    /// Where frames of the relay's own go, one sender per relayed connection.
    forged: Arc<Mutex<Vec<tokio::sync::mpsc::UnboundedSender<String>>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Relay {
    /// Listens on a free port and relays every connection to `/ingest` on `hub_port`.
    pub async fn start(hub_port: u16) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let relay = Self::serve(listener, hub_port);
        ports().insert(relay.port, Behind::Relay(hub_port));
        relay
    }

    /// Listens on `addr` (for example another loopback address at the hub's own port) and
    /// relays every connection to `/ingest` on `hub_port`, as a process of another user could.
    pub async fn start_at(addr: std::net::SocketAddr, hub_port: u16) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        Ok(Self::serve(listener, hub_port))
    }

    fn serve(listener: tokio::net::TcpListener, hub_port: u16) -> Self {
        let port = listener.local_addr().expect("addr").port();
        let frames: Recorded = Arc::default();
        let open = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let conns: Arc<Mutex<Vec<tokio::task::AbortHandle>>> = Arc::default();
        let forged: Arc<Mutex<Vec<tokio::sync::mpsc::UnboundedSender<String>>>> = Arc::default();
        let task = tokio::spawn({
            let (rec, open, conns, forged) = (
                Arc::clone(&frames),
                Arc::clone(&open),
                Arc::clone(&conns),
                Arc::clone(&forged),
            );
            async move {
                while let Ok((tcp, _)) = listener.accept().await {
                    if !open.load(std::sync::atomic::Ordering::SeqCst) {
                        continue; // refused: the socket is dropped at once
                    }
                    let rec = Arc::clone(&rec);
                    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                    forged.lock().expect("lock").push(tx);
                    let conn = tokio::spawn(relay_one(tcp, hub_port, rec, rx));
                    conns.lock().expect("lock").push(conn.abort_handle());
                }
            }
        });
        Self {
            port,
            frames,
            open,
            conns,
            forged,
            task,
        }
    }

    /// Sends `frame` to every relayed app as if the hub had sent it (between the hub's frames,
    /// which pass unchanged). Returns how many connections took it.
    pub fn forge(&self, frame: &Value) -> usize {
        let text = frame.to_string();
        self.forged
            .lock()
            .expect("lock")
            .iter()
            .filter(|tx| tx.send(text.clone()).is_ok())
            .count()
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

async fn relay_one(
    tcp: tokio::net::TcpStream,
    hub_port: u16,
    rec: Recorded,
    mut forged: tokio::sync::mpsc::UnboundedReceiver<String>,
) {
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
        loop {
            let m = tokio::select! {
                m = hub_rx.next() => match m {
                    Some(Ok(m)) => m,
                    _ => break,
                },
                Some(text) = forged.recv() => Message::text(text),
            };
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

/// All stored events of `run` on the hub on `port` once the last is `run.finished` (at most
/// 10 s), polled off the runtime's worker threads.
pub async fn events_when_finished(port: u16, run: &str) -> Vec<Value> {
    let run = run.to_owned();
    super::wait_async(10, "the run stored", move || {
        let ev = super::events_on(port, &run);
        ev.last()
            .is_some_and(|e| e["type"] == "run.finished")
            .then_some(ev)
    })
    .await
}

/// The run named `name` in a runs list.
pub fn run_named(runs: &[Value], name: &str) -> Option<Value> {
    runs.iter()
        .find(|r| r["name"] == serde_json::json!(name))
        .cloned()
}

/// The runs list of the hub on `port` once the run named `name` is listed with status `ok`
/// (at most 10 s), polled off the runtime's worker threads.
pub async fn runs_once_ok(port: u16, name: &'static str, what: &'static str) -> Vec<Value> {
    super::wait_async(10, what, move || {
        let runs = super::read(port, "/api/runs").json()["runs"]
            .as_array()
            .cloned()?;
        run_named(&runs, name)
            .filter(|r| r["status"] == serde_json::json!("ok"))
            .map(|_| runs)
    })
    .await
}
