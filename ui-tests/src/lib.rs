//! trybuild cases for the graphmind attribute macros; see `tests/ui.rs`.
//!
//! [`sdk`] stands in for a model SDK: a crate other than the one that instruments it, whose
//! types implement none of graphmind's traits (the orphan rule keeps the case's crate from
//! adding such impls), so a codec must read them.

/// Types shaped like an OpenAI-style SDK's, owned by this crate, not by the ui cases.
pub mod sdk {
    use serde::{Deserialize, Serialize};

    /// A chat request.
    #[derive(Debug, Clone, Default, Serialize, Deserialize)]
    pub struct ChatRequest {
        /// The conversation so far.
        pub messages: Vec<String>,
    }

    /// A non-streaming chat reply.
    #[derive(Debug, Clone, Default, Serialize, Deserialize)]
    pub struct ChatResponse {
        /// The response id.
        pub id: String,
        /// The answer.
        pub content: Option<String>,
        /// The provider's finish reason.
        pub finish_reason: Option<String>,
        /// Prompt and completion tokens.
        pub usage: Option<(u64, u64)>,
        /// `(id, name, arguments)` of each tool call.
        pub tool_calls: Vec<(String, String, String)>,
    }

    /// One streamed chunk.
    #[derive(Debug, Clone, Default, Serialize, Deserialize)]
    pub struct ChatChunk {
        /// A piece of the answer.
        pub content: Option<String>,
        /// The finish reason, on the last chunk.
        pub finish_reason: Option<String>,
    }

    /// The SDK's error.
    #[derive(Debug)]
    pub struct SdkError;

    impl std::fmt::Display for SdkError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("sdk error")
        }
    }
}
