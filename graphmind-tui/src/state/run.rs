//! One subscribed run: its executions in call order, as a tree, with their token tails.

use std::collections::HashMap;

use graphmind_protocol::{DeltaKind, Envelope, ErrorInfo, Message, NodeKind, Status, TokenUsage};
use serde_json::Value;

/// Bytes of streamed text kept per kind and execution (the tail; older text is dropped).
pub const TOKEN_TAIL_BYTES: usize = 16 * 1024;

/// Where an execution is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecStatus {
    /// Started, not finished.
    Running,
    /// Finished ok.
    Ok,
    /// Failed.
    Error,
    /// Aborted from the debugger.
    Aborted,
}

/// Streamed text of a model step, kept apart by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Answer text.
    pub text: String,
    /// Reasoning text.
    pub reasoning: String,
    /// Tool-call arguments.
    pub tool_args: String,
}

impl Tokens {
    fn push(&mut self, kind: DeltaKind, v: &str) {
        let s = match kind {
            DeltaKind::Text => &mut self.text,
            DeltaKind::Reasoning => &mut self.reasoning,
            DeltaKind::ToolArgs => &mut self.tool_args,
        };
        s.push_str(v);
        if s.len() > TOKEN_TAIL_BYTES {
            let mut cut = s.len() - TOKEN_TAIL_BYTES;
            while !s.is_char_boundary(cut) {
                cut += 1;
            }
            s.drain(..cut);
        }
    }

    /// Whether nothing streamed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.reasoning.is_empty() && self.tool_args.is_empty()
    }
}

/// One execution of a node.
#[derive(Debug, Clone, PartialEq)]
pub struct Exec {
    /// Its execution id.
    pub instance_id: String,
    /// The node.
    pub node_id: String,
    /// Kind.
    pub kind: NodeKind,
    /// Name.
    pub name: String,
    /// Depth in the tree (0 = top).
    pub depth: usize,
    /// Where it is.
    pub status: ExecStatus,
    /// Epoch ms it started.
    pub started_ts: u64,
    /// Its duration, once finished.
    pub duration_ms: Option<f64>,
    /// Time spent held at gates, once finished.
    pub held_ms: Option<f64>,
    /// Input.
    pub input: Option<Value>,
    /// Output.
    pub output: Option<Value>,
    /// Error.
    pub error: Option<ErrorInfo>,
    /// Token usage of a model step.
    pub usage: Option<TokenUsage>,
    /// Which execution of its node this is (1-based): ×N when above 1.
    pub nth: u32,
    /// It ran while a sibling (same parent) ran.
    pub parallel: bool,
    /// Streamed text.
    pub tokens: Tokens,
    parent_node: Option<String>,
}

/// A subscribed run's executions.
#[derive(Debug, Clone, Default)]
pub struct RunData {
    /// The run.
    pub run_id: String,
    /// Executions in call order.
    pub execs: Vec<Exec>,
    /// The replay of stored events is complete.
    pub replayed: bool,
    /// Highest seq applied.
    pub last_seq: u64,
    /// Events applied.
    pub events: u64,
    by_instance: HashMap<String, usize>,
    /// The latest execution of each node.
    latest: HashMap<String, usize>,
    count: HashMap<String, u32>,
    /// Executions still running (the only ones a new call can run beside).
    running: Vec<usize>,
}

impl RunData {
    /// An empty run.
    #[must_use]
    pub fn new(run_id: &str) -> Self {
        Self {
            run_id: run_id.to_owned(),
            ..Self::default()
        }
    }

    fn exec_of(&self, node_id: &str, instance_id: Option<&str>) -> Option<usize> {
        instance_id
            .and_then(|i| self.by_instance.get(i).copied())
            .or_else(|| self.latest.get(node_id).copied())
    }

    /// Applies one event of the run.
    pub fn apply(&mut self, e: Envelope) {
        self.events += 1;
        self.last_seq = self.last_seq.max(e.seq);
        match e.message {
            Message::NodeStarted(s) => {
                if self.by_instance.contains_key(&s.instance_id) {
                    return;
                }
                let parent = s
                    .parent_id
                    .as_deref()
                    .and_then(|p| self.latest.get(p).copied());
                let depth = parent.map_or(0, |p| self.execs[p].depth + 1);
                let n = self.count.entry(s.node_id.clone()).or_insert(0);
                *n += 1;
                let nth = *n;
                let mut parallel = false;
                for &j in &self.running {
                    let x = &mut self.execs[j];
                    if x.parent_node == s.parent_id && x.depth == depth {
                        x.parallel = true;
                        parallel = true;
                    }
                }
                let i = self.execs.len();
                self.execs.push(Exec {
                    instance_id: s.instance_id.clone(),
                    node_id: s.node_id.clone(),
                    kind: s.kind,
                    name: s.name,
                    depth,
                    status: ExecStatus::Running,
                    started_ts: e.ts,
                    duration_ms: None,
                    held_ms: None,
                    input: s.input,
                    output: None,
                    error: None,
                    usage: None,
                    nth,
                    parallel,
                    tokens: Tokens::default(),
                    parent_node: s.parent_id,
                });
                self.running.push(i);
                self.by_instance.insert(s.instance_id, i);
                self.latest.insert(s.node_id, i);
            }
            Message::NodeToken(t) => {
                if let Some(i) = self.latest.get(&t.node_id).copied() {
                    for d in &t.deltas {
                        self.execs[i].tokens.push(d.t, &d.v);
                    }
                }
            }
            Message::NodeFinished(f) => {
                if let Some(i) = self.exec_of(&f.node_id, f.instance_id.as_deref()) {
                    self.running.retain(|j| *j != i);
                    let x = &mut self.execs[i];
                    x.status = match f.status {
                        Status::Ok => ExecStatus::Ok,
                        Status::Error => ExecStatus::Error,
                        Status::Aborted => ExecStatus::Aborted,
                    };
                    x.duration_ms = Some(f.duration_ms);
                    x.held_ms = f.held_ms.or(x.held_ms);
                    x.output = f.output;
                    x.usage = f.usage;
                }
            }
            Message::NodeError(er) => {
                if let Some(i) = self.exec_of(&er.node_id, er.instance_id.as_deref()) {
                    self.running.retain(|j| *j != i);
                    let x = &mut self.execs[i];
                    x.status = ExecStatus::Error;
                    x.held_ms = er.held_ms.or(x.held_ms);
                    if x.duration_ms.is_none() {
                        x.duration_ms = Some(e.ts.saturating_sub(x.started_ts) as f64);
                    }
                    x.error = Some(er.error);
                }
            }
            _ => {}
        }
    }

    /// The execution `instance_id`.
    #[must_use]
    pub fn exec(&self, instance_id: &str) -> Option<&Exec> {
        self.by_instance.get(instance_id).map(|i| &self.execs[*i])
    }

    /// The latest execution of `node_id`.
    #[must_use]
    pub fn latest_of(&self, node_id: &str) -> Option<&Exec> {
        self.latest.get(node_id).map(|i| &self.execs[*i])
    }

    /// The newest ok output `node_id` returned in this run (an inject's prefill).
    #[must_use]
    pub fn last_ok_output(&self, node_id: &str) -> Option<&Value> {
        self.execs
            .iter()
            .rev()
            .filter(|x| x.node_id == node_id && x.status == ExecStatus::Ok)
            .find_map(|x| x.output.as_ref().filter(|o| !o.is_null()))
    }
}
