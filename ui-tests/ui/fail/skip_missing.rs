#[graphmind::tool(skip(client, ordr_id))]
async fn lookup(client: &str, order_id: u32) -> u32 {
    let _ = client;
    order_id
}

fn main() {
    let _ = lookup("db", 1);
}
