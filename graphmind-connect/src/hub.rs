//! The hub a tool talks to: found by port or through the run files, with the agent token of
//! its run file.

use std::time::Duration;

use serde_json::Value;

use crate::http::{self, Answer, HttpError};
use crate::paths;

/// What kind of failure a [`HubError`] is, for callers that map it to exit codes or protocol
/// errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A setting is malformed (for example `GRAPHMIND_PORT` is not a port number).
    Usage,
    /// No answer in time.
    Timeout,
    /// Nothing that answers like a graphmind hub listens on the port.
    Unreachable,
    /// No agent token to act with.
    Unauthorized,
}

/// Why a hub could not be found or asked: a kind and one line that says what to do.
#[derive(Debug, Clone)]
pub struct HubError {
    /// The kind of failure.
    pub kind: ErrorKind,
    /// One line for a person.
    pub message: String,
}

impl HubError {
    fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for HubError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HubError {}

/// A running hub as far as a tool knows it.
#[derive(Debug, Clone)]
pub struct Hub {
    /// Its port.
    pub port: u16,
    /// The agent token from the run file, if the run file was readable.
    token: Option<String>,
    /// Why there is no token (for the unauthorized message).
    token_problem: Option<String>,
    /// What the agent token may do (`allowControl` of the run file: off, resume, inject or
    /// edit).
    pub allow_control: Option<String>,
    /// The command that started the hub (`command` of the run file: `serve` or `demo`).
    pub started_by: String,
}

/// The port tools talk to without `--port`.
pub const DEFAULT_PORT: u16 = 4747;

/// [`DEFAULT_PORT`], or `GRAPHMIND_DEFAULT_PORT` (a hidden knob: tests point it at a port
/// nothing listens on, whatever runs on 4747 on the machine).
pub fn default_port() -> u16 {
    std::env::var("GRAPHMIND_DEFAULT_PORT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_PORT)
}

/// A hub named by a run file that answers as that hub: `/health` on its port reports the
/// same port and the same pid. A run file left by a hub that died (nothing listens, or
/// another process got the port since) is not one.
fn live_hub(file: &std::path::Path) -> Option<u16> {
    let name = file.file_name()?.to_str()?;
    let named: u16 = name
        .strip_prefix("serve-")?
        .strip_suffix(".json")?
        .parse()
        .ok()?;
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()?;
    let port = doc.get("port").and_then(Value::as_u64)?;
    let pid = doc.get("pid").and_then(Value::as_u64)?;
    if port != u64::from(named) || named == 0 {
        return None;
    }
    let probe = Hub {
        port: named,
        token: None,
        token_problem: None,
        allow_control: None,
        started_by: String::new(),
    };
    http::listening(named, Duration::from_millis(500)).then_some(())?;
    let health = probe.get("/health", Duration::from_secs(2)).ok()?;
    let h = health.json();
    (health.status == 200
        && h.get("ok") == Some(&Value::Bool(true))
        && h.get("port").and_then(Value::as_u64) == Some(port)
        && h.get("pid").and_then(Value::as_u64) == Some(pid))
    .then_some(named)
}

/// The ports of the live hubs whose run files are in `$GRAPHMIND_HOME/run`, ascending.
pub fn live_hubs() -> Vec<u16> {
    let Ok(dir) = std::fs::read_dir(paths::run_dir()) else {
        return Vec::new();
    };
    let mut ports: Vec<u16> = dir
        .filter_map(Result::ok)
        .filter_map(|e| live_hub(&e.path()))
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// `GRAPHMIND_PORT`: the port of the hub tools talk to when `--port` is not given (no
/// look-up, nothing said). Set but not a port number: a usage error.
pub fn env_port() -> Result<Option<u16>, HubError> {
    match std::env::var("GRAPHMIND_PORT") {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => v.trim().parse::<u16>().map(Some).map_err(|_| {
            HubError::new(
                ErrorKind::Usage,
                format!("GRAPHMIND_PORT={v:?} is not a port number (1-65535)"),
            )
        }),
        Err(_) => Ok(None),
    }
}

impl Hub {
    /// The hub a tool talks to: the one on `port` (`--port`, else `GRAPHMIND_PORT`);
    /// without either the one on the default port, or, when nothing listens there, the one
    /// live hub of the run files (it says so on stderr). Several live hubs and none on the
    /// default port: an [`ErrorKind::Unreachable`] error naming their ports, as choosing one
    /// would be a guess.
    pub fn locate(port: Option<u16>) -> Result<Self, HubError> {
        if let Some(p) = port.or(env_port()?) {
            return Ok(Self::find(p));
        }
        let default = Self::find(default_port());
        if http::listening(default.port, Duration::from_secs(2)) {
            return Ok(default);
        }
        match live_hubs().as_slice() {
            [] => Ok(default),
            [one] => {
                eprintln!(
                    "graphmind: nothing on port {}; using the graphmind serve on port {one} \
                     (its run file is in {}; GRAPHMIND_PORT={one} skips this look-up)",
                    default.port,
                    paths::run_dir().display()
                );
                Ok(Self::find(*one))
            }
            several => Err(HubError::new(
                ErrorKind::Unreachable,
                format!(
                    "no debugger on port {}, but graphmind serve runs on ports {}: pass --port N \
                     (or set GRAPHMIND_PORT)",
                    default.port,
                    several
                        .iter()
                        .map(u16::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }

    /// Reads `$GRAPHMIND_HOME/run/serve-<port>.json`. A missing or unreadable run file is not
    /// an error yet: whether anything listens is found out on the first request, and a read
    /// without a token gets the hub's own `401` explanation.
    pub fn find(port: u16) -> Self {
        let file = paths::run_file(port);
        let mut allow_control = None;
        let mut started_by = "serve".to_owned();
        let (token, token_problem) = match std::fs::read_to_string(&file) {
            Ok(text) => match serde_json::from_str::<Value>(&text) {
                Ok(v) => {
                    allow_control = v
                        .get("allowControl")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    if let Some(c) = v.get("command").and_then(Value::as_str) {
                        c.clone_into(&mut started_by);
                    }
                    // `agentToken` is the key of the reference family (GraphMind 0.6 hubs
                    // write only that one); `token` is what earlier graphmind hubs wrote.
                    let token = ["agentToken", "token"]
                        .iter()
                        .find_map(|k| v.get(*k).and_then(Value::as_str).filter(|t| !t.is_empty()));
                    match token {
                        Some(t) => (Some(t.to_owned()), None),
                        None => (None, Some(format!("{} holds no token", file.display()))),
                    }
                }
                Err(_) => (None, Some(format!("{} is not JSON", file.display()))),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (
                None,
                Some(format!(
                    "no run file {} (is GRAPHMIND_HOME the one `graphmind serve` uses?)",
                    file.display()
                )),
            ),
            Err(e) => (None, Some(format!("cannot read {}: {e}", file.display()))),
        };
        Self {
            port,
            token,
            token_problem,
            allow_control,
            started_by,
        }
    }

    /// The agent token, when the run file gave one (for a WebSocket the tool opens itself).
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Why acting on the hub cannot work from here (no agent token), if it cannot.
    pub fn token_problem(&self) -> Option<&str> {
        if self.token.is_some() {
            None
        } else {
            Some(self.token_problem.as_deref().unwrap_or("no run file"))
        }
    }

    fn unreachable(&self) -> HubError {
        HubError::new(
            ErrorKind::Unreachable,
            format!(
                "no debugger on port {} (start one with `graphmind serve`)",
                self.port
            ),
        )
    }

    /// `GET path`, waiting at most `timeout` for the answer.
    pub fn get(&self, path: &str, timeout: Duration) -> Result<Answer, HubError> {
        // Reads need a token too (they expose every tool input); without one the hub's 401
        // explains.
        self.request("GET", path, self.token.as_deref(), None, timeout)
    }

    /// `POST path` with a JSON body and the agent token.
    pub fn post(&self, path: &str, body: &Value, timeout: Duration) -> Result<Answer, HubError> {
        let Some(token) = self.token.as_deref() else {
            // Nothing listening beats a missing token as the explanation.
            if !http::listening(self.port, Duration::from_secs(2)) {
                return Err(self.unreachable());
            }
            return Err(HubError::new(
                ErrorKind::Unauthorized,
                format!(
                    "no agent token for port {}: {}",
                    self.port,
                    self.token_problem.as_deref().unwrap_or("no run file")
                ),
            ));
        };
        let body = body.to_string();
        self.request("POST", path, Some(token), Some(&body), timeout)
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&str>,
        timeout: Duration,
    ) -> Result<Answer, HubError> {
        http::request(self.port, method, path, token, body, timeout).map_err(|e| match e {
            HttpError::Unreachable(_) => self.unreachable(),
            HttpError::TimedOut => HubError::new(
                ErrorKind::Timeout,
                format!("the debugger on port {} did not answer in time", self.port),
            ),
            HttpError::Lost(e) => HubError::new(
                ErrorKind::Unreachable,
                format!(
                    "lost the connection to the debugger on port {}: {e}",
                    self.port
                ),
            ),
            HttpError::NotHttp => HubError::new(
                ErrorKind::Unreachable,
                format!(
                    "the program on port {} does not answer like a graphmind debugger",
                    self.port
                ),
            ),
        })
    }
}
