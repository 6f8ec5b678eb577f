//! `&self`, `&mut self` and `self` methods; `skip`, `name`, `call_id`, `retry = false`.
use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize)]
pub struct Order {
    pub id: String,
}

pub struct Db {
    orders: Vec<Order>,
    lookups: u32,
}

impl Db {
    #[graphmind::tool(name = "find_order", skip(verbose))]
    pub async fn find(&self, id: String, verbose: bool) -> Result<Order, String> {
        let _ = verbose;
        self.orders.iter().find(|o| o.id == id).cloned().ok_or(id)
    }

    #[graphmind::tool]
    pub async fn count(&mut self, mut extra: u32) -> u32 {
        extra += 1;
        self.lookups += extra;
        self.lookups
    }

    #[graphmind::tool(call_id = call, retry = false)]
    pub async fn close(self, call: &str) -> usize {
        let _ = call;
        self.orders.len()
    }
}

#[tokio::main]
async fn main() {
    let mut db = Db {
        orders: vec![Order { id: "1".into() }],
        lookups: 0,
    };
    assert!(db.find("1".into(), true).await.is_ok());
    assert_eq!(db.count(1).await, 2);
    assert_eq!(db.close("call_1").await, 1);
}
