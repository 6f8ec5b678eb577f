//! The real `graphmind serve` binary in a private home, and plain HTTP to it.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{TempDir, free_port};

/// The tokens of the hubs started here, by port (a hub restarted on a port replaces the
/// entry): reads need one, and many helpers know only the port.
static TOKENS: std::sync::Mutex<Vec<(u16, String, String)>> = std::sync::Mutex::new(Vec::new());

fn register(port: u16, agent: &str, viewer: &str) {
    let mut t = TOKENS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    t.retain(|(p, _, _)| *p != port);
    t.push((port, agent.to_owned(), viewer.to_owned()));
}

/// The agent and viewer tokens of the hub started here on `port`.
pub fn tokens_of(port: u16) -> Option<(String, String)> {
    let t = TOKENS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    t.iter()
        .find(|(p, _, _)| *p == port)
        .map(|(_, a, v)| (a.clone(), v.clone()))
}

/// `GET path` with the agent token of the hub on `port` (reads need a token).
pub fn read(port: u16, path: &str) -> Response {
    match tokens_of(port) {
        Some((agent, _)) => http(
            port,
            "GET",
            path,
            &[("Authorization", &format!("Bearer {agent}"))],
            None,
        ),
        None => http(port, "GET", path, &[], None),
    }
}

/// A running `graphmind serve`.
pub struct Serve {
    pub child: Child,
    pub port: u16,
    pub line: Value,
    pub home: PathBuf,
    pub agent_token: String,
    pub viewer_token: String,
}

impl Serve {
    /// Starts `graphmind serve --port 0 --json --no-open` with `GRAPHMIND_HOME=home` and the
    /// extra flags.
    pub fn start_in(home: &Path, extra: &[&str]) -> Self {
        let mut a: Vec<OsString> = vec!["--port".into(), "0".into()];
        a.extend(extra.iter().map(OsString::from));
        Self::spawn(home, a).unwrap_or_else(|e| panic!("{e}"))
    }

    /// `graphmind serve --json --no-open <flags>` with `GRAPHMIND_HOME=home`: its `--json`
    /// line read within 20 s, its agent token from the run file, its viewer token from the
    /// viewer URL. `Err` when it printed no JSON line (killed then).
    fn spawn(home: &Path, flags: Vec<OsString>) -> Result<Self, String> {
        let mut child = super::graphmind_in(home)
            .args(["serve", "--json", "--no-open"])
            .args(flags)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("spawn graphmind serve: {e}"))?;
        let line = super::first_json_line(&mut child, "serve")?;
        let port = u16::try_from(line["port"].as_u64().expect("port")).expect("port fits");
        super::rust_client::hub_started(port, home);
        let run_file = home.join("run").join(format!("serve-{port}.json"));
        let run: Value =
            serde_json::from_str(&std::fs::read_to_string(&run_file).expect("run file"))
                .expect("run file is JSON");
        let agent_token = run["agentToken"].as_str().expect("agentToken").to_owned();
        assert_eq!(
            run["token"].as_str(),
            Some(agent_token.as_str()),
            "the run file holds the token under both keys"
        );
        let viewer_token = run["viewerToken"]
            .as_str()
            .expect("viewerToken in the run file")
            .to_owned();
        register(port, &agent_token, &viewer_token);
        Ok(Self {
            child,
            port,
            line,
            home: home.to_path_buf(),
            agent_token,
            viewer_token,
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("ws://127.0.0.1:{}{path}", self.port)
    }

    pub fn run_file(&self) -> PathBuf {
        self.home
            .join("run")
            .join(format!("serve-{}.json", self.port))
    }

    /// Sends SIGINT and waits for the exit (at most 10 s).
    pub fn interrupt(&mut self) -> std::process::ExitStatus {
        self.stop_with("INT")
    }

    /// Sends SIGTERM (a clean stop, as `kill` does) and waits for the exit (at most 10 s).
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        self.stop_with("TERM")
    }

    /// Sends the signal `sig` (`INT`, `TERM`, …) and waits for the exit (at most 10 s).
    fn stop_with(&mut self, sig: &str) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args([&format!("-{sig}"), &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                return s;
            }
            assert!(Instant::now() < deadline, "serve did not exit on SIG{sig}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `GET path` with the agent token.
    pub fn get(&self, path: &str) -> Response {
        read(self.port, path)
    }

    pub fn get_json(&self, path: &str) -> Value {
        let r = self.get(path);
        assert_eq!(r.status, 200, "GET {path}: {}", r.body);
        r.json()
    }

    /// POST JSON with the agent token.
    pub fn post(&self, path: &str, body: &Value) -> Response {
        post_as(self.port, &self.agent_token, path, body)
    }

    /// The runs list.
    pub fn runs(&self) -> Vec<Value> {
        self.get_json("/api/runs")["runs"]
            .as_array()
            .expect("runs")
            .clone()
    }

    /// All stored events of a run (paged); empty while the run is unknown.
    pub fn events(&self, run: &str) -> Vec<Value> {
        Self::events_on(self.port, run)
    }

    /// All stored events of a run of the hub on `port` (paged); empty while it is unknown.
    pub fn events_on(port: u16, run: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let mut after: Option<u64> = None;
        loop {
            let q = after.map_or_else(String::new, |a| format!("&afterSeq={a}"));
            let r = read(port, &format!("/api/runs/{run}/events?limit=10000{q}"));
            if r.status == 404 {
                return out; // the run is not known (yet)
            }
            assert_eq!(r.status, 200, "events of {run}: {}", r.body);
            let page = r.json();
            out.extend(page["events"].as_array().expect("events").iter().cloned());
            if page["more"] != json!(true) {
                return out;
            }
            after = page["nextAfterSeq"].as_u64();
        }
    }

    /// The stored seqs of a run.
    pub fn seqs(&self, run: &str) -> Vec<u64> {
        self.events(run)
            .iter()
            .map(|e| e["seq"].as_u64().expect("seq"))
            .collect()
    }

    pub fn health(&self) -> Value {
        self.get_json("/health")
    }

    /// The hub's database (`<home>/graphmind.db`), opened read-only from outside.
    pub fn open_db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open_with_flags(
            self.home.join("graphmind.db"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .expect("open the database")
    }

    /// The status in the stored row of `run` (after the writer flushed everything queued so
    /// far).
    pub fn stored_status(&self, run: &str) -> String {
        let _ = self.events(run); // flushes the writer
        self.open_db()
            .query_row("SELECT status FROM runs WHERE run_id = ?1", [run], |r| {
                r.get(0)
            })
            .expect("the run row")
    }

    /// A handle that resumes pauses with the agent token, off the async runtime.
    pub fn control(&self) -> Control {
        Control {
            port: self.port,
            token: self.agent_token.clone(),
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `graphmind serve --json --no-open --port <port> --db <db> <extra>` with
/// `GRAPHMIND_HOME=home` (a fixed port, so a restarted hub is found by the same client).
pub fn serve_on(home: &Path, port: u16, db: &Path, extra: &[&str]) -> Result<Serve, String> {
    let mut a: Vec<OsString> = vec![
        "--port".into(),
        port.to_string().into(),
        "--db".into(),
        db.into(),
    ];
    a.extend(extra.iter().map(OsString::from));
    let s = Serve::spawn(home, a).map_err(|e| format!("serve on port {port}: {e}"))?;
    assert_eq!(s.line["port"].as_u64(), Some(u64::from(port)));
    Ok(s)
}

/// A hub restarted on `port` with the same home and database ([`serve_on`]), started off the
/// async runtime.
pub async fn restart_on(home: &Path, port: u16, db: &Path) -> Serve {
    let (home, db) = (home.to_path_buf(), db.to_path_buf());
    tokio::task::spawn_blocking(move || {
        serve_on(&home, port, &db, &[]).expect("restart on the same port")
    })
    .await
    .expect("join")
}

/// A hub on a port picked here (retried if another process takes it first).
pub fn serve_on_free_port(home: &Path, db: &Path, extra: &[&str]) -> Serve {
    let mut last = String::new();
    for _ in 0..5 {
        match serve_on(home, free_port(), db, extra) {
            Ok(s) => return s,
            Err(e) => last = e,
        }
    }
    panic!("no free port for the hub: {last}");
}

/// Kills the hub at once (SIGKILL: no close frame, no cleanup) and reaps it.
pub fn kill_hard(serve: &mut Serve) {
    let _ = serve.child.kill();
    let _ = serve.child.wait();
}

/// A hub in its own temporary home.
pub struct TestHub {
    pub serve: Serve,
    pub dir: TempDir,
}

impl std::ops::Deref for TestHub {
    type Target = Serve;
    fn deref(&self) -> &Serve {
        &self.serve
    }
}

impl std::ops::DerefMut for TestHub {
    fn deref_mut(&mut self) -> &mut Serve {
        &mut self.serve
    }
}

pub fn hub(extra: &[&str]) -> TestHub {
    let dir = TempDir::new("hub");
    let serve = Serve::start_in(&dir.0, extra);
    TestHub { serve, dir }
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Response {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// A header value (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }
}

/// One HTTP/1.1 request over a fresh connection. `Host: 127.0.0.1:<port>` is added unless
/// the headers carry a Host (an empty value means: send no Host at all).
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Response {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("host") && v.is_empty() {
            continue;
        }
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    req.push_str("\r\n");
    if let Some(b) = body {
        req.push_str(b);
    }
    s.write_all(req.as_bytes()).expect("write");
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Response {
        status,
        head: head.to_owned(),
        body,
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// POST JSON with `Authorization: Bearer <token>` to the hub on `port`.
pub fn post_as(port: u16, token: &str, path: &str, body: &Value) -> Response {
    let auth = format!("Bearer {token}");
    http(
        port,
        "POST",
        path,
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        Some(&body.to_string()),
    )
}

/// POST a resume with `token`, off the async runtime.
pub async fn resume_async(
    port: u16,
    token: String,
    run: String,
    pause: String,
    body: Value,
) -> Response {
    tokio::task::spawn_blocking(move || {
        post_as(
            port,
            &token,
            &format!("/api/runs/{run}/pauses/{pause}/resume"),
            &body,
        )
    })
    .await
    .expect("join")
}

/// GET with the agent token, off the async runtime.
pub async fn get_async(port: u16, path: String) -> Response {
    tokio::task::spawn_blocking(move || read(port, &path))
        .await
        .expect("join")
}

/// The runs list of the hub on `port`, off the async runtime.
pub async fn runs_async(port: u16) -> Value {
    get_async(port, "/api/runs".into()).await.json()
}

/// Resumes pauses of one hub with its agent token ([`Serve::control`]).
#[derive(Clone)]
pub struct Control {
    pub port: u16,
    pub token: String,
}

impl Control {
    /// POST a resume of `pause` in `run`, off the async runtime; the future is `'static`, so
    /// it can be spawned to stay in flight.
    pub fn resume(
        &self,
        run: &str,
        pause: &str,
        body: Value,
    ) -> impl std::future::Future<Output = Response> + Send + 'static {
        resume_async(
            self.port,
            self.token.clone(),
            run.to_owned(),
            pause.to_owned(),
            body,
        )
    }

    /// POST JSON with the agent token.
    pub fn post(&self, path: &str, body: &Value) -> Response {
        post_as(self.port, &self.token, path, body)
    }

    /// [`Control::post`] off the async runtime; the future is `'static`.
    pub fn post_async(
        &self,
        path: &str,
        body: Value,
    ) -> impl std::future::Future<Output = Response> + Send + 'static {
        let (ctl, path) = (self.clone(), path.to_owned());
        async move {
            tokio::task::spawn_blocking(move || ctl.post(&path, &body))
                .await
                .expect("join")
        }
    }
}
