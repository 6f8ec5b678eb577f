//! The tool roster: every `#[graphmind::tool]` in the binary registers its name here
//! (distributed registration through `inventory`), listed by [`tools`]. A model step's
//! `graph.hint` does not use it: a binary may hold several agents, so a step hints only its
//! own `tools = [...]` (an adapter's wrapped client: the request's tools).

/// One registered tool.
#[derive(Debug)]
#[cfg_attr(not(feature = "enabled"), allow(dead_code))]
pub struct RosterEntry {
    name: &'static str,
}

#[cfg_attr(not(feature = "enabled"), allow(dead_code))]
impl RosterEntry {
    /// An entry for the tool `name`.
    #[must_use]
    pub const fn new(name: &'static str) -> Self {
        Self { name }
    }

    /// The tool's name.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

#[cfg(feature = "enabled")]
inventory::collect!(RosterEntry);

/// Names of every `#[graphmind::tool]` in the binary, sorted, without duplicates (empty with
/// feature `enabled` off).
#[must_use]
pub fn tools() -> Vec<&'static str> {
    #[cfg(not(feature = "enabled"))]
    return Vec::new();
    #[cfg(feature = "enabled")]
    let mut names: Vec<&'static str> = inventory::iter::<RosterEntry>
        .into_iter()
        .map(RosterEntry::name)
        .collect();
    #[cfg(feature = "enabled")]
    {
        names.sort_unstable();
        names.dedup();
        names
    }
}
