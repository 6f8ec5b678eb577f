#![deny(unused_variables)]

#[graphmind::tool]
pub async fn ignores_argument(order_id: u32, note: String) -> u32 {
    order_id
}

fn main() {}
