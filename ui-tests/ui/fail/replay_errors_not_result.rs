#[graphmind::tool(replay_errors)]
async fn lookup(order_id: String) -> String {
    order_id
}

fn main() {
    let _ = lookup("a".into());
}
