//! `graphmind::run!` on the default session: abort at a gate ends the run with
//! `Err(Aborted)`, and nothing after that gate executes.

mod macro_support;

use std::sync::atomic::{AtomicUsize, Ordering};

use graphmind_tests::FakeDebugger;
use macro_support::{SECOND, events, pause_id, paused, run_finished};
use serde_json::json;

static LOOKUPS: AtomicUsize = AtomicUsize::new(0);
static REFUNDS: AtomicUsize = AtomicUsize::new(0);
static AFTER: AtomicUsize = AtomicUsize::new(0);

#[graphmind::tool]
async fn lookup(id: String) -> String {
    LOOKUPS.fetch_add(1, Ordering::SeqCst);
    id
}

#[graphmind::tool]
async fn refund(id: String) -> String {
    REFUNDS.fetch_add(1, Ordering::SeqCst);
    id
}

#[tokio::test]
async fn abort_at_the_after_gate_ends_run_macro_with_aborted_and_runs_nothing_more() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"name": "lookup", "point": "after"})]);
    let gm = graphmind::init(hub.config("run-abort"));
    assert!(gm.ready(2 * SECOND).await);

    let task = tokio::spawn(async {
        graphmind::run!("ticket", async {
            let order = lookup("ORD-1".into()).await;
            AFTER.fetch_add(1, Ordering::SeqCst);
            refund(order).await
        })
        .await
    });
    let held = paused(&hub, 1).await;
    assert_eq!(held.payload()["nodeId"], "tool:lookup");
    assert!(hub.resume(held.run_id(), &pause_id(&held), "abort"));
    let aborted = task.await.expect("joined").expect_err("aborted");
    assert_eq!(aborted.name(), "ticket");
    assert_eq!(aborted.run_id(), held.run_id());
    assert_eq!(
        LOOKUPS.load(Ordering::SeqCst),
        1,
        "the gated call ran before its after gate"
    );
    assert_eq!(
        AFTER.load(Ordering::SeqCst),
        0,
        "nothing after the gate ran"
    );
    assert_eq!(
        REFUNDS.load(Ordering::SeqCst),
        0,
        "no further tool was called"
    );
    run_finished(&hub).await;
    assert_eq!(
        events(&hub),
        [
            "run.started",
            "node.started agent:ticket",
            "node.started tool:lookup",
            "exec.paused tool:lookup after",
            "exec.resumed abort",
            "node.finished tool:lookup aborted",
            "node.finished agent:ticket aborted",
            "run.finished aborted",
        ]
    );

    // The next run is unaffected.
    let ok = graphmind::run!("ticket-2", async { refund("ORD-2".into()).await }).await;
    assert_eq!(ok.expect("not aborted"), "ORD-2");
    assert_eq!(REFUNDS.load(Ordering::SeqCst), 1);
    gm.dispose().await;
}
