//! A Rust agent's runs reach the hub whole: `/api/runs` lists them with the client's app,
//! name, sdk and status, and `/api/runs/:id/events` holds exactly the frames the Rust client
//! sent (recorded by a relay between them), in seq order, with nothing lost or added.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Relay, attached, block_on, gm, hub, labels, run_named, wait_async, wait_for};

#[graphmind::tool]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[graphmind::tool]
async fn slow_double(n: i64) -> i64 {
    tokio::time::sleep(Duration::from_millis(5)).await;
    n * 2
}

#[test]
fn the_support_agent_run_is_stored_with_every_frame_the_client_sent() {
    // The example agent's first lookup fails on purpose: no error breakpoint here.
    let h = hub(|c| c.breakpoints.clear());
    let port = h.port;
    let (run_id, sent, stats) = block_on(async move {
        let relay = Relay::start(port).await;
        let gm = attached(relay.port, "support-agent").await;
        let answer = gm
            .run_result(
                "handle-ticket",
                graphmind_examples::support_agent(graphmind_examples::TICKET),
            )
            .await
            .expect("not aborted")
            .expect("the agent answered");
        assert!(answer.contains("RF-1042"), "{answer}");
        let stats = gm.stats();
        // Everything the client emitted has left it once run.finished went through the relay.
        let run_id = wait_async(10, "run.finished through the relay", {
            let frames = std::sync::Arc::clone(&relay.frames);
            move || {
                frames
                    .lock()
                    .expect("lock")
                    .iter()
                    .find(|f| f["type"] == "run.finished")
                    .map(|f| f["runId"].as_str().expect("runId").to_owned())
            }
        })
        .await;
        let sent = relay.frames_of(&run_id);
        gm.dispose().await;
        (run_id, sent, stats)
    });

    assert_eq!(stats.dropped, 0, "{stats:?}");
    assert_eq!(
        sent.len(),
        stats.buffered,
        "the relay saw every event the client holds"
    );
    let stored = wait_for(10, "every sent frame stored", || {
        let ev = h.events(&run_id);
        (ev.len() == sent.len()).then_some(ev)
    });
    assert_eq!(stored, sent, "stored envelopes are the client's frames");
    let seqs: Vec<u64> = stored.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "seq order: {seqs:?}");
    assert_eq!(
        seqs.last().copied(),
        stats.last_seq,
        "run.finished has the last seq"
    );

    // The shape of the run as the hub stores it: one agent node around model steps that
    // stream tokens and tool calls, one of which failed.
    let l = labels(&stored);
    assert_eq!(l.first().map(String::as_str), Some("run.started"));
    assert_eq!(l.last().map(String::as_str), Some("run.finished"));
    assert_eq!(l[1], "node.started agent:handle-ticket");
    assert!(l.contains(&"node.token llm:step".to_owned()), "{l:?}");
    assert!(
        l.contains(&"node.error tool:lookup_order".to_owned()),
        "{l:?}"
    );
    for tool in ["lookup_order", "shipping_status", "issue_refund"] {
        assert!(
            l.contains(&format!("node.finished tool:{tool}")),
            "{tool}: {l:?}"
        );
    }
    // Every execution that started finished exactly once (a failed one reports node.error
    // first, then node.finished with status error).
    for e in stored.iter().filter(|e| e["type"] == "node.started") {
        let inst = &e["payload"]["instanceId"];
        let of = |t: &str| {
            stored
                .iter()
                .filter(|x| x["type"] == t && x["payload"]["instanceId"] == *inst)
                .collect::<Vec<_>>()
        };
        let fin = of("node.finished");
        assert_eq!(fin.len(), 1, "instance {inst}: {l:?}");
        let errors = of("node.error");
        assert!(errors.len() <= 1, "instance {inst}: {l:?}");
        if !errors.is_empty() {
            assert_eq!(fin[0]["payload"]["status"], json!("error"), "{inst}");
        }
    }

    let runs = h.runs();
    let r = run_named(&runs, "handle-ticket").expect("the run is listed");
    assert_eq!(r["runId"], json!(run_id));
    assert_eq!(r["app"], json!("support-agent"));
    assert_eq!(r["status"], json!("ok"));
    assert_eq!(r["sdk"]["name"], json!("rust"));
    assert_eq!(r["eventCount"], json!(sent.len()));
    assert_eq!(r["live"], json!(false));

    // `graphmind record` gives the same envelopes.
    let out = gm(&h.home, &["record", &run_id, "--port", &h.port.to_string()]).expect(0);
    let recorded: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("NDJSON"))
        .collect();
    assert_eq!(recorded, stored);
}

#[test]
fn two_concurrent_rust_runs_are_stored_apart_with_the_session_seqs() {
    let h = hub(|_| {});
    let port = h.port;
    let last_seq = block_on(async move {
        let gm = attached(port, "rust-agent").await;
        let one = gm.run("sum", async {
            let x = add(1, 2).await;
            add(x, 4).await
        });
        let two = gm.run("doubles", async {
            let mut n = 1;
            for _ in 0..5 {
                n = slow_double(n).await;
            }
            n
        });
        let (one, two) = tokio::join!(one, two);
        assert_eq!(one.expect("not aborted"), 7);
        assert_eq!(two.expect("not aborted"), 32);
        let last = gm.stats().last_seq.expect("seqs handed out");
        gm.dispose().await;
        last
    });
    let runs = wait_for(10, "both runs finished", || {
        let runs = h.runs();
        (runs.len() == 2 && runs.iter().all(|r| r["status"] == json!("ok"))).then_some(runs)
    });
    let id = |name: &str| {
        run_named(&runs, name).expect("listed")["runId"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (ea, eb) = (h.events(&id("sum")), h.events(&id("doubles")));
    assert_eq!(
        labels(&ea),
        [
            "run.started",
            "node.started agent:sum",
            "node.started tool:add",
            "node.finished tool:add",
            "node.started tool:add",
            "node.finished tool:add",
            "node.finished agent:sum",
            "run.finished",
        ]
    );
    assert_eq!(ea[3]["payload"]["output"], json!(3));
    assert_eq!(ea[5]["payload"]["output"], json!(7));
    assert_eq!(ea[2]["payload"]["input"], json!({"a": 1, "b": 2}));
    assert_eq!(eb.len(), 2 + 2 + 5 * 2);
    assert_eq!(
        eb.iter()
            .filter(|e| e["payload"]["nodeId"] == "tool:slow_double"
                && e["type"] == "node.finished")
            .map(|e| e["payload"]["output"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [2, 4, 8, 16, 32]
    );
    // One seq counter per session: the two runs' seqs interleave and together cover every
    // seq after the hello's, once.
    let mut all: Vec<u64> = ea
        .iter()
        .chain(&eb)
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    all.sort_unstable();
    let first = all[0];
    assert_eq!(
        all,
        (first..=last_seq).collect::<Vec<_>>(),
        "lost or duplicated seqs"
    );
    let health = h.health();
    assert_eq!(health["stats"]["duplicates"], json!(0));
    assert_eq!(health["stats"]["invalidFrames"], json!(0));
    assert_eq!(health["stats"]["eventsAccepted"], json!(all.len()));
}
