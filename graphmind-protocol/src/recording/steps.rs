//! A recorded run: the node executions of one run (tools and model steps, in the order they
//! started), each with its input, its output or status, and the typed chunks of a streamed
//! step. Read from the NDJSON `graphmind record` writes (one envelope per line); lines that
//! are not envelopes of interest are skipped.

use serde_json::Value;

/// The key of a streamed step's typed chunks on its `node.finished` (the runtime writes them
/// when the step's chunk codec records chunks).
pub const CHUNKS_KEY: &str = "recordedChunks";

/// One recorded node execution.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// 1-based, in the order the executions started (the agent node not counted).
    pub index: usize,
    /// Node id (`tool:lookup_order`, `llm:step`).
    pub node_id: String,
    /// Node name.
    pub name: String,
    /// The recorded input.
    pub input: Option<Value>,
    /// `ok`, `error`, `aborted`, or empty when the execution never finished.
    pub status: String,
    /// The recorded output.
    pub output: Option<Value>,
    /// The typed chunks of a streamed step, when its codec records them.
    pub chunks: Option<Vec<Value>>,
    /// Whether the execution was streamed.
    pub streaming: bool,
    /// The last `node.error` of the execution (a retried call reports one per attempt).
    pub error: Option<crate::ErrorInfo>,
}

/// One recorded run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recording {
    /// The recorded run's id.
    pub run_id: String,
    /// Its node executions.
    pub steps: Vec<Step>,
}

/// Why a recording could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRecording(pub String);

impl std::fmt::Display for BadRecording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadRecording {}

impl Recording {
    /// Reads a recording from NDJSON text: the first run that has node executions (or the
    /// run named `run_id`).
    ///
    /// # Errors
    /// A line that is not JSON, or no node execution at all.
    pub fn parse(text: &str, run_id: Option<&str>) -> Result<Self, BadRecording> {
        let mut rec = Recording::default();
        let mut open: Vec<(String, usize)> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let env: Value = serde_json::from_str(line)
                .map_err(|e| BadRecording(format!("line {}: not JSON: {e}", n + 1)))?;
            let Some(kind) = env.get("type").and_then(Value::as_str) else {
                continue;
            };
            let run = env.get("runId").and_then(Value::as_str).unwrap_or("");
            match run_id {
                Some(want) if run != want => continue,
                _ if !rec.run_id.is_empty() && run != rec.run_id => continue,
                _ => {}
            }
            let p = env.get("payload").cloned().unwrap_or(Value::Null);
            let text_of = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
            match kind {
                "node.started" => {
                    let k = text_of("kind");
                    if k == "agent" {
                        continue;
                    }
                    if rec.run_id.is_empty() {
                        rec.run_id = run.to_owned();
                    }
                    let index = rec.steps.len() + 1;
                    open.push((text_of("instanceId"), rec.steps.len()));
                    rec.steps.push(Step {
                        index,
                        node_id: text_of("nodeId"),
                        name: text_of("name"),
                        input: p.get("input").cloned(),
                        status: String::new(),
                        output: None,
                        chunks: None,
                        streaming: false,
                        error: None,
                    });
                }
                "node.finished" => {
                    let instance = text_of("instanceId");
                    let node = text_of("nodeId");
                    let Some(pos) = open
                        .iter()
                        .position(|(i, s)| *i == instance && rec.steps[*s].node_id == node)
                    else {
                        continue;
                    };
                    let (_, at) = open.remove(pos);
                    let step = &mut rec.steps[at];
                    step.status = text_of("status");
                    step.output = p.get("output").cloned();
                    step.streaming = p.get("streaming").and_then(Value::as_bool) == Some(true);
                    step.chunks = p
                        .get(CHUNKS_KEY)
                        .and_then(Value::as_array)
                        .map(|a| a.to_vec());
                }
                "node.error" => {
                    let instance = text_of("instanceId");
                    let node = text_of("nodeId");
                    let error = p
                        .get("error")
                        .and_then(|e| serde_json::from_value::<crate::ErrorInfo>(e.clone()).ok());
                    if let Some(&(_, at)) = open
                        .iter()
                        .find(|(i, s)| *i == instance && rec.steps[*s].node_id == node)
                        && error.is_some()
                    {
                        rec.steps[at].error = error;
                    }
                }
                _ => {}
            }
        }
        if rec.steps.is_empty() {
            return Err(BadRecording(
                "no node executions in the recording (is it the NDJSON `graphmind record` writes?)"
                    .into(),
            ));
        }
        Ok(rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_read_in_start_order_with_their_outputs() {
        let text = r#"
{"gm":1,"seq":1,"ts":1,"runId":"run_a","type":"run.started","payload":{"app":"x","sdk":{"name":"s","version":"1"}}}
{"gm":1,"seq":2,"ts":1,"runId":"run_a","type":"node.started","payload":{"nodeId":"agent:t","kind":"agent","name":"t","instanceId":"run_a"}}
{"gm":1,"seq":3,"ts":1,"runId":"run_a","type":"node.started","payload":{"nodeId":"tool:a","kind":"tool","name":"a","instanceId":"c1","input":{"x":1}}}
{"gm":1,"seq":4,"ts":1,"runId":"run_a","type":"node.started","payload":{"nodeId":"tool:b","kind":"tool","name":"b","instanceId":"c2","input":{"y":2}}}
{"gm":1,"seq":5,"ts":1,"runId":"run_a","type":"node.finished","payload":{"nodeId":"tool:b","instanceId":"c2","durationMs":1,"status":"ok","output":7}}
{"gm":1,"seq":6,"ts":1,"runId":"run_a","type":"node.error","payload":{"nodeId":"tool:a","instanceId":"c1","error":{"name":"LookupError","message":"first"}}}
{"gm":1,"seq":7,"ts":1,"runId":"run_a","type":"node.error","payload":{"nodeId":"tool:a","instanceId":"c1","error":{"name":"LookupError","message":"no order ORD-1"}}}
{"gm":1,"seq":8,"ts":1,"runId":"run_a","type":"node.finished","payload":{"nodeId":"tool:a","instanceId":"c1","durationMs":1,"status":"error"}}
"#;
        let rec = Recording::parse(text, None).expect("parses");
        assert_eq!(rec.run_id, "run_a");
        assert_eq!(rec.steps.len(), 2);
        assert_eq!(rec.steps[0].node_id, "tool:a");
        assert_eq!(rec.steps[0].status, "error");
        let error = rec.steps[0]
            .error
            .as_ref()
            .expect("the step's last node.error");
        assert_eq!(
            (error.name.as_str(), error.message.as_str()),
            ("LookupError", "no order ORD-1")
        );
        assert_eq!(rec.steps[1].error, None);
        assert_eq!(rec.steps[1].output, Some(serde_json::json!(7)));
        assert_eq!(rec.steps[1].index, 2);
        assert!(Recording::parse("{\"type\":\"run.started\"}", None).is_err());
        assert!(Recording::parse("not json", None).is_err());
    }
}
