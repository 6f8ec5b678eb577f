//! A viewer's outgoing queue is bounded in bytes: viewers of `/ws/ui` that never read, while
//! an app floods their run with large events, are closed (socket and all) and counted, the
//! hub's memory stays under a bound, and `/health` answers throughout.

mod support;

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use support::*;
use tokio_tungstenite::tungstenite::Message;

/// Events of the flood, and the size of each: 300 MB in all, so a hub that keeps (or copies
/// into frames) what its viewers do not read goes past the bound.
const EVENTS: u64 = 3_000;
const EVENT_BYTES: usize = 100 * 1024;
/// Viewers that never read.
const VIEWERS: usize = 4;
/// The documented bound of the hub's resident memory under this flood (SECURITY.md).
const RSS_BOUND_KIB: u64 = 256 * 1024;

/// A field of `/proc/<pid>/status` in KiB (`VmRSS`, `VmHWM`).
fn status_kib(pid: u32, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

#[test]
fn non_reading_viewers_are_closed_past_their_byte_budget_and_the_hub_stays_bounded() {
    let h = spawned_hub(&["--pause-on-error", "off"]);
    let port = h.port;
    let pid = h.child.id();
    let run = "run_viewer_budget";
    block_on(async {
        let app = App::running(port, run, "flood").await;
        let mut next_seq = app.seq;
        let (mut app_tx, mut app_rx) = app.peer.ws.split();
        // Whatever the hub sends the app is read, so only the viewers are slow.
        tokio::spawn(async move { while let Some(Ok(_)) = app_rx.next().await {} });

        let mut viewers = Vec::new();
        for _ in 0..VIEWERS {
            let mut v = Peer::viewer(port).await;
            assert_eq!(v.next_json(5000).await["type"], json!("hello"));
            v.send(&json!({"type": "subscribe", "runId": run})).await;
            v.until(10_000, |f| f["type"] == "replayed").await;
            viewers.push(v); // and never read again
        }
        let h0 = get_async(port, "/health".into()).await.json();
        assert_eq!(h0["viewers"], json!(VIEWERS));

        // /health is polled through the flood; every answer must come, and in seconds.
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let poller = tokio::spawn(async move {
            let mut worst = Duration::ZERO;
            let mut polls = 0u32;
            while !*stop_rx.borrow() {
                let t = Instant::now();
                let r = get_async(port, "/health".into()).await;
                assert_eq!(r.status, 200, "/health during the flood: {}", r.body);
                worst = worst.max(t.elapsed());
                polls += 1;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            (polls, worst)
        });

        let blob = "x".repeat(EVENT_BYTES);
        let t0 = Instant::now();
        for _ in 0..EVENTS {
            // Formatted, not serialized: the test's own JSON work must not be what is timed.
            let f = format!(
                r#"{{"gm":1,"seq":{next_seq},"ts":{},"runId":"{run}","type":"x.blob","payload":{{"blob":"{blob}"}}}}"#,
                now_ms()
            );
            next_seq += 1;
            app_tx.send(Message::text(f)).await.expect("the app's send");
        }
        app_tx.flush().await.expect("flush");
        let accepted = EVENTS + 1;
        let health = wait_async(120, "every event accepted", move || {
            let h = http(port, "GET", "/health", &[], None).json();
            (h["stats"]["eventsAccepted"].as_u64() == Some(accepted)).then_some(h)
        })
        .await;
        let flood = t0.elapsed();
        let hwm = status_kib(pid, "VmHWM");
        eprintln!("flood of {EVENTS} x {EVENT_BYTES} B in {flood:?}: hub peak RSS {hwm} KiB");
        let _ = stop_tx.send(true);
        let (polls, worst) = poller.await.expect("poller");
        assert!(polls >= 1, "/health was polled during the flood");
        assert!(
            worst < Duration::from_secs(5),
            "/health took {worst:?} during the flood"
        );
        assert_eq!(health["stats"]["duplicates"], json!(0));

        // Every viewer was closed by the hub, counted, and forgotten.
        let closed = wait_async(30, "the slow viewers closed", move || {
            let h = http(port, "GET", "/health", &[], None).json();
            (h["viewers"] == json!(0)).then_some(h)
        })
        .await;
        assert_eq!(
            closed["stats"]["viewersClosedSlow"],
            json!(VIEWERS),
            "{closed}"
        );
        // Socket and all: what the hub had sent drains, then the connection ends.
        for mut v in viewers {
            v.close_code(30_000).await;
        }
        let hwm = status_kib(pid, "VmHWM");
        eprintln!(
            "after the close: hub peak RSS {hwm} KiB, now {} KiB; /health worst {worst:?} \
             over {polls} polls",
            status_kib(pid, "VmRSS")
        );
        assert!(
            hwm < RSS_BOUND_KIB,
            "the hub's peak RSS was {hwm} KiB, over the bound of {RSS_BOUND_KIB} KiB"
        );
    });
}
