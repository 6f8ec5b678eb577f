//! Holds decided by a tool's MCP annotations: which tools hold before they run while a
//! debugger is attached, without a breakpoint, and why.

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value};

/// Turns the annotation holds off: `GRAPHMIND_MCP_HOLD_DESTRUCTIVE=0`.
pub const HOLD_DESTRUCTIVE_ENV: &str = "GRAPHMIND_MCP_HOLD_DESTRUCTIVE";
/// Makes read-only tools hold too: `GRAPHMIND_MCP_HOLD_READ_ONLY=1`.
pub const HOLD_READ_ONLY_ENV: &str = "GRAPHMIND_MCP_HOLD_READ_ONLY";

/// Which annotated tools hold before they run while a debugger is attached, whatever the
/// breakpoints say. By default a tool its server marks `destructiveHint: true` holds, and a
/// `readOnlyHint: true` tool never holds by default; a tool with neither is not held.
/// Breakpoints and step mode hold any tool as ever.
///
/// ```
/// let config = graphmind_rmcp::Config::from_env().hold_destructive(false);
/// assert!(!config.holds_destructive());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    destructive: bool,
    read_only: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            destructive: true,
            read_only: false,
        }
    }
}

impl Config {
    /// The defaults, then the environment: [`HOLD_DESTRUCTIVE_ENV`] (`0`/`false`/`off` turns
    /// the destructive holds off) and [`HOLD_READ_ONLY_ENV`] (`1`/`true`/`on` holds
    /// read-only tools too).
    #[must_use]
    pub fn from_env() -> Self {
        let flag = |name: &str| std::env::var(name).ok().and_then(|v| parse_flag(&v));
        let base = Self::default();
        Self {
            destructive: flag(HOLD_DESTRUCTIVE_ENV).unwrap_or(base.destructive),
            read_only: flag(HOLD_READ_ONLY_ENV).unwrap_or(base.read_only),
        }
    }

    /// Whether a `destructiveHint: true` tool holds before it runs (yes by default).
    #[must_use]
    pub fn hold_destructive(mut self, yes: bool) -> Self {
        self.destructive = yes;
        self
    }

    /// Whether a `readOnlyHint: true` tool holds before it runs (no by default).
    #[must_use]
    pub fn hold_read_only(mut self, yes: bool) -> Self {
        self.read_only = yes;
        self
    }

    /// Whether destructive tools hold.
    #[must_use]
    pub fn holds_destructive(&self) -> bool {
        self.destructive
    }

    /// Whether read-only tools hold.
    #[must_use]
    pub fn holds_read_only(&self) -> bool {
        self.read_only
    }

    /// Whether this config holds any tool at all (else the tool list is never fetched for
    /// it).
    pub(crate) fn holds_any(&self) -> bool {
        self.destructive || self.read_only
    }

    /// Why `tool` of `server` holds before it runs, if it does.
    pub(crate) fn hold_reason(&self, server: &str, tool: &Tool) -> Option<String> {
        let a = tool.annotations.as_ref()?;
        let name = &tool.name;
        if a.read_only_hint == Some(true) {
            return self.read_only.then(|| {
                format!(
                    "held before it runs: MCP server `{server}` marks tool `{name}` read-only \
                     (readOnlyHint: true) and read-only tools hold (GRAPHMIND_MCP_HOLD_READ_ONLY)"
                )
            });
        }
        (self.destructive && a.destructive_hint == Some(true)).then(|| {
            format!(
                "held before it runs: MCP server `{server}` marks tool `{name}` destructive \
                 (destructiveHint: true)"
            )
        })
    }
}

fn parse_flag(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Some(true),
        "0" | "false" | "off" | "no" => Some(false),
        _ => None,
    }
}

/// The annotations of a tool as the graph hint shows them (the MCP spelling).
pub(crate) fn annotations_value(a: &ToolAnnotations) -> Value {
    let mut m = Map::new();
    let mut put = |key: &str, v: Option<bool>| {
        if let Some(v) = v {
            m.insert(key.into(), Value::Bool(v));
        }
    };
    put("readOnlyHint", a.read_only_hint);
    put("destructiveHint", a.destructive_hint);
    put("idempotentHint", a.idempotent_hint);
    put("openWorldHint", a.open_world_hint);
    if let Some(t) = &a.title {
        m.insert("title".into(), Value::String(t.clone()));
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(read_only: Option<bool>, destructive: Option<bool>) -> Tool {
        let mut a = ToolAnnotations::default();
        a.read_only_hint = read_only;
        a.destructive_hint = destructive;
        let mut t = Tool::new("rm", "removes", Map::new());
        t.annotations = Some(a);
        t
    }

    #[test]
    fn destructive_holds_by_default_and_says_why() {
        let why = Config::default()
            .hold_reason("files", &tool(None, Some(true)))
            .expect("holds");
        assert!(
            why.contains("`files`") && why.contains("destructiveHint: true"),
            "{why}"
        );
    }

    #[test]
    fn read_only_never_holds_by_default_even_if_marked_destructive() {
        assert_eq!(
            Config::default().hold_reason("s", &tool(Some(true), Some(true))),
            None
        );
        assert!(
            Config::default()
                .hold_read_only(true)
                .hold_reason("s", &tool(Some(true), None))
                .is_some()
        );
    }

    #[test]
    fn unannotated_and_switched_off_do_not_hold() {
        let mut t = tool(None, None);
        t.annotations = None;
        assert_eq!(Config::default().hold_reason("s", &t), None);
        let off = Config::default().hold_destructive(false);
        assert_eq!(off.hold_reason("s", &tool(None, Some(true))), None);
    }

    #[test]
    fn flags_parse_both_ways() {
        assert_eq!(parse_flag("0"), Some(false));
        assert_eq!(parse_flag(" On "), Some(true));
        assert_eq!(parse_flag("maybe"), None);
    }
}
