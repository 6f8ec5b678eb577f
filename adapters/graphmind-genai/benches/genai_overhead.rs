//! What the adapter adds to one model call plus one tool call, against bare genai in the same
//! run: the local mock provider (OpenAI dialect) answers `exec_chat` (and, in a second unit,
//! a drained `exec_chat_stream`), then one tool runs on the answer. The cases are interleaved
//! per round, in an order that alternates, so the drift of a loaded machine lands on both
//! alike; each round also times bare genai twice, so the noise floor (bare against bare) is
//! printed beside the overhead.
//!
//! Run: `cargo bench -p graphmind-genai --bench genai_overhead` (rounds: `GENAI_BENCH_ROUNDS`,
//! 3000 by default; without `--bench`, as `cargo test --all-targets` runs it, 20 rounds as a
//! smoke test).

#[path = "../tests/support/mock.rs"]
mod mock;

use std::hint::black_box;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use genai::chat::{ChatMessage, ChatRequest, ChatResponse, Tool};
use graphmind_genai::Instrument;
use serde_json::{Value, json};

fn request() -> ChatRequest {
    ChatRequest::new(vec![ChatMessage::user("Weather in Lisbon?")])
        .with_system("You are a travel assistant.")
        .with_tools(vec![Tool::new("get_weather")])
}

/// The tool's body, shared by both cases.
fn weather(city: &str) -> Value {
    json!({"city": city, "celsius": 24})
}

#[graphmind::tool(call_id = call_id)]
async fn get_weather(call_id: String, city: String) -> Value {
    let _ = call_id;
    weather(&city)
}

async fn bare_get_weather(call_id: String, city: String) -> Value {
    let _ = call_id;
    weather(&city)
}

fn city(res: &ChatResponse) -> (String, String) {
    res.tool_calls()
        .first()
        .map(|c| {
            (
                c.call_id.clone(),
                c.fn_arguments["city"].as_str().unwrap_or("?").to_owned(),
            )
        })
        .unwrap_or_else(|| ("call_0".into(), "?".into()))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Case {
    Bare,
    BareAgain,
    Wrapped,
}

async fn chat_unit(case: Case, bare: &genai::Client, wrapped: &graphmind_genai::Client) -> Value {
    if case == Case::Wrapped {
        let res = wrapped
            .exec_chat("gpt-tools", request(), None)
            .await
            .expect("ok");
        let (id, c) = city(&res);
        get_weather(id, c).await
    } else {
        let res = bare
            .exec_chat("gpt-tools", request(), None)
            .await
            .expect("ok");
        let (id, c) = city(&res);
        bare_get_weather(id, c).await
    }
}

async fn stream_unit(case: Case, bare: &genai::Client, wrapped: &graphmind_genai::Client) -> Value {
    let mut events = 0usize;
    if case == Case::Wrapped {
        let mut s = wrapped
            .exec_chat_stream("gpt-text", request(), None)
            .await
            .expect("ok")
            .stream;
        while let Some(e) = s.next().await {
            black_box(e.expect("event"));
            events += 1;
        }
        black_box(events);
        get_weather("call_0".into(), "Lisbon".into()).await
    } else {
        let mut s = bare
            .exec_chat_stream("gpt-text", request(), None)
            .await
            .expect("ok")
            .stream;
        while let Some(e) = s.next().await {
            black_box(e.expect("event"));
            events += 1;
        }
        black_box(events);
        bare_get_weather("call_0".into(), "Lisbon".into()).await
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs `rounds` rounds of the three cases (order alternating per round) and prints the
/// medians and the median of the per-round ratios.
fn compare(name: &str, rounds: usize, unit: &dyn Fn(Case) -> Duration) {
    for case in [Case::Bare, Case::Wrapped, Case::BareAgain] {
        for _ in 0..rounds.min(200) / 4 + 1 {
            unit(case); // warm-up
        }
    }
    let orders = [
        [Case::Bare, Case::Wrapped, Case::BareAgain],
        [Case::Wrapped, Case::BareAgain, Case::Bare],
        [Case::BareAgain, Case::Bare, Case::Wrapped],
    ];
    let (mut bare, mut again, mut wrapped) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ratio, mut noise) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let mut t = [0.0f64; 3];
        for case in orders[r % 3] {
            let us = unit(case).as_secs_f64() * 1e6;
            match case {
                Case::Bare => t[0] = us,
                Case::Wrapped => t[1] = us,
                Case::BareAgain => t[2] = us,
            }
        }
        bare.push(t[0]);
        wrapped.push(t[1]);
        again.push(t[2]);
        ratio.push(t[1] / t[0]);
        noise.push(t[2] / t[0]);
    }
    let (mb, mw, ma) = (median(&mut bare), median(&mut wrapped), median(&mut again));
    let (mr, mn) = (median(&mut ratio), median(&mut noise));
    println!(
        "{name}: {rounds} rounds, medians: bare genai {mb:.1} µs, wrapped detached {mw:.1} µs, \
         bare again {ma:.1} µs"
    );
    println!(
        "{name}: wrapped / bare = {:.4} (median of per-round ratios; {:+.2} %), \
         bare again / bare = {:.4} ({:+.2} %, the noise floor); ratio of medians {:.4}",
        mr,
        (mr - 1.0) * 100.0,
        mn,
        (mn - 1.0) * 100.0,
        mw / mb
    );
}

/// ns per call of `f`, over `n` calls (after `n / 10` to warm up).
fn per_call(n: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..n / 10 + 1 {
        f();
    }
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_secs_f64() * 1e9 / n as f64
}

/// Where the detached cost goes: each part of what the wrapped call and the tool do, timed
/// alone (no HTTP), through graphmind's public API the adapter is built on.
fn breakdown(n: usize, rt: &tokio::runtime::Runtime, bare: &genai::Client) {
    use graphmind::model::{Grouping, Reply};
    use graphmind::node::{Extras, Node};
    use graphmind::protocol::Status;

    let res = rt
        .block_on(bare.exec_chat("gpt-tools", request(), None))
        .expect("ok");
    let req = request();
    let input = || {
        let mut v = serde_json::to_value(&req).expect("json");
        v["model"] = "gpt-tools".into();
        v
    };
    let output = || Reply::read::<graphmind_genai::Genai, _>(&res).map(Reply::into_value);
    let usage =
        <graphmind_genai::Genai as graphmind::model::ResponseCodec<ChatResponse>>::usage(&res);
    let capture_in = per_call(n, || {
        black_box(input());
    });
    let capture_out = per_call(n, || {
        black_box(output());
    });
    let out = output();
    let node = rt.block_on(async {
        per_call(n, || {
            let node = Node::start_step(black_box(serde_json::Value::Null), Grouping::Auto)
                .expect("enabled");
            node.finish_with(Status::Ok, None, None, Extras::new().into());
        })
    });
    let node_full = rt.block_on(async {
        per_call(n, || {
            let node = Node::start_step(input(), Grouping::Auto).expect("enabled");
            node.finish_with(
                Status::Ok,
                out.clone(),
                usage,
                Extras::new()
                    .api("genai.chat")
                    .model("gpt-tools-2026")
                    .into(),
            );
        })
    });
    #[derive(serde::Serialize)]
    struct Recorded<'a> {
        #[serde(flatten)]
        request: &'a ChatRequest,
        model: &'a str,
    }
    let node_text = rt.block_on(async {
        per_call(n, || {
            let node = Node::start_step_serialized(
                &Recorded {
                    request: &req,
                    model: "gpt-tools",
                },
                Grouping::Auto,
            )
            .expect("enabled");
            let extra = Extras::new()
                .api("genai.chat")
                .model("gpt-tools-2026")
                .into();
            match &out {
                Some(v) => node.finish_serialized(Status::Ok, v, usage, extra),
                None => node.finish_with(Status::Ok, None, usage, extra),
            }
        })
    });
    let tool = per_call(n, || {
        black_box(rt.block_on(get_weather("call_w".into(), "Lisbon".into())));
    });
    let tool_bare = per_call(n, || {
        black_box(rt.block_on(bare_get_weather("call_w".into(), "Lisbon".into())));
    });
    println!("where the detached cost goes ({n} calls each, ns per call):");
    println!(
        "  the request as the step's input (serde_json::to_value of the ChatRequest): {capture_in:.0}"
    );
    println!(
        "  the output (Reply read through the Genai codec, the response as JSON): {capture_out:.0}"
    );
    println!("  an llm:step node started and finished, no input or output: {node:.0}");
    println!(
        "  an llm:step node with the input, output and usage above (capture included): {node_full:.0}"
    );
    println!(
        "  the same node, input and output serialized once into their JSON text \
         (start_step_serialized, finish_serialized): {node_text:.0}"
    );
    println!(
        "  one #[graphmind::tool] call, block_on included: {tool:.0} (the bare fn: {tool_bare:.0}; the node: {:.0})",
        tool - tool_bare
    );
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let rounds = if benching {
        std::env::var("GENAI_BENCH_ROUNDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(3000)
    } else {
        20
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let mock = rt.block_on(mock::Mock::start());
    let bare = mock.client();
    let wrapped = mock.client().graphmind();

    // Nothing listens on port 9 (discard): the session stays detached.
    let detached = graphmind::init(
        graphmind::Config::new("bench")
            .url("ws://127.0.0.1:9/ingest")
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    assert!(detached.is_enabled());

    let chat = |case: Case| {
        let t = Instant::now();
        black_box(rt.block_on(chat_unit(case, &bare, &wrapped)));
        t.elapsed()
    };
    compare("exec_chat + tool", rounds, &chat);
    let stream = |case: Case| {
        let t = Instant::now();
        black_box(rt.block_on(stream_unit(case, &bare, &wrapped)));
        t.elapsed()
    };
    compare("exec_chat_stream + tool", rounds, &stream);
    assert!(
        detached.stats().buffered > 0,
        "the steps reach the replay ring"
    );
    breakdown(if benching { 20_000 } else { 50 }, &rt, &bare);
    drop(detached);
}
