#[graphmind::tool]
fn lookup(order_id: String) -> Result<String, String> {
    Ok(order_id)
}

fn main() {
    let _ = lookup("1".to_owned());
}
