#[graphmind::tool(call_id = tool_call)]
async fn lookup(call_id: String, order_id: u32) -> u32 {
    let _ = call_id;
    order_id
}

fn main() {
    let _ = lookup(String::new(), 1);
}
