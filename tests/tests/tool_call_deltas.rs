//! Tool-argument deltas name their call: two parallel tool calls streamed interleaved by
//! index reach the debugger as deltas carrying `index` (and `toolCallId` / `toolName` where
//! the chunk gave them), never merged across calls, so that each call's arguments are the
//! concatenation of its own deltas.

mod macro_support;

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::{Stream, StreamExt, stream};
use graphmind::model::{Delta, DeltaKind, StepChunk};
use macro_support::{attached, run_finished};
use serde_json::Value;

/// An OpenAI-style chunk: one tool-call piece, the id and name on a call's first piece only.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Piece {
    index: u64,
    id: Option<&'static str>,
    name: Option<&'static str>,
    arguments: &'static str,
}

impl StepChunk for Piece {
    fn deltas(&self, emit: &mut dyn FnMut(DeltaKind, &str)) {
        emit(DeltaKind::ToolArgs, self.arguments);
    }
    fn call_deltas(&self, emit: &mut dyn FnMut(Delta<'_>)) {
        let mut d = Delta::tool_args(self.index, self.arguments);
        if let Some(id) = self.id {
            d = d.with_call_id(id);
        }
        if let Some(name) = self.name {
            d = d.with_tool_name(name);
        }
        emit(d);
    }
}

const WEATHER: &str = r#"{"city": "Lisbon"}"#;
const REFUND: &str = r#"{"amount": 120}"#;

fn interleaved() -> Vec<Piece> {
    let piece = |index, id, name, arguments| Piece {
        index,
        id,
        name,
        arguments,
    };
    vec![
        piece(0, Some("call_w"), Some("weather"), r#"{"city""#),
        piece(1, Some("call_r"), Some("refund"), r#"{"amoun"#),
        piece(0, None, None, r#": "Lisb"#),
        piece(1, None, None, r#"t": 120"#),
        piece(0, None, None, r#"on"}"#),
        piece(1, None, None, "}"),
    ]
}

#[graphmind::model_step]
async fn call_tools(prompt: String) -> impl Stream<Item = Piece> + Send {
    let _ = prompt;
    // A pause mid-stream puts the pieces into more than one batch.
    stream::iter(interleaved()).then(|p| async move {
        if p.index == 1 && p.id.is_none() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        p
    })
}

#[tokio::test]
async fn parallel_tool_call_deltas_name_their_call_and_concatenate_per_index() {
    let hub = graphmind_tests::FakeDebugger::start().await;
    let gm = attached(&hub, vec![]).await;
    let got = gm
        .run("r", async {
            call_tools("weather and refund".to_owned())
                .await
                .collect::<Vec<_>>()
                .await
        })
        .await
        .expect("not aborted");
    assert_eq!(got, interleaved(), "the caller gets every chunk unchanged");
    run_finished(&hub).await;

    let deltas: Vec<Value> = hub
        .frames_of("node.token")
        .iter()
        .filter(|f| f.payload()["nodeId"] == "llm:step")
        .flat_map(|f| {
            f.payload()["deltas"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    assert!(deltas.iter().all(|d| d["t"] == "tool-args"), "{deltas:?}");
    let mut args: BTreeMap<u64, String> = BTreeMap::new();
    for d in &deltas {
        let index = d["index"]
            .as_u64()
            .expect("every delta names its call's index");
        args.entry(index)
            .or_default()
            .push_str(d["v"].as_str().expect("text"));
    }
    assert_eq!(
        args,
        BTreeMap::from([(0, WEATHER.to_owned()), (1, REFUND.to_owned())]),
        "each call's arguments exactly: {deltas:?}"
    );
    for text in args.values() {
        serde_json::from_str::<Value>(text).expect("each call's arguments parse as JSON");
    }
    // The first delta of each call carries its id and tool name.
    let first = |i: u64| deltas.iter().find(|d| d["index"] == i).expect("present");
    assert_eq!(
        (&first(0)["toolCallId"], &first(0)["toolName"]),
        (&Value::from("call_w"), &Value::from("weather"))
    );
    assert_eq!(
        (&first(1)["toolCallId"], &first(1)["toolName"]),
        (&Value::from("call_r"), &Value::from("refund"))
    );
    gm.dispose().await;
}
