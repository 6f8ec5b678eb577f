//! A debugger URL that cannot work says what is wrong and what to write instead, once: an
//! `http://` address (what `graphmind serve` prints first), and a server that answers plain
//! HTTP where the WebSocket upgrade was expected (a wrong path, or not a debugger at all).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn collecting(url: String) -> (graphmind::Config, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let config = graphmind::Config::new("wrong-url")
        .url(url)
        .enabled(true)
        .on_warning(move |m| sink.lock().expect("lock").push(m.to_owned()));
    (config, seen)
}

#[tokio::test]
async fn an_http_url_is_refused_with_the_websocket_form_to_use() {
    let (config, warnings) = collecting("http://127.0.0.1:9/".into());
    let gm = graphmind::Session::new(config);
    assert!(!gm.ready(Duration::from_millis(300)).await);
    assert!(!gm.ready(Duration::from_millis(300)).await);
    let warnings = warnings.lock().expect("lock").clone();
    assert_eq!(warnings.len(), 1, "warned once: {warnings:?}");
    assert!(
        warnings[0].contains("http://127.0.0.1:9/"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[0].contains("ws://127.0.0.1:4747/ingest"),
        "{}",
        warnings[0]
    );
    gm.dispose().await;
}

#[tokio::test]
async fn a_plain_http_answer_asks_whether_the_path_is_right() {
    // An HTTP server that answers every request with 404, as a web server at a wrong path
    // (or the hub at a path other than /ingest) does.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = tokio::spawn(async move {
        for _ in 0..8 {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf).await;
            let _ = socket
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
        }
    });
    let (config, warnings) = collecting(format!("ws://127.0.0.1:{port}/"));
    let gm = graphmind::Session::new(config);
    assert!(!gm.ready(Duration::from_millis(500)).await);
    assert!(!gm.ready(Duration::from_millis(500)).await);
    let warnings = warnings.lock().expect("lock").clone();
    assert_eq!(warnings.len(), 1, "warned once: {warnings:?}");
    assert!(warnings[0].contains("HTTP 404"), "{}", warnings[0]);
    assert!(warnings[0].contains("/ingest"), "{}", warnings[0]);
    gm.dispose().await;
    server.abort();
}

#[tokio::test]
async fn a_url_without_a_scheme_says_what_one_looks_like() {
    let (config, warnings) = collecting("127.0.0.1:4747/ingest".into());
    let gm = graphmind::Session::new(config);
    assert!(!gm.ready(Duration::from_millis(300)).await);
    let warnings = warnings.lock().expect("lock").clone();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("looks like ws://"), "{}", warnings[0]);
    gm.dispose().await;
}
