//! Issue 35 item 12: an app given no `GRAPHMIND_URL` could not find a hub started with
//! `--port 0`, as the CLI does. It looks for the one live `graphmind serve` of this user by
//! its run file, says once on stderr which it chose, and is trusted as at any address the
//! run file names; with no live hub it keeps the default URL and says nothing.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::{TempDir, hub, wait_for};

fn collecting(config: graphmind::Config) -> (graphmind::Config, Arc<Mutex<Vec<String>>>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let hook = Arc::clone(&seen);
    let config = config.on_warning(move |m| hook.lock().expect("lock").push(m.to_owned()));
    (config, seen)
}

fn no_url(app: &str, home: &std::path::Path) -> graphmind::Config {
    graphmind::Config::new(app)
        .enabled(true)
        .env_vars(Vec::<(String, String)>::new())
        .hub_home(home)
}

#[test]
fn an_app_without_graphmind_url_finds_the_hub_started_on_port_zero_by_its_run_file() {
    let h = hub(|_| {});
    assert_ne!(h.port, 4747, "a port the default URL does not name");
    let (config, seen) = collecting(no_url("found-by-run-file", &h.home));
    let gm = graphmind::Session::new(config);
    let want = format!("ws://127.0.0.1:{}/ingest", h.port);
    assert_eq!(gm.url(), want);
    let said = seen.lock().expect("lock").clone();
    assert_eq!(said.len(), 1, "one line: {said:?}");
    assert_eq!(
        said[0],
        format!(
            "no GRAPHMIND_URL: reporting to the graphmind serve at {want} (its run file is {})",
            h.home
                .join("run")
                .join(format!("serve-{}.json", h.port))
                .display()
        )
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        assert!(gm.ready(Duration::from_secs(10)).await, "attached");
        assert!(
            gm.stats().trusted,
            "the run file's secret proves the hub at the address it names: {:?}",
            gm.stats()
        );
        gm.run("found", async {}).await.expect("not aborted");
        gm.dispose().await;
    });
    wait_for(10, "the run stored", || {
        h.runs().into_iter().find(|r| r["name"] == "found")
    });
}

#[test]
fn an_app_without_graphmind_url_and_no_live_hub_keeps_the_default_url_quietly() {
    let home = TempDir::new("no-hub");
    // A run file left by a hub that died: nothing listens at its address.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    std::fs::create_dir_all(home.0.join("run")).expect("run dir");
    std::fs::write(
        home.0.join("run").join(format!("serve-{port}.json")),
        format!(r#"{{"port":{port},"url":"http://127.0.0.1:{port}","hubSecret":"00"}}"#),
    )
    .expect("run file");
    let (config, seen) = collecting(no_url("no-hub", &home.0));
    let gm = graphmind::Session::new(config);
    assert_eq!(gm.url(), graphmind::DEFAULT_URL);
    assert!(seen.lock().expect("lock").is_empty(), "{seen:?}");
}
