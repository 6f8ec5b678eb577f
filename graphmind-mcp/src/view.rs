//! What the tools answer: runs, executions and pauses as compact text a model reads well
//! (summaries first, ids to drill in), with large payloads cut and a note saying how to read
//! them whole.

use std::fmt::Write as _;

use serde_json::Value;

/// A payload longer than this (JSON characters) is cut in summaries and details.
pub const PREVIEW_CHARS: usize = 4000;
/// A payload in a one-line listing is cut at this many characters.
pub const LINE_CHARS: usize = 160;
/// The longest slice of one payload `get_execution` returns with `field`.
pub const SLICE_CHARS: usize = 16_000;

/// `s` at most `max` characters; `None` when it fits.
fn cut_str(s: &str, max: usize) -> Option<String> {
    let mut end = None;
    for (n, (i, _)) in s.char_indices().enumerate() {
        if n == max {
            end = Some(i);
            break;
        }
    }
    end.map(|i| s[..i].to_owned())
}

/// `v` as one line of JSON, cut at `max` characters (`…` and the full length when cut).
pub fn preview(v: &Value, max: usize) -> String {
    let t = v.to_string();
    match cut_str(&t, max) {
        Some(c) => format!("{c}… ({} chars in all)", t.chars().count()),
        None => t,
    }
}

/// One line, no control characters (a run or node name cannot break a listing).
pub fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// `1700000000000` → `2023-11-14 22:13:20Z`.
pub fn time_of(ms: Option<u64>) -> String {
    let Some(ms) = ms.filter(|m| *m > 0) else {
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
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn st<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("-")
}

/// One run summary (`RunSummary` of the hub) as one line.
pub fn run_line(r: &Value) -> String {
    let id = r
        .get("runId")
        .or_else(|| r.get("id"))
        .and_then(Value::as_str)
        .unwrap_or("-");
    let mut line = format!(
        "{id}  {}  app={}  name={}  started {}  {} events",
        st(r, "status"),
        one_line(st(r, "app")),
        one_line(st(r, "name")),
        time_of(r.get("startedAt").and_then(Value::as_u64)),
        r.get("eventCount").and_then(Value::as_u64).unwrap_or(0),
    );
    if let Some(n) = r
        .get("errorCount")
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
    {
        let _ = write!(line, ", {n} errors");
    }
    if let Some(d) = r.get("durationMs").and_then(Value::as_f64) {
        let _ = write!(line, ", {d:.0} ms");
    }
    if r.get("live") == Some(&Value::Bool(true)) {
        line.push_str("  [live]");
    }
    if r.get("incomplete") == Some(&Value::Bool(true)) {
        line.push_str("  [incomplete: events lost]");
    }
    line
}

/// One execution of a node in a run, from its `node.started`, `node.finished` and
/// `node.error` events.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    /// 1-based position in the run (order of `node.started`).
    pub step: usize,
    /// The execution id (`instanceId`; `#<step>` when the app sent none).
    pub id: String,
    /// The node (`tool:lookup_order`).
    pub node_id: String,
    /// Node kind.
    pub kind: String,
    /// Node name.
    pub name: String,
    /// The enclosing node, if any.
    pub parent_id: Option<String>,
    /// `running`, `ok`, `error` or the status the app reported.
    pub status: String,
    /// Duration the app reported.
    pub duration_ms: Option<f64>,
    /// The input the call started with.
    pub input: Option<Value>,
    /// What it returned.
    pub output: Option<Value>,
    /// Token usage (model steps).
    pub usage: Option<Value>,
    /// The error it failed with.
    pub error: Option<Value>,
}

/// The executions of a run in the order they started, from its stored envelopes.
pub fn executions(events: &[Value]) -> Vec<Execution> {
    let mut out: Vec<Execution> = Vec::new();
    for e in events {
        let p = &e["payload"];
        let node = p.get("nodeId").and_then(Value::as_str).unwrap_or("");
        let instance = p.get("instanceId").and_then(Value::as_str);
        // The execution an end event closes: its instance, else the newest open one of
        // the node.
        let find = |out: &mut Vec<Execution>| -> Option<usize> {
            match instance {
                Some(i) => out.iter().rposition(|x| x.id == i),
                None => out
                    .iter()
                    .rposition(|x| x.node_id == node && x.status == "running"),
            }
        };
        match e["type"].as_str() {
            Some("node.started") => {
                let step = out.len() + 1;
                out.push(Execution {
                    step,
                    id: instance.map_or_else(|| format!("#{step}"), str::to_owned),
                    node_id: node.to_owned(),
                    kind: st(p, "kind").to_owned(),
                    name: st(p, "name").to_owned(),
                    parent_id: p.get("parentId").and_then(Value::as_str).map(str::to_owned),
                    status: "running".into(),
                    duration_ms: None,
                    input: p.get("input").cloned(),
                    output: None,
                    usage: None,
                    error: None,
                });
            }
            Some("node.finished") => {
                if let Some(i) = find(&mut out) {
                    let x = &mut out[i];
                    x.status = p
                        .get("status")
                        .and_then(Value::as_str)
                        .unwrap_or("ok")
                        .to_owned();
                    x.duration_ms = p.get("durationMs").and_then(Value::as_f64);
                    x.output = p.get("output").cloned();
                    x.usage = p.get("usage").cloned();
                }
            }
            Some("node.error") => {
                if let Some(i) = find(&mut out) {
                    let x = &mut out[i];
                    x.status = "error".into();
                    x.error = p.get("error").cloned();
                }
            }
            _ => {}
        }
    }
    out
}

/// The error message of an execution's error (`error.message`, else the JSON).
pub fn error_message(e: &Value) -> String {
    e.get("message")
        .and_then(Value::as_str)
        .map_or_else(|| preview(e, LINE_CHARS), one_line)
}

/// One execution as one line of a run's listing.
pub fn execution_line(x: &Execution) -> String {
    let mut line = format!(
        "#{} {}  {}  exec={}",
        x.step,
        one_line(&x.node_id),
        x.status,
        one_line(&x.id)
    );
    if let Some(d) = x.duration_ms {
        let _ = write!(line, "  {d:.0} ms");
    }
    if let Some(e) = &x.error {
        let _ = write!(line, "  error: {}", cut_line(&error_message(e)));
    } else if let Some(o) = &x.output {
        let _ = write!(line, "  -> {}", preview(o, LINE_CHARS));
    } else if let Some(i) = &x.input {
        let _ = write!(line, "  input {}", preview(i, LINE_CHARS));
    }
    line
}

fn cut_line(s: &str) -> String {
    cut_str(s, LINE_CHARS).map_or_else(|| s.to_owned(), |c| format!("{c}…"))
}

/// The chat messages of a model step's input (a `messages` array at its top or one level
/// down), one `role: content` line each.
pub fn chat_messages(input: &Value) -> Option<Vec<String>> {
    let msgs = input
        .get("messages")
        .or_else(|| input.as_object()?.values().find_map(|v| v.get("messages")))?;
    let list = msgs.as_array()?;
    Some(
        list.iter()
            .map(|m| {
                let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
                let content = match m.get("content") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                let mut line = format!("{}: {}", one_line(role), one_line(&content));
                if let Some(c) = cut_str(&line, 600) {
                    line = format!("{c}… ({} chars)", content.chars().count());
                }
                line
            })
            .collect(),
    )
}

/// One field of an execution in the details, cut at [`PREVIEW_CHARS`], naming how to read it
/// whole when cut.
pub fn field_block(out: &mut String, label: &str, v: Option<&Value>, run: &str, exec: &str) {
    let Some(v) = v else {
        let _ = writeln!(out, "{label}: -");
        return;
    };
    let t = v.to_string();
    match cut_str(&t, PREVIEW_CHARS) {
        None => {
            let _ = writeln!(out, "{label}: {t}");
        }
        Some(c) => {
            let _ = writeln!(
                out,
                "{label}: {c}…\n  (cut at {PREVIEW_CHARS} of {} chars: get_execution \
                 {{\"runId\":\"{run}\",\"executionId\":\"{exec}\",\"field\":\"{label}\",\
                 \"offset\":{PREVIEW_CHARS}}} reads on)",
                t.chars().count()
            );
        }
    }
}

/// The details of one execution.
pub fn execution_details(x: &Execution, run: &str) -> String {
    let mut out = format!(
        "execution {} (#{} of run {run}): {} ({} {}), {}",
        one_line(&x.id),
        x.step,
        one_line(&x.node_id),
        one_line(&x.kind),
        one_line(&x.name),
        x.status
    );
    if let Some(d) = x.duration_ms {
        let _ = write!(out, ", {d:.0} ms");
    }
    out.push('\n');
    if let Some(p) = &x.parent_id {
        let _ = writeln!(out, "parent: {}", one_line(p));
    }
    if let Some(e) = &x.error {
        let _ = writeln!(out, "error message: {}", error_message(e));
    }
    if let Some(msgs) = x.input.as_ref().and_then(chat_messages) {
        let _ = writeln!(out, "chat messages ({}):", msgs.len());
        for m in msgs.iter().take(50) {
            let _ = writeln!(out, "  {m}");
        }
        if msgs.len() > 50 {
            let _ = writeln!(
                out,
                "  … {} more (field input reads them all)",
                msgs.len() - 50
            );
        }
    }
    field_block(&mut out, "input", x.input.as_ref(), run, &x.id);
    field_block(&mut out, "output", x.output.as_ref(), run, &x.id);
    field_block(&mut out, "error", x.error.as_ref(), run, &x.id);
    field_block(&mut out, "usage", x.usage.as_ref(), run, &x.id);
    out
}

/// A slice of one field's JSON text: `SLICE_CHARS` characters from `offset`.
pub fn field_slice(v: Option<&Value>, field: &str, offset: usize) -> String {
    let Some(v) = v else {
        return format!("{field}: - (this execution has none)");
    };
    let t = v.to_string();
    let total = t.chars().count();
    if offset >= total && total > 0 {
        return format!("{field}: offset {offset} is past the end ({total} chars)");
    }
    let slice: String = t.chars().skip(offset).take(SLICE_CHARS).collect();
    let end = offset + slice.chars().count();
    let mut out = format!("{field} chars {offset}..{end} of {total}:\n{slice}");
    if end < total {
        let _ = write!(out, "\n(more: offset {end})");
    }
    out
}

/// One open pause (`PauseInfo`) as one line.
pub fn pause_line(p: &Value) -> String {
    let mut line = format!(
        "{}  run={}  {} at {} ({})  state={}",
        st(p, "pauseId"),
        st(p, "runId"),
        one_line(st(p, "nodeId")),
        st(p, "point"),
        st(p, "reason"),
        st(p, "state"),
    );
    if p.get("editable") == Some(&Value::Bool(true)) {
        line.push_str("  editable");
    }
    if let Some(i) = p.get("input").filter(|i| !i.is_null()) {
        let _ = write!(line, "  input {}", preview(i, LINE_CHARS));
    }
    line
}

/// The details of one pause: what is held, and how to resume it.
pub fn pause_details(p: &Value, actions: &[&str], note: Option<&str>) -> String {
    let mut out = format!(
        "paused: {} at {} ({}) in run {}\npauseId: {}\n",
        one_line(st(p, "nodeId")),
        st(p, "point"),
        st(p, "reason"),
        st(p, "runId"),
        st(p, "pauseId"),
    );
    if let Some(i) = p.get("instanceId").and_then(Value::as_str) {
        let _ = writeln!(out, "executionId: {}", one_line(i));
    }
    for k in ["input", "output", "error"] {
        match p.get(k).filter(|v| !v.is_null()) {
            Some(v) => {
                let _ = writeln!(out, "{k}: {}", preview(v, PREVIEW_CHARS));
            }
            None => {
                let _ = writeln!(out, "{k}: -");
            }
        }
    }
    let editable = p.get("editable") == Some(&Value::Bool(true));
    let _ = writeln!(
        out,
        "editable: {}",
        if editable {
            "yes (resume_pause with `input` runs the call with another input)"
        } else {
            "no"
        }
    );
    if actions.is_empty() {
        out.push_str("resume_pause actions allowed here: none\n");
    } else {
        let _ = writeln!(
            out,
            "resume_pause actions allowed here: {}",
            actions.join(", ")
        );
    }
    if let Some(n) = note {
        let _ = writeln!(out, "{n}");
    }
    out
}

/// A matcher (`{kind?, name?, point?}`) as text.
pub fn matcher_text(m: &Value) -> String {
    let mut parts = Vec::new();
    for k in ["kind", "name", "point"] {
        if let Some(v) = m.get(k).and_then(Value::as_str) {
            parts.push(format!("{k}={}", one_line(v)));
        }
    }
    if m.get("point").is_none() {
        parts.push("(point before)".into());
    }
    parts.join(" ")
}

/// The hub's debug state (`{breakpoints, mode}`) as text.
pub fn debug_state(v: &Value) -> String {
    let mut out = format!("mode: {}\n", st(v, "mode"));
    let list = v
        .get("breakpoints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if list.is_empty() {
        out.push_str("breakpoints: none\n");
    } else {
        let _ = writeln!(out, "breakpoints ({}):", list.len());
        for b in &list {
            let _ = writeln!(out, "  {}", matcher_text(b));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(t: &str, payload: Value) -> Value {
        json!({"type": t, "payload": payload})
    }

    #[test]
    fn executions_pair_ends_with_their_start_by_instance() {
        let events = vec![
            ev(
                "node.started",
                json!({"nodeId":"tool:a","kind":"tool","name":"a","instanceId":"c1","input":{"x":1}}),
            ),
            ev(
                "node.started",
                json!({"nodeId":"tool:a","kind":"tool","name":"a","instanceId":"c2","input":{"x":2}}),
            ),
            ev(
                "node.error",
                json!({"nodeId":"tool:a","instanceId":"c1","error":{"name":"E","message":"boom"}}),
            ),
            ev(
                "node.finished",
                json!({"nodeId":"tool:a","instanceId":"c2","status":"ok","durationMs":3,"output":7}),
            ),
        ];
        let x = executions(&events);
        assert_eq!(x.len(), 2);
        assert_eq!((x[0].id.as_str(), x[0].status.as_str()), ("c1", "error"));
        assert_eq!(x[1].output, Some(json!(7)));
        assert_eq!(x[1].step, 2);
        assert!(execution_line(&x[0]).contains("error: boom"));
    }

    #[test]
    fn a_long_payload_is_cut_with_the_way_to_read_it_whole() {
        let big = json!({"text": "a".repeat(10_000)});
        let mut out = String::new();
        field_block(&mut out, "output", Some(&big), "run_1", "c1");
        assert!(out.len() < PREVIEW_CHARS + 400, "{}", out.len());
        assert!(out.contains(r#""field":"output","offset":4000"#), "{out}");
        let s = field_slice(Some(&big), "output", 4000);
        assert!(
            s.starts_with("output chars 4000..10011 of 10011"),
            "{}",
            &s[..60]
        );
        assert!(field_slice(Some(&big), "output", 99_999).contains("past the end"));
    }

    #[test]
    fn cutting_respects_character_boundaries() {
        let v = json!("é".repeat(500));
        let p = preview(&v, 10);
        assert!(p.starts_with("\"éééé"), "{p}");
        assert!(p.ends_with("(502 chars in all)"), "{p}");
    }

    #[test]
    fn chat_messages_are_found_one_level_down() {
        let input = json!({"request": {"messages": [
            {"role": "system", "content": "be kind"},
            {"role": "user", "content": "where\nis it"}
        ]}});
        assert_eq!(
            chat_messages(&input).unwrap(),
            vec!["system: be kind".to_owned(), "user: where is it".to_owned()]
        );
        assert!(chat_messages(&json!({"a": 1})).is_none());
    }
}
