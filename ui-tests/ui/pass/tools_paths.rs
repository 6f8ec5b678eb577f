//! `tools = [...]` entries are checked to name something: a generic tool, a tool in another
//! module (by path and imported), and a tool method (a type's associated fn, named by path)
//! all compile.
mod helpers {
    #[graphmind::tool]
    pub async fn pick<T: serde::Serialize + Clone + Send + Sync>(items: Vec<T>) -> usize {
        items.len()
    }

    #[graphmind::tool]
    pub async fn shout(text: String) -> String {
        text.to_uppercase()
    }
}

use helpers::shout;

struct Desk;

impl Desk {
    #[graphmind::tool]
    async fn lookup(&self, id: u32) -> u32 {
        id
    }
}

#[graphmind::model_step(tools = [helpers::pick, shout, Desk::lookup, self::helpers::shout])]
async fn plan(prompt: String) -> String {
    prompt
}

fn main() {
    let _ = (plan(String::new()), helpers::pick(vec![1u8]), shout(String::new()));
    let _ = Desk.lookup(1);
}
