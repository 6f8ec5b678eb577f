//! The Rust client's loop guard through the real hub: the third identical tool call in a row
//! holds with `reason: "loop"`, `graphmind wait` shows it like any gate, `graphmind resume`
//! continues it, and the stored `exec.paused` carries the loop summary.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use support::{attached, block_on, events_when_finished, gm_resume_paused, gm_wait_pause, hub};

static POLLS: AtomicUsize = AtomicUsize::new(0);

#[graphmind::tool]
async fn poll_status(job: u32) -> String {
    POLLS.fetch_add(1, Ordering::SeqCst);
    format!("job {job}: pending")
}

#[test]
fn a_repeated_rust_tool_call_holds_as_a_loop_at_the_hub() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    block_on(async {
        let gm = attached(h.port, "poller").await;
        let task = tokio::spawn({
            let gm = gm.clone();
            async move {
                gm.run("polling", async {
                    let mut seen = Vec::new();
                    for _ in 0..3 {
                        seen.push(poll_status(7).await);
                    }
                    seen
                })
                .await
            }
        });
        let p = gm_wait_pause(&h).await;
        assert_eq!(p["reason"], json!("loop"));
        assert_eq!(p["nodeId"], json!("tool:poll_status"));
        assert_eq!(p["point"], json!("before"));
        assert_eq!(
            POLLS.load(Ordering::SeqCst),
            2,
            "held before the third call ran"
        );
        gm_resume_paused(&h, &p, "continue", &[]).await.expect(0);
        let seen = task.await.expect("joined").expect("not aborted");
        assert_eq!(seen.len(), 3);
        assert_eq!(POLLS.load(Ordering::SeqCst), 3);

        let run = p["runId"].as_str().expect("runId");
        let events = events_when_finished(h.port, run).await;
        let paused = events
            .iter()
            .find(|e| e["type"] == "exec.paused")
            .expect("stored exec.paused");
        let summary = &paused["payload"]["loop"];
        assert_eq!(summary["repeats"], json!(3));
        let started: Vec<u64> = events
            .iter()
            .filter(|e| e["type"] == "node.started" && e["payload"]["nodeId"] == "tool:poll_status")
            .filter_map(|e| e["seq"].as_u64())
            .collect();
        assert_eq!(started.len(), 3);
        assert_eq!(summary["firstSeq"], json!(started[0]));
        assert_eq!(summary["lastSeq"], json!(started[2]));
        gm.dispose().await;
    });
}
