//! `graphmind mode step` reaches an attached Rust app at once: its run holds before every
//! tool (reason `step`), each `graphmind resume --action continue` runs one call, and
//! `graphmind mode run` lets the rest go without holding.

mod cli_support;
mod rust_support;
mod serve_support;

use std::time::Duration;

use cli_support::{Out, args, gm_async};
use rust_support::{attached, labels, wait_async};
use serde_json::{Value, json};
use serve_support::{Serve, TestHub, block_on, hub};

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

async fn cli(h: &TestHub, a: &[&str]) -> Out {
    let mut v = args(a);
    v.extend(args(&["--port", &h.port.to_string()]));
    gm_async(h.home.clone(), v).await
}

async fn next_pause(h: &TestHub) -> Value {
    cli(h, &["wait", "--json", "--timeout", "20"])
        .await
        .expect(0)
        .json()
}

async fn continue_(h: &TestHub, p: &Value) {
    cli(
        h,
        &[
            "resume",
            p["pauseId"].as_str().unwrap(),
            "--run",
            p["runId"].as_str().unwrap(),
            "--action",
            "continue",
        ],
    )
    .await
    .expect(0);
}

#[test]
fn step_mode_holds_every_rust_tool_and_run_mode_lets_the_rest_go() {
    let h = hub(&["--allow-control", "resume"]);
    block_on(async {
        let gm = attached(h.port, "rust-agent").await;
        cli(&h, &["mode", "step"]).await.expect(0);
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
        let p1 = next_pause(&h).await;
        assert_eq!(
            (&p1["nodeId"], &p1["point"], &p1["reason"]),
            (&json!("tool:first"), &json!("before"), &json!("step"))
        );
        continue_(&h, &p1).await;
        let p2 = next_pause(&h).await;
        assert_eq!(p2["nodeId"], json!("tool:second"), "{p2}");
        assert_eq!(p2["input"], json!({"n": 1}));
        assert_eq!(p2["reason"], json!("step"));

        cli(&h, &["mode", "run"]).await.expect(0);
        continue_(&h, &p2).await;
        let out = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the run went on without holding")
            .expect("joined");
        assert_eq!(out, Ok(6));
        let events = wait_async(10, "the run stored", {
            let (port, run) = (h.port, p1["runId"].as_str().unwrap().to_owned());
            move || {
                let ev = Serve::events_on(port, &run);
                ev.last()
                    .is_some_and(|e| e["type"] == "run.finished")
                    .then_some(ev)
            }
        })
        .await;
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
