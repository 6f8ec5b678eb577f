#[graphmind::tool(name = "lookup", retry = false, name = "find")]
async fn lookup(order_id: u32) -> u32 {
    order_id
}

fn main() {
    let _ = lookup(1);
}
