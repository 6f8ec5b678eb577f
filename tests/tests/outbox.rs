//! The replay ring as outbox: bounded by events and bytes, oldest dropped first, losses
//! counted in `stats()` and announced to the debugger; emitting never waits for the socket.

use std::time::{Duration, Instant};

use graphmind_tests::{FakeDebugger, frame, token_event};

const SECOND: Duration = Duration::from_secs(1);

#[tokio::test]
async fn the_ring_drops_oldest_counts_and_announces_the_loss() {
    let hub = FakeDebugger::start().await;
    hub.kill();
    let gm = graphmind::Session::new(hub.config("ring").ring_limits(10, usize::MAX));
    for i in 0..25 {
        assert_eq!(
            gm.emit("run_o", token_event("llm:step", &format!("{i}"))),
            Some(i)
        );
    }
    let s = gm.stats();
    assert_eq!((s.buffered, s.dropped), (10, 15));
    hub.restart().await;
    assert!(gm.ready(2 * SECOND).await);
    let seen = hub.wait_count("node.token", 10, SECOND).await;
    assert_eq!(seen.len(), 10, "node.token");
    let frames = hub.frames();
    let tokens: Vec<_> = frames.iter().filter(|f| f.kind() == "node.token").collect();
    let seqs: Vec<u64> = tokens.iter().map(|f| f.seq()).collect();
    assert_eq!(
        seqs,
        (15..25).collect::<Vec<_>>(),
        "the newest 10 survive, oldest first"
    );
    assert_eq!(
        tokens[0].json["dropped"], 15,
        "the first frame after the gap announces it"
    );
    assert_eq!(
        tokens[0].json["lost"],
        serde_json::json!([[0, 14]]),
        "the lost seqs"
    );
    assert!(tokens[1..].iter().all(|f| f.json.get("dropped").is_none()));

    // A second replay announces the same loss on the same frame (seq 15), never on another:
    // a hub that stored seq 15 dedupes it, so the loss is counted once.
    hub.drop_connections();
    hub.wait_connections(2, 2 * SECOND).await;
    let frames = hub
        .wait_matches(&frame("node.token").on_conn(2), 10, 2 * SECOND)
        .await;
    let again: Vec<_> = frames
        .iter()
        .filter(|f| f.conn == 2 && f.kind() == "node.token")
        .collect();
    assert_eq!(again[0].seq(), 15);
    assert_eq!(again[0].json["dropped"], 15);
    assert!(again[1..].iter().all(|f| f.json.get("dropped").is_none()));
    gm.dispose().await;
}

#[tokio::test]
async fn the_byte_limit_bounds_the_ring_too() {
    let hub = FakeDebugger::start().await;
    hub.kill();
    let gm = graphmind::Session::new(hub.config("ring-bytes").ring_limits(1000, 8 * 1024));
    let big = "x".repeat(1024);
    for _ in 0..50 {
        gm.emit("run_b", token_event("llm:step", &big));
    }
    let s = gm.stats();
    assert!(s.buffered >= 4 && s.buffered < 8, "buffered {}", s.buffered);
    assert_eq!(s.dropped as usize + s.buffered, 50);
    gm.dispose().await;
}

#[tokio::test]
async fn emitting_never_waits_for_a_hung_debugger() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("hung-outbox"));
    assert!(gm.ready(2 * SECOND).await);
    hub.freeze(true);
    let payload = "y".repeat(2048);
    let t = Instant::now();
    let mut slowest = Duration::ZERO;
    for _ in 0..20_000 {
        let one = Instant::now();
        gm.emit("run_h", token_event("llm:step", &payload));
        slowest = slowest.max(one.elapsed());
    }
    let took = t.elapsed();
    // An emit that waited for the socket would wait out the 3 s liveness budget; the bounds
    // sit well below that and well above what a loaded 2-core machine needs (debug build).
    assert!(took < 6 * SECOND, "20,000 emits took {took:?}");
    assert!(slowest < SECOND, "one emit took {slowest:?}");
    let s = gm.stats();
    // Bounded by the 8 MiB budget (about 2.1 KiB per event), below the 5,000-event limit.
    assert!(
        (3500..=4096).contains(&s.buffered),
        "buffered {} events of ~2 KiB",
        s.buffered
    );
    assert!(s.dropped >= 15_000);
    gm.dispose().await;
}

#[tokio::test]
async fn live_events_arrive_in_seq_order() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("order"));
    assert!(gm.ready(2 * SECOND).await);
    let emitters: Vec<_> = (0..4)
        .map(|t| {
            let gm = gm.clone();
            std::thread::spawn(move || {
                for i in 0..500 {
                    gm.emit("run_p", token_event("llm:step", &format!("{t}-{i}")));
                }
            })
        })
        .collect();
    for e in emitters {
        e.join().expect("joined");
    }
    let seen = hub.wait_count("node.token", 2000, 3 * SECOND).await;
    assert_eq!(seen.len(), 2000, "node.token");
    let frames = hub.frames();
    let seqs: Vec<u64> = frames.iter().map(|f| f.seq()).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "frames out of seq order"
    );
    gm.dispose().await;
}
