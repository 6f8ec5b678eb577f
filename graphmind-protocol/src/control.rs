//! The bodies of a resume request and its answer (HTTP `POST …/resume`, the viewer's `resume`
//! frame on `/ws/ui`, `docs/http-api.md`), who asked for a release (the [`Principal`] the hub
//! stamps onto every stored `exec.resumed`), and the decisions remembered for a run.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::PausePoint;

/// Who released a gate, as the hub stamps it onto the stored `exec.resumed` (`principal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Principal {
    /// A viewer (the `/ws/ui` socket, with the viewer token).
    Viewer,
    /// A script or agent (the HTTP API, with the agent token of the run file).
    Agent,
    /// Nobody the hub asked for: the app released the gate itself (a timeout, a disconnect,
    /// its own decision).
    Anonymous,
}

impl Principal {
    /// The wire spelling.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Viewer => "viewer",
            Self::Agent => "agent",
            Self::Anonymous => "anonymous",
        }
    }
}

/// The longest `operator` label kept (longer ones are cut).
pub const MAX_OPERATOR_CHARS: usize = 64;
/// The longest reject `reason` taken.
pub const MAX_REASON_CHARS: usize = 2000;

/// An `operator` label as the hub stamps it (stores, sends and shows): control characters
/// and invisible format characters dropped — the bidirectional overrides, embeddings and
/// isolates (U+202A–U+202E, U+2066–U+2069), the direction marks (U+200E, U+200F, U+061C),
/// zero-width and other format characters (see [`is_invisible_format`]) — so a label cannot
/// display as another one (`U+202E` turning `ops\u{202E}nimda` into `opsadmin`) — then cut to
/// [`MAX_OPERATOR_CHARS`] characters.
#[must_use]
pub fn operator_label(s: &str) -> String {
    s.chars()
        .filter(|&c| !c.is_control() && !is_invisible_format(c))
        .take(MAX_OPERATOR_CHARS)
        .collect::<String>()
        .trim()
        .to_owned()
}

/// Whether `c` is a Unicode format character (general category `Cf`: bidirectional controls,
/// direction marks, zero-width characters, the byte-order mark, interlinear annotation and
/// tag characters, invisible operators) or a line or paragraph separator (U+2028, U+2029):
/// characters that change how the text around them is shown, or are not shown at all.
#[must_use]
pub fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{0600}'..='\u{0605}'
            | '\u{061C}'
            | '\u{06DD}'
            | '\u{070F}'
            | '\u{0890}'..='\u{0891}'
            | '\u{08E2}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0001}'
            | '\u{E0020}'..='\u{E007F}'
    )
}

/// A resume request, as the HTTP API and the viewer's `resume` frame take it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeRequest {
    /// `continue`, `retry`, `inject`, `abort` or `reject`.
    pub action: String,
    /// The result to substitute (`inject`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The edited input to run the held call with (`continue` / `retry` at an editable gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// Why the call is rejected (`reject`): the caller gets it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Apply the same decision to further holds of the same node at the same point in this
    /// run, until revoked (not with an edited input).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remember: bool,
    /// A label naming who decided (stamped as `operator`; at most [`MAX_OPERATOR_CHARS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// The resumer's own id for the request, kept (sent to the app and echoed in the answer)
    /// when [`acceptable_request_id`] says so; otherwise the hub makes one up.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "string_or_none"
    )]
    pub request_id: Option<String>,
}

/// A string, or `None` for any other JSON value (a viewer's frame may number its requests).
fn string_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

/// Whether a resumer's `requestId` is kept as it is: 1 to 128 characters of `A-Z a-z 0-9 . _
/// : -` (the reference hub's rule), so it can be logged and echoed without escaping.
#[must_use]
pub fn acceptable_request_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// The answer to a resume request: the app's outcome, or why the hub did not forward it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeAnswer {
    /// `resumed`, `sent` (no answer in time; the gate stays held), `refused`, `taken`, `gone`,
    /// `invalid`, `unauthorized` or `forbidden`.
    pub outcome: String,
    /// The run.
    pub run_id: String,
    /// The pause.
    pub pause_id: String,
    /// The action the app reported (`resumed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The refusal code (`refused`): schema, shape, placeholder, truncated, disabled,
    /// unsupported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// A readable explanation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The explanation again when the request failed (for clients that read `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The id the hub gave the request (echoed by the app).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Who the release is credited to (`resumed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<Principal>,
    /// The input the call ran with, when it was edited (`resumed`, from `edited.after`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited: Option<Value>,
    /// The decision is remembered for further holds of the node in this run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remembered: bool,
    /// Who refused (`refused`): `app`, or `hub` when the hub did not forward the request
    /// (editing turned off, an app or gate that cannot take an edited input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_by: Option<String>,
}

/// A decision remembered for a run: further holds of `node_id` at `point` in `run_id` are
/// released with it by the hub, until revoked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Remembered {
    /// The run.
    pub run_id: String,
    /// The node.
    pub node_id: String,
    /// The gate.
    pub point: PausePoint,
    /// The action applied.
    pub action: String,
    /// The result injected (`inject`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The reason given (`reject`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who decided.
    pub principal: Principal,
    /// Their label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// Epoch ms it was remembered.
    pub since: u64,
    /// Holds released with it so far.
    pub applied: u64,
}

/// `GET /api/runs/{runId}/remembered`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RememberedList {
    /// Oldest first.
    pub remembered: Vec<Remembered>,
}

/// `POST /api/runs/{runId}/remembered/clear` and the viewer's `remember.clear` frame: which
/// remembered decisions of the run to revoke (all of them when `node_id` is absent).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForgetRequest {
    /// The node whose decision goes (with `point`, or at every point).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// The gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point: Option<PausePoint>,
}

/// The body of a failed HTTP API request (`docs/http-api.md`): `{"error": "…"}`, and the cap
/// when a breakpoint list is full (`409`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiError {
    /// What went wrong, readable.
    pub error: String,
    /// The most breakpoints the hub keeps (a `409` for a full list only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_breakpoints: Option<usize>,
}

impl ApiError {
    /// An error body with this message.
    #[must_use]
    pub fn new(error: impl Into<String>) -> Self {
        Self {
            error: error.into(),
            max_breakpoints: None,
        }
    }
}

/// The answer of a `/ws/ui` control frame (`type: "result"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControlResult {
    /// Always `result`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The viewer's id of the frame it answers.
    pub request_id: Value,
    /// Whether it succeeded.
    pub ok: bool,
    /// `ok`, or a resume outcome.
    pub outcome: String,
    /// A readable explanation, or null.
    pub message: Option<String>,
    /// The refusal code (`refused`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The action the app reported (`resumed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The resume's answer in full (resume frames).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<ResumeAnswer>,
    /// The debug state after the change (breakpoint and mode frames).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_resume_request_reads_the_wire_shape() {
        let r: ResumeRequest = serde_json::from_value(json!({
            "action": "continue", "input": {"to": "a@b"}, "operator": "ops", "remember": true
        }))
        .unwrap();
        assert_eq!(r.action, "continue");
        assert_eq!(r.input, Some(json!({"to": "a@b"})));
        assert!(r.remember);
        assert_eq!(r.operator.as_deref(), Some("ops"));
        let plain: ResumeRequest = serde_json::from_value(json!({"action": "abort"})).unwrap();
        assert!(!plain.remember && plain.input.is_none());
    }

    #[test]
    fn an_operator_label_is_cut_and_has_no_control_characters() {
        assert_eq!(operator_label(" ops\n\u{7}bot "), "opsbot");
        assert_eq!(operator_label(&"x".repeat(100)).len(), MAX_OPERATOR_CHARS);
    }

    #[test]
    fn an_operator_label_has_no_bidi_controls_or_invisible_format_characters() {
        // U+202E would show `ops\u{202E}nimda` as `opsadmin`.
        assert_eq!(operator_label("ops\u{202E}nimda"), "opsnimda");
        let every_bidi_control = [
            '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}',
            '\u{2068}', '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}',
        ];
        for c in every_bidi_control {
            assert_eq!(
                operator_label(&format!("a{c}b")),
                "ab",
                "U+{:04X}",
                c as u32
            );
        }
        // Zero-width, byte-order mark, soft hyphen, word joiner, tags, line separators.
        let others = [
            '\u{200B}',
            '\u{200C}',
            '\u{200D}',
            '\u{FEFF}',
            '\u{00AD}',
            '\u{2060}',
            '\u{E0041}',
            '\u{2028}',
            '\u{2029}',
            '\u{0085}',
            '\u{009B}',
        ];
        for c in others {
            assert_eq!(
                operator_label(&format!("a{c}b")),
                "ab",
                "U+{:04X}",
                c as u32
            );
        }
        // Dropped before the cut: 64 visible characters survive a padding of controls.
        let padded: String = "\u{202E}x".repeat(100);
        assert_eq!(operator_label(&padded), "x".repeat(MAX_OPERATOR_CHARS));
        // Letters of right-to-left scripts and ordinary punctuation stay.
        assert_eq!(operator_label("עברית ops-bot (ana)"), "עברית ops-bot (ana)");
        assert_eq!(operator_label("\u{2067}\u{2069}"), "");
    }

    #[test]
    fn an_api_error_body_is_unchanged() {
        assert_eq!(
            serde_json::to_value(ApiError::new("no run r")).unwrap(),
            json!({"error": "no run r"})
        );
        let full = ApiError {
            max_breakpoints: Some(256),
            ..ApiError::new("too many breakpoints")
        };
        assert_eq!(
            serde_json::to_value(&full).unwrap(),
            json!({"error": "too many breakpoints", "maxBreakpoints": 256})
        );
        let read: ApiError = serde_json::from_value(json!({"error": "x"})).unwrap();
        assert_eq!(read, ApiError::new("x"));
    }

    #[test]
    fn an_answer_leaves_out_what_it_does_not_say() {
        let a = ResumeAnswer {
            outcome: "refused".into(),
            run_id: "r".into(),
            pause_id: "p".into(),
            action: None,
            code: Some("schema".into()),
            message: Some("no".into()),
            error: Some("no".into()),
            request_id: Some("req_1".into()),
            principal: None,
            edited: None,
            remembered: false,
            refused_by: Some("app".into()),
        };
        assert_eq!(
            serde_json::to_value(&a).unwrap(),
            json!({"outcome": "refused", "runId": "r", "pauseId": "p", "code": "schema",
                   "message": "no", "error": "no", "requestId": "req_1", "refusedBy": "app"})
        );
        assert_eq!(
            serde_json::to_value(Principal::Anonymous).unwrap(),
            json!("anonymous")
        );
    }
}
