//! Model steps: plain and `Result` responses, `tools = [...]` with paths and names, explicit
//! `invocation = …`, `skip`, `retry = false`, a trait default method, and `Arc<Self>`.
use std::sync::Arc;

#[graphmind::tool(name = "lookup")]
async fn lookup_order(id: String) -> String {
    id
}

#[graphmind::model_step(tools = [lookup_order, crate::escalate, "refund"], skip(api_key))]
async fn plan(api_key: &str, prompt: String) -> String {
    let _ = api_key;
    prompt
}

#[graphmind::tool]
async fn escalate(reason: String) -> String {
    reason
}

#[graphmind::model_step(invocation = ticket, retry = false)]
async fn answer(ticket: u64, prompt: &mut String) -> Result<String, std::io::Error> {
    prompt.push('!');
    Ok(format!("{ticket}: {prompt}"))
}

trait Agent {
    fn name(&self) -> String;

    #[graphmind::tool]
    async fn greet(&self, who: String) -> String {
        format!("{} greets {who}", self.name())
    }
}

struct Bot;

impl Agent for Bot {
    fn name(&self) -> String {
        "bot".into()
    }
}

impl Bot {
    #[graphmind::tool]
    async fn shared(self: Arc<Self>, n: u8) -> u8 {
        n
    }
}

#[tokio::main]
async fn main() {
    assert_eq!(plan("key", "hi".into()).await, "hi");
    let mut prompt = String::from("hello");
    assert_eq!(answer(7, &mut prompt).await.unwrap(), "7: hello!");
    assert_eq!(Bot.greet("ann".into()).await, "bot greets ann");
    assert_eq!(Arc::new(Bot).shared(3).await, 3);
    assert_eq!(lookup_order("1".into()).await, "1");
    assert_eq!(escalate("x".into()).await, "x");
}
