//! The hub proves itself to apps: its run file holds a per-start `hubSecret`; it answers the
//! `hubNonce` of a `hello` with a nonce of its own and signs the `hello.ack` and every later
//! frame under a key derived from the secret and both nonces. The real Rust client, reading
//! that run file, trusts the hub and holds at its breakpoints; a client that cannot read it
//! only reports.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use graphmind_protocol::hub_auth::{ChannelCheck, ChannelKey};
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

/// The text of the hub's `hello.ack` to `hello`, and the frames after it within `ms`.
async fn ack_and_more(port: u16, hello: &Value, ms: u64) -> (String, Vec<String>) {
    let mut peer = Peer::connect(port, "/ingest").await;
    peer.send(hello).await;
    let mut ack = None;
    let mut more = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(ms);
    while let Ok(Some(Ok(frame))) = tokio::time::timeout_at(deadline, peer.ws.next()).await {
        let Ok(text) = frame.into_text() else {
            continue;
        };
        let text = text.as_str().to_owned();
        if ack.is_none() && text.contains(r#""type":"hello.ack""#) {
            ack = Some(text);
        } else if ack.is_some() && !text.is_empty() {
            more.push(text);
        }
    }
    (ack.expect("a hello.ack"), more)
}

async fn ack_for(port: u16, hello: &Value) -> Value {
    let (ack, _) = ack_and_more(port, hello, 300).await;
    serde_json::from_str(&ack).expect("JSON")
}

#[test]
fn the_hub_signs_its_channel_under_a_key_of_its_run_file_secret_and_both_nonces() {
    let h = hub(|_| {});
    let secret = run_doc(&h)["hubSecret"]
        .as_str()
        .expect("hubSecret in the run file")
        .to_owned();
    assert_eq!(secret.len(), 32);
    assert_ne!(secret, h.agent_token);
    assert_ne!(secret, h.viewer_token);
    assert_eq!(
        run_doc(&h)["url"],
        json!(format!("http://127.0.0.1:{}", h.port)),
        "the one address the secret may be used for"
    );
    let nonce = "9f".repeat(32);
    block_on(async {
        // An app that opens a run gets `hub.ack` frames after the ack: signed too.
        let mut peer = Peer::connect(h.port, "/ingest").await;
        let mut greeting = hello_with_nonce(&nonce);
        greeting["payload"]["capabilities"] = json!(["hub-ack"]);
        peer.send(&greeting).await;
        let ack = next_text(&mut peer).await;
        let parsed: Value = serde_json::from_str(&ack).expect("JSON");
        assert_eq!(parsed["type"], "hello.ack", "{parsed}");
        let hub_nonce = parsed["payload"]["hubNonce"]
            .as_str()
            .expect("the hub's nonce");
        assert!(hub_nonce.len() >= 32, "{parsed}");
        let mut check = ChannelCheck::new(ChannelKey::derive(&secret, &nonce, hub_nonce));
        let body = check
            .accept(&ack)
            .expect("the ack is signed under the channel key");
        assert!(!body.contains("hubMac"), "{body}");
        // Another app nonce, another key.
        assert!(
            ChannelCheck::new(ChannelKey::derive(&secret, &"00".repeat(32), hub_nonce))
                .accept(&ack)
                .is_err()
        );
        peer.send(&env(
            2,
            "run_signed",
            "run.started",
            json!({"app": "a", "sdk": {"name": "t", "version": "0"}}),
        ))
        .await;
        let hub_ack = next_text(&mut peer).await;
        let body = check
            .accept(&hub_ack)
            .unwrap_or_else(|e| panic!("{e}: {hub_ack}"));
        assert!(body.contains(r#""type":"hub.ack""#), "{body}");
        // A peer that sends no nonce (Python, TypeScript) gets the ack it always got.
        let ack = ack_for(h.port, &hello(1, None)).await;
        assert!(ack["payload"].get("hubNonce").is_none(), "{ack}");
        assert!(ack.get("hubMac").is_none(), "{ack}");
        // A nonce far longer than any client sends is not answered.
        let ack = ack_for(h.port, &hello_with_nonce(&"a".repeat(300))).await;
        assert!(ack["payload"].get("hubNonce").is_none(), "{ack}");
        // Two connections with the same app nonce still get keys of their own.
        let (a, b) = (
            ack_for(h.port, &hello_with_nonce(&nonce)).await,
            ack_for(h.port, &hello_with_nonce(&nonce)).await,
        );
        assert_ne!(a["payload"]["hubNonce"], b["payload"]["hubNonce"]);
    });
    // Every start has its own secret.
    let other = hub(|_| {});
    assert_ne!(run_doc(&other)["hubSecret"], json!(secret));
}

/// The next text frame from the hub, within 5 s.
async fn next_text(peer: &mut Peer) -> String {
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(5), peer.ws.next())
            .await
            .expect("a frame within 5 s")
            .expect("open")
            .expect("no error");
        if let Ok(text) = frame.into_text()
            && !text.is_empty()
        {
            return text.as_str().to_owned();
        }
    }
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
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
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
