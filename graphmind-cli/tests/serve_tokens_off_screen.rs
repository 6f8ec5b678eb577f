//! Tokens stay off screens and logs: `serve --json` printed the viewer link with its token
//! and sent it to stderr too, so a redirected log held it. Now the `--json` line is
//! `{port, url, pid, version, runFile}` and no token is printed at all with `--json`; without
//! it the one human-readable line on stderr is the only place the viewer token appears.
//! `graphmind open` builds the viewer link from the run file.

mod support;

use std::io::Read;
use std::process::Stdio;

use serde_json::{Value, json};
use support::*;

/// Starts `serve --port 0 --no-open <flags>` in `home`, waits for its run file, stops it
/// with SIGINT and returns (stdout, stderr, run file).
fn serve_output(home: &std::path::Path, flags: &[&str]) -> (String, String, Value) {
    let mut child = graphmind_in(home)
        .args(["serve", "--port", "0", "--no-open"])
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn serve");
    let run_dir = home.join("run");
    let run = wait_for(20, "the run file", || {
        let f = std::fs::read_dir(&run_dir).ok()?.flatten().next()?;
        let v: Value = serde_json::from_str(&std::fs::read_to_string(f.path()).ok()?).ok()?;
        v.get("viewerToken").is_some().then_some(v)
    });
    // Give the lines printed after listening time to be written.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let _ = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let (mut out, mut err) = (String::new(), String::new());
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read");
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("read");
    let _ = child.wait();
    (out, err, run)
}

#[test]
fn serve_json_prints_no_token_anywhere() {
    let dir = TempDir::new("json-tokens");
    let (out, err, run) = serve_output(&dir.0, &["--json"]);
    let viewer = run["viewerToken"].as_str().expect("viewerToken");
    let agent = run["token"].as_str().expect("token");
    let line: Value = serde_json::from_str(out.lines().next().expect("a line")).expect("JSON");
    let keys: Vec<&str> = line
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["port", "url", "pid", "version", "runFile", "ingest"],
        "{line}"
    );
    // An app run beside `serve --json` learns its GRAPHMIND_URL from this line.
    let port = line["port"].as_u64().expect("port");
    assert_eq!(line["ingest"], format!("ws://127.0.0.1:{port}/ingest"));
    for t in [viewer, agent] {
        assert!(!out.contains(t), "a token on stdout: {out}");
        assert!(!err.contains(t), "a token on stderr: {err}");
    }
}

#[test]
fn without_json_the_viewer_token_is_only_on_the_stderr_line() {
    let dir = TempDir::new("human-tokens");
    let (out, err, run) = serve_output(&dir.0, &[]);
    let viewer = run["viewerToken"].as_str().expect("viewerToken");
    let agent = run["token"].as_str().expect("token");
    let port = run["port"].as_u64().expect("port");
    assert!(!out.contains(viewer) && !out.contains(agent), "{out}");
    assert!(out.contains("graphmind open"), "{out}");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains(viewer)).collect();
    assert_eq!(
        lines,
        [format!(
            "graphmind: viewer at http://127.0.0.1:{port}/#token={viewer}"
        )],
        "{err}"
    );
    assert!(!err.contains(agent), "{err}");
}

#[test]
fn graphmind_open_prints_a_working_viewer_link() {
    let h = hub(|_| {});
    let port = h.port.to_string();
    let out = gm(&h.home, &["open", "--print", "--port", &port]).expect(0);
    assert_eq!(
        out.stdout.trim(),
        format!("http://127.0.0.1:{port}/#token={}", h.viewer_token)
    );
    // The link's token lets a viewer in.
    let token = out
        .stdout
        .trim()
        .split_once("#token=")
        .expect("fragment")
        .1
        .to_owned();
    block_on(async {
        let mut v = Peer::viewer_with(h.port, Some(&token)).await;
        assert_eq!(v.next_json(5000).await["type"], json!("hello"));
    });
}

#[test]
fn graphmind_open_without_a_run_file_says_so() {
    let dir = TempDir::new("open-none");
    let port = free_port().to_string();
    let out = gm(&dir.0, &["open", "--print", "--port", &port]).expect(3);
    assert!(out.stderr.contains("run file"), "{}", out.stderr);
    assert!(out.stdout.is_empty());
}
