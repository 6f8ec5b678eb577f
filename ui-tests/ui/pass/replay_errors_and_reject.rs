#[derive(Debug)]
enum LookupError {
    Missing(String),
    Rejected(String),
    Recorded(String),
}

impl std::fmt::Display for LookupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl From<graphmind::Rejection> for LookupError {
    fn from(r: graphmind::Rejection) -> Self {
        LookupError::Rejected(r.reason)
    }
}

impl From<graphmind::RecordedError> for LookupError {
    fn from(e: graphmind::RecordedError) -> Self {
        LookupError::Recorded(e.message)
    }
}

#[graphmind::tool(replay_errors)]
async fn lookup(order_id: String) -> Result<String, LookupError> {
    Err(LookupError::Missing(order_id))
}

#[graphmind::tool(reject, replay_errors)]
async fn refund(order_id: String) -> Result<String, LookupError> {
    Ok(order_id)
}

#[graphmind::tool(replay_errors = false)]
async fn plain(order_id: String) -> Result<String, String> {
    Ok(order_id)
}

fn main() {
    let _ = lookup("a".into());
    let _ = refund("a".into());
    let _ = plain("a".into());
}
