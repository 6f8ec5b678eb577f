//! The debug state: breakpoints and mode, pushed to apps and viewers when they change.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use graphmind_protocol::{
    BreakpointChange, BreakpointMatcher, Extra, Message, Mode, ModeSet, RUN_ANY,
};
use serde_json::Value;

use super::viewers::broadcast;
use graphmind_protocol::feed::FeedFrame;

use super::breakpoint_bounds::{Refusal, check_list, check_matcher, check_total};
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
    /// holds [`MAX_BREAKPOINTS`] already, or when the matcher or the list would be over its
    /// byte limit ([`super::breakpoint_bounds`]): every app copies and matches the whole list.
    pub fn set_breakpoint(&self, m: BreakpointMatcher) -> Result<Value, Refusal> {
        let m = BreakpointMatcher {
            extra: Extra::new(),
            ..m
        };
        let len = check_matcher(&m).inspect_err(|_| self.refused())?;
        let mut st = self.lock();
        // An absent point is `before`: the same breakpoint however it is spelled.
        if !st.breakpoints.iter().any(|b| b.same_gates(&m)) {
            if st.breakpoints.len() >= MAX_BREAKPOINTS {
                self.refused();
                return Err(Refusal::TooMany);
            }
            check_total(&st.breakpoints, &[len]).inspect_err(|_| self.refused())?;
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

    /// Counts a refused breakpoint (`breakpointsRefused`).
    fn refused(&self) {
        self.stats
            .breakpoints_refused
            .fetch_add(1, Ordering::Relaxed);
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
    /// nothing, when the list holds more than [`MAX_BREAKPOINTS`] distinct matchers or is
    /// over a byte limit ([`super::breakpoint_bounds`]).
    pub fn replace_debug(
        &self,
        bps: Option<Vec<BreakpointMatcher>>,
        mode: Option<Mode>,
    ) -> Result<Value, Refusal> {
        if let Some(bps) = &bps {
            let mut distinct: Vec<&BreakpointMatcher> = Vec::new();
            for b in bps {
                if !distinct.iter().any(|d| d.same_rule(b)) {
                    distinct.push(b);
                    if distinct.len() > MAX_BREAKPOINTS {
                        break;
                    }
                }
            }
            // Stored without their unknown fields, as `set_breakpoint` keeps them.
            let bare: Vec<BreakpointMatcher> = distinct
                .iter()
                .map(|b| BreakpointMatcher {
                    extra: Extra::new(),
                    ..(*b).clone()
                })
                .collect();
            check_list(&bare.iter().collect::<Vec<_>>()).inspect_err(|_| self.refused())?;
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
                // Within the bounds (checked above): the old ones not kept were cleared first.
                let _ = self.set_breakpoint(b);
            }
        }
        if let Some(m) = mode {
            self.set_mode(m);
        }
        Ok(self.debug_json())
    }
}
