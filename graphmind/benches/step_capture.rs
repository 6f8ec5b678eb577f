//! What recording a model step costs detached (graphmind enabled, nothing listening: the
//! events land in the replay ring), by how its request and output are captured: as
//! `serde_json::Value`s (`Node::start_step(to_value(request))`, `finish_with(Some(to_value(
//! response)))`) against serialized once into their JSON text (`Node::start_step_serialized`,
//! `finish_serialized`). The request is an agent's: a preamble, a chat history of
//! `GM_BENCH_HISTORY` messages (12 by default) and three tools' JSON schemas; the output a
//! response of one text and one tool call. The two cases are interleaved per round, in
//! alternating order, so the drift of a loaded machine lands on both alike.
//!
//! Run: `cargo bench -p graphmind --bench step_capture` (rounds: `GM_BENCH_ROUNDS`, 20 000
//! by default; without `--bench`, as `cargo test --all-targets` runs it, 50 rounds).

mod support;

use std::hint::black_box;
use std::time::Instant;

use graphmind::model::{Grouping, Usage};
use graphmind::node::{Extras, Node};
use graphmind::protocol::Status;
use serde::Serialize;
use serde_json::{Value, json};

#[derive(Serialize)]
struct Message {
    role: &'static str,
    content: String,
}

#[derive(Serialize)]
struct Tool {
    name: String,
    description: &'static str,
    parameters: Value,
}

#[derive(Serialize)]
struct Request {
    model: &'static str,
    preamble: &'static str,
    chat_history: Vec<Message>,
    tools: Vec<Tool>,
    temperature: Option<f64>,
}

#[derive(Serialize)]
struct Response {
    text: String,
    finish_reason: &'static str,
    tool_calls: Vec<Value>,
    model: &'static str,
    id: String,
}

fn request(history: usize) -> Request {
    Request {
        model: "gpt-bench",
        preamble: "You are a travel assistant. Answer briefly; call a tool when the answer needs live data.",
        chat_history: (0..history)
            .map(|i| Message {
                role: if i % 2 == 0 { "user" } else { "assistant" },
                content: format!(
                    "Message {i}: what is the weather in Lisbon, and should I take an umbrella \
                     for a walk along the river this afternoon?"
                ),
            })
            .collect(),
        tools: ["get_weather", "get_time", "search_hotels"]
            .into_iter()
            .map(|name| Tool {
                name: name.into(),
                description: "A tool of the bench.",
                parameters: json!({
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                    "required": ["city"]
                }),
            })
            .collect(),
        temperature: Some(0.2),
    }
}

fn response() -> Response {
    Response {
        text: "It is sunny in Lisbon; no umbrella needed.".into(),
        finish_reason: "tool_calls",
        tool_calls: vec![
            json!({"id": "call_1", "name": "get_weather", "arguments": {"city": "Lisbon"}}),
        ],
        model: "gpt-bench-2026",
        id: "resp_1".into(),
    }
}

fn extras() -> graphmind::protocol::Extra {
    Extras::new()
        .api("bench")
        .attempts(1)
        .model("gpt-bench-2026")
        .into()
}

fn as_values(req: &Request, resp: &Response) {
    let node = Node::start_step(
        serde_json::to_value(req).expect("json"),
        Grouping::explicit("bench"),
    )
    .expect("enabled");
    node.finish_with(
        Status::Ok,
        Some(serde_json::to_value(resp).expect("json")),
        Some(Usage::inclusive(120, 30)),
        extras(),
    );
}

fn as_text(req: &Request, resp: &Response) {
    let node = Node::start_step_serialized(req, Grouping::explicit("bench")).expect("enabled");
    node.finish_serialized(Status::Ok, resp, Some(Usage::inclusive(120, 30)), extras());
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(d)
    };
    let rounds = if benching {
        env("GM_BENCH_ROUNDS", 20_000)
    } else {
        50
    };
    let history = env("GM_BENCH_HISTORY", 12);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let session = support::detached_session("bench");
    let (req, resp) = (request(history), response());
    let bytes = serde_json::to_string(&req).expect("json").len();
    rt.block_on(async {
        for _ in 0..rounds / 10 + 1 {
            as_values(&req, &resp);
            as_text(&req, &resp);
        }
        let (mut values, mut text, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
        for r in 0..rounds {
            let mut t = [0.0f64; 2];
            for case in if r % 2 == 0 { [0, 1] } else { [1, 0] } {
                let start = Instant::now();
                match case {
                    0 => as_values(black_box(&req), black_box(&resp)),
                    _ => as_text(black_box(&req), black_box(&resp)),
                }
                t[case] = start.elapsed().as_secs_f64() * 1e9;
            }
            values.push(t[0]);
            text.push(t[1]);
            ratio.push(t[1] / t[0]);
        }
        let (mv, mt, mr) = (median(&mut values), median(&mut text), median(&mut ratio));
        println!(
            "llm:step, request of {history} messages + 3 tool schemas ({bytes} JSON bytes), \
             {rounds} rounds: as Values median {mv:.0} ns, as text median {mt:.0} ns, \
             text / Values = {mr:.3} (median of per-round ratios)"
        );
    });
    assert!(
        session.stats().buffered > 0,
        "the steps reach the replay ring"
    );
}
