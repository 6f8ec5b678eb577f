//! `graphmind pauses`, `wait` and `resume`: the open pauses, waiting for one, and releasing
//! one — with the resume commands the hub's `allowControl` lets the agent token run.

use graphmind_protocol::control::{ResumeAnswer, ResumeRequest};

use super::*;

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

pub(super) fn pauses(h: &TargetHub, run: Option<&str>, as_json: bool) -> Result<(), Fail> {
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
pub(super) fn sh(word: &str) -> String {
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

/// The commands that release `p`, one per action of `actions`, and, with `edit` (the agent
/// token may edit inputs), the edited-input command at an editable gate.
pub(super) fn resume_commands(p: &Value, port: u16, actions: &[&str], edit: bool) -> Vec<String> {
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
        .or_else(|| p.get("outputExample"))
        .map_or_else(|| "null".to_owned(), Value::to_string);
    let example = if example.len() > 200 {
        "<JSON>".to_owned()
    } else {
        example
    };
    let input = p
        .get("input")
        .filter(|i| !i.is_null())
        .map_or_else(|| "{}".to_owned(), Value::to_string);
    let input = if input.len() > 200 {
        "<JSON>".to_owned()
    } else {
        input
    };
    let editable = p.get("editable").and_then(Value::as_bool) == Some(true);
    let mut out: Vec<String> = actions
        .iter()
        .map(|&a| match a {
            "inject" => format!("{base} --action inject --output {}", sh(&example)),
            "reject" => format!("{base} --action reject --reason {}", sh("<why>")),
            _ => format!("{base} --action {a}"),
        })
        .collect();
    let edit_action = edit_action(p);
    if editable && actions.contains(&edit_action) && edit {
        out.insert(
            1,
            format!("{base} --action {edit_action} --input {}", sh(&input)),
        );
    }
    out
}

/// The action an edited input is sent with: `continue` before the call (it runs with the
/// edited input), `retry` after it or when it failed (it runs again with it).
fn edit_action(p: &Value) -> &'static str {
    match p.get("point").and_then(Value::as_str) {
        Some("after" | "error") => "retry",
        _ => "continue",
    }
}

/// What the hub a command talks to lets its agent token do, as its run file says.
pub(super) struct Control<'a> {
    /// `allowControl` of the run file (`off`, `resume`, `inject`, `edit`; none: not said).
    pub allow_control: Option<&'a str>,
    /// Why there is no agent token, if there is none.
    pub token_problem: Option<&'a str>,
    /// The command that started the hub (`serve`, `demo`): the one to start again with
    /// another `--allow-control`.
    pub started_by: &'a str,
}

/// How `p` can be released from here: the `graphmind resume` commands that the hub lets the
/// agent token run (its `allowControl`), and a note when some or all of them are not allowed.
pub(super) fn resume_advice(
    p: &Value,
    port: u16,
    c: &Control<'_>,
) -> (Vec<String>, Option<String>) {
    if let Some(problem) = c.token_problem {
        return (
            Vec::new(),
            Some(format!(
                "resume it in the viewer: `graphmind resume` needs the hub's agent token \
                 ({problem})"
            )),
        );
    }
    // The gate's own list (`actions` of its pause, when the app said), then what the hub
    // lets the agent token do.
    let accepted = |wanted: &[&'static str]| -> Vec<&'static str> {
        match p.get("actions").and_then(Value::as_array) {
            Some(list) => wanted
                .iter()
                .copied()
                .filter(|a| list.iter().any(|x| x.as_str() == Some(*a)))
                .collect(),
            // Reject is offered only where the gate says it takes it.
            None => wanted.iter().copied().filter(|a| *a != "reject").collect(),
        }
    };
    let again = |level: &str| {
        format!(
            "start the hub again with `graphmind {} --allow-control {level}`",
            c.started_by
        )
    };
    let editable = p.get("editable").and_then(Value::as_bool) == Some(true);
    match c.allow_control {
        Some("off") => (
            Vec::new(),
            Some(format!(
                "resume it in the viewer, or {} (or inject, edit): the hub on port {port} runs \
                 with --allow-control off, so `graphmind resume` would be refused",
                again("resume")
            )),
        ),
        Some("resume") => (
            resume_commands(
                p,
                port,
                &accepted(&["continue", "retry", "abort", "reject"]),
                false,
            ),
            Some(format!(
                "inject it in the viewer, or {}: the hub runs with --allow-control resume",
                again("inject")
            )),
        ),
        Some("inject") => (
            resume_commands(
                p,
                port,
                &accepted(&["continue", "retry", "inject", "abort", "reject"]),
                false,
            ),
            editable.then(|| {
                format!(
                    "edit its input in the viewer, or {}: the hub runs with --allow-control \
                     inject",
                    again("edit")
                )
            }),
        ),
        _ => (
            resume_commands(
                p,
                port,
                &accepted(&["continue", "retry", "inject", "abort", "reject"]),
                true,
            ),
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

pub(super) fn wait(
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
    let h = &TargetHub::locate(port)?;
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
    let pause = with_output_example(h, with_node_details(h, pause));
    let (commands, note) = resume_advice(&pause, h.port, &control(h));
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
    let editable = pause.get("editable").and_then(Value::as_bool) == Some(true);
    let _ = writeln!(
        out,
        "  edit    {}",
        match (editable, edit_action(&pause)) {
            (true, "retry") => {
                "editable: the call can run again with another input (--action retry --input JSON)"
            }
            (true, _) => {
                "editable: the call can run with another input (--action continue --input JSON)"
            }
            (false, _) => "not editable (the app did not offer this gate's input for editing)",
        }
    );
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

/// A listed pause with its held node's input, output and error. A graphmind hub lists them
/// with the pause; a GraphMind 0.6 hub lists only the pause and answers
/// `GET /api/runs/:run/pauses/:pause` with `{pause: {node: {input, output, error}}}`.
fn with_node_details(h: &TargetHub, mut pause: Value) -> Value {
    if ["input", "output", "error"]
        .iter()
        .any(|k| pause.get(*k).is_some())
    {
        return pause;
    }
    let path = format!(
        "/api/runs/{}/pauses/{}",
        enc(s(&pause, "runId")),
        enc(s(&pause, "pauseId"))
    );
    let Ok(a) = h.get(&path, READ_TIMEOUT) else {
        return pause;
    };
    if a.status != 200 {
        return pause;
    }
    let detail = a.json();
    let detail = detail.get("pause").unwrap_or(&detail);
    let node = detail.get("node").unwrap_or(detail);
    if let Some(m) = pause.as_object_mut() {
        for k in ["input", "output", "error"] {
            if let Some(v) = node.get(k).or_else(|| detail.get(k)) {
                m.insert(k.into(), v.clone());
            }
        }
    }
    pause
}

/// A held node without an output of its own (a `before` or `error` gate) gets
/// `outputExample`: the shape of an output the same node returned before (in this run, or in
/// one of the newest runs), its values blanked (`""`, `0`, `false`), so the suggested
/// `--action inject --output …` has the fields and types the app will accept instead of a
/// `null` it would refuse.
fn with_output_example(h: &TargetHub, mut pause: Value) -> Value {
    if pause.get("output").is_some_and(|o| !o.is_null()) {
        return pause;
    }
    let node = s(&pause, "nodeId").to_owned();
    let run = s(&pause, "runId").to_owned();
    let found = graphmind_connect::example::output_example(h, &run, &node, READ_TIMEOUT);
    if let (Some(example), Some(m)) = (found, pause.as_object_mut()) {
        m.insert("outputExample".into(), example);
    }
    pause
}

/// `--output` / `--input`: JSON text, or `@file` holding JSON.
pub(super) fn json_arg(flag: &str, raw: &str) -> Result<Value, Fail> {
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
            format!("--{flag}{from} is not JSON ({e}); quote strings, e.g. --{flag} '\"text\"'"),
        )
    })
}

/// `--output`: JSON text, or `@file` holding JSON.
pub(super) fn output_arg(raw: &str) -> Result<Value, Fail> {
    json_arg("output", raw)
}

/// What `graphmind resume` asks of a held gate.
pub(super) struct Decision {
    /// continue, retry, inject, abort or reject.
    pub action: String,
    /// `--output` (inject).
    pub output: Option<String>,
    /// `--input` (an edited input).
    pub input: Option<String>,
    /// `--reason` (reject).
    pub reason: Option<String>,
    /// `--remember`.
    pub remember: bool,
    /// `--operator`.
    pub operator: Option<String>,
}

impl Decision {
    /// The request body, or the usage error.
    fn body(&self) -> Result<ResumeRequest, Fail> {
        let usage = |m: &str| Err(Fail::new(Exit::Usage, m.to_owned()));
        let a = self.action.as_str();
        let mut req = ResumeRequest {
            action: a.to_owned(),
            remember: self.remember,
            operator: self.operator.clone(),
            ..ResumeRequest::default()
        };
        match (a, &self.output) {
            ("inject", None) => {
                return usage("--action inject needs --output JSON (or --output @file)");
            }
            ("inject", Some(o)) => req.output = Some(output_arg(o)?),
            (_, Some(_)) => return usage("--output goes only with --action inject"),
            _ => {}
        }
        match (a, &self.reason) {
            ("reject", None) => {
                return usage("--action reject needs --reason TEXT: the caller gets it back");
            }
            ("reject", Some(r)) if r.trim().is_empty() => {
                return usage("--reason is empty: say why the call is rejected");
            }
            ("reject", Some(r)) => req.reason = Some(r.clone()),
            (_, Some(_)) => return usage("--reason goes only with --action reject"),
            _ => {}
        }
        if let Some(i) = &self.input {
            if !matches!(a, "continue" | "retry") {
                return usage("--input goes with --action continue or retry");
            }
            if self.remember {
                return usage("--input is for this call only: it does not go with --remember");
            }
            req.input = Some(json_arg("input", i)?);
        }
        if self.remember && !matches!(a, "continue" | "inject" | "reject") {
            return usage("--remember goes with --action continue, inject or reject");
        }
        Ok(req)
    }
}

/// The run of the open pause `pause_id` (for `resume` without `--run`): the one run whose
/// open pauses have that id.
fn run_of_pause(h: &TargetHub, pause_id: &str) -> Result<String, Fail> {
    let v = expect_ok(h.get(&pauses_path(None, None), READ_TIMEOUT)?)?;
    let mut runs: Vec<String> = pause_list(&v)
        .iter()
        .filter(|p| s(p, "pauseId") == pause_id)
        .map(|p| s(p, "runId").to_owned())
        .collect();
    runs.dedup();
    match runs.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(Fail::new(
            Exit::Gone,
            format!(
                "no open pause {pause_id} on port {} (`graphmind pauses` lists them; a closed \
                 one takes --run)",
                h.port
            ),
        )),
        several => Err(Fail::new(
            Exit::Usage,
            format!(
                "pause {pause_id} is open in runs {}: pass --run",
                several.join(", ")
            ),
        )),
    }
}

pub(super) fn resume(
    port: Option<u16>,
    pause_id: &str,
    run_id: Option<&str>,
    decision: &Decision,
    as_json: bool,
) -> Result<(), Fail> {
    let body = decision.body()?;
    let action = decision.action.as_str();
    let h = &TargetHub::locate(port)?;
    let run_id = &match run_id {
        Some(r) => r.to_owned(),
        None => run_of_pause(h, pause_id)?,
    };
    let path = format!("/api/runs/{}/pauses/{}/resume", enc(run_id), enc(pause_id));
    let body = serde_json::to_value(&body).map_err(|e| Fail::new(Exit::Usage, e.to_string()))?;
    let a = h.post(&path, &body, RESUME_TIMEOUT)?;
    let v = a.json();
    if a.status == 200 {
        if as_json {
            return print_json(&v);
        }
        let answer = serde_json::from_value::<ResumeAnswer>(v).ok();
        let mut line = format!("resumed {pause_id} of run {run_id} ({action}");
        if decision.input.is_some() {
            line.push_str(", edited input");
        }
        line.push(')');
        if let Some(e) = answer.as_ref().and_then(|a| a.edited.as_ref()) {
            let _ = write!(line, "\n  ran with {}", shown(Some(e)));
        }
        if answer.as_ref().is_some_and(|a| a.remembered) {
            line.push_str(
                "\n  remembered: further holds of this node in the run get the same decision",
            );
        }
        println!("{line}");
        return Ok(());
    }
    if as_json && v.get("outcome").is_some() {
        print_json(&v)?;
    }
    let f = Fail::of(&a);
    // Both answer shapes: graphmind's (`202 sent`, `410 gone`) and GraphMind 0.6's
    // (`202 timeout`, `404 no-such-pause`).
    let msg = match a.status {
        202 => format!("sent {action} to the app, but it did not confirm in time"),
        422 => format!(
            "the {} refused {action}{}: {} (the gate stays held)",
            if v.get("refusedBy").and_then(Value::as_str) == Some("hub") {
                "hub"
            } else {
                "app"
            },
            v.get("code")
                .and_then(Value::as_str)
                .map_or_else(String::new, |c| format!(" ({c})")),
            f.msg
        ),
        409 => format!("{pause_id} is taken: {}", f.msg),
        404 | 410 => format!("{pause_id} is gone: {}", f.msg),
        _ => f.msg,
    };
    Err(Fail::new(f.code, msg))
}

/// What the agent token may do on `h`, for the resume advice.
fn control(h: &TargetHub) -> Control<'_> {
    Control {
        allow_control: h.allow_control.as_deref(),
        token_problem: h.token_problem(),
        started_by: &h.started_by,
    }
}
