//! The bodies the hub sends to viewers and scripts: the runs list, a run summary, pause
//! info, the debug state (HTTP API, `docs/http-api.md`) and the frames of the `/ws/ui` feed
//! built from them (`docs/dev/ui-feed.md`). The hub serializes these; the control CLI and
//! any other viewer (a terminal UI) can decode them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{BreakpointMatcher, Mode, PausePoint, PauseReason, Status};

/// A run's status as the hub shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Started, not finished.
    Running,
    /// Finished normally.
    Ok,
    /// Failed.
    Error,
    /// Aborted from the debugger.
    Aborted,
    /// Its app went away and did not come back within the grace.
    Abandoned,
}

impl RunStatus {
    /// The wire spelling.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Aborted => "aborted",
            Self::Abandoned => "abandoned",
        }
    }

    /// Parses the wire spelling.
    #[must_use]
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(s: &str) -> Option<Self> {
        match s {
            "running" => Some(Self::Running),
            "ok" => Some(Self::Ok),
            "error" => Some(Self::Error),
            "aborted" => Some(Self::Aborted),
            "abandoned" => Some(Self::Abandoned),
            _ => None,
        }
    }
}

impl From<Status> for RunStatus {
    fn from(s: Status) -> Self {
        match s {
            Status::Ok => Self::Ok,
            Status::Error => Self::Error,
            Status::Aborted => Self::Aborted,
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One run as listed (`GET /api/runs`, `GET /api/runs/{id}`, `hello` and `run` frames).
///
/// Written, it also carries the reference family's names (GraphMind 0.6 hubs): `id` beside
/// `runId` and `finishedAt` beside `endedAt`, with `schemaVersion`, `source` and `errorCount`.
/// Read, it takes a GraphMind 0.6 hub's listing too: the id as `id`, the end as `finishedAt`,
/// and `live`, `startedAt`, `eventCount` and `incomplete` as absent (false or 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", remote = "Self")]
pub struct RunSummary {
    /// The run's id.
    pub run_id: String,
    /// The app that made it.
    pub app: Option<String>,
    /// The run's name.
    pub name: Option<String>,
    /// Where it is.
    pub status: RunStatus,
    /// Running and its app connected.
    #[serde(default)]
    pub live: bool,
    /// Epoch ms it started (first sight when no `run.started` came).
    #[serde(default)]
    pub started_at: u64,
    /// Epoch ms it ended.
    pub ended_at: Option<u64>,
    /// `endedAt - startedAt`.
    pub duration_ms: Option<u64>,
    /// Events stored.
    #[serde(default)]
    pub event_count: u64,
    /// `node.error` events stored.
    #[serde(default)]
    pub error_count: u64,
    /// Its app announced events of it lost.
    #[serde(default)]
    pub incomplete: bool,
    /// The `sdk` of its `run.started`.
    pub sdk: Option<Value>,
    /// The envelope `gm` of its events (always 1).
    #[serde(default = "schema_v1")]
    pub schema_version: u64,
    /// Where its events came from: `live` (an app reported them), as the reference names it.
    #[serde(default = "source_live")]
    pub source: String,
}

fn schema_v1() -> u64 {
    crate::PROTOCOL_VERSION
}

fn source_live() -> String {
    "live".to_owned()
}

/// The derived fields of a [`RunSummary`] (the `remote = "Self"` functions), flattened into
/// the written form.
struct SummaryFields<'a>(&'a RunSummary);

impl Serialize for SummaryFields<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        RunSummary::serialize(self.0, s)
    }
}

impl Serialize for RunSummary {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Written<'a> {
            #[serde(flatten)]
            fields: SummaryFields<'a>,
            id: &'a str,
            finished_at: Option<u64>,
        }
        Written {
            fields: SummaryFields(self),
            id: &self.run_id,
            finished_at: self.ended_at,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for RunSummary {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut m = serde_json::Map::<String, Value>::deserialize(d)?;
        // Both names of the id and of the end: ours win where both are there.
        if let Some(id) = m.remove("id") {
            m.entry("runId").or_insert(id);
        }
        if let Some(end) = m.remove("finishedAt") {
            m.entry("endedAt").or_insert(end);
        }
        RunSummary::deserialize(Value::Object(m)).map_err(serde::de::Error::custom)
    }
}

/// `GET /api/runs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunsList {
    /// Newest first.
    pub runs: Vec<RunSummary>,
}

/// Whether a resume of an open pause is in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PauseState {
    /// Held, waiting for a decision.
    Open,
    /// A resume was sent; the app has not answered yet.
    Resuming,
}

/// An open pause: a held gate (`GET /api/pauses`, `hello` and `pauses` frames).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PauseInfo {
    /// The pause's id.
    pub pause_id: String,
    /// Its run.
    pub run_id: String,
    /// The held node.
    pub node_id: String,
    /// Where the gate sits.
    pub point: PausePoint,
    /// Why it holds.
    pub reason: PauseReason,
    /// The node's execution, when known.
    pub instance_id: Option<String>,
    /// Epoch ms the hub saw it.
    pub since: u64,
    /// The node's kind.
    pub kind: Option<String>,
    /// The node's name.
    pub name: Option<String>,
    /// The node's latest input.
    pub input: Option<Value>,
    /// Its latest output.
    pub output: Option<Value>,
    /// Its latest error.
    pub error: Option<Value>,
    /// The loop guard's details of a `reason: "loop"` hold.
    #[serde(rename = "loop")]
    pub loop_info: Option<Value>,
    /// The actions the gate accepts, when the client said.
    pub actions: Option<Value>,
    /// Open or resuming.
    pub state: PauseState,
    /// Its input may be replaced (`exec.resume.input`): the gate said `editable`, its app
    /// announced `edit-input` and the hub has editing on.
    #[serde(default)]
    pub editable: bool,
}

/// `GET /api/pauses`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PausesList {
    /// Oldest first.
    pub pauses: Vec<PauseInfo>,
}

/// The breakpoints and the mode (`GET /api/debug`, `debug` frames).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DebugState {
    /// The breakpoint matchers.
    pub breakpoints: Vec<BreakpointMatcher>,
    /// Run or step.
    pub mode: Mode,
}

/// A frame the hub sends on `/ws/ui` built from the state (the per-request `result` frames
/// and the replayed events are sent as they are).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum FeedFrame {
    /// The first frame after auth: everything a viewer draws from.
    Hello {
        /// The hub's version.
        version: String,
        /// The debug state.
        debug: DebugState,
        /// The newest runs.
        runs: Vec<RunSummary>,
        /// The open pauses.
        pauses: Vec<PauseInfo>,
        /// The decisions remembered for runs (`crate::control::Remembered`).
        #[serde(default)]
        remembered: Vec<crate::control::Remembered>,
    },
    /// A run changed.
    Run {
        /// It, as listed.
        run: RunSummary,
    },
    /// The open pauses changed.
    Pauses {
        /// All of them.
        pauses: Vec<PauseInfo>,
        /// The decisions remembered for runs, all of them.
        #[serde(default)]
        remembered: Vec<crate::control::Remembered>,
    },
    /// The debug state changed.
    Debug(DebugState),
    /// The retention rule deleted these runs.
    Removed {
        /// Their ids.
        #[serde(rename = "runIds")]
        run_ids: Vec<String>,
    },
    /// A replay of a run's stored events ended.
    Replayed {
        /// The run.
        #[serde(rename = "runId")]
        run_id: String,
    },
    /// The first frame carried no valid token; the socket closes.
    Unauthorized {
        /// Why.
        message: String,
    },
}

impl FeedFrame {
    /// The frame as sent.
    #[must_use]
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn summary() -> RunSummary {
        RunSummary {
            run_id: "run_1".into(),
            app: Some("support-agent".into()),
            name: None,
            status: RunStatus::Ok,
            live: false,
            started_at: 10,
            ended_at: Some(25),
            duration_ms: Some(15),
            event_count: 7,
            error_count: 1,
            incomplete: false,
            sdk: Some(json!({"name": "graphmind", "version": "0.1.0"})),
            schema_version: 1,
            source: "live".into(),
        }
    }

    fn pause() -> PauseInfo {
        PauseInfo {
            pause_id: "p1".into(),
            run_id: "run_1".into(),
            node_id: "tool:lookup".into(),
            point: PausePoint::Error,
            reason: PauseReason::Error,
            instance_id: None,
            since: 30,
            kind: Some("tool".into()),
            name: Some("lookup".into()),
            input: Some(json!({"id": 1})),
            output: None,
            error: Some(json!({"message": "no such order"})),
            loop_info: None,
            actions: None,
            state: PauseState::Open,
            editable: false,
        }
    }

    /// The exact text the hub sent before these types (its `json!` literals, keys in order),
    /// with the reference family's names added (`errorCount`, `schemaVersion`, `source`, `id`,
    /// `finishedAt`).
    #[test]
    fn a_run_summary_serializes_as_the_hub_always_sent_it() {
        assert_eq!(
            serde_json::to_string(&summary()).unwrap(),
            r#"{"runId":"run_1","app":"support-agent","name":null,"status":"ok","live":false,"startedAt":10,"endedAt":25,"durationMs":15,"eventCount":7,"errorCount":1,"incomplete":false,"sdk":{"name":"graphmind","version":"0.1.0"},"schemaVersion":1,"source":"live","id":"run_1","finishedAt":25}"#
        );
    }

    #[test]
    fn pause_info_serializes_as_the_hub_always_sent_it() {
        assert_eq!(
            serde_json::to_string(&pause()).unwrap(),
            r#"{"pauseId":"p1","runId":"run_1","nodeId":"tool:lookup","point":"error","reason":"error","instanceId":null,"since":30,"kind":"tool","name":"lookup","input":{"id":1},"output":null,"error":{"message":"no such order"},"loop":null,"actions":null,"state":"open","editable":false}"#
        );
    }

    #[test]
    fn feed_frames_carry_their_type_and_the_same_fields() {
        let debug = DebugState {
            breakpoints: vec![BreakpointMatcher::at(PausePoint::Error)],
            mode: Mode::Run,
        };
        let hello = FeedFrame::Hello {
            version: "0.1.0".into(),
            debug: debug.clone(),
            runs: vec![summary()],
            pauses: vec![pause()],
            remembered: vec![],
        };
        let v: Value = serde_json::from_str(&hello.to_text()).unwrap();
        assert_eq!(v["type"], json!("hello"));
        assert_eq!(v["version"], json!("0.1.0"));
        assert_eq!(v["debug"], serde_json::to_value(&debug).unwrap());
        assert_eq!(v["runs"][0], serde_json::to_value(summary()).unwrap());
        assert_eq!(v["pauses"][0], serde_json::to_value(pause()).unwrap());
        assert_eq!(
            FeedFrame::Debug(debug).to_text(),
            r#"{"type":"debug","breakpoints":[{"point":"error"}],"mode":"run"}"#
        );
        assert_eq!(
            FeedFrame::Removed {
                run_ids: vec!["a".into(), "b".into()]
            }
            .to_text(),
            r#"{"type":"removed","runIds":["a","b"]}"#
        );
        assert_eq!(
            FeedFrame::Replayed { run_id: "a".into() }.to_text(),
            r#"{"type":"replayed","runId":"a"}"#
        );
        assert_eq!(
            FeedFrame::Unauthorized {
                message: "wrong token".into()
            }
            .to_text(),
            r#"{"type":"unauthorized","message":"wrong token"}"#
        );
        let run = FeedFrame::Run { run: summary() }.to_text();
        assert!(
            run.starts_with(r#"{"type":"run","run":{"runId":"run_1","#),
            "{run}"
        );
    }

    #[test]
    fn a_graphmind_0_6_run_listing_decodes() {
        let list: RunsList = serde_json::from_value(json!({"runs": [
            {"id": "run_06", "app": "support", "status": "error", "eventCount": 4,
             "startedAt": 1000, "source": "live"}
        ]}))
        .unwrap();
        let r = &list.runs[0];
        assert_eq!(r.run_id, "run_06");
        assert_eq!(r.status, RunStatus::Error);
        assert_eq!((r.event_count, r.started_at, r.live), (4, 1000, false));
        assert_eq!(r.name, None);
        let bare: RunSummary =
            serde_json::from_value(json!({"id": "r", "status": "running"})).unwrap();
        assert_eq!((bare.started_at, bare.event_count), (0, 0));
        // Written, the id is `runId`, and `id` beside it as the reference names it.
        let written = serde_json::to_value(&bare).unwrap();
        assert_eq!(
            (&written["runId"], &written["id"]),
            (&json!("r"), &json!("r"))
        );
    }

    /// Regression: run rows had none of the reference's names; they carry them beside ours
    /// and still read back (both `runId` and `id` in one row is no duplicate).
    #[test]
    fn a_run_row_carries_the_reference_names_beside_ours_and_reads_back() {
        let written = serde_json::to_value(summary()).unwrap();
        for (k, v) in [
            ("runId", json!("run_1")),
            ("id", json!("run_1")),
            ("endedAt", json!(25)),
            ("finishedAt", json!(25)),
            ("schemaVersion", json!(1)),
            ("source", json!("live")),
            ("errorCount", json!(1)),
            ("eventCount", json!(7)),
        ] {
            assert_eq!(written[k], v, "{k} in {written}");
        }
        let back: RunSummary = serde_json::from_value(written).unwrap();
        assert_eq!(back, summary());
        let reference: RunSummary = serde_json::from_value(json!({"id": "r6", "status": "ok",
            "finishedAt": 9, "errorCount": 2, "schemaVersion": 1, "source": "import"}))
        .unwrap();
        assert_eq!(
            (
                reference.run_id.as_str(),
                reference.ended_at,
                reference.error_count
            ),
            ("r6", Some(9), 2)
        );
        assert_eq!(reference.source, "import");
    }

    #[test]
    fn the_bodies_decode_back() {
        let list = RunsList {
            runs: vec![summary()],
        };
        let back: RunsList = serde_json::from_str(&serde_json::to_string(&list).unwrap()).unwrap();
        assert_eq!(back, list);
        let pauses = PausesList {
            pauses: vec![pause()],
        };
        let back: PausesList =
            serde_json::from_str(&serde_json::to_string(&pauses).unwrap()).unwrap();
        assert_eq!(back, pauses);
        for s in [
            RunStatus::Running,
            RunStatus::Ok,
            RunStatus::Error,
            RunStatus::Aborted,
            RunStatus::Abandoned,
        ] {
            assert_eq!(RunStatus::from_str(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
        }
    }
}
