//! Hub authentication: a process that answers on the debugger's port without proving it is
//! this user's `graphmind serve` (no signed channel, one signed under a wrong secret, no run
//! file to check it against)
//! is only reported to. Its breakpoints and step mode are not applied, no gate holds, its
//! inject / retry / abort frames change nothing, the tool bodies run exactly once with their
//! real results, and the app warns once, naming the switches that trust a hub explicitly.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use graphmind::TrustHub;
use graphmind_tests::{FakeDebugger, Frame, Proof, frame};
use serde_json::{Value, json};

const SECOND: Duration = Duration::from_secs(1);

static PAYMENTS: AtomicUsize = AtomicUsize::new(0);

/// A body with an effect that must happen exactly once per call.
#[graphmind::tool]
async fn authorize_payment(amount: i64) -> String {
    PAYMENTS.fetch_add(1, Ordering::SeqCst);
    format!("paid {amount} to the real payee")
}

static ADMIN_CHECKS: AtomicUsize = AtomicUsize::new(0);

#[graphmind::tool]
async fn is_admin(user: String) -> bool {
    ADMIN_CHECKS.fetch_add(1, Ordering::SeqCst);
    user == "root"
}

static HELD: AtomicUsize = AtomicUsize::new(0);

#[graphmind::tool]
async fn held_lookup(n: i64) -> i64 {
    HELD.fetch_add(1, Ordering::SeqCst);
    n + 1
}

type Warnings = Arc<Mutex<Vec<String>>>;

/// Every breakpoint and step mode a debugger can arm, in the ack.
fn arm_everything(hub: &FakeDebugger) {
    hub.set_breakpoints(vec![
        json!({"kind": "tool", "point": "before"}),
        json!({"kind": "tool", "point": "after"}),
        json!({"kind": "tool", "point": "error"}),
    ]);
    hub.set_mode("step");
}

fn with_warnings(config: graphmind::Config) -> (graphmind::Config, Warnings) {
    let warnings: Warnings = Arc::default();
    let sink = Arc::clone(&warnings);
    let config = config.on_warning(move |m| sink.lock().expect("lock").push(m.to_owned()));
    (config, warnings)
}

/// What a squatter does while the app runs: arms breakpoints and step mode again, and answers
/// every node it sees with inject, retry and abort for every pause id it could guess.
fn attack(hub: &FakeDebugger) {
    hub.breakpoint_set(json!({"kind": "tool"}));
    hub.breakpoint_set(json!({"kind": "tool", "point": "after"}));
    hub.mode_set("step");
    for f in hub.frames_of("node.started") {
        let run = f.run_id().to_owned();
        let node = f.payload()["nodeId"].as_str().unwrap_or("").to_owned();
        for id in [format!("pause_{node}"), "pause_000000_1".to_owned()] {
            hub.inject(&run, &id, json!("attacker's payee"));
            hub.resume(&run, &id, "retry");
            hub.resume(&run, &id, "abort");
            hub.send(&hub.control(
                "exec.resume",
                &run,
                json!({"pauseId": id, "action": "continue", "input": {"amount": 1_000_000}}),
            ));
        }
    }
}

/// Runs the payment and admin tools five times each against `hub` while it attacks, and
/// checks the app stayed in charge.
async fn squatted(hub: &FakeDebugger, gm: &graphmind::Session, warnings: &Warnings) {
    assert!(
        gm.ready(2 * SECOND).await,
        "the app still attaches to report"
    );
    let stats = gm.stats();
    assert!(stats.attached && !stats.trusted, "{stats:?}");
    assert!(
        gm.breakpoints().is_empty(),
        "the squatter's breakpoints were adopted"
    );
    assert_eq!(gm.mode(), graphmind::protocol::Mode::Run);
    let payments = PAYMENTS.load(Ordering::SeqCst);
    let checks = ADMIN_CHECKS.load(Ordering::SeqCst);
    for i in 0..5_i64 {
        attack(hub);
        let paid = tokio::time::timeout(5 * SECOND, gm.run("pay", authorize_payment(10 + i)))
            .await
            .expect("a gate held for the squatter")
            .expect("the squatter aborted the run");
        assert_eq!(paid, format!("paid {} to the real payee", 10 + i));
        attack(hub);
        let admin = tokio::time::timeout(5 * SECOND, gm.run("auth", is_admin("mallory".into())))
            .await
            .expect("a gate held for the squatter")
            .expect("the squatter aborted the run");
        assert!(!admin, "the squatter's injected `true` was taken");
    }
    attack(hub);
    // Every event is still reported to the squatter (observe mode).
    let finished = |tool: &str| frame("node.finished").with("nodeId", format!("tool:{tool}"));
    hub.wait_matches(&finished("authorize_payment"), 5, 5 * SECOND)
        .await;
    let frames = hub.wait_matches(&finished("is_admin"), 5, 5 * SECOND).await;
    assert!(
        !frames.iter().any(|f| f.kind() == "exec.paused"),
        "a gate held for an untrusted hub"
    );
    assert!(
        tool_outputs(&frames)
            .iter()
            .all(|o| o.as_str().is_some_and(|s| s.ends_with("real payee")) || *o == json!(false)),
        "{:?}",
        tool_outputs(&frames)
    );
    // Other tests of this file run their own payments meanwhile; these ten ran once each.
    assert!(PAYMENTS.load(Ordering::SeqCst) - payments >= 5);
    assert!(ADMIN_CHECKS.load(Ordering::SeqCst) - checks >= 5);
    assert!(gm.stats().ignored_controls > 0, "{:?}", gm.stats());
    let warned = warnings.lock().expect("lock").clone();
    assert_eq!(warned.len(), 1, "warned once: {warned:?}");
    assert!(
        warned[0].contains("GRAPHMIND_TRUST_HUB=1")
            && warned[0].contains("Config::trust_hub(TrustHub::Any)"),
        "the warning says how to trust the hub: {}",
        warned[0]
    );
    assert!(
        !warned[0].contains("  "),
        "one line of prose: {}",
        warned[0]
    );
}

fn tool_outputs(frames: &[Frame]) -> Vec<Value> {
    frames
        .iter()
        .filter(|f| {
            f.kind() == "node.finished"
                && f.payload()["nodeId"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("tool:"))
        })
        .map(|f| f.payload()["output"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_squatter_without_a_proof_gets_no_hold_inject_retry_or_abort() {
    let hub = FakeDebugger::start().await;
    hub.set_proof(Proof::Missing);
    arm_everything(&hub);
    let (config, warnings) = with_warnings(hub.config("squatted-no-proof"));
    let gm = graphmind::Session::new(config);
    squatted(&hub, &gm, &warnings).await;
    assert!(warnings.lock().expect("lock")[0].contains("no hubNonce"));
    // Reconnecting to the same squatter does not warn again.
    hub.drop_connections();
    graphmind_tests::eventually("detached", 5 * SECOND, || !gm.is_attached()).await;
    assert!(graphmind_tests::attach(&gm, 2 * SECOND).await);
    assert_eq!(hub.frames_of("hello").len(), 2, "attached again");
    assert!(!gm.stats().trusted);
    assert_eq!(warnings.lock().expect("lock").len(), 1);
    gm.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_squatter_with_a_wrong_proof_gets_no_hold_inject_retry_or_abort() {
    let hub = FakeDebugger::start().await;
    hub.set_proof(Proof::Wrong);
    arm_everything(&hub);
    let (config, warnings) = with_warnings(hub.config("squatted-wrong-proof"));
    let gm = graphmind::Session::new(config);
    squatted(&hub, &gm, &warnings).await;
    assert!(warnings.lock().expect("lock")[0].contains("does not match"));
    gm.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_without_a_readable_run_file_is_not_trusted() {
    // The fake proves itself with its secret, but the app looks for run files in an empty
    // home: nothing to check the proof against.
    let hub = FakeDebugger::start().await;
    arm_everything(&hub);
    let empty = std::env::temp_dir().join(format!("gm-no-run-file-{}", std::process::id()));
    let (config, warnings) = with_warnings(hub.config("no-run-file").hub_home(&empty));
    let gm = graphmind::Session::new(config);
    squatted(&hub, &gm, &warnings).await;
    assert!(warnings.lock().expect("lock")[0].contains("serve-"));
    gm.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_explicit_secret_is_not_trusted() {
    let hub = FakeDebugger::start().await;
    arm_everything(&hub);
    let (config, warnings) = with_warnings(
        hub.config("wrong-secret")
            .trust_hub(TrustHub::Secret("not-the-secret".into())),
    );
    let gm = graphmind::Session::new(config);
    squatted(&hub, &gm, &warnings).await;
    gm.dispose().await;
}

/// A held call: its task, the hub's `exec.paused` frame, and the body's count before it.
type HeldCall = (
    tokio::task::JoinHandle<Result<i64, graphmind::Aborted>>,
    Frame,
    usize,
);

/// A `held_lookup(1)` call held at its before gate by a trusted `hub`.
async fn held_call(hub: &FakeDebugger, gm: &graphmind::Session) -> HeldCall {
    assert!(gm.ready(2 * SECOND).await);
    assert!(gm.stats().trusted, "{:?}", gm.stats());
    let held = HELD.load(Ordering::SeqCst);
    // Counted before the call starts: a pause that arrives before the count would otherwise
    // be taken for an old one, and the wait below would time out.
    let before = hub.frames_of("exec.paused").len();
    let task = tokio::spawn({
        let gm = gm.clone();
        async move { gm.run("held", held_lookup(1)).await }
    });
    let paused = hub.wait_count("exec.paused", before + 1, 5 * SECOND).await;
    let p = paused.last().expect("present").clone();
    (task, p, held)
}

/// Injects `41` at the held call's pause and checks the call returned it without its body.
async fn inject_41(hub: &FakeDebugger, (task, p, held): HeldCall) {
    let id = p.payload()["pauseId"].as_str().expect("pauseId");
    assert!(hub.inject(p.run_id(), id, json!(41)));
    let out = tokio::time::timeout(5 * SECOND, task)
        .await
        .expect("resumed")
        .expect("joined")
        .expect("not aborted");
    assert_eq!(out, 41, "the injected value");
    assert_eq!(HELD.load(Ordering::SeqCst), held, "the body did not run");
}

/// Holds a call at its before gate and injects `41`: the debugger is in control.
async fn controls(hub: &FakeDebugger, gm: &graphmind::Session) {
    let call = held_call(hub, gm).await;
    inject_41(hub, call).await;
    assert_eq!(gm.stats().ignored_controls, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_that_proves_itself_with_its_run_file_controls_the_app() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"name": "held_lookup", "point": "before"})]);
    let (config, warnings) = with_warnings(hub.config("proven"));
    let gm = graphmind::Session::new(config);
    controls(&hub, &gm).await;
    let hello = hub.wait_for_kind("hello", SECOND).await;
    let nonce = hello.payload()["hubNonce"].as_str().expect("hubNonce");
    assert_eq!(nonce.len(), 64, "a 256-bit nonce in hex");
    // Every connection gets a fresh nonce, so an old proof cannot be replayed.
    hub.drop_connections();
    graphmind_tests::eventually("detached", 5 * SECOND, || !gm.is_attached()).await;
    assert!(graphmind_tests::attach(&gm, 2 * SECOND).await);
    let hellos = hub.frames_of("hello");
    assert!(hellos.len() >= 2);
    assert_ne!(
        hellos[0].payload()["hubNonce"],
        hellos[1].payload()["hubNonce"]
    );
    assert!(warnings.lock().expect("lock").is_empty());
    gm.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_env_switch_trusts_a_hub_that_proves_nothing() {
    let hub = FakeDebugger::start().await;
    hub.set_proof(Proof::Missing);
    hub.set_breakpoints(vec![json!({"name": "held_lookup", "point": "before"})]);
    let (config, warnings) = with_warnings(
        hub.config("env-trust")
            .env_vars([("GRAPHMIND_TRUST_HUB", "1")]),
    );
    let gm = graphmind::Session::new(config);
    controls(&hub, &gm).await;
    assert!(warnings.lock().expect("lock").is_empty());
    gm.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_config_switch_trusts_a_hub_that_proves_nothing() {
    let hub = FakeDebugger::start().await;
    hub.set_proof(Proof::Wrong);
    hub.set_breakpoints(vec![json!({"name": "held_lookup", "point": "before"})]);
    let gm = graphmind::Session::new(hub.config("config-trust").trust_hub(TrustHub::Any));
    controls(&hub, &gm).await;
    gm.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_secret_trusts_a_hub_whose_run_file_is_elsewhere() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"name": "held_lookup", "point": "before"})]);
    let empty = std::env::temp_dir().join(format!("gm-secret-only-{}", std::process::id()));
    let gm = graphmind::Session::new(
        hub.config("secret-trust")
            .hub_home(&empty)
            .trust_hub(TrustHub::Secret(hub.secret().to_owned())),
    );
    controls(&hub, &gm).await;
    gm.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_the_hub_did_not_sign_is_ignored_on_a_proven_channel() {
    let hub = FakeDebugger::start().await;
    hub.set_breakpoints(vec![json!({"name": "held_lookup", "point": "before"})]);
    let (config, warnings) = with_warnings(hub.config("forged"));
    let gm = graphmind::Session::new(config);
    let (task, p, held) = held_call(&hub, &gm).await;
    let id = p.payload()["pauseId"].as_str().expect("pauseId");
    // Frames added to the channel unsigned, as a relay would: an inject, a breakpoint, step
    // mode (a signed frame replayed or reordered is refused by the unit tests of
    // `graphmind_protocol::hub_auth`).
    let inject = hub.control(
        "exec.resume",
        p.run_id(),
        json!({"pauseId": id, "action": "inject", "output": 666}),
    );
    assert!(hub.send_forged(&inject.to_string()));
    assert!(
        hub.send_forged(
            &hub.control("breakpoint.set", "*", json!({"matcher": {"kind": "tool"}}))
                .to_string()
        )
    );
    assert!(
        hub.send_forged(
            &hub.control("mode.set", "*", json!({"mode": "step"}))
                .to_string()
        )
    );
    graphmind_tests::eventually("forged frames counted", 5 * SECOND, || {
        gm.stats().ignored_controls >= 3
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!task.is_finished(), "a forged inject released the gate");
    assert_eq!(gm.breakpoints().len(), 1);
    assert_eq!(gm.mode(), graphmind::protocol::Mode::Run);
    // The hub's own signed inject is obeyed.
    inject_41(&hub, (task, p, held)).await;
    let warned = warnings.lock().expect("lock").clone();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("no hubMac"), "{}", warned[0]);
    gm.dispose().await;
}
