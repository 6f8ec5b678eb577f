//! The hub proves itself to apps: its run file holds a per-start `hubSecret`, and it answers
//! the `hubNonce` of a `hello` with `hubProof` = HMAC-SHA256(secret, nonce). The real Rust
//! client, reading that run file, trusts the hub and holds at its breakpoints; a client that
//! cannot read it only reports.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use graphmind_protocol::hub_auth::hub_proof;
use serde_json::{Value, json};
use support::*;

fn run_doc(h: &InProcessHub) -> Value {
    serde_json::from_str(&std::fs::read_to_string(h.run_file()).expect("run file")).expect("JSON")
}

fn hello_with_nonce(nonce: &str) -> Value {
    let mut h = hello(1, None);
    h["payload"]["hubNonce"] = json!(nonce);
    h
}

async fn ack_for(port: u16, hello: &Value) -> Value {
    let mut peer = Peer::connect(port, "/ingest").await;
    peer.send(hello).await;
    peer.until(5000, |v| v["type"] == "hello.ack").await
}

#[test]
fn the_hub_answers_a_hello_nonce_with_the_hmac_of_its_run_file_secret() {
    let h = hub(|_| {});
    let secret = run_doc(&h)["hubSecret"]
        .as_str()
        .expect("hubSecret in the run file")
        .to_owned();
    assert_eq!(secret.len(), 32);
    assert_ne!(secret, h.agent_token);
    assert_ne!(secret, h.viewer_token);
    let nonce = "9f".repeat(32);
    block_on(async {
        let ack = ack_for(h.port, &hello_with_nonce(&nonce)).await;
        assert_eq!(
            ack["payload"]["hubProof"],
            json!(hub_proof(&secret, &nonce)),
            "{ack}"
        );
        // A peer that sends no nonce (Python, TypeScript) gets the ack it always got.
        let ack = ack_for(h.port, &hello(1, None)).await;
        assert!(ack["payload"].get("hubProof").is_none(), "{ack}");
        // A nonce far longer than any client sends is not answered.
        let ack = ack_for(h.port, &hello_with_nonce(&"a".repeat(300))).await;
        assert!(ack["payload"].get("hubProof").is_none(), "{ack}");
    });
    // Every start has its own secret.
    let other = hub(|_| {});
    assert_ne!(run_doc(&other)["hubSecret"], json!(secret));
}

static HELD_BODY: AtomicUsize = AtomicUsize::new(0);

#[graphmind::tool]
async fn guarded(n: u64) -> u64 {
    HELD_BODY.fetch_add(1, Ordering::SeqCst);
    n * 2
}

#[test]
fn the_rust_client_trusts_the_real_hub_and_holds_at_its_breakpoints() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    block_on(async {
        gm_on(&h, &["break", "set", "--kind", "tool", "--name", "guarded"])
            .await
            .expect(0);
        let gm = attached(h.port, "trusting-agent").await;
        assert!(gm.stats().trusted, "{:?}", gm.stats());
        assert_eq!(gm.breakpoints().len(), 2, "the hub's breakpoints are armed");
        let task = tokio::spawn({
            let gm = gm.clone();
            async move { gm.run("guarded", guarded(21)).await }
        });
        let p = gm_wait_pause(&h).await;
        assert_eq!(p["nodeId"], json!("tool:guarded"));
        assert_eq!(gm.stats().held_gates, 1);
        let (pause, run) = (p["pauseId"].as_str().unwrap(), p["runId"].as_str().unwrap());
        gm_on(&h, &["resume", pause, "--run", run, "--action", "continue"])
            .await
            .expect(0);
        let out = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("released")
            .expect("joined")
            .expect("not aborted");
        assert_eq!(out, 42);
        assert_eq!(gm.stats().ignored_controls, 0);
        gm.dispose().await;
    });
}

#[test]
fn a_rust_client_that_cannot_read_the_hub_run_file_only_reports() {
    let h = hub(|_| {});
    let elsewhere = TempDir::new("no-run-files");
    block_on(async {
        gm_on(&h, &["break", "set", "--kind", "tool", "--name", "guarded"])
            .await
            .expect(0);
        let warnings = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let sink = std::sync::Arc::clone(&warnings);
        let gm = graphmind::Session::new(
            config(h.port, "observed-agent")
                .hub_home(&elsewhere.0)
                .on_warning(move |m| sink.lock().unwrap().push(m.to_owned())),
        );
        assert!(gm.ready(Duration::from_secs(5)).await, "it still attaches");
        assert!(!gm.stats().trusted);
        assert!(gm.breakpoints().is_empty());
        let before = HELD_BODY.load(Ordering::SeqCst);
        let out = tokio::time::timeout(Duration::from_secs(5), gm.run("observed", guarded(4)))
            .await
            .expect("no gate held")
            .expect("not aborted");
        assert_eq!(out, 8);
        assert!(HELD_BODY.load(Ordering::SeqCst) > before);
        gm.dispose().await;
        let warned = warnings.lock().unwrap().clone();
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(warned[0].contains("GRAPHMIND_TRUST_HUB=1"), "{}", warned[0]);
    });
    // The hub stored the run all the same: observing still works.
    let runs = wait_for(10, "the observed run", || {
        let runs = h.runs();
        (!runs.is_empty()).then_some(runs)
    });
    assert_eq!(runs[0]["name"], json!("observed"), "{runs:?}");
}
