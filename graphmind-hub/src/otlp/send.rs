//! POSTing an encoded `ExportTraceServiceRequest` to an OTLP/HTTP endpoint, with retries and
//! backoff on the failures the OTLP specification calls retryable.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::OtlpConfig;

/// An HTTP/1.1 client for one endpoint (plain `http://`; keeps connections alive).
pub struct Sender {
    client: Client<HttpConnector, Full<Bytes>>,
    config: OtlpConfig,
}

/// How one delivery ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The collector took it (2xx), after `retries` retries.
    Sent {
        /// Retries it took.
        retries: u32,
    },
    /// Given up: a non-retryable answer, or every attempt failed.
    Failed {
        /// Retries made before giving up.
        retries: u32,
        /// The last failure.
        reason: String,
    },
}

enum Attempt {
    Ok,
    Retry(String),
    Fatal(String),
}

impl Sender {
    /// A sender to `config`'s endpoint.
    pub fn new(config: OtlpConfig) -> Self {
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        http.set_connect_timeout(Some(config.timeout));
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(http);
        Self { client, config }
    }

    async fn attempt(&self, body: &Bytes) -> Attempt {
        let mut req = hyper::Request::post(self.config.endpoint.as_str())
            .header("content-type", "application/x-protobuf")
            .header(
                "user-agent",
                concat!("graphmind/", env!("CARGO_PKG_VERSION")),
            );
        for (k, v) in &self.config.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let req = match req.body(Full::new(body.clone())) {
            Ok(r) => r,
            Err(e) => return Attempt::Fatal(format!("bad request: {e}")),
        };
        let res = match tokio::time::timeout(self.config.timeout, self.client.request(req)).await {
            Err(_) => return Attempt::Retry("timed out".into()),
            Ok(Err(e)) => return Attempt::Retry(format!("connection failed: {e}")),
            Ok(Ok(res)) => res,
        };
        let status = res.status().as_u16();
        // Drain the (small) answer so the connection can be reused; bounded in time and size.
        let body = res.into_body();
        let _ = tokio::time::timeout(
            self.config.timeout,
            http_body_util::Limited::new(body, 64 * 1024).collect(),
        )
        .await;
        match status {
            200..=299 => Attempt::Ok,
            429 | 502 | 503 | 504 => Attempt::Retry(format!("HTTP {status}")),
            _ => Attempt::Fatal(format!("HTTP {status}")),
        }
    }

    /// Sends `body`, retrying retryable failures (connection errors, timeouts, HTTP 429, 502,
    /// 503, 504) with exponential backoff from [`OtlpConfig::backoff`] (doubling, at most
    /// 8 s), [`OtlpConfig::attempts`] tries in all.
    pub async fn send(&self, body: Bytes) -> Delivery {
        let mut wait = self.config.backoff;
        let mut retries = 0;
        loop {
            match self.attempt(&body).await {
                Attempt::Ok => return Delivery::Sent { retries },
                Attempt::Fatal(reason) => return Delivery::Failed { retries, reason },
                Attempt::Retry(reason) => {
                    if retries + 1 >= self.config.attempts.max(1) {
                        return Delivery::Failed { retries, reason };
                    }
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(8));
                    retries += 1;
                }
            }
        }
    }
}
