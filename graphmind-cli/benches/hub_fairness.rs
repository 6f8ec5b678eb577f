//! Fairness benchmark of `graphmind serve` (the real binary, fresh database): how long
//! `GET /health` and a WebSocket handshake on `/ingest` take while two app sockets send
//! 15 MiB frames back to back, against a baseline measured in the same run on the idle hub.
//!
//! The measuring client runs on a thread of its own (its own single-threaded runtime), so
//! the apps' sending does not delay its clock; each sample is a fresh TCP connection (as a
//! probe or a starting app makes). One run prints one table: p50 / p90 / max of each, idle
//! and loaded, the ratio of the p50s, and how many large frames the hub took in meanwhile.
//!
//! `cargo bench -p graphmind-cli --bench hub_fairness` runs 300 samples of each; without
//! `--bench` (e.g. `cargo test --benches`) a smoke size of 20.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

/// Size of each large frame: under the hub's 16 MiB frame limit.
const LARGE_FRAME: usize = 15 * 1024 * 1024;
/// App sockets sending large frames at once.
const SENDERS: usize = 2;

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let samples = if full { 300 } else { 20 };
    let dir = TempDir::new();
    let hub = Hub::start(&dir.0, &dir.0.join("fair.db"));
    let port = hub.port;
    println!(
        "hub_fairness: {} mode, {samples} samples each, {SENDERS} sockets sending {} MiB frames, {} cores",
        if full { "bench" } else { "smoke" },
        LARGE_FRAME / (1024 * 1024),
        std::thread::available_parallelism().map_or(0, usize::from)
    );

    let idle = measure(port, samples);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let senders: Vec<_> = (0..SENDERS)
        .map(|i| rt.spawn(send_large(port, i, Arc::clone(&stop), Arc::clone(&sent))))
        .collect();
    // Measure once the large frames are flowing.
    let t = Instant::now();
    while sent.load(Ordering::Relaxed) < SENDERS as u64 && t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let frames0 = frames_in(port);
    let t0 = Instant::now();
    let loaded = measure(port, samples);
    let window = t0.elapsed();
    let taken = frames_in(port) - frames0;
    stop.store(true, Ordering::Relaxed);
    for s in senders {
        let _ = rt.block_on(s);
    }
    drop(hub);

    println!();
    println!(
        "{:<44} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
        "case", "idle p50", "p90", "max", "load p50", "p90", "max", "ratio"
    );
    for (name, i, l) in [
        (
            "GET /health (fresh connection)",
            &idle.health,
            &loaded.health,
        ),
        (
            "WebSocket handshake on /ingest",
            &idle.handshake,
            &loaded.handshake,
        ),
    ] {
        let (ip, lp) = (pct(i, 50.0), pct(l, 50.0));
        println!(
            "{:<44} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7.1}x",
            name,
            ms(ip),
            ms(pct(i, 90.0)),
            ms(pct(i, 100.0)),
            ms(lp),
            ms(pct(l, 90.0)),
            ms(pct(l, 100.0)),
            lp as f64 / ip.max(1) as f64
        );
    }
    println!();
    println!(
        "loaded window {:.1} s: the hub took in {taken} frames ({:.1} large frames/s) meanwhile",
        window.as_secs_f64(),
        taken as f64 / window.as_secs_f64()
    );
    // A debug build (the smoke size) may take in no 15 MiB frame in its short window.
    assert!(!full || taken > 0, "the large frames kept flowing");
}

fn ms(us: u64) -> String {
    format!("{:.2} ms", us as f64 / 1000.0)
}

fn pct(v: &[u64], p: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    let i = ((p / 100.0) * (s.len() - 1) as f64).round() as usize;
    s[i.min(s.len() - 1)]
}

struct Samples {
    health: Vec<u64>,
    handshake: Vec<u64>,
}

/// `n` `/health` requests and `n` handshakes, alternating, each on a fresh connection, from a
/// thread of its own; µs each.
fn measure(port: u16, n: usize) -> Samples {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let mut s = Samples {
            health: Vec::with_capacity(n),
            handshake: Vec::with_capacity(n),
        };
        for _ in 0..n {
            let t = Instant::now();
            let (status, _) = get(port, "/health");
            assert_eq!(status, 200);
            s.health.push(t.elapsed().as_micros() as u64);
            let t = Instant::now();
            let (ws, _) = rt
                .block_on(tokio_tungstenite::connect_async(format!(
                    "ws://127.0.0.1:{port}/ingest"
                )))
                .expect("handshake");
            s.handshake.push(t.elapsed().as_micros() as u64);
            drop(ws);
            std::thread::sleep(Duration::from_millis(5));
        }
        s
    })
    .join()
    .expect("measuring thread")
}

/// One app: hello, `run.started`, then 15 MiB `node.started` frames (an input the hub shrinks
/// to its payload budget) until `stop`.
async fn send_large(port: u16, i: usize, stop: Arc<AtomicBool>, sent: Arc<AtomicU64>) {
    let (ws, _) = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}/ingest"))
        .await
        .expect("connect /ingest");
    let (mut tx, mut rx) = ws.split();
    tokio::spawn(async move { while let Some(Ok(_)) = rx.next().await {} });
    let run = format!("run_fair_{i}");
    let env = |seq: u64, kind: &str, payload: Value| {
        json!({"gm": 1, "seq": seq, "ts": 1_700_000_000_000u64 + seq, "runId": run, "type": kind, "payload": payload})
            .to_string()
    };
    let hello = json!({"gm": 1, "seq": 0, "ts": 1_700_000_000_000u64, "runId": "*", "type": "hello",
        "payload": {"versions": {"protocol": 1, "client": "0.1.0"}, "capabilities": ["pause"],
                    "app": "fairness", "sdk": {"name": "rust", "version": "0.1.0"}}});
    tx.send(Message::text(hello.to_string()))
        .await
        .expect("hello");
    tx.send(Message::text(env(
        1,
        "run.started",
        json!({"app": "fairness", "sdk": {"name": "rust", "version": "0.1.0"}}),
    )))
    .await
    .expect("run.started");
    // Everything after the seq, computed once; each frame is a copy with its own seq.
    let template = env(
        0,
        "node.started",
        json!({"nodeId": "tool:big", "kind": "tool", "name": "big",
        "instanceId": "call", "input": {"blob": "x".repeat(LARGE_FRAME - 400)}}),
    );
    let rest = template
        .split_once(r#""seq":0"#)
        .expect("seq in the frame")
        .1
        .to_owned();
    let mut seq = 2u64;
    while !stop.load(Ordering::Relaxed) {
        let f = format!(r#"{{"gm":1,"seq":{seq}{rest}"#);
        seq += 1;
        if tx.send(Message::text(f)).await.is_err() {
            break;
        }
        sent.fetch_add(1, Ordering::Relaxed);
    }
}

/// `framesIn` of `/health`.
fn frames_in(port: u16) -> u64 {
    let (_, body) = get(port, "/health");
    serde_json::from_str::<Value>(&body).expect("health")["stats"]["framesIn"]
        .as_u64()
        .expect("framesIn")
}

/// One GET over a fresh connection: status and body.
fn get(port: u16, path: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_nodelay(true).expect("nodelay");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read");
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (status, body.to_owned())
}

struct Hub {
    child: Child,
    port: u16,
}

impl Hub {
    fn start(home: &Path, db: &Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_graphmind"))
            .args(["serve", "--port", "0", "--json", "--no-open", "--db"])
            .arg(db)
            .args(["--pause-on-error", "off"])
            .env("GRAPHMIND_HOME", home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn graphmind serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the --json line");
        let v: Value = serde_json::from_str(line.trim()).expect("JSON line");
        let port = v["port"].as_u64().expect("port") as u16;
        Self { child, port }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let p = std::env::temp_dir().join(format!("gm-hub-fair-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("temp dir");
        Self(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
