//! What the adapter adds to one chat request, in one run: `chat().create` against the local
//! mock OpenAI server through the bare async-openai client, through the wrapped client
//! detached (graphmind enabled, nothing listening: the step's events land in the replay
//! ring), and through the wrapped client with graphmind disabled; then the bare client again,
//! to see the drift of the run itself.
//!
//! Run: `cargo bench -p graphmind-openai --bench openai_overhead`.

#[path = "../tests/support/mock.rs"]
mod mock;

use std::hint::black_box;
use std::time::Duration;

use async_openai::types::chat::CreateChatCompletionRequest;
use criterion::{Criterion, criterion_group, criterion_main};
use graphmind_openai::Instrument;

fn request() -> CreateChatCompletionRequest {
    serde_json::from_value(serde_json::json!({
        "model": "text",
        "messages": [
            {"role": "system", "content": "You are a travel assistant."},
            {"role": "user", "content": "Weather in Lisbon?"}
        ]
    }))
    .expect("a request")
}

fn overhead(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let mock = rt.block_on(mock::Mock::start());
    let bare = mock.client();
    let wrapped = mock.client().graphmind();
    let req = request();

    let mut g = c.benchmark_group("chat.create");
    g.measurement_time(Duration::from_secs(5));
    g.warm_up_time(Duration::from_secs(1));

    g.bench_function("bare client", |b| {
        b.iter(|| black_box(rt.block_on(bare.chat().create(req.clone())).expect("ok")));
    });

    // Nothing listens on port 9 (discard): the session stays detached.
    let detached = graphmind::init(
        graphmind::Config::new("bench")
            .url("ws://127.0.0.1:9/ingest")
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    assert!(detached.is_enabled());
    g.bench_function("wrapped, detached", |b| {
        b.iter(|| black_box(rt.block_on(wrapped.chat().create(req.clone())).expect("ok")));
    });
    assert!(
        detached.stats().buffered > 0,
        "the steps reach the replay ring"
    );

    let disabled = graphmind::init(
        graphmind::Config::new("bench")
            .enabled(false)
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    assert!(!disabled.is_enabled());
    g.bench_function("wrapped, disabled", |b| {
        b.iter(|| black_box(rt.block_on(wrapped.chat().create(req.clone())).expect("ok")));
    });

    g.bench_function("bare client, again", |b| {
        b.iter(|| black_box(rt.block_on(bare.chat().create(req.clone())).expect("ok")));
    });
    g.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
