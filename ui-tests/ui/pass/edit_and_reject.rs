//! Argument shapes an edit meets: owned arguments (editable), a `mut` argument, a skipped
//! borrow beside an owned one, a run-once body with a skipped `mut` argument, a borrowed
//! `Cow` (not editable), `edit = false`, a generic argument, and `reject` on a `Result` tool and on a `Result<impl Stream, E>` tool whose
//! error converts from `graphmind::Rejection`.

use std::borrow::Cow;

#[derive(Debug)]
pub enum MailError {
    Rejected(String),
}

impl std::fmt::Display for MailError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MailError::Rejected(r) => write!(f, "rejected: {r}"),
        }
    }
}

impl From<graphmind::Rejection> for MailError {
    fn from(r: graphmind::Rejection) -> Self {
        MailError::Rejected(r.reason)
    }
}

#[graphmind::tool(reject)]
async fn send(to: String, mut body: String) -> Result<String, MailError> {
    body.push('!');
    Ok(format!("{to}{body}"))
}

#[graphmind::tool(retry = false)]
async fn once(mut n: u32, label: String) -> u32 {
    n += 1;
    n + label.len() as u32
}

#[graphmind::tool(retry = false, skip(counter))]
async fn count(mut counter: Vec<u8>, q: String) -> usize {
    counter.push(1);
    counter.len() + q.len()
}

#[graphmind::tool(skip(db))]
async fn lookup(db: &[u8], id: String) -> String {
    format!("{}{id}", db.len())
}

#[graphmind::tool]
async fn cow(text: Cow<'static, str>) -> String {
    text.into_owned()
}

#[graphmind::tool(edit = false)]
async fn fixed(q: String) -> String {
    q
}

/// A streaming tool that opts in to reject returns `Result<impl Stream, E>`.
#[graphmind::tool(reject)]
async fn feed(n: u32) -> Result<impl futures_util::Stream<Item = u32>, MailError> {
    Ok(futures_util::stream::iter(0..n))
}

#[graphmind::tool]
async fn generic<T: serde::Serialize + Clone + Send + 'static>(item: T) -> usize {
    let _ = item;
    1
}

fn main() {
    let _ = send("a".into(), "b".into());
    let _ = once(1, "x".into());
    let _ = count(Vec::new(), "q".into());
    let _ = lookup(&[], "id".into());
    let _ = cow(Cow::Borrowed("t"));
    let _ = fixed("q".into());
    let _ = generic(3u8);
    let _ = feed(3);
}
