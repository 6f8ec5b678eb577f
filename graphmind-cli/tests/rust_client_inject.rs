//! A breakpoint set with `graphmind break set` holds a Rust tool; `graphmind resume --action
//! inject --output …` makes the tool return that value without running it (the stored
//! node.finished says `injected: true`); an output that does not fit the tool's return type is
//! refused by the Rust client (exit 6, the gate stays held) and a fitting one then succeeds.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use support::{
    Out, TestHub, attached, block_on, events_when_finished, gm_on, gm_resume_paused, gm_wait_pause,
    hub, labels,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Quote {
    sku: String,
    cents: u64,
}

static QUOTE_RAN: AtomicUsize = AtomicUsize::new(0);

#[graphmind::tool]
async fn quote(sku: String) -> Quote {
    QUOTE_RAN.fetch_add(1, Ordering::SeqCst);
    Quote { sku, cents: 100 }
}

static PRICE_RAN: AtomicUsize = AtomicUsize::new(0);

#[graphmind::tool]
async fn price(sku: String) -> Quote {
    PRICE_RAN.fetch_add(1, Ordering::SeqCst);
    Quote { sku, cents: 100 }
}

/// `graphmind resume … --action inject --output <output>` of the held gate `p`.
async fn inject(h: &TestHub, p: &Value, output: &str) -> Out {
    gm_resume_paused(h, p, "inject", &["--output", output]).await
}

#[test]
fn a_cli_breakpoint_holds_the_rust_tool_and_inject_sets_its_result() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    block_on(async {
        gm_on(&h, &["break", "set", "--kind", "tool", "--name", "quote"])
            .await
            .expect(0);
        let gm = attached(h.port, "rust-agent").await;
        assert_eq!(
            gm.breakpoints().len(),
            2,
            "hello.ack armed the CLI's breakpoint"
        );
        let task = tokio::spawn({
            let gm = gm.clone();
            async move { gm.run("pricing", quote("SKU-7".into())).await }
        });
        let p = gm_wait_pause(&h).await;
        assert_eq!(p["nodeId"], json!("tool:quote"));
        assert_eq!(p["point"], json!("before"));
        assert_eq!(p["reason"], json!("breakpoint"));
        assert_eq!(p["kind"], json!("tool"));
        assert_eq!(p["input"], json!({"sku": "SKU-7"}));
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!task.is_finished(), "the tool ran past its breakpoint");
        assert_eq!(gm.stats().held_gates, 1);

        let out = inject(&h, &p, r#"{"sku":"SKU-7","cents":4999}"#)
            .await
            .expect(0);
        let (pause, run) = (p["pauseId"].as_str().unwrap(), p["runId"].as_str().unwrap());
        assert_eq!(
            out.stdout,
            format!("resumed {pause} of run {run} (inject)\n")
        );
        let got = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the tool returned")
            .expect("joined")
            .expect("not aborted");
        assert_eq!(
            got,
            Quote {
                sku: "SKU-7".into(),
                cents: 4999
            }
        );
        assert_eq!(QUOTE_RAN.load(Ordering::SeqCst), 0, "inject skips the call");

        let run = run.to_owned();
        let events = events_when_finished(h.port, &run).await;
        assert_eq!(
            labels(&events),
            [
                "run.started",
                "node.started agent:pricing",
                "node.started tool:quote",
                "exec.paused tool:quote",
                "exec.resumed",
                "node.finished tool:quote",
                "node.finished agent:pricing",
                "run.finished",
            ]
        );
        let resumed = &events[4]["payload"];
        assert_eq!(resumed["pauseId"], json!(pause));
        assert_eq!(resumed["action"], json!("inject"));
        // The Rust client echoes the hub's requestId.
        assert!(
            resumed["requestId"]
                .as_str()
                .is_some_and(|r| r.starts_with("req_")),
            "{resumed}"
        );
        let fin = &events[5]["payload"];
        assert_eq!(fin["injected"], json!(true));
        assert_eq!(fin["output"], json!({"sku": "SKU-7", "cents": 4999}));
        assert!(fin["heldMs"].as_f64().unwrap() >= 150.0, "{fin}");
        gm.dispose().await;
    });
}

#[test]
fn a_misfit_inject_is_refused_by_the_rust_client_and_the_gate_stays_held() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    block_on(async {
        gm_on(&h, &["break", "set", "--kind", "tool", "--name", "price"])
            .await
            .expect(0);
        let gm = attached(h.port, "rust-agent").await;
        let task = tokio::spawn({
            let gm = gm.clone();
            async move { gm.run("pricing", price("SKU-9".into())).await }
        });
        let p = gm_wait_pause(&h).await;
        let (pause, run) = (
            p["pauseId"].as_str().unwrap().to_owned(),
            p["runId"].as_str().unwrap().to_owned(),
        );

        // `cents` is a u64: a string does not fit, nor does a bare number.
        for misfit in [r#"{"sku":"SKU-9","cents":"lots"}"#, "42"] {
            let out = inject(&h, &p, misfit).await.expect(6);
            let line = out.one_line_error();
            assert!(line.contains("refused"), "{line}");
            assert!(line.contains("gate stays held"), "{line}");
            let info = h.get_json(&format!("/api/runs/{run}/pauses/{pause}"));
            assert_eq!(info["state"], json!("open"), "{info}");
            assert!(!task.is_finished(), "a refused inject released the gate");
            assert_eq!(gm.stats().held_gates, 1);
        }
        let out = gm_on(&h, &["pauses", "--json"]).await.expect(0);
        assert!(out.stdout.contains(&pause), "{}", out.stdout);

        inject(&h, &p, r#"{"sku":"SKU-9","cents":1234}"#)
            .await
            .expect(0);
        let got = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the tool returned")
            .expect("joined")
            .expect("not aborted");
        assert_eq!(got.cents, 1234);
        assert_eq!(PRICE_RAN.load(Ordering::SeqCst), 0);

        let events = events_when_finished(h.port, &run).await;
        let refused: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "exec.refused")
            .collect();
        assert_eq!(refused.len(), 2, "{:?}", labels(&events));
        assert!(
            refused
                .iter()
                .all(|e| e["payload"]["code"] == "schema" && e["payload"]["pauseId"] == *pause)
        );
        let resumed: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "exec.resumed")
            .collect();
        assert_eq!(resumed.len(), 1);
        assert_eq!(resumed[0]["payload"]["action"], json!("inject"));
        gm.dispose().await;
    });
}
