//! The control commands (`runs`, `record`, `pauses`, `wait`, `resume`, `break`, `mode`): they
//! talk to a running `graphmind serve` over its HTTP API (`docs/http-api.md`).
//!
//! Exit codes: 0 ok, 1 usage, 2 timeout, 3 unreachable, 4 gone, 5 unauthorized, 6 refused,
//! 7 taken. Without `--port` a command talks to 4747, or, when nothing answers there, to the one
//! live hub of the run files (3 when there are several: it names their ports).

mod http;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use http::{Answer, DEFAULT_PORT, Hub};

/// Which hub to talk to.
#[derive(Args, Debug, Clone)]
pub struct HubArgs {
    /// Port of the running `graphmind serve` [default: 4747; when nothing answers there, the
    /// one live hub whose run file is in $GRAPHMIND_HOME/run].
    #[arg(long)]
    pub port: Option<u16>,
}

/// The control subcommands.
#[derive(Subcommand, Debug)]
pub enum ControlCommand {
    /// List runs, newest first.
    Runs {
        #[command(flatten)]
        hub: HubArgs,
        /// One JSON document instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Write a run's stored envelopes as NDJSON.
    Record {
        #[command(flatten)]
        hub: HubArgs,
        /// The run.
        run_id: String,
        /// Output file (default stdout).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// List open pauses.
    Pauses {
        #[command(flatten)]
        hub: HubArgs,
        /// Only this run's.
        #[arg(long = "run")]
        run: Option<String>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Block until a pause opens and show it.
    Wait {
        #[command(flatten)]
        hub: HubArgs,
        /// Give up after this many seconds (exit 2).
        #[arg(long)]
        timeout: Option<f64>,
        /// Only this run's.
        #[arg(long = "run")]
        run: Option<String>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Release a held gate.
    Resume {
        #[command(flatten)]
        hub: HubArgs,
        /// The pause.
        pause_id: String,
        /// Its run.
        #[arg(long = "run")]
        run: String,
        /// continue, retry, inject or abort.
        #[arg(long, value_parser = ["continue", "retry", "inject", "abort"])]
        action: String,
        /// Injected output: JSON text or @file.
        #[arg(long)]
        output: Option<String>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Set, clear or list breakpoints.
    Break {
        #[command(flatten)]
        hub: HubArgs,
        /// set, clear or list (clear without a matcher clears every breakpoint).
        #[arg(value_parser = ["set", "clear", "list"])]
        op: String,
        /// Node kind.
        #[arg(long)]
        kind: Option<String>,
        /// Node name.
        #[arg(long)]
        name: Option<String>,
        /// before, after or error.
        #[arg(long, value_parser = ["before", "after", "error"])]
        point: Option<String>,
        /// Print the debug state as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Switch the debugger mode (run or step).
    Mode {
        #[command(flatten)]
        hub: HubArgs,
        /// run or step.
        #[arg(value_parser = ["run", "step"])]
        mode: String,
        /// Print the debug state as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The exit codes of the control commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Bad arguments, or a request the hub rejected as malformed.
    Usage = 1,
    /// Nothing happened in time.
    Timeout = 2,
    /// No hub answers on the port.
    Unreachable = 3,
    /// No such run or pause (any more).
    Gone = 4,
    /// Missing, wrong or insufficient token.
    Unauthorized = 5,
    /// The app refused the resume; its gate stays held.
    Refused = 6,
    /// Another resume got the pause first.
    Taken = 7,
}

/// A failed command: an exit code and one line for stderr.
#[derive(Debug)]
pub struct Fail {
    code: Exit,
    msg: String,
}

impl Fail {
    fn new(code: Exit, msg: impl Into<String>) -> Self {
        Self {
            code,
            msg: msg.into(),
        }
    }

    /// Turns an unexpected HTTP answer into a failure with the matching exit code.
    fn of(a: &Answer) -> Self {
        let code = match a.status {
            202 => Exit::Timeout,
            401 | 403 => Exit::Unauthorized,
            404 | 410 => Exit::Gone,
            409 => Exit::Taken,
            422 => Exit::Refused,
            400..=499 => Exit::Usage,
            _ => Exit::Unreachable,
        };
        let msg = a.reason();
        let msg = if a.status >= 500 {
            format!("the debugger failed (HTTP {}): {msg}", a.status)
        } else {
            msg
        };
        Self::new(code, msg)
    }
}

/// One line, no control characters: the hub's words are shown as they are but never break
/// the one-line rule.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Runs a control command.
pub fn main(cmd: ControlCommand) -> ExitCode {
    match run(cmd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("graphmind: {}", one_line(&f.msg));
            ExitCode::from(f.code as u8)
        }
    }
}

/// How long plain reads may take.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// A resume waits up to 5 s for the app on the hub's side; allow for that.
const RESUME_TIMEOUT: Duration = Duration::from_secs(15);

fn run(cmd: ControlCommand) -> Result<(), Fail> {
    match cmd {
        ControlCommand::Runs { hub, json } => runs(&Hub::locate(hub.port)?, json),
        ControlCommand::Record { hub, run_id, out } => {
            record(&Hub::locate(hub.port)?, &run_id, out.as_deref())
        }
        ControlCommand::Pauses { hub, run, json } => {
            pauses(&Hub::locate(hub.port)?, run.as_deref(), json)
        }
        ControlCommand::Wait {
            hub,
            timeout,
            run,
            json,
        } => wait(hub.port, timeout, run.as_deref(), json),
        ControlCommand::Resume {
            hub,
            pause_id,
            run,
            action,
            output,
            json,
        } => resume(hub.port, &pause_id, &run, &action, output.as_deref(), json),
        ControlCommand::Break {
            hub,
            op,
            kind,
            name,
            point,
            json,
        } => breakpoints(hub.port, &op, kind, name, point, json),
        ControlCommand::Mode { hub, mode, json } => {
            let h = Hub::locate(hub.port)?;
            let a = h.post("/api/debug/mode", &json!({"mode": mode}), READ_TIMEOUT)?;
            print_debug(&expect_ok(a)?, json)
        }
    }
}

fn expect_ok(a: Answer) -> Result<Value, Fail> {
    if a.status == 200 {
        let v = a.json();
        if v.is_null() {
            return Err(Fail::new(
                Exit::Unreachable,
                "the debugger's answer is not JSON",
            ));
        }
        Ok(v)
    } else {
        Err(Fail::of(&a))
    }
}

/// Percent-encodes a path segment or query value.
fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn print_json(v: &Value) -> Result<(), Fail> {
    let mut o = std::io::stdout().lock();
    writeln!(o, "{v}").map_err(io_fail)
}

fn io_fail(e: std::io::Error) -> Fail {
    Fail::new(Exit::Usage, format!("cannot write the output: {e}"))
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("-")
}

/// `1700000000000` → `2023-11-14 22:13:20` (UTC).
fn time_of(ms: Option<u64>) -> String {
    let Some(ms) = ms else {
        return "-".into();
    };
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn runs(h: &Hub, as_json: bool) -> Result<(), Fail> {
    let v = expect_ok(h.get("/api/runs", READ_TIMEOUT)?)?;
    if as_json {
        return print_json(&v);
    }
    let runs = v
        .get("runs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = String::new();
    if runs.is_empty() {
        out.push_str("no runs yet\n");
    } else {
        let _ = writeln!(
            out,
            "{:<20} {:<10} {:<4} {:>7} {:<19} {:<16} NAME",
            "RUN", "STATUS", "LIVE", "EVENTS", "STARTED (UTC)", "APP"
        );
        for r in &runs {
            let _ = writeln!(
                out,
                "{:<20} {:<10} {:<4} {:>7} {:<19} {:<16} {}",
                s(r, "runId"),
                s(r, "status"),
                if r["live"] == json!(true) {
                    "yes"
                } else {
                    "no"
                },
                r["eventCount"].as_u64().unwrap_or(0),
                time_of(r["startedAt"].as_u64()),
                s(r, "app"),
                s(r, "name"),
            );
        }
    }
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(io_fail)
}

/// Page size of `record`.
const PAGE: usize = 10_000;

fn record(h: &Hub, run_id: &str, out: Option<&std::path::Path>) -> Result<(), Fail> {
    let mut sink: Box<dyn std::io::Write> = match out {
        Some(p) => Box::new(std::io::BufWriter::new(std::fs::File::create(p).map_err(
            |e| Fail::new(Exit::Usage, format!("cannot create {}: {e}", p.display())),
        )?)),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let mut after: Option<u64> = None;
    let mut n = 0usize;
    loop {
        let q = after.map_or_else(String::new, |a| format!("&afterSeq={a}"));
        let path = format!("/api/runs/{}/events?limit={PAGE}{q}", enc(run_id));
        let a = h.get(&path, READ_TIMEOUT)?;
        if a.status == 404 {
            return Err(Fail::new(Exit::Gone, format!("no run {run_id}")));
        }
        let page = expect_ok(a)?;
        let events = page
            .get("events")
            .and_then(Value::as_array)
            .ok_or_else(|| Fail::new(Exit::Unreachable, "the debugger's answer has no events"))?;
        for e in events {
            writeln!(sink, "{e}").map_err(io_fail)?;
            n += 1;
        }
        let next = page.get("nextAfterSeq").and_then(Value::as_u64);
        match next {
            Some(s) if page["more"] == json!(true) && after.is_none_or(|a| s > a) => {
                after = Some(s);
            }
            _ => break,
        }
    }
    sink.flush().map_err(io_fail)?;
    if let Some(p) = out {
        eprintln!("graphmind: wrote {n} events of {run_id} to {}", p.display());
    }
    Ok(())
}

fn pauses_path(run: Option<&str>, wait: Option<f64>) -> String {
    let mut q = Vec::new();
    if let Some(r) = run {
        q.push(format!("runId={}", enc(r)));
    }
    if let Some(w) = wait {
        q.push(format!("wait={w:.3}"));
    }
    if q.is_empty() {
        "/api/pauses".into()
    } else {
        format!("/api/pauses?{}", q.join("&"))
    }
}

fn pause_list(v: &Value) -> Vec<Value> {
    v.get("pauses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn pauses(h: &Hub, run: Option<&str>, as_json: bool) -> Result<(), Fail> {
    let v = expect_ok(h.get(&pauses_path(run, None), READ_TIMEOUT)?)?;
    if as_json {
        return print_json(&v);
    }
    let list = pause_list(&v);
    let mut out = String::new();
    if list.is_empty() {
        out.push_str("no open pauses\n");
    } else {
        let _ = writeln!(
            out,
            "{:<22} {:<20} {:<24} {:<6} {:<10} {:<8} SINCE (UTC)",
            "PAUSE", "RUN", "NODE", "POINT", "REASON", "STATE"
        );
        for p in &list {
            let _ = writeln!(
                out,
                "{:<22} {:<20} {:<24} {:<6} {:<10} {:<8} {}",
                s(p, "pauseId"),
                s(p, "runId"),
                s(p, "nodeId"),
                s(p, "point"),
                s(p, "reason"),
                s(p, "state"),
                time_of(p["since"].as_u64()),
            );
        }
    }
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(io_fail)
}

/// A shell word: bare when safe, else single-quoted.
fn sh(word: &str) -> String {
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:/@%+=,".contains(&b))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The commands that release `p`, one per action of `actions`.
fn resume_commands(p: &Value, port: u16, actions: &[&str]) -> Vec<String> {
    let port = if port == DEFAULT_PORT {
        String::new()
    } else {
        format!(" --port {port}")
    };
    let base = format!(
        "graphmind resume {} --run {}{port}",
        sh(s(p, "pauseId")),
        sh(s(p, "runId"))
    );
    let example = p
        .get("output")
        .filter(|o| !o.is_null())
        .map_or_else(|| "null".to_owned(), Value::to_string);
    let example = if example.len() > 200 {
        "<JSON>".to_owned()
    } else {
        example
    };
    actions
        .iter()
        .map(|&a| {
            if a == "inject" {
                format!("{base} --action inject --output {}", sh(&example))
            } else {
                format!("{base} --action {a}")
            }
        })
        .collect()
}

/// How `p` can be released from here: the `graphmind resume` commands that the hub lets the
/// agent token run (its `allowControl`), and a note when some or all of them are not allowed.
fn resume_advice(
    p: &Value,
    port: u16,
    allow_control: Option<&str>,
    token_problem: Option<&str>,
) -> (Vec<String>, Option<String>) {
    if let Some(problem) = token_problem {
        return (
            Vec::new(),
            Some(format!(
                "resume it in the viewer: `graphmind resume` needs the hub's agent token \
                 ({problem})"
            )),
        );
    }
    match allow_control {
        Some("off") => (
            Vec::new(),
            Some(format!(
                "resume it in the viewer, or restart serve with --allow-control resume (or \
                 inject): the hub on port {port} runs with --allow-control off, so \
                 `graphmind resume` would be refused"
            )),
        ),
        Some("resume") => (
            resume_commands(p, port, &["continue", "retry", "abort"]),
            Some(
                "inject it in the viewer, or restart serve with --allow-control inject: the hub \
                 runs with --allow-control resume"
                    .to_owned(),
            ),
        ),
        _ => (
            resume_commands(p, port, &["continue", "retry", "inject", "abort"]),
            None,
        ),
    }
}

fn shown(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "-".into(),
        Some(v) => {
            let t = v.to_string();
            if t.chars().count() > 2000 {
                let cut: String = t.chars().take(2000).collect();
                format!("{cut}… ({} bytes)", t.len())
            } else {
                t
            }
        }
    }
}

fn wait(
    port: Option<u16>,
    timeout: Option<f64>,
    run: Option<&str>,
    as_json: bool,
) -> Result<(), Fail> {
    if let Some(t) = timeout
        && !(t.is_finite() && t >= 0.0)
    {
        return Err(Fail::new(
            Exit::Usage,
            "--timeout takes a number of seconds >= 0",
        ));
    }
    // Usage errors first: they are the same whichever hub would have answered.
    let h = &Hub::locate(port)?;
    let deadline = timeout.map(|t| Instant::now() + Duration::from_secs_f64(t.min(1e9)));
    let pause = loop {
        let chunk = match deadline {
            Some(d) => d
                .saturating_duration_since(Instant::now())
                .as_secs_f64()
                .min(600.0),
            None => 600.0,
        };
        // `wait=0` would mean "do not wait"; ask without it for the last look.
        let path = pauses_path(run, (chunk >= 0.001).then_some(chunk));
        let v = expect_ok(h.get(&path, Duration::from_secs_f64(chunk + 30.0))?)?;
        if let Some(p) = pause_list(&v).into_iter().next() {
            break p;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(Fail::new(
                Exit::Timeout,
                format!(
                    "no pause opened within {} s",
                    timeout.map_or_else(String::new, |t| t.to_string())
                ),
            ));
        }
    };
    let (commands, note) = resume_advice(
        &pause,
        h.port,
        h.allow_control.as_deref(),
        h.token_problem(),
    );
    if as_json {
        let mut o = pause.clone();
        if let Some(m) = o.as_object_mut() {
            m.insert("resume".into(), json!(commands));
            if let Some(n) = &note {
                m.insert("resumeNote".into(), json!(n));
            }
        }
        return print_json(&o);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "paused: {} at {} ({}) in run {}",
        s(&pause, "nodeId"),
        s(&pause, "point"),
        s(&pause, "reason"),
        s(&pause, "runId")
    );
    let _ = writeln!(out, "  pause   {}", s(&pause, "pauseId"));
    let _ = writeln!(out, "  input   {}", shown(pause.get("input")));
    let _ = writeln!(out, "  output  {}", shown(pause.get("output")));
    let _ = writeln!(out, "  error   {}", shown(pause.get("error")));
    if !commands.is_empty() {
        out.push_str("resume it with one of:\n");
        for c in &commands {
            let _ = writeln!(out, "  {c}");
        }
    }
    if let Some(n) = &note {
        let _ = writeln!(out, "{n}");
    }
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(io_fail)
}

/// `--output`: JSON text, or `@file` holding JSON.
fn output_arg(raw: &str) -> Result<Value, Fail> {
    let (text, from) = match raw.strip_prefix('@') {
        Some(path) => (
            std::fs::read_to_string(path)
                .map_err(|e| Fail::new(Exit::Usage, format!("cannot read {path}: {e}")))?,
            format!(" in {path}"),
        ),
        None => (raw.to_owned(), String::new()),
    };
    serde_json::from_str(&text).map_err(|e| {
        Fail::new(
            Exit::Usage,
            format!("--output{from} is not JSON ({e}); quote strings, e.g. --output '\"text\"'"),
        )
    })
}

fn resume(
    port: Option<u16>,
    pause_id: &str,
    run_id: &str,
    action: &str,
    output: Option<&str>,
    as_json: bool,
) -> Result<(), Fail> {
    let mut body = json!({"action": action});
    match (action, output) {
        ("inject", None) => {
            return Err(Fail::new(
                Exit::Usage,
                "--action inject needs --output JSON (or --output @file)",
            ));
        }
        ("inject", Some(o)) => body["output"] = output_arg(o)?,
        (_, Some(_)) => {
            return Err(Fail::new(
                Exit::Usage,
                "--output goes only with --action inject",
            ));
        }
        _ => {}
    }
    let h = &Hub::locate(port)?;
    let path = format!("/api/runs/{}/pauses/{}/resume", enc(run_id), enc(pause_id));
    let a = h.post(&path, &body, RESUME_TIMEOUT)?;
    let v = a.json();
    if a.status == 200 {
        if as_json {
            return print_json(&v);
        }
        println!("resumed {pause_id} of run {run_id} ({action})");
        return Ok(());
    }
    if as_json && v.get("outcome").is_some() {
        print_json(&v)?;
    }
    let f = Fail::of(&a);
    let msg = match a.status {
        202 => format!("sent {action} to the app, but it did not confirm within 5 s"),
        422 => format!(
            "the app refused {action}{}: {} (the gate stays held)",
            v.get("code")
                .and_then(Value::as_str)
                .map_or_else(String::new, |c| format!(" ({c})")),
            f.msg
        ),
        409 => format!("{pause_id} is taken: {}", f.msg),
        410 => format!("{pause_id} is gone: {}", f.msg),
        _ => f.msg,
    };
    Err(Fail::new(f.code, msg))
}

fn matcher_text(m: &Value) -> String {
    let mut parts = Vec::new();
    for k in ["kind", "name", "point"] {
        if let Some(v) = m.get(k).and_then(Value::as_str) {
            parts.push(format!("{k}={v}"));
        }
    }
    if m.get("point").is_none() {
        parts.push("(point before)".into());
    }
    parts.join(" ")
}

fn print_debug(state: &Value, as_json: bool) -> Result<(), Fail> {
    if as_json {
        return print_json(state);
    }
    let mut out = String::new();
    let _ = writeln!(out, "mode: {}", s(state, "mode"));
    let bps = state
        .get("breakpoints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if bps.is_empty() {
        out.push_str("breakpoints: none\n");
    } else {
        out.push_str("breakpoints:\n");
        for b in &bps {
            let _ = writeln!(out, "  {}", matcher_text(b));
        }
    }
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(io_fail)
}

fn breakpoints(
    port: Option<u16>,
    op: &str,
    kind: Option<String>,
    name: Option<String>,
    point: Option<String>,
    as_json: bool,
) -> Result<(), Fail> {
    let mut matcher = serde_json::Map::new();
    for (k, v) in [("kind", kind), ("name", name), ("point", point)] {
        if let Some(v) = v {
            matcher.insert(k.into(), Value::String(v));
        }
    }
    if op == "list" && !matcher.is_empty() {
        return Err(Fail::new(
            Exit::Usage,
            "break list takes no --kind, --name or --point",
        ));
    }
    if op == "set" && matcher.is_empty() {
        return Err(Fail::new(
            Exit::Usage,
            "break set needs --kind, --name and/or --point",
        ));
    }
    let h = Hub::locate(port)?;
    let state = match op {
        "list" => expect_ok(h.get("/api/debug", READ_TIMEOUT)?)?,
        "set" => expect_ok(h.post(
            "/api/debug/breakpoints/set",
            &json!({"matcher": matcher}),
            READ_TIMEOUT,
        )?)?,
        _ => {
            let body = if matcher.is_empty() {
                json!({"all": true})
            } else {
                json!({"matcher": matcher})
            };
            expect_ok(h.post("/api/debug/breakpoints/clear", &body, READ_TIMEOUT)?)?
        }
    };
    print_debug(&state, as_json)
}

/// A clap usage error as one line (`graphmind: invalid value 'x' for '--action <ACTION>'
/// [possible values: …] (see --help)`), for the one-line error rule.
pub fn usage_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        // `graphmind` alone: the help is the clearest answer.
        return text.trim_end().to_owned();
    }
    let mut parts: Vec<&str> = Vec::new();
    let mut in_usage = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("Usage:") {
            in_usage = true;
            continue;
        }
        if in_usage && line.starts_with(' ') {
            continue;
        }
        in_usage = false;
        if t.is_empty() || t.starts_with("For more information") {
            continue;
        }
        parts.push(t.strip_prefix("error: ").unwrap_or(t));
    }
    format!("graphmind: {} (see --help)", one_line(&parts.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_statuses_map_to_exit_codes() {
        let code = |status| {
            Fail::of(&Answer {
                status,
                body: String::new(),
            })
            .code
        };
        assert_eq!(code(400), Exit::Usage);
        assert_eq!(code(415), Exit::Usage);
        assert_eq!(code(202), Exit::Timeout);
        assert_eq!(code(401), Exit::Unauthorized);
        assert_eq!(code(403), Exit::Unauthorized);
        assert_eq!(code(404), Exit::Gone);
        assert_eq!(code(410), Exit::Gone);
        assert_eq!(code(409), Exit::Taken);
        assert_eq!(code(422), Exit::Refused);
        assert_eq!(code(500), Exit::Unreachable);
    }

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(sh("pause_ab12_3"), "pause_ab12_3");
        assert_eq!(sh(r#"{"a":1}"#), r#"'{"a":1}'"#);
        assert_eq!(sh("it's"), r"'it'\''s'");
        assert_eq!(sh(""), "''");
    }

    #[test]
    fn resume_commands_name_the_port_only_when_not_default() {
        let p = json!({"pauseId": "pause_x_1", "runId": "run_1", "output": {"v": 2}});
        let all = ["continue", "retry", "inject", "abort"];
        let c = resume_commands(&p, 4747, &all);
        assert_eq!(
            c[0],
            "graphmind resume pause_x_1 --run run_1 --action continue"
        );
        assert_eq!(
            c[2],
            r#"graphmind resume pause_x_1 --run run_1 --action inject --output '{"v":2}'"#
        );
        assert!(resume_commands(&p, 5000, &all)[3].ends_with("--port 5000 --action abort"));
    }

    #[test]
    fn resume_advice_offers_only_what_allow_control_permits() {
        let p = json!({"pauseId": "pause_x_1", "runId": "run_1"});
        let (c, note) = resume_advice(&p, 4747, Some("off"), None);
        assert!(c.is_empty());
        let note = note.expect("a note for off");
        assert!(note.contains("viewer") && note.contains("--allow-control resume"));
        let (c, note) = resume_advice(&p, 4747, Some("resume"), None);
        assert_eq!(c.len(), 3);
        assert!(c.iter().all(|c| !c.contains("inject")));
        assert!(
            note.expect("a note for resume")
                .contains("--allow-control inject")
        );
        let (c, note) = resume_advice(&p, 4747, Some("inject"), None);
        assert_eq!((c.len(), note), (4, None));
        let (c, note) = resume_advice(&p, 4747, Some("inject"), Some("no run file"));
        assert!(c.is_empty());
        assert!(note.expect("a note without token").contains("no run file"));
    }

    #[test]
    fn times_print_as_utc() {
        assert_eq!(time_of(Some(1_700_000_000_000)), "2023-11-14 22:13:20");
        assert_eq!(time_of(Some(951_782_400_000)), "2000-02-29 00:00:00");
        assert_eq!(time_of(None), "-");
    }

    #[test]
    fn encoding_keeps_ids_and_escapes_the_rest() {
        assert_eq!(enc("run_ab-1.2~"), "run_ab-1.2~");
        assert_eq!(enc("a/b c?"), "a%2Fb%20c%3F");
    }

    #[test]
    fn inject_output_must_be_json() {
        assert_eq!(output_arg("{\"a\":1}").unwrap(), json!({"a": 1}));
        assert_eq!(output_arg("null").unwrap(), Value::Null);
        assert_eq!(output_arg("hello").unwrap_err().code, Exit::Usage);
        assert_eq!(output_arg("@/nonexistent/x").unwrap_err().code, Exit::Usage);
    }
}
