//! `GET /api/runs/{id}/events` is bounded in bytes: a page of large events stops at the byte
//! cap and says where to continue, the reads running at once are limited (a busy hub answers
//! `503` with `Retry-After`), and concurrent large reads keep the hub's memory under a bound.

mod support;

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use support::*;
use tokio::io::AsyncWriteExt;
use tokio_tungstenite::tungstenite::Message;

/// Size of each event of the runs below.
const EVENT_BYTES: usize = 100 * 1024;
/// The hub's page cap (`api::PAGE_BYTES`): 8 MiB of event bodies; a page may pass it by
/// its JSON frame only.
const PAGE_BYTES: usize = 8 * 1024 * 1024;
/// The documented bound of the hub's resident memory under the reads below (SECURITY.md).
const RSS_BOUND_KIB: u64 = 256 * 1024;

fn status_kib(pid: u32, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// Starts `run` and stores `events` events of [`EVENT_BYTES`] in it (seqs 2..).
async fn large_run(port: u16, run: &str, events: u64) {
    let app = App::running(port, run, "large").await;
    let mut seq = app.seq;
    let (mut tx, mut rx) = app.peer.ws.split();
    tokio::spawn(async move { while let Some(Ok(_)) = rx.next().await {} });
    let blob = "x".repeat(EVENT_BYTES);
    for _ in 0..events {
        // Formatted, not serialized: the test's own JSON work must not be what is timed.
        let f = format!(
            r#"{{"gm":1,"seq":{seq},"ts":{},"runId":"{run}","type":"x.blob","payload":{{"blob":"{blob}"}}}}"#,
            now_ms()
        );
        seq += 1;
        tx.send(Message::text(f)).await.expect("the app's send");
    }
    tx.flush().await.expect("flush");
    let want = events + 1;
    wait_async(120, "every event accepted", move || {
        let h = http(port, "GET", "/health", &[], None).json();
        (h["stats"]["eventsAccepted"].as_u64() == Some(want)).then_some(())
    })
    .await;
    // Keep the app connected (its run stays running) until the events are in.
    drop(tx);
}

/// Pages through every event of `run` with `limit=10000`, waiting as told on `503`. Returns
/// the seqs read, the largest page in bytes, and the `503`s met.
fn read_all(port: u16, run: &str) -> (Vec<u64>, usize, u32) {
    let mut seqs = Vec::new();
    let mut after: Option<u64> = None;
    let mut largest = 0;
    let mut busy = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        assert!(Instant::now() < deadline, "reading {run} took over 120 s");
        let q = after.map_or_else(String::new, |a| format!("&afterSeq={a}"));
        let r = read(port, &format!("/api/runs/{run}/events?limit=10000{q}"));
        if r.status == 503 {
            let wait: u64 = r
                .header("retry-after")
                .and_then(|v| v.parse().ok())
                .expect("a 503 says when to retry");
            busy += 1;
            std::thread::sleep(Duration::from_secs(wait));
            continue;
        }
        assert_eq!(
            r.status,
            200,
            "events page: {}",
            &r.body[..r.body.len().min(300)]
        );
        largest = largest.max(r.body.len());
        let page = r.json();
        let events = page["events"].as_array().expect("events");
        assert!(!events.is_empty(), "a page holds at least one event");
        seqs.extend(events.iter().map(|e| e["seq"].as_u64().expect("seq")));
        if page["more"] != json!(true) {
            assert_eq!(page["nextAfterSeq"], Value::Null);
            return (seqs, largest, busy);
        }
        let next = page["nextAfterSeq"].as_u64().expect("nextAfterSeq");
        assert_eq!(Some(&next), seqs.last(), "the page says where to continue");
        after = Some(next);
    }
}

#[test]
fn large_pages_stop_at_the_byte_cap_and_concurrent_reads_keep_the_hub_bounded() {
    let h = spawned_hub(&["--pause-on-error", "off"]);
    let port = h.port;
    let pid = h.child.id();
    let run = "run_pages_large";
    // 200 MB in one run: one unbounded `limit=10000` page of it is past the bound by itself.
    let events = 2_000;
    block_on(large_run(port, run, events));
    let before = status_kib(pid, "VmRSS");
    let readers: Vec<_> = (0..8)
        .map(|_| std::thread::spawn(move || read_all(port, run)))
        .collect();
    let mut busy = 0;
    for r in readers {
        let (seqs, largest, b) = r.join().expect("reader");
        busy += b;
        assert_eq!(
            seqs,
            (1..=events + 1).collect::<Vec<u64>>(),
            "every event, once, in order"
        );
        assert!(
            largest <= PAGE_BYTES + EVENT_BYTES,
            "a page of {largest} bytes is past the cap of {PAGE_BYTES}"
        );
    }
    let hwm = status_kib(pid, "VmHWM");
    let stats = h.health()["stats"].clone();
    eprintln!(
        "8 readers of a {events} x {EVENT_BYTES} B run: hub RSS before {before} KiB, peak {hwm} \
         KiB; {busy} answers 503 (hub: {})",
        stats["readsBusy"]
    );
    assert_eq!(stats["readsBusy"], json!(busy));
    assert!(
        hwm < RSS_BOUND_KIB,
        "the hub's peak RSS was {hwm} KiB, over the bound of {RSS_BOUND_KIB} KiB"
    );
}

#[test]
fn a_busy_hub_answers_event_pages_503_with_retry_after() {
    let h = spawned_hub(&["--pause-on-error", "off"]);
    let port = h.port;
    let run = "run_pages_busy";
    block_on(async {
        // 20 MB: more than one page, and more than socket buffers take in.
        large_run(port, run, 200).await;
        // Four readers that ask for a full page and do not read it hold the four read permits.
        let mut stalled = Vec::new();
        for _ in 0..4 {
            let sock = tokio::net::TcpSocket::new_v4().expect("socket");
            sock.set_recv_buffer_size(4096).expect("rcvbuf");
            let mut s = sock
                .connect(([127, 0, 0, 1], port).into())
                .await
                .expect("connect");
            let token = tokens_of(port).expect("tokens").0;
            let req = format!(
                "GET /api/runs/{run}/events?limit=10000 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\r\n"
            );
            s.write_all(req.as_bytes()).await.expect("write");
            stalled.push(s);
        }
        // The permits are taken once their pages are being sent.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let t = Instant::now();
        let r = get_async(port, format!("/api/runs/{run}/events?limit=10000")).await;
        assert_eq!(r.status, 503, "{}", &r.body[..r.body.len().min(300)]);
        assert_eq!(r.header("retry-after").as_deref(), Some("1"));
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the 503 took {:?}",
            t.elapsed()
        );
        let h1 = get_async(port, "/health".into()).await.json();
        assert_eq!(h1["stats"]["readsBusy"], json!(1));
        // Small requests are not held up meanwhile.
        assert_eq!(
            get_async(port, format!("/api/runs/{run}")).await.status,
            200
        );
        // Once the stalled readers go away, the permits come back.
        drop(stalled);
        let r = wait_async(
            30,
            "an events page after the stalled readers left",
            move || {
                let r = read(port, &format!("/api/runs/{run}/events?limit=10"));
                (r.status == 200).then_some(r)
            },
        )
        .await;
        assert_eq!(r.json()["events"].as_array().map(Vec::len), Some(10));
    });
}
