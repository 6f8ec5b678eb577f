//! The stdio transport, with a screen in front of the MCP session: a message the session
//! could not read (nested deeper than the JSON parser takes, not JSON, or a line over
//! [`MAX_LINE`]) is answered here with a JSON-RPC error carrying its `id`, instead of being
//! dropped and leaving the client waiting forever.
//!
//! stdin → screen → the session (through an in-memory pipe) → one writer → stdout; the
//! screen's own answers go through the same writer, so lines never interleave.

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The longest message line taken (as rmcp's own stdio limit).
pub const MAX_LINE: usize = 16 * 1024 * 1024;
/// How much of an over-long line is kept to find its `id`.
const PREFIX: usize = 4096;

/// What to do with one line from the client.
#[derive(Debug, PartialEq)]
pub enum Screen {
    /// Hand it to the session.
    Forward,
    /// Answer it here with this JSON-RPC error line.
    Answer(String),
    /// Drop it (a notification or a message without an id: nobody waits for an answer).
    Drop,
}

/// Only the `id` of a message; every other member is skipped without recursion (serde_json
/// skips ignored values with an explicit stack), so a message nested too deep for a `Value`
/// still yields its id.
#[derive(Deserialize)]
struct IdOnly {
    #[serde(default)]
    id: Option<Value>,
}

fn error_line(id: Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

fn usable_id(id: Option<Value>) -> Option<Value> {
    id.filter(|i| i.is_string() || i.is_u64() || i.is_i64())
}

/// Screens one complete line (without its newline).
pub fn screen(line: &[u8]) -> Screen {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Screen::Drop;
    }
    match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
        Err(_) => {
            // Not JSON at all: JSON-RPC says answer with a null id.
            Screen::Answer(error_line(Value::Null, -32700, "parse error: not JSON"))
        }
        Ok(_) => match serde_json::from_slice::<Value>(line) {
            Ok(_) => Screen::Forward,
            Err(e) => match usable_id(
                serde_json::from_slice::<IdOnly>(line)
                    .ok()
                    .and_then(|m| m.id),
            ) {
                Some(id) => Screen::Answer(error_line(
                    id,
                    -32600,
                    &format!(
                        "invalid request: the message cannot be read ({e}); JSON nested deeper than 128 levels is not taken"
                    ),
                )),
                None => Screen::Drop,
            },
        },
    }
}

/// The answer to a line longer than [`MAX_LINE`], from its first bytes: its `id` found
/// by a plain scan (`"id":` followed by a number or a string).
pub fn screen_oversized(prefix: &[u8]) -> Screen {
    let text = String::from_utf8_lossy(prefix);
    let Some(at) = text.find("\"id\"") else {
        return Screen::Drop;
    };
    let rest = text[at + 4..].trim_start();
    let Some(rest) = rest.strip_prefix(':') else {
        return Screen::Drop;
    };
    let rest = rest.trim_start();
    let id = if let Some(s) = rest.strip_prefix('"') {
        s.find('"').map(|end| Value::String(s[..end].to_owned()))
    } else {
        let digits: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        digits.parse::<i64>().ok().map(Value::from)
    };
    match id {
        Some(id) => Screen::Answer(error_line(
            id,
            -32600,
            &format!("invalid request: the message is over {MAX_LINE} bytes"),
        )),
        None => Screen::Drop,
    }
}

/// One line read: whole, or too long (its first [`PREFIX`] bytes), or the end.
enum Line {
    Whole(Vec<u8>),
    TooLong(Vec<u8>),
    End,
}

async fn read_line<R: AsyncRead + Unpin>(r: &mut BufReader<R>) -> std::io::Result<Line> {
    let mut buf = Vec::new();
    let mut too_long = false;
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if buf.is_empty() {
                Line::End
            } else if too_long {
                Line::TooLong(buf)
            } else {
                Line::Whole(buf)
            });
        }
        let newline = chunk.iter().position(|b| *b == b'\n');
        let (part, done) = match newline {
            Some(i) => (&chunk[..i], i + 1),
            None => (chunk, chunk.len()),
        };
        let found = newline.is_some();
        if !too_long {
            if buf.len() + part.len() > MAX_LINE {
                too_long = true;
                buf.truncate(PREFIX);
                let room = PREFIX.saturating_sub(buf.len());
                buf.extend_from_slice(&part[..part.len().min(room)]);
            } else {
                buf.extend_from_slice(part);
            }
        }
        r.consume(done);
        if found {
            return Ok(if too_long {
                Line::TooLong(buf)
            } else {
                Line::Whole(buf)
            });
        }
    }
}

/// Copies the client's lines from `input` to `session` through the screen, the session's
/// lines and the screen's answers to `output`, until `input` ends.
pub async fn bridge<I, O, S>(input: I, output: O, session: S)
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (from_session, mut to_session) = tokio::io::split(session);
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(64);
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(mut line) = rx.recv().await {
            line.push(b'\n');
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    let answers = tx.clone();
    let relay = tokio::spawn(async move {
        let mut lines = BufReader::new(from_session).split(b'\n');
        while let Ok(Some(line)) = lines.next_segment().await {
            if tx.send(line).await.is_err() {
                break;
            }
        }
    });
    let mut input = BufReader::new(input);
    loop {
        let verdict = match read_line(&mut input).await {
            Ok(Line::End) | Err(_) => break,
            Ok(Line::Whole(line)) => match screen(&line) {
                Screen::Forward => {
                    let mut line = line;
                    line.push(b'\n');
                    if to_session.write_all(&line).await.is_err() {
                        break;
                    }
                    continue;
                }
                other => other,
            },
            Ok(Line::TooLong(prefix)) => screen_oversized(&prefix),
        };
        if let Screen::Answer(a) = verdict
            && answers.send(a.into_bytes()).await.is_err()
        {
            break;
        }
    }
    // The client is gone: end the session's input, let its last answers out.
    let _ = to_session.shutdown().await;
    drop(to_session);
    drop(answers);
    let _ = relay.await;
    let _ = writer.await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deep(n: usize) -> String {
        format!("{}1{}", "[".repeat(n), "]".repeat(n))
    }

    #[test]
    fn a_message_too_deep_for_the_parser_is_answered_with_its_id() {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"x","arguments":{{"output":{}}}}}}}"#,
            deep(100_000)
        );
        match screen(line.as_bytes()) {
            Screen::Answer(a) => {
                let v: Value = serde_json::from_str(&a).unwrap();
                assert_eq!(v["id"], json!(7));
                assert_eq!(v["error"]["code"], json!(-32600));
            }
            other => panic!("{other:?}"),
        }
        let note = format!(r#"{{"jsonrpc":"2.0","method":"x","params":{}}}"#, deep(500));
        assert_eq!(screen(note.as_bytes()), Screen::Drop);
    }

    #[test]
    fn readable_messages_pass_and_garbage_gets_a_parse_error() {
        assert_eq!(
            screen(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Screen::Forward
        );
        assert_eq!(screen(b"  "), Screen::Drop);
        match screen(b"{not json") {
            Screen::Answer(a) => assert!(a.contains("-32700"), "{a}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_oversized_line_is_answered_from_its_first_bytes() {
        match screen_oversized(br#"{"jsonrpc":"2.0","id":"req-9","method":"tools/call","params":{"#)
        {
            Screen::Answer(a) => assert!(a.contains(r#""id":"req-9""#), "{a}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            screen_oversized(br#"{"jsonrpc":"2.0","id":42,"#),
            Screen::Answer(a) if a.contains(r#""id":42"#)
        ));
        assert_eq!(screen_oversized(b"[[[[["), Screen::Drop);
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_cut_to_its_prefix() {
        let mut text = br#"{"id":3,"x":""#.to_vec();
        text.extend(std::iter::repeat_n(b'a', MAX_LINE + 10));
        text.extend_from_slice(b"\"}\n{\"id\":4}\n");
        let mut r = BufReader::new(&text[..]);
        match read_line(&mut r).await.unwrap() {
            Line::TooLong(p) => assert_eq!(p.len(), PREFIX),
            _ => panic!("not cut"),
        }
        match read_line(&mut r).await.unwrap() {
            Line::Whole(l) => assert_eq!(l, b"{\"id\":4}"),
            _ => panic!("the next line is lost"),
        }
        assert!(matches!(read_line(&mut r).await.unwrap(), Line::End));
    }
}
