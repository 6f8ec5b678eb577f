//! `stream = true` marks a stream written under another name, as SDKs alias theirs;
//! `stream = false` returns a stream-looking type as one value.
use std::pin::Pin;

use futures_util::{Stream, StreamExt, stream};

type ChatStream = Pin<Box<dyn Stream<Item = Result<String, std::io::Error>> + Send>>;
type Numbers = Pin<Box<dyn Stream<Item = u32> + Send>>;

#[graphmind::model_step(stream = true)]
async fn complete(prompt: String) -> Result<ChatStream, std::io::Error> {
    let words: Vec<Result<String, std::io::Error>> =
        prompt.split(' ').map(|w| Ok(w.to_owned())).collect();
    Ok(Box::pin(stream::iter(words)))
}

#[graphmind::tool(stream = true)]
async fn numbers(n: u32) -> Numbers {
    Box::pin(stream::iter(0..n))
}

#[graphmind::tool(stream = true)]
async fn maybe_numbers(n: u32) -> Result<Numbers, String> {
    if n == 0 {
        return Err("empty".to_owned());
    }
    Ok(Box::pin(stream::iter(0..n)))
}

/// Named like a stream, but a plain serializable value.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct BoxStream(Vec<u32>);

#[graphmind::tool(stream = false)]
async fn batch(n: u32) -> BoxStream {
    BoxStream((0..n).collect())
}

#[tokio::main]
async fn main() {
    let words: Vec<String> = complete("a b".to_owned())
        .await
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(words, ["a", "b"]);
    assert_eq!(numbers(3).await.collect::<Vec<_>>().await, [0, 1, 2]);
    assert_eq!(maybe_numbers(2).await.unwrap().count().await, 2);
    assert_eq!(batch(2).await.0, [0, 1]);
}
