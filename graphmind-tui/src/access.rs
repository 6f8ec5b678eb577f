//! What the hub lets the agent token do (its `--allow-control` level), and what a held gate
//! accepts: each hold action is available or unavailable with a reason.

use graphmind_protocol::PausePoint;
use graphmind_protocol::feed::PauseInfo;

/// One choice of the hold overlay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Let the call go on.
    Continue,
    /// Turn step mode on, then continue.
    Step,
    /// Run the call again.
    Retry,
    /// Return a value instead of running (or instead of what it returned).
    Inject,
    /// Run the call with another input.
    Edit,
    /// Do not run the call; its caller gets an error with a reason.
    Reject,
    /// End the run.
    Abort,
}

impl Action {
    /// Every action, in the overlay's order.
    pub const ALL: [Self; 7] = [
        Self::Continue,
        Self::Step,
        Self::Retry,
        Self::Inject,
        Self::Edit,
        Self::Reject,
        Self::Abort,
    ];

    /// The key that picks it.
    #[must_use]
    pub const fn key(self) -> char {
        match self {
            Self::Continue => 'c',
            Self::Step => 's',
            Self::Retry => 'r',
            Self::Inject => 'i',
            Self::Edit => 'e',
            Self::Reject => 'x',
            Self::Abort => 'a',
        }
    }

    /// The action for a key.
    #[must_use]
    pub fn from_key(c: char) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.key() == c)
    }

    /// Its label.
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Self::Continue => "continue",
            Self::Step => "step",
            Self::Retry => "retry",
            Self::Inject => "inject",
            Self::Edit => "edit input",
            Self::Reject => "reject",
            Self::Abort => "abort run",
        }
    }

    /// The `action` of the resume request it sends.
    #[must_use]
    pub fn wire(self, point: PausePoint) -> &'static str {
        match self {
            Self::Continue | Self::Step => "continue",
            Self::Retry => "retry",
            Self::Inject => "inject",
            Self::Edit => edit_action(point),
            Self::Reject => "reject",
            Self::Abort => "abort",
        }
    }

    /// Whether "for this run" (remember) goes with it.
    #[must_use]
    pub const fn rememberable(self) -> bool {
        matches!(self, Self::Continue | Self::Inject | Self::Reject)
    }
}

/// The action an edited input is sent with: `continue` before the call, `retry` after it or
/// when it failed.
#[must_use]
pub fn edit_action(point: PausePoint) -> &'static str {
    match point {
        PausePoint::Before => "continue",
        PausePoint::After | PausePoint::Error => "retry",
    }
}

/// The agent token's rights, as the hub's run file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// `allowControl` of the run file: `off`, `resume`, `inject`, `edit`; `None` when unsaid.
    pub level: Option<String>,
    /// Why there is no agent token, if there is none.
    pub token_problem: Option<String>,
    /// The command that started the hub (`serve`, `demo`).
    pub started_by: String,
}

impl Access {
    /// Full rights (`--allow-control edit`), for tests and previews.
    #[must_use]
    pub fn edit() -> Self {
        Self::level("edit")
    }

    /// The rights of `level`.
    #[must_use]
    pub fn level(level: &str) -> Self {
        Self {
            level: Some(level.to_owned()),
            token_problem: None,
            started_by: "serve".into(),
        }
    }

    /// Rank of a level: off 0, resume 1, inject 2, edit 3 (unsaid: 3, the hub decides).
    fn rank(&self) -> u8 {
        match self.level.as_deref() {
            Some("off") => 0,
            Some("resume") => 1,
            Some("inject") => 2,
            _ => 3,
        }
    }

    fn again(&self, level: &str) -> String {
        format!(
            "the hub runs with --allow-control {}; start it with `graphmind {} --allow-control {level}`",
            self.level.as_deref().unwrap_or("?"),
            self.started_by
        )
    }

    /// Why the hub would refuse `a` from this token, if it would.
    #[must_use]
    pub fn forbids(&self, a: Action) -> Option<String> {
        if let Some(p) = &self.token_problem {
            return Some(format!("no agent token ({p})"));
        }
        let (need, name) = match a {
            Action::Inject => (2, "inject"),
            Action::Edit => (3, "edit"),
            _ => (1, "resume"),
        };
        (self.rank() < need).then(|| self.again(name))
    }

    /// Why breakpoints and the mode cannot be changed from here, if they cannot.
    #[must_use]
    pub fn forbids_debug(&self) -> Option<String> {
        if let Some(p) = &self.token_problem {
            return Some(format!("no agent token ({p})"));
        }
        (self.rank() == 0).then(|| self.again("resume"))
    }
}

/// Why `a` cannot be taken at the held gate `p` with `access`, or `None` when it can.
#[must_use]
pub fn unavailable(a: Action, p: &PauseInfo, access: &Access) -> Option<String> {
    if let Some(why) = access.forbids(a) {
        return Some(why);
    }
    if a == Action::Edit && !p.editable {
        return Some("the app did not offer this gate's input for editing".into());
    }
    let wire = a.wire(p.point);
    match p.actions.as_ref().and_then(|v| v.as_array()) {
        Some(list) if !list.iter().any(|x| x.as_str() == Some(wire)) => {
            Some(format!("this gate does not take {wire}"))
        }
        None if a == Action::Reject => Some("the app did not say this gate takes reject".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_level_forbids_what_the_hub_would_refuse() {
        let off = Access::level("off");
        assert!(Action::ALL.iter().all(|a| off.forbids(*a).is_some()));
        let resume = Access::level("resume");
        assert_eq!(resume.forbids(Action::Continue), None);
        assert!(
            resume
                .forbids(Action::Inject)
                .unwrap()
                .contains("--allow-control inject")
        );
        let inject = Access::level("inject");
        assert_eq!(inject.forbids(Action::Inject), None);
        assert!(
            inject
                .forbids(Action::Edit)
                .unwrap()
                .contains("--allow-control edit")
        );
        assert!(
            Action::ALL
                .iter()
                .all(|a| Access::edit().forbids(*a).is_none())
        );
        assert!(off.forbids_debug().is_some() && resume.forbids_debug().is_none());
    }
}
