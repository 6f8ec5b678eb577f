//! The Rust client loses its hub connection mid-run (the hub stays up): the run is
//! `abandoned` once the grace is over; when the client reconnects with its resumeToken the run
//! is `running` and live again, in the API and in the stored row, and a breakpoint holds its
//! next tool for a resume sent to the reconnected client.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Relay, block_on, config, get_async, hub, labels, resume_async, wait_async};

#[graphmind::tool]
async fn fetch(n: u64) -> u64 {
    n + 1
}

#[graphmind::tool]
async fn store(n: u64) -> u64 {
    n * 2
}

async fn summary(port: u16, run: &str) -> Value {
    get_async(port, format!("/api/runs/{run}")).await.json()
}

#[test]
fn a_rust_run_abandoned_by_a_lost_connection_is_reclaimed_on_reconnect() {
    let h = hub(|c| {
        c.abandon_grace = std::time::Duration::from_millis(300);
        c.allow_control = graphmind_hub::AllowControl::Resume;
    });
    let r = h.post(
        "/api/debug/breakpoints/set",
        &json!({"matcher": {"kind": "tool", "name": "store"}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    block_on(async {
        let relay = Relay::start(h.port).await;
        let gm = graphmind::Session::new(
            config(relay.port, "rust-agent").retry_interval(Duration::from_millis(100)),
        );
        assert!(gm.ready(Duration::from_secs(5)).await, "attached");
        let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn({
            let gm = gm.clone();
            async move {
                gm.run("flaky", async {
                    let n = fetch(1).await;
                    let _ = go_rx.await;
                    store(n).await
                })
                .await
            }
        });
        let port = h.port;
        let run = wait_async(10, "the run started", move || {
            let runs = support::read(port, "/api/runs").json()["runs"]
                .as_array()
                .cloned()?;
            let r = runs.first()?;
            (r["eventCount"] == json!(4)).then(|| r["runId"].as_str().unwrap().to_owned())
        })
        .await;

        relay.cut();
        let s = wait_async(10, "abandoned", {
            let run = run.clone();
            move || {
                let s = support::read(port, &format!("/api/runs/{run}")).json();
                (s["status"] == json!("abandoned")).then_some(s)
            }
        })
        .await;
        assert_eq!(s["live"], json!(false));
        assert_eq!(h.stored_status(&run), "abandoned");
        assert!(!gm.is_attached());

        relay.reopen();
        assert!(gm.ready(Duration::from_secs(5)).await, "reattached");
        let s = summary(port, &run).await;
        assert_eq!(s["status"], json!("running"), "{s}");
        assert_eq!(s["live"], json!(true), "{s}");
        assert_eq!(h.stored_status(&run), "running");
        assert_eq!(s["eventCount"], json!(4), "the replay added nothing");

        // The reconnected client owns the run: its next gate holds and obeys a resume.
        go_tx.send(()).expect("the run waits");
        let p = get_async(port, format!("/api/pauses?runId={run}&wait=10"))
            .await
            .json();
        let pause = p["pauses"][0]["pauseId"].as_str().expect("held").to_owned();
        let r = resume_async(
            port,
            h.agent_token.clone(),
            run.clone(),
            pause,
            json!({"action": "continue"}),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.body);
        let out = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("finished")
            .expect("joined");
        assert_eq!(out, Ok(4));
        let s = wait_async(10, "finished", {
            let run = run.clone();
            move || {
                let s = support::read(port, &format!("/api/runs/{run}")).json();
                (s["status"] == json!("ok")).then_some(s)
            }
        })
        .await;
        assert_eq!(s["eventCount"], json!(10), "{s}");
        assert_eq!(h.stored_status(&run), "ok");
        let l = labels(&h.events(&run));
        assert_eq!(
            l.iter().filter(|x| x.starts_with("exec.paused")).count(),
            1,
            "{l:?}"
        );
        gm.dispose().await;
    });
}
