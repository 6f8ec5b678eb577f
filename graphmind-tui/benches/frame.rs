//! The cost of opening a 100,000-event run (applying its events to the state) and of drawing
//! one frame of it at 120×40.

use criterion::{Criterion, criterion_group, criterion_main};
use graphmind_protocol::{Envelope, Parsed, parse_value};
use graphmind_tui::access::Access;
use graphmind_tui::state::State;
use graphmind_tui::ui::{Screen, Ui};
use graphmind_tui::views::{Theme, draw};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

const RUN: &str = "run_bench";

/// 100,000 events: the run's agent, then 49,999 tool calls (started, finished).
fn events() -> Vec<Envelope> {
    let mut out = Vec::with_capacity(100_000);
    let mut push = |v| match parse_value(v) {
        Parsed::Ok(e) => out.push(e),
        other => panic!("{other:?}"),
    };
    push(
        json!({"gm": 1, "seq": 1, "ts": 1, "runId": RUN, "type": "node.started",
        "payload": {"nodeId": "agent:a", "kind": "agent", "name": "a", "instanceId": "i0"}}),
    );
    push(
        json!({"gm": 1, "seq": 2, "ts": 2, "runId": RUN, "type": "run.started",
        "payload": {"app": "bench", "sdk": {"name": "graphmind", "version": "0.1.0"}}}),
    );
    for i in 0..49_999u64 {
        let seq = 3 + 2 * i;
        push(
            json!({"gm": 1, "seq": seq, "ts": seq, "runId": RUN, "type": "node.started",
            "payload": {"nodeId": format!("tool:t{}", i % 50), "kind": "tool", "name": format!("t{}", i % 50),
                        "instanceId": format!("x{i}"), "parentId": "agent:a", "input": {"i": i}}}),
        );
        push(
            json!({"gm": 1, "seq": seq + 1, "ts": seq + 1, "runId": RUN, "type": "node.finished",
            "payload": {"nodeId": format!("tool:t{}", i % 50), "instanceId": format!("x{i}"),
                        "durationMs": 1.0, "status": "ok", "output": {"ok": true}}}),
        );
    }
    out
}

fn open_run(ev: &[Envelope]) -> State {
    let mut s = State::new(4747);
    s.subscribe(RUN);
    s.apply_events(RUN, ev.to_vec());
    s
}

fn bench(c: &mut Criterion) {
    let ev = events();
    assert_eq!(ev.len(), 100_000);
    c.bench_function("open a 100k-event run (apply its events)", |b| {
        b.iter(|| open_run(&ev));
    });
    let s = open_run(&ev);
    let mut ui = Ui::new(Access::edit(), false);
    ui.screen = Screen::Run(RUN.into());
    ui.exec_cursor = 25_000;
    let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
    c.bench_function("draw one frame of the 100k-event run at 120x40", |b| {
        b.iter(|| {
            term.draw(|f| draw(f, &s, &ui, Theme { color: true }))
                .unwrap();
        });
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
