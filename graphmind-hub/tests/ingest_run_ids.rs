//! Run ids are taken as they are or not at all: `run_\ud800` and `run_\udfff` from two apps
//! were both stored as `run_\ufffd` (one run; the second app's events dropped as
//! duplicates), and a 100,000-character run id was accepted. A run id with a lone surrogate,
//! or longer than 128 characters, is now dropped and counted on `/health`.

mod support;

use serde_json::{Value, json};
use support::*;

/// A `run.started` frame of `run_id`, written as raw JSON text (`run_id` is spliced in as it
/// is, so it may hold escapes serde would not write).
fn started_raw(seq: u64, run_id_json: &str) -> String {
    format!(
        r#"{{"gm":1,"seq":{seq},"ts":{},"runId":"{run_id_json}","type":"run.started","payload":{{"app":"test-app","sdk":{{"name":"python","version":"0.5.1"}},"meta":{{"name":"ids"}}}}}}"#,
        now_ms()
    )
}

fn stats(h: &TestHub) -> Value {
    h.health()["stats"].clone()
}

#[test]
fn lone_surrogate_run_ids_of_two_apps_are_refused_not_merged() {
    let h = hub(|_| {});
    block_on(async {
        let mut a = App::connect(h.port).await;
        let mut b = App::connect(h.port).await;
        a.peer.send_text(&started_raw(1, r"run_\ud800")).await;
        b.peer.send_text(&started_raw(1, r"run_\udfff")).await;
        // A lone surrogate in a payload string is still mended, the run kept.
        a.peer
            .send_text(&format!(
                r#"{{"gm":1,"seq":2,"ts":{},"runId":"run_ok_payload","type":"run.started","payload":{{"app":"test-app","sdk":{{"name":"python","version":"0.5.1"}},"meta":{{"name":"a\ud800b"}}}}}}"#,
                now_ms()
            ))
            .await;
    });
    wait_for(10, "two refused run ids", || {
        (stats(&h)["runIdsInvalid"] == json!(2)).then_some(())
    });
    wait_for(10, "the run with a mended payload", || {
        (h.events("run_ok_payload").len() == 1).then_some(())
    });
    let ids: Vec<String> = h
        .runs()
        .iter()
        .filter_map(|r| r["runId"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(ids, vec!["run_ok_payload".to_owned()], "{ids:?}");
    assert_eq!(stats(&h)["duplicates"], json!(0));
}

#[test]
fn run_ids_over_128_characters_are_refused() {
    let h = hub(|_| {});
    // 128 characters (multi-byte ones, so bytes are not what is counted) pass; 129 do not.
    let ok = format!("run_{}", "é".repeat(124));
    let long = format!("run_{}", "é".repeat(125));
    let huge = format!("run_{}", "x".repeat(100_000));
    block_on(async {
        let mut app = App::connect(h.port).await;
        app.start_run(&long, "too long").await;
        app.start_run(&huge, "far too long").await;
        app.start_run(&ok, "fits").await;
    });
    wait_for(10, "the run that fits", || {
        (h.events(&ok).len() == 1).then_some(())
    });
    assert_eq!(stats(&h)["runIdsTooLong"], json!(2));
    assert_eq!(h.runs().len(), 1);
}
