use futures_util::{Stream, stream};

struct Piece(u8);

#[graphmind::model_step]
async fn complete(prompt: String) -> impl Stream<Item = Piece> + Send {
    let _ = prompt;
    stream::iter([Piece(1)])
}

fn main() {
    let _ = complete(String::new());
}
