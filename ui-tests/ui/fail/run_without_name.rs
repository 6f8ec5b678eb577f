async fn work() -> u32 {
    1
}

fn main() {
    let _ = graphmind::run!(async { work().await });
}
