//! A tool called before `graphmind::init` reports to a default session built from the
//! environment; `init` then closes that session properly (its implicit run is finished `ok`,
//! not left to be marked abandoned) and says so once on stderr.
//!
//! The app half runs in a child process (this test binary again, with `GRAPHMIND_URL` set
//! for it), since the early session is the process default built from the environment.

use std::time::Duration;

use graphmind_tests::FakeDebugger;

const SECOND: Duration = Duration::from_secs(1);
const APP_HALF: &str = "app_half_calls_a_tool_before_init";

#[graphmind::tool]
async fn double(n: i64) -> i64 {
    n * 2
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_called_before_init_has_its_implicit_run_finished_and_is_warned_about_once() {
    let hub = FakeDebugger::start().await;
    let out = tokio::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--ignored",
            "--exact",
            APP_HALF,
            "--nocapture",
            "--test-threads=1",
        ])
        .env("GRAPHMIND_URL", hub.url())
        .env_remove("GRAPHMIND_DISABLED")
        .env_remove("GRAPHMIND_ENV")
        .output();
    let out = tokio::time::timeout(30 * SECOND, out)
        .await
        .expect("the app half finished")
        .expect("ran");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    let warned = stderr.matches("ran before graphmind::init").count();
    assert_eq!(warned, 1, "said once: {stderr}");

    let started: Vec<_> = hub.frames_of("run.started");
    let early = started
        .iter()
        .find(|f| f.payload()["meta"]["implicit"] == true)
        .expect("the early implicit run");
    let finished = hub.frames_of("run.finished");
    let end = finished
        .iter()
        .find(|f| f.run_id() == early.run_id())
        .unwrap_or_else(|| panic!("the early implicit run finished: {finished:?}"));
    assert_eq!(end.payload()["status"], "ok");
    let apps: Vec<_> = hub
        .frames_of("hello")
        .iter()
        .map(|h| h.payload()["app"].clone())
        .collect();
    assert!(
        apps.contains(&serde_json::json!("configured")),
        "the configured session attached too: {apps:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the app half of the test above, run by it with GRAPHMIND_URL set"]
async fn app_half_calls_a_tool_before_init() {
    assert!(
        graphmind::session().ready(2 * SECOND).await,
        "the early default attached"
    );
    assert_eq!(double(1).await, 2, "called before init");
    let gm = graphmind::init(graphmind::Config::new("configured"));
    assert!(gm.ready(2 * SECOND).await);
    assert_eq!(double(2).await, 4);
    // Replacing a default that init made is quiet.
    let again = graphmind::init(graphmind::Config::new("configured-again"));
    again.dispose().await;
    gm.dispose().await;
}
