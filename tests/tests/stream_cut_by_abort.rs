//! A streaming node whose stream is dropped because the debugger aborted the run finishes
//! `aborted` with `cancelled: true` — not `ok`, as a stream the caller stopped reading does.
//! (It finished `ok` with `dropped: true` while its run ended `aborted`.)

mod macro_support;

use futures_util::{Stream, StreamExt, stream};
use graphmind_tests::FakeDebugger;
use macro_support::{attached, finished, pause_id, paused, run_finished};
use serde_json::json;

#[graphmind::tool]
async fn numbers(n: u32) -> impl Stream<Item = u32> + Send {
    stream::iter(0..n)
}

#[graphmind::tool]
async fn check(i: u32) -> u32 {
    i
}

#[tokio::test]
async fn a_stream_cut_short_by_an_abort_finishes_aborted_not_ok() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![json!({"name": "check"})]).await;
    let run = tokio::spawn({
        let gm = gm.clone();
        async move {
            gm.run("r", async {
                let mut s = Box::pin(numbers(5).await);
                while let Some(i) = s.next().await {
                    check(i).await; // held: the debugger aborts here, mid-stream
                }
            })
            .await
        }
    });
    let p = paused(&hub, 1).await;
    assert!(hub.resume(p.run_id(), &pause_id(&p), "abort"));
    assert!(run.await.expect("joined").is_err(), "the run was aborted");
    run_finished(&hub).await;
    let fin = &finished(&hub, "tool:numbers")[0];
    assert_eq!(fin["status"], "aborted", "{fin}");
    assert_eq!(fin["cancelled"], true);
    assert_eq!(fin["dropped"], true);
    hub.assert_valid();
    gm.dispose().await;
}

#[tokio::test]
async fn a_stream_the_caller_stops_reading_stays_ok() {
    let hub = FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    gm.run("r", async {
        let mut s = Box::pin(numbers(5).await);
        s.next().await;
    })
    .await
    .expect("not aborted");
    run_finished(&hub).await;
    let fin = &finished(&hub, "tool:numbers")[0];
    assert_eq!(fin["status"], "ok", "{fin}");
    assert!(fin.get("cancelled").is_none());
    assert_eq!(fin["dropped"], true);
    gm.dispose().await;
}
