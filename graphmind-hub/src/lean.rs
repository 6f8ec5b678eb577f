//! Lean envelopes for an events page (`GET /api/runs/{runId}/events?lean=true`): each stored
//! envelope without its `gm` and `runId` members, which the page states once. For a viewer that
//! reads a 100,000-event run these two members are a sixth of the bytes it receives, decodes
//! and parses on its main thread.
//!
//! The envelope's other members are copied as stored, byte for byte. An envelope this scanner
//! cannot read (it never stores one: frames are checked at ingest) is copied whole.

/// Appends `body` (one stored envelope) to `out` without its top-level `gm` member, and without
/// its `runId` member when that is `run_id`.
pub fn append_lean(out: &mut String, body: &str, run_id: &str) {
    let mut members = [(0usize, 0usize); 16];
    let Some(n) = top_members(body.as_bytes(), &mut members) else {
        out.push_str(body);
        return;
    };
    out.push('{');
    let mut first = true;
    for &(start, end) in &members[..n] {
        let member = &body[start..end];
        if dropped(member, run_id) {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(member);
    }
    out.push('}');
}

/// Whether a member (`"key": value`, as stored) is one a lean page leaves out.
fn dropped(member: &str, run_id: &str) -> bool {
    if let Some(rest) = member.strip_prefix(r#""gm""#) {
        return rest.trim_start().starts_with(':');
    }
    if let Some(rest) = member.strip_prefix(r#""runId""#) {
        let value = rest.trim_start().strip_prefix(':').map(str::trim_start);
        return value
            .and_then(|v| v.strip_prefix('"'))
            .and_then(|v| v.strip_suffix('"'))
            == Some(run_id);
    }
    false
}

/// The byte spans of the members of the JSON object `b` (from a key's opening quote to the end
/// of its value), at most `spans.len()` of them: their count, or `None` when `b` is not one
/// object with that many members or fewer.
fn top_members(b: &[u8], spans: &mut [(usize, usize)]) -> Option<usize> {
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(b, i + 1);
    let mut n = 0;
    if b.get(i) == Some(&b'}') {
        return (skip_ws(b, i + 1) == b.len()).then_some(0);
    }
    loop {
        let start = i;
        if b.get(i) != Some(&b'"') {
            return None;
        }
        i = skip_string(b, i)?;
        i = skip_ws(b, i);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_value(b, skip_ws(b, i + 1))?;
        *spans.get_mut(n)? = (start, i);
        n += 1;
        i = skip_ws(b, i);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => return (skip_ws(b, i + 1) == b.len()).then_some(n),
            _ => return None,
        }
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// From the opening quote at `i`: the index after the closing one.
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        match b.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

/// From the first byte of a value at `i`: the index after it.
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match b.get(j)? {
                    b'"' => {
                        j = skip_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while let Some(c) = b.get(j) {
                if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                    break;
                }
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn lean(body: &str, run_id: &str) -> String {
        let mut out = String::new();
        append_lean(&mut out, body, run_id);
        out
    }

    #[test]
    fn a_rust_clients_envelope_loses_gm_and_its_run_id_and_keeps_the_rest_as_stored() {
        let body = r#"{"gm":1,"seq":7,"ts":1796235898997,"runId":"run_a","type":"node.started","payload":{"nodeId":"tool:t","runId":"run_a","gm":1,"input":{"s":"a \"}\" b","xs":[1,{"y":[]}]}}}"#;
        let out = lean(body, "run_a");
        assert_eq!(
            out,
            r#"{"seq":7,"ts":1796235898997,"type":"node.started","payload":{"nodeId":"tool:t","runId":"run_a","gm":1,"input":{"s":"a \"}\" b","xs":[1,{"y":[]}]}}}"#,
            "only the top-level members go; the payload is untouched"
        );
        let mut full: Value = serde_json::from_str(body).unwrap();
        let obj = full.as_object_mut().unwrap();
        obj.remove("gm");
        obj.remove("runId");
        assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), full);
    }

    #[test]
    fn a_python_clients_spaced_envelope_in_another_order() {
        let body = r#"{"gm": 1, "seq": 2, "ts": 1796004170840, "runId": "run_0ea9", "type": "node.started", "payload": {"nodeId": "agent:demo", "kind": "agent"}}"#;
        let out: Value = serde_json::from_str(&lean(body, "run_0ea9")).unwrap();
        assert_eq!(
            out,
            json!({"seq": 2, "ts": 1796004170840u64, "type": "node.started", "payload": {"nodeId": "agent:demo", "kind": "agent"}})
        );
        let reordered =
            r#"{ "payload" : {"a": [1, 2]} , "runId" : "run_0ea9", "type":"x", "gm" : 1 }"#;
        assert_eq!(
            lean(reordered, "run_0ea9"),
            r#"{"payload" : {"a": [1, 2]},"type":"x"}"#
        );
    }

    #[test]
    fn another_runs_id_and_unreadable_envelopes_are_kept_whole() {
        let other = r#"{"gm":1,"runId":"run_b","seq":1}"#;
        assert_eq!(lean(other, "run_a"), r#"{"runId":"run_b","seq":1}"#);
        let escaped = r#"{"runId":"run_\u0061","seq":1}"#;
        assert_eq!(
            lean(escaped, "run_a"),
            escaped,
            "an escaped id is not taken apart"
        );
        for bad in [
            "",
            "[1]",
            r#"{"gm":1"#,
            r#"{"gm":1,}"#,
            r#"{"gm":1} x"#,
            r#"{"a":"unterminated}"#,
            r#"{"a":{"b":[}"#,
            r#"{"gm":}"#,
        ] {
            assert_eq!(lean(bad, "run_a"), bad, "{bad:?} is copied as it is");
        }
        assert_eq!(lean("{}", "run_a"), "{}");
        let many: String = format!(
            "{{{}}}",
            (0..20)
                .map(|i| format!(r#""k{i}":{i}"#))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert_eq!(
            lean(&many, "run_a"),
            many,
            "more members than the scanner holds"
        );
    }
}
