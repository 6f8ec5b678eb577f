#[graphmind::tool(reject)]
async fn send(to: String) -> Result<String, String> {
    Ok(to)
}

fn main() {
    let _ = send("a".into());
}
