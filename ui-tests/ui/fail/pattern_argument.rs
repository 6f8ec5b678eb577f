#[graphmind::tool]
async fn area((w, h): (u32, u32)) -> u32 {
    w * h
}

fn main() {
    let _ = area((2, 3));
}
