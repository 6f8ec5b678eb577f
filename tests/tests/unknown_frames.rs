//! Forward compatibility and robustness: unknown types, extra fields, junk, frames of
//! another version and deep nesting from the debugger are ignored; nothing panics and the
//! connection stays up.

use std::time::Duration;

use graphmind::protocol::Mode;
use graphmind_tests::{FakeDebugger, Handshake, eventually};
use serde_json::json;

const SECOND: Duration = Duration::from_secs(1);

#[tokio::test]
async fn junk_and_unknown_types_are_ignored_while_attached() {
    let hub = FakeDebugger::start().await;
    let gm = graphmind::Session::new(hub.config("tolerant"));
    assert!(gm.ready(2 * SECOND).await);

    let deep = format!("{}{}", "[".repeat(50_000), "]".repeat(50_000));
    let junk = [
        "not json".to_owned(),
        "[]".to_owned(),
        "{}".to_owned(),
        "null".to_owned(),
        json!({"gm": 1, "seq": 1, "ts": 1, "runId": "*", "type": "graph.future", "payload": {"x": 1}}).to_string(),
        json!({"gm": 2, "seq": 1, "ts": 1, "runId": "*", "type": "mode.set", "payload": {"mode": "step"}}).to_string(),
        json!({"gm": 1, "seq": -1, "ts": 1, "runId": "*", "type": "mode.set", "payload": {"mode": "step"}}).to_string(),
        json!({"gm": 1, "seq": 1, "ts": 1, "runId": "*", "type": "mode.set", "payload": "step"}).to_string(),
        json!({"gm": 1, "seq": 1, "ts": 1, "runId": "*", "type": "breakpoint.set", "payload": {"matcher": {"kind": "spaceship"}}}).to_string(),
        json!({"gm": 1, "seq": 1, "ts": 1, "runId": "r", "type": "exec.resume", "payload": {"pauseId": "pause_nobody_1", "action": "continue"}}).to_string(),
        json!({"gm": 1, "seq": 1, "ts": 1, "runId": "r", "type": "exec.resume", "payload": {"pauseId": 5, "action": "explode"}}).to_string(),
        json!({"gm": 1, "seq": 1, "ts": 1, "runId": "*", "type": "hello.ack", "payload": {"versions": {"protocol": 9}}}).to_string(),
        json!({"gm": 1, "seq": 1, "ts": 1, "runId": "*", "type": "node.started", "payload": {}}).to_string(),
        format!(r#"{{"gm":1,"seq":1,"ts":1,"runId":"*","type":"mode.set","payload":{{"mode":"step","x":{deep}}}}}"#),
        "\u{0}\u{1}".to_owned(),
    ];
    for text in &junk {
        assert!(hub.send_raw(text));
    }
    // Known controls with extra fields still apply, proving the connection survived.
    assert!(hub.send(&json!({
        "gm": 1, "seq": 99, "ts": 1, "runId": "*", "type": "breakpoint.set",
        "payload": {"matcher": {"kind": "tool", "future": [1, 2]}, "reason": "viewer"},
        "trace": {"id": "abc"}
    })));
    eventually("the breakpoint with extra fields", SECOND, || {
        gm.breakpoints().len() == 1
    })
    .await;
    assert_eq!(
        gm.mode(),
        Mode::Run,
        "a mode.set of gm 2 or with a bad seq was applied"
    );
    assert!(gm.is_attached());
    assert_eq!(hub.connections(), 1);
    gm.dispose().await;
}

#[tokio::test]
async fn frames_before_the_ack_are_ignored() {
    let hub = FakeDebugger::start().await;
    hub.set_before_ack(vec![
        "garbage".into(),
        json!({"gm": 1, "seq": 0, "ts": 0, "runId": "*", "type": "mode.set", "payload": {"mode": "step"}}).to_string(),
        json!({"gm": 1, "seq": 0, "ts": 0, "runId": "*", "type": "who.knows", "payload": {}}).to_string(),
    ]);
    let gm = graphmind::Session::new(hub.config("pre-ack"));
    assert!(gm.ready(2 * SECOND).await);
    assert_eq!(
        gm.mode(),
        Mode::Run,
        "a mode.set before the ack was applied"
    );
    gm.dispose().await;
}

#[tokio::test]
async fn a_minimal_ack_with_unknown_fields_is_accepted() {
    let hub = FakeDebugger::start().await;
    hub.set_handshake(Handshake::Payload(json!({
        "versions": {"protocol": 1, "future": true},
        "hubCapabilities": ["time-travel"],
        "breakpoints": [{"kind": "tool", "colour": "red"}, {"kind": "not-a-kind"}],
        "mode": "hyper",
        "somethingNew": {"a": [1]}
    })));
    let gm = graphmind::Session::new(hub.config("minimal-ack"));
    assert!(gm.ready(2 * SECOND).await);
    assert_eq!(
        gm.breakpoints().len(),
        1,
        "a bad matcher is skipped, a good one kept"
    );
    assert_eq!(gm.mode(), Mode::Run, "an unknown mode means run");
    gm.dispose().await;

    hub.set_handshake(Handshake::Payload(json!({"versions": {"protocol": 1}})));
    let gm = graphmind::Session::new(hub.config("bare-ack"));
    assert!(gm.ready(2 * SECOND).await);
    assert!(gm.breakpoints().is_empty());
    gm.dispose().await;
}

#[tokio::test]
async fn binary_frames_and_pings_from_the_debugger_are_harmless() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message as Ws;
    // A hand-rolled hub: ack, then binary frames and pings; the client must answer the
    // ping with a pong and stay attached.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.expect("accept");
        let mut ws = tokio_tungstenite::accept_async(tcp).await.expect("upgrade");
        let _hello = ws.next().await;
        let ack = json!({"gm":1,"seq":0,"ts":0,"runId":"*","type":"hello.ack","payload":{"versions":{"protocol":1,"viewer":"x"},"capabilities":[],"breakpoints":[],"mode":"run"}});
        ws.send(Ws::text(ack.to_string())).await.expect("ack");
        ws.send(Ws::binary(vec![0u8, 159, 146, 150]))
            .await
            .expect("binary");
        ws.send(Ws::Ping(vec![7u8].into())).await.expect("ping");
        loop {
            match tokio::time::timeout(Duration::from_secs(2), ws.next()).await {
                Ok(Some(Ok(Ws::Pong(p)))) => return p.to_vec() == vec![7u8],
                Ok(Some(Ok(_))) => {}
                _ => return false,
            }
        }
    });
    let gm = graphmind::Session::new(
        graphmind::Config::new("binary")
            .url(format!("ws://127.0.0.1:{port}/ingest"))
            .env_vars(std::iter::empty::<(String, String)>()),
    );
    assert!(gm.ready(2 * SECOND).await);
    assert!(
        server.await.expect("joined"),
        "no pong for the debugger's ping"
    );
    gm.dispose().await;
}
