struct Agent;

#[graphmind::tool]
impl Agent {
    async fn lookup(&self, order_id: u32) -> u32 {
        order_id
    }
}

trait Tools {
    #[graphmind::tool]
    async fn search(&self, query: String) -> Vec<String>;
}

fn main() {}
