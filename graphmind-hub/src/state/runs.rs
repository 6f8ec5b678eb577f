//! Runs: what the hub keeps of each, reads of runs (memory, else storage), eviction from
//! memory and retention bookkeeping.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use graphmind_protocol::Message;
use graphmind_protocol::feed::RunStatus;
use serde_json::Value;

use super::viewers::announce_removed;
use super::views::{run_summaries, run_summary, to_json};
use super::{EVICT_IDLE_MS, Held, HubState, NodeSeen, RunState, State};
use crate::now_ms;
use crate::quick_parse::Spans;
use crate::storage::{RunRow, TOMBSTONE_MAX, TOMBSTONE_MAX_AGE_MS};

impl RunState {
    /// A run as stored (no owner, seqs not loaded).
    pub(super) fn from_row(r: RunRow) -> (String, Self) {
        let sdk = r.sdk.as_deref().and_then(|s| serde_json::from_str(s).ok());
        (
            r.run_id.clone(),
            Self {
                id: Arc::from(r.run_id),
                app: r.app,
                name: r.name,
                // The hub writes every stored status; an unknown one reads as running.
                status: RunStatus::from_str(&r.status).unwrap_or(RunStatus::Running),
                started_at: r.started_at,
                ended_at: r.ended_at,
                sdk,
                created_at: r.created_at,
                event_count: r.event_count,
                error_count: r.error_count,
                incomplete: r.incomplete,
                owner: None,
                seqs: None,
                nodes: HashMap::new(),
                touched: 0,
            },
        )
    }

    /// The sort key of run lists (newest first): start, else first sight.
    pub(super) fn start_key(&self) -> u64 {
        self.started_at.unwrap_or(self.created_at)
    }

    /// Keeps what a pause of a node shows: the latest execution's input, output and error.
    /// Takes the strings it keeps out of `message`; `body` is the frame's stored text and
    /// `spans` where a quickly read frame holds its `input` / `output` in it.
    pub(super) fn track_node(&mut self, message: &mut Message, body: &Arc<str>, spans: &Spans) {
        let held = |v: &mut Option<Value>, span: &Option<Range<usize>>| match span {
            Some(span) => Some(Held::Span(Arc::clone(body), span.clone())),
            None => v.take().map(Held::Value),
        };
        match message {
            Message::NodeStarted(p) => {
                let seen = NodeSeen {
                    kind: Some(p.kind.as_str()),
                    name: Some(std::mem::take(&mut p.name)),
                    instance_id: Some(std::mem::take(&mut p.instance_id)),
                    input: held(&mut p.input, &spans.input),
                    output: None,
                    error: None,
                };
                // The node's id is copied only for a node new to the run.
                match self.nodes.get_mut(p.node_id.as_str()) {
                    Some(n) => *n = seen,
                    None => {
                        self.nodes.insert(std::mem::take(&mut p.node_id), seen);
                    }
                }
            }
            Message::NodeFinished(p) => {
                let output = held(&mut p.output, &spans.output);
                match self.nodes.get_mut(p.node_id.as_str()) {
                    Some(n) => n.output = output,
                    None => {
                        self.nodes.insert(
                            std::mem::take(&mut p.node_id),
                            NodeSeen {
                                output,
                                ..NodeSeen::default()
                            },
                        );
                    }
                }
            }
            Message::NodeError(p) => {
                let n = self.nodes.entry(p.node_id.clone()).or_default();
                n.error = serde_json::to_value(&p.error).ok();
            }
            _ => {}
        }
    }

    pub(super) fn finished(&self) -> bool {
        matches!(
            self.status,
            RunStatus::Ok | RunStatus::Error | RunStatus::Aborted
        )
    }

    /// Finished or abandoned: counted against the memory cap.
    pub(super) fn settled(&self) -> bool {
        self.finished() || self.status == RunStatus::Abandoned
    }

    pub(super) fn row(&self, run_id: &str) -> RunRow {
        RunRow {
            run_id: run_id.to_owned(),
            app: self.app.clone(),
            name: self.name.clone(),
            status: self.status.as_str().to_owned(),
            started_at: self.started_at,
            ended_at: self.ended_at,
            sdk: self.sdk.as_ref().map(Value::to_string),
            created_at: self.created_at,
            event_count: self.event_count,
            incomplete: self.incomplete,
            error_count: self.error_count,
        }
    }
}

impl HubState {
    /// Whether runs were evicted from memory since start: then lists and reads of runs must
    /// look in storage too.
    pub fn evicted_any(&self) -> bool {
        self.lock().evicted
    }

    /// Runs, newest first: those in memory, merged with `stored` (the newest stored runs, read
    /// when runs were evicted from memory; memory wins for a run in both).
    pub fn runs(&self, limit: usize, stored: &[RunRow]) -> Vec<Value> {
        run_summaries(&self.lock(), limit, stored)
            .iter()
            .map(to_json)
            .collect()
    }

    /// One run's summary, if it is in memory.
    pub fn run(&self, run_id: &str) -> Option<Value> {
        let st = self.lock();
        st.runs
            .get(run_id)
            .map(|r| to_json(&run_summary(&st, run_id, r)))
    }

    /// One run's summary, from memory or else from storage (an evicted run).
    pub async fn run_anywhere(&self, run_id: &str) -> Result<Option<Value>, String> {
        if let Some(r) = self.run(run_id) {
            return Ok(Some(r));
        }
        let reader = Arc::clone(&self.reader);
        let rid = run_id.to_owned();
        let row = tokio::task::spawn_blocking(move || reader.run(&rid))
            .await
            .map_err(|e| e.to_string())??;
        // It may have come back into memory meanwhile: memory is newer.
        if let Some(r) = self.run(run_id) {
            return Ok(Some(r));
        }
        Ok(row.map(|row| {
            let (id, r) = RunState::from_row(row);
            to_json(&run_summary(&self.lock(), &id, &r))
        }))
    }

    /// The newest `limit` stored runs when runs were evicted from memory (else none: memory
    /// holds every stored run).
    pub async fn stored_runs(&self, limit: usize) -> Result<Vec<RunRow>, String> {
        if !self.evicted_any() {
            return Ok(Vec::new());
        }
        let reader = Arc::clone(&self.reader);
        tokio::task::spawn_blocking(move || reader.runs(limit))
            .await
            .map_err(|e| e.to_string())?
    }

    /// Finished (or abandoned) runs beyond the memory cap that may leave memory, oldest first:
    /// not touched in the last second and holding no pause. Evict them with
    /// [`HubState::evict`] once the writer committed everything queued before.
    pub fn eviction_candidates(&self) -> Vec<String> {
        let st = self.lock();
        let cap = self.cfg.memory_runs;
        if st.runs.len() <= cap {
            return Vec::new();
        }
        let settled = st.runs.values().filter(|r| r.settled()).count();
        if settled <= cap {
            return Vec::new();
        }
        let paused = paused_runs(&st);
        let now = now_ms();
        let mut c: Vec<(u64, &String)> = st
            .runs
            .iter()
            .filter(|(id, r)| evictable(&st, id, r, &paused, now))
            .map(|(id, r)| (r.start_key(), id))
            .collect();
        c.sort_unstable();
        c.truncate(settled - cap);
        c.into_iter().map(|(_, id)| id.clone()).collect()
    }

    /// Drops the given runs from memory, those still evictable. Returns how many left.
    pub fn evict(&self, ids: &[String]) -> usize {
        let mut guard = self.lock();
        let st = &mut *guard;
        let paused: HashSet<String> = paused_runs(st).into_iter().map(str::to_owned).collect();
        let paused: HashSet<&str> = paused.iter().map(String::as_str).collect();
        let now = now_ms();
        let mut n = 0;
        for id in ids {
            let Some(r) = st.runs.get(id) else { continue };
            if !evictable(st, id, r, &paused, now) {
                continue;
            }
            st.runs.remove(id);
            st.dirty.remove(id);
            n += 1;
        }
        if n > 0 {
            st.evicted = true;
            self.stats
                .runs_evicted
                .fetch_add(n as u64, Ordering::Relaxed);
        }
        n
    }

    /// The runs a retention pass must not delete: those still running or holding a pause.
    pub fn retention_protect(&self) -> HashSet<String> {
        let st = self.lock();
        let paused = paused_runs(&st);
        st.runs
            .iter()
            .filter(|(id, r)| r.status == RunStatus::Running || paused.contains(id.as_str()))
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Drops runs the retention pass that started at `since` (epoch ms) deleted from memory,
    /// and remembers them as deleted (their events are dropped on intake from now on).
    /// A run that became active again meanwhile stays; its returned row is to be stored again
    /// ([`Writer::revive`](crate::storage::Writer::revive)).
    /// The others are announced to every viewer in `removed` frames (at most
    /// [`REMOVED_BATCH`](super::REMOVED_BATCH) ids each); a viewer subscribed to one of them is unsubscribed, and a
    /// viewer whose queue has no room for the frame is dropped (it reconnects, and its new
    /// `hello` no longer lists them).
    pub fn forget_deleted(&self, ids: &[String], since: u64) -> Vec<RunRow> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let paused: HashSet<String> = paused_runs(st).into_iter().map(str::to_owned).collect();
        let mut rows = Vec::new();
        let mut removed = Vec::with_capacity(ids.len());
        for id in ids {
            match st.runs.get(id) {
                Some(r)
                    if r.status == RunStatus::Running
                        || paused.contains(id)
                        || r.touched >= since =>
                {
                    rows.push(r.row(id));
                }
                Some(_) => {
                    st.runs.remove(id);
                    st.dirty.remove(id);
                    removed.push(id.clone());
                }
                // Evicted from memory earlier: only storage had it.
                None => removed.push(id.clone()),
            }
        }
        let now = now_ms();
        for id in &removed {
            st.deleted.insert(id.clone(), now);
        }
        prune_tombstones(&mut st.deleted, now);
        if !removed.is_empty() {
            announce_removed(st, &self.subscribed, &removed);
        }
        self.stats
            .runs_deleted
            .fetch_add(ids.len() as u64, Ordering::Relaxed);
        rows
    }
}

/// Forgets deleted run ids as storage does: those older than [`TOMBSTONE_MAX_AGE_MS`], and all
/// but the newest [`TOMBSTONE_MAX`].
fn prune_tombstones(deleted: &mut HashMap<String, u64>, now: u64) {
    let cutoff = now.saturating_sub(TOMBSTONE_MAX_AGE_MS);
    deleted.retain(|_, at| *at >= cutoff);
    if deleted.len() > TOMBSTONE_MAX {
        let excess = deleted.len() - TOMBSTONE_MAX;
        let mut ats: Vec<u64> = deleted.values().copied().collect();
        let (_, &mut limit, _) = ats.select_nth_unstable(excess - 1);
        // Every id deleted before `limit` goes, then as many deleted at `limit` as make up the
        // excess.
        let older = deleted.values().filter(|at| **at < limit).count();
        let mut at_limit = excess - older;
        deleted.retain(|_, at| {
            if *at < limit {
                return false;
            }
            if *at == limit && at_limit > 0 {
                at_limit -= 1;
                return false;
            }
            true
        });
    }
}

/// Runs that hold an open pause.
fn paused_runs(st: &State) -> HashSet<&str> {
    st.pauses.keys().map(|(r, _)| r.as_str()).collect()
}

/// Whether a run may leave memory: finished or abandoned, idle for a second, no pause held,
/// no app reporting it.
fn evictable(st: &State, id: &str, r: &RunState, paused: &HashSet<&str>, now: u64) -> bool {
    r.settled()
        && r.touched.saturating_add(EVICT_IDLE_MS) <= now
        && !paused.contains(id)
        && (r.finished() || !r.owner.is_some_and(|o| st.live.contains_key(&o)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tombstones_older_than_the_age_limit_go() {
        let now = 100 * 86_400_000;
        let mut d: HashMap<String, u64> = HashMap::from([
            ("old".into(), now - TOMBSTONE_MAX_AGE_MS - 1),
            ("edge".into(), now - TOMBSTONE_MAX_AGE_MS),
            ("new".into(), now),
        ]);
        prune_tombstones(&mut d, now);
        let mut left: Vec<&str> = d.keys().map(String::as_str).collect();
        left.sort_unstable();
        assert_eq!(left, ["edge", "new"]);
    }

    #[test]
    fn beyond_the_cap_the_oldest_tombstones_go_ties_included() {
        let now = 100 * 86_400_000;
        // Two deleted first, three tied next, the rest later: the cap is exceeded by four.
        let mut d: HashMap<String, u64> = (0..TOMBSTONE_MAX - 1)
            .map(|i| (format!("late_{i}"), now))
            .collect();
        d.insert("first_a".into(), now - 10);
        d.insert("first_b".into(), now - 10);
        for t in ["tie_a", "tie_b", "tie_c"] {
            d.insert(t.into(), now - 5);
        }
        assert_eq!(d.len(), TOMBSTONE_MAX + 4);
        prune_tombstones(&mut d, now);
        assert_eq!(d.len(), TOMBSTONE_MAX);
        assert!(!d.contains_key("first_a") && !d.contains_key("first_b"));
        let ties = ["tie_a", "tie_b", "tie_c"]
            .iter()
            .filter(|t| d.contains_key(**t))
            .count();
        assert_eq!(ties, 1, "two of the three tied ones go");
        assert_eq!(
            d.values().filter(|at| **at == now).count(),
            TOMBSTONE_MAX - 1
        );
    }
}
