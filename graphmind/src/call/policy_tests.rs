//! The gate policy against every row of the "Gates, seen from the app" table in `lib.rs`, and
//! its refusals, without a socket: a recording host that is attached and holds the chosen
//! gates, the real tool entry points inside the real run scope, and `exec.resume` applied to
//! the host's gate registry as the transport thread would.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use graphmind_protocol::{
    ExecResume, Extra, Message, Mode, NodeKind, PausePoint, RefusedCode, ResumeAction, SdkInfo,
    Status,
};
use serde_json::{Value, json};

use crate::call::Host;
use crate::call::expansion::{Input, Repeat};
use crate::event::Payload;
use crate::gate::{GateSink, Registry};
use crate::sites::ToolSite;

/// Generous: the machine may be loaded; nothing here waits on a clock otherwise.
const PATIENCE: Duration = Duration::from_secs(20);

/// An attached host whose breakpoints hold the gates at `points`; it records every event.
struct GateHost {
    points: Vec<PausePoint>,
    events: Mutex<Vec<Message>>,
    seq: AtomicU64,
    gates: Registry,
    implicit: crate::implicit_run::ImplicitRun,
}

impl GateHost {
    fn holding(points: &[PausePoint]) -> Arc<Self> {
        Arc::new(Self {
            points: points.to_vec(),
            events: Mutex::new(Vec::new()),
            seq: AtomicU64::new(0),
            gates: Registry::new(),
            implicit: crate::implicit_run::ImplicitRun::default(),
        })
    }

    fn events(&self) -> Vec<Message> {
        self.events.lock().expect("lock").clone()
    }

    fn paused(&self) -> Vec<graphmind_protocol::ExecPaused> {
        self.events()
            .into_iter()
            .filter_map(|m| match m {
                Message::ExecPaused(p) => Some(p),
                _ => None,
            })
            .collect()
    }

    fn refused(&self) -> Vec<graphmind_protocol::ExecRefused> {
        self.events()
            .into_iter()
            .filter_map(|m| match m {
                Message::ExecRefused(r) => Some(r),
                _ => None,
            })
            .collect()
    }

    fn finished(&self) -> Vec<graphmind_protocol::NodeFinished> {
        self.events()
            .into_iter()
            .filter_map(|m| match m {
                Message::NodeFinished(f) if f.node_id.starts_with("tool:") => Some(f),
                _ => None,
            })
            .collect()
    }

    /// Waits for the `n`-th `exec.paused` (1-based) and returns it.
    async fn nth_pause(&self, n: usize) -> graphmind_protocol::ExecPaused {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            if let Some(p) = self.paused().get(n - 1) {
                return p.clone();
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no exec.paused #{n}; events: {:?}",
                self.events()
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Waits for the `n`-th `exec.refused` (1-based).
    async fn nth_refusal(&self, n: usize) -> graphmind_protocol::ExecRefused {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            if let Some(r) = self.refused().get(n - 1) {
                return r.clone();
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no exec.refused #{n}; events: {:?}",
                self.events()
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// What the transport thread does with an `exec.resume` frame.
    fn resume(&self, pause_id: &str, action: ResumeAction, output: Option<Value>) {
        self.gates.resolve(
            ExecResume {
                pause_id: pause_id.to_owned(),
                action,
                output,
                input: None,
                request_id: None,
                reason: None,
                extra: Extra::new(),
            },
            "run",
        );
    }
}

impl GateSink for GateHost {
    fn emit_event(&self, _run_id: &str, message: Message) {
        self.events.lock().expect("lock").push(message);
    }
}

impl Host for GateHost {
    fn enabled(&self) -> bool {
        true
    }
    fn attached(&self) -> bool {
        true
    }
    fn emit(&self, run_id: &str, message: Message) -> Option<u64> {
        self.emit_event(run_id, message);
        Some(self.seq.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn gate_rule(&self, _: NodeKind, _: &str, point: PausePoint) -> (bool, Mode) {
        (self.points.contains(&point), Mode::Run)
    }
    fn gates(&self) -> &Registry {
        &self.gates
    }
    fn pause_timeout(&self) -> Option<Duration> {
        None
    }
    fn token_interval(&self) -> Duration {
        Duration::from_millis(34)
    }
    fn app(&self) -> String {
        "policy".into()
    }
    fn sdk(&self) -> SdkInfo {
        SdkInfo {
            name: "t".into(),
            version: "0".into(),
            extra: Extra::new(),
        }
    }
    fn meta(&self) -> Extra {
        Extra::new()
    }
    fn implicit(&self) -> &crate::implicit_run::ImplicitRun {
        &self.implicit
    }
}

static RETRYABLE: ToolSite = ToolSite {
    name: "lookup",
    node_id: "tool:lookup",
    retry: true,
    call_id: None,
};

static ONCE_ONLY: ToolSite = ToolSite {
    name: "charge",
    node_id: "tool:charge",
    retry: false,
    call_id: None,
};

fn input() -> Input {
    Input(Some(Payload::Json(Box::new(json!({"q": 1})))))
}

/// A spawned run scope around one tool call: the scope's result.
type ToolTask = tokio::task::JoinHandle<Result<Result<u32, String>, crate::Aborted>>;

/// A `Result<u32, String>` tool inside a run scope of `host`: its body counts its runs and
/// returns `outcome(run number)`. Spawned; resolves to the run scope's result.
fn spawn_tool(
    host: &Arc<GateHost>,
    site: &'static ToolSite,
    outcome: fn(u32) -> Result<u32, String>,
) -> (ToolTask, Arc<AtomicU32>) {
    let runs = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&runs);
    let dyn_host: Arc<dyn Host> = host.clone();
    let task = tokio::spawn(crate::run::run_in(
        Some(dyn_host),
        "policy".into(),
        async move {
            crate::call::tool::tool_result(
                site,
                input(),
                Repeat(move || {
                    let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                    async move { outcome(n) }
                }),
            )
            .await
        },
        |_| None,
    ));
    (task, runs)
}

async fn done<T>(task: tokio::task::JoinHandle<T>) -> T {
    tokio::time::timeout(PATIENCE, task)
        .await
        .expect("the call finished")
        .expect("the task did not panic")
}

fn ok(n: u32) -> Result<u32, String> {
    Ok(n * 10)
}

fn fails_first(n: u32) -> Result<u32, String> {
    if n == 1 {
        Err("boom".into())
    } else {
        Ok(n * 10)
    }
}

fn always_fails(_: u32) -> Result<u32, String> {
    Err("boom".into())
}

// ---- continue --------------------------------------------------------------------------

#[tokio::test]
async fn continue_at_before_runs_the_call() {
    let host = GateHost::holding(&[PausePoint::Before]);
    let (task, runs) = spawn_tool(&host, &RETRYABLE, ok);
    let p = host.nth_pause(1).await;
    assert_eq!(p.point, PausePoint::Before);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "held before it runs");
    host.resume(&p.pause_id, ResumeAction::Continue, None);
    assert_eq!(done(task).await.expect("not aborted"), Ok(10));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(host.finished()[0].status, Status::Ok);
}

#[tokio::test]
async fn continue_at_after_returns_the_real_result() {
    let host = GateHost::holding(&[PausePoint::After]);
    let (task, runs) = spawn_tool(&host, &RETRYABLE, ok);
    let p = host.nth_pause(1).await;
    assert_eq!(p.point, PausePoint::After);
    assert_eq!(p.extra["output"], json!(10), "the gate shows what it holds");
    host.resume(&p.pause_id, ResumeAction::Continue, None);
    assert_eq!(done(task).await.expect("not aborted"), Ok(10));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn continue_at_error_returns_the_real_error() {
    let host = GateHost::holding(&[PausePoint::Error]);
    let (task, runs) = spawn_tool(&host, &RETRYABLE, always_fails);
    let p = host.nth_pause(1).await;
    assert_eq!(p.point, PausePoint::Error);
    host.resume(&p.pause_id, ResumeAction::Continue, None);
    assert_eq!(done(task).await.expect("not aborted"), Err("boom".into()));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(host.finished()[0].status, Status::Error);
}

// ---- retry -----------------------------------------------------------------------------

#[tokio::test]
async fn retry_at_before_runs_the_call() {
    let host = GateHost::holding(&[PausePoint::Before]);
    let (task, runs) = spawn_tool(&host, &RETRYABLE, ok);
    let p = host.nth_pause(1).await;
    host.resume(&p.pause_id, ResumeAction::Retry, None);
    assert_eq!(done(task).await.expect("not aborted"), Ok(10));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "nothing ran yet, so it runs once"
    );
}

#[tokio::test]
async fn retry_at_after_runs_the_call_again_from_before() {
    let host = GateHost::holding(&[PausePoint::Before, PausePoint::After]);
    let (task, runs) = spawn_tool(&host, &RETRYABLE, ok);
    host.resume(
        &host.nth_pause(1).await.pause_id,
        ResumeAction::Continue,
        None,
    );
    let after = host.nth_pause(2).await;
    assert_eq!(after.point, PausePoint::After);
    host.resume(&after.pause_id, ResumeAction::Retry, None);
    let again = host.nth_pause(3).await;
    assert_eq!(
        again.point,
        PausePoint::Before,
        "a retry starts at the before gate"
    );
    host.resume(&again.pause_id, ResumeAction::Continue, None);
    let last_after = host.nth_pause(4).await;
    host.resume(&last_after.pause_id, ResumeAction::Continue, None);
    assert_eq!(
        done(task).await.expect("not aborted"),
        Ok(20),
        "the second run's result"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(host.finished()[0].extra["attempts"], json!(2));
}

#[tokio::test]
async fn retry_at_error_runs_the_call_again() {
    let host = GateHost::holding(&[PausePoint::Error]);
    let (task, runs) = spawn_tool(&host, &RETRYABLE, fails_first);
    let p = host.nth_pause(1).await;
    host.resume(&p.pause_id, ResumeAction::Retry, None);
    assert_eq!(done(task).await.expect("not aborted"), Ok(20));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(host.finished()[0].status, Status::Ok);
}

// ---- inject ----------------------------------------------------------------------------

#[tokio::test]
async fn inject_at_before_returns_the_value_without_running_the_call() {
    let host = GateHost::holding(&[PausePoint::Before]);
    let (task, runs) = spawn_tool(&host, &RETRYABLE, ok);
    let p = host.nth_pause(1).await;
    host.resume(&p.pause_id, ResumeAction::Inject, Some(json!(7)));
    assert_eq!(done(task).await.expect("not aborted"), Ok(7));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the body never ran");
    let f = &host.finished()[0];
    assert_eq!(f.output, Some(json!(7)));
    assert_eq!(f.extra["injected"], json!(true));
}

#[tokio::test]
async fn inject_at_after_returns_the_value_instead() {
    let host = GateHost::holding(&[PausePoint::After]);
    let (task, runs) = spawn_tool(&host, &RETRYABLE, ok);
    let p = host.nth_pause(1).await;
    host.resume(&p.pause_id, ResumeAction::Inject, Some(json!(99)));
    assert_eq!(done(task).await.expect("not aborted"), Ok(99));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(host.finished()[0].output, Some(json!(99)));
}

#[tokio::test]
async fn inject_at_error_returns_the_value_instead_of_the_error() {
    let host = GateHost::holding(&[PausePoint::Error]);
    let (task, runs) = spawn_tool(&host, &RETRYABLE, always_fails);
    let p = host.nth_pause(1).await;
    host.resume(&p.pause_id, ResumeAction::Inject, Some(json!(5)));
    assert_eq!(
        done(task).await.expect("not aborted"),
        Ok(5),
        "returned as Ok"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let f = &host.finished()[0];
    assert_eq!(f.status, Status::Ok);
    assert_eq!(f.extra["recoveredFromError"], json!(true));
}

// ---- abort -----------------------------------------------------------------------------

async fn aborted_at(point: PausePoint, outcome: fn(u32) -> Result<u32, String>, ran: u32) {
    let host = GateHost::holding(&[point]);
    let (task, runs) = spawn_tool(&host, &RETRYABLE, outcome);
    let p = host.nth_pause(1).await;
    assert_eq!(p.point, point);
    host.resume(&p.pause_id, ResumeAction::Abort, None);
    assert!(
        done(task).await.is_err(),
        "the run scope returns Err(Aborted) at {point}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), ran);
    assert_eq!(host.finished()[0].status, Status::Aborted);
}

#[tokio::test]
async fn abort_at_before_drops_the_run_without_running_the_call() {
    aborted_at(PausePoint::Before, ok, 0).await;
}

#[tokio::test]
async fn abort_at_after_drops_the_run() {
    aborted_at(PausePoint::After, ok, 1).await;
}

#[tokio::test]
async fn abort_at_error_drops_the_run() {
    aborted_at(PausePoint::Error, always_fails, 1).await;
}

// ---- refusals: the gate stays held -------------------------------------------------------

#[tokio::test]
async fn inject_of_the_wrong_shape_is_refused_and_the_gate_stays_held() {
    let host = GateHost::holding(&[PausePoint::After]);
    let (task, runs) = spawn_tool(&host, &RETRYABLE, ok);
    let p = host.nth_pause(1).await;
    host.resume(
        &p.pause_id,
        ResumeAction::Inject,
        Some(json!("not a number")),
    );
    let refused = host.nth_refusal(1).await;
    assert_eq!(refused.pause_id, p.pause_id);
    assert_eq!(refused.code, RefusedCode::Schema);
    assert!(!task.is_finished(), "still held after the refusal");
    host.resume(&p.pause_id, ResumeAction::Continue, None);
    assert_eq!(
        done(task).await.expect("not aborted"),
        Ok(10),
        "the app never sees the bad value"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn retry_where_the_call_cannot_rerun_is_refused_and_the_gate_stays_held() {
    let host = GateHost::holding(&[PausePoint::After]);
    let (task, runs) = spawn_tool(&host, &ONCE_ONLY, ok);
    let p = host.nth_pause(1).await;
    assert!(
        !p.extra["actions"]
            .as_array()
            .expect("actions")
            .contains(&json!("retry")),
        "the gate does not offer retry: {:?}",
        p.extra["actions"]
    );
    host.resume(&p.pause_id, ResumeAction::Retry, None);
    let refused = host.nth_refusal(1).await;
    assert_eq!(refused.code, RefusedCode::Unsupported);
    assert!(!task.is_finished(), "still held after the refusal");
    host.resume(&p.pause_id, ResumeAction::Continue, None);
    assert_eq!(done(task).await.expect("not aborted"), Ok(10));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "never re-run");
}

#[tokio::test]
async fn a_streaming_call_has_no_after_gate_and_refuses_inject() {
    let host = GateHost::holding(&[PausePoint::Before, PausePoint::After]);
    let dyn_host: Arc<dyn Host> = host.clone();
    let task = tokio::spawn(crate::run::run_in(
        Some(dyn_host),
        "policy".into(),
        async {
            let tee = crate::call::tool::tool_stream(
                &RETRYABLE,
                input(),
                Repeat(|| async { futures_util::stream::iter([1u32, 2, 3]) }),
                None,
            )
            .await;
            tee.collect::<Vec<u32>>().await
        },
        |_| None,
    ));
    let p = host.nth_pause(1).await;
    assert_eq!(p.point, PausePoint::Before);
    host.resume(&p.pause_id, ResumeAction::Inject, Some(json!([9])));
    let refused = host.nth_refusal(1).await;
    assert_eq!(refused.code, RefusedCode::Unsupported);
    assert!(!task.is_finished(), "still held after the refusal");
    host.resume(&p.pause_id, ResumeAction::Continue, None);
    assert_eq!(done(task).await.expect("not aborted"), vec![1, 2, 3]);
    assert_eq!(
        host.paused().len(),
        1,
        "no after gate, though a breakpoint is armed there"
    );
    assert_eq!(host.finished()[0].status, Status::Ok);
}
