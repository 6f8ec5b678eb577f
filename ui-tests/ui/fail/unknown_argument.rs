#[graphmind::tool(nmae = "lookup")]
async fn lookup(order_id: u32) -> u32 {
    order_id
}

#[graphmind::model_step(call_id = request)]
async fn step(request: String) -> String {
    request
}

fn main() {
    let _ = lookup(1);
    let _ = step(String::new());
}
