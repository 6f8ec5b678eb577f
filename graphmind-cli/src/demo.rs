//! `graphmind demo`: a hub, the viewer and the bundled support agent in one command.
//!
//! Starts a hub in this process (or uses a graphmind hub already listening on `--port`),
//! prints the viewer link and opens it, then runs the support agent of `examples/` (a scripted
//! model: no network, no key). The agent misreads the order id once, so its lookup fails and
//! the run holds on the error gate until someone injects a fix, retries or continues from the
//! viewer. `--auto` plays that part through the HTTP control API and exits 0 once the run
//! finished ok, so CI runs the demo too.
//!
//! `--agent openai` (feature `demo-openai`) runs the async-openai travel agent of
//! `graphmind_examples::trip_agent` instead, through graphmind-openai against the local mock
//! OpenAI server: two model steps and two parallel tool calls (see [`crate::demo_openai`]).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use graphmind_protocol::PausePoint;
use graphmind_protocol::control::{ResumeAnswer, ResumeRequest};
use graphmind_protocol::feed::{PausesList, RunSummary, RunsList};
use serde_json::{Value, json};

use crate::serve::{self, AllowControl, ServeArgs};
use crate::signals::StopSignals;
use graphmind_connect::http as hub_http;
use graphmind_connect::paths;
use graphmind_hub::now_ms;

/// The support agent's app name, as its runs show in the viewer.
const APP: &str = "support-agent";
/// The support agent's run name.
const RUN: &str = "handle-ticket";
/// The node the planted bad input fails in.
const FAILING_NODE: &str = "tool:lookup_order";

/// Flags of `graphmind demo`: those of `serve`, plus `--auto`.
#[derive(Args, Debug, Clone)]
pub struct DemoArgs {
    /// The hub's flags (a hub already running on --port is used instead of starting one).
    #[command(flatten)]
    pub serve: ServeArgs,
    /// Play the user's part: inject the fix at the held error through the control API, then
    /// exit 0 once the run finished ok (1 otherwise).
    #[arg(long)]
    pub auto: bool,
    /// Seconds `--auto` waits for the run to finish.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub timeout: u64,
    /// The agent to run: the scripted support agent, or the async-openai travel agent
    /// against a local mock OpenAI server (needs the CLI's feature `demo-openai`).
    #[arg(long, value_enum, default_value_t = Agent::Support)]
    pub agent: Agent,
}

/// The agents `graphmind demo` can run.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// The support agent of `examples/` (a scripted model), with a planted error.
    Support,
    /// The async-openai travel agent (graphmind-openai) against the mock OpenAI server.
    Openai,
}

impl Agent {
    /// The app name its runs carry.
    fn app(self) -> &'static str {
        match self {
            Agent::Support => APP,
            Agent::Openai => crate::demo_openai::APP,
        }
    }

    /// Its run's name.
    fn run(self) -> &'static str {
        match self {
            Agent::Support => RUN,
            Agent::Openai => crate::demo_openai::RUN,
        }
    }
}

use crate::demo_openai::Outcome;

/// The value `--auto` injects at the failed lookup: the order the ticket is about.
fn fix() -> Value {
    let order = graphmind_examples::Order {
        order_id: "ORD-1042".to_owned(),
        amount_cents: 4_999,
        tracking: "TRK-1042-NL".to_owned(),
    };
    serde_json::to_value(order).unwrap_or(Value::Null)
}

/// `graphmind demo`.
pub fn main(args: DemoArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("graphmind: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let code = rt.block_on(run(args));
    rt.shutdown_timeout(Duration::from_millis(500));
    code
}

/// The hub the demo reports to.
enum DemoHub {
    /// Started by this process; stopped when the demo ends.
    Own(Box<graphmind_hub::Running>),
    /// Another `graphmind serve` on the port.
    External(u16),
}

impl DemoHub {
    fn port(&self) -> u16 {
        match self {
            DemoHub::Own(r) => r.port,
            DemoHub::External(p) => *p,
        }
    }
}

macro_rules! say {
    ($json:expr, $($arg:tt)*) => {
        if $json { eprintln!($($arg)*) } else { println!($($arg)*) }
    };
}

async fn run(args: DemoArgs) -> ExitCode {
    if let Err(e) = crate::demo_openai::available().or_else(|e| match args.agent {
        Agent::Openai => Err(e),
        Agent::Support => Ok(()),
    }) {
        eprintln!("graphmind demo: {e}");
        return ExitCode::from(2);
    }
    let agent_kind = args.agent;
    // Listen before the hub exists: SIGTERM or SIGHUP at any moment must stop the demo as
    // cleanly as Ctrl-C does (its hub's run file removed), never by the default action.
    let mut stop = StopSignals::install();
    let json_out = args.serve.json;
    let mut serve_args = args.serve.clone();
    serve_args.started_by = Some("demo");
    if args.auto
        && matches!(
            serve_args.allow_control,
            AllowControl::Off | AllowControl::Resume
        )
    {
        // --auto injects through the control API with the agent token of its own hub
        serve_args.allow_control = AllowControl::Inject;
    }
    let hub = if serve_args.port != 0 && is_graphmind(serve_args.port).await {
        DemoHub::External(serve_args.port)
    } else {
        match serve::start(&serve_args).await {
            Ok(r) => DemoHub::Own(Box::new(r)),
            Err(e) => {
                eprintln!("graphmind: {e}");
                return ExitCode::from(1);
            }
        }
    };
    let port = hub.port();
    let base = format!("http://127.0.0.1:{port}");
    let link = match &hub {
        DemoHub::Own(r) => r.viewer_url.clone(),
        DemoHub::External(_) => format!("{base}/"),
    };
    if json_out {
        let line = json!({
            "port": port,
            "url": base,
            "pid": std::process::id(),
            "version": env!("CARGO_PKG_VERSION"),
            "viewerUrl": link,
            "ownHub": matches!(hub, DemoHub::Own(_)),
        });
        println!("{line}");
    }
    match &hub {
        DemoHub::Own(_) => say!(json_out, "graphmind demo: viewer at {link}"),
        DemoHub::External(_) => say!(
            json_out,
            "graphmind demo: using the graphmind hub already on port {port}; viewer at {link} \
             (to control the run, open the link its `graphmind serve` printed)"
        ),
    }
    let opened = !serve_args.no_open && {
        let url = link.clone();
        tokio::task::spawn_blocking(move || crate::browser::open(&url).is_ok())
            .await
            .unwrap_or(false)
    };
    if opened && !args.auto {
        // let the page connect, so the run is watched from its first event
        wait_for_viewer(port, Duration::from_secs(5)).await;
    }

    // --auto needs the right to inject before anything runs
    let token = if args.auto {
        match agent_token(port) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("graphmind demo: {e}");
                if let DemoHub::Own(running) = hub {
                    running.shutdown().await;
                }
                return ExitCode::from(1);
            }
        }
    } else {
        None
    };

    let started_ms = now_ms();
    let gm = graphmind::init(
        graphmind::Config::new(agent_kind.app()).url(format!("ws://127.0.0.1:{port}/ingest")),
    );
    if !gm.ready(Duration::from_secs(2)).await {
        eprintln!("graphmind demo: the agent could not attach to the hub on port {port}");
    }
    let agent: tokio::task::JoinHandle<Outcome> = match agent_kind {
        Agent::Support => {
            say!(json_out, "ticket: {}", graphmind_examples::TICKET);
            if !args.auto {
                say!(
                    json_out,
                    "graphmind demo: the agent misreads the order id, so {FAILING_NODE} fails \
                     and holds on its error gate: inject the order it should have found (e.g. \
                     {}) from the viewer, or in the terminal with `graphmind tui --port \
                     {port}` (Retry runs the same bad input again; Continue lets the model \
                     correct itself)",
                    fix()
                );
            }
            tokio::spawn(async {
                graphmind::run!(RUN, async {
                    graphmind_examples::support_agent(graphmind_examples::TICKET).await
                })
                .await
                .map(|r| r.map_err(|e| e.to_string()))
            })
        }
        Agent::Openai => match crate::demo_openai::spawn(json_out).await {
            Ok(task) => task,
            Err(e) => {
                eprintln!("graphmind demo: {e}");
                gm.dispose().await;
                if let DemoHub::Own(running) = hub {
                    running.shutdown().await;
                }
                return ExitCode::from(1);
            }
        },
    };

    let mut failure = None;
    let mut agent = agent;
    let played = tokio::select! {
        outcome = async {
            if let Some(token) = token {
                let deadline = Instant::now() + Duration::from_secs(args.timeout);
                let at = Demo { agent: agent_kind, port, started_ms };
                if let Err(e) = drive(&at, &token, &agent, deadline, json_out).await {
                    failure = Some(e);
                    agent.abort();
                }
            }
            (&mut agent).await
        } => Ok(outcome),
        signal = stop.recv() => Err(signal),
    };
    let outcome = match played {
        Ok(outcome) => outcome,
        Err(signal) => {
            // A stop signal while the run is held (or --auto drives it) ends the demo
            // cleanly: the agent stops, the client says goodbye, the run file goes.
            eprintln!("graphmind demo: interrupted ({})", signal.name());
            agent.abort();
            let _ = agent.await;
            gm.dispose().await;
            if let DemoHub::Own(running) = hub {
                running.shutdown().await;
            }
            return ExitCode::from(signal.exit_code());
        }
    };
    match &outcome {
        Ok(Ok(Ok(answer))) => say!(json_out, "agent: {answer}"),
        Ok(Ok(Err(err))) => say!(json_out, "agent gave up: {err}"),
        Ok(Err(aborted)) => say!(json_out, "{aborted}"),
        Err(_) => {}
    }
    gm.dispose().await;

    let at = Demo {
        agent: agent_kind,
        port,
        started_ms,
    };
    let status = run_status(&at).await;
    say!(
        json_out,
        "graphmind demo: run {} finished {}",
        agent_kind.run(),
        status.as_deref().unwrap_or("(not found on the hub)")
    );
    let code = if args.auto {
        match (&failure, status.as_deref()) {
            (None, Some("ok")) if matches!(outcome, Ok(Ok(Ok(_)))) => ExitCode::SUCCESS,
            (Some(e), _) => {
                eprintln!("graphmind demo: {e}");
                ExitCode::from(1)
            }
            _ => ExitCode::from(1),
        }
    } else {
        if let DemoHub::Own(_) = hub {
            say!(
                json_out,
                "graphmind demo: the viewer stays up at {link}; Ctrl-C to stop"
            );
            let _ = stop.recv().await;
        }
        ExitCode::SUCCESS
    };
    if let DemoHub::Own(running) = hub {
        running.shutdown().await;
    }
    code
}

/// Which demo run, on which hub.
struct Demo {
    agent: Agent,
    port: u16,
    /// When the demo started its agent (ms since the epoch).
    started_ms: u64,
}

/// Plays the user's part until the agent finishes: the held error of the planted bad input
/// gets the fix injected; any other gate of the demo run is continued.
async fn drive(
    at: &Demo,
    token: &str,
    agent: &tokio::task::JoinHandle<impl Sized>,
    deadline: Instant,
    json_out: bool,
) -> Result<(), String> {
    let port = at.port;
    let mut handled = std::collections::HashSet::new();
    while !agent.is_finished() {
        if Instant::now() > deadline {
            return Err("--auto: the run did not finish in time".to_owned());
        }
        let pauses = blocking(
            port,
            "GET",
            "/api/pauses?wait=0.3",
            Some(token.to_owned()),
            None,
        )
        .await?;
        let list = serde_json::from_value::<PausesList>(pauses.1)
            .map_err(|e| format!("--auto: the hub's pauses list does not decode: {e}"))?;
        for p in list.pauses {
            if handled.contains(&p.pause_id) || !is_demo_run(at, token, &p.run_id).await {
                continue;
            }
            let (node, point) = (p.node_id.as_str(), p.point);
            let body = if node == FAILING_NODE && point == PausePoint::Error {
                ResumeRequest {
                    action: "inject".to_owned(),
                    output: Some(fix()),
                    ..ResumeRequest::default()
                }
            } else {
                ResumeRequest {
                    action: "continue".to_owned(),
                    ..ResumeRequest::default()
                }
            };
            let path = format!("/api/runs/{}/pauses/{}/resume", p.run_id, p.pause_id);
            let (status, answer) = blocking(
                port,
                "POST",
                &path,
                Some(token.to_owned()),
                serde_json::to_value(&body).ok(),
            )
            .await?;
            let answer = serde_json::from_value::<ResumeAnswer>(answer).ok();
            let outcome = answer.as_ref().map_or("?", |a| a.outcome.as_str());
            match outcome {
                "resumed" | "sent" => {
                    say!(
                        json_out,
                        "graphmind demo --auto: {} at {node} ({point}) -> {outcome}",
                        body.action
                    );
                    handled.insert(p.pause_id);
                }
                "taken" | "gone" => {
                    handled.insert(p.pause_id);
                }
                _ => {
                    let why = answer
                        .as_ref()
                        .and_then(|a| a.message.as_deref().or(a.error.as_deref()))
                        .unwrap_or("");
                    return Err(format!(
                        "--auto: the hub answered {status} {outcome} to the resume of {node}: {why}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The run's status on the hub (the newest demo run started since `started_ms`).
async fn run_status(at: &Demo) -> Option<String> {
    let port = at.port;
    // the hub writes in batches; give the final events a moment to land
    let until = Instant::now() + Duration::from_secs(3);
    let token = read_token(port);
    loop {
        if let Ok((_, v)) = blocking(port, "GET", "/api/runs?limit=50", token.clone(), None).await {
            let found = serde_json::from_value::<RunsList>(v).ok().and_then(|list| {
                list.runs
                    .iter()
                    .find(|r| is_demo_summary(at.agent, r, at.started_ms))
                    .map(|r| r.status.as_str().to_owned())
            });
            if let Some(s) = found.as_deref()
                && (s != "running" || Instant::now() > until)
            {
                return found;
            }
            if found.is_none() && Instant::now() > until {
                return None;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn is_demo_summary(agent: Agent, r: &RunSummary, started_ms: u64) -> bool {
    r.app.as_deref() == Some(agent.app())
        && r.name.as_deref() == Some(agent.run())
        && r.started_at + 1_000 >= started_ms
}

async fn is_demo_run(at: &Demo, token: &str, run_id: &str) -> bool {
    let path = format!("/api/runs/{run_id}");
    match blocking(at.port, "GET", &path, Some(token.to_owned()), None).await {
        Ok((200, r)) => serde_json::from_value::<RunSummary>(r)
            .is_ok_and(|r| is_demo_summary(at.agent, &r, at.started_ms)),
        _ => false,
    }
}

/// The agent token in the run file of the hub on `port`, whatever it may do: reads of runs
/// and pauses need a token. `None` without a readable run file (then reads get `401`).
fn read_token(port: u16) -> Option<String> {
    let text = std::fs::read_to_string(paths::run_file(port)).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v.get("agentToken")
        .or_else(|| v.get("token"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The agent token of the hub on `port`, from its run file; --auto needs it to allow inject.
fn agent_token(port: u16) -> Result<String, String> {
    let file = paths::run_file(port);
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("--auto needs the hub's run file {}: {e}", file.display()))?;
    let v: Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", file.display()))?;
    if !matches!(v["allowControl"].as_str(), Some("inject" | "edit")) {
        return Err(format!(
            "--auto injects through the control API, but the hub on port {port} does not allow \
             it: start it with `graphmind serve --allow-control inject`, or run the demo on a \
             free port"
        ));
    }
    ["agentToken", "token"]
        .iter()
        .find_map(|k| v[*k].as_str())
        .map(str::to_owned)
        .ok_or_else(|| format!("{} holds no token", file.display()))
}

async fn is_graphmind(port: u16) -> bool {
    matches!(
        blocking(port, "GET", "/health", None, None).await,
        Ok((200, v)) if v["ok"] == json!(true) && v["port"] == json!(port)
    )
}

async fn wait_for_viewer(port: u16, within: Duration) {
    let until = Instant::now() + within;
    while Instant::now() < until {
        if let Ok((_, v)) = blocking(port, "GET", "/health", None, None).await
            && v["viewers"].as_u64().unwrap_or(0) > 0
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One HTTP request to the hub on a blocking thread ([`hub_http::request`], 15 s); the
/// answer's status and JSON body (`Null` when it is not JSON).
async fn blocking(
    port: u16,
    method: &'static str,
    path: &str,
    token: Option<String>,
    body: Option<Value>,
) -> Result<(u16, Value), String> {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || {
        let body = body.map(|b| b.to_string());
        hub_http::request(
            port,
            method,
            &path,
            token.as_deref(),
            body.as_deref(),
            Duration::from_secs(15),
        )
        .map(|a| (a.status, a.json()))
        .map_err(|e| format!("the hub on port {port}: {e}"))
    })
    .await
    .map_err(|e| e.to_string())?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fix_is_an_order_the_lookup_could_have_returned() {
        let order: graphmind_examples::Order =
            serde_json::from_value(fix()).expect("the fix deserializes into the tool's type");
        assert_eq!(order.order_id, "ORD-1042");
    }

    #[test]
    fn only_recent_runs_of_the_demo_agent_count() {
        let summary = |app: &str| -> RunSummary {
            serde_json::from_value(json!({
                "runId": "run_1", "app": app, "name": RUN, "status": "ok", "startedAt": 10_000
            }))
            .expect("a run summary")
        };
        let support = Agent::Support;
        assert!(is_demo_summary(support, &summary(APP), 10_500));
        assert!(!is_demo_summary(support, &summary(APP), 20_000));
        assert!(!is_demo_summary(support, &summary("other"), 10_000));
        assert!(!is_demo_summary(Agent::Openai, &summary(APP), 10_500));
    }
}
