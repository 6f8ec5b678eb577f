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
