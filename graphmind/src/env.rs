//! The environment switches: `GRAPHMIND_DISABLED`, the production rule with `GRAPHMIND=1`,
//! and `GRAPHMIND_URL`.
//!
//! Every function takes a lookup closure instead of reading the process environment itself,
//! so a [`Config`](crate::Config) can carry its own variables (tests) and the rules stay pure.

/// The endpoint used when neither the config nor `GRAPHMIND_URL` names one.
pub const DEFAULT_URL: &str = "ws://127.0.0.1:4747/ingest";

/// Variables that describe the deployment environment, in the order they are consulted: the
/// first one that is set (non-empty) decides whether this is production.
pub const PRODUCTION_VARS: [&str; 6] = [
    "GRAPHMIND_ENV",
    "ENVIRONMENT",
    "APP_ENV",
    "RUST_ENV",
    "ENV",
    "NODE_ENV",
];

fn non_empty(get: &dyn Fn(&str) -> Option<String>, key: &str) -> Option<String> {
    get(key).filter(|v| !v.trim().is_empty())
}

/// Whether the first set production variable says `production` or `prod`.
pub(crate) fn looks_like_production(get: &dyn Fn(&str) -> Option<String>) -> bool {
    PRODUCTION_VARS
        .iter()
        .find_map(|k| non_empty(get, k))
        .is_some_and(|v| {
            let v = v.trim().to_ascii_lowercase();
            v == "production" || v == "prod"
        })
}

/// Decides whether a session is enabled.
///
/// 1. `GRAPHMIND_DISABLED=1` disables, whatever the config says.
/// 2. Otherwise an explicit `enabled` applies.
/// 3. Otherwise a production-looking environment disables unless `GRAPHMIND=1`.
pub(crate) fn resolve_enabled(
    explicit: Option<bool>,
    get: &dyn Fn(&str) -> Option<String>,
) -> bool {
    if get("GRAPHMIND_DISABLED").is_some_and(|v| v.trim() == "1") {
        return false;
    }
    if let Some(on) = explicit {
        return on;
    }
    if looks_like_production(get) {
        return get("GRAPHMIND").is_some_and(|v| v.trim() == "1");
    }
    true
}

/// Decides the endpoint: an explicit url beats `GRAPHMIND_URL`, which beats the default.
/// Empty strings count as unset.
pub(crate) fn resolve_url(explicit: Option<&str>, get: &dyn Fn(&str) -> Option<String>) -> String {
    if let Some(url) = explicit.filter(|u| !u.trim().is_empty()) {
        return url.trim().to_owned();
    }
    non_empty(get, "GRAPHMIND_URL")
        .map(|u| u.trim().to_owned())
        .unwrap_or_else(|| DEFAULT_URL.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn disabled_switch_beats_explicit_enabled() {
        assert!(!resolve_enabled(
            Some(true),
            &env(&[("GRAPHMIND_DISABLED", "1")])
        ));
        assert!(resolve_enabled(None, &env(&[("GRAPHMIND_DISABLED", "0")])));
    }

    #[test]
    fn first_set_production_variable_decides() {
        assert!(!resolve_enabled(None, &env(&[("APP_ENV", "Production")])));
        assert!(!resolve_enabled(None, &env(&[("NODE_ENV", " prod ")])));
        // ENVIRONMENT comes before NODE_ENV: staging wins.
        assert!(resolve_enabled(
            None,
            &env(&[("ENVIRONMENT", "staging"), ("NODE_ENV", "production")])
        ));
        // An empty variable does not count as set.
        assert!(!resolve_enabled(
            None,
            &env(&[("GRAPHMIND_ENV", ""), ("RUST_ENV", "production")])
        ));
        assert!(resolve_enabled(
            None,
            &env(&[("RUST_ENV", "production"), ("GRAPHMIND", "1")])
        ));
        assert!(resolve_enabled(Some(true), &env(&[("ENV", "production")])));
        assert!(!resolve_enabled(Some(false), &env(&[])));
    }

    #[test]
    fn explicit_url_beats_env_and_empty_falls_back() {
        let e = env(&[("GRAPHMIND_URL", "ws://127.0.0.1:9/ingest")]);
        assert_eq!(resolve_url(Some("ws://h:1/x"), &e), "ws://h:1/x");
        assert_eq!(resolve_url(None, &e), "ws://127.0.0.1:9/ingest");
        assert_eq!(
            resolve_url(Some(""), &env(&[("GRAPHMIND_URL", "")])),
            DEFAULT_URL
        );
    }
}
