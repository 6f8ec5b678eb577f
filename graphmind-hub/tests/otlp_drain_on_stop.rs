//! Runs waiting in the OTLP export queue when the hub stopped were lost, counters and all: the
//! exporter was aborted with the other tasks. Now a stopping hub gives the queue up to
//! `otlp::DRAIN` to be sent; what a collector does not take by then is counted
//! (`Stopped::otlp_unsent`, `runsUnsent`) and reported on stderr.

mod otlp_support;
mod support;

use std::time::{Duration, Instant};

use graphmind_hub::otlp::{DRAIN, OtlpConfig};
use otlp_support::Receiver;
use serde_json::json;
use support::*;

/// Starts a hub exporting to `endpoint`, finishes `runs` runs through a fake app, and stops
/// the hub at once; what the stop reported and how long it took.
async fn finish_and_stop(endpoint: String, runs: usize) -> (graphmind_hub::Stopped, Duration) {
    let dir = TempDir::new("otlp-drain");
    let mut c = InProcessHub::config_in(&dir.0);
    let mut otlp = OtlpConfig::new(&endpoint).expect("endpoint");
    otlp.timeout = Duration::from_secs(60);
    c.otlp = Some(otlp);
    let hub = graphmind_hub::start(c).await.expect("hub");
    let mut app = App::connect(hub.port).await;
    for r in 0..runs {
        let run = format!("run_drain{r:03}");
        app.start_run(&run, "drain").await;
        app.emit(&run, "run.finished", json!({"status": "ok"}))
            .await;
    }
    let port = hub.port;
    let token = hub.agent_token.clone();
    // Every run finished and offered to the queue, none exported yet.
    wait_async(20, "every run offered", move || {
        let h = http(
            port,
            "GET",
            "/health",
            &[("Authorization", &format!("Bearer {token}"))],
            None,
        )
        .json();
        (h["otlp"]["runsQueued"] == json!(runs)).then_some(())
    })
    .await;
    let start = Instant::now();
    let stopped = hub.shutdown().await;
    (stopped, start.elapsed())
}

#[test]
fn runs_waiting_for_a_slow_collector_are_sent_before_the_hub_stops() {
    block_on(async {
        let rx = Receiver::start(0).await;
        rx.set_delay(Duration::from_millis(400));
        let (stopped, took) = finish_and_stop(rx.endpoint(), 20).await;
        assert_eq!(stopped.otlp_unsent, Some(0), "{stopped:?}");
        assert_eq!(
            rx.runs().len(),
            20,
            "every queued run reached the collector"
        );
        assert!(took < DRAIN + Duration::from_secs(2), "{took:?}");
    });
}

#[test]
fn a_hung_collector_delays_the_stop_at_most_the_drain_and_the_unsent_runs_are_counted() {
    block_on(async {
        let sink = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = sink.local_addr().expect("addr").port();
        let held = tokio::spawn(async move {
            let mut conns = Vec::new();
            while let Ok((c, _)) = sink.accept().await {
                conns.push(c); // never read, never answered
            }
        });
        let (stopped, took) = finish_and_stop(format!("http://127.0.0.1:{port}"), 12).await;
        assert_eq!(stopped.otlp_unsent, Some(12), "{stopped:?}");
        assert!(took >= DRAIN, "gave the queue its time: {took:?}");
        assert!(took < DRAIN + Duration::from_secs(3), "bounded: {took:?}");
        held.abort();
    });
}
