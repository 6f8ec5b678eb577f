//! Typed expectations of the frames a client sends: declare the expected frames first (type
//! and the fields that matter), then check what arrived against them. A mismatch names the
//! first divergence: the frame's index, the frame itself and the field.
//!
//! ```ignore
//! let frames = hub
//!     .wait_frames(&[
//!         frame("node.started").with("nodeId", "tool:add"),
//!         frame("node.finished").with("nodeId", "tool:add").with("status", "ok"),
//!     ], SECOND)
//!     .await;
//! ```

use serde_json::Value;

use crate::Frame;

/// One expected frame: its `type` and payload fields that must equal given values, and
/// optionally the connection it came on, its run and its `seq`.
#[derive(Debug, Clone)]
pub struct Expect {
    /// `None`: any type.
    kind: Option<String>,
    fields: Vec<(String, Value)>,
    absent: Vec<String>,
    conn: Option<usize>,
    run: Option<String>,
    seq: Option<u64>,
}

/// Expects a frame of type `kind` (`"node.finished"`, …).
#[must_use]
pub fn frame(kind: &str) -> Expect {
    Expect {
        kind: Some(kind.to_owned()),
        fields: Vec::new(),
        absent: Vec::new(),
        conn: None,
        run: None,
        seq: None,
    }
}

/// Expects a frame of any type (narrowed with [`Expect::seq`], [`Expect::on_conn`], …).
#[must_use]
pub fn any_frame() -> Expect {
    Expect {
        kind: None,
        ..frame("")
    }
}

/// A JSON pointer into the payload: `"status"` and `"/status"` name the same field,
/// `"error/message"` a nested one.
fn pointer(path: &str) -> String {
    if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    }
}

impl Expect {
    /// The payload field at `path` (a key, or a JSON pointer such as `error/message`) must
    /// equal `value`.
    #[must_use]
    pub fn with(mut self, path: &str, value: impl Into<Value>) -> Self {
        self.fields.push((pointer(path), value.into()));
        self
    }

    /// The payload must not have a field at `path`.
    #[must_use]
    pub fn without(mut self, path: &str) -> Self {
        self.absent.push(pointer(path));
        self
    }

    /// The frame must have come on the `conn`-th connection (1-based, as [`Frame::conn`]).
    #[must_use]
    pub fn on_conn(mut self, conn: usize) -> Self {
        self.conn = Some(conn);
        self
    }

    /// The frame's `runId` must be `run_id`.
    #[must_use]
    pub fn run(mut self, run_id: &str) -> Self {
        self.run = Some(run_id.to_owned());
        self
    }

    /// The frame's `seq` must be `seq`.
    #[must_use]
    pub fn seq(mut self, seq: u64) -> Self {
        self.seq = Some(seq);
        self
    }

    /// The expected `type` (`*` for any).
    #[must_use]
    pub fn kind(&self) -> &str {
        self.kind.as_deref().unwrap_or("*")
    }

    fn takes_kind(&self, kind: &str) -> bool {
        self.kind.as_deref().is_none_or(|k| k == kind)
    }

    /// Where `f` differs from this expectation (`None` if it matches): the type, or the first
    /// field that differs, with both values.
    #[must_use]
    pub fn divergence(&self, f: &Frame) -> Option<String> {
        if !self.takes_kind(f.kind()) {
            return Some(format!(
                "type is {:?}, expected {:?}",
                f.kind(),
                self.kind()
            ));
        }
        if let Some(conn) = self.conn.filter(|c| *c != f.conn) {
            return Some(format!("came on connection {}, expected {conn}", f.conn));
        }
        if let Some(run) = self.run.as_deref().filter(|r| *r != f.run_id()) {
            return Some(format!("runId is {:?}, expected {run:?}", f.run_id()));
        }
        if let Some(seq) = self.seq.filter(|s| *s != f.seq()) {
            return Some(format!("seq is {}, expected {seq}", f.seq()));
        }
        for (path, want) in &self.fields {
            match f.payload().pointer(path) {
                Some(got) if got == want => {}
                Some(got) => return Some(format!("payload{path} is {got}, expected {want}")),
                None => return Some(format!("payload{path} is missing, expected {want}")),
            }
        }
        for path in &self.absent {
            if let Some(got) = f.payload().pointer(path) {
                return Some(format!("payload{path} is {got}, expected no such field"));
            }
        }
        None
    }

    /// Whether `f` matches.
    #[must_use]
    pub fn matches(&self, f: &Frame) -> bool {
        self.divergence(f).is_none()
    }
}

/// The first divergence of `frames` from `expected`, compared one to one in order (same
/// count): `None` when every frame matches its expectation.
#[must_use]
pub fn first_divergence(frames: &[Frame], expected: &[Expect]) -> Option<String> {
    for (i, (f, want)) in frames.iter().zip(expected).enumerate() {
        if let Some(why) = want.divergence(f) {
            return Some(format!(
                "frame {i} ({} seq {}): {why}\n  frame: {}",
                f.kind(),
                f.seq(),
                f.json
            ));
        }
    }
    if frames.len() != expected.len() {
        let kinds: Vec<&str> = frames.iter().map(Frame::kind).collect();
        return Some(format!(
            "{} frames, expected {}: {kinds:?}",
            frames.len(),
            expected.len()
        ));
    }
    None
}

/// Asserts that `frames` are exactly the `expected` ones, in order; the panic names the first
/// divergence (frame index, frame, field).
#[track_caller]
pub fn assert_frames(frames: &[Frame], expected: &[Expect]) {
    if let Some(why) = first_divergence(frames, expected) {
        panic!("frames differ from the expectation at {why}");
    }
}

/// The frames whose type is one of the expected types, in arrival order.
#[must_use]
pub fn of_expected_kinds(frames: &[Frame], expected: &[Expect]) -> Vec<Frame> {
    frames
        .iter()
        .filter(|f| expected.iter().any(|e| e.takes_kind(f.kind())))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::time::Instant;

    fn f(json: Value) -> Frame {
        Frame {
            conn: 1,
            at: Instant::now(),
            text: json.to_string(),
            json,
        }
    }

    #[test]
    fn the_first_divergence_names_the_frame_index_the_frame_and_the_field() {
        let frames = [
            f(json!({"type": "node.started", "seq": 3, "payload": {"nodeId": "tool:a"}})),
            f(
                json!({"type": "node.finished", "seq": 4, "payload": {"nodeId": "tool:a", "status": "error", "error": {"message": "x"}}}),
            ),
        ];
        let ok = [
            frame("node.started").with("nodeId", "tool:a"),
            frame("node.finished").with("error/message", "x"),
        ];
        assert_eq!(first_divergence(&frames, &ok), None);
        let bad = [
            frame("node.started").with("nodeId", "tool:a"),
            frame("node.finished").with("status", "ok"),
        ];
        let why = first_divergence(&frames, &bad).expect("diverges");
        assert!(
            why.starts_with(
                "frame 1 (node.finished seq 4): payload/status is \"error\", expected \"ok\""
            ),
            "{why}"
        );
        assert!(
            why.contains("\"nodeId\":\"tool:a\""),
            "shows the frame: {why}"
        );
        let missing = [frame("node.started").with("parentId", "agent:x")];
        assert!(
            first_divergence(&frames[..1], &missing)
                .expect("diverges")
                .contains("payload/parentId is missing")
        );
        let absent = [frame("node.started").without("nodeId")];
        assert!(
            first_divergence(&frames[..1], &absent)
                .expect("diverges")
                .contains("expected no such field")
        );
        let wrong_type = [frame("node.error"), frame("node.finished")];
        assert!(
            first_divergence(&frames, &wrong_type)
                .expect("diverges")
                .contains("frame 0 (node.started seq 3): type is \"node.started\", expected \"node.error\"")
        );
        let on = |conn| Frame {
            conn,
            ..f(json!({"type": "run.finished", "seq": 9, "runId": "run_a", "payload": {}}))
        };
        let finished = frame("run.finished").on_conn(2).run("run_a").seq(9);
        assert!(finished.matches(&on(2)));
        assert_eq!(
            finished.divergence(&on(1)).as_deref(),
            Some("came on connection 1, expected 2")
        );
        assert_eq!(
            frame("run.finished")
                .run("run_b")
                .divergence(&on(1))
                .as_deref(),
            Some("runId is \"run_a\", expected \"run_b\"")
        );
        assert_eq!(
            frame("run.finished").seq(3).divergence(&on(1)).as_deref(),
            Some("seq is 9, expected 3")
        );
        assert!(any_frame().seq(9).matches(&on(1)));
        assert!(!any_frame().seq(8).matches(&on(1)));
        let fewer = [frame("node.started")];
        assert!(
            first_divergence(&frames, &fewer)
                .expect("diverges")
                .starts_with("2 frames, expected 1")
        );
    }
}
