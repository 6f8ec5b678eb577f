//! `graphmind break` and `graphmind mode`: the hub's breakpoints and step mode.

use graphmind_protocol::BreakpointMatcher;
use graphmind_protocol::feed::DebugState;

use super::*;

fn matcher_text(m: &BreakpointMatcher) -> String {
    let mut parts = Vec::new();
    if let Some(kind) = m.kind {
        parts.push(format!("kind={kind}"));
    }
    if let Some(name) = &m.name {
        parts.push(format!("name={name}"));
    }
    match m.point {
        Some(point) => parts.push(format!("point={point}")),
        None => parts.push("(point before)".into()),
    }
    parts.join(" ")
}

/// `break list` against a hub without `/api/debug`: what is known, and where to look.
fn print_no_debug_api(port: u16, as_json: bool) -> Result<(), Fail> {
    let note = format!(
        "the hub on port {port} has no /api/debug (a GraphMind 0.6 hub?): its breakpoints \
         and mode are set and shown in its viewer"
    );
    if as_json {
        return print_json(&json!({"breakpoints": null, "mode": null, "note": note}));
    }
    println!("breakpoints: unknown\n{note}");
    Ok(())
}

/// What a hub that answered `404` to `/api/debug` is, from its `/health`: `GraphMind
/// graphmind-ai 0.6.2` for a reference hub, or what little it says.
fn hub_named(h: &TargetHub) -> String {
    let health = h
        .get("/health", READ_TIMEOUT)
        .ok()
        .filter(|a| a.status == 200)
        .map(|a| a.json())
        .unwrap_or(Value::Null);
    match (
        health.get("name").and_then(Value::as_str),
        health.get("version").and_then(Value::as_str),
    ) {
        (Some(name), Some(version)) => format!("{name} {version}"),
        (None, Some(version)) => format!("version {version}"),
        (Some(name), None) => name.to_owned(),
        (None, None) => "of an unknown version".to_owned(),
    }
}

/// A breakpoint or mode change the hub has no HTTP API for (a GraphMind 0.6 hub sets them
/// only from its viewer's socket): refused, naming the hub's version, instead of a bare 404.
pub(super) fn no_debug_api(h: &TargetHub, what: &str) -> Fail {
    Fail::new(
        Exit::Refused,
        format!(
            "the hub on port {} ({}) has no /api/debug, so `graphmind {what}` cannot change it: \
             set breakpoints and the mode in its viewer",
            h.port,
            hub_named(h)
        ),
    )
}

/// `POST path`, refused with [`no_debug_api`] when the hub has no debug API.
pub(super) fn post_debug(
    h: &TargetHub,
    path: &str,
    body: &Value,
    what: &str,
) -> Result<Value, Fail> {
    let a = h.post(path, body, READ_TIMEOUT)?;
    if a.status == 404 {
        return Err(no_debug_api(h, what));
    }
    expect_ok(a)
}

pub(super) fn print_debug(state: &Value, as_json: bool) -> Result<(), Fail> {
    if as_json {
        return print_json(state);
    }
    let state: DebugState = typed(state, "the debug state")?;
    let mut out = String::new();
    let _ = writeln!(out, "mode: {}", state.mode);
    if state.breakpoints.is_empty() {
        out.push_str("breakpoints: none\n");
    } else {
        out.push_str("breakpoints:\n");
        for b in &state.breakpoints {
            let _ = writeln!(out, "  {}", matcher_text(b));
        }
    }
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(io_fail)
}

pub(super) fn breakpoints(
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
    let h = TargetHub::locate(port)?;
    let state = match op {
        "list" => {
            let a = h.get("/api/debug", READ_TIMEOUT)?;
            if a.status == 404 {
                // A GraphMind 0.6 hub keeps breakpoints in its viewer, with no HTTP API.
                return print_no_debug_api(h.port, as_json);
            }
            expect_ok(a)?
        }
        "set" => post_debug(
            &h,
            "/api/debug/breakpoints/set",
            &json!({"matcher": matcher}),
            "break set",
        )?,
        _ => {
            let body = if matcher.is_empty() {
                json!({"all": true})
            } else {
                json!({"matcher": matcher})
            };
            post_debug(&h, "/api/debug/breakpoints/clear", &body, "break clear")?
        }
    };
    print_debug(&state, as_json)
}
