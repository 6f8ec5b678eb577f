//! `exec.paused` names the actions its gate accepts (`"actions"`, a loose extra), so a viewer
//! or CLI offers only those: no retry where the call cannot be re-run, no inject where no
//! value can be substituted (a streaming return), no abort outside a run.

mod macro_support;

use futures_util::{Stream, stream};
use graphmind_tests::FakeDebugger;
use macro_support::{pause_id, paused};
use serde_json::{Value, json};

#[graphmind::tool]
async fn full(n: u32) -> u32 {
    n
}

#[graphmind::tool(retry = false)]
async fn once(n: u32) -> u32 {
    n
}

#[graphmind::tool]
async fn numbers(n: u32) -> impl Stream<Item = u32> + Send {
    stream::iter(0..n)
}

/// Runs `call` inside a run (or not), waits for its hold, checks `exec.paused`'s actions and
/// continues it.
async fn actions_of<F>(
    hub: &FakeDebugger,
    gm: &graphmind::Session,
    n: usize,
    in_run: bool,
    call: F,
) -> Value
where
    F: std::future::Future + Send + 'static,
    F::Output: Send,
{
    let task = if in_run {
        let gm = gm.clone();
        tokio::spawn(async move {
            let _ = gm.run("r", call).await;
        })
    } else {
        tokio::spawn(async move {
            call.await;
        })
    };
    let p = paused(hub, n).await;
    let actions = p.payload()["actions"].clone();
    assert!(hub.resume(p.run_id(), &pause_id(&p), "continue"));
    task.await.expect("joined");
    actions
}

#[tokio::test]
async fn each_gate_names_the_actions_it_accepts() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![
        json!({"name": "full"}),
        json!({"name": "once"}),
        json!({"name": "numbers"}),
    ]);
    // The process default: calls outside any run report to it.
    let gm = graphmind::init(hub.config("allowed-actions"));
    assert!(gm.ready(std::time::Duration::from_secs(2)).await);
    assert_eq!(
        actions_of(&hub, &gm, 1, true, full(1)).await,
        json!(["continue", "retry", "inject", "abort"])
    );
    assert_eq!(
        actions_of(&hub, &gm, 2, true, once(1)).await,
        json!(["continue", "inject", "abort"]),
        "retry = false"
    );
    assert_eq!(
        actions_of(&hub, &gm, 3, true, async {
            let _ = numbers(2).await;
        })
        .await,
        json!(["continue", "retry", "abort"]),
        "a streaming return takes no injected value"
    );
    assert_eq!(
        actions_of(&hub, &gm, 4, false, full(2)).await,
        json!(["continue", "retry", "inject"]),
        "outside a run there is no run to abort"
    );
    hub.assert_valid();
    gm.dispose().await;
}
