//! `GRAPHMIND_REPLAY` never blocks `graphmind::init` (issue 34: an app given a recording of
//! 200,000 parallel steps sat inside `init` for over 156 s): the recording is read off the
//! caller's thread, `init` returns at once, a slow read is announced once on the warning hook,
//! and the run's calls, which wait for it, are answered from it. A recording that cannot be
//! read is announced once too, and the calls run live.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[graphmind::tool]
async fn fetch(page: u64) -> u64 {
    page + 1
}

/// `n` calls of `fetch` started in parallel and finished in reverse order, each recorded
/// with the output `page * 10` (the body would answer `page + 1`).
fn parallel_recording(n: u64) -> String {
    let mut text = String::with_capacity(usize::try_from(n).unwrap_or(0) * 230);
    for i in 0..n {
        text.push_str(&format!(
            r#"{{"runId":"run_big","type":"node.started","payload":{{"nodeId":"tool:fetch","kind":"tool","name":"fetch","instanceId":"c{i}","input":{{"page":{i}}}}}}}"#
        ));
        text.push('\n');
    }
    for i in (0..n).rev() {
        text.push_str(&format!(
            r#"{{"runId":"run_big","type":"node.finished","payload":{{"nodeId":"tool:fetch","instanceId":"c{i}","status":"ok","output":{}}}}}"#,
            i * 10
        ));
        text.push('\n');
    }
    text
}

type Warnings = Arc<Mutex<Vec<String>>>;

fn config(app: &str, recording: &std::path::Path, warnings: &Warnings) -> graphmind::Config {
    let seen = Arc::clone(warnings);
    graphmind::Config::new(app)
        // Nothing listens there: the replay runs detached, as with no debugger.
        .url("ws://127.0.0.1:9/ingest")
        .env_vars([("GRAPHMIND_REPLAY", recording.to_string_lossy().into_owned())])
        .on_warning(move |m| seen.lock().expect("warnings").push(m.to_owned()))
}

fn matching(warnings: &Warnings, part: &str) -> Vec<String> {
    warnings
        .lock()
        .expect("warnings")
        .iter()
        .filter(|w| w.contains(part))
        .cloned()
        .collect()
}

// One test: `init` sets the process's default session, which the tools report to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_returns_at_once_with_a_200k_step_recording_and_its_calls_are_answered_from_it() {
    let dir = std::env::temp_dir().join(format!("gm-replay-large-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");

    // Unreadable: said once, promptly; the calls run live.
    let warnings = Warnings::default();
    let missing = dir.join("missing.ndjson");
    let guard = graphmind::init(config("replay-missing", &missing, &warnings));
    let out = graphmind::run("fetch-pages", async { fetch(7).await }).await;
    assert_eq!(out.ok(), Some(8), "ran live");
    let said = matching(&warnings, "GRAPHMIND_REPLAY: cannot read");
    assert_eq!(said.len(), 1, "{:?}", warnings.lock().expect("warnings"));
    assert!(said[0].ends_with("; running without replay"), "{}", said[0]);
    drop(guard);

    // 200,000 parallel steps finished in reverse.
    let n = 200_000;
    let path = dir.join("big.ndjson");
    std::fs::write(&path, parallel_recording(n)).expect("write");
    let warnings = Warnings::default();
    let started = Instant::now();
    let guard = graphmind::init(config("replay-large", &path, &warnings));
    let init_took = started.elapsed();
    // Measured at ~1 ms; today's `init` read the whole recording first (minutes in a debug
    // build).
    assert!(
        init_took < Duration::from_secs(3),
        "init took {init_took:?} with a large recording"
    );
    let out = graphmind::run("fetch-pages", async {
        (fetch(7).await, fetch(n - 1).await)
    })
    .await;
    let loaded_after = started.elapsed();
    assert_eq!(
        out.ok(),
        Some((70, (n - 1) * 10)),
        "answered from the recording (the bodies would give 8 and {n})"
    );
    let slow = matching(&warnings, "GRAPHMIND_REPLAY: still reading");
    eprintln!("init {init_took:?}; the recording answered after {loaded_after:?}; {slow:?}");
    assert!(slow.len() <= 1, "said once: {slow:?}");
    if loaded_after > Duration::from_secs(2) {
        assert_eq!(slow.len(), 1, "a slow read is announced");
        assert!(
            slow[0].contains("big.ndjson") && slow[0].ends_with("replayed calls wait for it"),
            "{}",
            slow[0]
        );
    }
    assert!(
        matching(&warnings, "running without replay").is_empty(),
        "{:?}",
        warnings.lock().expect("warnings")
    );
    drop(guard);
    let _ = std::fs::remove_dir_all(&dir);
}
