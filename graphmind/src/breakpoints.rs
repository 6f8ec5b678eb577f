//! The armed breakpoints, indexed so that setting or clearing one and deciding a gate each
//! cost O(1) whatever the number armed (a debugger may send thousands of `breakpoint.set`).
//!
//! A rule is the matcher's `(kind, name, point)` (`breakpoint.clear` semantics). Each rule is
//! one bit: its `(kind, point)` combination, in a mask kept per name (and one mask for rules
//! without a name). A gate builds the mask of the combinations that would hold it (2 to 4
//! bits) and tests it against the mask of its name and the unnamed one.

use std::collections::{BTreeMap, HashMap};

use graphmind_protocol::{BreakpointMatcher, Mode, NodeKind, PausePoint};

/// Breakpoints as set by the debugger, in the order they were set.
#[derive(Debug, Default, Clone)]
pub(crate) struct Breakpoints {
    /// Every matcher (unknown fields kept), by the order it was set in.
    ordered: BTreeMap<u64, BreakpointMatcher>,
    /// Where each rule sits in `ordered`.
    by_rule: HashMap<(Option<String>, u8), u64>,
    /// Combination bits of the rules with a name, by name.
    named: HashMap<String, u64>,
    /// Combination bits of the rules without a name.
    unnamed: u64,
    next: u64,
}

/// The bit index of a `(kind, point)` combination (10 kinds with "any" × 4 points with
/// "absent" = 40 bits).
fn combo(kind: Option<NodeKind>, point: Option<PausePoint>) -> u8 {
    let k = match kind {
        None => 0,
        Some(NodeKind::Agent) => 1,
        Some(NodeKind::Llm) => 2,
        Some(NodeKind::Tool) => 3,
        Some(NodeKind::Chain) => 4,
        Some(NodeKind::Retriever) => 5,
        Some(NodeKind::Server) => 6,
        Some(NodeKind::Resource) => 7,
        Some(NodeKind::Prompt) => 8,
        Some(NodeKind::Custom) => 9,
    };
    let p = match point {
        None => 0,
        Some(PausePoint::Before) => 1,
        Some(PausePoint::After) => 2,
        Some(PausePoint::Error) => 3,
    };
    k * 4 + p
}

impl Breakpoints {
    /// A set holding `matchers` (later duplicates of a rule ignored, as `breakpoint.set`).
    pub(crate) fn from_list(matchers: Vec<BreakpointMatcher>) -> Self {
        let mut set = Self::default();
        for m in matchers {
            set.set(m);
        }
        set
    }

    /// Arms `matcher` unless its rule is armed already.
    pub(crate) fn set(&mut self, matcher: BreakpointMatcher) {
        let bit = combo(matcher.kind, matcher.point);
        let key = (matcher.name.clone(), bit);
        if self.by_rule.contains_key(&key) {
            return;
        }
        match &matcher.name {
            Some(name) => *self.named.entry(name.clone()).or_default() |= 1 << bit,
            None => self.unnamed |= 1 << bit,
        }
        self.by_rule.insert(key, self.next);
        self.ordered.insert(self.next, matcher);
        self.next += 1;
    }

    /// Disarms the rule of `matcher`, if armed.
    pub(crate) fn clear(&mut self, matcher: &BreakpointMatcher) {
        let bit = combo(matcher.kind, matcher.point);
        let Some(at) = self.by_rule.remove(&(matcher.name.clone(), bit)) else {
            return;
        };
        self.ordered.remove(&at);
        match &matcher.name {
            Some(name) => {
                if let Some(mask) = self.named.get_mut(name.as_str()) {
                    *mask &= !(1 << bit);
                    if *mask == 0 {
                        self.named.remove(name.as_str());
                    }
                }
            }
            None => self.unnamed &= !(1 << bit),
        }
    }

    /// Whether an armed matcher holds a gate at `point` of a node of `kind` named `name`
    /// (the same decision as [`BreakpointMatcher::matches`] over the list).
    pub(crate) fn matches(&self, kind: NodeKind, name: &str, point: PausePoint) -> bool {
        if self.by_rule.is_empty() {
            return false;
        }
        let mut want = 0u64;
        for k in [None, Some(kind)] {
            want |= 1 << combo(k, Some(point));
            if point == PausePoint::Before {
                // An absent point means `before`.
                want |= 1 << combo(k, None);
            }
        }
        self.unnamed & want != 0 || self.named.get(name).is_some_and(|m| m & want != 0)
    }

    /// The armed matchers, in the order they were set.
    pub(crate) fn to_vec(&self) -> Vec<BreakpointMatcher> {
        self.ordered.values().cloned().collect()
    }

    /// How many are armed.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_rule.len()
    }

    /// Whether none is armed.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_rule.is_empty()
    }
}

/// Breakpoints and mode as last set by the debugger (`hello.ack`, `breakpoint.*`, `mode.set`).
/// Changed in place under the session's write lock: a change costs O(1), not a copy.
#[derive(Debug, Clone)]
pub(crate) struct DebugState {
    /// Armed matchers, indexed.
    pub(crate) breakpoints: Breakpoints,
    /// `run` or `step`.
    pub(crate) mode: Mode,
}

impl Default for DebugState {
    fn default() -> Self {
        Self {
            breakpoints: Breakpoints::default(),
            mode: Mode::Run,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(
        kind: Option<NodeKind>,
        name: Option<&str>,
        point: Option<PausePoint>,
    ) -> BreakpointMatcher {
        BreakpointMatcher {
            kind,
            name: name.map(str::to_owned),
            point,
            ..BreakpointMatcher::default()
        }
    }

    /// Every rule shape against every gate: the index decides as the list scan does.
    #[test]
    fn index_decides_like_a_scan_of_the_list() {
        let kinds = [None, Some(NodeKind::Tool), Some(NodeKind::Llm)];
        let names = [None, Some("a"), Some("b")];
        let points = [
            None,
            Some(PausePoint::Before),
            Some(PausePoint::After),
            Some(PausePoint::Error),
        ];
        let mut rules = Vec::new();
        for k in kinds {
            for n in names {
                for p in points {
                    rules.push(m(k, n, p));
                }
            }
        }
        // Every single rule, then growing prefixes with one rule cleared again.
        for (i, rule) in rules.iter().enumerate() {
            for armed in [vec![rule.clone()], rules[..=i].to_vec()] {
                let mut set = Breakpoints::from_list(armed.clone());
                let mut list = armed.clone();
                if armed.len() > 2 {
                    set.clear(&armed[armed.len() / 2]);
                    list.remove(armed.len() / 2);
                }
                for kind in [NodeKind::Tool, NodeKind::Llm, NodeKind::Agent] {
                    for name in ["a", "b", "c"] {
                        for point in [PausePoint::Before, PausePoint::After, PausePoint::Error] {
                            assert_eq!(
                                set.matches(kind, name, point),
                                list.iter().any(|r| r.matches(kind, name, point)),
                                "{kind} {name} {point} with {list:?}"
                            );
                        }
                    }
                }
                assert_eq!(set.to_vec(), list);
            }
        }
    }

    #[test]
    fn a_rule_is_armed_once_and_cleared_by_its_rule() {
        let mut set = Breakpoints::default();
        set.set(m(None, Some("a"), None));
        set.set(m(None, Some("a"), None));
        set.set(m(None, Some("a"), Some(PausePoint::Before)));
        assert_eq!(
            set.len(),
            2,
            "absent and `before` points are different rules"
        );
        set.clear(&m(None, Some("a"), Some(PausePoint::Before)));
        assert!(set.matches(NodeKind::Tool, "a", PausePoint::Before));
        set.clear(&m(None, Some("a"), None));
        assert!(!set.matches(NodeKind::Tool, "a", PausePoint::Before));
        assert_eq!(set.len(), 0);
        assert!(
            set.named.is_empty(),
            "no mask kept for a name without rules"
        );
    }
}
