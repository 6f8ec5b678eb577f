//! The replay ring: every event of the session, as structs, bounded by count and estimated
//! bytes, oldest dropped first. It doubles as the outbox: the transport keeps a send cursor
//! (a seq) and sends what lies at or after it, so an event is never copied on the app's path.
//!
//! Events are [`Record`]s: the compact node records are small by construction and are
//! serialized by the transport while it holds the lock (no allocation per event on the
//! app's path); any other message sits behind an `Arc`, so the transport takes it with a
//! refcount increment and serializes it after releasing the lock.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use graphmind_protocol::Message;
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::Value;

use crate::capture::Val;
use crate::record::{Payload as Input, Record};

/// The run ids of the events held, each stored once: an event names its run by slot, so
/// recording one copies no id (consecutive events are mostly of one run: the last slot is
/// checked first).
#[derive(Debug, Default)]
struct Runs {
    slots: Vec<RunSlot>,
    /// Slot of each live id.
    index: HashMap<Arc<str>, usize>,
    /// Slots without events, to reuse.
    free: Vec<usize>,
    last: usize,
}

#[derive(Debug)]
struct RunSlot {
    id: Arc<str>,
    /// Events held that name this slot; 0 = free.
    events: usize,
}

impl Runs {
    /// The slot of `id`, counting one more event in it.
    fn acquire(&mut self, id: &str) -> usize {
        if let Some(slot) = self.slots.get_mut(self.last)
            && slot.events > 0
            && *slot.id == *id
        {
            slot.events += 1;
            return self.last;
        }
        let at = match self.index.get(id) {
            Some(&at) => at,
            None => {
                let id: Arc<str> = id.into();
                let slot = RunSlot {
                    id: Arc::clone(&id),
                    events: 0,
                };
                let at = match self.free.pop() {
                    Some(at) => {
                        self.slots[at] = slot;
                        at
                    }
                    None => {
                        self.slots.push(slot);
                        self.slots.len() - 1
                    }
                };
                self.index.insert(id, at);
                at
            }
        };
        self.slots[at].events += 1;
        self.last = at;
        at
    }

    /// One event of slot `at` is gone.
    fn release(&mut self, at: usize) {
        let Some(slot) = self.slots.get_mut(at) else {
            return;
        };
        slot.events = slot.events.saturating_sub(1);
        if slot.events == 0 {
            self.index.remove(&slot.id);
            self.free.push(at);
        }
    }

    /// The id in slot `at`.
    fn id(&self, at: usize) -> &Arc<str> {
        &self.slots[at].id
    }
}

/// One recorded event: a record stamped with its seq, time and run.
#[derive(Debug)]
pub(crate) struct Event {
    pub(crate) seq: u64,
    pub(crate) ts: u64,
    /// Slot of the run id in [`Runs`].
    run: usize,
    pub(crate) record: Record,
    /// Estimated JSON size, for the byte limit.
    pub(crate) size: usize,
}

impl Event {
    /// Compact wire JSON, with `"dropped": n` after `payload` when `n` events were lost just
    /// before this one (see [`Ring::take_batch`]).
    fn write_json(&self, run_id: &str, dropped: u64, out: &mut Vec<u8>) -> bool {
        write_frame(
            Frame {
                seq: self.seq,
                ts: self.ts,
                run_id,
                record: &self.record,
                dropped,
            },
            out,
        )
    }
}

fn write_frame(frame: Frame<'_>, out: &mut Vec<u8>) -> bool {
    let start = out.len();
    if frame
        .serialize(&mut serde_json::Serializer::new(&mut *out))
        .is_err()
    {
        out.truncate(start);
        return false;
    }
    true
}

struct Frame<'a> {
    seq: u64,
    ts: u64,
    run_id: &'a str,
    record: &'a Record,
    dropped: u64,
}

struct Payload<'a>(&'a Record);

impl Serialize for Payload<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.payload_serialize(s)
    }
}

impl Serialize for Frame<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("gm", &graphmind_protocol::PROTOCOL_VERSION)?;
        m.serialize_entry("seq", &self.seq)?;
        m.serialize_entry("ts", &self.ts)?;
        m.serialize_entry("runId", self.run_id)?;
        m.serialize_entry("type", self.record.type_name())?;
        m.serialize_entry("payload", &Payload(self.record))?;
        if self.dropped > 0 {
            m.serialize_entry("dropped", &self.dropped)?;
        }
        m.end()
    }
}

/// An event taken for sending, with its `dropped` announcement: the frame text already
/// (compact records), or a shared message to serialize outside the lock.
#[derive(Debug)]
pub(crate) enum Pending {
    Text(Option<String>),
    Shared {
        seq: u64,
        ts: u64,
        run_id: Arc<str>,
        message: Arc<Message>,
        size: usize,
        dropped: u64,
    },
}

impl Pending {
    fn take(event: &Event, run_id: &Arc<str>, dropped: u64) -> Self {
        match &event.record {
            Record::Message(m) => Self::Shared {
                seq: event.seq,
                ts: event.ts,
                run_id: Arc::clone(run_id),
                message: Arc::clone(m),
                size: event.size,
                dropped,
            },
            Record::Started(_) | Record::Finished(_) => {
                let mut buf = Vec::with_capacity(event.size + 64);
                Self::Text(
                    event
                        .write_json(run_id, dropped, &mut buf)
                        .then(|| String::from_utf8(buf).ok())
                        .flatten(),
                )
            }
        }
    }

    /// The frame text (`None` only if serialization failed, which JSON makes impossible).
    pub(crate) fn into_text(self) -> Option<String> {
        match self {
            Self::Text(t) => t,
            Self::Shared {
                seq,
                ts,
                run_id,
                message,
                size,
                dropped,
            } => {
                let mut buf = Vec::with_capacity(size + 64);
                write_frame(
                    Frame {
                        seq,
                        ts,
                        run_id: &run_id,
                        record: &Record::Message(message),
                        dropped,
                    },
                    &mut buf,
                )
                .then(|| String::from_utf8(buf).ok())
                .flatten()
            }
        }
    }
}

/// Bounded, seq-ordered event store.
#[derive(Debug)]
pub(crate) struct Ring {
    events: VecDeque<Event>,
    bytes: usize,
    max_events: usize,
    max_bytes: usize,
    /// The next seq to hand out (hello and events share it).
    next_seq: u64,
    /// Events evicted so far (all of them, sent or not).
    dropped: u64,
    /// Events evicted before any connection sent them, not yet announced.
    lost_unannounced: u64,
    /// Every event below this seq has been written to some connection.
    delivered_below: u64,
    /// The transport sends events with `seq >= cursor`; reset to 0 on attach (replay).
    cursor: u64,
    /// The run ids of the events held.
    runs: Runs,
}

impl Ring {
    /// An empty ring; allocates nothing until the first push.
    pub(crate) fn new(max_events: usize, max_bytes: usize) -> Self {
        Self {
            events: VecDeque::new(),
            bytes: 0,
            max_events: max_events.max(1),
            max_bytes: max_bytes.max(1),
            next_seq: 0,
            dropped: 0,
            lost_unannounced: 0,
            delivered_below: 0,
            cursor: 0,
            runs: Runs::default(),
        }
    }

    /// Takes the next seq without recording an event (the `hello`).
    pub(crate) fn take_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// The last seq handed out, if any.
    pub(crate) fn last_seq(&self) -> Option<u64> {
        self.next_seq.checked_sub(1)
    }

    /// Stamps `message` with the next seq and stores it, evicting the oldest events while a
    /// limit would be exceeded. Returns the seq.
    pub(crate) fn push(&mut self, ts: u64, run_id: &str, record: Record) -> u64 {
        let seq = self.take_seq();
        let size = estimate_record(&record) + run_id.len() + 64;
        while !self.events.is_empty() && self.bytes + size > self.max_bytes {
            self.evict_oldest();
        }
        self.bytes += size;
        let event = Event {
            seq,
            ts,
            run: self.runs.acquire(run_id),
            record,
            size,
        };
        if self.events.len() >= self.max_events
            && let Some(oldest) = self.events.front_mut()
        {
            // Full: the new event takes the oldest one's slot (dropped in place, not copied
            // out), and the slot turns from front to back.
            let (old_size, old_seq, old_run) = (oldest.size, oldest.seq, oldest.run);
            *oldest = event;
            self.events.rotate_left(1);
            self.evicted(old_size, old_seq, old_run);
        } else {
            self.events.push_back(event);
        }
        seq
    }

    fn evict_oldest(&mut self) {
        if let Some(old) = self.events.pop_front() {
            self.evicted(old.size, old.seq, old.run);
        }
    }

    /// Accounts for an evicted event.
    fn evicted(&mut self, size: usize, seq: u64, run: usize) {
        self.runs.release(run);
        self.bytes = self.bytes.saturating_sub(size);
        self.dropped += 1;
        if seq >= self.delivered_below {
            self.lost_unannounced += 1;
        }
    }

    /// Events held now.
    pub(crate) fn len(&self) -> usize {
        self.events.len()
    }

    /// Events evicted so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Starts a replay: the next batches begin with the oldest event.
    pub(crate) fn rewind(&mut self) {
        self.cursor = 0;
    }

    /// Events at or after the cursor, oldest first: at most `max` of them and about
    /// `max_bytes` (at least one). The first carries the count of lost events not yet
    /// announced. Advances the cursor past them (the caller reports success with
    /// [`Ring::delivered`]). Returns them and the last seq taken.
    pub(crate) fn take_batch(
        &mut self,
        max: usize,
        max_bytes: usize,
    ) -> (Vec<Pending>, Option<u64>) {
        let start = self.events.partition_point(|e| e.seq < self.cursor);
        let mut batch = Vec::new();
        let mut bytes = 0;
        let mut lost = self.lost_unannounced;
        let mut last = None;
        for event in self.events.range(start..) {
            if batch.len() >= max || (bytes >= max_bytes && !batch.is_empty()) {
                break;
            }
            bytes += event.size;
            let run_id = self.runs.id(event.run);
            batch.push(Pending::take(event, run_id, std::mem::take(&mut lost)));
            last = Some(event.seq);
        }
        if let Some(seq) = last {
            self.cursor = seq + 1;
            self.lost_unannounced = 0;
        }
        (batch, last)
    }

    /// Whether an event waits to be sent (one at or after the cursor).
    pub(crate) fn has_pending(&self) -> bool {
        self.events.back().is_some_and(|e| e.seq >= self.cursor)
    }

    /// Records that every event below `seq` reached a connection.
    pub(crate) fn delivered(&mut self, below: u64) {
        self.delivered_below = self.delivered_below.max(below);
    }
}

/// [`estimate`] for a record.
pub(crate) fn estimate_record(record: &Record) -> usize {
    match record {
        Record::Message(m) => estimate(m),
        Record::Started(p) => {
            80 + p.label.node_id().len()
                + p.label.name().len()
                + p.instance_id.len()
                + p.parent_id.as_ref().map_or(0, |s| s.len())
                + p.input.as_ref().map_or(0, |v| match v {
                    Input::Json(v) => value_size(v, 0),
                    Input::Fields(f) => f
                        .iter()
                        .map(|(k, v)| k.len() + 4 + val_size(v, 1))
                        .sum::<usize>()
                        .saturating_add(2),
                })
        }
        Record::Finished(p) => {
            96 + p.node_id.len()
                + p.instance_id.len()
                + p.output.as_ref().map_or(0, |v| val_size(v, 0))
        }
    }
}

/// [`value_size`] for a captured value.
fn val_size(v: &Val, depth: usize) -> usize {
    match v {
        Val::Null | Val::Bool(_) => 5,
        Val::U64(_) | Val::I64(_) | Val::F64(_) => 12,
        Val::Str(s) => s.len() + 2,
        Val::Json(v) => value_size(v, depth),
    }
}

/// A cheap upper-bound-ish estimate of a message's JSON size, without serializing it.
pub(crate) fn estimate(message: &Message) -> usize {
    use Message as M;
    let extra = |x: &graphmind_protocol::Extra| map_size(x, 0);
    match message {
        M::RunStarted(p) => {
            64 + p.app.len()
                + p.sdk.name.len()
                + p.sdk.version.len()
                + p.meta.as_ref().map_or(0, |m| map_size(m, 0))
                + extra(&p.extra)
        }
        M::RunFinished(p) => {
            32 + p.error.as_ref().map_or(0, |e| {
                e.name.len() + e.message.len() + e.stack.as_ref().map_or(0, String::len) + 48
            }) + extra(&p.extra)
        }
        M::GraphHint(p) => {
            16 + p
                .nodes
                .iter()
                .map(|n| {
                    64 + n.node_id.len()
                        + n.name.len()
                        + n.parent_id.as_ref().map_or(0, String::len)
                })
                .sum::<usize>()
                + extra(&p.extra)
        }
        M::NodeStarted(p) => {
            80 + p.node_id.len()
                + p.name.len()
                + p.instance_id.len()
                + p.parent_id.as_ref().map_or(0, String::len)
                + p.input.as_ref().map_or(0, |v| value_size(v, 0))
                + extra(&p.extra)
        }
        M::NodeToken(p) => {
            32 + p.node_id.len()
                + p.deltas.iter().map(|d| 20 + d.v.len()).sum::<usize>()
                + extra(&p.extra)
        }
        M::NodeFinished(p) => {
            96 + p.node_id.len()
                + p.instance_id.as_ref().map_or(0, String::len)
                + p.output.as_ref().map_or(0, |v| value_size(v, 0))
                + extra(&p.extra)
        }
        M::NodeError(p) => {
            80 + p.node_id.len()
                + p.error.name.len()
                + p.error.message.len()
                + p.error.stack.as_ref().map_or(0, String::len)
                + extra(&p.extra)
        }
        M::ExecPaused(p) => 64 + p.pause_id.len() + p.node_id.len() + extra(&p.extra),
        M::ExecResumed(p) => 48 + p.pause_id.len() + extra(&p.extra),
        M::ExecRefused(p) => {
            64 + p.pause_id.len() + p.message.as_ref().map_or(0, String::len) + extra(&p.extra)
        }
        M::Unknown { payload, .. } => 16 + value_size(payload, 0),
        // Controls and handshake frames are never recorded by the client; a flat guess.
        _ => 256,
    }
}

/// Deeper than this, a value is counted at a flat rate instead of walked.
const SIZE_DEPTH: usize = 16;

fn map_size(map: &serde_json::Map<String, Value>, depth: usize) -> usize {
    if map.is_empty() {
        return 0;
    }
    2 + map
        .iter()
        .map(|(k, v)| k.len() + 4 + value_size(v, depth + 1))
        .sum::<usize>()
}

fn value_size(v: &Value, depth: usize) -> usize {
    if depth > SIZE_DEPTH {
        return 64;
    }
    match v {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 12,
        Value::String(s) => s.len() + 2,
        Value::Array(items) => {
            2 + items
                .iter()
                .map(|x| 1 + value_size(x, depth + 1))
                .sum::<usize>()
        }
        Value::Object(map) => map_size(map, depth).max(2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphmind_protocol::{ExecResumed, Extra, ResumeAction};

    fn msg(n: usize) -> Record {
        Record::Message(Arc::new(Message::ExecResumed(ExecResumed {
            pause_id: format!("p{n}"),
            action: ResumeAction::Continue,
            extra: Extra::new(),
        })))
    }

    fn texts(items: Vec<Pending>) -> Vec<String> {
        items.into_iter().filter_map(Pending::into_text).collect()
    }

    #[test]
    fn batches_are_bounded_and_long_run_ids_work() {
        let mut r = Ring::new(100, usize::MAX);
        let long = "z".repeat(100);
        r.push(0, &long, msg(0)); // a long run id takes the heap path
        for i in 1..10 {
            r.push(0, "run", msg(i));
        }
        let (batch, last) = r.take_batch(4, usize::MAX);
        assert_eq!((batch.len(), last), (4, Some(3)));
        assert!(texts(batch)[0].contains(&long));
        let (batch, last) = r.take_batch(100, 1);
        assert_eq!(
            (batch.len(), last),
            (1, Some(4)),
            "at least one event per batch"
        );
        assert!(r.has_pending());
        let _ = r.take_batch(100, usize::MAX);
        assert!(!r.has_pending(), "everything taken");
        r.rewind();
        assert!(r.has_pending(), "a replay sends them again");
    }

    #[test]
    fn run_ids_are_stored_once_and_their_slots_reused_after_eviction() {
        let mut r = Ring::new(3, usize::MAX);
        let ids = [
            "run_a", "run_b", "run_a", "run_c", "run_b", "run_d", "run_d", "run_e",
        ];
        for (i, id) in ids.iter().enumerate() {
            r.push(0, id, msg(i));
        }
        // Held: the last three events (run_d, run_d, run_e); slots of gone runs were freed.
        assert_eq!(r.runs.index.len(), 2);
        assert!(
            r.runs.slots.len() <= 4,
            "slots are reused: {}",
            r.runs.slots.len()
        );
        r.rewind();
        let (batch, _) = r.take_batch(10, usize::MAX);
        let run_ids: Vec<String> = texts(batch)
            .iter()
            .map(|t| {
                serde_json::from_str::<Value>(t).unwrap()["runId"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(run_ids, ["run_d", "run_d", "run_e"]);
        for i in 0..100 {
            r.push(0, if i % 2 == 0 { "run_x" } else { "run_y" }, msg(i));
        }
        assert_eq!(r.runs.index.len(), 2);
        assert!(r.runs.slots.len() <= 4);
    }

    #[test]
    fn drops_oldest_and_counts_losses_once() {
        let mut r = Ring::new(3, usize::MAX);
        for i in 0..5 {
            r.push(0, "run", msg(i));
        }
        assert_eq!(r.len(), 3);
        assert_eq!(r.dropped(), 2);
        let (batch, last) = r.take_batch(10, usize::MAX);
        let texts = texts(batch);
        assert_eq!(last, Some(4));
        assert_eq!(texts.len(), 3);
        assert!(texts[0].contains(r#""seq":2,"#) && texts[0].ends_with(r#","dropped":2}"#));
        assert!(!texts[1].contains("dropped") && texts[2].contains(r#""seq":4,"#));
        r.delivered(5);
        // Evicting delivered events is not a loss.
        r.push(0, "run", msg(5));
        let (batch, _) = r.take_batch(10, usize::MAX);
        let again = self::texts(batch);
        assert_eq!(again.len(), 1);
        assert!(!again[0].contains("dropped"));
        r.rewind();
        let (batch, _) = r.take_batch(1, usize::MAX);
        assert!(self::texts(batch)[0].contains(r#""seq":3,"#));
    }

    #[test]
    fn compact_records_send_the_same_frames_as_their_messages() {
        use crate::record::{Finished, InstanceId, Payload, Started};
        use graphmind_protocol::Status;
        use std::borrow::Cow;
        static ADD: crate::__private::ToolSite = crate::__private::ToolSite {
            name: "add",
            node_id: "tool:add",
            retry: true,
            call_id: None,
        };
        let started = || Started {
            label: crate::record::Label::Tool(&ADD),
            instance_id: InstanceId::Call(41),
            parent_id: Some("agent:a".into()),
            input: Some(Payload::Fields(Box::new([
                ("a", crate::capture::Val::U64(1)),
                ("b", crate::capture::Val::Str("two".into())),
            ]))),
        };
        let finished = || Finished {
            node_id: Cow::Borrowed("tool:add"),
            instance_id: InstanceId::Call(41),
            duration_ms: 1.25,
            status: Status::Ok,
            output: Some(crate::capture::Val::U64(3)),
            held_ms: 0.0,
        };
        for (compact, message) in [
            (
                Record::Started(started()),
                Record::Started(started()).into_message(),
            ),
            (
                Record::Finished(finished()),
                Record::Finished(finished()).into_message(),
            ),
        ] {
            let mut r = Ring::new(10, usize::MAX);
            r.push(5, "run_1", compact);
            r.rewind();
            let a = texts(r.take_batch(10, usize::MAX).0).remove(0);
            let mut r = Ring::new(10, usize::MAX);
            r.push(5, "run_1", Record::Message(Arc::new(message)));
            let b = texts(r.take_batch(10, usize::MAX).0).remove(0);
            assert_eq!(a, b);
            assert!(a.starts_with(r#"{"gm":1,"seq":0,"ts":5,"runId":"run_1","type":"node."#));
            assert!(a.contains(r#""nodeId":"tool:add""#) && a.contains(r#""instanceId":"call_"#));
        }
    }

    #[test]
    fn byte_limit_evicts_too() {
        let mut r = Ring::new(100, 300);
        for i in 0..10 {
            r.push(0, "run", msg(i));
        }
        assert!(r.len() < 10 && r.len() >= 1);
        assert_eq!(r.dropped() as usize, 10 - r.len());
    }

    #[test]
    fn frame_has_wire_order_and_announces_drops() {
        let mut r = Ring::new(10, usize::MAX);
        r.push(7, "run_1", msg(0));
        let (batch, _) = r.take_batch(1, usize::MAX);
        let mut out = Vec::new();
        let text = texts(batch).remove(0);
        assert_eq!(
            text,
            r#"{"gm":1,"seq":0,"ts":7,"runId":"run_1","type":"exec.resumed","payload":{"pauseId":"p0","action":"continue"}}"#
        );
        let (batch, _) = {
            r.rewind();
            r.take_batch(1, usize::MAX)
        };
        assert_eq!(texts(batch).len(), 1, "replayed");
        let e = Event {
            seq: 0,
            ts: 7,
            run: 0,
            record: msg(0),
            size: 0,
        };
        assert!(e.write_json("run_1", 3, &mut out));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"gm":1,"seq":0,"ts":7,"runId":"run_1","type":"exec.resumed","payload":{"pauseId":"p0","action":"continue"},"dropped":3}"#
        );
    }
}
