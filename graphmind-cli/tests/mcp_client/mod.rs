//! `graphmind mcp` driven by the Python MCP SDK's stdio client (`tests/python/mcp_client.py`):
//! the SDK spawns the server and this helper sends it one request per line.
//!
//! Needs `python3` with the PyPI package `mcp` (scripts/install-test-deps.sh); without it the
//! tests fail, they do not skip.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// The Python SDK's client talking to a `graphmind mcp` it started.
pub struct McpClient {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

/// A tool's answer.
#[derive(Debug)]
pub enum Answer {
    /// A result: `isError` and its text.
    Result {
        is_error: bool,
        text: String,
        progress: Vec<f64>,
    },
    /// A JSON-RPC error: code and message.
    Error { code: i64, message: String },
}

impl Answer {
    /// The text of a successful result; panics on anything else.
    pub fn ok(self) -> String {
        match self {
            Answer::Result {
                is_error: false,
                text,
                ..
            } => text,
            other => panic!("expected a result, got {other:?}"),
        }
    }

    /// The text of an `isError` result or the message of a JSON-RPC error; panics on a
    /// successful result.
    pub fn err(self) -> String {
        match self {
            Answer::Result {
                is_error: true,
                text,
                ..
            } => text,
            Answer::Error { message, .. } => message,
            other => panic!("expected an error, got {other:?}"),
        }
    }
}

fn require_sdk() {
    let out = Command::new("python3")
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('mcp'))",
        ])
        .output();
    let ok = matches!(&out, Ok(o) if o.status.success());
    assert!(
        ok,
        "these tests need python3 with the MCP SDK (PyPI `mcp`): run \
         scripts/install-test-deps.sh"
    );
}

impl McpClient {
    /// Starts the client, which starts `graphmind mcp --port <port>` with
    /// `GRAPHMIND_HOME=home`, and waits for the session to be up. The client names itself
    /// `client_name`.
    pub fn start(home: &Path, port: u16, client_name: &str) -> Self {
        require_sdk();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_client.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(env!("CARGO_BIN_EXE_graphmind"))
            .args(["mcp", "--port", &port.to_string()])
            .env("GRAPHMIND_HOME", home)
            .env("MCP_CLIENT_NAME", client_name)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn python3 tests/python/mcp_client.py");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut c = Self {
            child,
            stdin,
            lines,
        };
        let ready = c.next(60);
        assert_eq!(ready["ready"], json!("graphmind"), "{ready}");
        c
    }

    fn next(&mut self, secs: u64) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(secs))
            .unwrap_or_else(|e| panic!("no answer from the MCP client in {secs} s: {e}"));
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"))
    }

    fn send(&mut self, req: &Value) {
        writeln!(self.stdin, "{req}").expect("write to the MCP client");
        self.stdin.flush().expect("flush");
    }

    /// The tools the server lists.
    pub fn tools(&mut self) -> Vec<Value> {
        self.send(&json!({"op": "tools"}));
        let v = self.next(60);
        v["tools"].as_array().cloned().expect("tools")
    }

    /// The resources the server lists.
    pub fn resources(&mut self) -> Vec<Value> {
        self.send(&json!({"op": "resources"}));
        let v = self.next(60);
        v["resources"].as_array().cloned().expect("resources")
    }

    /// Reads resource `uri`: its contents, or the JSON-RPC error.
    pub fn read(&mut self, uri: &str) -> Value {
        self.send(&json!({"op": "read", "uri": uri}));
        self.next(60)
    }

    /// Calls `name` with `args`; the SDK waits `secs` for the answer, this helper a minute
    /// more.
    pub fn call_within(&mut self, name: &str, args: Value, secs: u64, progress: bool) -> Answer {
        self.send(
            &json!({"op": "call", "name": name, "args": args, "timeout": secs, "progress": progress}),
        );
        let v = self.next(secs + 60);
        if v.get("timeout").is_some() {
            panic!("{name} got no answer within {secs} s: {v}");
        }
        if let Some(e) = v.get("error") {
            return Answer::Error {
                code: e["code"].as_i64().unwrap_or(0),
                message: e["message"].as_str().unwrap_or("").to_owned(),
            };
        }
        Answer::Result {
            is_error: v["isError"] == json!(true),
            text: v["text"].as_str().unwrap_or("").to_owned(),
            progress: v["progress"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default(),
        }
    }

    /// Calls `name` with `args` (30 s).
    pub fn call(&mut self, name: &str, args: Value) -> Answer {
        self.call_within(name, args, 30, false)
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "{}", json!({"op": "quit"}));
        let _ = self.stdin.flush();
        for _ in 0..100 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
