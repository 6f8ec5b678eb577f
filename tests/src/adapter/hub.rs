//! The real hub (`graphmind-hub`, in-process, as `graphmind serve` runs it) for the adapters'
//! end-to-end tests: started on a free port in a private temporary home with every control
//! (`edit`: inject and edited inputs too), a session attached to it (and trusting it), and its
//! HTTP API for pauses, resumes and stored events.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

/// How many times a poll of the hub's API is tried, 50 ms apart (10 s in all).
const POLLS: usize = 200;
const POLL_EVERY: Duration = Duration::from_millis(50);

/// A running hub, a session of the app attached to it, and an HTTP client for its API.
pub struct RealHub {
    /// The hub.
    pub hub: graphmind_hub::Running,
    /// A session attached to the hub (which proved itself to it).
    pub session: graphmind::Session,
    http: reqwest::Client,
    home: PathBuf,
}

impl RealHub {
    /// Starts a hub in a fresh temporary home and attaches a session of `app` to it. Panics if
    /// the hub does not start or the session does not attach and trust it within 10 s.
    pub async fn start(app: &str) -> Self {
        let home = std::env::temp_dir().join(format!(
            "graphmind-{app}-{}-{}",
            std::process::id(),
            graphmind_hub::now_ms()
        ));
        std::fs::create_dir_all(home.join("run")).expect("temp home");
        let mut config = graphmind_hub::HubConfig::new(home.join("runs.db"));
        config.port = 0;
        config.run_dir = Some(home.join("run"));
        config.allow_control = graphmind_hub::AllowControl::Edit;
        let hub = graphmind_hub::start(config).await.expect("the hub starts");
        let session = graphmind::Session::new(
            graphmind::Config::new(app)
                .url(format!("ws://127.0.0.1:{}/ingest", hub.port))
                .hub_home(&home)
                .env_vars(std::iter::empty::<(String, String)>()),
        );
        assert!(session.ready(Duration::from_secs(10)).await, "attached");
        assert!(session.stats().trusted, "the hub proved itself");
        Self {
            hub,
            session,
            http: reqwest::Client::new(),
            home,
        }
    }

    /// `GET` the hub's API at `path` (e.g. `/api/pauses`) with the agent token; the JSON body.
    pub async fn get(&self, path: &str) -> Value {
        self.http
            .get(format!("{}{path}", self.hub.url))
            .bearer_auth(&self.hub.agent_token)
            .send()
            .await
            .expect("hub answers")
            .json()
            .await
            .expect("JSON")
    }

    /// The first pause the hub lists (`/api/pauses`), waiting up to 10 s for one. Panics if
    /// none comes.
    pub async fn first_pause(&self) -> Value {
        for _ in 0..POLLS {
            let pauses = self.get("/api/pauses").await;
            if let Some(p) = pauses["pauses"].as_array().and_then(|p| p.first()) {
                return p.clone();
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
        panic!("no pause at the hub within 10 s")
    }

    /// Resumes `pause` (a [`RealHub::first_pause`] value) over the hub's API with `body`
    /// (e.g. `{"action": "retry"}`). Panics unless the hub answers with success.
    pub async fn resume(&self, pause: &Value, body: &Value) {
        let run_id = pause["runId"].as_str().expect("runId");
        let pause_id = pause["pauseId"].as_str().expect("pauseId");
        let resumed = self
            .http
            .post(format!(
                "{}/api/runs/{run_id}/pauses/{pause_id}/resume",
                self.hub.url
            ))
            .bearer_auth(&self.hub.agent_token)
            .json(body)
            .send()
            .await
            .expect("resume");
        assert!(resumed.status().is_success(), "{:?}", resumed.text().await);
    }

    /// The payload of the stored `node.finished` of `node_id` in the run `run_id`, waiting up
    /// to 10 s for the hub to store it. Panics if it does not.
    pub async fn stored_finish(&self, run_id: &str, node_id: &str) -> Value {
        for _ in 0..POLLS {
            let events = self.get(&format!("/api/runs/{run_id}/events")).await;
            if let Some(f) = events["events"].as_array().and_then(|es| {
                es.iter()
                    .find(|e| e["type"] == "node.finished" && e["payload"]["nodeId"] == node_id)
            }) {
                return f["payload"].clone();
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
        panic!("no stored node.finished of {node_id} in {run_id} within 10 s")
    }

    /// Disposes of the session, shuts the hub down and removes its home.
    pub async fn stop(self) {
        self.session.dispose().await;
        self.hub.shutdown().await;
        let _ = std::fs::remove_dir_all(&self.home);
    }
}
