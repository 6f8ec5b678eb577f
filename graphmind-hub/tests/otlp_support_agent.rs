//! The bundled support agent (the real Rust client, its macros and the scripted model)
//! against a hub that exports over OTLP: the run arrives as one trace with the exact span
//! tree, the held error gate as span events, usage and finish reasons per model step, and
//! the tool arguments the app's redaction hid stay hidden although content is opted in.

mod otlp_support;
mod support;

use std::time::Duration;

use graphmind_hub::AllowControl;
use graphmind_hub::otlp::OtlpConfig;
use otlp_support::*;
use serde_json::json;
use support::*;

#[test]
fn the_support_agents_run_exports_its_exact_span_tree_and_keeps_redacted_args_hidden() {
    block_on(async {
        let rx = Receiver::start(0).await;
        let endpoint = rx.endpoint();
        let hub = hub(move |c| {
            c.allow_control = AllowControl::Resume;
            let mut o = OtlpConfig::new(&endpoint).expect("endpoint");
            o.content = true;
            c.otlp = Some(o);
        });
        let gm = graphmind::init(config(hub.port, "support-agent").hide_tool_args(true));
        assert!(gm.ready(Duration::from_secs(5)).await, "attached");
        let task = tokio::spawn(graphmind_examples::handle_ticket(
            graphmind_examples::TICKET,
        ));
        // The planted bad order id holds at the error gate (the hub's default breakpoint).
        let pause = wait_for_pause(hub.port).await.remove(0);
        let run = pause["runId"].as_str().expect("runId").to_owned();
        let r = hub
            .control()
            .resume(
                &run,
                pause["pauseId"].as_str().expect("pauseId"),
                json!({"action": "continue"}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        let answer = task
            .await
            .expect("joined")
            .expect("not aborted")
            .expect("answer");
        assert!(answer.contains("ORD-1042"), "{answer}");

        let runs = rx.wait_runs(1, 30).await;
        assert_eq!(runs.len(), 1);
        assert_eq!(run_of(&runs[0]), run);
        let spans = spans(&runs[0]);
        assert_eq!(
            tree(&spans),
            [
                "invoke_agent handle-ticket (INTERNAL)",
                "  chat (CLIENT)",
                "    execute_tool lookup_order (INTERNAL)",
                "  chat (CLIENT)",
                "    execute_tool lookup_order (INTERNAL)",
                "  chat (CLIENT)",
                "    execute_tool shipping_status (INTERNAL)",
                "  chat (CLIENT)",
                "    execute_tool issue_refund (INTERNAL)",
                "  chat (CLIENT)",
            ]
        );
        let res = &runs[0].resource.as_ref().expect("resource").attributes;
        assert_eq!(
            str_attr(res, "service.name").as_deref(),
            Some("support-agent")
        );
        assert_eq!(str_attr(res, "telemetry.sdk.name").as_deref(), Some("rust"));

        let chats: Vec<_> = spans.iter().filter(|s| s.name == "chat").collect();
        let reasons: Vec<Vec<String>> = chats
            .iter()
            .map(|s| {
                strings_attr(&s.attributes, "gen_ai.response.finish_reasons").unwrap_or_default()
            })
            .collect();
        assert_eq!(
            reasons,
            [
                ["tool_calls"],
                ["tool_calls"],
                ["tool_calls"],
                ["tool_calls"],
                ["stop"]
            ]
        );
        let inputs: Vec<Option<i64>> = chats
            .iter()
            .map(|s| int_attr(&s.attributes, "gen_ai.usage.input_tokens"))
            .collect();
        assert_eq!(
            inputs,
            [Some(120), Some(160), Some(200), Some(240), Some(280)]
        );
        for c in &chats {
            assert_eq!(
                str_attr(&c.attributes, "gen_ai.operation.name").as_deref(),
                Some("chat")
            );
            assert!(int_attr(&c.attributes, "gen_ai.usage.output_tokens").is_some_and(|n| n > 0));
        }

        let tools: Vec<_> = spans
            .iter()
            .filter(|s| s.name.starts_with("execute_tool"))
            .collect();
        let ids: Vec<String> = tools
            .iter()
            .map(|s| str_attr(&s.attributes, "gen_ai.tool.call.id").unwrap_or_default())
            .collect();
        assert_eq!(
            ids,
            ["call_1", "call_2", "call_3", "call_4"],
            "the model's tool-call ids"
        );
        // The first lookup failed, was held at its error gate and continued.
        let first = tools[0];
        assert_eq!(
            str_attr(&first.attributes, "graphmind.status").as_deref(),
            Some("error")
        );
        assert_eq!(first.status.as_ref().map(|s| s.code), Some(2));
        assert!(str_attr(&first.attributes, "error.type").is_some());
        assert_eq!(int_attr(&first.attributes, "graphmind.holds"), Some(1));
        assert_eq!(
            strings_attr(&first.attributes, "graphmind.actions"),
            Some(vec!["continue".to_owned()])
        );
        assert!(double_attr(&first.attributes, "graphmind.held_ms").is_some_and(|ms| ms > 0.0));
        let names: Vec<&str> = first.events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["exec.paused", "exec.resumed"]);
        assert_eq!(
            str_attr(&first.events[0].attributes, "graphmind.pause.point").as_deref(),
            Some("error")
        );
        for t in &tools[1..] {
            assert_eq!(
                str_attr(&t.attributes, "graphmind.status").as_deref(),
                Some("ok"),
                "{}",
                t.name
            );
            assert!(t.events.is_empty());
        }
        // Content is on, but the arguments the app hid never reached the hub: only the
        // placeholder is exported; the results are.
        for t in &tools {
            let args =
                str_attr(&t.attributes, "gen_ai.tool.call.arguments").expect("arguments attribute");
            assert!(args.contains("__REDACTED__"), "{args}");
            assert!(
                !args.contains("order_id") && !args.contains("tracking"),
                "{args}"
            );
        }
        let result = str_attr(&tools[3].attributes, "gen_ai.tool.call.result").expect("result");
        assert!(result.contains("ORD-1042"), "{result}");
        gm.dispose().await;
    });
}
