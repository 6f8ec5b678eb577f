//! `graphmind resume --input / --reason / --remember` against the real binary and an app
//! played by hand: the edited input reaches the app and the command prints the input the call
//! ran with; a refusal of the edit exits 6 naming its code; the flags that do not fit an
//! action are usage errors (exit 1) that reach no hub; `graphmind wait` says a gate is
//! editable and offers the `--input` command.

mod support;

use serde_json::json;
use support::*;

#[test]
fn edit_flags_that_do_not_fit_the_action_are_usage_errors() {
    let dir = TempDir::new("cli-edit-usage");
    let port = free_port().to_string();
    let p = port.as_str();
    for (a, says) in [
        (
            vec!["--action", "abort", "--input", "{}"],
            "--input goes with --action continue or retry",
        ),
        (
            vec!["--action", "continue", "--input", "not json"],
            "--input is not JSON",
        ),
        (vec!["--action", "reject"], "--action reject needs --reason"),
        (
            vec!["--action", "reject", "--reason", "  "],
            "--reason is empty",
        ),
        (
            vec!["--action", "continue", "--reason", "no"],
            "--reason goes only with --action reject",
        ),
        (
            vec!["--action", "continue", "--input", "{}", "--remember"],
            "does not go with --remember",
        ),
        (
            vec!["--action", "abort", "--remember"],
            "--remember goes with --action continue, inject or reject",
        ),
    ] {
        let mut args = vec!["resume", "pause_x", "--run", "r", "--port", p];
        args.extend(a.iter().copied());
        let out = gm(&dir.0, &args).expect(1);
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn an_edited_input_reaches_the_app_and_a_refusal_exits_6_with_its_code() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Edit);
    let port = h.port.to_string();
    let run = "run_700000000001";
    block_on(async {
        let mut app = App::connect(h.port).await;
        app.start_run(run, "edit").await;
        app.emit(
            run,
            "node.started",
            json!({"nodeId": "tool:add", "kind": "tool", "name": "add",
                   "instanceId": "call_1", "input": {"a": 1, "b": 2}}),
        )
        .await;
        app.emit(
            run,
            "exec.paused",
            json!({"pauseId": "pause_i_1", "nodeId": "tool:add", "point": "before", "editable": true}),
        )
        .await;
        gm_wait_open(&h.home, &port).await;
        // The app played here announced no edit-input: the hub refuses it itself.
        let out = gm_async(
            h.home.clone(),
            resume_args(
                "pause_i_1",
                run,
                "continue",
                &port,
                &["--input", r#"{"a":2}"#],
            ),
        )
        .await
        .expect(6);
        assert!(
            out.one_line_error()
                .starts_with("graphmind: the hub refused continue (unsupported):"),
            "{}",
            out.stderr
        );
    });

    let run = "run_700000000002";
    block_on(async {
        let mut peer = Peer::connect(h.port, "/ingest").await;
        let mut hi = hello(0, None);
        hi["payload"]["capabilities"] = json!([
            "pause",
            "inject",
            "retry",
            "abort",
            "request-id",
            "edit-input"
        ]);
        peer.send(&hi).await;
        let ack = peer.until(5000, |v| v["type"] == "hello.ack").await;
        let mut app = App { peer, ack, seq: 1 };
        app.start_run(run, "edit").await;
        app.emit(
            run,
            "node.started",
            json!({"nodeId": "tool:add", "kind": "tool", "name": "add",
                   "instanceId": "call_2", "input": {"a": 1, "b": 2}}),
        )
        .await;
        app.emit(
            run,
            "exec.paused",
            json!({"pauseId": "pause_i_2", "nodeId": "tool:add", "point": "before", "editable": true}),
        )
        .await;
        gm_wait_open(&h.home, &port).await;
        let waited = gm_async(
            h.home.clone(),
            args(&["wait", "--timeout", "5", "--port", &port]),
        )
        .await
        .expect(0);
        assert!(
            waited.stdout.contains("edit    editable"),
            "{}",
            waited.stdout
        );
        assert!(
            waited.stdout.contains("--action continue --input"),
            "{}",
            waited.stdout
        );

        let first = tokio::spawn(gm_async(
            h.home.clone(),
            resume_args(
                "pause_i_2",
                run,
                "continue",
                &port,
                &["--input", r#"{"a":"x"}"#],
            ),
        ));
        let frame = app.expect_resume(10_000).await;
        assert_eq!(frame["payload"]["input"], json!({"a": "x"}));
        app.emit(
            run,
            "exec.refused",
            json!({"pauseId": "pause_i_2", "code": "schema", "message": "field a: expected an integer",
                   "requestId": frame["payload"]["requestId"]}),
        )
        .await;
        let out = first.await.unwrap().expect(6);
        assert_eq!(
            out.one_line_error(),
            "graphmind: the app refused continue (schema): field a: expected an integer (the gate stays held)"
        );

        let second = tokio::spawn(gm_async(
            h.home.clone(),
            resume_args(
                "pause_i_2",
                run,
                "continue",
                &port,
                &["--input", r#"{"a":5,"b":2}"#],
            ),
        ));
        let frame = app.expect_resume(10_000).await;
        app.emit(
            run,
            "exec.resumed",
            json!({"pauseId": "pause_i_2", "action": "continue",
                   "requestId": frame["payload"]["requestId"], "edited": {"after": {"a": 5, "b": 2}}}),
        )
        .await;
        let out = second.await.unwrap().expect(0);
        assert_eq!(
            out.stdout,
            format!(
                "resumed pause_i_2 of run {run} (continue, edited input)\n  ran with {{\"a\":5,\"b\":2}}\n"
            )
        );
    });
}
