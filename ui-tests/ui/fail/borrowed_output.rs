#[graphmind::tool]
async fn first(items: &[String]) -> Option<&String> {
    items.first()
}

fn main() {
    let _ = first(&[]);
}
