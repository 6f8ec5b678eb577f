//! `hub.ack`: an app whose hello lists `hub-ack` hears, after the commit, up to which seq the
//! hub handled its frames (stored, duplicates and refused ones included); an app that did not
//! ask (the Python client, other GraphMind clients) never gets the frame.

mod support;

use serde_json::{Value, json};
use support::*;

async fn app_with(port: u16, capabilities: Value) -> Peer {
    let mut peer = Peer::connect(port, "/ingest").await;
    let mut h = hello(0, None);
    h["payload"]["capabilities"] = capabilities;
    peer.send(&h).await;
    let ack = peer.until(5000, |v| v["type"] == "hello.ack").await;
    assert!(
        ack["payload"]["hubCapabilities"]
            .as_array()
            .is_some_and(|c| c.contains(&json!("hub-ack"))),
        "the hub says it acknowledges: {ack}"
    );
    peer
}

#[test]
fn an_app_that_asked_hears_what_was_committed_and_others_hear_nothing() {
    let h = hub(|_| {});
    let port = h.port;
    block_on(async move {
        let mut acking = app_with(port, json!(["pause", "run-claim", "hub-ack"])).await;
        let mut plain = app_with(port, json!(["pause", "run-claim"])).await;
        let start = |app: &str| json!({"app": app, "sdk": {"name": "rust", "version": "0"}});
        acking
            .send(&env(1, "run_ack_a", "run.started", start("a")))
            .await;
        for seq in 2..50 {
            acking
                .send(&env(
                    seq,
                    "run_ack_a",
                    "exec.resumed",
                    json!({"pauseId": format!("p{seq}"), "action": "continue"}),
                ))
                .await;
        }
        // A duplicate is handled too.
        acking
            .send(&env(
                49,
                "run_ack_a",
                "exec.resumed",
                json!({"pauseId": "p49", "action": "continue"}),
            ))
            .await;
        let ack = acking
            .until(10_000, |v| {
                v["type"] == "hub.ack" && v["payload"]["upTo"] == 49
            })
            .await;
        assert_eq!(ack["runId"], "*");
        plain
            .send(&env(1, "run_ack_b", "run.started", start("b")))
            .await;
        match plain.recv(1500).await {
            Got::Timeout => {}
            other => panic!("an app that did not ask got {other:?}"),
        }
    });
    // Acknowledged means committed: every acked event is in the database.
    let n: i64 = h
        .open_db()
        .query_row(
            "SELECT count(*) FROM events WHERE run_id = 'run_ack_a'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(n, 49);
    assert!(h.health()["stats"]["acksSent"].as_u64() >= Some(1));
}
