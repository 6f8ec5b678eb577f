//! The static records of instrumented functions (one per `#[tool]` / `#[model_step]`).

/// The static record of one `#[graphmind::tool]` function.
#[derive(Debug)]
pub struct ToolSite {
    /// Tool name (fn name, or `name = "…"`).
    pub name: &'static str,
    /// `tool:<name>`.
    pub node_id: &'static str,
    /// Whether the body may be re-run (`false` with `retry = false` or a `&mut` argument).
    pub retry: bool,
    /// The parameter whose value is the model's tool-call id (`call_id = <arg>`); the
    /// runtime reads it from the captured input (a non-empty string becomes the instanceId).
    pub call_id: Option<&'static str>,
}

/// The static record of one `#[graphmind::model_step]` function.
#[derive(Debug)]
pub struct StepSite {
    /// The function's name (informational).
    pub name: &'static str,
    /// `tools = [a, b]` from the attribute: tool names added to the graph hint.
    pub tools: &'static [&'static str],
    /// Whether the body may be re-run on retry.
    pub retry: bool,
}
