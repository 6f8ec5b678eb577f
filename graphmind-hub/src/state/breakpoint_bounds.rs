//! What the breakpoint list may hold, in count and in bytes: every app copies the whole list
//! (it comes in each `hello.ack`, whose frame the Rust client caps at 16 MiB), and
//! `GET /api/debug` answers it to anyone. The API, the viewer feed and the breakpoints a hub
//! starts with are all checked here.

use graphmind_protocol::BreakpointMatcher;

/// Most breakpoint matchers the hub holds (each is pushed to every app and copied there).
pub const MAX_BREAKPOINTS: usize = 256;
/// Longest node or tool name a matcher may hold, in bytes (UTF-8).
pub const MAX_MATCHER_NAME_BYTES: usize = 4 * 1024;
/// Most bytes of a single matcher as JSON (its name, kind, point and any unknown fields).
pub const MAX_MATCHER_BYTES: usize = MAX_MATCHER_NAME_BYTES + 1024;
/// Most bytes the whole breakpoint list takes as JSON (far below the client's 16 MiB frame).
pub const MAX_BREAKPOINTS_BYTES: usize = 1024 * 1024;

/// Why a breakpoint (or a list of them) was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The list would hold more than [`MAX_BREAKPOINTS`] matchers.
    TooMany,
    /// A matcher, or the whole list, is over its byte limit; the message names it.
    TooLarge(String),
}

impl Refusal {
    /// The explanation, naming the limit.
    pub fn message(&self) -> String {
        match self {
            Self::TooMany => format!(
                "the hub holds at most {MAX_BREAKPOINTS} breakpoints; clear some (or use a \
                 broader matcher) first"
            ),
            Self::TooLarge(m) => m.clone(),
        }
    }
}

/// Bytes of `m` as JSON.
pub fn json_len(m: &BreakpointMatcher) -> usize {
    serde_json::to_vec(m).map_or(usize::MAX, |v| v.len())
}

/// Checks one matcher's fields.
pub fn check_matcher(m: &BreakpointMatcher) -> Result<usize, Refusal> {
    if let Some(name) = &m.name
        && name.len() > MAX_MATCHER_NAME_BYTES
    {
        return Err(Refusal::TooLarge(format!(
            "a breakpoint's name holds at most {MAX_MATCHER_NAME_BYTES} bytes; this one has {}",
            name.len()
        )));
    }
    let len = json_len(m);
    if len > MAX_MATCHER_BYTES {
        return Err(Refusal::TooLarge(format!(
            "a breakpoint matcher takes at most {MAX_MATCHER_BYTES} bytes as JSON; this one \
             takes {len}"
        )));
    }
    Ok(len)
}

/// Bytes of a list whose matchers take `items` bytes each, as a JSON array.
fn list_len(items: impl IntoIterator<Item = usize>) -> usize {
    let (mut sum, mut n) = (2usize, 0usize);
    for len in items {
        sum = sum.saturating_add(len);
        n += 1;
    }
    sum + n.saturating_sub(1)
}

/// Checks that `held` plus matchers of `added` bytes each stay within
/// [`MAX_BREAKPOINTS_BYTES`] as one JSON list.
pub fn check_total(held: &[BreakpointMatcher], added: &[usize]) -> Result<(), Refusal> {
    let total = list_len(held.iter().map(json_len).chain(added.iter().copied()));
    if total > MAX_BREAKPOINTS_BYTES {
        return Err(Refusal::TooLarge(format!(
            "the breakpoints take at most {MAX_BREAKPOINTS_BYTES} bytes as JSON in all; with \
             this one they would take {total}: clear some first"
        )));
    }
    Ok(())
}

/// Checks a whole list (a replacement, or what a hub starts with): count, each matcher, total.
/// `distinct` is the list without repeats (what would be held).
pub fn check_list(distinct: &[&BreakpointMatcher]) -> Result<(), Refusal> {
    if distinct.len() > MAX_BREAKPOINTS {
        return Err(Refusal::TooMany);
    }
    let lens = distinct
        .iter()
        .map(|m| check_matcher(m))
        .collect::<Result<Vec<_>, _>>()?;
    check_total(&[], &lens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: String) -> BreakpointMatcher {
        BreakpointMatcher {
            name: Some(name),
            ..BreakpointMatcher::default()
        }
    }

    #[test]
    fn the_list_length_is_that_of_its_json() {
        let list = vec![named("a".into()), named("bc".into())];
        let json = serde_json::to_vec(&list).expect("json").len();
        assert_eq!(list_len(list.iter().map(json_len)), json);
        assert_eq!(list_len(std::iter::empty()), 2);
    }

    #[test]
    fn limits_are_named_when_refused() {
        assert!(check_matcher(&named("x".repeat(MAX_MATCHER_NAME_BYTES))).is_ok());
        let e =
            check_matcher(&named("x".repeat(MAX_MATCHER_NAME_BYTES + 1))).expect_err("too long");
        assert!(e.message().contains(&MAX_MATCHER_NAME_BYTES.to_string()));
        let full: Vec<BreakpointMatcher> = (0..MAX_BREAKPOINTS)
            .map(|i| named(format!("{i:0>4096}")))
            .collect();
        let refs: Vec<&BreakpointMatcher> = full.iter().collect();
        let e = check_list(&refs).expect_err("over the bytes");
        assert!(e.message().contains(&MAX_BREAKPOINTS_BYTES.to_string()));
    }
}
