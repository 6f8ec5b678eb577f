//! Taking in an app's events: dedupe, run claims, run and pause bookkeeping, storage, and
//! the fan-out to subscribed viewers.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use graphmind_protocol::control::Principal;
use graphmind_protocol::feed::RunStatus;
use graphmind_protocol::{
    Envelope, ExecPaused, ExecResumed, Message, Mode, PausePoint, PauseReason,
};
use serde_json::Value;

use super::remember;
use super::viewers::drop_viewer;
use super::{
    CLOSED_MEMORY, Closed, HubState, InFlight, Load, Outcome, Pause, PauseKey, RunState, State,
    ViewerOut,
};
use crate::now_ms;
use crate::quick_parse::Spans;
use crate::storage::{EventRow, RunRow, Write};

impl HubState {
    /// What must be read from storage before an event of `run_id` is taken in.
    pub fn needs_load(&self, run_id: &str) -> Load {
        load_of(&mut self.lock(), run_id)
    }

    /// Installs the stored seqs of a run (of an earlier start, or a finished one), and the
    /// stored run itself if it is not in memory (it was evicted).
    pub fn install_seqs(&self, run_id: &str, stored: Option<RunRow>, seqs: HashSet<u64>) {
        let mut st = self.lock();
        if let Some(r) = st.runs.get_mut(run_id) {
            if r.seqs.is_none() {
                r.seqs = Some(seqs);
            }
        } else if let Some(row) = stored {
            let (id, mut r) = RunState::from_row(row);
            r.seqs = Some(seqs);
            r.incomplete |= st.gaps_pending.remove(&id);
            r.touched = now_ms();
            st.runs.insert(id, r);
        }
    }

    /// Marks runs whose app announced events of them lost (`lostRuns`): in memory (viewers
    /// are told) and in storage, idempotently (the announcement comes again on a replay).
    /// Runs another identity claimed are left alone (a claim holds for announcements too).
    pub async fn mark_incomplete(&self, conn: u64, run_ids: Vec<String>) {
        let mut marked = Vec::new();
        {
            let mut guard = self.lock();
            let st = &mut *guard;
            let Some(identity) = st.apps.get(&conn).map(|a| a.identity) else {
                return;
            };
            for id in run_ids {
                match st.runs.get_mut(id.as_str()) {
                    Some(run) if run.owner.is_some_and(|o| o != identity) => {
                        self.stats
                            .foreign_run_frames
                            .fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    Some(run) => {
                        if !run.incomplete {
                            run.incomplete = true;
                            st.dirty.insert(id.clone());
                        }
                    }
                    None => {
                        if st.gaps_pending.len() < super::MAX_GAPS_PENDING {
                            st.gaps_pending.insert(id.clone());
                        }
                    }
                }
                marked.push(id);
            }
        }
        for id in marked {
            self.writer.gap(id).await;
        }
    }

    /// Takes in one event of an app: dedupe, run and pause bookkeeping, storage, fan-out.
    /// `body` is the envelope text to store (already shrunk), `spans` where a quickly read
    /// frame holds its node's input / output in it. Returns whether the event was new (not a
    /// duplicate, and its app still connected).
    pub async fn app_event(&self, conn: u64, env: Envelope, body: Arc<str>, spans: &Spans) -> bool {
        let taken = {
            let mut guard = self.lock();
            self.take_in(&mut guard, conn, now_ms(), Box::new(env), body, spans)
        };
        let new = taken.new.is_some();
        self.after_taken(&mut vec![taken]).await;
        new
    }

    /// Takes in an event that needs nothing read from storage and announces no lost runs
    /// (else hands it back untouched): dedupe, run and pause bookkeeping under one round of
    /// the state lock, and what it stores into `pending`, sent to the writer with the rest of
    /// its batch by [`HubState::flush`] (one send per batch, not per event). Counts the events
    /// the app announced dropped, if the event was new.
    pub fn take_in_quick(
        &self,
        conn: u64,
        inc: Incoming,
        pending: &mut Pending,
    ) -> Option<Incoming> {
        let t = {
            let mut guard = self.lock();
            let st = &mut *guard;
            if inc.env.extra.contains_key("lostRuns")
                || load_of(st, &inc.env.run_id) != Load::Nothing
            {
                return Some(inc);
            }
            self.take_in(st, conn, now_ms(), inc.env, inc.body, &inc.spans)
        };
        if t.new.is_some()
            && let Some(n) = inc.dropped
        {
            self.stats.client_dropped.fetch_add(n, Ordering::Relaxed);
        }
        pending.0.push(t);
        None
    }

    /// Queues what the events in `pending` store, with one send to the writer, then tells the
    /// pause feed, the exporter and the subscribed viewers of them, in order.
    pub async fn flush(&self, pending: &mut Pending) {
        if !pending.0.is_empty() {
            self.after_taken(&mut pending.0).await;
        }
    }

    /// What follows taking in events, once the state lock is released: the rows and events
    /// queued for storage (one send), then for each new event in order the pause feed, the
    /// exporter and the viewers subscribed to its run.
    async fn after_taken(&self, taken: &mut Vec<Taken>) {
        let mut writes = Vec::with_capacity(taken.len() + 1);
        for t in taken.iter_mut() {
            writes.extend(
                std::mem::take(&mut t.rows)
                    .into_iter()
                    .map(|r| Write::Run(Box::new(r))),
            );
            if let Some(new) = &t.new {
                writes.push(Write::Event(new.row.clone()));
            }
        }
        self.writer.queue(writes).await;
        for t in taken.drain(..) {
            let Some(new) = t.new else {
                continue;
            };
            let NewEvent {
                row,
                pauses_changed,
                started,
                finished_incomplete,
            } = new;
            if pauses_changed {
                self.pauses_changed();
            }
            let run_id = &*row.run_id;
            // The exporter keeps the events of the runs it saw start (bounded); a run it did
            // not keep whole is read back from storage, where it was queued first.
            if let Some(exporter) = self.otlp.get() {
                if started {
                    exporter.begin(run_id);
                }
                exporter.event(run_id, row.seq, &row.body);
                if let Some(incomplete) = finished_incomplete {
                    exporter.finished(run_id, incomplete);
                }
            }
            // Fan-out after the event is queued for storage: a viewer that subscribes later
            // finds it in the database, one that subscribed earlier gets it here.
            if self.subscribed.load(Ordering::Relaxed) > 0 {
                let mut st = self.lock();
                let mut dead = Vec::new();
                for (id, v) in &st.viewers {
                    if v.sub.as_deref() == Some(run_id)
                        && !v.offer(ViewerOut::Event {
                            run_id: Arc::clone(&row.run_id),
                            seq: row.seq,
                            body: Arc::clone(&row.body),
                        })
                    {
                        dead.push(*id);
                    }
                }
                for id in dead {
                    drop_viewer(&mut st, &self.subscribed, id);
                }
            }
        }
    }

    /// The part of taking in one event done under the state lock: dedupe, run claims, run and
    /// pause bookkeeping. Returns what is left to do once the lock is released.
    fn take_in(
        &self,
        st: &mut State,
        conn: u64,
        now: u64,
        mut env: Box<Envelope>,
        body: Arc<str>,
        spans: &Spans,
    ) -> Taken {
        let run_id = env.run_id.as_str();
        let mut taken = Taken::default();
        let mut pauses_changed = false;
        // The run is new to this hub (created by this event).
        let mut new_run = false;
        // The run finished with this event: whether it has a gap.
        let mut finished_incomplete: Option<bool> = None;
        // Who released a gate, stamped onto the stored `exec.resumed`.
        let mut stamp: Option<Stamp> = None;
        let Some(app) = st.apps.get(&conn) else {
            return taken;
        };
        let identity = app.identity;
        let app_edits = app.edit_input && self.cfg.edit_input;
        // Looked up by `&str` first: the run's id is copied only for a new run.
        if !st.runs.contains_key(run_id) {
            // A run the retention rule deleted does not come back with an app's replay.
            if st.deleted.contains_key(run_id) {
                self.stats
                    .events_for_deleted_runs
                    .fetch_add(1, Ordering::Relaxed);
                return taken;
            }
            let r = RunState {
                id: Arc::from(run_id),
                app: app.app.clone(),
                name: None,
                status: RunStatus::Running,
                started_at: None,
                ended_at: None,
                sdk: None,
                created_at: now,
                event_count: 0,
                error_count: 0,
                incomplete: st.gaps_pending.remove(run_id),
                owner: Some(identity),
                seqs: Some(HashSet::new()),
                nodes: HashMap::new(),
                touched: now,
            };
            taken.rows.push(r.row(run_id));
            st.runs.insert(run_id.to_owned(), r);
            new_run = true;
        }
        let Some(run) = st.runs.get_mut(run_id) else {
            return taken;
        };
        // Claims: a run belongs to the identity that wrote it first (a reconnect keeps its
        // identity by presenting its resumeToken); frames of another identity's run are
        // dropped, whether that identity is connected or not, so no other process can close,
        // move or pre-empt what the run's app reports.
        if run.owner.is_some_and(|o| o != identity) {
            self.stats
                .foreign_run_frames
                .fetch_add(1, Ordering::Relaxed);
            return taken;
        }
        // A run of an earlier start (read from storage) is claimed by its first writer: its
        // app replaying its ring after a hub restart, whose old session token means nothing
        // to this start.
        run.owner = Some(identity);
        run.touched = now;
        if let Some(seqs) = &mut run.seqs
            && !seqs.insert(env.seq)
        {
            self.stats.duplicates.fetch_add(1, Ordering::Relaxed);
            if !run.finished() {
                if run.status == RunStatus::Abandoned {
                    run.status = RunStatus::Running;
                    taken.rows.push(run.row(run_id));
                }
                st.dirty.insert(run_id.to_owned());
            }
            // The replay comes oldest first, so it leaves the nodes as the app last reported
            // them (a hub of a new start knows nothing of them yet).
            if !run.finished() {
                run.track_node(&mut env.message, &body, spans);
            }
            return taken;
        }
        let run_arc = Arc::clone(&run.id);
        self.stats.events_accepted.fetch_add(1, Ordering::Relaxed);
        run.event_count += 1;
        if matches!(env.message, Message::NodeError(_)) {
            run.error_count += 1;
        }
        if run.status == RunStatus::Abandoned {
            run.status = RunStatus::Running;
            taken.rows.push(run.row(run_id));
        }
        if !st.dirty.contains(run_id) {
            st.dirty.insert(run_id.to_owned());
        }
        if matches!(
            env.message,
            Message::NodeStarted(_) | Message::NodeFinished(_) | Message::NodeError(_)
        ) {
            run.track_node(&mut env.message, &body, spans);
        }
        match &env.message {
            Message::RunStarted(p) => {
                run.app = Some(p.app.clone());
                run.sdk = serde_json::to_value(&p.sdk).ok();
                run.name = p
                    .meta
                    .as_ref()
                    .and_then(|m| m.get("name"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                run.started_at = Some(env.ts);
                taken.rows.push(run.row(run_id));
            }
            Message::RunFinished(p) => {
                finished_incomplete = Some(run.incomplete);
                run.status = p.status.into();
                run.ended_at = Some(env.ts);
                run.nodes.clear();
                // A long-lived hub must not keep every seq of every run it ever saw: a
                // finished run forgets them, and loads them from storage again if more of
                // it arrives (a replay).
                run.seqs = None;
                taken.rows.push(run.row(run_id));
                pauses_changed |= remember::run_finished(st, run_id);
                // A finished run holds no gate any more.
                let stale: Vec<PauseKey> = st
                    .pauses
                    .keys()
                    .filter(|(r, _)| r == run_id)
                    .cloned()
                    .collect();
                for k in stale {
                    if let Some(mut pause) = st.pauses.remove(&k) {
                        if let Some(w) = pause.inflight.take().and_then(|f| f.waiter) {
                            let _ = w.send(Outcome::Gone("the run finished".into()));
                        }
                        st.closed.insert(
                            k,
                            Closed {
                                at: Instant::now(),
                                action: None,
                                by: "app",
                            },
                        );
                        pauses_changed = true;
                    }
                }
            }
            Message::ExecPaused(p) => {
                let seen = run.nodes.get(&p.node_id);
                let reason = p.reason.unwrap_or({
                    if p.point == PausePoint::Error {
                        PauseReason::Error
                    } else if st.mode == Mode::Step && p.point != PausePoint::After {
                        PauseReason::Step
                    } else {
                        PauseReason::Breakpoint
                    }
                });
                // A replay's fork point travels as a `breakpoint` hold marked `replayFork`
                // (the reason the reference peers' schema knows): shown as `replay`.
                let reason = match p.extra.get("replayFork") {
                    Some(Value::Bool(true)) if reason == PauseReason::Breakpoint => {
                        PauseReason::Replay
                    }
                    _ => reason,
                };
                let node_kind = seen
                    .and_then(|n| n.kind.map(str::to_owned))
                    .or_else(|| p.node_id.split_once(':').map(|(k, _)| k.to_owned()));
                let node_name = seen
                    .and_then(|n| n.name.clone())
                    .or_else(|| p.node_id.split_once(':').map(|(_, n)| n.to_owned()));
                let key = (run_id.to_owned(), p.pause_id.clone());
                st.closed.remove(&key);
                st.pauses.insert(
                    key,
                    Pause {
                        run_id: run_id.to_owned(),
                        pause_id: p.pause_id.clone(),
                        node_id: p.node_id.clone(),
                        point: p.point,
                        reason,
                        instance_id: p
                            .extra
                            .get("instanceId")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                            .or_else(|| seen.and_then(|n| n.instance_id.clone())),
                        since: now,
                        kind: node_kind,
                        name: node_name,
                        // A client may say what is held in the pause itself (at an
                        // `after` gate the result is not in any earlier event).
                        input: p
                            .extra
                            .get("input")
                            .cloned()
                            .or_else(|| seen.and_then(|n| n.input.as_ref()?.value())),
                        output: p
                            .extra
                            .get("output")
                            .cloned()
                            .or_else(|| seen.and_then(|n| n.output.as_ref()?.value())),
                        error: p
                            .extra
                            .get("error")
                            .cloned()
                            .or_else(|| seen.and_then(|n| n.error.clone())),
                        loop_info: p.extra.get("loop").cloned(),
                        actions: p.extra.get("actions").and_then(action_names),
                        editable: app_edits && said_editable(p),
                        // The gate is held by the app that reported it.
                        identity: Some(identity),
                        inflight: None,
                    },
                );
                let key = (run_id.to_owned(), p.pause_id.clone());
                self.apply_remembered(st, &key, conn);
                pauses_changed = true;
            }
            Message::ExecResumed(p) => {
                let mut credit = Stamp {
                    principal: Principal::Anonymous,
                    operator: None,
                    remembered: false,
                };
                let key = find_pause(&st.pauses, run_id, &p.pause_id, identity);
                if let Some(mut pause) = key.as_ref().and_then(|k| st.pauses.remove(k)) {
                    // The release answers the request in flight unless it names another
                    // one (a late answer to a request that timed out).
                    let echoed = p.request_id.as_deref();
                    let by = match pause
                        .inflight
                        .take()
                        .filter(|f| echoed.is_none_or(|r| r == f.request_id))
                    {
                        Some(f) => {
                            credit = Stamp {
                                principal: f.principal,
                                operator: f.operator,
                                remembered: f.remembered || f.remember.is_some(),
                            };
                            if let Some(w) = f.waiter {
                                let _ = w.send(Outcome::Resumed {
                                    action: p.action.as_str().to_owned(),
                                    principal: f.principal,
                                    edited: edited_after(p),
                                    remembered: credit.remembered,
                                });
                            }
                            if let Some(rule) = f.remember {
                                remember::install(st, rule);
                            }
                            "hub"
                        }
                        None => "app",
                    };
                    prune_closed(&mut st.closed);
                    st.closed.insert(
                        (pause.run_id, pause.pause_id),
                        Closed {
                            at: Instant::now(),
                            action: Some(p.action.as_str().to_owned()),
                            by,
                        },
                    );
                    pauses_changed = true;
                }
                stamp = Some(credit);
            }
            Message::ExecRefused(p) => {
                let key = find_pause(&st.pauses, run_id, &p.pause_id, identity);
                // A refusal that names another request (a late answer to one that timed
                // out) does not answer the one in flight.
                let answers =
                    |f: &InFlight| p.request_id.as_deref().is_none_or(|r| r == f.request_id);
                if let Some(pause) = key.as_ref().and_then(|k| st.pauses.get_mut(k))
                    && pause.inflight.as_ref().is_some_and(answers)
                    && let Some(f) = pause.inflight.take()
                {
                    if let Some(w) = f.waiter {
                        let _ = w.send(Outcome::Refused {
                            code: p.code.as_str().to_owned(),
                            message: p.message.clone(),
                            by_hub: false,
                        });
                    }
                    pauses_changed = true;
                }
            }
            _ => {}
        }
        let body = match (&stamp, &env.message) {
            (Some(stamp), Message::ExecResumed(p)) => stamped(&env, p, stamp),
            _ => body,
        };
        taken.new = Some(NewEvent {
            row: EventRow {
                run_id: run_arc,
                seq: env.seq,
                ts: env.ts,
                kind: stored_kind(&env.message),
                body,
            },
            pauses_changed,
            started: new_run && matches!(env.message, Message::RunStarted(_)),
            finished_incomplete,
        });
        taken
    }
}

/// An app's event, decoded, to take in ([`HubState::take_in_quick`]).
pub struct Incoming {
    /// The envelope to account with (boxed: it is large, and moved until it is taken in).
    pub env: Box<Envelope>,
    /// The text to store (already shrunk).
    pub body: Arc<str>,
    /// Where a quickly read node frame holds its input / output in `body`.
    pub spans: Spans,
    /// The events the app announced lost before it sent this one (`dropped`).
    pub dropped: Option<u64>,
}

/// Events taken in whose storage and fan-out are still to come ([`HubState::flush`]).
#[derive(Default)]
pub struct Pending(Vec<Taken>);

/// What taking in one event leaves to do once the state lock is released.
#[derive(Default)]
struct Taken {
    /// Run summaries to store, before the event.
    rows: Vec<RunRow>,
    /// The event, when it is new (not a duplicate, not refused).
    new: Option<NewEvent>,
}

/// A new event and what follows it.
struct NewEvent {
    /// What is stored.
    row: EventRow,
    /// The pause registry changed.
    pauses_changed: bool,
    /// The event started a run new to this hub (`run.started`).
    started: bool,
    /// The run finished with this event: whether it has a gap.
    finished_incomplete: Option<bool>,
}

/// What must be read from storage before an event of `run_id` is taken in; a run in memory
/// is touched (an event is on its way in: it must not leave memory meanwhile).
fn load_of(st: &mut State, run_id: &str) -> Load {
    match st.runs.get_mut(run_id) {
        Some(r) => {
            if r.settled() {
                r.touched = now_ms();
            }
            if r.seqs.is_none() {
                Load::Seqs
            } else {
                Load::Nothing
            }
        }
        // A deleted run's events are dropped: nothing to read.
        None if st.deleted.contains_key(run_id) => Load::Nothing,
        None if st.evicted => Load::Run,
        None => Load::Nothing,
    }
}

/// The stored type of an event; the types most traffic is made of are not copied.
fn stored_kind(m: &Message) -> Cow<'static, str> {
    match m {
        Message::NodeStarted(_) => Cow::Borrowed("node.started"),
        Message::NodeFinished(_) => Cow::Borrowed("node.finished"),
        Message::NodeToken(_) => Cow::Borrowed("node.token"),
        other => Cow::Owned(other.type_name().to_owned()),
    }
}

/// Who a release is credited to.
struct Stamp {
    principal: Principal,
    operator: Option<String>,
    remembered: bool,
}

/// The fields of `exec.resumed` only the hub writes.
const HUB_STAMPED: [&str; 3] = ["principal", "operator", "remembered"];

/// The stored text of an `exec.resumed`: whatever the app wrote into the hub's fields is
/// dropped, and the hub's own are written (`remembered` only when true).
fn stamped(env: &Envelope, p: &ExecResumed, stamp: &Stamp) -> Arc<str> {
    let mut p = p.clone();
    for k in HUB_STAMPED {
        p.extra.remove(k);
    }
    p.extra
        .insert("principal".into(), stamp.principal.as_str().into());
    p.extra.insert(
        "operator".into(),
        stamp.operator.clone().map_or(Value::Null, Value::String),
    );
    if stamp.remembered {
        p.extra.insert("remembered".into(), Value::Bool(true));
    }
    let env = Envelope {
        message: Message::ExecResumed(p),
        ..env.clone()
    };
    Arc::from(env.to_json())
}

/// Whether a gate said its input may be replaced (`editable: true`).
fn said_editable(p: &ExecPaused) -> bool {
    p.editable
}

/// The input an edited call ran with (`edited.after`).
fn edited_after(p: &ExecResumed) -> Option<Value> {
    p.edited.as_ref().and_then(|e| e.after.clone())
}

fn find_pause(
    pauses: &HashMap<PauseKey, Pause>,
    run_id: &str,
    pause_id: &str,
    identity: u64,
) -> Option<PauseKey> {
    let key = (run_id.to_owned(), pause_id.to_owned());
    if pauses.contains_key(&key) {
        return Some(key);
    }
    // Some clients report exec.resumed outside the run's id; pause ids are unique per app.
    pauses
        .iter()
        .find(|(_, p)| p.pause_id == pause_id && p.identity == Some(identity))
        .map(|(k, _)| k.clone())
}

fn prune_closed(closed: &mut HashMap<PauseKey, Closed>) {
    if closed.len() > 1024 {
        closed.retain(|_, c| c.at.elapsed() < CLOSED_MEMORY);
    }
}

/// The `actions` a client announced on `exec.paused`, kept only when it is a list of known
/// action names (anything else is as if it said nothing).
fn action_names(v: &Value) -> Option<Value> {
    const KNOWN: [&str; 5] = ["continue", "retry", "inject", "abort", "reject"];
    let items = v.as_array()?;
    items
        .iter()
        .all(|a| a.as_str().is_some_and(|a| KNOWN.contains(&a)))
        .then(|| v.clone())
}
