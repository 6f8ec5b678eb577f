//! `graphmind wait` shows only resume commands the hub lets the agent token run: with the
//! default `--allow-control off` it points to the viewer (and to `--allow-control resume`)
//! instead of `graphmind resume` commands that exit 5; with `resume` it leaves inject out.

mod support;

use serde_json::{Value, json};
use support::*;

/// Opens a held gate on the hub and returns `graphmind wait --json` (the PauseInfo with its
/// resume advice) and the human form.
async fn wait_both(h: &TestHub, run: &str, pause: &str) -> (App, Value, String) {
    let app = App::holding(h.port, run, "held", "add", pause, "before", json!({"a": 1})).await;
    let p = gm_wait_pause(h).await;
    let text = gm_on(h, &["wait", "--timeout", "5"]).await.expect(0).stdout;
    (app, p, text)
}

#[test]
fn wait_on_a_hub_with_allow_control_off_points_to_the_viewer_not_to_failing_commands() {
    let h = hub(|_| {}); // --allow-control off
    block_on(async {
        let (_app, p, text) = wait_both(&h, "run_4a1700000001", "pause_h_1").await;
        assert_eq!(p["pauseId"], json!("pause_h_1"));
        assert_eq!(p["resume"], json!([]), "{p}");
        let note = p["resumeNote"].as_str().expect("resumeNote");
        assert!(note.contains("resume it in the viewer"), "{note}");
        assert!(note.contains("--allow-control resume"), "{note}");
        assert!(!text.contains("graphmind resume pause_"), "{text}");
        assert!(!text.contains("--action"), "{text}");
        assert!(text.contains("resume it in the viewer"), "{text}");
        assert!(text.starts_with("paused: tool:add at before"), "{text}");
    });
}

#[test]
fn wait_on_a_hub_with_allow_control_resume_lists_commands_that_work_and_no_inject() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Resume);
    block_on(async {
        let (mut app, p, text) = wait_both(&h, "run_4a1700000002", "pause_h_2").await;
        let cmds: Vec<String> = p["resume"]
            .as_array()
            .expect("resume")
            .iter()
            .map(|c| c.as_str().expect("command").to_owned())
            .collect();
        assert_eq!(cmds.len(), 3, "{cmds:?}");
        assert!(cmds.iter().all(|c| !c.contains("inject")), "{cmds:?}");
        assert!(
            p["resumeNote"]
                .as_str()
                .is_some_and(|n| n.contains("--allow-control inject")),
            "{p}"
        );
        assert!(text.contains("resume it with one of:"), "{text}");
        assert!(!text.contains("--action inject"), "{text}");
        // The first suggestion, run as printed, releases the gate.
        let words: Vec<String> = cmds[0].split_whitespace().map(str::to_owned).collect();
        assert_eq!(words[0], "graphmind");
        assert!(words.contains(&"continue".to_owned()), "{cmds:?}");
        let resume = tokio::spawn(gm_async(h.home.clone(), words[1..].to_vec()));
        let frame = app.expect_resume(5000).await;
        assert_eq!(frame["payload"]["action"], json!("continue"), "{frame}");
        app.confirm("run_4a1700000002", "pause_h_2", "continue")
            .await;
        resume.await.expect("join").expect(0);
    });
}

#[test]
fn wait_on_a_hub_with_allow_control_inject_lists_all_four_actions() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    block_on(async {
        let (_app, p, _) = wait_both(&h, "run_4a1700000003", "pause_h_3").await;
        let cmds = p["resume"].as_array().expect("resume");
        assert_eq!(cmds.len(), 4, "{p}");
        assert!(p.get("resumeNote").is_none(), "{p}");
    });
}

#[test]
fn wait_at_a_before_gate_suggests_the_shape_of_an_output_the_node_returned_before() {
    let h = hub(|c| c.allow_control = graphmind_hub::AllowControl::Inject);
    block_on(async {
        let run = "run_4a1700000004";
        let mut app = App::running(h.port, run, "weather").await;
        app.emit(
            run,
            "node.started",
            json!({"nodeId": "tool:get_weather", "kind": "tool", "name": "get_weather", "instanceId": "call_1", "input": {"city": "Lisbon"}}),
        )
        .await;
        app.emit(
            run,
            "node.finished",
            json!({"nodeId": "tool:get_weather", "instanceId": "call_1", "status": "ok", "durationMs": 1.0,
                   "output": {"city": "Lisbon", "celsius": 21.5, "days": 3, "sunny": true, "hours": [{"at": "09:00"}]}}),
        )
        .await;
        app.pause_at(
            run,
            "get_weather",
            "pause_h_4",
            "before",
            json!({"city": "Porto"}),
        )
        .await;
        let p = gm_wait_pause(&h).await;
        assert_eq!(
            p["outputExample"],
            json!({"city": "", "celsius": 0.0, "days": 0, "sunny": false, "hours": [{"at": ""}]}),
            "{p}"
        );
        let inject = p["resume"]
            .as_array()
            .expect("resume")
            .iter()
            .filter_map(Value::as_str)
            .find(|c| c.contains("--action inject"))
            .expect("an inject command")
            .to_owned();
        assert!(
            inject.contains(
                r#"--output '{"city":"","celsius":0.0,"days":0,"sunny":false,"hours":[{"at":""}]}'"#
            ),
            "a skeleton, not null: {inject}"
        );
    });
}
