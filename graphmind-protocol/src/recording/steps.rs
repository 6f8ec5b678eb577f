//! A recorded run: the node executions of one run (tools and model steps, in the order they
//! started), each with its input, its output or status, and the typed chunks of a streamed
//! step. Read from the NDJSON `graphmind record` writes (one envelope per line); lines that
//! are not envelopes of interest are skipped.

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use super::line::Line;

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
        let mut open = OpenCalls::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let env: Line = serde_json::from_str(line)
                .map_err(|e| BadRecording(format!("line {}: not JSON: {e}", n + 1)))?;
            let Some(kind) = env.kind.as_deref() else {
                continue;
            };
            let run = env.run_id.as_deref().unwrap_or("");
            match run_id {
                Some(want) if run != want => continue,
                _ if !rec.run_id.is_empty() && run != rec.run_id => continue,
                _ => {}
            }
            let p = env.payload;
            let text = |t: Option<String>| t.unwrap_or_default();
            match kind {
                "node.started" => {
                    if p.kind.as_deref() == Some("agent") {
                        continue;
                    }
                    if rec.run_id.is_empty() {
                        rec.run_id = run.to_owned();
                    }
                    let index = rec.steps.len() + 1;
                    let node_id = text(p.node_id);
                    open.push(text(p.instance_id), node_id.clone(), rec.steps.len());
                    rec.steps.push(Step {
                        index,
                        node_id,
                        name: text(p.name),
                        input: p.input,
                        status: String::new(),
                        output: None,
                        chunks: None,
                        streaming: false,
                        error: None,
                    });
                }
                "node.finished" => {
                    let key = (text(p.instance_id), text(p.node_id));
                    let Some(at) = open.finish(&key) else {
                        continue;
                    };
                    let step = &mut rec.steps[at];
                    step.status = text(p.status);
                    step.output = p.output;
                    step.streaming = p.streaming == Some(true);
                    step.chunks = match p.chunks {
                        Some(Value::Array(a)) => Some(a),
                        _ => None,
                    };
                }
                "node.error" => {
                    let key = (text(p.instance_id), text(p.node_id));
                    let error = p
                        .error
                        .and_then(|e| serde_json::from_value::<crate::ErrorInfo>(e).ok());
                    if let (Some(at), Some(error)) = (open.first(&key), error) {
                        rec.steps[at].error = Some(error);
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

/// The executions started and not yet finished, by (instance id, node id): the steps (by
/// position) in start order. A `node.finished` or `node.error` belongs to the earliest open
/// execution with its instance and node, found in O(1) (a list scanned per event made a
/// recording of many parallel steps quadratic to read).
#[derive(Default)]
struct OpenCalls(HashMap<(String, String), VecDeque<usize>>);

impl OpenCalls {
    fn push(&mut self, instance: String, node: String, at: usize) {
        self.0.entry((instance, node)).or_default().push_back(at);
    }

    /// The earliest open execution of `key`, closed.
    fn finish(&mut self, key: &(String, String)) -> Option<usize> {
        let queue = self.0.get_mut(key)?;
        let at = queue.pop_front();
        if queue.is_empty() {
            self.0.remove(key);
        }
        at
    }

    /// The earliest open execution of `key`.
    fn first(&self, key: &(String, String)) -> Option<usize> {
        self.0.get(key).and_then(|q| q.front().copied())
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

/// Reading recordings of many parallel steps (issue 34): linear, whatever order the steps
/// finish in.
#[cfg(test)]
mod parallel_tests {
    use super::*;

    /// `n` calls of one tool started in parallel, then finished in reverse start order.
    fn reversed_parallel(n: usize) -> String {
        let mut text = String::with_capacity(n * 220);
        for i in 0..n {
            text.push_str(&format!(
                r#"{{"runId":"run_p","type":"node.started","payload":{{"nodeId":"tool:fetch","kind":"tool","name":"fetch","instanceId":"c{i}","input":{{"page":{i}}}}}}}"#
            ));
            text.push('\n');
        }
        for i in (0..n).rev() {
            text.push_str(&format!(
                r#"{{"runId":"run_p","type":"node.finished","payload":{{"nodeId":"tool:fetch","instanceId":"c{i}","status":"ok","output":{{"page":{i}}}}}}}"#
            ));
            text.push('\n');
        }
        text
    }

    #[test]
    fn a_recording_of_200k_parallel_steps_finished_in_reverse_is_read_in_bounded_time() {
        let n = 200_000;
        let text = reversed_parallel(n);
        let start = std::time::Instant::now();
        let rec = Recording::parse(&text, None).expect("parses");
        let took = start.elapsed();
        assert_eq!(rec.steps.len(), n);
        for (i, s) in rec.steps.iter().enumerate() {
            assert_eq!(s.input, Some(serde_json::json!({"page": i})));
            assert_eq!(
                s.output,
                s.input,
                "step {} got another call's output",
                i + 1
            );
            assert_eq!(s.status, "ok");
        }
        // Measured at ~4 s in a debug test build on a loaded 2-core machine (a release build
        // reads it in under a second); the list scans this replaced took 115 s in a release
        // build.
        eprintln!("200k reversed parallel steps read in {took:?}");
        assert!(
            took < std::time::Duration::from_secs(20),
            "reading 200k parallel steps took {took:?} (quadratic?)"
        );
    }

    #[test]
    fn an_end_pairs_with_the_earliest_open_call_of_its_instance_and_node() {
        // Two open calls share instance `c1` and node `tool:a` (and one of `tool:b` shares the
        // instance): each end closes the earliest open one of its own node, and an error goes
        // to the earliest still open.
        let text = r#"
{"runId":"r","type":"node.started","payload":{"nodeId":"tool:a","kind":"tool","name":"a","instanceId":"c1","input":1}}
{"runId":"r","type":"node.started","payload":{"nodeId":"tool:b","kind":"tool","name":"b","instanceId":"c1","input":2}}
{"runId":"r","type":"node.started","payload":{"nodeId":"tool:a","kind":"tool","name":"a","instanceId":"c1","input":3}}
{"runId":"r","type":"node.finished","payload":{"nodeId":"tool:a","instanceId":"c1","status":"ok","output":"first"}}
{"runId":"r","type":"node.error","payload":{"nodeId":"tool:a","instanceId":"c1","error":{"name":"E","message":"second's"}}}
{"runId":"r","type":"node.finished","payload":{"nodeId":"tool:a","instanceId":"c1","status":"error"}}
{"runId":"r","type":"node.error","payload":{"nodeId":"tool:a","instanceId":"c1","error":{"name":"E","message":"after every end: dropped"}}}
{"runId":"r","type":"node.finished","payload":{"nodeId":"tool:b","instanceId":"c1","status":"ok","output":"b","recordedChunks":[1,2]}}
{"runId":"r","type":"node.finished","payload":{"nodeId":"tool:b","instanceId":"c1","status":"ok","output":"b again: no open call"}}
"#;
        let rec = Recording::parse(text, None).expect("parses");
        let got: Vec<(&str, Option<Value>, Option<&str>)> = rec
            .steps
            .iter()
            .map(|s| {
                (
                    s.status.as_str(),
                    s.output.clone(),
                    s.error.as_ref().map(|e| e.message.as_str()),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("ok", Some(serde_json::json!("first")), None),
                ("ok", Some(serde_json::json!("b")), None),
                ("error", None, Some("second's")),
            ]
        );
        assert_eq!(rec.steps[1].chunks, Some(vec![1.into(), 2.into()]));
    }
}
