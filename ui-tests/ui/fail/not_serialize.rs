#[derive(Clone)]
pub struct Client;

#[graphmind::tool]
async fn lookup(client: Client, order_id: u32) -> u32 {
    let _ = client;
    order_id
}

fn main() {
    let _ = lookup(Client, 1);
}
