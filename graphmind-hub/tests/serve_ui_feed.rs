//! The viewer feed /ws/ui (docs/dev/ui-feed.md): hello, run updates, replay then live tail,
//! pauses, and control frames answered with result frames.

mod support;

use std::collections::HashSet;

use serde_json::json;
use support::*;

#[test]
fn subscribe_replays_then_tails_without_gaps_or_duplicates() {
    let h = hub(|_| {});
    let port = h.port;
    let run = "run_900000000001";
    block_on(async {
        let mut app = App::running(port, run, "feed").await;
        for i in 0..500 {
            app.emit(run, "x.step", json!({"i": i})).await;
        }
        let mut v = Peer::viewer(port).await;
        let hello = v.next_json(5000).await;
        assert_eq!(hello["type"], json!("hello"));
        assert_eq!(hello["version"], json!(env!("CARGO_PKG_VERSION")));
        assert!(hello["runs"].as_array().is_some());
        assert_eq!(hello["pauses"], json!([]));
        // Keep emitting while the viewer subscribes.
        let emitter = tokio::spawn(async move {
            for i in 500..1500 {
                app.emit(run, "x.step", json!({"i": i})).await;
            }
            app
        });
        v.send(&json!({"type": "subscribe", "runId": run})).await;
        let mut seen = Vec::new();
        let mut replayed = false;
        while seen.len() < 1501 {
            let f = v.next_json(10_000).await;
            match f["type"].as_str() {
                Some("events") => {
                    assert_eq!(f["runId"], json!(run));
                    assert_eq!(f["replay"], json!(!replayed), "replay flag");
                    for e in f["events"].as_array().unwrap() {
                        seen.push(e["seq"].as_u64().unwrap());
                    }
                }
                Some("replayed") => replayed = true,
                _ => {}
            }
        }
        assert!(replayed);
        let unique: HashSet<_> = seen.iter().collect();
        assert_eq!(unique.len(), seen.len(), "duplicates in the feed");
        let mut sorted = seen.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (1..=1501).collect::<Vec<u64>>());
        assert_eq!(seen, sorted, "out of order");
        // The run list follows the event count.
        let update = v
            .until(5000, |f| {
                f["type"] == "run" && f["run"]["eventCount"] == json!(1501)
            })
            .await;
        assert_eq!(update["run"]["runId"], json!(run));
        let _app = emitter.await.unwrap();
        v.send(&json!({"type": "unsubscribe"})).await;
    });
}

#[test]
fn subscribe_after_seq_replays_only_later_events_then_tails_and_lists_the_run_first() {
    let h = hub(|_| {});
    let port = h.port;
    let run = "run_900000000003";
    block_on(async {
        let mut app = App::running(port, run, "after-seq").await;
        for i in 0..300 {
            app.emit(run, "x.step", json!({"i": i})).await;
        }
        wait_for(10, "301 events stored", || {
            (h.seqs(run).len() == 301).then_some(())
        });
        let mut v = Peer::viewer(port).await;
        v.until(5000, |f| f["type"] == "hello").await;
        // The viewer read seqs 1..=200 over HTTP: the feed replays from 201 on.
        v.send(&json!({"type": "subscribe", "runId": run, "afterSeq": 200}))
            .await;
        let listed = v.next_json(5000).await;
        assert_eq!(listed["type"], json!("run"), "the run first: {listed}");
        assert_eq!(listed["run"]["runId"], json!(run));
        assert_eq!(listed["run"]["eventCount"], json!(301));
        let mut replayed = Vec::new();
        loop {
            let f = v
                .until(5000, |f| f["type"] == "events" || f["type"] == "replayed")
                .await;
            if f["type"] == "replayed" {
                break;
            }
            assert_eq!(f["replay"], json!(true));
            replayed.extend(
                f["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| e["seq"].as_u64().unwrap()),
            );
        }
        assert_eq!(replayed, (201..=301).collect::<Vec<u64>>());
        // Then the live tail.
        app.emit(run, "x.step", json!({"i": 300})).await;
        let live = v
            .until(5000, |f| {
                f["type"] == "events" && f["replay"] == json!(false)
            })
            .await;
        assert_eq!(live["events"][0]["seq"], json!(302));
    });
}

#[test]
fn pauses_and_resume_through_the_feed() {
    let h = hub(|_| {});
    let port = h.port;
    let token = h.viewer_token.clone();
    let run = "run_900000000002";
    block_on(async {
        let mut v = Peer::viewer(port).await;
        v.until(5000, |f| f["type"] == "hello").await;
        let mut app = App::holding(
            port,
            run,
            "held",
            "pay",
            "pause_v_1",
            "before",
            json!({"amount": 3}),
        )
        .await;
        // The pauses frame and a run update may come in either order.
        let (mut pauses, mut run_update) = (None, None);
        while pauses.is_none() || run_update.is_none() {
            let f = v.next_json(5000).await;
            if f["type"] == "pauses" && f["pauses"].as_array().is_some_and(|a| !a.is_empty()) {
                pauses = Some(f);
            } else if f["type"] == "run" && f["run"]["runId"] == json!(run) {
                run_update = Some(f);
            }
        }
        let p = pauses.unwrap();
        assert_eq!(p["pauses"][0]["pauseId"], json!("pause_v_1"));
        assert_eq!(p["pauses"][0]["input"], json!({"amount": 3}));
        assert_eq!(run_update.unwrap()["run"]["live"], json!(true));

        v.send(
            &json!({"type": "resume", "token": token, "requestId": "q1", "runId": run,
                       "pauseId": "pause_v_1", "action": "inject", "output": {"ok": true}}),
        )
        .await;
        let f = app.expect_resume(5000).await;
        assert_eq!(f["payload"]["output"], json!({"ok": true}));
        app.emit(
            run,
            "exec.refused",
            json!({"pauseId": "pause_v_1", "code": "schema", "message": "want a number"}),
        )
        .await;
        let res = v.until(5000, |f| f["type"] == "result").await;
        assert_eq!(res["requestId"], json!("q1"));
        assert_eq!(res["ok"], json!(false));
        assert_eq!(res["outcome"], json!("refused"));
        assert_eq!(res["message"], json!("want a number"));

        v.send(
            &json!({"type": "resume", "token": token, "requestId": "q2", "runId": run,
                       "pauseId": "pause_v_1", "action": "continue"}),
        )
        .await;
        app.expect_resume(5000).await;
        app.emit(
            run,
            "exec.resumed",
            json!({"pauseId": "pause_v_1", "action": "continue"}),
        )
        .await;
        let res = v.until(5000, |f| f["type"] == "result").await;
        assert_eq!(
            (res["requestId"].clone(), res["outcome"].clone()),
            (json!("q2"), json!("resumed"))
        );
        let open = get_async(port, "/api/pauses".into()).await.json();
        assert_eq!(open["pauses"], json!([]));

        v.send(&json!({"type": "breakpoint.set", "token": token, "requestId": "q3", "matcher": {"kind": "tool"}})).await;
        let res = v.until(5000, |f| f["type"] == "result").await;
        assert_eq!(res["ok"], json!(true));
        let f = app
            .peer
            .until(5000, |f| f["type"] == "breakpoint.set")
            .await;
        assert_eq!(f["payload"]["matcher"], json!({"kind": "tool"}));

        v.send(
            &json!({"type": "resume", "token": token, "requestId": "q4", "runId": run,
                       "pauseId": "pause_v_1", "action": "fly"}),
        )
        .await;
        let res = v.until(5000, |f| f["type"] == "result").await;
        assert_eq!(res["outcome"], json!("invalid"));
        v.send_text("not json").await;
        let res = v.until(5000, |f| f["type"] == "result").await;
        assert_eq!(res["outcome"], json!("invalid"));
    });
}
