#[graphmind::tool(call_id = attempt)]
async fn lookup(attempt: u32, order_id: u32) -> u32 {
    attempt + order_id
}

fn main() {
    let _ = lookup(1, 2);
}
