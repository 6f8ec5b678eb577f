//! `graphmind resume --action abort` at a Rust tool's gate ends the Rust run: `run!` returns
//! `Err(Aborted)` naming the run, nothing after the gate runs, and the hub stores the run as
//! `aborted`.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use support::{
    attached, block_on, events_on, gm_on, gm_resume_paused, gm_wait_pause, hub, labels, wait_async,
};

static CHARGED: AtomicUsize = AtomicUsize::new(0);
static AFTER_GATE: AtomicUsize = AtomicUsize::new(0);

#[graphmind::tool]
async fn charge(cents: u64) -> u64 {
    CHARGED.fetch_add(1, Ordering::SeqCst);
    cents
}

#[test]
fn a_cli_abort_ends_the_rust_run_with_aborted_and_stores_it_aborted() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    block_on(async {
        gm_on(&h, &["break", "set", "--kind", "tool", "--name", "charge"])
            .await
            .expect(0);
        let gm = attached(h.port, "rust-agent").await;
        let task = tokio::spawn({
            let gm = gm.clone();
            async move {
                gm.run("checkout", async {
                    let paid = charge(4999).await;
                    AFTER_GATE.fetch_add(1, Ordering::SeqCst);
                    paid
                })
                .await
            }
        });
        let p = gm_wait_pause(&h).await;
        assert_eq!(p["nodeId"], json!("tool:charge"));
        let (pause, run) = (
            p["pauseId"].as_str().unwrap().to_owned(),
            p["runId"].as_str().unwrap().to_owned(),
        );
        let out = gm_resume_paused(&h, &p, "abort", &[]).await.expect(0);
        assert_eq!(
            out.stdout,
            format!("resumed {pause} of run {run} (abort)\n")
        );
        let aborted = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the run ended")
            .expect("joined")
            .expect_err("the run was aborted");
        assert_eq!(aborted.run_id(), run);
        assert_eq!(aborted.name(), "checkout");
        assert_eq!(CHARGED.load(Ordering::SeqCst), 0, "the aborted call ran");
        assert_eq!(
            AFTER_GATE.load(Ordering::SeqCst),
            0,
            "code after the gate ran"
        );

        let summary = wait_async(10, "the run stored as aborted", {
            let (port, run) = (h.port, run.clone());
            move || {
                let r = support::read(port, &format!("/api/runs/{run}"));
                let v = r.json();
                (v["status"] != json!("running")).then_some(v)
            }
        })
        .await;
        assert_eq!(summary["status"], json!("aborted"), "{summary}");
        assert_eq!(summary["live"], json!(false));
        assert!(summary["endedAt"].is_u64(), "{summary}");

        let events = events_on(h.port, &run);
        let l = labels(&events);
        assert_eq!(l.last().map(String::as_str), Some("run.finished"), "{l:?}");
        assert_eq!(
            events.last().unwrap()["payload"]["status"],
            json!("aborted")
        );
        let resumed: Vec<_> = events
            .iter()
            .filter(|e| e["type"] == "exec.resumed")
            .collect();
        assert_eq!(resumed.len(), 1);
        assert_eq!(resumed[0]["payload"]["action"], json!("abort"));
        // The held tool did not finish ok.
        assert!(
            !events.iter().any(|e| e["type"] == "node.finished"
                && e["payload"]["nodeId"] == "tool:charge"
                && e["payload"]["status"] == "ok"),
            "{l:?}"
        );
        // No pause is left open, and a second abort finds the pause taken.
        assert_eq!(h.get_json("/api/pauses")["pauses"], json!([]));
        gm_resume_paused(&h, &p, "abort", &[]).await.expect(7);
        gm.dispose().await;
    });
}
