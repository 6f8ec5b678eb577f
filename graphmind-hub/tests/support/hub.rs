//! The hub started in-process through `graphmind_hub::start` in a private home, and plain HTTP
//! to it (also to a hub the binary serves: [`HubAccess`]).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use graphmind_hub::HubConfig;

use super::{TempDir, free_port};

/// The tokens of the hubs started here, by port (a hub restarted on a port replaces the
/// entry): reads need one, and many helpers know only the port.
static TOKENS: std::sync::Mutex<Vec<(u16, String, String)>> = std::sync::Mutex::new(Vec::new());

/// Records the tokens of a hub started on `port`.
pub fn register(port: u16, agent: &str, viewer: &str) {
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

/// What every test hub offers, in-process or spawned (both deref to it): its port, home and
/// tokens, and reads and posts with the agent token.
#[derive(Debug, Clone)]
pub struct HubAccess {
    /// The port it listens on.
    pub port: u16,
    /// Its `GRAPHMIND_HOME` (run files in `run/`).
    pub home: PathBuf,
    /// The agent token of its run file.
    pub agent_token: String,
    /// The viewer token of its run file.
    pub viewer_token: String,
}

impl HubAccess {
    pub fn url(&self, path: &str) -> String {
        format!("ws://127.0.0.1:{}{path}", self.port)
    }

    pub fn run_file(&self) -> PathBuf {
        self.home
            .join("run")
            .join(format!("serve-{}.json", self.port))
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
        events_on(self.port, run)
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

/// Milliseconds, for the timings of a [`HubConfig`].
pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A hub started in this process by `graphmind_hub::start`, on a runtime of its own (so it
/// outlives the test's runtime and is stopped from sync and async tests alike).
pub struct InProcessHub {
    access: HubAccess,
    rt: Option<tokio::runtime::Runtime>,
    running: Option<graphmind_hub::Running>,
}

impl std::ops::Deref for InProcessHub {
    type Target = HubAccess;
    fn deref(&self) -> &HubAccess {
        &self.access
    }
}

impl InProcessHub {
    /// The settings `graphmind serve --port 0` would use with `GRAPHMIND_HOME=home`: the
    /// database `home/graphmind.db`, run files in `home/run`.
    pub fn config_in(home: &Path) -> HubConfig {
        let mut c = HubConfig::new(home.join("graphmind.db"));
        c.port = 0;
        c.run_dir = Some(home.join("run"));
        c
    }

    /// Starts a hub in `home` with the settings of [`config_in`](Self::config_in) changed
    /// by `set`.
    pub fn start_in(home: &Path, set: impl FnOnce(&mut HubConfig)) -> Self {
        let mut c = Self::config_in(home);
        set(&mut c);
        Self::start(home, c).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts a hub with `config` (its run file in `home/run`), within 20 s.
    pub fn start(home: &Path, config: HubConfig) -> Result<Self, String> {
        // On a thread of its own: the caller may be inside another runtime.
        let (rt, running) = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            let started = rt.block_on(async {
                tokio::time::timeout(Duration::from_secs(20), graphmind_hub::start(config)).await
            });
            match started {
                Ok(Ok(running)) => Ok((rt, running)),
                Ok(Err(e)) => Err(format!("graphmind_hub::start: {e}")),
                Err(_) => Err("graphmind_hub::start took over 20 s".to_owned()),
            }
        })
        .join()
        .expect("start thread")?;
        let port = running.port;
        super::rust_client::hub_started(port, home);
        register(port, &running.agent_token, &running.viewer_token);
        Ok(Self {
            access: HubAccess {
                port,
                home: home.to_path_buf(),
                agent_token: running.agent_token.clone(),
                viewer_token: running.viewer_token.clone(),
            },
            rt: Some(rt),
            running: Some(running),
        })
    }

    /// Stops the hub as `graphmind serve` does on a signal: listener closed, apps closed,
    /// storage flushed, run file removed.
    pub fn stop(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        let (Some(rt), Some(running)) = (self.rt.take(), self.running.take()) else {
            return;
        };
        let _ = std::thread::spawn(move || {
            rt.block_on(running.shutdown());
            rt.shutdown_timeout(Duration::from_secs(2));
        })
        .join();
    }
}

impl Drop for InProcessHub {
    fn drop(&mut self) {
        self.shut();
    }
}

/// A hub started in-process on `port` with the database `db` (run files in `home/run`; a
/// fixed port, so a restarted hub is found by the same client).
pub fn start_on(
    home: &Path,
    port: u16,
    db: &Path,
    set: impl FnOnce(&mut HubConfig),
) -> Result<InProcessHub, String> {
    let mut c = InProcessHub::config_in(home);
    c.port = port;
    c.db = db.to_path_buf();
    set(&mut c);
    let h = InProcessHub::start(home, c).map_err(|e| format!("hub on port {port}: {e}"))?;
    assert_eq!(h.port, port);
    Ok(h)
}

/// A hub started in-process on a port picked here (retried if another process takes it
/// first).
pub fn start_on_free_port(home: &Path, db: &Path, set: impl Fn(&mut HubConfig)) -> InProcessHub {
    let mut last = String::new();
    for _ in 0..5 {
        match start_on(home, free_port(), db, &set) {
            Ok(s) => return s,
            Err(e) => last = e,
        }
    }
    panic!("no free port for the hub: {last}");
}

/// An in-process hub in its own temporary home.
pub struct TestHub {
    pub serve: InProcessHub,
    pub dir: TempDir,
}

impl std::ops::Deref for TestHub {
    type Target = InProcessHub;
    fn deref(&self) -> &InProcessHub {
        &self.serve
    }
}

impl std::ops::DerefMut for TestHub {
    fn deref_mut(&mut self) -> &mut InProcessHub {
        &mut self.serve
    }
}

/// An in-process hub in a fresh temporary home, with the defaults of `graphmind serve`
/// (port 0) changed by `set`.
pub fn hub(set: impl FnOnce(&mut HubConfig)) -> TestHub {
    let dir = TempDir::new("hub");
    let serve = InProcessHub::start_in(&dir.0, set);
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

/// Resumes pauses of one hub with its agent token ([`HubAccess::control`]).
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
