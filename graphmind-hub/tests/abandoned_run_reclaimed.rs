//! A run whose app went away is `abandoned` after the grace period, in the API and in the
//! stored row; when the app comes back with its resumeToken the run is `running` again in
//! both (the stored row used to stay `abandoned`). A return within the grace restarts it: the
//! run is abandoned a full grace after the app's last departure, not its first.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{App, TestHub, block_on, hub, wait_for};

/// The run's summary; `null` while the hub does not know it yet.
fn summary(h: &TestHub, run: &str) -> Value {
    let r = h.get(&format!("/api/runs/{run}"));
    if r.status == 404 {
        return Value::Null;
    }
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

#[test]
fn a_reclaimed_abandoned_run_is_running_again_in_storage() {
    let h = hub(|c| c.abandon_grace = std::time::Duration::from_millis(200));
    block_on(async {
        let mut app = App::connect(h.port).await;
        let token = app.session_token();
        app.start_run("run_back", "comes-back").await;
        let seq = app.seq;
        drop(app);
        wait_for(10, "abandoned", || {
            (summary(&h, "run_back")["status"] == json!("abandoned")).then_some(())
        });
        assert_eq!(h.stored_status("run_back"), "abandoned");

        let mut app = App::connect_resuming(h.port, Some(&token), seq).await;
        let s = summary(&h, "run_back");
        assert_eq!(s["status"], json!("running"), "{s}");
        assert_eq!(s["live"], json!(true), "{s}");
        assert_eq!(h.stored_status("run_back"), "running");

        // It goes on and finishes as usual.
        app.emit("run_back", "run.finished", json!({"status": "ok"}))
            .await;
        wait_for(10, "finished", || {
            (summary(&h, "run_back")["status"] == json!("ok")).then_some(())
        });
        assert_eq!(h.stored_status("run_back"), "ok");
    });
}

#[test]
fn the_grace_counts_from_the_apps_last_departure() {
    let grace = Duration::from_millis(2000);
    let h = hub(|c| c.abandon_grace = std::time::Duration::from_millis(2000));
    block_on(async {
        let mut app = App::connect(h.port).await;
        let token = app.session_token();
        app.start_run("run_flaky", "flaky-link").await;
        let seq = app.seq;
        drop(app);
        let first_left = Instant::now();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let app = App::connect_resuming(h.port, Some(&token), seq).await;
        tokio::time::sleep(Duration::from_millis(900)).await;
        drop(app);
        let last_left = Instant::now();
        // The first departure's grace runs out; the app left again less than a grace ago.
        tokio::time::sleep((first_left + grace + Duration::from_millis(300)) - Instant::now())
            .await;
        let s = summary(&h, "run_flaky");
        if last_left.elapsed() < grace {
            assert_eq!(s["status"], json!("running"), "abandoned early: {s}");
            assert_eq!(s["live"], json!(false), "{s}");
        }
        wait_for(10, "abandoned after the last departure", || {
            (summary(&h, "run_flaky")["status"] == json!("abandoned")).then_some(())
        });
        assert!(last_left.elapsed() >= grace);
        assert_eq!(h.stored_status("run_flaky"), "abandoned");
    });
}
