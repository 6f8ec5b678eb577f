#[graphmind::tool]
const fn lookup(order_id: u32) -> u32 {
    order_id
}

fn main() {
    let _ = lookup(1);
}
