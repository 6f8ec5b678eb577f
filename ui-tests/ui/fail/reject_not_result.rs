#[graphmind::tool(reject)]
async fn send(to: String) -> String {
    to
}

fn main() {
    let _ = send("a".into());
}
