//! GET /api/runs, /api/runs/{id}, /api/runs/{id}/events paging.

mod support;

use serde_json::json;
use support::*;

#[test]
fn runs_list_newest_first_with_summaries() {
    let h = hub(|_| {});
    block_on(async {
        let mut app = App::running(h.port, "run_800000000001", "first").await;
        app.emit(
            "run_800000000001",
            "run.finished",
            json!({"status": "error", "error": {"name": "E", "message": "m"}}),
        )
        .await;
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        app.start_run("run_800000000002", "second").await;
        let runs = loop {
            let r = get_async(h.port, "/api/runs".into()).await.json();
            if r["runs"]
                .as_array()
                .is_some_and(|a| a.len() == 2 && a[1]["eventCount"] == json!(2))
            {
                break r;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        };
        let (second, first) = (&runs["runs"][0], &runs["runs"][1]);
        assert_eq!(second["runId"], json!("run_800000000002"));
        assert_eq!(second["name"], json!("second"));
        assert_eq!(second["app"], json!("test-app"));
        assert_eq!(second["status"], json!("running"));
        assert_eq!(second["live"], json!(true));
        assert_eq!(second["endedAt"], json!(null));
        assert_eq!(second["durationMs"], json!(null));
        assert_eq!(second["sdk"], json!({"name": "rust", "version": "0.1.0"}));
        assert_eq!(first["status"], json!("error"));
        assert_eq!(first["live"], json!(false));
        assert!(first["durationMs"].as_u64().is_some());
        let one = get_async(h.port, "/api/runs/run_800000000001".into())
            .await
            .json();
        assert_eq!(&one, first);
    });
    assert_eq!(h.get("/api/runs/run_nope").status, 404);
    assert_eq!(h.get("/api/runs/run_nope/events").status, 404);
    assert_eq!(
        h.get_json("/api/runs?limit=1")["runs"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn events_page_with_after_seq_and_limit() {
    let h = hub(|_| {});
    let run = "run_800000000003";
    block_on(async {
        let mut app = App::running(h.port, run, "paged").await;
        for i in 0..24 {
            app.emit(run, "x.step", json!({"i": i})).await;
        }
    });
    wait_for(10, "25 events", || (h.seqs(run).len() == 25).then_some(()));
    let p1 = h.get_json(&format!("/api/runs/{run}/events?limit=10"));
    assert_eq!(p1["runId"], json!(run));
    assert_eq!(p1["events"].as_array().unwrap().len(), 10);
    assert_eq!(p1["more"], json!(true));
    assert_eq!(p1["nextAfterSeq"], json!(10));
    assert_eq!(p1["events"][0]["type"], json!("run.started"));
    let p2 = h.get_json(&format!("/api/runs/{run}/events?afterSeq=10&limit=10"));
    assert_eq!(p2["events"][0]["seq"], json!(11));
    assert_eq!(p2["nextAfterSeq"], json!(20));
    let p3 = h.get_json(&format!("/api/runs/{run}/events?afterSeq=20&limit=10"));
    assert_eq!(p3["events"].as_array().unwrap().len(), 5);
    assert_eq!(p3["more"], json!(false));
    assert_eq!(p3["nextAfterSeq"], json!(null));
    assert_eq!(p3["events"][4]["payload"], json!({"i": 23}));
    let all = h.get_json(&format!("/api/runs/{run}/events"));
    assert_eq!(all["events"].as_array().unwrap().len(), 25);
    assert_eq!(
        h.get(&format!("/api/runs/{run}/events?afterSeq=x")).status,
        400
    );
}

#[test]
fn events_page_names_the_next_page_in_a_header_before_its_body() {
    let h = hub(|_| {});
    let run = "run_800000000013";
    block_on(async {
        let mut app = App::running(h.port, run, "paged").await;
        for i in 0..14 {
            app.emit(run, "x.step", json!({"i": i})).await;
        }
    });
    wait_for(10, "15 events", || (h.seqs(run).len() == 15).then_some(()));
    const NEXT: &str = "x-graphmind-next-after-seq";
    let p1 = h.get(&format!("/api/runs/{run}/events?limit=10"));
    assert_eq!(p1.status, 200);
    assert_eq!(p1.header(NEXT).as_deref(), Some("10"), "{}", p1.head);
    assert_eq!(p1.json()["nextAfterSeq"], json!(10));
    let p2 = h.get(&format!("/api/runs/{run}/events?afterSeq=10&limit=10"));
    assert_eq!(p2.json()["more"], json!(false));
    assert_eq!(
        p2.header(NEXT),
        None,
        "the last page names no next one: {}",
        p2.head
    );
}

#[test]
fn lean_events_page_leaves_out_gm_and_the_run_id_and_nothing_else() {
    let h = hub(|_| {});
    let run = "run_800000000023";
    block_on(async {
        let mut app = App::running(h.port, run, "lean").await;
        for i in 0..4 {
            app.emit(run, "x.step", json!({"i": i, "runId": run, "gm": 1}))
                .await;
        }
    });
    wait_for(10, "5 events", || (h.seqs(run).len() == 5).then_some(()));
    let full = h.get_json(&format!("/api/runs/{run}/events?limit=10"));
    let lean = h.get_json(&format!("/api/runs/{run}/events?limit=10&lean=true"));
    assert_eq!(lean["runId"], json!(run), "the page names the run");
    let (full, lean) = (
        full["events"].as_array().unwrap(),
        lean["events"].as_array().unwrap(),
    );
    assert_eq!(full.len(), 5);
    assert_eq!(lean.len(), 5);
    for (f, l) in full.iter().zip(lean) {
        assert_eq!(f["runId"], json!(run));
        assert_eq!(f["gm"], json!(1));
        let mut expected = f.as_object().unwrap().clone();
        expected.remove("gm");
        expected.remove("runId");
        assert_eq!(l.as_object().unwrap(), &expected, "only gm and runId go");
    }
    assert_eq!(
        lean[4]["payload"],
        json!({"i": 3, "runId": run, "gm": 1}),
        "a payload's own members of those names stay"
    );
    let off = h.get_json(&format!("/api/runs/{run}/events?limit=10&lean=false"));
    assert_eq!(off["events"][0]["runId"], json!(run));
}
