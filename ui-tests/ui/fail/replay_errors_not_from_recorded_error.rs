#[graphmind::tool(replay_errors)]
async fn lookup(order_id: String) -> Result<String, String> {
    Ok(order_id)
}

fn main() {
    let _ = lookup("a".into());
}
