//! The tool roster: every `#[graphmind::tool]` in the binary registers its name here
//! (distributed registration through `inventory`), so a model step's graph hint can draw
//! the whole graph before anything runs.

/// One registered tool.
#[derive(Debug)]
pub struct RosterEntry {
    name: &'static str,
}

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

inventory::collect!(RosterEntry);

/// Names of every registered tool, sorted, without duplicates.
#[must_use]
pub fn tools() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = inventory::iter::<RosterEntry>
        .into_iter()
        .map(RosterEntry::name)
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}
