//! A process with no token made the hub unreachable: 1,100 connections trickling a byte a
//! second under `nofile` 1024 used up its descriptors, so `/health` and every new app timed
//! out; the resume route read a body before it checked the token, and a
//! `Content-Length: 99999999999` got no answer at all.
//!
//! Here the hub runs in a process of its own with `nofile` 256 (`prlimit`), while hundreds of
//! real sockets trickle header bytes (reconnecting whenever the hub closes them) and dozens
//! trickle a 2 MB body to the resume route without a token. Meanwhile `/health` answers, a new
//! app upgrades to `/ingest` and completes `hello`, a tokenless resume with a body gets `401`
//! without its body being read, and a `Content-Length` over the body cap gets `413` at once.

mod support;

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{App, InProcessHub, TempDir, block_on};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Set in the hub's process: its home.
const CHILD_ENV: &str = "GM_TRICKLE_HUB_HOME";
/// The hub's descriptor limit (macOS's default soft limit).
const NOFILE: usize = 256;
/// Sockets trickling header bytes, and sockets trickling a body to the resume route.
const HEADER_TRICKLERS: usize = 400;
const BODY_TRICKLERS: usize = 40;

/// Not a test of its own: the hub's process for the test below, which runs this binary again
/// (this test only) under `prlimit`. Serves until its stdin closes.
#[test]
fn trickle_hub_process() {
    let Ok(home) = std::env::var(CHILD_ENV) else {
        return;
    };
    let home = std::path::PathBuf::from(home);
    let h = InProcessHub::start_in(&home, |_| {});
    let tmp = home.join("hub.tmp");
    std::fs::write(&tmp, format!("{} {}", h.port, h.agent_token)).expect("write");
    std::fs::rename(&tmp, home.join("hub.txt")).expect("rename");
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

/// The hub's process, killed when dropped.
struct HubProcess(Child);

impl Drop for HubProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What one request got: its status line's code, and how long until it came.
async fn ask(
    port: u16,
    head: String,
    body: &[u8],
    within: Duration,
) -> Result<(u16, Duration), String> {
    let start = Instant::now();
    let exchange = async {
        let mut s = TcpStream::connect(("127.0.0.1", port))
            .await
            .map_err(|e| format!("connect: {e}"))?;
        s.write_all(head.as_bytes())
            .await
            .map_err(|e| format!("write: {e}"))?;
        s.write_all(body).await.map_err(|e| format!("write: {e}"))?;
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut buf).await.map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err(format!(
                    "closed without an answer: {:?}",
                    String::from_utf8_lossy(&got)
                ));
            }
            got.extend_from_slice(&buf[..n]);
        }
        let line = String::from_utf8_lossy(&got);
        line.split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("not HTTP: {line:?}"))
    };
    match tokio::time::timeout(within, exchange).await {
        Ok(Ok(code)) => Ok((code, start.elapsed())),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(format!("no answer within {within:?}")),
    }
}

/// Connects, sends the start of a request's headers, then one more byte a second; connects
/// again whenever the hub closes it.
async fn trickle_headers(port: u16, stop: Arc<AtomicBool>, connects: Arc<AtomicU64>) {
    while !stop.load(Ordering::Relaxed) {
        let connect = TcpStream::connect(("127.0.0.1", port));
        if let Ok(Ok(mut s)) = tokio::time::timeout(Duration::from_secs(3), connect).await {
            connects.fetch_add(1, Ordering::Relaxed);
            let head = format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ");
            let mut open = s.write_all(head.as_bytes()).await.is_ok();
            while open && !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_secs(1)).await;
                open = s.write_all(b"a").await.is_ok();
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Sends a tokenless resume's headers declaring a 2 MB body, then the body a byte a second;
/// again once answered or closed.
async fn trickle_body(port: u16, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Relaxed) {
        let connect = TcpStream::connect(("127.0.0.1", port));
        if let Ok(Ok(s)) = tokio::time::timeout(Duration::from_secs(3), connect).await {
            let (mut rd, mut wr) = s.into_split();
            let head = resume_head(port, None, 2_000_000);
            let writer = async {
                let mut open = wr.write_all(head.as_bytes()).await.is_ok();
                while open {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    open = wr.write_all(b" ").await.is_ok();
                }
            };
            let mut buf = [0u8; 512];
            tokio::select! {
                () = writer => {}
                _ = rd.read(&mut buf) => {}
                () = async { while !stop.load(Ordering::Relaxed) {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                } } => {}
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The headers of a resume declaring a body of `len` bytes.
fn resume_head(port: u16, token: Option<&str>, len: u64) -> String {
    let auth = token.map_or_else(String::new, |t| format!("Authorization: Bearer {t}\r\n"));
    format!(
        "POST /api/runs/run_x/pauses/pause_x/resume HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Content-Type: application/json\r\n{auth}Content-Length: {len}\r\n\r\n"
    )
}

#[test]
fn a_trickle_of_slow_connections_under_a_low_descriptor_limit_leaves_the_hub_reachable() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let dir = TempDir::new("trickle");
    let exe = std::env::current_exe().expect("test binary");
    let child = Command::new("prlimit")
        .arg(format!("--nofile={NOFILE}:{NOFILE}"))
        .arg("--")
        .arg(exe)
        .args([
            "--exact",
            "trickle_hub_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &dir.0)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prlimit (util-linux) runs the hub's process");
    let hub = HubProcess(child);
    let (port, token) = support::wait_for(30, "the hub's process started a hub", || {
        let text = std::fs::read_to_string(dir.0.join("hub.txt")).ok()?;
        let (port, token) = text.split_once(' ')?;
        Some((port.parse::<u16>().ok()?, token.to_owned()))
    });
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", hub.0.id())).expect("limits");
    assert!(
        limits
            .lines()
            .any(|l| l.starts_with("Max open files") && l.contains(&format!(" {NOFILE} "))),
        "{limits}"
    );

    block_on(async move {
        let stop = Arc::new(AtomicBool::new(false));
        let connects = Arc::new(AtomicU64::new(0));
        let mut attack = Vec::new();
        for _ in 0..HEADER_TRICKLERS {
            attack.push(tokio::spawn(trickle_headers(
                port,
                Arc::clone(&stop),
                Arc::clone(&connects),
            )));
        }
        for _ in 0..BODY_TRICKLERS {
            attack.push(tokio::spawn(trickle_body(port, Arc::clone(&stop))));
        }
        // More sockets than the hub has descriptors have connected.
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert!(
            connects.load(Ordering::Relaxed) >= NOFILE as u64,
            "the trickle is on: {} connections",
            connects.load(Ordering::Relaxed)
        );

        let health = format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
        for i in 0..5 {
            let got = ask(port, health.clone(), b"", Duration::from_secs(10)).await;
            assert!(
                matches!(got, Ok((200, _))),
                "/health during the trickle ({i}): {got:?}"
            );
            eprintln!(
                "figure: /health during the trickle answered in {:?}",
                got.map(|g| g.1)
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }

        // A new app connects and completes its handshake.
        let hello = Instant::now();
        let app = tokio::time::timeout(Duration::from_secs(15), App::connect(port)).await;
        eprintln!("figure: a new app completed hello in {:?}", hello.elapsed());
        let app = app.expect("a new app completed hello within 15 s during the trickle");
        assert_eq!(app.ack["type"], json!("hello.ack"));

        // A tokenless resume is refused from its headers: one byte of its body is all it sent.
        let got = ask(
            port,
            resume_head(port, None, 2_000_000),
            b"{",
            Duration::from_secs(10),
        )
        .await;
        assert!(matches!(got, Ok((401, _))), "tokenless resume: {got:?}");
        eprintln!("figure: tokenless resume with a body: {got:?}");

        // A body over the cap is refused before any of it comes, token or not.
        for t in [Some(token.as_str()), None] {
            let got = ask(
                port,
                resume_head(port, t, 99_999_999_999),
                b"",
                Duration::from_secs(10),
            )
            .await;
            assert!(
                matches!(got, Ok((413, _))),
                "Content-Length 99999999999: {got:?}"
            );
            eprintln!("figure: Content-Length 99999999999: {got:?}");
        }

        // Still answering after all that, and it did shed the trickle.
        let got = ask(port, health.clone(), b"", Duration::from_secs(10)).await;
        assert!(matches!(got, Ok((200, _))), "/health at the end: {got:?}");
        stop.store(true, Ordering::Relaxed);
        for t in attack {
            t.abort();
        }
        drop(app);
        let doc = support::http(port, "GET", "/health", &[], None).json();
        let conns = &doc["connections"];
        eprintln!("figure: connections after the trickle: {conns}");
        assert_eq!(
            conns["budget"],
            json!(NOFILE - graphmind_hub::connections::FD_RESERVE)
        );
        assert!(conns["shed"].as_u64().unwrap_or(0) > 0, "{conns}");
    });
    drop(hub);
}
