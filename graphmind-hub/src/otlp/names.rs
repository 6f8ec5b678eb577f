//! Every span name part, attribute and event name the export writes, in one table: the GenAI
//! semantic conventions are still in development (the Rust semconv crate marks them
//! deprecated), so the names live here and nowhere else. `docs/otlp.md` documents the same
//! table (a test checks that every name below appears there).

/// `gen_ai.operation.name`: `chat`, `execute_tool` or `invoke_agent`.
pub const OPERATION: &str = "gen_ai.operation.name";
/// `gen_ai.provider.name`: the model step's provider (a `provider` extra, else inferred from
/// the `api` extra or the model's name; absent when unknown).
pub const PROVIDER: &str = "gen_ai.provider.name";
/// `gen_ai.request.model`: the model asked for (the input's `model`, else the one that answered).
pub const REQUEST_MODEL: &str = "gen_ai.request.model";
/// `gen_ai.response.model`: the model that answered (the `model` extra).
pub const RESPONSE_MODEL: &str = "gen_ai.response.model";
/// `gen_ai.response.id`: the provider's response id (the `responseId` extra).
pub const RESPONSE_ID: &str = "gen_ai.response.id";
/// `gen_ai.response.finish_reasons`: the provider's finish reason, as a one-element array.
pub const FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// `gen_ai.usage.input_tokens`.
pub const INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// `gen_ai.usage.output_tokens`.
pub const OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// `gen_ai.usage.cache_read.input_tokens` (usage `cacheReadTokens`).
pub const CACHE_READ_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
/// `gen_ai.usage.cache_creation.input_tokens` (usage `cacheWriteTokens`).
pub const CACHE_WRITE_TOKENS: &str = "gen_ai.usage.cache_creation.input_tokens";
/// `graphmind.usage.reasoning_tokens` (usage `reasoningTokens`; the conventions name no
/// reasoning count yet).
pub const REASONING_TOKENS: &str = "graphmind.usage.reasoning_tokens";
/// `gen_ai.tool.name`.
pub const TOOL_NAME: &str = "gen_ai.tool.name";
/// `gen_ai.tool.call.id`: the tool call's instance id (the model's tool-call id).
pub const TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
/// `gen_ai.agent.name`: the agent's (run's) name.
pub const AGENT_NAME: &str = "gen_ai.agent.name";
/// `gen_ai.conversation.id`: the run id, on the agent span.
pub const CONVERSATION_ID: &str = "gen_ai.conversation.id";
/// `gen_ai.input.messages`: a model step's input as JSON (content opt-in only).
pub const INPUT_MESSAGES: &str = "gen_ai.input.messages";
/// `gen_ai.output.messages`: a model step's output as JSON (content opt-in only).
pub const OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
/// `gen_ai.tool.call.arguments`: a tool call's input as JSON (content opt-in only).
pub const TOOL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
/// `gen_ai.tool.call.result`: a tool call's output as JSON (content opt-in only).
pub const TOOL_RESULT: &str = "gen_ai.tool.call.result";
/// `error.type`: the error's name, on a failed span.
pub const ERROR_TYPE: &str = "error.type";

/// `graphmind.run.id`: the run, on every span.
pub const RUN_ID: &str = "graphmind.run.id";
/// `graphmind.node.id`: the logical node (`tool:search`).
pub const NODE_ID: &str = "graphmind.node.id";
/// `graphmind.node.kind`: `agent`, `llm`, `tool`, `chain`, ….
pub const NODE_KIND: &str = "graphmind.node.kind";
/// `graphmind.instance.id`: the node execution.
pub const INSTANCE_ID: &str = "graphmind.instance.id";
/// `graphmind.status`: `ok`, `error` or `aborted` (absent: the node never finished).
pub const STATUS: &str = "graphmind.status";
/// `graphmind.unfinished`: `true` when the node never reported its end (ended at the run's end).
pub const UNFINISHED: &str = "graphmind.unfinished";
/// `graphmind.held_ms`: time spent held at gates (part of the span's duration).
pub const HELD_MS: &str = "graphmind.held_ms";
/// `graphmind.holds`: how many times the node was held (`exec.paused`).
pub const HOLDS: &str = "graphmind.holds";
/// `graphmind.actions`: the debugger actions that released its holds, in order.
pub const ACTIONS: &str = "graphmind.actions";
/// `graphmind.injected`: the output came from the debugger, not from the call.
pub const INJECTED: &str = "graphmind.injected";
/// `graphmind.recovered_from_error`: an inject replaced the call's error.
pub const RECOVERED: &str = "graphmind.recovered_from_error";
/// `graphmind.attempts`: how many times the call ran (retries).
pub const ATTEMPTS: &str = "graphmind.attempts";
/// `graphmind.edited`: the input was edited at a gate before the call ran.
pub const EDITED: &str = "graphmind.edited";
/// `graphmind.streamed`: the output was observed from a stream.
pub const STREAMED: &str = "graphmind.streamed";
/// `graphmind.api`: which API of the SDK made the call.
pub const API: &str = "graphmind.api";
/// `graphmind.provider_executed`: the provider ran the tool itself.
pub const PROVIDER_EXECUTED: &str = "graphmind.provider_executed";
/// `graphmind.incomplete`: the app announced events of the run lost.
pub const INCOMPLETE: &str = "graphmind.incomplete";
/// `graphmind.input`: a node's input as JSON, for nodes other than model steps and tools
/// (content opt-in only).
pub const INPUT: &str = "graphmind.input";
/// `graphmind.output`: a node's output as JSON, likewise.
pub const OUTPUT: &str = "graphmind.output";
/// `graphmind.pause.id` (event attribute).
pub const PAUSE_ID: &str = "graphmind.pause.id";
/// `graphmind.pause.point` (event attribute): `before`, `after`, `error`.
pub const PAUSE_POINT: &str = "graphmind.pause.point";
/// `graphmind.pause.reason` (event attribute): `breakpoint`, `error`, `step`, `loop`.
pub const PAUSE_REASON: &str = "graphmind.pause.reason";
/// `graphmind.action` (event attribute of `exec.resumed`): `continue`, `retry`, `inject`, `abort`.
pub const ACTION: &str = "graphmind.action";
/// `graphmind.reason` (event attribute of `exec.resumed`): the person's reason for a `reject`.
pub const REASON: &str = "graphmind.reason";
/// `graphmind.auto` (event attribute of `exec.resumed`): the client released it on its own.
pub const AUTO: &str = "graphmind.auto";

/// Span event: a gate held the node.
pub const EVENT_PAUSED: &str = "exec.paused";
/// Span event: the held gate was released.
pub const EVENT_RESUMED: &str = "exec.resumed";
/// Span event: the app refused a resume (the gate stayed held).
pub const EVENT_REFUSED: &str = "exec.refused";

/// `service.name` (resource): the app's name.
pub const SERVICE_NAME: &str = "service.name";
/// `telemetry.sdk.name` (resource): the graphmind client that recorded the run.
pub const SDK_NAME: &str = "telemetry.sdk.name";
/// `telemetry.sdk.version` (resource).
pub const SDK_VERSION: &str = "telemetry.sdk.version";
/// The instrumentation scope of every span.
pub const SCOPE: &str = "graphmind";

/// Every attribute and event name above, for the documentation check.
pub const ALL: &[&str] = &[
    OPERATION,
    PROVIDER,
    REQUEST_MODEL,
    RESPONSE_MODEL,
    RESPONSE_ID,
    FINISH_REASONS,
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    CACHE_READ_TOKENS,
    CACHE_WRITE_TOKENS,
    REASONING_TOKENS,
    TOOL_NAME,
    TOOL_CALL_ID,
    AGENT_NAME,
    CONVERSATION_ID,
    INPUT_MESSAGES,
    OUTPUT_MESSAGES,
    TOOL_ARGUMENTS,
    TOOL_RESULT,
    ERROR_TYPE,
    RUN_ID,
    NODE_ID,
    NODE_KIND,
    INSTANCE_ID,
    STATUS,
    UNFINISHED,
    HELD_MS,
    HOLDS,
    ACTIONS,
    INJECTED,
    RECOVERED,
    ATTEMPTS,
    EDITED,
    STREAMED,
    API,
    PROVIDER_EXECUTED,
    INCOMPLETE,
    INPUT,
    OUTPUT,
    PAUSE_ID,
    PAUSE_POINT,
    PAUSE_REASON,
    ACTION,
    AUTO,
    REASON,
    EVENT_PAUSED,
    EVENT_RESUMED,
    EVENT_REFUSED,
    SERVICE_NAME,
    SDK_NAME,
    SDK_VERSION,
];

#[cfg(test)]
mod tests {
    /// The table in `docs/otlp.md` names every attribute and event the code writes.
    #[test]
    fn every_name_is_documented() {
        let doc = include_str!("../../../docs/otlp.md");
        for name in super::ALL {
            assert!(
                doc.contains(&format!("| `{name}` |")),
                "docs/otlp.md does not document {name}"
            );
        }
    }
}
