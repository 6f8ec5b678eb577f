//! Issue 35 item 7 (the guard dropped early): instrumented work that went on after the
//! guard of `graphmind::init` was dropped was not recorded, and nothing said so. It is said
//! once, in one line naming the app; the calls themselves still run.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use graphmind_tests::FakeDebugger;

#[graphmind::tool]
async fn double(n: i64) -> i64 {
    n * 2
}

#[tokio::test]
async fn a_call_after_the_guard_was_dropped_says_it_was_not_recorded() {
    let hub = FakeDebugger::start().await;
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let hook = Arc::clone(&seen);
    let config = hub
        .config("closed-early")
        .on_warning(move |m| hook.lock().expect("lock").push(m.to_owned()));
    let gm = graphmind::init(config);
    assert!(gm.ready(Duration::from_secs(2)).await, "attached");
    assert_eq!(double(1).await, 2);
    drop(gm);
    let after_close = |seen: &Mutex<Vec<String>>| -> Vec<String> {
        seen.lock()
            .expect("lock")
            .iter()
            .filter(|m| m.starts_with("an instrumented call"))
            .cloned()
            .collect()
    };
    assert!(after_close(&seen).is_empty(), "{seen:?}");
    for n in 0..3 {
        assert_eq!(double(n).await, n * 2, "the call still runs");
    }
    let said = after_close(&seen);
    assert_eq!(said.len(), 1, "said once: {said:?}");
    assert!(
        said[0].starts_with(
            "an instrumented call ran after the session of app \"closed-early\" closed, so it \
             was not recorded"
        ),
        "{said:?}"
    );
    assert!(!said[0].contains("  "), "one clean line: {said:?}");
}
