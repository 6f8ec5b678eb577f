//! Load: 300 concurrent app connections, and a 20,000-frame flood stored completely.

mod support;

use serde_json::json;
use support::*;

#[test]
fn three_hundred_concurrent_apps_are_all_served() {
    let h = hub(|_| {});
    let port = h.port;
    block_on(async {
        let mut apps = Vec::new();
        for i in 0..300u32 {
            apps.push(tokio::spawn(async move {
                let mut app = App::connect(port).await;
                let run = format!("run_6{i:011}");
                app.start_run(&run, "many").await;
                app.emit(&run, "run.finished", json!({"status": "ok"}))
                    .await;
                app
            }));
        }
        let mut held = Vec::new();
        for a in apps {
            held.push(a.await.expect("app task"));
        }
        let health = get_async(port, "/health".into()).await.json();
        assert_eq!(health["apps"], json!(300));
        for a in &held {
            assert_eq!(a.ack["payload"]["versions"]["protocol"], json!(1));
        }
    });
    let runs = wait_for(20, "300 runs", || {
        let r = h.get_json("/api/runs?limit=1000")["runs"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        (r.len() == 300 && r.iter().all(|r| r["eventCount"] == json!(2))).then_some(r)
    });
    assert!(runs.iter().all(|r| r["status"] == json!("ok")));
}

#[test]
fn a_20000_frame_flood_is_stored_completely() {
    let h = hub(|_| {});
    let run = "run_700000000001";
    block_on(async {
        let mut app = App::running(h.port, run, "flood").await;
        for i in 0..20_000u32 {
            app.emit(
                run,
                "node.token",
                json!({"nodeId": "llm:step", "deltas": [{"t": "text", "v": format!("tok{i} ")}]}),
            )
            .await;
        }
    });
    let seqs = wait_for(60, "20,001 stored events", || {
        let s = h.seqs(run);
        (s.len() == 20_001).then_some(s)
    });
    assert_eq!(seqs, (1..=20_001).collect::<Vec<u64>>());
    assert_eq!(h.runs()[0]["eventCount"], json!(20_001));
    let last = &h.events(run)[20_000];
    assert_eq!(last["payload"]["deltas"][0]["v"], json!("tok19999 "));
}
