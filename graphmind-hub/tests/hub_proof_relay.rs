//! A process between the app and its hub — a relay of another user on another loopback
//! address, unable to read the hub's run file — cannot take control of the app.
//!
//! - A relay at `127.0.0.2:<the hub's port>` passes the app's handshake to the real hub and its
//!   signed answer back. The app uses the run file's secret only for the address the run file
//!   names (`127.0.0.1:<port>`), so it reports to the relay and takes no control from it: no
//!   breakpoint adopted, no gate held, the relay's `is_admin = true` never seen by the agent.
//! - Even where the app trusts the hub behind a relay (an explicit `TrustHub::Secret`), the
//!   relay can forward the hub's frames but change nothing: every frame of the channel is
//!   signed under a key of this connection, so the relay's own inject, breakpoints and step
//!   mode are ignored, counted and warned about once, while the hub's own resume, through the
//!   same relay, still works.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use support::{Relay, block_on, config, hub, hub_secret, wait_for_pause};

/// The users whose admin check ran (each test asks about a user of its own).
static CHECKED: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn checks_of(user: &str) -> usize {
    CHECKED
        .lock()
        .expect("lock")
        .iter()
        .filter(|u| *u == user)
        .count()
}

/// The agent asks whether a user is an admin: the body is the only one that may answer.
#[graphmind::tool]
async fn is_admin(user: String) -> bool {
    CHECKED.lock().expect("lock").push(user.clone());
    user == "root"
}

type Warnings = Arc<Mutex<Vec<String>>>;

fn collecting(config: graphmind::Config) -> (graphmind::Config, Warnings) {
    let warnings: Warnings = Arc::default();
    let sink = Arc::clone(&warnings);
    let config = config.on_warning(move |m| sink.lock().expect("lock").push(m.to_owned()));
    (config, warnings)
}

/// What a relay that wants control sends: breakpoints on every tool, step mode, and an inject
/// of `true` (plus a retry and an abort) for `pause` of `run`.
fn take_over(relay: &Relay, run: &str, pause: &str) -> usize {
    let frame = |seq: u64, run: &str, kind: &str, payload: Value| json!({"gm": 1, "seq": seq, "ts": 1, "runId": run, "type": kind, "payload": payload});
    let mut sent = 0;
    sent += relay.forge(&frame(
        90_001,
        "*",
        "breakpoint.set",
        json!({"matcher": {"kind": "tool"}}),
    ));
    sent += relay.forge(&frame(90_002, "*", "mode.set", json!({"mode": "step"})));
    sent += relay.forge(&frame(
        90_003,
        run,
        "exec.resume",
        json!({"pauseId": pause, "action": "inject", "output": true}),
    ));
    sent += relay.forge(&frame(
        90_004,
        run,
        "exec.resume",
        json!({"pauseId": pause, "action": "abort"}),
    ));
    sent
}

/// A hub that may inject and holds `is_admin` before it runs.
fn hub_holding_is_admin() -> support::TestHub {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    let r = h.post(
        "/api/debug/breakpoints/set",
        &json!({"matcher": {"kind": "tool", "name": "is_admin", "point": "before"}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    h
}

#[test]
fn a_relay_on_another_loopback_address_at_the_hubs_port_gets_no_control() {
    let h = hub_holding_is_admin();
    block_on(async {
        let at = std::net::SocketAddr::from(([127, 0, 0, 2], h.port));
        let relay = Relay::start_at(at, h.port)
            .await
            .unwrap_or_else(|e| panic!("bind {at} (Linux routes all of 127/8 to lo): {e}"));
        // The app is pointed at the relay and finds the real hub's run file (same port).
        let (cfg, warnings) = collecting(
            graphmind::Config::new("relayed-agent")
                .url(format!("ws://{at}/ingest"))
                .enabled(true)
                .env_vars(Vec::<(String, String)>::new())
                .hub_home(&h.home),
        );
        let gm = graphmind::Session::new(cfg);
        assert!(gm.ready(Duration::from_secs(5)).await, "it still reports");
        let stats = gm.stats();
        assert!(
            stats.attached && !stats.trusted,
            "the relayed proof gave control: {stats:?}"
        );
        assert!(
            gm.breakpoints().is_empty(),
            "the hub's breakpoints came through the relay"
        );
        let call = tokio::spawn({
            let gm = gm.clone();
            async move { gm.run("auth", is_admin("mallory".into())).await }
        });
        // Whatever the relay sends while the call runs changes nothing.
        for _ in 0..20 {
            take_over(&relay, "*", "pause_guess");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let admin = tokio::time::timeout(Duration::from_secs(5), call)
            .await
            .expect("no gate held for the relay")
            .expect("joined")
            .expect("the relay aborted the run");
        assert!(!admin, "the relay's injected `true` was taken");
        assert_eq!(checks_of("mallory"), 1, "the body ran once");
        assert!(gm.breakpoints().is_empty());
        assert_eq!(gm.mode(), graphmind::protocol::Mode::Run);
        take_over(&relay, "*", "pause_guess");
        support::wait_async(5, "the relay's frames counted", {
            let gm = gm.clone();
            move || (gm.stats().ignored_controls > 0).then_some(())
        })
        .await;
        let warned = warnings.lock().expect("lock").clone();
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(
            warned[0].contains(&at.to_string())
                && warned[0].contains(&format!("127.0.0.1:{}", h.port))
                && warned[0].contains("relaying"),
            "the warning names both addresses: {}",
            warned[0]
        );
        gm.dispose().await;
    });
}

#[test]
fn a_relay_can_forward_the_hubs_frames_but_change_none() {
    let h = hub_holding_is_admin();
    block_on(async {
        let relay = Relay::start(h.port).await;
        // Trusted on purpose: the app holds the hub's secret (`TrustHub::Secret`).
        let (cfg, warnings) = collecting(
            config(relay.port, "secret-agent")
                .trust_hub(graphmind::TrustHub::Secret(hub_secret(&h.home, h.port))),
        );
        let gm = graphmind::Session::new(cfg);
        assert!(gm.ready(Duration::from_secs(5)).await);
        assert!(gm.stats().trusted, "{:?}", gm.stats());
        let armed = gm.breakpoints().len();
        assert!(
            armed >= 1,
            "the hub's own breakpoints came through the relay"
        );
        let call = tokio::spawn({
            let gm = gm.clone();
            async move { gm.run("auth", is_admin("eve".into())).await }
        });
        let pause = wait_for_pause(h.port).await.remove(0);
        let (run, id) = (
            pause["runId"].as_str().expect("runId").to_owned(),
            pause["pauseId"].as_str().expect("pauseId").to_owned(),
        );
        assert_eq!(take_over(&relay, &run, &id), 4, "one connection relayed");
        support::wait_async(5, "the forged frames counted", {
            let gm = gm.clone();
            move || (gm.stats().ignored_controls >= 4).then_some(())
        })
        .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!call.is_finished(), "a forged resume released the gate");
        assert_eq!(gm.stats().held_gates, 1);
        assert_eq!(
            gm.breakpoints().len(),
            armed,
            "a forged breakpoint was adopted"
        );
        assert_eq!(gm.mode(), graphmind::protocol::Mode::Run);
        // The hub's own resume, through the same relay, is obeyed.
        let resumed = h
            .control()
            .resume(&run, &id, json!({"action": "continue"}))
            .await;
        assert!(resumed.status < 300, "{} {}", resumed.status, resumed.body);
        let admin = tokio::time::timeout(Duration::from_secs(5), call)
            .await
            .expect("the hub's resume released the gate")
            .expect("joined")
            .expect("not aborted");
        assert!(!admin, "the body's own answer");
        assert_eq!(checks_of("eve"), 1, "the body ran once");
        let warned = warnings.lock().expect("lock").clone();
        assert_eq!(warned.len(), 1, "warned once: {warned:?}");
        assert!(
            warned[0].contains("hubMac") && warned[0].contains("Stats::ignored_controls"),
            "{}",
            warned[0]
        );
        gm.dispose().await;
    });
}
