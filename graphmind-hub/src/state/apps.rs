//! App connections: their identities and session tokens (run ownership), and the runs that
//! become abandoned when an app goes away.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use graphmind_protocol::feed::RunStatus;
use graphmind_protocol::{Extra, HelloAck, HubVersions, Message, RUN_ANY};
use tokio::sync::mpsc;

use super::{
    AppConn, AppOut, CLOSED_MEMORY, Closed, HubState, MAX_SESSION_TOKENS, Outcome, PauseKey,
    RunState, SessionToken, State, TOKENS_PER_IDENTITY,
};
use crate::now_ms;
use crate::storage::RunRow;
use crate::tokens::random_id;

/// The capability by which an app says it can run a held call with an edited input, and the
/// hub that it forwards one (`hubCapabilities`; off with `HubConfig::edit_input`).
pub const EDIT_INPUT: &str = "edit-input";

/// The capability by which an app says it takes `reject` (a graphmind extension): a
/// rejection goes only to an app that announced it.
pub const REJECT: &str = "reject";

impl HubState {
    /// Registers an app connection after its hello and builds the `hello.ack`. Returns the
    /// connection id, its identity, the ack frame and the run rows to store again (runs the
    /// identity reclaimed from `abandoned`). `hub_nonce` is the hub's answer to the app's
    /// `hubNonce` (the connection is signed from the ack on).
    pub fn app_hello(
        &self,
        tx: mpsc::UnboundedSender<AppOut>,
        app: Option<String>,
        capabilities: Vec<String>,
        resume_token: Option<&str>,
        hub_nonce: Option<String>,
    ) -> (u64, u64, String, Vec<RunRow>) {
        let conn = self.next_id();
        let session_token = random_id("sess");
        let issued = self.next_id();
        let mut st = self.lock();
        let identity = resume_token
            .and_then(|t| st.tokens.get(t).map(|s| s.identity))
            .unwrap_or_else(|| self.next_id());
        st.tokens
            .insert(session_token.clone(), SessionToken { identity, issued });
        st.live.insert(identity, conn);
        st.left.remove(&identity);
        st.gone.remove(&identity);
        let edit_input = capabilities.iter().any(|c| c == EDIT_INPUT);
        let reject = capabilities.iter().any(|c| c == REJECT);
        st.apps.insert(
            conn,
            AppConn {
                identity,
                tx,
                app,
                edit_input,
                reject,
            },
        );
        // The identity's runs are live again; a reclaimed abandoned run is running again in
        // storage too.
        let st = &mut *st;
        let mut rows = Vec::new();
        for (id, run) in &mut st.runs {
            if run.owner == Some(identity) {
                if run.status == RunStatus::Abandoned {
                    run.status = RunStatus::Running;
                    rows.push(run.row(id));
                }
                st.dirty.insert(id.clone());
            }
        }
        let ack = HelloAck {
            versions: HubVersions {
                protocol: graphmind_protocol::PROTOCOL_VERSION,
                viewer: self.cfg.version.to_owned(),
                extra: Extra::new(),
            },
            capabilities,
            breakpoints: st.breakpoints.clone(),
            mode: st.mode,
            session_token: Some(session_token),
            hub_capabilities: Some(
                [
                    "run-claim",
                    "dedupe",
                    "shrink",
                    "request-id",
                    "pause-registry",
                    crate::ingest::HUB_ACK,
                ]
                .into_iter()
                .chain(self.cfg.edit_input.then_some(EDIT_INPUT))
                .map(String::from)
                .collect(),
            ),
            // The hub's half of the channel key: other hubs send none and sign nothing, so
            // the app cannot mistake them for this one.
            extra: hub_nonce
                .map(|n| {
                    Extra::from_iter([(
                        graphmind_protocol::hub_auth::NONCE_FIELD.to_owned(),
                        n.into(),
                    )])
                })
                .unwrap_or_default(),
        };
        let frame = self.frame(RUN_ANY, Message::HelloAck(ack));
        (conn, identity, frame, rows)
    }

    /// Handles an app connection going away: its pauses close (the app already continued),
    /// and its unfinished runs become abandoned unless it comes back within the grace.
    pub fn app_disconnected(self: &Arc<Self>, conn: u64) {
        let mut orphaned = false;
        let identity;
        {
            let mut st = self.lock();
            let Some(app) = st.apps.remove(&conn) else {
                return;
            };
            identity = app.identity;
            if st.live.get(&identity) != Some(&conn) {
                return; // the identity already moved to a newer connection
            }
            st.live.remove(&identity);
            st.gone.insert(identity, Instant::now());
            let st = &mut *st;
            let keys: Vec<PauseKey> = st
                .pauses
                .iter()
                .filter(|(_, p)| p.identity == Some(identity))
                .map(|(k, _)| k.clone())
                .collect();
            for k in keys {
                if let Some(mut p) = st.pauses.remove(&k) {
                    if let Some(w) = p.inflight.take().and_then(|f| f.waiter) {
                        let _ = w.send(Outcome::Gone(
                            "the app disconnected; its held gates continued".into(),
                        ));
                    }
                    st.closed.insert(
                        k,
                        Closed {
                            at: Instant::now(),
                            action: Some("continue".into()),
                            by: "disconnect",
                        },
                    );
                }
            }
            for (id, run) in &st.runs {
                if run.owner == Some(identity) && !run.finished() {
                    orphaned = true;
                    st.dirty.insert(id.clone());
                }
            }
            if orphaned {
                st.left.insert(identity, Instant::now());
            }
        }
        self.pauses_changed();
        if orphaned {
            let hub = Arc::clone(self);
            tokio::spawn(async move {
                tokio::time::sleep(hub.cfg.abandon_grace).await;
                hub.abandon(identity).await;
            });
        }
    }

    async fn abandon(&self, identity: u64) {
        let rows: Vec<RunRow> = {
            let mut st = self.lock();
            if st.live.contains_key(&identity) {
                return;
            }
            // The identity came back and left again since this timer started: the timer of
            // its latest departure decides.
            if st
                .left
                .get(&identity)
                .is_some_and(|t| t.elapsed() < self.cfg.abandon_grace)
            {
                return;
            }
            st.left.remove(&identity);
            mark_abandoned(&mut st, |run| run.owner == Some(identity))
        };
        for r in rows {
            self.writer.run(r).await;
        }
    }

    /// Marks the runs an earlier start left `running` that no app has claimed since this
    /// start as `abandoned` (called once, the abandon grace after the start).
    pub async fn abandon_unclaimed(&self) {
        let rows = mark_abandoned(&mut self.lock(), |run| run.owner.is_none());
        for r in rows {
            self.writer.run(r).await;
        }
    }

    /// Forgets what a long-lived hub no longer needs: session tokens of apps that went away
    /// more than the abandon grace ago and own no unfinished run (at most
    /// [`TOKENS_PER_IDENTITY`] per app, [`MAX_SESSION_TOKENS`] in all), and closed pauses
    /// older than their memory.
    pub fn sweep(&self) {
        let mut guard = self.lock();
        let st = &mut *guard;
        let grace = self.cfg.abandon_grace;
        st.gone.retain(|_, t| t.elapsed() < grace);
        st.closed.retain(|_, c| c.at.elapsed() < CLOSED_MEMORY);
        let mut keep: HashSet<u64> = st.live.keys().copied().collect();
        keep.extend(st.left.keys().copied());
        keep.extend(st.gone.keys().copied());
        keep.extend(
            st.runs
                .values()
                .filter(|r| !r.finished())
                .filter_map(|r| r.owner),
        );
        let before = st.tokens.len();
        st.tokens.retain(|_, t| keep.contains(&t.identity));
        // The newest few per identity.
        let mut per: HashMap<u64, Vec<u64>> = HashMap::new();
        for t in st.tokens.values() {
            per.entry(t.identity).or_default().push(t.issued);
        }
        let mut oldest_kept: HashMap<u64, u64> = HashMap::new();
        for (identity, mut issued) in per {
            if issued.len() > TOKENS_PER_IDENTITY {
                issued.sort_unstable_by(|a, b| b.cmp(a));
                oldest_kept.insert(identity, issued[TOKENS_PER_IDENTITY - 1]);
            }
        }
        if !oldest_kept.is_empty() {
            st.tokens.retain(|_, t| {
                oldest_kept
                    .get(&t.identity)
                    .is_none_or(|&min| t.issued >= min)
            });
        }
        // A hard cap: those of disconnected apps go first, oldest first.
        if st.tokens.len() > MAX_SESSION_TOKENS {
            let mut idle: Vec<(u64, String)> = st
                .tokens
                .iter()
                .filter(|(_, t)| !st.live.contains_key(&t.identity))
                .map(|(k, t)| (t.issued, k.clone()))
                .collect();
            idle.sort_unstable();
            let excess = st.tokens.len() - MAX_SESSION_TOKENS;
            for (_, k) in idle.into_iter().take(excess) {
                st.tokens.remove(&k);
            }
        }
        let expired = before - st.tokens.len();
        if expired > 0 {
            self.stats
                .tokens_expired
                .fetch_add(expired as u64, Ordering::Relaxed);
        }
    }

    /// Closes every app connection (shutdown).
    pub fn close_apps(&self) {
        let st = self.lock();
        for app in st.apps.values() {
            let _ = app.tx.send(AppOut::Close(
                1001,
                "graphmind serve is shutting down".into(),
            ));
        }
    }
}

/// Marks the running runs `which` picks `abandoned` (for the viewers and storage); returns
/// their rows to store.
fn mark_abandoned(st: &mut State, which: impl Fn(&RunState) -> bool) -> Vec<RunRow> {
    let now = now_ms();
    let mut rows = Vec::new();
    for (id, run) in &mut st.runs {
        if run.status == RunStatus::Running && which(run) {
            run.status = RunStatus::Abandoned;
            run.touched = now;
            st.dirty.insert(id.clone());
            rows.push(run.row(id));
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::AllowControl;
    use crate::state::Config;
    use crate::storage::{Retention, Storage};
    use crate::tokens::Token;

    fn token() -> Token {
        Token::generate().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn session_tokens_beyond_the_hard_cap_go_oldest_first_and_are_counted() {
        let dir = std::env::temp_dir().join(format!("gm-token-cap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let retention = Retention {
            keep: 10,
            max_age_days: 30,
        };
        let storage = Storage::open(&dir.join("t.db"), retention, 10, now_ms()).expect("open");
        let cfg = Config {
            version: "test",
            port: 0,
            allow_control: AllowControl::Off,
            viewer_token: token(),
            agent_token: token(),
            hub_secret: token(),
            abandon_grace: Duration::from_secs(3600),
            resume_wait: Duration::from_secs(5),
            hello_timeout: Duration::from_secs(10),
            memory_runs: 10,
            ui_auth_timeout: Duration::from_secs(5),
            body_timeout: Duration::from_secs(10),
            edit_input: true,
            operator: None,
        };
        let hub = HubState::new(
            cfg,
            storage.writer.clone(),
            Arc::clone(&storage.reader),
            Vec::new(),
            false,
            Vec::new(),
            Vec::new(),
        );
        // Apps that went away within the grace keep their tokens (one each, fewer than the
        // per-app limit): only the hard cap trims them, the earliest issued first.
        let over = 100;
        let n = MAX_SESSION_TOKENS + over;
        {
            let mut st = hub.lock();
            let now = Instant::now();
            for i in 0..n as u64 {
                st.gone.insert(i, now);
                st.tokens.insert(
                    format!("sess_{i:06}"),
                    SessionToken {
                        identity: i,
                        issued: i,
                    },
                );
            }
        }
        hub.sweep();
        let st = hub.lock();
        assert_eq!(st.tokens.len(), MAX_SESSION_TOKENS);
        assert!(
            st.tokens.values().all(|t| t.issued >= over as u64),
            "the oldest went"
        );
        assert_eq!(
            hub.stats.tokens_expired.load(Ordering::Relaxed),
            over as u64,
            "every evicted token is counted"
        );
        drop(st);
        drop(storage);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
