//! What the control commands print and change when they succeed: runs, record (paged NDJSON),
//! pauses, wait (human and --json, with the resume commands), resume (inject from @file),
//! break set/clear/list and mode, which reach a connected app.

mod support;

use serde_json::{Value, json};
use support::*;

#[test]
fn runs_and_record_show_what_the_hub_stored() {
    let h = hub(|_| {});
    let port = h.port.to_string();
    let out = gm(&h.home, &["runs", "--port", &port]).expect(0);
    assert_eq!(out.stdout, "no runs yet\n");
    let run = "run_700000000001";
    let n_events: u64 = 12_345; // more than one page of `record`
    block_on(async {
        let mut app = App::running(h.port, run, "record-me").await;
        for i in 0..n_events - 2 {
            app.emit(
                run,
                "node.token",
                json!({"nodeId": "llm:step", "deltas": [{"t": "text", "v": format!("t{i}")}]}),
            )
            .await;
        }
        app.emit(run, "run.finished", json!({"status": "ok"})).await;
    });
    let events = wait_for(10, "all events stored", || {
        let ev = h.events(run);
        (ev.len() as u64 == n_events).then_some(ev)
    });

    let out = gm(&h.home, &["runs", "--json", "--port", &port]).expect(0);
    let runs = out.json()["runs"].as_array().cloned().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["runId"], json!(run));
    assert_eq!(runs[0]["name"], json!("record-me"));
    assert_eq!(runs[0]["status"], json!("ok"));
    assert_eq!(runs[0]["eventCount"], json!(n_events));

    let out = gm(&h.home, &["runs", "--port", &port]).expect(0);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    assert!(lines[0].starts_with("RUN"));
    let cols: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(&cols[..4], &[run, "ok", "no", &n_events.to_string()]);
    assert_eq!(cols.last(), Some(&"record-me"));

    // stdout: one stored envelope per line, in seq order, all of them.
    let out = gm(&h.home, &["record", run, "--port", &port]).expect(0);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(lines, events);
    assert_eq!(lines[0]["type"], json!("run.started"));
    assert_eq!(lines[lines.len() - 1]["type"], json!("run.finished"));

    // --out FILE: the same lines in the file, a note on stderr.
    let file = h.home.join("rec.ndjson");
    let out = gm(
        &h.home,
        &[
            "record",
            run,
            "--out",
            file.to_str().unwrap(),
            "--port",
            &port,
        ],
    )
    .expect(0);
    assert!(out.stdout.is_empty());
    assert!(
        out.stderr.contains(&format!("wrote {n_events} events")),
        "{}",
        out.stderr
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.lines().count() as u64, n_events);
    assert_eq!(
        serde_json::from_str::<Value>(text.lines().nth(5).unwrap()).unwrap(),
        events[5]
    );
}

#[test]
fn pauses_wait_and_resume_release_a_held_gate() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    let port = h.port.to_string();
    let run = "run_700000000002";
    block_on(async {
        let mut app = App::running(h.port, run, "gate").await;
        let out = gm_on(&h, &["pauses"]).await.expect(0);
        assert_eq!(out.stdout, "no open pauses\n");

        // `wait` blocks until the pause opens.
        let waiter = tokio::spawn(gm_async(
            h.home.clone(),
            args(&["wait", "--json", "--timeout", "10", "--port", &port]),
        ));
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert!(
            !waiter.is_finished(),
            "wait returned before any pause opened"
        );
        app.pause_at(
            run,
            "search",
            "pause_w_1",
            "before",
            json!({"q": "flights"}),
        )
        .await;
        let out = waiter.await.unwrap().expect(0);
        let p = out.json();
        assert_eq!(p["pauseId"], json!("pause_w_1"));
        assert_eq!(p["runId"], json!(run));
        assert_eq!(p["nodeId"], json!("tool:search"));
        assert_eq!(p["point"], json!("before"));
        assert_eq!(p["input"], json!({"q": "flights"}));
        let cmds: Vec<&str> = p["resume"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert_eq!(
            cmds[0],
            format!("graphmind resume pause_w_1 --run {run} --port {port} --action continue")
        );
        assert!(cmds.iter().any(|c| c.contains("--action inject --output")));

        // Human form: the held node's input and the commands.
        let out = gm_on(&h, &["wait", "--timeout", "1"]).await.expect(0);
        assert!(
            out.stdout.starts_with(&format!(
                "paused: tool:search at before (breakpoint) in run {run}\n"
            )),
            "{}",
            out.stdout
        );
        assert!(
            out.stdout.contains("  input   {\"q\":\"flights\"}\n"),
            "{}",
            out.stdout
        );
        assert!(out.stdout.contains(&format!(
            "  graphmind resume pause_w_1 --run {run} --port {port} --action abort\n"
        )));

        // `wait --run` ignores pauses of other runs.
        let out = gm_on(&h, &["wait", "--run", "run_other", "--timeout", "0.3"])
            .await
            .expect(2);
        assert!(out.stdout.is_empty(), "{}", out.stdout);
        let out = gm_on(&h, &["pauses", "--json", "--run", run])
            .await
            .expect(0);
        assert_eq!(out.json()["pauses"][0]["pauseId"], json!("pause_w_1"));
        let out = gm_on(&h, &["pauses", "--json", "--run", "run_other"])
            .await
            .expect(0);
        assert_eq!(out.json(), json!({"pauses": []}));
        let out = gm_on(&h, &["pauses"]).await.expect(0);
        assert!(
            out.stdout.lines().nth(1).unwrap().starts_with("pause_w_1 "),
            "{}",
            out.stdout
        );

        // Inject a value read from a file.
        let file = h.home.join("inject.json");
        std::fs::write(&file, r#"{"flights": ["LH 400", "UA 901"]}"#).unwrap();
        let at = format!("@{}", file.display());
        let resume = tokio::spawn(gm_async(
            h.home.clone(),
            args(&[
                "resume",
                "pause_w_1",
                "--run",
                run,
                "--action",
                "inject",
                "--output",
                &at,
                "--port",
                &port,
            ]),
        ));
        let frame = app.expect_resume(10_000).await;
        assert_eq!(frame["payload"]["action"], json!("inject"));
        assert_eq!(
            frame["payload"]["output"],
            json!({"flights": ["LH 400", "UA 901"]})
        );
        app.emit(
            run,
            "exec.resumed",
            json!({"pauseId": "pause_w_1", "action": "inject"}),
        )
        .await;
        let out = resume.await.unwrap().expect(0);
        assert_eq!(
            out.stdout,
            format!("resumed pause_w_1 of run {run} (inject)\n")
        );
        let out = gm_on(&h, &["pauses", "--json"]).await.expect(0);
        assert_eq!(out.json(), json!({"pauses": []}));
    });
}

#[test]
fn break_and_mode_change_the_debug_state_and_reach_the_app() {
    let h = hub(|c| {
        c.breakpoints.clear();
        c.allow_control = graphmind_hub::AllowControl::Resume;
    });
    block_on(async {
        let mut app = App::connect(h.port).await;
        assert_eq!(app.ack["payload"]["breakpoints"], json!([]));

        let out = gm_on(&h, &["break", "set", "--kind", "tool", "--name", "add"])
            .await
            .expect(0);
        assert_eq!(
            out.stdout,
            "mode: run\nbreakpoints:\n  kind=tool name=add (point before)\n"
        );
        let f = app
            .peer
            .until(5000, |v| v["type"] == "breakpoint.set")
            .await;
        assert_eq!(
            f["payload"]["matcher"],
            json!({"kind": "tool", "name": "add"})
        );

        gm_on(&h, &["break", "set", "--point", "error", "--kind", "llm"])
            .await
            .expect(0);
        // Setting an equal matcher again adds nothing.
        let out = gm_on(
            &h,
            &[
                "break", "set", "--point", "error", "--kind", "llm", "--json",
            ],
        )
        .await
        .expect(0);
        assert_eq!(
            out.json()["breakpoints"],
            json!([{"kind": "tool", "name": "add"}, {"kind": "llm", "point": "error"}])
        );

        let out = gm_on(
            &h,
            &[
                "break", "clear", "--kind", "tool", "--name", "add", "--json",
            ],
        )
        .await
        .expect(0);
        assert_eq!(
            out.json()["breakpoints"],
            json!([{"kind": "llm", "point": "error"}])
        );
        let f = app
            .peer
            .until(5000, |v| v["type"] == "breakpoint.clear")
            .await;
        assert_eq!(
            f["payload"]["matcher"],
            json!({"kind": "tool", "name": "add"})
        );

        let out = gm_on(&h, &["mode", "step"]).await.expect(0);
        assert!(out.stdout.starts_with("mode: step\n"), "{}", out.stdout);
        let f = app.peer.until(5000, |v| v["type"] == "mode.set").await;
        assert_eq!(f["payload"]["mode"], json!("step"));

        let out = gm_on(&h, &["break", "list", "--json"]).await.expect(0);
        assert_eq!(
            out.json(),
            json!({"breakpoints": [{"kind": "llm", "point": "error"}], "mode": "step"})
        );

        // clear without a matcher clears all.
        let out = gm_on(&h, &["break", "clear"]).await.expect(0);
        assert_eq!(out.stdout, "mode: step\nbreakpoints: none\n");
        gm_on(&h, &["mode", "run"]).await.expect(0);
    });
    assert_eq!(
        h.get_json("/api/debug"),
        json!({"breakpoints": [], "mode": "run"})
    );
}
