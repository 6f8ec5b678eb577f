//! The replay ring: every event of the session, as structs, bounded by count and estimated
//! bytes, oldest dropped first. It doubles as the outbox: the transport keeps a send cursor
//! (a seq) and sends what lies at or after it, so an event is never copied on the app's path.
//!
//! Losses: an event evicted before it was confirmed is lost. Confirmed means acknowledged by
//! a hub that acknowledges what it stored (`hub.ack`, announced by `hubCapabilities:
//! ["hub-ack"]`), else written to a connection (all a hub without acks lets the client
//! know). Lost seqs are announced on the next event sent: `"dropped": n` and `"lost": [[from,
//! to], …]` (inclusive seq ranges). That event keeps its announcement for every resend (a hub
//! may have stored it already: a resend is deduped, never counted twice); if it is evicted
//! unconfirmed itself, its seq and its ranges are announced again by a later one (ranges
//! overlap harmlessly: a seq announced and stored was not lost).
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

use crate::captured::Val;
use crate::event::{Payload as Input, Record};

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
    /// An event of this slot was taken for sending (a hub may hold events of the run).
    sent: bool,
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
                    sent: false,
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

    /// An event of slot `at` is taken for sending.
    fn mark_sent(&mut self, at: usize) {
        if let Some(slot) = self.slots.get_mut(at) {
            slot.sent = true;
        }
    }

    /// Whether an event of slot `at` was taken for sending.
    fn sent(&self, at: usize) -> bool {
        self.slots.get(at).is_some_and(|s| s.sent)
    }

    /// Whether the ring holds an event of run `id`.
    fn holds(&self, id: &str) -> bool {
        self.index.contains_key(id)
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
    /// The lost seqs this event announces (fixed once sent).
    lost: Option<Box<Lost>>,
}

/// Lost seqs as sorted, disjoint, inclusive ranges, and the runs they were of.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Lost {
    seqs: Vec<(u64, u64)>,
    runs: LostRuns,
}

/// The most runs a loss announcement names (`lostRuns`) that no hub may have heard of: runs none
/// of whose events was ever taken for sending and none of whose events the ring still holds. A
/// process that stays detached for long evicts every event of many such runs; they are
/// forgotten oldest first past this many (a run still recording later would reach a hub with
/// an unmarked gap; the seqs of every lost event are announced whatever the number of runs).
/// Runs of which a hub may hold events are always named.
pub(crate) const MAX_LOST_RUNS: usize = 1024;

/// The runs of lost events: each with whether it must be named (an event of it was taken
/// for sending, or the ring still held one when the cap was reached), and the others oldest
/// first, at most [`MAX_LOST_RUNS`] of them. Adding one is a pointer compare with the last
/// added (consecutive evicted events are mostly of one run) or a hash lookup: never a walk.
#[derive(Debug, Default, Clone)]
struct LostRuns {
    runs: HashMap<Arc<str>, bool>,
    /// The runs not known to be held by a hub, oldest first (may name runs since upgraded).
    unsent: VecDeque<Arc<str>>,
    last: Option<Arc<str>>,
}

impl PartialEq for LostRuns {
    fn eq(&self, other: &Self) -> bool {
        self.runs == other.runs
    }
}

impl Eq for LostRuns {}

impl LostRuns {
    /// Adds `run`; `sent`: an event of it was taken for sending. `holds`: whether the ring
    /// still holds an event of a run (those are kept whatever the cap: they will be sent).
    fn add(&mut self, run: &Arc<str>, sent: bool, holds: &dyn Fn(&str) -> bool) {
        if !sent && self.last.as_ref().is_some_and(|r| Arc::ptr_eq(r, run)) {
            return;
        }
        match self.runs.get_mut(run) {
            Some(must) => *must |= sent,
            None => {
                self.runs.insert(Arc::clone(run), sent);
                if !sent {
                    self.unsent.push_back(Arc::clone(run));
                    self.forget_over_cap(holds);
                }
            }
        }
        self.last = Some(Arc::clone(run));
    }

    fn forget_over_cap(&mut self, holds: &dyn Fn(&str) -> bool) {
        while self.unsent.len() > MAX_LOST_RUNS {
            let Some(oldest) = self.unsent.pop_front() else {
                break;
            };
            match self.runs.get_mut(&oldest) {
                Some(true) | None => {}
                Some(must) if holds(&oldest) => *must = true,
                Some(_) => {
                    self.runs.remove(&oldest);
                }
            }
        }
    }

    /// The ids, sorted (as the announcement lists them).
    fn sorted(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.runs.keys().map(|r| &**r).collect();
        ids.sort_unstable();
        ids
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.runs.len()
    }
}

#[cfg(test)]
impl<const N: usize> From<[Arc<str>; N]> for LostRuns {
    fn from(runs: [Arc<str>; N]) -> Self {
        let mut out = Self::default();
        for r in &runs {
            out.add(r, false, &|_| false);
        }
        out
    }
}

impl Lost {
    fn add(
        &mut self,
        from: u64,
        to: u64,
        run: &Arc<str>,
        sent: bool,
        holds: &dyn Fn(&str) -> bool,
    ) {
        self.add_range(from, to);
        self.runs.add(run, sent, holds);
    }

    fn add_range(&mut self, from: u64, to: u64) {
        // Losses come oldest first: the usual case extends the last range.
        if let Some(last) = self.seqs.last_mut()
            && from <= last.1.saturating_add(1)
            && from >= last.0
        {
            last.1 = last.1.max(to);
            return;
        }
        self.seqs.push((from, to));
        self.seqs.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.seqs.len());
        for (a, b) in self.seqs.drain(..) {
            match merged.last_mut() {
                Some(m) if a <= m.1.saturating_add(1) => m.1 = m.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        self.seqs = merged;
    }

    fn merge(&mut self, other: &Lost, holds: &dyn Fn(&str) -> bool) {
        for &(a, b) in &other.seqs {
            self.add_range(a, b);
        }
        // What an announcing event carried was taken for sending.
        for r in other.runs.runs.keys() {
            self.runs.add(r, true, holds);
        }
    }

    fn count(&self) -> u64 {
        self.seqs.iter().map(|(a, b)| b - a + 1).sum()
    }

    fn is_empty(&self) -> bool {
        self.seqs.is_empty()
    }
}

impl Event {
    /// The seq of its last frame (a [`Record::Call`] holds two).
    #[inline]
    fn last_seq(&self) -> u64 {
        self.seq + self.record.frames() - 1
    }

    /// Compact wire JSON of frame `part` (0, or 1 for a call's `node.finished`), with
    /// `"dropped": n, "lost": [...]` after `payload` on the first frame when this event
    /// announces lost seqs (see [`Ring::take_batch`]).
    fn write_json(&self, part: u64, run_id: &str, out: &mut Vec<u8>) -> bool {
        write_frame(
            Frame {
                seq: self.seq + part,
                ts: part_ts(&self.record, self.ts, part),
                run_id,
                record: &self.record,
                part,
                lost: if part == 0 {
                    self.lost.as_deref()
                } else {
                    None
                },
            },
            out,
        )
    }
}

/// The `ts` of frame `part` of a record stamped `ts` (a call's `node.finished` is later).
fn part_ts(record: &Record, ts: u64, part: u64) -> u64 {
    match record.inner() {
        Record::Call(c) if part > 0 => ts + u64::from(c.finished_after),
        _ => ts,
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
    /// Which frame of the record (see [`Record::frames`]).
    part: u64,
    lost: Option<&'a Lost>,
}

struct Payload<'a>(&'a Record, u64);

impl Serialize for Payload<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.part_payload_serialize(self.1, s)
    }
}

impl Serialize for Frame<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("gm", &graphmind_protocol::PROTOCOL_VERSION)?;
        m.serialize_entry("seq", &self.seq)?;
        m.serialize_entry("ts", &self.ts)?;
        m.serialize_entry("runId", self.run_id)?;
        m.serialize_entry("type", self.record.part_type_name(self.part))?;
        m.serialize_entry("payload", &Payload(self.record, self.part))?;
        if let Some(lost) = self.lost.filter(|l| !l.is_empty()) {
            m.serialize_entry("dropped", &lost.count())?;
            m.serialize_entry("lost", &lost.seqs)?;
            m.serialize_entry("lostRuns", &lost.runs.sorted())?;
        }
        m.end()
    }
}

/// A frame taken for sending, with its `dropped` announcement: the frame text already
/// (compact records recorded while detached), or one frame of a shared record (a message,
/// or a compact record recorded while attached) to serialize outside the lock.
#[derive(Debug)]
pub(crate) enum Pending {
    Text(Option<String>),
    Shared {
        /// The record's seq (the frame's is `seq + part`).
        seq: u64,
        /// The record's `ts`.
        ts: u64,
        run_id: Arc<str>,
        /// [`Record::Message`] or [`Record::Shared`].
        record: Record,
        part: u64,
        size: usize,
        lost: Option<Box<Lost>>,
    },
}

impl Pending {
    /// The frames of `event`, appended to `batch`.
    fn take(event: &Event, run_id: &Arc<str>, batch: &mut Vec<Self>) {
        match event.record.share() {
            Some(record) => {
                for part in 0..record.frames() {
                    batch.push(Self::Shared {
                        seq: event.seq,
                        ts: event.ts,
                        run_id: Arc::clone(run_id),
                        record: record.share().unwrap_or_else(|| unreachable!("shared")),
                        part,
                        size: event.size,
                        lost: if part == 0 { event.lost.clone() } else { None },
                    });
                }
            }
            None => {
                let frames = event.record.frames();
                for part in 0..frames {
                    let mut buf = Vec::with_capacity(event.size / frames as usize + 64);
                    batch.push(Self::Text(
                        event
                            .write_json(part, run_id, &mut buf)
                            .then(|| String::from_utf8(buf).ok())
                            .flatten(),
                    ));
                }
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
                record,
                part,
                size,
                lost,
            } => {
                let mut buf = Vec::with_capacity(size / record.frames() as usize + 64);
                write_frame(
                    Frame {
                        seq: seq + part,
                        ts: part_ts(&record, ts, part),
                        run_id: &run_id,
                        record: &record,
                        part,
                        lost: lost.as_deref(),
                    },
                    &mut buf,
                )
                .then(|| String::from_utf8(buf).ok())
                .flatten()
            }
        }
    }
}

/// A ring full by count evicts this share of its limit at once (see [`Ring::evict_batch`]).
const EVICT_SHARE: usize = 64;

/// Bounded, seq-ordered event store.
#[derive(Debug)]
pub(crate) struct Ring {
    events: VecDeque<Event>,
    /// Frames held (a [`Record::Call`] entry holds two): what `max_events` bounds.
    held: usize,
    bytes: usize,
    max_events: usize,
    max_bytes: usize,
    /// The next seq to hand out (hello and events share it).
    next_seq: u64,
    /// Events evicted so far (all of them, sent or not).
    dropped: u64,
    /// Events evicted unconfirmed, counted once each.
    lost: u64,
    /// Lost seqs no held event announces yet.
    lost_unannounced: Lost,
    /// Every event below this seq was taken for sending at least once (so a hub may hold it).
    sent_below: u64,
    /// Events recorded so far.
    recorded: u64,
    /// Every event below this seq is confirmed (see the module docs).
    confirmed_below: u64,
    /// Whether the hub of the current connection acknowledges what it stored (then only a
    /// `hub.ack` confirms).
    acking: bool,
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
            held: 0,
            bytes: 0,
            max_events: max_events.max(1),
            max_bytes: max_bytes.max(1),
            next_seq: 0,
            dropped: 0,
            lost: 0,
            lost_unannounced: Lost::default(),
            sent_below: 0,
            recorded: 0,
            confirmed_below: 0,
            acking: false,
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

    /// Stamps `record` with the next seq (two for a [`Record::Call`]) and stores it, evicting
    /// the oldest events while a limit would be exceeded. Returns the (first) seq.
    pub(crate) fn push(&mut self, ts: u64, run_id: &str, record: Record) -> u64 {
        let frames = record.frames();
        let seq = self.next_seq;
        self.next_seq += frames;
        self.recorded += frames;
        let size = estimate_record(&record) + (run_id.len() + 64) * frames as usize;
        while !self.events.is_empty() && self.bytes + size > self.max_bytes {
            self.evict_oldest();
        }
        if self.held + frames as usize > self.max_events {
            self.evict_batch(frames as usize);
        }
        self.bytes += size;
        self.held += frames as usize;
        let event = Event {
            seq,
            ts,
            run: self.runs.acquire(run_id),
            record,
            size,
            lost: None,
        };
        self.events.push_back(event);
        seq
    }

    /// Full by count: evicts the oldest events, a share of the limit at once, so the pushes
    /// that follow evict nothing (the ring then holds a little fewer events than its limit).
    #[cold]
    #[inline(never)]
    fn evict_batch(&mut self, frames: usize) {
        let room = self.max_events.saturating_sub(frames);
        let target = room.saturating_sub(self.max_events / EVICT_SHARE);
        let mut n = 0;
        while self.held > target
            && let Some(old) = self.events.get_mut(n)
        {
            let (seq, frames, size, run) = (old.seq, old.record.frames(), old.size, old.run);
            let carried = old.lost.take();
            self.evicted(seq, frames, size, run, carried.as_deref());
            n += 1;
        }
        // Dropped in place, not moved out one by one.
        self.events.drain(..n);
    }

    fn evict_oldest(&mut self) {
        if let Some(old) = self.events.pop_front() {
            self.evicted(
                old.seq,
                old.record.frames(),
                old.size,
                old.run,
                old.lost.as_deref(),
            );
        }
    }

    /// Accounts for an evicted event (its first seq, frames, size, run slot and the lost
    /// seqs it announced): unconfirmed, it and what it announced are announced by a later one.
    fn evicted(&mut self, seq: u64, frames: u64, size: usize, run: usize, carried: Option<&Lost>) {
        self.bytes = self.bytes.saturating_sub(size);
        self.held = self.held.saturating_sub(frames as usize);
        self.dropped += frames;
        let last = seq + frames - 1;
        if last >= self.confirmed_below {
            let from = seq.max(self.confirmed_below);
            self.lost += last - from + 1;
            let runs = &self.runs;
            let holds = |id: &str| runs.holds(id);
            let sent = seq < self.sent_below || runs.sent(run);
            self.lost_unannounced
                .add(from, last, runs.id(run), sent, &holds);
            if let Some(carried) = carried {
                self.lost_unannounced.merge(carried, &holds);
            }
        }
        self.runs.release(run);
    }

    /// Events held now (a call's two frames count two).
    pub(crate) fn len(&self) -> usize {
        self.held
    }

    /// Events evicted so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Events recorded so far.
    pub(crate) fn recorded(&self) -> u64 {
        self.recorded
    }

    /// Events evicted before they were confirmed (each counted once).
    pub(crate) fn lost(&self) -> u64 {
        self.lost
    }

    /// Sets whether the current connection's hub acknowledges what it stored.
    pub(crate) fn set_acking(&mut self, acking: bool) {
        self.acking = acking;
    }

    /// The hub stored (or deduped, or counted as refused) every event below `below`.
    pub(crate) fn acked(&mut self, below: u64) {
        self.confirmed_below = self.confirmed_below.max(below.min(self.next_seq));
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
        let start = self.events.partition_point(|e| e.last_seq() < self.cursor);
        let mut batch = Vec::new();
        let mut bytes = 0;
        let mut last = None;
        for event in self.events.range_mut(start..) {
            if batch.len() >= max || (bytes >= max_bytes && !batch.is_empty()) {
                break;
            }
            if !self.lost_unannounced.is_empty() && event.seq >= self.sent_below {
                // Never sent before, so no hub stored it without the announcement: it carries
                // the announcement from now on, on every resend. (There is always such an
                // event: a loss happens when a new event is pushed.)
                event.lost = Some(Box::new(std::mem::take(&mut self.lost_unannounced)));
            }
            bytes += event.size;
            self.runs.mark_sent(event.run);
            let run_id = self.runs.id(event.run);
            Pending::take(event, run_id, &mut batch);
            last = Some(event.last_seq());
        }
        if let Some(seq) = last {
            self.cursor = seq + 1;
            self.sent_below = self.sent_below.max(seq + 1);
        }
        (batch, last)
    }

    /// Whether an event waits to be sent (one at or after the cursor).
    pub(crate) fn has_pending(&self) -> bool {
        self.events
            .back()
            .is_some_and(|e| e.last_seq() >= self.cursor)
    }

    /// Records that every event below `seq` reached a connection (confirms them unless the
    /// hub acknowledges what it stored).
    pub(crate) fn delivered(&mut self, below: u64) {
        if !self.acking {
            self.confirmed_below = self.confirmed_below.max(below);
        }
    }
}

/// [`estimate`] for a record.
pub(crate) fn estimate_record(record: &Record) -> usize {
    match record {
        Record::Message(m) => estimate(m),
        Record::Shared(r) => estimate_record(r),
        Record::Started(p) => estimate_started(p),
        Record::Call(c) => {
            estimate_started(&c.started)
                + 96
                + c.started.label.node_id().len()
                + c.started.instance_id.len()
                + c.output.as_ref().map_or(0, |v| val_size(v, 0))
        }
        Record::Finished(p) => {
            96 + p.node_id.len()
                + p.instance_id.len()
                + p.output.as_ref().map_or(0, |v| val_size(v, 0))
                + p.more.as_ref().map_or(0, |m| {
                    m.usage.as_ref().map_or(0, |_| 96)
                        + m.extra.typed_len(1, 12)
                        + map_size(&m.extra.rest, 0)
                })
        }
    }
}

/// [`estimate_record`] for a `node.started`.
fn estimate_started(p: &crate::event::Started) -> usize {
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
            Input::Raw(r) => r.get().len(),
            // The value and, once read, its text.
            Input::Lazy(l) => l.len().saturating_mul(2),
        })
}

/// [`value_size`] for a captured value.
fn val_size(v: &Val, depth: usize) -> usize {
    match v {
        Val::Null | Val::Bool(_) => 5,
        Val::U64(_) | Val::I64(_) | Val::F64(_) => 12,
        Val::Str(s) => s.len() + 2,
        Val::Json(v) => value_size(v, depth),
        Val::Raw(r) => r.get().len(),
        Val::Lazy(l) => l.len().saturating_mul(2),
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
            edited: None,
            reason: None,
            request_id: None,
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
        assert!(
            texts[0].contains(r#""seq":2,"#)
                && texts[0].ends_with(r#","dropped":2,"lost":[[0,1]],"lostRuns":["run"]}"#)
        );
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
        use crate::event::{Finished, InstanceId, Payload, Started};
        use graphmind_protocol::Status;
        use std::borrow::Cow;
        let started = || Started {
            label: crate::event::Label::Tool(&ADD),
            instance_id: InstanceId::Call(41),
            parent_id: Some("agent:a".into()),
            input: Some(Payload::Fields(Box::new([
                ("a", crate::captured::Val::U64(1)),
                ("b", crate::captured::Val::Str("two".into())),
            ]))),
        };
        let finished = || Finished {
            node_id: Cow::Borrowed("tool:add"),
            instance_id: InstanceId::Call(41),
            duration_ms: 1.25,
            status: Status::Ok,
            output: Some(crate::captured::Val::U64(3)),
            held_ms: 0.0,
            more: None,
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

    static ADD: crate::sites::ToolSite = crate::sites::ToolSite {
        name: "add",
        node_id: "tool:add",
        retry: true,
        call_id: None,
    };

    fn call_started(n: u64) -> crate::event::Started {
        crate::event::Started {
            label: crate::event::Label::Tool(&ADD),
            instance_id: crate::event::InstanceId::Call(n),
            parent_id: Some("agent:a".into()),
            input: Some(crate::event::Payload::Fields(Box::new([
                ("a", Val::U64(1)),
                ("b", Val::Str("two".into())),
            ]))),
        }
    }

    fn call(n: u64) -> crate::event::Call {
        crate::event::Call {
            started: call_started(n),
            finished_after: 3,
            duration_ms: 2.5,
            status: graphmind_protocol::Status::Ok,
            output: Some(Val::U64(3)),
        }
    }

    /// Compact records shared while attached (serialized outside the ring's lock) send the
    /// same frames, byte for byte, as the unshared ones, with the loss announcement on the
    /// first frame only, and are counted the same.
    #[test]
    fn shared_records_send_the_same_frames_as_unshared_ones() {
        let fill = |shared: bool| {
            let mut r = Ring::new(4, usize::MAX);
            let wrap = |rec: Record| if shared { rec.shared() } else { rec };
            // Six frames into a ring of four: the oldest are lost and announced.
            r.push(1, "run_1", wrap(Record::Call(call(1))));
            let (s, f) = call(2).split();
            r.push(2, "run_1", wrap(Record::Started(s)));
            r.push(3, "run_1", wrap(Record::Finished(f)));
            r.push(4, "run_1", wrap(Record::Call(call(3))));
            let counts = (r.len(), r.recorded(), r.dropped(), r.last_seq());
            let mut frames = Vec::new();
            loop {
                let (batch, last) = r.take_batch(2, usize::MAX);
                if last.is_none() {
                    break;
                }
                frames.extend(texts(batch));
            }
            (counts, frames)
        };
        let (plain, shared) = (fill(false), fill(true));
        assert_eq!(plain, shared);
        assert!(shared.0.2 > 0, "some were lost: {:?}", shared.0);
        assert!(
            shared.1.iter().any(|f| f.contains(r#""lost":"#)),
            "{:?}",
            shared.1
        );
        assert!(matches!(
            Record::Call(call(9)).shared(),
            Record::Shared(ref r) if matches!(**r, Record::Call(_))
        ));
        assert!(
            matches!(msg(0).shared(), Record::Message(_)),
            "messages stay as they are"
        );
    }

    /// A call that finished in its first poll is one entry, and sends the same two frames,
    /// byte for byte, as its `node.started` and `node.finished` recorded one by one.
    #[test]
    fn a_call_entry_sends_the_same_frames_as_its_two_records() {
        let mut one = Ring::new(10, usize::MAX);
        assert_eq!(one.push(5, "run_1", Record::Call(call(41))), 0);
        assert_eq!((one.len(), one.recorded(), one.last_seq()), (2, 2, Some(1)));
        assert_eq!(one.events.len(), 1, "one entry");
        let (batch, last) = one.take_batch(10, usize::MAX);
        assert_eq!(last, Some(1));
        let a = texts(batch);
        let mut two = Ring::new(10, usize::MAX);
        let (s, f) = call(41).split();
        two.push(5, "run_1", Record::Started(s));
        two.push(8, "run_1", Record::Finished(f));
        let b = texts(two.take_batch(10, usize::MAX).0);
        assert_eq!(a, b);
        assert!(
            a[0].starts_with(r#"{"gm":1,"seq":0,"ts":5,"runId":"run_1","type":"node.started","#)
        );
        assert!(
            a[1].starts_with(r#"{"gm":1,"seq":1,"ts":8,"runId":"run_1","type":"node.finished","#)
        );
        assert!(!one.has_pending());
        one.push(9, "run_1", msg(0));
        assert!(one.has_pending());
        let (batch, last) = one.take_batch(10, usize::MAX);
        assert_eq!((batch.len(), last), (1, Some(2)));
    }

    /// Evicted unconfirmed, a call entry loses both seqs (one range); half confirmed, one.
    #[test]
    fn an_evicted_call_entry_counts_two_events_and_loses_only_unconfirmed_seqs() {
        let mut r = Ring::new(2, usize::MAX);
        r.push(0, "run", Record::Call(call(1))); // seqs 0, 1
        r.push(0, "run", Record::Call(call(2))); // seqs 2, 3: evicts 0, 1
        assert_eq!((r.len(), r.dropped(), r.lost()), (2, 2, 2));
        r.set_acking(true);
        let _ = r.take_batch(10, usize::MAX);
        r.delivered(4);
        r.acked(3); // the hub stored seq 2, not 3
        r.push(0, "run", msg(0)); // seq 4: evicts 2, 3
        assert_eq!((r.len(), r.dropped(), r.lost(), r.recorded()), (1, 4, 3, 5));
        let sent = texts(r.take_batch(10, usize::MAX).0);
        // Seq 3, and what the evicted entry announced (it was not stored whole).
        assert_eq!(lost_of(&sent[0]), [(0, 1), (3, 3)]);
        let mut r = Ring::new(3, usize::MAX);
        r.push(0, "run", Record::Call(call(1)));
        r.push(0, "run", Record::Call(call(2)));
        r.push(0, "run", msg(1));
        let sent = texts(r.take_batch(10, usize::MAX).0);
        assert_eq!(sent.len(), 3);
        assert_eq!(lost_of(&sent[0]), [(0, 1)], "the first call, one range");
        assert!(sent[0].contains(r#""dropped":2"#) && !sent[1].contains("dropped"));
    }

    /// A ring full by count evicts a share of its limit at once (the pushes after it evict
    /// nothing), and counts every eviction as before, in one lost range.
    #[test]
    fn a_full_ring_evicts_in_batches_and_counts_each_event() {
        let mut r = Ring::new(640, usize::MAX);
        for i in 0..640 {
            r.push(0, "run", msg(i));
        }
        assert_eq!((r.len(), r.dropped()), (640, 0));
        r.push(0, "run", msg(640));
        assert_eq!((r.len(), r.dropped(), r.lost()), (630, 11, 11));
        for i in 641..650 {
            r.push(0, "run", msg(i));
        }
        assert_eq!((r.len(), r.dropped()), (639, 11), "nothing more evicted");
        for i in 650..2000 {
            r.push(0, "run", msg(i));
        }
        assert_eq!(r.dropped() as usize + r.len(), 2000);
        assert!(r.len() <= 640 && r.len() >= 630);
        let sent = texts(r.take_batch(1, usize::MAX).0);
        let dropped = r.dropped();
        assert_eq!(lost_of(&sent[0]), [(0, dropped - 1)]);
        assert!(sent[0].contains(&format!(r#""dropped":{dropped},"#)));
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
            lost: Some(Box::new(Lost {
                seqs: vec![(3, 4), (9, 9)],
                runs: [Arc::from("run_0")].into(),
            })),
        };
        assert!(e.write_json(0, "run_1", &mut out));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"gm":1,"seq":0,"ts":7,"runId":"run_1","type":"exec.resumed","payload":{"pauseId":"p0","action":"continue"},"dropped":3,"lost":[[3,4],[9,9]],"lostRuns":["run_0"]}"#
        );
    }

    /// The `lostRuns` a frame announces.
    fn lost_runs_of(text: &str) -> Vec<&str> {
        let start = text.find(r#""lostRuns":"#).expect("lostRuns") + r#""lostRuns":"#.len();
        let end = start + text[start..].find(']').expect("the list's end") + 1;
        serde_json::from_str(&text[start..end]).expect("a list of ids")
    }

    fn lost_of(text: &str) -> Vec<(u64, u64)> {
        serde_json::from_str::<Value>(text).unwrap()["lost"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|r| (r[0].as_u64().unwrap(), r[1].as_u64().unwrap()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The hub died with events written to its socket and never stored: with an acking hub
    /// they are lost when evicted, not delivered, and announced once, on a new event.
    #[test]
    fn written_but_unacknowledged_events_evicted_are_lost_and_announced() {
        let mut r = Ring::new(3, usize::MAX);
        r.set_acking(true);
        for i in 0..3 {
            r.push(0, "run", msg(i));
        }
        let (_, last) = r.take_batch(10, usize::MAX);
        r.delivered(last.unwrap() + 1);
        r.acked(1); // the hub stored seq 0 only
        for i in 3..5 {
            r.push(0, "run", msg(i)); // evicts 0 (acked) and 1 (written, not acked)
        }
        assert_eq!((r.dropped(), r.lost(), r.recorded()), (2, 1, 5));
        r.rewind();
        let sent = texts(r.take_batch(10, usize::MAX).0);
        assert_eq!(sent.len(), 3);
        assert!(
            !sent[0].contains("lost"),
            "seq 2 was sent before: it cannot carry it"
        );
        assert_eq!(lost_of(&sent[1]), [(1, 1)], "seq 3, never sent, carries it");
        r.rewind();
        let again = texts(r.take_batch(10, usize::MAX).0);
        assert_eq!(again, sent, "a resend carries the same announcement");
        // The carrier evicted unacknowledged: it and what it carried are announced again.
        for i in 5..7 {
            r.push(0, "run", msg(i)); // evicts 2 and 3
        }
        assert_eq!(r.lost(), 3);
        let next = texts(r.take_batch(10, usize::MAX).0);
        assert_eq!(lost_of(&next[0]), [(1, 3)]);
        assert!(next[0].contains(r#""dropped":3"#));
    }

    #[test]
    fn without_acks_a_written_event_counts_as_delivered() {
        let mut r = Ring::new(2, usize::MAX);
        for i in 0..2 {
            r.push(0, "run", msg(i));
        }
        let (_, last) = r.take_batch(10, usize::MAX);
        r.delivered(last.unwrap() + 1);
        r.push(0, "run", msg(2));
        assert_eq!((r.dropped(), r.lost()), (1, 0));
    }

    #[test]
    fn a_detached_process_of_many_runs_names_at_most_the_newest_lost_runs() {
        // Each run's events evicted unannounced: the lost runs were a set that every
        // eviction walked and that grew with every run of a process that stayed detached.
        let mut r = Ring::new(16, usize::MAX);
        let runs = 5 * MAX_LOST_RUNS;
        for i in 0..runs {
            r.push(0, &format!("run_{i}"), msg(i));
            assert!(r.lost_unannounced.runs.len() <= MAX_LOST_RUNS);
        }
        let lost = (runs - r.len()) as u64;
        assert_eq!(r.lost(), lost);
        let first = texts(r.take_batch(1, usize::MAX).0).remove(0);
        let v: Value = serde_json::from_str(&first).unwrap();
        assert_eq!(v["dropped"], lost, "every lost seq is still announced");
        assert_eq!(lost_of(&first), [(0, lost - 1)]);
        let named = lost_runs_of(&first);
        assert_eq!(named.len(), MAX_LOST_RUNS);
        let newest = format!("run_{}", lost - 1);
        let forgotten = format!("run_{}", lost as usize - MAX_LOST_RUNS - 1);
        assert!(
            named.contains(&newest.as_str()),
            "the newest lost run is named"
        );
        assert!(
            !named.contains(&forgotten.as_str()),
            "the oldest are forgotten"
        );
        assert!(named.is_sorted());
    }

    #[test]
    fn runs_a_hub_may_hold_are_named_however_many_runs_lost_events() {
        // The cap on lost runs once forgot runs whose first events had reached the hub: a
        // hub killed with more than the ring in flight left them with a gap, unmarked.
        let mut r = Ring::new(16, usize::MAX);
        r.set_acking(true);
        r.push(0, "sent", msg(0));
        let _ = r.take_batch(10, usize::MAX); // sent, never acknowledged
        r.push(0, "sent", msg(1)); // not sent: evicted with the rest
        for i in 0..3 * MAX_LOST_RUNS {
            r.push(0, &format!("run_{i}"), msg(i));
            if i % 8 == 0 {
                // A long run whose early events are lost while the ring holds its later ones.
                r.push(0, "long", msg(i));
            }
        }
        let first = texts(r.take_batch(1, usize::MAX).0).remove(0);
        let named = lost_runs_of(&first);
        assert!(named.contains(&"sent"), "a run the hub may hold");
        assert!(
            named.contains(&"long"),
            "a run whose later events will be sent"
        );
        assert!(
            !named.contains(&"run_0"),
            "a run nobody heard of, long gone"
        );
        assert!(named.len() <= MAX_LOST_RUNS + 2, "{}", named.len());
    }

    #[test]
    fn lost_ranges_merge() {
        let mut l = Lost::default();
        let (a, b): (Arc<str>, Arc<str>) = ("run_a".into(), "run_b".into());
        for s in [5, 6, 7, 1, 2, 9, 8] {
            l.add(s, s, if s < 5 { &a } else { &b }, false, &|_| false);
        }
        assert_eq!(l.seqs, [(1, 2), (5, 9)]);
        l.merge(
            &Lost {
                seqs: vec![(0, 3), (11, 12)],
                runs: [Arc::from("run_c")].into(),
            },
            &|_| false,
        );
        assert_eq!(l.seqs, [(0, 3), (5, 9), (11, 12)]);
        assert_eq!(l.runs.sorted(), ["run_a", "run_b", "run_c"]);
        assert_eq!(l.count(), 4 + 5 + 2);
    }
}
