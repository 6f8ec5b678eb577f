use graphmind_ui_tests::sdk::{ChatChunk, ChatRequest, ChatResponse, SdkError};

/// A codec that reads requests only.
struct Chat;

impl graphmind::model::RequestCodec<ChatRequest> for Chat {}

#[graphmind::model_step(codec = Chat)]
async fn complete(request: ChatRequest) -> Result<ChatResponse, SdkError> {
    let _ = request;
    Ok(ChatResponse::default())
}

#[graphmind::model_step(codec = Chat)]
async fn complete_stream(request: ChatRequest) -> impl futures_util::Stream<Item = ChatChunk> {
    let _ = request;
    futures_util::stream::empty()
}

/// Without a codec, the SDK's response is read through `StepResponse`, which it cannot have.
#[graphmind::model_step]
async fn uncoded(request: ChatRequest) -> ChatResponse {
    let _ = request;
    ChatResponse::default()
}

fn main() {}
