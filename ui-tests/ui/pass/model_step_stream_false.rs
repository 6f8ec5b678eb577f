//! `stream = false` on a model step: a response type whose name reads as a stream
//! (`BoxStream`) is one value, read through `StepResponse`, alone and inside a `Result`.
use std::borrow::Cow;

use graphmind::model::StepResponse;

/// Named like a stream, but one whole answer.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct BoxStream {
    text: String,
}

impl StepResponse for BoxStream {
    fn text(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(&self.text))
    }
}

#[graphmind::model_step(stream = false)]
async fn complete(prompt: String) -> BoxStream {
    BoxStream { text: prompt }
}

#[graphmind::model_step(stream = false)]
async fn try_complete(prompt: String) -> Result<BoxStream, std::io::Error> {
    Ok(BoxStream { text: prompt })
}

#[tokio::main]
async fn main() {
    assert_eq!(complete("a".to_owned()).await.text, "a");
    assert_eq!(try_complete("b".to_owned()).await.unwrap().text, "b");
}
