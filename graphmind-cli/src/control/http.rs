//! Finding a running hub (its run file) and a minimal HTTP/1.1 client for it.
//!
//! The hub only binds 127.0.0.1 and answers small JSON documents, so one request per
//! connection over a blocking `TcpStream` (`Connection: close`, body read to the end) is all
//! the control commands need; no HTTP crate, no async runtime.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::Value;

use super::{Exit, Fail};
use crate::paths;

/// A running hub as far as the command knows it.
pub struct Hub {
    /// Its port.
    pub port: u16,
    /// The agent token from the run file, if the run file was readable.
    token: Option<String>,
    /// Why there is no token (for the unauthorized message).
    token_problem: Option<String>,
    /// What the agent token may do (`allowControl` of the run file: off, resume or inject).
    pub allow_control: Option<String>,
}

/// The port the control commands talk to without `--port`.
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
    };
    let addr = probe.addr();
    TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
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

/// An HTTP answer.
pub struct Answer {
    /// Status code.
    pub status: u16,
    /// Body text.
    pub body: String,
}

impl Answer {
    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// The hub's one-line explanation (`error`, else `message`, else the status).
    pub fn reason(&self) -> String {
        let v = self.json();
        v.get("error")
            .or_else(|| v.get("message"))
            .and_then(Value::as_str)
            .map_or_else(
                || {
                    let t = self.body.trim();
                    if t.is_empty() || t.len() > 200 {
                        format!("HTTP {}", self.status)
                    } else {
                        t.replace('\n', " ")
                    }
                },
                str::to_owned,
            )
    }
}

impl Hub {
    /// The hub a command talks to: the one on `port`; without `--port` the one on the
    /// default port, or, when nothing listens there, the one live hub of the run files (it
    /// says so on stderr). Several live hubs and none on the default port: exit 3 naming
    /// their ports, as choosing one would be a guess.
    pub fn locate(port: Option<u16>) -> Result<Self, Fail> {
        if let Some(p) = port {
            return Ok(Self::find(p));
        }
        let default = Self::find(default_port());
        if TcpStream::connect_timeout(&default.addr(), Duration::from_secs(2)).is_ok() {
            return Ok(default);
        }
        match live_hubs().as_slice() {
            [] => Ok(default),
            [one] => {
                eprintln!(
                    "graphmind: nothing on port {}; using the graphmind serve on port {one} \
                     (its run file is in {})",
                    default.port,
                    paths::run_dir().display()
                );
                Ok(Self::find(*one))
            }
            several => Err(Fail::new(
                Exit::Unreachable,
                format!(
                    "no debugger on port {}, but graphmind serve runs on ports {}: pass --port N",
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
        let (token, token_problem) = match std::fs::read_to_string(&file) {
            Ok(text) => match serde_json::from_str::<Value>(&text) {
                Ok(v) => {
                    allow_control = v
                        .get("allowControl")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    // `agentToken` is the key of the reference family (GraphMind 0.6 hubs
                    // write only that one); `token` is what earlier graphmind hubs wrote.
                    let token = ["agentToken", "token"]
                        .iter()
                        .find_map(|k| v.get(*k).and_then(Value::as_str).filter(|t| !t.is_empty()));
                    match token {
                        Some(t) if !t.is_empty() => (Some(t.to_owned()), None),
                        _ => (None, Some(format!("{} holds no token", file.display()))),
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
        }
    }

    /// Why `resume` cannot work from here (no agent token), if it cannot.
    pub fn token_problem(&self) -> Option<&str> {
        if self.token.is_some() {
            None
        } else {
            Some(self.token_problem.as_deref().unwrap_or("no run file"))
        }
    }

    fn unreachable(&self) -> Fail {
        Fail::new(
            Exit::Unreachable,
            format!(
                "no debugger on port {} (start one with `graphmind serve`)",
                self.port
            ),
        )
    }

    /// `GET path`, waiting at most `timeout` for the answer.
    pub fn get(&self, path: &str, timeout: Duration) -> Result<Answer, Fail> {
        self.request("GET", path, None, timeout)
    }

    /// `POST path` with a JSON body and the agent token.
    pub fn post(&self, path: &str, body: &Value, timeout: Duration) -> Result<Answer, Fail> {
        let Some(token) = self.token.as_deref() else {
            // Nothing listening beats a missing token as the explanation.
            if TcpStream::connect_timeout(&self.addr(), Duration::from_secs(2)).is_err() {
                return Err(self.unreachable());
            }
            return Err(Fail::new(
                Exit::Unauthorized,
                format!(
                    "no agent token for port {}: {}",
                    self.port,
                    self.token_problem.as_deref().unwrap_or("no run file")
                ),
            ));
        };
        self.request("POST", path, Some((token, body.to_string())), timeout)
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<(&str, String)>,
        timeout: Duration,
    ) -> Result<Answer, Fail> {
        let mut s = TcpStream::connect_timeout(&self.addr(), Duration::from_secs(2))
            .map_err(|_| self.unreachable())?;
        let lost = |e: std::io::Error| {
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) {
                Fail::new(
                    Exit::Timeout,
                    format!("the debugger on port {} did not answer in time", self.port),
                )
            } else {
                Fail::new(
                    Exit::Unreachable,
                    format!(
                        "lost the connection to the debugger on port {}: {e}",
                        self.port
                    ),
                )
            }
        };
        s.set_read_timeout(Some(timeout)).map_err(lost)?;
        s.set_write_timeout(Some(Duration::from_secs(10)))
            .map_err(lost)?;
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nAccept: application/json\r\nUser-Agent: graphmind-cli/{}\r\n",
            self.port,
            env!("CARGO_PKG_VERSION")
        );
        if let Some((token, body)) = &body {
            req.push_str(&format!(
                "Authorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            ));
        } else {
            // Reads need a token too (they expose every tool input); without one the hub's
            // 401 explains.
            if let Some(token) = &self.token {
                req.push_str(&format!("Authorization: Bearer {token}\r\n"));
            }
            req.push_str("\r\n");
        }
        s.write_all(req.as_bytes()).map_err(lost)?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).map_err(lost)?;
        parse_response(&raw).ok_or_else(|| {
            Fail::new(
                Exit::Unreachable,
                format!(
                    "the program on port {} does not answer like a graphmind debugger",
                    self.port
                ),
            )
        })
    }
}

/// Parses a complete `Connection: close` HTTP/1.1 response.
fn parse_response(raw: &[u8]) -> Option<Answer> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..split]).ok()?;
    let body = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    if !status_line.starts_with("HTTP/1.") {
        return None;
    }
    let status = status_line.split_whitespace().nth(1)?.parse().ok()?;
    let mut chunked = false;
    let mut length = None;
    for line in lines {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        if k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked") {
            chunked = true;
        } else if k.eq_ignore_ascii_case("content-length") {
            length = v.parse::<usize>().ok();
        }
    }
    let body = if chunked {
        dechunk(body)?
    } else {
        match length {
            Some(n) => body.get(..n)?.to_vec(),
            None => body.to_vec(),
        }
    };
    Some(Answer {
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn dechunk(mut s: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = s.windows(2).position(|w| w == b"\r\n")?;
        let size = std::str::from_utf8(&s[..eol]).ok()?;
        let size = size.split(';').next()?.trim();
        let n = usize::from_str_radix(size, 16).ok()?;
        s = &s[eol + 2..];
        if n == 0 {
            return Some(out);
        }
        out.extend_from_slice(s.get(..n)?);
        s = s.get(n + 2..)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_content_length_and_chunked_answers() {
        let a = parse_response(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}junk").unwrap();
        assert_eq!((a.status, a.body.as_str()), (200, "{}"));
        let a = parse_response(
            b"HTTP/1.1 410 Gone\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!((a.status, a.body.as_str()), (410, "{\"a\":1}"));
        assert!(parse_response(b"SSH-2.0-OpenSSH\r\n\r\n").is_none());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n{}").is_none());
    }

    #[test]
    fn reason_prefers_the_error_field() {
        let a = Answer {
            status: 409,
            body: r#"{"outcome":"taken","error":"another resume is in flight"}"#.into(),
        };
        assert_eq!(a.reason(), "another resume is in flight");
        let a = Answer {
            status: 403,
            body: "Host must be a loopback name".into(),
        };
        assert_eq!(a.reason(), "Host must be a loopback name");
    }
}
