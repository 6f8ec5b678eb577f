//! What an inject at a held gate should look like: the shape of an output the same node
//! returned before, its values blanked, so a person (or a script) starts from the fields and
//! types the app will accept instead of a `null` it would refuse.

use std::time::Duration;

use serde_json::{Value, json};

use crate::Hub;

/// Runs searched, newest first, for a recorded output of the held node (after its own run).
pub const EXAMPLE_RUNS: usize = 5;

/// `s` percent-encoded for a URL path segment or query value.
#[must_use]
pub fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The shape of an output `node` returned before: in `run`, else in one of the
/// [`EXAMPLE_RUNS`] newest other runs; `None` when none is stored (or the hub does not answer).
#[must_use]
pub fn output_example(h: &Hub, run: &str, node: &str, timeout: Duration) -> Option<Value> {
    let mut runs = vec![run.to_owned()];
    if let Ok(a) = h.get("/api/runs", timeout)
        && a.status == 200
    {
        let listed = a.json();
        let others = listed
            .get("runs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| ["runId", "id"].iter().find_map(|k| r.get(*k)?.as_str()))
            .filter(|id| *id != run)
            .take(EXAMPLE_RUNS)
            .map(str::to_owned);
        runs.extend(others);
    }
    runs.iter()
        .find_map(|r| recorded_output(h, r, node, timeout))
        .map(|v| skeleton(&v))
}

/// The last non-null output `node` finished with in `run` (first page of its events).
fn recorded_output(h: &Hub, run: &str, node: &str, timeout: Duration) -> Option<Value> {
    let a = h
        .get(
            &format!("/api/runs/{}/events?limit=10000", enc(run)),
            timeout,
        )
        .ok()?;
    if a.status != 200 {
        return None;
    }
    let page = a.json();
    page.get("events")?
        .as_array()?
        .iter()
        .rev()
        .filter(|e| e["type"] == "node.finished" && e["payload"]["nodeId"] == node)
        .find_map(|e| e["payload"].get("output").filter(|o| !o.is_null()).cloned())
}

/// `v` with its values blanked, keeping field names, types and nesting (an array keeps the
/// shape of its first item).
#[must_use]
pub fn skeleton(v: &Value) -> Value {
    match v {
        Value::String(_) => Value::String(String::new()),
        Value::Number(n) if n.is_f64() => json!(0.0),
        Value::Number(_) => json!(0),
        Value::Bool(_) => Value::Bool(false),
        Value::Array(items) => Value::Array(items.first().map(skeleton).into_iter().collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), skeleton(v)))
                .collect(),
        ),
        Value::Null => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skeleton_keeps_names_types_and_nesting_and_blanks_values() {
        let v = json!({"order_id": "ORD-1", "cents": 4999, "rate": 0.5, "ok": true,
                       "items": [{"sku": "A"}, {"sku": "B"}], "note": null});
        assert_eq!(
            skeleton(&v),
            json!({"order_id": "", "cents": 0, "rate": 0.0, "ok": false,
                   "items": [{"sku": ""}], "note": null})
        );
    }

    #[test]
    fn enc_escapes_what_a_path_segment_cannot_hold() {
        assert_eq!(enc("run_1.a-b~"), "run_1.a-b~");
        assert_eq!(enc("a/b c"), "a%2Fb%20c");
    }
}
