//! `graphmind replay --until` is checked against the recording before the app starts
//! (issue 34: `step -1` or a misspelt node silently replayed everything): a step outside the
//! recording's range, a step that is not a number, or a node no step has is refused (exit 1,
//! one line naming the valid range and the run's nodes) and the app never starts; a step in
//! range or a node id or name the recording has runs it (a shell command making no call, so
//! replay exits 1 saying the app reported no replay).

mod support;

use support::gm;

#[test]
fn until_outside_the_recording_is_refused_with_the_range_and_the_node_names() {
    let dir = support::TempDir::new("replay-until");
    let home = dir.0.join("home");
    std::fs::create_dir_all(&home).expect("home");
    let file = dir.0.join("run.ndjson");
    std::fs::write(
        &file,
        r#"{"type":"node.started","runId":"run_u","payload":{"nodeId":"tool:lookup_order","kind":"tool","name":"lookup_order","instanceId":"1","input":{"q":"x"}}}
{"type":"node.finished","runId":"run_u","payload":{"nodeId":"tool:lookup_order","instanceId":"1","status":"ok","output":1}}
{"type":"node.started","runId":"run_u","payload":{"nodeId":"llm:step","kind":"llm","name":"step","instanceId":"2","input":{"q":"y"}}}
{"type":"node.finished","runId":"run_u","payload":{"nodeId":"llm:step","instanceId":"2","status":"ok","output":2}}
"#,
    )
    .expect("write");
    let file = file.to_str().expect("utf-8");
    let marker = dir.0.join("started");
    let app = format!("touch '{}'", marker.display());
    let replay = |until: &str| {
        gm(
            &home,
            &[
                "replay",
                file,
                &format!("--until={until}"),
                "--",
                "sh",
                "-c",
                &app,
            ],
        )
    };
    for (until, says) in [
        (
            "step -1",
            "\"step -1\": is not a step number: give a step from 1 to 2 or a node of run_u: tool:lookup_order (lookup_order), llm:step (step)",
        ),
        (
            "-1",
            "\"-1\": is not a step number: give a step from 1 to 2",
        ),
        (
            "step x",
            "\"step x\": is not a step number: give a step from 1 to 2",
        ),
        (
            "0",
            "\"0\": run_u has no step 0: give a step from 1 to 2 or a node of run_u: tool:lookup_order (lookup_order), llm:step (step)",
        ),
        (
            "step 3",
            "\"step 3\": run_u has no step 3: give a step from 1 to 2 or a node of run_u: tool:lookup_order (lookup_order), llm:step (step)",
        ),
        (
            "lookup_ordr",
            "\"lookup_ordr\": names no node of the recording: give a step from 1 to 2 or a node of run_u: tool:lookup_order (lookup_order), llm:step (step)",
        ),
    ] {
        let out = replay(until).expect(1);
        let line = out.one_line_error();
        assert!(line.contains(says), "--until {until}: {line}");
        assert!(!marker.exists(), "--until {until}: the app did not start");
    }
    for until in [
        "1",
        "step 2",
        "lookup_order",
        "tool:lookup_order",
        "llm:step",
        "step",
    ] {
        // The app (a shell command) makes no call: replay cannot call that whole.
        let out = replay(until);
        assert_eq!(out.code, 1, "--until {until}: {}", out.stderr);
        assert!(
            out.stderr
                .contains("graphmind: the app reported no replay of run_u"),
            "--until {until}: {}",
            out.stderr
        );
        assert!(marker.exists(), "--until {until} runs the app");
        std::fs::remove_file(&marker).expect("reset");
    }
}
