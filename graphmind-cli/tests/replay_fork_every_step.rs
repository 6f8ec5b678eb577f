//! `graphmind replay` against a real hub: the support agent's stored run, fetched with
//! `graphmind record`, replayed up to step k for every k of its steps — no body before k
//! runs (counters in the scripted model and tools), every output is the stored one, the live
//! part really runs, and the new run names its source (`meta.replayOf`). A changed prompt
//! stops the replay at the right step and field; `--hold` holds at the fork point first
//! (reason `replay`, as `graphmind wait` and `graphmind pauses` show it);
//! `graphmind replay … -- cmd` hands the app the recording, and `graphmind diff` lists the
//! first divergence.

mod support;

use serde_json::{Value, json};
use support::{attached, block_on, config, gm, gm_on, gm_wait_pause, hub, run_named, wait_for};

use graphmind_examples::{TICKET, calls, support_agent, support_agent_with};

/// `(node, status, output)` of every tool and model step that finished, in order.
fn finished(events: &[Value]) -> Vec<(String, String, Value)> {
    events
        .iter()
        .filter(|e| e["type"] == "node.finished")
        .filter(|e| {
            !e["payload"]["nodeId"]
                .as_str()
                .unwrap_or("")
                .starts_with("agent:")
        })
        .map(|e| {
            let p = &e["payload"];
            (
                p["nodeId"].as_str().unwrap_or("").to_owned(),
                p["status"].as_str().unwrap_or("").to_owned(),
                p["output"].clone(),
            )
        })
        .collect()
}

/// The node ids of the steps, in start order.
fn step_nodes(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "node.started" && e["payload"]["kind"] != "agent")
        .map(|e| e["payload"]["nodeId"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// `graphmind diff`'s "they differ": exit 1, the difference on stdout.
fn differ(out: support::Out) -> support::Out {
    assert_eq!(
        out.code, 1,
        "stdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
    assert!(!out.stdout.is_empty(), "{}", out.stderr);
    out
}

fn meta_of(events: &[Value]) -> Value {
    events
        .iter()
        .find(|e| e["type"] == "run.started")
        .map(|e| e["payload"]["meta"].clone())
        .unwrap_or(Value::Null)
}

#[test]
fn the_support_run_replayed_to_every_step_runs_nothing_before_it_and_the_rest_live() {
    let h = hub(|c| {
        c.breakpoints.clear();
        c.allow_control = graphmind_hub::AllowControl::Resume;
    });
    let port = h.port;
    // The original run, live.
    block_on(async move {
        let gm = attached(port, "support-agent").await;
        let answer = gm
            .run_result("handle-ticket", support_agent(TICKET))
            .await
            .expect("not aborted")
            .expect("answered");
        assert!(answer.contains("RF-1042"), "{answer}");
        gm.dispose().await;
    });
    let runs = wait_for(10, "the run stored", || {
        let runs = h.runs();
        run_named(&runs, "handle-ticket")
            .filter(|r| r["status"] == json!("ok"))
            .map(|_| runs)
    });
    let source = run_named(&runs, "handle-ticket").expect("listed")["runId"]
        .as_str()
        .expect("runId")
        .to_owned();
    let stored = h.events(&source);
    let nodes = step_nodes(&stored);
    assert_eq!(nodes.len(), 9, "{nodes:?}");
    let file = h.dir.0.join("run.ndjson");
    let p = port.to_string();
    let file_s = file.to_string_lossy().into_owned();
    gm(
        &h.home,
        &["record", &source, "--port", &p, "--out", &file_s],
    )
    .expect(0);

    let replay = |k: Option<usize>, system: &'static str| {
        let mut vars = vec![("GRAPHMIND_REPLAY".to_owned(), file_s.clone())];
        if let Some(k) = k {
            vars.push(("GRAPHMIND_REPLAY_UNTIL".into(), k.to_string()));
        }
        block_on(async move {
            let gm = graphmind::Session::new(config(port, "support-agent").env_vars(vars));
            assert!(
                gm.ready(std::time::Duration::from_secs(5)).await,
                "attached"
            );
            let before = calls();
            let out = gm
                .run("handle-ticket", support_agent_with(system, TICKET))
                .await;
            let ran = calls().since(before);
            gm.dispose().await;
            (out.is_ok(), ran)
        })
    };
    let stored_replay = |k: Option<usize>| {
        wait_for(10, "the replayed run stored", || {
            h.runs()
                .iter()
                .filter(|r| r["status"] != json!("running"))
                .map(|r| r["runId"].as_str().unwrap_or("").to_owned())
                .find(|id| {
                    let ev = h.events(id);
                    let m = meta_of(&ev);
                    m["replayOf"] == json!(source)
                        && m.get("replayUntil").cloned() == k.map(|k| json!(k))
                        && ev.iter().any(|e| e["type"] == "run.finished")
                })
        })
    };
    for k in (1..=nodes.len()).map(Some).chain([None]) {
        let (ok, ran) = replay(k, graphmind_examples::SYSTEM_PROMPT);
        assert!(ok, "k = {k:?}");
        // What must have run: every step from k on, and nothing before it — the recorded
        // error of step 2 included (the tools are `replay_errors`: it is replayed as an `Err`).
        let live = |node: &str| {
            nodes
                .iter()
                .enumerate()
                .filter(|(i, n)| *n == node && k.is_some_and(|k| i + 1 >= k))
                .count()
        };
        assert_eq!(ran.model, live("llm:step"), "model calls, k = {k:?}");
        assert_eq!(ran.lookup_order, live("tool:lookup_order"), "k = {k:?}");
        assert_eq!(
            ran.shipping_status,
            live("tool:shipping_status"),
            "k = {k:?}"
        );
        assert_eq!(ran.issue_refund, live("tool:issue_refund"), "k = {k:?}");
        let id = stored_replay(k);
        let events = h.events(&id);
        assert_eq!(finished(&events), finished(&stored), "outputs, k = {k:?}");
        let served = events
            .iter()
            .filter(|e| e["type"] == "node.finished" && e["payload"]["replayed"] == json!(true))
            .count();
        let expected_served = (0..nodes.len())
            .filter(|i| k.is_none_or(|k| i + 1 < k))
            .count();
        assert_eq!(served, expected_served, "k = {k:?}");
    }

    // A replay that went live nowhere (stored before any other run names the source).
    let same = stored_replay(None);

    // One word of the prompt changed: stopped at step 1, naming node and field.
    let (ok, ran) = replay(None, "You are a support bot. Use the tools; be brief.");
    assert!(!ok, "the run is aborted at the divergence");
    assert_eq!(ran.total(), 0, "{ran:?}");
    let diverged = wait_for(10, "the diverged run stored", || {
        h.runs().iter().find_map(|r| {
            let id = r["runId"].as_str()?.to_owned();
            let ev = h.events(&id);
            ev.iter()
                .find(|e| {
                    e["type"] == "node.error" && e["payload"]["error"]["name"] == "ReplayDiverged"
                })
                .map(|e| (id, e.clone()))
        })
    });
    let message = diverged.1["payload"]["error"]["message"]
        .as_str()
        .unwrap_or("");
    assert!(
        message.starts_with(
            "replay diverged at step 1 (llm:step `step`): input field $.request.messages[0].content was recorded as \"You are a support agent."
        ),
        "{message}"
    );
    assert_eq!(diverged.1["payload"]["nodeId"], json!("llm:step"));

    // `graphmind diff`: the diverged run differs at step 1's prompt (exit 1: they differ).
    let out = differ(gm(
        &h.home,
        &["diff", &source, &diverged.0, "--port", &p, "--json"],
    ));
    let d = out.json();
    let first = d["firstDivergence"].as_str().unwrap_or("");
    assert!(
        first.starts_with("step 1 (llm:step `step`): input $.request.messages[0].content is \"You are a support agent."),
        "{d}"
    );
    // Regression: the text diff of two fetched runs printed "wrote N events to /tmp/…" on
    // stderr and rows of 250 characters; nothing on stderr, and short rows.
    let out = differ(gm(&h.home, &["diff", &source, &diverged.0, "--port", &p]));
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    assert!(
        out.stdout.lines().all(|l| l.chars().count() <= 100),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .starts_with(&format!("--- {source}\n+++ {}\n", diverged.0)),
        "{}",
        out.stdout
    );
    // A replay that went live nowhere matches its source (exit 0).
    let out = gm(&h.home, &["diff", &source, &same, "--port", &p, "--json"]).expect(0);
    assert_eq!(out.json()["firstDivergence"], Value::Null, "{}", out.stdout);
    // A run the hub does not have is trouble, not a difference (exit 2).
    let out = gm(&h.home, &["diff", &source, "run_nope", "--port", &p]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert_eq!(
        out.stderr.lines().last(),
        Some("graphmind: no run run_nope"),
        "{}",
        out.stderr
    );

    // `graphmind replay <run> -- cmd` fetches the recording and hands it to the command.
    let out = gm(
        &h.home,
        &[
            "replay",
            &source,
            "--port",
            &p,
            "--until",
            "3",
            "--",
            "sh",
            "-c",
            "grep -c node.started \"$GRAPHMIND_REPLAY\"; echo \"$GRAPHMIND_REPLAY_UNTIL $GRAPHMIND_REPLAY_ON_DIVERGE $GRAPHMIND_URL\"; exit 7",
        ],
    );
    // The command's exit code is replay's.
    assert_eq!(out.code, 7, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        format!("10\n3 stop ws://127.0.0.1:{port}/ingest\n"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains(&format!("replaying {source} (9 steps, live from 3)")),
        "{}",
        out.stderr
    );

    // `--hold` (GRAPHMIND_REPLAY_HOLD=1): the fork point holds on the hub first, a real
    // pause, with nothing before it run; continued, the rest runs live.
    let vars = vec![
        ("GRAPHMIND_REPLAY".to_owned(), file_s.clone()),
        ("GRAPHMIND_REPLAY_UNTIL".to_owned(), "3".to_owned()),
        ("GRAPHMIND_REPLAY_HOLD".to_owned(), "1".to_owned()),
    ];
    block_on(async {
        let gm = graphmind::Session::new(config(port, "support-agent").env_vars(vars));
        assert!(
            gm.ready(std::time::Duration::from_secs(5)).await,
            "attached"
        );
        let before = calls();
        let task = tokio::spawn({
            let gm = gm.clone();
            async move { gm.run("handle-ticket", support_agent(TICKET)).await }
        });
        let paused = gm_wait_pause(&h).await;
        assert_eq!(paused["nodeId"], json!("llm:step"), "{paused}");
        assert_eq!(paused["point"], json!("before"));
        // Its own reason (issue 35), not "a breakpoint matched".
        assert_eq!(paused["reason"], json!("replay"), "{paused}");
        let listed = gm_on(&h, &["pauses"]).await.expect(0);
        let row = listed
            .stdout
            .lines()
            .find(|l| l.contains("llm:step"))
            .unwrap_or_else(|| panic!("the pause listed: {}", listed.stdout));
        assert!(
            row.split_whitespace().any(|w| w == "replay"),
            "graphmind pauses shows the reason: {row}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        assert!(!task.is_finished(), "the fork point holds");
        let held = calls().since(before);
        assert_eq!(
            (held.model, held.lookup_order),
            (0, 0),
            "nothing before the fork point ran, the recorded error included: {held:?}"
        );
        let (pause, run) = (
            paused["pauseId"].as_str().expect("pauseId"),
            paused["runId"].as_str().expect("runId"),
        );
        gm_on(&h, &["resume", pause, "--run", run, "--action", "continue"])
            .await
            .expect(0);
        let out = tokio::time::timeout(std::time::Duration::from_secs(10), task)
            .await
            .expect("the run went on")
            .expect("joined");
        assert!(out.is_ok(), "not aborted");
        let ran = calls().since(before);
        assert_eq!(
            ran.model, 4,
            "the model steps from step 3 on (3, 5, 7, 9): {ran:?}"
        );
        gm.dispose().await;
    });
}

/// `graphmind diff` exits like diff(1), on recording files with no hub: 0 the same, 1 they
/// differ (the first divergence printed), 2 trouble (a file that is not a recording, a run id
/// with no hub to fetch it from) with one line on stderr and nothing on stdout.
#[test]
fn diff_exits_0_when_runs_match_1_when_they_differ_and_2_when_they_cannot_be_compared() {
    let dir = support::TempDir::new("diff-exit");
    let home = dir.0.join("home");
    std::fs::create_dir_all(&home).expect("home");
    let write = |name: &str, run: &str, q: &str| {
        let path = dir.0.join(name);
        std::fs::write(
            &path,
            format!(
                r#"{{"type":"node.started","runId":"{run}","payload":{{"nodeId":"tool:a","kind":"tool","name":"a","instanceId":"1","input":{{"q":"{q}"}}}}}}
{{"type":"node.finished","runId":"{run}","payload":{{"nodeId":"tool:a","instanceId":"1","status":"ok","output":1}}}}
"#
            ),
        )
        .expect("write");
        path.to_string_lossy().into_owned()
    };
    let (a, same, other) = (
        write("a.ndjson", "run_a", "x"),
        write("b.ndjson", "run_b", "x"),
        write("c.ndjson", "run_c", "y"),
    );
    let out = gm(&home, &["diff", &a, &same]).expect(0);
    assert!(out.stdout.starts_with("no difference"), "{}", out.stdout);
    // Read like diff(1) and `git diff --stat`: the runs, the divergence as -/+ lines, one
    // short row per node.
    let out = differ(gm(&home, &["diff", &a, &other]));
    assert_eq!(
        out.stdout,
        "--- run_a\n+++ run_c\nfirst divergence: step 1 (tool:a `a`): input $.q\n- \"x\"\n+ \"y\"\n \
         tool:a |   1 vs 1   | 1 input differs\n 1 node, 1 differs\n"
    );
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    let out = differ(gm(&home, &["diff", &a, &other, "--json"]));
    assert_ne!(out.json()["firstDivergence"], Value::Null);
    let not_a_recording = dir.0.join("empty.ndjson");
    std::fs::write(&not_a_recording, "{\"type\":\"run.started\"}\n").expect("write");
    let port = support::free_port().to_string();
    for args in [
        vec!["diff", a.as_str(), not_a_recording.to_str().expect("utf-8")],
        vec!["diff", a.as_str(), "run_not_a_file", "--port", &port],
    ] {
        let out = gm(&home, &args).expect(2);
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
    }
}
