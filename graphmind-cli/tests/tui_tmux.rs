//! `graphmind tui` in a real terminal (tmux) against a real `graphmind serve` and the support
//! agent: held at its error gate, the decision taken with the TUI's keys, and what the TUI
//! did checked in the hub's stored events and the run's result, not only on the screen.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use graphmind_examples::{TICKET, support_agent};
use serde_json::{Value, json};
use support::{attached, block_on, events_when_finished, spawned_hub, wait_async};

/// A private tmux server running `graphmind tui` in one 120×32 pane.
struct Tui {
    sock: String,
}

impl Tui {
    fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.sock]);
        c
    }

    /// Starts `graphmind tui --port <port>` with `GRAPHMIND_HOME=home`, `EDITOR=editor` (or
    /// none: the inline editor) and `NO_COLOR`.
    fn start(tag: &str, home: &Path, port: u16, editor: Option<&Path>) -> Self {
        let t = Self {
            sock: format!("gm-tui-{tag}-{}", std::process::id()),
        };
        let cmd = format!(
            "env -u VISUAL -u EDITOR GRAPHMIND_HOME='{}' NO_COLOR=1 {} '{}' tui --port {port}; echo \"EXITED $?\"; sleep 120",
            home.display(),
            editor.map_or_else(String::new, |e| format!("EDITOR='{}'", e.display())),
            env!("CARGO_BIN_EXE_graphmind"),
        );
        let ok = t
            .tmux()
            .args([
                "new-session",
                "-d",
                "-s",
                "tui",
                "-x",
                "120",
                "-y",
                "32",
                &cmd,
            ])
            .status()
            .expect("tmux runs");
        assert!(ok.success(), "tmux new-session failed");
        t
    }

    fn screen(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-t", "tui"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `#{var}` of the pane (`alternate_on`, `cursor_flag`).
    fn var(&self, name: &str) -> String {
        let out = self
            .tmux()
            .args([
                "display-message",
                "-p",
                "-t",
                "tui",
                &format!("#{{{name}}}"),
            ])
            .output()
            .expect("tmux display-message");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            let ok = self
                .tmux()
                .args(["send-keys", "-t", "tui", k])
                .status()
                .expect("tmux send-keys");
            assert!(ok.success());
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    /// The screen once it shows `needle` (at most `secs`); panics with the last screen.
    fn wait_for(&self, needle: &str, secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let s = self.screen();
            if s.contains(needle) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "the TUI did not show {needle:?} within {secs} s; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
    }
}

/// tmux is not installed: the test is skipped, except under `CI=true`, where it fails
/// (`scripts/install-test-deps.sh` installs it).
fn tmux_missing() -> bool {
    let missing = Command::new("tmux").arg("-V").output().is_err();
    assert!(
        !(missing && std::env::var("CI").as_deref() == Ok("true")),
        "tmux is missing under CI=true (scripts/install-test-deps.sh installs it)"
    );
    missing
}

/// An `$EDITOR` that replaces the file it is given with `text`.
fn editor_writing(dir: &Path, name: &str, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!("#!/bin/sh\ncat > \"$1\" <<'EOF'\n{text}\nEOF\n"),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// The fix for the support agent's misread order id: the order it meant.
const FIXED_ORDER: &str = r#"{"order_id":"ORD-1042","amount_cents":4999,"tracking":"TRK-1042-NL"}"#;

fn payloads<'a>(events: &'a [Value], ty: &str, node: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == ty && (node.is_empty() || e["payload"]["nodeId"] == node))
        .map(|e| &e["payload"])
        .collect()
}

/// The `Hold <pauseId>` title of the overlay on `screen` (empty when none).
fn overlay_title(screen: &str) -> String {
    screen
        .lines()
        .find_map(|l| l.split("┌ Hold ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_default()
        .to_owned()
}

fn run_id_of_hold(port: u16) -> String {
    support::wait_for(20, "a hold", || {
        support::read(port, "/api/pauses").json()["pauses"][0]["runId"]
            .as_str()
            .map(str::to_owned)
    })
}

#[test]
fn tui_inject_at_the_error_gate_finishes_the_support_run_ok() {
    if tmux_missing() {
        eprintln!("tmux is not installed: skipped");
        return;
    }
    let h = spawned_hub(&["--allow-control", "inject"]);
    let editor = editor_writing(&h.dir.0, "fix-order.sh", FIXED_ORDER);
    let tui = Tui::start("inject", &h.home, h.port, Some(&editor));
    tui.wait_for("● live", 20);
    assert_eq!(
        tui.var("alternate_on"),
        "1",
        "the TUI draws on the alternate screen"
    );
    block_on(async {
        let gm = attached(h.port, "support-agent").await;
        let task = tokio::spawn({
            let gm = gm.clone();
            async move { gm.run("handle-ticket", support_agent(TICKET)).await }
        });
        let port = h.port;
        let run = tokio::task::spawn_blocking(move || run_id_of_hold(port))
            .await
            .unwrap();
        let screen = tokio::task::spawn_blocking({
            let sock = tui.sock.clone();
            move || {
                let t = Tui { sock };
                let s = t.wait_for("Held (1)", 20);
                t.keys(&["h"]);
                let overlay = t.wait_for("Held on error tool:lookup_order", 10);
                // the app's error and the held input are on the overlay
                assert!(overlay.contains("no order ORD-1O42"), "{overlay}");
                assert!(
                    overlay.contains("1 c continue") && overlay.contains("4 i inject"),
                    "{overlay}"
                );
                t.keys(&["i"]);
                let confirm = t.wait_for("Send inject (inject) with", 10);
                assert!(confirm.contains("ORD-1042"), "{confirm}");
                t.keys(&["Enter"]);
                let done = t.wait_for("released", 20);
                std::mem::forget(t); // the outer handle kills the server
                (s, done)
            }
        })
        .await
        .unwrap();
        assert!(
            screen.0.contains("on error tool:lookup_order"),
            "{}",
            screen.0
        );
        let answer = tokio::time::timeout(Duration::from_secs(20), task)
            .await
            .expect("the run ended")
            .expect("join")
            .expect("not aborted")
            .expect("the agent answered");
        assert!(answer.contains("refunded order ORD-1042"), "{answer}");
        let events = events_when_finished(h.port, &run).await;
        let resumed = payloads(&events, "exec.resumed", "");
        assert_eq!(resumed.len(), 1, "one release, by the TUI");
        assert_eq!(resumed[0]["action"], json!("inject"));
        let fin = payloads(&events, "node.finished", "tool:lookup_order");
        assert_eq!(fin[0]["injected"], json!(true), "{}", fin[0]);
        assert_eq!(
            fin[0]["output"],
            serde_json::from_str::<Value>(FIXED_ORDER).unwrap()
        );
        let end = payloads(&events, "run.finished", "");
        assert_eq!(end[0]["status"], json!("ok"));
        gm.dispose().await;
    });
    tui.keys(&["q"]);
    tui.wait_for("EXITED 0", 10);
    assert_eq!(
        tui.var("alternate_on"),
        "0",
        "quitting left the alternate screen"
    );
    assert_eq!(
        tui.var("cursor_flag"),
        "1",
        "quitting showed the cursor again"
    );
}

#[test]
fn tui_abort_ends_the_run_and_an_action_the_gate_does_not_take_sends_nothing() {
    if tmux_missing() {
        eprintln!("tmux is not installed: skipped");
        return;
    }
    let h = spawned_hub(&["--allow-control", "resume"]);
    let tui = Tui::start("abort", &h.home, h.port, None);
    tui.wait_for("● live", 20);
    block_on(async {
        let gm = attached(h.port, "support-agent").await;
        let task = tokio::spawn({
            let gm = gm.clone();
            async move { gm.run("handle-ticket", support_agent(TICKET)).await }
        });
        let port = h.port;
        let run = tokio::task::spawn_blocking(move || run_id_of_hold(port))
            .await
            .unwrap();
        let sock = tui.sock.clone();
        tokio::task::spawn_blocking(move || {
            let t = Tui { sock };
            t.wait_for("Held (1)", 20);
            t.keys(&["h"]);
            let overlay = t.wait_for("Held on error tool:lookup_order", 10);
            // --allow-control resume: inject and edit are shown unavailable, with why
            assert!(
                overlay
                    .contains("4 i inject  unavailable: the hub runs with --allow-control resume"),
                "{overlay}"
            );
            t.keys(&["i"]);
            t.wait_for("inject is unavailable", 10);
            // the support agent's tools do not take reject at this gate
            t.keys(&["x"]);
            t.wait_for("reject is unavailable: this gate does not take reject", 10);
            t.keys(&["a"]);
            t.wait_for("Send abort run (abort)", 10);
            t.keys(&["Enter"]);
            t.wait_for("released", 20);
            std::mem::forget(t);
        })
        .await
        .unwrap();
        let out = tokio::time::timeout(Duration::from_secs(20), task)
            .await
            .expect("the run ended")
            .expect("join");
        let aborted = out.expect_err("the run was aborted");
        assert_eq!(aborted.run_id(), run);
        let events = events_when_finished(h.port, &run).await;
        let resumed = payloads(&events, "exec.resumed", "");
        assert_eq!(
            resumed.len(),
            1,
            "one release: the unavailable keys sent nothing"
        );
        assert_eq!(resumed[0]["action"], json!("abort"));
        assert_eq!(
            payloads(&events, "run.finished", "")[0]["status"],
            json!("aborted")
        );
        let port = h.port;
        wait_async(10, "the run listed aborted", move || {
            let runs = support::read(port, "/api/runs").json();
            (runs["runs"][0]["status"] == json!("aborted")).then_some(())
        })
        .await;
        gm.dispose().await;
    });
    // Ctrl-C leaves as q does, the terminal restored
    tui.keys(&["C-c"]);
    tui.wait_for("EXITED 0", 10);
    assert_eq!(tui.var("alternate_on"), "0");
}

#[test]
fn tui_edit_at_the_error_gate_retries_the_call_with_the_edited_input() {
    if tmux_missing() {
        eprintln!("tmux is not installed: skipped");
        return;
    }
    let h = spawned_hub(&["--allow-control", "edit"]);
    let editor = editor_writing(
        &h.dir.0,
        "fix-input.sh",
        r#"{"call_id":"call_1","order_id":"ORD-1042"}"#,
    );
    let tui = Tui::start("edit", &h.home, h.port, Some(&editor));
    tui.wait_for("● live", 20);
    block_on(async {
        let gm = attached(h.port, "support-agent").await;
        let task = tokio::spawn({
            let gm = gm.clone();
            async move { gm.run("handle-ticket", support_agent(TICKET)).await }
        });
        let port = h.port;
        let run = tokio::task::spawn_blocking(move || run_id_of_hold(port))
            .await
            .unwrap();
        let sock = tui.sock.clone();
        tokio::task::spawn_blocking(move || {
            let t = Tui { sock };
            t.wait_for("Held (1)", 20);
            t.keys(&["h"]);
            t.wait_for("Held on error tool:lookup_order", 10);
            t.keys(&["e"]);
            let confirm = t.wait_for("Send edit input (retry) with", 10);
            assert!(confirm.contains("ORD-1042"), "{confirm}");
            t.keys(&["Enter"]);
            t.wait_for("released", 20);
            std::mem::forget(t);
        })
        .await
        .unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(20), task)
            .await
            .expect("the run ended")
            .expect("join")
            .expect("not aborted")
            .expect("the agent answered");
        assert!(answer.contains("refunded order ORD-1042"), "{answer}");
        let events = events_when_finished(h.port, &run).await;
        let resumed = payloads(&events, "exec.resumed", "");
        assert_eq!(resumed.len(), 1);
        assert_eq!(resumed[0]["action"], json!("retry"));
        assert_eq!(
            resumed[0]["edited"]["after"]["order_id"],
            json!("ORD-1042"),
            "{}",
            resumed[0]
        );
        let fin = payloads(&events, "node.finished", "tool:lookup_order");
        let last = fin.last().unwrap();
        assert_ne!(last["injected"], json!(true), "the call ran again: {last}");
        assert_eq!(last["output"]["tracking"], json!("TRK-1042-NL"));
        gm.dispose().await;
    });
}

#[test]
fn tui_retry_runs_the_failed_call_again_and_continue_lets_the_agent_correct_itself() {
    if tmux_missing() {
        eprintln!("tmux is not installed: skipped");
        return;
    }
    let h = spawned_hub(&["--allow-control", "resume"]);
    let tui = Tui::start("retry", &h.home, h.port, None);
    tui.wait_for("● live", 20);
    block_on(async {
        let gm = attached(h.port, "support-agent").await;
        let task = tokio::spawn({
            let gm = gm.clone();
            async move { gm.run("handle-ticket", support_agent(TICKET)).await }
        });
        let port = h.port;
        let run = tokio::task::spawn_blocking(move || run_id_of_hold(port))
            .await
            .unwrap();
        let sock = tui.sock.clone();
        tokio::task::spawn_blocking(move || {
            let t = Tui { sock };
            t.wait_for("Held (1)", 20);
            t.keys(&["h"]);
            let first = overlay_title(&t.wait_for("Held on error", 10));
            t.keys(&["r"]);
            t.wait_for("Send retry (retry)", 10);
            t.keys(&["Enter"]);
            t.wait_for("released", 20);
            // the same misread id fails again: held again, a new hold
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                t.wait_for("Held (1)", 20);
                t.keys(&["h"]);
                let title = overlay_title(&t.screen());
                if !title.is_empty() && title != first {
                    break;
                }
                assert!(Instant::now() < deadline, "no second hold: {}", t.screen());
                t.keys(&["Escape"]);
                std::thread::sleep(Duration::from_millis(200));
            }
            t.keys(&["c"]);
            t.wait_for("Send continue (continue)", 10);
            t.keys(&["Enter"]);
            t.wait_for("released", 20);
            std::mem::forget(t);
        })
        .await
        .unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(20), task)
            .await
            .expect("the run ended")
            .expect("join")
            .expect("not aborted")
            .expect("the agent answered");
        assert!(answer.contains("ORD-1042"), "{answer}");
        let events = events_when_finished(h.port, &run).await;
        let actions: Vec<&Value> = payloads(&events, "exec.resumed", "")
            .iter()
            .map(|p| &p["action"])
            .collect();
        assert_eq!(actions, [&json!("retry"), &json!("continue")]);
        assert_eq!(
            payloads(&events, "exec.paused", "tool:lookup_order").len(),
            2
        );
        assert_eq!(
            payloads(&events, "run.finished", "")[0]["status"],
            json!("ok")
        );
        gm.dispose().await;
    });
}

#[test]
fn tui_keeps_running_while_the_hub_restarts_and_says_so() {
    if tmux_missing() {
        eprintln!("tmux is not installed: skipped");
        return;
    }
    let dir = support::TempDir::new("tui-restart");
    let db = dir.0.join("graphmind.db");
    let mut hub = support::serve_on_free_port(&dir.0, &db, &[]);
    let port = hub.port;
    let tui = Tui::start("restart", &dir.0, port, None);
    tui.wait_for("● live", 20);
    support::kill_hard(&mut hub);
    let lost = tui.wait_for("hub lost, reconnecting", 20);
    assert!(lost.contains(&format!("no hub on port {port}")), "{lost}");
    // the TUI reads the run file again on each try (a restarted hub may hold a new token)
    let _hub = support::serve_on(&dir.0, port, &db, &[]).expect("restart on the same port");
    tui.wait_for(&format!("reconnected to the hub on port {port}"), 20);
    let screen = tui.wait_for("● live", 10);
    assert!(!screen.contains("hub lost"), "{screen}");
}

#[test]
fn tui_help_names_the_hub_lookup_the_hold_keys_and_no_color() {
    let out = Command::new(env!("CARGO_BIN_EXE_graphmind"))
        .args(["tui", "--help"])
        .output()
        .expect("graphmind runs");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for want in [
        "--port <PORT>",
        "--no-color",
        "--allow-control",
        "c continue, s step, r retry, i inject, e edit, x reject, a abort",
        "NO_COLOR",
    ] {
        assert!(help.contains(want), "{want:?} missing from:\n{help}");
    }
}

/// `graphmind demo` names `graphmind tui` with its own port beside the viewer.
#[test]
fn the_demo_tells_how_to_decide_its_hold_in_the_terminal() {
    use std::io::Read;
    use std::process::Stdio;
    let home = support::TempDir::new("demo-tui");
    let mut child = support::graphmind_in(&home.0)
        .args(["demo", "--no-open", "--port", "0", "--json"])
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env_remove("GRAPHMIND_URL")
        .env_remove("GRAPHMIND_DISABLED")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn graphmind demo");
    let line = support::first_json_line(&mut child, "demo").unwrap_or_else(|e| panic!("{e}"));
    let port = line["port"].as_u64().expect("port");
    let run_file = home.0.join("run").join(format!("serve-{port}.json"));
    let run: Value = serde_json::from_str(&std::fs::read_to_string(&run_file).expect("run file"))
        .expect("run file is JSON");
    let auth = format!("Bearer {}", run["token"].as_str().expect("token"));
    support::wait_for(20, "the demo run to hold on its error", || {
        let r = support::http(
            u16::try_from(port).unwrap(),
            "GET",
            "/api/pauses",
            &[("Authorization", &auth)],
            None,
        );
        (r.status == 200 && r.json()["pauses"].as_array().is_some_and(|p| !p.is_empty()))
            .then_some(())
    });
    let _ = child.kill();
    let _ = child.wait();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let err = err.replace('\n', " ");
    assert!(
        err.contains(&format!(
            "in the terminal with `graphmind tui --port {port}`"
        )),
        "stderr: {err}"
    );
}
