//! The answers the mock serves, embedded from `fixtures/` (shaped like the real API's).

use serde_json::Value;

/// Every fixture: (file name, text).
pub const FIXTURES: &[(&str, &str)] = &[
    (
        "chat_broken.sse",
        include_str!("../fixtures/chat_broken.sse"),
    ),
    (
        "chat_reasoning.sse.json",
        include_str!("../fixtures/chat_reasoning.sse.json"),
    ),
    (
        "chat_refusal.json",
        include_str!("../fixtures/chat_refusal.json"),
    ),
    (
        "chat_refusal.sse.json",
        include_str!("../fixtures/chat_refusal.sse.json"),
    ),
    ("chat_text.json", include_str!("../fixtures/chat_text.json")),
    (
        "chat_tools.json",
        include_str!("../fixtures/chat_tools.json"),
    ),
    (
        "chat_tools.sse.json",
        include_str!("../fixtures/chat_tools.sse.json"),
    ),
    (
        "error_429_quota.json",
        include_str!("../fixtures/error_429_quota.json"),
    ),
    (
        "error_429_rate.json",
        include_str!("../fixtures/error_429_rate.json"),
    ),
    ("error_500.json", include_str!("../fixtures/error_500.json")),
    (
        "responses_code_interpreter.json",
        include_str!("../fixtures/responses_code_interpreter.json"),
    ),
    (
        "responses_file_search.json",
        include_str!("../fixtures/responses_file_search.json"),
    ),
    (
        "responses_image_generation.json",
        include_str!("../fixtures/responses_image_generation.json"),
    ),
    (
        "responses_mcp.json",
        include_str!("../fixtures/responses_mcp.json"),
    ),
    (
        "responses_text.json",
        include_str!("../fixtures/responses_text.json"),
    ),
    (
        "responses_tools.json",
        include_str!("../fixtures/responses_tools.json"),
    ),
    (
        "responses_tools.sse.json",
        include_str!("../fixtures/responses_tools.sse.json"),
    ),
    (
        "responses_web_search.json",
        include_str!("../fixtures/responses_web_search.json"),
    ),
    (
        "responses_web_search.sse.json",
        include_str!("../fixtures/responses_web_search.sse.json"),
    ),
];

/// A fixture's text, by file name (`chat_tools.json`); empty when there is none.
pub fn fixture(name: &str) -> &'static str {
    FIXTURES
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("", |(_, text)| text)
}

/// A fixture's JSON, by file name (`Null` when there is none or it is not JSON).
pub fn fixture_json(name: &str) -> Value {
    serde_json::from_str(fixture(name)).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_json_fixture_parses() {
        for (name, _) in FIXTURES {
            if name.ends_with(".json") {
                assert_ne!(fixture_json(name), Value::Null, "{name}");
            }
        }
        assert_eq!(fixture("no-such-file"), "");
    }
}
