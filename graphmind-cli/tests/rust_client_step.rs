//! `graphmind mode step` reaches an attached Rust app at once: its run holds before every
//! tool (reason `step`), each `graphmind resume --action continue` runs one call, and
//! `graphmind mode run` lets the rest go without holding.

mod support;

use std::time::Duration;

use serde_json::json;
use support::{
    attached, block_on, events_when_finished, gm_on, gm_resume_paused, gm_wait_pause, hub, labels,
};

#[graphmind::tool]
async fn first(n: u64) -> u64 {
    n + 1
}

#[graphmind::tool]
async fn second(n: u64) -> u64 {
    n + 2
}

#[graphmind::tool]
async fn third(n: u64) -> u64 {
    n + 3
}

#[test]
fn step_mode_holds_every_rust_tool_and_run_mode_lets_the_rest_go() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    block_on(async {
        let gm = attached(h.port, "rust-agent").await;
        gm_on(&h, &["mode", "step"]).await.expect(0);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while gm.mode() != graphmind::protocol::Mode::Step {
            assert!(
                tokio::time::Instant::now() < deadline,
                "mode.set never arrived"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let task = tokio::spawn({
            let gm = gm.clone();
            async move {
                gm.run("stepped", async {
                    third(second(first(0).await).await).await
                })
                .await
            }
        });
        let p1 = gm_wait_pause(&h).await;
        assert_eq!(
            (&p1["nodeId"], &p1["point"], &p1["reason"]),
            (&json!("tool:first"), &json!("before"), &json!("step"))
        );
        gm_resume_paused(&h, &p1, "continue", &[]).await.expect(0);
        let p2 = gm_wait_pause(&h).await;
        assert_eq!(p2["nodeId"], json!("tool:second"), "{p2}");
        assert_eq!(p2["input"], json!({"n": 1}));
        assert_eq!(p2["reason"], json!("step"));

        gm_on(&h, &["mode", "run"]).await.expect(0);
        gm_resume_paused(&h, &p2, "continue", &[]).await.expect(0);
        let out = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the run went on without holding")
            .expect("joined");
        assert_eq!(out, Ok(6));
        let events = events_when_finished(h.port, p1["runId"].as_str().unwrap()).await;
        let l = labels(&events);
        assert_eq!(
            l.iter().filter(|x| x.starts_with("exec.paused")).count(),
            2,
            "{l:?}"
        );
        assert!(l.contains(&"node.finished tool:third".to_owned()), "{l:?}");
        gm.dispose().await;
    });
}
