//! Streaming returns: `impl Stream` and `Result<impl Stream, E>`, tools and model steps.
use futures_util::{Stream, StreamExt, stream};

#[graphmind::tool]
async fn numbers(n: u32) -> impl Stream<Item = u32> + Send {
    stream::iter(0..n)
}

#[graphmind::tool]
async fn maybe_numbers(n: u32) -> Result<impl Stream<Item = u32>, String> {
    if n == 0 {
        return Err("empty".to_owned());
    }
    Ok(stream::iter(0..n))
}

#[graphmind::model_step(tools = [numbers, maybe_numbers])]
async fn complete(prompt: String) -> Result<impl Stream<Item = String> + Send, std::io::Error> {
    Ok(stream::iter(
        prompt.split(' ').map(str::to_owned).collect::<Vec<_>>(),
    ))
}

#[tokio::main]
async fn main() {
    assert_eq!(numbers(3).await.collect::<Vec<_>>().await, [0, 1, 2]);
    assert_eq!(maybe_numbers(2).await.unwrap().count().await, 2);
    let words: Vec<String> = complete("a b".to_owned()).await.unwrap().collect().await;
    assert_eq!(words, ["a", "b"]);
}
