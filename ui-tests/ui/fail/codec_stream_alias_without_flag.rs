//! Regression (issue 11): with a codec that reads one response type, the SDK's stream alias
//! without `stream = true` was a type mismatch against that response (E0271) that never
//! said `stream = true`; now it is the missing codec impl, with the note.
use std::pin::Pin;

use futures_util::{Stream, stream};
use graphmind_ui_tests::sdk::{ChatChunk, ChatRequest, ChatResponse, SdkError};

/// An SDK's stream alias, as async-openai's `ChatCompletionResponseStream`.
type ChatStream = Pin<Box<dyn Stream<Item = Result<ChatChunk, SdkError>> + Send>>;

/// A codec reading the SDK's non-streaming response only.
struct Chat;

impl graphmind::model::ResponseCodec<ChatResponse> for Chat {}

#[graphmind::model_step(codec = Chat)]
async fn complete(request: ChatRequest) -> Result<ChatStream, SdkError> {
    let _ = request;
    Ok(Box::pin(stream::iter(Vec::new())))
}

fn main() {
    let _ = complete(ChatRequest::default());
}
