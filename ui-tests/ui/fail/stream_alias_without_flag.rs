use std::pin::Pin;

use futures_util::{Stream, stream};

type ChatStream = Pin<Box<dyn Stream<Item = Result<String, std::io::Error>> + Send>>;

#[graphmind::model_step]
async fn complete(prompt: String) -> Result<ChatStream, std::io::Error> {
    let _ = prompt;
    Ok(Box::pin(stream::iter(Vec::new())))
}

type Numbers = Pin<Box<dyn Stream<Item = u32> + Send>>;

#[graphmind::tool]
async fn numbers(n: u32) -> Numbers {
    Box::pin(stream::iter(0..n))
}

fn main() {
    let _ = complete(String::new());
    let _ = numbers(1);
}
