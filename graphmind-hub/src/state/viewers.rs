//! Viewer connections: their subscriptions, broadcasts to all of them and `removed` frames.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::mpsc;

use graphmind_protocol::feed::FeedFrame;

use super::views::{debug_state, pause_infos, run_summaries, run_summary};
use super::{HELLO_RUNS, HubState, REMOVED_BATCH, State, ViewerConn, ViewerOut, ViewerQueue};
use crate::storage::RunRow;

impl HubState {
    /// Registers a viewer and builds its `hello` frame, atomically with respect to updates.
    /// `stored`: the newest stored runs, read before when runs were evicted from memory.
    /// `queue` accounts for what `tx` holds.
    pub fn viewer_connected(
        &self,
        tx: mpsc::Sender<ViewerOut>,
        queue: Arc<ViewerQueue>,
        stored: &[RunRow],
    ) -> (u64, String) {
        let id = self.next_id();
        let mut st = self.lock();
        let hello = FeedFrame::Hello {
            version: self.cfg.version.to_owned(),
            debug: debug_state(&st),
            runs: run_summaries(&st, HELLO_RUNS, stored),
            pauses: pause_infos(&st, None),
            remembered: st.remembered.clone(),
        };
        st.viewers.insert(
            id,
            ViewerConn {
                tx,
                queue,
                sub: None,
            },
        );
        (id, hello.to_text())
    }

    /// Sets (or clears) a viewer's subscription.
    pub fn viewer_subscribe(&self, id: u64, run: Option<Arc<str>>) {
        let mut st = self.lock();
        if let Some(v) = st.viewers.get_mut(&id) {
            match (&v.sub, &run) {
                (None, Some(_)) => {
                    self.subscribed.fetch_add(1, Ordering::Relaxed);
                }
                (Some(_), None) => {
                    self.subscribed.fetch_sub(1, Ordering::Relaxed);
                }
                _ => {}
            }
            v.sub = run;
        }
    }

    /// Forgets a viewer.
    pub fn viewer_disconnected(&self, id: u64) {
        let mut st = self.lock();
        drop_viewer(&mut st, &self.subscribed, id);
    }

    /// Sends `run` frames for runs changed since the last call (called on a short tick so a
    /// flood of events becomes a few updates).
    pub fn flush_dirty_runs(&self) {
        let mut st = self.lock();
        if st.dirty.is_empty() {
            return;
        }
        let dirty = std::mem::take(&mut st.dirty);
        if st.viewers.is_empty() {
            return;
        }
        for id in dirty {
            if let Some(r) = st.runs.get(&id) {
                let frame = FeedFrame::Run {
                    run: run_summary(&st, &id, r),
                };
                broadcast(&st, &Arc::from(frame.to_text()));
            }
        }
    }
}

pub(super) fn drop_viewer(st: &mut State, subscribed: &AtomicUsize, id: u64) {
    if let Some(v) = st.viewers.remove(&id) {
        // Its connection may be stuck sending to a socket nobody reads: the signal ends it.
        v.queue.shut();
        if v.sub.is_some() {
            subscribed.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

pub(super) fn broadcast(st: &State, frame: &Arc<str>) {
    for v in st.viewers.values() {
        // A viewer with no room is closed by `offer`; its connection then forgets it.
        v.offer(ViewerOut::Frame(Arc::clone(frame)));
    }
}

/// Sends `removed` frames naming `removed` to every viewer, ends the subscriptions to those
/// runs, and drops the viewers that cannot take a frame.
pub(super) fn announce_removed(st: &mut State, subscribed: &AtomicUsize, removed: &[String]) {
    if st.viewers.is_empty() {
        return;
    }
    let gone: HashSet<&str> = removed.iter().map(String::as_str).collect();
    let batches: Vec<ViewerOut> = removed
        .chunks(REMOVED_BATCH)
        .map(|ids| ViewerOut::Removed {
            frame: Arc::from(
                FeedFrame::Removed {
                    run_ids: ids.to_vec(),
                }
                .to_text(),
            ),
            runs: Arc::new(ids.iter().cloned().collect()),
        })
        .collect();
    let mut dead = Vec::new();
    for (id, v) in &mut st.viewers {
        if v.sub.as_deref().is_some_and(|s| gone.contains(s)) {
            v.sub = None;
            subscribed.fetch_sub(1, Ordering::Relaxed);
        }
        if !batches.iter().all(|b| v.offer(b.clone())) {
            dead.push(*id);
        }
    }
    for id in dead {
        drop_viewer(st, subscribed, id);
    }
}
