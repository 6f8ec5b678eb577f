#![deny(dead_code)]

#[graphmind::tool]
async fn never_called(order_id: u32) -> u32 {
    order_id
}

#[graphmind::model_step]
async fn never_asked(prompt: String) -> String {
    prompt
}

fn main() {}
