//! A codec over types of another crate (`graphmind_ui_tests::sdk`, standing in for an SDK,
//! and `serde_json::Value`): graphmind's traits cannot be implemented for those types here
//! (the orphan rule), but `impl ResponseCodec<TheirType> for OurCodec` can.
use std::borrow::Cow;

use graphmind::model::{
    ChunkCodec, Delta, DeltaKind, FinishReason, Grouping, Native, RequestCodec, ResponseCodec,
    ToolCall, Usage,
};
use graphmind_ui_tests::sdk::{ChatChunk, ChatRequest, ChatResponse, SdkError};

/// The codec this crate owns.
struct Chat;

impl ResponseCodec<ChatResponse> for Chat {
    fn usage(r: &ChatResponse) -> Option<Usage> {
        r.usage.map(|(i, o)| Usage::inclusive(i, o))
    }
    fn finish_reason(r: &ChatResponse) -> Option<Cow<'_, str>> {
        r.finish_reason.as_deref().map(Cow::Borrowed)
    }
    fn text(r: &ChatResponse) -> Option<Cow<'_, str>> {
        r.content.as_deref().map(Cow::Borrowed)
    }
    fn tool_calls(r: &ChatResponse) -> Vec<ToolCall<'_>> {
        r.tool_calls
            .iter()
            .map(|(id, name, args)| ToolCall::new(name.as_str(), args.as_str()).with_id(id.as_str()))
            .collect()
    }
    fn response_id(r: &ChatResponse) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(&r.id))
    }
}

impl ChunkCodec<ChatChunk> for Chat {
    fn call_deltas(c: &ChatChunk, emit: &mut dyn FnMut(Delta<'_>)) {
        if let Some(text) = &c.content {
            emit(Delta::new(DeltaKind::Text, text));
        }
    }
    fn finish_reason(c: &ChatChunk) -> Option<Cow<'_, str>> {
        c.finish_reason.as_deref().map(Cow::Borrowed)
    }
}

impl ChunkCodec<Result<ChatChunk, SdkError>> for Chat {
    fn call_deltas(c: &Result<ChatChunk, SdkError>, emit: &mut dyn FnMut(Delta<'_>)) {
        if let Ok(c) = c {
            <Chat as ChunkCodec<ChatChunk>>::call_deltas(c, emit);
        }
    }
    fn error(c: &Result<ChatChunk, SdkError>) -> Option<String> {
        c.as_ref().err().map(ToString::to_string)
    }
}

impl RequestCodec<ChatRequest> for Chat {
    fn first_message(q: &ChatRequest) -> Option<Cow<'_, str>> {
        q.messages.first().map(|m| Cow::Borrowed(m.as_str()))
    }
    fn message_count(q: &ChatRequest) -> usize {
        q.messages.len()
    }
}

impl ResponseCodec<serde_json::Value> for Chat {
    fn text(r: &serde_json::Value) -> Option<Cow<'_, str>> {
        r.get("text")?.as_str().map(Cow::Borrowed)
    }
}

/// A model step over the SDK's own types, read through the codec.
#[graphmind::model_step(codec = Chat)]
async fn complete(request: ChatRequest) -> Result<ChatResponse, SdkError> {
    Ok(ChatResponse { id: format!("r{}", request.messages.len()), ..ChatResponse::default() })
}

/// A stream of the SDK's `Result` items under its own alias, read through the codec.
type ChunkStream = std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<ChatChunk, SdkError>> + Send>>;

#[graphmind::model_step(codec = self::Chat, stream = true)]
async fn complete_stream(request: ChatRequest) -> Result<ChunkStream, SdkError> {
    let _ = request;
    Ok(Box::pin(futures_util::stream::iter(vec![Ok(ChatChunk::default()), Err(SdkError)])))
}

#[tokio::main]
async fn main() {
    let req = ChatRequest { messages: vec!["sys".into()] };
    assert_eq!(complete(req.clone()).await.ok().map(|r| r.id).as_deref(), Some("r1"));
    let items: Vec<_> = futures_util::StreamExt::collect(complete_stream(req).await.ok().unwrap()).await;
    assert_eq!(items.len(), 2);

    // The codec's functions are called by graphmind; called by hand, name the trait (several
    // codec traits have a `finish_reason`).
    let reply = ChatResponse {
        id: "r1".into(),
        content: Some("hi".into()),
        finish_reason: Some("tool_calls".into()),
        usage: Some((3, 4)),
        tool_calls: vec![("c1".into(), "lookup".into(), "{}".into())],
    };
    assert_eq!(<Chat as ResponseCodec<ChatResponse>>::text(&reply).as_deref(), Some("hi"));
    assert_eq!(<Chat as ResponseCodec<ChatResponse>>::tool_calls(&reply)[0].id.as_deref(), Some("c1"));
    assert_eq!(
        FinishReason::from_raw(&<Chat as ResponseCodec<ChatResponse>>::finish_reason(&reply).unwrap()),
        FinishReason::ToolCalls
    );
    let req = ChatRequest { messages: vec!["sys".into(), "hi".into()] };
    assert!(matches!(Chat::grouping(&req), Grouping::Messages(_, 2)));
    assert_eq!(<Chat as ResponseCodec<serde_json::Value>>::text(&serde_json::json!({"text": "x"})).as_deref(), Some("x"));
    // The default codec reads graphmind's own traits.
    assert_eq!(<Native as ResponseCodec<String>>::text(&String::new()), None);
    let mut n = 0;
    <Chat as ChunkCodec<Result<ChatChunk, SdkError>>>::call_deltas(
        &Ok(ChatChunk { content: Some("a".into()), finish_reason: None }),
        &mut |_| n += 1,
    );
    assert_eq!(n, 1);
}
