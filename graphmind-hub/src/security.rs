//! Request checks that apply to every HTTP request and WebSocket upgrade: the Host must be a
//! loopback name with our port (DNS-rebinding defence), the Origin, when present, must be our
//! own; and the response headers that forbid framing and sniffing.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::state::HubState;

fn loopback_hosts(port: u16) -> [String; 3] {
    [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ]
}

/// Checks Host and Origin. `Err` holds a plain explanation.
pub fn check(port: u16, headers: &HeaderMap) -> Result<(), String> {
    let hosts = loopback_hosts(port);
    let mut host_values = headers.get_all(header::HOST).iter();
    let host = match (host_values.next(), host_values.next()) {
        (Some(h), None) => h
            .to_str()
            .map_err(|_| "the Host header is not text".to_owned())?,
        (None, _) => return Err("a Host header is required".into()),
        (Some(_), Some(_)) => return Err("more than one Host header".into()),
    };
    if !hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
        return Err(format!(
            "Host {host:?} is not allowed: graphmind serve answers only to 127.0.0.1:{port}, \
             localhost:{port} or [::1]:{port}"
        ));
    }
    let mut origins = headers.get_all(header::ORIGIN).iter();
    match (origins.next(), origins.next()) {
        (None, _) => Ok(()),
        (Some(_), Some(_)) => Err("more than one Origin header".into()),
        (Some(o), None) => {
            let o = o
                .to_str()
                .map_err(|_| "the Origin header is not text".to_owned())?;
            if hosts
                .iter()
                .any(|h| o.eq_ignore_ascii_case(&format!("http://{h}")))
            {
                Ok(())
            } else {
                Err(format!(
                    "Origin {o:?} is not allowed: only pages served by this graphmind serve \
                     (http://127.0.0.1:{port}) may talk to it"
                ))
            }
        }
    }
}

fn harden(headers: &mut HeaderMap, api: bool) {
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("frame-ancestors 'none'"),
        );
    }
    if api {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    // Never any CORS: strip whatever a handler might have set.
    let cors: Vec<_> = headers
        .keys()
        .filter(|k| k.as_str().starts_with("access-control-"))
        .cloned()
        .collect();
    for k in cors {
        headers.remove(k);
    }
}

/// A declared body over [`crate::MAX_BODY_BYTES`]: `413` before any of it is read (reading
/// nothing, hyper then closes the connection).
fn oversized(headers: &HeaderMap) -> Option<Response> {
    let declared = headers.get(header::CONTENT_LENGTH)?.to_str().ok()?;
    let len: u128 = declared.trim().parse().ok()?;
    (len > crate::MAX_BODY_BYTES as u128).then(|| {
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::CONNECTION, "close"),
            ],
            axum::Json(graphmind_protocol::control::ApiError::new(format!(
                "a request body holds at most {} bytes; this one declares {len}",
                crate::MAX_BODY_BYTES
            ))),
        )
            .into_response()
    })
}

/// The middleware.
pub async fn guard(State(hub): State<Arc<HubState>>, req: Request, next: Next) -> Response {
    let api = req.uri().path().starts_with("/api/") || req.uri().path() == "/health";
    let mut resp = match check(hub.cfg.port, req.headers()) {
        Ok(()) => match oversized(req.headers()) {
            Some(r) => r,
            None => next.run(req).await,
        },
        Err(why) => (
            StatusCode::FORBIDDEN,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            Body::from(format!("403 forbidden: {why}\n")),
        )
            .into_response(),
    };
    harden(resp.headers_mut(), api);
    resp
}

/// The bearer token of a request, if any.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Whether the request body is declared as JSON.
pub fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn host_and_origin_rules() {
        assert!(check(4747, &headers(&[("host", "127.0.0.1:4747")])).is_ok());
        assert!(check(4747, &headers(&[("host", "LOCALHOST:4747")])).is_ok());
        assert!(check(4747, &headers(&[("host", "[::1]:4747")])).is_ok());
        assert!(check(4747, &headers(&[("host", "127.0.0.1:4748")])).is_err());
        assert!(check(4747, &headers(&[("host", "evil.test:4747")])).is_err());
        assert!(check(4747, &headers(&[])).is_err());
        assert!(
            check(
                4747,
                &headers(&[
                    ("host", "127.0.0.1:4747"),
                    ("origin", "http://localhost:4747")
                ])
            )
            .is_ok()
        );
        assert!(
            check(
                4747,
                &headers(&[("host", "127.0.0.1:4747"), ("origin", "null")])
            )
            .is_err()
        );
        assert!(
            check(
                4747,
                &headers(&[("host", "127.0.0.1:4747"), ("origin", "http://evil.test")])
            )
            .is_err()
        );
        assert!(
            check(
                4747,
                &headers(&[
                    ("host", "127.0.0.1:4747"),
                    ("origin", "https://127.0.0.1:4747")
                ])
            )
            .is_err()
        );
    }

    #[test]
    fn bearer_and_json_parsing() {
        assert_eq!(
            bearer(&headers(&[("authorization", "Bearer abc")])),
            Some("abc")
        );
        assert_eq!(bearer(&headers(&[("authorization", "Basic abc")])), None);
        assert_eq!(bearer(&headers(&[("authorization", "Bearer ")])), None);
        assert!(is_json(&headers(&[(
            "content-type",
            "application/json; charset=utf-8"
        )])));
        assert!(!is_json(&headers(&[(
            "content-type",
            "application/x-www-form-urlencoded"
        )])));
        assert!(!is_json(&headers(&[("content-type", "text/plain")])));
    }
}
