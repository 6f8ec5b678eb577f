//! Replay: the whole ring is sent again, oldest first and with the original seqs and
//! timestamps, on every attach; a reconnect carries the last session token.

use std::collections::BTreeMap;
use std::time::Duration;

use graphmind_tests::{FakeDebugger, Frame, frame, token_event};

const SECOND: Duration = Duration::from_secs(1);

fn events(frames: &[Frame], conn: usize) -> Vec<(u64, u64)> {
    frames
        .iter()
        .filter(|f| f.conn == conn && f.kind() == "node.token")
        .map(|f| (f.seq(), f.json["ts"].as_u64().unwrap_or(0)))
        .collect()
}

#[tokio::test]
async fn events_recorded_while_detached_are_replayed_on_attach_with_their_seqs() {
    let hub = FakeDebugger::start().await;
    hub.kill(); // the port is closed: the first attempts fail
    let gm = graphmind::Session::new(hub.config("replay-detached"));
    let seqs: Vec<u64> = (0..5)
        .map(|i| {
            gm.emit("run_r", token_event("llm:step", &format!("t{i}")))
                .expect("enabled")
        })
        .collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4]);
    assert!(!gm.is_attached());
    hub.restart().await;
    assert!(gm.ready(2 * SECOND).await);
    let frames = hub
        .wait_matches(&frame("node.token").on_conn(1), 5, SECOND)
        .await;
    let hello = frames.iter().find(|f| f.kind() == "hello").expect("hello");
    assert!(
        hello.seq() >= 5,
        "hello seq {} must follow the recorded events",
        hello.seq()
    );
    assert_eq!(frames[0].kind(), "hello", "hello comes first");
    let replayed: Vec<u64> = events(&frames, 1).iter().map(|(s, _)| *s).collect();
    assert_eq!(replayed, [0, 1, 2, 3, 4], "oldest first, original seqs");
    let texts: Vec<&str> = frames
        .iter()
        .filter(|f| f.kind() == "node.token")
        .map(|f| f.payload()["deltas"][0]["v"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(texts, ["t0", "t1", "t2", "t3", "t4"]);
    gm.dispose().await;
}

#[tokio::test]
async fn a_reconnect_replays_everything_again_with_the_same_seqs_and_resume_token() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("replay-reconnect"));
    assert!(gm.ready(2 * SECOND).await);
    for i in 0..3 {
        gm.emit("run_a", token_event("llm:step", &format!("a{i}")));
    }
    hub.wait_matches(&frame("node.token").on_conn(1), 3, SECOND)
        .await;

    hub.kill();
    graphmind_tests::eventually("the drop to be noticed", SECOND, || !gm.is_attached()).await;
    // Recorded while detached: must arrive on the next connection too.
    gm.emit("run_a", token_event("llm:step", "during"));
    hub.restart().await;
    hub.wait_connections(2, 3 * SECOND).await;
    let frames = hub
        .wait_matches(&frame("node.token").on_conn(2), 4, 3 * SECOND)
        .await;

    let first = events(&frames, 1);
    let second = events(&frames, 2);
    assert_eq!(&second[..3], &first[..], "same seqs and ts on replay");
    assert!(second[3].0 > first[2].0);

    let hellos: Vec<&Frame> = frames.iter().filter(|f| f.kind() == "hello").collect();
    assert_eq!(hellos.len(), 2);
    assert!(hellos[0].payload().get("resumeToken").is_none());
    assert_eq!(hellos[1].payload()["resumeToken"], "tok-1");
    assert!(hellos[1].seq() > hellos[0].seq());

    // Every (runId, seq) the hub saw twice carries identical frames.
    let mut by_seq: BTreeMap<u64, Vec<&Frame>> = BTreeMap::new();
    for f in frames.iter().filter(|f| f.kind() == "node.token") {
        by_seq.entry(f.seq()).or_default().push(f);
    }
    for (seq, copies) in by_seq {
        assert!(
            copies.windows(2).all(|w| w[0].json == w[1].json),
            "seq {seq} changed between replays"
        );
    }
    gm.dispose().await;
}

#[tokio::test]
async fn the_latest_session_token_is_kept_even_when_an_ack_has_none() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("tokens"));
    assert!(gm.ready(2 * SECOND).await); // conn 1: tok-1
    hub.drop_connections();
    hub.wait_connections(2, 3 * SECOND).await; // conn 2 acks tok-2
    graphmind_tests::eventually("attached again", 2 * SECOND, || gm.is_attached()).await;
    hub.set_session_token(None);
    hub.drop_connections();
    hub.wait_connections(3, 3 * SECOND).await; // conn 3: no token in the ack
    graphmind_tests::eventually("attached again", 2 * SECOND, || gm.is_attached()).await;
    hub.drop_connections();
    hub.wait_connections(4, 3 * SECOND).await;
    let seen = hub.wait_count("hello", 4, 2 * SECOND).await;
    assert_eq!(seen.len(), 4, "hello");
    let hellos = hub.frames();
    let tokens: Vec<String> = hellos
        .iter()
        .filter(|f| f.kind() == "hello")
        .map(|f| {
            f.payload()["resumeToken"]
                .as_str()
                .unwrap_or("-")
                .to_owned()
        })
        .collect();
    assert_eq!(tokens, ["-", "tok-1", "tok-2", "tok-2"]);
    gm.dispose().await;
}
