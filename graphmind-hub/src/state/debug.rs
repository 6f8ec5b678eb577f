//! The debug state: breakpoints and mode, pushed to apps and viewers when they change.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use graphmind_protocol::{
    BreakpointChange, BreakpointMatcher, Extra, Message, Mode, ModeSet, RUN_ANY,
};
use serde_json::Value;

use super::viewers::broadcast;
use graphmind_protocol::feed::FeedFrame;

use super::views::{debug_json, debug_state};
use super::{AppOut, HubState, MAX_BREAKPOINTS, State};

impl HubState {
    /// The debug state as JSON.
    pub fn debug_json(&self) -> Value {
        let st = self.lock();
        debug_json(&st)
    }

    fn push_debug(&self, st: &State, frames: &[String]) {
        for app in st.apps.values() {
            for f in frames {
                let _ = app.tx.send(AppOut::Text(f.clone()));
            }
        }
        let feed = FeedFrame::Debug(debug_state(st));
        broadcast(st, &Arc::from(feed.to_text()));
    }

    /// Adds a breakpoint unless an equal one exists. Refused (with the reason) when the hub
    /// holds [`MAX_BREAKPOINTS`] already: every app copies and matches the whole list.
    pub fn set_breakpoint(&self, m: BreakpointMatcher) -> Result<Value, String> {
        let m = BreakpointMatcher {
            extra: Extra::new(),
            ..m
        };
        let mut st = self.lock();
        // An absent point is `before`: the same breakpoint however it is spelled.
        if !st.breakpoints.iter().any(|b| b.same_gates(&m)) {
            if st.breakpoints.len() >= MAX_BREAKPOINTS {
                self.stats
                    .breakpoints_refused
                    .fetch_add(1, Ordering::Relaxed);
                return Err(too_many());
            }
            st.breakpoints.push(m.clone());
            let f = self.frame(
                RUN_ANY,
                Message::BreakpointSet(BreakpointChange {
                    matcher: m,
                    extra: Extra::new(),
                }),
            );
            self.push_debug(&st, &[f]);
        }
        Ok(debug_json(&st))
    }

    /// Removes the breakpoints that hold the same gates as `m` (an absent point is
    /// `before`), or all of them. Apps are told with each removed matcher as it was stored.
    pub fn clear_breakpoints(&self, m: Option<BreakpointMatcher>) -> Value {
        let mut st = self.lock();
        let (gone, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut st.breakpoints)
            .into_iter()
            .partition(|b| m.as_ref().is_none_or(|m| b.same_gates(m)));
        st.breakpoints = keep;
        let mut frames = Vec::new();
        let mut sent: Vec<BreakpointMatcher> = Vec::new();
        for g in gone {
            if !sent.iter().any(|s| s.same_rule(&g)) {
                frames.push(self.frame(
                    RUN_ANY,
                    Message::BreakpointClear(BreakpointChange {
                        matcher: g.clone(),
                        extra: Extra::new(),
                    }),
                ));
                sent.push(g);
            }
        }
        if !frames.is_empty() {
            self.push_debug(&st, &frames);
        }
        debug_json(&st)
    }

    /// Switches the mode.
    pub fn set_mode(&self, mode: Mode) -> Value {
        let mut st = self.lock();
        if st.mode != mode {
            st.mode = mode;
            let f = self.frame(
                RUN_ANY,
                Message::ModeSet(ModeSet {
                    mode,
                    extra: Extra::new(),
                }),
            );
            self.push_debug(&st, &[f]);
        }
        debug_json(&st)
    }

    /// Replaces the breakpoints (when given) and the mode (when given). Refused, changing
    /// nothing, when the list holds more than [`MAX_BREAKPOINTS`] distinct matchers.
    pub fn replace_debug(
        &self,
        bps: Option<Vec<BreakpointMatcher>>,
        mode: Option<Mode>,
    ) -> Result<Value, String> {
        if let Some(bps) = &bps {
            let mut distinct: Vec<&BreakpointMatcher> = Vec::new();
            for b in bps {
                if !distinct.iter().any(|d| d.same_rule(b)) {
                    distinct.push(b);
                    if distinct.len() > MAX_BREAKPOINTS {
                        self.stats
                            .breakpoints_refused
                            .fetch_add(1, Ordering::Relaxed);
                        return Err(too_many());
                    }
                }
            }
        }
        if let Some(bps) = bps {
            let current: Vec<BreakpointMatcher> = self.lock().breakpoints.clone();
            for c in current
                .iter()
                .filter(|c| !bps.iter().any(|b| b.same_rule(c)))
            {
                self.clear_breakpoints(Some(c.clone()));
            }
            for b in bps {
                // Within the cap (checked above): the old ones not kept were cleared first.
                let _ = self.set_breakpoint(b);
            }
        }
        if let Some(m) = mode {
            self.set_mode(m);
        }
        Ok(self.debug_json())
    }
}

fn too_many() -> String {
    format!(
        "the hub holds at most {MAX_BREAKPOINTS} breakpoints; clear some (or use a broader \
         matcher) first"
    )
}
