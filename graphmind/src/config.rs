//! [`Config`]: how a session is set up. Builder-style; every setting has a default.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::env;

/// Called with each warning the runtime prints (at most once per kind and session).
pub type WarnHook = Arc<dyn Fn(&str) + Send + Sync>;

/// How a [`Session`](crate::Session) behaves. Start from [`Config::new`] (or
/// [`Config::from_env`]) and chain the setters:
///
/// ```
/// use std::time::Duration;
///
/// let config = graphmind::Config::new("support-agent")
///     .url("ws://127.0.0.1:4747/ingest")
///     .meta("team", "billing")
///     .wait_for_attach(Duration::from_millis(500))
///     .pause_timeout(Duration::from_secs(600));
/// assert_eq!(config.app(), "support-agent");
/// ```
///
/// The environment is read when the session is built: `GRAPHMIND_DISABLED=1` turns it off
/// whatever the config says; otherwise [`Config::enabled`] applies; otherwise a production
/// environment (the first set of `GRAPHMIND_ENV`, `ENVIRONMENT`, `APP_ENV`, `RUST_ENV`, `ENV`,
/// `NODE_ENV` equal to `production` or `prod`) turns it off unless `GRAPHMIND=1`.
/// `GRAPHMIND_URL` names the debugger unless [`Config::url`] was set. `GRAPHMIND_TRUST_HUB=1`
/// lets any debugger control the app (see [`Config::trust_hub`]).
#[derive(Clone)]
pub struct Config {
    pub(crate) app: String,
    pub(crate) url: Option<String>,
    pub(crate) enabled: Option<bool>,
    pub(crate) meta: Map<String, Value>,
    pub(crate) sdk_name: String,
    pub(crate) sdk_version: String,
    pub(crate) token_interval: Duration,
    pub(crate) wait_for_attach: Option<Duration>,
    pub(crate) pause_timeout: Option<Duration>,
    pub(crate) ring_events: usize,
    pub(crate) ring_bytes: usize,
    pub(crate) connect_timeout: Duration,
    pub(crate) handshake_timeout: Duration,
    pub(crate) retry_interval: Duration,
    pub(crate) ping_interval: Duration,
    pub(crate) pong_timeout: Duration,
    pub(crate) env: Option<Arc<HashMap<String, String>>>,
    pub(crate) warn: Option<WarnHook>,
    pub(crate) hide: Hide,
    pub(crate) on_loop: OnLoop,
    pub(crate) loop_threshold: u32,
    pub(crate) loop_allow: Vec<String>,
    pub(crate) trust_hub: TrustHub,
    pub(crate) hub_home: Option<PathBuf>,
}

/// Which debugger may control the app (see [`Config::trust_hub`]). Whatever the choice, the
/// app reports to any debugger it attaches to; this decides whether that debugger's
/// breakpoints, step mode, inject, retry, edited input and abort are applied.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum TrustHub {
    /// The default: only a `graphmind serve` hub of this user on a loopback address. The hub
    /// writes a per-start secret into its run file (`<home>/run/serve-<port>.json`, mode
    /// 0600) and answers the nonce of each `hello` with an HMAC of it under that secret; the
    /// app reads the file for the URL's port and checks the answer. A hub that cannot prove
    /// itself (another GraphMind hub, a remote one, a process squatting on the port) is only
    /// reported to.
    #[default]
    SameUser,
    /// A hub that proves it knows this secret, on any address (for a hub whose run file the
    /// app cannot read, e.g. behind a relay or in another container).
    Secret(String),
    /// Any hub that answers the handshake, as before hub authentication existed
    /// (`GRAPHMIND_TRUST_HUB=1` does the same).
    Any,
}

impl fmt::Debug for TrustHub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SameUser => f.write_str("SameUser"),
            Self::Secret(_) => f.write_str("Secret(…)"),
            Self::Any => f.write_str("Any"),
        }
    }
}

/// What the loop guard does when a tool is called with the same input several times in a
/// row within a run (see [`Config::on_loop`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnLoop {
    /// Hold the call at its `before` gate (`exec.paused` with `reason: "loop"`), as a
    /// breakpoint would; only while a debugger is attached. The default.
    Pause,
    /// Print a warning (once per streak) and run on.
    Warn,
    /// Do nothing.
    Off,
}

/// The loop guard as resolved from the config and the environment.
#[cfg(feature = "enabled")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoopGuard {
    pub(crate) on: OnLoop,
    pub(crate) threshold: u32,
    pub(crate) allow: Vec<String>,
}

#[cfg(feature = "enabled")]
impl LoopGuard {
    /// A guard that never fires.
    pub(crate) const OFF: Self = Self {
        on: OnLoop::Off,
        threshold: u32::MAX,
        allow: Vec::new(),
    };
}

/// Default number of identical back-to-back tool calls that counts as a loop.
pub const LOOP_THRESHOLD: u32 = 3;

/// Which redaction switches are on (see [`Config::hide_inputs`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Hide {
    pub(crate) inputs: bool,
    pub(crate) outputs: bool,
    pub(crate) tool_args: bool,
    pub(crate) tool_results: bool,
}

/// Whether an environment value turns a switch on (`1` or `true`, any case).
#[cfg(feature = "enabled")]
fn switch_on(value: Option<String>) -> bool {
    value.is_some_and(|v| {
        let v = v.trim();
        v == "1" || v.eq_ignore_ascii_case("true")
    })
}

#[cfg(feature = "enabled")]
impl Hide {
    /// The config's switches, each also turned on by its environment variable (the
    /// environment is a floor: code cannot turn a switch off).
    pub(crate) fn resolve(config: Hide, var: &dyn Fn(&str) -> Option<String>) -> Self {
        Self {
            inputs: config.inputs || switch_on(var("GRAPHMIND_HIDE_INPUTS")),
            outputs: config.outputs || switch_on(var("GRAPHMIND_HIDE_OUTPUTS")),
            tool_args: config.tool_args || switch_on(var("GRAPHMIND_HIDE_TOOL_ARGS")),
            tool_results: config.tool_results || switch_on(var("GRAPHMIND_HIDE_TOOL_RESULTS")),
        }
    }

    /// Whether any switch is on.
    pub(crate) fn any(self) -> bool {
        self.inputs || self.outputs || self.tool_args || self.tool_results
    }
}

/// Default token batching interval: one `node.token` per node per 34 ms.
pub const TOKEN_INTERVAL: Duration = Duration::from_millis(34);
/// Default replay ring limit in events.
pub const RING_EVENTS: usize = 5_000;
/// Default replay ring limit in (estimated) bytes of JSON.
pub const RING_BYTES: usize = 8 * 1024 * 1024;

impl Config {
    /// A config for the app called `app`, with every other setting at its default.
    #[must_use]
    pub fn new(app: impl Into<String>) -> Self {
        Self {
            app: app.into(),
            url: None,
            enabled: None,
            meta: Map::new(),
            sdk_name: "rust".to_owned(),
            sdk_version: env!("CARGO_PKG_VERSION").to_owned(),
            token_interval: TOKEN_INTERVAL,
            wait_for_attach: None,
            pause_timeout: None,
            ring_events: RING_EVENTS,
            ring_bytes: RING_BYTES,
            connect_timeout: Duration::from_millis(300),
            handshake_timeout: Duration::from_secs(1),
            retry_interval: Duration::from_secs(10),
            ping_interval: Duration::from_secs(1),
            pong_timeout: Duration::from_secs(3),
            env: None,
            warn: None,
            hide: Hide::default(),
            on_loop: OnLoop::Pause,
            loop_threshold: LOOP_THRESHOLD,
            loop_allow: Vec::new(),
            trust_hub: TrustHub::SameUser,
            hub_home: None,
        }
    }

    /// The config of the default session when the app never called [`init`](crate::init):
    /// the app name is the executable's file stem (`rust-app` if unknown).
    #[must_use]
    pub fn from_env() -> Self {
        let app = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "rust-app".to_owned());
        Self::new(app)
    }

    /// The debugger endpoint (beats `GRAPHMIND_URL`; default `ws://127.0.0.1:4747/ingest`).
    #[must_use]
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// Turns the session on or off explicitly. `GRAPHMIND_DISABLED=1` still wins.
    #[must_use]
    pub fn enabled(mut self, on: bool) -> Self {
        self.enabled = Some(on);
        self
    }

    /// Adds one entry merged into every `run.started.meta`.
    #[must_use]
    pub fn meta(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.meta.insert(key.into(), value.into());
        self
    }

    /// The SDK named in `hello` and `run.started` (default `{"name":"rust","version":<crate>}`),
    /// for adapters that report on behalf of another SDK.
    #[must_use]
    pub fn sdk(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.sdk_name = name.into();
        self.sdk_version = version.into();
        self
    }

    /// How often streamed tokens are flushed as one `node.token` per node (default 34 ms).
    #[must_use]
    pub fn token_interval(mut self, every: Duration) -> Self {
        self.token_interval = every;
        self
    }

    /// Makes the first instrumented use wait up to `timeout` for the debugger to attach, so
    /// breakpoints are armed before the first gate (default: do not wait).
    #[must_use]
    pub fn wait_for_attach(mut self, timeout: Duration) -> Self {
        self.wait_for_attach = Some(timeout);
        self
    }

    /// Continues a held gate automatically after `timeout` (default: hold until released).
    #[must_use]
    pub fn pause_timeout(mut self, timeout: Duration) -> Self {
        self.pause_timeout = Some(timeout);
        self
    }

    /// Limits of the replay ring (default 5,000 events / 8 MiB). The oldest events are dropped
    /// first, and every loss is counted. Both limits are at least 1.
    #[must_use]
    pub fn ring_limits(mut self, events: usize, bytes: usize) -> Self {
        self.ring_events = events.max(1);
        self.ring_bytes = bytes.max(1);
        self
    }

    /// Budget for TCP connect plus WebSocket upgrade (default 300 ms).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long to wait for `hello.ack` after `hello` (default 1 s).
    #[must_use]
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Interval between connection attempts while detached (default 10 s; after an
    /// established connection drops, attempts at 200, 400 and 800 ms come first).
    #[must_use]
    pub fn retry_interval(mut self, every: Duration) -> Self {
        self.retry_interval = every;
        self
    }

    /// WebSocket ping interval and how long without any answer counts as a hung debugger
    /// (default 1 s and 3 s): a debugger silent for that long is dropped, and every gate it
    /// held continues at once, as on a disconnect. A reset socket is noticed at once
    /// regardless. `GRAPHMIND_PING_INTERVAL_MS` and `GRAPHMIND_HUB_DEAD_AFTER_MS` override
    /// the two values (a slow or remote debugger may need a longer budget).
    #[must_use]
    pub fn liveness(mut self, ping_every: Duration, dead_after: Duration) -> Self {
        self.ping_interval = ping_every.max(Duration::from_millis(1));
        self.pong_timeout = dead_after;
        self
    }

    /// Which debugger may control the app: hold its gates, inject results, retry, edit inputs
    /// and abort (default [`TrustHub::SameUser`]: a local `graphmind serve` of this user that
    /// proves it with the secret in its run file). Any other debugger is reported to but
    /// controls nothing: its breakpoints and step mode are not applied, gates never hold, and
    /// its `exec.resume` frames are ignored (counted in [`Stats`](crate::Stats)); the app
    /// warns once, saying how to trust it. `GRAPHMIND_TRUST_HUB=1` (or `true`, `any`) means
    /// [`TrustHub::Any`] whatever the code says.
    #[must_use]
    pub fn trust_hub(mut self, trust: TrustHub) -> Self {
        self.trust_hub = trust;
        self
    }

    /// Where the run files of local hubs are looked up for [`TrustHub::SameUser`]
    /// (`<home>/run/serve-<port>.json`): by default `$GRAPHMIND_HOME`, else `~/.graphmind`,
    /// the same place `graphmind serve` writes them.
    #[must_use]
    pub fn hub_home(mut self, home: impl Into<PathBuf>) -> Self {
        self.hub_home = Some(home.into());
        self
    }

    /// The kill switch of edited inputs: `GRAPHMIND_DISABLE_EDIT_INPUT=1` (or `true`). Then
    /// `hello` does not announce `edit-input` and every `exec.resume.input` is refused
    /// `disabled`.
    #[cfg(feature = "enabled")]
    pub(crate) fn edit_input_killed(&self) -> bool {
        self.var("GRAPHMIND_DISABLE_EDIT_INPUT").is_some_and(|v| {
            let v = v.trim();
            v == "1" || v.eq_ignore_ascii_case("true")
        })
    }

    /// The trust rule in effect: `GRAPHMIND_TRUST_HUB` on beats the config.
    #[cfg(feature = "enabled")]
    pub(crate) fn resolved_trust(&self) -> TrustHub {
        let any = self.var("GRAPHMIND_TRUST_HUB").is_some_and(|v| {
            let v = v.trim();
            v == "1" || v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("any")
        });
        if any {
            TrustHub::Any
        } else {
            self.trust_hub.clone()
        }
    }

    /// The home of local hubs' run files: [`Config::hub_home`], else `$GRAPHMIND_HOME`, else
    /// `$HOME/.graphmind` (`None` when neither variable is set).
    #[cfg(feature = "enabled")]
    pub(crate) fn resolved_hub_home(&self) -> Option<PathBuf> {
        if let Some(home) = &self.hub_home {
            return Some(home.clone());
        }
        let set = |k: &str| self.var(k).filter(|v| !v.is_empty());
        set("GRAPHMIND_HOME")
            .map(PathBuf::from)
            .or_else(|| set("HOME").map(|h| PathBuf::from(h).join(".graphmind")))
    }

    /// Ping interval and dead-after budget in effect: the environment's, else the config's.
    #[cfg(feature = "enabled")]
    pub(crate) fn resolved_liveness(&self) -> (Duration, Duration) {
        let ms = |k: &str| {
            self.var(k)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_millis)
        };
        let ping = ms("GRAPHMIND_PING_INTERVAL_MS")
            .unwrap_or(self.ping_interval)
            .max(Duration::from_millis(1));
        let dead = ms("GRAPHMIND_HUB_DEAD_AFTER_MS").unwrap_or(self.pong_timeout);
        (ping, dead)
    }

    /// Reads the switches from these variables instead of the process environment (for tests
    /// and embedders).
    #[must_use]
    pub fn env_vars<K, V>(mut self, vars: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        let map = vars
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        self.env = Some(Arc::new(map));
        self
    }

    /// Hides every node's input (and streamed tool arguments) from the debugger: the value is
    /// replaced by `"__REDACTED__"` before the event is recorded, so it is never stored,
    /// sent or replayed, and the payload carries `"redaction": {"count", "keys"}`.
    /// `GRAPHMIND_HIDE_INPUTS=1` (or `true`) turns it on whatever the code says; the same
    /// holds for the other three switches and their variables.
    #[must_use]
    pub fn hide_inputs(mut self, on: bool) -> Self {
        self.hide.inputs = on;
        self
    }

    /// Hides every node's output (also the output an `after` gate holds) and every streamed
    /// delta (a delta keeps its kind and its length as `chars`). Env:
    /// `GRAPHMIND_HIDE_OUTPUTS`. See [`Config::hide_inputs`].
    #[must_use]
    pub fn hide_outputs(mut self, on: bool) -> Self {
        self.hide.outputs = on;
        self
    }

    /// Hides the inputs of tool nodes and streamed tool arguments. Env:
    /// `GRAPHMIND_HIDE_TOOL_ARGS`. See [`Config::hide_inputs`].
    #[must_use]
    pub fn hide_tool_args(mut self, on: bool) -> Self {
        self.hide.tool_args = on;
        self
    }

    /// Hides the outputs of tool nodes (also at their `after` gate) and their deltas. Env:
    /// `GRAPHMIND_HIDE_TOOL_RESULTS`. See [`Config::hide_inputs`].
    #[must_use]
    pub fn hide_tool_results(mut self, on: bool) -> Self {
        self.hide.tool_results = on;
        self
    }

    /// The loop guard: when a tool is called with the same input (the same node and the same
    /// arguments, compared by fingerprint) [`Config::loop_threshold`] times back to back in
    /// one run (3 by default), the call holds at its `before` gate with `reason: "loop"`
    /// and a `loop` summary (`repeats`, `firstSeq`, `lastSeq`, `fingerprint`), as in the other
    /// GraphMind clients — only while a debugger is attached; continue, inject, retry or abort
    /// it like any gate. `GRAPHMIND_ON_LOOP=pause|warn|off` (also `0`, `false`, `none`)
    /// overrides this setting.
    #[must_use]
    pub fn on_loop(mut self, on: OnLoop) -> Self {
        self.on_loop = on;
        self
    }

    /// How many identical calls in a row count as a loop (default 3, at least 2).
    /// `GRAPHMIND_LOOP_THRESHOLD` overrides it.
    #[must_use]
    pub fn loop_threshold(mut self, calls: u32) -> Self {
        self.loop_threshold = calls.max(2);
        self
    }

    /// Tools the loop guard ignores, by name or node id (`lookup` or `tool:lookup`).
    /// `GRAPHMIND_LOOP_ALLOW` (comma-separated) adds to the list.
    #[must_use]
    pub fn loop_allow<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.loop_allow.extend(tools.into_iter().map(Into::into));
        self
    }

    /// The loop guard in effect: the config's, overridden by the environment.
    #[cfg(feature = "enabled")]
    pub(crate) fn resolved_loop_guard(&self) -> LoopGuard {
        let on = match self
            .var("GRAPHMIND_ON_LOOP")
            .map(|v| v.trim().to_ascii_lowercase())
            .as_deref()
        {
            Some("pause") => OnLoop::Pause,
            Some("warn") => OnLoop::Warn,
            Some("off" | "0" | "false" | "none") => OnLoop::Off,
            _ => self.on_loop,
        };
        let threshold = self
            .var("GRAPHMIND_LOOP_THRESHOLD")
            .and_then(|v| v.trim().parse::<u32>().ok())
            .map_or(self.loop_threshold, |n| n.max(2));
        let mut allow = self.loop_allow.clone();
        if let Some(list) = self.var("GRAPHMIND_LOOP_ALLOW") {
            allow.extend(
                list.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            );
        }
        LoopGuard {
            on,
            threshold,
            allow,
        }
    }

    /// The redaction switches in effect: the config's, plus those the environment turns on.
    #[cfg(feature = "enabled")]
    pub(crate) fn resolved_hide(&self) -> Hide {
        Hide::resolve(self.hide, &|k| self.var(k))
    }

    /// Sends warnings here instead of standard error (`[graphmind] <message>`).
    #[must_use]
    pub fn on_warning(mut self, hook: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.warn = Some(Arc::new(hook));
        self
    }

    /// The app name.
    #[must_use]
    pub fn app(&self) -> &str {
        &self.app
    }

    /// Looks a variable up in [`Config::env_vars`] if given, else in the process environment.
    pub(crate) fn var(&self, key: &str) -> Option<String> {
        match &self.env {
            Some(map) => map.get(key).cloned(),
            None => std::env::var(key).ok(),
        }
    }

    /// Whether a session built from this config would be enabled (see the type docs).
    #[must_use]
    pub fn resolved_enabled(&self) -> bool {
        cfg!(feature = "enabled") && env::resolve_enabled(self.enabled, &|k| self.var(k))
    }

    /// The endpoint a session built from this config would dial.
    #[must_use]
    pub fn resolved_url(&self) -> String {
        env::resolve_url(self.url.as_deref(), &|k| self.var(k))
    }

    /// Prints or forwards one warning.
    #[cfg_attr(not(feature = "enabled"), allow(dead_code))]
    pub(crate) fn warn(&self, message: &str) {
        match &self.warn {
            Some(hook) => hook(message),
            None => eprintln!("[graphmind] {message}"),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self::from_env()
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("app", &self.app)
            .field("url", &self.url)
            .field("enabled", &self.enabled)
            .field("meta", &self.meta)
            .field("sdk", &(&self.sdk_name, &self.sdk_version))
            .field("token_interval", &self.token_interval)
            .field("wait_for_attach", &self.wait_for_attach)
            .field("pause_timeout", &self.pause_timeout)
            .field("ring_limits", &(self.ring_events, self.ring_bytes))
            .field("hide", &self.hide)
            .field(
                "on_loop",
                &(self.on_loop, self.loop_threshold, &self.loop_allow),
            )
            .field("trust_hub", &self.trust_hub)
            .field("hub_home", &self.hub_home)
            .finish_non_exhaustive()
    }
}
