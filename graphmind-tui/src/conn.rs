//! The feed task: connects to the hub's `/ws/ui`, authenticates with the agent token, decodes
//! frames, and reconnects with backoff when the hub goes away (re-reading the run file, as a
//! restarted hub has a new token). It never waits on the UI: frames go out on an unbounded
//! channel.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use graphmind_protocol::feed::FeedFrame;
use graphmind_protocol::{Envelope, Parsed, parse_value};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// What the feed task reports.
#[derive(Debug)]
pub enum FeedMsg {
    /// Connected and authenticated (the `hello` frame follows).
    Connected,
    /// A typed frame.
    Frame(FeedFrame),
    /// Events of a subscribed run.
    Events {
        /// The run.
        run_id: String,
        /// Its envelopes, in seq order.
        events: Vec<Envelope>,
    },
    /// The connection dropped or could not be made; the task retries.
    Lost(String),
}

/// What the app asks of the feed task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedCmd {
    /// Replay and tail a run.
    Subscribe(String),
    /// Stop tailing.
    Unsubscribe,
}

/// Decodes one text frame of the feed (`None` for frames the UI does not use, such as
/// `result`).
#[must_use]
pub fn decode(text: &str) -> Option<FeedMsg> {
    let v: Value = serde_json::from_str(text).ok()?;
    match v.get("type").and_then(Value::as_str)? {
        "events" => {
            let run_id = v.get("runId")?.as_str()?.to_owned();
            let events = v
                .get("events")?
                .as_array()?
                .iter()
                .filter_map(|e| match parse_value(e.clone()) {
                    Parsed::Ok(env) => Some(env),
                    _ => None,
                })
                .collect();
            Some(FeedMsg::Events { run_id, events })
        }
        "result" => None,
        _ => serde_json::from_value::<FeedFrame>(v)
            .ok()
            .map(FeedMsg::Frame),
    }
}

/// Backoff before attempt `n` (1-based): 250 ms doubling, at most 3 s.
#[must_use]
pub fn backoff(n: u32) -> Duration {
    Duration::from_millis((250u64 << n.saturating_sub(1).min(4)).min(3000))
}

/// Runs until `tx` is closed.
pub async fn feed_task(
    port: u16,
    tx: mpsc::UnboundedSender<FeedMsg>,
    mut cmds: mpsc::UnboundedReceiver<FeedCmd>,
) {
    let mut sub: Option<String> = None;
    let mut attempt = 0u32;
    loop {
        let why = session(port, &tx, &mut cmds, &mut sub, &mut attempt).await;
        if tx.send(FeedMsg::Lost(why)).is_err() {
            return;
        }
        attempt += 1;
        let sleep = tokio::time::sleep(backoff(attempt));
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                () = &mut sleep => break,
                c = cmds.recv() => match c {
                    Some(FeedCmd::Subscribe(r)) => sub = Some(r),
                    Some(FeedCmd::Unsubscribe) => sub = None,
                    None => return,
                },
            }
        }
    }
}

async fn session(
    port: u16,
    tx: &mpsc::UnboundedSender<FeedMsg>,
    cmds: &mut mpsc::UnboundedReceiver<FeedCmd>,
    sub: &mut Option<String>,
    attempt: &mut u32,
) -> String {
    // A restarted hub writes a new run file with a new token.
    let hub = graphmind_connect::Hub::find(port);
    let url = format!("ws://127.0.0.1:{port}/ws/ui");
    let ws = match tokio::time::timeout(
        Duration::from_secs(5),
        tokio_tungstenite::connect_async(url.as_str()),
    )
    .await
    {
        Err(_) => return format!("no answer from port {port} in 5 s"),
        Ok(Err(e)) => return format!("cannot connect to port {port}: {e}"),
        Ok(Ok((ws, _))) => ws,
    };
    let (mut sink, mut stream) = ws.split();
    let auth = json!({"type": "auth", "token": hub.token().unwrap_or("")}).to_string();
    if sink.send(Message::text(auth)).await.is_err() {
        return "the hub closed the connection".into();
    }
    if let Some(r) = sub.as_ref() {
        let f = json!({"type": "subscribe", "runId": r}).to_string();
        if sink.send(Message::text(f)).await.is_err() {
            return "the hub closed the connection".into();
        }
    }
    let mut connected = false;
    loop {
        tokio::select! {
            m = stream.next() => match m {
                Some(Ok(Message::Text(t))) => {
                    let Some(msg) = decode(t.as_str()) else { continue };
                    if !connected && matches!(msg, FeedMsg::Frame(FeedFrame::Hello { .. })) {
                        connected = true;
                        *attempt = 0;
                        let _ = tx.send(FeedMsg::Connected);
                    }
                    let unauthorized = matches!(msg, FeedMsg::Frame(FeedFrame::Unauthorized { .. }));
                    if tx.send(msg).is_err() {
                        return String::new();
                    }
                    if unauthorized {
                        return "the hub refused the agent token".into();
                    }
                }
                Some(Ok(Message::Close(c))) => {
                    return c.map_or_else(
                        || "the hub closed the connection".into(),
                        |c| format!("the hub closed the connection ({})", c.reason),
                    );
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return format!("lost the hub: {e}"),
                None => return "the hub closed the connection".into(),
            },
            c = cmds.recv() => {
                let frame = match c {
                    Some(FeedCmd::Subscribe(r)) => {
                        let f = json!({"type": "subscribe", "runId": r});
                        *sub = Some(r);
                        f
                    }
                    Some(FeedCmd::Unsubscribe) => {
                        *sub = None;
                        json!({"type": "unsubscribe"})
                    }
                    None => return String::new(),
                };
                if sink.send(Message::text(frame.to_string())).await.is_err() {
                    return "the hub closed the connection".into();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_frames_decode_to_envelopes_and_results_are_skipped() {
        let m = decode(
            r#"{"type":"events","runId":"r1","replay":true,"events":[{"gm":1,"seq":1,"ts":5,"runId":"r1","type":"run.finished","payload":{"status":"ok"}}]}"#,
        );
        match m {
            Some(FeedMsg::Events { run_id, events }) => {
                assert_eq!(run_id, "r1");
                assert_eq!(events.len(), 1);
                assert_eq!(events[0].seq, 1);
            }
            other => panic!("{other:?}"),
        }
        assert!(decode(r#"{"type":"result","ok":true}"#).is_none());
        assert!(matches!(
            decode(r#"{"type":"removed","runIds":["a"]}"#),
            Some(FeedMsg::Frame(FeedFrame::Removed { .. }))
        ));
    }

    #[test]
    fn backoff_doubles_up_to_three_seconds() {
        assert_eq!(backoff(1), Duration::from_millis(250));
        assert_eq!(backoff(2), Duration::from_millis(500));
        assert_eq!(backoff(4), Duration::from_millis(2000));
        assert_eq!(backoff(9), Duration::from_millis(3000));
    }
}
