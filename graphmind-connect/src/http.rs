//! The one HTTP client of the graphmind tools: an HTTP/1.1 exchange with a hub on 127.0.0.1, used by
//! the control commands, `graphmind demo`, the terminal UI and the MCP server.
//!
//! The hub only binds 127.0.0.1 and answers small JSON documents, so one request per
//! connection over a blocking `TcpStream` (`Connection: close`, body read to the end) is all
//! they need; no HTTP crate, no async runtime.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::Value;

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// An HTTP answer.
#[derive(Debug)]
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

/// Why an exchange gave no answer.
#[derive(Debug)]
pub enum HttpError {
    /// Nothing accepted the connection.
    Unreachable(std::io::Error),
    /// No complete answer within the timeout.
    TimedOut,
    /// The connection broke.
    Lost(std::io::Error),
    /// What came back is not an HTTP/1.x answer.
    NotHttp,
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unreachable(e) => write!(f, "nothing listens: {e}"),
            Self::TimedOut => f.write_str("no answer in time"),
            Self::Lost(e) => write!(f, "lost the connection: {e}"),
            Self::NotHttp => f.write_str("the answer is not HTTP"),
        }
    }
}

/// The loopback address of `port`.
pub fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Whether something accepts connections on `port` within `within`.
pub fn listening(port: u16, within: Duration) -> bool {
    TcpStream::connect_timeout(&addr(port), within).is_ok()
}

/// One request: `method path` with `Authorization: Bearer <token>` when a token is given and
/// a JSON `body` when one is given; the whole answer read within `timeout`.
pub fn request(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
    timeout: Duration,
) -> Result<Answer, HttpError> {
    let mut s =
        TcpStream::connect_timeout(&addr(port), CONNECT_TIMEOUT).map_err(HttpError::Unreachable)?;
    let lost = |e: std::io::Error| {
        if matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ) {
            HttpError::TimedOut
        } else {
            HttpError::Lost(e)
        }
    };
    s.set_read_timeout(Some(timeout)).map_err(lost)?;
    s.set_write_timeout(Some(Duration::from_secs(10)))
        .map_err(lost)?;
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Accept: application/json\r\nUser-Agent: graphmind/{}\r\n",
        env!("CARGO_PKG_VERSION")
    );
    if let Some(token) = token {
        req.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    if let Some(body) = body {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
    } else {
        req.push_str("\r\n");
    }
    s.write_all(req.as_bytes()).map_err(lost)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(lost)?;
    parse_response(&raw).ok_or(HttpError::NotHttp)
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
    fn chunked_bodies_are_joined() {
        assert_eq!(
            dechunk(b"4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n").as_deref(),
            Some(&b"{\"a\":1}"[..])
        );
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
