//! A control command without `--port`, when nothing answers on the default port: it finds the
//! one live hub by the run files of `$GRAPHMIND_HOME/run` (a `serve --port 0`), never a stale
//! run file (its hub died, or another process has its port now), and names the ports when
//! several hubs run. Before, it only said "no debugger on port 4747" and exited 3.
//! `GRAPHMIND_DEFAULT_PORT` stands in for 4747, which may be busy on the test machine.

mod support;

use std::path::Path;

use serde_json::json;
use support::*;

/// A port nothing listens on, as the default port of the command.
fn nothing_on_default() -> String {
    free_port().to_string()
}

/// `graphmind <args>` in `home`, the default port being `default`.
fn gm_default(home: &Path, default: &str, a: &[&str]) -> Out {
    gm_env(home, &[("GRAPHMIND_DEFAULT_PORT", default)], a)
}

/// A run file in `home` for `port` with `pid`, as a hub writes it.
fn plant_run_file(home: &Path, port: u16, pid: u64) {
    let dir = home.join("run");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("serve-{port}.json")),
        json!({"port": port, "pid": pid, "url": format!("http://127.0.0.1:{port}"),
               "token": "00112233445566778899aabbccddeeff", "allowControl": "inject",
               "version": "0.1.0"})
        .to_string(),
    )
    .unwrap();
}

#[test]
fn runs_without_port_uses_the_one_live_hub_and_skips_stale_run_files() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    // A hub that died without cleaning up: nothing listens on its port.
    plant_run_file(&h.home, free_port(), 999_999);
    // A hub of another home now listens on the port a dead hub's run file names.
    let other = hub(|_| {});
    plant_run_file(&h.home, other.port, 999_998);
    let default = nothing_on_default();
    block_on(async {
        let _app = App::running(h.port, "run_f1d000000001", "found").await;
        wait_async(5, "the run listed", {
            let port = h.port;
            move || {
                let r = read(port, "/api/runs");
                (r.body.contains("run_f1d000000001")).then_some(())
            }
        })
        .await;
        let out = gm_default(&h.home, &default, &["runs", "--json"]).expect(0);
        let runs = out.json()["runs"].as_array().cloned().unwrap_or_default();
        assert_eq!(runs.len(), 1, "{}", out.stdout);
        assert_eq!(runs[0]["runId"], json!("run_f1d000000001"));
        assert!(
            out.stderr
                .contains(&format!("using the graphmind serve on port {}", h.port)),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains(&format!("nothing on port {default}")));
    });
    // A mutation goes to the same hub, with its run file's agent token.
    gm_default(&h.home, &default, &["mode", "step"]).expect(0);
    assert_eq!(h.get_json("/api/debug")["mode"], json!("step"));
    assert_eq!(other.get_json("/api/debug")["mode"], json!("run"));
}

#[test]
fn without_port_several_live_hubs_are_named_and_none_is_picked() {
    let h = hub(|_| {});
    let db = h.home.join("second.db");
    let second = InProcessHub::start_in(&h.home, |c| c.db = db.to_str().unwrap().into());
    let default = nothing_on_default();
    let out = gm_default(&h.home, &default, &["mode", "step"]).expect(3);
    let line = out.one_line_error();
    let (lo, hi) = (h.port.min(second.port), h.port.max(second.port));
    assert_eq!(
        line,
        format!(
            "graphmind: no debugger on port {default}, but graphmind serve runs on ports \
             {lo}, {hi}: pass --port N (or set GRAPHMIND_PORT)"
        )
    );
    assert_eq!(h.get_json("/api/debug")["mode"], json!("run"));
    assert_eq!(second.get_json("/api/debug")["mode"], json!("run"));
    // A usage error stays a usage error, whichever hub would have answered.
    for a in [
        vec!["resume", "p", "--run", "r", "--action", "inject"],
        vec!["break", "set"],
        vec!["wait", "--timeout", "-1"],
    ] {
        let out = gm_default(&h.home, &default, &a).expect(1);
        assert!(!out.stderr.contains("pass --port"), "{a:?}: {}", out.stderr);
    }
}

#[test]
fn without_port_and_only_stale_run_files_nothing_is_picked() {
    let dir = TempDir::new("find-stale");
    plant_run_file(&dir.0, free_port(), 999_999);
    // A live hub's port, but the run file is not that hub's (another pid).
    let other = hub(|_| {});
    plant_run_file(&dir.0, other.port, 999_998);
    let default = nothing_on_default();
    let out = gm_default(&dir.0, &default, &["runs"]).expect(3);
    assert_eq!(
        out.one_line_error(),
        format!("graphmind: no debugger on port {default} (start one with `graphmind serve`)")
    );
    assert!(out.took.as_secs() < 5, "took {:?}", out.took);
}

#[test]
fn an_explicit_port_is_never_swapped_for_a_live_hub() {
    let h = hub(|_| {});
    let dead = free_port().to_string();
    let out = gm_default(&h.home, &dead, &["runs", "--port", &dead]).expect(3);
    assert!(
        out.stderr.contains(&format!("no debugger on port {dead}")),
        "{}",
        out.stderr
    );
}

/// Regression: every control command printed "nothing on port 4747; using …" when the hub was
/// found through its run file; `GRAPHMIND_PORT` names the hub once for all commands (no
/// look-up, nothing said), `--port` still wins, and a value that is not a port is refused.
#[test]
fn graphmind_port_names_the_hub_without_the_look_up_message() {
    let h = hub(|_| {});
    let default = nothing_on_default();
    let port = h.port.to_string();
    let looked_up = gm_default(&h.home, &default, &["runs", "--json"]).expect(0);
    assert!(
        looked_up
            .stderr
            .contains("using the graphmind serve on port")
            && looked_up.stderr.contains(&format!("GRAPHMIND_PORT={port}")),
        "{}",
        looked_up.stderr
    );
    let env = [
        ("GRAPHMIND_DEFAULT_PORT", default.as_str()),
        ("GRAPHMIND_PORT", port.as_str()),
    ];
    let out = gm_env(&h.home, &env, &["runs", "--json"]).expect(0);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    assert!(out.json()["runs"].is_array(), "{}", out.stdout);
    // --port beats it.
    let elsewhere = free_port().to_string();
    let env = [("GRAPHMIND_PORT", elsewhere.as_str())];
    gm_env(&h.home, &env, &["runs", "--port", &port]).expect(0);
    let out = gm_env(&h.home, &env, &["runs"]).expect(3);
    assert!(out.one_line_error().contains(&elsewhere), "{}", out.stderr);
    let out = gm_env(&h.home, &[("GRAPHMIND_PORT", "47x")], &["runs"]).expect(1);
    assert!(
        out.one_line_error().contains("GRAPHMIND_PORT"),
        "{}",
        out.stderr
    );
}
