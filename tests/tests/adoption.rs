//! Breakpoints and mode: adopted (replaced) from every `hello.ack`, then changed by
//! `breakpoint.set` / `breakpoint.clear` (exact rule equality) and `mode.set`.

use std::time::Duration;

use graphmind::protocol::{BreakpointMatcher, Mode, NodeKind, PausePoint};
use graphmind_tests::{FakeDebugger, eventually};
use serde_json::json;

const SECOND: Duration = Duration::from_secs(1);

fn rule(
    kind: Option<NodeKind>,
    name: Option<&str>,
    point: Option<PausePoint>,
) -> BreakpointMatcher {
    BreakpointMatcher {
        kind,
        name: name.map(str::to_owned),
        point,
        ..BreakpointMatcher::default()
    }
}

fn same(a: &[BreakpointMatcher], b: &[BreakpointMatcher]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_rule(y))
}

#[tokio::test]
async fn ack_breakpoints_and_mode_are_adopted() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![
        json!({"kind": "tool", "name": "search"}),
        json!({"point": "error"}),
    ]);
    hub.set_mode("step");
    let gm = graphmind::Session::new(hub.config("adopt"));
    assert!(gm.breakpoints().is_empty());
    assert_eq!(gm.mode(), Mode::Run);
    assert!(gm.ready(2 * SECOND).await);
    assert!(same(
        &gm.breakpoints(),
        &[
            rule(Some(NodeKind::Tool), Some("search"), None),
            rule(None, None, Some(PausePoint::Error)),
        ]
    ));
    assert_eq!(gm.mode(), Mode::Step);
    gm.dispose().await;
}

#[tokio::test]
async fn a_later_ack_replaces_the_state_instead_of_merging() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"kind": "llm"})]);
    hub.set_mode("step");
    let gm = graphmind::Session::new(hub.config("replace"));
    assert!(gm.ready(2 * SECOND).await);
    gm.emit("run_a", graphmind_tests::token_event("llm:step", "x"));
    hub.set_breakpoints(vec![json!({"kind": "tool", "point": "after"})]);
    hub.set_mode("run");
    hub.drop_connections();
    hub.wait_connections(2, 3 * SECOND).await;
    eventually("the second ack to be adopted", 3 * SECOND, || {
        gm.mode() == Mode::Run
    })
    .await;
    assert!(same(
        &gm.breakpoints(),
        &[rule(Some(NodeKind::Tool), None, Some(PausePoint::After))]
    ));
    gm.dispose().await;
}

#[tokio::test]
async fn controls_set_and_clear_breakpoints_by_exact_rule_and_switch_mode() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("controls"));
    assert!(gm.ready(2 * SECOND).await);

    assert!(hub.breakpoint_set(json!({"kind": "tool"})));
    assert!(hub.breakpoint_set(json!({"kind": "tool", "name": "search"})));
    assert!(hub.breakpoint_set(json!({"kind": "tool"}))); // same rule: not added twice
    assert!(hub.breakpoint_set(json!({"point": "error", "note": "extra fields are fine"})));
    eventually("three rules", SECOND, || gm.breakpoints().len() == 3).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(gm.breakpoints().len(), 3, "a duplicate set added a rule");

    // {kind: tool, point: before} is not the same rule as {kind: tool}, even though both
    // match the same gates: nothing is removed.
    assert!(hub.breakpoint_clear(json!({"kind": "tool", "point": "before"})));
    // Exact equality on kind/name/point; unknown fields do not matter.
    assert!(hub.breakpoint_clear(json!({"kind": "tool", "name": "search", "x": 1})));
    eventually("the named rule to go", SECOND, || {
        gm.breakpoints().len() == 2
    })
    .await;
    assert!(same(
        &gm.breakpoints(),
        &[
            rule(Some(NodeKind::Tool), None, None),
            rule(None, None, Some(PausePoint::Error)),
        ]
    ));

    assert!(hub.mode_set("step"));
    eventually("step mode", SECOND, || gm.mode() == Mode::Step).await;
    assert!(hub.mode_set("run"));
    eventually("run mode", SECOND, || gm.mode() == Mode::Run).await;
    // An unknown mode is ignored, not adopted.
    assert!(hub.mode_set("warp"));
    assert!(hub.breakpoint_set(json!({"name": "sentinel"})));
    eventually("the sentinel rule", SECOND, || gm.breakpoints().len() == 3).await;
    assert_eq!(gm.mode(), Mode::Run);
    gm.dispose().await;
}
